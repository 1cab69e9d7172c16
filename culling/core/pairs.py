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

import numpy as np

from culling.core.containment import decide_pairs
from culling.core.jit import inline_kernel, kernel
from culling.core.overlap import appended, far_apart, meets, pair_row, reach_up
from culling.core.threads import run_chunks, thread_count

__all__ = ["ITEMS_PER_THREAD", "frontier", "join_chunk", "overlapping_pairs", "refit"]

#: Work items the dual walk is expanded to, per thread, before the chunks
#: start: enough that a chunk holding a crowded corner of the world does
#: not keep the other threads waiting.
ITEMS_PER_THREAD = 64


@kernel
def refit(root: int, child: np.ndarray, start: np.ndarray, count: np.ndarray,
          columns: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Boxes and largest radii of every node's members (ids ``N + X``) and subtree (ids ``X``).

    Returns ``(lo, hi, radius, depth)``: float64 ``(2N, dim)``, ``(2N, dim)``,
    ``(2N,)`` and int64 ``(N,)`` (``N = child.shape[0]``); an empty member set
    or subtree has ``lo = inf``, ``hi = -inf``, ``radius = -1``.  ``depth`` is
    0 at the root.  O(nodes reached + objects).
    """
    n = child.shape[0]
    dim = columns.shape[0] - 2
    lo = np.full((2 * n, dim), math.inf)
    hi = np.full((2 * n, dim), -math.inf)
    radius = np.full(2 * n, -1.0)
    depth = np.zeros(n, dtype=np.int64)
    order = np.empty(n, dtype=np.int64)
    order[0] = root
    reached = 1
    at = 0
    while at < reached:  # breadth first: parents before children
        x = order[at]
        at += 1
        for q in range(child.shape[1]):
            c = child[x, q]
            if c >= 0:
                depth[c] = depth[x] + 1
                order[reached] = c
                reached += 1
    for k in range(reached - 1, -1, -1):  # children before parents
        x = order[k]
        own = n + x
        for row in range(start[x], start[x] + count[x]):
            for axis in range(dim):
                lo[own, axis] = min(lo[own, axis], columns[axis, row])
                hi[own, axis] = max(hi[own, axis], columns[axis, row])
            radius[own] = max(radius[own], columns[dim, row])
        for axis in range(dim):
            lo[x, axis] = lo[own, axis]
            hi[x, axis] = hi[own, axis]
        radius[x] = radius[own]
        for q in range(child.shape[1]):
            c = child[x, q]
            if c >= 0 and radius[c] >= 0.0:
                for axis in range(dim):
                    lo[x, axis] = min(lo[x, axis], lo[c, axis])
                    hi[x, axis] = max(hi[x, axis], hi[c, axis])
                radius[x] = max(radius[x], radius[c])
    return lo, hi, radius, depth


@inline_kernel
def _kids(x: int, n: int, child: np.ndarray, count: np.ndarray, radius: np.ndarray, kids: np.ndarray) -> int:
    """The parts of node ``x``'s subtree: its members' leaf (``n + x``) and its non-empty children."""
    k = 0
    if count[x] > 0:
        kids[k] = n + x
        k += 1
    for q in range(child.shape[1]):
        c = child[x, q]
        if c >= 0 and radius[c] >= 0.0:
            kids[k] = c
            k += 1
    return k


@inline_kernel
def _push(stack_a: np.ndarray, stack_b: np.ndarray, sp: int, a: int,
          b: int) -> tuple[np.ndarray, np.ndarray, int]:
    stack_a = appended(stack_a, sp, 1)
    stack_b = appended(stack_b, sp, 1)
    stack_a[sp] = a
    stack_b[sp] = b
    return stack_a, stack_b, sp + 1


@inline_kernel
def _expand(a: int, b: int, n: int, child: np.ndarray, count: np.ndarray, lo: np.ndarray, hi: np.ndarray,
            radius: np.ndarray, depth: np.ndarray, kids: np.ndarray, stack_a: np.ndarray, stack_b: np.ndarray,
            sp: int) -> tuple[np.ndarray, np.ndarray, int]:
    """Push the items that item ``(a, b)`` splits into (``b == -1``: ``self(a)``), when it splits;
    leaf work (``self`` of a members' leaf, ``cross`` of two leaves) is not expanded here."""
    if b < 0:
        k = _kids(a, n, child, count, radius, kids)
        for i in range(k):
            if kids[i] < n:
                stack_a, stack_b, sp = _push(stack_a, stack_b, sp, kids[i], -1)
            elif count[kids[i] - n] > 1:
                stack_a, stack_b, sp = _push(stack_a, stack_b, sp, kids[i], -1)
        for i in range(k):
            for j in range(i + 1, k):
                if meets(lo, hi, kids[i], lo, hi, kids[j], reach_up(radius[kids[i]], 1.0, radius[kids[j]])):
                    stack_a, stack_b, sp = _push(stack_a, stack_b, sp, kids[i], kids[j])
        return stack_a, stack_b, sp
    # cross(a, b): split the side that is a subtree, the coarser one when both are
    split, other = a, b
    if a >= n or (b < n and depth[b] < depth[a]):
        split, other = b, a
    k = _kids(split, n, child, count, radius, kids)
    for i in range(k):
        if meets(lo, hi, kids[i], lo, hi, other, reach_up(radius[kids[i]], 1.0, radius[other])):
            stack_a, stack_b, sp = _push(stack_a, stack_b, sp, kids[i], other)
    return stack_a, stack_b, sp


@inline_kernel
def _leaf_pairs(a: int, b: int, n: int, start: np.ndarray, count: np.ndarray, handles: np.ndarray,
                columns: np.ndarray, lo: np.ndarray, hi: np.ndarray, radius: np.ndarray, cube: bool,
                first: np.ndarray, second: np.ndarray, k: int, unsure_a: np.ndarray, unsure_b: np.ndarray,
                uk: int) -> tuple[np.ndarray, np.ndarray, int, np.ndarray, np.ndarray, int]:
    """Test the members of leaf ``a`` against those of leaf ``b`` (``b == -1``: against each other)."""
    dim = columns.shape[0] - 2
    p = a - n
    begin, end = start[p], start[p] + count[p]
    if b < 0:
        for i in range(begin, end):
            first = appended(first, k, end - i)
            second = appended(second, k, end - i)
            for j in range(i + 1, end):
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
    q = b - n
    other_begin, other_end = start[q], start[q] + count[q]
    for i in range(begin, end):
        reach = reach_up(columns[dim, i], 1.0, radius[b])
        near = True
        for axis in range(dim):
            near &= not (far_apart(hi[b, axis], columns[axis, i], reach) or
                         far_apart(columns[axis, i], lo[b, axis], reach))
        if not near:
            continue
        first = appended(first, k, other_end - other_begin)
        second = appended(second, k, other_end - other_begin)
        for j in range(other_begin, other_end):
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
def frontier(root: int, child: np.ndarray, count: np.ndarray, lo: np.ndarray, hi: np.ndarray, radius: np.ndarray,
             depth: np.ndarray, target: int) -> tuple[np.ndarray, np.ndarray]:
    """The first work items, ``self(root)`` expanded breadth first until there are ``target`` of them
    (or nothing left to split): ``(a, b)`` int64 arrays, ``b == -1`` for ``self(a)``."""
    n = child.shape[0]
    kids = np.empty(child.shape[1] + 1, dtype=np.int64)
    items_a = np.empty(16, dtype=np.int64)
    items_b = np.empty(16, dtype=np.int64)
    items_a[0] = root
    items_b[0] = -1
    head, tail = 0, 1
    done_a = np.empty(16, dtype=np.int64)
    done_b = np.empty(16, dtype=np.int64)
    done = 0
    while head < tail and (tail - head) + done < target:
        a, b = items_a[head], items_b[head]
        head += 1
        leaf_work = (a >= n and b < 0) or (a >= n and b >= n)
        if leaf_work:
            done_a, done_b, done = _push(done_a, done_b, done, a, b)
        else:
            items_a, items_b, tail = _expand(a, b, n, child, count, lo, hi, radius, depth, kids, items_a, items_b,
                                             tail)
    for i in range(head, tail):
        done_a, done_b, done = _push(done_a, done_b, done, items_a[i], items_b[i])
    return done_a[:done].copy(), done_b[:done].copy()


@kernel
def join_chunk(items_a: np.ndarray, items_b: np.ndarray, first_item: int, last_item: int, child: np.ndarray,
               start: np.ndarray, count: np.ndarray, handles: np.ndarray, columns: np.ndarray, lo: np.ndarray,
               hi: np.ndarray, radius: np.ndarray, depth: np.ndarray,
               cube: bool) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Run work items ``first_item .. last_item - 1`` to the end, depth first.

    Returns ``(first, second, unsure_a, unsure_b)``: the handles of the
    pairs surely meeting (``first < second``), and the pool rows of the pairs
    the float filter is unsure of.  O(items' node pairs + members tested).
    """
    n = child.shape[0]
    kids = np.empty(child.shape[1] + 1, dtype=np.int64)
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
        if a >= n and (b < 0 or b >= n):
            first, second, k, unsure_a, unsure_b, uk = _leaf_pairs(a, b, n, start, count, handles, columns, lo,
                                                                   hi, radius, cube, first, second, k,
                                                                   unsure_a, unsure_b, uk)
        else:
            stack_a, stack_b, sp = _expand(a, b, n, child, count, lo, hi, radius, depth, kids, stack_a, stack_b,
                                           sp)
    return first[:k].copy(), second[:k].copy(), unsure_a[:uk].copy(), unsure_b[:uk].copy()


def overlapping_pairs(root: int, child: np.ndarray, start: np.ndarray, count: np.ndarray, handles: np.ndarray,
                      columns: np.ndarray, cube: bool, shape: str) -> tuple[np.ndarray, np.ndarray]:
    """Every pair of members that meet, as handles ``(first, second)``, ``first < second``, each pair once.

    ``child`` int64 ``(N, 2**dim)`` (-1: none), ``start``/``count`` int64 ``(N,)``
    the members' pool runs, ``handles``/``columns`` the pool.  Steps in the
    module docstring.  O(nodes + node pairs whose grown boxes meet + members
    tested), on all cores.
    """
    lo, hi, radius, depth = refit(root, child, start, count, columns)
    if radius[root] < 0.0:
        return np.empty(0, dtype=np.int64), np.empty(0, dtype=np.int64)
    items_a, items_b = frontier(root, child, count, lo, hi, radius, depth, ITEMS_PER_THREAD * thread_count())

    def chunk(lo_item: int, hi_item: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        return join_chunk(items_a, items_b, lo_item, hi_item, child, start, count, handles, columns, lo, hi, radius,
                          depth, cube)

    parts = run_chunks(chunk, items_a.shape[0])
    if len(parts) == 1:
        first, second, unsure_a, unsure_b = parts[0]
    else:
        first, second, unsure_a, unsure_b = (np.concatenate(column) for column in zip(*parts))
    if unsure_a.size:  # within rounding of touching: exact arithmetic decides
        keep = decide_pairs(columns, unsure_a, unsure_b, shape)
        ends = handles[unsure_a[keep]], handles[unsure_b[keep]]
        first = np.concatenate([first, np.minimum(*ends)])
        second = np.concatenate([second, np.maximum(*ends)])
    return first, second
