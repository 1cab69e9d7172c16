"""Testing and writing the members of the visited nodes (tree) or cells (grid).

Both keep each node's members in one contiguous run of pool rows: the
centre's axes, the radius and the squared reach, column by column.  The
tree's runs are cut into tiles with a summary each (:mod:`culling.tiles`);
the exact test reads only the tiles near the point
(:func:`flag_near`, :func:`write_near`).  A query's answer is made in two
passes over those rows:

1. :func:`flag_run` tests every row of a run and writes one flag per row:
   ``SURE`` (surely inside), ``UNSURE`` (within rounding of the surface) or
   0 (surely outside).  It is a handful of plain loops over contiguous
   columns with no branch and no store that depends on the test, so the
   compiler turns each into SIMD code (several rows per instruction): the
   distance axis by axis into a scratch column, then the comparisons.
2. :func:`write_run` writes the flagged rows' handles (or rows) in order:
   ``out[k] = handle; k += flag & SURE``, again without a branch on the test.

The test is :func:`culling.shapes.contains_exact`'s: a float filter that is
sure of every object not within rounding of its surface, and exact rational
arithmetic for the few that are.  Those few (practically never any) are
flagged ``UNSURE`` and returned to the caller, which settles them with
:func:`culling.shapes.decide`.  The SIMD loops only note whether a run holds
any such row; such a run (practically never) is flagged again row by row
with :func:`culling.shapes.classify`, which tells the unsure rows apart.

:func:`answer` is one query's answer from its visited runs; :func:`answer_many`
many queries' answers from their visits, node-major and in parallel.  The
tree (:mod:`culling.treekernels`) and the dense grid (:mod:`culling.dense`)
differ only in how they find the runs to visit.
"""

from __future__ import annotations

import math

import numpy as np

from culling.jit import kernel, parallel_kernel, prange
from culling.shapes import FILTER_EPS, SAFE_HI, SAFE_LO, classify
from culling.tiles import next_near_rows

__all__ = ["SURE", "TILE", "UNSURE", "answer", "answer_many_parallel", "answer_many_serial", "candidates", "flag_near", "flag_run",
           "write_near", "write_run", "write_unsure"]

#: Flag of a row that surely contains the point.
SURE = 1
#: Flag of a row within rounding of its surface: exact arithmetic decides.
UNSURE = 2

_BELOW = 1.0 - FILTER_EPS
_ABOVE = 1.0 + FILTER_EPS
_TINY_LIMIT = 2.0 ** -1000  # a cube's radius times scale below this may have lost bits

#: Rows :func:`flag_run` tests at a time: their distances (8 KiB) stay in the L1 cache.
TILE = 1024

#: Chunks of about equal work per thread in :func:`answer_many`: enough that
#: the cores stay busy when one chunk holds a big node, few enough that each
#: chunk's scratch column is cheap.
_CHUNKS_PER_THREAD = 8


@kernel
def candidates(visited: np.ndarray, count: np.ndarray) -> int:
    """How many members the visited nodes hold together."""
    total = 0
    for node in visited:
        total += count[node]
    return total


@kernel
def flag_run(columns: np.ndarray, first: int, last: int, p: np.ndarray, cube: bool, scale: float,
             distance: np.ndarray, flags: np.ndarray, at: int) -> tuple[int, int]:
    """Flag pool rows ``first .. last - 1`` against ``p``: ``flags[at + i]`` for row ``first + i``.

    ``distance`` is scratch of ``TILE`` floats.  Returns ``(sure, unsure)``,
    how many rows were flagged ``SURE`` and ``UNSURE``.  O(last - first), SIMD.
    """
    sure = 0
    maybe = 0  # rows inside the upper bound: as many as the sure ones unless a row is unsure
    unsafe = False  # a distance that may have lost bits to under- or overflow
    for tile in range(first, last, TILE):
        s, m, u = _flag_tile(columns, tile, min(tile + TILE, last), p, cube, scale, distance, flags,
                             at + tile - first)
        sure += s
        maybe += m
        unsafe |= u
    if maybe == sure and not unsafe:
        return sure, 0
    # A row within rounding of its surface (practically never): the run again, row by row.
    sure = 0
    unsure = 0
    for i in range(last - first):
        inside, doubtful = classify(columns, first + i, p, cube, scale)
        flags[at + i] = SURE if inside else (UNSURE if doubtful else 0)
        sure += inside
        unsure += doubtful
    return sure, unsure


@kernel
def _flag_tile(columns: np.ndarray, first: int, last: int, p: np.ndarray, cube: bool, scale: float,
               distance: np.ndarray, flags: np.ndarray, at: int) -> tuple[int, int, bool]:
    """:func:`flag_run`'s float filter on at most ``TILE`` rows, whose distances stay in the L1 cache.

    Returns ``(sure, maybe, unsafe)``: the rows surely inside, the rows
    inside the filter's upper bound (as many unless a row is unsure), and
    whether a distance may have lost bits to under- or overflow.

    The loops count ``i`` unsigned: the compiler then knows no index is
    negative (NumPy's wrap-around needs a check per access) and runs them
    several rows per instruction.
    """
    n = np.uint64(last - first)
    row = np.uint64(first)
    flag = np.uint64(at)
    dim = p.shape[0]
    # The distance, axis by axis: squared and summed (spheres) or largest (cubes).
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
    # The comparison with the radius (cubes) or the squared reach (spheres).
    sure = 0
    maybe = 0
    unsafe = False
    if cube:
        for i in range(n):
            radius = columns[dim, row + i]
            limit = radius * scale
            inside = distance[i] < limit * _BELOW
            flags[flag + i] = inside
            sure += inside
            maybe += distance[i] <= limit * _ABOVE
            unsafe |= ((limit < _TINY_LIMIT) & (radius > 0.0)) | (distance[i] == math.inf)
    elif scale == 1.0:
        for i in range(n):
            reach = columns[dim + 1, row + i]
            inside = distance[i] < reach * _BELOW
            flags[flag + i] = inside
            sure += inside
            maybe += distance[i] <= reach * _ABOVE
            unsafe |= (distance[i] < SAFE_LO) | (distance[i] > SAFE_HI)
    else:
        for i in range(n):
            limit = columns[dim, row + i] * scale
            bound = limit * limit
            inside = distance[i] < bound * _BELOW
            flags[flag + i] = inside
            sure += inside
            maybe += distance[i] <= bound * _ABOVE
            unsafe |= (distance[i] < SAFE_LO) | (distance[i] > SAFE_HI)
    return sure, maybe, unsafe


@kernel
def write_run(flags: np.ndarray, at: int, first: int, last: int, handles: np.ndarray, want_rows: bool,
              out: np.ndarray, k: int) -> int:
    """Write the ``SURE`` rows among ``first .. last - 1`` (``flags[at + i]`` for row ``first + i``) to
    ``out[k:]``, as handles or, with ``want_rows``, as pool rows; returns the new ``k``.

    Every row is written and ``k`` advances only past the sure ones; a write
    at ``out``'s end (after the last sure row) is skipped.  O(last - first).
    """
    end = out.shape[0]
    n = np.uint64(last - first)
    row = np.uint64(first)
    flag = np.uint64(at)
    for i in range(n):
        if k < end:
            out[k] = np.int64(row + i) if want_rows else handles[row + i]
        k += flags[flag + i] & SURE
    return k


@kernel
def write_unsure(flags: np.ndarray, at: int, first: int, last: int, unsure: np.ndarray, k: int) -> int:
    """Write the ``UNSURE`` rows among ``first .. last - 1`` to ``unsure[k:]``; returns the new ``k``."""
    for i in range(last - first):
        if flags[at + i] == UNSURE:
            unsure[k] = first + i
            k += 1
    return k


@kernel
def flag_near(columns: np.ndarray, first: int, last: int, tile_box: np.ndarray, p: np.ndarray, cube: bool,
              scale: float, distance: np.ndarray, flags: np.ndarray, at: int) -> tuple[int, int]:
    """:func:`flag_run` on the rows of the run ``first .. last - 1`` whose tiles are near ``p``
    (:func:`culling.tiles.next_near_rows`), ``flags[at + i]`` for row ``first + i``; the other rows'
    flags are left unwritten.

    Returns ``(sure, unsure)``.  O(tiles + rows tested).
    """
    sure = 0
    unsure = 0
    row = first
    while row < last:
        near, row = next_near_rows(row, last, p, scale, tile_box)
        s, u = flag_run(columns, near, row, p, cube, scale, distance, flags, at + near - first)
        sure += s
        unsure += u
    return sure, unsure


@kernel
def write_near(flags: np.ndarray, at: int, first: int, last: int, tile_box: np.ndarray, p: np.ndarray,
               scale: float, handles: np.ndarray, want_rows: bool, out: np.ndarray, k: int, unsure: np.ndarray,
               uk: int) -> tuple[int, int]:
    """:func:`write_run` (and, when ``unsure`` has room, :func:`write_unsure`) on the rows
    :func:`flag_near` flagged; returns the new ``(k, uk)``.  O(tiles + rows tested).
    """
    row = first
    while row < last:
        near, row = next_near_rows(row, last, p, scale, tile_box)
        k = write_run(flags, at + near - first, near, row, handles, want_rows, out, k)
        if uk < unsure.shape[0]:
            uk = write_unsure(flags, at + near - first, near, row, unsure, uk)
    return k, uk


@kernel
def answer(visited: np.ndarray, start: np.ndarray, count: np.ndarray, handles: np.ndarray, columns: np.ndarray,
           tile_box: np.ndarray, p: np.ndarray, exact: bool,
           cube: bool, scale: float, want_rows: bool) -> tuple[np.ndarray, np.ndarray]:
    """One query's answer from the runs of the ``visited`` nodes (or cells), in visiting order.

    Returns the handles (or, with ``want_rows``, the pool rows) of the
    members that surely contain ``p`` (every member unless ``exact``), and
    the pool rows the float filter left unsure.  The exact test reads only
    the tiles near ``p`` (empty ``tile_box``: every row).  O(candidates).
    """
    total = candidates(visited, count)
    if not exact:
        out = np.empty(total, dtype=np.int64)
        k = 0
        for node in visited:
            for row in range(start[node], start[node] + count[node]):
                out[k] = row if want_rows else handles[row]
                k += 1
        return out, np.empty(0, dtype=np.int64)
    flags = np.empty(total, dtype=np.uint8)
    distance = np.empty(TILE, dtype=np.float64)
    sure = 0
    unsure = 0
    at = 0
    for node in visited:
        s, u = flag_near(columns, start[node], start[node] + count[node], tile_box, p, cube, scale, distance,
                         flags, at)
        sure += s
        unsure += u
        at += count[node]
    out = np.empty(sure, dtype=np.int64)
    doubtful = np.empty(unsure, dtype=np.int64)
    k = 0
    uk = 0
    at = 0
    for node in visited:
        k, uk = write_near(flags, at, start[node], start[node] + count[node], tile_box, p, scale, handles,
                           want_rows, out, k, doubtful, uk)
        at += count[node]
    return out, doubtful


def _answer_many(visit_node: np.ndarray, visit_point: np.ndarray, points: np.ndarray, start: np.ndarray,
                 count: np.ndarray, handles: np.ndarray, columns: np.ndarray, tile_box: np.ndarray, exact: bool, cube: bool,
                 scale: float, threads: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Many queries' answers from their visits: visit ``v`` is point ``visit_point[v]`` visiting node
    (or cell) ``visit_node[v]``, each point's visits in its visiting order, the points in order.

    Points near each other visit the same nodes (players in a town, agents
    in a swarm, and at the coarse levels everyone), so the members are tested
    node-major: the visits are grouped by node, and each node's run is read
    from memory once for all the points that visit it, while it is in cache.

    1. Group the visits by node (a counting sort) and cut the groups into
       chunks of about equal work, ``_CHUNKS_PER_THREAD`` per thread.
    2. In parallel over the chunks: flag every visit's near tiles
       (:func:`flag_near`) and write its sure rows at once, while they are
       in cache, into the visit's own part of one array (:func:`write_near`).
    3. Prefix sums: each point's answer, and each visit's part of it, gets
       its offset (a point's answer lists its nodes in visiting order, as
       :func:`answer` does).
    4. In parallel over the chunks: each visit's answers' handles at its
       offset; only the sure rows are read again.

    Returns ``(handles, counts, unsure_rows, unsure_points)``: point ``i``'s
    sure answer is ``handles[offsets[i]:offsets[i] + counts[i]]``,
    ``offsets`` the prefix sums of ``counts``; the pool rows the filter left
    unsure, and the point each was tested for, are settled by the caller.
    O(visits + nodes + candidates) work, split over the cores.
    """
    m = points.shape[0]
    n_visits = visit_node.shape[0]
    # 1. the visits by node (stable: a node's visitors in point order), with their flags' offsets
    per_node = np.zeros(start.shape[0] + 1, dtype=np.int64)
    for v in range(n_visits):
        per_node[visit_node[v] + 1] += 1
    for node in range(start.shape[0]):
        per_node[node + 1] += per_node[node]
    by_node = np.empty(n_visits, dtype=np.int64)
    for v in range(n_visits):
        by_node[per_node[visit_node[v]]] = v
        per_node[visit_node[v]] += 1
    flag_at = np.empty(n_visits + 1, dtype=np.int64)
    flag_at[0] = 0
    for j in range(n_visits):
        flag_at[j + 1] = flag_at[j] + count[visit_node[by_node[j]]]
    total = flag_at[n_visits]
    n_chunks = max(1, min(n_visits, threads * _CHUNKS_PER_THREAD))
    chunk = np.empty(n_chunks + 1, dtype=np.int64)  # chunk c is by_node[chunk[c]:chunk[c + 1]]
    j = 0
    for c in range(n_chunks + 1):
        goal = (total * c) // n_chunks
        while j < n_visits and flag_at[j] < goal:
            j += 1
        chunk[c] = j
    chunk[n_chunks] = n_visits
    # 2. node-major: each visit's sure rows, written one after the other from its chunk's part of one
    #    array (densely: the memory touched follows the answers, not the candidates)
    found = np.empty(n_visits, dtype=np.int64)
    doubts = np.zeros(n_visits, dtype=np.int64)
    kept_at = np.empty(n_visits, dtype=np.int64)
    rows = np.empty(total, dtype=np.int64)
    nothing = np.empty(0, dtype=np.int64)
    for c in prange(n_chunks):
        distance = np.empty(TILE, dtype=np.float64)
        flags = np.empty(_largest_run(visit_node, by_node, chunk[c], chunk[c + 1], count), dtype=np.uint8)
        cursor = flag_at[chunk[c]]
        for j in range(chunk[c], chunk[c + 1]):
            v = by_node[j]
            node = visit_node[v]
            first, last = start[node], start[node] + count[node]
            kept_at[v] = cursor
            if not exact:
                for i in range(count[node]):
                    rows[cursor + i] = first + i
                found[v] = count[node]
            else:
                p = points[visit_point[v]]
                found[v], doubts[v] = flag_near(columns, first, last, tile_box, p, cube, scale, distance, flags, 0)
                write_near(flags, 0, first, last, tile_box, p, scale, handles, True, rows[cursor:cursor + found[v]], 0,
                           nothing, 0)
            cursor += found[v]
    # 3. offsets: points in order, each point's visits in visiting order
    counts = np.zeros(m, dtype=np.int64)
    at = np.empty(n_visits + 1, dtype=np.int64)
    unsure_at = np.empty(n_visits + 1, dtype=np.int64)
    at[0] = 0
    unsure_at[0] = 0
    for v in range(n_visits):
        at[v + 1] = at[v] + found[v]
        unsure_at[v + 1] = unsure_at[v] + doubts[v]
        counts[visit_point[v]] += found[v]
    # 4. the answers' handles, each visit's at its offset; the unsure rows (practically never) flagged again
    out = np.empty(at[n_visits], dtype=np.int64)
    unsure = np.empty(unsure_at[n_visits], dtype=np.int64)
    unsure_points = np.empty(unsure_at[n_visits], dtype=np.int64)
    for c in prange(n_chunks):
        for j in range(chunk[c], chunk[c + 1]):
            v = by_node[j]
            for i in range(found[v]):
                out[at[v] + i] = handles[rows[kept_at[v] + i]]
            if doubts[v]:
                node = visit_node[v]
                first, last = start[node], start[node] + count[node]
                p = points[visit_point[v]]
                flags = np.empty(count[node], dtype=np.uint8)
                distance = np.empty(TILE, dtype=np.float64)
                flag_near(columns, first, last, tile_box, p, cube, scale, distance, flags, 0)
                write_near(flags, 0, first, last, tile_box, p, scale, handles, True, nothing, 0,
                           unsure[unsure_at[v]:unsure_at[v + 1]], 0)
                for i in range(unsure_at[v], unsure_at[v + 1]):
                    unsure_points[i] = visit_point[v]
    return out, counts, unsure, unsure_points


@kernel
def _largest_run(visit_node: np.ndarray, by_node: np.ndarray, first: int, last: int, count: np.ndarray) -> int:
    """The most members a node visited by ``by_node[first:last]`` holds (the size of a flags scratch)."""
    largest = 0
    for j in range(first, last):
        largest = max(largest, count[visit_node[by_node[j]]])
    return largest


#: ``answer_many`` on all cores (numba's thread pool), and the same loops on
#: the calling thread, for batches too small to be worth waking the pool.
answer_many_parallel = parallel_kernel(_answer_many)
answer_many_serial = kernel(_answer_many)
