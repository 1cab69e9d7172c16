"""A sparse neighbourhood and a few dense, far-away clusters.

The point of this scene: while the camera stays in the neighbourhood, the
query visits the same handful of nodes and costs the same whether the clusters
hold ten thousand objects or a million, because the clusters lie more than
twice their objects' view distance away.  The scripted camera then flies into
one cluster and the per-level table fills up.
"""

from __future__ import annotations

import math

import numpy as np

from scenes.base import ObjectKind, Pose, Scene, Terrain, allocate_counts, build_arrays, mesh_base

__all__ = ["CLUSTER_KINDS", "ClustersScene", "make_clusters"]

WORLD_SIZE = 8192.0
NEIGHBOURHOOD = 1200.0          # edge of the sparse square around the origin (m)
CLUSTER_COUNT = 4
CLUSTER_RADIUS = 140.0          # objects fill a ball of this radius (m)
CLUSTER_DISTANCE = (2600.0, 3200.0)
#: Objects in the neighbourhood, whatever the total: the clusters get the rest,
#: so the neighbourhood's query is the same at 100 thousand or 10 million objects.
NEIGHBOURHOOD_OBJECTS = 10_000

CLUSTER_KINDS = (
    ObjectKind("bush", "bush", (0.22, 0.50, 0.18)),
    ObjectKind("rock", "rock", (0.48, 0.46, 0.50), solid=True),
    ObjectKind("tree", "cone_tree", (0.12, 0.36, 0.15), solid=True),
    ObjectKind("crystal", "cube", (0.35, 0.55, 0.95)),
)


class ClustersScene(Scene):
    """Static; the camera circles the neighbourhood, then flies into cluster 0."""

    cluster_centres: np.ndarray

    def camera_pose(self, u: float) -> Pose:
        target = self.cluster_centres[0]
        if u < 0.4:
            a = 2.0 * math.pi * u / 0.4 * 0.5
            pos = np.array([250.0 * math.sin(a), 0.0, 250.0 * (1.0 - math.cos(a))])
            heading = target - pos
        else:
            s = (u - 0.4) / 0.6
            s = s * s * (3.0 - 2.0 * s)
            ring_end = np.array([0.0, 0.0, 500.0])
            pos = ring_end + (target - ring_end) * s
            heading = target - ring_end
        ground = float(self.ground_height(np.array(pos[0]), np.array(pos[2])))
        pos[1] = max(ground + 30.0, pos[1])
        yaw = math.degrees(math.atan2(heading[0], -heading[2]))
        return Pose(pos, yaw, -4.0)


def make_clusters(objects: int = 400_000, seed: int = 1) -> ClustersScene:
    """Build the clusters scene: 10,000 objects nearby, the rest in far clusters.

    Cost: O(objects), vectorised.
    """
    rng = np.random.default_rng(seed)
    terrain = Terrain.generate(WORLD_SIZE, seed, 40.0, resolution=257,
                               low_colour=(0.40, 0.44, 0.30), high_colour=(0.52, 0.50, 0.42))
    near = min(objects, NEIGHBOURHOOD_OBJECTS)
    counts = allocate_counts(near, {"bush": 0.5, "rock": 0.3, "tree": 0.2})
    counts["crystal"] = objects - near
    angles = np.linspace(0.0, 2.0 * np.pi, CLUSTER_COUNT, endpoint=False) + 0.35
    dists = rng.uniform(*CLUSTER_DISTANCE, size=CLUSTER_COUNT)
    cx, cz = dists * np.sin(angles), -dists * np.cos(angles)
    cy = terrain.height_at(cx, cz) + CLUSTER_RADIUS + 40.0
    cluster_centres = np.stack([cx, cy, cz], axis=1)

    spec = {"bush": (160.0, (0.9, 1.8)), "rock": (350.0, (1.5, 4.0)), "tree": (700.0, (5.0, 9.0)),
            "crystal": (80.0, (0.6, 1.6))}
    parts = []
    for index, kind in enumerate(CLUSTER_KINDS):
        n = counts[kind.name]
        view, rad = spec[kind.name]
        radius = rng.uniform(*rad, size=n)
        if kind.name == "crystal":
            which = rng.integers(0, CLUSTER_COUNT, size=n)
            direction = rng.normal(size=(n, 3))
            norm = np.maximum(np.linalg.norm(direction, axis=1, keepdims=True), 1e-12)
            r = CLUSTER_RADIUS * rng.random((n, 1)) ** (1.0 / 3.0)
            centres = cluster_centres[which] + direction / norm * r
        else:
            xz = rng.uniform(-NEIGHBOURHOOD / 2.0, NEIGHBOURHOOD / 2.0, size=(n, 2))
            y = terrain.height_at(xz[:, 0], xz[:, 1]) - mesh_base(kind.mesh) * radius
            centres = np.stack([xz[:, 0], y, xz[:, 1]], axis=1)
        parts.append(dict(kind=index, centres=centres, view_distance=view * rng.uniform(0.8, 1.2, size=n),
                          bounding_radius=radius, yaw=rng.uniform(0.0, 2.0 * np.pi, size=n),
                          tint=rng.uniform(-0.5, 0.5, size=n)))
    scene = ClustersScene(
        name="clusters", seed=seed, kinds=CLUSTER_KINDS, terrain=terrain,
        world_size=WORLD_SIZE, world_origin=(-WORLD_SIZE / 2.0,) * 3, fog_distance=4000.0,
        description=f"sparse neighbourhood + {CLUSTER_COUNT} dense clusters ~3 km away",
        **build_arrays(parts, len(CLUSTER_KINDS)),
    )
    scene.cluster_centres = cluster_centres
    return scene
