"""Member rows in blocks: the vocabulary the tree's and the grid's pools share.

Both structures keep each owner's members (a tree node's, a grid cell's) in
one contiguous block of rows of a shared pool: a row holds the member's
handle and, column by column, its payload (the centre's axes, the radius, the
squared reach), so a query reads its candidates from a few contiguous runs
and a batch mutation addresses any member with one NumPy index.  The two
differ in how they hand out blocks (:class:`culling.tree.pool.BlockPool`:
blocks of size classes, reused by class, moved by compiled kernels;
:class:`culling.grid.pool.CellPool`: blocks cut at the pool's end, the pool
repacked when full, batches planned in NumPy); what they share is here:
:meth:`RowPool.repacked` copies every live block into fresh, packed arrays.

>>> pool = RowPool(width=1, rows=8)
>>> pool.handles[:3] = [7, 8, 9]; pool.columns[0, :3] = [0.5, 1.5, 2.5]
>>> pool.repacked(np.array([0]), np.array([3]), np.array([2]), 6)
>>> pool.handles.tolist(), pool.columns[0].tolist()
([0, 0, 7, 8, 9, 0], [0.0, 0.0, 0.5, 1.5, 2.5, 0.0])
"""

from __future__ import annotations

import numpy as np

import culling.core.growth as growth

__all__ = ["RowPool", "concat_ranges"]


def concat_ranges(starts: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """``concatenate([arange(s, s + n) for s, n in zip(starts, lengths)])``, vectorised, int64.

    >>> concat_ranges(np.array([10, 3]), np.array([2, 3])).tolist()
    [10, 11, 3, 4, 5]
    """
    lengths = np.asarray(lengths, dtype=np.int64)
    total = int(lengths.sum())
    if total == 0:
        return np.empty(0, dtype=np.int64)
    shifts = np.repeat(np.asarray(starts, dtype=np.int64) - (np.cumsum(lengths) - lengths), lengths)
    result: np.ndarray = np.arange(total, dtype=np.int64) + shifts
    return result


class RowPool:
    """Rows of ``handles`` (int64) and ``columns`` (float64, ``width`` of them), handed out in blocks.

    Attributes
    ----------
    handles : ndarray, shape (rows,), int64
        The member of each row; rows outside a live block hold garbage (the tree's: -1).
    columns : ndarray, shape (width, rows), float64
        The members' payload, one contiguous array per quantity.
    top : int
        Rows at and above ``top`` have never been handed out (since the last repack).
    """

    def __init__(self, width: int, rows: int, fill: int = 0):
        self.width = width
        self.fill = fill
        self.handles = growth.allocate((rows,), np.int64, fill)
        self.columns = growth.allocate((width, rows), np.float64, 0.0)
        self.top = 0

    @property
    def rows(self) -> int:
        """Length of the pool, in rows."""
        return int(self.handles.shape[0])

    def nbytes(self) -> int:
        return int(self.handles.nbytes + self.columns.nbytes)

    def repacked(self, starts: np.ndarray, counts: np.ndarray, new_starts: np.ndarray, length: int) -> None:
        """Copy the live blocks (rows ``starts[i] ..`` of ``counts[i]`` members) to ``new_starts`` in
        fresh arrays of ``length`` rows, which replace the pool's.  O(members).

        Both arrays are allocated (:func:`culling.core.growth.allocate`) before
        anything changes: a ``MemoryError`` leaves the pool as it was.
        """
        source, target = concat_ranges(starts, counts), concat_ranges(new_starts, counts)
        handles = growth.allocate((length,), np.int64, self.fill)
        columns = growth.allocate((self.width, length), np.float64, 0.0)
        handles[target] = self.handles[source]
        for new, old in zip(columns, self.columns):
            new[target] = old[source]
        self.handles, self.columns = handles, columns
