"""View-frustum planes from a view-projection matrix, and the sphere test.

A point ``p`` is inside the frustum when ``-w <= x, y, z <= w`` for
``(x, y, z, w) = M @ [p, 1]`` (OpenGL clip space).  Each of those six
inequalities is a plane ``n . p + d >= 0`` built from two rows of ``M``
(Gribb and Hartmann's extraction); after normalising ``n``, ``n . p + d`` is
the signed distance of ``p`` to the plane, so a sphere touches the frustum's
inside half-space when that distance is ``>= -radius``.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike, NDArray

__all__ = ["PLANE_NAMES", "frustum_corners", "frustum_planes", "spheres_in_frustum"]

#: Row order of :func:`frustum_planes`.
PLANE_NAMES = ("left", "right", "bottom", "top", "near", "far")


def frustum_planes(view_projection: ArrayLike) -> NDArray[np.float64]:
    """The six inward-facing planes of a frustum.

    Parameters
    ----------
    view_projection : array_like, shape (4, 4)
        World to clip matrix in column-vector form (``clip = M @ [x, y, z, 1]``).

    Returns
    -------
    planes : ndarray, shape (6, 4), float64, read-only
        Rows ``(nx, ny, nz, d)`` in :data:`PLANE_NAMES` order with unit normals,
        so ``planes[:, :3] @ p + planes[:, 3]`` is the signed distance of ``p``
        to each plane (positive inside).

    Examples
    --------
    >>> import numpy as np
    >>> planes = frustum_planes(np.eye(4))      # the clip cube itself
    >>> planes[4].tolist()                      # near: z >= -1
    [0.0, 0.0, 1.0, 1.0]
    """
    m = np.asarray(view_projection, dtype=np.float64)
    if m.shape != (4, 4) or not np.all(np.isfinite(m)):
        raise ValueError(f"view_projection must be a finite (4, 4) matrix, got shape {m.shape}")
    r0, r1, r2, r3 = m
    planes = np.stack([r3 + r0, r3 - r0, r3 + r1, r3 - r1, r3 + r2, r3 - r2])
    norms = np.linalg.norm(planes[:, :3], axis=1)
    if np.any(norms == 0.0):
        raise ValueError("view_projection is degenerate: a frustum plane has a zero normal")
    planes /= norms[:, None]
    planes.flags.writeable = False
    return planes


def spheres_in_frustum(planes: NDArray[np.float64], centres: ArrayLike,
                       radii: ArrayLike) -> NDArray[np.bool_]:
    """Which spheres touch the frustum (conservative, as every engine does it).

    A sphere is kept unless it lies entirely on the outside of one plane, i.e.
    when ``signed_distance >= -radius`` for all six planes.  A sphere straddling
    a plane, or touching it, is kept.  Near a frustum edge a sphere outside two
    planes' corner can still be kept; that only costs a draw, never a miss.

    Parameters
    ----------
    planes : ndarray, shape (6, 4), float64
        From :func:`frustum_planes`.
    centres : ndarray, shape (n, 3)
    radii : ndarray, shape (n,)
        Bounding radii (not view distances).

    Returns
    -------
    mask : ndarray, shape (n,), bool

    Cost: O(6 n), one matrix product over the given spheres only.
    """
    centres = np.asarray(centres, dtype=np.float64).reshape(-1, 3)
    radii = np.asarray(radii, dtype=np.float64).reshape(-1)
    if centres.shape[0] != radii.shape[0]:
        raise ValueError(f"{centres.shape[0]} centres but {radii.shape[0]} radii")
    dist = centres @ planes[:, :3].T
    dist += planes[:, 3]
    dist += radii[:, None]
    mask: NDArray[np.bool_] = np.all(dist >= 0.0, axis=1)
    return mask


def frustum_corners(view_projection: ArrayLike) -> NDArray[np.float64]:
    """The eight corners of the frustum in world space, for drawing it.

    Returns
    -------
    corners : ndarray, shape (8, 3), float64
        Index bits: bit 0 is x (left/right), bit 1 is y (bottom/top),
        bit 2 is z (near/far).
    """
    m = np.asarray(view_projection, dtype=np.float64)
    inv = np.linalg.inv(m)
    bits = np.arange(8)
    signs = ((bits[:, None] >> np.arange(3)) & 1) * 2 - 1
    ndc = np.concatenate([signs, np.ones((8, 1), dtype=np.int64)], axis=1).astype(np.float64)
    world = ndc @ inv.T
    return world[:, :3] / world[:, 3:4]
