"""A sparse neighbourhood and a few dense settlements far away.

The point of this scene: while the camera stays in the neighbourhood, the
query visits the same handful of nodes and costs the same whether the
settlements hold ten thousand objects or a million, because their bulk (the
lawns and flower beds of their gardens, seen for tens of metres) lies more
than six times its view distance away.  The scripted camera then flies to one
settlement, slowly through the distance where its stand-in gives way to its
members, and into its streets.

Each settlement is a plan (:func:`assets.town.town_plan`): houses (walls and a gable
roof, two objects of two colours) on a square grid, a tower at the centre,
trees between the houses, and gardens.  It also has a stand-in, the way
engines do hierarchical LOD: the same houses, tower and trees merged into
three low-detail meshes (``engine.meshes``' ``town_*``, the same plan), one
object each, seen from kilometres away, with a *begin distance*: it gives
way (cross-faded) once the camera is near enough to see every house.  A
settlement on the horizon then costs three candidates, not thousands.
"""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import ArrayLike

from assets.town import TOWN_EXTENT, town_plan
from scenes.base import ObjectKind, Pose, Scene, Terrain, allocate_counts, build_arrays, mesh_base

__all__ = ["CLUSTER_KINDS", "ClustersScene", "STAND_IN_KINDS", "make_clusters", "town_plan"]

WORLD_SIZE = 8192.0
NEIGHBOURHOOD = 1200.0          # edge of the sparse square around the origin (m)
CLUSTER_COUNT = 4
CLUSTER_RADIUS = 150.0          # a settlement's radius (m): its stand-in's bounding radius
CLUSTER_DISTANCE = (2600.0, 3200.0)
#: Objects in the neighbourhood, whatever the total from twice as many on: the settlements
#: get the rest, so the neighbourhood's query is the same at 100 thousand or 10 million
#: objects.  Below, the neighbourhood gets half (``--objects 5000`` had no settlement at all).
NEIGHBOURHOOD_OBJECTS = 10_000
#: Houses, roofs, the tower and the settlement's trees are seen from 600 m: from
#: the begin distance below every one of them is in sight (450 + 150 m).
BUILDING_VIEW = 600.0
#: The gardens' lawns and flower beds (the bulk, tens of thousands a settlement).
LAWN_VIEW, BED_VIEW = 45.0, 110.0
#: A stand-in is seen from 4 km: from anywhere in the neighbourhood (the
#: settlements lie 2.6-3.2 km out), as far as the fog lets anything be seen,
#: and below half the root's size, so the tree's root does not grow for it.
STAND_IN_VIEW = 4000.0
#: A stand-in hides once the camera is within 450 m of its settlement's centre,
#: where every house, roof and tree (seen from 600 m) is in sight.  It fades in
#: over the 15 % beyond (to about 520 m): the cross-fade the camera path slows down for.
STAND_IN_BEGIN = BUILDING_VIEW - CLUSTER_RADIUS

#: Sizes in the settlement's plan (:func:`assets.town.town_plan`, in units of
#: CLUSTER_RADIUS: ``engine.meshes`` builds the stand-ins from the same plan;
#: ``tests/engine/test_scene_data.py`` checks these radii against its scales).
HOUSE_RADIUS, TREE_RADIUS, TOWER_RADIUS = 9.0, 8.0, 42.0

WALLS, ROOFS, TREES = (0.86, 0.80, 0.66), (0.70, 0.27, 0.20), (0.12, 0.36, 0.15)
TOWN_TREES = (0.16, 0.40, 0.14)
STAND_IN_KINDS = ("stand-in walls", "stand-in roofs", "stand-in trees")


def _stand_in(rgb: tuple[float, float, float]) -> tuple[float, float, float]:
    """A stand-in's colour: its members' colour, 5 levels darker (the eye cannot tell;
    an unlit test render can tell the stand-in's pixels from its members')."""
    r, g, b = (c - 5.0 / 255.0 for c in rgb)
    return r, g, b


CLUSTER_KINDS = (
    # First, so the stand-ins' object indices do not depend on the object count.
    ObjectKind("stand-in walls", "town_walls", _stand_in(WALLS)),
    ObjectKind("stand-in roofs", "town_roofs", _stand_in(ROOFS)),
    ObjectKind("stand-in trees", "town_trees", _stand_in(TOWN_TREES)),
    ObjectKind("house", "house_walls", WALLS, solid=True),
    ObjectKind("roof", "house_roof", ROOFS),
    ObjectKind("tower", "tower", ROOFS, solid=True),
    ObjectKind("town tree", "cone_tree", TOWN_TREES, solid=True),
    ObjectKind("bush", "bush", (0.22, 0.50, 0.18)),
    ObjectKind("rock", "rock", (0.48, 0.46, 0.50), solid=True),
    ObjectKind("tree", "cone_tree", TREES, solid=True),
    ObjectKind("flower bed", "bush", (0.74, 0.48, 0.58)),
    ObjectKind("lawn", "grass_card", (0.45, 0.70, 0.22)),
)


def _smooth(t: float) -> float:
    t = min(max(t, 0.0), 1.0)
    return t * t * (3.0 - 2.0 * t)


class ClustersScene(Scene):
    """Static; the camera circles the neighbourhood, then flies to settlement 0 and into it (with no
    settlement, too few objects for one, it circles the neighbourhood the whole way)."""

    cluster_centres: np.ndarray
    #: How many of the sites hold a settlement (0 to ``CLUSTER_COUNT``).
    settlements: int = CLUSTER_COUNT

    #: The path (fractions of it): the neighbourhood, the long flight, the slow approach
    #: through the stand-in's cross-fade, the last stretch into the streets.
    LEGS = (0.3, 0.55, 0.85)

    def camera_pose(self, u: float) -> Pose:
        if not self.settlements:  # nothing out there to fly to: the neighbourhood's ring, all the way round
            a = 2.0 * math.pi * u
            pos = np.array([250.0 * math.sin(a), 0.0, 250.0 * (1.0 - math.cos(a))])
            pos[1] = float(self.ground_height(np.array(pos[0]), np.array(pos[2]))) + 50.0
            heading = np.array([0.0, 0.0, 250.0]) - pos             # at the ring's centre, across the objects
            return Pose(pos, math.degrees(math.atan2(heading[0], -heading[2])), -4.0)
        target = self.cluster_centres[0]
        ring, fly, slow = self.LEGS
        start = np.array([0.0, 0.0, 500.0])
        away = (start - target) * np.array([1.0, 0.0, 1.0])
        away /= np.linalg.norm(away)
        far, near, edge = (target + away * d for d in (STAND_IN_BEGIN * 1.6, STAND_IN_BEGIN * 0.8,
                                                       CLUSTER_RADIUS * 1.1))
        height = 50.0
        if u < ring:
            a = math.pi * u / ring
            pos = np.array([250.0 * math.sin(a), 0.0, 250.0 * (1.0 - math.cos(a))])
        elif u < fly:
            pos = start + (far - start) * _smooth((u - ring) / (fly - ring))
        elif u < slow:                          # about 1.3 m a frame at 300 frames: the cross-fade shows
            pos = far + (near - far) * ((u - fly) / (slow - fly))
        else:
            t = _smooth((u - slow) / (1.0 - slow))
            pos = near + (edge - near) * t
            height = 50.0 - 30.0 * t
        heading = target - pos
        ground = float(self.ground_height(np.array(pos[0]), np.array(pos[2])))
        pos[1] = ground + height
        yaw = math.degrees(math.atan2(heading[0], -heading[2]))
        return Pose(pos, yaw, -4.0)


def _level_sites(terrain: Terrain, centres: np.ndarray, radius: float) -> None:
    """Level the ground under each settlement at its centre's height (a hilltop
    site), blending back to the hills over one more radius."""
    step = terrain.step
    n = terrain.heights.shape[0]
    coords = np.arange(n) * step
    xs = terrain.origin[0] + coords
    zs = terrain.origin[1] + coords
    for cx, cy, cz in centres:
        d = np.hypot(xs[None, :] - cx, zs[:, None] - cz)
        w = np.clip((2.0 * radius - d) / radius, 0.0, 1.0)
        terrain.heights[:] = terrain.heights * (1.0 - w) + cy * w


def make_clusters(objects: int = 400_000, seed: int = 1) -> ClustersScene:
    """Build the clusters scene: 10,000 objects nearby (half the objects below 20,000), the rest in
    far settlements (204 objects each at least: fewer than 408 objects make none).

    Cost: O(objects), vectorised.
    """
    rng = np.random.default_rng(seed)
    terrain = Terrain.generate(WORLD_SIZE, seed, 40.0, resolution=257,
                               low_colour=(0.40, 0.44, 0.30), high_colour=(0.52, 0.50, 0.42))
    angles = np.linspace(0.0, 2.0 * np.pi, CLUSTER_COUNT, endpoint=False) + 0.35
    dists = rng.uniform(*CLUSTER_DISTANCE, size=CLUSTER_COUNT)
    cx, cz = dists * np.sin(angles), -dists * np.cos(angles)
    # Hilltop settlements: each site levelled at the hills' top height, so the towns show on the skyline.
    cluster_centres = np.stack([cx, np.full(CLUSTER_COUNT, terrain.height_range[1] + 5.0), cz], axis=1)
    _level_sites(terrain, cluster_centres, CLUSTER_RADIUS)

    houses, house_yaw, trees = town_plan()
    per_site = len(STAND_IN_KINDS) + 2 * len(houses) + len(trees) + 1  # the fixed objects: 204
    near = min(objects - objects // 2, NEIGHBOURHOOD_OBJECTS)
    sites = min(CLUSTER_COUNT, (objects - near) // per_site)
    if not sites:  # too few objects for one settlement: all of them in the neighbourhood
        near = objects
    counts = allocate_counts(near, {"bush": 0.5, "rock": 0.3, "tree": 0.2})
    left = objects - near
    fixed = {"house": sites * len(houses), "roof": sites * len(houses), "tower": sites,
             "town tree": sites * len(trees)} | {name: sites for name in STAND_IN_KINDS}
    counts |= fixed
    counts |= allocate_counts(left - sum(fixed.values()), {"lawn": 0.97, "flower bed": 0.03})

    def on_ground(x: np.ndarray, z: np.ndarray, mesh: str, radius: np.ndarray) -> np.ndarray:
        return np.stack([x, terrain.height_at(x, z) - mesh_base(mesh) * radius, z], axis=1)

    site = cluster_centres[:sites]
    plan = {"house": (houses, HOUSE_RADIUS, house_yaw), "roof": (houses, HOUSE_RADIUS, house_yaw),
            "tower": (np.zeros((1, 2)), TOWER_RADIUS, np.zeros(1)),
            "town tree": (trees, TREE_RADIUS, np.zeros(len(trees)))}
    spec = {"bush": (160.0, (0.9, 1.8)), "rock": (350.0, (1.5, 4.0)), "tree": (700.0, (5.0, 9.0)),
            "lawn": (LAWN_VIEW, (0.4, 0.8)), "flower bed": (BED_VIEW, (0.6, 1.2))}
    parts: list[dict[str, ArrayLike]] = []
    begin = []
    for index, kind in enumerate(CLUSTER_KINDS):
        n = counts[kind.name]
        if kind.name in STAND_IN_KINDS:
            # One per settlement, on its levelled ground; no random draws (the others' stay as they were).
            parts.append(dict(kind=index, centres=site, view_distance=np.full(n, STAND_IN_VIEW),
                              bounding_radius=np.full(n, CLUSTER_RADIUS), yaw=np.zeros(n), tint=np.zeros(n)))
            begin.append(np.full(n, STAND_IN_BEGIN))
            continue
        begin.append(np.zeros(n))
        if kind.name in plan:
            offsets, size, yaw = plan[kind.name]
            xz = (site[:, None, [0, 2]] + offsets[None] * CLUSTER_RADIUS).reshape(-1, 2)
            r = np.full(len(xz), size)
            base_mesh = "house_walls" if kind.name == "roof" else kind.mesh     # a roof sits on its walls
            parts.append(dict(kind=index, centres=on_ground(xz[:, 0], xz[:, 1], base_mesh, r),
                              view_distance=np.full(len(xz), BUILDING_VIEW), bounding_radius=r,
                              yaw=np.tile(yaw, sites), tint=np.tile(np.linspace(-0.3, 0.3, len(yaw)), sites)))
            continue
        view, rad = spec[kind.name]
        radius = rng.uniform(*rad, size=n)
        if kind.name in ("lawn", "flower bed"):
            which = rng.integers(0, max(sites, 1), size=n)
            a = rng.uniform(0.0, 2.0 * np.pi, size=n)
            out = CLUSTER_RADIUS * TOWN_EXTENT * 1.1 * np.sqrt(rng.random(n))
            x, z = site[which, 0] + out * np.cos(a), site[which, 2] + out * np.sin(a)
        else:
            x, z = rng.uniform(-NEIGHBOURHOOD / 2.0, NEIGHBOURHOOD / 2.0, size=(2, n))
        parts.append(dict(kind=index, centres=on_ground(x, z, kind.mesh, radius),
                          view_distance=view * rng.uniform(0.8, 1.2, size=n),
                          bounding_radius=radius, yaw=rng.uniform(0.0, 2.0 * np.pi, size=n),
                          tint=rng.uniform(-0.5, 0.5, size=n)))
    scene = ClustersScene(
        name="clusters", seed=seed, kinds=CLUSTER_KINDS, terrain=terrain,
        world_size=WORLD_SIZE, world_origin=(-WORLD_SIZE / 2.0,) * 3, fog_distance=4000.0,
        description=f"sparse neighbourhood + {CLUSTER_COUNT} settlements ~3 km away",
        begin_distance=np.concatenate(begin), **build_arrays(parts, len(CLUSTER_KINDS)),
    )
    scene.cluster_centres = cluster_centres
    scene.settlements = sites
    return scene
