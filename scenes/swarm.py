"""Tens of thousands of birds in flocks and hundreds of hunters, all moving every frame.

Two view-distance trees meet here.  The engine's tree stores every object's
view distance and is updated with ``update_many`` each frame.  The scene's
own tree (:class:`~scenes.aggro.Aggro`) stores each bird's personal-space
sphere (its bounding sphere grown by :data:`~scenes.aggro.SPACE`) and is
asked two batches a frame:

- **sensing**: the player and every hunter, each with its own sensing radius
  (hunters :data:`SENSE_RADIUS`, the player :data:`PLAYER_SENSE`), in one
  ``overlapping_many``: a bird whose body meets a sensing sphere turns red
  and chases the nearest hunter (or you) that senses it, for at most
  :data:`LEASH` seconds on end, then flies with its flock for :data:`CALM`
  seconds, ignoring every hunter (an aggro leash, as games have);
- **separation**: one ``overlapping_pairs``: two birds whose personal spaces
  meet push apart.

Both batches' times, and now and then their peers' (brute force for the
sensing, a NumPy hash grid for the pairs), are in :attr:`SwarmScene.sensing_stats`
and :attr:`SwarmScene.separation_stats` for the HUD.

The **interest view** (:meth:`SwarmScene.set_interest_view`, the I key; on
from the start in the ``aggro`` scene, :func:`make_aggro`) treats you and
the hunters as a game server's players: every frame one
``culling.InterestManager`` tick over all of them, each with its sensing
radius, gives each player's set (the birds it senses) and what entered and
left it (:class:`~scenes.interest_view.InterestView`).  One player is
followed (N cycles): it is highlighted and framed, the birds in its set are
tinted cyan, entered ones flash green and left ones orange, and the HUD lists
the tick's counts and the last handles.  The simulation never reads it.

The birds fly in flocks: each steers towards its flock's centre (cohesion)
and its flock's mean velocity (alignment), both one ``bincount`` over all
birds, and away from the birds its personal space meets (separation, the
pairs above, summed with ``bincount``).

The world keeps the same density at every size: the arena's radius grows with
the square root of the object count, so 1,500 objects look like a corner of
30,000.
"""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import ArrayLike

from culling import ViewDistanceTree
from scenes.aggro import COMPARE_EVERY, RECENT, SPACE, Aggro, BatchStats
from scenes.base import (
    Markers,
    ObjectKind,
    Pose,
    Scene,
    Terrain,
    allocate_counts,
    build_arrays,
    mesh_base,
    morton_order,
    no_markers,
)
from scenes.interest_view import ENTERED_COLOUR, FOLLOWED_COLOUR, INTEREST_COLOUR, LEFT_COLOUR, InterestView

__all__ = ["CHASE_COLOUR", "INTEREST_LEGEND", "LEGEND", "PLAYER_SENSE", "SENSE_RADIUS", "SWARM_KINDS", "SwarmScene",
           "arena_radius", "make_aggro", "make_swarm"]

DENSITY = 0.02              # creatures per square metre of arena (flocks make it locally denser)
HUNTER_SHARE = 0.01         # one hunter per hundred objects
ROCK_SHARE = 0.03
CRUISE_SPEED = 9.0          # m/s
CHASE_SPEED = 16.0
HUNTER_SPEED = 6.0
WANDER_ACCEL = 6.0          # m/s^2, random walk of the velocity
CHASE_ACCEL = 30.0
CHASE_STOP = 12.0           # chasers stop pushing closer than this (m)
LEASH = 4.0                 # a bird chases this long on end at most (s) ...
CALM = 8.0                  # ... then flies with its flock, ignoring every hunter, this long (s)
FLOCK_SIZE = 60             # birds per flock, about
COHESION = 0.6              # m/s^2 per m/s: steering towards the flock's centre, per metre away (capped)
ALIGNMENT = 1.5             # 1/s: matching the flock's mean velocity
SEPARATION = 40.0           # m/s^2 at one spot, falling to 0 where two personal spaces just touch
ALTITUDE = (6.0, 45.0)      # creatures fly this high above the ground (m)
SENSE_RADIUS = (15.0, 45.0)   # each hunter's own sensing radius (m): the keen ones reach the flocks overhead
PLAYER_SENSE = 30.0         # the player's (the camera's) sensing radius (m)
WAYPOINT_REACHED = 5.0      # a hunter picks a new waypoint this close to the old one (m)

SWARM_KINDS = (
    ObjectKind("rock", "rock", (0.48, 0.46, 0.47), solid=True),
    ObjectKind("hunter", "hunter", (0.22, 0.30, 0.85)),
    ObjectKind("bird", "creature", (0.96, 0.86, 0.45)),
)
#: The highlight colour of the chasing birds (the scene's ``highlight_colour`` while the interest view is off).
CHASE_COLOUR = (0.95, 0.15, 0.10)
#: What the HUD's legend says about each look (the chasing birds wear the highlight colour).
LEGEND = (("hunters (walk)", (0.22, 0.30, 0.85)), ("birds (flocks)", (0.96, 0.86, 0.45)),
          ("chasing you or a hunter", CHASE_COLOUR))
#: The legend while the interest view is on: the highlight shows the followed player's set instead of the chase.
INTEREST_LEGEND = (("followed player's box", FOLLOWED_COLOUR[:3]), ("in its interest set", INTEREST_COLOUR),
                   ("entered", ENTERED_COLOUR[:3]), ("left", LEFT_COLOUR[:3]),
                   ("hunters", (0.22, 0.30, 0.85)), ("birds", (0.96, 0.86, 0.45)))
#: Where :meth:`SwarmScene.watch_pose` puts the camera: this many times the followed player's reach away
#: (at least :data:`WATCH_MIN` m) and half that above it, so its whole sensing sphere is in view.
WATCH_REACHES = 2.4
WATCH_MIN = 60.0


def arena_radius(creatures: int) -> float:
    """Radius (m) of the disc that holds ``creatures`` at :data:`DENSITY`; at least 60 m."""
    return max(60.0, math.sqrt(max(creatures, 1) / (math.pi * DENSITY)))



def _counted(n: int, word: str) -> str:
    """``n`` and ``word``, plural unless one: "1 pair", "2 flocks"."""
    return f"{n:,} {word}" + ("" if n == 1 else "s")

class SwarmScene(Scene):
    """Moving creatures and hunters; ``update`` advances them and the aggro batch."""

    def setup(self, seed: int, arena: float, velocity: np.ndarray, sense_radius: np.ndarray,
              flock: np.ndarray) -> None:
        self._rng = np.random.default_rng(seed + 7)
        offsets = self.kind_offsets
        self.hunters = slice(int(offsets[1]), int(offsets[2]))
        self.first = int(offsets[2])                    # creatures are objects [first, n)
        self.arena = arena
        self.velocity = velocity
        self.sense_radius = np.asarray(sense_radius, dtype=np.float64)     # one per hunter
        self.aggro = Aggro(self.centres[self.first:], self.bounding_radius[self.first:], self.world_size,
                           self.world_origin)
        n_hunters = self.hunters.stop - self.hunters.start
        self.waypoints = self._random_points(n_hunters)
        self.aggro_count = 0
        self.flock = np.asarray(flock, dtype=np.int64)
        self.flocks = int(self.flock.max(initial=-1)) + 1
        self.interest: InterestView | None = None      # built when the view is first turned on
        self._interest_on = False
        self.followed = 1 if n_hunters else 0           # player 0 is you, player k hunter k - 1
        #: The scripted camera circles the followed player (the aggro scene) instead of the arena.
        self.orbit_followed = False
        self._chasing = np.zeros(0, dtype=np.int64)
        birds = len(self) - self.first
        self._chased_for = np.zeros(birds)   # seconds each bird has chased without a break
        self._calm_for = np.zeros(birds)     # seconds each bird still ignores the hunters (the leash)

    # -- queries the tests and the HUD use ------------------------------------------
    @property
    def bird_tree(self) -> ViewDistanceTree:
        """The birds' personal-space tree (read it; the scene mutates it)."""
        return self.aggro.tree

    @property
    def sensing_stats(self) -> BatchStats:
        """The sensing batch (``overlapping_many``) against brute force."""
        return self.aggro.sensing

    @property
    def separation_stats(self) -> BatchStats:
        """The separation batch (``overlapping_pairs``) against a NumPy hash grid."""
        return self.aggro.separation

    def hunter_positions(self) -> np.ndarray:
        """Hunter centres, shape (h, 3), float64 (a copy)."""
        return self.centres[self.hunters].copy()

    def probes(self, camera_position: ArrayLike) -> tuple[np.ndarray, np.ndarray]:
        """The sensing batch's probes: the camera (probe 0) and every hunter, and their radii."""
        cam = np.asarray(camera_position, dtype=np.float64).reshape(1, 3)
        return (np.concatenate([cam, self.centres[self.hunters]]),
                np.concatenate([[PLAYER_SENSE], self.sense_radius]))

    def sensed_by(self, point: ArrayLike, radius: float) -> np.ndarray:
        """Creature indices (0-based among creatures) whose body meets the sphere ``(point, radius)``."""
        handles = self.aggro.tree.overlapping(np.asarray(point, dtype=np.float64), radius, exact=True,
                                              scale=1.0 / SPACE)
        return np.sort(self.aggro.creature_of[handles])

    def set_brute_force(self, on: bool) -> None:
        """Answer the aggro batch by brute force every frame (the tree then runs
        beside it now and then): the demo's ``--brute-force`` covers it too."""
        self.aggro.method = "brute force" if on else "tree"

    def status_lines(self, brief: bool = False) -> list[str]:
        """The two batches: who senses how many birds, how many pairs keep apart, each
        call's median time against its peer's, and how often the peers run.  ``brief``: one line
        per batch (and one for the interest view), for the compact HUD."""
        hunters = self.hunters.stop - self.hunters.start
        birds = len(self) - self.first
        low, high = (self.sense_radius.min(), self.sense_radius.max()) if hunters else (0.0, 0.0)
        sensing, separation = self.aggro.sensing, self.aggro.separation
        if brief:
            return self._interest_lines(brief) + [
                f"sensing: {sensing.answers:,} sensed pairs  {sensing.brief()}".rstrip(),
                f"separation: {separation.answers:,} pairs  {separation.brief()}".rstrip()]
        other = "tree runs" if self.aggro.method == "brute force" else "peers run"
        reach = f" ({low:.0f}-{high:.0f} m)" if hunters else ""
        return self._interest_lines() + [f"sensing: you + {_counted(hunters, 'hunter')}{reach} x {_counted(birds, 'bird')}",
                f"  {sensing.answers:,} (bird, sensor) pairs sensed, {self.aggro_count:,} birds chasing",
                sensing.line(),
                f"separation: {_counted(separation.answers, 'pair')}, {_counted(self.flocks, 'flock')}",
                separation.line(),
                f"  ({other} every {COMPARE_EVERY}th frame; ms: median, last {RECENT})"]

    def legend(self) -> list[tuple[str, tuple[float, float, float]]]:
        return list(INTEREST_LEGEND if self._interest_on else LEGEND)

    # -- the interest view: you and the hunters are a server's players ----------------------
    @property
    def has_players(self) -> bool:
        return True

    @property
    def interest_on(self) -> bool:
        return self._interest_on

    @property
    def players(self) -> int:
        """You (player 0) and every hunter (player k is hunter k - 1)."""
        return 1 + self.hunters.stop - self.hunters.start

    def player_name(self, player: int) -> str:
        return "you" if player == 0 else f"hunter {player - 1}"

    def followed_name(self) -> str:
        return self.player_name(self.followed)

    def reach(self, player: int) -> float:
        """Player ``player``'s sensing radius (m): its interest set is the birds whose body meets it."""
        return PLAYER_SENSE if player == 0 else float(self.sense_radius[player - 1])

    def set_interest_view(self, on: bool) -> None:
        """Turn the interest view on (its manager built at the first time: O(birds)) or off (the
        manager forgets every player, so turning it on again enters each player's whole set)."""
        on = bool(on)
        if on == self._interest_on:
            return
        if on:
            if self.interest is None:
                self.interest = InterestView(self.centres[self.first:], self.bounding_radius[self.first:],
                                             self.world_size, self.world_origin)
            self.interest.follow(self.followed)
            self.highlight_colour = INTEREST_COLOUR
        else:
            if self.interest is not None:
                self.interest.reset()
            self.highlight_colour = CHASE_COLOUR
            self.highlight[self.hunters] = 0.0
            self.highlight[self.first:] = 0.0
            self.highlight[self.first + self._chasing] = 1.0
        self._interest_on = on

    def follow(self, player: int) -> None:
        """Follow player ``player`` (0: you, k: hunter k - 1); ``ValueError`` out of range."""
        player = int(player)
        if not 0 <= player < self.players:
            raise ValueError(f"player must be in 0..{self.players - 1}, got {player}")
        self.followed = player
        if self.interest is not None:
            self.interest.follow(player)

    def follow_next(self, step: int = 1) -> str:
        self.follow((self.followed + int(step)) % self.players)
        return self.followed_name()

    def busiest_hunter(self) -> int:
        """The player (1..) of the hunter that senses the most birds now (ties: the first); 0 without hunters."""
        if self.players == 1:
            return 0
        _, counts = self.aggro.tree.overlapping_many(self.centres[self.hunters], self.sense_radius, exact=True,
                                                     scale=1.0 / SPACE)
        return 1 + int(np.argmax(counts))

    def _pose_around(self, player: int, angle: float) -> Pose:
        """Looking at hunter ``player`` from ``angle`` (radians, 0: from the arena's centre side)."""
        target = self.centres[self.hunters.start + player - 1]
        distance = max(WATCH_MIN, WATCH_REACHES * self.reach(player))
        out = math.atan2(target[2], target[0]) + math.pi + angle      # from the centre side, then round
        pos = target + np.array([distance * math.cos(out), 0.5 * distance, distance * math.sin(out)])
        pos[1] = max(pos[1], float(self.ground_height(np.array(pos[0]), np.array(pos[2]))) + 5.0)
        d = target - pos
        return Pose(pos, math.degrees(math.atan2(d[0], -d[2])), math.degrees(math.atan2(d[1], math.hypot(d[0], d[2]))))

    def watch_pose(self) -> Pose | None:
        """A camera pose looking at the followed hunter with its whole reach in view; None when you are followed."""
        return None if self.followed == 0 else self._pose_around(self.followed, 0.0)

    def markers(self) -> Markers:
        """The interest view's marks (a box and the reach of the followed player, flashing boxes on
        the birds that entered or left its set); none while the view is off."""
        if not self._interest_on or self.interest is None:
            return no_markers()
        f = self.followed
        player = None if f == 0 else self.centres[self.hunters.start + f - 1]
        size = float(self.bounding_radius[self.hunters.start + f - 1]) if f else 0.0
        return self.interest.markers(self.centres[self.first:], self.bounding_radius[self.first:], player, size,
                                     self.reach(f))

    def _show_interest(self) -> None:
        """The highlight from the view: the followed player's set (and fresh entries).  The player keeps its
        own colour (its white box marks it): cyan means in the set, and nothing else."""
        if self.interest is None:
            return
        self.highlight[self.first:] = self.interest.highlight()
        self.highlight[self.hunters] = 0.0

    def _interest_lines(self, brief: bool = False) -> list[str]:
        view = self.interest
        if not self._interest_on or view is None:
            return []
        tick = "" if view.tick_ms is None else f" {view.tick_ms:.2f} ms"
        if brief:
            return [f"interest: {self.followed_name()}, {view.members.shape[0]:,} in its set, "
                    f"+{view.entered.shape[0]} -{view.left.shape[0]}; tick{tick or ' -'}"]
        entered = " ".join(str(h) for h in view.recent_entered.tolist()) or "-"
        left = " ".join(str(h) for h in view.recent_left.tolist()) or "-"
        return [f"interest: {self.followed_name()} (reach {self.reach(self.followed):.0f} m), "
                f"{view.members.shape[0]:,} in its set",
                f"  server tick: {_counted(view.players, 'player')} x {_counted(len(self) - self.first, 'bird')}{tick}",
                f"  this tick +{view.entered.shape[0]} -{view.left.shape[0]} "
                f"(all players +{view.all_entered:,} -{view.all_left:,})",
                f"  entered {entered}",
                f"  left {left}"]

    def warm_up(self, camera_position: np.ndarray) -> None:
        self.aggro.warm_up(*self.probes(camera_position))

    # -- motion -------------------------------------------------------------------------
    def _random_points(self, k: int) -> np.ndarray:
        """``k`` uniform (x, z) points in the arena, shape (k, 2)."""
        a = self._rng.uniform(0.0, 2.0 * np.pi, k)
        r = self.arena * np.sqrt(self._rng.random(k))
        return np.stack([r * np.cos(a), r * np.sin(a)], axis=1)

    def camera_pose(self, u: float) -> Pose:
        if self.orbit_followed and self.followed:
            return self._pose_around(self.followed, 0.5 * math.pi * u)      # a quarter turn round it
        a = 2.0 * math.pi * u
        radius = 0.4 * self.arena
        pos = np.array([radius * math.cos(a), 0.0, radius * math.sin(a)])
        pos[1] = float(self.ground_height(np.array(pos[0]), np.array(pos[2]))) + 25.0
        return Pose(pos, math.degrees(math.atan2(-math.sin(a), -math.cos(a))) - 30.0, -6.0)

    def _move_hunters(self, dt: float) -> None:
        """Hunters walk at a steady pace from waypoint to waypoint on the ground."""
        pos = self.centres[self.hunters]
        fresh = self._random_points(pos.shape[0])        # drawn every frame: deterministic
        to = self.waypoints - pos[:, [0, 2]]
        dist = np.hypot(to[:, 0], to[:, 1])
        reached = dist < WAYPOINT_REACHED
        self.waypoints[reached] = fresh[reached]
        to = self.waypoints - pos[:, [0, 2]]
        dist = np.maximum(np.hypot(to[:, 0], to[:, 1]), 1e-9)
        step = to / dist[:, None] * np.minimum(HUNTER_SPEED * dt, dist)[:, None]
        pos[:, 0] += step[:, 0]
        pos[:, 2] += step[:, 1]
        lift = -mesh_base(self.kinds[1].mesh) * self.bounding_radius[self.hunters]
        pos[:, 1] = self.ground_height(pos[:, 0], pos[:, 2]) + lift
        self.yaw[self.hunters] = np.arctan2(to[:, 0], -to[:, 1]).astype(np.float32)

    def _leashed(self, target: np.ndarray, dt: float) -> np.ndarray:
        """``target`` (each bird's nearest sensing probe, -1 for none) with the leash applied, as games
        do with aggro: a bird chases for at most :data:`LEASH` seconds on end, then goes back to its
        flock and ignores every probe for :data:`CALM` seconds.  Without it a chaser stays near the
        hunter that senses it, and within a minute nearly every bird chased.  O(birds), NumPy."""
        self._calm_for = np.maximum(self._calm_for - dt, 0.0)
        target = np.where(self._calm_for > 0.0, -1, target)
        self._chased_for = np.where(target >= 0, self._chased_for + dt, 0.0)
        tired = self._chased_for > LEASH
        self._calm_for[tired] = CALM
        self._chased_for[tired] = 0.0
        target[tired] = -1
        return target

    def update(self, t: float, dt: float, camera_position: np.ndarray) -> np.ndarray:
        """Move hunters, then creatures: flock (cohesion, alignment, separation),
        wander, stay in the arena and the air band, chase the nearest hunter (or
        the camera) that senses them.

        Cost: O(objects) NumPy, one ``overlapping_many`` over the camera and all
        hunters, one ``overlapping_pairs``, one ``update_many`` of the birds' tree.
        """
        dt = float(min(max(dt, 0.0), 0.1))
        self._move_hunters(dt)
        first = self.first
        pos = self.centres[first:]
        vel = self.velocity
        points, radii = self.probes(camera_position)                 # the camera is probe 0
        target = self._leashed(self.aggro.nearest(points, radii), dt)
        chasing = np.flatnonzero(target >= 0)
        self.aggro_count = int(chasing.shape[0])
        accel = self._rng.normal(0.0, WANDER_ACCEL, size=vel.shape)
        accel[:, 1] *= 0.3
        # Flocking: cohesion towards the flock's centre, alignment with its mean velocity.
        members = np.bincount(self.flock, minlength=self.flocks).astype(np.float64)[:, None]
        members = np.maximum(members, 1.0)
        centre = np.stack([np.bincount(self.flock, pos[:, a], self.flocks) for a in range(3)], axis=1) / members
        mean_vel = np.stack([np.bincount(self.flock, vel[:, a], self.flocks) for a in range(3)], axis=1) / members
        to_centre = centre[self.flock] - pos
        accel += np.clip(to_centre * COHESION * 0.1, -COHESION * 8.0, COHESION * 8.0)
        accel += (mean_vel[self.flock] - vel) * ALIGNMENT
        # Separation: birds whose personal spaces meet push apart, harder the deeper.
        i, j = self.aggro.pairs()
        if i.shape[0]:
            d = pos[i] - pos[j]
            dist = np.maximum(np.sqrt(np.einsum("ij,ij->i", d, d)), 1e-3)
            reach = self.aggro.space[i] + self.aggro.space[j]
            push = d / dist[:, None] * (SEPARATION * np.maximum(1.0 - dist / reach, 0.0))[:, None]
            n = pos.shape[0]
            for a in range(3):
                accel[:, a] += np.bincount(i, push[:, a], n) - np.bincount(j, push[:, a], n)
        out = np.hypot(pos[:, 0], pos[:, 2]) > self.arena
        accel[out, 0] -= pos[out, 0] * 0.05
        accel[out, 2] -= pos[out, 2] * 0.05
        ground = self.ground_height(pos[:, 0], pos[:, 2])
        height = pos[:, 1] - ground
        accel[:, 1] += np.clip(np.mean(ALTITUDE) - height, -20.0, 20.0) * 0.3
        if chasing.shape[0]:
            to = points[target[chasing]] - pos[chasing]
            dist = np.maximum(np.linalg.norm(to, axis=1), 1e-6)
            push = np.where(dist > CHASE_STOP, CHASE_ACCEL, -CHASE_ACCEL)
            accel[chasing] += to / dist[:, None] * push[:, None]
        vel += accel * dt
        limit = np.full(vel.shape[0], CRUISE_SPEED)
        limit[chasing] = CHASE_SPEED
        speed = np.maximum(np.linalg.norm(vel, axis=1), 1e-9)
        vel *= np.minimum(1.0, limit / speed)[:, None]
        pos += vel * dt
        pos[:, 1] = np.maximum(pos[:, 1], ground + ALTITUDE[0] * 0.5)

        self.yaw[first:] = np.arctan2(vel[:, 0], -vel[:, 2]).astype(np.float32)
        self.aggro.move(pos)
        self._chasing = chasing
        if self._interest_on and self.interest is not None:
            self.interest.tick(points, radii, dt, centres=pos)      # the server's tick, after the moves
            self._show_interest()
        else:
            self.highlight[first:] = 0.0
            self.highlight[first + chasing] = 1.0
        return np.arange(self.hunters.start, len(self), dtype=np.int64)


def make_swarm(objects: int = 30_000, seed: int = 1) -> SwarmScene:
    """Build the swarm: 3 % static rocks, 1 % hunters (each sensing within its own
    radius, :data:`SENSE_RADIUS`), the rest creatures (view distance 120-200 m)
    in an arena sized for constant density.

    Cost: O(objects), vectorised, plus building the aggro tree.
    """
    rng = np.random.default_rng(seed)
    counts = allocate_counts(objects, {"bird": 1.0 - HUNTER_SHARE - ROCK_SHARE, "rock": ROCK_SHARE,
                                       "hunter": HUNTER_SHARE})
    arena = arena_radius(counts["bird"])
    world = float(2 ** math.ceil(math.log2(2.0 * arena + 800.0)))
    terrain = Terrain.generate(world, seed, 25.0, resolution=129,
                               low_colour=(0.36, 0.40, 0.26), high_colour=(0.50, 0.47, 0.38))
    parts: list[dict[str, np.ndarray]] = []
    for index, kind in enumerate(SWARM_KINDS):
        n = counts[kind.name]
        a = rng.uniform(0.0, 2.0 * np.pi, size=n)
        r = arena * np.sqrt(rng.random(n))
        x, z = r * np.cos(a), r * np.sin(a)
        ground = terrain.height_at(x, z)
        if kind.name == "rock":
            radius = rng.uniform(2.0, 6.0, size=n)
            y = ground - mesh_base(kind.mesh) * radius
            view = rng.uniform(300.0, 400.0, size=n)
        elif kind.name == "hunter":
            radius = np.full(n, 3.0)
            y = ground - mesh_base(kind.mesh) * radius  # standing on the ground
            view = rng.uniform(250.0, 300.0, size=n)
        else:
            # Birds start in flocks: around a flock centre, heading the flock's way.
            flocks = max(1, n // FLOCK_SIZE)
            flock = rng.integers(0, flocks, size=n)
            fa = rng.uniform(0.0, 2.0 * np.pi, size=flocks)
            fr = arena * np.sqrt(rng.random(flocks))
            fx, fz = fr * np.cos(fa), fr * np.sin(fa)
            x, z = fx[flock] + rng.normal(0.0, 10.0, n), fz[flock] + rng.normal(0.0, 10.0, n)
            ground = terrain.height_at(x, z)
            radius = rng.uniform(0.8, 1.6, size=n)
            y = ground + rng.uniform(*ALTITUDE, size=n)
            view = rng.uniform(120.0, 200.0, size=n)
            # build_arrays puts each kind in Morton order: the flock ids follow it.
            flock = flock[morton_order(np.stack([x, y, z], axis=1))]
            flock_heading = rng.uniform(0.0, 2.0 * np.pi, size=flocks)
        parts.append(dict(kind=np.asarray(index), centres=np.stack([x, y, z], axis=1), view_distance=view,
                          bounding_radius=radius, yaw=rng.uniform(0.0, 2.0 * np.pi, size=n),
                          tint=rng.uniform(-0.5, 0.5, size=n)))
    arrays = build_arrays(parts, len(SWARM_KINDS))
    scene = SwarmScene(
        name="swarm", seed=seed, kinds=SWARM_KINDS, terrain=terrain,
        world_size=world, world_origin=(-world / 2.0, -world / 2.0, -world / 2.0), fog_distance=600.0,
        description="creatures and hunters moving every frame; red creatures chase a hunter or you",
        kind=arrays["kind"], centres=arrays["centres"], view_distance=arrays["view_distance"],
        bounding_radius=arrays["bounding_radius"], yaw=arrays["yaw"], tint=arrays["tint"],
    )
    n_creatures = counts["bird"]
    heading = flock_heading[flock] + rng.normal(0.0, 0.3, size=n_creatures)
    velocity = np.stack([np.sin(heading), np.zeros(n_creatures), -np.cos(heading)], axis=1) * CRUISE_SPEED
    scene.setup(seed, arena, velocity, rng.uniform(*SENSE_RADIUS, size=counts["hunter"]), flock)
    return scene


def make_aggro(objects: int = 30_000, seed: int = 1) -> SwarmScene:
    """The swarm seen as a game server sees it: the interest view on from the start, following the
    hunter that senses the most birds, and the scripted camera circling it (see :func:`make_swarm`).

    Cost: :func:`make_swarm`'s, plus building the interest manager (O(birds)).
    """
    scene = make_swarm(objects, seed)
    scene.name = "aggro"
    scene.description = ("the swarm as a server's players: one player's interest set and its "
                         "enter / leave events, every player ticked by one InterestManager")
    scene.orbit_followed = True
    scene.follow(scene.busiest_hunter())
    scene.set_interest_view(True)
    return scene
