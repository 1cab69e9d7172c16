"""The compiled pass of an interest tick: each viewer's new set merged with its previous one, and the events.

Every viewer's set is one row of a CSR array (``handles[offsets[i]:offsets[i + 1]]``)
kept sorted ascending between ticks.  The tree answers a tick's rows node by
node, not in handle order; sorting every row (about 30 ns a handle) would
cost more than the diff itself, so :func:`advance_rows` does not sort the
new rows.  Per viewer it

1. flags the handles of its new row in a scratch bit array indexed by handle
   (2 bits a handle);
2. walks its previous row in order: a handle flagged stays (it is written to
   the new row, so the kept ones come out sorted; its flags cleared), any other left;
3. collects the new row's handles still flagged, the entered ones (few, except
   for a new viewer; their flags cleared), and sorts them;
4. merges the two sorted runs, kept and entered, backwards in place into the
   viewer's new row.

So a tick costs O(row lengths) per viewer plus the sort of what entered,
with the scratch array all zeros again after each row (a refused row drops it).  At
2 bits a handle it stays in a core's L2 cache up to a few million entities: 256 KB for
1M, where an int32 stamp per handle (a value unique to the viewer and tick, nothing
ever cleared: the pass before) took 4 MB and left the cache; on 2,000 viewers x 1M
entities, one thread, the diff takes about 7.9 ms against 10.5 ms with the stamps.
With hysteresis the pass also flags the wider
answer (``scale = 1 + m``): a previous handle flagged by either stays, the
entered ones come only from the inner answer (then the outer row's flags are cleared).  A handle in ``gone``
(removed since the last tick, perhaps handed out again to a new entity)
never stays: it left, and entered again if the new answer holds it.

:func:`advance_rows` works on the viewers ``lo .. hi - 1`` and writes only
where their rows go, so the library's threads run chunks of viewers at once
(:func:`culling.runtime.threads.run_chunks`), each with a scratch array of its
own.  Viewers never share a previous row: ids are unique within a tick.  A
chunk writes its viewers' events one after another from the start of its own
region of the event buffers (each region as large as the chunk's rows, an upper
bound), so the events, few, lie close together and :func:`compact_rows` packs
them from a few cache lines (rather than from one line per viewer and kind,
spread over buffers as large as the sets).

The other direction (:func:`grid_viewers`, :func:`grid_pairs`, :func:`scatter_groups`): where the
entities are few per viewer, the sets come cheaper from the entities.  The viewers are sorted into a
uniform grid (axis 0 fastest); each live entity, pool row by pool row, reads per row of cells its box
spans one contiguous range of viewers and tests them with the float filter of
:func:`culling.core.containment.flag_rows` (the same operations and bounds), the rare ones within
rounding of the surface with :func:`culling.core.containment.classify`, the unsure ones left to exact
arithmetic.  Each entity's pairs are one run, recorded by handle; :func:`scatter_groups` then takes the
runs handle after handle to their viewers' rows, so every row comes sorted and :func:`merge_rows`
diffs it with the previous row by one merge, where :func:`advance_rows` (rows in any order: the
walk's) flags a scratch bit array and sorts what entered.  On 10k viewers x 100k entities, one thread,
reading the runs in handle order rather than the pairs in the pool's (spatial) order costs about
1 ms more (2.5 ms against 1.5 ms), and the merge saves about 3 ms (1.2 ms against the
diff by int32 stamps, 4.1 ms, then).  (Taking the entities themselves in handle order loses more: 12 ms for the pairs,
not 6 ms, the viewers' grid read at random.)  On that world (about 50
entities a viewer) a member test reads about 1M candidates for 500k answers, against 4.7M rows the
viewers' walks read.
"""

from __future__ import annotations

import math

import numpy as np

from culling.core.containment import classify
from culling.core.floats import ABOVE, BELOW, SAFE_HI, SAFE_LO, TINY_REACH
from culling.runtime.jit import inline_kernel, kernel

__all__ = ["GRID_CELLS_PER_VIEWER", "GRID_MARGIN", "GRID_MIN_CELLS", "RUN_PART_SHIFT", "SMALL_SORT", "advance_rows", "compact_rows", "grid_pairs",
           "grid_viewers", "merge_rows", "scatter_groups"]

#: Runs up to this length are sorted by insertion (no call, no recursion); longer ones by ``ndarray.sort``.
SMALL_SORT = 24


@inline_kernel
def _in_sorted(values: np.ndarray, h: int) -> bool:
    """Whether ``h`` is in the sorted ``values`` (binary search).  A loop rather than ``np.searchsorted``:
    a kernel holding numba's ``arraymath`` makes every process that loads it import that module (and its
    BLAS probe) first."""
    lo, hi = 0, values.shape[0]
    while lo < hi:  # the first place whose value is not below h
        mid = (lo + hi) >> 1
        if values[mid] < h:
            lo = mid + 1
        else:
            hi = mid
    return bool(lo < values.shape[0] and values[lo] == h)


@inline_kernel
def _sort_run(values: np.ndarray, a: int, b: int) -> None:
    """Sort ``values[a:b]`` in place."""
    if b - a > SMALL_SORT:
        values[a:b].sort()
        return
    for j in range(a + 1, b):
        x = values[j]
        k = j - 1
        while k >= a and values[k] > x:
            values[k + 1] = values[k]
            k -= 1
        values[k + 1] = x


@inline_kernel
def _flag(h: int, bits: int) -> np.uint8:
    """Handle ``h``'s ``bits`` (1: inner, 2: outer, 3: both) placed in its byte of :func:`advance_rows`' scratch."""
    return np.uint8(bits << ((h & 3) << 1))


@kernel
def advance_rows(inner: np.ndarray, inner_start: np.ndarray, inner_count: np.ndarray, outer: np.ndarray,
                 outer_start: np.ndarray, outer_count: np.ndarray, sticky: bool, previous: np.ndarray,
                 previous_offsets: np.ndarray, previous_row: np.ndarray,
                 gone: np.ndarray, flags: np.ndarray, new: np.ndarray, new_counts: np.ndarray,
                 entered: np.ndarray, entered_counts: np.ndarray, left: np.ndarray, left_counts: np.ndarray,
                 events: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray], walk: np.ndarray, lo: int,
                 hi: int) -> int:
    """Viewers ``walk[lo .. hi - 1]``: the new sorted set, the entered and the left handles of each.

    Parameters
    ----------
    inner, inner_start, inner_count : int64
        Each viewer's handles within reach: row ``i`` is ``inner[inner_start[i]:][:inner_count[i]]``
        (rows apart from each other, in any order: the tree's walk order, say; a row's handles in any
        order, each once).
    outer, outer_start, outer_count : int64
        With ``sticky`` (hysteresis): each viewer's handles within the wider reach, a superset of
        its inner row; otherwise ignored (pass the inner rows).
    previous, previous_offsets : int64
        The previous tick's sorted rows; ``previous_row[i]`` is viewer ``i``'s, -1 for a new viewer.
    gone : int64, sorted
        Handles removed since the previous tick.
    flags : uint8, two bits per possible handle (``flags[h >> 2]``, bits ``2 * (h & 3)`` and up)
        Scratch of this chunk's thread, all zeros; all zeros again on return -1 (each row's flags
        are cleared as the row is done), meaningless after a refused row.  2 bits a handle rather
        than a 4-byte stamp: 1M handles take 256 KB, which stays in the core's L2 cache.
    new, new_counts
        Row ``i``'s sorted new set is written to ``new[outer_start[i]:]`` (``inner_start``
        without ``sticky``), its length to ``new_counts[i]``.
    entered, entered_counts, left, left_counts
        Row ``i``'s sorted entered handles at ``entered[entered_at[i]:]``, its sorted left ones at
        ``left[left_at[i]:]``.
    events : ``(entered_base, left_base, entered_at, left_at)``
        The chunk starting at walk step ``lo`` writes its events one after another from
        ``entered_base[lo]`` and ``left_base[lo]`` (int64 ``(m + 1,)`` by walk step: step ``j`` may
        write ``base[j + 1] - base[j]`` of each, as many as its inner row and its previous row
        hold); each row's first place goes to ``entered_at[i]`` and ``left_at[i]``.

    walk : int64 (m,), a permutation
        The order the viewers are taken in: the tree's walk order, so that viewers one after the
        other hold mostly the same handles (their flags in cache) and read their rows in memory order.

    Returns -1, or (the outputs and ``flags`` then meaningless) ``2 * i`` for a row ``i`` that holds a
    handle twice, ``2 * i + 1`` for one whose inner handles are not all in its outer row (``sticky``).
    Every handle must be below ``4 * flags.shape[0]`` (not checked here).  O(row lengths) per viewer,
    plus a binary search in ``gone`` per previous handle when ``gone`` is not empty, plus the sort of
    the entered handles.
    """
    check_gone = gone.shape[0] > 0
    room = outer_start if sticky else inner_start
    entered_base, left_base, entered_at, left_at = events
    e = entered_base[lo] if lo < hi else 0   # this chunk's events, one after another
    g = left_base[lo] if lo < hi else 0
    for step in range(lo, hi):
        i = int(walk[step])
        if sticky:  # flag 2: in the outer row
            for j in range(outer_start[i], outer_start[i] + outer_count[i]):
                h = outer[j]
                b = flags[h >> 2]
                if b & _flag(h, 2):
                    return 2 * i
                flags[h >> 2] = b | _flag(h, 2)
        for j in range(inner_start[i], inner_start[i] + inner_count[i]):  # flag 1: in the inner row
            h = inner[j]
            b = flags[h >> 2]
            if b & _flag(h, 1):
                return 2 * i
            if sticky and not b & _flag(h, 2):
                return 2 * i + 1
            flags[h >> 2] = b | _flag(h, 1)
        # The previous row in order: flagged handles stay (sorted, their flags cleared), the others left.
        k0 = room[i]
        k = k0
        g0 = g
        p = previous_row[i]
        if p >= 0:
            for j in range(previous_offsets[p], previous_offsets[p + 1]):
                h = previous[j]
                b = flags[h >> 2]
                if b & _flag(h, 3) and not (check_gone and _in_sorted(gone, h)):
                    new[k] = h
                    k += 1
                    flags[h >> 2] = b & ~_flag(h, 3)
                else:
                    left[g] = h
                    g += 1
        # Entered: the inner handles still flagged (their flags cleared).
        e0 = e
        for j in range(inner_start[i], inner_start[i] + inner_count[i]):
            h = inner[j]
            b = flags[h >> 2]
            if b & _flag(h, 1):
                entered[e] = h
                e += 1
                flags[h >> 2] = b & ~_flag(h, 3)
        if sticky:  # the outer handles neither kept nor entered
            for j in range(outer_start[i], outer_start[i] + outer_count[i]):
                h = outer[j]
                flags[h >> 2] &= ~_flag(h, 3)
        _sort_run(entered, e0, e)
        # Merge the kept run new[k0:k] and the entered run backwards into new[k0:k + e - e0].
        w = k + (e - e0) - 1
        a = k - 1
        b = e - 1
        while b >= e0:
            if a >= k0 and new[a] > entered[b]:
                new[w] = new[a]
                a -= 1
            else:
                new[w] = entered[b]
                b -= 1
            w -= 1
        new_counts[i] = k - k0 + e - e0
        entered_at[i] = e0
        entered_counts[i] = e - e0
        left_at[i] = g0
        left_counts[i] = g - g0
    return -1


@kernel
def merge_rows(inner: np.ndarray, inner_start: np.ndarray, inner_count: np.ndarray, outer: np.ndarray,
               outer_start: np.ndarray, outer_count: np.ndarray, sticky: bool, previous: np.ndarray,
               previous_offsets: np.ndarray, previous_row: np.ndarray, gone: np.ndarray, new: np.ndarray,
               new_counts: np.ndarray, entered: np.ndarray, entered_counts: np.ndarray, left: np.ndarray,
               left_counts: np.ndarray, events: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray],
               walk: np.ndarray, lo: int, hi: int) -> int:
    """:func:`advance_rows` for viewers ``walk[lo .. hi - 1]`` whose rows come sorted ascending, each handle once
    (the grid's rows, :func:`grid_pairs`): the same outputs at the same places, by one merge of each
    new row with its previous row, with no scratch and no sort.

    Without ``sticky`` the new set is the inner row itself (``new`` and ``new_counts`` are not
    written); with it, the previous handles in the outer row and not ``gone`` stay, merged with
    the inner row into ``new[outer_start[i]:]``.  A previous handle in ``gone`` never stays (it
    left, and entered again if the new row holds it).  O(row lengths) per viewer, plus a binary
    search in ``gone`` per handle in both rows when ``gone`` is not empty.  Returns -1 (no row is
    refused: the rows are the grid's).
    """
    check_gone = gone.shape[0] > 0
    entered_base, left_base, entered_at, left_at = events
    e = entered_base[lo] if lo < hi else 0   # this chunk's events, one after another
    g = left_base[lo] if lo < hi else 0
    for step in range(lo, hi):
        i = int(walk[step])
        a = inner_start[i]
        a_end = a + inner_count[i]
        e0 = e
        q = 0
        q_end = 0
        p = previous_row[i]
        if p >= 0:
            q = previous_offsets[p]
            q_end = previous_offsets[p + 1]
        g0 = g
        if not sticky:
            while a < a_end and q < q_end:
                x = inner[a]
                y = previous[q]
                if x < y:
                    entered[e] = x
                    e += 1
                    a += 1
                elif y < x:
                    left[g] = y
                    g += 1
                    q += 1
                else:
                    if check_gone and _in_sorted(gone, x):
                        entered[e] = x
                        e += 1
                        left[g] = y
                        g += 1
                    a += 1
                    q += 1
            while a < a_end:
                entered[e] = inner[a]
                e += 1
                a += 1
            while q < q_end:
                left[g] = previous[q]
                g += 1
                q += 1
        else:
            o = outer_start[i]
            o_end = o + outer_count[i]
            w0 = o
            w = o
            while a < a_end or q < q_end:
                if q < q_end and (a == a_end or previous[q] <= inner[a]):
                    y = previous[q]
                    q += 1
                    while o < o_end and outer[o] < y:
                        o += 1
                    if o < o_end and outer[o] == y and not (check_gone and _in_sorted(gone, y)):
                        new[w] = y
                        w += 1
                        if a < a_end and inner[a] == y:
                            a += 1
                    else:  # left (an inner copy of a gone handle comes next: it entered)
                        left[g] = y
                        g += 1
                else:
                    x = inner[a]
                    a += 1
                    new[w] = x
                    w += 1
                    entered[e] = x
                    e += 1
            new_counts[i] = w - w0
        entered_at[i] = e0
        entered_counts[i] = e - e0
        left_at[i] = g0
        left_counts[i] = g - g0
    return -1


@kernel
def compact_rows(buffer: np.ndarray, starts: np.ndarray, counts: np.ndarray, offsets: np.ndarray,
                 out: np.ndarray, lo: int, hi: int) -> int:
    """Copy row ``i`` (``buffer[starts[i]:][:counts[i]]``) to ``out[offsets[i]:]`` for ``i`` in ``lo .. hi - 1``."""
    for i in range(lo, hi):
        s = starts[i]
        o = offsets[i]
        for j in range(counts[i]):
            out[o + j] = buffer[s + j]
    return 0


# ----------------------------------------------------------------------
# The other direction: a grid over the viewers, asked by every entity


#: A grid over the viewers has at most this many cells per viewer (and at least :data:`GRID_MIN_CELLS`):
#: a cell's start is 8 bytes, and the grid stays in cache next to the viewers' coordinates.
GRID_CELLS_PER_VIEWER = 8
GRID_MIN_CELLS = 4096

#: A cell is this many times narrower along axis 0 than its edge, and wider along the others (as many
#: cells in all): an entity then reads fewer, longer ranges of viewers.
GRID_ASPECT = 4.0

#: The reach an entity asks the grid for is its radius times the scale, widened by this relative margin
#: (far above the two roundings of the product), so that its cell range holds every viewer it may contain.
GRID_MARGIN = 1.0 + 2.0 ** -30


@kernel
def grid_viewers(points: np.ndarray, cell: float) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray,
                                                          np.ndarray, np.ndarray]:
    """A uniform grid over the viewers ``points`` ``(m, dim)``, cells of edge ``cell`` or more (coarser
    where the viewers spread wide: at most ``GRID_CELLS_PER_VIEWER * m`` cells), axis 0 fastest.

    Returns ``(order, coords, starts, shape, low, inverse)``: the viewers sorted by cell (``order[j]``
    is the viewer at place ``j``), their coordinates in that order (``(dim, m)``), cell ``c``'s viewers
    at places ``starts[c] .. starts[c + 1] - 1``, cells per axis (3 entries, 1 past ``dim``), and
    each axis's low corner and ``1 / edge``; ``shape`` all 0 (and no grid) where the viewers spread
    beyond float64's range.  A coordinate ``x`` lies in cell
    ``min(int((x - low) * inverse), shape - 1)`` (monotone in ``x``: :func:`grid_pairs` finds its
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
    budget = max(GRID_MIN_CELLS, GRID_CELLS_PER_VIEWER * m)
    widest = 0.0
    for axis in range(dim):
        widest = max(widest, extent[axis])
    if not widest < np.inf:  # coordinates beyond half float64's range: no grid (shape 0; the caller walks)
        shape[:] = 0
        return (np.empty(0, dtype=np.int64), np.empty((dim, 0)), np.zeros(1, dtype=np.int64), shape, low,
                inverse)
    edge = max(cell, widest / budget)
    if edge == 0.0:  # every viewer at one place
        edge = 1.0
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
            c = min(int((points[i, axis] - low[axis]) * inverse[axis]), shape[axis] - 1)
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
    every step after it is monotone."""
    a = (x - reach - low) * inverse
    b = (x + reach - low) * inverse
    if b < 0.0 or a >= cells:  # also a NaN reach: never
        return 0, 0
    return int(max(a, 0.0)), min(int(b), cells - 1) + 1


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
