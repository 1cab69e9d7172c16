"""Input validation shared by every culling structure.

Each function turns caller input (lists, tuples, scalars, float32 or integer
arrays) into the one dtype and shape the structures work on, or raises a
``ValueError``/``TypeError`` whose message names what was expected.  Nothing
here mutates anything, so a structure validates a whole batch first and only
then changes its state.
"""

from __future__ import annotations

import math
import numbers
import sys
from collections.abc import Iterable, Iterator

import numpy as np

__all__ = [
    "Handle",
    "as_coords",
    "as_dim",
    "as_flag",
    "as_handle",
    "as_integer",
    "as_handles",
    "as_point",
    "as_points",
    "as_probe_radii",
    "as_radii",
    "as_real",
    "as_scale",
    "check_constructor",
    "has_masked_entries",
    "is_live",
    "live_handle",
    "live_handles",
]

#: A handle as callers pass it: a Python or NumPy integer (anything else is a TypeError).
Handle = int | np.integer

SHAPES = ("sphere", "cube")
_INT64_MIN = int(np.iinfo(np.int64).min)
_INT64_MAX = int(np.iinfo(np.int64).max)


def has_masked_entries(values: object) -> bool:
    """Whether ``values`` is a NumPy masked array with masked entries.

    ``numpy.ma`` is read only where something has imported it: no masked array
    exists before that, and importing it (as ``np.ma`` does on first use) costs
    20-30 ms of the first call that would ask.  Nor before its class exists: while
    another thread imports ``numpy.ma`` (``np.unique`` does, on first use) the
    module is in ``sys.modules`` half made, and reading ``MaskedArray`` off it
    raised ``AttributeError`` in any query of any thread.
    """
    masked_array = getattr(sys.modules.get("numpy.ma"), "MaskedArray", None)
    return masked_array is not None and isinstance(values, masked_array) and bool(np.any(values.mask))


def _reject_masks_and_bools(values: object, name: str, expected: str) -> None:
    """``TypeError`` for a masked array with masked entries (its mask would be dropped silently)
    and for bools in a list or tuple (``expected``: what ``name`` must be instead)."""
    if has_masked_entries(values):
        raise TypeError(f"{name} must not be a masked array with masked entries")
    if isinstance(values, (list, tuple)) and _has_bool(values):
        raise TypeError(f"{name} must be {expected}, got a bool")


def _has_bool(values: object) -> bool:
    """Whether a (nested) list or tuple holds a bool: NumPy would silently read it as 1.0 or 0.0."""
    stack = [values]
    while stack:
        item = stack.pop()
        if isinstance(item, (list, tuple)):
            stack.extend(item)
        elif isinstance(item, (bool, np.bool_)):
            return True
    return False


def _as_float_array(values: object, name: str) -> np.ndarray:
    """Convert to a float64 array; non-numeric input is a ``TypeError``.

    Bools (even one among floats), complex numbers, ``Decimal``, strings and
    ``None`` are ``TypeError``; masked arrays with a masked entry too (the
    mask would otherwise be dropped silently); an integer beyond int64
    (``2**63``, ``10**400``, ``np.uint64(2**64 - 1)``) is a ``ValueError``, never an
    ``OverflowError`` (:func:`_reject_huge_integers`).
    """
    _reject_masks_and_bools(values, name, "numeric")
    try:
        array = np.asarray(values)
    except (TypeError, ValueError) as error:  # ragged nested lists
        raise ValueError(f"{name} must be a rectangular numeric array: {error}") from None
    except OverflowError as error:
        raise ValueError(f"{name} holds a number too large for float64: {error}") from None
    if array.dtype == object:  # None, strings, mixed lists: NumPy would turn None into NaN
        wrong = [v for v in array.flat if isinstance(v, (bool, np.bool_))
                 or not isinstance(v, (numbers.Real, np.number)) or isinstance(v, np.complexfloating)]
        if wrong:
            raise TypeError(f"{name} must be numeric, got {type(wrong[0]).__name__}")
        _reject_huge_integers(array.flat, name)
        try:
            array = array.astype(np.float64)
        except OverflowError:
            raise ValueError(f"{name} holds a number too large for float64") from None
    if array.size and array.dtype.kind not in "iuf":
        raise TypeError(f"{name} must be numeric (int or float), got dtype {array.dtype}")
    if array.dtype == np.uint64 and array.size and int(array.max()) > _INT64_MAX:
        _reject_huge_integers([int(array.max())], name)
    if array.dtype.kind == "f" and not isinstance(values, np.ndarray) and array.size \
            and float(np.abs(array).max()) >= 2.0 ** 63:  # a list of ints and floats: NumPy made floats of them all
        _reject_huge_integers(np.array(values, dtype=object).flat, name)
    if array.dtype.kind == "f" and array.dtype.itemsize > 8:  # long double: beyond float64 becomes inf, which
        with np.errstate(over="ignore"):  # the caller refuses in its own words, not in NumPy's warning
            return array.astype(np.float64)
    return _writable(array.astype(np.float64, copy=False))


def _reject_huge_integers(values: Iterable[object], name: str) -> None:
    """The contract's rule for numbers given as integers: one beyond int64, as a coordinate, radius,
    scale or size, is a ``ValueError`` (a float of the same size is accepted: it is a float)."""
    for value in values:
        if isinstance(value, (numbers.Integral, np.integer)) and not isinstance(value, (bool, np.bool_)) \
                and not _INT64_MIN <= int(value) <= _INT64_MAX:
            digits = str(int(value))
            shown = digits if len(digits) <= 24 else f"{digits[:8]}... ({len(digits.lstrip('-'))} digits)"
            raise ValueError(f"{name} holds an integer beyond int64 ({shown}): give it as a float if you mean "
                             f"that size")


def _writable(array: np.ndarray) -> np.ndarray:
    """``array``, or a copy of it where it is read-only (a frozen array, ``np.broadcast_to``, what Ray hands
    an actor): numba types read-only arrays apart, so each would compile every kernel it reaches again."""
    return array if array.flags.writeable else array.copy()


def _check_finite(array: np.ndarray, name: str) -> None:
    """NaN or inf is a ``ValueError`` naming the first bad row: ``centres[57] is not finite``."""
    if array.size and not np.isfinite(array).all():
        if array.ndim == 0:
            raise ValueError(f"{name} must be finite (no NaN or inf), got {float(array)}")
        bad = ~np.isfinite(array.reshape(array.shape[0], -1)).all(axis=1)
        row = int(np.flatnonzero(bad)[0])
        raise ValueError(f"{name}[{row}] is not finite ({array[row].tolist()}): {name} must be finite "
                         f"(no NaN or inf)")


def as_points(values: object, dim: int, name: str = "centres", values_checked: bool = True) -> np.ndarray:
    """Many points as a float64 array of shape ``(n, dim)``.

    ``dim == 1`` also accepts shape ``(n,)``.  Raises ``ValueError`` for a
    wrong shape or a non-finite coordinate; ``values_checked=False`` leaves
    the coordinates to a caller that checks them in a compiled pass of its
    own (and calls this again to name a fault).
    """
    if type(values) is np.ndarray and values.dtype == np.float64 and values.ndim == 2:
        array = _writable(values)  # what engines pass every frame: nothing to convert
    else:
        array = _as_float_array(values, name)
    if dim == 1 and array.ndim == 1:
        array = array.reshape(-1, 1)
    if array.ndim == 1 and array.size == 0:
        array = array.reshape(0, dim)
    if array.ndim != 2 or array.shape[1] != dim:
        raise ValueError(f"{name} must have shape (n, {dim}), got {array.shape}" + _dim_hint(array, 2, dim))
    if values_checked:
        _check_finite(array, name)
    return array


def as_point(value: object, dim: int, name: str = "point") -> np.ndarray:
    """One point as a float64 array of shape ``(dim,)`` (a scalar for dim 1)."""
    array = _as_float_array(value, name)
    if dim == 1 and array.shape in ((), (1,)):
        array = array.reshape(1)
    if array.shape != (dim,):
        raise ValueError(f"{name} must have shape ({dim},), got {array.shape}" + _one_point_hint(array, name)
                         + _dim_hint(array, 1, dim))
    _check_finite(array, name)
    return array


def _dim_hint(array: np.ndarray, ndim: int, dim: int) -> str:
    """The end of the message for points of another dimension (a 2-D point for the default 3-D tree):
    where ``dim`` comes from."""
    if array.ndim != ndim or not 1 <= array.shape[-1] <= 3:
        return ""
    given = f"a {array.shape[-1]}-D point" if ndim == 1 else f"{array.shape[-1]}-D points"
    return f" ({given} for a {dim}-D structure: dim is set when it is made, 3 by default)"


#: What to call for many of what a single call takes one of, by the argument's name.
_MANY = {"point": "query_many", "centre": "insert_many or update_many", "probe_centre": "touching_many"}


def _one_point_hint(array: np.ndarray, name: str) -> str:
    """The end of the message for a 2-D value where one point was expected: a single row (a
    ``np.matrix`` is always 2-D) is one point in the wrong shape, more rows want the batch call."""
    if array.ndim != 2:
        return ""
    if array.shape[0] == 1:
        return f" (one row: pass it flat, e.g. np.ravel({name}))"
    many = _MANY.get(name)
    return f"; use {many} for many" if many else ""



def as_radii(values: object, n: int | None = None, name: str = "radii", values_checked: bool = True) -> np.ndarray:
    """Radii as a float64 array of shape ``(n,)``: finite and not negative (``values_checked=False``:
    the caller checks that, as :func:`as_points`)."""
    array = values if type(values) is np.ndarray and values.dtype == np.float64 else _as_float_array(values, name)
    given = f"a single number (np.full({n if n is not None else 'n'}, r) gives each that radius)" if array.ndim == 0 \
        else f"shape {array.shape}"
    if array.ndim == 0:
        array = array.reshape(1)
    if array.ndim != 1 or (n is not None and array.shape[0] != n):
        expected = f"({n},)" if n is not None else "(n,)"
        raise ValueError(f"{name} must have shape {expected}, got {given}")
    if not values_checked:
        return array + 0.0
    _check_finite(array, name)
    if array.size and (array < 0).any():
        row = int(np.flatnonzero(array < 0)[0])
        raise ValueError(f"{name}[{row}] is negative ({array[row]}): {name} must not be negative")
    return array + 0.0  # turns -0.0 into 0.0 and always copies


def as_radius(value: object, name: str = "radius") -> float:
    """One radius as a float: finite and not negative."""
    if type(value) is float or type(value) is np.float64:  # the common case, fast
        if value >= 0 and value != math.inf:
            return float(value) + 0.0
    array = _as_float_array(value, name)
    if array.shape != ():
        raise ValueError(f"{name} must be a single number, got shape {array.shape}")
    radius = float(array.reshape(()))
    if not np.isfinite(radius):
        raise ValueError(f"{name} must be finite (no NaN or inf)")
    if radius < 0:
        raise ValueError(f"{name} must not be negative, got {radius}")
    return radius + 0.0


def as_real(value: object, name: str) -> float:
    """One real number as a float (a 0-d array of an integer or float dtype too): bools, complex,
    ``Decimal``, strings and other arrays are a ``TypeError``.

    An integer beyond int64 (``2**63``, ``10**400``) is a ``ValueError``; NaN and
    inf pass through for the caller to judge.
    """
    if type(value) is np.ndarray and value.ndim == 0 and value.dtype.kind in "iuf":
        value = value[()]  # a 0-d array of a real dtype: its number (as a radius or a centre's axis is read)
    # np.timedelta64 is a NumPy integer (numbers.Real) that int() refuses, with a message naming nothing
    if isinstance(value, (bool, np.bool_, np.timedelta64)) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a real number, got {type(value).__name__}")
    if isinstance(value, (int, np.integer)):
        _reject_huge_integers([value], name)
    try:
        return float(value)
    except OverflowError:
        raise ValueError(f"{name} must be finite, got a number beyond float64") from None


def as_scale(value: object) -> float:
    """The view-distance multiplier: a finite real number above zero.

    A bool, complex, ``Decimal`` or string is a ``TypeError`` (never read
    as 1); zero, negatives, NaN, inf and integers beyond int64 are a
    ``ValueError``.  Plain floats take a fast path (queries call this every time).
    """
    if type(value) is float and 0.0 < value < math.inf:
        return value
    scale = as_real(value, "scale")
    if not math.isfinite(scale) or scale <= 0:
        raise ValueError(f"scale must be finite and > 0, got {value!r}")
    return scale


def as_integer(value: object, what: str) -> int:
    """One integer (a handle, a viewer id) as a Python int; ``TypeError`` naming ``what`` for a bool or
    anything that is not an integer."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (numbers.Integral, np.integer)):
        many = what == "handle" and isinstance(value, (np.ndarray, list, tuple)) and np.ndim(value) > 0
        hint = "; many handles go to the batch calls (remove_many, update_many, centres_of, radii_of, ...)" \
            if many else ""
        raise TypeError(f"{what} must be an integer, got {type(value).__name__}{hint}")
    return int(value)


def as_handle(value: object) -> int:
    """One handle as a Python int; ``TypeError`` if it is not an integer."""
    return as_integer(value, "handle")


def as_handles(values: object, name: str = "handles", beyond: str = "raise", copy: bool = True) -> np.ndarray:
    """Handles as an int64 array of shape ``(n,)``; integers only.

    Bools (even one in a list), floats and masked arrays with a masked entry
    are a ``TypeError``.  A handle beyond int64 (``2**64``) cannot be in any
    structure: ``beyond="raise"`` makes that a ``KeyError``, ``beyond="drop"``
    leaves it out (for calls that ignore unknown handles).  ``copy=False``
    returns a contiguous int64 array as it is, for a caller that only reads it.
    """
    if type(values) is np.ndarray and values.dtype == np.int64 and values.ndim == 1:
        return values.copy() if copy else _writable(np.ascontiguousarray(values))  # what engines pass every frame
    _reject_masks_and_bools(values, name, "integers")
    if isinstance(values, (set, frozenset, dict)) or isinstance(values, Iterator):
        raise TypeError(f"{name} must be a sequence or array of integers, got a {type(values).__name__} "
                        f"(not a sequence: pass list(...) or np.fromiter(...))")
    try:
        array = np.asarray(values)
    except (TypeError, ValueError, OverflowError) as error:
        raise TypeError(f"{name} must be a 1-D array of integers: {error}") from None
    if (isinstance(values, (list, tuple)) and array.dtype.kind == "f"
            and all(isinstance(v, (numbers.Integral, np.integer)) for v in values)):
        array = np.array(values, dtype=object)  # np.uint64 among ints: NumPy promotes to float; keep them exact
    if array.ndim == 0:
        array = array.reshape(1)
    if array.size == 0:
        if array.ndim != 1 and array.shape[-1] != 0:
            raise ValueError(f"{name} must have shape (n,), got {array.shape}")
        return np.empty(0, dtype=np.int64)
    if array.ndim != 1:
        raise ValueError(f"{name} must have shape (n,), got {array.shape}")
    if array.dtype == object:
        items = array.tolist()
        if not all(isinstance(v, (numbers.Integral, np.integer)) and not isinstance(v, (bool, np.bool_))
                   for v in items):
            raise TypeError(f"{name} must be integers")
        fits = [_INT64_MIN <= int(v) <= _INT64_MAX for v in items]
        if not all(fits):
            if beyond == "raise":
                row = fits.index(False)
                raise KeyError(f"handle {int(items[row])} is not in the structure ({name}[{row}]: beyond int64)")
            items = [v for v, ok in zip(items, fits) if ok]
        return np.array([int(v) for v in items], dtype=np.int64)
    if array.dtype == np.bool_ or not np.issubdtype(array.dtype, np.integer):
        raise TypeError(f"{name} must be integers, got dtype {array.dtype}")
    if array.dtype == np.uint64:
        huge = array > np.uint64(_INT64_MAX)
        if huge.any():
            if beyond == "raise":
                row = int(np.flatnonzero(huge)[0])
                raise KeyError(f"handle {int(array[row])} is not in the structure ({name}[{row}]: beyond int64)")
            array = array[~huge]
    return np.array(array, dtype=np.int64)


def check_unique(handles: np.ndarray, name: str = "handles") -> None:
    """Duplicate handles in one batch mutation are a ``ValueError`` naming the smallest repeated one.

    Live handles are small non-negative integers (at most the handles issued), so they are counted
    (``np.bincount``, O(n + largest)) rather than sorted: a batch of every object of a 200k grid,
    4 ms to sort, 0.3 ms to count.  Handles spread far beyond the batch's size are sorted.
    """
    if handles.size <= 1:
        return
    low, high = int(handles.min()), int(handles.max())
    if low >= 0 and high < 8 * handles.size + 4096:
        counts = np.bincount(handles)
        if counts.max() <= 1:
            return
        repeated = np.flatnonzero(counts > 1)[:1]
    else:
        ordered = np.sort(handles)
        repeated = ordered[1:][ordered[1:] == ordered[:-1]]
    if repeated.size:
        rows = np.flatnonzero(handles == repeated[0])[:2].tolist()
        raise ValueError(f"{name} must be unique, handle {int(repeated[0])} appears more than once "
                         f"({name}[{rows[0]}] and {name}[{rows[1]}])")


def as_dim(dim: object) -> int:
    """A structure's dimension as an int: ``ValueError`` for anything but 1, 2 or 3 (a bool or 2.0 too)."""
    if isinstance(dim, bool) or not isinstance(dim, (numbers.Integral, np.integer)) or dim not in (1, 2, 3):
        raise ValueError(f"dim must be 1, 2 or 3, got {dim!r}")
    return int(dim)


def check_constructor(size: object, origin: object, dim: object, shape: object) -> tuple[float, np.ndarray, int, str]:
    """Validate ``(size, origin, dim, shape)``; returns them normalised."""
    dim = as_dim(dim)
    try:
        size = as_real(size, "size")
    except TypeError:
        raise ValueError(f"size must be a finite number > 0, got {size!r}") from None
    if not math.isfinite(size) or size <= 0:
        raise ValueError(f"size must be a finite number > 0, got {size!r}")
    if origin is None:
        origin = np.zeros(dim)
    else:
        try:
            origin = as_point(origin, dim, "origin")
        except TypeError as error:
            raise ValueError(str(error)) from None
    if not isinstance(shape, str) or shape not in SHAPES:
        raise ValueError(f"shape must be 'sphere' or 'cube', got {shape!r}")
    origin = origin + 0.0  # a private copy, -0.0 as 0.0
    with np.errstate(over="ignore"):
        far = origin + size
    if not np.isfinite(far).all():  # the root's high corner: bounds, traces and node boxes would end at inf
        raise ValueError(f"origin + size must be finite, got {far.tolist()}")
    origin.flags.writeable = False  # handed out as .origin: must not be a way to corrupt the lattice
    return size, origin, dim, shape


def as_coords(value: object, dim: int, name: str = "point") -> list[float]:
    """One point as a list of ``dim`` floats: :func:`as_point` with a fast path.

    Float64 arrays of the right shape and tuples of floats, what engines pass
    every frame, skip the NumPy round trip (single-object calls cost a few us).
    """
    coords: list[float]
    if type(value) is np.ndarray and value.dtype == np.float64 and value.shape == (dim,):
        coords = value.tolist()
    elif isinstance(value, (tuple, list)) and type(value) in (tuple, list) and len(value) == dim \
            and all(type(v) is float for v in value):
        coords = list(value)
    else:
        coords = as_point(value, dim, name).tolist()
    if not all(map(math.isfinite, coords)):
        raise ValueError(f"{name} must be finite (no NaN or inf)")
    return coords


def is_live(handle: object, issued: int, state: np.ndarray) -> bool:
    """``handle in structure``: True only for a live handle, never an exception."""
    if isinstance(handle, (bool, np.bool_)) or not isinstance(handle, (numbers.Integral, np.integer)):
        return False
    return 0 <= int(handle) < issued and state[int(handle)] >= 0


def live_handle(handle: object, issued: int, state: np.ndarray, owner: str) -> int:
    """``handle`` as an int, if it is live in a structure.

    ``issued`` handles have been handed out so far; ``state[h] < 0`` marks a
    free one.  A non-integer is a ``TypeError``, anything else a ``KeyError``.
    """
    handle = as_handle(handle)
    if not (0 <= handle < issued) or state[handle] < 0:
        raise KeyError(f"handle {handle} is not in the {owner}")
    return handle


def live_handles(handles: object, issued: int, state: np.ndarray, owner: str) -> np.ndarray:
    """Many handles as int64 (n,), all live (see :func:`live_handle`)."""
    handles = as_handles(handles)
    if handles.size:
        outside = (handles < 0) | (handles >= issued)
        if outside.any():
            row = int(np.flatnonzero(outside)[0])
            raise KeyError(f"handle {int(handles[row])} is not in the {owner} (handles[{row}])")
        dead = state[handles] < 0
        if dead.any():
            row = int(np.flatnonzero(dead)[0])
            raise KeyError(f"handle {int(handles[row])} is not in the {owner} (handles[{row}])")
    return handles


def as_flag(value: object, name: str = "exact") -> bool:
    """``value`` as a bool: ``True``/``False`` or a NumPy bool; anything else (``"yes"``, 1, None) is a ``TypeError``.

    >>> as_flag(np.True_, "trace")
    True
    """
    if value is True or value is False:  # the common case, fast
        return value is True
    if isinstance(value, np.bool_):
        return bool(value)
    raise TypeError(f"{name} must be True or False, not {type(value).__name__} {value!r}")


def as_probe_radii(values: object, m: int, name: str = "radii") -> np.ndarray:
    """Probe radii for ``m`` probes: one number for all, or shape ``(m,)``; finite, not negative; float64."""
    array = _as_float_array(values, name)
    if array.ndim == 0:
        return as_radii(array, 1, name)[np.zeros(m, dtype=np.int64)]
    return as_radii(array, m, name)
