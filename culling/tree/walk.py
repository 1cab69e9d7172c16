"""The tree's query kernels: walk the nodes level by level, test the members, write the answer.

A query starts at the root and goes down one level at a time.  On level
``L`` (node edge ``W``) it computes, per axis, the window of cells whose
nodes can hold a sphere containing the point (:func:`culling.core.cells.window`),
and visits every existing child of the previous level's visited nodes that
lies in the window.  The members of the visited nodes are contiguous runs of
the pool; the rows of their tiles near the point are tested in place and the
answers written in two branch-free passes (:mod:`culling.core.members`,
:mod:`culling.core.tiles`).

Every kernel takes the tree's arrays as they are stored (float64 and int64,
C-contiguous), as a few structs (:mod:`culling.core.structs`: the world, the
node table, the pool, the query), and scalars, so each is compiled once for
all dimensions.  The kernels Python calls (:func:`query`, :func:`trace_walk`,
:func:`visits`) take the structs as plain tuples.
"""

from __future__ import annotations

import math

import numpy as np

from culling.core.cells import grown_half, half_reach_by, visit_window
from culling.core.lattice import MAX_DEPTH, MAX_GROWTH
from culling.core.members import answer
from culling.core.structs import Nodes, NodesFields, Pool, PoolFields, Query, QueryFields, World, WorldFields, nodes_of
from culling.runtime.jit import inline_kernel, kernel

__all__ = ["query", "trace_walk", "visits", "walk"]

#: Levels a walk can visit: from the highest possible root to the finest level.
_LEVELS = MAX_DEPTH + MAX_GROWTH + 1

#: Visited-node buffer to start with; it doubles when a large scale needs more.
_FIRST_VISITS = 64


# ----------------------------------------------------------------------
# The walk


@kernel
def _with_room(visited: np.ndarray, room: int, n: int, dim: int) -> np.ndarray:
    """The walk's buffer with twice the ``room``: the ``n`` node ids first, then their cells.

    Plain loops (cheap to compile); only a large scale visits enough nodes to need it.
    """
    bigger = np.empty(2 * room * (1 + dim), dtype=np.int64)
    for i in range(n):
        bigger[i] = visited[i]
    for k in range(n * dim):
        bigger[2 * room + k] = visited[room + k]
    return bigger


@kernel
def walk(p: np.ndarray, scale: float, world: World, nodes: Nodes, grow: float) -> tuple[np.ndarray, np.ndarray]:
    """The nodes a query at ``p`` (or a probe sphere of radius ``grow`` centred there) visits,
    root first, level by level.

    Parameters
    ----------
    p : ndarray, shape (dim,), float64
    scale : float, the query's scale
    world : the origin, size, root and root level
    nodes : the node table; the walk reads ``child`` (-1 for no child) and the root's column of ``cells``
    grow : float, >= 0
        A probe sphere's radius ``rho``: each window's margin grows by ``rho``
        (:func:`culling.core.cells.grown_half`, its ends decided exactly as a
        point's), so a node is visited when the point's rule holds for its box
        grown by ``rho`` too: at most ``(2 + ceil(2 * rho / W))**dim`` nodes per
        level for ``scale <= 1``.  A probe covering the whole world visits
        every node (the windows clamp like a huge ``scale``'s), no more.

    Returns
    -------
    visited : ndarray, int64, node ids, one level after the other
    ends : ndarray, int64: level ``d`` below the root is ``visited[ends[d-1]:ends[d]]``

    Cost: O(levels x visited x 2**dim); a query point visits at most ``2**dim``
    nodes per level for ``scale <= 1``.  Per visited node the walk reads one
    row of ``child`` (none when the window excludes all its children), and
    it allocates only the two arrays it returns.

    A child's cell is not read from ``cells``: on every level, grown ones
    included, the lattice nests as ``cell = 2 * parent_cell + bit`` per axis
    (``bit`` the quadrant's bit of that axis; the table's invariant
    ``parent = cell >> 1``, ``quadrant = cell & 1``), so the walk carries each
    visited node's cell in its own buffer and decides from the parent's cell
    which quadrants lie in the window before it touches the child row.  The
    nodes visited, and their order, are those of testing every child's
    stored cell against the window.
    """
    origin, size, root, root_level = world
    child, cells = nodes.child, nodes.cells
    dim = p.shape[0]
    quadrants = child.shape[1]
    # The level ends (returned), then the window's first and last cell per axis (scratch).
    ends = np.empty(_LEVELS + 1 + 2 * dim, dtype=np.int64)
    lo = ends[_LEVELS + 1:_LEVELS + 1 + dim]
    hi = ends[_LEVELS + 1 + dim:]
    # Node ids in [0, room), visit i's cell at room + i * dim + axis.
    room = _FIRST_VISITS
    visited = np.empty(room * (1 + dim), dtype=np.int64)
    visited[0] = root
    for axis in range(dim):
        visited[room + axis] = cells[axis, root]
    n = 1
    ends[0] = 1
    depth = 1
    first = 0
    level = root_level + 1
    down = math.ldexp(1.0, -level - 1)  # 2**(-level-1) and 2**(level+1), halved and doubled per level: exact
    up = math.ldexp(1.0, level + 1)
    while level <= MAX_DEPTH:
        half = grown_half(half_reach_by(size, down, up, scale), grow)
        factor = 0.5 * up  # level_factor(level) where it is used (level >= 0)
        for axis in range(dim):  # window(), written out: a call with array arguments costs more than it does
            lo[axis], hi[axis] = visit_window(p[axis], origin[axis], half, scale, size, level, factor, grow)
        last = n
        # Room for this level's visits first, so that the loops below never replace the buffer:
        # at most 2**dim per parent, and at most one per cell of the window.
        bound = (last - first) * quadrants
        in_window = 1
        for axis in range(dim):
            in_window = min(in_window * min(hi[axis] - lo[axis] + 1, bound), bound)
        while n + in_window > room:
            visited = _with_room(visited, room, n, dim)
            room *= 2
        for i in range(first, last):
            # Bit q of ``inside``: quadrant q's cell (2 * cell + its bits) is in the window on every axis.
            inside = 1
            for axis in range(dim):
                low = 2 * visited[room + i * dim + axis]
                low_in = (lo[axis] <= low) & (low <= hi[axis])
                high_in = (lo[axis] <= low + 1) & (low + 1 <= hi[axis])
                inside = (inside if low_in else 0) | ((inside << (1 << axis)) if high_in else 0)
            if inside == 0:
                continue
            parent = visited[i]
            for quadrant in range(quadrants):
                if (inside >> quadrant) & 1 == 0:
                    continue
                node = child[parent, quadrant]
                if node < 0:
                    continue
                visited[n] = node
                for axis in range(dim):
                    visited[room + n * dim + axis] = 2 * visited[room + i * dim + axis] + ((quadrant >> axis) & 1)
                n += 1
        if n == last:  # no node on this level, so none below it either
            break
        ends[depth] = n
        depth += 1
        first = last
        level += 1
        down *= 0.5
        up *= 2.0
    return visited[:n], ends[:depth]


# ----------------------------------------------------------------------
# Queries


@kernel
def query(p: np.ndarray, query_fields: QueryFields, world_fields: WorldFields, nodes_fields: NodesFields,
          pool_fields: PoolFields) -> tuple[np.ndarray, int]:
    """One query: walk, then keep each visited member that passes (all of them unless ``exact``).

    The structs come as plain tuples (:mod:`culling.core.structs`).  Returns
    :func:`culling.core.members.answer`'s ``(found, sure)``: the handles
    (with ``want_rows``, the pool rows), then the pool rows the exact filter
    left unsure (:func:`culling.core.containment.decide` settles them);
    O(levels + candidates).

    A kernel of its own (its compile links :func:`walk` and
    :func:`culling.core.members.answer` again, about a second at a cold
    start): Python calling the two with their named tuples would cost
    several microseconds more per query, the hottest call there is.
    """
    q, nodes = Query(*query_fields), nodes_of(nodes_fields)
    visited, _ = walk(p, q.scale, World(*world_fields), nodes, 0.0)
    return answer(visited, nodes.start, nodes.members, Pool(*pool_fields), p, q)


def trace_walk(p: np.ndarray, scale: float, world_fields: WorldFields, nodes: Nodes) -> tuple[np.ndarray, np.ndarray]:
    """:func:`walk` for Python (the tree's trace): the world as a plain tuple, the node table as its
    struct (:meth:`culling.tree.nodes.NodeTable.struct`)."""
    return walk(p, scale, World(*world_fields), nodes, 0.0)


#: A point's visits kept from the first walk of :func:`visits`; a point that
#: visits more (a large scale) walks again to write them.
_KEPT_VISITS = 256


@kernel
def visits(points: np.ndarray, scale: float, world_fields: WorldFields,
           nodes_fields: NodesFields) -> tuple[np.ndarray, np.ndarray]:
    """Every point's walk: the nodes with members each visits, for :func:`culling.core.members.answer_many`.

    Returns ``(visit_node, visit_point)``: visit ``v`` is point
    ``visit_point[v]`` visiting node ``visit_node[v]``; the points in
    order, each point's nodes in its walk's order.  Nodes without members
    are left out (a quarter of a walk's nodes, on the benchmark's crowd):
    nothing to test there.  The structs as plain tuples (Python calls it
    once per chunk of ``query_many``'s points).  O(m x levels).
    """
    world, nodes = World(*world_fields), nodes_of(nodes_fields)
    m = points.shape[0]
    kept = np.empty((m, _KEPT_VISITS), dtype=np.int64)
    first_visit = np.zeros(m + 1, dtype=np.int64)
    for i in range(m):
        first_visit[i + 1] = _walk_kept(points[i], scale, world, nodes, kept[i])
    for i in range(m):
        first_visit[i + 1] += first_visit[i]
    visit_node = np.empty(first_visit[m], dtype=np.int64)
    visit_point = np.empty(first_visit[m], dtype=np.int64)
    for i in range(m):
        at, end = first_visit[i], first_visit[i + 1]
        if end - at > _KEPT_VISITS:  # more visits than slots (a large scale): walk again
            _walk_kept(points[i], scale, world, nodes, visit_node[at:end])
        else:
            for k in range(end - at):
                visit_node[at + k] = kept[i, k]
        for k in range(at, end):
            visit_point[k] = i
    return visit_node, visit_point


@inline_kernel
def _walk_kept(p: np.ndarray, scale: float, world: World, nodes: Nodes, kept: np.ndarray) -> int:
    """Walk from ``p``; write the visited nodes that have members to ``kept`` (as many as fit) and
    return how many there are.  Inlined into :func:`visits` (a few lines around a call of
    :func:`walk`), so that :func:`walk`'s code is linked and optimised once more, not twice."""
    visited, _ = walk(p, scale, world, nodes, 0.0)
    n = 0
    for node in visited:
        if nodes.members[node] > 0:
            if n < kept.shape[0]:
                kept[n] = node
            n += 1
    return n

