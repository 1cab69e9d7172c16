"""Exact containment tests: is a point inside a sphere, or inside a cube?

A sphere contains ``p`` when the Euclidean distance from its centre is at most
its radius; a cube (``radius`` = half its edge) when the largest per-axis
distance is.  Surface points count as inside, and a radius of 0 contains only
its centre.  The tests work axis by axis on 1-D arrays (a short inner axis of
length 3 would make NumPy loop per object), O(n).

"Exact" means exact: :func:`contains_exact` decides ``sum((c - p)**2) <=
(radius * scale)**2`` for the float64 inputs as real numbers, the answer a
``fractions.Fraction`` computation gives.  Floats decide every object whose
float result lies clearly (by a proven error bound) on one side; the few
within rounding of the surface, or whose squares under- or overflow, are
decided with exact rational arithmetic.

>>> import numpy as np
>>> centres = np.array([[0.0, 0.0], [3.0, 4.0]])
>>> contains(centres, np.array([5.0, 5.0]), np.zeros(2), "sphere").tolist()
[True, True]
>>> contains(centres, np.array([3.0, 3.0]), np.zeros(2), "cube").tolist()
[True, False]
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from culling.core.jit import inline_kernel, kernel

__all__ = ["classify", "contains", "contains_exact", "decide", "decide_grown", "decide_in_floats", "decide_pairs",
           "distances", "reach_of", "sphere_contains", "squared_distances", "squared_reach", "squared_reach_of",
           "within"]

#: Relative error bound used by the float filter of :func:`contains_exact`:
#: the squared distance (three roundings per axis, two for the sum) and the
#: squared reach (two or three) are each within ``6 * 2**-53`` of the truth;
#: ``2**-48`` leaves a wide margin.  Objects inside the band go to exact arithmetic.
FILTER_EPS = 2.0 ** -48

#: Squared distances outside ``[SAFE_LO, SAFE_HI]`` may have lost bits to
#: underflow or be near overflow: they go to exact arithmetic.
SAFE_LO = 2.0 ** -960
SAFE_HI = 2.0 ** 1020


#: Squared distances below this may have lost bits to underflow (and ``inf``
#: to overflow); those few are recomputed with scaling.  2**-960 leaves the
#: squares of offsets down to 2**-480 (~1e-145) exact.
_UNSAFE_SQUARE = 2.0 ** -960


def distances(axes: Sequence[np.ndarray], point: Sequence[float], shape: str) -> np.ndarray:
    """Distance from ``point`` to each centre in the shape's metric.

    Parameters
    ----------
    axes : sequence of ``dim`` ndarrays, shape (n,), float64
        The centres' coordinates, one array per axis.
    point : sequence of ``dim`` floats
    shape : "sphere" (Euclidean) or "cube" (L-infinity)

    Returns
    -------
    ndarray, shape (n,), float64, a new array
    """
    if shape == "cube":
        result: np.ndarray
        with np.errstate(over="ignore"):
            result = np.abs(np.subtract(axes[0], point[0]))
            for coords, p in zip(axes[1:], point[1:]):
                np.maximum(result, np.abs(coords - p), out=result)
        return result
    squares = squared_distances(axes, point)
    unsafe = _unsafe(squares)
    result = np.sqrt(squares, out=squares)
    if unsafe.size:
        result[unsafe] = _scaled_distances([a[unsafe] for a in axes], point)
    return result


def squared_distances(axes: Sequence[np.ndarray], point: Sequence[float]) -> np.ndarray:
    """Squared Euclidean distances, summed axis by axis in the order ``distances`` uses.

    Entries below ``2**-960`` or infinite may be off by under- or overflow;
    :func:`sphere_contains` repairs them, ``distances`` too.
    """
    result: np.ndarray
    with np.errstate(over="ignore", under="ignore"):
        result = np.subtract(axes[0], point[0])
        result *= result
        for coords, p in zip(axes[1:], point[1:]):
            offset = coords - p
            offset *= offset
            result += offset
        return result


def sphere_contains(axes: Sequence[np.ndarray], point: Sequence[float], radii: np.ndarray, reach: np.ndarray) -> np.ndarray:
    """``distances(axes, point, "sphere") <= radii`` without a square root per object.

    ``reach`` is :func:`squared_reach` of ``radii``, stored beside them.
    """
    squares = squared_distances(axes, point)
    inside = squares <= reach
    unsafe = _unsafe(squares)
    if unsafe.size:
        inside[unsafe] = _scaled_distances([a[unsafe] for a in axes], point) <= radii[unsafe]
    return inside


def _unsafe(squares: np.ndarray) -> np.ndarray:
    """Indices of squared distances that under- or overflow may have spoilt (usually none)."""
    if not squares.size or (squares.min() >= _UNSAFE_SQUARE and squares.max() < np.inf):
        return np.empty(0, dtype=np.int64)  # two reductions instead of four passes
    return np.flatnonzero((squares < _UNSAFE_SQUARE) | (squares == np.inf))


def _scaled_distances(axes: Sequence[np.ndarray], point: Sequence[float]) -> np.ndarray:
    """Euclidean distances computed as ``m * sqrt(sum((d / m)**2))``, ``m = max |d|``: no under/overflow."""
    with np.errstate(all="ignore"):  # an overflowed offset is inf: the distance is inf
        offsets = np.abs(np.array([a - p for a, p in zip(axes, point)]))
        largest = offsets.max(axis=0)
        safe = np.where((largest > 0) & (largest < np.inf), largest, 1.0)
        result: np.ndarray = largest * np.sqrt(((offsets / safe) ** 2).sum(axis=0))
        return result


def squared_reach(radii: np.ndarray) -> np.ndarray:
    """The largest float ``t`` with ``sqrt(t) <= r``, for each radius ``r``.

    ``sqrt`` is correctly rounded and monotone, so ``d2 <= squared_reach(r)``
    holds exactly when ``sqrt(d2) <= r``: the exact test without its square
    root, and without the rounding differences of ``d2 <= r * r``.  ``r * r``
    is within a few ulps of the answer; a few ``nextafter`` steps settle it.

    >>> r = np.array([0.0, 0.1, 3.0, 1e-200])
    >>> t = squared_reach(r)
    >>> bool((np.sqrt(t) <= r).all() and (np.sqrt(np.nextafter(t, np.inf)) > r).all())
    True
    """
    return _squared_reach(np.ascontiguousarray(radii, dtype=np.float64))


def squared_reach_of(radius: float) -> float:
    """:func:`squared_reach` of one radius (single-object updates)."""
    return float(reach_of(float(radius)))


@inline_kernel
def _next_up(x: float) -> float:
    """``nextafter(x, inf)`` for ``0 <= x < inf``: the bit pattern plus one (a libm call costs 20x more)."""
    return float(np.int64(np.float64(x).view(np.int64) + 1).view(np.float64))


@inline_kernel
def _next_down(x: float) -> float:
    """``nextafter(x, -inf)`` for ``0 < x <= inf``: the bit pattern minus one."""
    return float(np.int64(np.float64(x).view(np.int64) - 1).view(np.float64))


@kernel
def reach_of(radius: float) -> float:
    """:func:`squared_reach` of one radius, compiled (for other kernels).

    ``r * r`` or the float above it is the answer for every radius whose
    square neither under- nor overflows; that choice is made without a
    branch (batch kernels call this per object, and a mispredicted branch
    costs more than the square roots).  The loops settle the other radii.
    """
    reach = radius * radius
    above = _next_up(reach)  # NaN for an overflowed square: never chosen
    reach = above if math.sqrt(above) <= radius else reach
    while math.sqrt(_next_up(reach)) <= radius:
        reach = _next_up(reach)
    while math.sqrt(reach) > radius:  # > radius >= 0, so reach > 0
        reach = _next_down(reach)
    return reach


@kernel
def _squared_reach(radii: np.ndarray) -> np.ndarray:
    out = np.empty(radii.shape[0])
    for i in range(radii.shape[0]):
        out[i] = reach_of(radii[i])
    return out


@inline_kernel
def _exact_square(x: float) -> bool:
    """Whether ``x * x`` is exact in floats: Dekker's error term is zero (and nothing under- or overflowed)."""
    r = x * x
    if r == 0.0:
        return x == 0.0
    if not (SAFE_LO <= r <= SAFE_HI):
        return False
    c = 134217729.0 * x  # Veltkamp's split
    hi = c - (c - x)
    lo = x - hi
    return ((hi * hi - r) + 2.0 * hi * lo) + lo * lo == 0.0


@inline_kernel
def _exact_sum(a: float, b: float) -> bool:
    """Whether ``a + b`` is exact in floats (TwoSum's error is zero)."""
    s = a + b
    bb = s - a
    return (a - (s - bb)) + (b - bb) == 0.0 and abs(s) != math.inf


@kernel
def decide_in_floats(columns: np.ndarray, row: int, p: np.ndarray, cube: bool, scale: float) -> int:
    """Containment where every step is exact in floats: 1 inside, 0 outside, -1 when something rounds.

    A radius-0 object contains only its centre (``c - p`` is zero exactly when
    ``c == p``); integer-like worlds (a camera on a grid point, whole radii)
    have exact offsets, squares and sums.  Those need no rational arithmetic;
    only what truly rounds goes to :func:`decide`.
    """
    dim = p.shape[0]
    radius = columns[dim, row]
    limit = radius if scale == 1.0 else radius * scale
    if scale != 1.0 and (not _exact_product_up(radius, scale, limit)):
        return -1
    if limit == 0.0:
        for axis in range(dim):
            if columns[axis, row] != p[axis]:
                return 0
        return 1
    largest = 0.0
    total = 0.0
    for axis in range(dim):
        c = columns[axis, row]
        if not _exact_sum(c, -p[axis]):
            return -1
        d = c - p[axis]
        if cube:
            largest = max(largest, abs(d))
        else:
            if not (_exact_square(d) and _exact_sum(total, d * d)):
                return -1
            total += d * d
    if cube:
        return 1 if largest <= limit else 0
    if not _exact_square(limit):
        return -1
    return 1 if total <= limit * limit else 0


@inline_kernel
def _exact_product_up(a: float, b: float, r: float) -> bool:
    """Whether ``r = fl(a * b)`` is the exact product (Dekker's error is zero; no under- or overflow)."""
    if r == 0.0:
        return a == 0.0 or b == 0.0
    if not (SAFE_LO <= abs(r) <= SAFE_HI) or abs(a) > 2.0 ** 995 or abs(b) > 2.0 ** 995:
        return False
    c = 134217729.0 * a
    a_hi = c - (c - a)
    a_lo = a - a_hi
    c = 134217729.0 * b
    b_hi = c - (c - b)
    b_lo = b - b_hi
    return ((a_hi * b_hi - r) + a_hi * b_lo + a_lo * b_hi) + a_lo * b_lo == 0.0


@inline_kernel
def classify(columns: np.ndarray, row: int, p: np.ndarray, cube: bool, scale: float) -> tuple[bool, bool]:
    """The float filter of :func:`contains_exact` for pool column ``row``: ``(inside, unsure)``.

    ``inside`` when the object surely contains ``p``; ``unsure`` when the
    float result lies within rounding of the surface (or a square left the
    float range): :func:`decide` settles those in exact arithmetic.  Neither:
    surely outside.  The same operations and bounds as :func:`contains_exact`.
    """
    dim = p.shape[0]
    radius = columns[dim, row]
    limit = radius if scale == 1.0 else radius * scale
    if cube:
        largest = abs(columns[0, row] - p[0])
        for axis in range(1, dim):
            largest = max(largest, abs(columns[axis, row] - p[axis]))
        inside = largest < limit * (1.0 - FILTER_EPS)
        unsure = not (inside or largest > limit * (1.0 + FILTER_EPS))
        unsure = unsure or (limit < 2.0 ** -1000 and radius > 0.0) or largest == math.inf
        if unsure:
            return _settled(columns, row, p, cube, scale)
        return inside, False
    d = columns[0, row] - p[0]
    squares = d * d
    for axis in range(1, dim):
        d = columns[axis, row] - p[axis]
        squares += d * d
    bound = columns[dim + 1, row] if scale == 1.0 else limit * limit
    inside = squares < bound * (1.0 - FILTER_EPS)
    unsure = not (inside or squares > bound * (1.0 + FILTER_EPS))
    unsure = unsure or squares < SAFE_LO or squares > SAFE_HI
    if unsure:
        return _settled(columns, row, p, cube, scale)
    return inside, False


@inline_kernel
def _settled(columns: np.ndarray, row: int, p: np.ndarray, cube: bool, scale: float) -> tuple[bool, bool]:
    """:func:`classify`'s answer for a row within rounding of its surface: decided in floats where
    nothing rounds (:func:`decide_in_floats`), else unsure."""
    exact = decide_in_floats(columns, row, p, cube, scale)
    return exact == 1, exact < 0


def decide(columns: np.ndarray, rows: np.ndarray, points: np.ndarray, shape: str, scale: float) -> np.ndarray:
    """Exact containment (rational arithmetic) for the pool ``rows`` the float filter left unsure.

    ``points``: (dim,) for one query, or (len(rows), dim), one per row.
    Returns bool (len(rows),).  A few microseconds each; practically never called.
    """
    dim = points.shape[-1]
    which = np.arange(rows.size)
    axes = [columns[axis, rows] for axis in range(dim)]
    point = list(points.T) if points.ndim == 2 else points.tolist()
    return _exact(axes, point, columns[dim, rows], shape, scale, which)


def decide_grown(columns: np.ndarray, rows: np.ndarray, points: np.ndarray, grows: np.ndarray, shape: str,
                 scale: float) -> np.ndarray:
    """Exact overlap (rational arithmetic) of the pool ``rows`` with probe spheres:
    ``distance(c, p) <= r * scale + rho``, one probe per row.

    ``points``: (len(rows), dim); ``grows``: (len(rows),) the probes' radii ``rho``.
    Returns bool (len(rows),).  For the few rows the float filter of
    :func:`culling.core.overlap.probe_row` left unsure.
    """
    dim = points.shape[-1]
    which = np.arange(rows.size)
    axes = [columns[axis, rows] for axis in range(dim)]
    return _exact(axes, list(points.T), columns[dim, rows], shape, scale, which, grows)


def decide_pairs(columns: np.ndarray, first: np.ndarray, second: np.ndarray, shape: str) -> np.ndarray:
    """Exact overlap of the spheres in pool rows ``first[k]`` and ``second[k]``:
    ``distance(c_i, c_j) <= r_i + r_j``; bool (len(first),)."""
    dim = columns.shape[0] - 2
    return decide_grown(columns, first, columns[:dim, second].T, columns[dim, second], shape, 1.0)


def contains(centres: np.ndarray, radii: np.ndarray, point: np.ndarray,
             shape: str, scale: float = 1.0) -> np.ndarray:
    """Boolean mask: which objects contain ``point`` (radii multiplied by ``scale``).

    Parameters
    ----------
    centres : ndarray, shape (n, dim), float64
    radii : ndarray, shape (n,), float64
    point : ndarray, shape (dim,), float64
    shape : "sphere" or "cube"
    scale : float, the view-distance multiplier (> 0)

    Returns
    -------
    ndarray, shape (n,), bool
    """
    axes = [centres[:, axis] for axis in range(centres.shape[1])]
    return within(distances(axes, np.asarray(point).tolist(), shape), radii, scale)


def within(distance: np.ndarray, radii: np.ndarray, scale: float = 1.0) -> np.ndarray:
    """``distance <= radii * scale``, elementwise (the radius multiplied only when scaled)."""
    with np.errstate(over="ignore", under="ignore"):
        result: np.ndarray = distance <= (radii if scale == 1.0 else radii * scale)
    return result


def contains_exact(axes: Sequence[np.ndarray], point: Sequence[float | np.ndarray], radii: np.ndarray, shape: str,
                   scale: float = 1.0, reach: np.ndarray | None = None) -> np.ndarray:
    """Which objects contain ``point``, decided exactly for the float64 inputs.

    Parameters
    ----------
    axes : sequence of ``dim`` ndarrays, shape (n,), float64
        The centres' coordinates, one array per axis.
    point : sequence of ``dim`` floats, or of ndarrays shape (n,)
        The query point (one per object when arrays: a batch of queries).
    radii : ndarray, shape (n,), float64
    shape : "sphere" or "cube"
    scale : float > 0, multiplies every radius
    reach : ndarray, shape (n,), optional
        :func:`squared_reach` of ``radii`` (spheres, ``scale == 1``): saves
        squaring the radii.

    Returns
    -------
    ndarray, shape (n,), bool: ``|c - p| <= radius * scale`` in exact
    arithmetic (Euclidean for spheres, largest axis for cubes).

    Cost: O(n) vectorised; plus a few microseconds of Python per object
    within about ``2**-48`` (relative) of its surface or with coordinates
    whose squares leave the float range (rare; never for ordinary worlds).
    """
    inside: np.ndarray
    with np.errstate(all="ignore"):
        offsets = [np.subtract(a, p) for a, p in zip(axes, point)]
        if shape == "cube":
            largest = np.abs(offsets[0])
            for d in offsets[1:]:
                np.maximum(largest, np.abs(d), out=largest)
            limit = radii if scale == 1.0 else radii * scale
            # |fl(c - p)| and fl(r * s) are each within one rounding of the
            # truth, unless the product underflowed or the offset overflowed.
            inside = largest < limit * (1.0 - FILTER_EPS)
            unsure = ~(inside | (largest > limit * (1.0 + FILTER_EPS)))
            unsure |= ((limit < 2.0 ** -1000) & (radii > 0)) | (largest == np.inf)
            inside &= ~unsure
        else:
            squares = offsets[0] * offsets[0]
            for d in offsets[1:]:
                squares += d * d
            if reach is not None and scale == 1.0:
                bound = reach
            else:
                limit = radii if scale == 1.0 else radii * scale
                bound = limit * limit
            inside = squares < bound * (1.0 - FILTER_EPS)
            unsure = ~(inside | (squares > bound * (1.0 + FILTER_EPS)))
            if squares.size and not (squares.min() >= SAFE_LO and squares.max() <= SAFE_HI):
                unsure |= (squares < SAFE_LO) | (squares > SAFE_HI)
                inside &= ~unsure
    if unsure.any():
        which = np.flatnonzero(unsure)
        inside[which] = _exact(axes, point, radii, shape, scale, which)
    return inside


def _exact(axes: Sequence[np.ndarray], point: Sequence[float | np.ndarray], radii: np.ndarray, shape: str, scale: float,
           which: np.ndarray, grows: np.ndarray | None = None) -> np.ndarray:
    """The containment test in rational arithmetic for the objects ``which``
    (each radius times ``scale``, plus ``grows[k]`` when given: a probe sphere's radius)."""
    from fractions import Fraction

    s = Fraction(scale)
    result = np.empty(which.size, dtype=bool)
    columns = [a[which].tolist() for a in axes]
    points = [p[which].tolist() if isinstance(p, np.ndarray) and p.ndim else [float(p)] * which.size
              for p in point]
    extra = [0.0] * which.size if grows is None else grows[which].tolist()
    for i, r in enumerate(radii[which].tolist()):
        limit = Fraction(r) * s + Fraction(extra[i])
        offsets = [Fraction(c[i]) - Fraction(q[i]) for c, q in zip(columns, points)]
        if shape == "cube":
            result[i] = all(abs(d) <= limit for d in offsets)
        else:
            result[i] = sum(d * d for d in offsets) <= limit * limit
    return result
