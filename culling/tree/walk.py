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
import threading

import numpy as np

from culling.core.cells import grown_half, half_reach_by, point_slop, scaled_window, visit_window, window_slack
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

#: A group's buffers to start with (:func:`_group_visits_from`); they double when a group needs more.
_FIRST_GROUP = 4096


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
        # Room for this level's visits first, so that the loop below never replaces the buffer.
        while n + _level_room(first, last, lo, hi, quadrants) > room:
            visited = _with_room(visited, room, n, dim)
            room *= 2
        n = _children_in_window(visited, room, first, last, n, lo, hi, child)
        if n == last:  # no node on this level, so none below it either
            break
        ends[depth] = n
        depth += 1
        first = last
        level += 1
        down *= 0.5
        up *= 2.0
    return visited[:n], ends[:depth]


@inline_kernel
def _level_room(first: int, last: int, lo: np.ndarray, hi: np.ndarray, quadrants: int) -> int:
    """The most visits the next level can add below visits ``first .. last - 1``: ``2**dim`` per parent,
    and one per cell of the window ``lo .. hi``."""
    bound = (last - first) * quadrants
    in_window = 1
    for axis in range(lo.shape[0]):
        in_window = min(in_window * min(hi[axis] - lo[axis] + 1, bound), bound)
    return in_window


@inline_kernel
def _children_in_window(visited: np.ndarray, room: int, first: int, last: int, n: int, lo: np.ndarray,
                        hi: np.ndarray, child: np.ndarray) -> int:
    """Append, from ``visited[n]`` on, the children of visits ``first .. last - 1`` whose cells lie in the
    window ``lo .. hi``, each with its cell (``visited[room + i * dim + axis]``); return the new end.

    A child's cell is ``2 * parent's cell + the quadrant's bit`` per axis, so the quadrants in the window
    are known before the child row is read: bit q of ``inside`` says quadrant q's cell is in it on every
    axis.  The caller made room for :func:`_level_room` more visits.
    """
    dim = lo.shape[0]
    quadrants = child.shape[1]
    for i in range(first, last):
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
    return n


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

    Where the points find little (the first :data:`GROUP_PROBE`, walked one
    by one, find at most :data:`GROUP_FOUND_MOST` nodes with members each),
    the rest go in groups of neighbours (:func:`_group_visits_from`: one walk
    of a group's box, then each found node's points), the same visits in the
    same order: 1M random points among 200k objects, CPU, alternated: 136-140
    against 340-355 ms for the visits in calls of 1,024 points.  A group whose
    walk passes :data:`GROUP_NODES_PER_POINT` walks its points one by one.

    The loop is :func:`_visits_from`, which returns where its buffers run
    out; they are doubled here and it goes on from that point, walked from
    the root.  Its arrays never change inside it: a numba loop that may
    replace an array keeps it in memory, counted, on every access (1M
    random points among 200k objects, alternated: 0.40 against 0.75 CPU s).
    """
    m, dim = points.shape
    length = max(16, 2 * m)
    visit_node = np.empty(length, dtype=np.int64)
    visit_point = np.empty(length, dtype=np.int64)
    extent = _group_extent(points, scale, world_fields)
    grouped = extent >= 0.0
    if grouped:  # the thread's buffers from its last call, as large as its groups needed
        room, visited, kept, pairs, edges = _group_buffers(dim)
    else:
        room = _FIRST_VISITS
        visited = np.empty(room * (1 + dim), dtype=np.int64)
        kept = np.empty(room, dtype=np.int64)
        pairs = edges = np.empty(0)
    done, k, end = 0, 0, 0  # points ``done .. end - 1`` walk one by one (a group whose walk gave up)
    if grouped:  # the first few walk one by one: where they find many nodes each, so do the rest
        end = min(m, GROUP_PROBE)
        done, k, out_of_room = _visits_from(points, 0, end, k, scale, world_fields, nodes_fields, visited, kept[:room],
                                            visit_node, visit_point)
        if done < end or k > GROUP_FOUND_MOST * end:
            grouped, done, k, end = False, 0, 0, 0
            room = _FIRST_VISITS
            visited = np.empty(room * (1 + dim), dtype=np.int64)
            kept = np.empty(room, dtype=np.int64)
    while done < m:
        if done < end or not grouped:
            stop = end if grouped else m
            done, k, out_of_room = _visits_from(points, done, stop, k, scale, world_fields, nodes_fields, visited,
                                                kept[:room], visit_node, visit_point)
            why = 0 if done == stop else (_ROOM if out_of_room else _OUTPUT)
        else:
            done, k, why, g = _group_visits_from(points, done, k, scale, extent, world_fields, nodes_fields, visited,
                                                 kept, pairs, edges, visit_node, visit_point)
            if why == _ALONE:
                end = done + g
        if why in (0, _ALONE):
            continue
        if why == _ROOM:  # a walk wants more visits than the buffers hold: all walked again from ``done``
            room *= 2
            if grouped:
                visited, kept, pairs, edges = _group_buffers(dim, room)[1:]
            else:
                visited = np.empty(room * (1 + dim), dtype=np.int64)
                kept = np.empty(room, dtype=np.int64)
        else:  # the output is full: twice as long, its first ``k`` kept
            length *= 2
            visit_node = np.concatenate([visit_node[:k], np.empty(length - k, dtype=np.int64)])
            visit_point = np.concatenate([visit_point[:k], np.empty(length - k, dtype=np.int64)])
    return visit_node[:k].copy(), visit_point[:k].copy()


@kernel
def _visits_from(points: np.ndarray, done: int, end: int, k: int, scale: float, world_fields: WorldFields,
                 nodes_fields: NodesFields, visited: np.ndarray, kept: np.ndarray, visit_node: np.ndarray,
                 visit_point: np.ndarray) -> tuple[int, int, bool]:
    """:func:`visits`' loop over the points ``done .. end - 1``, the first ``k`` visits already written.

    ``visited`` holds ``room`` node ids then their cells (``room * (1 + dim)``),
    ``kept`` ``room`` ids; ``visit_node`` and ``visit_point`` the output.
    Returns ``(done, k, out_of_room)``: ``done == end`` when every point is
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
    slack = window_slack(half_scale)
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
    for i in range(done, end):
        for axis in range(dim):
            u[axis] = (points[i, axis] - origin[axis]) / size
            slop[axis] = point_slop(points[i, axis], origin[axis], size)
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
                if n + _level_room(first, n, lo, hi, quadrants) > room:
                    return i, k, True
                n = _children_in_window(visited, room, first, begin[depth], n, lo, hi, child)
                for j in range(begin[depth], n):
                    if members[visited[j]] > 0:
                        kept[nk] = visited[j]
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
    return end, k, False


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



# ----------------------------------------------------------------------
# Groups of neighbouring points: one walk for the group's box, then each found node's points


#: :func:`visits` walks the points in groups of neighbours from this many points per call on
#: (:func:`_group_visits_from`).
GROUP_MIN_POINTS = 32

#: A group holds at most this many points, and spans per axis at most the side of a cube that holds about
#: :data:`GROUP_POINTS` of the call's points (their bounding box's volume shared out evenly).  1M random
#: points among 200k objects, query_many, CPU, one process: 188, 193, 206 and 214 ms at 192, 384, 768 and
#: 1,536 points (a larger group's box holds more nodes per point; a smaller one walks the upper levels
#: again more often).
GROUP_MOST = 4096
GROUP_POINTS = 256.0

#: A group's walk gives up (and the call's points from that group on walk one by one) past this many
#: nodes per point of the group: where the nodes outnumber the points, a point's own walk reads fewer.
GROUP_NODES_PER_POINT = 16

#: :func:`visits` first walks this many points one by one, and walks the rest in groups only where they
#: found at most :data:`GROUP_FOUND_MOST` nodes with members each: where points find many, a point's own
#: walk is mostly its answer's nodes, and a group's box holds far more nodes than its points visit (the
#: 2,000 viewers over 1M entities: 250 viewers a call find hundreds of nodes each).
GROUP_PROBE = 8
GROUP_FOUND_MOST = 2.0

#: A group's windows are widened by the floats' error bound of its points (:func:`culling.core.cells.point_slop`:
#: each term scaled before the sum, since near the ends of float64's range the sum of the two
#: overflowed, and a group's windows of infinite margin found no node); the
#: groups take points whose bound stays within a cell of the finest level (this many root widths), so the
#: widened windows stay narrow.  Beyond it (a small world far from zero: a world 2**-20 wide at -1e300
#: gave windows past int64) each point walks on its own, whose exact windows take any bound.
GROUP_MAX_SLOP = 2.0 ** -MAX_DEPTH

#: The largest scale the groups take: their box's window floats stay far from the clamps and their limits.
GROUP_MAX_SCALE = 1024.0

#: What :func:`_group_visits_from` stopped for (besides finishing): its buffers, the output, a group
#: whose walk gave up.
_ROOM, _OUTPUT, _ALONE = 1, 2, 3


_buffers = threading.local()


def _group_buffers(dim: int, room: int = 0) -> tuple[int, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The calling thread's buffers for :func:`_group_visits_from`, with room for at least ``room`` nodes
    (kept between calls: a group walk that runs out of room is walked again, and fresh pages cost
    more than the walk): ``(room, visited, kept, pairs, edges)``."""
    held = getattr(_buffers, "held", None)
    if held is None or held[0] < room or held[1].shape[0] != held[0] * (1 + dim):
        room = max(room, _FIRST_GROUP)
        held = (room, np.empty(room * (1 + dim), dtype=np.int64), np.empty(room * (2 + dim), dtype=np.int64),
                np.empty(2 * room, dtype=np.int64), np.empty(room * (2 * dim + 1)))
        _buffers.held = held
    return held


def _group_extent(points: np.ndarray, scale: float, world_fields: WorldFields) -> float:
    """The largest span per axis, root-relative, of :func:`visits`' groups (:func:`_group_visits_from`), or
    -1.0 where it walks ``points`` one by one: too few points, the root grown above level 0, a level
    whose float window path is not valid, a point farther than a root's width from the root (the
    groups stay clear of every clamp), or a point whose floats' error bound passes
    :data:`GROUP_MAX_SLOP` (:func:`_spread`)."""
    origin, size, _, root_level = world_fields
    if points.shape[0] < GROUP_MIN_POINTS or root_level < 0 or not 2.0 ** -1021 <= scale <= GROUP_MAX_SCALE:
        return -1.0
    if not (EXACT_TINY <= math.ldexp(size, -MAX_DEPTH - 1) and math.ldexp(size, -root_level - 2) <= EXACT_HUGE):
        return -1.0
    extent: float = _spread(points, origin, size, GROUP_POINTS)
    return extent


@kernel
def _spread(points: np.ndarray, origin: np.ndarray, size: float, share: float) -> float:
    """The side, root-relative, of a cube holding about ``share`` of ``points`` were they spread evenly over
    their bounding box's axes of nonzero extent (0.0 for one point repeated), or -1.0 when a point lies
    farther than a root's width from the root, or its floats' error bound passes :data:`GROUP_MAX_SLOP`.
    O(m), one pass."""
    m, dim = points.shape
    product, axes = 1.0, 0
    for axis in range(dim):
        low, high = math.inf, -math.inf
        for i in range(m):
            low = min(low, points[i, axis])
            high = max(high, points[i, axis])
        if not (-1.0 <= (low - origin[axis]) / size and (high - origin[axis]) / size <= 2.0):
            return -1.0
        if not point_slop(max(abs(low), abs(high)), origin[axis], size) <= GROUP_MAX_SLOP:
            return -1.0
        span = (high - low) / size
        if span > 0.0:
            product *= span
            axes += 1
    if axes == 0:
        return 0.0
    return float((product * share / m) ** (1.0 / axes))


@kernel
def _group_visits_from(points: np.ndarray, done: int, k: int, scale: float, extent: float,
                       world_fields: WorldFields, nodes_fields: NodesFields, visited: np.ndarray, kept: np.ndarray,
                       pairs: np.ndarray, edges: np.ndarray, visit_node: np.ndarray,
                       visit_point: np.ndarray) -> tuple[int, int, int, int]:
    """:func:`_visits_from`'s answer, a group of neighbouring points at a time.

    The lattice's windows nest: a cell on level ``L + 1`` whose box grown by
    ``s * W / 4`` holds the point lies in a parent whose box grown by
    ``s * W / 2`` holds it too, so a point's walk visits a node exactly when
    the node's cell lies in the point's window on the node's level (its
    ancestors' cells then lie in theirs).  A group (consecutive points, at
    most :data:`GROUP_MOST`, spanning at most ``extent`` per axis,
    root-relative) is walked once with the window of its bounding box on
    every level (a superset of each point's window: the floats' error bound
    four times over), which finds every node with members that any of its
    points visits.  The group's points are counted into a grid over its box;
    each found node, in the walk's order, tests the points of the grid cells
    its grown box meets: the floats decide where they can, the exact window
    (:func:`culling.core.cells.visit_window`) elsewhere.  The pairs are then
    counted out point by point, each point's nodes in the group walk's order,
    which is its own walk's (level by level, and within a level the
    lexicographic order of the quadrants from the root).  The caller checks
    the conditions: the root on level 0 or finer, every level's float window
    path valid (``s / 2`` exact, ``W / 2`` in the exact range), the points
    near the root (no clamp).

    ``visited`` holds ``room`` node ids then their cells; ``kept`` ``room``
    node ids, their depths, then their cells (``room * (2 + dim)``);
    ``pairs`` ``2 * room`` scratch; ``edges`` ``room * (2 * dim + 1)`` floats (per found
    node its grown box's faces, root-relative, then each node's error bound).  Returns ``(done, k, why, g)``: ``why`` 0
    when every point is answered, else point ``done`` (a group's first) needs
    more room (:data:`_ROOM`), a longer output (:data:`_OUTPUT`), or its own
    walk (:data:`_ALONE`: the group's walk passed :data:`GROUP_NODES_PER_POINT`); ``g`` the group's points.
    O(groups x the group walk's nodes + points + found nodes x their grid cells + pairs).
    """
    world, nodes = World(*world_fields), nodes_of(nodes_fields)
    origin, size, root, root_level = world
    child, cells, members = nodes.child, nodes.cells, nodes.members
    m, dim = points.shape
    quadrants = child.shape[1]
    room = visited.shape[0] // (1 + dim)
    # Per level below the root, as in _visits_from (every level's float path valid: the caller checked).
    half_of = np.empty(_LEVELS + 1)
    factor_of = np.empty(_LEVELS + 1)
    inverse_of = np.ones(_LEVELS + 1)
    base_of = np.zeros(_LEVELS + 1, dtype=np.int64)
    half_scale = 0.5 * scale
    slack = window_slack(half_scale)
    down = math.ldexp(1.0, -root_level - 2)
    up = math.ldexp(1.0, root_level + 2)
    for depth in range(1, MAX_DEPTH - root_level + 1):
        level = root_level + depth
        half_of[depth] = half_reach_by(size, down, up, scale)
        factor_of[depth] = 0.5 * up
        inverse_of[depth] = 2.0 * down
        base_of[depth] = ANCHOR << level
        down *= 0.5
        up *= 2.0
    most = min(GROUP_MOST, m - done)  # the scratch a group needs, no more (a large one costs its pages each call)
    u = np.empty((most, dim))
    slop = np.empty((most, dim))
    u_lo = np.empty(dim)
    u_hi = np.empty(dim)
    lo = np.empty(dim, dtype=np.int64)
    hi = np.empty(dim, dtype=np.int64)
    # The grid over a group's box: ``side`` cells per axis of width ``width``, axis 0 fastest.
    side = np.empty(dim, dtype=np.int64)
    cell_of_point = np.empty(most, dtype=np.int64)
    by_cell = np.empty(most, dtype=np.int64)
    per_point = np.zeros(most + 1, dtype=np.int64)
    c_lo = np.empty(dim, dtype=np.int64)
    c_hi = np.empty(dim, dtype=np.int64)
    at = np.empty(dim, dtype=np.int64)
    i = done
    while i < m:
        # The group: points i .. i + g - 1.
        g = 0
        worst = 0.0
        while i + g < m and g < most:
            fits = True
            for axis in range(dim):
                x = points[i + g, axis]
                v = (x - origin[axis]) / size
                u[g, axis] = v
                slop[g, axis] = point_slop(x, origin[axis], size)
                if g and (max(u_hi[axis], v) - min(u_lo[axis], v) > extent):
                    fits = False
            if not fits:
                break
            for axis in range(dim):
                v = u[g, axis]
                u_lo[axis] = v if g == 0 else min(u_lo[axis], v)
                u_hi[axis] = v if g == 0 else max(u_hi[axis], v)
                worst = max(worst, slop[g, axis])
            g += 1
        # The group's walk: the window of its box on every level, its ends widened by four error bounds.
        budget = GROUP_NODES_PER_POINT * g + 256
        visited[0] = root
        for axis in range(dim):
            visited[room + axis] = cells[axis, root]
        nk = 0
        if members[root] > 0:
            kept[nk] = root
            kept[room + nk] = 0
            for axis in range(dim):
                kept[2 * room + nk * dim + axis] = cells[axis, root]
            nk += 1
        first, n = 0, 1
        depth = 1
        while depth <= MAX_DEPTH - root_level:
            factor = factor_of[depth]
            for axis in range(dim):
                margin = 4.0 * (worst * factor + slack)
                lo[axis] = int(math.floor(u_lo[axis] * factor - half_scale - margin)) + base_of[depth]
                hi[axis] = int(math.floor(u_hi[axis] * factor + half_scale + margin)) + base_of[depth]
            last = n
            in_window = _level_room(first, last, lo, hi, quadrants)
            if n + in_window > budget:
                return i, k, _ALONE, g
            if n + in_window > room:
                return i, k, _ROOM, g
            touched = 0
            for j in range(first, last):  # the level's child rows asked for at once: their misses overlap
                touched += child[visited[j], 0]
            visited[n] = touched  # kept, so the reads stay (overwritten below)
            n = _children_in_window(visited, room, first, last, n, lo, hi, child)
            for j in range(last, n):  # the nodes with members, in a pass of their own: the counts' misses overlap
                if members[visited[j]] > 0:
                    kept[nk] = visited[j]
                    kept[room + nk] = depth
                    for axis in range(dim):
                        kept[2 * room + nk * dim + axis] = visited[room + j * dim + axis]
                    nk += 1
            if n == last:
                break
            first = last
            depth += 1
        if nk == 0:
            for p in range(g):
                per_point[p] = 0
            i += g
            continue
        # Each found node's box grown by s * W / 2, root-relative, per axis: ``[a, b)``, and the floats' error.
        finest = math.inf
        for c in range(nk):
            depth = kept[room + c]
            inverse = inverse_of[depth]
            error = 0.0
            for axis in range(dim):
                r = float(kept[2 * room + c * dim + axis] - base_of[depth]) if depth > 0 else 0.0
                a = (r - half_scale) * inverse if depth > 0 else -math.inf
                b = (r + 1.0 + half_scale) * inverse if depth > 0 else math.inf
                edges[c * 2 * dim + axis] = a
                edges[c * 2 * dim + dim + axis] = b
                error = max(error, (abs(r) + half_scale + 1.0) * inverse)
                finest = min(finest, b - a)
            edges[2 * dim * room + c] = error * 2.0 ** -50
        # The grid: cells as wide as the finest found box, at most about 4 per point.
        width = max(finest, extent * 2.0 ** -20)
        cells_total = 1
        for axis in range(dim):
            side[axis] = min(int((u_hi[axis] - u_lo[axis]) / width) + 1, 4 * g)
            cells_total *= side[axis]
        while cells_total > 4 * g + 8:
            width *= 2.0
            cells_total = 1
            for axis in range(dim):
                side[axis] = min(int((u_hi[axis] - u_lo[axis]) / width) + 1, 4 * g)
                cells_total *= side[axis]
        starts = np.zeros(cells_total + 1, dtype=np.int64)
        for p in range(g):
            index = 0
            stride = 1
            for axis in range(dim):
                index += min(int((u[p, axis] - u_lo[axis]) / width), side[axis] - 1) * stride
                stride *= side[axis]
            cell_of_point[p] = index
            starts[index + 1] += 1
        for cell in range(cells_total):
            starts[cell + 1] += starts[cell]
        for p in range(g):  # by_cell: the points cell after cell, each cell's in point order
            by_cell[starts[cell_of_point[p]]] = p
            starts[cell_of_point[p]] += 1
        for cell in range(cells_total - 1, -1, -1):
            starts[cell + 1] = starts[cell]
        starts[0] = 0
        # Each found node's points: the pairs, node-major (``pairs[q]`` the point, ``pairs[room + q]`` the node).
        np_ = 0
        for p in range(g):
            per_point[p] = 0
        for c in range(nk):
            depth = kept[room + c]
            e_node = edges[2 * dim * room + c]
            for axis in range(dim):
                a = edges[c * 2 * dim + axis] - e_node - worst
                b = edges[c * 2 * dim + dim + axis] + e_node + worst
                c_lo[axis] = 0 if a <= u_lo[axis] else min(int((a - u_lo[axis]) / width), side[axis] - 1)
                c_hi[axis] = side[axis] - 1 if b >= u_hi[axis] else min(int((b - u_lo[axis]) / width), side[axis] - 1)
                at[axis] = c_lo[axis]
            while True:
                index = 0
                stride = 1
                for axis in range(dim):
                    index += at[axis] * stride
                    stride *= side[axis]
                for q in range(starts[index], starts[index + 1]):
                    p = by_cell[q]
                    inside = True
                    if depth > 0:
                        for axis in range(dim):
                            v = u[p, axis]
                            e = e_node + slop[p, axis]
                            a = edges[c * 2 * dim + axis]
                            b = edges[c * 2 * dim + dim + axis]
                            if v < a - e or v >= b + e:
                                inside = False
                                break
                            if v < a + e or v >= b - e:  # too near a face for the floats: the exact window
                                first_cell, last_cell = visit_window(points[i + p, axis], origin[axis], half_of[depth],
                                                                     scale, size, root_level + depth,
                                                                     factor_of[depth], 0.0)
                                cell = kept[2 * room + c * dim + axis]
                                if not first_cell <= cell <= last_cell:
                                    inside = False
                                    break
                    if inside:
                        if np_ >= room:
                            return i, k, _ROOM, g
                        pairs[np_] = p
                        pairs[room + np_] = kept[c]
                        np_ += 1
                        per_point[p + 1] += 1
                # The next grid cell of the node's range, axis 0 fastest.
                axis = 0
                while axis < dim:
                    at[axis] += 1
                    if at[axis] <= c_hi[axis]:
                        break
                    at[axis] = c_lo[axis]
                    axis += 1
                if axis == dim:
                    break
        # Point-major: each point's nodes in the walk's order (the pairs are node-major, nodes in that order).
        if k + np_ > visit_node.shape[0]:
            return i, k, _OUTPUT, g
        per_point[0] = k
        for p in range(g):
            per_point[p + 1] += per_point[p]
        for q in range(np_):
            p = pairs[q]
            slot = per_point[p]
            visit_node[slot] = pairs[room + q]
            visit_point[slot] = i + p
            per_point[p] = slot + 1
        k += np_
        for p in range(g + 1):
            per_point[p] = 0
        i += g
    return m, k, 0, 0
