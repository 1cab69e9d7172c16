"""How the structures' arrays grow: by a constant factor, so appends are amortised O(1)."""

from __future__ import annotations

import numpy as np

__all__ = ["ARRAY_GROWTH", "allocate", "grown"]

#: Object and node arrays grow by this factor when full (amortised O(1) inserts).
ARRAY_GROWTH = 1.5


def allocate(shape: tuple[int, ...], dtype: type | np.dtype, fill: int | float) -> np.ndarray:
    """A new array for a structure's storage, filled with ``fill``.

    Every array a structure keeps (node table, pool, per-handle arrays,
    tile summaries) is allocated here, before the structure changes: a batch
    call allocates first and commits after, so a ``MemoryError`` leaves the
    structure as it was.  The tests fail each call of this function in turn
    to check that.
    """
    return np.full(shape, fill, dtype=dtype)


def grown(array: np.ndarray, length: int, fill: int | float) -> np.ndarray:
    """A copy of ``array`` with at least ``length`` rows, new rows set to ``fill``."""
    capacity = max(length, int(array.shape[0] * ARRAY_GROWTH) + 8)
    bigger = allocate((capacity,) + array.shape[1:], array.dtype, fill)
    bigger[: array.shape[0]] = array
    return bigger
