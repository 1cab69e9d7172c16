"""Collision broad phase: every touching pair of moving spheres, every frame.

Creature ``i`` (centre ``c_i``, bounding radius ``b_i``) touches ``j`` when
``|c_i - c_j| <= b_i + b_j``.  Each method keeps its own index of the
creatures and, per frame, takes the new centres, brings its index up to date
and returns every touching pair once, as ``(i, j)`` with ``i < j``.  All of
them finish with the same exact filter (:func:`exact_pairs`), so they differ
only in how they find candidates:

- :class:`TreePairs`: a ``culling.ViewDistanceTree`` holding every
  creature with its bounding radius, moved with ``update_many``; the pairs
  come from ``overlapping_pairs`` (the tree joined with itself, exact: no
  filter after it);
- :class:`KDTreePairs`: scipy's cKDTree rebuilt every frame,
  ``query_pairs(2 b_max)``;
- :class:`HashGridPairs`: a uniform hash grid written in NumPy (cell edge
  ``2 b_max``; creatures sorted by cell key; each cell against itself and its
  13 forward neighbours through ``searchsorted``);
- :class:`SplitKDTreePairs`: for a heavy tail of radii, where one
  ``query_pairs`` at twice the largest radius would return about every
  pair: cKDTree ``query_pairs`` among the small creatures at twice the
  largest small radius, ``sparse_distance_matrix`` of a tree of the large
  against the small tree at the largest large plus the largest small
  radius, and ``query_pairs`` among the large.

The sphere probes (many probes, each with its own radius, over many
entities with their own radii): :class:`TreeProbes` (``overlapping_many``),
:class:`KDTreeProbesInverted` (a cKDTree of the probes, queried by every
entity with its radius plus the largest probe radius),
:class:`KDTreeProbesClasses` (a cKDTree of the entities per radius class,
queried by every probe at its radius plus the class's largest) and
:class:`KDTreeProbesSparse` (``sparse_distance_matrix`` between a tree of the
probes and a tree of the entities).

:func:`brute_pairs` is the O(n^2) reference, :func:`brute_partners` its
sampled form for large ``n`` and :func:`brute_probes` the probes': all three
are the library's exact reference index (:class:`culling.BruteForceIndex`),
so the tree must match them exactly and a peer may differ only at a tie.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from benchmarks.peers import TIE_TOLERANCE, AgreementError, class_trees, flattened, rebuilt_kdtree
from culling import BruteForceIndex


def _sq_dist(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Row-wise squared distance, summed x, y, z in order (the same rounding everywhere)."""
    d = a - b
    return d[:, 0] * d[:, 0] + d[:, 1] * d[:, 1] + d[:, 2] * d[:, 2]


def exact_pairs(i: np.ndarray, j: np.ndarray, centres: np.ndarray, radii: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Keep the candidate pairs that touch, as ``(min, max)``; input pairs distinct, i != j."""
    reach = radii[i] + radii[j]
    keep = _sq_dist(centres[i], centres[j]) <= reach * reach
    i, j = i[keep], j[keep]
    return np.minimum(i, j), np.maximum(i, j)


def pair_keys(i: np.ndarray, j: np.ndarray, n: int) -> np.ndarray:
    """Sorted ``i * n + j`` keys of pairs with ``i < j``: shape (pairs,), int64."""
    return np.sort(np.asarray(i, dtype=np.int64) * n + np.asarray(j, dtype=np.int64))


def concat_ranges(starts: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """``[s, s + 1, ..., s + l - 1]`` for each (s, l), concatenated; int64.  O(total)."""
    total = int(lengths.sum())
    if total == 0:
        return np.empty(0, dtype=np.int64)
    ends = np.cumsum(lengths)
    shift = np.repeat(starts - (ends - lengths), lengths)
    return np.arange(total, dtype=np.int64) + shift


class TreePairs:
    """``ViewDistanceTree`` of the bounding spheres: ``update_many`` then ``overlapping_pairs`` per frame."""

    name = "tree: update_many + overlapping_pairs"

    def __init__(self, factory: Any) -> None:
        self.factory = factory     # (size, origin) -> ViewDistanceTree

    def setup(self, radii: np.ndarray, centres: np.ndarray, size: float) -> None:
        self.radii = radii
        self.tree = self.factory(size, (0.0, 0.0, 0.0))
        self.handles = np.asarray(self.tree.insert_many(centres, radii), dtype=np.int64)
        self.index_of = np.full(int(self.handles.max()) + 1, -1, dtype=np.int64)
        self.index_of[self.handles] = np.arange(self.handles.size)
        # A fresh tree hands out 0, 1, 2, ...: the handles are the creatures' indices, and the pairs
        # (first < second) need no mapping, as in an engine that keeps its own order.
        self.identity = bool(np.array_equal(self.handles, np.arange(self.handles.size)))

    def frame(self, centres: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        self.tree.update_many(self.handles, centres, self.radii)
        first, second = self.tree.overlapping_pairs()
        if self.identity:
            return first, second
        i, j = self.index_of[first], self.index_of[second]
        return np.minimum(i, j), np.maximum(i, j)


class KDTreePairs:
    """scipy cKDTree rebuilt every frame (:func:`~benchmarks.peers.rebuilt_kdtree`); ``query_pairs`` with
    twice the largest radius."""

    name = "scipy cKDTree query_pairs"

    def setup(self, radii: np.ndarray, centres: np.ndarray, size: float) -> None:
        self.radii = radii
        self.reach = 2.0 * float(radii.max())

    def frame(self, centres: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        pairs = rebuilt_kdtree(centres).query_pairs(self.reach, output_type="ndarray")
        return exact_pairs(pairs[:, 0].astype(np.int64), pairs[:, 1].astype(np.int64), centres, self.radii)


# The 13 neighbour offsets "after" (0, 0, 0) in lexicographic order: with the
# cell itself, every pair of neighbouring cells is visited exactly once.
FORWARD = np.array([(dx, dy, dz) for dx in (-1, 0, 1) for dy in (-1, 0, 1) for dz in (-1, 0, 1)
                    if (dx, dy, dz) > (0, 0, 0)], dtype=np.int64)


class HashGridPairs:
    """A uniform grid (cell edge ``2 b_max``) hashed by cell key, in NumPy.

    Per frame: cell keys, one sort, then for the cell itself and each of the 13
    forward neighbours a ``searchsorted`` giving every creature the run of
    creatures in that cell.  O(n log n + candidates).
    """

    name = "numpy uniform hash grid"

    def setup(self, radii: np.ndarray, centres: np.ndarray, size: float) -> None:
        self.radii = radii
        self.cell = 2.0 * float(radii.max())

    def frame(self, centres: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        n = len(centres)
        cells = np.floor((centres - centres.min(axis=0)) / self.cell).astype(np.int64) + 1  # >= 1: room for -1
        dims = cells.max(axis=0) + 2
        stride = np.array([dims[1] * dims[2], dims[2], 1], dtype=np.int64)
        key = cells @ stride
        order = np.argsort(key, kind="stable")
        sorted_key = key[order]
        # The cell itself: pairs within one run, i before j in sorted order.
        end = np.searchsorted(sorted_key, sorted_key, side="right")
        rank = np.arange(n, dtype=np.int64)
        after = end - rank - 1
        parts_i = [np.repeat(order, after)]
        parts_j = [order[concat_ranges(rank + 1, after)]]
        for offset in FORWARD:
            other = sorted_key + int(offset @ stride)
            lo = np.searchsorted(sorted_key, other, side="left")
            hi = np.searchsorted(sorted_key, other, side="right")
            length = hi - lo
            parts_i.append(np.repeat(order, length))
            parts_j.append(order[concat_ranges(lo, length)])
        return exact_pairs(np.concatenate(parts_i), np.concatenate(parts_j), centres, self.radii)


class SplitKDTreePairs:
    """cKDTree split by radius class, carefully: each class with the reach it needs, no tree built twice.

    Small: radius at most ``limit`` (:data:`SMALL_LIMIT` for the heavy tail, half the largest radius
    for mixed radii).  Per frame (:func:`~benchmarks.peers.rebuilt_kdtree`), a tree of the
    small and a tree of the large are built; small-small pairs come from
    ``query_pairs`` at twice the largest small radius; large-small pairs from
    ``sparse_distance_matrix`` of the large tree against the small tree at the
    largest large radius plus the largest small radius; large-large pairs from
    ``query_pairs`` of the large tree at twice the largest large radius.  Each
    pair is found once, by exactly one of the three, so nothing is
    deduplicated; all of them then go through the exact filter.  (The
    earlier peer asked every large creature against a tree of everyone at
    the largest large radius plus the largest radius: about twice the reach
    for the large-small pairs, eight times the volume, and a third tree.)
    """

    name = "scipy cKDTree split by radius class"

    def __init__(self, limit: float | None = None) -> None:
        self.limit = SMALL_LIMIT if limit is None else limit

    def setup(self, radii: np.ndarray, centres: np.ndarray, size: float) -> None:
        self.radii = radii
        self.small = np.flatnonzero(radii <= self.limit)
        self.large = np.flatnonzero(radii > self.limit)
        small_max = float(radii[self.small].max()) if self.small.size else 0.0
        large_max = float(radii[self.large].max()) if self.large.size else 0.0
        self.small_reach = 2.0 * small_max
        self.cross_reach = large_max + small_max
        self.large_reach = 2.0 * large_max

    def frame(self, centres: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        small, large = self.small, self.large
        small_tree = rebuilt_kdtree(centres[small])
        pairs = small_tree.query_pairs(self.small_reach, output_type="ndarray")
        i = [small[pairs[:, 0]]]
        j = [small[pairs[:, 1]]]
        if large.size:
            large_tree = rebuilt_kdtree(centres[large])
            near = large_tree.sparse_distance_matrix(small_tree, self.cross_reach, output_type="ndarray")
            i.append(large[near["i"].astype(np.int64)])
            j.append(small[near["j"].astype(np.int64)])
            both = large_tree.query_pairs(self.large_reach, output_type="ndarray")
            i.append(large[both[:, 0]])
            j.append(large[both[:, 1]])
        return exact_pairs(np.concatenate(i), np.concatenate(j), centres, self.radii)


#: The class split of :class:`SplitKDTreePairs`: radii up to this are "small".
SMALL_LIMIT = 10.0


def peers_of(workload: str) -> list[Any]:
    """The peers the collision sections interleave with the tree's frames: the class-split cKDTree for
    the ``heavy`` tail (a single reach, twice the largest radius, would return about every pair and,
    in NumPy's hash grid, tens of GB of candidates), else cKDTree and the hash grid (``swarm``,
    ``mixed10``, ``mixed100``); for mixed radii also the class-split cKDTree, split at half the largest
    radius (at 100k, 0.7 to 0.75 of the single reach's time: split at 0.5, 1.0 and 1.6 it did no better)."""
    if workload == "heavy":
        return [SplitKDTreePairs()]
    if workload.startswith("mixed"):
        return [KDTreePairs(), HashGridPairs(), SplitKDTreePairs(MIXED_LARGEST / 2.0)]
    return [KDTreePairs(), HashGridPairs()]


def heavy_frames(n: int, frames: int, share: float = 0.01, large: tuple[float, float] = (20.0, 50.0),
                 seed: int = 11) -> tuple[np.ndarray, list[np.ndarray]]:
    """:func:`benchmarks.workloads.swarm_frames` with a heavy tail: ``share`` of the creatures
    get a radius in ``large`` (the rest 0.5-2.5), each moving up to a quarter of its radius a frame."""
    from benchmarks.workloads import SWARM_BOUNDING, SWARM_SPACING, bouncing_frames

    rng = np.random.default_rng(seed)
    edge = SWARM_SPACING * n ** (1.0 / 3.0)
    radii = rng.uniform(*SWARM_BOUNDING, n)
    big = rng.choice(n, int(round(share * n)), replace=False)
    radii[big] = rng.uniform(*large, big.size)
    return radii, bouncing_frames(rng, radii, edge, frames)


#: The largest radius of :func:`mixed_frames`' creatures: the peers size their reach (and cells) by it.
MIXED_LARGEST = 5.0


def mixed_frames(n: int, frames: int, ratio: float, seed: int = 14) -> tuple[np.ndarray, list[np.ndarray]]:
    """:func:`benchmarks.workloads.swarm_frames` with mixed radii: log-uniform from
    ``MIXED_LARGEST / ratio`` to :data:`MIXED_LARGEST` (as many creatures in every octave of radii),
    each moving up to a quarter of its radius a frame, in the swarm's cube (one creature per
    ``SWARM_SPACING**3``).  A peer that sizes its reach or its cells by the largest radius tests
    every creature as if it were the largest: the case where cell lists break down."""
    from benchmarks.workloads import SWARM_SPACING, bouncing_frames

    rng = np.random.default_rng(seed)
    edge = SWARM_SPACING * n ** (1.0 / 3.0)
    radii = MIXED_LARGEST * np.exp(-np.log(ratio) * rng.uniform(0.0, 1.0, n))
    return radii, bouncing_frames(rng, radii, edge, frames)


# ------------------------------------------------------------------ probes


def probe_keys(probe: np.ndarray, entity: np.ndarray, n: int) -> np.ndarray:
    """Sorted ``probe * n + entity`` keys: shape (hits,), int64."""
    return np.sort(np.asarray(probe, dtype=np.int64) * n + np.asarray(entity, dtype=np.int64))


def exact_probe_pairs(p: np.ndarray, e: np.ndarray, probes: np.ndarray, rho: np.ndarray, centres: np.ndarray,
                      radii: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Keep the candidate (probe, entity) pairs that meet: ``|c_e - p| <= r_e + rho_p``."""
    reach = radii[e] + rho[p]
    keep = _sq_dist(centres[e], probes[p]) <= reach * reach
    return p[keep], e[keep]


class TreeProbes:
    """``ViewDistanceTree.overlapping_many``: every probe with its own radius, exact."""

    name = "tree: overlapping_many"

    def __init__(self, factory: Any) -> None:
        self.factory = factory

    def build(self, centres: np.ndarray, radii: np.ndarray, size: float) -> None:
        self.tree = self.factory(size, (0.0, 0.0, 0.0))
        self.handles = np.asarray(self.tree.insert_many(centres, radii), dtype=np.int64)

    def probe(self, probes: np.ndarray, rho: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        handles, counts = self.tree.overlapping_many(probes, rho, exact=True)
        return np.repeat(np.arange(counts.size, dtype=np.int64), counts), handles   # handles are 0..n-1


class KDTreeProbesInverted:
    """A cKDTree of the probes; every entity asks for the probes within its radius plus the largest probe radius."""

    name = "scipy cKDTree inverted (entities ask)"

    def build(self, centres: np.ndarray, radii: np.ndarray, size: float) -> None:
        self.centres, self.radii = centres, radii

    def probe(self, probes: np.ndarray, rho: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        lists = rebuilt_kdtree(probes).query_ball_point(self.centres, self.radii + float(rho.max()), workers=-1,
                                                 return_sorted=False)
        e, p = flattened(lists)
        return exact_probe_pairs(p, e, probes, rho, self.centres, self.radii)


class KDTreeProbesClasses:
    """One cKDTree of the entities per radius class (:func:`~benchmarks.peers.radius_classes`, built once:
    the entities stand still here); every probe asks each class at its own radius plus the class's
    largest (``query_ball_point`` with a radius per probe, all cores), then the exact filter."""

    name = "scipy cKDTree per radius class (probes ask)"

    def build(self, centres: np.ndarray, radii: np.ndarray, size: float) -> None:
        self.centres, self.radii = centres, radii
        self.classes = class_trees(centres, radii)

    def probe(self, probes: np.ndarray, rho: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        probe_parts, entity_parts = [], []
        for idx, kd, reach in self.classes:
            p, found = flattened(kd.query_ball_point(probes, rho + reach, workers=-1, return_sorted=False))
            probe_parts.append(p)
            entity_parts.append(idx[found])
        return exact_probe_pairs(np.concatenate(probe_parts), np.concatenate(entity_parts), probes, rho,
                                 self.centres, self.radii)


class KDTreeProbesSparse:
    """``sparse_distance_matrix`` between a cKDTree of the probes and one of the entities (built once)."""

    name = "scipy cKDTree sparse_distance_matrix"

    def build(self, centres: np.ndarray, radii: np.ndarray, size: float) -> None:
        from scipy.spatial import cKDTree

        self.centres, self.radii = centres, radii
        self.tree = cKDTree(centres)

    def probe(self, probes: np.ndarray, rho: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        near = rebuilt_kdtree(probes).sparse_distance_matrix(self.tree, float(rho.max() + self.radii.max()),
                                                      output_type="ndarray")
        return exact_probe_pairs(near["i"].astype(np.int64), near["j"].astype(np.int64), probes, rho,
                                 self.centres, self.radii)


def brute_probes(sample: np.ndarray, probes: np.ndarray, rho: np.ndarray, centres: np.ndarray,
                 radii: np.ndarray) -> np.ndarray:
    """Keys of every (probe, entity) that meet, for the probes ``sample``, decided exactly by the library's
    reference index (:class:`culling.BruteForceIndex`, every entity tested).  O(k n)."""
    entity, counts = BruteForceIndex(centres, radii).overlapping_many(probes[sample], rho[sample], exact=True)
    return np.sort(np.repeat(np.asarray(sample, dtype=np.int64), counts) * len(radii) + entity)


def brute_pairs(centres: np.ndarray, radii: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Every touching pair ``(i, j)``, ``i < j``, decided exactly by the reference index (all n (n - 1) / 2
    pairs tested).  O(n^2)."""
    first, second = BruteForceIndex(centres, radii).overlapping_pairs()
    return first, second


def brute_partners(sample: np.ndarray, centres: np.ndarray, radii: np.ndarray) -> np.ndarray:
    """Keys (min * n + max) of every touching pair with an end in ``sample``, exactly: each sampled
    creature's sphere probes the reference index.  O(k n)."""
    n = len(radii)
    sample = np.asarray(sample, dtype=np.int64)
    other, counts = BruteForceIndex(centres, radii).overlapping_many(centres[sample], radii[sample], exact=True)
    mine = np.repeat(sample, counts)
    keep = other != mine
    return np.unique(np.minimum(mine, other)[keep] * n + np.maximum(mine, other)[keep])


def check_pairs(what: str, expected: np.ndarray, got: np.ndarray, centres: np.ndarray, radii: np.ndarray) -> int:
    """Compare sorted pair keys; ties (touching to the last bits) are counted, not failures.

    Raises :class:`~benchmarks.peers.AgreementError` on a real difference or a
    pair reported twice.
    """
    n = len(radii)
    if len(got) and (np.diff(got) == 0).any():
        raise AgreementError(f"{what}: a pair was reported twice")
    diff = np.concatenate([np.setdiff1d(expected, got, assume_unique=True), np.setdiff1d(got, expected, assume_unique=True)])
    if diff.size == 0:
        return 0
    i, j = diff // n, diff % n
    reach2 = (radii[i] + radii[j]) ** 2
    ties = np.abs(_sq_dist(centres[i], centres[j]) - reach2) <= TIE_TOLERANCE * np.maximum(reach2, 1.0)
    if not ties.all():
        bad = np.flatnonzero(~ties)[:5]
        raise AgreementError(f"{what} disagrees with brute force on {int((~ties).sum())} pairs, "
                             f"e.g. {list(zip(i[bad].tolist(), j[bad].tolist()))}")
    return int(ties.sum())
