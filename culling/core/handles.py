"""Handles: the integer names a structure gives its objects, and the free ones it hands out again.

The tree and the dense grid both name objects ``0, 1, 2, ...`` in the order
they are inserted and hand a removed object's handle out again (the most
recently freed first), so the per-handle arrays stay as long as the most
objects ever held, not the most inserts.  :class:`HandleStack` keeps that
bookkeeping once for both: how many handles were ever issued, and the stack
of free ones.
"""

from __future__ import annotations

import numpy as np

import culling.core.growth as growth

__all__ = ["HandleStack"]


class HandleStack:
    """Issued and free handles.

    Both halves of a change are split so that a ``MemoryError`` changes
    nothing: handing out is :meth:`peek` (the handles, before anything
    changes) then :meth:`take` (the commit, no allocation); freeing is
    :meth:`make_room` (before the removal) then :meth:`release` (no
    allocation).  The stack grows only as handles are freed, so a structure
    that never removes keeps no stack at all.
    """

    def __init__(self) -> None:
        self.issued = 0  # handles 0 .. issued-1 have been handed out at some time
        self._free = growth.allocate((0,), np.int64, 0)
        self._n_free = 0

    def __len__(self) -> int:
        """The number of free handles."""
        return self._n_free

    @property
    def free(self) -> np.ndarray:
        """The free handles, most recently freed last (a view)."""
        return self._free[: self._n_free]

    @property
    def nbytes(self) -> int:
        """Bytes held by the free stack."""
        return self._free.nbytes

    def end_after(self, n: int) -> int:
        """``issued`` after handing out ``n`` more: the per-handle arrays' length needed for them."""
        return self.issued + n - min(n, self._n_free)

    def peek(self, n: int) -> np.ndarray:
        """The ``n`` handles the next :meth:`take` hands out (the most recently freed first, then
        new ones), int64; nothing is handed out yet."""
        reused = min(n, self._n_free)
        taken = self._free[self._n_free - reused:self._n_free][::-1]
        return np.concatenate([taken, np.arange(self.issued, self.issued + n - reused, dtype=np.int64)])

    def take(self, n: int) -> None:
        """Hand out the handles :meth:`peek` showed (no allocation)."""
        reused = min(n, self._n_free)
        self._n_free -= reused
        self.issued += n - reused

    def make_room(self, k: int) -> None:
        """Room on the stack for ``k`` more free handles (amortised O(1) per handle)."""
        if self._n_free + k > self._free.shape[0]:
            self._free = growth.grown(self._free, self._n_free + k, 0)

    def release(self, handles: np.ndarray | int) -> None:
        """Put removed handles on the stack (no allocation: :meth:`make_room` made the room)."""
        if type(handles) is int:  # a single remove: no NumPy call (np.size costs a microsecond)
            self._free[self._n_free] = handles
            self._n_free += 1
            return
        k = np.size(handles)
        self._free[self._n_free:self._n_free + k] = handles
        self._n_free += k

    def trim(self, end: int) -> None:
        """Forget the handles from ``end`` on (every one of them is free): the per-handle arrays
        were cut."""
        keep = self.free[self.free < end]
        free = growth.allocate((keep.size,), np.int64, 0)
        free[: keep.size] = keep
        self._free, self._n_free, self.issued = free, keep.size, end

    def check(self, alive: np.ndarray) -> None:
        """Assert the bookkeeping against ``alive`` (bool, one per issued handle); for tests."""
        free = self.free
        assert alive.shape[0] == self.issued, "alive flags for every issued handle"
        assert np.unique(free).size == free.size, "handle freed twice"
        assert ((free >= 0) & (free < self.issued)).all(), "a free handle never issued"
        assert not alive[free].any(), "a live handle is on the free list"
        assert int(alive.sum()) + free.size == self.issued, "handles lost"
