"""The tree's nodes: a table of NumPy columns, linked parent to child; the links are the only index.

Nodes are rows of parallel arrays (block start, capacity and count in the
pool, level, cell, parent, number of children, child links), so batch
operations read and write many nodes with one NumPy index and the compiled
kernels walk the tree from flat arrays.  A node is found by its name
``(level, cell)`` by descending from the root: the child on the way down is
the one whose quadrant is the next bit of the cell on each axis
(:func:`_descend`, compiled; O(depth), at most ``MAX_DEPTH + MAX_GROWTH``
steps).  Dead rows (``count == -1``) wait on a stack of free ids (an int64
array as long as the table) and are reused first; :meth:`NodeTable.prune`
deletes emptied nodes with their empty ancestors in one compiled pass.

>>> table = NodeTable(dim=2)
>>> root = table.new(0, (5, 5), -1)
>>> leaf = table.at(2, (21, 20), root)     # creates the missing level-1 parent
>>> table.live, table.key_of(int(table.parent[leaf]))
(3, (1, (10, 10)))
>>> table.child[root].tolist()             # (10, 10): low half on both axes
[1, -1, -1, -1]
>>> table.find(2, (21, 20), root) == leaf, table.find(2, (20, 20), root)
(True, -1)
"""

from __future__ import annotations

import numpy as np

from culling.core import growth
from culling.core.growth import ARRAY_GROWTH, grown
from culling.core.structs import NODE_COLUMNS, Nodes, NodesFields, nodes_of
from culling.runtime.jit import inline_kernel, kernel
from culling.runtime.prefetch import AHEAD, prefetch
from culling.runtime.threads import run_chunks

__all__ = ["DEAD_ROW", "NodeTable", "SHRINK_RATIO", "prune_nodes"]


class NodeTable:
    """Every live node of one tree; a dead row has ``count == -1`` and is reused (:data:`DEAD_ROW`).

    Attributes
    ----------
    columns : ndarray, (6, N), int64
        The per-node integer columns below, one per row (:data:`~culling.core.structs.NODE_COLUMNS`):
        one array for the kernels to take instead of six (:func:`~culling.core.structs.nodes_of`).
    start, capacity, count : ndarray, (N,), int64, rows of ``columns``
        The node's block of pool rows: where it starts, its size, rows used.
    level : ndarray, (N,), int64, a row of ``columns``
    cells : ndarray, (dim, N), int64, column-wise like the lattice's cells
    parent : ndarray, (N,), int64, -1 for the root; a row of ``columns``
    children : ndarray, (N,), int64, number of live children; a row of ``columns``
    child : ndarray, (N, 2**dim), int64, C-contiguous
        The live children by quadrant (``sum((cell[axis] & 1) << axis)``),
        -1 for none: the links a top-down walk follows, and the only index.
    free : ndarray, (N,), int64
        A stack of the dead rows below ``issued``: ``free[:free_count]``, the next to reuse last.
    """

    start: np.ndarray
    capacity: np.ndarray
    count: np.ndarray
    level: np.ndarray
    parent: np.ndarray
    children: np.ndarray

    def __init__(self, dim: int, capacity: int = 16):
        self._set_columns(_new_columns(capacity))
        self.cells = growth.allocate((dim, capacity), np.int64, 0)
        self.child = growth.allocate((capacity, 1 << dim), np.int64, -1)
        self.free = growth.allocate((capacity,), np.int64, 0)
        self.free_count = 0
        self.issued = 0  # node ids handed out so far (live or free)

    def _set_columns(self, columns: np.ndarray) -> None:
        """Keep ``columns`` and its rows under their names (views, so writes through them land in it)."""
        self.columns = columns
        for row, name in enumerate(NODE_COLUMNS):
            setattr(self, name, columns[row])

    def __getstate__(self) -> dict[str, object]:
        """Pickle and copy the arrays once: the rows are views of ``columns``, made again on load."""
        state = dict(self.__dict__)
        for name in NODE_COLUMNS:
            del state[name]
        return state

    def __setstate__(self, state: dict[str, object]) -> None:
        self.__dict__.update(state)
        child = growth.allocate(self.child.shape, np.int64, -1)  # on a cache line again (growth.allocate)
        child[:] = self.child
        self.child = child
        self._set_columns(self.columns)

    @property
    def live(self) -> int:
        """Number of live nodes."""
        return self.issued - self.free_count

    def free_ids(self) -> np.ndarray:
        """The dead rows waiting for reuse (a view; the last is reused first)."""
        return self.free[: self.free_count]

    def arrays(self) -> NodesFields:
        """The table as the kernels take it: ``(columns, cells, child)`` (:data:`~culling.core.structs.NodesFields`),
        a plain tuple (references, no copy; valid until the table next grows)."""
        return self.columns, self.cells, self.child

    def struct(self) -> Nodes:
        """The table as the :class:`~culling.core.structs.Nodes` struct, for Python code that calls an
        inner kernel directly (tests, profiling)."""
        return Nodes(self.start, self.capacity, self.count, self.level, self.cells, self.parent, self.children,
                     self.child)

    def nbytes(self) -> int:
        return sum(a.nbytes for a in self.arrays()) + int(self.free.nbytes)

    def new(self, level: int, cell: tuple[int, ...], parent: int) -> int:
        """Add an empty node (no pool block yet) under ``parent`` (-1: none); returns its id."""
        if self.free_count:
            self.free_count -= 1
            node = int(self.free[self.free_count])
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
        if parent >= 0:
            self.children[parent] += 1
            self.child[parent, self.quadrant(cell)] = node
        return node

    def key_of(self, node: int) -> tuple[int, tuple[int, ...]]:
        """``(level, cell)`` of a live node, read from its row."""
        if not 0 <= node < self.issued or self.count[node] < 0:
            raise KeyError(f"node {node} is not live")
        return int(self.level[node]), tuple(self.cells[:, node].tolist())

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

    def only_child(self, node: int) -> int:
        """The one child of a node with ``children == 1``."""
        return int(self.child[node].max())

    def find(self, level: int, cell: tuple[int, ...], root: int) -> int:
        """The node for ``(level, cell)`` at or below ``root``, or -1 when there is none; creates nothing.

        One compiled descent from ``root`` (:func:`_descend`), O(depth).
        """
        key = np.array([[level, *cell]], dtype=np.int64)
        homes = np.empty(1, dtype=np.int64)
        _descend(key, homes, (0, root, _NOWHERE, _NOWHERE), (self.free, self.free_count, self.issued, False), (homes, 0),
                 self.arrays())
        return int(homes[0])

    def at(self, level: int, cell: tuple[int, ...], root: int) -> int:
        """The node for ``(level, cell)``, created with any missing ancestors below ``root``, which must
        contain it: one kernel call (:func:`_descend`) when the table has room, else :meth:`at_many`."""
        key = np.array([[level, *cell]], dtype=np.int64)
        homes = np.empty(1, dtype=np.int64)
        room = self.count.shape[0] - self.issued + self.free_count
        if room > level - int(self.level[root]):  # room for the whole chain: the kernel cannot stop
            created = np.empty(room, dtype=np.int64)
            _, self.free_count, self.issued, _ = _descend(key, homes, (0, root, _NOWHERE, _NOWHERE),
                                                          (self.free, self.free_count, self.issued, True),
                                                          (created, 0), self.arrays())
            return int(homes[0])
        return int(self.at_many(key, root)[0])

    def at_many(self, keys: np.ndarray, root: int, made: list[np.ndarray] | None = None,
                near: np.ndarray | None = None) -> np.ndarray:
        """The nodes of many keys, created with their missing ancestors: node ids, int64 (k,).

        ``keys`` int64 (k, dim + 1), rows ``(level, cell...)``, name nodes at
        or below the root ``root``, which must contain them all.  A kernel
        (:func:`_descend`) finds each from the root by its child links and
        creates the missing ones, reusing free rows first.  O(k x depth) compiled.
        ``near`` (int64 (k,), live nodes; optional) starts each search there
        instead: it climbs to the first ancestor that contains the key, then
        descends (a mover's old node: its new home is usually a few levels away),
        :data:`LANES` searches side by side (:func:`_deepest`), before the
        serial pass creates what is missing below where they ended.

        The ids of the nodes created are appended to ``made`` (when given, as
        one array), also when a ``MemoryError`` stops the table's growth half
        way: those nodes are then linked and empty, for the caller to
        :meth:`prune`.
        """
        homes = np.empty(keys.shape[0], dtype=np.int64)
        created = np.empty(self.free_count + self.count.shape[0] - self.issued, dtype=np.int64)
        if near is not None:
            # The searches first, side by side (they only read: on the library's threads from
            # PARALLEL_SEARCH_MIN keys), the creation below from where they ended.
            deepest = np.empty(keys.shape[0], dtype=np.int64)
            depth = np.empty(keys.shape[0], dtype=np.int64)
            fields, start = self.arrays(), near
            run_chunks(lambda lo, hi: _deepest(keys, start, root, lo, hi, (deepest, depth), fields), keys.shape[0],
                       chunks=None if keys.shape[0] >= PARALLEL_SEARCH_MIN else 1)
            search = (deepest, depth)
        else:
            search = (_NOWHERE, _NOWHERE)
        done, count = 0, 0
        try:
            while True:
                done, self.free_count, self.issued, count = _descend(
                    keys, homes, (done, root, *search), (self.free, self.free_count, self.issued, True),
                    (created, count), self.arrays())
                if done == keys.shape[0]:
                    break
                self._grow(self.count.shape[0] + 1)  # out of rows: grow by ARRAY_GROWTH and go on
                more = np.empty(count + self.count.shape[0] - self.issued, dtype=np.int64)
                more[:count] = created[:count]
                created = more
        finally:  # the nodes created so far are linked: the caller prunes them on a failure
            if made is not None:
                made.append(created[:count])
        return homes

    def delete(self, node: int) -> None:
        """Unlink ``node`` (childless) from its parent and free its row; its pool block must be released first."""
        parent = int(self.parent[node])
        if parent >= 0:
            self.children[parent] -= 1
            self.child[parent, self.quadrant(tuple(self.cells[:, node].tolist()))] = -1
        self.count[node] = -1
        self.capacity[node] = 0
        self.free[self.free_count] = node  # never full: it has a slot per row
        self.free_count += 1

    def prune(self, nodes: np.ndarray, root: int) -> np.ndarray:
        """Delete each of ``nodes`` (int64) that is empty and childless, then its ancestors while
        they become so, up to (not including) ``root``: one compiled pass (:func:`prune_nodes`).

        Returns the deleted nodes (the top of the free stack: a view, valid until the next node is
        made), whose blocks, still in their rows, the pool then takes back
        (:meth:`culling.tree.pool.BlockPool.release_dead`).  Dead or non-empty nodes in ``nodes``
        are skipped.  O(len(nodes) + deleted); allocates nothing, so a batch may prune after its
        first write.
        """
        before = self.free_count
        self.free_count = prune_nodes(nodes, root, (self.free, self.free_count), self.arrays())
        return self.free[before:self.free_count]

    def wasteful(self) -> bool:
        """Whether the table holds far more rows than live nodes (compaction pays).

        After a compaction the table has ``ARRAY_GROWTH`` rows per live node,
        so at least half the nodes must go before the next: amortised O(1).
        """
        return bool(self.count.shape[0] > SHRINK_RATIO * self.live + 64)

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
        columns = _new_columns(length)
        columns[:, :live] = self.columns[:, alive]
        child = growth.allocate((length, self.child.shape[1]), np.int64, -1)
        child[:live] = self.child[alive]
        cells = growth.allocate((self.cells.shape[0], length), np.int64, 0)
        cells[:, :live] = self.cells[:, alive]
        free = growth.allocate((length,), np.int64, 0)
        parent = columns[NODE_COLUMNS.index("parent")]
        links = parent[:live]
        parent[:live] = np.where(links >= 0, renumber[np.maximum(links, 0)], -1)
        links = child[:live]
        child[:live] = np.where(links >= 0, renumber[np.maximum(links, 0)], -1)
        # Commit: nothing below allocates arrays.
        self._set_columns(columns)
        self.cells, self.child, self.free = cells, child, free
        self.issued = live
        self.free_count = 0
        return renumber

    def _grow(self, length: int) -> None:
        """At least ``length`` rows (by ``ARRAY_GROWTH``): every new array is allocated before any
        is replaced, so a ``MemoryError`` leaves the table as it was."""
        child = grown(self.child, length, -1)
        old = self.columns.shape[1]
        columns = _new_columns(child.shape[0])
        columns[:, :old] = self.columns
        cells = grown(self.cells.T, child.shape[0], 0).T.copy()
        free = grown(self.free, child.shape[0], 0)
        self._set_columns(columns)
        self.cells, self.child, self.free = cells, child, free


#: What a new row holds in each of :data:`~culling.core.structs.NODE_COLUMNS`: a dead row (count -1,
#: no parent).
_NEW_ROW = {"start": 0, "capacity": 0, "count": -1, "level": 0, "parent": -1, "children": 0}


def _new_columns(length: int) -> np.ndarray:
    """The per-node columns of ``length`` new (dead) rows, int64 (6, length)."""
    columns = growth.allocate((len(NODE_COLUMNS), length), np.int64, 0)
    for row, name in enumerate(NODE_COLUMNS):
        columns[row] = _NEW_ROW[name]
    return columns

#: What every dead row holds besides ``count == -1``: no block, no children, no links (a node is
#: deleted only when childless, and fresh rows are filled so), which a new node then keeps.
DEAD_ROW = {"capacity": 0, "children": 0, "child": -1}

#: A table longer than this many rows per live node (plus 64) is compacted after removals.
SHRINK_RATIO = 4


#: :meth:`NodeTable.at_many` searches on the library's threads from this many keys with start nodes
#: on: each search is a chain of dependent cache misses up and down the table, which two cores
#: overlap (100k moving creatures, 12.5k movers a frame: ``at_many`` 4.0 -> 3.2 ms; 10k creatures,
#: 1.2k movers, frames alternated with 4,096 in one process, ``python -m benchmarks.frameparts
#: --ab``: 1.957/1.797/1.839/1.656 against 2.016/1.814/1.855/1.673 ms).
PARALLEL_SEARCH_MIN = 1_024

#: No start nodes: every search of :func:`_descend` starts at the root.
_NOWHERE = np.empty(0, dtype=np.int64)


@kernel
def _descend(keys: np.ndarray, homes: np.ndarray, search: tuple[int, int, np.ndarray, np.ndarray],
             rows: tuple[np.ndarray, int, int, bool], new: tuple[np.ndarray, int],
             nodes_fields: NodesFields) -> tuple[int, int, int, int]:
    """Find (or create) the nodes of keys ``done ..`` (:meth:`NodeTable.at_many`), writing ``homes``.

    ``search = (done, root, near, near_level)``.  Each key is reached from
    ``root`` (or, when ``near`` is not empty, from ``near[g]``, a node on
    the key's way down, of level ``near_level[g]``: :func:`_deepest` finds
    them) level by level through the child links: the quadrant on
    the way to level ``l`` is bit ``level - l`` of the key's cell on each axis.  With ``create`` (``rows = (free,
    free_count, issued, create)``) a missing node is created (as
    :meth:`NodeTable.new` does) from the top of the free stack, else from
    row ``issued`` on, and its id appended to ``created`` (``new = (created,
    made)``); the loop stops early when the table has no row left.  Without
    ``create`` a missing node's home is -1 and nothing changes.

    Returns ``(done, free_count, issued, made)``: keys finished (all, unless
    the table ran out of rows), the free stack's height, rows issued, ids in ``created``.
    """
    nodes = nodes_of(nodes_fields)
    start, capacity, count, level, node_cells, parent, children, child = nodes
    done, root, near, near_level = search
    free, free_count, issued, create = rows
    created, made = new
    dim = node_cells.shape[0]
    table_rows = count.shape[0]
    for g in range(done, keys.shape[0]):
        if near.shape[0] and g + AHEAD < keys.shape[0]:  # a later search's start (culling.runtime.prefetch)
            prefetch(child[near[g + AHEAD]], 0)
            prefetch(children, near[g + AHEAD])
        if create and free_count > 4:  # a row the creations a few keys on will take, its key's cells too
            fetch_row(free[free_count - 4], nodes)
            fetch_key(free[free_count - 4], nodes)
        node, depth = (near[g], near_level[g]) if near.shape[0] else (root, level[root])
        for below in range(depth + 1, keys[g, 0] + 1):
            quadrant = _quadrant(keys, g, keys[g, 0] - below)
            next_node = child[node, quadrant]
            if next_node < 0:
                if not create:
                    node = -1
                    break
                if free_count > 0:
                    free_count -= 1
                    next_node = free[free_count]
                elif issued < table_rows:
                    next_node = issued
                    issued += 1
                else:
                    return g, free_count, issued, made
                # A dead row has no block, no children and no links (DEAD_ROW): only the key,
                # the parent and the count are written (fewer cache lines per new node).
                count[next_node] = 0
                level[next_node] = below
                for axis in range(dim):
                    node_cells[axis, next_node] = keys[g, axis + 1] >> (keys[g, 0] - below)
                parent[next_node] = node
                children[node] += 1
                child[node, quadrant] = next_node
                created[made] = next_node
                made += 1
            node = next_node
        if node >= 0 and depth > keys[g, 0]:
            node = -1  # only when the key lies above the root (callers never ask)
        homes[g] = node
    return keys.shape[0], free_count, issued, made


@inline_kernel
def _steps_up(keys: np.ndarray, g: int, node: int, root: int, nodes: Nodes) -> int:
    """How many levels above the live ``node`` its first ancestor whose cell holds key ``g`` (``keys[g]
    = (level, cell...)``) lies (at most up to ``root``).

    Its level follows from the two keys (above both levels, the cells agree
    where no differing bit is left); the climb then follows parent links only.
    """
    level, node_cells = nodes.level, nodes.cells
    common = min(level[node], keys[g, 0])
    differ = 0
    for axis in range(node_cells.shape[0]):
        differ |= (node_cells[axis, node] >> (level[node] - common)) ^ (keys[g, axis + 1] >> (keys[g, 0] - common))
    while differ > 0:
        differ >>= 1
        common -= 1
    return int(level[node] - max(common, level[root]))  # a parent is one level up


@inline_kernel
def _quadrant(keys: np.ndarray, g: int, shift: int) -> int:
    """The child, on the way down to key ``g``, of its ancestor ``shift + 1`` levels up: bit ``shift``
    of the key's cell on each axis."""
    quadrant = 0
    for axis in range(keys.shape[1] - 1):
        quadrant |= ((keys[g, axis + 1] >> shift) & 1) << axis
    return quadrant


#: Searches :func:`_deepest` runs side by side: each takes one step (a parent or a child link) per
#: round and asks for its next node's lines, so a round's fetches are in flight together.
LANES = 16


@kernel
def _deepest(keys: np.ndarray, near: np.ndarray, root: int, first: int, last: int,
             out: tuple[np.ndarray, np.ndarray], nodes_fields: NodesFields) -> None:
    """For keys ``first .. last - 1``: the deepest existing node on the way to each (the key's node
    when it exists) and its level into ``out = (nodes, levels)``, from ``near`` as :func:`_descend`
    searches.  Reads the table only, so chunks of keys may run at the same time
    (:meth:`NodeTable.at_many`).

    The searches go :data:`LANES` at a time, one step each per round: a
    search is a chain of dependent reads (each node's row gives the next
    node), and a chain at a time waits for memory at every step.
    """
    nodes = nodes_of(nodes_fields)
    level, parent, child = nodes.level, nodes.parent, nodes.child
    at = np.empty(LANES, dtype=np.int64)     # each lane's node,
    depth = np.empty(LANES, dtype=np.int64)  # its level,
    up = np.empty(LANES, dtype=np.int64)     # and the parent links left to climb; -1 once found
    for base in range(first, last, LANES):
        lanes = min(LANES, last - base)
        for k in range(min(LANES, last - base - LANES)):  # the next group's start nodes
            fetch_key(near[base + LANES + k], nodes)
        for k in range(lanes):
            node = near[base + k]
            at[k] = node
            depth[k] = level[node]
            up[k] = _steps_up(keys, base + k, node, root, nodes)
        moving = lanes
        while moving > 0:
            moving = 0
            for k in range(lanes):
                if up[k] < 0:
                    continue
                g = base + k
                if up[k] > 0:
                    node = parent[at[k]]
                    up[k] -= 1
                    depth[k] -= 1
                elif depth[k] < keys[g, 0]:
                    node = child[at[k], _quadrant(keys, g, keys[g, 0] - depth[k] - 1)]
                    if node < 0:
                        up[k] = -1
                        continue
                    depth[k] += 1
                else:
                    up[k] = -1
                    continue
                at[k] = node
                prefetch(parent, node)
                prefetch(child[node], 0)
                moving += 1
        for k in range(lanes):
            out[0][base + k] = at[k]
            out[1][base + k] = depth[k]


@kernel
def prune_nodes(nodes: np.ndarray, root: int, stack: tuple[np.ndarray, int], nodes_fields: NodesFields) -> int:
    """:meth:`NodeTable.prune`: delete each of ``nodes`` if it is empty and childless, then its ancestors
    while they become so, up to (not including) ``root``.  Returns the new ``free_count``.

    A deleted node leaves its parent's links and its row goes on the free stack
    (``stack = (free, free_count)``; ``free`` has a slot per row), its ``start`` and
    ``capacity`` kept: its block is the pool's to take back from there
    (:func:`culling.tree.pool.release_dead`), so the prune needs no buffer of released blocks,
    nor an allocation after a batch's first write.  Later nodes' rows, and their
    parents', are fetched ahead (:mod:`culling.runtime.prefetch`).  One plain
    loop, as :func:`culling.tree.batch.unlink`.  O(len(nodes) + deleted).
    """
    table = nodes_of(nodes_fields)
    count, parent, children, child = table.members, table.parent, table.children, table.child
    free, free_count = stack
    n = nodes.shape[0]
    for first in range(n):
        if first + AHEAD < n:  # a later node's row, and its parent's links (culling.runtime.prefetch)
            fetch_row(nodes[first + AHEAD], table)
        if first + AHEAD // 2 < n:
            up = parent[nodes[first + AHEAD // 2]]
            if up >= 0:
                fetch_row(up, table)
        node = nodes[first]
        while node != root and count[node] == 0 and children[node] == 0:
            up = parent[node]
            if up >= 0:
                for quadrant in range(child.shape[1]):  # the parent's links: one cache line
                    if child[up, quadrant] == node:
                        child[up, quadrant] = -1
                children[up] -= 1
            count[node] = -1  # a dead row (DEAD_ROW) once its block is taken back: links gone already
            free[free_count] = node
            free_count += 1
            if up < 0:
                break
            node = up
    return free_count


@inline_kernel
def fetch_row(node: int, nodes: Nodes) -> None:
    """Prefetch the table's row of ``node``: its columns and its child links (the key's cells aside)."""
    prefetch(nodes.start, node)
    prefetch(nodes.capacity, node)
    prefetch(nodes.members, node)
    prefetch(nodes.level, node)
    prefetch(nodes.parent, node)
    prefetch(nodes.children, node)
    prefetch(nodes.child[node], 0)


@inline_kernel
def fetch_key(node: int, nodes: Nodes) -> None:
    """Prefetch what a search reads of ``node`` first: its level, cells and parent."""
    prefetch(nodes.level, node)
    prefetch(nodes.parent, node)
    for axis in range(nodes.cells.shape[0]):
        prefetch(nodes.cells[axis], node)


