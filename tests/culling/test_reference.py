"""The reference index (culling.BruteForceIndex) against ``fractions.Fraction`` for every object.

It shares the library's exact decider, so the tests' model (``brute_force.BruteForce``) and the
benchmarks only compare the structures with an independent truth through these checks: points,
probes and pairs on and an ulp either side of surfaces, tiny and huge magnitudes, dims 1-3,
spheres and cubes, scales that round.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
from brute_force import distances, exactly_inside
from hypothesis import given, settings
from hypothesis import strategies as st

from culling import BruteForceIndex, DenseViewDistanceGrid, PointIndex, ViewDistanceTree

MAGNITUDES = [1e-170, 1e-3, 1.0, 7.3, 1e5, 1e150]
SCALES = [1.0, 0.5, 3.0, math.nextafter(1.0, 2.0), 0.1]
SHAPES = ["sphere", "cube"]


def _metric(offsets: list[Fraction], shape: str) -> Fraction:
    """The squared Euclidean distance or the largest axis distance, exactly."""
    return max(map(abs, offsets)) if shape == "cube" else sum(d * d for d in offsets)


def _meets(centre, point, radius: float, scale: float, rho: float, shape: str) -> bool:
    """``|c - p| <= radius * scale + rho`` in rational arithmetic."""
    offsets = [Fraction(float(c)) - Fraction(float(p)) for c, p in zip(centre, point)]
    limit = Fraction(float(radius)) * Fraction(scale) + Fraction(float(rho))
    return _metric(offsets, shape) <= (limit if shape == "cube" else limit * limit)


def _world(rng: np.random.Generator, n: int, dim: int, magnitude: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Centres, radii and a point: most objects with the point on their surface or an ulp off it."""
    point = rng.uniform(-1.0, 1.0, dim) * magnitude
    centres = point + rng.uniform(-1.0, 1.0, (n, dim)) * magnitude
    if rng.random() < 0.3:   # some centres on the point's lattice: exact offsets, ties decided in floats
        centres[: n // 2] = point + np.round(rng.uniform(-4.0, 4.0, (n // 2, dim))) * magnitude
    with np.errstate(all="ignore"):  # squares beyond the float range are what this is for
        offsets = np.abs(centres - point)
        euclid = np.sqrt((offsets ** 2).sum(axis=1))
        radii = np.where(rng.random(n) < 0.5, offsets.max(axis=1), euclid)
        radii = np.where(np.isfinite(radii) & (radii > 0), radii, offsets.max(axis=1))
        radii = np.nextafter(radii, np.where(rng.random(n) < 0.5, 0.0, np.inf))
        radii = np.where(rng.random(n) < 0.3, offsets.max(axis=1), radii)
        radii = np.where(rng.random(n) < 0.2, rng.uniform(0.0, 2.0, n) * magnitude, radii)
        radii = np.where(rng.random(n) < 0.05, 0.0, radii)
    return centres, radii, point


@settings(max_examples=80, deadline=None)
@given(st.sampled_from(MAGNITUDES), st.sampled_from(SHAPES), st.integers(1, 3), st.sampled_from(SCALES),
       st.integers(0, 2 ** 31))
def test_exact_query_is_the_fraction_answer(magnitude, shape, dim, scale, seed):
    rng = np.random.default_rng(seed)
    centres, radii, point = _world(rng, int(rng.integers(1, 60)), dim, magnitude)
    index = BruteForceIndex(centres, radii, shape)
    want = [i for i, (c, r) in enumerate(zip(centres, radii)) if exactly_inside(c, point, float(r), scale, shape)]
    assert index.query(point, exact=True, scale=scale).tolist() == want
    found, at, reach = index.query_spheres(point, exact=True, scale=scale)
    assert np.array_equal(at, centres[want]) and np.array_equal(reach, radii[want])
    details = index.query_detailed(point, scale=scale)
    assert details.handles.tolist() == want and details.candidates == len(radii)
    assert index.query(point, scale=scale).tolist() == list(range(len(radii)))   # a scan: every candidate


@settings(max_examples=80, deadline=None)
@given(st.sampled_from(MAGNITUDES), st.sampled_from(SHAPES), st.integers(1, 3), st.sampled_from(SCALES),
       st.integers(0, 2 ** 31))
def test_probes_are_the_fraction_answer(magnitude, shape, dim, scale, seed):
    """``overlapping(exact=True)``: probes whose surface just touches, just misses or just reaches a stored
    shape (the probe's radius the float gap between the distance and ``radius * scale``, nudged)."""
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 40))
    centres, radii, point = _world(rng, n, dim, magnitude)
    index = BruteForceIndex(centres, radii, shape)
    with np.errstate(all="ignore"):
        gaps = distances(centres, point, shape) - radii * scale     # a probe this big just touches, in floats
        gaps = gaps[np.isfinite(gaps) & (gaps >= 0.0)]
        nudged = np.nextafter(gaps[:2], np.inf).tolist()
    for rho in [0.0, *gaps[:3].tolist(), *nudged, magnitude * 0.25]:
        want = [i for i in range(n) if _meets(centres[i], point, radii[i], scale, rho, shape)]
        assert index.overlapping(point, rho, exact=True, scale=scale).tolist() == want, rho
        handles, counts = index.overlapping_many(point[None], [rho], exact=True, scale=scale)
        assert handles.tolist() == want and counts.tolist() == [len(want)]


@settings(max_examples=60, deadline=None)
@given(st.sampled_from(MAGNITUDES), st.sampled_from(SHAPES), st.integers(1, 3), st.integers(0, 2 ** 31))
def test_pairs_are_the_fraction_answer(magnitude, shape, dim, seed):
    """Touching lattice neighbours (exact sums), near misses an ulp apart and random spheres."""
    rng = np.random.default_rng(seed)
    n = int(rng.integers(0, 30))
    centres = np.round(rng.uniform(-3.0, 3.0, (n, dim))) * magnitude
    radii = np.where(rng.random(n) < 0.5, 0.5 * magnitude, rng.uniform(0.0, 1.5, n) * magnitude)
    radii = np.where(rng.random(n) < 0.3, np.nextafter(radii, np.where(rng.random(n) < 0.5, 0.0, np.inf)), radii)
    centres = np.where(rng.random((n, 1)) < 0.2, centres + rng.uniform(-1, 1, (n, dim)) * magnitude, centres)
    handles = rng.permutation(10 * n + 1)[:n]
    index = BruteForceIndex(centres, radii, shape, handles=handles, dim=dim)
    want = sorted((min(int(handles[i]), int(handles[j])), max(int(handles[i]), int(handles[j])))
                  for i in range(n) for j in range(i + 1, n)
                  if _meets(centres[i], centres[j], radii[i], 1.0, radii[j], shape))
    first, second = index.overlapping_pairs()
    assert first.dtype == np.int64 and second.dtype == np.int64
    assert list(zip(first.tolist(), second.tolist())) == want


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("dim", [1, 2, 3])
def test_many_point_calls_split_into_the_single_ones(shape, dim):
    rng = np.random.default_rng(dim)
    centres, radii = rng.uniform(0, 10, (50, dim)), rng.uniform(0, 3, 50)
    index = BruteForceIndex(centres, radii, shape, handles=np.arange(50) * 3 + 1)
    points, rhos = rng.uniform(0, 10, (7, dim)), rng.uniform(0, 2, 7)
    for exact in (False, True):
        handles, counts = index.query_many(points, exact=exact, scale=0.7)
        assert np.array_equal(handles, np.concatenate([index.query(p, exact, 0.7) for p in points]))
        assert counts.tolist() == [index.query(p, exact, 0.7).size for p in points]
        handles, counts = index.overlapping_many(points, rhos, exact=exact, scale=0.7)
        assert np.array_equal(handles, np.concatenate([index.overlapping(p, r, exact, 0.7)
                                                       for p, r in zip(points, rhos)]))
    assert set(index.query(points[0], exact=True).tolist()) <= set(index.handles.tolist())


@pytest.mark.parametrize("shape", SHAPES)
def test_it_answers_as_the_tree_and_the_grid(shape):
    """The three PointIndex implementations agree on every exact call (handles in insertion order)."""
    rng = np.random.default_rng(5)
    centres, radii = rng.uniform(0, 64, (300, 3)), rng.uniform(0, 6, 300)
    index = BruteForceIndex(centres, radii, shape)
    tree = ViewDistanceTree(size=64.0, dim=3, shape=shape)
    grid = DenseViewDistanceGrid(size=64.0, dim=3, shape=shape, min_radius=0.25)
    for other in (tree, grid):
        assert other.insert_many(centres, radii).tolist() == list(range(300))
        assert isinstance(other, PointIndex)
    assert isinstance(index, PointIndex)
    points = rng.uniform(0, 64, (20, 3))
    for other in (tree, grid):
        for p in points:
            assert sorted(other.query(p, exact=True, scale=1.5).tolist()) == index.query(p, exact=True, scale=1.5).tolist()
            assert sorted(other.overlapping(p, 2.0, exact=True).tolist()) == index.overlapping(p, 2.0, exact=True).tolist()
        first, second = other.overlapping_pairs()
        order = np.lexsort((second, first))
        want = index.overlapping_pairs()
        assert np.array_equal(first[order], want[0]) and np.array_equal(second[order], want[1])


def test_it_reads_the_callers_float64_arrays_in_place():
    """A scene that moves its objects in place moves them in the index (the demo's ``--brute-force``)."""
    centres, radii = np.array([[0.0, 0.0], [10.0, 0.0]]), np.array([1.0, 1.0])
    index = BruteForceIndex(centres, radii)
    assert index.query((10.0, 0.5), exact=True).tolist() == [1]
    centres[0] = (10.0, 0.0)
    radii[1] = 0.25
    assert index.query((10.0, 0.5), exact=True).tolist() == [0]
    flat = BruteForceIndex([1.0, 5.0], [0.5, 0.5], dim=1)
    assert flat.query(5.5, exact=True).tolist() == [1] and flat.query([1.25], exact=True).tolist() == [0]


def test_an_empty_index_answers_nothing():
    index = BruteForceIndex(np.zeros((0, 3)), np.zeros(0))
    assert len(index) == 0 and index.query((1.0, 2.0, 3.0), exact=True).size == 0
    handles, counts = index.query_many(np.zeros((2, 3)), exact=True)
    assert handles.size == 0 and counts.tolist() == [0, 0]
    assert all(a.size == 0 for a in index.overlapping_pairs())
    assert index.trace((0.0, 0.0, 0.0)).levels == []
    details = index.query_detailed((0.0, 0.0, 0.0), trace=True)
    assert details.candidates == 0 and details.trace is not None and details.trace.levels == []


def test_returned_arrays_belong_to_the_caller():
    index = BruteForceIndex(np.zeros((3, 2)), np.ones(3))
    a = index.query((0.0, 0.0))
    a[:] = 99
    assert index.query((0.0, 0.0)).tolist() == [0, 1, 2]
    assert not index.handles.flags.writeable


@pytest.mark.parametrize("make, error, match", [
    (lambda: BruteForceIndex(np.zeros((2, 3)), np.ones(2), shape="torus"), ValueError, "shape"),
    (lambda: BruteForceIndex(np.zeros(3), np.ones(3)), ValueError, "dim"),
    (lambda: BruteForceIndex(np.zeros((2, 4)), np.ones(2)), ValueError, "dim must be 1, 2 or 3"),
    (lambda: BruteForceIndex(np.zeros((2, 2)), np.ones(2), dim=2.0), ValueError, "dim must be 1, 2 or 3"),
    (lambda: BruteForceIndex(np.zeros((2, 1)), np.ones(2), dim=True), ValueError, "dim must be 1, 2 or 3"),
    (lambda: BruteForceIndex(np.zeros((2, 3)), np.ones(3)), ValueError, "radii"),
    (lambda: BruteForceIndex([[0.0, np.nan]], [1.0]), ValueError, "finite"),
    (lambda: BruteForceIndex([[0.0, 0.0]], [-1.0]), ValueError, "negative"),
    (lambda: BruteForceIndex([[0.0, 0.0]], [np.inf]), ValueError, "finite"),
    (lambda: BruteForceIndex(np.zeros((2, 2)), np.ones(2), handles=[3, 3]), ValueError, "unique"),
    (lambda: BruteForceIndex(np.zeros((2, 2)), np.ones(2), handles=[0, -1]), ValueError, "negative"),
    (lambda: BruteForceIndex(np.zeros((2, 2)), np.ones(2), handles=[0]), ValueError, "handles"),
    (lambda: BruteForceIndex(np.zeros((2, 2)), np.ones(2), handles=[0.5, 1.0]), TypeError, "integer"),
    (lambda: BruteForceIndex([["a", "b"]], [1.0]), TypeError, "numeric"),
])
def test_bad_construction_is_refused(make, error, match):
    with pytest.raises(error, match=match):
        make()


@pytest.mark.parametrize("call, error, match", [
    (lambda ix: ix.query((0.0, 0.0), scale=0.0), ValueError, "scale"),
    (lambda ix: ix.query((0.0, 0.0), exact=True, scale=True), TypeError, "scale"),
    (lambda ix: ix.query((0.0, 0.0), exact="yes"), TypeError, "exact"),
    (lambda ix: ix.query((0.0, np.inf), exact=True), ValueError, "finite"),
    (lambda ix: ix.query((0.0, 0.0, 0.0), exact=True), ValueError, "shape"),
    (lambda ix: ix.query_many([[0.0, 0.0, 0.0]]), ValueError, "shape"),
    (lambda ix: ix.overlapping((0.0, 0.0), -1.0, exact=True), ValueError, "negative"),
    (lambda ix: ix.overlapping((0.0, 0.0), np.nan, exact=True), ValueError, "finite"),
    (lambda ix: ix.overlapping_many([[0.0, 0.0]] * 2, [1.0, 2.0, 3.0], exact=True), ValueError, "radii"),
    (lambda ix: ix.query_detailed((0.0, 0.0), scale=-1.0), ValueError, "scale"),
    (lambda ix: ix.query_detailed((0.0, 0.0), trace=1), TypeError, "trace"),
    (lambda ix: ix.trace((0.0, 0.0), scale=math.inf), ValueError, "scale"),
])
def test_bad_queries_are_refused_and_change_nothing(call, error, match):
    centres, radii = np.array([[0.0, 0.0], [3.0, 4.0]]), np.array([5.0, 1.0])
    index = BruteForceIndex(centres, radii)
    with pytest.raises(error, match=match):
        call(index)
    assert index.query((3.0, 4.0), exact=True).tolist() == [0, 1]
    assert centres.tolist() == [[0.0, 0.0], [3.0, 4.0]] and radii.tolist() == [5.0, 1.0]
