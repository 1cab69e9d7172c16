"""``query_detailed``: the exact answer, its spheres and distances, the candidate count and the trace,
all from one walk, agreeing with ``query``, ``query(exact=True)``, ``trace`` and brute force."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
from brute_force import BruteForce, distances
from hypothesis import given, settings
from hypothesis import strategies as st

from culling import DenseViewDistanceGrid, QueryDetails, ViewDistanceTree

KINDS = {
    "tree": lambda dim, shape: ViewDistanceTree(size=64.0, origin=(-7.0,) * dim, dim=dim, shape=shape),
    "grid": lambda dim, shape: DenseViewDistanceGrid(size=64.0, origin=(-7.0,) * dim, dim=dim, shape=shape,
                                                     min_radius=0.25),
}

# Coordinates on a 1/8 lattice (cell faces, class edges and exact reaches are hit often) or anywhere.
coordinate = st.one_of(st.integers(-56, 455).map(lambda k: k / 8.0),  # the grid's world is [-7, 57)
                       st.floats(-7.0, 56.9, allow_nan=False, allow_infinity=False))
radius = st.one_of(st.sampled_from([0.0, 0.25, 0.5, 1.0, 2.0, 4.0, 8.0, 15.99]),
                   st.floats(0.0, 15.9, allow_nan=False, allow_infinity=False))


@settings(max_examples=60, deadline=None)
@given(kind=st.sampled_from(sorted(KINDS)), dim=st.integers(1, 3), shape=st.sampled_from(["sphere", "cube"]),
       data=st.data())
def test_query_detailed_agrees_with_query_trace_and_brute_force(kind, dim, shape, data):
    index = KINDS[kind](dim, shape)
    model = BruteForce(dim=dim, shape=shape)
    n = data.draw(st.integers(0, 40))
    centres = np.array(data.draw(st.lists(st.lists(coordinate, min_size=dim, max_size=dim), min_size=n, max_size=n)),
                       dtype=np.float64).reshape(n, dim)
    radii = np.array(data.draw(st.lists(radius, min_size=n, max_size=n)), dtype=np.float64)
    handles = index.insert_many(centres, radii)
    for h, c, r in zip(handles.tolist(), centres, radii):
        model.insert(h, c, r)
    # Query at a stored centre, at a centre shifted by its exact reach along one axis, or anywhere.
    point = np.array(data.draw(st.lists(coordinate, min_size=dim, max_size=dim)), dtype=np.float64)
    if n and data.draw(st.booleans()):
        i = data.draw(st.integers(0, n - 1))
        point = centres[i].copy()
        point[data.draw(st.integers(0, dim - 1))] += radii[i]
    scale = data.draw(st.sampled_from([1.0, 0.5, 1.5]))

    seen = index.query_detailed(point, scale=scale, trace=True)

    assert isinstance(seen, QueryDetails)
    assert sorted(seen.handles.tolist()) == sorted(index.query(point, exact=True, scale=scale).tolist())
    assert sorted(seen.handles.tolist()) == sorted(model.query(point, scale=scale))
    assert seen.candidates == index.query(point, scale=scale).size
    assert sorted(seen.trace.candidates.tolist()) == sorted(index.trace(point, scale=scale).candidates.tolist())
    assert sum(level.objects for level in seen.trace.levels) == seen.candidates
    order = np.argsort(seen.handles)
    want = np.argsort(handles)  # handles of insert_many are in insertion order's rows
    rows = np.searchsorted(handles[want], seen.handles[order])
    np.testing.assert_array_equal(seen.centres[order], centres[want][rows])
    np.testing.assert_array_equal(seen.radii[order], radii[want][rows])
    with np.errstate(under="ignore"):  # the tolerance of a subnormal distance (5.9e-303) underflows: the check's own
        np.testing.assert_allclose(seen.distances[order], distances(centres[want][rows], point, shape), rtol=1e-15)
    assert seen.handles.dtype == np.int64 and seen.centres.shape == (seen.handles.size, dim)


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_query_detailed_without_trace_walks_once_and_says_so(kind):
    index = KINDS[kind](3, "sphere")
    index.insert_many([[0.0, 0.0, 0.0], [3.0, 4.0, 0.0], [30.0, 30.0, 30.0]], [5.0, 1.0, 2.0])
    seen = index.query_detailed((0.0, 0.0, 0.0))
    assert seen.trace is None
    assert sorted(seen.handles.tolist()) == [0]
    assert seen.distances.tolist() == [0.0]
    assert seen.candidates >= 1


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_query_detailed_on_an_empty_index_is_empty_with_an_empty_trace(kind):
    index = KINDS[kind](2, "sphere")
    seen = index.query_detailed((1.0, 2.0), trace=True)
    assert seen.handles.size == seen.distances.size == seen.radii.size == seen.candidates == 0
    assert seen.centres.shape == (0, 2)
    assert seen.trace is not None and seen.trace.levels == []


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_query_detailed_arrays_belong_to_the_caller(kind):
    index = KINDS[kind](2, "sphere")
    index.insert_many([[1.0, 1.0], [2.0, 2.0]], [5.0, 5.0])
    seen = index.query_detailed((1.5, 1.5))
    seen.centres[:] = 99.0
    seen.radii[:] = 0.0
    again = index.query_detailed((1.5, 1.5))
    assert np.all(again.centres < 3.0) and np.all(again.radii == 5.0)


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_query_detailed_rejects_bad_input_clearly(kind):
    index = KINDS[kind](2, "sphere")
    index.insert((1.0, 1.0), 2.0)
    with pytest.raises(TypeError, match="trace must be True or False"):
        index.query_detailed((1.0, 1.0), trace="yes")
    with pytest.raises(ValueError):
        index.query_detailed((np.nan, 1.0))
    with pytest.raises(ValueError):
        index.query_detailed((1.0, 1.0), scale=-1.0)
    with pytest.raises(ValueError):
        index.query_detailed((1.0, 1.0, 1.0))


@pytest.mark.parametrize("cls", [ViewDistanceTree, DenseViewDistanceGrid])
def test_distances_keep_their_digits_at_tiny_and_huge_magnitudes(cls):
    """A distance near 1e-162 squares below the smallest normal float: it is measured in units of the
    largest offset instead, so it is exact in 1-D and correctly rounded in 2-D (hypothesis found
    6.668e-162 for 6.594e-162)."""
    from culling.core.containment import distances

    tiny = 6.594e-162
    s = cls(size=1.0, dim=1)
    s.insert([0.0], 1e-150)
    seen = s.query_detailed([tiny])
    assert seen.distances.tolist() == [tiny]
    centres = np.array([[3e-170, 4e-170], [1e308, 1e308], [3.0, 4.0], [np.inf, 1.0]])
    d = distances(list(centres.T), [0.0, 0.0], "sphere")
    assert d[0] == pytest.approx(5e-170, rel=1e-15) and d[1] == pytest.approx(1.4142135623730951e308)
    assert d[2] == 5.0 and d[3] == np.inf


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_query_detailed_gives_a_subnormal_distance_as_brute_force_does(kind):
    """The case a random run found (its check's tolerance underflowed): a centre 5.9e-303 from the point."""
    index = KINDS[kind](1, "sphere")
    centres = np.array([[0.0], [0.0], [5.940603198892385e-303]])
    handles = index.insert_many(centres, [0.0, 0.0, 0.25])
    seen = index.query_detailed((0.0,))
    order = np.argsort(seen.handles)
    assert seen.handles[order].tolist() == handles.tolist()
    assert seen.distances[order].tolist() == distances(centres, np.array([0.0]), "sphere").tolist()
    assert seen.distances[order][2] == 5.940603198892385e-303


def _within_ulps(got: float, squared: Fraction, ulps: int) -> bool:
    """Whether ``got`` is within ``ulps`` units in its last place of ``sqrt(squared)`` (decided exactly)."""
    step = Fraction(math.ulp(got)) * ulps
    low, high = max(Fraction(got) - step, Fraction(0)), Fraction(got) + step
    return low * low <= squared <= high * high


@settings(max_examples=80, deadline=None)
@given(kind=st.sampled_from(sorted(KINDS)), dim=st.integers(1, 3), shape=st.sampled_from(["sphere", "cube"]),
       exponent=st.sampled_from([-1000, -500, -60, 0, 60, 500, 900]), data=st.data())
def test_distances_are_within_a_few_ulps_of_the_true_distance(kind, dim, shape, exponent, data):
    """The contract's words: distances computed in float64, within a few units in the last place of the
    true distance (decided with Fraction), at any magnitude."""
    unit = math.ldexp(1.0, exponent)
    if kind == "grid":
        index = DenseViewDistanceGrid(size=64.0 * unit, dim=dim, shape=shape, min_radius=0.25 * unit)
    else:
        index = ViewDistanceTree(size=64.0 * unit, dim=dim, shape=shape)
    offset = st.floats(0.0, 40.0, allow_nan=False, allow_infinity=False).map(lambda v: v * unit)
    centres = np.array(data.draw(st.lists(st.lists(offset, min_size=dim, max_size=dim), min_size=1, max_size=12)))
    index.insert_many(centres, np.full(len(centres), 15.0 * unit))
    point = np.array(data.draw(st.lists(offset, min_size=dim, max_size=dim)))
    seen = index.query_detailed(point)
    for centre, got in zip(seen.centres, seen.distances.tolist()):
        gaps = [abs(Fraction(c) - Fraction(p)) for c, p in zip(centre.tolist(), point.tolist())]
        if shape == "cube":
            assert got == float(max(gaps))  # one subtraction, correctly rounded
        else:
            assert _within_ulps(got, sum(g * g for g in gaps), 4), (got, centre, point)
