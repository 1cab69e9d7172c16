"""The default scene: about 4 km of hills holding up to a million objects.

Six classes, each with its own mesh, colour, bounding radius and view
distance, from grass seen for tens of metres to landmark towers seen for
kilometres.  Trees and bushes grow in forest patches (a smooth noise field
decides where), grass in the clearings between them.
"""

from __future__ import annotations

import math

import numpy as np

from scenes.base import ObjectKind, Pose, Scene, Terrain, allocate_counts, build_arrays, mesh_base, smooth_noise

__all__ = ["FOREST_KINDS", "ForestScene", "make_forest"]

WORLD_SIZE = 4096.0
HILL_HEIGHT = 90.0

FOREST_KINDS = (
    ObjectKind("grass", "grass_card", (0.45, 0.70, 0.22)),
    ObjectKind("pebble", "pebble", (0.62, 0.60, 0.56)),
    ObjectKind("bush", "bush", (0.20, 0.50, 0.16)),
    ObjectKind("rock", "rock", (0.46, 0.44, 0.47), solid=True),
    ObjectKind("tree", "cone_tree", (0.10, 0.34, 0.14), solid=True),
    ObjectKind("tower", "tower", (0.78, 0.36, 0.26), solid=True),
)

# Per class: share of the objects, view distance (m, jittered x0.8..1.2),
# bounding radius range (m), and where it grows (+1 forest, -1 clearings, 0 anywhere).
_CLASS = {
    "grass": dict(share=0.45, view=40.0, radius=(0.5, 0.9), habitat=-1),
    "pebble": dict(share=0.20, view=25.0, radius=(0.2, 0.45), habitat=0),
    "bush": dict(share=0.18, view=130.0, radius=(0.9, 1.8), habitat=1),
    "rock": dict(share=0.09, view=300.0, radius=(1.5, 4.0), habitat=0),
    "tree": dict(share=0.08, view=700.0, radius=(5.0, 9.0), habitat=1),
    "tower": dict(share=0.0, view=5000.0, radius=(38.0, 50.0), habitat=0),
}
TOWER_COUNT = 8


class ForestScene(Scene):
    """Static forest; the scripted camera circles the map just above the canopy."""

    def camera_pose(self, u: float) -> Pose:
        a = 2.0 * math.pi * (0.1 + 0.8 * u)
        radius = 700.0
        x, z = radius * math.cos(a), radius * math.sin(a)
        ground = float(self.ground_height(np.array(x), np.array(z)))
        # Fly along the circle (counter-clockwise seen from above), looking slightly down.
        dx, dz = -math.sin(a), math.cos(a)
        yaw = math.degrees(math.atan2(dx, -dz)) + 15.0
        return Pose(np.array([x, ground + 28.0, z]), yaw, -8.0)


def _sample(rng, count: int, habitat: int, seed: int, half: float) -> np.ndarray:
    """``count`` (x, z) points; habitat +1/-1 prefers high/low values of a noise field."""
    if habitat == 0:
        return rng.uniform(-half, half, size=(count, 2))
    out = np.empty((0, 2))
    while out.shape[0] < count:
        need = count - out.shape[0]
        cand = rng.uniform(-half, half, size=(2 * need + 16, 2))
        density = smooth_noise(cand[:, 0], cand[:, 1], seed + 101, octaves=3, wavelength=900.0)
        p = np.clip(0.5 + 0.6 * habitat * density, 0.05, 1.0)
        out = np.concatenate([out, cand[rng.random(cand.shape[0]) < p]])
    return out[:count]


def make_forest(objects: int = 200_000, seed: int = 1) -> ForestScene:
    """Build the forest scene.

    Parameters
    ----------
    objects : int
        Total object count (towers first, then the classes by share).
    seed : int
        Everything (terrain, placement, sizes) follows from it.

    Cost: O(objects), vectorised; about a second for a million objects.
    """
    rng = np.random.default_rng(seed)
    terrain = Terrain.generate(WORLD_SIZE, seed, HILL_HEIGHT)
    counts = allocate_counts(objects, {k: v["share"] for k, v in _CLASS.items() if v["share"] > 0},
                             fixed={"tower": TOWER_COUNT})
    half = WORLD_SIZE / 2.0 - 16.0
    parts = []
    for index, kind in enumerate(FOREST_KINDS):
        spec, n = _CLASS[kind.name], counts[kind.name]
        xz = _sample(rng, n, spec["habitat"], seed, half)
        if kind.name == "tower" and n:
            # Landmarks on a ring so some are always in sight.
            a = np.linspace(0.0, 2.0 * np.pi, n, endpoint=False) + rng.uniform(0, 0.3)
            xz = np.stack([np.cos(a), np.sin(a)], axis=1) * rng.uniform(900.0, 1600.0, size=(n, 1))
        radius = rng.uniform(*spec["radius"], size=n)
        ground = terrain.height_at(xz[:, 0], xz[:, 1])
        y = ground - mesh_base(kind.mesh) * radius
        parts.append(dict(
            kind=index,
            centres=np.stack([xz[:, 0], y, xz[:, 1]], axis=1),
            view_distance=spec["view"] * rng.uniform(0.8, 1.2, size=n),
            bounding_radius=radius,
            yaw=rng.uniform(0.0, 2.0 * np.pi, size=n),
            tint=rng.uniform(-0.5, 0.5, size=n),
        ))
    arrays = build_arrays(parts, len(FOREST_KINDS))
    return ForestScene(
        name="forest", seed=seed, kinds=FOREST_KINDS, terrain=terrain,
        world_size=WORLD_SIZE, world_origin=(-WORLD_SIZE / 2.0, -WORLD_SIZE / 2.0, -WORLD_SIZE / 2.0),
        description="4 km of hills: grass, pebbles, bushes, rocks, trees and landmark towers",
        **arrays,
    )
