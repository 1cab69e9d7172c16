"""Exact containment tests: is a point inside a sphere, or inside a cube?

A sphere contains ``p`` when the Euclidean distance from its centre is at most
its radius; a cube (``radius`` = half its edge) when the largest per-axis
distance is.  Surface points count as inside, and a radius of 0 contains only
its centre.  The tests work axis by axis on 1-D arrays (a short inner axis of
length 3 would make NumPy loop per object), O(n).

>>> import numpy as np
>>> centres = np.array([[0.0, 0.0], [3.0, 4.0]])
>>> contains(centres, np.array([5.0, 5.0]), np.zeros(2), "sphere").tolist()
[True, True]
>>> contains(centres, np.array([3.0, 3.0]), np.zeros(2), "cube").tolist()
[True, False]
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

__all__ = ["contains", "distances"]


def distances(axes: Sequence[np.ndarray], point, shape: str) -> np.ndarray:
    """Distance from ``point`` to each centre in the shape's metric.

    Parameters
    ----------
    axes : sequence of ``dim`` ndarrays, shape (n,), float64
        The centres' coordinates, one array per axis.
    point : sequence of ``dim`` floats
    shape : "sphere" (Euclidean) or "cube" (L-infinity)

    Returns
    -------
    ndarray, shape (n,), float64, a new array
    """
    with np.errstate(over="ignore", under="ignore"):
        result = np.subtract(axes[0], point[0])
        if shape == "cube":
            np.abs(result, out=result)
            for coords, p in zip(axes[1:], point[1:]):
                np.maximum(result, np.abs(coords - p), out=result)
            return result
        result *= result
        for coords, p in zip(axes[1:], point[1:]):
            offset = coords - p
            offset *= offset
            result += offset
        return np.sqrt(result, out=result)


def contains(centres: np.ndarray, radii: np.ndarray, point: np.ndarray,
             shape: str, scale: float = 1.0) -> np.ndarray:
    """Boolean mask: which objects contain ``point`` (radii multiplied by ``scale``).

    Parameters
    ----------
    centres : ndarray, shape (n, dim), float64
    radii : ndarray, shape (n,), float64
    point : ndarray, shape (dim,), float64
    shape : "sphere" or "cube"
    scale : float, the view-distance multiplier (> 0)

    Returns
    -------
    ndarray, shape (n,), bool
    """
    axes = [centres[:, axis] for axis in range(centres.shape[1])]
    return within(distances(axes, np.asarray(point).tolist(), shape), radii, scale)


def within(distance: np.ndarray, radii: np.ndarray, scale: float = 1.0) -> np.ndarray:
    """``distance <= radii * scale``, elementwise (the radius multiplied only when scaled)."""
    if scale == 1.0:
        return distance <= radii
    with np.errstate(over="ignore", under="ignore"):
        return distance <= radii * scale
