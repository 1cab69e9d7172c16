"""Equality by value for the records the library hands out: answers, traces, events.

A dataclass compares its fields as a tuple, and a tuple of NumPy arrays
cannot be compared (``array == array`` is an array, whose truth is
ambiguous): ``details.trace == tree.trace(point)`` raised ``ValueError``
where the contract says the two are equal.  :class:`ValueRecord` compares
the fields one by one, arrays by :func:`numpy.array_equal` (shapes and
values; ``int64`` against ``float64`` holding the same numbers is equal, as
for ``==`` on numbers).
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np

__all__ = ["ValueRecord"]


class ValueRecord:
    """Base of a frozen dataclass declared with ``eq=False``: ``==`` by its fields' values, no hash
    (its arrays are mutable objects; two equal records could not share one)."""

    __slots__ = ()

    def __eq__(self, other: object) -> bool:
        if type(other) is not type(self):
            return NotImplemented
        return all(_equal(getattr(self, f.name), getattr(other, f.name))
                   for f in dataclasses.fields(self))  # type: ignore[arg-type]

    __hash__ = None  # type: ignore[assignment]


def _equal(a: Any, b: Any) -> bool:
    """Two field values: arrays by shape and values, lists item by item, the rest by ``==``."""
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        return bool(np.array_equal(a, b))
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_equal(x, y) for x, y in zip(a, b))
    return bool(a == b)
