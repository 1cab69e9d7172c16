"""The methods under test, behind one small interface, and the agreement check.

Every method answers the same question: the indices of the objects whose view
sphere contains a point (Euclidean distance to the centre <= view distance).

- :class:`CullingMethod` wraps ``culling.ViewDistanceTree`` or
  ``culling.DenseViewDistanceGrid`` (handles are mapped back to indices outside
  the timed call);
- :class:`BruteForce` is the vectorised NumPy scan over all objects, as
  tuned as NumPy allows (one array per axis, preallocated buffers); the
  targets compare against it.  :class:`NaiveBruteForce`, the one-line scan,
  is shown for context;
- :class:`KDTreePeer` is scipy's cKDTree, one per radius class (an octave
  of view distances): ``query_ball_point`` in each with its class's largest
  view distance, then the exact filter;
- :class:`RTreePeer` is rtree (libspatialindex): the spheres' boxes bulk loaded
  with its stream loader fed from NumPy arrays (``Index((ids, mins, maxs))``,
  about 5x faster than feeding it a Python generator), a point intersection
  (``intersection_v``), then the exact filter.

Every method, the NumPy scans included, is checked against
:class:`ExactReference`: the library's reference index
(``culling.BruteForceIndex``), which is not a peer but the truth.  The peers
here are the careful float code a user would write and are timed as such;
:func:`check_agreement` compares two exact sets and raises
:class:`AgreementError` when they differ beyond surface ties: a benchmark
whose methods disagree is a failed benchmark.
"""

from __future__ import annotations

from itertools import chain
from typing import Any, Protocol

import numpy as np

from culling import BruteForceIndex

TIE_TOLERANCE = 1e-10
"""Relative slack under which an object counts as lying on its sphere's surface.

Methods sum the squared distance in different orders, so an object whose
distance equals its radius to the last bits may be in one set and not in the
other; such ties are reported, never hidden, and are not a disagreement.
"""


class AgreementError(AssertionError):
    """Two methods returned different exact sets for the same query."""


class Method(Protocol):
    """What the suite needs from a method."""

    name: str

    def build(self, centres: np.ndarray, radii: np.ndarray) -> None: ...

    def query(self, point: np.ndarray) -> Any: ...

    def indices(self, raw: Any) -> np.ndarray: ...


def _sorted(a: np.ndarray) -> np.ndarray:
    return np.sort(np.asarray(a, dtype=np.int64))


class ExactReference:
    """The reference every method is checked against: ``culling.BruteForceIndex``, every object
    tested exactly (the decider of ``query(exact=True)``).  Not timed: a peer is a float scan."""

    name = "exact reference"

    def build(self, centres: np.ndarray, radii: np.ndarray) -> None:
        self.index = BruteForceIndex(centres, radii)

    def query(self, point: np.ndarray) -> np.ndarray:
        return self.index.query(point, exact=True)

    def indices(self, raw: np.ndarray) -> np.ndarray:
        return _sorted(raw)


class BruteForce:
    """Vectorised distance test over all objects (structure of arrays): the NumPy peer.

    Build O(n) copies; query O(n) with preallocated buffers.
    """

    name = "numpy brute force"

    def build(self, centres: np.ndarray, radii: np.ndarray) -> None:
        self.cols = [np.ascontiguousarray(centres[:, k]) for k in range(centres.shape[1])]
        self.r2 = radii * radii
        self.acc = np.empty(len(radii))
        self.tmp = np.empty(len(radii))
        self.mask = np.empty(len(radii), dtype=bool)

    def update(self, centres: np.ndarray) -> None:
        """Store moved centres: the whole cost of a move for a scan."""
        for k, col in enumerate(self.cols):
            col[:] = centres[:, k]

    def query(self, point: np.ndarray) -> np.ndarray:
        acc, tmp = self.acc, self.tmp
        np.subtract(self.cols[0], point[0], out=acc)
        np.multiply(acc, acc, out=acc)
        for k in range(1, len(self.cols)):
            np.subtract(self.cols[k], point[k], out=tmp)
            np.multiply(tmp, tmp, out=tmp)
            np.add(acc, tmp, out=acc)
        np.less_equal(acc, self.r2, out=self.mask)
        return np.flatnonzero(self.mask)

    def indices(self, raw: np.ndarray) -> np.ndarray:
        return _sorted(raw)


class NaiveBruteForce(BruteForce):
    """The one-line NumPy scan, ``((centres - p) ** 2).sum(1) <= r**2``.

    Shown for context only: it allocates (n, dim) temporaries and is several
    times slower than :class:`BruteForce`, which the targets use.
    """

    name = "numpy brute force, one expression"

    def build(self, centres: np.ndarray, radii: np.ndarray) -> None:
        self.centres = centres
        self.r2 = radii * radii

    def query(self, point: np.ndarray) -> np.ndarray:
        return np.flatnonzero(((self.centres - point) ** 2).sum(axis=1) <= self.r2)


def _exact_filter(idx: np.ndarray, centres: np.ndarray, r2: np.ndarray, point: np.ndarray) -> np.ndarray:
    d = centres[idx] - point
    return idx[np.einsum("ij,ij->i", d, d) <= r2[idx]]


def radius_classes(radii: np.ndarray) -> list[np.ndarray]:
    """The indices of ``radii`` split into octaves (``floor(log2 r)``; zeros with the smallest), each
    ascending: a peer that asks each class at its own largest radius asks every object at most twice
    its own, where one ball of the largest radius would return most of a world of mixed radii."""
    octave = np.floor(np.log2(np.maximum(radii, np.finfo(np.float64).tiny))).astype(np.int64)
    return [np.flatnonzero(octave == k) for k in np.unique(octave)]


def flattened(lists: Any) -> tuple[np.ndarray, np.ndarray]:
    """``query_ball_point``'s lists as two int64 arrays: ``(asker, found)``, the askers' rows repeated."""
    lengths = np.fromiter(map(len, lists), dtype=np.int64, count=len(lists))
    found = np.fromiter(chain.from_iterable(lists), dtype=np.int64, count=int(lengths.sum()))
    return np.repeat(np.arange(len(lists), dtype=np.int64), lengths), found


def class_trees(centres: np.ndarray, radii: np.ndarray) -> list[tuple[np.ndarray, Any, float]]:
    """One cKDTree per radius class (:func:`radius_classes`, scipy's default build: built once, asked
    often): ``(indices, tree, the class's largest radius)`` each."""
    from scipy.spatial import cKDTree

    return [(idx, cKDTree(centres[idx]), float(radii[idx].max())) for idx in radius_classes(radii)]


def rebuilt_kdtree(points: np.ndarray) -> Any:
    """A cKDTree built for one call or frame, the way a per-frame rebuild should be: scipy's fast build
    (``balanced_tree=False, compact_nodes=False``, sliding midpoint splits), about twice as fast as
    the default on the benchmarks' crowds and queried about as fast.  A tree built once and queried
    for long keeps scipy's default."""
    from scipy.spatial import cKDTree

    return cKDTree(points, balanced_tree=False, compact_nodes=False)


class KDTreePeer:
    """scipy cKDTree, one tree per radius class (:func:`radius_classes`); each ball query at its class's
    largest radius, then the exact filter.  (One tree asked at the largest radius, the obvious way,
    returned most of the 1M forest on every query: about 70 times slower.)"""

    name = "scipy cKDTree"

    def build(self, centres: np.ndarray, radii: np.ndarray) -> None:
        self.centres = centres
        self.r2 = radii * radii
        self.classes = class_trees(centres, radii)

    def query(self, point: np.ndarray) -> np.ndarray:
        found = [idx[np.asarray(kd.query_ball_point(point, rmax, return_sorted=False), dtype=np.intp)]
                 for idx, kd, rmax in self.classes]
        idx = np.concatenate(found) if found else np.zeros(0, dtype=np.intp)
        return _exact_filter(idx, self.centres, self.r2, point)

    def indices(self, raw: np.ndarray) -> np.ndarray:
        return _sorted(raw)


def rtree_boxes(centres: np.ndarray, radii: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The spheres' bounding boxes: (mins (n, dim), maxs (n, dim))."""
    r = radii[:, None]
    return centres - r, centres + r


class RTreePeer:
    """rtree (libspatialindex) over the spheres' boxes, bulk loaded."""

    name = "rtree"

    def build(self, centres: np.ndarray, radii: np.ndarray) -> None:
        from rtree import index

        self.centres = centres
        self.r2 = radii * radii
        props = index.Property()
        props.dimension = centres.shape[1]
        mins, maxs = rtree_boxes(centres, radii)
        ids = np.arange(len(radii), dtype=np.int64)
        self.idx = index.Index((ids, mins, maxs), properties=props)

    def query(self, point: np.ndarray) -> np.ndarray:
        p = point[None, :]
        ids, _ = self.idx.intersection_v(p, p)
        return _exact_filter(ids, self.centres, self.r2, point)

    def move(self, i: int, old_box: tuple, new_box: tuple) -> None:
        """Move one object: delete its old box, insert the new one."""
        self.idx.delete(i, old_box)
        self.idx.insert(i, new_box)

    def indices(self, raw: np.ndarray) -> np.ndarray:
        return _sorted(raw)


class CullingMethod:
    """A ``culling`` structure (tree or dense grid) behind the method interface.

    ``factory()`` returns an empty structure; :meth:`build` fills it with
    ``insert_many`` and keeps the handle -> index map for :meth:`indices`.
    """

    def __init__(self, name: str, factory: Any, exact: bool = True) -> None:
        self.name = name
        self.factory = factory
        self.exact = exact

    def build(self, centres: np.ndarray, radii: np.ndarray) -> None:
        self.structure = self.factory()
        self.handles = np.asarray(self.structure.insert_many(centres, radii), dtype=np.int64)
        size = int(self.handles.max()) + 1 if len(self.handles) else 0
        self.index_of = np.full(size, -1, dtype=np.int64)
        self.index_of[self.handles] = np.arange(len(self.handles))

    def query(self, point: np.ndarray) -> np.ndarray:
        return self.structure.query(point, exact=self.exact)

    def indices(self, raw: np.ndarray) -> np.ndarray:
        raw = np.asarray(raw, dtype=np.int64)
        if len(raw) and (raw.max() >= len(self.index_of) or (self.index_of[raw] < 0).any()):
            raise AgreementError(f"{self.name}: query returned a handle that was never inserted")
        return _sorted(self.index_of[raw])

    def visited(self, point: np.ndarray) -> list[np.ndarray]:
        """Bounds of the nodes a query visits, per level: ``trace(point)`` levels."""
        return [np.asarray(level.bounds) for level in self.structure.trace(point).levels]


def check_agreement(
    what: str,
    point: np.ndarray,
    expected: np.ndarray,
    got: np.ndarray,
    centres: np.ndarray,
    radii: np.ndarray,
    superset: bool = False,
) -> int:
    """Compare a method's sorted indices with the reference; return the ties.

    With ``superset`` (candidate queries), ``got`` must contain ``expected``
    and hold each index once.  Otherwise the sets must be equal up to objects
    lying on their sphere's surface (see ``TIE_TOLERANCE``).  Raises
    :class:`AgreementError` naming the method, the point and the culprits.
    """
    if len(got) and (np.diff(got) == 0).any():
        raise AgreementError(f"{what}: duplicate indices in the result at point {point.tolist()}")
    missing = np.setdiff1d(expected, got, assume_unique=True)
    extra = np.array([], dtype=np.int64) if superset else np.setdiff1d(got, expected, assume_unique=True)
    diff = np.concatenate([missing, extra])
    if len(diff) == 0:
        return 0
    d = centres[diff] - point
    d2 = np.einsum("ij,ij->i", d, d)
    r2 = radii[diff] ** 2
    ties = np.abs(d2 - r2) <= TIE_TOLERANCE * np.maximum(r2, 1.0)
    if not ties.all():
        bad = diff[~ties][:5]
        raise AgreementError(
            f"{what} disagrees with brute force at point {point.tolist()}: "
            f"{len(missing)} missing, {len(extra)} extra; e.g. objects {bad.tolist()} "
            f"(centres {centres[bad].tolist()}, radii {radii[bad].tolist()})"
        )
    return int(ties.sum())
