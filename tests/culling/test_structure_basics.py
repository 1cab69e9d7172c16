"""The public contract of docs/CONTRACT.md, one rule at a time, on small cases.

Every test runs on the tree and (when ``culling`` has it) the dense grid, over
a world ``[0, 16)`` per axis, unless it is about something only the tree does.
"""

from __future__ import annotations

import numpy as np
import pytest
from brute_force import KINDS, TREE, BruteForce, check_contents, check_query, sorted_handles

SIZE = 16.0
kinds = pytest.mark.parametrize("kind", KINDS, ids=repr)
dims = pytest.mark.parametrize("dim", [1, 2, 3])


def at(dim, *values):
    """A point with the given leading coordinates and the rest 5.0 (inside the world)."""
    return np.array(list(values) + [5.0] * (dim - len(values)), dtype=np.float64)


# -- construction and the empty structure ----------------------------------------

def test_design_example():
    """The usage example of the contract (docs/CONTRACT.md)."""
    from culling import ViewDistanceTree
    tree = ViewDistanceTree(size=4096.0, origin=(0.0, 0.0, 0.0), dim=3)
    h = tree.insert((10.0, 20.0, 30.0), 100.0)
    hs = tree.insert_many(np.array([[100.0, 100.0, 100.0], [4000.0, 10.0, 10.0]]), np.array([50.0, 5000.0]))
    assert isinstance(h, (int, np.integer)) and hs.dtype == np.int64 and hs.shape == (2,)
    assert sorted_handles(tree.query((60.0, 60.0, 60.0), exact=True)) == sorted([h, int(hs[1])])
    tree.update(h, (70.0, 70.0, 70.0), 5.0)
    tree.update_many(hs, np.array([[60.0, 60.0, 61.0], [4000.0, 10.0, 10.0]]), np.array([50.0, 5000.0]))
    assert sorted_handles(tree.query((60.0, 60.0, 60.0), exact=True)) == sorted(hs.tolist())
    handles, counts = tree.query_many(np.array([[60.0, 60.0, 60.0], [70.0, 70.0, 70.0]]), exact=True)
    assert counts.tolist() == [2, 3]
    assert sorted_handles(handles[2:]) == sorted([h, *hs.tolist()])
    tree.remove(h)
    tree.remove_many(hs)
    assert len(tree) == 0 and h not in tree
    tree.check_invariants()


@kinds
@dims
@pytest.mark.parametrize("shape", ["sphere", "cube"])
def test_empty_structure(kind, dim, shape):
    s = kind.make(SIZE, dim=dim, shape=shape)
    s.check_invariants()
    assert len(s) == 0 and 0 not in s
    for exact in (False, True):
        got = s.query(at(dim, 1.0), exact=exact)
        assert isinstance(got, np.ndarray) and got.dtype == np.int64 and got.shape == (0,)
        handles, counts = s.query_many(np.zeros((3, dim)), exact=exact)
        assert handles.dtype == np.int64 and handles.shape == (0,) and counts.tolist() == [0, 0, 0]
    trace = s.trace(at(dim, 1.0))
    assert list(trace.levels) == [] and len(trace.candidates) == 0


@kinds
def test_constructor_defaults_and_keywords(kind):
    s = kind.make(SIZE)  # dim=3, sphere, origin zeros
    h = s.insert((1.0, 1.0, 1.0), 0.5)
    assert s.query((1.0, 1.0, 1.5), exact=True).tolist() == [h]
    assert s.query((1.0, 1.5, 1.5), exact=True).size == 0  # a sphere, not a cube
    moved = kind.make(SIZE, origin=(100.0, 100.0, 100.0), dim=3, shape="cube")
    h = moved.insert((101.0, 101.0, 101.0), 0.5)
    assert moved.query((101.5, 101.5, 101.5), exact=True).tolist() == [h]


# -- the exact test -----------------------------------------------------------------

@kinds
@dims
def test_surface_points_count_as_inside(kind, dim):
    sphere, cube = kind.make(SIZE, dim=dim), kind.make(SIZE, dim=dim, shape="cube")
    c, r = at(dim, 6.0), 1.5
    hs, hc = sphere.insert(c, r), cube.insert(c, r)
    for axis in range(dim):
        for sign in (-1, 1):
            p = c.copy()
            p[axis] += sign * r
            assert sphere.query(p, exact=True).tolist() == [hs]
            assert cube.query(p, exact=True).tolist() == [hc]
            p[axis] += sign * 2.0**-40
            assert sphere.query(p, exact=True).size == 0 and cube.query(p, exact=True).size == 0
    corner = c + r
    assert cube.query(corner, exact=True).tolist() == [hc]
    if dim > 1:  # the cube's corner is sqrt(dim) r from the centre
        assert sphere.query(corner, exact=True).size == 0
        assert sphere.query(corner, exact=True, scale=np.sqrt(dim) * 1.0001).tolist() == [hs]
    # (3, 4) r = 5, scaled by 1/4: Euclidean, exactly on the surface
    if dim >= 2:
        p = c.copy()
        p[:2] += (0.75, 1.0)
        sphere.update(hs, c, 1.25)
        assert sphere.query(p, exact=True).tolist() == [hs]


@kinds
@dims
@pytest.mark.parametrize("radius", [0.0, -0.0])
def test_point_object_found_only_at_its_centre(kind, dim, radius):
    s = kind.make(SIZE, dim=dim, shape="sphere")
    c = at(dim, 3.3)
    h = s.insert(c, radius)
    assert s.radius(h) == 0.0
    assert s.query(c, exact=True).tolist() == [h]
    assert h in s.query(c).tolist()
    p = c.copy()
    p[0] = np.nextafter(c[0], np.inf)
    assert s.query(p, exact=True).size == 0
    assert s.query(c, exact=True, scale=2.5).tolist() == [h]


# -- the visiting rule and child placement, observed through query and trace ------------

@kinds
def test_midpoint_goes_to_the_high_child_and_the_visit_edges(kind):
    """Root [0, 16), children [0, 8) and [8, 16) (edge W = 8, grown by W/2 = 4).

    A radius of 2 lives in a level-1 node; centre 8.0 (the midpoint) in [8, 16).
    The high child is visited for 4 <= p < 20, the low one for -4 <= p < 12.
    """
    s = kind.make(SIZE, dim=1)
    high = s.insert(8.0, 2.0)
    low = s.insert(np.nextafter(8.0, 0), 2.0)
    for p, expect in [(3.0, {low}), (4.0, {low, high}), (11.5, {low, high}), (12.0, {high}),
                      (15.9, {high}), (-4.0, {low}), (np.nextafter(12.0, 0), {low, high})]:
        assert set(s.query(p).tolist()) == expect, f"candidates at {p}"
        levels = s.trace(p).levels
        if kind is TREE:  # the tree stops where no node exists
            assert [lv.depth for lv in levels] == [0, 1]
        visited = {float(lo) for lo in np.asarray(levels[1].bounds)[:, 0, 0]}
        expected_lows = {lo for lo, h in ((0.0, low), (8.0, high)) if h in expect}
        assert visited == expected_lows, f"visited at {p}"
    if kind.grows:  # outside the world: only the tree answers there
        assert set(s.query(np.nextafter(-4.0, -np.inf)).tolist()) == set()
        assert set(s.query(np.nextafter(20.0, 0)).tolist()) == {high}
        assert set(s.query(20.0).tolist()) == set()


@kinds
@dims
def test_home_level_follows_the_radius(kind, dim):
    """A radius r lives where W/4 <= r < W/2: seen as the level whose objects count is 1."""
    for r, depth in [(4.0, 0), (7.99, 0), (3.99, 1), (2.0, 1), (1.0, 2), (0.5, 3), (0.25, 4), (0.2499, 5)]:
        s = kind.make(SIZE, dim=dim)
        s.insert(at(dim, 5.0), r)
        levels = s.trace(at(dim, 5.0)).levels
        objects = [int(lv.objects) for lv in levels]
        assert len(objects) > depth and objects[depth] == 1 and sum(objects) == 1, f"radius {r}: {objects}"
        assert [lv.node_size for lv in levels[:depth + 1]] == [SIZE / 2**d for d in range(depth + 1)]
        if kind is TREE:
            assert len(levels) == depth + 1


@kinds
@dims
@pytest.mark.parametrize("shape", ["sphere", "cube"])
def test_scaled_queries(kind, dim, shape):
    rng = np.random.default_rng(dim)
    s, model = kind.make(SIZE, dim=dim, shape=shape), BruteForce(dim, shape)
    centres, radii = rng.uniform(0, SIZE, (200, dim)), rng.uniform(0, 3, 200)
    for h, c, r in zip(s.insert_many(centres, radii).tolist(), centres, radii):
        model.insert(h, c, r)
    for p in rng.uniform(0, SIZE, (20, dim)):
        for scale in (0.5, 1.0, 2.5, 7):
            check_query(s, model, p, scale)
        assert s.trace(p, scale=0.5).visited_nodes <= s.trace(p).visited_nodes <= s.trace(p, scale=2.5).visited_nodes


# -- handles ------------------------------------------------------------------------------

@kinds
def test_handles_are_ints_unique_and_reused(kind):
    s = kind.make(SIZE, dim=2)
    hs = [s.insert((1.0, 1.0), 1.0) for _ in range(10)]
    assert all(isinstance(h, (int, np.integer)) and not isinstance(h, bool) and h >= 0 for h in hs)
    assert len(set(hs)) == 10
    more = s.insert_many(np.ones((10, 2)), np.ones(10))
    assert not set(more.tolist()) & set(hs)
    seen = set(hs) | set(more.tolist())
    for _ in range(200):  # insert/remove churn: a removed handle comes back
        h = s.insert((2.0, 2.0), 0.1)
        seen.add(h)
        s.remove(h)
        assert h not in s
    assert len(seen) <= 21 + 5, f"handles are not reused: {len(seen)} distinct for 21 live objects"
    h = hs[3]
    s.remove(h)
    again = s.insert((9.0, 9.0), 0.5)
    if again == h:  # a reused handle names the new object only
        assert s.query((1.0, 1.0), exact=True).tolist().count(h) == 0
        assert s.query((9.0, 9.0), exact=True).tolist() == [h]
    s.check_invariants()


@kinds
def test_numpy_integer_handles_accepted(kind):
    s = kind.make(SIZE, dim=2)
    hs = s.insert_many(np.ones((6, 2)), np.ones(6))
    s.update(np.int32(hs[0]), (2.0, 2.0), 1.0)
    s.update(np.uint16(hs[1]), (3.0, 3.0), 1.0)
    assert np.int64(hs[0]) in s and np.uint8(hs[1]) in s
    s.update_many(hs[2:4].astype(np.int32), np.full((2, 2), 4.0), [1.0, 1.0])
    s.update_many([int(hs[2]), int(hs[3])], [[5.0, 5.0], [5.0, 5.0]], (1, 1))
    s.remove(np.int16(hs[0]))
    s.remove_many(list(map(int, hs[1:3])))
    s.remove_many(tuple(hs[3:5].astype(np.uint32)))
    assert sorted_handles([h for h in hs if h in s]) == [int(hs[5])]
    assert s.centre(np.int32(hs[5])).tolist() == [1.0, 1.0] and s.radius(hs[5]) == 1.0
    s.check_invariants()


# -- accepted input types ---------------------------------------------------------------

@kinds
@dims
def test_lists_tuples_ints_and_float32_are_accepted(kind, dim):
    ref, s = kind.make(SIZE, dim=dim), kind.make(SIZE, dim=dim)
    centres = np.array([[1.0 + i + 0.5 * a for a in range(dim)] for i in range(5)])
    radii = np.array([1, 2, 0, 3, 1], dtype=np.float64)
    ref.insert_many(centres, radii)
    int_centres = [[1 + i] * dim for i in range(5)]
    hs = [s.insert(tuple(int_centres[0]), 1)]                        # tuple of ints, int radius
    hs.append(s.insert(np.float32(2.0) if dim == 1 else list(map(np.float32, centres[1])), np.float32(2.0)))
    hs += s.insert_many(centres[2:].astype(np.float32), radii[2:].astype(np.float32)).tolist()
    s.update(hs[0], list(centres[0]), 1)
    s.update_many(hs[2:], centres[2:].tolist(), tuple(radii[2:].tolist()))
    s.update_many(np.array(hs[1:2]), centres[1:2].astype(np.float32), [np.float32(2)])
    s.check_invariants()
    np.testing.assert_array_equal(s.centres_of(hs), centres)  # multiples of 0.5: exact in float32
    np.testing.assert_array_equal(s.radii_of(hs), radii)
    points = [[2] * dim, tuple([3.5] * dim), np.full(dim, 4.0, dtype=np.float32)]
    for p in points:
        assert sorted_handles(s.query(p, exact=True)) == sorted_handles(ref.query(np.asarray(p, float), exact=True))
        assert len(s.trace(p).candidates) == len(s.query(p))
    a, ca = s.query_many([list(map(float, p)) for p in points], exact=True)
    b, cb = s.query_many(np.array(points, dtype=np.float32), exact=True)
    assert ca.tolist() == cb.tolist() and sorted_handles(a) == sorted_handles(b)


@kinds
@dims
def test_empty_batches(kind, dim):
    s = kind.make(SIZE, dim=dim)
    h = s.insert(at(dim, 1.0), 1.0)
    for centres, radii in [(np.empty((0, dim)), np.empty(0)), ([], []), (np.empty((0, dim), np.float32), ())]:
        got = s.insert_many(centres, radii)
        assert isinstance(got, np.ndarray) and got.dtype == np.int64 and got.shape == (0,)
        s.update_many(np.empty(0, dtype=np.int64), centres, radii)
        s.update_many([], centres, radii)
    s.remove_many([])
    s.remove_many(np.empty(0, dtype=np.int64))
    handles, counts = s.query_many(np.empty((0, dim)))
    assert handles.shape == (0,) and handles.dtype == np.int64 and len(counts) == 0
    assert len(s) == 1 and h in s
    s.check_invariants()


@kinds
def test_dim1_scalars_and_flat_arrays(kind):
    s, model = kind.make(SIZE, dim=1), BruteForce(1, "sphere")
    h = s.insert(3.0, 1.0)
    model.insert(h, [3.0], 1.0)
    h2 = s.insert(np.float64(5.0), 0.5)
    model.insert(h2, [5.0], 0.5)
    flat = s.insert_many(np.array([7.0, 9.0]), [1.0, 1.0])
    column = s.insert_many(np.array([[11.0], [13.0]]), [1.0, 1.0])
    for hh, c in zip(list(flat) + list(column), [7.0, 9.0, 11.0, 13.0]):
        model.insert(hh, [c], 1.0)
    s.update(h, 3.5, 1.0)
    model.update(h, [3.5], 1.0)
    s.update_many(flat, [7.5, 9.5], [1.0, 1.0])
    s.update_many(column, np.array([[11.5], [13.5]]), [1.0, 1.0])
    for hh, c in zip(list(flat) + list(column), [7.5, 9.5, 11.5, 13.5]):
        model.update(hh, [c], 1.0)
    check_contents(s, model)
    for p in (3.0, 4.5, np.float32(7.0), [9.0], np.array([13.5]), 0):
        check_query(s, model, np.asarray(p, dtype=np.float64).reshape(1))
        assert sorted_handles(s.query(p, exact=True)) == sorted(model.query(np.asarray(p, float)))
    a, ca = s.query_many(np.array([3.0, 9.5]), exact=True)
    b, cb = s.query_many(np.array([[3.0], [9.5]]), exact=True)
    assert ca.tolist() == cb.tolist() and sorted_handles(a) == sorted_handles(b) and len(a) == 2


# -- ownership of arrays --------------------------------------------------------------

@kinds
@dims
def test_returned_arrays_belong_to_the_caller(kind, dim):
    rng = np.random.default_rng(dim)
    s, model = kind.make(SIZE, dim=dim), BruteForce(dim, "sphere")
    centres, radii = rng.uniform(0, SIZE, (50, dim)), rng.uniform(0, 4, 50)
    hs = s.insert_many(centres, radii)
    for h, c, r in zip(hs.tolist(), centres, radii):
        model.insert(h, c, r)
    p = centres[0]
    outputs = {
        "handles": hs, "query": s.query(p), "exact": s.query(p, exact=True),
        "many": s.query_many(centres[:3])[0], "counts": s.query_many(centres[:3])[1],
        "candidates": s.trace(p).candidates, "centres_of": s.centres_of(hs[:5]),
        "radii_of": s.radii_of(hs[:5]), "centre": s.centre(hs[0]),
    }
    copies = {k: np.array(v, copy=True) for k, v in outputs.items()}
    # later calls never overwrite what was handed out ...
    s.insert_many(rng.uniform(0, SIZE, (30, dim)), rng.uniform(0, 4, 30))
    s.update_many(hs[:20], rng.uniform(0, SIZE, (20, dim)), radii[:20])
    s.query(p)
    s.query_many(centres[:10])
    s.remove_many(s.query(p))
    s.query(centres[1])
    for k, v in outputs.items():
        np.testing.assert_array_equal(v, copies[k], err_msg=f"{k} was overwritten by a later call")
    # ... and writing into them (where allowed) does not reach into the structure
    s2 = kind.make(SIZE, dim=dim)
    hs2 = s2.insert_many(centres, radii)
    mine = hs2.copy()
    before = sorted_handles(s2.query(p, exact=True))
    for arr in (s2.query(p), s2.query(p, exact=True), s2.query_many(centres[:3])[0], s2.centres_of(hs2),
                s2.radii_of(hs2), s2.centre(hs2[0]), s2.trace(p).candidates, hs2):
        if arr.flags.writeable:
            arr[...] = 0
    assert sorted_handles(s2.query(p, exact=True)) == before
    np.testing.assert_array_equal(s2.centres_of(mine), centres)
    # the inputs are copied, too
    mine_c, mine_r = centres.copy(), radii.copy()
    s3 = kind.make(SIZE, dim=dim)
    hs3 = s3.insert_many(mine_c, mine_r)
    mine_c[:] = 1.0
    mine_r[:] = 0.0
    np.testing.assert_array_equal(s3.centres_of(hs3), centres)
    np.testing.assert_array_equal(s3.radii_of(hs3), radii)
    s3.check_invariants()


@kinds
def test_centre_and_radius_read_back(kind):
    s = kind.make(SIZE, dim=3)
    h = s.insert((1.0, 2.0, 3.0), 0.75)
    assert s.centre(h).tolist() == [1.0, 2.0, 3.0] and s.radius(h) == 0.75
    s.update(h, (4.0, 5.0, 6.0), 1.25)
    assert s.centre(h).tolist() == [4.0, 5.0, 6.0] and s.radius(h) == 1.25
    s.remove(h)
    with pytest.raises(KeyError):
        s.centre(h)
    with pytest.raises(KeyError):
        s.radius(h)


def test_tree_grows_for_far_centres_and_large_radii():
    tree, model = TREE.make(SIZE, dim=2), BruteForce(2, "sphere")
    for c, r in [((1.0, 1.0), 0.5), ((-1000.0, 3.0), 2.0), ((5.0, 5.0), 100.0), ((1e5, -1e5), 0.0)]:
        h = tree.insert(c, r)
        model.insert(h, c, r)
        check_contents(tree, model)
    for p in [(1.0, 1.0), (1.0, 1.5), (-1000.0, 5.0), (80.0, 80.0), (1e5, -1e5), (0.0, 0.0)]:
        check_query(tree, model, np.array(p))
    assert tree.trace((1.0, 1.0)).levels[0].node_size > 1e5


# -- the visiting rule, exactly, at every grown edge --------------------------------------

def _populate_every_cell(tree, dim, levels, lo, hi):
    """One object at the centre of every cell of ``levels`` inside [lo, hi): all those nodes exist."""
    for level in levels:
        w = SIZE / 2**level
        ticks = np.arange(lo, hi, w) + w / 2
        grid = np.stack(np.meshgrid(*[ticks] * dim, indexing="ij"), axis=-1).reshape(-1, dim)
        tree.insert_many(grid, np.full(len(grid), w / 4))


def _expected_lows(dim, level, p, lo, hi):
    """Low corners of the level's cells in [lo, hi) with lo_c - W/2 <= p < hi_c + W/2 on every axis."""
    w = SIZE / 2**level
    ticks = np.arange(lo, hi, w)
    per_axis = [[t for t in ticks if t - w / 2 <= x < t + w + w / 2] for x in p]
    grid = np.meshgrid(*per_axis, indexing="ij")
    return {tuple(row) for row in np.stack(grid, axis=-1).reshape(-1, dim).tolist()}


@pytest.mark.parametrize("dim", [1, 2])
@pytest.mark.parametrize("grown", [False, True], ids=["root", "grown root"])
def test_visit_rule_is_exact_at_grown_edges(dim, grown):
    """docs/CONTRACT.md, "Geometry": a child is visited when ``lo - W/2 <= p < hi + W/2`` per axis.

    Every cell of levels 1..4 exists (one object each), so the visited set per
    level is known; query points sit on every grown edge and one ulp either
    side of it.  Origin 0 and size 16: every bound is an exact binary number.
    """
    tree = TREE.make(SIZE, dim=dim)
    lo, hi = (-SIZE, SIZE) if grown else (0.0, SIZE)
    levels = range(1, 5) if dim == 1 else range(1, 4)
    _populate_every_cell(tree, dim, levels, lo, hi)
    top = tree.trace(np.zeros(dim)).levels[0]
    assert top.node_size == hi - lo, "set-up: the root should span exactly the populated cells"
    edges = sorted({float(t + s * SIZE / 2**level / 2) for level in levels
                    for t in np.arange(lo, hi + 1, SIZE / 2**level) for s in (-1, 1)})
    wrong = []
    for e in edges:
        for x in (np.nextafter(e, -np.inf), e, np.nextafter(e, np.inf)):
            p = np.full(dim, x)
            p[-1] = (lo + hi) / 2 + 0.3  # the other axes away from any edge
            if dim == 1:
                p[0] = x
            trace = tree.trace(p)
            for lv in trace.levels[1:]:
                level = round(np.log2(SIZE / lv.node_size))
                got = {tuple(row) for row in np.asarray(lv.bounds)[:, 0, :].tolist()}
                want = _expected_lows(dim, level, p, lo, hi)
                if got != want:
                    wrong.append((x, level, sorted(got - want), sorted(want - got)))
    assert not wrong, (f"{len(wrong)} visits differ from the rule (point, level, extra lows, missing lows), "
                       f"first: {wrong[:4]}")


def test_missed_node_at_grown_edge_loses_an_exact_answer():
    """A minimal case of the rule computed in floating point: ``p = 4 - 2**-51``
    lies inside the grown box [-12, 4) of node [-8, 0), which holds a sphere of
    radius ``4 - 2**-51`` centred at ``-2**-60``; ``|p - c|`` rounds to the
    radius, but exceeds it by ``2**-60`` in exact arithmetic: the exact test
    (exact for the float inputs, docs/DESIGN.md "The exact filter and its exact fallback") leaves it out, and the
    node is still visited.  Moving ``c`` to 0 puts ``p`` on the surface: inside."""
    tree, model = TREE.make(SIZE, dim=1), BruteForce(1, "sphere")
    c, r, p = -2.0**-60, 4 - 2.0**-51, 4 - 2.0**-51
    h = tree.insert(c, r)
    model.insert(h, [c], r)
    assert model.query([p]) == set()
    assert h in tree.query(p).tolist()
    check_query(tree, model, np.array([p]))
    tree.update(h, 0.0, r)
    model.update(h, [0.0], r)
    assert model.query([p]) == {h}
    check_query(tree, model, np.array([p]))


def test_extra_node_just_outside_grown_edge():
    """``p = 4 - 2**-52`` lies below 4, the low grown edge of node [8, 16): not visited."""
    tree = TREE.make(SIZE, dim=1)
    far = tree.insert(8.0, 2.0)
    tree.insert(1.0, 2.0)
    p = np.nextafter(4.0, 0)
    assert far not in tree.query(p).tolist()
    assert [float(b) for b in np.asarray(tree.trace(p).levels[1].bounds)[:, 0, 0]] == [0.0]


# -- properties of placement and visiting, for any input (hypothesis) -----------------------

from hypothesis import given  # noqa: E402
from hypothesis import strategies as st  # noqa: E402


def _binary_or_float(lo: float, hi: float):
    binary = st.integers(0, 10).flatmap(
        lambda j: st.integers(int(lo * 2**j), int(hi * 2**j) - 1).map(lambda k: k / 2**j))
    return st.one_of(binary, st.floats(lo, hi, exclude_max=True, allow_nan=False))


@given(dim=st.integers(1, 3), data=st.data(), radius=st.one_of(
    st.floats(SIZE / 2**20, SIZE / 2, exclude_max=True), st.integers(-18, -2).map(lambda e: SIZE * 2.0**e)))
def test_home_level_and_cell_for_any_sphere(dim, data, radius):
    """A lone sphere shows up on the level with ``W/4 <= r < W/2``, in the node holding its centre."""
    centre = np.array(data.draw(st.lists(_binary_or_float(0.0, SIZE), min_size=dim, max_size=dim)))
    tree = TREE.make(SIZE, dim=dim)
    h = tree.insert(centre, radius)
    levels = tree.trace(centre).levels
    home = levels[-1]
    assert int(home.objects) == 1 and sum(int(lv.objects) for lv in levels) == 1
    w = home.node_size
    assert w / 4 <= radius < w / 2, f"radius {radius} stored at node size {w}"
    with np.errstate(under="ignore"):  # subnormal centres
        lows = np.floor(centre / w) * w  # the half-open box [lo, lo + W) that holds the centre
    assert any((b[0] == lows).all() for b in np.asarray(home.bounds)), "not in the node holding its centre"
    assert tree.query(centre, exact=True).tolist() == [h]


_GRID = {}


def _grid_tree(dim):
    """A tree with a node in every cell of levels 1..3 over [0, 16) (built once per dim)."""
    if dim not in _GRID:
        tree = TREE.make(SIZE, dim=dim)
        _populate_every_cell(tree, dim, range(1, 4), 0.0, SIZE)
        _GRID[dim] = tree
    return _GRID[dim]


@given(dim=st.integers(1, 3), data=st.data(), scale=st.sampled_from([0.5, 1.0, 2.5]))
def test_visited_nodes_are_exactly_those_of_the_rule(dim, data, scale):
    """With every cell present, each level's visited set is ``lo - sW/2 <= p < hi + sW/2``."""
    tree = _grid_tree(dim)
    p = np.array(data.draw(st.lists(_binary_or_float(-6.0, SIZE + 6.0), min_size=dim, max_size=dim)))
    trace = tree.trace(p, scale=scale)
    for lv in trace.levels[1:]:
        level = round(np.log2(SIZE / lv.node_size))
        w = lv.node_size
        ticks = np.arange(0.0, SIZE, w)
        per_axis = [[t for t in ticks if t - scale * w / 2 <= x < t + w + scale * w / 2] for x in p]
        want = {tuple(row) for row in np.stack(np.meshgrid(*per_axis, indexing="ij"), -1).reshape(-1, dim).tolist()}
        got = {tuple(row) for row in np.asarray(lv.bounds)[:, 0, :].tolist()}
        assert got == want, f"level {level} at {p.tolist()}: extra {sorted(got - want)}, missing {sorted(want - got)}"


@dims
def test_single_mutations_place_as_batches_do_up_to_the_largest_world(dim):
    """``insert`` and ``update`` find the home key in one kernel call and test the world and the root
    from the key: at the largest world's faces and an ulp either side they accept and reject exactly
    as ``insert_many`` does, put the object in the same node, and grow the root only as far as it must."""
    from culling import ViewDistanceTree
    from culling.core.lattice import MAX_GROWTH

    probe = ViewDistanceTree(SIZE, dim=dim)
    low, high = (float(v[0]) for v in probe._lattice.world_bounds())
    for x in [low, np.nextafter(low, -np.inf), np.nextafter(low, np.inf), high, np.nextafter(high, -np.inf),
              np.nextafter(high, np.inf)]:
        centre = at(dim, x)
        single, batch = ViewDistanceTree(SIZE, dim=dim), ViewDistanceTree(SIZE, dim=dim)
        inside = low <= x < high
        if not inside:
            with pytest.raises(ValueError, match="largest world"):
                single.insert(centre, 1.0)
            with pytest.raises(ValueError, match="largest world"):
                batch.insert_many(centre[None], [1.0])
            single.check_invariants()
            assert len(single) == 0 and single.root_level == 0
            continue
        h = single.insert(centre, 1.0)
        batch.insert_many(centre[None], [1.0])
        single.check_invariants()
        assert single.root_level == batch.root_level >= -MAX_GROWTH
        assert np.array_equal(single.node_boxes()[1], batch.node_boxes()[1])
        single.update(h, at(dim, 1.0), 1.0)  # back home: the root shrinks
        single.check_invariants()
        assert single.root_level == 0


@dims
def test_an_update_that_stays_in_its_node_rewrites_only_its_row(dim):
    """An update whose home is the object's own node rewrites its row in place (centre, radius, squared
    reach and tile summary); the other objects, the nodes and the rows stay; one that leaves the root
    grows it, and a radius too large for any root is a ValueError that changes nothing."""
    from culling import ViewDistanceTree

    rng = np.random.default_rng(dim)
    tree = ViewDistanceTree(SIZE, dim=dim)
    model = BruteForce(dim, "sphere")
    centres = rng.uniform(0.0, SIZE, (200, dim))
    radii = rng.uniform(0.1, 2.0, 200)
    for h, c, r in zip(tree.insert_many(centres, radii).tolist(), centres, radii):
        model.insert(h, c, r)
    nodes, rows = tree._obj_node.copy(), tree._obj_pos.copy()
    h = 7
    tree.update(h, centres[h] + 1e-9, float(radii[h]) * (1 + 1e-12))
    model.update(h, centres[h] + 1e-9, float(radii[h]) * (1 + 1e-12))
    tree.check_invariants()
    assert np.array_equal(tree._obj_node, nodes) and np.array_equal(tree._obj_pos, rows)
    check_contents(tree, model)
    tree.update(h, at(dim, -5 * SIZE), 1.0)
    model.update(h, at(dim, -5 * SIZE), 1.0)
    tree.check_invariants()
    assert tree.root_level < 0
    with pytest.raises(ValueError, match="the radius must be below"):
        tree.update(h, at(dim, 1.0), 1e300)
    tree.check_invariants()
    check_contents(tree, model)
    for p in rng.uniform(-6 * SIZE, SIZE, (20, dim)):
        check_query(tree, model, p)


@kinds
@dims
def test_an_update_without_a_radius_keeps_the_stored_one(kind, dim):
    """``update(h, centre)`` moves the object and keeps its radius, as ``update_many`` without radii does:
    in its node or cell and out of it; a dead handle is a KeyError that changes nothing."""
    s = kind.make(SIZE, dim=dim)
    model = BruteForce(dim, "sphere")
    rng = np.random.default_rng(dim)
    centres = rng.uniform(1.0, SIZE - 1.0, (40, dim))
    radii = rng.uniform(0.1, 3.0, 40)
    for h, c, r in zip(s.insert_many(centres, radii).tolist(), centres, radii):
        model.insert(h, c, r)
    for h, step in ((3, 1e-9), (5, 7.0), (11, -6.0)):  # stays, moves, moves back past the origin
        target = np.clip(centres[h] + step, 0.0, SIZE - 1e-6)
        s.update(h, target)
        model.update(h, target, float(radii[h]))
        assert s.radius(h) == float(radii[h])
        s.check_invariants()
    s.remove(7)
    model.remove(7)
    with pytest.raises(KeyError):
        s.update(7, centres[0])
    s.check_invariants()
    check_contents(s, model)
    for p in rng.uniform(0.0, SIZE, (30, dim)):
        check_query(s, model, p)
