"""Many viewers at once: the methods that answer a whole tick's queries.

Interest management asks, every server tick, which entities each viewer
(player) should hear about: viewer ``v`` sees entity ``e`` when ``v`` lies in
``e``'s sphere, ``|v - c_e| <= r_e`` with a radius per entity.  Every method
here answers all viewers in one call and returns the same thing as
``ViewDistanceTree.query_many``: ``(indices, counts)``, viewer ``i``'s
entities being ``indices[counts[:i].sum():][:counts[i]]``.

- :class:`TreeBatch`: ``culling.ViewDistanceTree.query_many(viewers, exact=True)``;
- :class:`BruteForceBatch`: the tuned NumPy scan of :class:`~benchmarks.peers.BruteForce`
  once per viewer (a single (m, n) distance matrix would need m * n * 8 bytes);
- :class:`KDTreeInverted`: the clever way round with scipy: a cKDTree over the
  *viewers* (rebuilt every tick, since players move), each entity asking with
  its own radius (``query_ball_point(centres, radii, workers=-1)``, all
  cores), then the (entity, viewer) pairs regrouped by viewer;
- :class:`KDTreeClasses`: scipy the other way: the entities stand still between
  ticks, so one cKDTree per radius class (octave) over them, built once as
  the tree is; every viewer asks each class at the class's largest radius
  (all cores), then the exact filter;
- :class:`RTreeBatch`: rtree over the entities' boxes, all viewers in one
  ``intersection_v`` call, then the exact filter.

:func:`check_batch` compares two answers pair by pair.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from benchmarks.peers import (
    TIE_TOLERANCE,
    AgreementError,
    BruteForce,
    class_trees,
    flattened,
    rebuilt_kdtree,
    rtree_boxes,
)


def _grouped(viewer_of: np.ndarray, entity: np.ndarray, m: int) -> tuple[np.ndarray, np.ndarray]:
    """Pairs regrouped by viewer: (entities in viewer order, counts (m,))."""
    order = np.argsort(viewer_of, kind="stable")
    return entity[order], np.bincount(viewer_of, minlength=m).astype(np.int64)


class TreeBatch:
    """The view-distance tree, all viewers through one ``query_many``."""

    name = "tree query_many"

    def __init__(self, factory: Any) -> None:
        self.factory = factory

    def build(self, centres: np.ndarray, radii: np.ndarray) -> None:
        self.structure = self.factory()
        handles = np.asarray(self.structure.insert_many(centres, radii), dtype=np.int64)
        self.index_of = np.full(int(handles.max()) + 1 if handles.size else 0, -1, dtype=np.int64)
        self.index_of[handles] = np.arange(handles.size)

    def query_many(self, viewers: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        handles, counts = self.structure.query_many(viewers, exact=True)
        return handles, counts

    def indices(self, raw: tuple[np.ndarray, np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
        handles, counts = raw
        return self.index_of[handles], np.asarray(counts, dtype=np.int64)


class BruteForceBatch:
    """One tuned NumPy scan over all entities per viewer.  O(m n)."""

    name = "numpy brute force"

    def build(self, centres: np.ndarray, radii: np.ndarray) -> None:
        self.scan = BruteForce()
        self.scan.build(centres, radii)

    def query_many(self, viewers: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        answers = [self.scan.query(v) for v in viewers]
        counts = np.array([a.size for a in answers], dtype=np.int64)
        return (np.concatenate(answers) if answers else np.empty(0, dtype=np.int64)), counts

    def indices(self, raw: tuple[np.ndarray, np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
        return raw


class KDTreeInverted:
    """scipy cKDTree over the viewers; each entity queries with its own radius.

    The kd-tree is built inside the timed call (viewers move every tick), with scipy's fast build for a
    tree made per call (:func:`~benchmarks.peers.rebuilt_kdtree`: 1M points in 200-250 against 520-1,000 ms
    with the default build).  ``workers=-1`` runs the entity queries on all cores.
    """

    name = "scipy cKDTree inverted"

    def build(self, centres: np.ndarray, radii: np.ndarray) -> None:
        self.centres, self.radii = centres, radii

    def query_many(self, viewers: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        return _grouped(*self._pairs(viewers), len(viewers))

    def pair_keys(self, viewers: np.ndarray) -> np.ndarray:
        """:func:`pair_keys` of :meth:`query_many`'s answer, sorted once (not grouped by viewer first)."""
        viewer_of, entity = self._pairs(viewers)
        return np.sort(viewer_of * len(self.centres) + entity)

    def _pairs(self, viewers: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Every (viewer, entity) that meet, in the entities' order: two int64 arrays."""
        lists = rebuilt_kdtree(viewers).query_ball_point(self.centres, self.radii, workers=-1, return_sorted=False)
        entity, viewer_of = flattened(lists)
        return viewer_of, entity

    def indices(self, raw: tuple[np.ndarray, np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
        return raw


class KDTreeClasses:
    """scipy cKDTree over the entities, one per radius class (:func:`~benchmarks.peers.radius_classes`,
    built once: entities stand still here); every viewer asks each class at the class's largest radius
    on all cores (``workers=-1``), then the exact filter and the pairs grouped by viewer.  Asking each
    class at its own reach returns each entity's ball at most twice its radius, where one tree asked at
    the largest radius would return most of the world."""

    name = "scipy cKDTree per radius class"

    def build(self, centres: np.ndarray, radii: np.ndarray) -> None:
        self.centres, self.r2 = centres, radii * radii
        self.classes = class_trees(centres, radii)

    def query_many(self, viewers: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        viewer_parts, entity_parts = [], []
        for idx, kd, reach in self.classes:
            viewer_of, found = flattened(kd.query_ball_point(viewers, reach, workers=-1, return_sorted=False))
            viewer_parts.append(viewer_of)
            entity_parts.append(idx[found])
        viewer_of, entity = np.concatenate(viewer_parts), np.concatenate(entity_parts)
        d = self.centres[entity] - viewers[viewer_of]
        keep = np.einsum("ij,ij->i", d, d) <= self.r2[entity]
        return _grouped(viewer_of[keep], entity[keep], len(viewers))

    def indices(self, raw: tuple[np.ndarray, np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
        return raw


class RTreeBatch:
    """rtree over the entities' boxes (bulk loaded), one ``intersection_v`` for all viewers."""

    name = "rtree intersection_v"

    def build(self, centres: np.ndarray, radii: np.ndarray) -> None:
        from rtree import index

        self.centres, self.r2 = centres, radii * radii
        props = index.Property()
        props.dimension = centres.shape[1]
        mins, maxs = rtree_boxes(centres, radii)
        self.idx = index.Index((np.arange(len(radii), dtype=np.int64), mins, maxs), properties=props)

    def query_many(self, viewers: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        ids, counts = self.idx.intersection_v(viewers, viewers)
        ids, counts = np.asarray(ids, dtype=np.int64), np.asarray(counts, dtype=np.int64)
        viewer_of = np.repeat(np.arange(len(viewers), dtype=np.int64), counts)
        d = self.centres[ids] - viewers[viewer_of]
        keep = np.einsum("ij,ij->i", d, d) <= self.r2[ids]
        return ids[keep], np.bincount(viewer_of[keep], minlength=len(viewers)).astype(np.int64)

    def indices(self, raw: tuple[np.ndarray, np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
        return raw


def pair_keys(indices: np.ndarray, counts: np.ndarray, n: int) -> np.ndarray:
    """Sorted ``viewer * n + entity`` keys of a batch answer: shape (pairs,), int64."""
    viewer_of = np.repeat(np.arange(len(counts), dtype=np.int64), counts)
    return np.sort(viewer_of * n + np.asarray(indices, dtype=np.int64))


def check_batch(
    what: str,
    expected: tuple[np.ndarray, np.ndarray],
    got: tuple[np.ndarray, np.ndarray],
    centres: np.ndarray,
    radii: np.ndarray,
    viewers: np.ndarray,
) -> int:
    """Compare two batch answers (indices, counts) pair by pair; return the ties.

    Equal up to entities lying on their sphere's surface to the last bits
    (see ``TIE_TOLERANCE``); a viewer answered twice with the same entity
    is a disagreement.  Raises :class:`~benchmarks.peers.AgreementError`.
    """
    n = len(radii)
    if len(got[1]) != len(viewers) or int(np.sum(got[1])) != len(got[0]):
        raise AgreementError(f"{what}: counts do not match the viewers ({len(got[1])}) or the indices ({len(got[0])})")
    a, b = pair_keys(*expected, n), pair_keys(*got, n)
    if len(b) and (np.diff(b) == 0).any():
        raise AgreementError(f"{what}: a viewer got the same entity twice")
    diff = np.concatenate([np.setdiff1d(a, b, assume_unique=True), np.setdiff1d(b, a, assume_unique=True)])
    if diff.size == 0:
        return 0
    v, e = diff // n, diff % n
    d = centres[e] - viewers[v]
    d2 = np.einsum("ij,ij->i", d, d)
    r2 = radii[e] ** 2
    ties = np.abs(d2 - r2) <= TIE_TOLERANCE * np.maximum(r2, 1.0)
    if not ties.all():
        bad = np.flatnonzero(~ties)[:5]
        raise AgreementError(
            f"{what} disagrees with brute force on {int((~ties).sum())} (viewer, entity) pairs, "
            f"e.g. viewers {v[bad].tolist()} and entities {e[bad].tolist()}"
        )
    return int(ties.sum())
