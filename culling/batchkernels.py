"""The tree's batch-mutation kernels: the per-object loops of ``insert_many`` and ``update_many``.

Node creation and block allocation run per node (:meth:`culling.nodes.NodeTable.at_many`,
:meth:`culling.pool.BlockPool.allocate_many`); what runs per object is here,
as plain loops that read each object's data once and write its row once:

- :func:`locate`: every object's home level and cell, and the bounds the
  batch is checked against (one pass where NumPy needed a dozen).
- :func:`group`: which objects share a home node (a hash table keyed by
  ``(level, cell)``), in O(n) where sorting is O(n log n).
- :func:`settle` (``update_many``): rewrite in place every object whose
  home node is the one it is in (a small move); return the others, the movers.
- :func:`place` (``insert_many`` and the movers): append objects after
  their home node's members, with their squared reach.
"""

from __future__ import annotations

import math

import numpy as np

from culling.jit import inline_kernel, kernel
from culling.lattice import MAX_DEPTH, TOO_LARGE
from culling.shapes import reach_of
from culling.treekernels import cell_of

__all__ = ["group", "locate", "place", "settle"]


@kernel
def locate(centres: np.ndarray, radii: np.ndarray, origin: np.ndarray,
           size: float) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Every object's home: ``(levels, cells, lo, hi)``.

    Parameters
    ----------
    centres : float64 (n, dim); radii : float64 (n,), finite and >= 0
    origin : float64 (dim,); size : the lattice's level-0 edge

    Returns
    -------
    levels : int64 (n,)
        :meth:`culling.lattice.Lattice.levels_for` of the radii (``TOO_LARGE``
        for a radius whose ``radius / size`` overflows).
    cells : int64 (dim, n)
        :meth:`~culling.lattice.Lattice.cells` of the root-relative centres
        ``u = (centre - origin) / size`` on those levels.
    lo, hi : float64 (dim,)
        The smallest and largest ``u`` per axis (``inf`` where ``centre -
        origin`` overflowed): the caller checks them against the world
        before it uses any cell.

    The same IEEE operations as the lattice's NumPy functions.  O(n).
    """
    n, dim = centres.shape
    levels = np.empty(n, dtype=np.int64)
    cells = np.empty((dim, n), dtype=np.int64)
    lo = np.full(dim, math.inf)
    hi = np.full(dim, -math.inf)
    for i in range(n):
        relative = radii[i] / size
        if relative == 0.0:
            level = MAX_DEPTH
        elif relative == math.inf:
            level = TOO_LARGE
        else:
            level = min(-math.frexp(relative)[1] - 1, MAX_DEPTH)
        levels[i] = level
        for axis in range(dim):
            u = (centres[i, axis] - origin[axis]) / size
            lo[axis] = min(lo[axis], u)
            hi[axis] = max(hi[axis], u)
            cells[axis, i] = cell_of(u, level)
    return levels, cells, lo, hi


#: Golden-ratio multiplier of the hash in :func:`group` (Fibonacci hashing).
_GOLDEN = np.uint64(0x9E3779B97F4A7C15)


@inline_kernel
def _slot(key: np.ndarray, bits: int) -> np.int64:
    """Hash table slot (of ``2**bits``) of a key ``(level, cell...)``: multiply-xor, top bits."""
    h = np.uint64(0)
    for part in key:
        h = (h ^ np.uint64(part)) * _GOLDEN
    return np.int64(h >> np.uint64(64 - bits))


@kernel
def group(levels: np.ndarray, cells: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Group the objects by home ``(level, cell)``: ``(group_of, first, sizes)``.

    Object ``i`` is in group ``group_of[i]``; group ``g`` is first met at
    object ``first[g]`` (its key is that object's) and holds ``sizes[g]``
    objects.  Groups are numbered in order of first appearance.

    A hash table from key to group (open addressing, at most half full):
    :func:`_group_into` fills it until it is half full, then the table and
    the groups' columns double and it goes on.  O(n), where sorting the
    keys would be O(n log n).  ``levels`` int64 (n,), ``cells`` int64 (dim, n).
    """
    n = levels.shape[0]
    dim = cells.shape[0]
    group_of = np.empty(n, dtype=np.int64)
    bits = 10
    table = np.full(1 << bits, -1, dtype=np.int64)   # slot -> group, -1 for empty
    keys = np.empty((1 << (bits - 1), dim + 1), dtype=np.int64)  # group -> (level, cell...)
    first = np.empty(1 << (bits - 1), dtype=np.int64)
    sizes = np.zeros(1 << (bits - 1), dtype=np.int64)
    done, groups = _group_into(levels, cells, 0, 0, bits, table, keys, first, sizes, group_of)
    while done < n:  # the table is half full: double it and the groups' columns, re-insert every group
        bits += 1
        table = np.full(1 << bits, -1, dtype=np.int64)
        for g in range(groups):
            slot = _slot(keys[g], bits)
            while table[slot] >= 0:
                slot = (slot + 1) & ((1 << bits) - 1)
            table[slot] = g
        keys = np.concatenate((keys, np.empty_like(keys)))
        first = np.concatenate((first, np.empty_like(first)))
        sizes = np.concatenate((sizes, np.zeros_like(sizes)))
        done, groups = _group_into(levels, cells, done, groups, bits, table, keys, first, sizes, group_of)
    return group_of, first[:groups].copy(), sizes[:groups].copy()


@kernel
def _group_into(levels: np.ndarray, cells: np.ndarray, done: int, groups: int, bits: int, table: np.ndarray,
                keys: np.ndarray, first: np.ndarray, sizes: np.ndarray, group_of: np.ndarray) -> tuple[int, int]:
    """:func:`group`'s loop over objects ``done ..`` while the table has room for their groups.

    ``table`` has ``2**bits`` slots.  Returns ``(done, groups)``: the first
    object not grouped (``n`` when all are) and the groups so far.  Its arrays never change size, so the
    loop holds them in registers.
    """
    n = levels.shape[0]
    dim = cells.shape[0]
    key = np.empty(dim + 1, dtype=np.int64)
    for i in range(done, n):
        key[0] = levels[i]
        for axis in range(dim):
            key[axis + 1] = cells[axis, i]
        slot = _slot(key, bits)
        g = table[slot]
        while g >= 0:
            same = True
            for part in range(dim + 1):
                same &= keys[g, part] == key[part]
            if same:
                break
            slot = (slot + 1) & (table.shape[0] - 1)
            g = table[slot]
        if g < 0:  # a new group
            if groups == first.shape[0]:
                return i, groups
            g = groups
            groups += 1
            keys[g] = key
            first[g] = i
            table[slot] = g
        group_of[i] = g
        sizes[g] += 1
    return n, groups


@kernel
def settle(handles: np.ndarray, centres: np.ndarray, radii: np.ndarray, levels: np.ndarray, cells: np.ndarray,
           obj_node: np.ndarray, obj_pos: np.ndarray, node_level: np.ndarray, node_cells: np.ndarray,
           columns: np.ndarray) -> np.ndarray:
    """Store every object whose home is unchanged in place; return the indices of the others.

    Parameters
    ----------
    handles : int64 (n,), live and unique
    centres : float64 (n, dim); radii : float64 (n,)
    levels : int64 (n,); cells : int64 (dim, n): the new homes (:func:`locate`)

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
            stay &= node_cells[axis, node] == cells[axis, i]
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
def place(handles: np.ndarray, group_of: np.ndarray, homes: np.ndarray, centres: np.ndarray, radii: np.ndarray,
          node_start: np.ndarray, node_count: np.ndarray, pool_handles: np.ndarray, columns: np.ndarray,
          obj_node: np.ndarray, obj_pos: np.ndarray) -> None:
    """Append objects to their home nodes, whose blocks already have room.

    Object ``i`` (handle ``handles[i]``) goes to node ``homes[group_of[i]]``
    (:func:`group`).  Writes each object's pool row (handle, centre, radius,
    squared reach), its node and row, and the nodes' counts.  The objects
    are read in their own order (sequential reads), each written at its
    home's next free row: one write stream per home.  O(n).
    """
    n, dim = centres.shape
    next_row = np.empty(homes.shape[0], dtype=np.int64)
    for g in range(homes.shape[0]):
        next_row[g] = node_start[homes[g]] + node_count[homes[g]]
    for i in range(n):
        g = group_of[i]
        row = next_row[g]
        next_row[g] = row + 1
        h = handles[i]
        pool_handles[row] = h
        for axis in range(dim):
            columns[axis, row] = centres[i, axis]
        columns[dim, row] = radii[i]
        columns[dim + 1, row] = reach_of(radii[i])
        obj_node[h] = homes[g]
        obj_pos[h] = row
    for g in range(homes.shape[0]):
        node_count[homes[g]] = next_row[g] - node_start[homes[g]]
