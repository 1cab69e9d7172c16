"""The tree's batch-mutation kernels: the per-object loops of ``insert_many`` and ``update_many``.

Grouping, node creation and block allocation stay in NumPy and Python (they
run per node, not per object); what runs per object is here, as plain loops
that touch each object's row once:

- :func:`settle` (``update_many``): compute each object's home cell, and
  when it is the node the object is already in (a small move), rewrite its
  centre and radius in place; return the others, the movers.
- :func:`place` (``insert_many`` and the movers): append objects, grouped
  by home node, after their node's members.

NumPy needed a dozen passes and two 2-D scatters for each; here each object's
data is read once and its row written once.
"""

from __future__ import annotations

import numpy as np

from culling.jit import kernel
from culling.shapes import reach_of
from culling.treekernels import cell_of

__all__ = ["group", "place", "settle"]


@kernel
def settle(handles: np.ndarray, centres: np.ndarray, radii: np.ndarray, u: np.ndarray, levels: np.ndarray,
           obj_node: np.ndarray, obj_pos: np.ndarray, node_level: np.ndarray, node_cells: np.ndarray,
           columns: np.ndarray, cells: np.ndarray) -> np.ndarray:
    """Store every object whose home is unchanged in place; return the indices of the others.

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
        else:
            movers[k] = i
            k += 1
    return movers[:k]


@kernel
def place(handles: np.ndarray, order: np.ndarray, starts: np.ndarray, homes: np.ndarray,
          centres: np.ndarray, radii: np.ndarray, reach: np.ndarray, node_start: np.ndarray,
          node_count: np.ndarray, pool_handles: np.ndarray, columns: np.ndarray,
          obj_node: np.ndarray, obj_pos: np.ndarray) -> None:
    """Append objects to their home nodes, whose blocks already have room.

    ``order`` sorts the objects by home; the objects of home ``g`` (node
    ``homes[g]``) are ``order[starts[g]:starts[g + 1]]``.  Writes each
    object's pool row (handle, centre, radius, squared reach), its node and
    row, and the nodes' counts.  The objects are read in their own order
    (sequential reads), each written at its home's next free row: a
    counting-sort scatter into one write stream per home.  O(n).
    """
    n, dim = centres.shape
    home_of = np.empty(n, dtype=np.int64)
    for g in range(homes.shape[0]):
        for j in range(starts[g], starts[g + 1]):
            home_of[order[j]] = g
    next_row = np.empty(homes.shape[0], dtype=np.int64)
    for g in range(homes.shape[0]):
        next_row[g] = node_start[homes[g]] + node_count[homes[g]]
        node_count[homes[g]] += starts[g + 1] - starts[g]
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
