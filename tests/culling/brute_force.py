"""A brute-force reference model of the culling contract, for tests.

It holds a dict ``handle -> (centre, radius)`` (mutated as the structure under
test is) and answers the exact point query and the pairs with the library's
reference index, :class:`culling.BruteForceIndex`, over all objects, O(n) per
query: the slow answer every structure under test is compared against.

Containment follows docs/CONTRACT.md ("Geometry", exact test): a sphere contains ``p`` when
``sqrt(sum((p - c)**2)) <= radius * scale``, a cube when
``max(|p - c|) <= radius * scale``; surface points count as inside, decided
exactly for the float64 inputs.  The reference index shares the library's exact
decider, so ``tests/culling/test_reference.py`` checks it against
:func:`exactly_inside` (``fractions.Fraction`` for every object) on hostile
numbers: that, not this model, is where the decider meets an independent truth.

>>> model = BruteForce(dim=2, shape="sphere")
>>> model.insert(7, (0.0, 0.0), 5.0)
>>> model.insert(8, (10.0, 0.0), 1.0)
>>> sorted(model.query((3.0, 4.0)))
[7]
>>> sorted(model.query((3.0, 4.0), scale=0.5))
[]
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
from hypothesis import strategies as st

from culling import BruteForceIndex

__all__ = ["BruteForce", "distances", "exactly_inside", "sorted_handles"]


#: Coordinates on cell faces of several levels of a 64-wide world, one ulp either side, and anywhere: the
#: batch queries' property tests (``tree/test_query_order.py``, ``tree/test_inverted.py``).
FACES = [0.0, 1.0, 2.0, 4.0, 8.0, 16.0, 24.0, 32.0, 48.0, 63.0, 64.0]
FACE_COORDS = st.one_of(st.sampled_from(FACES),
                        st.sampled_from(FACES).map(lambda x: math.nextafter(x, math.inf)),
                        st.sampled_from(FACES).map(lambda x: math.nextafter(x, -math.inf)),
                        st.floats(-8.0, 72.0, allow_nan=False))


def distances(centres: np.ndarray, point: np.ndarray, shape: str) -> np.ndarray:
    """Distance from ``point`` to each centre: Euclidean or L-infinity.

    The Euclidean distance is ``sqrt`` of the squares summed axis by axis in
    order, except where that sum lost bits to underflow (below ``2**-960``,
    offsets under ~1e-145) or overflowed: there it is ``m * sqrt(sum((d/m)**2))``
    with ``m = max |d|``.  Both give exactly ``|d|`` for an offset along one
    axis, so a surface point along an axis is inside at every magnitude, and a
    point object is found only exactly at its centre.

    Parameters
    ----------
    centres : ndarray, shape (n, dim), float64
    point : ndarray, shape (dim,), float64
    shape : "sphere" or "cube"

    Returns
    -------
    ndarray, shape (n,), float64
    """
    offsets = np.asarray(point, dtype=np.float64) - np.asarray(centres, dtype=np.float64)
    largest = np.abs(offsets).max(axis=1, initial=0.0)
    if shape == "cube":
        return largest
    with np.errstate(under="ignore", over="ignore"):
        squares = offsets * offsets
        total = np.zeros(offsets.shape[0])
        for axis in range(offsets.shape[1]):  # fixed order, as the contract's formula reads
            total = total + squares[:, axis]
        result = np.sqrt(total)
        lossy = (total < 2.0**-960) | np.isinf(total)
        if lossy.any():
            m = largest[lossy]
            safe = np.where(m > 0, m, 1.0)
            result[lossy] = m * np.sqrt(((offsets[lossy] / safe[:, None]) ** 2).sum(axis=1))
    return result


def exactly_inside(centre, point, radius: float, scale: float, shape: str, reach: float = 0.0) -> bool:
    """The containment test in rational arithmetic: the truth for float64 inputs.  ``reach``: a probe's
    radius, added to ``radius * scale`` (does the object meet the probe sphere at ``point``?)."""
    offsets = [Fraction(float(c)) - Fraction(float(p)) for c, p in zip(centre, point)]
    limit = Fraction(radius) * Fraction(scale) + Fraction(reach)
    if shape == "cube":
        return all(abs(d) <= limit for d in offsets)
    return sum(d * d for d in offsets) <= limit * limit


def sorted_handles(handles) -> list[int]:
    """Handles as a sorted list of Python ints (comparable across structures)."""
    return sorted(int(h) for h in np.asarray(handles).ravel())


class BruteForce:
    """The reference model: ``handle -> (centre, radius)`` and a full scan.

    Parameters
    ----------
    dim : 1, 2 or 3
    shape : "sphere" or "cube"
    """

    def __init__(self, dim: int, shape: str = "sphere") -> None:
        self.dim = dim
        self.shape = shape
        self.objects: dict[int, tuple[np.ndarray, float]] = {}
        self._arrays = None  # cached (handles, centres, radii), dropped on mutation
        self._index: BruteForceIndex | None = None  # built on them, dropped with them

    # -- mutation -------------------------------------------------------
    def _centre(self, centre) -> np.ndarray:
        c = np.asarray(centre, dtype=np.float64).reshape(self.dim).copy()
        return c

    def insert(self, handle: int, centre, radius: float) -> None:
        handle = int(handle)
        assert handle not in self.objects, f"handle {handle} handed out twice"
        self.objects[handle] = (self._centre(centre), float(radius) + 0.0)
        self._arrays = self._index = None

    def update(self, handle: int, centre, radius: float) -> None:
        handle = int(handle)
        assert handle in self.objects
        self.objects[handle] = (self._centre(centre), float(radius) + 0.0)
        self._arrays = self._index = None

    def remove(self, handle: int) -> None:
        del self.objects[int(handle)]
        self._arrays = self._index = None

    # -- reading --------------------------------------------------------
    def __len__(self) -> int:
        return len(self.objects)

    def __contains__(self, handle: int) -> bool:
        return int(handle) in self.objects

    def handles(self) -> list[int]:
        return sorted(self.objects)

    def arrays(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(handles (n,), centres (n, dim), radii (n,))`` in handle order."""
        if self._arrays is not None:
            return self._arrays
        handles = np.array(self.handles(), dtype=np.int64)
        centres = np.array([self.objects[h][0] for h in handles], dtype=np.float64).reshape(-1, self.dim)
        radii = np.array([self.objects[h][1] for h in handles], dtype=np.float64)
        self._arrays = (handles, centres, radii)
        return self._arrays

    def index(self) -> BruteForceIndex:
        """The library's reference index over the model's objects (their handles kept), cached."""
        if self._index is None:
            handles, centres, radii = self.arrays()
            self._index = BruteForceIndex(centres, radii, self.shape, handles=handles, dim=self.dim)
        return self._index

    def query(self, point, scale: float = 1.0) -> set[int]:
        """The exact answer: every handle whose shape contains ``point``. O(n)."""
        point = np.asarray(point, dtype=np.float64).reshape(self.dim)
        return set(self.index().query(point, exact=True, scale=scale).tolist())

    def pairs(self) -> set[tuple[int, int]]:
        """Every unordered pair of objects that meet, ``distance(c_a, c_b) <= r_a + r_b``, as ``(a, b)``,
        ``a < b``.  O(n^2)."""
        first, second = self.index().overlapping_pairs()
        return set(zip(first.tolist(), second.tolist()))


# -- checks of a structure under test against the model ----------------------

#: Rounding a structure may show at a grown box's edge: see ``check_trace``.
VISIT_SLACK_ULPS = 4


def visit_bound(dim: int, scale: float = 1.0, exact: bool = True) -> int:
    """Most nodes one level can have visited: ``ceil(1 + scale)`` per axis.

    A child of edge ``W`` is visited when ``lo - scale*W/2 <= p < hi + scale*W/2``;
    the lows ``lo`` of those children lie in a half-open interval of length
    ``(1 + scale) * W`` on a grid of spacing ``W``: 2 per axis for ``scale <= 1``.
    Where ``(p - origin) / size`` rounds (``exact`` False), a conservative visit
    may take one more cell at each end of an axis: a centre a rounding away
    from a cell's face may have been placed in that cell.
    """
    return (int(np.ceil(1.0 + scale)) + (0 if exact else 2)) ** dim


def _exact_in_root_units(structure, p: np.ndarray) -> bool:
    """True when ``(p - origin) / size`` is exact in float64 (no rounding at any edge).

    Then the visiting rule must hold exactly; otherwise a structure may decide
    within rounding of a grown edge (``VISIT_SLACK_ULPS``).
    """
    origin, size = getattr(structure, "origin", None), getattr(structure, "size", None)
    if origin is None or size is None:
        return False
    mantissa, _ = np.frexp(float(size))
    if mantissa != 0.5:  # size not a power of two
        return False
    origin = np.asarray(origin, dtype=np.float64).reshape(p.shape)
    return all(Fraction(float(x)) - Fraction(float(o)) == Fraction(float(x - o)) for x, o in zip(p, origin))


def _slack(lo, hi, p, root_magnitude, exact: bool):
    if exact:
        return 0.0
    magnitude = np.maximum(np.maximum(np.abs(lo), np.abs(hi)), np.maximum(np.abs(p), root_magnitude))
    return VISIT_SLACK_ULPS * np.spacing(magnitude)


#: Structures that create nodes lazily, so ``node_count`` counts the nodes a
#: trace can list (the dense grid allocates every cell up front).
LAZY_NODES = ("ViewDistanceTree",)

#: A view-distance scale so large that every node's grown box holds any point:
#: ``trace(p, scale=ALL_NODES_SCALE)`` lists every node of a tree.
ALL_NODES_SCALE = 2.0**40


def all_nodes(structure, dim: int) -> dict[float, np.ndarray] | None:
    """Every node of a tree, as ``node_size -> (k, 2, dim)`` bounds (checked against ``node_count``).

    None for a structure that is not in ``LAZY_NODES``.
    """
    if type(structure).__name__ not in LAZY_NODES:
        return None
    trace = structure.trace(np.zeros(dim), scale=ALL_NODES_SCALE)
    nodes = {float(lv.node_size): np.asarray(lv.bounds, dtype=np.float64) for lv in trace.levels}
    if len(structure):
        assert sum(len(b) for b in nodes.values()) == structure.node_count, \
            "trace with a huge scale must list every node (node_count)"
    return nodes


def _grown_box_holds(lo, hi, p, scale: float, w: float) -> bool:
    """The visiting rule ``lo - s*W/2 <= p < hi + s*W/2`` on every axis, in Fractions (exact)."""
    half = Fraction(scale) * Fraction(w) / 2
    return all(Fraction(float(a)) - half <= Fraction(float(x)) < Fraction(float(b)) + half
               for a, b, x in zip(lo, hi, p))


def check_trace(structure, point, candidates, dim: int, scale: float = 1.0, nodes=None) -> None:
    """Every rule docs/CONTRACT.md ("Trace") states about ``trace(point)``.

    The visited nodes must satisfy the visiting rule (``lo - s*W/2 <= p <
    hi + s*W/2`` per axis, ``W`` the node's edge, ``s`` the scale), and, for the
    tree (``LAZY_NODES``), every node that satisfies it must be visited.
    ``nodes``: :func:`all_nodes` of the structure, when the caller has it.
    """
    trace = structure.trace(point) if scale == 1.0 else structure.trace(point, scale=scale)
    got = np.asarray(trace.candidates)
    assert sorted_handles(got) == sorted_handles(candidates), "trace candidates differ from query"
    levels = list(trace.levels)
    if len(structure) == 0:
        assert levels == [], "an empty structure has no levels"
        return
    assert levels, "a non-empty structure visits at least its root"
    assert [lv.depth for lv in levels] == list(range(len(levels))), "levels must be 0..k without gaps"
    assert sum(int(lv.objects) for lv in levels) == len(got), "level objects must sum to the candidates"
    p = np.asarray(point, dtype=np.float64).reshape(dim)
    exact = _exact_in_root_units(structure, p)
    parents = None
    visited = {}
    for lv in levels:
        bounds = np.asarray(lv.bounds, dtype=np.float64)
        assert bounds.ndim == 3 and bounds.shape[1:] == (2, dim), bounds.shape
        k = bounds.shape[0]
        assert k >= 1, f"level {lv.depth} lists no node"
        assert int(lv.objects) >= 0
        if lv.depth == 0:
            assert k == 1, "exactly one node (the root) at depth 0"
            root_magnitude = np.abs(bounds[0]).max(axis=0)
        assert k <= visit_bound(dim, scale, exact), f"{k} nodes visited on level {lv.depth}"
        lo, hi = bounds[:, 0, :], bounds[:, 1, :]
        w = float(lv.node_size)
        assert w > 0
        assert (np.abs(hi - lo - w) <= 1e-12 * w).all(), f"node edge != node_size {w}: {bounds.tolist()}"
        assert k == 1 or len(set(map(tuple, lo.tolist()))) == k, "a node visited twice"
        visited[w] = set(map(tuple, lo.tolist()))
        if parents is not None:
            assert w == parents[2] / 2, "node size must halve from level to level"
            # the visiting rule, with W the child's edge (docs/CONTRACT.md, "Geometry")
            half = scale * w / 2
            ok = (lo - half <= p) & (p < hi + half)
            if not ok.all():
                slack = _slack(lo, hi, p, root_magnitude, exact)
                ok = (lo - half - slack <= p) & (p < hi + half + slack)
            for i in np.flatnonzero(~ok.all(axis=1)).tolist():  # where hi + half rounds (a huge scale): exactly
                ok[i] = _grown_box_holds(lo[i], hi[i], p, scale, w)
            assert ok.all(), (f"level {lv.depth}: visited a node whose grown box misses "
                              f"{p.tolist()}: {bounds[~ok.all(axis=1)].tolist()}")
            # and each visited node is a child of a visited node one level up
            plo, phi, _ = parents
            inside = ((plo[None, :, :] <= lo[:, None, :]) & (hi[:, None, :] <= phi[None, :, :])).all(axis=2)
            assert inside.any(axis=1).all(), f"level {lv.depth}: a node without a visited parent"
        parents = (lo, hi, w)
    if type(structure).__name__ not in LAZY_NODES:
        return
    # completeness: every node whose grown box holds p (beyond rounding) is visited
    top = float(levels[0].node_size)
    if nodes is None:
        nodes = all_nodes(structure, dim)
    for w, bounds in nodes.items():
        if w >= top:
            continue
        lo, hi = bounds[:, 0, :], bounds[:, 1, :]
        half = scale * w / 2
        slack = _slack(lo, hi, p, root_magnitude, exact)
        required = ((lo - half + slack <= p) & (p < hi + half - slack)).all(axis=1)
        missing = set(map(tuple, lo[required].tolist())) - visited.get(w, set())
        assert not missing, (f"nodes of size {w} whose grown box holds {p.tolist()} (scale {scale}) "
                             f"were not visited: lows {sorted(missing)[:4]}")


def check_query(structure, model: BruteForce, point, scale: float = 1.0, trace: bool = True,
                nodes=None) -> list[int]:
    """``query``, ``query(exact=True)`` and ``trace`` at one point, against the model.

    ``nodes``: :func:`all_nodes` of the structure (for the trace's completeness
    check), when the caller queries one state at many points.  Returns the
    exact answer (sorted handles).
    """
    kw = {} if scale == 1.0 else {"scale": scale}
    candidates = structure.query(point, **kw)
    exact = structure.query(point, exact=True, **kw)
    for name, arr in (("query", candidates), ("query(exact=True)", exact)):
        assert isinstance(arr, np.ndarray) and arr.dtype == np.int64 and arr.ndim == 1, \
            f"{name} must return a 1-D int64 array, got {type(arr)} {getattr(arr, 'dtype', '')}"
        assert len(np.unique(arr)) == len(arr), f"{name} returned a handle twice"
    cand, ex = set(candidates.tolist()), set(exact.tolist())
    expected = model.query(point, scale)
    assert cand <= set(model.objects), f"query returned handles not in the structure: {cand - set(model.objects)}"
    assert ex == expected, (f"exact query at {np.asarray(point).tolist()} (scale {scale}): "
                            f"missing {sorted(expected - ex)}, extra {sorted(ex - expected)}")
    assert expected <= cand, f"query is not a superset of the exact set: missing {sorted(expected - cand)}"
    if trace:
        check_trace(structure, point, candidates, model.dim, scale, nodes)
    return sorted(ex)


def check_query_many(structure, model: BruteForce, points, scale: float = 1.0) -> None:
    """``query_many`` agrees with ``query`` point by point, both forms."""
    kw = {} if scale == 1.0 else {"scale": scale}
    points = np.asarray(points, dtype=np.float64).reshape(-1, model.dim)
    for exact in (False, True):
        handles, counts = structure.query_many(points, exact=exact, **kw)
        assert isinstance(handles, np.ndarray) and handles.dtype == np.int64 and handles.ndim == 1
        counts = np.asarray(counts)
        assert counts.shape == (len(points),), counts.shape
        assert np.issubdtype(counts.dtype, np.integer)
        assert int(counts.sum()) == len(handles)
        starts = np.concatenate([[0], np.cumsum(counts)])
        for i, p in enumerate(points):
            part = handles[starts[i]:starts[i + 1]]
            assert len(np.unique(part)) == len(part), "query_many returned a handle twice for one point"
            single = structure.query(p, exact=exact, **kw)
            assert sorted_handles(part) == sorted_handles(single), f"query_many point {i} != query"
            if exact:
                assert set(part.tolist()) == model.query(p, scale)


def check_contents(structure, model: BruteForce) -> None:
    """``check_invariants``, ``len``, ``in`` and the stored centres and radii."""
    structure.check_invariants()
    assert len(structure) == len(model)
    for h, (_c, _r) in model.objects.items():
        assert h in structure, f"handle {h} missing"
    handles, centres, radii = model.arrays()
    if hasattr(structure, "centres_of") and len(handles):
        np.testing.assert_array_equal(np.asarray(structure.centres_of(handles)).reshape(-1, model.dim), centres)
        np.testing.assert_array_equal(np.asarray(structure.radii_of(handles)), radii)


def absent_handles(model: BruteForce, extra=()) -> list[int]:
    """Some handles that are not in the model: past the largest, plus ``extra``."""
    top = max(model.objects, default=-1)
    return [h for h in [top + 1, top + 7, 10**9, *extra] if h not in model.objects]


# -- the structures under test ------------------------------------------------

class Kind:
    """One structure under test: how to build it and what world it accepts.

    ``grows`` is True for the tree (any centre, any radius: the root grows) and
    False for the dense grid (centres in ``[origin, origin + size)`` per axis,
    radii below ``size / 2``; anything else is a ``ValueError``).
    """

    def __init__(self, name: str, attribute: str, grows: bool, extra: dict | None = None) -> None:
        self.name = name
        self.attribute = attribute
        self.grows = grows
        self.extra = extra or {}

    @property
    def cls(self):
        """The class from ``culling``."""
        import culling

        return getattr(culling, self.attribute)

    def make(self, size=16.0, origin=None, dim=3, shape="sphere"):
        cls = self.cls
        extra = {}
        for key, value in self.extra.items():
            if callable(value):  # derived from a valid size; bad sizes are for the constructor to reject
                value = value(size) if isinstance(size, (int, float)) and np.isfinite(size) and size > 0 else 1.0
            extra[key] = value
        return cls(size, origin=origin, dim=dim, shape=shape, **extra)

    def __repr__(self) -> str:
        return self.name


TREE = Kind("tree", "ViewDistanceTree", grows=True)
# min_radius = size/256: finest cells of size/64, small enough for dim 3.
DENSE = Kind("dense", "DenseViewDistanceGrid", grows=False, extra={"min_radius": lambda size: size / 256})
KINDS = [TREE, DENSE]


class FailAt:
    """:func:`culling.core.growth.allocate` failing its ``k``-th call (0: never; counts the calls): put in
    its place with ``monkeypatch`` to check that a batch hit by a ``MemoryError`` changes nothing."""

    def __init__(self, k: int, allocate):
        self.k, self.calls, self.allocate = k, 0, allocate

    def __call__(self, shape, dtype, fill):
        self.calls += 1
        if self.calls == self.k:
            raise MemoryError("injected")
        return self.allocate(shape, dtype, fill)
