"""How the structures' arrays grow: by a constant factor, so appends are amortised O(1)."""

from __future__ import annotations

import numpy as np

__all__ = ["ARRAY_GROWTH", "grown"]

#: Object and node arrays grow by this factor when full (amortised O(1) inserts).
ARRAY_GROWTH = 1.5


def grown(array: np.ndarray, length: int, fill: int | float) -> np.ndarray:
    """A copy of ``array`` with at least ``length`` rows, new rows set to ``fill``."""
    capacity = max(length, int(array.shape[0] * ARRAY_GROWTH) + 8)
    bigger = np.full((capacity,) + array.shape[1:], fill, dtype=array.dtype)
    bigger[: array.shape[0]] = array
    return bigger
