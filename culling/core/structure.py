"""What the tree and the dense grid share as Python objects: the constructor's read-only choices,
a readers-writer lock, and copies that never share arrays.

Both structures keep their arrays private and serialise mutations with a
:class:`~culling.core.locks.ReadWriteLock`; this base class holds the parts
of that which do not depend on how objects are stored.
"""

from __future__ import annotations

import copy
from typing import Self

import numpy as np
from numpy.typing import ArrayLike

from culling.core.locks import ReadWriteLock, state_without_lock
from culling.core.validation import check_constructor

__all__ = ["Structure"]


class Structure:
    """Base of :class:`culling.ViewDistanceTree` and :class:`culling.DenseViewDistanceGrid`.

    ``size``, ``origin``, ``dim`` and ``shape`` are read-only: changing one
    would misplace every stored object.  A copy (``copy.copy``,
    ``copy.deepcopy``, pickle) is independent and gets a lock of its own.
    """

    _count: int

    def __init__(self, size: float, origin: ArrayLike | None, dim: int, shape: str) -> None:
        self._size, self._origin, self._dim, self._shape = check_constructor(size, origin, dim, shape)
        self._rw = ReadWriteLock()

    @property
    def size(self) -> float:
        """Edge of the constructor's root node (level 0; the grid's whole world)."""
        return self._size

    @property
    def origin(self) -> np.ndarray:
        """Low corner of the constructor's root node, float64 (dim,), read-only."""
        return self._origin

    @property
    def dim(self) -> int:
        """1, 2 or 3."""
        return self._dim

    @property
    def shape(self) -> str:
        """``"sphere"`` or ``"cube"``: the exact test."""
        return self._shape

    def __len__(self) -> int:
        return self._count

    def __copy__(self) -> Self:
        """An independent copy (a shallow copy would share the arrays, and mutating one would corrupt
        the other): the same as :func:`copy.deepcopy`."""
        return copy.deepcopy(self)

    def __getstate__(self) -> dict[str, object]:
        """Pickle and (deep)copy everything but the lock; the copy gets a lock of its own."""
        with self._rw.reading():
            return state_without_lock(self)

    def __setstate__(self, state: dict[str, object]) -> None:
        self.__dict__.update(state)
        self._rw = ReadWriteLock()
