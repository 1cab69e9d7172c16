"""Contiguous storage for the members of every node: the tree's allocation policy over member rows.

Each node owns one block ``[start, start + capacity)`` of a shared pool of
rows (:class:`culling.core.rows.RowPool`, the vocabulary the grid's pool
shares); a row holds one object's handle and its sphere (centre and radius).
The node table keeps each node's block (``start``, ``capacity``, ``count``)
and the tree each object's node and row; the pool moves them (a block that
outgrows itself, many removals, a compaction) and updates both.

Blocks come in size classes four to an octave (1, 2, 3, 4, 5, 6, 7, 8, 10,
12, ...: :func:`class_capacity`); a node that outgrows its block moves to one
of the smallest class that holds its members, and released blocks are
reused by their size class:
each class keeps a stack of its free blocks, linked through the blocks
themselves (a free block's first row names the next block of its class in its
handle slot, as :func:`free_link`; its other rows hold -1, like every row not
in use), so the free lists cost no memory per row, and the kernels that make
room for a batch (:func:`_make_room`) and take blocks back (:func:`release`)
allocate and release without Python.  Taking blocks off a list is a chain of
cache misses, though (each block's link is in its own first row), so the
one-row blocks a batch releases (most of a sparse swarm's nodes hold one
member) wait on an array stack first, :attr:`BlockPool.spare`, of at most
a quarter of the rows (:func:`spare_room`).
Released blocks of other sizes cannot serve a request, so after many removals
the owner compacts the pool (:meth:`BlockPool.compact`): every live block,
cut to the size class its members need, is copied into fresh arrays and the
garbage is given back.  The owner triggers that when the pool holds more than
``SHRINK_RATIO`` times the rows its members need, which keeps the copy
amortised O(1) per removal; and :meth:`BlockPool.make_room` compacts a full
pool instead of growing it when released blocks hold ``GARBAGE_SHARE`` of the
rows in use (a world streamed in, whose nodes only grow).  The compaction packs the blocks along a Morton curve
through their places (:meth:`BlockPool.spatial_order`), so a tile of rows that spans
several nodes' blocks spans neighbours (:mod:`culling.core.tiles`).
"""

from __future__ import annotations

import inspect
import itertools
from typing import TYPE_CHECKING

import numpy as np

import culling.tree.batch as batch
from culling.core import growth, tiles
from culling.core.rows import RowPool, concat_ranges
from culling.core.structs import NodesFields, PoolFields, nodes_of
from culling.core.tiles import cover_row
from culling.runtime.jit import inline_kernel, kernel
from culling.runtime.prefetch import AHEAD, prefetch

if TYPE_CHECKING:
    from culling.tree.nodes import NodeTable

__all__ = ["BlockPool", "CAPACITIES", "CLASSES", "CLASSES_PER_OCTAVE", "GARBAGE_SHARE", "GROWING_ROOM_SHIFT", "MIN_BLOCK", "POOL_GROWTH", "REFRESH_SHARE", "SHRINK_RATIO", "SPARE_LIMIT",
           "SPATIAL_ORDER_BITS", "block_capacities", "class_capacity", "class_of", "free_link", "push_free", "release",
           "release_dead", "spare_room"]

#: Smallest block: one row.  In a sparse world most nodes hold one or two members (a swarm of
#: creatures about their own size apart: 1.1 a node), and a block of 4 left three rows in four
#: empty: each member on a cache line of its own, a pool 2.4 times longer after moves, every
#: pass over it (the pairs' copy, the settle of ``update_many``) slower.  A node that grows
#: moves to a block of the next size class that holds it, at least 8/7 as large: amortised O(1)
#: (at most 8) moves per member.
MIN_BLOCK = 1

#: Size classes of block capacity in each octave: blocks of 1, 2, .. ``CLASSES_PER_OCTAVE`` rows,
#: then ``CLASSES_PER_OCTAVE`` capacities evenly spaced in each octave above (with 4: 5, 6, 7, 8,
#: 10, 12, 14, 16, 20, ...).  Powers of two (1 a class) left a block a third empty on average: the
#: 1M forest's 5,462 nodes (183 members each on average) held 1.63 rows an object in their blocks;
#: in classes of 2 an octave 1.25, of 4 an octave 1.12 (see docs/PERFORMANCE.md).
CLASSES_PER_OCTAVE = 4


@inline_kernel
def class_capacity(size_class: int) -> int:
    """The rows of a block of ``size_class`` (0, 1, ...): ``size_class + 1`` up to ``CLASSES_PER_OCTAVE``, then
    ``CLASSES_PER_OCTAVE`` steps an octave, each octave's twice the last's.

    >>> [inspect.unwrap(class_capacity)(c) for c in range(12)]
    [1, 2, 3, 4, 5, 6, 7, 8, 10, 12, 14, 16]
    """
    if size_class < CLASSES_PER_OCTAVE:
        return size_class + 1
    octave = size_class // CLASSES_PER_OCTAVE - 1
    return (CLASSES_PER_OCTAVE + 1 + size_class % CLASSES_PER_OCTAVE) << octave


@inline_kernel
def class_of(rows: int) -> int:
    """The smallest size class whose blocks hold ``rows`` rows (``rows >= 1``), by walking up the classes (a
    node of a thousand members is 37 steps up with 4 an octave; only a node that outgrows its block asks).
    """
    size_class = 0
    while class_capacity(size_class) < rows:
        size_class += 1
    return size_class

#: The pool's arrays grow by this factor when full, and a compaction leaves this much room.  The 1M
#: forest after three frames of moves (its first moves grow the pool of a fresh build): 98 B an object
#: at 1.5, 84.5 B at 1.25 (against 71 B built); a world streamed in copies its rows a little more
#: often (see docs/PERFORMANCE.md, "Blocks in finer size classes").
POOL_GROWTH = 1.25


#: A pool longer than this many rows per stored object (plus one initial
#: pool) is compacted after removals.  A compacted pool holds fewer than 2 rows
#: per object (blocks of the size class their members need, under 1.25 times their
#: count, times the 1.25 of ``POOL_GROWTH``), so at least five objects in six
#: must go before the next compaction: amortised O(1) per removal.
SHRINK_RATIO = 12

#: :meth:`BlockPool.make_room` compacts a full pool instead of growing it when released blocks hold this
#: share of the rows in use or more.  A world streamed in by batches grows every node again and again,
#: and each outgrown block waits for a node growing into its size class: the 1M forest streamed in by
#: 10k objects held 2.6 rows an object in released blocks (4 size classes an octave), against 1.1 in use.
GARBAGE_SHARE = 0.25

#: A compaction inside a batch (:meth:`BlockPool.make_room`) gives the blocks of the batch's nodes,
#: growing ones, room for ``2**-GROWING_ROOM_SHIFT`` more members than they will hold, so the next
#: batches fill them instead of moving them again (each move leaves a released block, and released
#: blocks bring the next compaction).  The 1M forest streamed in by 10k / 1k objects, CPU seconds and
#: bytes an object: none 0.74 s, 96.7 B / 0.90 s, 101 B; an eighth 0.54 s, 94.8 B / 0.71 s, 99.6 B; a
#: quarter 0.44 s, 89.3 B / 0.70 s, 91.8 B; a half 0.37 s, 96.8 B / 0.64 s, 102 B (powers of two,
#: before: 0.31 s, 162 B / 0.42 s, 195 B).
GROWING_ROOM_SHIFT = 2

#: Rows of a fresh pool.
INITIAL_ROWS = 64

#: Most bits of the Morton code :meth:`BlockPool.spatial_order` sorts a compaction's blocks by: a
#: counting sort over 2**16 codes (512 kB of counts).  For the 18k nodes of 100k entities the order
#: (the blocks' first centres gathered, coded, sorted) adds 1.25 ms to a 7.2 ms compaction.
SPATIAL_ORDER_BITS = 16

#: Rows of tiles re-summarised (:func:`culling.core.tiles.refresh`) per object a batch of moves
#: writes: each ``update_many`` of ``n`` objects re-summarises about ``n * REFRESH_SHARE`` rows'
#: tiles, round robin, so every tile is recomputed from its live rows at least once every
#: ``top / (n * REFRESH_SHARE)`` batches and a summary holds at most the places its rows held since.
#: On the interest tick's world (100k entities, 10% moving a Gaussian step of 1.5 a tick, 10k
#: viewers), rows the member test reads after 1,000 ticks: 4.48M with summaries that only grew,
#: 4.29M / 4.28M / 4.27M at 0.25 / 0.5 / 1, 4.26M with every summary recomputed.  The rest of the
#: drift from 3.83M at tick 0 is the layout: tiles spanning the blocks of nodes far apart (every
#: node's rows re-sorted along a Morton curve: 4.22M; the blocks packed along one: 3.81M).  The
#: re-summary reads about 5 ns a row; on the 100k moving swarm 0.5 cost update_many 4.7% (median of
#: five alternated runs, 0.3 to 7.8%: more than its reads, the cache it takes from the next frame's
#: settle); 0.25 cost +0.2% (median of five, -3.1 to +3.1%), for 0.2% more rows tested than 0.5.
REFRESH_SHARE = 0.25


#: Every class's capacity, ascending, up to the first of ``2**62`` rows or more: int64 (CLASSES,).  Made by
#: the helper's Python function (a call of the helper itself would compile it, at ``import culling``).
CAPACITIES = np.array(list(itertools.takewhile(lambda rows: rows < 1 << 62, map(inspect.unwrap(class_capacity),
                                                                              itertools.count()))) + [1 << 62],
                      dtype=np.int64)

#: Size classes of blocks: a block of ``class_capacity(c)`` rows is on free list ``c``.
CLASSES = CAPACITIES.shape[0]


def block_capacities(counts: np.ndarray) -> np.ndarray:
    """The capacity of the smallest size class (at least ``MIN_BLOCK``) that fits each count, int64 (k,); vectorised."""
    capacities: np.ndarray = CAPACITIES[np.searchsorted(CAPACITIES, np.maximum(np.asarray(counts, dtype=np.int64), MIN_BLOCK))]
    return capacities

#: The most entries of :attr:`BlockPool.spare`, the stack of released one-row blocks (8 bytes each).
SPARE_LIMIT = 1 << 16


def spare_room(rows: int) -> int:
    """Entries of the spare stack of a pool of ``rows`` rows: a quarter of them, at most :data:`SPARE_LIMIT`."""
    return min(SPARE_LIMIT, rows // 4)


@inline_kernel
def free_link(link: int) -> int:
    """A free block's link, as its first row's handle slot holds it, and back (the map is its own
    inverse): ``-2 - next`` for the next free block of its class starting at row ``next``, so the
    end of a list (-1) reads as -1, and every link as a row not in use (a negative handle).

    >>> free_link(free_link(12)), free_link(-1), free_link(12) < 0
    (12, -1, True)
    """
    return -2 - link


class BlockPool(RowPool):
    """:class:`~culling.core.rows.RowPool` rows (handles -1 where unused) in blocks of size classes.

    Attributes
    ----------
    handles : ndarray, shape (rows,), int64
    columns : ndarray, shape (width, rows), float64
        The centre's axes, the radius, the squared reach.
    tile_box : ndarray, shape (2 * (width - 2) + 1, tiles), float32
        Every tile's summary (:mod:`culling.core.tiles`): whoever writes a row's
        centre or radius covers it (:func:`culling.core.tiles.cover`).
    refresh_tile, refresh_credit : int; float
        The next tile :meth:`refresh` re-summarises, and the rows it owes short of a whole tile.
    heads : ndarray, shape (CLASSES,), int64
        The most recently released free block of each size class, -1 for none; the next one of its
        class is named by its first row's handle (:func:`free_link`).
    spare, spare_count : ndarray, shape (spare_room(rows),), int64; int
        Released one-row blocks not on a list: ``spare[:spare_count]``, taken last first.  A batch's
        blocks go here while there is room (:func:`release`), and :func:`_make_room` takes one-row
        blocks from here first: consecutive reads, where a list is a chain of cache misses (the
        100k moving swarm: ``make_room`` 1.04 -> 0.46 ms a frame).
    """

    def __init__(self, width: int, rows: int = INITIAL_ROWS):
        super().__init__(width, rows, fill=-1)
        self.tile_box = tiles.empty_summaries(width - 2, tiles.tiles_for(rows))
        self.heads = np.full(CLASSES, -1, dtype=np.int64)
        self.spare = np.empty(spare_room(rows), dtype=np.int64)
        self.spare_count = 0
        self.refresh_tile = 0
        self.refresh_credit = 0.0

    def reserve(self, rows: int) -> None:
        """Make room for ``rows`` more rows above ``top`` (amortised O(1) per row)."""
        needed = self.top + rows
        if needed <= self.rows:
            return
        capacity = max(needed, int(self.rows * POOL_GROWTH))
        handles = growth.allocate((capacity,), np.int64, -1)
        columns = growth.allocate((self.width, capacity), np.float64, 0.0)
        box = tiles.empty_summaries(self.width - 2, tiles.tiles_for(capacity))
        spare = np.empty(spare_room(capacity), dtype=np.int64)
        # Every array allocated: commit (a MemoryError above leaves the pool as it was).
        handles[: self.top] = self.handles[: self.top]  # the free blocks' links with them
        columns[:, : self.top] = self.columns[:, : self.top]
        box[:, : self.tile_box.shape[1]] = self.tile_box
        spare[: self.spare_count] = self.spare[: self.spare_count]  # never shorter: rows only grow here
        self.handles, self.columns, self.tile_box, self.spare = handles, columns, box, spare

    def wasteful(self, objects: int) -> bool:
        """Whether the pool is far longer than ``objects`` stored objects need (compaction pays)."""
        return self.rows > SHRINK_RATIO * objects + INITIAL_ROWS

    def compact(self, starts: np.ndarray, counts: np.ndarray, wanted: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
        """Copy the live blocks' members into fresh, packed arrays; returns their new starts and capacities.

        ``starts`` and ``counts`` (int64 (k,)) describe the live blocks; each
        gets a block of ``block_capacities(wanted)`` rows (``wanted``: the
        members it will hold, default ``counts``), in the order given, and the
        pool is sized ``POOL_GROWTH`` times their total.  Free blocks are
        forgotten.  O(rows in use), vectorised.
        """
        counts = np.asarray(counts, dtype=np.int64)
        capacities = block_capacities(counts if wanted is None else wanted)
        new_starts = np.cumsum(capacities) - capacities
        total = int(capacities.sum())
        length = max(INITIAL_ROWS, int(total * POOL_GROWTH))
        box = tiles.empty_summaries(self.width - 2, tiles.tiles_for(length))  # first: nothing changes on a MemoryError
        spare = np.empty(spare_room(length), dtype=np.int64)
        self.repacked(starts, counts, new_starts, length)  # allocates, then commits
        tiles.summarise(self.columns, new_starts, counts, box)
        self.tile_box = box
        self.heads[:] = -1
        self.spare, self.spare_count = spare, 0
        self.top = total
        return new_starts, capacities

    def refresh(self, written: int) -> None:
        """After a batch that wrote ``written`` rows in place or moved them: re-summarise the next
        ``written * REFRESH_SHARE`` rows' tiles from their live rows, round robin over the pool
        (:func:`culling.core.tiles.refresh`), so that summaries grown by moves shrink back.
        Whole tiles only: the rest is carried to the next batch.  O(written), sequential reads."""
        self.refresh_credit += written * REFRESH_SHARE
        count = int(self.refresh_credit) >> tiles.TILE_SHIFT
        if count:
            self.refresh_credit -= count << tiles.TILE_SHIFT
            self.refresh_tile = tiles.refresh(self.handles, self.columns, self.top, self.refresh_tile, count,
                                              self.tile_box)

    def cover(self, first: int, last: int) -> None:
        """Grow the tile summaries to include rows ``first .. last - 1``, just written."""
        tiles.cover(self.columns, first, last, self.tile_box)

    def spatial_order(self, starts: np.ndarray) -> np.ndarray:
        """An order of the blocks starting at ``starts`` along a Morton curve through their first
        members' centres (:func:`culling.tree.batch.morton_order`, about a bit per block): int64 (k,).

        A tile's rows can belong to two or three nodes' blocks, and its box spans them all: packed in
        node order, neighbouring blocks are anywhere in the world, and the member test of either node
        reads the other's rows too.  Along the curve neighbouring blocks are neighbours, as
        ``insert_many`` lays them.  On the interest tick's world after 1,000 ticks of moves
        (``benchmarks/interest_ticks.py``'s motion, 10k viewers), rows the member test reads: 4.28M
        compacted in node order, 3.81M in this order (3.83M on the first tick).  O(k + 2**bits).
        """
        if starts.shape[0] < 2:
            return np.arange(starts.shape[0], dtype=np.int64)
        first = np.ascontiguousarray(self.columns[: self.width - 2, starts].T)
        order: np.ndarray = batch.morton_order(first, max(batch.LAYOUT_BITS, min(int(starts.shape[0]).bit_length(),
                                                                               SPATIAL_ORDER_BITS)))
        return order

    def release_dead(self, dead: np.ndarray, nodes: NodeTable) -> None:
        """Take back the blocks of the nodes :meth:`NodeTable.prune` just deleted (``dead``, int64), still
        in their rows, and zero their capacities (compiled: :func:`release_dead`); O(rows released)."""
        self.spare_count = release_dead(dead, nodes.start, nodes.capacity, self.handles,
                                        (self.heads, self.spare, self.spare_count))

    def release_many(self, starts: np.ndarray, capacities: np.ndarray) -> None:
        """Take many blocks back, in the order given: one-row blocks onto the spare stack while it has
        room, the others onto their class's list (compiled: :func:`release`); O(rows released)."""
        self.spare_count = release(starts, capacities, self.handles, (self.heads, self.spare, self.spare_count))

    def free_blocks(self) -> list[tuple[int, int]]:
        """``(start, capacity)`` of every released block, for the invariant checker."""
        blocks = [(start, 1) for start in self.spare[: self.spare_count].tolist()]
        for size_class in np.flatnonzero(self.heads >= 0).tolist():
            start = int(self.heads[size_class])
            while start >= 0:
                blocks.append((start, int(CAPACITIES[size_class])))
                start = -2 - int(self.handles[start])  # free_link, in Python
        return blocks

    def arrays(self) -> PoolFields:
        """The rows as the kernels take them: :class:`~culling.core.structs.Pool`'s fields, a plain
        tuple (references, no copy; valid until the pool next grows or is compacted)."""
        return self.handles, self.columns, self.tile_box

    def nbytes(self) -> int:
        return super().nbytes() + int(self.tile_box.nbytes + self.heads.nbytes + self.spare.nbytes)

    # ------------------------------------------------------------------
    # The node table's blocks: each node's start, capacity and count, each object's node and row

    def make_room(self, nodes: NodeTable, ids: np.ndarray, more: np.ndarray, obj_row: np.ndarray) -> None:
        """Give each of the nodes ``ids`` (distinct) room for ``more`` more members (one kernel,
        :func:`_make_room`).

        The nodes whose blocks are too small get blocks of the size class
        their members will need (released blocks of that size first, else
        cut at ``top``); their members move there and the old blocks are
        released.  When the pool is full the kernel stops and says how many
        rows the rest need at most: the pool is compacted, every block of the
        batch sized for its new members too, where released blocks hold
        ``GARBAGE_SHARE`` of the rows in use (:meth:`garbage_heavy`: a world
        streamed in, whose nodes only grow), else it grows once for them, and
        the kernel goes on.  A ``MemoryError`` there leaves every node with a
        block that holds its members (some moved already): nothing a caller
        sees has changed.  O(nodes + members moved).
        """
        done = 0
        while True:
            done, self.top, self.spare_count, need = _make_room(
                ids, more, done, obj_row, nodes.arrays(), self.arrays(), (self.heads, self.top, self.spare,
                                                                          self.spare_count))
            if done == ids.shape[0]:
                return
            if self.garbage_heavy(nodes):
                self.compact_nodes(nodes, obj_row, (ids, more))
            else:
                self.reserve(need)

    def garbage_heavy(self, nodes: NodeTable) -> bool:
        """Whether the released blocks hold ``GARBAGE_SHARE`` of the rows the nodes' blocks hold, or more.
        O(nodes): asked only when the pool is full."""
        in_use = int(nodes.capacity[: nodes.issued].sum())
        released = self.top - in_use
        return released > 0 and released >= GARBAGE_SHARE * in_use

    def compact_nodes(self, nodes: NodeTable, obj_row: np.ndarray,
                      room: tuple[np.ndarray, np.ndarray] | None = None) -> None:
        """Pack every node's members into a fresh pool (:meth:`compact`), moving their blocks and
        their objects' rows; the blocks in the order of :meth:`spatial_order`.  ``room = (ids, more)``:
        the blocks of nodes ``ids`` are sized for ``more`` more members each (:meth:`make_room`'s batch),
        and a quarter more again (:data:`GROWING_ROOM_SHIFT`).  O(objects + nodes)."""
        wanted = nodes.count[: nodes.issued].copy()
        if room is not None:
            ids, more = room
            wanted[ids] += more
            wanted[ids] += wanted[ids] >> GROWING_ROOM_SHIFT  # growing nodes: room to grow on
        blocks = np.flatnonzero((nodes.capacity[: nodes.issued] > 0) | (wanted > 0))
        empty = blocks[wanted[blocks] == 0]
        nodes.capacity[empty] = 0
        nodes.start[empty] = 0
        blocks = blocks[wanted[blocks] > 0]
        held = nodes.count[blocks] > 0  # the others are new nodes of room's batch, with no rows yet: after
        blocks = np.concatenate([blocks[held][self.spatial_order(nodes.start[blocks[held]])], blocks[~held]])
        counts = nodes.count[blocks]
        new_starts, capacities = self.compact(nodes.start[blocks], counts, wanted[blocks])
        rows = concat_ranges(new_starts, counts)
        obj_row[self.handles[rows]] = rows
        nodes.start[blocks] = new_starts
        nodes.capacity[blocks] = capacities


@inline_kernel
def push_free(start: int, capacity: int, handles: np.ndarray, heads: np.ndarray) -> None:
    """Free the block ``start`` of ``capacity`` rows: clear its handles and push it on its size
    class's free list (linked through the blocks' first rows)."""
    for row in range(start, start + capacity):
        handles[row] = -1
    size_class = class_of(capacity)
    handles[start] = free_link(heads[size_class])
    heads[size_class] = start


@inline_kernel
def _release_one(start: int, capacity: int, handles: np.ndarray, free: tuple[np.ndarray, np.ndarray, int]) -> int:
    """Release one block: clear its handles and push it on the spare stack (one row, while it has
    room) or its class's free list (``free = (heads, spare, spare_count)``).  Returns the new
    ``spare_count``."""
    heads, spare, spare_count = free
    if capacity == 1 and spare_count < spare.shape[0]:
        handles[start] = -1
        spare[spare_count] = start
        return spare_count + 1
    push_free(start, capacity, handles, heads)
    return spare_count


@kernel
def release(starts: np.ndarray, capacities: np.ndarray, handles: np.ndarray,
            free: tuple[np.ndarray, np.ndarray, int]) -> int:
    """:meth:`BlockPool.release_many`: each block released (:func:`_release_one`; ``free = (heads, spare,
    spare_count)``).  Returns the new ``spare_count``."""
    heads, spare, spare_count = free
    for b in range(starts.shape[0]):
        if b + AHEAD < starts.shape[0]:
            prefetch(handles, starts[b + AHEAD])
        spare_count = _release_one(starts[b], capacities[b], handles, (heads, spare, spare_count))
    return spare_count


@kernel
def release_dead(dead: np.ndarray, node_start: np.ndarray, node_capacity: np.ndarray, handles: np.ndarray,
                 free: tuple[np.ndarray, np.ndarray, int]) -> int:
    """:meth:`BlockPool.release_dead`: the block of each ``dead`` node that has one released
    (:func:`_release_one`), its capacity then 0 (:data:`culling.tree.nodes.DEAD_ROW`).  Returns the new
    ``spare_count``."""
    heads, spare, spare_count = free
    for i in range(dead.shape[0]):
        node = dead[i]
        if node_capacity[node] > 0:
            spare_count = _release_one(node_start[node], node_capacity[node], handles, (heads, spare, spare_count))
            node_capacity[node] = 0
    return spare_count


@kernel
def _make_room(ids: np.ndarray, more: np.ndarray, done: int, obj_row: np.ndarray, nodes_fields: NodesFields,
               pool_fields: PoolFields, free: tuple[np.ndarray, int, np.ndarray, int]) -> tuple[int, int, int, int]:
    """:meth:`BlockPool.make_room` of nodes ``ids[done:]``: returns ``(done, top, spare_count, need)``.

    Node ``ids[i]`` needs room for ``more[i]`` more members; when its block
    is too small it gets one of ``block_capacities(count + more)`` rows (``free
    = (heads, top, spare, spare_count)``: a one-row block from the spare
    stack, else the free list of that size, else at ``top``),
    its members move there (rows, tiles, ``obj_row``) and the old block is
    released.  Stops at the first node the pool has no room for: ``done`` is
    its index and ``need`` the rows the nodes from it on need at most.
    """
    nodes = nodes_of(nodes_fields)
    node_start, node_capacity, node_count = nodes.start, nodes.capacity, nodes.members
    pool_handles, columns, tile_box = pool_fields
    heads, top, spare, spare_count = free
    rows = pool_handles.shape[0]
    width = columns.shape[0]
    for i in range(done, ids.shape[0]):
        if i + AHEAD < ids.shape[0]:  # a later node's block (culling.runtime.prefetch)
            prefetch(node_count, ids[i + AHEAD])
            prefetch(node_capacity, ids[i + AHEAD])
            prefetch(node_start, ids[i + AHEAD])
        node = ids[i]
        count = node_count[node]
        needed = count + more[i]
        if needed <= node_capacity[node]:
            continue
        size_class = class_of(max(needed, MIN_BLOCK))
        capacity = class_capacity(size_class)
        start = heads[size_class]
        if capacity == 1 and spare_count > 0:
            spare_count -= 1
            start = spare[spare_count]
        elif start >= 0:
            heads[size_class] = free_link(pool_handles[start])
            pool_handles[start] = -1
            if heads[size_class] >= 0:  # the next block of this size: its link is the next pop's read
                prefetch(pool_handles, heads[size_class])
        elif top + capacity <= rows:
            start = top
            top += capacity
        else:  # full: what the rest needs at most, for one regrowth
            need = 0
            for j in range(i, ids.shape[0]):
                wanted = node_count[ids[j]] + more[j]
                if wanted > node_capacity[ids[j]]:
                    need += class_capacity(class_of(max(wanted, MIN_BLOCK)))
            return i, top, spare_count, need
        old, old_capacity = node_start[node], node_capacity[node]
        for k in range(count):
            h = pool_handles[old + k]
            pool_handles[start + k] = h
            for column in range(width):
                columns[column, start + k] = columns[column, old + k]
            obj_row[h] = start + k
            cover_row(columns, start + k, tile_box)
        if old_capacity > 0:
            push_free(old, old_capacity, pool_handles, heads)
        node_start[node] = start
        node_capacity[node] = capacity
    return ids.shape[0], top, spare_count, 0
