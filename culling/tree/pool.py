"""Contiguous storage for the members of every node: the tree's allocation policy over member rows.

Each node owns one block ``[start, start + capacity)`` of a shared pool of
rows (:class:`culling.core.rows.RowPool`, the vocabulary the grid's pool
shares); a row holds one object's handle and its sphere (centre and radius).
The node table keeps each node's block (``start``, ``capacity``, ``count``)
and the tree each object's node and row; the pool moves them (a block that
outgrows itself, many removals, a compaction) and updates both.

Blocks come in power-of-two capacities; a node that outgrows its block moves
to one twice as large, and released blocks are reused by their size class.
Released blocks of other sizes cannot serve a request, so after many removals
the owner compacts the pool (:meth:`BlockPool.compact`): every live block,
cut to the power of two its members need, is copied into fresh arrays and the
garbage is given back.  The owner triggers that when the pool holds more than
``SHRINK_RATIO`` times the rows its members need, which keeps the copy
amortised O(1) per removal.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from culling.core import growth, tiles
from culling.core.rows import RowPool, concat_ranges
from culling.core.structs import PoolFields

if TYPE_CHECKING:
    from culling.tree.nodes import NodeTable

__all__ = ["BlockPool", "MIN_BLOCK", "POOL_GROWTH", "SHRINK_RATIO"]

#: Smallest block: a node with a handful of members wastes at most 3 rows.
MIN_BLOCK = 4

#: The pool's arrays grow by this factor when full.  1.5 rather than 2 keeps
#: the slack at 1M objects within the memory target (see docs/PERFORMANCE.md).
POOL_GROWTH = 1.5


#: A pool longer than this many rows per stored object (plus one initial
#: pool) is compacted after removals.  A compacted pool holds at most 6 rows
#: per object (blocks of at least ``MIN_BLOCK`` = 4 rows, times the 1.5 of
#: ``POOL_GROWTH``), so at least half the objects must go before the next
#: compaction: amortised O(1) per removal.
SHRINK_RATIO = 12

#: Rows of a fresh pool.
INITIAL_ROWS = 64


def block_capacity(count: int) -> int:
    """The power-of-two capacity (at least ``MIN_BLOCK``) that fits ``count`` rows."""
    return max(MIN_BLOCK, 1 << max(0, int(count) - 1).bit_length())


def block_capacities(counts: np.ndarray) -> np.ndarray:
    """:func:`block_capacity` of each count, int64 (k,); vectorised."""
    capacities: np.ndarray = np.maximum(MIN_BLOCK, np.left_shift(1, _bit_length(np.maximum(np.asarray(counts, dtype=np.int64) - 1, 0))))
    return capacities


class BlockPool(RowPool):
    """:class:`~culling.core.rows.RowPool` rows (handles -1 where unused) in power-of-two blocks.

    Attributes
    ----------
    handles : ndarray, shape (rows,), int64
    columns : ndarray, shape (width, rows), float64
        The centre's ``width - 2`` axes, the radius, the squared reach.
    tile_box : ndarray, shape (tiles, 2 * (width - 2) + 1), float64
        Every tile's summary (:mod:`culling.core.tiles`): whoever writes a row's
        centre or radius covers it (:func:`culling.core.tiles.cover`).
    """

    def __init__(self, width: int, rows: int = INITIAL_ROWS):
        super().__init__(width, rows, fill=-1)
        self.tile_box = tiles.empty_summaries(width - 2, tiles.tiles_for(rows))
        self._free: dict[int, list[int]] = {}

    def reserve(self, rows: int) -> None:
        """Make room for ``rows`` more rows above ``top`` (amortised O(1) per row)."""
        needed = self.top + rows
        if needed <= self.rows:
            return
        capacity = max(needed, int(self.rows * POOL_GROWTH))
        handles = growth.allocate((capacity,), np.int64, -1)
        columns = growth.allocate((self.width, capacity), np.float64, 0.0)
        box = tiles.empty_summaries(self.width - 2, tiles.tiles_for(capacity))
        # Every array allocated: commit (a MemoryError above leaves the pool as it was).
        handles[: self.top] = self.handles[: self.top]
        columns[:, : self.top] = self.columns[:, : self.top]
        box[: self.tile_box.shape[0]] = self.tile_box
        self.handles, self.columns, self.tile_box = handles, columns, box

    def allocate(self, capacity: int) -> int:
        """Start of a free block of ``capacity`` rows (a power of two)."""
        free = self._free.get(capacity)
        if free:
            return free.pop()
        self.reserve(capacity)
        start = self.top
        self.top += capacity
        return start

    def allocate_many(self, capacities: np.ndarray) -> np.ndarray:
        """Starts of free blocks of ``capacities`` (int64 (k,), powers of two), in the order given.

        Released blocks of each size serve first (the most recently released
        first, as :meth:`allocate`); the rest are cut from one regrowth of
        the pool, consecutively.  O(k) vectorised, plus O(1) per size class.
        """
        starts = np.empty(capacities.shape[0], dtype=np.int64)
        fresh = np.ones(capacities.shape[0], dtype=bool)
        reused: list[tuple[np.ndarray, list[int]]] = []
        for capacity in np.unique(capacities).tolist() if self._free else ():
            free = self._free.get(capacity)
            if free:
                wanted = np.flatnonzero(capacities == capacity)[: len(free)]
                reused.append((wanted, free))
                fresh[wanted] = False
        fresh_capacities = capacities[fresh]
        total = int(fresh_capacities.sum())
        self.reserve(total)  # first: a MemoryError here leaves the pool as it was
        for wanted, free in reused:
            starts[wanted] = free[len(free) - wanted.size:][::-1]
            del free[len(free) - wanted.size:]
        starts[fresh] = self.top + np.cumsum(fresh_capacities) - fresh_capacities
        self.top += total
        return starts

    def wasteful(self, objects: int) -> bool:
        """Whether the pool is far longer than ``objects`` stored objects need (compaction pays)."""
        return self.rows > SHRINK_RATIO * objects + INITIAL_ROWS

    def compact(self, starts: np.ndarray, counts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Copy the live blocks' members into fresh, packed arrays; returns their new starts and capacities.

        ``starts`` and ``counts`` (int64 (k,)) describe the live blocks; each
        gets a block of ``block_capacity(count)`` rows, in the order given,
        and the pool is sized ``POOL_GROWTH`` times their total.  Free blocks
        are forgotten.  O(rows in use), vectorised.
        """
        counts = np.asarray(counts, dtype=np.int64)
        capacities = block_capacities(counts)
        new_starts = np.cumsum(capacities) - capacities
        total = int(capacities.sum())
        length = max(INITIAL_ROWS, int(total * POOL_GROWTH))
        box = tiles.empty_summaries(self.width - 2, tiles.tiles_for(length))  # first: nothing changes on a MemoryError
        self.repacked(starts, counts, new_starts, length)  # allocates, then commits
        tiles.summarise(self.columns, new_starts, counts, box)
        self.tile_box = box
        self.top = total
        self._free = {}
        return new_starts, capacities

    def moved(self, rows: np.ndarray) -> None:
        """Rows just written by a move: their tiles cover them."""
        self.cover_rows(rows)

    def cover(self, first: int, last: int) -> None:
        """Grow the tile summaries to include rows ``first .. last - 1``, just written."""
        tiles.cover(self.columns, first, last, self.tile_box)

    def cover_rows(self, rows: np.ndarray) -> None:
        """Grow the tile summaries to include the scattered ``rows`` (int64), just written."""
        tiles.cover_rows(self.columns, rows, self.tile_box)

    def release(self, start: int, capacity: int) -> None:
        """Give a block back for reuse by a block of the same capacity."""
        self.handles[start:start + capacity] = -1
        self._free.setdefault(capacity, []).append(start)

    def release_many(self, starts: np.ndarray, capacities: np.ndarray) -> None:
        """:meth:`release` of many blocks, in the order given; O(rows released) vectorised."""
        for capacity in np.unique(capacities).tolist():
            mine = starts[capacities == capacity]
            self.handles[(mine[:, None] + np.arange(capacity)).ravel()] = -1
            self._free.setdefault(capacity, []).extend(mine.tolist())

    def free_blocks(self) -> list[tuple[int, int]]:
        """``(start, capacity)`` of every released block, for the invariant checker."""
        return [(start, capacity) for capacity, starts in self._free.items() for start in starts]

    def arrays(self) -> PoolFields:
        """The rows as the kernels take them: :class:`~culling.core.structs.Pool`'s fields, a plain
        tuple (references, no copy; valid until the pool next grows or is compacted)."""
        return self.handles, self.columns, self.tile_box

    def nbytes(self) -> int:
        return super().nbytes() + int(self.tile_box.nbytes)

    # ------------------------------------------------------------------
    # The node table's blocks: each node's start, capacity and count, each object's node and row

    def move_block(self, nodes: NodeTable, node: int, capacity: int, obj_row: np.ndarray) -> None:
        """Give ``node`` a block of ``capacity`` rows, moving its members there; O(members)."""
        start = self.allocate(capacity)
        old_start, old_cap, count = int(nodes.start[node]), int(nodes.capacity[node]), int(nodes.count[node])
        if count:
            self.handles[start:start + count] = self.handles[old_start:old_start + count]
            self.columns[:, start:start + count] = self.columns[:, old_start:old_start + count]
            self.cover(start, start + count)
            obj_row[self.handles[start:start + count]] = np.arange(start, start + count)
        if old_cap:
            self.release(old_start, old_cap)
        nodes.start[node] = start
        nodes.capacity[node] = capacity

    def make_room(self, nodes: NodeTable, ids: np.ndarray, more: np.ndarray, obj_row: np.ndarray) -> None:
        """Give each of the nodes ``ids`` (distinct) room for ``more`` more members: :meth:`move_block`,
        vectorised.

        The nodes whose blocks are too small get blocks of the power of two
        their members will need (:meth:`allocate_many`, one regrowth at
        most); their members move there and the old blocks are released.
        O(nodes + members moved).
        """
        needed = nodes.count[ids] + more
        grow = np.flatnonzero(needed > nodes.capacity[ids])
        if not grow.size:
            return
        ids = ids[grow]
        capacities = block_capacities(needed[grow])
        starts = self.allocate_many(capacities)
        old_starts, old_capacities, counts = nodes.start[ids], nodes.capacity[ids], nodes.count[ids]
        if counts.any():
            target = concat_ranges(starts, counts)
            self.move_rows(concat_ranges(old_starts, counts), target)
            obj_row[self.handles[target]] = target
        held = old_capacities > 0
        if held.any():
            self.release_many(old_starts[held], old_capacities[held])
        nodes.start[ids] = starts
        nodes.capacity[ids] = capacities

    def compact_nodes(self, nodes: NodeTable, obj_node: np.ndarray, obj_row: np.ndarray) -> None:
        """Pack every node's members into a fresh pool (:meth:`compact`), moving their blocks and
        their objects' rows; O(objects + nodes)."""
        blocks = np.flatnonzero(nodes.capacity[: nodes.issued] > 0)
        empty = blocks[nodes.count[blocks] == 0]
        nodes.capacity[empty] = 0
        nodes.start[empty] = 0
        blocks = blocks[nodes.count[blocks] > 0]
        old_starts = nodes.start[blocks]
        new_starts, capacities = self.compact(old_starts, nodes.count[blocks])
        shift = np.zeros(nodes.issued, dtype=np.int64)
        shift[blocks] = new_starts - old_starts
        live = np.flatnonzero(obj_node >= 0)
        obj_row[live] += shift[obj_node[live]]
        nodes.start[blocks] = new_starts
        nodes.capacity[blocks] = capacities


def _bit_length(values: np.ndarray) -> np.ndarray:
    """``int.bit_length`` of each non-negative int64, vectorised (exact below 2**53)."""
    _, exponent = np.frexp(values.astype(np.float64))
    return exponent.astype(np.int64)
