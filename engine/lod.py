"""Level of detail: which mesh each visible instance is drawn with, cross-faded.

Every mesh of :mod:`engine.meshes` that has lower levels owns a
:class:`LodChain`: its meshes from full detail down, and where each lower
level starts, as a *fraction of the instance's view distance*.  Tying the
switch to the view distance (not to metres) means a class seen from far
(towers) keeps its detail proportionally longer than one seen from near
(grass), and the choice needs nothing but the distance the culling pipeline's
distance filter has already computed.

Adjacent levels cross-fade over :data:`CROSSFADE_BAND` around each switch:
both meshes are drawn, with complementary halves of the same dither (a
blue-noise-like interleaved gradient noise) the far fade uses (``assets/shaders/object.frag.glsl``), so every pixel
shows exactly one of them and nothing pops.  The fade value in the instance
record encodes which half: ``0 <= fade <= 1`` keeps dither thresholds below
``fade`` (the far fade, and the incoming level), ``1 < fade <= 2`` keeps those
at or above ``fade - 1`` (the outgoing level).

Everything here is NumPy over the visible instances only; the renderer draws
one instanced call per (kind, level) run of :func:`lod_instances`' output.

>>> levels, blend = choose_levels(np.array([0.1, 0.2, 0.5]), np.array([0.2, 0.45]), band=0.0)
>>> levels.tolist()
[0, 1, 2]
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from engine.meshes import MESHES, get_mesh
from engine.records import CROSSFADE_BAND, FADE_COLUMN, FADE_FRACTION

__all__ = ["LOD_CHAINS", "LodChain", "LodFrame", "LodSelector", "MAX_LEVELS", "choose_levels",
           "full_detail_meshes", "group_triangles", "level_fractions", "lod_chain", "lod_instances", "start_table"]

#: Levels per chain at most (full, low, card): the renderer keeps one
#: instance buffer per (kind, level) and the group key is ``kind * MAX_LEVELS + level``.
MAX_LEVELS = 3

@dataclass(frozen=True)
class LodChain:
    """The levels of one mesh, full detail first.

    Attributes
    ----------
    meshes : tuple of str
        Mesh names (:data:`engine.meshes.MESHES`), level 0 first.
    starts : tuple of float
        Where level ``i + 1`` starts, as a fraction of view distance; strictly
        increasing, at least :data:`CROSSFADE_BAND` apart, and ending before
        the far fade begins (``1 - FADE_FRACTION``), so a cross-fade never
        overlaps another one or the far fade.
    billboard : tuple of bool
        Per level: the mesh is a card in the xy plane that the vertex shader
        turns about +y to face the camera.
    """

    meshes: tuple[str, ...]
    starts: tuple[float, ...]
    billboard: tuple[bool, ...]

    def __post_init__(self) -> None:
        n = len(self.meshes)
        if not 1 <= n <= MAX_LEVELS:
            raise ValueError(f"a LOD chain has 1..{MAX_LEVELS} levels, got {n}")
        if len(self.starts) != n - 1 or len(self.billboard) != n:
            raise ValueError(f"{self.meshes[0]}: need {n - 1} starts and {n} billboard flags, "
                             f"got {len(self.starts)} and {len(self.billboard)}")
        s = np.asarray(self.starts, dtype=np.float64)
        half = CROSSFADE_BAND / 2.0
        if s.size and not (np.isfinite(s).all() and s[0] - half > 0.0 and s[-1] + half <= 1.0 - FADE_FRACTION
                           and (np.diff(s) >= CROSSFADE_BAND).all()):
            raise ValueError(f"{self.meshes[0]}: level starts {list(self.starts)} must increase by at least "
                             f"{CROSSFADE_BAND} and lie in ({half}, {1.0 - FADE_FRACTION - half}]")
        for name in self.meshes:
            get_mesh(name)                      # KeyError naming the known meshes

    @property
    def levels(self) -> int:
        return len(self.meshes)

    def triangles(self) -> tuple[int, ...]:
        """Triangles per instance at each level."""
        return tuple(get_mesh(name).triangle_count for name in self.meshes)


# Screen sizes below assume the demo's 60 degree vertical field of view on a
# 540-pixel-high frame: an object of radius r at distance d spans about
# 470 * r / d pixels of radius.

#: Trees (700 m, radius 5-9 m): beyond 20 % (140 m) a tree is under 25 px and
#: the 7-sided two-tier crown reads the same as one 6-sided cone; beyond 45 %
#: (315 m, about 10 px) a camera-facing card of the same outline does.
TREE_LOD_STARTS = (0.20, 0.45)
#: Bushes (130 m, radius 1-2 m): 80 facets matter only up close; at 30 % (40 m)
#: they are about 15 px, at 70 % (90 m) about 7 px, where a camera-facing card of
#: the same rounded outline and mean colour will do.
BUSH_LOD_STARTS = (0.30, 0.70)
#: Rocks (300 m, radius 1.5-4 m): the lumpy 20-face shape shows up to about 35 %
#: (105 m, 12 px); beyond it an octahedron of the same squash.
ROCK_LOD_STARTS = (0.35,)
#: Pebbles (25 m, radius 0.2-0.45 m): under 10 px beyond 40 % (10 m).
PEBBLE_LOD_STARTS = (0.40,)
#: Grass (40 m, radius 0.5-0.9 m): three crossed cards become one
#: camera-facing card at 35 % (14 m), where a tuft is about 20 px and there
#: are tens of thousands of them.
GRASS_LOD_STARTS = (0.35,)
#: Towers (5 km, radius 38-50 m): landmarks, kept in full up to 30 % (1.5 km,
#: about 14 px), then the gallery goes.
TOWER_LOD_STARTS = (0.30,)
#: Crystals (80 m, radius 0.6-1.6 m): a cube becomes a hexagonal card (its
#: silhouette) at 40 % (32 m, about 15 px).
CUBE_LOD_STARTS = (0.40,)
#: Swarm creatures (radius 1-2 m): the bird's body and tail are a few pixels
#: beyond 30 % of the view distance (about 50 m); the wings' V and a flat body stay.
CREATURE_LOD_STARTS = (0.30,)
#: Hunters (radius 2 m, seen from 250-300 m): the head and the cloak's facets
#: matter up to 25 % (about 70 m, 25 px tall).
HUNTER_LOD_STARTS = (0.25,)
#: Houses (600 m, radius 9 m): the chimney and the walls' top (under the roof) go
#: beyond 30 % (180 m, about 30 px).
HOUSE_LOD_STARTS = (0.30,)
#: Settlement stand-ins (HLOD, 4 km, radius 150 m): each house its own block up to
#: 50 % (2 km, a house about 3 px); beyond, each row of houses one block, trees 3-sided.
TOWN_LOD_STARTS = (0.50,)

#: Full-detail mesh name -> its chain.  Meshes not listed have one level.
LOD_CHAINS: dict[str, LodChain] = {
    "cone_tree": LodChain(("cone_tree", "cone_tree_low", "cone_tree_card"), TREE_LOD_STARTS,
                        (False, False, True)),
    "bush": LodChain(("bush", "bush_low", "bush_far"), BUSH_LOD_STARTS, (False, False, True)),
    "rock": LodChain(("rock", "rock_low"), ROCK_LOD_STARTS, (False, False)),
    "pebble": LodChain(("pebble", "pebble_low"), PEBBLE_LOD_STARTS, (False, False)),
    "grass_card": LodChain(("grass_card", "grass_low"), GRASS_LOD_STARTS, (False, True)),
    "tower": LodChain(("tower", "tower_low"), TOWER_LOD_STARTS, (False, False)),
    "cube": LodChain(("cube", "cube_card"), CUBE_LOD_STARTS, (False, True)),
    "creature": LodChain(("creature", "creature_low"), CREATURE_LOD_STARTS, (False, False)),
    "hunter": LodChain(("hunter", "hunter_low"), HUNTER_LOD_STARTS, (False, False)),
    "house_walls": LodChain(("house_walls", "house_walls_low"), HOUSE_LOD_STARTS, (False, False)),
    "house_roof": LodChain(("house_roof", "house_roof_low"), HOUSE_LOD_STARTS, (False, False)),
    **{f"town_{part}": LodChain((f"town_{part}", f"town_{part}_far"), TOWN_LOD_STARTS, (False, False))
       for part in ("walls", "roofs", "trees")},
}


def lod_chain(mesh: str) -> LodChain:
    """The chain of full-detail mesh ``mesh``; a one-level chain for a mesh without lower levels.

    Raises ``KeyError`` (naming the known meshes) for an unknown mesh.
    """
    chain = LOD_CHAINS.get(mesh)
    return chain if chain is not None else LodChain((get_mesh(mesh).name,), (), (False,))


def full_detail_meshes() -> list[str]:
    """Names of the meshes a scene can give its kinds: every mesh but the lower levels, sorted."""
    lower = {name for chain in LOD_CHAINS.values() for name in chain.meshes[1:]}
    return sorted(set(MESHES) - lower)


def start_table(meshes: Sequence[str]) -> np.ndarray:
    """Level starts of each kind's mesh, padded with inf.

    Parameters
    ----------
    meshes : sequence of str, length k
        Each kind's full-detail mesh name.

    Returns
    -------
    ndarray, shape (k, MAX_LEVELS - 1), float64
    """
    table = np.full((len(meshes), MAX_LEVELS - 1), np.inf)
    for row, name in enumerate(meshes):
        starts = lod_chain(name).starts
        table[row, :len(starts)] = starts
    return table


def level_fractions(distance: np.ndarray, view_distance: np.ndarray) -> np.ndarray:
    """``distance / view_distance`` (0 where the view distance is 0), shape (m,), float64."""
    d = np.asarray(distance, dtype=np.float64)
    v = np.asarray(view_distance, dtype=np.float64)
    out = np.zeros(np.broadcast(d, v).shape)
    np.divide(d, v, out=out, where=v > 0.0)
    return out


def choose_levels(fraction: np.ndarray, starts: np.ndarray, band: float = CROSSFADE_BAND
                  ) -> tuple[np.ndarray, np.ndarray]:
    """Each instance's level and how far it is into the cross-fade to the next one.

    Parameters
    ----------
    fraction : ndarray, shape (m,), float64
        Camera distance over view distance (:func:`level_fractions`).
    starts : ndarray, shape (m, L) or (L,), float64
        Where levels 1..L start (inf pads chains with fewer levels), as a
        per-instance row (``start_table(...)[kind]``) or one row for all.
    band : float
        Width of the cross-fade, centred on each start; 0 switches hard
        (what the demo does with fading off).

    Returns
    -------
    level : ndarray, shape (m,), int64
        The level drawn solid, or the outgoing level inside a band.
    blend : ndarray, shape (m,), float64
        0 outside every band; in (0, 1) inside the band after ``level``: the
        share of the next level.

    Cost: O(m * L), vectorised.
    """
    f = np.asarray(fraction, dtype=np.float64)
    s = np.asarray(starts, dtype=np.float64)
    if s.ndim == 1:
        s = np.broadcast_to(s, (f.shape[0], s.shape[0]))
    half = 0.5 * band
    level = np.count_nonzero(s <= (f - half)[:, None], axis=1).astype(np.int64)
    blend = np.zeros(f.shape[0])
    if band > 0.0 and s.shape[1]:
        nxt = np.take_along_axis(s, np.minimum(level, s.shape[1] - 1)[:, None], axis=1)[:, 0]
        nxt = np.where(level < s.shape[1], nxt, np.inf)
        with np.errstate(invalid="ignore"):
            t = (f - (nxt - half)) / band
        inside = (t > 0.0) & (t < 1.0)
        blend[inside] = t[inside]
    return level, blend


def lod_instances(records: np.ndarray, kind: np.ndarray, level: np.ndarray, blend: np.ndarray,
                  n_kinds: int) -> tuple[np.ndarray, np.ndarray]:
    """Instance records grouped by (kind, level), with cross-fading instances twice.

    Parameters
    ----------
    records : ndarray, shape (m, 8), float32
        The visible instances (column 6 holds the far fade, 0..1).
    kind : ndarray, shape (m,), integer
    level, blend : ndarray, shape (m,)
        From :func:`choose_levels`.
    n_kinds : int

    Returns
    -------
    instances : ndarray, shape (m + b, 8), float32
        ``b`` = instances inside a band.  An instance in a band is drawn at
        ``level`` with fade ``1 + blend`` (the dither's complement) and at
        ``level + 1`` with fade ``blend``.
    group_starts : ndarray, shape (n_kinds * MAX_LEVELS + 1,), int64
        Where the run of group ``kind * MAX_LEVELS + level`` begins.

    Cost: O(m) (a stable radix sort on 16-bit group keys).
    """
    kind = np.asarray(kind)
    level = np.asarray(level)
    fading = np.flatnonzero(blend > 0.0)
    group = (kind.astype(np.int16) * np.int16(MAX_LEVELS) + level.astype(np.int16))
    keys = np.concatenate([group, group[fading] + np.int16(1)])
    rows = np.concatenate([records, records[fading]])
    rows[fading, FADE_COLUMN] = 1.0 + blend[fading]
    rows[records.shape[0]:, FADE_COLUMN] = blend[fading]
    order = np.argsort(keys, kind="stable")
    groups = keys[order]
    starts = np.searchsorted(groups, np.arange(n_kinds * MAX_LEVELS + 1, dtype=np.int16)).astype(np.int64)
    return rows[order], starts


def group_triangles(meshes: Sequence[str]) -> np.ndarray:
    """Triangles per instance of each (kind, level) group, shape (k * MAX_LEVELS,), int64 (0: no such level)."""
    out = np.zeros(len(meshes) * MAX_LEVELS, dtype=np.int64)
    for k, name in enumerate(meshes):
        tris = lod_chain(name).triangles()
        out[k * MAX_LEVELS:k * MAX_LEVELS + len(tris)] = tris
    return out


@dataclass(frozen=True)
class LodFrame:
    """One frame's instances, grouped for drawing, and what they cost.

    Attributes
    ----------
    instances : ndarray, shape (m', 8), float32
        Records grouped by (kind, level); cross-fading instances appear twice.
    group_starts : ndarray, shape (kinds * MAX_LEVELS + 1,), int64
    level_counts : ndarray, shape (MAX_LEVELS,), int64
        Instances drawn at each level (a cross-fading one counts at both).
    triangles : int
        Triangles the draw calls rasterise.
    draw_calls : int
        Non-empty (kind, level) groups.
    """

    instances: np.ndarray
    group_starts: np.ndarray
    level_counts: np.ndarray
    triangles: int
    draw_calls: int


class LodSelector:
    """Picks every visible instance's level for one scene's kinds.

    Parameters
    ----------
    meshes : sequence of str
        Each kind's full-detail mesh name, in kind order.
    """

    def __init__(self, meshes: Sequence[str]) -> None:
        self.meshes = tuple(meshes)
        self.starts = start_table(self.meshes)
        self.group_triangles = group_triangles(self.meshes)

    def select(self, records: np.ndarray, kind: np.ndarray, distance: np.ndarray | None = None,
               view_distance: np.ndarray | None = None, band: float = CROSSFADE_BAND,
               lod: bool = True) -> LodFrame:
        """Group ``records`` by (kind, level).

        Parameters
        ----------
        records : ndarray, shape (m, 8), float32
            Visible instances, fade in column 6.
        kind : ndarray, shape (m,), integer
        distance, view_distance : ndarray, shape (m,), float64
            Camera distance (as the distance filter computed it) and view
            distance (times the query's scale) of each; needed when ``lod``.
        band : float
            Cross-fade width (0: hard switches, for when dithering is off).
        lod : bool
            False draws everything at full detail (``--no-lod``).

        Cost: O(m * MAX_LEVELS), vectorised.
        """
        kind = np.asarray(kind)
        n_kinds = len(self.meshes)
        if lod and records.shape[0]:
            if distance is None or view_distance is None:
                raise ValueError("level of detail needs the distances and view distances")
            level, blend = choose_levels(level_fractions(distance, view_distance), self.starts[kind], band)
        else:
            level = np.zeros(records.shape[0], dtype=np.int64)
            blend = np.zeros(records.shape[0])
        rows, starts = lod_instances(records, kind, level, blend, n_kinds)
        counts = np.diff(starts)
        return LodFrame(rows, starts, counts.reshape(n_kinds, MAX_LEVELS).sum(axis=0),
                        int(counts @ self.group_triangles), int(np.count_nonzero(counts)))


if __name__ == "__main__":   # pragma: no cover - a table for the docs
    for name, chain in LOD_CHAINS.items():
        print(f"{name:14s} levels {chain.meshes} start at {chain.starts} of the view distance, "
              f"triangles {chain.triangles()}")
