"""The dense grid's query kernels: the cells a point visits, level by level, then their members.

Level ``L`` of a :class:`~culling.grid.grid.DenseViewDistanceGrid` is the tree's
level ``L`` for the same ``size`` and ``origin``, cut to the world: grid cell
``k`` (per axis) is lattice cell ``(ANCHOR << L) + k``, and a centre is placed
by the same monotone function as in the tree
(``floor(fl(fl(c - origin) / size) * 2**L)``, clamped to the level's last
cell for the few floats below ``origin + size`` that round up to it).  So the
window a point visits on a level is the tree's conservative window
(:func:`culling.core.cells.window`: the cells of the largest floats at or
below ``p - half`` and ``p + half``, ``half >= scale * W / 2``), shifted to
the grid's numbering and clamped to the world; there is no second window
arithmetic to keep in step.  A window is empty when every centre it could
hold lies outside the world; finer levels' windows are then empty too.

Each non-empty cell's members are one contiguous run of the cell pool with
the tree's row layout (:mod:`culling.core.members`), so the same kernels test and
write them: a grid's visit list is its visited non-empty cells, numbered
``0 .. k-1``, with each one's pool start and member count (int64 arrays of
``k``: no array over all cells is allocated or scanned per query).

A query with a huge ``scale`` has windows of up to ``2**L`` cells per axis;
when a point's windows hold more than ``limit`` cells and more than the
handles issued, the first member of every non-empty cell is tested against
the windows instead: O(objects), never O(cells).
"""

from __future__ import annotations

import numpy as np

from culling.core.cells import window
from culling.core.lattice import ANCHOR
from culling.core.members import answer
from culling.core.structs import Cells, CellsFields, Pool, PoolFields, Query, QueryFields, World, WorldFields
from culling.runtime.jit import inline_kernel, kernel

__all__ = ["cell_window", "grown_visits", "query", "trace_visit", "visit", "visits"]

#: Visited-cell buffer to start with; it doubles when a large scale needs more.
_FIRST_CELLS = 64

#: Cell ids are hashed by a multiplication with this odd constant (2**64 /
#: golden ratio, as a signed int64; the product wraps): the low bits of the
#: product spread a window's neighbouring cells over :func:`visits`' table.
_HASH = -7046029254386353131

#: No probe radii: :func:`_visits` of points (not written to).
_NO_GROWS = np.empty(0)


@inline_kernel
def cell_window(p: np.ndarray, scale: float, world: World, level: int, lo: np.ndarray, hi: np.ndarray,
                grow: float = 0.0) -> int:
    """Write the first and last grid cell, per axis, that ``p`` visits on ``level`` into ``lo`` and ``hi``.

    The world's high corner is ``origin + size`` per axis (the grid's
    ``GridGeometry.hi``, the same float sum).  Returns how many cells the
    window holds, 0 when no centre of the world can lie in it.  Level 0 is
    always its one cell, as the tree's root is always visited.  ``grow``: a
    probe sphere's radius, widening the window's margin
    (:func:`culling.core.cells.grown_half`).  O(dim).
    """
    origin, size = world.origin, world.size
    dim = p.shape[0]
    if level == 0:
        for axis in range(dim):
            lo[axis] = 0
            hi[axis] = 0
        return 1
    window(p, scale, origin, size, level, lo, hi, grow)  # lattice cells of the level
    shift = ANCHOR << level
    top = (1 << level) - 1
    cells = 1
    for axis in range(dim):
        first = lo[axis] - shift
        last = hi[axis] - shift
        if last < 0:  # the window's high end lies below the origin
            return 0
        if first > top:  # the window's low end lies beyond the world's last cell (decided exactly)
            return 0
        lo[axis] = min(max(first, 0), top)
        hi[axis] = min(last, top)
        cells *= hi[axis] - lo[axis] + 1
    return cells


@inline_kernel
def _append_window(level: int, offset: int, lo: np.ndarray, hi: np.ndarray, count: np.ndarray, every: bool,
                   cells: np.ndarray, n: int) -> tuple[np.ndarray, int]:
    """Append the global ids of one window's cells (row-major; only the non-empty ones unless
    ``every``) to ``cells[n:]``; returns the buffer (grown if full) and the new ``n``."""
    dim = lo.shape[0]
    k = lo.copy()
    while True:
        cell = 0
        for axis in range(dim):
            cell = (cell << level) | k[axis]
        cell += offset
        if every or count[cell] > 0:
            if n == cells.shape[0]:
                cells = _doubled(cells)
            cells[n] = cell
            n += 1
        axis = dim - 1  # the next cell: the last axis runs fastest
        while axis >= 0:
            k[axis] += 1
            if k[axis] <= hi[axis]:
                break
            k[axis] = lo[axis]
            axis -= 1
        if axis < 0:
            return cells, n


@inline_kernel(from_python=True)  # inlined into _visits; the trace calls it from Python
def visit(p: np.ndarray, scale: float, world: World, grid: Cells, every: bool,
          limit: int, grow: float = 0.0) -> tuple[np.ndarray, np.ndarray]:
    """The cells a query at ``p`` visits, level by level from level 0.

    Parameters
    ----------
    world : the grid's origin and size
    grid : its cells (:class:`~culling.core.structs.Cells`: level offsets, objects per level,
        members per cell, each handle's cell and slot)
    every : bool
        Every cell of every window, down to the deepest level that holds
        objects (the trace); otherwise only the non-empty cells of the
        levels that hold objects (the query: other levels' windows are not
        even computed).
    limit : int
        Without ``every``: windows holding more cells than this and than
        the handles are not enumerated; the non-empty cells are found from
        their first members instead (in handle order).

    Returns
    -------
    cells : ndarray, int64, global cell ids, level after level, row-major in each
    ends : ndarray, int64: the cells of level ``L`` are ``cells[ends[L-1]:ends[L]]``,
        one entry per level down to the last level with a non-empty window
        (meaningless when the first members were scanned)

    Cost: O(levels + cells listed); at most ``2**dim`` cells per level for ``scale <= 1``.
    """
    offsets, level_count, count, cell, slot = grid.offsets, grid.level_count, grid.members, grid.cell, grid.slot
    dim = p.shape[0]
    deepest = level_count.shape[0] - 1
    while deepest >= 0 and level_count[deepest] == 0:
        deepest -= 1
    lo = np.empty((deepest + 1, dim), dtype=np.int64)
    hi = np.empty((deepest + 1, dim), dtype=np.int64)
    reached = 0
    total = 0
    for level in range(deepest + 1):
        if not every and level_count[level] == 0:
            continue  # nothing to find there: its window is not needed
        n_cells = cell_window(p, scale, world, level, lo[level], hi[level], grow)
        if n_cells == 0:  # no centre of the world within reach: none on finer levels either
            break
        reached = level + 1
        if level_count[level] > 0:
            total += n_cells
    cells = np.empty(_FIRST_CELLS, dtype=np.int64)
    ends = np.empty(reached, dtype=np.int64)
    n = 0
    if not every and total > limit and total > cell.shape[0]:  # a huge scale: scan the first members
        for h in range(cell.shape[0]):
            c = cell[h]
            if c < 0 or slot[h] != 0:
                continue
            level = 0
            while offsets[level + 1] <= c:
                level += 1
            if level >= reached:
                continue
            flat = c - offsets[level]
            inside = True
            for axis in range(dim - 1, -1, -1):
                k = flat & ((1 << level) - 1)
                flat >>= level
                inside &= (lo[level, axis] <= k) & (k <= hi[level, axis])
            if inside:
                if n == cells.shape[0]:
                    cells = _doubled(cells)
                cells[n] = c
                n += 1
        ends[:] = n
        return cells[:n], ends
    for level in range(reached):
        if every or level_count[level] > 0:
            cells, n = _append_window(level, offsets[level], lo[level], hi[level], count, every, cells, n)
        ends[level] = n
    return cells[:n], ends


@kernel
def _doubled(array: np.ndarray) -> np.ndarray:
    """A copy of an int64 array with twice the room (a plain loop: cheap to compile)."""
    bigger = np.empty(2 * array.shape[0], dtype=np.int64)
    for i in range(array.shape[0]):
        bigger[i] = array[i]
    return bigger


def trace_visit(p: np.ndarray, scale: float, world_fields: WorldFields,
                cells_fields: CellsFields, limit: int) -> tuple[np.ndarray, np.ndarray]:
    """:func:`visit` of every cell of every window (the grid's trace), the structs as plain tuples.

    The functions here that Python calls are Python, calling the kernels as
    other kernels do (the same compiled code): a wrapper kernel would be
    compiled again with its callees linked in, seconds at a cold start, for
    about a microsecond per call."""
    return visit(p, scale, World(*world_fields), Cells(*cells_fields), True, limit, 0.0)


@kernel
def query(p: np.ndarray, query_fields: QueryFields, world_fields: WorldFields, cells_fields: CellsFields,
          pool_fields: PoolFields, limit: int) -> tuple[np.ndarray, int]:
    """One query: the visited non-empty cells (:func:`_visits`), then their members that pass
    (:func:`culling.core.members.answer`), as the tree's :func:`culling.tree.walk.query`; the
    structs as plain tuples.  Returns ``(found, sure)``: the sure handles (or pool rows), then the
    unsure pool rows.
    A kernel, as the tree's (the hot single query: no named tuples passed from Python)."""
    q = Query(*query_fields)
    runs, _, run_start, run_count = _visits(p.reshape(1, p.shape[0]), q.scale, World(*world_fields),
                                            Cells(*cells_fields), limit, np.empty(0))
    return answer(runs, run_start, run_count, Pool(*pool_fields), p, q)


def visits(points: np.ndarray, scale: float, world_fields: WorldFields, cells_fields: CellsFields,
           limit: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """:func:`_visits` for Python (``query_many``), the structs as plain tuples."""
    return _visits(points, scale, World(*world_fields), Cells(*cells_fields), limit, _NO_GROWS)


def grown_visits(points: np.ndarray, grows: np.ndarray, scale: float, world_fields: WorldFields,
                 cells_fields: CellsFields, limit: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """:func:`_visits` of probe spheres (radii ``grows``, (m,)): every window widened by its probe's radius."""
    return _visits(points, scale, World(*world_fields), Cells(*cells_fields), limit, grows)


@kernel
def _visits(points: np.ndarray, scale: float, world: World, grid: Cells, limit: int,
            grows: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Every point's visited non-empty cells, as the visits
    :func:`culling.core.members.answer` (one point) and
    :func:`culling.core.members.answer_many` read.

    Returns ``(visit_run, visit_point, run_start, run_count)``: visit ``v``
    is point ``visit_point[v]`` reading run ``visit_run[v]``, the points in
    order, each point's cells in visiting order; the runs are the distinct
    visited cells in ascending id, each with its pool start and member
    count (int64).  Points near each other share cells (a town's players,
    and at the coarse levels everyone), and ``answer_many`` reads each
    shared run once for all its visitors.  O(m x levels + visits).

    Serial: ``query_many`` calls it once per chunk of points on the
    library's threads, and one variant, with :func:`visit` inlined once, is
    one compile at start-up.
    """
    m = points.shape[0]
    visit_cell = np.empty(_FIRST_CELLS * max(m, 1), dtype=np.int64)
    visit_point = np.empty(visit_cell.shape[0], dtype=np.int64)
    n_visits = 0
    for i in range(m):
        cells, _ = visit(points[i], scale, world, grid, False, limit, grows[i] if grows.shape[0] else 0.0)
        while n_visits + cells.shape[0] > visit_cell.shape[0]:
            visit_cell = _doubled(visit_cell)
            visit_point = _doubled(visit_point)
        for j in range(cells.shape[0]):
            visit_cell[n_visits] = cells[j]
            visit_point[n_visits] = i
            n_visits += 1
    visit_point = visit_point[:n_visits]
    # The distinct cells, numbered as first met: an open-addressing hash table of cell ids.
    table_size = 2
    while table_size < 2 * n_visits:  # at most half full
        table_size *= 2
    table = np.full(table_size, -1, dtype=np.int64)  # run of the cell hashed there, -1 for none
    visit_run = np.empty(n_visits, dtype=np.int64)
    run_cell = np.empty(n_visits, dtype=np.int64)
    runs = 0
    for v in range(n_visits):
        c = visit_cell[v]
        at = (c * _HASH) & (table_size - 1)
        while table[at] >= 0 and run_cell[table[at]] != c:
            at = (at + 1) & (table_size - 1)
        if table[at] < 0:
            table[at] = runs
            run_cell[runs] = c
            runs += 1
        visit_run[v] = table[at]
    run_start = np.empty(runs, dtype=np.int64)
    run_count = np.empty(runs, dtype=np.int64)
    for r in range(runs):
        run_start[r] = grid.start[run_cell[r]]
        run_count[r] = grid.members[run_cell[r]]
    return visit_run, visit_point, run_start, run_count


