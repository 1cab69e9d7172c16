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

from culling.core.cells import grown_half, half_reach_by, scaled_window, visit_window
from culling.core.floats import EXACT_HUGE, EXACT_TINY
from culling.core.lattice import ANCHOR, MAX_DEPTH, MAX_GROWTH
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


def visits(points: np.ndarray, scale: float, world_fields: WorldFields,
           nodes_fields: NodesFields) -> tuple[np.ndarray, np.ndarray]:
    """Every point's walk: the nodes with members each visits, for :func:`culling.core.members.answer_many`.

    Returns ``(visit_node, visit_point)``: visit ``v`` is point
    ``visit_point[v]`` visiting node ``visit_node[v]``; the points in
    order, each point's nodes in its walk's order.  Nodes without members
    are left out (a quarter of a walk's nodes, on the benchmark's crowd;
    nearly all of them where points find little): nothing to test there.
    The structs as plain tuples (Python calls it once per chunk of
    ``query_many``'s points).

    Each point's walk is :func:`walk`'s, and shares what it can with the
    walk before it: a level's visits follow from the windows of that level
    and the levels above it alone, so while a point's windows (the cells
    per axis on each level, from the root down) equal the previous point's,
    so do its visits, and the walk keeps them without reading the node
    table; from the first level whose window differs it walks on as
    :func:`walk` does.  ``query_many`` hands the points over along a Morton
    curve (:func:`culling.tree.batch.query_order`), where neighbours share
    the upper levels' windows (on 1M random points among 200k objects: about
    half the levels of a walk).  O(m x levels + the visits of the levels
    not shared).

    The loop is :func:`_visits_from`, which returns where its buffers run
    out; they are doubled here and it goes on from that point, walked from
    the root.  Its arrays never change inside it: a numba loop that may
    replace an array keeps it in memory, counted, on every access (1M
    random points among 200k objects, alternated: 0.40 against 0.75 CPU s).
    """
    m, dim = points.shape
    room = _FIRST_VISITS
    length = max(16, 2 * m)
    visited = np.empty(room * (1 + dim), dtype=np.int64)
    kept = np.empty(room, dtype=np.int64)
    visit_node = np.empty(length, dtype=np.int64)
    visit_point = np.empty(length, dtype=np.int64)
    done, k = 0, 0
    while True:
        done, k, out_of_room = _visits_from(points, done, k, scale, world_fields, nodes_fields, visited, kept,
                                            visit_node, visit_point)
        if done == m:
            return visit_node[:k].copy(), visit_point[:k].copy()
        if out_of_room:  # a walk wants more visits than the buffer holds: all walked again from ``done``
            room *= 2
            visited = np.empty(room * (1 + dim), dtype=np.int64)
            kept = np.empty(room, dtype=np.int64)
        else:  # the output is full: twice as long, its first ``k`` kept
            length *= 2
            visit_node = np.concatenate([visit_node[:k], np.empty(length - k, dtype=np.int64)])
            visit_point = np.concatenate([visit_point[:k], np.empty(length - k, dtype=np.int64)])


@kernel
def _visits_from(points: np.ndarray, done: int, k: int, scale: float, world_fields: WorldFields,
                 nodes_fields: NodesFields, visited: np.ndarray, kept: np.ndarray, visit_node: np.ndarray,
                 visit_point: np.ndarray) -> tuple[int, int, bool]:
    """:func:`visits`' loop over the points ``done ..``, the first ``k`` visits already written.

    ``visited`` holds ``room`` node ids then their cells (``room * (1 + dim)``),
    ``kept`` ``room`` ids; ``visit_node`` and ``visit_point`` the output.
    Returns ``(done, k, out_of_room)``: ``done == m`` when every point is
    walked; else point ``done`` needs a longer ``visited`` (``out_of_room``) or
    a longer output, and nothing of it is written.  The first walk is from the
    root (no last walk to share).

    The windows come from each point's root-relative coordinates, computed
    once (:func:`culling.core.cells.scaled_window`, a multiplication and two
    additions per level and axis), and from :func:`culling.core.cells.visit_window`
    where those floats cannot decide.
    """
    world, nodes = World(*world_fields), nodes_of(nodes_fields)
    origin, size, root, root_level = world
    child, cells, members = nodes.child, nodes.cells, nodes.members
    m, dim = points.shape
    quadrants = child.shape[1]
    room = kept.shape[0]
    # The last walk, kept for the next: level ``d`` below the root (the root is level 0) visited
    # ``visited[begin[d]:begin[d + 1]]``, of which ``kept[kept_begin[d]:kept_begin[d + 1]]`` have
    # members; its windows' first and last cells in ``windows[d]``; levels up to ``walked`` valid.
    begin = np.zeros(_LEVELS + 2, dtype=np.int64)
    kept_begin = np.zeros(_LEVELS + 2, dtype=np.int64)
    windows = np.empty((_LEVELS + 1, 2 * dim), dtype=np.int64)
    # The box of root-relative coordinates whose windows on levels 1 .. d all equal the last walk's: per
    # axis ``box[d, axis] <= u <= box[d, dim + axis]`` (level 0's is everything; an empty box is +inf, -inf).
    box = np.empty((_LEVELS + 1, 2 * dim))
    for axis in range(dim):
        box[0, axis] = -math.inf
        box[0, dim + axis] = math.inf
    walked = 0
    visited[0] = root
    for axis in range(dim):
        visited[room + axis] = cells[axis, root]
    kept[0] = root
    begin[1] = 1
    kept_begin[1] = 1 if members[root] > 0 else 0
    lo = np.empty(dim, dtype=np.int64)
    hi = np.empty(dim, dtype=np.int64)
    # Per level below the root (index ``depth``), once per call: the window's half width (visit_window's
    # exact path), 2**level and its inverse, the anchor's offset, and whether scaled_window may decide.
    half_of = np.empty(_LEVELS + 1)
    factor_of = np.empty(_LEVELS + 1)
    inverse_of = np.empty(_LEVELS + 1)
    base_of = np.zeros(_LEVELS + 1, dtype=np.int64)
    fast_of = np.zeros(_LEVELS + 1, dtype=np.bool_)
    half_scale = 0.5 * scale
    exact_half = scale == 0.0 or 2.0 ** -1021 <= scale <= 2.0 ** 1000  # so that scale / 2 is exact
    slack = half_scale * 2.0 ** -49 + 2.0 ** -50
    down = math.ldexp(1.0, -root_level - 2)  # as in walk(): exact powers of two, halved and doubled per level
    up = math.ldexp(1.0, root_level + 2)
    for depth in range(1, MAX_DEPTH - root_level + 1):
        level = root_level + depth
        half_of[depth] = half_reach_by(size, down, up, scale)
        factor_of[depth] = 0.5 * up
        inverse_of[depth] = 2.0 * down
        if level >= 0:
            base_of[depth] = ANCHOR << level
            fast_of[depth] = exact_half and EXACT_TINY <= size * down <= EXACT_HUGE
        down *= 0.5
        up *= 2.0
    u = np.empty(dim)  # the point's root-relative coordinates, and its bound's share per level
    slop = np.empty(dim)
    for i in range(done, m):
        for axis in range(dim):
            u[axis] = (points[i, axis] - origin[axis]) / size
            slop[axis] = (abs(points[i, axis]) + abs(origin[axis])) * 2.0 ** -49 / size
        shared = True  # every level so far is the last walk's
        boxed = True  # and the point lies in their box: shared without computing a window
        depth = 1
        level = root_level + 1
        while level <= MAX_DEPTH:
            if boxed and depth <= walked:
                for axis in range(dim):
                    boxed &= (box[depth, axis] <= u[axis]) & (u[axis] <= box[depth, dim + axis])
            else:
                boxed = False
            if boxed:  # the windows of this level are the last walk's: nothing to compute, nothing to read
                if begin[depth + 1] == begin[depth]:
                    break
                depth += 1
                level += 1
                continue
            factor = factor_of[depth]
            floats_decide = fast_of[depth]
            for axis in range(dim):
                first, last = 1, 0
                if fast_of[depth]:
                    first, last = scaled_window(u[axis], slop[axis], half_scale, slack, factor, inverse_of[depth],
                                                base_of[depth])
                if first > last:
                    floats_decide = False
                    first, last = visit_window(points[i, axis], origin[axis], half_of[depth], scale, size, level,
                                               factor, 0.0)
                lo[axis], hi[axis] = first, last
            if shared and depth <= walked:
                for axis in range(dim):
                    shared &= (windows[depth, axis] == lo[axis]) & (windows[depth, dim + axis] == hi[axis])
            else:
                shared = False
            if not shared:  # this level walked again, as in walk(); the last walk's levels below it are gone
                walked = depth
                for axis in range(dim):
                    windows[depth, axis] = lo[axis]
                    windows[depth, dim + axis] = hi[axis]
                    if floats_decide:  # exact windows: the box where they stay (_window_box), within the level above's
                        low, high = _window_box(lo[axis] - base_of[depth], hi[axis] - base_of[depth], half_scale,
                                                inverse_of[depth])
                        box[depth, axis] = max(low, box[depth - 1, axis])
                        box[depth, dim + axis] = min(high, box[depth - 1, dim + axis])
                    else:
                        box[depth, axis], box[depth, dim + axis] = math.inf, -math.inf
                first, n = begin[depth - 1], begin[depth]
                nk = kept_begin[depth]
                bound = (n - first) * quadrants
                in_window = 1
                for axis in range(dim):
                    in_window = min(in_window * min(hi[axis] - lo[axis] + 1, bound), bound)
                if n + in_window > room:
                    return i, k, True
                for j in range(first, begin[depth]):
                    inside = 1
                    for axis in range(dim):
                        low = 2 * visited[room + j * dim + axis]
                        low_in = (lo[axis] <= low) & (low <= hi[axis])
                        high_in = (lo[axis] <= low + 1) & (low + 1 <= hi[axis])
                        inside = (inside if low_in else 0) | ((inside << (1 << axis)) if high_in else 0)
                    if inside == 0:
                        continue
                    parent = visited[j]
                    for quadrant in range(quadrants):
                        if (inside >> quadrant) & 1 == 0:
                            continue
                        node = child[parent, quadrant]
                        if node < 0:
                            continue
                        visited[n] = node
                        for axis in range(dim):
                            visited[room + n * dim + axis] = 2 * visited[room + j * dim + axis] + ((quadrant >> axis) & 1)
                        n += 1
                        if members[node] > 0:
                            kept[nk] = node
                            nk += 1
                begin[depth + 1] = n
                kept_begin[depth + 1] = nk
            if begin[depth + 1] == begin[depth]:  # no node on this level, so none below it either
                break
            depth += 1
            level += 1
        last = kept_begin[depth]  # through the last level with nodes (an empty level keeps none)
        if k + last > visit_node.shape[0]:
            return i, k, False
        for j in range(last):
            visit_node[k] = kept[j]
            visit_point[k] = i
            k += 1
    return m, k, False


#: The margin of :func:`_window_box`, relative to the magnitudes involved: far beyond the few roundings
#: of a point's root-relative coordinate and of the box's faces (each under 2**-51 of them).
_BOX_MARGIN = 2.0 ** -44


@inline_kernel
def _window_box(first: int, last: int, half_scale: float, inverse: float) -> tuple[float, float]:
    """The root-relative coordinates ``u`` (one axis) whose window on a level is ``first .. last`` (cells
    counted from the level's anchor, ``inverse = 2**-level``, ``half_scale = s / 2``), shrunk by a margin:
    a float ``u`` within it has that exact window.

    The window's ends are the floors of ``u * 2**L -+ s/2`` (exact reals,
    :func:`culling.core.cells.scaled_window`), so it stays ``first .. last``
    while ``u * 2**L`` lies in ``[first + s/2, first + 1 + s/2)`` and in
    ``[last - s/2, last + 1 - s/2)``.  The computed ``u`` is within
    ``2**-51 |u|`` of the exact ``(x - o) / size`` (a difference and a
    quotient) and the faces within a rounding of theirs; the margin,
    :data:`_BOX_MARGIN` of the faces' magnitude plus ``2**-1000`` (subnormal
    steps), covers both, so a point inside the shrunk box has the window
    exactly.  May be empty (``low > high``).
    """
    low = max(first + half_scale, last - half_scale) * inverse
    high = min(first + 1.0 + half_scale, last + 1.0 - half_scale) * inverse
    margin = (abs(low) + abs(high)) * _BOX_MARGIN + 2.0 ** -1000
    return low + margin, high - margin
