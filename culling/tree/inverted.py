"""Exact point sets answered from the objects' side: each sphere asks a uniform grid over the points.

``query_many(points, exact=True)`` walks the tree once per point; where the points are many and the
objects few per point (an interest tick's viewers, or a million probe points among a sparse world's
spheres), the same answer comes cheaper from the objects (:func:`grid_answer`), as
:func:`answers_from_objects` decides.  The points are sorted into a uniform grid (axis 0 fastest,
:func:`grid_viewers`); each live object, pool row by pool row, reads per row of cells its box spans one
contiguous range of points and tests them with the float filter of
:func:`culling.core.containment.flag_rows` (the same operations and bounds), the rare ones within
rounding of the surface with :func:`culling.core.containment.classify`, the unsure ones left to exact
arithmetic: the answers are the walk's.  Each object's pairs are one run, recorded by handle;
:func:`scatter_groups` then takes the runs handle after handle to their points' rows, so every row
comes sorted (the interest sets diff it with the previous row by one merge,
:func:`culling.uses.interest_kernels.merge_rows`).  On 10k viewers x 100k entities, one thread, reading
the runs in handle order rather than the pairs in the pool's (spatial) order costs about 1 ms more
(2.5 ms against 1.5 ms), and the merge saves about 3 ms.  (Taking the entities themselves in handle
order loses more: 12 ms for the pairs, not 6 ms, the points' grid read at random.)  On that world
(about 50 entities a viewer) a member test reads about 1M candidates for 500k answers, against 4.7M
rows the viewers' walks read.  On 1M points among 200k spheres of radius 1-10 in a 4096-cube (3,293
answers), 77-100 ms against the walks' 200 ms (2 cores).
"""

from __future__ import annotations

import itertools
import math
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import NDArray

from culling.core.containment import classify, decide
from culling.core.floats import ABOVE, BELOW, SAFE_HI, SAFE_LO, TINY_REACH
from culling.runtime.jit import inline_kernel, kernel
from culling.runtime.threads import run_chunks, thread_count

if TYPE_CHECKING:
    from culling.tree.tree import ViewDistanceTree

__all__ = ["GRID_CELLS_PER_VIEWER", "GRID_ENTITIES_PER_VIEWER", "GRID_FIRST_HINT", "GRID_MARGIN", "GRID_MAX_CELLS", "GRID_MIN_CELLS", "GRID_MIN_EDGE",
           "GRID_MIN_VIEWERS", "MAX_HANDLE", "PAIR_PLACE", "RUN_PART_SHIFT", "SET_HANDLE", "answers_from_objects",
           "grid_answer", "grid_pairs", "grid_viewers", "row_offsets", "scatter_groups"]

#: Handles as :func:`grid_answer` gives them (:data:`SET_HANDLE`) or as a walk gives them (int64).
Handles = NDArray[np.signedinteger[Any]]

#: Handles :func:`grid_answer` answers with and :class:`culling.uses.interest.InterestSets` accepts are below
#: this: :data:`SET_HANDLE`'s, and the sets' scratch has two bits per handle value.
MAX_HANDLE = 2**31

#: The pairs' viewer places (below the viewers' count) as 4-byte integers: half the bytes that
#: :func:`scatter_groups` reads at random, run by run.
PAIR_PLACE = np.int32

#: The handles of :func:`grid_answer`'s rows, and of the interest sets kept between ticks
#: (:class:`culling.uses.interest.InterestSets`), as 4-byte integers (every handle is below
#: :data:`MAX_HANDLE`): the scatter writes and the merge reads half the bytes (on 10k viewers x 100k
#: entities, 500k handles held: 2 MB, not 4).  What callers get (``query_many``, events, ``interest``) is
#: int64, as everywhere in the library.
SET_HANDLE = np.int32

#: Exact sets come from the objects (each sphere asks a grid over the points, :func:`grid_answer`) rather
#: than from the points (each walks the tree) when there are at most this many live objects per point and
#: at least :data:`GRID_MIN_VIEWERS` points (:func:`answers_from_objects`): the grid's cost grows with the
#: objects, the walks' with the points.  (Measured on the interest ticks: see docs/PERFORMANCE.md.)
GRID_ENTITIES_PER_VIEWER = 64.0
GRID_MIN_VIEWERS = 256

#: Handles per chunk of :func:`grid_answer` below which it runs on the calling thread.
GRID_MIN_ROWS = 8192

#: The pair buffers of a chunk of :func:`grid_answer`: room for the last answer's pairs per pool row
#: (:data:`GRID_FIRST_HINT` at a caller's first) times this, plus :data:`GRID_SLACK`; they grow when
#: that runs out (the pairs so far copied, the chunk asked again).  The chunks' densities differ: on 10k
#: viewers x 100k entities the densest of 8 holds 1.6 times the mean pairs a row, so 1.25 ran out every
#: tick.  The unsure pairs' buffers start with :data:`GRID_UNSURE_ROOM`.
GRID_ROOM = 2.5
GRID_SLACK = 1024
GRID_FIRST_HINT = 8.0
GRID_UNSURE_ROOM = 64


#: A grid over the viewers has at most this many cells per viewer (and at least :data:`GRID_MIN_CELLS`):
#: a cell's start is 8 bytes, and the grid stays in cache next to the viewers' coordinates.
GRID_CELLS_PER_VIEWER = 8
GRID_MIN_CELLS = 4096

#: ... and at most this many (8 MB of starts), whatever the viewers: a grid of 8 cells a point over 1M
#: points held 64 MB of starts, and sorting the points into it read them at random (85 ms of a 140 ms
#: ``query_many`` of 1M points among 200k spheres of radius 1-10; at 2**21 cells 52 ms, 2**20 34 ms,
#: 2**19 32 ms, 2**18 46 ms, its cells then too full).  Below 131,072 viewers (an interest tick's) it
#: changes nothing.
GRID_MAX_CELLS = 1 << 20

#: A cell is this many times narrower along axis 0 than its edge, and wider along the others (as many
#: cells in all): an entity then reads fewer, longer ranges of viewers.
GRID_ASPECT = 4.0

#: A grid cell's edge is never below this (a normal float: its inverse is finite, about 2**1000).
GRID_MIN_EDGE = 2.0 ** -1000

#: The reach an entity asks the grid for is its radius times the scale, widened by this relative margin
#: (far above the two roundings of the product), so that its cell range holds every viewer it may contain.
GRID_MARGIN = 1.0 + 2.0 ** -30


@kernel
def grid_viewers(points: np.ndarray, cell: float) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray,
                                                          np.ndarray, np.ndarray]:
    """A uniform grid over the viewers ``points`` ``(m, dim)``, cells of edge ``cell`` or more (coarser
    where the viewers spread wide: at most ``GRID_CELLS_PER_VIEWER * m`` cells, and ``GRID_MAX_CELLS``), axis 0
    fastest.

    Returns ``(order, coords, starts, shape, low, inverse)``: the viewers sorted by cell (``order[j]``
    is the viewer at place ``j``), their coordinates in that order (``(dim, m)``), cell ``c``'s viewers
    at places ``starts[c] .. starts[c + 1] - 1``, cells per axis (3 entries, 1 past ``dim``), and
    each axis's low corner and ``1 / edge``; ``shape`` all 0 (and no grid) where the viewers spread
    beyond float64's range.  A coordinate ``x`` lies in cell
    ``int(min((x - low) * inverse, shape - 1))`` (monotone in ``x``: :func:`grid_pairs` finds its
    ranges with the same rounding).  O(m + cells).
    """
    m, dim = points.shape
    low = np.empty(dim)
    inverse = np.empty(dim)
    shape = np.ones(3, dtype=np.int64)
    extent = np.empty(dim)
    for axis in range(dim):
        lo, hi = np.inf, -np.inf
        for i in range(m):
            lo = min(lo, points[i, axis])
            hi = max(hi, points[i, axis])
        low[axis] = lo
        extent[axis] = hi - lo
    budget = max(GRID_MIN_CELLS, min(GRID_CELLS_PER_VIEWER * m, GRID_MAX_CELLS))
    widest = 0.0
    for axis in range(dim):
        widest = max(widest, extent[axis])
    if not widest < np.inf:  # coordinates beyond half float64's range: no grid (shape 0; the caller walks)
        shape[:] = 0
        return (np.empty(0, dtype=np.int64), np.empty((dim, 0)), np.zeros(1, dtype=np.int64), shape, low,
                inverse)
    # At least GRID_MIN_EDGE: viewers within 1e-310 of each other made the edge subnormal and its
    # inverse infinite, every cell index then undefined.
    edge = max(cell, widest / budget, GRID_MIN_EDGE)
    while True:
        cells = 1.0
        for axis in range(dim):
            cells *= math.floor(extent[axis] / edge) + 1.0
        if cells <= budget:
            break
        edge *= 1.25
    total = 1
    for axis in range(dim):
        side = edge / GRID_ASPECT if axis == 0 and dim > 1 else edge * GRID_ASPECT
        shape[axis] = int(math.floor(extent[axis] / side)) + 1
        inverse[axis] = 1.0 / side
        total *= shape[axis]
    key = np.empty(m, dtype=np.int64)
    starts = np.zeros(total + 1, dtype=np.int64)
    for i in range(m):
        k = 0
        for axis in range(dim - 1, -1, -1):
            c = int(min((points[i, axis] - low[axis]) * inverse[axis], shape[axis] - 1.0))
            k = k * shape[axis] + c
        key[i] = k
        starts[k + 1] += 1
    for c in range(total):
        starts[c + 1] += starts[c]
    order = np.empty(m, dtype=np.int64)
    cursor = starts[:-1].copy()
    for i in range(m):
        order[cursor[key[i]]] = i
        cursor[key[i]] += 1
    coords = np.empty((dim, m))
    for axis in range(dim):
        for j in range(m):
            coords[axis, j] = points[order[j], axis]
    return order, coords, starts, shape, low, inverse


@inline_kernel
def _cell_range(x: float, reach: float, low: float, inverse: float, cells: int) -> tuple[int, int]:
    """The cells ``a .. b - 1`` of one axis that hold every coordinate within ``reach`` of ``x``
    (``a == b``: none).  Conservative: ``fl(x - reach) <= y`` for every float ``y >= x - reach``, and
    every step after it is monotone.  A viewer's ``(y - low) * inverse`` can round up to ``cells``
    itself (its cell is clamped to the last): so can ``a`` of an entity there, which is then no
    reason to skip it (a radius-0 entity at the highest viewer of a 1-D grid found nothing)."""
    a = (x - reach - low) * inverse
    b = (x + reach - low) * inverse
    if not (b >= 0.0 and a <= cells):  # also a NaN reach: never
        return 0, 0
    return int(min(max(a, 0.0), cells - 1.0)), int(min(b, cells - 1.0)) + 1  # clamped before the conversion: b may pass 2**63


#: A run's record (:func:`grid_pairs`) packs the id of the call that found it above this bit and its
#: start in that call's pairs below: calls are a few per thread, a call's pairs far below 2**40.  One
#: record of two words per handle, written at random (the pool's order is not the handles'): three
#: arrays by handle (call, start, count) cost three cache misses an entity where this costs one.
RUN_PART_SHIFT = 40
RUN_START_MASK = (1 << RUN_PART_SHIFT) - 1


#: Coordinates below this in magnitude (a viewer's, an entity's centre) give squared distances far below
#: ``SAFE_HI`` (``3 * (2 * 2**500)**2 < 2**1020``): :func:`grid_pairs` then leaves out that test.
GRID_PLAIN = 2.0 ** 500


@inline_kernel
def _sure_range(centre: tuple[float, float, float], bound: float, coords: np.ndarray, s: int, e: int,
                pair_place: np.ndarray, k: int, counts: np.ndarray, r: int, plain: bool) -> tuple[int, bool]:
    """The float filter of :func:`culling.core.containment.flag_rows` for the viewers at places ``s .. e - 1``
    against one sphere (its squared reach ``bound``): the places surely inside written at ``pair_place[k:]``
    and counted in ``counts[r, place]``, without a branch (counted in the same loop: a loop of its own
    over each entity's few pairs cost 0.8 ms of 5.5 on 10k viewers x 100k entities, its exits
    mispredicted).  Returns ``(how many, doubt)``: ``doubt`` when some viewer is within rounding of
    the surface or its distance left the safe range (then the caller tests them one by one).
    ``plain``: the caller knows that no squared distance can leave ``[SAFE_LO, SAFE_HI]`` where it
    matters (the reach is not tiny, every coordinate below :data:`GRID_PLAIN`), so only the surface
    is tested."""
    dim = coords.shape[0]
    c0, c1, c2 = centre
    found = 0
    doubt = False
    hi = bound * ABOVE
    lo = bound * BELOW
    tiny = bound < TINY_REACH
    for j in range(np.uint64(s), np.uint64(e)):  # unsigned: no wrap-around check per access
        d = c0 - coords[0, j]
        d2 = d * d
        if dim > 1:
            d = c1 - coords[1, j]
            d2 += d * d
        if dim > 2:
            d = c2 - coords[2, j]
            d2 += d * d
        inside = d2 < lo
        if plain:
            doubt |= (d2 <= hi) & (not inside)
        else:
            doubt |= ((d2 <= hi) & (not inside)) | ((d2 < SAFE_LO) & tiny) | (d2 > SAFE_HI)
        pair_place[np.uint64(k + found)] = j
        counts[np.uint64(r), j] += inside
        found += inside
    return found, doubt


@kernel
def _classify_range(columns: np.ndarray, row: int, scale: float, cube: bool, coords: np.ndarray, s: int, e: int,
                    pair_place: np.ndarray, k: int, unsure_row: np.ndarray, unsure_place: np.ndarray,
                    uk: int) -> tuple[int, int, bool]:
    """:func:`grid_pairs`' rare path: the viewers at places ``s .. e - 1`` against pool ``row``, one by one
    with :func:`culling.core.containment.classify` (a range within rounding of the sphere's surface, or
    cubes).  Returns ``(k, uk, full)``; ``full`` when ``unsure_row`` ran out (the range is then to be
    done again).  A kernel of its own: the common path's loop stays small."""
    dim = coords.shape[0]
    p = np.empty(dim)
    for j in range(s, e):
        for axis in range(dim):
            p[axis] = coords[axis, j]
        surely, doubtful = classify(columns, row, p, cube, scale)
        if doubtful:
            if uk == unsure_row.shape[0]:
                return k, uk, True
            unsure_row[uk] = row
            unsure_place[uk] = j
            uk += 1
        pair_place[k] = j
        k += surely
    return k, uk, False


@kernel
def grid_pairs(columns: np.ndarray, handles: np.ndarray, first: int, last: int, scale: float, cube: bool,
               grid: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray],
               pair_place: np.ndarray, groups: tuple[np.ndarray, int, int], k: int,
               counts: np.ndarray, unsure_row: np.ndarray, unsure_place: np.ndarray, uk: int) -> tuple[int, int, int]:
    """Every live entity of pool rows ``first .. last - 1`` asks the viewers' grid (:func:`grid_viewers`:
    ``grid = (coords, starts, shape, low, inverse)``) which viewers its sphere (radius times ``scale``)
    contains, decided as :func:`culling.core.containment.flag_rows` decides it (the same float
    filter, :func:`culling.core.containment.classify` within rounding of the surface).

    Each sure pair's viewer (its place in the grid's order) is written at ``pair_place[k]`` and
    counted in ``counts[(h * mult) >> 32, place]`` (``counts`` ``(ranges, m)``: by range of handles, each
    as many handles: ``mult`` is about ``2**32 * ranges / handles``); an
    entity's pairs are one run, ``groups = (runs, this_part, mult)`` records it by handle for
    :func:`scatter_groups`: ``runs[h] = (this_part << RUN_PART_SHIFT | start, count)``, the run at
    ``start`` in the ``pair_place`` of this call, whose id is ``this_part``.  Each unsure pair (practically
    never) is written at ``unsure_row[uk]``, ``unsure_place[uk]``, for exact arithmetic.  Returns
    ``(row, k, uk)``: the rows before ``row`` are done; ``row < last`` when the pair buffers ran out
    (call again from ``row`` with larger ones).  Each entity reads, per row of cells its box spans,
    one contiguous range of viewers (axis 0 fastest): the pool's rows, near in space, read the same
    viewers.  O(entities * rows of cells + candidates).
    """
    coords, starts, shape, low, inverse = grid
    dim = coords.shape[0]
    room = pair_place.shape[0]
    n0, n1, n2 = shape[0], shape[1], shape[2]
    runs, this_part, mult = groups
    tag = this_part << RUN_PART_SHIFT
    far = 0.0   # the largest viewer coordinate's magnitude (a bound): the grid's corners
    for axis in range(dim):
        far = max(far, abs(low[axis]), abs(low[axis] + shape[axis] / inverse[axis]))
    far_ok = far < GRID_PLAIN
    for row in range(first, last):
        h = handles[row]
        if h < 0:
            continue
        limit = columns[dim, row] * scale
        bound = columns[dim + 1, row] if scale == 1.0 else limit * limit
        reach = limit * GRID_MARGIN
        c0 = columns[0, row]
        c1 = columns[1, row] if dim > 1 else 0.0
        c2 = columns[2, row] if dim > 2 else 0.0
        a0, b0 = _cell_range(c0, reach, low[0], inverse[0], n0)
        if a0 == b0:
            continue
        a1, b1 = (_cell_range(c1, reach, low[1], inverse[1], n1) if dim > 1 else (0, 1))
        a2, b2 = (_cell_range(c2, reach, low[2], inverse[2], n2) if dim > 2 else (0, 1))
        k_row = k
        uk_row = uk
        full = False
        r = (h * mult) >> 32   # h below 2**31, mult below 2**32: no overflow
        plain = far_ok and bound >= TINY_REACH and abs(c0) + abs(c1) + abs(c2) < GRID_PLAIN
        for z in range(a2, b2):
            for y in range(a1, b1):
                cell = (z * n1 + y) * n0
                s = starts[cell + a0]
                e = starts[cell + b0]
                if k + (e - s) > room:
                    full = True
                    break
                found, doubt = _sure_range((c0, c1, c2), bound, coords, s, e, pair_place, k, counts, r, plain)
                if not (doubt or cube):
                    k += found
                    continue
                for i in range(k, k + found):  # the rare path: its own pairs counted instead
                    counts[r, pair_place[i]] -= 1
                k_cell = k
                k, uk, full = _classify_range(columns, row, scale, cube, coords, s, e, pair_place, k, unsure_row,
                                              unsure_place, uk)
                for i in range(k_cell, k):
                    counts[r, pair_place[i]] += 1
                if full:
                    break
            if full:
                break
        if full:  # the next call does this entity again from scratch: its counts undone
            for i in range(k_row, k):
                counts[r, pair_place[i]] -= 1
            return row, k_row, uk_row
        runs[h, 0] = tag | k_row   # one record by handle: one cache line (RUN_PART_SHIFT)
        runs[h, 1] = k - k_row
    return last, k, uk


@kernel
def scatter_groups(pair_place: np.ndarray, groups: tuple[np.ndarray, int, int],
                   base: np.ndarray, cursor: np.ndarray, out: np.ndarray, lo: int, hi: int) -> int:
    """The runs of pairs of handles ``lo .. hi - 1`` (:func:`grid_pairs`' ``groups``; part ``c``'s pairs
    at ``pair_place[base[c]:]``), handle after handle, to their viewers' rows: ``out[cursor[place]] = h``,
    the cursor advanced.  So every row comes out in ascending handles; ranges of handles with cursors
    of their own (each range's rows start where the lower ranges' end) run at once.  Handles whose
    count is 0 (none, or not live) write nothing.  O(handles + pairs)."""
    runs, _, _ = groups
    for h in range(lo, hi):
        n = runs[h, 1]
        if n == 0:
            continue
        packed = runs[h, 0]
        s = base[packed >> RUN_PART_SHIFT] + (packed & RUN_START_MASK)
        for i in range(s, s + n):
            v = pair_place[i]
            out[cursor[v]] = h
            cursor[v] += 1
    return 0


def answers_from_objects(live: int, points: int, shape: str) -> bool:
    """Whether ``points`` exact point sets over ``live`` objects of ``shape`` come cheaper from the objects
    (:func:`grid_answer`) than from the points' walks: spheres, at least :data:`GRID_MIN_VIEWERS` points and
    at most :data:`GRID_ENTITIES_PER_VIEWER` objects per point."""
    return bool(live) and points >= GRID_MIN_VIEWERS and live <= GRID_ENTITIES_PER_VIEWER * points and shape == "sphere"


def row_offsets(counts: NDArray[np.int64]) -> NDArray[np.int64]:
    """CSR offsets ``(m + 1,)`` of rows of ``counts``."""
    offsets = np.zeros(counts.size + 1, dtype=np.int64)
    np.cumsum(counts, out=offsets[1:])
    return offsets


def grid_answer(tree: ViewDistanceTree, points: NDArray[np.float64], scale: float,
                hint: float = GRID_FIRST_HINT) -> tuple[Handles, NDArray[np.int64], NDArray[np.int64] | None,
                                                        float, bool]:
    """Every viewer's exact set, entity by entity: ``query_many(points, exact=True, scale=scale)``'s
    answer by the other direction.  The caller holds the tree's lock; a sphere tree with entities.

    The viewers go into a uniform grid (:func:`grid_viewers`); each
    live entity, in handle order, asks the grid for the viewers in its box and tests them with
    the float filter of the tree's own member test, the rows within rounding of a surface with
    :func:`culling.core.containment.classify`, the few left unsure by exact arithmetic
    (:func:`culling.core.containment.decide`): the answers are the walk's.  Chunks of pool rows run
    on the library's threads, each recording every entity's pairs as one run under its handle; the
    runs then go to their viewers' rows handle after handle
    (:func:`scatter_groups`, ranges of handles on the threads), so
    each row comes out in ascending handles.

    Returns ``(handles, counts, order, pairs_per_handle, ascending)``: row ``j`` (``counts[j]``
    handles, :data:`SET_HANDLE`, int64 where the walk answered) is viewer ``order[j]``'s, the grid's
    order; ``pairs_per_handle`` sizes the next call's buffers (``hint``: this call's guess); ``ascending``: every row is sorted (not so only where
    exact arithmetic kept a pair, appended after the others, or where the walk answered).
    O(m + cells + handles + entities * rows of cells + candidates).
    """
    m = points.shape[0]
    columns, handles = tree._rows()
    top = int(tree._pool.top)
    order, coords, starts, shape, low, inverse = grid_viewers(points, 0.0)
    if not shape[0]:  # viewers spread beyond float64's range: the walk answers
        handles_, counts_, order_ = tree._walked_many(points, True, scale)
        return handles_, counts_, order_, hint, False
    grid = (coords, starts, shape, low, inverse)
    bound = int(tree._next_handle)
    runs = np.zeros((bound, 2), dtype=np.int64)   # each handle's run of pairs: (part and start, count)
    ids = itertools.count()   # next() on it is atomic: each chunk's pairs get an id of their own
    # Ranges of handles scattered at once, as many handles each (ranges of 2**k handles split 100k
    # handles 65,536 / 34,464, and 140k 131,072 / 8,928): handle h's is (h * mult) >> 32, below ``ranges``.
    ranges = max(1, min(thread_count(), bound // GRID_MIN_ROWS)) if bound <= MAX_HANDLE else 1
    mult = (ranges << 32) // bound if ranges > 1 else 0
    firsts = [min(-(-(r << 32) // mult), bound) if r else 0 for r in range(ranges)] + [bound]

    def chunk(lo: int, hi: int) -> tuple[NDArray[np.int32], int, NDArray[np.int64], NDArray[np.int64],
                                         NDArray[np.int64], int]:
        part = next(ids)
        groups = (runs, part, mult)
        room = int(hint * (hi - lo) * GRID_ROOM) + GRID_SLACK
        place = np.empty(room, dtype=PAIR_PLACE)
        counts = np.zeros((ranges, m), dtype=np.int64)
        unsure_row = np.empty(GRID_UNSURE_ROOM, dtype=np.int64)
        unsure_place = np.empty(GRID_UNSURE_ROOM, dtype=np.int64)
        row, k, uk = lo, 0, 0
        while True:
            row, k, uk = grid_pairs(columns, handles, row, hi, scale, False, grid, place, groups, k, counts,
                                    unsure_row, unsure_place, uk)
            if row == hi:
                return place, k, counts, unsure_row[:uk], unsure_place[:uk], part
            # The pairs or the unsure rows (practically never) ran out at pool row ``row``: both grow.
            unsure_row = np.concatenate([unsure_row, np.empty(unsure_row.size + 1, dtype=np.int64)])
            unsure_place = np.concatenate([unsure_place, np.empty(unsure_place.size + 1, dtype=np.int64)])
            grown = 2 * place.size + GRID_SLACK
            place = np.concatenate([place[:k], np.empty(grown - k, dtype=PAIR_PLACE)])

    parts = run_chunks(chunk, top, min_items=GRID_MIN_ROWS)
    by_range = parts[0][2]
    for part in parts[1:]:
        by_range += part[2]
    counts = by_range.sum(axis=0)
    unsure_rows = np.concatenate([part[3] for part in parts])
    ascending = True
    if unsure_rows.size:  # within rounding of a surface: exact arithmetic decides
        unsure_places = np.concatenate([part[4] for part in parts])
        keep = decide(columns, unsure_rows, coords.T[unsure_places], tree.shape, scale)
        counts += np.bincount(unsure_places[keep], minlength=m).astype(np.int64)
        ascending = not keep.any()
    offsets = row_offsets(counts)
    out = np.empty(int(offsets[-1]), dtype=SET_HANDLE)
    # Every part's pairs in one array (the part ids index ``base``), then handle after handle to the rows.
    base = np.zeros(len(parts), dtype=np.int64)
    if len(parts) == 1:
        pairs = parts[0][0]
    else:
        sizes = np.array([part[1] for part in parts], dtype=np.int64)
        ends = np.cumsum(sizes)
        base[[part[5] for part in parts]] = ends - sizes
        pairs = np.concatenate([part[0][:part[1]] for part in parts])
    cursors = np.empty((ranges, m), dtype=np.int64)   # range r's rows start after the lower ranges' pairs
    cursors[0] = offsets[:-1]
    np.cumsum(by_range[:-1], axis=0, out=cursors[1:])
    cursors[1:] += offsets[:-1]
    groups = (runs, 0, mult)
    run_chunks(lambda lo, hi: [scatter_groups(pairs, groups, base, cursors[r], out, firsts[r], firsts[r + 1])
                               for r in range(lo, hi)], ranges, chunks=ranges)
    if not ascending:  # the pairs exact arithmetic kept (a few), after the sure ones of their rows
        kept_handles = handles[unsure_rows[keep]]
        by_handle = np.argsort(kept_handles, kind="stable")
        count = np.bincount(kept_handles, minlength=bound).astype(np.int64)
        kept_runs = np.empty((bound, 2), dtype=np.int64)   # one part: each handle's start and count
        kept_runs[:, 0] = row_offsets(count)[:-1]
        kept_runs[:, 1] = count
        kept = (kept_runs, 0, 0)
        scatter_groups(unsure_places[keep][by_handle].astype(PAIR_PLACE), kept, np.zeros(1, dtype=np.int64), cursors[-1], out, 0, bound)
    return out, counts, order, out.size / max(top, 1), ascending
