"""Thousands of creatures that move every frame, each with an aggro radius.

Two view-distance trees meet here.  The engine's tree stores every
creature's view distance and is updated with ``update_many`` each frame.  The
scene's own tree stores each creature's *aggro radius*: querying it at the
camera answers "which creatures notice the player?" (the same point-in-spheres
question), and those turn red and steer towards the camera.
"""

from __future__ import annotations

import math

import numpy as np

from culling import ViewDistanceTree
from scenes.base import ObjectKind, Pose, Scene, Terrain, allocate_counts, build_arrays, mesh_base

__all__ = ["SWARM_KINDS", "SwarmScene", "make_swarm"]

ARENA_RADIUS = 350.0
WORLD_SIZE = 1024.0
CRUISE_SPEED = 9.0          # m/s
CHASE_SPEED = 16.0
WANDER_ACCEL = 6.0          # m/s^2, random walk of the velocity
CHASE_ACCEL = 30.0
PERSONAL_SPACE = 12.0       # chasers stop pushing closer than this (m)
ALTITUDE = (6.0, 45.0)      # above the ground (m)

SWARM_KINDS = (
    ObjectKind("rock", "rock", (0.48, 0.46, 0.47), solid=True),
    ObjectKind("creature", "creature", (0.95, 0.80, 0.25)),
)


class SwarmScene(Scene):
    """Moving creatures; ``update`` advances them and the aggro tree."""

    highlight_colour = (0.95, 0.15, 0.10)

    def setup(self, seed: int, velocity: np.ndarray, aggro_radius: np.ndarray) -> None:
        self._rng = np.random.default_rng(seed + 7)
        self.first = int(self.kind_offsets[1])          # creatures are objects [first, n)
        self.velocity = velocity
        self.aggro_radius = aggro_radius
        self.aggro_tree = ViewDistanceTree(size=WORLD_SIZE, origin=(-WORLD_SIZE / 2.0,) * 3, dim=3)
        self.aggro_handles = self.aggro_tree.insert_many(self.centres[self.first:], aggro_radius)
        self._creature_of = np.full(int(self.aggro_handles.max(initial=-1)) + 1, -1, dtype=np.int64)
        self._creature_of[self.aggro_handles] = np.arange(self.aggro_handles.shape[0])
        self.aggro_count = 0

    def aggro_at(self, point) -> np.ndarray:
        """Creature indices (0-based among creatures) whose aggro sphere holds ``point``."""
        handles = self.aggro_tree.query(np.asarray(point, dtype=np.float64), exact=True)
        return np.sort(self._creature_of[handles])

    def camera_pose(self, u: float) -> Pose:
        a = 2.0 * math.pi * u
        pos = np.array([150.0 * math.cos(a), 0.0, 150.0 * math.sin(a)])
        pos[1] = float(self.ground_height(np.array(pos[0]), np.array(pos[2]))) + 25.0
        return Pose(pos, math.degrees(math.atan2(-math.sin(a), -math.cos(a))) - 30.0, -6.0)

    def update(self, t: float, dt: float, camera_position: np.ndarray) -> np.ndarray:
        """Move every creature: wander, stay in the arena and the air band, chase the camera.

        Cost: O(creatures) NumPy, plus one aggro-tree query and ``update_many``.
        """
        dt = float(min(max(dt, 0.0), 0.1))
        first = self.first
        pos = self.centres[first:]
        vel = self.velocity
        cam = np.asarray(camera_position, dtype=np.float64)

        chasing = self.aggro_at(cam)
        self.aggro_count = int(chasing.shape[0])
        accel = self._rng.normal(0.0, WANDER_ACCEL, size=vel.shape)
        accel[:, 1] *= 0.3
        out = np.hypot(pos[:, 0], pos[:, 2]) > ARENA_RADIUS
        accel[out, 0] -= pos[out, 0] * 0.05
        accel[out, 2] -= pos[out, 2] * 0.05
        ground = self.ground_height(pos[:, 0], pos[:, 2])
        height = pos[:, 1] - ground
        accel[:, 1] += np.clip(np.mean(ALTITUDE) - height, -20.0, 20.0) * 0.3
        if chasing.shape[0]:
            to_cam = cam - pos[chasing]
            dist = np.maximum(np.linalg.norm(to_cam, axis=1), 1e-6)
            push = np.where(dist > PERSONAL_SPACE, CHASE_ACCEL, -CHASE_ACCEL)
            accel[chasing] += to_cam / dist[:, None] * push[:, None]
        vel += accel * dt
        limit = np.full(vel.shape[0], CRUISE_SPEED)
        limit[chasing] = CHASE_SPEED
        speed = np.maximum(np.linalg.norm(vel, axis=1), 1e-9)
        vel *= np.minimum(1.0, limit / speed)[:, None]
        pos += vel * dt
        pos[:, 1] = np.maximum(pos[:, 1], ground + ALTITUDE[0] * 0.5)

        self.yaw[first:] = np.arctan2(vel[:, 0], -vel[:, 2]).astype(np.float32)
        self.highlight[first:] = 0.0
        self.highlight[first + chasing] = 1.0
        self.aggro_tree.update_many(self.aggro_handles, pos, self.aggro_radius)
        return np.arange(first, len(self), dtype=np.int64)


def make_swarm(objects: int = 4000, seed: int = 1) -> SwarmScene:
    """Build the swarm: 5 % static rocks, the rest creatures (view distance 200-300 m,
    aggro radius 15-70 m).

    Cost: O(objects), vectorised, plus building the aggro tree.
    """
    rng = np.random.default_rng(seed)
    terrain = Terrain.generate(WORLD_SIZE, seed, 25.0, resolution=129,
                               low_colour=(0.36, 0.40, 0.26), high_colour=(0.50, 0.47, 0.38))
    counts = allocate_counts(objects, {"creature": 0.95, "rock": 0.05})
    parts = []
    for index, kind in enumerate(SWARM_KINDS):
        n = counts[kind.name]
        a = rng.uniform(0.0, 2.0 * np.pi, size=n)
        r = ARENA_RADIUS * np.sqrt(rng.random(n))
        x, z = r * np.cos(a), r * np.sin(a)
        ground = terrain.height_at(x, z)
        if kind.name == "rock":
            radius = rng.uniform(2.0, 6.0, size=n)
            y = ground - mesh_base(kind.mesh) * radius
            view = 400.0 * rng.uniform(0.8, 1.2, size=n)
        else:
            radius = rng.uniform(0.8, 1.6, size=n)
            y = ground + rng.uniform(*ALTITUDE, size=n)
            view = rng.uniform(200.0, 300.0, size=n)
        parts.append(dict(kind=index, centres=np.stack([x, y, z], axis=1), view_distance=view,
                          bounding_radius=radius, yaw=rng.uniform(0.0, 2.0 * np.pi, size=n),
                          tint=rng.uniform(-0.5, 0.5, size=n)))
    scene = SwarmScene(
        name="swarm", seed=seed, kinds=SWARM_KINDS, terrain=terrain,
        world_size=WORLD_SIZE, world_origin=(-WORLD_SIZE / 2.0,) * 3, fog_distance=1500.0,
        description="creatures moving every frame; red ones have you inside their aggro radius",
        **build_arrays(parts, len(SWARM_KINDS)),
    )
    n_creatures = counts["creature"]
    heading = rng.uniform(0.0, 2.0 * np.pi, size=n_creatures)
    velocity = np.stack([np.sin(heading), np.zeros(n_creatures), -np.cos(heading)], axis=1) * CRUISE_SPEED
    scene.setup(seed, velocity, rng.uniform(15.0, 70.0, size=n_creatures))
    return scene
