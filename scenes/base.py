"""What a scene is: plain NumPy arrays describing objects, and no drawing.

A scene is built from a seed and an object count and is deterministic.  The
engine reads the arrays, builds the view-distance tree and the GPU buffers,
and calls :meth:`Scene.update` once per frame with the simulation clock.
Objects are sorted by kind, so ``kind_offsets`` slices each kind out of every
array and a sorted list of object indices falls into per-kind runs.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TypedDict

import numpy as np
from numpy.typing import ArrayLike, NDArray

__all__ = ["MESH_BASES", "Markers", "ObjectKind", "Pose", "Scene", "SceneArrays", "Terrain", "allocate_counts",
           "build_arrays", "mesh_base", "morton_order", "no_markers", "smooth_noise"]

#: Lowest y of each mesh the engine draws, in units of the instance scale (the
#: bounding radius): a scene stands an object on the ground by placing its
#: centre at ``ground - base * radius``.  Scenes import no engine, so the
#: numbers live here; ``tests/engine/test_scene_data.py`` checks them against
#: ``engine.meshes`` (they are the meshes' float32 minima, exactly).
MESH_BASES: dict[str, float] = {
    "cube": -0.5773492455482483,
    "rock": -0.5979173183441162,
    "pebble": -0.39142683148384094,
    "bush": -0.7605158090591431,
    "cone_tree": -0.9900000095367432,
    "grass_card": -0.699999988079071,
    "tower": -0.9700000286102295,
    "creature": -0.11999999731779099,
    "hunter": -0.8999999761581421,
    "house_walls": -0.5,
    "house_roof": 0.20000000298023224,
    "town_walls": 0.0,
    "town_roofs": 0.0,
    "town_trees": 0.0,
}


def mesh_base(mesh: str) -> float:
    """:data:`MESH_BASES` entry of ``mesh``; ``KeyError`` naming the known meshes.

    >>> mesh_base("hunter")
    -0.8999999761581421
    """
    try:
        return MESH_BASES[mesh]
    except KeyError:
        raise KeyError(f"unknown mesh {mesh!r}; known meshes: {', '.join(sorted(MESH_BASES))}") from None


@dataclass(frozen=True)
class ObjectKind:
    """One object class: how it looks (mesh name, colour) and whether it is solid.

    ``mesh`` names a mesh the renderer knows (``engine.meshes.MESHES``, listed
    with their bases in :data:`MESH_BASES`); the scene does not import the
    engine, it only names the mesh.
    """

    name: str
    mesh: str
    colour: tuple[float, float, float]
    solid: bool = False


@dataclass(frozen=True)
class Pose:
    """A camera placement: position (3,), yaw and pitch in degrees."""

    position: np.ndarray
    yaw: float
    pitch: float


@dataclass(frozen=True)
class Markers:
    """Overlay marks a scene asks the engine to draw on top of the frame: plain arrays, no drawing.

    Attributes
    ----------
    box_centres : ndarray, shape (k, 3), float64
    box_half : ndarray, shape (k,), float64: half the edge of each axis-aligned box
    box_colours : ndarray, shape (k, 4), float32: RGBA, alpha fades a flash
    sphere_centres : ndarray, shape (j, 3), float64
    sphere_radii : ndarray, shape (j,), float64: drawn as three great circles
    sphere_colours : ndarray, shape (j, 4), float32
    """

    box_centres: NDArray[np.float64]
    box_half: NDArray[np.float64]
    box_colours: NDArray[np.float32]
    sphere_centres: NDArray[np.float64]
    sphere_radii: NDArray[np.float64]
    sphere_colours: NDArray[np.float32]

    def __len__(self) -> int:
        return int(self.box_half.shape[0] + self.sphere_radii.shape[0])


def no_markers() -> Markers:
    """An empty :class:`Markers` (a scene with nothing to mark)."""
    return Markers(np.zeros((0, 3)), np.zeros(0), np.zeros((0, 4), np.float32), np.zeros((0, 3)), np.zeros(0),
                   np.zeros((0, 4), np.float32))


def smooth_noise(x: ArrayLike, z: ArrayLike, seed: int, octaves: int = 4, wavelength: float = 1200.0) -> np.ndarray:
    """Cheap deterministic smooth noise in about [-1, 1]: a sum of rotated sines.

    Parameters
    ----------
    x, z : ndarray, same shape, float64
    seed : int
    octaves : int
        Each octave halves the wavelength and the amplitude.
    wavelength : float
        Longest wavelength in metres.

    Cost: O(octaves * size), vectorised.
    """
    rng = np.random.default_rng(seed)
    x = np.asarray(x, dtype=np.float64)
    z = np.asarray(z, dtype=np.float64)
    total = np.zeros(np.broadcast(x, z).shape)
    amp_sum = 0.0
    for octave in range(octaves):
        k = 2.0 * np.pi / (wavelength / 2.0 ** octave)
        amp = 0.5 ** octave
        for _ in range(2):
            a = rng.uniform(0.0, np.pi)
            phase = rng.uniform(0.0, 2.0 * np.pi)
            total += amp * np.sin(k * (x * np.cos(a) + z * np.sin(a)) + phase)
            amp_sum += amp
    return total / amp_sum * 1.6


@dataclass
class Terrain:
    """A square height field, drawn as one grid mesh.

    ``heights[i, j]`` is the ground height at ``x = x0 + j * step``,
    ``z = z0 + i * step``; between samples the height is bilinear.
    """

    origin: tuple[float, float]
    size: float
    heights: np.ndarray
    low_colour: tuple[float, float, float] = (0.30, 0.45, 0.20)
    high_colour: tuple[float, float, float] = (0.52, 0.52, 0.36)

    @classmethod
    def generate(cls, size: float, seed: int, amplitude: float, resolution: int = 257,
                 **colours: tuple[float, float, float]) -> Terrain:
        """Rolling hills ``amplitude`` metres high over a ``size`` square centred on the origin."""
        origin = (-size / 2.0, -size / 2.0)
        coords = np.linspace(0.0, size, resolution)
        xs, zs = np.meshgrid(origin[0] + coords, origin[1] + coords)
        heights = amplitude * 0.5 * (smooth_noise(xs, zs, seed) + 1.0)
        return cls(origin, float(size), heights, **colours)

    @property
    def step(self) -> float:
        return self.size / (int(self.heights.shape[0]) - 1)

    def height_at(self, x: ArrayLike, z: ArrayLike) -> NDArray[np.float64]:
        """Ground height under points, bilinear; points outside are clamped to the edge.

        Parameters
        ----------
        x, z : ndarray, same shape, float64

        Returns
        -------
        ndarray, that shape, float64
        """
        res = self.heights.shape[0]
        fx = np.clip((np.asarray(x, dtype=np.float64) - self.origin[0]) / self.step, 0.0, res - 1.0)
        fz = np.clip((np.asarray(z, dtype=np.float64) - self.origin[1]) / self.step, 0.0, res - 1.0)
        j = np.minimum(fx.astype(np.int64), res - 2)
        i = np.minimum(fz.astype(np.int64), res - 2)
        tx, tz = fx - j, fz - i
        h = self.heights
        top = h[i, j] * (1.0 - tx) + h[i, j + 1] * tx
        bottom = h[i + 1, j] * (1.0 - tx) + h[i + 1, j + 1] * tx
        height: NDArray[np.float64] = top * (1.0 - tz) + bottom * tz
        return height

    @property
    def height_range(self) -> tuple[float, float]:
        return float(self.heights.min()), float(self.heights.max())


def allocate_counts(total: int, fractions: dict[str, float], fixed: dict[str, int] | None = None) -> dict[str, int]:
    """Split ``total`` objects between kinds: ``fixed`` counts first, the rest by fraction.

    The rounding remainder goes to the first fractional kind; counts never go
    negative and always sum to ``total``.

    >>> allocate_counts(10, {"a": 0.5, "b": 0.5}, fixed={"t": 3})
    {'t': 3, 'a': 4, 'b': 3}
    """
    if total < 0:
        raise ValueError(f"object count must be >= 0, got {total}")
    counts: dict[str, int] = {}
    left = total
    for name, n in (fixed or {}).items():
        counts[name] = min(n, left)
        left -= counts[name]
    weight = sum(fractions.values())
    shares = {name: int(left * f / weight) for name, f in fractions.items()}
    first = next(iter(fractions))
    shares[first] += left - sum(shares.values())
    counts.update(shares)
    return counts


#: Marks an optional per-object array the caller did not give (compared by identity,
#: so an explicitly passed empty array is still checked against the object count).
_UNSET: NDArray[np.float64] = np.zeros(0)
_UNSET.flags.writeable = False


@dataclass
class Scene:
    """Objects as structure-of-arrays, sorted by kind, plus ground and camera path.

    Attributes
    ----------
    kinds : tuple of ObjectKind
    kind : ndarray, shape (n,), int32, non-decreasing
    centres : ndarray, shape (n, 3), float64
        Bounding-sphere centres (also where the mesh is drawn).
    view_distance : ndarray, shape (n,), float64
        How far away the object can be seen; the radius stored in the tree.
    bounding_radius : ndarray, shape (n,), float64
        Radius of a sphere holding the whole mesh; also the mesh scale.
    yaw, tint, highlight : ndarray, shape (n,), float32
        Heading (radians), colour variation in [-0.5, 0.5], highlight 0..1.
    begin_distance : ndarray, shape (n,), float64
        Visible only from at least this far (0: from anywhere); a hierarchical
        LOD stand-in uses it to give way to the objects it stands for.
    world_size, world_origin
        A box holding the scene, a hint for the tree's root (which grows anyway).
    """

    name: str
    seed: int
    kinds: tuple[ObjectKind, ...]
    kind: np.ndarray
    centres: np.ndarray
    view_distance: np.ndarray
    bounding_radius: np.ndarray
    yaw: np.ndarray
    tint: np.ndarray
    world_size: float
    world_origin: tuple[float, float, float]
    terrain: Terrain | None = None
    sky: tuple[float, float, float] = (0.62, 0.74, 0.86)
    fog_distance: float = 2500.0
    #: Highlighted objects (``highlight`` 1) are drawn in this colour.
    highlight_colour: tuple[float, float, float] = (0.95, 0.15, 0.10)
    highlight: np.ndarray = field(default_factory=lambda: _UNSET)     # zeros when not given
    begin_distance: np.ndarray = field(default_factory=lambda: _UNSET)  # zeros when not given
    description: str = ""

    def __post_init__(self) -> None:
        n = self.kind.shape[0]
        if self.highlight is _UNSET:
            self.highlight = np.zeros(n, dtype=np.float32)
        if self.begin_distance is _UNSET:
            self.begin_distance = np.zeros(n)
        for attr, shape in (("centres", (n, 3)), ("view_distance", (n,)), ("bounding_radius", (n,)),
                            ("yaw", (n,)), ("tint", (n,)), ("highlight", (n,)),
                            ("begin_distance", (n,))):
            if getattr(self, attr).shape != shape:
                raise ValueError(f"scene {self.name!r}: {attr} has shape {getattr(self, attr).shape}, expected {shape}")
        if n and not (np.isfinite(self.begin_distance).all() and (self.begin_distance >= 0.0).all()):
            raise ValueError(f"scene {self.name!r}: begin distances must be finite and >= 0")
        if n and np.any(np.diff(self.kind) < 0):
            raise ValueError(f"scene {self.name!r}: objects must be sorted by kind")

    def __len__(self) -> int:
        return int(self.kind.shape[0])

    @property
    def kind_offsets(self) -> NDArray[np.int64]:
        """Start index of each kind's run, plus ``n`` at the end: shape (k + 1,), int64."""
        return np.searchsorted(self.kind, np.arange(len(self.kinds) + 1)).astype(np.int64)

    def kind_counts(self) -> dict[str, int]:
        return {k.name: int(c) for k, c in zip(self.kinds, np.diff(self.kind_offsets))}

    def camera_pose(self, u: float) -> Pose:
        """Where the scripted (headless) camera is at path fraction ``u`` in [0, 1].

        By default one circle a third of the world across around its centre,
        flying forwards a little above the ground and looking slightly down;
        scenes override it with a path that shows what they are about.
        """
        angle = 2.0 * np.pi * u
        half = 0.5 * self.world_size
        cx, cz = self.world_origin[0] + half, self.world_origin[2] + half
        x, z = cx + half / 3.0 * np.cos(angle), cz + half / 3.0 * np.sin(angle)
        ground = float(self.ground_height(np.array(x), np.array(z)))
        yaw = float(np.degrees(np.arctan2(-np.sin(angle), -np.cos(angle))))
        return Pose(np.array([x, ground + 20.0, z]), yaw, -8.0)

    def ground_height(self, x: ArrayLike, z: ArrayLike) -> NDArray[np.float64]:
        if self.terrain is None:
            return np.zeros(np.broadcast(np.asarray(x), np.asarray(z)).shape)
        return self.terrain.height_at(x, z)

    def update(self, t: float, dt: float, camera_position: np.ndarray) -> np.ndarray | None:
        """Advance the simulation to time ``t`` by ``dt`` seconds.

        Returns the indices (int64) of objects whose centre or view distance
        changed, for the engine to pass to the tree's ``update_many``; ``None``
        for a static scene.
        """
        return None

    def set_brute_force(self, on: bool) -> None:
        """Answer the scene's own spatial queries by brute force (``on``) or its trees.

        The demo's brute-force mode calls it so that a whole frame, not only the
        engine's culling, can be compared with brute force.  Scenes without
        queries of their own ignore it.
        """

    def warm_up(self, camera_position: np.ndarray) -> None:
        """Run the scene's own queries once without changing anything (compiling them
        before the first frame); nothing to do for a static scene."""

    def legend(self) -> list[tuple[str, tuple[float, float, float]]]:
        """What the scene's looks mean, for the HUD: ``(label, rgb)`` pairs; none by default."""
        return []

    def status_lines(self, brief: bool = False) -> list[str]:
        """Lines the HUD shows for this scene (its own batches and timings); none by default.  ``brief``:
        the compact HUD's, a line or two that leave the view free."""
        return []

    # -- the interest view (scenes with players: swarm, aggro) ------------------------------
    @property
    def has_players(self) -> bool:
        """Whether the scene has players whose interest sets it can show (:meth:`set_interest_view`)."""
        return False

    @property
    def interest_on(self) -> bool:
        """Whether the interest view is on (always False without players)."""
        return False

    def set_interest_view(self, on: bool) -> None:
        """Show one player's interest set and its enter / leave events (the I key); ``ValueError``
        for a scene without players (:attr:`has_players`)."""
        raise ValueError(f"scene {self.name!r} has no players")

    def follow_next(self, step: int = 1) -> str:
        """Follow the next (``step`` 1) or previous (-1) player; returns its name.  ``ValueError``
        without players."""
        raise ValueError(f"scene {self.name!r} has no players")

    def followed_name(self) -> str:
        """The followed player's name (``""`` without players)."""
        return ""

    def watch_pose(self) -> Pose | None:
        """A camera pose looking at the followed player, None when there is none to look at (you)."""
        return None

    def markers(self) -> Markers:
        """Marks for the engine to draw on top of the frame (the interest view's); none by default."""
        return no_markers()


def _spread_bits(v: np.ndarray) -> np.ndarray:
    """Insert two zero bits between each of the low 21 bits of ``v`` (uint64)."""
    v = v & np.uint64(0x1FFFFF)
    for shift, mask in ((32, 0x1F00000000FFFF), (16, 0x1F0000FF0000FF), (8, 0x100F00F00F00F00F),
                        (4, 0x10C30C30C30C30C3), (2, 0x1249249249249249)):
        v = (v | (v << np.uint64(shift))) & np.uint64(mask)
    return v


def morton_order(centres: np.ndarray, cells: int = 1 << 16) -> np.ndarray:
    """Permutation sorting points along a Z-order (Morton) curve.

    Objects close in space end up close in memory, so the candidates a tree
    node returns gather from a few cache lines instead of all over the arrays.

    Parameters
    ----------
    centres : ndarray, shape (n, 3), float64
    cells : int
        Grid resolution per axis (at most 2**21).

    Returns
    -------
    ndarray, shape (n,), int64
    """
    if centres.shape[0] == 0:
        return np.zeros(0, dtype=np.int64)
    lo = centres.min(axis=0)
    extent = np.maximum(centres.max(axis=0) - lo, 1e-9)
    q = np.minimum(((centres - lo) / extent * cells).astype(np.int64), cells - 1).astype(np.uint64)
    code = _spread_bits(q[:, 0]) | (_spread_bits(q[:, 1]) << np.uint64(1)) | (_spread_bits(q[:, 2]) << np.uint64(2))
    return np.argsort(code, kind="stable")


class SceneArrays(TypedDict):
    """The per-object arrays :func:`build_arrays` makes, named as :class:`Scene`'s fields."""

    kind: NDArray[np.int32]
    centres: NDArray[np.float64]
    view_distance: NDArray[np.float64]
    bounding_radius: NDArray[np.float64]
    yaw: NDArray[np.float32]
    tint: NDArray[np.float32]


def build_arrays(parts: Sequence[Mapping[str, ArrayLike]], n_kinds: int) -> SceneArrays:
    """Concatenate per-kind blocks (in kind order) into the scene's arrays.

    Within a kind, objects are put in Morton order (see :func:`morton_order`).
    """
    columns = ("centres", "view_distance", "bounding_radius", "yaw", "tint")
    blocks: list[dict[str, NDArray[Any]]] = []
    kinds: list[NDArray[np.int32]] = []
    for p in parts:
        order = morton_order(np.asarray(p["centres"], dtype=np.float64).reshape(-1, 3))
        blocks.append({key: np.asarray(p[key])[order] for key in columns})
        kinds.append(np.full(order.shape[0], p["kind"], dtype=np.int32))

    def joined(key: str) -> NDArray[Any]:
        arrays = [b[key] for b in blocks]
        return np.concatenate(arrays) if arrays else np.zeros((0, 3) if key == "centres" else (0,))

    return SceneArrays(
        kind=np.concatenate(kinds) if kinds else np.zeros(0, dtype=np.int32),
        centres=joined("centres").reshape(-1, 3).astype(np.float64),
        view_distance=joined("view_distance").astype(np.float64),
        bounding_radius=joined("bounding_radius").astype(np.float64),
        yaw=joined("yaw").astype(np.float32),
        tint=joined("tint").astype(np.float32),
    )
