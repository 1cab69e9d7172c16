"""Every pair of stored spheres that meet: the structure joined with itself.

The collision broad phase asks for every unordered pair ``(i, j)`` with
``distance(c_i, c_j) <= r_i + r_j``.  One query per object would walk from
the root once per object; instead the tree (or the dense grid's cells, seen
as a tree) is joined with itself, node-major:

1. **Refit** (:func:`refit`): every node gets the box of its own members'
   centres with their largest radius, and the box of its whole subtree's
   centres with the subtree's largest radius, bottom up.  O(nodes + objects).
2. **Dual walk** (:func:`join_chunk`): work items are ``self(X)`` (all pairs
   inside the subtree of ``X``) and ``cross(A, B)`` (all pairs with one end in
   ``A`` and the other in ``B``, disjoint).  A node's members are a leaf of
   their own (id ``X + N``), beside its children, so ``self(X)`` is the
   members against each other, each child's ``self``, and ``cross`` of every
   two of them: a node's members meet the nodes of the same level and the
   nodes below them exactly through these crosses.  ``cross(A, B)`` stops when
   the boxes, grown by the sum of their largest radii, are apart on some
   axis (:func:`culling.core.overlap.meets`, conservative in floats);
   otherwise it splits the coarser side, until two leaves meet and their
   members are tested (:func:`culling.core.overlap.pair_row`, each member
   first against the other leaf's box).  Each pair of members is so tested
   in exactly one item: no pair is found twice.
3. **Threads**: the first items are expanded breadth first until there are
   enough to keep every core busy (:func:`frontier`); chunks of them run on
   the library's threads (:func:`culling.core.threads.run_chunks`), each
   writing its own growable output.

The pairs the float filter is unsure of (within ``2**-48`` of touching) are
settled in exact arithmetic (:func:`culling.core.containment.decide_pairs`).
Memory: the output, the boxes (O(nodes)) and the work stack.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

from culling.core.containment import FILTER_EPS, SAFE_HI, SAFE_LO, decide_pairs
from culling.core.jit import inline_kernel, kernel
from culling.core.overlap import appended, far_apart, meets, pair_row, reach_up
from culling.core.threads import run_chunks, thread_count

__all__ = ["BUCKET", "ITEMS_PER_THREAD", "JoinTree", "build", "frontier", "join_chunk", "overlapping_pairs"]

_BELOW = 1.0 - FILTER_EPS
_ABOVE = 1.0 + FILTER_EPS
_TINY_LIMIT = 2.0 ** -1000
_TINY_REACH = 4.0 * SAFE_LO

#: Work items the dual walk is expanded to, per thread, before the chunks
#: start: enough that a chunk holding a crowded corner of the world does
#: not keep the other threads waiting.
ITEMS_PER_THREAD = 64

#: A subtree with at most this many members is one leaf of the join: its
#: members (contiguous in the join's copy) are tested against each other and
#: against another leaf's directly, without walking its nodes.  Most nodes of
#: a crowd hold one or two members; visiting each of them as a node costs
#: more than testing a few more rows.
BUCKET = 32


class JoinTree(NamedTuple):
    """The structure as the join reads it, built by :func:`build`, nodes in depth-first order.

    ``columns`` (dim + 2, n) float64 and ``handles`` (n,) int64: the members,
    copied so that every subtree's members are one contiguous range, its own
    first; node ``k``'s own members are ``own[k] .. own[k] + own_count[k] - 1``
    and its subtree's ``own[k] .. end[k] - 1``.  ``first_child``/``next_sibling``
    link the nodes (-1: none).  ``lo``/``hi`` (2K, dim) and ``radius`` (2K,):
    the box of the centres and the largest radius of node ``k``'s subtree
    (row ``k``) and of its own members (row ``K + k``; empty: ``radius = -1``).
    """

    columns: np.ndarray
    handles: np.ndarray
    own: np.ndarray
    own_count: np.ndarray
    end: np.ndarray
    first_child: np.ndarray
    next_sibling: np.ndarray
    lo: np.ndarray
    hi: np.ndarray
    radius: np.ndarray


@kernel
def build(root: int, child: np.ndarray, start: np.ndarray, count: np.ndarray, handles: np.ndarray,
          columns: np.ndarray, objects: int) -> JoinTree:
    """The :class:`JoinTree` of the nodes reachable from ``root`` (``child`` int64 (N, 2**dim), -1: none;
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
    end = np.empty(n_nodes, dtype=np.int64)
    first_child = np.full(n_nodes, -1, dtype=np.int64)
    next_sibling = np.full(n_nodes, -1, dtype=np.int64)
    out_columns = np.empty((dim + 2, objects))
    out_handles = np.empty(objects, dtype=np.int64)
    stack = np.empty(64, dtype=np.int64)
    stack_parent = np.empty(64, dtype=np.int64)
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
                stack = appended(stack, sp, 1)
                stack_parent = appended(stack_parent, sp, 1)
                stack[sp] = c
                stack_parent[sp] = k
                sp += 1
        k += 1
    nodes = k
    lo = np.full((2 * nodes, dim), math.inf)
    hi = np.full((2 * nodes, dim), -math.inf)
    radius = np.full(2 * nodes, -1.0)
    for j in range(nodes - 1, -1, -1):  # children (later in depth-first order) before parents
        leaf = nodes + j
        for i in range(own[j], own[j] + own_count[j]):
            for axis in range(dim):
                lo[leaf, axis] = min(lo[leaf, axis], out_columns[axis, i])
                hi[leaf, axis] = max(hi[leaf, axis], out_columns[axis, i])
            radius[leaf] = max(radius[leaf], out_columns[dim, i])
        if own_count[j] > 0:
            for axis in range(dim):
                lo[j, axis] = min(lo[j, axis], lo[leaf, axis])
                hi[j, axis] = max(hi[j, axis], hi[leaf, axis])
            radius[j] = max(radius[j], radius[leaf])
        end[j] = own[j] + own_count[j]
        c = first_child[j]
        while c >= 0:
            end[j] = max(end[j], end[c])
            c = next_sibling[c]
        up = parent[j]
        if up >= 0 and radius[j] >= 0.0:
            for axis in range(dim):
                lo[up, axis] = min(lo[up, axis], lo[j, axis])
                hi[up, axis] = max(hi[up, axis], hi[j, axis])
            radius[up] = max(radius[up], radius[j])
    return JoinTree(out_columns[:, :at], out_handles[:at], own[:nodes], own_count[:nodes], end[:nodes],
                    first_child[:nodes], next_sibling[:nodes], lo, hi, radius)


@inline_kernel
def _range(x: int, tree: JoinTree) -> tuple[int, int, bool]:
    """Item part ``x``'s members ``(first, last)``, and whether it is a leaf of the join
    (a node's own members, or a subtree of at most ``BUCKET`` members)."""
    nodes = tree.own.shape[0]
    if x >= nodes:
        k = x - nodes
        return tree.own[k], tree.own[k] + tree.own_count[k], True
    return tree.own[x], tree.end[x], tree.end[x] - tree.own[x] <= BUCKET


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
    return meets(tree.lo, tree.hi, a, tree.lo, tree.hi, b, reach_up(tree.radius[a], 1.0, tree.radius[b]))


@inline_kernel
def _kids(x: int, tree: JoinTree, kids: np.ndarray) -> tuple[np.ndarray, int]:
    """The parts of node ``x``'s subtree: its own members (``K + x``) and its children."""
    k = 0
    if tree.own_count[x] > 0:
        kids[0] = tree.own.shape[0] + x
        k = 1
    c = tree.first_child[x]
    while c >= 0:
        kids = appended(kids, k, 1)
        kids[k] = c
        k += 1
        c = tree.next_sibling[c]
    return kids, k


@inline_kernel
def _expand(a: int, b: int, tree: JoinTree, kids: np.ndarray, stack_a: np.ndarray, stack_b: np.ndarray,
            sp: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, int]:
    """Push the items that item ``(a, b)`` (``b == -1``: ``self(a)``), not a leaf's, splits into."""
    if b < 0:
        kids, k = _kids(a, tree, kids)
        nodes = tree.own.shape[0]
        for i in range(k):
            if kids[i] < nodes or tree.own_count[kids[i] - nodes] > 1:
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
def _all_sure(columns: np.ndarray, handles: np.ndarray, i: int, j0: int, j1: int, cube: bool, first: np.ndarray,
              second: np.ndarray, k: int) -> tuple[bool, int]:
    """Write the pairs of row ``i`` with rows ``j0 .. j1 - 1`` that surely meet to ``first[k:]``,
    ``second[k:]``, branch-free; return False (the writes then mean nothing) when some row lies
    within rounding of touching or has a square out of range: :func:`culling.core.overlap.pair_row`
    then decides row by row.  The same float filter as ``pair_row``.  Returns ``(all sure, new k)``.
    """
    dim = columns.shape[0] - 2
    radius = columns[dim, i]
    inside_count = 0
    maybe = 0
    unsafe = False
    for j in range(j0, j1):
        limit = radius + columns[dim, j]
        if cube:
            d = abs(columns[0, i] - columns[0, j])
            for axis in range(1, dim):
                d = max(d, abs(columns[axis, i] - columns[axis, j]))
            inside = d < limit * _BELOW
            maybe += d <= limit * _ABOVE
            unsafe |= (limit < _TINY_LIMIT) | (d == math.inf)
        else:
            e = columns[0, i] - columns[0, j]
            d = e * e
            for axis in range(1, dim):
                e = columns[axis, i] - columns[axis, j]
                d += e * e
            bound = limit * limit
            inside = d < bound * _BELOW
            maybe += d <= bound * _ABOVE
            unsafe |= (bound < _TINY_REACH) | (d > SAFE_HI)
        first[k] = min(handles[i], handles[j])
        second[k] = max(handles[i], handles[j])
        k += inside
        inside_count += inside
    return maybe == inside_count and not unsafe, k


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
            reach = reach_up(columns[dim, i], 1.0, tree.radius[b])
            near = True
            for axis in range(dim):
                near &= not (far_apart(tree.hi[b, axis], columns[axis, i], reach) or
                             far_apart(columns[axis, i], tree.lo[b, axis], reach))
            if not near:
                continue
        first = appended(first, k, other_end - j0)
        second = appended(second, k, other_end - j0)
        sure, after = _all_sure(columns, handles, i, j0, other_end, cube, first, second, k)
        if sure:
            k = after
            continue
        # within rounding of touching, or a square out of range: row by row
        for j in range(j0, other_end):
            inside, doubtful = pair_row(columns, i, j, cube)
            first[k] = min(handles[i], handles[j])
            second[k] = max(handles[i], handles[j])
            k += inside
            if doubtful:
                unsure_a = appended(unsure_a, uk, 1)
                unsure_b = appended(unsure_b, uk, 1)
                unsure_a[uk] = i
                unsure_b[uk] = j
                uk += 1
    return first, second, k, unsure_a, unsure_b, uk


@kernel
def frontier(tree: JoinTree, target: int) -> tuple[np.ndarray, np.ndarray]:
    """The first work items, ``self(root)`` expanded breadth first until there are ``target`` of them
    (or nothing left to split): ``(a, b)`` int64 arrays, ``b == -1`` for ``self(a)``."""
    kids = np.empty(16, dtype=np.int64)
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
    kids = np.empty(16, dtype=np.int64)
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
    return first[:k].copy(), second[:k].copy(), unsure_a[:uk].copy(), unsure_b[:uk].copy()


def overlapping_pairs(root: int, child: np.ndarray, start: np.ndarray, count: np.ndarray, handles: np.ndarray,
                      columns: np.ndarray, objects: int, cube: bool, shape: str) -> tuple[np.ndarray, np.ndarray]:
    """Every pair of members that meet, as handles ``(first, second)``, ``first < second``, each pair once.

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

    parts = run_chunks(chunk, items_a.shape[0])
    if len(parts) == 1:
        first, second, unsure_a, unsure_b = parts[0]
    else:
        first, second, unsure_a, unsure_b = (np.concatenate(column) for column in zip(*parts))
    if unsure_a.size:  # within rounding of touching: exact arithmetic decides
        keep = decide_pairs(tree.columns, unsure_a, unsure_b, shape)
        ends = tree.handles[unsure_a[keep]], tree.handles[unsure_b[keep]]
        first = np.concatenate([first, np.minimum(*ends)])
        second = np.concatenate([second, np.maximum(*ends)])
    return first, second
