"""Sphere meets sphere: the member tests of the probe queries and of the pairs, decided exactly.

A probe sphere (centre ``p``, radius ``rho``) meets a stored sphere (centre
``c``, radius ``r``, scaled by ``s``) when ``distance(c, p) <= r * s + rho``
(Euclidean for spheres, the largest per-axis distance for cubes); two stored
spheres meet when ``distance(c_i, c_j) <= r_i + r_j``.  Both are the point
test of :mod:`culling.core.containment` with a limit that is a sum, and both
are decided the same way: a float filter sure of every row not within
rounding of the surface (the limit ``fl(fl(r * s) + rho)`` and its square
are each within a few ulps of the truth, far inside ``FILTER_EPS``), and the
few rows it is unsure of (within ``2**-48`` of touching, or with a square
that leaves the float range) are decided exactly: in floats where no step
rounds (:func:`culling.core.containment.meets_in_floats`,
:func:`culling.core.containment.pair_meets_in_floats`: touching tiles,
voxels and contacts, radius-0 objects at the probe's centre), else in
rational arithmetic (:func:`culling.core.containment.decide_grown`, tens of
microseconds a row).  Rounding of the sum never flips an answer.

:func:`probe_run` tests one node's (or cell's) run of pool rows against one
probe, skipping the tiles (:mod:`culling.core.tiles`) the probe cannot reach,
and appends the answers to growable buffers; the tree's and the grid's probe
kernels call it per visited run.  :func:`meet_filter` is the pairs' test, one step per
candidate shared by every pair kernel (:func:`first_near`, :func:`rows_sure`, :func:`pair_row`;
:mod:`culling.pairs.join`, :mod:`culling.pairs.bands`).
"""

from __future__ import annotations

import math

import numpy as np

from culling.core.chunks import merged
from culling.core.containment import cube_filter, decide_grown, meets_in_floats, pair_meets_in_floats
from culling.core.floats import SAFE_HI, TINY_LIMIT, TINY_REACH, compare
from culling.core.structs import Pool, Query
from culling.core.tiles import TILE_SHIFT
from culling.runtime.jit import inline_kernel, kernel

__all__ = ["NEAR_LANES", "appended", "far_apart", "first_near", "joined", "meet_filter", "member", "owned", "pair_range", "pair_row", "partners_row_by_row", "probe_row",
           "partner_rows", "probe_run", "reach_up", "rows_sure", "settle"]

#: ``reach_up``'s relative margin: three roundings of a sum of non-negative terms stay below it.
_MARGIN = 1.0 + 2.0 ** -50
#: ``reach_up``'s absolute margin: covers a product that underflowed (error below 2**-1074).
_ABS_MARGIN = 2.0 ** -1070


@inline_kernel
def reach_up(radius: float, scale: float, rho: float) -> float:
    """A float at or above ``radius * scale + rho`` (real), for conservative pruning only.

    Both roundings are relative ``2**-53`` for normal results; ``_MARGIN``
    covers them and ``_ABS_MARGIN`` an underflowed product.  ``inf`` when
    the sum overflows (nothing is pruned then).
    """
    return (radius * scale + rho) * _MARGIN + _ABS_MARGIN


@inline_kernel
def far_apart(a: float, b: float, reach: float) -> bool:
    """Whether floats ``a <= b`` are surely more than the real ``reach0 <= reach`` apart.

    ``fl(b - a)`` is the correctly rounded difference, monotone: if
    ``b - a <= reach0 <= reach`` (reals) then ``fl(b - a) <= reach``.
    """
    return b - a > reach


@inline_kernel
def owned(owners: np.ndarray, first: int, end: int, probe: int) -> np.ndarray:
    """``owners`` (the probe of each unsure row ``0 .. first - 1``) with rows ``first .. end - 1``
    owned by ``probe``: a new array when any were added (unsure rows are rare)."""
    if end == first:
        return owners
    more = np.empty(end, dtype=np.int64)
    for k in range(first):  # a loop, not a slice copy: that pulls in numba's shape-mismatch message (issue 37)
        more[k] = owners[k]
    more[first:end] = probe
    return more


@inline_kernel
def probe_row(columns: np.ndarray, row: int, p: np.ndarray, rho: float, cube: bool,
              scale: float) -> tuple[bool, bool]:
    """The float filter for pool ``row`` against the probe ``(p, rho)``: ``(inside, unsure)``.

    ``inside``: the row's sphere (radius times ``scale``) surely meets the
    probe; ``unsure``: within rounding of touching (or a square left the
    float range), exact arithmetic decides; neither: surely apart.
    """
    dim = p.shape[0]
    radius = columns[dim, row]
    limit = (radius if scale == 1.0 else radius * scale) + rho
    if cube:
        inside, unsure = cube_filter(columns, row, p, limit, radius > 0.0 or rho > 0.0)
    else:
        d = columns[0, row] - p[0]
        squares = d * d
        for axis in range(1, dim):
            d = columns[axis, row] - p[axis]
            squares += d * d
        bound = limit * limit
        inside, near = compare(squares, bound)
        unsure = near and not inside
        if bound < TINY_REACH:  # the limit's square may have lost bits: only a clearly larger distance is sure
            unsure = squares < 2.0 * TINY_REACH
        unsure = unsure or squares > SAFE_HI
    if unsure:  # touching, most often, and exact in floats: decided here, not in rational arithmetic
        exact = meets_in_floats(columns, row, p, rho, cube, scale)
        return exact == 1, exact < 0
    return inside, False


@inline_kernel
def member(columns: np.ndarray, i: int) -> tuple[float, float, float, float]:
    """Row ``i``'s centre as three coordinates (0 beyond the rows' dimension) and its radius: what
    :func:`meet_filter` takes of the member on the left, read once per run of candidates."""
    dim = columns.shape[0] - 2
    return (columns[0, i], columns[1, i] if dim > 1 else 0.0, columns[2, i] if dim > 2 else 0.0,
            columns[dim, i])


@inline_kernel
def meet_filter(columns: np.ndarray, j: int | np.uint64, x: float, y: float, z: float, radius: float, cube: bool,
                dim: int) -> tuple[bool, bool, bool]:
    """The pairs' float filter, the one step every pair test runs per candidate: does row ``j``'s
    sphere meet the sphere at ``(x, y, z)`` (:func:`member`) with ``radius``?

    Returns ``(inside, near, unsafe)``: ``inside``, surely meeting (the distance below the limit
    by more than ``FILTER_EPS``); ``near``, not surely apart (within ``FILTER_EPS`` above the
    limit, or inside); ``unsafe``, the float filter's range left (a limit that may have lost bits
    to underflow, a square that may have overflowed): only ``inside and not (near and not inside)
    and not unsafe`` is sure.  Spheres: the squared distance against the squared sum of the radii
    (the axes summed in order, as :func:`probe_row`); cubes: the largest per-axis distance.
    ``dim``: the rows' dimension, ``columns.shape[0] - 2``; ``j`` signed or unsigned (:func:`first_near`'s lanes).
    """
    limit = radius + columns[dim, j]
    a = x - columns[0, j]
    b = y - columns[1, j] if dim > 1 else 0.0
    c = z - columns[2, j] if dim > 2 else 0.0
    if cube:
        d = max(abs(a), max(abs(b), abs(c)))
        bound = limit
        unsafe = (limit < TINY_LIMIT) | (d == math.inf)
    else:
        d = a * a + b * b + c * c
        bound = limit * limit
        unsafe = (bound < TINY_REACH) | (d > SAFE_HI)
    inside, near = compare(d, bound)
    return inside, near, unsafe


@inline_kernel
def pair_row(columns: np.ndarray, i: int, j: int, cube: bool) -> tuple[bool, bool]:
    """The float filter for pool rows ``i`` and ``j``: do their spheres meet?  ``(inside, unsure)``.

    :func:`meet_filter`, with the cases it calls unsafe narrowed as :func:`probe_row` does (a
    tiny limit leaves only the distances near it unsure), so exact arithmetic sees only the rows
    it must decide.
    """
    x, y, z, radius = member(columns, i)
    dim = columns.shape[0] - 2
    inside, near, unsafe = meet_filter(columns, j, x, y, z, radius, cube, dim)
    unsure = near and not inside
    if unsafe:
        limit = radius + columns[dim, j]
        if cube:
            largest = abs(x - columns[0, j])
            for axis in range(1, dim):
                largest = max(largest, abs(columns[axis, i] - columns[axis, j]))
            unsure = (limit < TINY_LIMIT and limit > 0.0) or largest == math.inf or unsure
        else:
            squares = 0.0
            for axis in range(dim):
                e = columns[axis, i] - columns[axis, j]
                squares += e * e
            unsure = squares < 2.0 * TINY_REACH if limit * limit < TINY_REACH else unsure
            unsure = unsure or squares > SAFE_HI
    if unsure:  # touching, most often, and exact in floats: decided here, not in rational arithmetic
        exact = pair_meets_in_floats(columns, i, j, cube)
        return exact == 1, exact < 0
    return inside, False


@kernel
def appended(buffer: np.ndarray, n: int, extra: int) -> np.ndarray:
    """``buffer`` itself when ``extra`` more values fit after its first ``n``, else a copy with room."""
    if n + extra <= buffer.shape[0]:
        return buffer
    bigger = np.empty(max(2 * buffer.shape[0], n + extra, 16), dtype=buffer.dtype)
    for k in range(n):
        bigger[k] = buffer[k]
    return bigger


@inline_kernel
def probe_run(pool: Pool, first: int, last: int, p: np.ndarray, rho: float, q: Query, out: np.ndarray, k: int,
              unsure: np.ndarray, uk: int) -> tuple[np.ndarray, int, np.ndarray, int]:
    """Append the handles of pool rows ``first .. last - 1`` that meet the probe ``(p, rho)`` to
    ``out[k:]`` (every row unless ``q.exact``), and the rows the filter is unsure of to ``unsure[uk:]``.

    With tile summaries (``pool.tile_box`` not empty: the tree), a tile whose
    box lies farther from ``p`` than its largest radius times ``q.scale`` plus
    ``rho`` on some axis is skipped (:func:`reach_up`, conservative).
    Returns the buffers (grown when full) and the new ``k``, ``uk``.  O(rows tested).
    """
    handles, columns, tile_box = pool.handles, pool.columns, pool.tile_box
    if not q.exact:
        out = appended(out, k, last - first)
        for row in range(first, last):
            out[k] = handles[row]
            k += 1
        return out, k, unsure, uk
    dim = p.shape[0]
    tiles = tile_box.shape[1] > 0
    row = first
    while row < last:
        end = min(last, ((row >> TILE_SHIFT) + 1) << TILE_SHIFT) if tiles else last
        if tiles:
            tile = row >> TILE_SHIFT
            reach = reach_up(tile_box[2 * dim, tile], q.scale, rho)
            far = False
            for axis in range(dim):
                far |= far_apart(tile_box[dim + axis, tile], p[axis], reach)
                far |= far_apart(p[axis], tile_box[axis, tile], reach)
            if far:
                row = end
                continue
        out = appended(out, k, end - row)
        for r in range(row, end):
            inside, doubtful = probe_row(columns, r, p, rho, q.cube, q.scale)
            out[k] = handles[r]
            k += inside
            if doubtful:
                unsure = appended(unsure, uk, 1)
                unsure[uk] = r
                uk += 1
        row = end
    return out, k, unsure, uk

@inline_kernel
def rows_sure(columns: np.ndarray, i: int, j0: int, j1: int, cube: bool, rows: np.ndarray,
              k: int) -> tuple[bool, int]:
    """Write the rows of ``j0 .. j1 - 1`` whose spheres surely meet row ``i``'s to ``rows[k:]``
    (room made by the caller), branch-free: one store per candidate, kept when it meets.

    Returns ``(all sure, new k)``; when some row lies within rounding of touching or out of the
    filter's range (:func:`meet_filter`), not all sure: the writes then mean nothing, and
    :func:`pair_row` decides row by row.
    """
    x, y, z, radius = member(columns, i)
    doubt = False
    dim = columns.shape[0] - 2
    for u in range(j1 - j0):
        inside, near, unsafe = meet_filter(columns, j0 + u, x, y, z, radius, cube, dim)
        doubt |= (near > inside) | unsafe  # near and not inside: within rounding of touching
        rows[k] = j0 + u
        k += inside
    return not doubt, k


@inline_kernel
def partner_rows(columns: np.ndarray, i: int, j0: int, j1: int, cube: bool, rows: np.ndarray, k: int,
                 unsure_a: np.ndarray, unsure_b: np.ndarray,
                 uk: int) -> tuple[int, np.ndarray, np.ndarray, int]:
    """The rows of ``j0 .. j1 - 1`` that meet row ``i``: the surely meeting ones to ``rows[k:]``
    (room for ``j1 - j0`` made by the caller), the pairs within rounding of touching, as rows, to
    ``unsure_a[uk:]``/``unsure_b[uk:]`` (grown as needed).  Returns ``(k, unsure_a, unsure_b, uk)``.

    :func:`rows_sure` first (branch-free); where it is unsure, :func:`pair_row` row by row.
    """
    sure, after = rows_sure(columns, i, j0, j1, cube, rows, k)
    if sure:
        return after, unsure_a, unsure_b, uk
    return partners_row_by_row(columns, i, j0, j1, cube, rows, k, unsure_a, unsure_b, uk)


@kernel
def partners_row_by_row(columns: np.ndarray, i: int, j0: int, j1: int, cube: bool, rows: np.ndarray, k: int,
                        unsure_a: np.ndarray, unsure_b: np.ndarray,
                        uk: int) -> tuple[int, np.ndarray, np.ndarray, int]:
    """:func:`partner_rows` where :func:`rows_sure` was unsure of some row: :func:`pair_row` row by row.

    A called kernel, not inlined: the rare path (a pair within rounding of touching) is compiled
    once, not in every pair kernel and for both shapes in each."""
    for j in range(j0, j1):  # within rounding of touching, or a square out of range: row by row
        inside, doubtful = pair_row(columns, i, j, cube)
        rows[k] = j
        k += inside
        if doubtful:
            unsure_a = appended(unsure_a, uk, 1)
            unsure_b = appended(unsure_b, uk, 1)
            unsure_a[uk] = i
            unsure_b[uk] = j
            uk += 1
    return k, unsure_a, unsure_b, uk


#: Rows :func:`first_near` tests side by side.  It reads up to ``NEAR_LANES - 1`` rows past the end
#: of a run (their answers masked out), so its callers' columns go on that far after their last row.
NEAR_LANES = 4


@inline_kernel
def first_near(columns: np.ndarray, i: int, j0: int, j1: int, cube: bool) -> int:
    """The first row of ``j0 .. j1 - 1`` that may meet row ``i`` (``j1`` when none may):
    :func:`meet_filter` without the writes of :func:`rows_sure` (a row near or out of the safe
    range counts).  Most candidates of a broad phase are apart: only the rows from the first hit
    on are tested again, to write their pairs.

    The rows go :data:`NEAR_LANES` at a time, each lane tested and the first hit picked without a
    branch: a bucket grid's runs hold two to four rows, so a run is one pass with no loop exit to
    mispredict per row.  (The lanes run one after the other: numba leaves LLVM's SLP vectorizer
    off.)  That needs ``cube`` to be a constant where this is inlined (its callers are a kernel per
    shape, as :func:`culling.pairs.bands.band_cells` picks): the 10k swarm's ``band_cells`` took 0.45
    ms against 0.55 ms a row at a time, and the lanes with ``cube`` unknown 0.57 ms.  The lanes'
    indices are unsigned, so no lane fixes up a negative index (0.64 against 0.67 ms on that swarm).
    Reads the rows up to ``j1 + NEAR_LANES - 2``; those past ``j1`` never count.
    """
    x, y, z, radius = member(columns, i)
    dim = columns.shape[0] - 2
    j = j0
    while j < j1:
        first = NEAR_LANES
        for lane in range(NEAR_LANES):
            inside, near, unsafe = meet_filter(columns, np.uint64(j + lane), x, y, z, radius, cube, dim)
            hit = (near | unsafe) & (j + lane < j1)
            first = min(first, lane if hit else NEAR_LANES)
        if first < NEAR_LANES:
            return j + first
        j += NEAR_LANES
    return j1


@inline_kernel
def pair_range(columns: np.ndarray, handles: np.ndarray, i: int, j0: int, j1: int, cube: bool,
               sure: tuple[np.ndarray, np.ndarray], k: int, doubt: tuple[np.ndarray, np.ndarray],
               uk: int) -> tuple[np.ndarray, np.ndarray, int, np.ndarray, np.ndarray, int]:
    """Test row ``i`` against rows ``j0 .. j1 - 1``: the handles of the pairs that surely meet go to
    ``first[k:]``/``second[k:]`` (``sure``; smaller handle first), the rows of those within rounding
    of touching to ``unsure_a[uk:]``/``unsure_b[uk:]`` (``doubt``); the buffers grow as needed.
    Returns ``(first, second, k, unsure_a, unsure_b, uk)``.

    :func:`partner_rows` (the partners' rows into ``second``), then the rows become handles.
    """
    first, second = sure
    unsure_a, unsure_b = doubt
    if j1 <= j0:
        return first, second, k, unsure_a, unsure_b, uk
    first = appended(first, k, j1 - j0)
    second = appended(second, k, j1 - j0)
    after, unsure_a, unsure_b, uk = partner_rows(columns, i, j0, j1, cube, second, k, unsure_a, unsure_b, uk)
    for t in range(k, after):  # the partners' rows become handle pairs, the smaller first
        a, b = handles[i], handles[second[t]]
        first[t] = min(a, b)
        second[t] = max(a, b)
    return first, second, after, unsure_a, unsure_b, uk


def joined(parts: list[tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]]) -> tuple[
        np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The chunks' ``(handles, counts, unsure_rows, unsure_probes)`` of a probe batch, concatenated in order."""
    if len(parts) == 1:
        return parts[0]
    handles, counts, unsure, owners = zip(*parts)
    return np.concatenate(handles), np.concatenate(counts), np.concatenate(unsure), np.concatenate(owners)


def settle(handles: np.ndarray, counts: np.ndarray, unsure: np.ndarray, owners: np.ndarray, columns: np.ndarray,
           pool_handles: np.ndarray, points: np.ndarray, grows: np.ndarray, shape: str,
           scale: float) -> tuple[np.ndarray, np.ndarray]:
    """A probe batch's answer: the sure handles, plus the unsure rows exact arithmetic keeps, merged by probe.

    ``unsure`` are pool rows and ``owners`` the probe each was tested for
    (:func:`culling.core.containment.decide_grown`); usually both are empty.
    """
    if not unsure.size:
        return handles, counts
    keep = decide_grown(columns, unsure, points[owners], grows[owners], shape, scale)
    return merged(handles, counts, pool_handles[unsure[keep]], owners[keep])
