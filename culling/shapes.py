"""Exact containment tests: is a point inside a sphere, or inside a cube?

A sphere contains ``p`` when the Euclidean distance from its centre is at most
its radius; a cube (``radius`` = half its edge) when the largest per-axis
distance is.  Surface points count as inside, and a radius of 0 contains only
its centre.  :func:`inside` is the one test every query kernel runs on each
candidate, reading the candidate's pool column in place: centre axes, radius,
and (spheres) the squared reach that makes the common case root-free.

>>> import numpy as np
>>> centres = np.array([[0.0, 0.0], [3.0, 4.0]])
>>> contains(centres, np.array([5.0, 5.0]), np.zeros(2), "sphere").tolist()
[True, True]
>>> contains(centres, np.array([3.0, 3.0]), np.zeros(2), "cube").tolist()
[True, False]
"""

from __future__ import annotations

import math

import numpy as np

from culling.jit import inline_kernel, kernel

__all__ = ["UNSAFE_SQUARE", "contains", "inside", "inside_all", "reach_of", "squared_reach", "squared_reach_of"]


#: Squared distances below this may have lost bits to underflow (and ``inf``
#: to overflow); those few are recomputed with scaling.  2**-960 leaves the
#: squares of offsets down to 2**-480 (~1e-145) exact.
UNSAFE_SQUARE = 2.0 ** -960


@kernel
def _scaled_distance(x: float, y: float, z: float) -> float:
    """Euclidean length of offsets ``(x, y, z)`` as ``m * sqrt(sum((d / m)**2))``, ``m = max |d|``.

    No under/overflow.  Scalars only (a missing axis is 0.0, which adds
    exactly nothing), so the call in :func:`inside`'s rare branch passes no
    array: passing one would cost reference counting on every object.
    """
    x, y, z = abs(x), abs(y), abs(z)
    largest = max(x, max(y, z))
    safe = largest if largest > 0.0 else 1.0
    x, y, z = x / safe, y / safe, z / safe
    return largest * math.sqrt(x * x + y * y + z * z)


@inline_kernel
def inside(columns: np.ndarray, row: int, p: np.ndarray, cube: bool, scale: float) -> bool:
    """Whether pool column ``row`` (centre axes, radius, squared reach) contains ``p``.

    The radius is multiplied by ``scale`` (1.0 for none).  A sphere compares
    the squared distance, summed axis by axis, with the stored squared reach
    (``sqrt(d2) <= r`` exactly, see :func:`squared_reach`); the rare square
    that may have under- or overflowed is recomputed with scaling.  O(dim).
    Written for ``dim <= 3``.
    """
    dim = p.shape[0]
    radius = columns[dim, row]
    if cube:
        largest = abs(columns[0, row] - p[0])
        for axis in range(1, dim):
            largest = max(largest, abs(columns[axis, row] - p[axis]))
        return largest <= radius * scale
    d = columns[0, row] - p[0]
    d2 = d * d
    for axis in range(1, dim):
        d = columns[axis, row] - p[axis]
        d2 += d * d
    if d2 >= UNSAFE_SQUARE and d2 < math.inf:
        if scale == 1.0:
            return d2 <= columns[dim + 1, row]
        return math.sqrt(d2) <= radius * scale
    y = columns[1, row] - p[1] if dim > 1 else 0.0  # almost never here
    z = columns[2, row] - p[2] if dim > 2 else 0.0
    return _scaled_distance(columns[0, row] - p[0], y, z) <= radius * scale


@kernel
def inside_all(columns: np.ndarray, p: np.ndarray, cube: bool, scale: float) -> np.ndarray:
    """:func:`inside` for every column of ``columns`` (width, n); bool (n,)."""
    out = np.empty(columns.shape[1], dtype=np.bool_)
    for row in range(columns.shape[1]):
        out[row] = inside(columns, row, p, cube, scale)
    return out


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
    ndarray, shape (n,), bool; O(n), :func:`inside` on each object
    """
    radii = np.asarray(radii, dtype=np.float64)
    columns = np.vstack([np.asarray(centres, dtype=np.float64).T, radii, squared_reach(radii)])
    return inside_all(columns, np.ascontiguousarray(point, dtype=np.float64), shape == "cube", float(scale))


@kernel
def reach_of(radius: float) -> float:
    """:func:`squared_reach` of one radius, compiled (for other kernels)."""
    reach = radius * radius
    while math.sqrt(np.nextafter(reach, math.inf)) <= radius:
        reach = np.nextafter(reach, math.inf)
    while math.sqrt(reach) > radius:
        reach = np.nextafter(reach, -math.inf)
    return reach


@kernel
def _squared_reach(radii: np.ndarray) -> np.ndarray:
    out = np.empty(radii.shape[0])
    for i in range(radii.shape[0]):
        out[i] = reach_of(radii[i])
    return out


def squared_reach(radii: np.ndarray) -> np.ndarray:
    """The largest float ``t`` with ``sqrt(t) <= r``, for each radius ``r``.

    ``sqrt`` is correctly rounded and monotone, so ``d2 <= squared_reach(r)``
    holds exactly when ``sqrt(d2) <= r``: the exact test without its square
    root, and without the rounding differences of ``d2 <= r * r``.  ``r * r``
    is within a few ulps of the answer; a few ``nextafter`` steps settle it.
    O(n), compiled.

    >>> r = np.array([0.0, 0.1, 3.0, 1e-200])
    >>> t = squared_reach(r)
    >>> bool((np.sqrt(t) <= r).all() and (np.sqrt(np.nextafter(t, np.inf)) > r).all())
    True
    """
    return _squared_reach(np.ascontiguousarray(radii, dtype=np.float64))


def squared_reach_of(radius: float) -> float:
    """:func:`squared_reach` of one radius (single-object updates)."""
    return float(reach_of(float(radius)))
