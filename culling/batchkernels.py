"""The tree's batch-mutation kernels: the per-object loops of ``insert_many`` and ``update_many``.

Grouping, node creation and block allocation stay in NumPy and Python (they
run per node, not per object); what runs per object is here, as plain loops
that touch each object's row once:

- :func:`settle` (``update_many``): compute each object's home cell, and
  when it is the node the object is already in (a small move), rewrite its
  centre and radius in place; return the others, the movers.
- :func:`spatial_order` (``insert_many`` and the movers): within each home
  node, order the new members along a Morton curve over the node's cell, so
  that each tile of pool rows covers a small part of it (:mod:`culling.tiles`).
- :func:`place` (``insert_many`` and the movers): append objects, grouped
  by home node, after their node's members.

NumPy needed a dozen passes and two 2-D scatters for each; here each object's
data is read once and its row written once.
"""

from __future__ import annotations

import numpy as np

from culling.jit import kernel
from culling.shapes import reach_of
from culling.tiles import TILE_ROWS, cover
from culling.treekernels import cell_of

#: Finest Morton order within a node: at most 2**SPATIAL_BITS sub-cells per axis.
SPATIAL_BITS = 5

__all__ = ["group", "place", "settle", "spatial_order"]


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
    ``homes[g]``) are ``order[starts[g]:starts[g + 1]]``, each home's in the
    order they take in its block.  Writes each object's pool row (handle,
    centre, radius, squared reach), its node and row, the nodes' counts, and
    covers the rows' tiles.  O(n).
    """
    dim = centres.shape[1]
    for g in range(homes.shape[0]):
        node = homes[g]
        first = node_start[node] + node_count[node]
        row = first
        for j in range(starts[g], starts[g + 1]):
            i = order[j]
            h = handles[i]
            pool_handles[row] = h
            for axis in range(dim):
                columns[axis, row] = centres[i, axis]
            columns[dim, row] = radii[i]
            columns[dim + 1, row] = reach[i]
            obj_node[h] = node
            obj_pos[h] = row
            row += 1
        node_count[node] += starts[g + 1] - starts[g]
        cover(columns, first, row, tile_box)


@kernel
def spatial_order(order: np.ndarray, starts: np.ndarray, centres: np.ndarray, levels: np.ndarray,
                  origin: np.ndarray, size: float) -> None:
    """Sort each home's objects, ``order[starts[g]:starts[g + 1]]``, in place along a Morton curve
    over the home's cell (levels ``levels``; the tree's root edge ``size`` at ``origin``).

    A home of ``n`` objects gets about ``n`` sub-cells (at most
    ``2**SPATIAL_BITS`` per axis); a counting sort by the sub-cell's Morton
    code keeps equal codes in their order.  Homes of at most one tile are
    left alone.  Only the layout changes (the tiles cover smaller boxes), never
    a node or an answer.  O(n + sub-cells).
    """
    dim = centres.shape[1]
    groups = starts.shape[0] - 1
    counts = np.zeros(1 << (dim * SPATIAL_BITS), dtype=np.int64)
    codes = np.empty(order.shape[0], dtype=np.int64)
    scratch = np.empty(order.shape[0], dtype=np.int64)
    for g in range(groups):
        first, last = starts[g], starts[g + 1]
        if last - first <= TILE_ROWS:
            continue
        bits = 0  # about one sub-cell per object
        while bits < SPATIAL_BITS and (1 << (dim * (bits + 1))) <= 2 * (last - first):
            bits += 1
        buckets = 1 << (dim * bits)
        for j in range(first, last):
            i = order[j]
            code = 0
            for axis in range(dim):
                sub = cell_of((centres[i, axis] - origin[axis]) / size, levels[i] + bits) & ((1 << bits) - 1)
                for b in range(bits):
                    code |= ((sub >> b) & 1) << (b * dim + axis)
            codes[j] = code
            counts[code] += 1
        total = first
        for c in range(buckets):
            total, counts[c] = total + counts[c], total
        for j in range(first, last):
            scratch[counts[codes[j]]] = order[j]
            counts[codes[j]] += 1
        for j in range(first, last):
            order[j] = scratch[j]
        counts[:buckets] = 0


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
