"""The tree's batch-mutation kernels: the per-object loops of ``insert_many`` and ``update_many``.

Grouping, node creation and block allocation stay in NumPy and Python (they
run per node, not per object); what runs per object is here, as plain loops
that touch each object's row once:

- :func:`settle` (``update_many``): compute each object's home cell, and
  when it is the node the object is already in (a small move), rewrite its
  centre and radius in place; return the others, the movers.
- :func:`layout_order` (``insert_many``): the batch along a Morton curve,
  so that each node's new members follow it and each tile of pool rows
  covers a small part of its node (:mod:`culling.tiles`).
- :func:`place` (``insert_many`` and the movers): append objects, grouped
  by home node, after their node's members.

NumPy needed a dozen passes and two 2-D scatters for each; here each object's
data is read once and its row written once.
"""

from __future__ import annotations

import math

import numpy as np

from culling.jit import kernel
from culling.shapes import reach_of
from culling.tiles import cover
from culling.treekernels import cell_of

#: Bits of :func:`layout_order`'s Morton code: 4,096 cells over the batch's box.
LAYOUT_BITS = 12

__all__ = ["group", "layout_order", "place", "settle"]


@kernel
def settle(handles: np.ndarray, centres: np.ndarray, radii: np.ndarray, u: np.ndarray, levels: np.ndarray,
           obj_node: np.ndarray, obj_pos: np.ndarray, node_level: np.ndarray, node_cells: np.ndarray,
           columns: np.ndarray, cells: np.ndarray, tile_box: np.ndarray) -> np.ndarray:
    """Store every object whose home is unchanged in place (covering its tile); return the indices of the others.

    Parameters
    ----------
    handles : int64 (n,), live and unique
    centres : float64 (n, dim); radii : float64 (n,)
    u : float64 (dim, n), root-relative centres; levels : int64 (n,), home levels
    cells : int64 (dim, n), written: every object's home cell

    Returns
    -------
    int64 (k,): indices into ``handles`` of the objects whose home node changed
    (nothing of theirs is written).  O(n).
    """
    n, dim = centres.shape
    movers = np.empty(n, dtype=np.int64)
    k = 0
    for i in range(n):
        node = obj_node[handles[i]]
        stay = node_level[node] == levels[i]
        for axis in range(dim):
            cell = cell_of(u[axis, i], levels[i])
            cells[axis, i] = cell
            stay &= node_cells[axis, node] == cell
        if stay:
            row = obj_pos[handles[i]]
            for axis in range(dim):
                columns[axis, row] = centres[i, axis]
            if columns[dim, row] != radii[i]:  # the squared reach only changes with the radius
                columns[dim, row] = radii[i]
                columns[dim + 1, row] = reach_of(radii[i])
            cover(columns, row, row + 1, tile_box)
        else:
            movers[k] = i
            k += 1
    return movers[:k]


@kernel
def place(handles: np.ndarray, order: np.ndarray, starts: np.ndarray, homes: np.ndarray,
          centres: np.ndarray, radii: np.ndarray, reach: np.ndarray, node_start: np.ndarray,
          node_count: np.ndarray, pool_handles: np.ndarray, columns: np.ndarray,
          obj_node: np.ndarray, obj_pos: np.ndarray, tile_box: np.ndarray) -> None:
    """Append objects to their home nodes, whose blocks already have room.

    ``order`` sorts the objects by home; the objects of home ``g`` (node
    ``homes[g]``) are ``order[starts[g]:starts[g + 1]]``.  Writes each
    object's pool row (handle, centre, radius, squared reach), its node and
    row, the nodes' counts, and covers the rows' tiles.  The objects are
    read in their own order (sequential reads), each written at its home's
    next free row: a counting-sort scatter into one write stream per home.
    O(n).
    """
    n, dim = centres.shape
    home_of = np.empty(n, dtype=np.int64)
    for g in range(homes.shape[0]):
        for j in range(starts[g], starts[g + 1]):
            home_of[order[j]] = g
    next_row = np.empty(homes.shape[0], dtype=np.int64)
    for g in range(homes.shape[0]):
        next_row[g] = node_start[homes[g]] + node_count[homes[g]]
    for i in range(n):
        g = home_of[i]
        row = next_row[g]
        next_row[g] = row + 1
        h = handles[i]
        pool_handles[row] = h
        for axis in range(dim):
            columns[axis, row] = centres[i, axis]
        columns[dim, row] = radii[i]
        columns[dim + 1, row] = reach[i]
        obj_node[h] = homes[g]
        obj_pos[h] = row
    for g in range(homes.shape[0]):  # each home's new rows are one range: cover it in one sweep
        cover(columns, node_start[homes[g]] + node_count[homes[g]], next_row[g], tile_box)
        node_count[homes[g]] += starts[g + 1] - starts[g]


@kernel
def layout_order(centres: np.ndarray, radii: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """An order of the objects along a Morton curve over the batch's bounding box: int64 (n,),
    and the centres and radii in that order (new arrays).

    ``insert_many`` takes its objects in this order, so every node's new
    members lie along the curve too (the curve restricted to an aligned cell
    is the cell's own Morton curve), and each tile of pool rows covers a
    small part of its node (:mod:`culling.tiles`).  Only the layout follows
    from it, never a node or an answer.

    ``LAYOUT_BITS`` bits are handed out one at a time to the axis whose
    cells are widest (a flat world splits only its wide axes), each object's
    code is the Morton interleave of its cell, and a counting sort orders
    the codes, equal codes in input order.  O(n + 2**LAYOUT_BITS).
    """
    n, dim = centres.shape
    low = np.empty(dim)
    width = np.empty(dim)
    for axis in range(dim):
        lo, hi = math.inf, -math.inf
        for i in range(n):
            lo = min(lo, centres[i, axis])
            hi = max(hi, centres[i, axis])
        low[axis] = 0.5 * lo
        width[axis] = 0.5 * hi - 0.5 * lo if n else 0.0  # halves: no overflow across a huge world
    # which axis each bit of the code splits, most significant first
    bits = np.zeros(dim, dtype=np.int64)
    split = np.empty(LAYOUT_BITS, dtype=np.int64)
    used = 0
    while used < LAYOUT_BITS:
        widest = 0
        for axis in range(1, dim):
            if math.ldexp(width[axis], -bits[axis]) > math.ldexp(width[widest], -bits[widest]):
                widest = axis
        if not width[widest] > 0.0:  # every object at one point (or a single object): nothing to split
            break
        split[used] = widest
        bits[widest] += 1
        used += 1
    # part[axis, cell]: what the cell number on ``axis`` adds to the code
    part = np.zeros((dim, 1 << bits.max()), dtype=np.int64)
    seen = np.zeros(dim, dtype=np.int64)
    for k in range(used):
        axis = split[k]
        seen[axis] += 1
        for cell in range(1 << bits[axis]):
            part[axis, cell] |= ((cell >> (bits[axis] - seen[axis])) & 1) << (used - 1 - k)
    codes = np.zeros(n, dtype=np.int64)
    for i in range(n):
        code = 0
        for axis in range(dim):
            if bits[axis]:
                top = (1 << bits[axis]) - 1
                cell = min(top, int((0.5 * centres[i, axis] - low[axis]) / width[axis] * (top + 1)))
                code |= part[axis, cell]
        codes[i] = code
    starts = np.zeros((1 << used) + 1, dtype=np.int64)
    for i in range(n):
        starts[codes[i] + 1] += 1
    for c in range(1 << used):
        starts[c + 1] += starts[c]
    order = np.empty(n, dtype=np.int64)
    sorted_centres = np.empty((n, dim))
    sorted_radii = np.empty(n)
    for i in range(n):
        j = starts[codes[i]]
        starts[codes[i]] += 1
        order[j] = i
        for axis in range(dim):
            sorted_centres[j, axis] = centres[i, axis]
        sorted_radii[j] = radii[i]
    return order, sorted_centres, sorted_radii


#: Golden-ratio multiplier of the hash in :func:`group` (Fibonacci hashing).
_GOLDEN = np.uint64(0x9E3779B97F4A7C15)


@kernel
def group(keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Group equal keys: ``(order, starts)``, the objects of group ``g`` being
    ``order[starts[g]:starts[g + 1]]`` (groups by first appearance, objects in input order).

    A hash table from key to group (open addressing, doubled when half
    full), then a counting sort: O(n), where a sort of the keys is
    O(n log n) and twice the memory traffic.  ``keys`` int64 (n,).
    """
    n = keys.shape[0]
    bits = 10
    table_key = np.empty(1 << bits, dtype=np.int64)
    table_group = np.full(1 << bits, -1, dtype=np.int64)
    group_of = np.empty(n, dtype=np.int64)
    sizes = np.zeros(16, dtype=np.int64)
    groups = 0
    for i in range(n):
        key = keys[i]
        slot = np.int64((np.uint64(key) * _GOLDEN) >> np.uint64(64 - bits))
        mask = (1 << bits) - 1
        rehashed = False
        while table_group[slot] >= 0 and table_key[slot] != key:
            slot = (slot + 1) & mask
        if table_group[slot] < 0:  # a new group
            table_key[slot] = key
            table_group[slot] = groups
            if groups == sizes.shape[0]:
                bigger = np.zeros(2 * groups, dtype=np.int64)
                for g in range(groups):
                    bigger[g] = sizes[g]
                sizes = bigger
            groups += 1
            if 2 * groups > (1 << bits):  # half full: double the table and re-insert
                bits += 1
                old_key, old_group = table_key, table_group
                table_key = np.empty(1 << bits, dtype=np.int64)
                table_group = np.full(1 << bits, -1, dtype=np.int64)
                mask = (1 << bits) - 1
                for s in range(old_group.shape[0]):
                    if old_group[s] >= 0:
                        t = np.int64((np.uint64(old_key[s]) * _GOLDEN) >> np.uint64(64 - bits))
                        while table_group[t] >= 0:
                            t = (t + 1) & mask
                        table_key[t] = old_key[s]
                        table_group[t] = old_group[s]
                rehashed = True
        g = groups - 1 if rehashed else table_group[slot]
        group_of[i] = g
        sizes[g] += 1
    starts = np.empty(groups + 1, dtype=np.int64)
    starts[0] = 0
    for g in range(groups):
        starts[g + 1] = starts[g] + sizes[g]
    cursor = starts[:groups].copy()
    order = np.empty(n, dtype=np.int64)
    for i in range(n):
        g = group_of[i]
        order[cursor[g]] = i
        cursor[g] += 1
    return order, starts[:groups]
