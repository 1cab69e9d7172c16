"""The one interface every point index satisfies: tree, dense grid, the reference brute force.

An engine's culling step only needs "which objects' view-distance spheres
contain this point?", once or for many points, optionally with the spheres
themselves.  :class:`PointIndex` declares that, so code written against it
(the demo's pipeline, a game's interest management) runs unchanged on
:class:`~culling.ViewDistanceTree`, :class:`~culling.DenseViewDistanceGrid`
or :class:`~culling.BruteForceIndex`, and tests can check each of them the
same way.  Points are typed ``ArrayLike`` (what the structures accept), so
the three are ``PointIndex`` to mypy too and no caller needs a protocol of
its own.

>>> from culling import BruteForceIndex, DenseViewDistanceGrid, ViewDistanceTree
>>> isinstance(ViewDistanceTree(size=8.0, dim=2), PointIndex)
True
>>> isinstance(DenseViewDistanceGrid(size=8.0, dim=2), PointIndex)
True
>>> isinstance(BruteForceIndex(np.zeros((0, 2)), np.zeros(0)), PointIndex)
True
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

import numpy as np
from numpy.typing import ArrayLike

from culling.answer import QueryDetails
from culling.trace import QueryTrace

__all__ = ["PointIndex", "Real"]

#: One number as callers pass it (a radius, a scale): a Python or NumPy real, or a 0-d array of one
#: (any other array is a ValueError, anything else a TypeError).  The type hint of every public
#: parameter that takes one, so a user's ``mypy --strict`` accepts what the library does.
Real = float | np.floating | np.integer | np.ndarray


@runtime_checkable
class PointIndex(Protocol):
    """Point queries against view-distance spheres (docs/CONTRACT.md, "Queries").

    ``exact=False`` returns a superset of the spheres containing the point
    (each handle once); ``exact=True`` exactly those with ``|p - c| <=
    radius * scale`` (Euclidean for spheres, largest axis for cubes).  The
    sphere probes (``overlapping``, ``overlapping_many``) and the pairs
    (``overlapping_pairs``) are the collision broad phase on the same data.
    ``scale`` must be a finite real number above zero.  Returned arrays
    belong to the caller.
    """

    def __len__(self) -> int:
        """Number of objects."""
        ...

    def query(self, point: ArrayLike, exact: bool = False, scale: Real = 1.0) -> np.ndarray:
        """Handles, int64 (k,)."""
        ...

    def query_many(self, points: ArrayLike, exact: bool = False,
                   scale: Real = 1.0) -> tuple[np.ndarray, np.ndarray]:
        """``(handles, counts)``: point ``i``'s answer is ``handles[counts[:i].sum():][:counts[i]]``."""
        ...

    def query_spheres(self, point: ArrayLike, exact: bool = False,
                      scale: Real = 1.0) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(handles (k,), centres (k, dim), radii (k,))`` of :meth:`query`'s answer."""
        ...

    def overlapping(self, centre: ArrayLike, radius: Real, exact: bool = False, scale: Real = 1.0) -> np.ndarray:
        """Handles, int64 (k,), of the spheres that may meet the probe sphere; ``exact``: exactly
        those with ``|c - centre| <= radius_i * scale + radius``."""
        ...

    def overlapping_many(self, centres: ArrayLike, radii: ArrayLike, exact: bool = False,
                         scale: Real = 1.0) -> tuple[np.ndarray, np.ndarray]:
        """``(handles, counts)`` of many probes, ``radii`` (m,) or one number, as :meth:`query_many`."""
        ...

    def overlapping_pairs(self) -> tuple[np.ndarray, np.ndarray]:
        """``(first, second)``, int64: every pair of stored spheres that meet, once, ``first < second``."""
        ...

    def query_detailed(self, point: ArrayLike, scale: Real = 1.0, trace: bool = False) -> QueryDetails:
        """The exact answer with centres, radii, distances, the candidate count and (``trace=True``)
        the walk's trace, from one walk (:class:`culling.QueryDetails`)."""
        ...

    def trace(self, point: ArrayLike, scale: Real = 1.0) -> QueryTrace:
        """The candidates of ``query(point, scale=scale)`` and the levels the walk visited, root first
        (:class:`culling.QueryTrace`; no levels for an index without nodes)."""
        ...
