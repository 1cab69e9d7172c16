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

from assets.town import town_plan

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
    return _interleaved(name, tri, n)


def _interleaved(name: str, tri: np.ndarray, normals: np.ndarray) -> Mesh:
    """The frozen mesh of triangles ``tri`` ``(t, 3, 3)`` with one normal per triangle ``(t, 3)``: position and
    normal interleaved per vertex, float32; a mesh outside the unit sphere is a ``ValueError``."""
    verts = np.concatenate([tri.reshape(-1, 3), np.repeat(normals, 3, axis=0)], axis=1).astype(np.float32)
    radius = float(np.linalg.norm(verts[:, :3], axis=1).max())
    if radius > 1.0 + 1e-5:
        raise ValueError(f"mesh {name!r} leaves the unit sphere (radius {radius:.4f})")
    verts.flags.writeable = False
    return Mesh(name, verts)


def _shaded(name: str, triangles: ArrayLike, normals: ArrayLike) -> Mesh:
    """Mesh from ``(t, 3, 3)`` triangles with the given per-triangle normals ``(t, 3)``,
    not the faces' own: foliage cards and blades lit like the volume they stand for."""
    tri = np.asarray(triangles, dtype=np.float64)
    n = np.asarray(normals, dtype=np.float64).reshape(-1, 3)
    n = np.broadcast_to(n / np.linalg.norm(n, axis=1, keepdims=True), (tri.shape[0], 3))
    return _interleaved(name, tri, n)


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


#: Grass blades are lit as the lawn they make, not as thin vertical cards: their
#: normals lean this far from straight up (towards their own facing side).
GRASS_NORMAL = (0.0, 0.85, 0.5)


def _blade(angle: float, lean: float, height: float, width: float) -> np.ndarray:
    """One blade: a thin triangle from the ground (y = -0.7) leaning out along ``angle``."""
    d = np.array([np.cos(angle), 0.0, np.sin(angle)])
    side = np.array([-d[2], 0.0, d[0]]) * width
    root = np.array([0.0, -0.7, 0.0]) + d * 0.12
    tip = root + np.array([0.0, height, 0.0]) + d * lean
    return np.array([root - side, root + side, tip])


def _grass_card() -> Mesh:
    # A tuft of nine thin blades of three heights, leaning out all round: it reads as grass.
    blades = [_blade(k * 2.0 * np.pi / 9.0 + 0.3 * (k % 2), 0.25 + 0.12 * (k % 3), 1.1 + 0.15 * ((k * 5) % 3),
                     0.13) for k in range(9)]
    tri = np.array(blades)
    up = np.array(GRASS_NORMAL)
    normals = [np.array([np.cos(k * 2.0 * np.pi / 9.0) * up[2], up[1], np.sin(k * 2.0 * np.pi / 9.0) * up[2]])
               for k in range(9)]
    return _shaded("grass_card", tri, normals)


def _grass_low() -> Mesh:
    # The tuft's outline as one camera-facing card: five spikes on a low base.
    xs = np.linspace(-0.55, 0.55, 6)
    tips = [(-0.4, 0.55), (-0.18, 0.8), (0.02, 0.62), (0.22, 0.78), (0.42, 0.5)]
    tris = []
    for k, (tx, ty) in enumerate(tips):
        tris.append(((xs[k], -0.7, 0.0), (xs[k + 1], -0.7, 0.0), (tx, ty, 0.0)))
    return _shaded("grass_low", np.array(tris), np.array(GRASS_NORMAL)[[0, 1, 2]] * [0, 1, 1])


def _tower() -> Mesh:
    body = _prism(0.17, -0.97, 0.72, 4)
    gallery = _prism(0.3, 0.6, 0.72, 4)
    roof = _prism(0.3, 0.72, 0.99, 4, top_radius=0.0)
    return _flat("tower", np.concatenate([body, gallery, roof]))


def _bird_parts(wings: float, tail: bool) -> np.ndarray:
    """A bird seen from anywhere: a diamond body along -z and two wings raised in a V."""
    nose, back = np.array([0.0, 0.0, -0.95]), np.array([0.0, 0.0, 0.55])
    left, right = np.array([-0.16, 0.0, -0.1]), np.array([0.16, 0.0, -0.1])
    top, belly = np.array([0.0, 0.14, -0.1]), np.array([0.0, -0.12, -0.1])
    body = [(nose, top, left), (nose, right, top), (nose, left, belly), (nose, belly, right),
            (back, left, top), (back, top, right), (back, belly, left), (back, right, belly)]
    lw, rw = np.array([-wings, 0.4, 0.15]), np.array([wings, 0.4, 0.15])
    root0, root1 = np.array([0.0, 0.05, -0.35]), np.array([0.0, 0.05, 0.2])
    parts = body + [(root0, lw, root1), (root0, root1, rw)]
    if tail:
        t0, t1 = np.array([-0.25, 0.0, 0.85]), np.array([0.25, 0.0, 0.85])
        parts += [(back, t0, t1)]
    return np.array(parts)


def _creature() -> Mesh:
    # A bird flying down -z (the direction of travel at yaw 0), wings up in a V:
    # its outline reads as a bird from below, from the side and from above.
    return _flat("creature", _bird_parts(0.85, tail=True))


def _octahedron(name: str, squash: float, scale: float = 0.98) -> Mesh:
    """Eight faces: the far level of the round shapes (rock, pebble, bush)."""
    pts = np.array([(1, 0, 0), (-1, 0, 0), (0, 1, 0), (0, -1, 0), (0, 0, 1), (0, 0, -1)], dtype=np.float64)
    pts *= scale
    pts[:, 1] *= squash
    faces = [(0, 2, 4), (4, 2, 1), (1, 2, 5), (5, 2, 0), (4, 3, 0), (1, 3, 4), (5, 3, 1), (0, 3, 5)]
    return _flat(name, _indexed(pts, faces))


def _bush_far() -> Mesh:
    """A bush far off: a camera-facing card of the full mesh's rounded outline (an
    octagon squashed as the bush is), fanned from its centre, whose vertex normals
    are a sphere's (the centre's towards the viewer, the rim's outwards): the
    normals interpolate across the card, so it is lit like the round bush it
    stands for.  The silhouette and the colour stay, the facets go: 8 triangles
    instead of 20."""
    a = np.linspace(0.0, 2.0 * np.pi, 8, endpoint=False) + np.pi / 8.0
    rim = np.stack([0.95 * np.cos(a), 0.95 * 0.85 * np.sin(a), np.zeros(8)], axis=1)
    rim_normal = np.stack([np.cos(a), np.sin(a), np.full(8, BUSH_FAR_RIM_TILT)], axis=1)
    rim_normal /= np.linalg.norm(rim_normal, axis=1, keepdims=True)
    verts = []
    for i in range(8):
        j = (i + 1) % 8
        for p, n in ((np.zeros(3), (0.0, 0.0, 1.0)), (rim[i], rim_normal[i]), (rim[j], rim_normal[j])):
            verts.append(np.concatenate([p, n]))
    out = np.array(verts, dtype=np.float32)
    out.flags.writeable = False
    return Mesh("bush_far", out)


#: How far the far bush card's rim normals lean towards the viewer (0: a sphere's
#: silhouette normals): a bush's visible rim is not seen edge-on.
BUSH_FAR_RIM_TILT = 0.4


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
    # Far off: the wings' V and a flat body, no tail: 4 triangles, the same outline.
    nose, back = np.array([0.0, 0.0, -0.95]), np.array([0.0, 0.0, 0.55])
    root0, root1 = np.array([0.0, 0.05, -0.35]), np.array([0.0, 0.05, 0.2])
    lw, rw = np.array([-0.85, 0.4, 0.15]), np.array([0.85, 0.4, 0.15])
    side = np.array([0.16, 0.0, -0.1])
    return _flat("creature_low", np.array([(root0, lw, root1), (root0, root1, rw),
                                           (nose, side, back), (nose, back, -side + [0, 0, -0.2])]))


def _hunter() -> Mesh:
    # A hunter: a broad cloaked body (an 8-sided cone), a head and a tall spear, so it
    # reads as a standing figure on the ground, unlike anything that flies.
    body = _prism(0.4, -0.9, 0.3, 8, top_radius=0.14)
    head = _prism(0.2, 0.3, 0.62, 6, top_radius=0.12)
    spear = _prism(0.04, -0.85, 0.82, 3) + np.array([0.42, 0.0, 0.0])
    return _flat("hunter", np.concatenate([body, head, spear]))


def _hunter_low() -> Mesh:
    body = _prism(0.4, -0.9, 0.62, 5, top_radius=0.12, caps=False)
    spear = _prism(0.05, -0.85, 0.82, 3, caps=False) + np.array([0.42, 0.0, 0.0])
    return _flat("hunter_low", np.concatenate([body, spear]))


def _hexagon_card(name: str, radius: float) -> Mesh:
    a = np.linspace(0.0, 2.0 * np.pi, 6, endpoint=False) + np.pi / 6.0
    return _card(name, [(radius * np.cos(t), radius * np.sin(t)) for t in a])


def _box(x: float, z: float, y0: float, y1: float, top: bool = True) -> np.ndarray:
    """The walls (and top) of an axis-aligned box ``[-x, x] x [y0, y1] x [-z, z]``, no floor: (10 or 8, 3, 3)."""
    c = np.array([[sx * x, y, sz * z] for sx in (-1, 1) for y in (y0, y1) for sz in (-1, 1)])
    quads = [(4, 6, 7, 5), (0, 1, 3, 2), (0, 2, 6, 4), (1, 5, 7, 3)] + ([(2, 3, 7, 6)] if top else [])
    tris = []
    for a, b, cc, d in quads:
        tris += [(c[a], c[b], c[cc]), (c[a], c[cc], c[d])]
    return np.array(tris)


#: A house's walls and its gable roof (two objects sharing a centre and a scale,
#: two colours): walls to ``HOUSE_EAVES``, the ridge along x at ``HOUSE_RIDGE``.
HOUSE_HALF = (0.6, 0.45)
HOUSE_FLOOR, HOUSE_EAVES, HOUSE_RIDGE = -0.5, 0.2, 0.62


def _house_walls(name: str = "house_walls", top: bool = True) -> Mesh:
    """Four walls (and the top, hidden under the roof only from above and afar)."""
    x, z = HOUSE_HALF
    return _flat(name, _box(x, z, HOUSE_FLOOR, HOUSE_EAVES, top=top))


def _gable(x: float, z: float, e: float, r: float, x0: float | None = None) -> np.ndarray:
    """A gable roof over ``[x0 or -x, x] x [-z, z]`` from the eaves ``e`` to the ridge ``r`` (along x), (6, 3, 3)."""
    lo = -x if x0 is None else x0
    a, b, c, d = (np.array(p) for p in ([lo, e, -z], [x, e, -z], [x, e, z], [lo, e, z]))
    top0, top1 = np.array([lo, r, 0.0]), np.array([x, r, 0.0])
    return np.array([(d, c, top1), (d, top1, top0),          # the +z slope
                     (b, a, top0), (b, top0, top1),          # the -z slope
                     (a, d, top0), (c, b, top1)])            # the gables


def _house_roof(name: str = "house_roof", chimney: bool = True) -> Mesh:
    x, z = HOUSE_HALF[0] + 0.06, HOUSE_HALF[1] + 0.08        # the eaves overhang the walls
    roof = _gable(x, z, HOUSE_EAVES, HOUSE_RIDGE)
    if chimney:
        stack = _box(0.05, 0.05, 0.3, 0.68) + np.array([0.32, 0.0, 0.12])
        roof = np.concatenate([roof, stack])
    return _flat(name, roof)


#: The clusters scene's settlements, as their far stand-ins see them (HLOD):
#: each part of one settlement (walls, roofs and the tower, trees) merged into
#: one mesh, in the stand-in's unit sphere (the settlement's radius is 1).
#: The plan is the one the scene places its houses by (:func:`assets.town.town_plan`:
#: houses on a square grid within ``TOWN_EXTENT`` of the centre, the tower at
#: the centre, trees in every other square between them); a test checks the
#: scene's houses against these meshes.
TOWN_HOUSE_SCALE = 9.0 / 150.0       # a house's bounding radius over the settlement's radius
TOWN_TREE_SCALE = 8.0 / 150.0
TOWN_TOWER_SCALE = 42.0 / 150.0


def _placed(mesh: Mesh, xz: np.ndarray, yaw: np.ndarray, scale: float, base: float) -> np.ndarray:
    """Copies of ``mesh``'s triangles at ``xz``, turned by ``yaw`` (as the object shader does),
    scaled, standing on y = 0; shape (copies * t, 3, 3)."""
    tri = mesh.vertices[:, :3].astype(np.float64).reshape(-1, 3, 3)
    out = []
    for (x, z), a in zip(xz, yaw):
        c, s = np.cos(a), np.sin(a)
        px, py, pz = tri[..., 0], tri[..., 1], tri[..., 2]
        y = np.maximum(scale * (py - base), 0.0)           # rounding must not sink a vertex below y = 0
        out.append(np.stack([x + scale * (c * px - s * pz), y, z + scale * (s * px + c * pz)], axis=-1))
    return np.concatenate(out)


def _rows(houses: np.ndarray, yaws: np.ndarray, part: str) -> np.ndarray:
    """The far level of a settlement's walls or roofs: each grid row of houses turned
    alike merged into one block (the same footprint, height and ridge line)."""
    s = TOWN_HOUSE_SCALE
    (hx, hz), overhang = HOUSE_HALF, (0.06, 0.08)
    out = []
    for turned in (False, True):
        pick = (yaws != 0.0) == turned
        along, across = (houses[pick, 1], houses[pick, 0]) if turned else (houses[pick, 0], houses[pick, 1])
        for row in np.unique(across):
            run = along[across == row]
            lo, hi = float(run.min()), float(run.max())
            if part == "walls":
                block = _box(1.0, hz * s, 0.0, (HOUSE_EAVES - HOUSE_FLOOR) * s, top=False)
                block[..., 0] = np.where(block[..., 0] < 0.0, lo - hx * s, hi + hx * s)
            else:
                ox, oz = overhang
                block = _gable(hi + (hx + ox) * s, (hz + oz) * s, (HOUSE_EAVES - HOUSE_FLOOR) * s,
                               (HOUSE_RIDGE - HOUSE_FLOOR) * s, x0=lo - (hx + ox) * s)
            block[..., 2] += row
            if turned:
                block = block[..., [2, 1, 0]][:, ::-1]        # swap x and z, keep the winding
            out.append(block)
    return np.concatenate(out)


def _town(parts: dict[str, Mesh]) -> list[Mesh]:
    houses, yaws, trees = town_plan()
    tower_base = float(parts["tower"].vertices[:, 1].min())
    walls = _placed(parts["house_walls"], houses, yaws, TOWN_HOUSE_SCALE, HOUSE_FLOOR)
    roofs = _placed(parts["house_roof_low"], houses, yaws, TOWN_HOUSE_SCALE, HOUSE_FLOOR)
    tower = _placed(parts["tower_low"], np.zeros((1, 2)), np.zeros(1), TOWN_TOWER_SCALE, tower_base)
    crowns = _placed(parts["cone_tree_low"], trees, np.zeros(len(trees)), TOWN_TREE_SCALE, -0.99)
    far_crowns = _placed(_flat("cone3", _prism(0.55, -0.8, 0.6, 3, top_radius=0.0, caps=False)), trees,
                         np.zeros(len(trees)), TOWN_TREE_SCALE, -0.99)
    return [_flat("town_walls", walls), _flat("town_roofs", np.concatenate([roofs, tower])),
            _flat("town_trees", crowns),
            _flat("town_walls_far", _rows(houses, yaws, "walls")),
            _flat("town_roofs_far", np.concatenate([_rows(houses, yaws, "roofs"), tower])),
            _flat("town_trees_far", far_crowns)]


def _build() -> dict[str, Mesh]:
    meshes = [
        _cube(),
        _hexagon_card("cube_card", 0.8),
        _lumpy("rock", seed=7, squash=0.75, lo=0.72, subdivisions=0),
        _octahedron("rock_low", squash=0.75, scale=0.9),
        _lumpy("pebble", seed=11, squash=0.5, lo=0.8, subdivisions=0),
        _octahedron("pebble_low", squash=0.5, scale=0.9),
        _lumpy("bush", seed=3, squash=0.85, lo=0.85),
        _lumpy("bush_low", seed=3, squash=0.85, lo=0.98, subdivisions=0),   # round: the full outline
        _bush_far(),
        _cone_tree(),
        _cone_tree_low(),
        _cone_tree_card(),
        _grass_card(),
        _grass_low(),
        _tower(),
        _tower_low(),
        _creature(),
        _creature_low(),
        _hunter(),
        _hunter_low(),
        _house_walls(),
        _house_walls("house_walls_low", top=False),
        _house_roof(),
        _house_roof("house_roof_low", chimney=False),
    ]
    parts = {m.name: m for m in meshes}
    # A settlement's stand-in (HLOD): its houses, tower and trees merged, in three meshes (three colours).
    return parts | {m.name: m for m in _town(parts)}


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
