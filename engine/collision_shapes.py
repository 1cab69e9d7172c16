"""What the camera collides with: each solid object's bounding sphere, or a column of spheres that hugs it.

A tall, thin mesh fills little of its bounding sphere: a landmark tower's shaft is 0.17 of its
bounding radius wide, so a camera held off the sphere stopped some 30 m short of a 40 m tower's wall,
against thin air.  Such a mesh (:data:`COLUMN_BANDS`) collides as a column of spheres on its axis
instead, one per band of its height (:func:`sphere_column`): each covers its band's part of the mesh
exactly, so the mesh lies inside their union and the camera still never enters it.  Every other mesh
keeps its bounding sphere (one sphere an object: the fewest for :class:`culling.CollisionCandidates`).
Objects turn only about the vertical axis, so a column on it holds for every heading.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from numpy.typing import NDArray

from engine.meshes import Mesh, get_mesh

__all__ = ["COLUMN_BANDS", "collision_spheres", "sphere_column"]

#: Meshes that collide as a column of spheres, and how many bands the column has.
COLUMN_BANDS: dict[str, int] = {"tower": 8}


def sphere_column(mesh: Mesh, bands: int) -> NDArray[np.float64]:
    """The spheres on the mesh's vertical axis that cover it band by band: shape (bands, 2), each row
    ``(height of the centre, radius)`` in the mesh's units (the instance scale).

    The mesh's height is cut into ``bands`` equal bands; band ``k``'s sphere is centred on the axis at
    the band's middle, with the radius that holds a cylinder as wide as the mesh's widest point in the
    band: that point is a vertex in the band or where an edge crosses one of its faces (the distance
    from the axis is convex on a triangle, so its largest value on the triangle's part in the band is at
    a corner of that part).

    >>> column = sphere_column(get_mesh("tower"), 8)
    >>> column.shape, bool((column[:, 1] < 0.4).all())
    ((8, 2), True)
    """
    if bands < 1:
        raise ValueError(f"bands must be at least 1, got {bands}")
    corners = mesh.vertices[:, :3].astype(np.float64).reshape(-1, 3, 3)
    low, high = float(corners[..., 1].min()), float(corners[..., 1].max())
    faces = np.linspace(low, high, bands + 1)
    starts = corners.reshape(-1, 3)
    ends = np.roll(corners, -1, axis=1).reshape(-1, 3)            # each triangle's three edges
    points = [starts]
    for y in faces[1:-1]:
        crossing = (np.minimum(starts[:, 1], ends[:, 1]) < y) & (np.maximum(starts[:, 1], ends[:, 1]) > y)
        a, b = starts[crossing], ends[crossing]
        t = (y - a[:, 1]) / (b[:, 1] - a[:, 1])
        points.append(np.column_stack([a[:, 0] + t * (b[:, 0] - a[:, 0]), np.full(t.shape, y),
                                       a[:, 2] + t * (b[:, 2] - a[:, 2])]))
    every = np.concatenate(points)
    across = np.hypot(every[:, 0], every[:, 2])
    column = np.empty((bands, 2))
    half = (high - low) / bands / 2.0
    for k in range(bands):
        inside = (every[:, 1] >= faces[k]) & (every[:, 1] <= faces[k + 1])
        widest = float(across[inside].max(initial=0.0))
        column[k] = (faces[k] + faces[k + 1]) / 2.0, np.hypot(widest, half)
    return column


def collision_spheres(centres: NDArray[np.float64], scales: NDArray[np.float64], meshes: Sequence[str],
                      kinds: NDArray[np.integer]) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """The spheres the camera collides with for objects at ``centres`` (n, 3) drawn at ``scales`` (n,)
    (their bounding radii) with mesh ``meshes[kinds[i]]``: ``(centres (m, 3), radii (m,))``, the bounding
    sphere for most, a :func:`sphere_column` for the meshes of :data:`COLUMN_BANDS`."""
    kinds = np.asarray(kinds)
    parts_c, parts_r = [], []
    for kind in np.unique(kinds).tolist():
        mine = kinds == kind
        c, s = centres[mine], scales[mine]
        bands = COLUMN_BANDS.get(meshes[kind])
        if bands is None:
            parts_c.append(c)
            parts_r.append(s)
            continue
        column = sphere_column(get_mesh(meshes[kind]), bands)
        lifted = np.repeat(c[:, None, :], bands, axis=1)
        lifted[..., 1] += s[:, None] * column[:, 0]
        parts_c.append(lifted.reshape(-1, 3))
        parts_r.append((s[:, None] * column[:, 1]).reshape(-1))
    if not parts_c:
        return np.zeros((0, 3)), np.zeros(0)
    return np.concatenate(parts_c), np.concatenate(parts_r)
