"""Sphere probes and pairs (overlapping, overlapping_many, overlapping_pairs) against exact brute force.

The truth is ``fractions.Fraction`` arithmetic on the float64 inputs:
``|c - p| <= r * scale + rho`` (Euclidean, or the largest axis for cubes) and
``|c_i - c_j| <= r_i + r_j``.  Hypothesis draws the hostile cases on purpose:
centres and radii on cell faces and class boundaries (powers of two of the
world's edge), identical centres, radius 0, spheres that touch exactly
(Pythagorean offsets) and values one ulp either side of touching.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from culling import CollisionCandidates, DenseViewDistanceGrid, ViewDistanceTree
from culling.core.structs import World
from culling.tree.walk import walk

SIZE = 16.0
#: Class boundaries and cell faces of a world of edge 16: every power of two from 1/64 to 8.
EDGES = [SIZE * 2.0 ** -k for k in range(1, 11)]


def make(kind: str, dim: int, shape: str) -> ViewDistanceTree | DenseViewDistanceGrid:
    if kind == "tree":
        return ViewDistanceTree(size=SIZE, dim=dim, shape=shape)
    return DenseViewDistanceGrid(size=SIZE, dim=dim, shape=shape, min_radius=SIZE / 256)


def distance2(a, b, shape):
    """The exact distance (cube) or squared distance (sphere) between two float tuples."""
    offsets = [Fraction(x) - Fraction(y) for x, y in zip(a, b)]
    if shape == "cube":
        return max(abs(d) for d in offsets)
    return sum(d * d for d in offsets)


def meets(a, b, limit, shape):
    d = distance2(a, b, shape)
    return d <= limit if shape == "cube" else d <= limit * limit


def truth_probe(objects, p, rho, scale, shape):
    return sorted(h for h, (c, r) in objects.items()
                  if meets(c, p, Fraction(r) * Fraction(scale) + Fraction(rho), shape))


def truth_pairs(objects, shape):
    hs = sorted(objects)
    return sorted((a, b) for i, a in enumerate(hs) for b in hs[i + 1:]
                  if meets(objects[a][0], objects[b][0], Fraction(objects[a][1]) + Fraction(objects[b][1]), shape))


def nudged(x: float, steps: int) -> float:
    for _ in range(abs(steps)):
        x = math.nextafter(x, math.inf if steps > 0 else -math.inf)
    return x


# A coordinate: on a face of some level, a few ulps off one, or anywhere in the world.
coord = st.one_of(
    st.builds(lambda k, e, s: nudged(min(k * e, SIZE * (1 - 2 ** -40)), s),
              st.integers(0, 15), st.sampled_from(EDGES[1:]), st.integers(-2, 2)),
    st.floats(0.0, SIZE, exclude_max=True),
).map(lambda x: min(max(x, 0.0), math.nextafter(SIZE, 0.0)))
# A radius: 0, a class boundary (a quarter or half of some level's edge) give or take an ulp, or any.
radius = st.one_of(
    st.just(0.0),
    st.builds(lambda e, s: nudged(e / 4, s), st.sampled_from(EDGES[1:]), st.integers(-1, 1)),
    st.floats(0.0, 5.0),
)


@st.composite
def worlds(draw, max_objects=14):
    dim = draw(st.integers(1, 3))
    shape = draw(st.sampled_from(["sphere", "cube"]))
    n = draw(st.integers(0, max_objects))
    centres = [tuple(draw(coord) for _ in range(dim)) for _ in range(n)]
    radii = [draw(radius) for _ in range(n)]
    if n >= 2 and draw(st.booleans()):  # identical centres, or a touching pair along an axis
        centres[1] = centres[0]
        if draw(st.booleans()):
            moved = list(centres[0])
            moved[0] = min(moved[0] + radii[0] + radii[1], math.nextafter(SIZE, 0.0))
            centres[1] = tuple(moved)
    return dim, shape, centres, radii


def build(kind, dim, shape, centres, radii):
    index = make(kind, dim, shape)
    handles = index.insert_many(np.array(centres, dtype=np.float64).reshape(-1, dim), np.array(radii))
    objects = {int(h): (c, r) for h, c, r in zip(handles.tolist(), centres, radii)}
    return index, objects


@pytest.mark.parametrize("kind", ["tree", "grid"])
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(world=worlds(), probe=st.data())
def test_overlapping_is_exactly_the_spheres_meeting_the_probe(kind, world, probe):
    dim, shape, centres, radii = world
    index, objects = build(kind, dim, shape, centres, radii)
    p = tuple(probe.draw(coord) for _ in range(dim))
    rho = probe.draw(radius)
    scale = probe.draw(st.sampled_from([1.0, 0.5, 3.0, 1.0 + 2 ** -30]))
    expected = truth_probe(objects, p, rho, scale, shape)
    got = index.overlapping(p, rho, exact=True, scale=scale)
    assert got.dtype == np.int64 and sorted(got.tolist()) == expected
    candidates = index.overlapping(p, rho, scale=scale).tolist()
    assert len(set(candidates)) == len(candidates) and set(expected) <= set(candidates)
    # radius 0 is the point query, with and without the exact test
    assert sorted(index.overlapping(p, 0.0, exact=True, scale=scale).tolist()) == \
        sorted(index.query(p, exact=True, scale=scale).tolist())
    assert sorted(index.overlapping(p, 0.0, scale=scale).tolist()) == sorted(index.query(p, scale=scale).tolist())


@pytest.mark.parametrize("kind", ["tree", "grid"])
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(world=worlds(), probes=st.data())
def test_overlapping_many_answers_each_probe_with_its_own_radius(kind, world, probes):
    dim, shape, centres, radii = world
    index, objects = build(kind, dim, shape, centres, radii)
    m = probes.draw(st.integers(0, 6))
    points = [tuple(probes.draw(coord) for _ in range(dim)) for _ in range(m)]
    rhos = [probes.draw(radius) for _ in range(m)]
    handles, counts = index.overlapping_many(np.array(points).reshape(m, dim), rhos, exact=True)
    assert counts.shape == (m,) and handles.size == counts.sum()
    offsets = np.concatenate([[0], np.cumsum(counts)])
    for i in range(m):
        assert sorted(handles[offsets[i]:offsets[i + 1]].tolist()) == truth_probe(objects, points[i], rhos[i], 1.0,
                                                                                  shape)
    one = 1.5  # one radius for every probe
    handles, counts = index.overlapping_many(np.array(points).reshape(m, dim), one, exact=True)
    offsets = np.concatenate([[0], np.cumsum(counts)])
    for i in range(m):
        assert sorted(handles[offsets[i]:offsets[i + 1]].tolist()) == truth_probe(objects, points[i], one, 1.0, shape)


@pytest.mark.parametrize("kind", ["tree", "grid"])
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(world=worlds(max_objects=24))
def test_overlapping_pairs_is_every_meeting_pair_once(kind, world):
    dim, shape, centres, radii = world
    index, objects = build(kind, dim, shape, centres, radii)
    first, second = index.overlapping_pairs()
    assert first.dtype == np.int64 and second.dtype == np.int64 and (first < second).all()
    got = sorted(zip(first.tolist(), second.tolist()))
    assert got == truth_pairs(objects, shape)


@pytest.mark.parametrize("kind", ["tree", "grid"])
@pytest.mark.parametrize("dim", [1, 2, 3])
def test_pairs_and_probes_follow_mutations(kind, dim):
    rng = np.random.default_rng(20 + dim)
    index = make(kind, dim, "sphere")
    objects = {}
    for step in range(12):
        n = int(rng.integers(1, 30))
        centres = rng.uniform(0, SIZE, (n, dim))
        radii = rng.choice([0.0, 0.25, 0.5, 1.0, 2.0, 3.0], n) * rng.choice([1.0, 0.999], n)
        hs = index.insert_many(centres, radii)
        objects.update({int(h): (tuple(c), float(r)) for h, c, r in zip(hs, centres.tolist(), radii)})
        live = np.array(sorted(objects), dtype=np.int64)
        moving = rng.choice(live, size=live.size // 2, replace=False)
        moved = np.clip([np.array(objects[int(h)][0]) + rng.normal(0, 1.0, dim) for h in moving], 0, SIZE - 1e-9)
        index.update_many(moving, moved.reshape(-1, dim), [objects[int(h)][1] for h in moving])
        objects.update({int(h): (tuple(c), objects[int(h)][1]) for h, c in zip(moving, moved.reshape(-1, dim).tolist())})
        gone = rng.choice(live, size=live.size // 4, replace=False)
        index.remove_many(gone)
        for h in gone.tolist():
            del objects[h]
        index.check_invariants()
        first, second = index.overlapping_pairs()
        assert sorted(zip(first.tolist(), second.tolist())) == truth_pairs(objects, "sphere"), step
        p = tuple(rng.uniform(0, SIZE, dim))
        assert sorted(index.overlapping(p, 2.5, exact=True).tolist()) == truth_probe(objects, p, 2.5, 1.0, "sphere")


MAX = float(np.finfo(np.float64).max)


@pytest.mark.parametrize("kind", ["tree", "grid"])
def test_a_probe_at_the_largest_float_with_the_largest_radius_finds_what_it_meets(kind):
    """|0 - M| = M <= 1 + M: the probe meets the object.  The tree's walk missed it: the distance from the
    origin, ``M - (-5e299)``, overflowed to +inf inside a face's sign, which then read as 'above' and moved
    the window's first cell past the object's."""
    index = ViewDistanceTree(size=1e300, origin=(-5e299,), dim=1) if kind == "tree" else \
        DenseViewDistanceGrid(size=1e300, origin=(-5e299,), dim=1, min_radius=1e297)
    h = index.insert((0.0,), 1.0)
    assert index.overlapping((MAX,), MAX, exact=True).tolist() == [h]
    assert index.overlapping((MAX,), MAX).tolist() == [h]
    handles, counts = index.overlapping_many([(MAX,), (-MAX,)], [MAX, MAX], exact=True)
    assert handles.tolist() == [h, h] and counts.tolist() == [1, 1]


# Near the end of the float range: worlds of edge 1e290 to 1e301, probes at or near +-MAX with radii near it.
huge_coord = st.sampled_from([MAX, -MAX, nudged(MAX, -1), 0.999999999 * MAX, 1e308, 0.0, -1.7e308])
huge_radius = st.sampled_from([MAX, nudged(MAX, -1), nudged(MAX, -3), 1.797e308, 1.7e308, 1e308, 0.0])


@pytest.mark.parametrize("kind", ["tree", "grid"])
@settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))
@given(data=st.data())
def test_probes_at_the_end_of_the_float_range_are_exact(kind, data):
    dim = data.draw(st.integers(1, 3))
    shape = data.draw(st.sampled_from(["sphere", "cube"]))
    size = 10.0 ** data.draw(st.integers(290, 301))
    origin = -size * data.draw(st.sampled_from([0.0, 0.5, 0.3]))
    index = ViewDistanceTree(size=size, origin=(origin,) * dim, dim=dim, shape=shape) if kind == "tree" else \
        DenseViewDistanceGrid(size=size, origin=(origin,) * dim, dim=dim, shape=shape, min_radius=size / 256)
    n = data.draw(st.integers(1, 6))
    centres = [tuple(origin + size * data.draw(st.floats(0.0, 0.999)) for _ in range(dim)) for _ in range(n)]
    radii = [size * data.draw(st.sampled_from([0.0, 0.001, 0.1, 0.4])) for _ in range(n)]
    handles = index.insert_many(np.array(centres).reshape(n, dim), np.array(radii))
    objects = {int(h): (c, r) for h, c, r in zip(handles.tolist(), centres, radii)}
    p = tuple(data.draw(huge_coord) for _ in range(dim))
    rho = data.draw(huge_radius)
    scale = data.draw(st.sampled_from([1.0, 1e-10, 1e10]))
    expected = truth_probe(objects, p, rho, scale, shape)
    assert sorted(index.overlapping(p, rho, exact=True, scale=scale).tolist()) == expected
    assert set(expected) <= set(index.overlapping(p, rho, scale=scale).tolist())
    got, counts = index.overlapping_many([p], [rho], exact=True, scale=scale)
    assert sorted(got.tolist()) == expected and counts.tolist() == [len(expected)]


@pytest.mark.parametrize("kind", ["tree", "grid"])
def test_a_probe_covering_the_world_answers_everything(kind):
    index = make(kind, 3, "sphere")
    rng = np.random.default_rng(5)
    hs = index.insert_many(rng.uniform(0, SIZE, (500, 3)), rng.uniform(0, 2, 500))
    for rho in (1e3, 1e300, float(np.finfo(float).max)):
        assert sorted(index.overlapping((1.0, 2.0, 3.0), rho, exact=True).tolist()) == sorted(hs.tolist())
    assert index.overlapping((1.0, 2.0, 3.0), 1e300, scale=1e300).size == 500
    handles, counts = index.overlapping_many([(0.0, 0.0, 0.0), (1e6, 1e6, 1e6)], 1e308, exact=True)
    assert counts.tolist() == [500, 500]


def test_probe_walk_visits_at_most_the_stated_nodes_per_level():
    tree = ViewDistanceTree(size=SIZE, dim=2)
    rng = np.random.default_rng(9)
    tree.insert_many(rng.uniform(0, SIZE, (4000, 2)), rng.uniform(0, 0.05, 4000))
    nodes = tree._nodes
    for rho in (0.0, 0.1, 0.7, 3.0):
        p = rng.uniform(0, SIZE, 2)
        visited, ends = walk(p, 1.0, World(*tree._world()), nodes.struct(), rho)
        for depth in range(1, ends.size):
            w = tree._lattice.node_size(tree.root_level + depth)
            assert ends[depth] - ends[depth - 1] <= (2 + math.ceil(2 * rho / w)) ** 2


@pytest.mark.parametrize("kind", ["tree", "grid"])
@pytest.mark.parametrize("call, error", [
    (lambda s: s.overlapping((1.0, 2.0, float("nan")), 1.0), ValueError),
    (lambda s: s.overlapping((1.0, 2.0, 3.0), float("inf")), ValueError),
    (lambda s: s.overlapping((1.0, 2.0, 3.0), -1.0), ValueError),
    (lambda s: s.overlapping((1.0, 2.0, 3.0), float("nan")), ValueError),
    (lambda s: s.overlapping((1.0, 2.0), 1.0), ValueError),
    (lambda s: s.overlapping((1.0, 2.0, 3.0), "far"), TypeError),
    (lambda s: s.overlapping((1.0, 2.0, 3.0), 1.0, scale=0.0), ValueError),
    (lambda s: s.overlapping((1.0, 2.0, 3.0), 1.0, scale=True), TypeError),
    (lambda s: s.overlapping_many([(1.0, 2.0, 3.0)], [1.0, 2.0]), ValueError),
    (lambda s: s.overlapping_many([(1.0, 2.0, 3.0)], [-1.0]), ValueError),
    (lambda s: s.overlapping_many([(1.0, 2.0, float("inf"))], 1.0), ValueError),
    (lambda s: s.overlapping_many([(1.0, 2.0)], 1.0), ValueError),
    (lambda s: s.overlapping_many([(1.0, 2.0, 3.0)], [[1.0]]), ValueError),
    (lambda s: s.overlapping_many([(1.0, 2.0, 3.0)], [float("nan")]), ValueError),
])
def test_bad_probes_raise_and_change_nothing(kind, call, error):
    index = make(kind, 3, "sphere")
    index.insert_many([(1.0, 2.0, 3.0), (2.0, 2.0, 3.0)], [1.0, 0.5])
    before = index.overlapping_pairs()
    with pytest.raises(error):
        call(index)
    assert len(index) == 2
    index.check_invariants()
    after = index.overlapping_pairs()
    assert before[0].tolist() == after[0].tolist() and before[1].tolist() == after[1].tolist()


def test_empty_and_single_structures_have_no_pairs():
    for index in (make("tree", 2, "sphere"), make("grid", 2, "cube")):
        assert [a.tolist() for a in index.overlapping_pairs()] == [[], []]
        assert index.overlapping((1.0, 1.0), 5.0).size == 0
        handles, counts = index.overlapping_many(np.empty((0, 2)), [])
        assert handles.size == 0 and counts.shape == (0,)
        index.insert((1.0, 1.0), 0.0)
        assert [a.tolist() for a in index.overlapping_pairs()] == [[], []]
        index.insert((1.0, 1.0), 0.0)  # two points at one centre meet
        assert [a.tolist() for a in index.overlapping_pairs()] == [[0], [1]]


def test_rounding_of_the_sum_never_flips_an_answer():
    # fl(0.1 + 0.2) rounds up to 0.30000000000000004, above the exact sum of the two floats:
    # at that distance the float sum says "touching", the exact one "apart"; both ways the exact one wins.
    far = 0.1 + 0.2
    assert Fraction(0.1) + Fraction(0.2) < Fraction(far)
    for kind in ("tree", "grid"):
        index = make(kind, 1, "sphere")
        index.insert(0.0, 0.1)
        assert index.overlapping(far, 0.2, exact=True).size == 0
        assert index.overlapping(0.3, 0.2, exact=True).size == 1  # 0.3 as a float is below the exact sum
        index.insert(far, 0.2)
        assert index.overlapping_pairs()[0].size == 0


def test_collision_candidates_probe_radius_per_call_and_pairs():
    cc = CollisionCandidates(probe_radius=1.0, size=64.0, dim=2)
    a = cc.insert((0.0, 0.0), 1.0)
    b = cc.insert((3.0, 0.0), 2.0)
    c = cc.insert((10.0, 0.0), 0.5)
    assert cc.touching((6.0, 0.0)).tolist() == [b]
    assert cc.touching((6.0, 0.0), probe_radius=3.5).tolist() == [b, c]
    handles, counts = cc.touching_many([(6.0, 0.0), (0.0, 1.5)], [3.5, 0.5])
    assert counts.tolist() == [2, 1] and sorted(handles[:2].tolist()) == [b, c] and handles[2] == a
    assert [p.tolist() for p in cc.pairs()] == [[a], [b]]
    cc.set_probe_radius(0.0)
    assert cc.touching((3.0, 2.0)).tolist() == [b]
    cc.check_invariants()
