"""Exact containment tests: is a point inside a sphere, or inside a cube?

A sphere contains ``p`` when the Euclidean distance from its centre is at most
its radius; a cube (``radius`` = half its edge) when the largest per-axis
distance is.  Surface points count as inside, and a radius of 0 contains only
its centre.  Both tests are NumPy over arrays of candidates, O(n).

>>> import numpy as np
>>> centres = np.array([[0.0, 0.0], [3.0, 4.0]])
>>> contains(centres, np.array([5.0, 5.0]), np.zeros(2), "sphere").tolist()
[True, True]
>>> contains(centres, np.array([3.0, 3.0]), np.zeros(2), "cube").tolist()
[True, False]
"""

from __future__ import annotations

import numpy as np

__all__ = ["contains", "distances"]


def distances(centres: np.ndarray, point: np.ndarray, shape: str) -> np.ndarray:
    """Distance from ``point`` to each centre in the shape's metric.

    Parameters
    ----------
    centres : ndarray, shape (n, dim), float64
    point : ndarray, shape (dim,), float64
    shape : "sphere" (Euclidean) or "cube" (L-infinity)

    Returns
    -------
    ndarray, shape (n,), float64
    """
    offsets = centres - point
    if shape == "cube":
        return np.abs(offsets).max(axis=1, initial=0.0)
    return np.sqrt(np.einsum("ij,ij->i", offsets, offsets))


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
    reach = radii if scale == 1.0 else radii * scale
    return distances(centres, point, shape) <= reach
