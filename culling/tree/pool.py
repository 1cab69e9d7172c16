"""Contiguous storage for the members of every node.

Each node owns one block ``[start, start + capacity)`` of a shared pool of
rows; a row holds one object's handle and its sphere (centre and radius).
Keeping a node's members next to each other means a query gathers its
candidates, and the data for their exact test, from a few contiguous runs,
and batch mutations can address any member of any node with one NumPy index.

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

import numpy as np

from culling.core import growth, tiles
from culling.core.structs import PoolFields

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


class BlockPool:
    """Rows of ``handles`` (int64) and ``columns`` (float64, ``width`` of them).

    Object data is stored column-wise, one contiguous array per quantity
    (each axis of the centre, the radius, ...), so tests run on 1-D arrays.

    Attributes
    ----------
    handles : ndarray, shape (capacity,), int64
    columns : ndarray, shape (width, capacity), float64
        The centre's ``width - 2`` axes, the radius, the squared reach.
    tile_box : ndarray, shape (tiles, 2 * (width - 2) + 1), float64
        Every tile's summary (:mod:`culling.core.tiles`): whoever writes a row's
        centre or radius covers it (:func:`culling.core.tiles.cover`).
    """

    def __init__(self, width: int, capacity: int = INITIAL_ROWS):
        self.width = width
        self.handles = growth.allocate((capacity,), np.int64, -1)
        self.columns = growth.allocate((width, capacity), np.float64, 0.0)
        self.tile_box = tiles.empty_summaries(width - 2, tiles.tiles_for(capacity))
        self.top = 0  # rows at and above ``top`` have never been handed out
        self._free: dict[int, list[int]] = {}

    @property
    def capacity(self) -> int:
        return int(self.handles.shape[0])

    def reserve(self, rows: int) -> None:
        """Make room for ``rows`` more rows above ``top`` (amortised O(1) per row)."""
        needed = self.top + rows
        if needed <= self.capacity:
            return
        capacity = max(needed, int(self.capacity * POOL_GROWTH))
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
        return self.capacity > SHRINK_RATIO * objects + INITIAL_ROWS

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
        rows = int(counts.sum())
        shifts = np.repeat(new_starts - (np.cumsum(counts) - counts), counts)
        dst = np.arange(rows, dtype=np.int64) + shifts
        src = dst - np.repeat(new_starts - np.asarray(starts, dtype=np.int64), counts)
        handles = growth.allocate((length,), np.int64, -1)
        columns = growth.allocate((self.width, length), np.float64, 0.0)
        box = tiles.empty_summaries(self.width - 2, tiles.tiles_for(length))
        handles[dst] = self.handles[src]
        for new, old in zip(columns, self.columns):
            new[dst] = old[src]
        tiles.summarise(columns, new_starts, counts, box)
        self.handles, self.columns, self.tile_box = handles, columns, box
        self.top = total
        self._free = {}
        return new_starts, capacities

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
        return self.handles.nbytes + self.columns.nbytes + self.tile_box.nbytes


def _bit_length(values: np.ndarray) -> np.ndarray:
    """``int.bit_length`` of each non-negative int64, vectorised (exact below 2**53)."""
    _, exponent = np.frexp(values.astype(np.float64))
    return exponent.astype(np.int64)
