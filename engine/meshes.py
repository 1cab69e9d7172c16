"""Procedural low-poly meshes, one per object class.

Every mesh fits inside the unit sphere around its origin, so an instance
drawn at ``centre`` with scale ``r`` lies inside the bounding sphere
``(centre, r)`` that the frustum filter tests: frustum culling can never cut
off a visible object.  Meshes are flat shaded: non-indexed triangles with one
normal per face.

Besides the full-detail mesh of each class there are its lower levels of
detail (``*_low``: fewer facets, same silhouette; ``*_card``: a flat card in
the xy plane that the renderer turns to face the camera); which one an
instance uses is :mod:`engine.lod`'s choice.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray

__all__ = ["MESHES", "Mesh", "get_mesh", "mesh_names"]


@dataclass(frozen=True)
class Mesh:
    """Triangle soup for instanced drawing.

    Attributes
    ----------
    vertices : ndarray, shape (n, 6), float32
        ``x, y, z, nx, ny, nz`` per vertex, three vertices per triangle.
    base : float
        Lowest y of the mesh (in units of the instance scale); scenes place an
        object at ``ground - base * scale`` so it stands on the ground.
    """

    name: str
    vertices: np.ndarray

    @property
    def base(self) -> float:
        return float(self.vertices[:, 1].min())

    @property
    def triangle_count(self) -> int:
        return int(self.vertices.shape[0]) // 3


def _flat(name: str, triangles: np.ndarray) -> Mesh:
    """Mesh from ``(t, 3, 3)`` float triangles (counter-clockwise seen from outside)."""
    tri = np.asarray(triangles, dtype=np.float64)
    n = np.cross(tri[:, 1] - tri[:, 0], tri[:, 2] - tri[:, 0])
    length = np.linalg.norm(n, axis=1)
    keep = length > 1e-12
    tri, n = tri[keep], n[keep] / length[keep, None]
    verts = np.concatenate([tri.reshape(-1, 3), np.repeat(n, 3, axis=0)], axis=1).astype(np.float32)
    radius = float(np.linalg.norm(verts[:, :3], axis=1).max())
    if radius > 1.0 + 1e-5:
        raise ValueError(f"mesh {name!r} leaves the unit sphere (radius {radius:.4f})")
    verts.flags.writeable = False
    return Mesh(name, verts)


def _indexed(points: ArrayLike, faces: ArrayLike) -> NDArray[np.float64]:
    return np.asarray(points, dtype=np.float64)[np.asarray(faces, dtype=np.intp)]


def _icosphere(subdivisions: int) -> tuple[np.ndarray, np.ndarray]:
    t = (1.0 + 5.0 ** 0.5) / 2.0
    pts = [(-1, t, 0), (1, t, 0), (-1, -t, 0), (1, -t, 0), (0, -1, t), (0, 1, t),
           (0, -1, -t), (0, 1, -t), (t, 0, -1), (t, 0, 1), (-t, 0, -1), (-t, 0, 1)]
    faces = [(0, 11, 5), (0, 5, 1), (0, 1, 7), (0, 7, 10), (0, 10, 11), (1, 5, 9), (5, 11, 4),
             (11, 10, 2), (10, 7, 6), (7, 1, 8), (3, 9, 4), (3, 4, 2), (3, 2, 6), (3, 6, 8),
             (3, 8, 9), (4, 9, 5), (2, 4, 11), (6, 2, 10), (8, 6, 7), (9, 8, 1)]
    points = [np.array(p, dtype=np.float64) / np.linalg.norm(p) for p in pts]
    for _ in range(subdivisions):
        cache: dict[tuple[int, int], int] = {}

        def mid(a: int, b: int) -> int:
            key = (min(a, b), max(a, b))
            if key not in cache:
                m = points[a] + points[b]
                points.append(m / np.linalg.norm(m))
                cache[key] = len(points) - 1
            return cache[key]

        new_faces = []
        for a, b, c in faces:
            ab, bc, ca = mid(a, b), mid(b, c), mid(c, a)
            new_faces += [(a, ab, ca), (b, bc, ab), (c, ca, bc), (ab, bc, ca)]
        faces = new_faces
    return np.array(points), np.array(faces)


def _lumpy(name: str, seed: int, squash: float, lo: float, subdivisions: int = 1) -> Mesh:
    pts, faces = _icosphere(subdivisions)
    rng = np.random.default_rng(seed)
    pts = pts * rng.uniform(lo, 1.0, size=(len(pts), 1))
    pts[:, 1] *= squash
    return _flat(name, _indexed(pts, faces))


def _prism(radius: float, y0: float, y1: float, sides: int, top_radius: float | None = None,
           caps: bool = True) -> np.ndarray:
    """Side walls (and caps) of a prism or frustum of a cone around the y axis."""
    top_radius = radius if top_radius is None else top_radius
    a = np.linspace(0.0, 2.0 * np.pi, sides, endpoint=False) + np.pi / sides
    lo = np.stack([radius * np.sin(a), np.full(sides, y0), radius * np.cos(a)], axis=1)
    hi = np.stack([top_radius * np.sin(a), np.full(sides, y1), top_radius * np.cos(a)], axis=1)
    tris = []
    for i in range(sides):
        j = (i + 1) % sides
        tris.append((lo[i], lo[j], hi[j]))
        if top_radius > 0.0:
            tris.append((lo[i], hi[j], hi[i]))
        if caps:
            tris.append((np.array([0.0, y0, 0.0]), lo[j], lo[i]))
        if caps and top_radius > 0.0:
            tris.append((np.array([0.0, y1, 0.0]), hi[i], hi[j]))
    return np.array(tris)


def _cube() -> Mesh:
    h = 1.0 / 3.0 ** 0.5 - 1e-6
    c = np.array([[x, y, z] for x in (-h, h) for y in (-h, h) for z in (-h, h)])
    quads = [(0, 1, 3, 2), (4, 6, 7, 5), (0, 4, 5, 1), (2, 3, 7, 6), (0, 2, 6, 4), (1, 5, 7, 3)]
    tris = []
    for a, b, cc, d in quads:
        tris += [(c[a], c[b], c[cc]), (c[a], c[cc], c[d])]
    return _flat("cube", np.array(tris))


def _cone_tree() -> Mesh:
    # Trees are the most drawn mesh: no hidden caps on the trunk, 7-sided crowns.
    trunk = _prism(0.1, -0.99, -0.45, 5, caps=False)
    crown_low = _prism(0.55, -0.55, 0.35, 7, top_radius=0.0)
    crown_high = _prism(0.4, 0.05, 0.99, 7, top_radius=0.0)
    return _flat("cone_tree", np.concatenate([trunk, crown_low, crown_high]))


def _grass_card() -> Mesh:
    tris = []
    for k in range(3):
        a = k * np.pi / 3.0
        d = np.array([np.cos(a), 0.0, np.sin(a)]) * 0.68
        p0, p1 = -d + [0, -0.7, 0], d + [0, -0.7, 0]
        p2, p3 = d * 0.6 + [0, 0.7, 0], -d * 0.6 + [0, 0.7, 0]
        tris += [(p0, p1, p2), (p0, p2, p3)]
    return _flat("grass_card", np.array(tris))


def _tower() -> Mesh:
    body = _prism(0.17, -0.97, 0.72, 4)
    gallery = _prism(0.3, 0.6, 0.72, 4)
    roof = _prism(0.3, 0.72, 0.99, 4, top_radius=0.0)
    return _flat("tower", np.concatenate([body, gallery, roof]))


def _creature() -> Mesh:
    # An arrow-head pointing down -z (the direction of travel at yaw 0).
    nose, tail = np.array([0.0, 0.0, -0.98]), np.array([0.0, 0.0, 0.6])
    left, right = np.array([-0.75, 0.0, 0.45]), np.array([0.75, 0.0, 0.45])
    top, bottom = np.array([0.0, 0.35, 0.2]), np.array([0.0, -0.25, 0.2])
    tris = [(nose, top, left), (nose, right, top), (nose, left, bottom), (nose, bottom, right),
            (tail, left, top), (tail, top, right), (tail, bottom, left), (tail, right, bottom)]
    return _flat("creature", np.array(tris))


def _octahedron(name: str, squash: float, scale: float = 0.98) -> Mesh:
    """Eight faces: the far level of the round shapes (rock, pebble, bush)."""
    pts = np.array([(1, 0, 0), (-1, 0, 0), (0, 1, 0), (0, -1, 0), (0, 0, 1), (0, 0, -1)], dtype=np.float64)
    pts *= scale
    pts[:, 1] *= squash
    faces = [(0, 2, 4), (4, 2, 1), (1, 2, 5), (5, 2, 0), (4, 3, 0), (1, 3, 4), (5, 3, 1), (0, 3, 5)]
    return _flat(name, _indexed(pts, faces))


def _cone_tree_low() -> Mesh:
    # One 6-sided crown instead of two 7-sided tiers, a 3-sided trunk: 12 triangles, not 38.
    trunk = _prism(0.1, -0.99, -0.45, 3, caps=False)
    crown = _prism(0.55, -0.55, 0.99, 6, top_radius=0.0, caps=False)
    return _flat("cone_tree_low", np.concatenate([trunk, crown]))


def _card(name: str, outline: list[tuple[float, float]]) -> Mesh:
    """A flat convex polygon in the xy plane (facing +z), fanned into triangles."""
    pts = np.array([(x, y, 0.0) for x, y in outline])
    tris = [(pts[0], pts[i], pts[i + 1]) for i in range(1, len(pts) - 1)]
    return _flat(name, np.array(tris))


def _cone_tree_card() -> Mesh:
    crown = _card("crown", [(-0.55, -0.55), (0.55, -0.55), (0.0, 0.99)])
    trunk = _card("trunk", [(-0.1, -0.99), (0.1, -0.99), (0.1, -0.55), (-0.1, -0.55)])
    return Mesh("cone_tree_card", np.concatenate([crown.vertices, trunk.vertices]))


def _tower_low() -> Mesh:
    body = _prism(0.2, -0.97, 0.72, 4, caps=False)
    roof = _prism(0.3, 0.72, 0.99, 4, top_radius=0.0, caps=False)
    return _flat("tower_low", np.concatenate([body, roof]))


def _creature_low() -> Mesh:
    # The upper half of the arrow-head: from above (where the swarm is seen from) the same shape.
    nose, tail = np.array([0.0, 0.0, -0.98]), np.array([0.0, 0.0, 0.6])
    left, right, top = np.array([-0.75, 0.0, 0.45]), np.array([0.75, 0.0, 0.45]), np.array([0.0, 0.2, 0.2])
    return _flat("creature_low", np.array([(nose, top, left), (nose, right, top), (tail, left, top),
                                           (tail, top, right)]))


def _hexagon_card(name: str, radius: float) -> Mesh:
    a = np.linspace(0.0, 2.0 * np.pi, 6, endpoint=False) + np.pi / 6.0
    return _card(name, [(radius * np.cos(t), radius * np.sin(t)) for t in a])


def _build() -> dict[str, Mesh]:
    meshes = [
        _cube(),
        _hexagon_card("cube_card", 0.8),
        _lumpy("rock", seed=7, squash=0.75, lo=0.72, subdivisions=0),
        _octahedron("rock_low", squash=0.75, scale=0.9),
        _lumpy("pebble", seed=11, squash=0.5, lo=0.8, subdivisions=0),
        _octahedron("pebble_low", squash=0.5, scale=0.9),
        _lumpy("bush", seed=3, squash=0.85, lo=0.85),
        _lumpy("bush_low", seed=3, squash=0.85, lo=0.85, subdivisions=0),
        _octahedron("bush_far", squash=0.85, scale=0.92),
        _cone_tree(),
        _cone_tree_low(),
        _cone_tree_card(),
        _grass_card(),
        _card("grass_low", [(-0.6, -0.7), (0.6, -0.7), (0.4, 0.7), (-0.4, 0.7)]),
        _tower(),
        _tower_low(),
        _creature(),
        _creature_low(),
        # A dense cluster's stand-in (HLOD): a lumpy ball, in three levels of its own.
        _lumpy("cluster_blob", seed=5, squash=0.9, lo=0.9, subdivisions=2),
        _lumpy("cluster_blob_low", seed=5, squash=0.9, lo=0.9, subdivisions=1),
        _lumpy("cluster_blob_far", seed=5, squash=0.9, lo=0.9, subdivisions=0),
    ]
    return {m.name: m for m in meshes}


#: Every mesh by name, built once at import (a few milliseconds, no GL).
MESHES: dict[str, Mesh] = _build()


def mesh_names() -> list[str]:
    """Names accepted by :func:`get_mesh`, sorted."""
    return sorted(MESHES)


def get_mesh(name: str) -> Mesh:
    """The mesh called ``name``; ``KeyError`` naming the known meshes otherwise."""
    try:
        return MESHES[name]
    except KeyError:
        raise KeyError(f"unknown mesh {name!r}; known meshes: {', '.join(mesh_names())}") from None
