"""Seeded workloads: the worlds, objects and camera paths the benchmarks run on.

Every workload is a pure function of its size and seed, so two runs (and two
machines) measure the same data.  The world follows the issue: a root of 4096
units, 3-D, objects standing on a ground plane (z near 0), view distances in
classes from about 20 (grass, pebbles) to about 2,500 (landmarks), many small
and few large, and a camera path at eye height through the world.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

WORLD_SIZE = 4096.0
"""Edge of the forest world and of the tree's initial root (the issue's 4096)."""

EYE_HEIGHT = 1.7
"""Camera height above the ground plane."""

# (share of objects, view distance low, high, centre height low, high):
# many small objects, few large ones, view distances from 20 to 2500.
VIEW_CLASSES: tuple[tuple[float, float, float, float, float], ...] = (
    (0.60, 20.0, 30.0, 0.0, 0.5),  # grass, pebbles, debris
    (0.25, 50.0, 100.0, 0.0, 2.0),  # bushes, rocks
    (0.12, 150.0, 400.0, 2.0, 10.0),  # trees
    (0.027, 600.0, 1200.0, 5.0, 20.0),  # buildings, towers
    (0.003, 2000.0, 2500.0, 20.0, 60.0),  # landmarks, mountains
)
MIN_VIEW = 20.0
MAX_VIEW = 2500.0

# The camera path: a wavy line across the world inside a band around y = 2048,
# so that the clusters workload can put its clusters far away from it.
PATH_X = (400.0, 3700.0)
PATH_Y_CENTRE = 2048.0
PATH_Y_AMPLITUDE = 250.0


@dataclass
class Workload:
    """Objects and query points of one benchmark.

    centres : ndarray, shape (n, 3), float64
    radii : ndarray, shape (n,), float64 (the view distances)
    path : ndarray, shape (m, 3), float64 (camera positions, in order)
    """

    name: str
    centres: np.ndarray
    radii: np.ndarray
    path: np.ndarray
    root_size: float = WORLD_SIZE
    root_origin: tuple[float, float, float] = (0.0, 0.0, 0.0)
    extra: dict = field(default_factory=dict)

    @property
    def n(self) -> int:
        return len(self.radii)


def _classes(rng: np.random.Generator, n: int) -> tuple[np.ndarray, np.ndarray]:
    """Draw view distances and centre heights by class: (radii (n,), z (n,))."""
    shares = np.array([c[0] for c in VIEW_CLASSES])
    kind = rng.choice(len(VIEW_CLASSES), size=n, p=shares / shares.sum())
    table = np.array([c[1:] for c in VIEW_CLASSES])
    lo_r, hi_r, lo_z, hi_z = table[kind].T
    radii = lo_r + (hi_r - lo_r) * rng.random(n)
    z = lo_z + (hi_z - lo_z) * rng.random(n)
    return radii, z


def camera_path(m: int, seed: int = 7) -> np.ndarray:
    """A wavy camera path across the forest at eye height: shape (m, 3).

    It stays inside ``PATH_Y_CENTRE +- (PATH_Y_AMPLITUDE + 20)``; a little
    seeded jitter keeps the points off the node grid's exact boundaries.
    """
    rng = np.random.default_rng(seed)
    t = np.linspace(0.0, 1.0, m)
    x = PATH_X[0] + (PATH_X[1] - PATH_X[0]) * t + rng.uniform(-20, 20, m)
    y = PATH_Y_CENTRE + PATH_Y_AMPLITUDE * np.sin(3.0 * np.pi * t) + rng.uniform(-20, 20, m)
    z = np.full(m, EYE_HEIGHT) + rng.uniform(0.0, 0.3, m)
    return np.column_stack([x, y, z])


def path_box(path: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Axis-aligned bounds (lo (3,), hi (3,)) of a camera path."""
    return path.min(axis=0), path.max(axis=0)


def forest(n: int, m: int = 64, seed: int = 1) -> Workload:
    """``n`` objects spread uniformly over the 4096 x 4096 ground plane.

    Density grows with ``n`` (the world is fixed), and so does the output.
    """
    rng = np.random.default_rng(seed)
    radii, z = _classes(rng, n)
    xy = rng.uniform(0.0, WORLD_SIZE, (n, 2))
    centres = np.column_stack([xy, z])
    return Workload(f"forest-{n}", centres, radii, camera_path(m))


def remote_mask(centres: np.ndarray, radii: np.ndarray, path: np.ndarray) -> np.ndarray:
    """True where an object lies beyond twice its view distance from the whole
    path along at least one axis: shape (n,), bool."""
    lo, hi = path_box(path)
    axis_gap = np.maximum(np.maximum(lo - centres, centres - hi), 0.0)
    return axis_gap.max(axis=1) > 2.0 * radii


def clusters(
    n_forest: int, n_clustered: int, m: int = 64, seed: int = 2, n_clusters: int = 16
) -> Workload:
    """The forest plus dense clusters of small objects far from the path.

    The first ``n_forest`` objects are exactly ``forest(n_forest)``; then come
    ``n_clustered`` objects (view distance 20-30) in ``n_clusters`` Gaussian
    clusters (sigma 25) in the bands y < 900 and y > 3200, at least 1,500 units
    from the path along y, far beyond twice their view distance.
    ``extra["n_forest"]`` says where the clusters start.
    """
    base = forest(n_forest, m)
    rng = np.random.default_rng(seed)
    k = n_clusters
    cx = rng.uniform(200.0, WORLD_SIZE - 200.0, k)
    cy = np.where(np.arange(k) % 2 == 0, rng.uniform(150.0, 850.0, k), rng.uniform(3250.0, 3950.0, k))
    which = np.arange(n_clustered) % k
    xy = np.column_stack([cx[which], cy[which]]) + rng.normal(0.0, 25.0, (n_clustered, 2))
    xy = np.clip(xy, 1.0, WORLD_SIZE - 1.0)
    z = rng.uniform(0.0, 0.5, n_clustered)
    radii = rng.uniform(20.0, 30.0, n_clustered)
    centres = np.column_stack([xy, z])
    if not remote_mask(centres, radii, base.path).all():
        raise RuntimeError("clusters workload: a clustered object is not remote from the path")
    return Workload(
        f"clusters-{n_forest}+{n_clustered}",
        np.concatenate([base.centres, centres]),
        np.concatenate([base.radii, radii]),
        base.path,
        extra={"n_forest": n_forest},
    )


COLOCATED_CENTRE = (2048.25, 2048.75, 5.125)
COLOCATED_RADIUS = 30.0


def colocated(n: int, m: int = 32, seed: int = 3) -> Workload:
    """``n`` objects with exactly the same centre and view distance.

    The query points lie half inside the common sphere (every object is
    visible) and half outside (none is), never on its surface.
    """
    rng = np.random.default_rng(seed)
    centres = np.tile(np.array(COLOCATED_CENTRE), (n, 1))
    radii = np.full(n, COLOCATED_RADIUS)
    direction = rng.normal(size=(m, 3))
    direction /= np.linalg.norm(direction, axis=1, keepdims=True)
    dist = np.where(np.arange(m) % 2 == 0, rng.uniform(0.0, 0.9, m), rng.uniform(1.1, 3.0, m))
    path = np.array(COLOCATED_CENTRE) + direction * (dist * COLOCATED_RADIUS)[:, None]
    return Workload(f"colocated-{n}", centres, radii, path)


def moving_steps(wl: Workload, frames: int, seed: int = 4) -> list[np.ndarray]:
    """Centres for ``frames`` frames of small random moves: a list of (n, 3).

    Each frame every object steps along the ground by 1% of its view distance
    in a random direction, reflected back into the world at its edges.
    """
    rng = np.random.default_rng(seed)
    out = []
    c = wl.centres.copy()
    for _ in range(frames):
        angle = rng.uniform(0.0, 2.0 * np.pi, wl.n)
        step = 0.01 * wl.radii
        c = c.copy()
        c[:, 0] += step * np.cos(angle)
        c[:, 1] += step * np.sin(angle)
        for axis in (0, 1):
            v = c[:, axis]
            v = np.where(v < 0.0, -v, v)
            v = np.where(v >= WORLD_SIZE, 2.0 * WORLD_SIZE - v - 1e-6, v)
            c[:, axis] = v
        out.append(c)
    return out


def moving(n: int, m: int = 32, seed: int = 5) -> Workload:
    """A forest of ``n`` objects that move every frame (see :func:`moving_steps`)."""
    wl = forest(n, m, seed)
    wl.name = f"moving-{n}"
    return wl


SPRAWL_CENTRE = (1000.5, 1300.25)
SPRAWL_INNER = 2700.0
SPRAWL_PATH_RADIUS = 150.0


def sprawl(sizes: list[int], n: int, m: int = 64, seed: int = 6) -> Workload:
    """The forest at constant density, the world growing with ``n``.

    Objects fill nested discs around ``SPRAWL_CENTRE``: the inner disc (radius
    ``SPRAWL_INNER``) holds ``sizes[0]`` objects, and each larger size adds a ring
    that keeps the density constant.  The inner disc is the same for every size,
    and the camera path (a loop of radius 150 at its centre) is more than
    ``MAX_VIEW`` from every ring, so the output near the camera is exactly the
    same for every ``n``: only ``n`` changes.  The root is sized for the
    largest world so the number of levels is the same too.
    """
    if n not in sizes:
        raise ValueError(f"sprawl size {n} not in {sizes}")
    sizes = sorted(sizes)
    density = sizes[0] / (np.pi * SPRAWL_INNER**2)
    parts_c, parts_r = [], []
    inner = 0.0
    prev = 0
    for k, size in enumerate(sizes):
        if size > n:
            break
        outer = np.sqrt(size / (np.pi * density))
        count = size - prev
        rng = np.random.default_rng(seed * 1000 + k)
        radii, z = _classes(rng, count)
        rho = np.sqrt(rng.uniform(inner**2, outer**2, count))
        phi = rng.uniform(0.0, 2.0 * np.pi, count)
        xy = np.column_stack([rho * np.cos(phi), rho * np.sin(phi)]) + np.array(SPRAWL_CENTRE)
        parts_c.append(np.column_stack([xy, z]))
        parts_r.append(radii)
        inner, prev = outer, size
    largest = np.sqrt(sizes[-1] / (np.pi * density))
    root = float(2 ** int(np.ceil(np.log2(2.0 * largest + 2.0 * MAX_VIEW))))
    t = np.linspace(0.0, 2.0 * np.pi, m, endpoint=False)
    jitter = np.random.default_rng(seed).uniform(-3.0, 3.0, (m, 2))
    path = np.column_stack(
        [
            SPRAWL_CENTRE[0] + SPRAWL_PATH_RADIUS * np.cos(t) + jitter[:, 0],
            SPRAWL_CENTRE[1] + SPRAWL_PATH_RADIUS * np.sin(t) + jitter[:, 1],
            np.full(m, EYE_HEIGHT),
        ]
    )
    # Centred on the path, shifted by a fixed odd offset that keeps the path
    # off the root's midlines; the ground plane z = 0 is the root's floor as
    # in the forest.
    origin = (SPRAWL_CENTRE[0] - root / 2 - 333.0, SPRAWL_CENTRE[1] - root / 2 - 517.0, 0.0)
    return Workload(
        f"sprawl-{n}",
        np.concatenate(parts_c),
        np.concatenate(parts_r),
        path,
        root_size=root,
        root_origin=origin,
    )


# ------------------------------------------------------------ many viewers

# Interest radii of server entities (share, low, high): most mobs matter only
# nearby, a few (bosses, vehicles, events) far away.
INTEREST_CLASSES: tuple[tuple[float, float, float], ...] = (
    (0.60, 10.0, 25.0),
    (0.30, 25.0, 60.0),
    (0.10, 60.0, 150.0),
)
TOWNS = 16
TOWN_SIGMA = 100.0
"""Towns: Gaussian crowds of this spread (units) around seeded centres."""
TOWN_SHARE_ENTITIES = 0.10


@dataclass
class Crowd:
    """Entities with per-entity radii, and the viewers that ask about them.

    A viewer sees an entity when the viewer lies inside the entity's sphere
    (distance to its centre <= its radius): the tree's question, asked for
    every viewer at once.

    centres : ndarray, shape (n, 3), float64
    radii : ndarray, shape (n,), float64 (per-entity interest radius)
    viewers : ndarray, shape (m, 3), float64
    """

    name: str
    centres: np.ndarray
    radii: np.ndarray
    viewers: np.ndarray
    world: float

    @property
    def n(self) -> int:
        return len(self.radii)


def _radii_by_class(rng: np.random.Generator, n: int, classes: tuple[tuple[float, float, float], ...]) -> np.ndarray:
    shares = np.array([c[0] for c in classes])
    kind = rng.choice(len(classes), size=n, p=shares / shares.sum())
    lo, hi = np.array([c[1:] for c in classes])[kind].T
    return lo + (hi - lo) * rng.random(n)


def interest(n: int, m: int, world: float = WORLD_SIZE, seed: int = 8) -> Crowd:
    """Interest management on a game server: ``n`` entities, ``m`` viewers (players).

    Entities stand on a ``world`` x ``world`` ground plane, 90% spread
    uniformly and 10% in 16 towns (Gaussian, sigma 100); each has its own
    radius (60% 10-25, 30% 25-60, 10% 60-150).  Half the viewers stand in
    the towns, half anywhere, at eye height; so town players see several
    times more entities than the rest.  Pure function of the arguments.
    """
    rng = np.random.default_rng(seed)
    margin = min(400.0, world / 4)
    towns = rng.uniform(margin, world - margin, (TOWNS, 2))
    in_town = int(round(n * TOWN_SHARE_ENTITIES))
    xy = np.concatenate([rng.uniform(0.0, world, (n - in_town, 2)),
                         towns[np.arange(in_town) % TOWNS] + rng.normal(0.0, TOWN_SIGMA, (in_town, 2))])
    xy = np.clip(xy, 0.0, np.nextafter(world, 0.0))
    centres = np.column_stack([xy, rng.uniform(0.0, 2.0, n)])
    radii = _radii_by_class(rng, n, INTEREST_CLASSES)
    half = m // 2
    vxy = np.concatenate([towns[np.arange(half) % TOWNS] + rng.normal(0.0, TOWN_SIGMA, (half, 2)),
                          rng.uniform(0.0, world, (m - half, 2))])
    vxy = np.clip(vxy, 0.0, np.nextafter(world, 0.0))
    viewers = np.column_stack([vxy, np.full(m, EYE_HEIGHT) + rng.uniform(0.0, 0.3, m)])
    return Crowd(f"interest-{n}x{m}", centres, radii, viewers, world)


#: The heavier interest case: every entity's radius times this (about four times the answers).
HEAVY_REACH = 2.0


def interest_heavy(n: int, m: int, world: float = WORLD_SIZE, seed: int = 8) -> Crowd:
    """:func:`interest` with every radius doubled (:data:`HEAVY_REACH`): about four times as many
    entities per viewer (on 2,000 x 1M, a median of about 1,700 rather than 412)."""
    wl = interest(n, m, world, seed)
    return Crowd(f"interest-heavy-{n}x{m}", wl.centres, wl.radii * HEAVY_REACH, wl.viewers, world)


#: Radii of :func:`sparse_points`' objects (uniform), and the cube they and the points fill.
SPARSE_RADII = (1.0, 10.0)
SPARSE_WORLD = 4096.0


def sparse_points(n: int, m: int, seed: int = 14) -> Crowd:
    """Points that find little: ``n`` spheres (radius 1-10, uniform) and ``m`` points, all uniform in
    a 4096-cube.  On 200k x 1M a point lies in 0.0034 spheres on average (about 3,400 answers in
    all), so a batch query's cost is its walks, not its answers.  Pure function of the arguments."""
    rng = np.random.default_rng(seed)
    centres = rng.uniform(0.0, SPARSE_WORLD, (n, 3))
    radii = rng.uniform(*SPARSE_RADII, n)
    points = rng.uniform(0.0, SPARSE_WORLD, (m, 3))
    return Crowd(f"sparse-{n}x{m}", centres, radii, points, SPARSE_WORLD)


def mmo(n_mobs: int = 5_000, n_players: int = 100, seed: int = 9) -> Crowd:
    """The case networking libraries measure: 100 players among 5,000 mobs.

    A 1000 x 1000 map, every mob with its own radius (the same classes as
    :func:`interest`), players half in towns and half anywhere.
    """
    wl = interest(n_mobs, n_players, world=1000.0, seed=seed)
    wl.name = f"mmo-{n_mobs}x{n_players}"
    return wl


# ------------------------------------------------------------ broad phase

SWARM_BOUNDING = (0.5, 2.5)
"""Bounding radii of broad-phase creatures: uniform in this range (units)."""
SWARM_SPACING = 6.0
"""Volume per creature is SWARM_SPACING**3, so a creature touches about one other."""


def swarm_frames(n: int, frames: int, seed: int = 10) -> tuple[np.ndarray, list[np.ndarray]]:
    """``n`` creatures with bounding spheres flying in a cube, ``frames`` frames.

    Returns (bounding radii (n,), centres per frame: a list of (n, 3)).  The
    cube's edge keeps the density the same at every ``n`` (about one contact
    per creature); every frame each creature moves by up to a quarter of its
    radius, bouncing off the cube's walls.
    """
    rng = np.random.default_rng(seed)
    edge = SWARM_SPACING * n ** (1.0 / 3.0)
    radii = rng.uniform(*SWARM_BOUNDING, n)
    return radii, bouncing_frames(rng, radii, edge, frames)


def bouncing_frames(rng: np.random.Generator, radii: np.ndarray, edge: float, frames: int) -> list[np.ndarray]:
    """Centres per frame of creatures with ``radii`` flying in a cube of ``edge``: each starts anywhere
    and moves by up to a quarter of its radius a frame, bouncing off the walls (a list of (n, 3))."""
    n = radii.shape[0]
    c = rng.uniform(0.0, edge, (n, 3))
    velocity = rng.normal(0.0, 1.0, (n, 3))
    velocity *= (0.25 * radii / np.linalg.norm(velocity, axis=1))[:, None]
    out = []
    for _ in range(frames):
        c = c + velocity
        low, high = c < 0.0, c >= edge
        c = np.where(low, -c, np.where(high, 2.0 * edge - c - 1e-9, c))
        velocity = np.where(low | high, -velocity, velocity)
        out.append(c)
    return out
