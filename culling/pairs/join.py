"""Every pair of stored spheres that meet: the structure joined with itself.

The collision broad phase asks for every unordered pair ``(i, j)`` with
``distance(c_i, c_j) <= r_i + r_j``.  One query per object would walk from
the root once per object; instead :func:`overlapping_pairs` joins the
structure with itself, from its nodes' (or the dense grid's cells') levels,
cells and member runs:

- **By bands of levels** (:mod:`culling.pairs.bands`), the usual way: the
  occupied levels grouped into bands, each band's members bucketed by their
  cells on one level into a dense grid, each bucket against its forward
  neighbours, the coarser bands' members against the finer bands' buckets
  within their reach.  O(members + members within reach of each other).
- **By a dual walk of the tree** (:func:`dual_pairs`), where a band's
  members sit in a few clusters far apart (a dense grid of their box would
  be mostly empty):

1. **Build** (:func:`build`): one depth-first pass copies the members so
   that every subtree's members are one contiguous range (its node's own
   first), and gives every node the box of its own members' centres with
   their largest radius, and the box of its subtree's, bottom up.
   O(nodes + objects).
2. **Dual walk** (:func:`join_chunk`): work items are ``self(X)`` (all pairs
   inside the subtree of ``X``) and ``cross(A, B)`` (all pairs with one end in
   ``A`` and the other in ``B``, disjoint).  A node's own members are a part
   of their own (id ``K + X``) beside its children, so ``self(X)`` is each
   part's ``self`` and ``cross`` of every two parts whose boxes, grown by the
   sum of their largest radii, overlap: a node's members meet the nodes of
   the same level and the nodes below them exactly through these crosses.
   ``cross(A, B)`` stops when the grown boxes are apart on some axis
   (:func:`culling.core.overlap.far_apart`, conservative in floats) and
   otherwise splits the side with more members, until both are leaves: a
   node's own members, or a whole subtree of at most :data:`BUCKET` members
   (contiguous in the copy).  Then each member of one leaf is checked against
   the other leaf's grown box and tested against its members
   (:func:`culling.core.overlap.pair_row`'s float filter, branch-free).  Each
   pair of members is tested in exactly one item: none is reported twice.
3. **Threads**: the first items are expanded breadth first until there are
   enough to keep every core busy (:func:`frontier`); chunks of them run on
   the library's threads (:func:`culling.runtime.threads.run_chunks`), each
   writing its own growable output.

The pairs the float filter is unsure of (within ``2**-48`` of touching, or
with a square out of range) are settled in exact arithmetic
(:func:`culling.core.containment.decide_pairs`).  Memory: the output and
one chunk's pairs (:func:`culling.pairs.output.joined`), the copy and the
boxes (O(objects + nodes)) and the work stacks.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import NamedTuple, cast

import numpy as np

import culling.pairs.bands as bands
from culling.core.containment import decide_pairs
from culling.core.lattice import MAX_DEPTH, MAX_GROWTH
from culling.core.overlap import appended, far_apart, pair_range, reach_up
from culling.pairs.output import joined
from culling.runtime.jit import inline_kernel, kernel
from culling.runtime.threads import CHUNKS_PER_THREAD, chunk_bounds, run_chunks, thread_count

__all__ = ["BANDS_MIN_SIZE", "BUCKET", "END", "FIRST_CHILD", "ITEMS_PER_THREAD", "NEXT_SIBLING", "ONE_OUTPUT_MIN", "OWN", "OWN_COUNT",
           "PARALLEL_MIN_OBJECTS", "JoinTree", "build", "dual_pairs", "frontier", "join_chunk",
           "overlapping_pairs"]

#: Levels a tree can have: the depth-first stack's bound.
_LEVELS = MAX_DEPTH + MAX_GROWTH + 2


#: Work items the dual walk is expanded to, per thread, before the chunks
#: start: enough that a chunk holding a crowded corner of the world does
#: not keep the other threads waiting.
ITEMS_PER_THREAD = 64

#: The join runs on the library's threads from this many objects on; below, on the
#: calling thread (waking the pool would cost more than the threads save).  Measured on 2
#: cores, the moving swarm's frame interleaved with its peers as the benchmark runs it: 2k
#: creatures 0.58 ms on one thread against 0.70 ms on two, 5k even, 10k 3.3 against 2.9 ms
#: (the join's share 0.3 ms of it; :data:`culling.tree.batch.PARALLEL_SETTLE_MIN` the rest).
PARALLEL_MIN_OBJECTS = 8_000

#: From this many objects on (on two or more threads), the chunks of the join note their runs and
#: the pairs of all of them are written after into one output (:func:`culling.pairs.bands.written`):
#: a large frame's pairs are not joined from the chunks' outputs into a fresh array as large again
#: (the 100k heavy tail: 2.6 to 2.9 ms on the calling thread, 2,065 against 1,300 page faults a
#: frame).  Below, each chunk writes its own pairs as it goes, on the library's threads, and the
#: few are joined after: writing them after, on the calling thread, would cost a kernel call per
#: chunk there (eight a frame for 10k creatures on two threads).
ONE_OUTPUT_MIN = 32_768

#: A subtree with at most this many members is one leaf of the join: its
#: members (contiguous in the join's copy) are tested against each other and
#: against another leaf's directly, without walking its nodes.  Most nodes of
#: a crowd hold one or two members; visiting each of them as a node costs
#: more than testing a few more rows.
BUCKET = 32


#: The bands place a member in its bucket cells by ``(c - origin) * 2**B / size``, which overflows in a
#: world narrower than about ``2**(B - 1023)`` (``B`` up to ``MAX_DEPTH + MAX_GROWTH``): such a world is
#: joined by the dual walk, whose boxes and reaches are conservative in floats at any magnitude
#: (subnormal edges lost the pairs of a large sphere with its neighbours).
BANDS_MIN_SIZE = 2.0 ** -900

#: Columns of :attr:`JoinTree.link`: a node's own members' first row and count, its subtree's end row,
#: its first child and its next sibling (-1: none).
OWN, OWN_COUNT, END, FIRST_CHILD, NEXT_SIBLING = 0, 1, 2, 3, 4


class JoinTree(NamedTuple):
    """The structure as the join reads it, built by :func:`build`, nodes in depth-first order.

    ``columns`` (dim + 2, n) float64 and ``handles`` (n,) int64: the members,
    copied so that every subtree's members are one contiguous range, its own
    first.  ``link`` int64 (K, 5), one row per node (columns :data:`OWN` ..
    :data:`NEXT_SIBLING`): node ``k``'s own members are rows ``OWN .. OWN +
    OWN_COUNT - 1``, its subtree's ``OWN .. END - 1``.  ``box`` float64
    (2K, 2 dim + 1): the low corner, high corner and largest radius of node
    ``k``'s subtree (row ``k``) and of its own members (row ``K + k``; none:
    radius -1).  One row per node each, so a visit reads two cache lines.
    """

    columns: np.ndarray
    handles: np.ndarray
    link: np.ndarray
    box: np.ndarray


def build(root: int, child: np.ndarray, start: np.ndarray, count: np.ndarray, handles: np.ndarray,
          columns: np.ndarray, objects: int) -> JoinTree:
    """:func:`_joined` as a :class:`JoinTree`.  Named here, not in the kernel: numba boxes a named tuple
    by calling its class, which a Ctrl-C landing while numba looks the class up leaves NULL, and the
    process crashes (:mod:`culling.runtime.interrupts`)."""
    return JoinTree(*_joined(root, child, start, count, handles, columns, objects))


@kernel
def _joined(root: int, child: np.ndarray, start: np.ndarray, count: np.ndarray, handles: np.ndarray,
            columns: np.ndarray, objects: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The fields of the :class:`JoinTree` of the nodes reachable from ``root`` (``child`` int64 (N, 2**dim), -1: none;
    ``start``/``count`` their runs in the pool ``handles``/``columns``; ``objects`` members in all).

    Depth first, so that a subtree's nodes, and its members in the copy, are
    contiguous; then the boxes bottom up (a node's children come after it).
    O(nodes + objects).
    """
    dim = columns.shape[0] - 2
    n_nodes = child.shape[0]
    order_node = np.empty(n_nodes, dtype=np.int64)   # compact id -> node
    parent = np.empty(n_nodes, dtype=np.int64)
    own = np.empty(n_nodes, dtype=np.int64)
    own_count = np.empty(n_nodes, dtype=np.int64)
    first_child = np.full(n_nodes, -1, dtype=np.int64)
    next_sibling = np.full(n_nodes, -1, dtype=np.int64)
    out_columns = np.empty((dim + 2, objects))
    out_handles = np.empty(objects, dtype=np.int64)
    # Depth first: at most 2**dim - 1 siblings wait per level above the node being visited.
    stack = np.empty(child.shape[1] * _LEVELS, dtype=np.int64)
    stack_parent = np.empty(child.shape[1] * _LEVELS, dtype=np.int64)
    stack[0] = root
    stack_parent[0] = -1
    sp = 1
    k = 0
    at = 0
    while sp > 0:
        sp -= 1
        node = stack[sp]
        up = stack_parent[sp]
        order_node[k] = node
        parent[k] = up
        if up >= 0:  # prepend to the parent's children (their order does not matter)
            next_sibling[k] = first_child[up]
            first_child[up] = k
        own[k] = at
        own_count[k] = count[node]
        for row in range(start[node], start[node] + count[node]):
            for axis in range(dim + 1):
                out_columns[axis, at] = columns[axis, row]
            out_handles[at] = handles[row]
            at += 1
        for q in range(child.shape[1]):
            c = child[node, q]
            if c >= 0:
                stack[sp] = c
                stack_parent[sp] = k
                sp += 1
        k += 1
    nodes = k
    link = np.empty((nodes, 5), dtype=np.int64)
    box = np.empty((2 * nodes, 2 * dim + 1))
    for j in range(2 * nodes):
        for axis in range(dim):
            box[j, axis] = math.inf
            box[j, dim + axis] = -math.inf
        box[j, 2 * dim] = -1.0
    for j in range(nodes - 1, -1, -1):  # children (later in depth-first order) before parents
        leaf = nodes + j
        for i in range(own[j], own[j] + own_count[j]):
            for axis in range(dim):
                box[leaf, axis] = min(box[leaf, axis], out_columns[axis, i])
                box[leaf, dim + axis] = max(box[leaf, dim + axis], out_columns[axis, i])
            box[leaf, 2 * dim] = max(box[leaf, 2 * dim], out_columns[dim, i])
        if own_count[j] > 0:
            for f in range(2 * dim + 1):
                box[j, f] = min(box[j, f], box[leaf, f]) if f < dim else max(box[j, f], box[leaf, f])
        end = own[j] + own_count[j]
        c = first_child[j]
        while c >= 0:
            end = max(end, link[c, END])
            c = next_sibling[c]
        link[j, OWN] = own[j]
        link[j, OWN_COUNT] = own_count[j]
        link[j, END] = end
        link[j, FIRST_CHILD] = first_child[j]
        link[j, NEXT_SIBLING] = next_sibling[j]
        up = parent[j]
        if up >= 0 and box[j, 2 * dim] >= 0.0:
            for f in range(2 * dim + 1):
                box[up, f] = min(box[up, f], box[j, f]) if f < dim else max(box[up, f], box[j, f])
    return out_columns[:, :at], out_handles[:at], link, box


@inline_kernel
def _range(x: int, tree: JoinTree) -> tuple[int, int, bool]:
    """Item part ``x``'s members ``(first, last)``, and whether it is a leaf of the join
    (a node's own members, or a subtree of at most ``BUCKET`` members)."""
    link = tree.link
    nodes = link.shape[0]
    if x >= nodes:
        k = x - nodes
        return link[k, OWN], link[k, OWN] + link[k, OWN_COUNT], True
    return link[x, OWN], link[x, END], link[x, END] - link[x, OWN] <= BUCKET


@inline_kernel
def _push(stack_a: np.ndarray, stack_b: np.ndarray, sp: int, a: int,
          b: int) -> tuple[np.ndarray, np.ndarray, int]:
    stack_a = appended(stack_a, sp, 1)
    stack_b = appended(stack_b, sp, 1)
    stack_a[sp] = a
    stack_b[sp] = b
    return stack_a, stack_b, sp + 1


@inline_kernel
def _meet(tree: JoinTree, a: int, b: int) -> bool:
    """Whether parts ``a`` and ``b`` may hold members that meet: their boxes, grown by the sum of
    their largest radii, overlap on every axis (conservative, :func:`culling.core.overlap.far_apart`)."""
    box = tree.box
    dim = (box.shape[1] - 1) // 2
    reach = reach_up(box[a, 2 * dim], 1.0, box[b, 2 * dim])
    for axis in range(dim):
        if far_apart(box[a, dim + axis], box[b, axis], reach) or far_apart(box[b, dim + axis], box[a, axis], reach):
            return False
    return True


@inline_kernel
def _kids(x: int, tree: JoinTree, kids: np.ndarray) -> tuple[np.ndarray, int]:
    """The parts of node ``x``'s subtree: its own members (``K + x``) and its children."""
    link = tree.link
    k = 0
    if link[x, OWN_COUNT] > 0:
        kids[0] = link.shape[0] + x
        k = 1
    c = link[x, FIRST_CHILD]
    while c >= 0:
        kids[k] = c
        k += 1
        c = link[c, NEXT_SIBLING]
    return kids, k


@kernel
def _expand(a: int, b: int, tree: JoinTree, kids: np.ndarray, stack_a: np.ndarray, stack_b: np.ndarray,
            sp: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, int]:
    """Push the items that item ``(a, b)`` (``b == -1``: ``self(a)``), not a leaf's, splits into.

    A called kernel, not inlined: :func:`frontier` and :func:`join_chunk` share one compile of it
    (the dual walk is the rare way of the join: bands of clusters far apart)."""
    if b < 0:
        kids, k = _kids(a, tree, kids)
        nodes = tree.link.shape[0]
        for i in range(k):
            if kids[i] < nodes or tree.link[kids[i] - nodes, OWN_COUNT] > 1:
                stack_a, stack_b, sp = _push(stack_a, stack_b, sp, kids[i], -1)
            for j in range(i + 1, k):
                if _meet(tree, kids[i], kids[j]):
                    stack_a, stack_b, sp = _push(stack_a, stack_b, sp, kids[i], kids[j])
        return kids, stack_a, stack_b, sp
    # cross(a, b): split the side that is not a leaf, the one with more members when both are not
    first_a, last_a, leaf_a = _range(a, tree)
    first_b, last_b, leaf_b = _range(b, tree)
    split, other = a, b
    if leaf_a or (not leaf_b and last_b - first_b > last_a - first_a):
        split, other = b, a
    kids, k = _kids(split, tree, kids)
    for i in range(k):
        if _meet(tree, kids[i], other):
            stack_a, stack_b, sp = _push(stack_a, stack_b, sp, kids[i], other)
    return kids, stack_a, stack_b, sp


@inline_kernel
def _is_leaf_work(a: int, b: int, tree: JoinTree) -> bool:
    leaf_a = _range(a, tree)[2]
    return leaf_a and (b < 0 or _range(b, tree)[2])


@inline_kernel
def _leaf_pairs(a: int, b: int, tree: JoinTree, cube: bool, first: np.ndarray, second: np.ndarray, k: int,
                unsure_a: np.ndarray, unsure_b: np.ndarray,
                uk: int) -> tuple[np.ndarray, np.ndarray, int, np.ndarray, np.ndarray, int]:
    """Test leaf ``a``'s members against leaf ``b``'s (``b == -1``: against each other)."""
    columns, handles = tree.columns, tree.handles
    dim = columns.shape[0] - 2
    begin, end, _ = _range(a, tree)
    if b < 0:
        other_begin, other_end = begin, end
    else:
        other_begin, other_end, _ = _range(b, tree)
    for i in range(begin, end):
        j0 = i + 1 if b < 0 else other_begin
        if b >= 0:
            box = tree.box
            reach = reach_up(columns[dim, i], 1.0, box[b, 2 * dim])
            near = True
            for axis in range(dim):
                near &= not (far_apart(box[b, dim + axis], columns[axis, i], reach) or
                             far_apart(columns[axis, i], box[b, axis], reach))
            if not near:
                continue
        first, second, k, unsure_a, unsure_b, uk = pair_range(columns, handles, i, j0, other_end, cube,
                                                              (first, second), k, (unsure_a, unsure_b), uk)
    return first, second, k, unsure_a, unsure_b, uk


@kernel
def frontier(tree: JoinTree, target: int) -> tuple[np.ndarray, np.ndarray]:
    """The first work items, ``self(root)`` expanded breadth first until there are ``target`` of them
    (or nothing left to split): ``(a, b)`` int64 arrays, ``b == -1`` for ``self(a)``."""
    kids = np.empty(9, dtype=np.int64)  # own members and up to 8 children
    items_a = np.empty(16, dtype=np.int64)
    items_b = np.empty(16, dtype=np.int64)
    items_a[0] = 0
    items_b[0] = -1
    head, tail = 0, 1
    done_a = np.empty(16, dtype=np.int64)
    done_b = np.empty(16, dtype=np.int64)
    done = 0
    while head < tail and (tail - head) + done < target:
        a, b = items_a[head], items_b[head]
        head += 1
        if _is_leaf_work(a, b, tree):
            done_a, done_b, done = _push(done_a, done_b, done, a, b)
        else:
            kids, items_a, items_b, tail = _expand(a, b, tree, kids, items_a, items_b, tail)
    for i in range(head, tail):
        done_a, done_b, done = _push(done_a, done_b, done, items_a[i], items_b[i])
    return done_a[:done].copy(), done_b[:done].copy()


@kernel
def join_chunk(items_a: np.ndarray, items_b: np.ndarray, first_item: int, last_item: int, tree: JoinTree,
               cube: bool) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Run work items ``first_item .. last_item - 1`` to the end, depth first.

    Returns ``(first, second, unsure_a, unsure_b)``: the handles of the
    pairs surely meeting (``first < second``), and the rows (of
    ``tree.columns``) of the pairs the float filter is unsure of.
    O(items' node pairs + members tested).
    """
    kids = np.empty(9, dtype=np.int64)  # own members and up to 8 children
    stack_a = np.empty(64, dtype=np.int64)
    stack_b = np.empty(64, dtype=np.int64)
    sp = 0
    for i in range(last_item - 1, first_item - 1, -1):
        stack_a, stack_b, sp = _push(stack_a, stack_b, sp, items_a[i], items_b[i])
    first = np.empty(64, dtype=np.int64)
    second = np.empty(64, dtype=np.int64)
    unsure_a = np.empty(0, dtype=np.int64)
    unsure_b = np.empty(0, dtype=np.int64)
    k = 0
    uk = 0
    while sp > 0:
        sp -= 1
        a, b = stack_a[sp], stack_b[sp]
        if _is_leaf_work(a, b, tree):
            first, second, k, unsure_a, unsure_b, uk = _leaf_pairs(a, b, tree, cube, first, second, k,
                                                                   unsure_a, unsure_b, uk)
        else:
            kids, stack_a, stack_b, sp = _expand(a, b, tree, kids, stack_a, stack_b, sp)
    return first[:k], second[:k], unsure_a[:uk], unsure_b[:uk]   # views: _settled moves the pairs once


def overlapping_pairs(runs: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray], handles: np.ndarray,
                      columns: np.ndarray, objects: int, place: tuple[np.ndarray, float, float], cube: bool, shape: str,
                      tree: Callable[[], tuple[int, np.ndarray, np.ndarray, np.ndarray]],
                      plans: bands.PlanCache | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Every pair of members that meet, as handles ``(first, second)``, ``first < second``, each pair once.

    ``runs``: ``(start, count, level, cells)`` of the structure's nodes (or
    cells), int64 ``(N,)`` and ``(dim, N)``, a run with ``count <= 0`` holds
    nothing; the runs are those of ``count``, which may be shorter than the
    others (the tree passes the rows it has handed out); ``handles``/``columns`` the pool; ``place``: ``(origin, size,
    anchor)``, where the cell of root-relative ``u`` on level ``L`` is
    ``floor(u * 2**L + anchor * 2**L)``.  By bands of levels
    (:mod:`culling.pairs.bands`); where a band's members sit in a few clusters
    far apart, by the dual walk (:func:`dual_pairs`) of the tree that
    ``tree()`` gives as ``(root, child, start, count)``; ``plans``: the
    structure's bands from its last call (:class:`culling.pairs.bands.PlanCache`).
    O(members + members within reach of each other), on all cores.
    """
    if objects < 2:
        return np.empty(0, dtype=np.int64), np.empty(0, dtype=np.int64)
    origin, size, anchor = place
    serial = objects < PARALLEL_MIN_OBJECTS
    lay = bands.build(runs, handles, columns, anchor, not serial, objects, plans) if size >= BANDS_MIN_SIZE else None
    if lay is None or not lay.ok:
        root, child, start, count = tree()
        return dual_pairs(root, child, start, count, handles, columns, objects, cube, shape)
    cells = lay.cell_start.shape[0] - 1
    coarse = int(lay.band[-1, bands.FIRST_ROW])
    # Within bands and across them in one batch of chunks (one wake of the library's threads)
    within = chunk_bounds(cells, 1 if serial else thread_count() * CHUNKS_PER_THREAD)
    across = chunk_bounds(coarse, 1 if serial else thread_count() * CHUNKS_PER_THREAD) if coarse else [0]
    tasks = len(within) - 1
    n_tasks = tasks + len(across) - 1
    apart = not serial and thread_count() > 1 and objects < ONE_OUTPUT_MIN

    def task(t: int) -> bands.Noted | bands.Pairs:
        """Chunk ``t``'s runs noted, or with ``apart`` its pairs written at once into an output of its own."""
        if t < tasks:
            lo, hi = within[t], within[t + 1]
            if apart:
                return bands.band_cells(lay, lo, hi, origin, size, cube)
            return bands.noted_cells(lay, lo, hi, origin, size, cube)
        lo, hi = across[t - tasks], across[t - tasks + 1]
        if apart:
            return bands.cross_rows(lay, lo, hi, origin, size, cube)
        return bands.noted_rows(lay, lo, hi, origin, size, cube)

    done = [part for chunk in run_chunks(lambda lo, hi: [task(t) for t in range(lo, hi)], n_tasks,
                                         chunks=1 if serial else n_tasks) for part in chunk]
    if apart:  # a small frame's pairs: written on the threads, joined after
        return _settled(cast("list[bands.Pairs]", done), lay.columns, lay.handles, shape)
    # the runs of every chunk first, then their pairs into one output (bands.written)
    return _settled([bands.written(lay, cast("list[bands.Noted]", done), cube, not serial, plans)], lay.columns,
                    lay.handles, shape)


def _settled(parts: list[tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]], columns: np.ndarray,
             handles: np.ndarray, shape: str) -> tuple[np.ndarray, np.ndarray]:
    """The chunks' pairs joined (:func:`culling.pairs.output.joined`), with the unsure ones (rows of
    ``columns``) decided exactly; ``parts`` is emptied, so that each chunk's memory goes once moved."""
    unsure_a = np.concatenate([part[2] for part in parts]) if len(parts) > 1 else parts[0][2]
    unsure_b = np.concatenate([part[3] for part in parts]) if len(parts) > 1 else parts[0][3]
    pieces = [(first, second, first.shape[0]) for first, second, _, _ in parts]
    parts.clear()
    if unsure_a.size:  # within rounding of touching: exact arithmetic decides
        keep = decide_pairs(columns, unsure_a, unsure_b, shape)
        ends = handles[unsure_a[keep]], handles[unsure_b[keep]]
        pieces.append((np.minimum(*ends), np.maximum(*ends), int(keep.sum())))
    return joined(pieces)


def dual_pairs(root: int, child: np.ndarray, start: np.ndarray, count: np.ndarray, handles: np.ndarray,
               columns: np.ndarray, objects: int, cube: bool, shape: str) -> tuple[np.ndarray, np.ndarray]:
    """Every pair of members that meet by the tree's dual walk: :func:`overlapping_pairs`'s answer.

    ``child`` int64 ``(N, 2**dim)`` (-1: none), ``start``/``count`` int64 ``(N,)``
    the members' pool runs, ``handles``/``columns`` the pool.  Steps in the
    module docstring.  O(nodes + node pairs whose grown boxes meet + members
    tested), on all cores.
    """
    if objects < 2:
        return np.empty(0, dtype=np.int64), np.empty(0, dtype=np.int64)
    tree = build(root, child, start, count, handles, columns, objects)
    items_a, items_b = frontier(tree, ITEMS_PER_THREAD * thread_count())

    def chunk(lo_item: int, hi_item: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        return join_chunk(items_a, items_b, lo_item, hi_item, tree, cube)

    parts = run_chunks(chunk, items_a.shape[0], chunks=None if objects >= PARALLEL_MIN_OBJECTS else 1)
    return _settled(parts, tree.columns, tree.handles, shape)
