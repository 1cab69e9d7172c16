"""The one containment test: is a point inside a sphere, or inside a cube?

A sphere contains ``p`` when the Euclidean distance from its centre is at most
its radius times the query's scale; a cube (``radius`` = half its edge) when
the largest per-axis distance is.  Surface points count as inside, and a
radius of 0 contains only its centre.  "Exact" means exact: the answer is the
one ``fractions.Fraction`` arithmetic gives for the float64 inputs.

The test has three parts, all here:

1. The flag pass (:func:`flag_rows`): a float filter over a run of pool rows
   that is sure of every object not within rounding of its surface.  Its
   loops run over contiguous columns with no branch and no store that
   depends on the test, so the compiler turns each into SIMD code: the
   distance axis by axis into a scratch column, then the comparisons with
   error bounds (``FILTER_EPS``) on both sides.  It only notes whether a
   tile holds a row within those bounds (or whose squares left the safe
   float range);
2. such a tile, practically never, is classified again row by row
   (:func:`classify`: the same operations and bounds, one row at a time),
   which tells the ``UNSURE`` rows apart;
   Such a row is decided in floats where every step is exact, or by the
   filter again with its lengths scaled by a power of two (a world whose
   squares leave the float range: :func:`rescaled_in_floats`);
3. the exact decider (:func:`decide`) settles the rows still unsure in
   rational arithmetic, a few microseconds each.

:func:`contains_exact` runs parts 2 and 3 on arrays that are not in a pool.

>>> import numpy as np
>>> axes = [np.array([0.0, 3.0]), np.array([0.0, 4.0])]     # centres (0, 0) and (3, 4)
>>> contains_exact(axes, [3.0, 4.0], np.array([5.0, 0.0]), "sphere").tolist()  # on a surface; at a point's centre
[True, True]
>>> contains_exact(axes, [3.0, 4.0], np.array([4.0, 0.0]), "cube").tolist()    # largest axis distance 4 <= 4
[True, True]
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from culling.core.floats import (
    ABOVE,
    BELOW,
    FILTER_EPS,
    SAFE_HI,
    SAFE_LO,
    TINY_LIMIT,
    TINY_REACH,
    compare,
    product_is_exact,
    square_is_exact,
    sum_is_exact,
)
from culling.core.structs import Pool, Query
from culling.runtime.jit import inline_kernel, kernel

__all__ = ["FILTER_EPS", "SURE", "TILE", "UNSURE", "at_centre", "classify", "classify_rows", "cube_filter", "contains_exact", "decide", "decide_grown",
           "decide_in_floats", "decide_pairs", "distances", "flag_rows", "meets_in_floats", "pair_meets_in_floats", "reach_of",
           "rescaled_in_floats", "squared_reach",
           "squared_reach_of", "within_in_floats"]

#: Flag of a row that surely contains the point.
SURE = 1
#: Flag of a row within rounding of its surface: exact arithmetic decides.
UNSURE = 2

#: Rows :func:`flag_rows` tests at a time: their distances (8 KiB) stay in the L1 cache.
TILE = 1024



#: Squared distances below this may have lost bits to underflow (and ``inf``
#: to overflow); those few are recomputed with scaling.  2**-960 leaves the
#: squares of offsets down to 2**-480 (~1e-145) exact.
_UNSAFE_SQUARE = 2.0 ** -960


def distances(axes: Sequence[np.ndarray] | np.ndarray, point: Sequence[float] | np.ndarray, shape: str) -> np.ndarray:
    """Distance from ``point`` to each centre in the shape's metric.

    Parameters
    ----------
    axes : sequence of ``dim`` ndarrays, shape (n,), float64, or one ndarray, shape (dim, n)
        The centres' coordinates, one array per axis.
    point : sequence of ``dim`` floats
    shape : "sphere" (Euclidean) or "cube" (L-infinity)

    Returns
    -------
    ndarray, shape (n,), float64, a new array
    """
    if not axes[0].size:
        return np.empty(0, dtype=np.float64)
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


def squared_distances(axes: Sequence[np.ndarray] | np.ndarray, point: Sequence[float] | np.ndarray) -> np.ndarray:
    """Squared Euclidean distances, summed axis by axis in the order ``distances`` uses.

    Entries below ``2**-960`` or infinite may be off by under- or overflow;
    :func:`distances` repairs them.
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


def _unsafe(squares: np.ndarray) -> np.ndarray:
    """Indices of squared distances that under- or overflow may have spoilt (usually none)."""
    if not squares.size or (squares.min() >= _UNSAFE_SQUARE and squares.max() < np.inf):
        return np.empty(0, dtype=np.int64)  # two reductions instead of four passes
    return np.flatnonzero((squares < _UNSAFE_SQUARE) | (squares == np.inf))


def _scaled_distances(axes: Sequence[np.ndarray] | np.ndarray, point: Sequence[float] | np.ndarray) -> np.ndarray:
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


@kernel
def decide_in_floats(columns: np.ndarray, row: int, p: np.ndarray, cube: bool, scale: float) -> int:
    """Containment where every step is exact in floats: 1 inside, 0 outside, -1 when something rounds
    (and the float filter scaled by a power of two, :func:`rescaled_in_floats`, cannot tell either).

    A radius-0 object contains only its centre (``c - p`` is zero exactly when
    ``c == p``); integer-like worlds (a camera on a grid point, whole radii)
    have exact offsets, squares and sums.  Those need no rational arithmetic;
    only what truly rounds goes to :func:`decide`.
    """
    radius = columns[p.shape[0], row]
    limit = radius if scale == 1.0 else radius * scale
    exact = -1
    if scale == 1.0 or product_is_exact(radius, scale):
        exact = within_in_floats(columns, row, p, limit, cube)
    return exact if exact >= 0 else rescaled_in_floats(columns, row, p, 0.0, cube, scale)


@kernel
def meets_in_floats(columns: np.ndarray, row: int, p: np.ndarray, rho: float, cube: bool, scale: float) -> int:
    """:func:`decide_in_floats` for a probe sphere ``(p, rho)``: does pool ``row``'s sphere (radius times
    ``scale``) meet it?  1, 0, or -1 when the limit ``radius * scale + rho`` or a step rounds.  Touching
    tiles, voxels and settled contacts (whole or binary-fraction coordinates and radii) are decided
    here, not in rational arithmetic."""
    radius = columns[p.shape[0], row]
    scaled = radius if scale == 1.0 else radius * scale
    exact = -1
    if (scale == 1.0 or product_is_exact(radius, scale)) and sum_is_exact(scaled, rho):
        exact = within_in_floats(columns, row, p, scaled + rho, cube)
    return exact if exact >= 0 else rescaled_in_floats(columns, row, p, rho, cube, scale)


@inline_kernel
def pair_meets_in_floats(columns: np.ndarray, i: int, j: int, cube: bool) -> int:
    """:func:`meets_in_floats` for pool rows ``i`` and ``j``: ``distance(c_i, c_j) <= r_i + r_j``; 1, 0 or -1."""
    dim = columns.shape[0] - 2
    ri = columns[dim, i]
    rj = columns[dim, j]
    exact = within_in_floats(columns, j, columns[:dim, i], ri + rj, cube) if sum_is_exact(ri, rj) else -1
    if exact >= 0:
        return exact
    # row i's centre copied: a view of the columns would compile the kernel a second time, for its layout
    return rescaled_in_floats(columns, j, np.ascontiguousarray(columns[:dim, i]), ri, cube, 1.0)


#: :func:`rescaled_in_floats` decides only where the larger of its two sides (the squared distance and
#: the squared limit; for cubes, the distance and the limit) is at least this: the underflow of their
#: smaller terms (absolute errors of ``2**-1074``) then stays far inside its relative margin.
RESCALED_FLOOR = 2.0 ** -900
#: ... and with this relative margin on each side: a subtraction, a product, a sum and the squares,
#: each ``2**-53``.
RESCALED_EPS = 2.0 ** -40


@kernel
def rescaled_in_floats(columns: np.ndarray, row: int, p: np.ndarray, rho: float, cube: bool, scale: float) -> int:
    """Whether pool ``row``'s object (radius times ``scale``) meets the probe ``(p, rho)`` (``rho`` 0:
    contains ``p``), by the float filter with every length scaled by one power of two: 1, 0, or -1
    within its margin of the surface (or where the scale leaves the float range).

    In a world below about ``1e-145`` (or beyond ``1e145``) every square leaves the float filter's
    safe range, so the filter left every candidate, not just those near a surface, to exact
    arithmetic: a query among 20,000 spheres of radius ``3 * 2**-490`` took milliseconds, pairs
    seconds, ``Fraction`` by ``Fraction``.  Multiplying the offsets and radii by ``2**k`` (the largest
    of them brought to ``[0.5, 1)``) is exact, but for a smaller one then below the normal range,
    whose loss is far below the margin.  O(dim).
    """
    dim = p.shape[0]
    radius = columns[dim, row]
    largest = max(radius, rho)
    for axis in range(dim):
        largest = max(largest, abs(columns[axis, row] - p[axis]))
    if not (0.0 < largest < math.inf):
        return -1
    shift = -math.frexp(largest)[1]
    limit = math.ldexp(radius, shift) * scale + math.ldexp(rho, shift)
    distance = 0.0
    for axis in range(dim):
        d = math.ldexp(columns[axis, row] - p[axis], shift)
        distance = max(distance, abs(d)) if cube else distance + d * d
    bound = limit if cube else limit * limit
    if not (max(distance, bound) >= RESCALED_FLOOR and bound < math.inf):
        return -1
    if distance <= bound * (1.0 - RESCALED_EPS):
        return 1
    return 0 if distance >= bound * (1.0 + RESCALED_EPS) else -1


@inline_kernel
def within_in_floats(columns: np.ndarray, row: int, p: np.ndarray, limit: float, cube: bool) -> int:
    """Whether pool ``row``'s centre lies within ``limit`` (exact, >= 0) of ``p``: Euclidean, or the largest
    axis for cubes; 1, 0, or -1 when an offset, square or sum rounds (TwoSum and Dekker say which)."""
    dim = p.shape[0]
    if limit == 0.0:  # only the centre itself
        for axis in range(dim):
            if columns[axis, row] != p[axis]:
                return 0
        return 1
    largest = 0.0
    total = 0.0
    for axis in range(dim):
        c = columns[axis, row]
        if not sum_is_exact(c, -p[axis]):
            return -1
        d = c - p[axis]
        if cube:
            largest = max(largest, abs(d))
        else:
            if not (square_is_exact(d) and sum_is_exact(total, d * d)):
                return -1
            total += d * d
    if cube:
        return 1 if largest <= limit else 0
    if not square_is_exact(limit):
        return -1
    return 1 if total <= limit * limit else 0


@inline_kernel
def cube_filter(columns: np.ndarray, row: int, p: np.ndarray, limit: float, sized: bool) -> tuple[bool, bool]:
    """The cube's float filter for pool column ``row``: its largest per-axis distance from ``p``
    against ``limit``, ``(inside, unsure)``.  ``sized``: the limit comes from a positive radius, so a
    limit too small to scale by the margins is left to exact arithmetic.  The point test and the
    probes' share it."""
    dim = p.shape[0]
    largest = abs(columns[0, row] - p[0])
    for axis in range(1, dim):
        largest = max(largest, abs(columns[axis, row] - p[axis]))
    inside, near = compare(largest, limit)
    return inside, (near and not inside) or (limit < TINY_LIMIT and sized) or largest == math.inf


@inline_kernel
def classify(columns: np.ndarray, row: int, p: np.ndarray, cube: bool, scale: float) -> tuple[bool, bool]:
    """The float filter for pool column ``row``, alone: ``(inside, unsure)``.

    ``inside`` when the object surely contains ``p``; ``unsure`` when the
    float result lies within rounding of the surface (or a square left the
    float range): :func:`decide` settles those in exact arithmetic.  Neither:
    surely outside.  The same operations and bounds as :func:`flag_rows`.
    """
    dim = p.shape[0]
    radius = columns[dim, row]
    limit = radius if scale == 1.0 else radius * scale
    if radius == 0.0:  # a point object: inside only at its centre, exactly (the common tie, decided inline)
        return at_centre(columns, row, p), False
    if cube:
        inside, unsure = cube_filter(columns, row, p, limit, radius > 0.0)
        if unsure:
            return _settled(columns, row, p, cube, scale)
        return inside, False
    d = columns[0, row] - p[0]
    squares = d * d
    for axis in range(1, dim):
        d = columns[axis, row] - p[axis]
        squares += d * d
    bound = columns[dim + 1, row] if scale == 1.0 else limit * limit
    inside, near = compare(squares, bound)
    unsure = (near and not inside) or (squares < SAFE_LO and bound < TINY_REACH) or squares > SAFE_HI
    if unsure:
        return _settled(columns, row, p, cube, scale)
    return inside, False


@inline_kernel
def at_centre(columns: np.ndarray, row: int, p: np.ndarray) -> bool:
    """Whether pool ``row``'s centre is ``p`` exactly: what a radius-0 object contains (any scale)."""
    same = True
    for axis in range(p.shape[0]):
        same &= columns[axis, row] == p[axis]
    return same


@inline_kernel
def _settled(columns: np.ndarray, row: int, p: np.ndarray, cube: bool, scale: float) -> tuple[bool, bool]:
    """:func:`classify`'s answer for a row within rounding of its surface: decided in floats where
    nothing rounds (:func:`decide_in_floats`), else unsure."""
    exact = decide_in_floats(columns, row, p, cube, scale)
    return exact == 1, exact < 0


@inline_kernel
def flag_rows(pool: Pool, run: tuple[int, int], p: np.ndarray, q: Query, distance: np.ndarray,
              flags: np.ndarray) -> tuple[int, int]:
    """Flag every row of the pool's ``run = (first, last)``, rows ``first .. last - 1``: ``flags[i]``
    for row ``first + i``.  The caller picks the rows worth testing (the tree's near tiles,
    :func:`culling.core.tiles.flag_tiles`).

    The float filter runs ``TILE`` rows at a time, whose distances (the
    scratch ``distance``) stay in the L1 cache: the distance axis by axis
    (squared and summed for spheres, largest for cubes), then the comparison
    with the squared reach (or the radius).  Its loops count ``i`` unsigned:
    the compiler then knows no index is negative (NumPy's wrap-around needs a
    check per access) and runs them several rows per instruction.  A tile
    with a row within rounding of its surface (practically never) is flagged
    again row by row with :func:`culling.core.containment.classify`.

    Spheres in 3-D, the common case, take :func:`_flag_spheres_3d`: one
    loop over the rows, the distance kept in a register, not the scratch.

    Returns ``(sure, unsure)``: how many rows were flagged ``SURE`` and
    ``UNSURE``.  O(rows).  Inlined into
    :func:`culling.core.members.keep_rows`, its one caller, which writes the
    flagged rows at once.
    """
    columns, cube, scale = pool.columns, q.cube, q.scale
    first, last = run
    dim = p.shape[0]
    if dim == 3 and not cube:
        return _flag_spheres_3d(columns, first, last, p, scale, flags)
    sure = 0
    unsure = 0
    for tile in range(first, last, TILE):
        n = np.uint64(min(TILE, last - tile))
        row = np.uint64(tile)
        flag = np.uint64(tile - first)
        for axis in range(dim):
            offset = p[axis]
            if cube and axis == 0:
                for i in range(n):
                    distance[i] = abs(columns[axis, row + i] - offset)
            elif cube:
                for i in range(n):
                    distance[i] = max(distance[i], abs(columns[axis, row + i] - offset))
            elif axis == 0:
                for i in range(n):
                    d = columns[axis, row + i] - offset
                    distance[i] = d * d
            else:
                for i in range(n):
                    d = columns[axis, row + i] - offset
                    distance[i] += d * d
        inside_count = 0
        maybe = 0  # rows inside the upper bound: as many as the sure ones unless a row is unsure
        unsafe = False  # a distance that may have lost bits to under- or overflow
        if cube:
            for i in range(n):
                radius = columns[dim, row + i]
                limit = radius * scale
                inside = distance[i] < limit * BELOW
                flags[flag + i] = inside
                inside_count += inside
                maybe += distance[i] <= limit * ABOVE
                unsafe |= ((limit < TINY_LIMIT) & (radius > 0.0)) | (distance[i] == math.inf)
        elif scale == 1.0:
            for i in range(n):
                reach = columns[dim + 1, row + i]
                inside = distance[i] < reach * BELOW
                flags[flag + i] = inside
                inside_count += inside
                maybe += distance[i] <= reach * ABOVE
                unsafe |= ((distance[i] < SAFE_LO) & (reach < TINY_REACH)) | (distance[i] > SAFE_HI)
        else:
            for i in range(n):
                limit = columns[dim, row + i] * scale
                bound = limit * limit
                inside = distance[i] < bound * BELOW
                flags[flag + i] = inside
                inside_count += inside
                maybe += distance[i] <= bound * ABOVE
                unsafe |= ((distance[i] < SAFE_LO) & (bound < TINY_REACH)) | (distance[i] > SAFE_HI)
        if maybe != inside_count or unsafe:  # within rounding of a surface: row by row
            inside_count, doubtful = classify_rows(columns, tile, int(n), p, cube, scale, flags, int(flag))
            unsure += doubtful
        sure += inside_count
    return sure, unsure


@inline_kernel
def _flag_spheres_3d(columns: np.ndarray, first: int, last: int, p: np.ndarray, scale: float,
                     flags: np.ndarray) -> tuple[int, int]:
    """:func:`flag_rows` for spheres in 3-D: the same operations in the same order (the squared
    distance ``(d0 * d0 + d1 * d1) + d2 * d2``, the bounds of :data:`FILTER_EPS`), written out in one
    loop per tile, so the distance stays in a register instead of three passes through the
    scratch column: on the benchmark's forest at 1M, the flag pass of a query took 9-10 us
    instead of 12-13 us (CPU time, side by side in one process).  O(rows).
    """
    p0, p1, p2 = p[0], p[1], p[2]
    sure = 0
    unsure = 0
    for tile in range(first, last, TILE):
        n = np.uint64(min(TILE, last - tile))
        row = np.uint64(tile)
        flag = np.uint64(tile - first)
        inside_count = 0
        maybe = 0  # rows inside the upper bound: as many as the sure ones unless a row is unsure
        unsafe = False  # a distance that may have lost bits to under- or overflow
        if scale == 1.0:
            for i in range(n):
                d0 = columns[0, row + i] - p0
                d1 = columns[1, row + i] - p1
                d2 = columns[2, row + i] - p2
                distance = d0 * d0 + d1 * d1
                distance += d2 * d2
                reach = columns[4, row + i]
                inside = distance < reach * BELOW
                flags[flag + i] = inside
                inside_count += inside
                maybe += distance <= reach * ABOVE
                unsafe |= ((distance < SAFE_LO) & (reach < TINY_REACH)) | (distance > SAFE_HI)
        else:
            for i in range(n):
                d0 = columns[0, row + i] - p0
                d1 = columns[1, row + i] - p1
                d2 = columns[2, row + i] - p2
                distance = d0 * d0 + d1 * d1
                distance += d2 * d2
                limit = columns[3, row + i] * scale
                bound = limit * limit
                inside = distance < bound * BELOW
                flags[flag + i] = inside
                inside_count += inside
                maybe += distance <= bound * ABOVE
                unsafe |= ((distance < SAFE_LO) & (bound < TINY_REACH)) | (distance > SAFE_HI)
        if maybe != inside_count or unsafe:  # within rounding of a surface: row by row
            inside_count, doubtful = classify_rows(columns, tile, int(n), p, False, scale, flags, int(flag))
            unsure += doubtful
        sure += inside_count
    return sure, unsure


@kernel(refcounts=False)
def classify_rows(columns: np.ndarray, first: int, n: int, p: np.ndarray, cube: bool, scale: float,
                  flags: np.ndarray, flag: int) -> tuple[int, int]:
    """:func:`flag_rows`' tile of ``n`` rows from pool row ``first`` flagged again row by row with
    :func:`classify` (``flags[flag + i]`` for row ``first + i``): a row within rounding of its surface
    (practically never).  Returns ``(sure, unsure)``, the rows flagged ``SURE`` and ``UNSURE``.

    A called kernel, not inlined: the rare path is compiled once, not in every kernel that
    inlines :func:`flag_rows` (allocates nothing: no reference counting)."""
    sure = 0
    unsure = 0
    for i in range(n):
        surely, doubtful = classify(columns, first + i, p, cube, scale)
        flags[flag + i] = SURE if surely else (UNSURE if doubtful else 0)
        sure += surely
        unsure += doubtful
    return sure, unsure


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


def contains_exact(axes: Sequence[np.ndarray], point: Sequence[float | np.ndarray], radii: np.ndarray, shape: str,
                   scale: float = 1.0, reach: np.ndarray | None = None) -> np.ndarray:
    """Which objects contain ``point``, decided exactly for the float64 inputs: the pool's test
    (:func:`classify`, then :func:`decide`) for arrays that are not in a pool.

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
        :func:`squared_reach` of ``radii`` (spheres, ``scale == 1``): saves computing it.

    Returns
    -------
    ndarray, shape (n,), bool: ``|c - p| <= radius * scale`` in exact
    arithmetic (Euclidean for spheres, largest axis for cubes).

    Cost: O(n) compiled; plus a few microseconds per object within about
    ``2**-48`` (relative) of its surface or with coordinates whose squares
    leave the float range (rare; never for ordinary worlds).
    """
    dim, radii = len(axes), np.asarray(radii, dtype=np.float64)
    columns = np.empty((dim + 2, radii.shape[0]))
    for axis, coords in enumerate(axes):
        columns[axis] = coords
    columns[dim] = radii
    if shape != "cube" and scale == 1.0:  # the only case the filter reads the squared reach
        columns[dim + 1] = squared_reach(radii) if reach is None else reach
    per_object = any(isinstance(p, np.ndarray) and p.ndim for p in point)
    points = np.ascontiguousarray(np.broadcast_arrays(*[np.asarray(p, dtype=np.float64) for p in point])).T \
        if per_object else np.array([[float(p) for p in point]])
    points = np.ascontiguousarray(points)
    flags = _classify_all(columns, points, shape == "cube", float(scale))
    inside: np.ndarray = flags == SURE
    unsure = np.flatnonzero(flags == UNSURE)
    if unsure.size:
        inside[unsure] = decide(columns, unsure, points[unsure] if per_object else points[0], shape, scale)
    return inside


@kernel
def _classify_all(columns: np.ndarray, points: np.ndarray, cube: bool, scale: float) -> np.ndarray:
    """:func:`classify` of every column, against ``points[0]`` or, one per column, ``points[i]``: flags uint8."""
    n = columns.shape[1]
    flags = np.empty(n, dtype=np.uint8)
    for i in range(n):
        surely, doubtful = classify(columns, i, points[0] if points.shape[0] == 1 else points[i], cube, scale)
        flags[i] = SURE if surely else (UNSURE if doubtful else 0)
    return flags


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


