"""The tree's nodes: a table of NumPy columns plus a hash index by (level, cell).

Nodes are rows of parallel arrays (block start, capacity and count in the
pool, level, cell, parent, number of children, child links), so batch
operations read and write many nodes with one NumPy index and the compiled
query kernels (:mod:`culling.tree.walk`) walk the tree from flat arrays.
``by_level[level][cell]`` finds a node in O(1): a sphere's home node is
computed from coordinates, then looked up, never searched for.

>>> table = NodeTable(dim=2)
>>> root = table.new(0, (5, 5), -1)
>>> leaf = table.at(2, (21, 20))           # creates the missing level-1 parent
>>> table.live, table.key[table.parent[leaf]]
(3, (1, (10, 10)))
>>> table.child[root].tolist()             # (10, 10): low half on both axes
[1, -1, -1, -1]
"""

from __future__ import annotations

import numpy as np

from culling.core import growth
from culling.core.growth import ARRAY_GROWTH, grown
from culling.core.jit import kernel
from culling.core.structs import NodesFields

__all__ = ["NodeTable", "SHRINK_RATIO"]

class NodeTable:
    """Every live node of one tree; a dead row has ``count == -1`` and is reused.

    Attributes
    ----------
    start, capacity, count : ndarray, (N,), int64
        The node's block of pool rows: where it starts, its size, rows used.
    level : ndarray, (N,), int64
    cells : ndarray, (dim, N), int64, column-wise like the lattice's cells
    parent : ndarray, (N,), int64, -1 for the root
    children : ndarray, (N,), int64, number of live children
    child : ndarray, (N, 2**dim), int64, C-contiguous
        The live children by quadrant (``sum((cell[axis] & 1) << axis)``),
        -1 for none: the links a top-down walk follows.
    key : list of ``(level, cell tuple)`` or None, by node id
    by_level : dict level -> dict cell tuple -> node id
    """

    def __init__(self, dim: int, capacity: int = 16):
        self.start = np.zeros(capacity, dtype=np.int64)
        self.capacity = np.zeros(capacity, dtype=np.int64)
        self.count = np.full(capacity, -1, dtype=np.int64)
        self.level = np.zeros(capacity, dtype=np.int64)
        self.cells = np.zeros((dim, capacity), dtype=np.int64)
        self.parent = np.full(capacity, -1, dtype=np.int64)
        self.children = np.zeros(capacity, dtype=np.int64)
        self.child = np.full((capacity, 1 << dim), -1, dtype=np.int64)
        self.key: list[tuple[int, tuple[int, ...]] | None] = [None] * capacity
        self.by_level: dict[int, dict[tuple[int, ...], int]] = {}
        self.issued = 0  # node ids handed out so far (live or free)
        self.free: list[int] = []

    @property
    def live(self) -> int:
        """Number of live nodes."""
        return self.issued - len(self.free)

    def arrays(self) -> NodesFields:
        """The table's columns as the kernels take them: :class:`~culling.core.structs.Nodes`'s fields,
        a plain tuple (references, no copy; valid until the table next grows)."""
        return (self.start, self.capacity, self.count, self.level, self.cells, self.parent, self.children,
                self.child)

    def nbytes(self) -> int:
        return sum(a.nbytes for a in self.arrays())

    def new(self, level: int, cell: tuple[int, ...], parent: int) -> int:
        """Add an empty node (no pool block yet) under ``parent`` (-1: none); returns its id."""
        if self.free:
            node = self.free.pop()
        else:
            node = self.issued
            if node >= self.count.shape[0]:
                self._grow(node + 1)  # before ``issued`` moves: a MemoryError changes nothing
            self.issued += 1
        self.start[node] = 0
        self.capacity[node] = 0  # blocks are allocated on the first member
        self.count[node] = 0
        self.level[node] = level
        self.cells[:, node] = cell
        self.parent[node] = parent
        self.children[node] = 0
        self.child[node] = -1
        self.key[node] = (level, cell)
        self.by_level.setdefault(level, {})[cell] = node
        if parent >= 0:
            self.children[parent] += 1
            self.child[parent, self.quadrant(cell)] = node
        return node

    def key_of(self, node: int) -> tuple[int, tuple[int, ...]]:
        """``(level, cell)`` of a live node."""
        key = self.key[node]
        if key is None:
            raise KeyError(f"node {node} is not live")
        return key

    @staticmethod
    def quadrant(cell: tuple[int, ...]) -> int:
        """Which child of its parent a cell is: bit ``axis`` set for the high half on that axis."""
        return sum((c & 1) << axis for axis, c in enumerate(cell))

    def adopt(self, parent: int, node: int) -> None:
        """Make ``node`` (a root so far) the child of the new root ``parent``."""
        self.parent[node] = parent
        self.children[parent] += 1
        self.child[parent, self.quadrant(tuple(self.cells[:, node].tolist()))] = node

    def orphan(self, node: int) -> None:
        """Detach ``node`` from its parent, which is about to be deleted: ``node`` becomes the root."""
        parent = int(self.parent[node])
        self.children[parent] -= 1
        self.child[parent, self.quadrant(tuple(self.cells[:, node].tolist()))] = -1
        self.parent[node] = -1

    def at(self, level: int, cell: tuple[int, ...]) -> int:
        """The node for ``(level, cell)``, created with any missing ancestors.  O(1) when it exists.

        The caller guarantees that an ancestor (at the latest the root) exists.
        """
        nodes = self.by_level.get(level)
        node = nodes.get(cell) if nodes is not None else None
        if node is None:
            parent = self.at(level - 1, tuple(c >> 1 for c in cell))
            node = self.new(level, cell, parent)
        return node

    def at_many(self, keys: np.ndarray, root: int, made: list[int] | None = None) -> np.ndarray:
        """:meth:`at` of many keys at once: node ids, int64 (k,).

        ``keys`` int64 (k, dim + 1), rows ``(level, cell...)``, name distinct
        nodes at or below the root ``root``, which must contain them all.
        A kernel (:func:`_descend`) finds each from the root by its child
        links and creates the missing ones; the hash index then learns the
        new nodes in one pass.  O(k x depth) compiled, plus O(new nodes).

        The ids of the nodes created are appended to ``made`` (when given),
        also when a ``MemoryError`` stops the table's growth half way: those
        nodes are then indexed, linked and empty, for the caller to clean up.
        """
        homes = np.empty(keys.shape[0], dtype=np.int64)
        # Dead rows to reuse, in the order :meth:`new` would pop them: a few per key (a batch
        # that needs more takes fresh rows; the rest stay free for later).
        reuse = min(len(self.free), 2 * keys.shape[0] + 16)
        free = np.array(self.free[len(self.free) - reuse:][::-1], dtype=np.int64)
        created = np.empty(free.shape[0] + self.count.shape[0] - self.issued, dtype=np.int64)
        done, used, count = 0, 0, 0
        try:
            while True:
                done, used, self.issued, count = _descend(keys, homes, done, root, (free, used, self.issued),
                                                          (created, count), self.arrays())
                if done == keys.shape[0]:
                    break
                self._grow(self.count.shape[0] + 1)  # out of rows: grow by ARRAY_GROWTH and go on
                room = free.shape[0] - used + self.count.shape[0] - self.issued
                more = np.empty(count + room, dtype=np.int64)
                more[:count] = created[:count]
                created = more
        finally:  # the nodes created so far are linked: index them, whatever happened
            del self.free[len(self.free) - used:]
            new = created[:count]
            named = list(zip(self.level[new].tolist(), map(tuple, self.cells[:, new].T.tolist())))
            for node, key in zip(new.tolist(), named):
                self.key[node] = key
                self.by_level.setdefault(key[0], {})[key[1]] = node
            if made is not None:
                made.extend(new.tolist())
        return homes

    def delete(self, node: int) -> None:
        """Remove ``node`` from the index and its parent; its pool block must be released first."""
        level, cell = self.key_of(node)
        nodes = self.by_level[level]
        del nodes[cell]
        if not nodes:
            del self.by_level[level]
        parent = self.parent[node]
        if parent >= 0:
            self.children[parent] -= 1
            self.child[parent, self.quadrant(cell)] = -1
        self.count[node] = -1
        self.capacity[node] = 0
        self.key[node] = None
        self.free.append(node)

    def wasteful(self) -> bool:
        """Whether the table holds far more rows than live nodes (compaction pays).

        After a compaction the table has ``ARRAY_GROWTH`` rows per live node,
        so at least half the nodes must go before the next: amortised O(1).
        """
        return self.count.shape[0] > SHRINK_RATIO * self.live + 64

    def compact(self) -> np.ndarray:
        """Renumber the live nodes ``0 .. live - 1`` into fresh arrays sized to them; returns the
        map from old ids to new ones (int64 (issued,), -1 for dead rows).  O(nodes).

        Every new array is allocated before any is replaced, so a ``MemoryError`` changes nothing.
        """
        alive = np.flatnonzero(self.count[: self.issued] >= 0)
        live = alive.size
        length = max(16, int(live * ARRAY_GROWTH))
        renumber = np.full(self.issued, -1, dtype=np.int64)
        renumber[alive] = np.arange(live, dtype=np.int64)
        columns = {}
        for name, fill in _COLUMNS:
            old = getattr(self, name)
            new = growth.allocate((length,) + old.shape[1:], old.dtype, fill)
            new[:live] = old[alive]
            columns[name] = new
        cells = growth.allocate((self.cells.shape[0], length), np.int64, 0)
        cells[:, :live] = self.cells[:, alive]
        parent, child = columns["parent"], columns["child"]
        links = parent[:live]
        parent[:live] = np.where(links >= 0, renumber[np.maximum(links, 0)], -1)
        links = child[:live]
        child[:live] = np.where(links >= 0, renumber[np.maximum(links, 0)], -1)
        key = [self.key[node] for node in alive.tolist()] + [None] * (length - live)
        # Commit: nothing below allocates arrays.
        for name, array in columns.items():
            setattr(self, name, array)
        self.cells = cells
        self.key = key
        for nodes in self.by_level.values():
            for cell, node in nodes.items():
                nodes[cell] = int(renumber[node])
        self.issued = live
        self.free = []
        return renumber

    def _grow(self, length: int) -> None:
        """At least ``length`` rows (by ``ARRAY_GROWTH``): every new array is allocated before any
        is replaced, so a ``MemoryError`` leaves the table as it was."""
        columns = {name: grown(getattr(self, name), length, fill) for name, fill in _COLUMNS}
        cells = grown(self.cells.T, length, 0).T.copy()
        for name, array in columns.items():
            setattr(self, name, array)
        self.cells = cells
        self.key.extend([None] * (self.count.shape[0] - len(self.key)))


#: The table's per-node columns other than ``cells`` (stored transposed), with the fill of a new row.
_COLUMNS = (("start", 0), ("capacity", 0), ("count", -1), ("level", 0), ("parent", -1), ("children", 0),
            ("child", -1))

#: A table longer than this many rows per live node (plus 64) is compacted after removals.
SHRINK_RATIO = 4


@kernel
def _descend(keys: np.ndarray, homes: np.ndarray, done: int, root: int, rows: tuple[np.ndarray, int, int],
             new: tuple[np.ndarray, int], nodes_fields: NodesFields) -> tuple[int, int, int, int]:
    """Find or create the nodes of keys ``done ..`` (:meth:`NodeTable.at_many`), writing ``homes``.

    Each key is reached from ``root`` level by level through the child
    links; a missing node is created (as :meth:`NodeTable.new` does) from
    ``free`` (ids ``used ..``), else from row ``issued`` on
    (``rows = (free, used, issued)``), and its id appended to ``created``
    (``new = (created, made)``).  Stops early when the table has no row left.

    Returns ``(done, used, issued, made)``: keys finished (all, unless the
    table ran out of rows), free ids and rows taken so far, ids in ``created``.
    """
    start, capacity, count, level, node_cells, parent, children, child = nodes_fields  # Nodes, in field order
    free, used, issued = rows
    created, made = new
    dim = node_cells.shape[0]
    table_rows = count.shape[0]
    for g in range(done, keys.shape[0]):
        node = root
        for below in range(level[root] + 1, keys[g, 0] + 1):
            shift = keys[g, 0] - below
            quadrant = 0
            for axis in range(dim):
                quadrant |= ((keys[g, axis + 1] >> shift) & 1) << axis
            next_node = child[node, quadrant]
            if next_node < 0:
                if used < free.shape[0]:
                    next_node = free[used]
                    used += 1
                elif issued < table_rows:
                    next_node = issued
                    issued += 1
                else:
                    return g, used, issued, made
                start[next_node] = 0
                capacity[next_node] = 0
                count[next_node] = 0
                level[next_node] = below
                for axis in range(dim):
                    node_cells[axis, next_node] = keys[g, axis + 1] >> shift
                parent[next_node] = node
                children[next_node] = 0
                for quadrant_below in range(child.shape[1]):
                    child[next_node, quadrant_below] = -1
                children[node] += 1
                child[node, quadrant] = next_node
                created[made] = next_node
                made += 1
            node = next_node
        homes[g] = node
    return keys.shape[0], used, issued, made
