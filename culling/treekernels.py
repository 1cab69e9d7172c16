"""The tree's query kernels: walk the nodes level by level, test the members, write the answer.

A query starts at the root and goes down one level at a time.  On level
``L`` (node edge ``W``) it computes, per axis, the window of cells whose
nodes can hold a sphere containing the point, and visits every existing
child of the previous level's visited nodes that lies in the window.  The
members of the visited nodes are contiguous runs of the pool; the rows of
their tiles near the point are tested in place and the answers written in two
branch-free passes (:mod:`culling.members`, :mod:`culling.tiles`).

The window (the "conservative visit"; the readable reference functions are
:func:`culling.lattice.round_down_sub`, :func:`~culling.lattice.round_down_add`
and :func:`~culling.lattice.half_reach`): a sphere on level ``L`` has a radius
below ``W/2``, so a sphere of scale ``s`` containing ``p`` has, per axis,
``p - s*W/2 < c < p + s*W/2``, and as ``c`` is a float, ``q_lo <= c <= q_hi``
for the largest floats ``q_lo <= p - half`` and ``q_hi <= p + half``
(``half`` the smallest float ``>= s*W/2``; TwoSum and Dekker's product give
the rounding directions).  Centres are placed by the monotone
``f(x) = fl(fl(x - origin) / size)`` and the lattice's monotone cell
function, so the cells ``cell(f(q_lo)) .. cell(f(q_hi))`` hold every such
centre.  When nothing rounds this is DESIGN.md's ``lo - s*W/2 <= p < hi +
s*W/2``: at most 2 nodes per axis for ``s <= 1``.  ``f(q)`` is clamped to
just outside the largest world before becoming an integer, so a huge scale
is a wide window over the existing nodes, never an overflow or a hang.

Every kernel takes the tree's arrays as they are stored (float64 and int64,
C-contiguous) and scalars, so each is compiled once for all dimensions.
"""

from __future__ import annotations

import math

import numpy as np

from culling.jit import inline_kernel, kernel, parallel_kernel, prange
from culling.lattice import ANCHOR, MAX_DEPTH, MAX_GROWTH
from culling.members import answer, candidates

__all__ = ["axis_window", "cell_of", "cell_scaled", "half_reach", "half_reach_by", "level_factor", "multiply_up", "round_down_add", "round_down_sub", "gather", "query", "visits_parallel", "visits_serial", "PARALLEL_MIN_POINTS", "walk", "window"]

#: Root-relative coordinates are clamped to one unit outside the largest
#: world (the level ``-MAX_GROWTH`` cell), where no node can ever be.
_U_LOW = -float(ANCHOR) - 1.0
_U_HIGH = float((1 << MAX_GROWTH) - ANCHOR) + 1.0

#: Levels a walk can visit: from the highest possible root to the finest level.
_LEVELS = MAX_DEPTH + MAX_GROWTH + 1

_SPLIT = 134217729.0  # 2**27 + 1: Veltkamp's split of a float into two 26-bit halves

#: Visited-node buffer to start with; it doubles when a large scale needs more.
_FIRST_VISITS = 64


# ----------------------------------------------------------------------
# The window


@inline_kernel
def round_down_sub(a: float, b: float) -> float:
    """The largest float ``<= a - b`` (exact); ``b >= 0``.  :func:`culling.lattice.round_down_sub`."""
    r = a - b
    if r == -math.inf or b == math.inf:
        return -math.inf
    bb = r - a
    error = (a - (r - bb)) + (-b - bb)  # TwoSum: a - b == r + error exactly
    return np.nextafter(r, -math.inf) if error < 0.0 else r


@inline_kernel
def round_down_add(a: float, b: float) -> float:
    """The largest float ``<= a + b`` (exact); ``b >= 0``.  :func:`culling.lattice.round_down_add`."""
    r = a + b
    if r == math.inf or b == math.inf:
        return math.inf
    bb = r - a
    error = (a - (r - bb)) + (b - bb)  # TwoSum: a + b == r + error exactly
    return np.nextafter(r, -math.inf) if error < 0.0 else r


@kernel
def multiply_up(a: float, b: float) -> float:
    """The smallest float ``>= a * b`` (exact), ``a, b >= 0``.  :func:`culling.lattice.multiply_up`."""
    r = a * b
    if r == math.inf or r == 0.0:
        return r if a == 0.0 or b == 0.0 or r == math.inf else float(np.nextafter(0.0, math.inf))
    if r < 2.0 ** -960 or a > 2.0 ** 995 or b > 2.0 ** 995:
        return float(np.nextafter(r, math.inf))
    c = _SPLIT * a
    a_hi = c - (c - a)
    a_lo = a - a_hi
    c = _SPLIT * b
    b_hi = c - (c - b)
    b_lo = b - b_hi
    error = ((a_hi * b_hi - r) + a_hi * b_lo + a_lo * b_hi) + a_lo * b_lo  # Dekker: a * b == r + error
    return float(np.nextafter(r, math.inf)) if error > 0.0 else r


@inline_kernel
def half_reach(size: float, level: int, scale: float) -> float:
    """The smallest float ``>= scale * W / 2`` on ``level``.  :func:`culling.lattice.half_reach`."""
    half = math.ldexp(size, -level - 1)
    if half == math.inf or math.ldexp(half, level + 1) != size:
        half = np.nextafter(half, math.inf)
    return float(half) if scale == 1.0 else float(multiply_up(scale, half))


@inline_kernel
def half_reach_by(size: float, down: float, up: float, scale: float) -> float:
    """:func:`half_reach` with the level's powers of two given: ``down = 2**(-level-1)``, ``up = 2**(level+1)``.

    On the walk's levels (``-MAX_GROWTH .. MAX_DEPTH``) both are normal floats,
    so ``size * down`` and ``half * up`` are single correctly rounded products
    of the exact values, as ``ldexp`` gives them: the same result, without a
    library call per level.
    """
    half = size * down
    if half == math.inf or half * up != size:
        half = np.nextafter(half, math.inf)
    return float(half) if scale == 1.0 else float(multiply_up(scale, half))


@inline_kernel
def level_factor(level: int) -> float:
    """``2**level`` for ``level >= 0`` (exact: ``level <= MAX_DEPTH``), 1.0 for grown levels (unused there).

    Computed once per level, so that :func:`cell_scaled` multiplies instead of calling ``ldexp`` per axis.
    """
    return math.ldexp(1.0, level) if level >= 0 else 1.0


@inline_kernel
def cell_scaled(u: float, level: int, factor: float) -> int:
    """:func:`cell_of` with the level's ``factor = level_factor(level)`` given.

    After the clamp ``|u| < 2**25`` and ``level <= MAX_DEPTH``, so ``u * 2**level``
    neither overflows nor loses a bit (a subnormal ``u`` only moves up): the
    product is exactly ``ldexp(u, level)``, the lattice's scaling.
    """
    u = min(max(u, _U_LOW), _U_HIGH)
    if level >= 0:
        return int(math.floor(u * factor)) + (ANCHOR << level)
    return int((math.floor(u) + ANCHOR) >> -level)


@kernel
def cell_of(u: float, level: int) -> int:
    """The lattice cell (:meth:`culling.lattice.Lattice.cell`) of root-relative ``u`` on ``level``.

    ``u`` is clamped to just outside the largest world first: every integer
    stays below 2**49, and inf becomes a cell no node has.
    """
    return cell_scaled(u, level, level_factor(level))


@inline_kernel
def axis_window(x: float, o: float, half: float, size: float, level: int, factor: float) -> tuple[int, int]:
    """First and last cell on one axis: the cells of the largest floats ``<= x - half`` and ``<= x + half``.

    ``o`` is the origin's coordinate on that axis, ``half = half_reach(size, level, scale)``
    and ``factor = level_factor(level)``: both once per level.  Scalars only, so
    the walk's per-level loop over the axes compiles to straight-line code.
    """
    return (cell_scaled((round_down_sub(x, half) - o) / size, level, factor),
            cell_scaled((round_down_add(x, half) - o) / size, level, factor))


@kernel
def window(p: np.ndarray, scale: float, origin: np.ndarray, size: float, level: int,
           lo: np.ndarray, hi: np.ndarray) -> None:
    """Write the first and last cell, per axis, that ``p`` visits on ``level`` into ``lo`` and ``hi``.

    The cells (:meth:`culling.lattice.Lattice.cell`) of the largest floats
    ``<= p - half`` and ``<= p + half``, ``half >= scale * W / 2``.
    """
    half = half_reach(size, level, scale)
    factor = level_factor(level)
    for axis in range(p.shape[0]):
        lo[axis], hi[axis] = axis_window(p[axis], origin[axis], half, size, level, factor)


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
def walk(p: np.ndarray, scale: float, origin: np.ndarray, size: float, root: int, root_level: int,
         child: np.ndarray, cells: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The nodes a query at ``p`` visits, root first, level by level.

    Parameters
    ----------
    p : ndarray, shape (dim,), float64
    child : ndarray, shape (nodes, 2**dim), int64, -1 for no child
    cells : ndarray, shape (dim, nodes), int64 (only the root's column is read)

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
        half = half_reach_by(size, down, up, scale)
        factor = 0.5 * up  # level_factor(level) where it is used (level >= 0)
        for axis in range(dim):  # window(), written out: a call with array arguments costs more than it does
            lo[axis], hi[axis] = axis_window(p[axis], origin[axis], half, size, level, factor)
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
# Members


@kernel
def gather(visited: np.ndarray, start: np.ndarray, count: np.ndarray, handles: np.ndarray) -> np.ndarray:
    """Every member of the visited nodes, in visiting order; int64, a new array."""
    out = np.empty(candidates(visited, count), dtype=np.int64)
    k = 0
    for node in visited:
        for row in range(start[node], start[node] + count[node]):
            out[k] = handles[row]
            k += 1
    return out


# ----------------------------------------------------------------------
# Queries


@kernel
def query(p: np.ndarray, exact: bool, cube: bool, scale: float, origin: np.ndarray, size: float,
          root: int, root_level: int, child: np.ndarray, cells: np.ndarray, start: np.ndarray,
          count: np.ndarray, handles: np.ndarray, columns: np.ndarray, tile_box: np.ndarray,
          want_rows: bool) -> tuple[np.ndarray, np.ndarray]:
    """One query: walk, then keep each visited member that passes (all of them unless ``exact``).

    Returns the handles (with ``want_rows``, the pool rows) and the pool rows
    the exact filter left unsure (:func:`culling.shapes.decide` settles
    them); O(levels + candidates).
    """
    visited, _ = walk(p, scale, origin, size, root, root_level, child, cells)
    return answer(visited, start, count, handles, columns, tile_box, p, exact, cube, scale, want_rows)


#: A point's visits kept from the first walk of :func:`visits`; a point that
#: visits more (a large scale) walks again to write them.
_KEPT_VISITS = 256


def _visits(points: np.ndarray, scale: float, origin: np.ndarray, size: float, root: int, root_level: int,
            child: np.ndarray, cells: np.ndarray, count: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Every point's walk, in parallel: the nodes with members each visits, for
    :func:`culling.members.answer_many`.

    Returns ``(visit_node, visit_point)``: visit ``v`` is point
    ``visit_point[v]`` visiting node ``visit_node[v]``; the points in order,
    each point's nodes in its walk's order.  Nodes without members are left
    out (a quarter of a walk's nodes, on the benchmark's crowd): nothing to
    test there.  Only the ``prange`` loops live here (see
    :func:`culling.members.answer_many`).  O(m x levels).
    """
    m = points.shape[0]
    kept = np.empty((m, _KEPT_VISITS), dtype=np.int64)
    first_visit = np.zeros(m + 1, dtype=np.int64)
    for i in prange(m):
        first_visit[i + 1] = _walk_kept(points[i], scale, origin, size, root, root_level, child, cells, count,
                                        kept[i])
    for i in range(m):
        first_visit[i + 1] += first_visit[i]
    visit_node = np.empty(first_visit[m], dtype=np.int64)
    visit_point = np.empty(first_visit[m], dtype=np.int64)
    for i in prange(m):
        at, end = first_visit[i], first_visit[i + 1]
        if end - at > _KEPT_VISITS:  # more visits than slots (a large scale): walk again
            _walk_kept(points[i], scale, origin, size, root, root_level, child, cells, count, visit_node[at:end])
        else:
            visit_node[at:end] = kept[i, :end - at]
        visit_point[at:end] = i
    return visit_node, visit_point


@kernel
def _walk_kept(p: np.ndarray, scale: float, origin: np.ndarray, size: float, root: int, root_level: int,
               child: np.ndarray, cells: np.ndarray, count: np.ndarray, kept: np.ndarray) -> int:
    """Walk from ``p``; write the visited nodes that have members to ``kept`` (as many as fit) and
    return how many there are."""
    visited, _ = walk(p, scale, origin, size, root, root_level, child, cells)
    n = 0
    for node in visited:
        if count[node] > 0:
            if n < kept.shape[0]:
                kept[n] = node
            n += 1
    return n


#: ``query_many`` runs on all cores from this many points on; fewer run on the
#: calling thread (the same loops, compiled without threads), where waking the
#: thread pool would cost more than it saves.
PARALLEL_MIN_POINTS = 64

visits_serial = kernel(_visits)
visits_parallel = parallel_kernel(_visits)
