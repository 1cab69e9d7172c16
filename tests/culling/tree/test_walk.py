"""The compiled walk (culling.tree.walk.walk) against a readable reference walk.

The walk derives each child's cell from its parent's cell (``2 * cell + bit``
per axis) and skips the quadrants outside the window before it reads the
child row.  The reference below is the plain algorithm: on every level, test
the stored cell of every existing child of the previous level's visited
nodes against the window of the exact definitions (``lattice_reference``:
``fractions.Fraction``; the half reach is the kernel's, itself checked
against Fraction below).  Both must visit the same nodes in the same order, on
trees with grown roots (negative levels), deep chains, freed node rows,
points on cell faces and one ulp either side, and scales from tiny to huge.
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Iterator
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from lattice_reference import cell as exact_cell
from lattice_reference import decidable, largest_float_at_most, visit_window

from culling import InterestManager, ViewDistanceTree
from culling.core import cells
from culling.core.lattice import MAX_DEPTH, MAX_GROWTH
from culling.tree import batch
from culling.tree import walk as treewalk

WALK_SETTINGS = settings(max_examples=120, deadline=None)

SIZES = [1.0, 7.3, 1000.0, 4096.0, 3e-3, 2.5e5]
ORIGINS = [0.0, -2048.0, 1e6, 0.1, -3.7e4]
SCALES = [1.0, 0.5, math.nextafter(1.0, 0.0), math.nextafter(1.0, 2.0), 3.0, 1e-9, 5e-324, 1e9, 1e300, 1.7e308]


def _nudge(x: float, ulps: int) -> float:
    for _ in range(abs(ulps)):
        x = math.nextafter(x, math.inf if ulps > 0 else -math.inf)
    return x


def reference_walk(tree: ViewDistanceTree, p: list[float], scale: float) -> tuple[list[int], list[int]]:
    """Visited nodes and level ends, testing every child's stored cell against the window."""
    nodes, lat = tree._nodes, tree._lattice
    visited, ends = [tree._root], [1]
    first, level = 0, tree.root_level + 1
    while level <= MAX_DEPTH:
        window = visit_window(lat, p, level, scale)
        last = len(visited)
        for parent in visited[first:last]:
            for node in nodes.child[parent].tolist():
                cell = nodes.cells[:, node].tolist() if node >= 0 else None
                if cell is not None and all(lo <= c <= hi for c, (lo, hi) in zip(cell, window)):
                    visited.append(node)
        if len(visited) == last:
            break
        ends.append(len(visited))
        first, level = last, level + 1
    return visited, ends


def compiled_walk(tree: ViewDistanceTree, p: list[float], scale: float,
                  cells: np.ndarray | None = None) -> tuple[list[int], list[int]]:
    nodes = tree._nodes.struct()
    if cells is not None:
        nodes = nodes._replace(cells=cells)
    visited, ends = treewalk.trace_walk(np.array(p, dtype=np.float64), scale, tree._world(), nodes)
    return visited.tolist(), ends.tolist()


@st.composite
def walk_cases(draw: st.DrawFn) -> tuple[ViewDistanceTree, list[float], float]:
    """A tree with objects on cell faces and class edges (grown roots, deep chains, freed rows), a point, a scale."""
    dim = draw(st.integers(1, 3))
    size = draw(st.sampled_from(SIZES))
    origin = [draw(st.sampled_from(ORIGINS)) for _ in range(dim)]
    tree = ViewDistanceTree(size=size, origin=origin, dim=dim)
    n = draw(st.integers(1, 14))
    centres, radii = [], []
    for _ in range(n):
        centre = []
        for axis in range(dim):
            j = draw(st.integers(0, 6))
            reach = draw(st.sampled_from([1, 3, 40]))  # worlds up to 40 roots across: grown levels
            k = draw(st.integers(-reach * 2**j, reach * 2**j))
            centre.append(_nudge(origin[axis] + size * k / 2**j, draw(st.integers(-1, 1))))
        centres.append(centre)
        kind = draw(st.sampled_from(["edge", "edge", "zero", "tiny"]))
        if kind == "edge":
            w = size / 2.0 ** draw(st.integers(-3, 12))
            radii.append(_nudge(draw(st.sampled_from([w / 4, w / 2])), -draw(st.integers(0, 1))))
        else:
            radii.append(0.0 if kind == "zero" else size * 1e-12)  # the finest level: a chain MAX_DEPTH deep
    handles = tree.insert_many(centres, radii)
    gone = draw(st.lists(st.integers(0, n - 1), unique=True, max_size=n - 1))
    if gone:
        tree.remove_many(handles[gone])  # freed rows and cleaned-up chains in the node table
    # The point: on a face of some object's cells, or at its reach, one ulp either side; or anywhere.
    base = centres[draw(st.integers(0, n - 1))]
    p = []
    for axis in range(dim):
        how = draw(st.sampled_from(["face", "reach", "near"]))
        if how == "face":
            j = draw(st.integers(0, 14))
            x = origin[axis] + size * math.floor((base[axis] - origin[axis]) / size * 2**j) / 2**j
        elif how == "reach":
            x = base[axis] + draw(st.sampled_from([-1.0, 1.0])) * radii[draw(st.integers(0, n - 1))]
        else:
            x = base[axis] + size * draw(st.floats(-2.0, 2.0))
        p.append(_nudge(x, draw(st.integers(-1, 1))))
    scale = draw(st.sampled_from(SCALES))
    return tree, p, scale


def _same_walk(tree: ViewDistanceTree, p: list[float], scale: float) -> None:
    """The compiled walk is the reference walk; where the walk cannot decide (a tiny or huge scale)
    it visits at least the nodes whose grown box holds the point, at most those of the widened window."""
    compiled = compiled_walk(tree, p, scale)
    if all(decidable(tree._lattice, level, scale) for level in range(tree.root_level + 1, MAX_DEPTH + 1)):
        assert compiled == reference_walk(tree, p, scale)
    else:
        assert set(compiled[0]) <= set(reference_walk(tree, p, scale)[0])


@WALK_SETTINGS
@given(walk_cases())
def test_walk_visits_the_nodes_of_the_reference_walk(case: tuple[ViewDistanceTree, list[float], float]) -> None:
    tree, p, scale = case
    _same_walk(tree, p, scale)


@WALK_SETTINGS
@given(walk_cases())
def test_walk_reads_no_cell_but_the_roots(case: tuple[ViewDistanceTree, list[float], float]) -> None:
    """Cells of every node but the root scrambled: the same walk (children's cells come from their parents')."""
    tree, p, scale = case
    nodes = tree._nodes
    scrambled = np.random.default_rng(0).integers(-2**40, 2**40, nodes.cells.shape)
    scrambled[:, tree._root] = nodes.cells[:, tree._root]
    assert compiled_walk(tree, p, scale, np.ascontiguousarray(scrambled)) == compiled_walk(tree, p, scale)


def test_walk_on_the_deepest_grown_root() -> None:
    """Objects at both ends of the largest world: the root at level -MAX_GROWTH, chains down to MAX_DEPTH."""
    tree = ViewDistanceTree(size=1.0, dim=2)
    lo, hi = tree._lattice.world_bounds()
    centres = [lo.tolist(), np.nextafter(hi, -np.inf).tolist(), [0.5, 0.5], [0.25, 0.75]]
    tree.insert_many(centres, [0.0, 0.0, 1e-9, 0.3])
    assert tree.root_level == -MAX_GROWTH
    for p in ([0.5, 0.5], [0.25, 0.75], centres[0], centres[1], [0.0, 0.0], [1e6, -1e6]):
        for scale in (1.0, 1e-300, 1e300):
            _same_walk(tree, p, scale)
    visited, ends = compiled_walk(tree, [0.5, 0.5], 1.0)
    assert len(ends) == MAX_DEPTH + MAX_GROWTH + 1  # every level from the root to the finest


def test_walk_beyond_its_first_buffer() -> None:
    """A huge scale visits every node: thousands, far beyond the walk's first buffer (it grows)."""
    rng = np.random.default_rng(3)
    tree = ViewDistanceTree(size=100.0, dim=3)
    tree.insert_many(rng.uniform(-150.0, 250.0, (3000, 3)), rng.uniform(0.0, 2.0, 3000) ** 3)
    live = np.flatnonzero(tree._nodes.count[: tree._nodes.issued] >= 0)
    for scale in (1e300, 50.0, 1.0):
        p = [10.0, 20.0, 30.0]
        visited, ends = compiled_walk(tree, p, scale)
        _same_walk(tree, p, scale)
        assert len(set(visited)) == len(visited)
        if scale == 1e300:
            assert sorted(visited) == live.tolist()
    trace = tree.trace([10.0, 20.0, 30.0], scale=1e300)
    assert sum(len(level.bounds) for level in trace.levels) == live.size


def _batch_matches_walks(tree: ViewDistanceTree, points: np.ndarray, scale: float) -> None:
    """``visits`` of a batch (each walk sharing the levels of the one before) is each point's own walk,
    its nodes with members in walk order, point after point."""
    node, point = treewalk.visits(points, scale, tree._world(), tree._nodes.arrays())
    expected_node, expected_point = [], []
    for i, p in enumerate(points):
        visited, _ = compiled_walk(tree, p.tolist(), scale)
        kept = [v for v in visited if tree._nodes.count[v] > 0]
        expected_node += kept
        expected_point += [i] * len(kept)
    assert node.tolist() == expected_node
    assert point.tolist() == expected_point


def _run_of_points(p: list[float], steps: list[tuple[int, float]], size: float) -> list[list[float]]:
    """``p``, then each point moved from the one before by ``ulps`` and ``shift * size`` on one axis."""
    points = [list(p)]
    for k, (ulps, shift) in enumerate(steps):
        q = list(points[-1])
        axis = k % len(q)
        q[axis] = _nudge(q[axis] + shift * size, ulps) if shift else _nudge(q[axis], ulps)
        points.append(q)
    return points


@WALK_SETTINGS
@given(walk_cases(), st.lists(st.tuples(st.integers(-2, 2), st.floats(-0.3, 0.3)), min_size=1, max_size=8))
def test_batch_visits_are_the_points_own_walks(case: tuple[ViewDistanceTree, list[float], float],
                                               steps: list[tuple[int, float]]) -> None:
    """A run of points near one another (one ulp, or a fraction of the root, from the point before, on
    one axis): the walks share levels, the boxes of shared windows decide some, and each batch walk is
    the point's own."""
    tree, p, scale = case
    points = _run_of_points(p, steps, tree.size)
    points.append(list(p))  # back to the first point: a walk that shares nothing with the one before, or all
    _batch_matches_walks(tree, np.array(points, dtype=np.float64), scale)


def test_batch_visits_beyond_their_first_buffers() -> None:
    """Scales that visit thousands of nodes: the batch walk's buffers grow (the walks start again from the
    point that ran out) and every walk is still the point's own."""
    rng = np.random.default_rng(4)
    tree = ViewDistanceTree(size=100.0, dim=3)
    tree.insert_many(rng.uniform(-150.0, 250.0, (3000, 3)), rng.uniform(0.0, 2.0, 3000) ** 3)
    points = rng.uniform(-50.0, 150.0, (40, 3))
    for scale in (1e300, 50.0, 3.0, 1.0, 0.0):
        _batch_matches_walks(tree, points, scale)


def test_batch_visits_along_a_curve() -> None:
    """Points along a Morton curve, each followed by copies moved a little on one axis: most walks share
    levels with the one before (by their boxes or by their windows), some cross a box's face by a hair."""
    rng = np.random.default_rng(5)
    tree = ViewDistanceTree(size=100.0, dim=3)
    tree.insert_many(rng.uniform(0.0, 100.0, (3000, 3)), rng.uniform(0.0, 3.0, 3000))
    points = rng.uniform(0.0, 100.0, (300, 3))
    points = points[batch.query_order(points)]
    moved = np.repeat(points, 4, axis=0)
    for k, step in enumerate((1e-9, 0.05, 0.4)):
        moved[k + 1::4, k] += step
    for scale in (1.0, 0.7):
        _batch_matches_walks(tree, moved, scale)


@settings(max_examples=300, deadline=None)
@given(st.floats(allow_nan=False), st.integers(-MAX_GROWTH, MAX_DEPTH))
def test_cell_of_is_the_exact_lattice_cell(u: float, level: int) -> None:
    """The compiled cell (a multiply by the level's power of two) is the exact definition's, subnormals and
    huge u too, and its per-level form agrees."""
    assert cells.cell_of(u, level) == exact_cell(u, level)
    assert cells.cell_of(u, level) == cells.cell_scaled(u, level, cells.level_factor(level))


@settings(max_examples=300, deadline=None)
@given(st.floats(allow_nan=False, allow_infinity=False), st.floats(min_value=0.0, allow_nan=False))
def test_round_down_sub_and_add_are_the_largest_floats_below_the_exact_results(a: float, b: float) -> None:
    """TwoSum's rounding direction: the largest float at or below ``a - b`` and ``a + b``."""
    want_sub = -math.inf if b == math.inf else largest_float_at_most(Fraction(a) - Fraction(b))
    want_add = math.inf if b == math.inf else largest_float_at_most(Fraction(a) + Fraction(b))
    assert cells.round_down_sub(a, b) == want_sub
    assert cells.round_down_add(a, b) == want_add


@settings(max_examples=300, deadline=None)
@given(st.one_of(st.floats(min_value=0.0, max_value=1.7976931348623157e308),
                 st.sampled_from([0.0, 5e-324, 2.2250738585072014e-308, 1.0, 3.0, 1e300])),
       st.one_of(st.floats(min_value=0.0, max_value=1.7976931348623157e308),
                 st.sampled_from([0.0, 5e-324, 1e-160, 1.0, 1.1, 1e160, 2.0 ** 996])))
def test_multiply_up_is_the_smallest_float_at_or_above_the_product(a: float, b: float) -> None:
    """Dekker's product rounds up only when inexact; outside its range one ulp up (still an upper bound)."""
    got, exact = cells.multiply_up(a, b), Fraction(a) * Fraction(b)
    assert got == math.inf or Fraction(got) >= exact
    below = math.nextafter(got, 0.0)
    tiny_or_huge = exact < Fraction(2.0 ** -960) or a > 2.0 ** 995 or b > 2.0 ** 995
    assert got == 0.0 or Fraction(below) < exact or tiny_or_huge


@settings(max_examples=300, deadline=None)
@given(st.one_of(st.floats(min_value=5e-324, max_value=1.7976931348623157e308),
                 st.sampled_from([5e-324, 2.2250738585072014e-308, 1e-310, 1.0, 7.3, 1e300, 1.7976931348623157e308])),
       st.integers(-MAX_GROWTH, MAX_DEPTH),
       st.sampled_from(SCALES))
def test_per_level_half_reach_is_half_reach(size: float, level: int, scale: float) -> None:
    """The walk's half reach from powers of two carried level to level equals the ldexp definition,
    subnormal and overflowing halves included."""
    down, up = math.ldexp(1.0, -level - 1), math.ldexp(1.0, level + 1)
    half = cells.half_reach(size, level, scale)
    assert cells.half_reach_by(size, down, up, scale) == half
    exact = Fraction(scale) * Fraction(size) * Fraction(2) ** (-level - 1)
    assert half == math.inf or Fraction(half) >= exact  # an upper bound of scale * W / 2 ...
    if scale == 1.0 and Fraction(2.0 ** -1022) <= exact <= Fraction(1.7976931348623157e308):
        assert Fraction(half) == exact  # ... and W / 2 itself wherever that is a normal float


@contextlib.contextmanager
def _grouped(points_per_group: float, first_room: int = treewalk._FIRST_GROUP, probe: int = 0) -> Iterator[None]:
    """``visits`` in groups (:func:`culling.tree.walk._group_visits_from`) after ``probe`` points walked
    one by one (none: groups from the first point on), about ``points_per_group`` points a group, the
    group buffers starting at ``first_room`` nodes."""
    saved = treewalk.GROUP_MIN_POINTS, treewalk.GROUP_POINTS, treewalk._FIRST_GROUP, treewalk.GROUP_PROBE
    treewalk.GROUP_MIN_POINTS, treewalk.GROUP_POINTS, treewalk._FIRST_GROUP, treewalk.GROUP_PROBE = \
        1, points_per_group, first_room, probe
    treewalk._buffers.held = None
    try:
        yield
    finally:
        treewalk.GROUP_MIN_POINTS, treewalk.GROUP_POINTS, treewalk._FIRST_GROUP, treewalk.GROUP_PROBE = saved
        treewalk._buffers.held = None


@WALK_SETTINGS
@given(walk_cases(), st.lists(st.tuples(st.integers(-2, 2), st.floats(-0.3, 0.3)), min_size=1, max_size=8),
       st.sampled_from([1.0, 3.0, 1e9]))
def test_grouped_visits_are_the_points_own_walks(case: tuple[ViewDistanceTree, list[float], float],
                                                 steps: list[tuple[int, float]], per_group: float) -> None:
    """The same runs of points walked in groups (one walk per group's box, then each found node's
    points): every point's nodes are its own walk's, in its walk's order; faces one ulp away from a
    point, grown roots and huge scales (which walk one by one) included."""
    tree, p, scale = case
    points = _run_of_points(p, steps, tree.size)
    with _grouped(per_group, first_room=1):
        _batch_matches_walks(tree, np.array(points, dtype=np.float64), scale)


def test_grouped_visits_along_a_curve() -> None:
    """Points along a Morton curve, some a hair from the one before, in groups of every size: each
    point's nodes are its own walk's; the groups' buffers grow from one node; a group whose walk passes
    its budget (a large scale) walks its points one by one."""
    rng = np.random.default_rng(6)
    tree = ViewDistanceTree(size=100.0, dim=3)
    tree.insert_many(rng.uniform(0.0, 100.0, (3000, 3)), rng.uniform(0.0, 3.0, 3000))
    points = rng.uniform(-20.0, 120.0, (400, 3))
    points = points[batch.query_order(points)]
    moved = np.repeat(points, 3, axis=0)
    moved[1::3, 0] += 1e-9
    moved[2::3, 1] = np.round(moved[2::3, 1])  # on cell faces of every level at or above 1 unit
    assert treewalk._group_extent(moved, 1.0, tree._world()) > 0.0
    for per_group in (1.0, 30.0, 500.0, 1e9):
        for scale in (1.0, 0.7, 50.0):
            with _grouped(per_group, first_room=1 if per_group == 30.0 else treewalk._FIRST_GROUP,
                          probe=8 if per_group == 500.0 else 0):
                _batch_matches_walks(tree, moved, scale)


def test_grouped_query_many_is_the_walks() -> None:
    """``query_many`` of enough points to walk in groups: the answers equal a point-by-point ``query``'s,
    in the same order, with and without the exact test."""
    rng = np.random.default_rng(7)
    tree = ViewDistanceTree(size=1000.0, dim=3)
    tree.insert_many(rng.uniform(0.0, 1000.0, (5000, 3)), rng.uniform(1.0, 10.0, 5000))
    points = rng.uniform(0.0, 1000.0, (3000, 3))
    points[::7] = np.round(points[::7] / 7.8125) * 7.8125  # on level 7's faces
    assert treewalk._group_extent(points, 1.0, tree._world()) > 0.0
    for exact in (False, True):
        handles, counts = tree.query_many(points, exact=exact)
        split = np.split(handles, np.cumsum(counts)[:-1])
        for i in range(0, 3000, 13):
            assert split[i].tolist() == tree.query(points[i], exact=exact).tolist()


@pytest.mark.parametrize(("origin", "size"), [
    (8.9e307 - 2.0**979, 2.0**980), (1.7e308 - 2.0**979, 2.0**980), (-1e308 - 2.0**979, 2.0**980),  # |x| + |o| overflows
    (1e12, 1.0), (-1e300, 2.0**-20), (2.0**60, 2.0**-10),  # small worlds far from zero: a large error bound
])
def test_grouped_query_many_at_the_ends_of_the_float_range(origin: float, size: float) -> None:
    """Worlds where ``|x| + |origin|`` overflows, or whose floats' error bound passes a cell of the finest
    level: the points walk one by one (the groups' windows would be infinite or useless), and every
    row of ``query_many`` and of an interest tick is the point's own ``query``.  Before, a group's
    window of infinite margin found no node: 32 points at a sphere's centre near 1.7e308 found it 8 times."""
    rng = np.random.default_rng(11)
    tree = ViewDistanceTree(size=size, origin=(origin,) * 3, dim=3)
    centres = origin + rng.uniform(0.1, 0.9, (200, 3)) * size
    tree.insert_many(centres, rng.uniform(0.0, 0.2, 200) * size)
    points = origin + rng.uniform(0.0, 1.0, (64, 3)) * size
    points[::2] = centres[:32]
    points[1::4] = centres[0]  # the same point again and again: a group of no extent
    assert treewalk._group_extent(points, 1.0, tree._world()) == -1.0
    for exact in (False, True):
        handles, counts = tree.query_many(points, exact=exact)
        rows = np.split(handles, np.cumsum(counts)[:-1])
        for i, p in enumerate(points):
            assert rows[i].tolist() == tree.query(p, exact=exact).tolist()
    manager, reference = InterestManager(size=size, origin=(origin,) * 3), ViewDistanceTree(size, (origin,) * 3, 3)
    for structure in (manager, reference):
        structure.insert_many(centres, np.full(200, 0.05 * size))
    tick = manager.tick(np.arange(64), points)
    for i, p in enumerate(points):
        assert sorted(tick.entered_of(i).tolist()) == sorted(reference.query(p, exact=True).tolist())


@pytest.mark.parametrize("at", [-1e308, 1.7e308, -math.nextafter(math.inf, 0.0) / 2])
def test_grouped_points_at_a_sphere_near_the_largest_float(at: float) -> None:
    """One sphere near the end of float64's range and 40 points at its centre (the groups' probe finds
    one node a point, so the points after it would walk in groups): every point, at distance 0, finds
    the sphere; before, the points after the probe's 8 found nothing."""
    size = 2.0**980
    tree = ViewDistanceTree(size=size, origin=(at - size / 2,) * 3, dim=3)
    tree.insert((at,) * 3, 1e293)
    points = np.full((40, 3), at)
    for exact in (False, True):
        handles, counts = tree.query_many(points, exact=exact)
        assert counts.tolist() == [1] * 40 and handles.tolist() == [0] * 40


def test_query_many_where_points_find_little_is_the_walks() -> None:
    """Few points among many nodes (``members._by_node`` then sorts the visits instead of counting them
    per node, :data:`culling.core.members.SORT_VISITS_BELOW`): the answers equal a point-by-point ``query``'s,
    in the same order, with points on objects' centres, repeated (many visits of one node) and in empty space.
    A sort that loses or repeats a visit fails here (checked with such a mutant of ``stable_order``)."""
    from culling.core.members import SORT_VISITS_BELOW

    rng = np.random.default_rng(11)
    tree = ViewDistanceTree(size=4096.0, dim=3)
    centres = rng.uniform(0.0, 4096.0, (30_000, 3))
    tree.insert_many(centres, rng.uniform(0.01, 0.1, 30_000))
    points = np.concatenate([centres[:6], centres[:6] + 0.005, centres[2:3].repeat(5, axis=0),
                             rng.uniform(0.0, 4096.0, (6, 3))])
    most_visits = points.shape[0] * (MAX_GROWTH + MAX_DEPTH + 1) * 8  # at most 2**dim nodes a level
    assert most_visits * SORT_VISITS_BELOW < tree.node_count
    for exact in (False, True):
        handles, counts = tree.query_many(points, exact=exact)
        split = np.split(handles, np.cumsum(counts)[:-1])
        for i, point in enumerate(points):
            assert split[i].tolist() == tree.query(point, exact=exact).tolist()
        assert all(i in split[i] for i in range(6))  # each centre finds its own object

