"""One exact query with everything a frame needs next: the answer of ``query_detailed``.

A renderer asks the tree once per frame at the camera.  It wants the objects
whose view distance reaches the camera (the exact answer), their centres and
radii for the frustum test, their distances for fades and levels of detail,
how many candidates the walk looked at (the first number of the culling
funnel) and, for a debug overlay, the nodes it visited.  All of it comes from
one walk: :meth:`culling.ViewDistanceTree.query_detailed` and
:meth:`culling.DenseViewDistanceGrid.query_detailed` return a
:class:`QueryDetails`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from culling.records import ValueRecord
from culling.trace import QueryTrace

__all__ = ["QueryDetails"]


@dataclass(frozen=True, eq=False)
class QueryDetails(ValueRecord):
    """The exact answer of one point query, and what the walk saw on the way.

    Attributes
    ----------
    handles : ndarray, shape (k,), int64
        Exactly the objects whose sphere (or cube) contains the point, as
        ``query(point, exact=True, scale=scale)``, each once.
    centres : ndarray, shape (k, dim), float64
        Their centres, row ``i`` for ``handles[i]``.
    radii : ndarray, shape (k,), float64
        Their stored radii (view distances), unscaled.
    distances : ndarray, shape (k,), float64
        The point's distance to each centre (Euclidean for spheres, the
        largest per-axis distance for cubes), computed in float64 and so
        within a few units in the last place of the true distance: for
        fades and levels of detail.  Membership was decided exactly before; a
        distance may exceed ``radius * scale`` by a rounding error.
    candidates : int
        How many objects the visited nodes held, before the exact test: the
        size of ``query(point, scale=scale)``.
    trace : QueryTrace or None
        The levels the same walk visited, when asked for (``trace=True``).

    Every array is the caller's own.
    """

    handles: NDArray[np.int64]
    centres: NDArray[np.float64]
    radii: NDArray[np.float64]
    distances: NDArray[np.float64]
    candidates: int
    trace: QueryTrace | None = None
