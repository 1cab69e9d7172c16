"""Contiguous storage for the members of every node.

Each node owns one block ``[start, start + capacity)`` of a shared pool of
rows; a row holds one object's handle and its sphere (centre and radius).
Keeping a node's members next to each other means a query gathers its
candidates, and the data for their exact test, from a few contiguous runs,
and batch mutations can address any member of any node with one NumPy index.

Blocks come in power-of-two capacities; a node that outgrows its block moves
to one twice as large, and released blocks are reused by their size class.
"""

from __future__ import annotations

import numpy as np

__all__ = ["BlockPool", "MIN_BLOCK", "POOL_GROWTH"]

#: Smallest block: a node with a handful of members wastes at most 3 rows.
MIN_BLOCK = 4

#: The pool's arrays grow by this factor when full.  1.5 rather than 2 keeps
#: the slack at 1M objects within the memory target (see docs/PERFORMANCE.md).
POOL_GROWTH = 1.5


def block_capacity(count: int) -> int:
    """The power-of-two capacity (at least ``MIN_BLOCK``) that fits ``count`` rows."""
    return max(MIN_BLOCK, 1 << max(0, int(count) - 1).bit_length())


class BlockPool:
    """Rows of ``handles`` (int64) and ``columns`` (float64, ``width`` of them).

    Object data is stored column-wise, one contiguous array per quantity
    (each axis of the centre, the radius, ...), so tests run on 1-D arrays.

    Attributes
    ----------
    handles : ndarray, shape (capacity,), int64
    columns : ndarray, shape (width, capacity), float64
    """

    def __init__(self, width: int, capacity: int = 64):
        self.width = width
        self.handles = np.full(capacity, -1, dtype=np.int64)
        self.columns = np.zeros((width, capacity), dtype=np.float64)
        self.top = 0  # rows at and above ``top`` have never been handed out
        self._free: dict[int, list[int]] = {}

    @property
    def capacity(self) -> int:
        return self.handles.shape[0]

    def reserve(self, rows: int) -> None:
        """Make room for ``rows`` more rows above ``top`` (amortised O(1) per row)."""
        needed = self.top + rows
        if needed <= self.capacity:
            return
        capacity = max(needed, int(self.capacity * POOL_GROWTH))
        handles = np.full(capacity, -1, dtype=np.int64)
        handles[: self.top] = self.handles[: self.top]
        columns = np.zeros((self.width, capacity), dtype=np.float64)
        columns[:, : self.top] = self.columns[:, : self.top]
        self.handles, self.columns = handles, columns

    def allocate(self, capacity: int) -> int:
        """Start of a free block of ``capacity`` rows (a power of two)."""
        free = self._free.get(capacity)
        if free:
            return free.pop()
        self.reserve(capacity)
        start = self.top
        self.top += capacity
        return start

    def release(self, start: int, capacity: int) -> None:
        """Give a block back for reuse by a block of the same capacity."""
        self.handles[start:start + capacity] = -1
        self._free.setdefault(capacity, []).append(start)

    def free_blocks(self) -> list[tuple[int, int]]:
        """``(start, capacity)`` of every released block, for the invariant checker."""
        return [(start, capacity) for capacity, starts in self._free.items() for start in starts]

    def nbytes(self) -> int:
        return self.handles.nbytes + self.columns.nbytes
