"""The one interface every point index satisfies: tree, dense grid, brute force.

An engine's culling step only needs "which objects' view-distance spheres
contain this point?", once or for many points, optionally with the spheres
themselves.  :class:`PointIndex` declares that, so code written against it
(the demo's pipeline, a game's interest management) runs unchanged on
:class:`~culling.ViewDistanceTree`, :class:`~culling.DenseViewDistanceGrid`
or a brute-force baseline, and tests can check each of them the same way.

>>> from culling import DenseViewDistanceGrid, ViewDistanceTree
>>> isinstance(ViewDistanceTree(size=8.0, dim=2), PointIndex)
True
>>> isinstance(DenseViewDistanceGrid(size=8.0, dim=2), PointIndex)
True
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

import numpy as np

from culling.answer import QueryDetails

__all__ = ["PointIndex"]


@runtime_checkable
class PointIndex(Protocol):
    """Point queries against view-distance spheres (DESIGN.md section 2).

    ``exact=False`` returns a superset of the spheres containing the point
    (each handle once); ``exact=True`` exactly those with ``|p - c| <=
    radius * scale`` (Euclidean for spheres, largest axis for cubes).
    ``scale`` must be a finite real number above zero.  Returned arrays
    belong to the caller.
    """

    def __len__(self) -> int:
        """Number of objects."""
        ...

    def query(self, point: object, exact: bool = False, scale: float = 1.0) -> np.ndarray:
        """Handles, int64 (k,)."""
        ...

    def query_many(self, points: object, exact: bool = False,
                   scale: float = 1.0) -> tuple[np.ndarray, np.ndarray]:
        """``(handles, counts)``: point ``i``'s answer is ``handles[counts[:i].sum():][:counts[i]]``."""
        ...

    def query_spheres(self, point: object, exact: bool = False,
                      scale: float = 1.0) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(handles (k,), centres (k, dim), radii (k,))`` of :meth:`query`'s answer."""
        ...

    def query_detailed(self, point: object, scale: float = 1.0, trace: bool = False) -> QueryDetails:
        """The exact answer with centres, radii, distances, the candidate count and (``trace=True``)
        the walk's trace, from one walk (:class:`culling.QueryDetails`)."""
        ...
