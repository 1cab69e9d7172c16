"""The visit rule decided exactly, where ``p - origin`` rounds.

A level of a trace holds at most ``2**dim`` nodes, and every visited node's
box grown by ``W/2`` holds the query point in exact arithmetic
(``lo - W/2 <= p < hi + W/2``, ``lo`` and ``hi`` the node's exact faces
``origin + index * W``), for the tree and the dense grid, in worlds whose
size is not a power of two and whose origin is not zero.  Hypothesis aims the
points and the centres at grown-box faces and cell faces, one ulp either side;
the exact answers are compared with the brute-force model (``Fraction`` at
the edges).
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
from brute_force import BruteForce, sorted_handles
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from culling import DenseViewDistanceGrid, ViewDistanceTree

SIZES = (1.0, 0.3, 7.3, 100.0, 4096.0, 310000.0)
ORIGINS = ("-size/2", 0.1, 1e6, -3072.0)


def _origin(choice: object, size: float) -> float:
    return -size / 2 if choice == "-size/2" else float(choice)  # type: ignore[arg-type]


def _nearest(value: Fraction) -> float:
    """The float nearest an exact value."""
    return float(value)  # Fraction.__float__ rounds correctly


def _wiggle(x: float, step: int) -> float:
    for _ in range(abs(step)):
        x = math.nextafter(x, math.inf if step > 0 else -math.inf)
    return x


def _exact_face(lo: float, origin: float, unit: Fraction) -> Fraction:
    """The exact face ``origin + j * unit`` (``j`` an integer) nearest ``lo``, a reported, rounded face."""
    return Fraction(origin) + round((Fraction(lo) - Fraction(origin)) / unit) * unit


def _check_levels(trace, p: np.ndarray, origin: np.ndarray, dim: int, size: float) -> None:
    for level in trace.levels:
        bounds = level.bounds
        assert bounds.shape[0] <= 2 ** dim, f"{bounds.shape[0]} nodes on a level, more than 2**{dim}"
        if level.depth == 0:
            continue
        edge = Fraction(level.node_size)
        unit = edge if level.level >= 0 else Fraction(size)  # grown levels' faces: origin + j * size
        for box in bounds:
            for axis in range(dim):
                lo = _exact_face(float(box[0, axis]), float(origin[axis]), unit)
                x = Fraction(float(p[axis]))
                assert lo - edge / 2 <= x < lo + edge + edge / 2, (
                    f"visited node [{float(lo)}, {float(lo + edge)}) on axis {axis} (edge {float(edge)}) "
                    f"does not hold {p[axis]!r} in its grown box")


@st.composite
def worlds_and_points(draw, kind: str):
    dim = draw(st.integers(1, 3))
    size = draw(st.sampled_from(SIZES))
    origin_value = _origin(draw(st.sampled_from(ORIGINS)), size)
    origin = np.full(dim, origin_value)
    level = draw(st.integers(1, 5))
    edge = Fraction(size) / 2 ** level
    cells = 2 ** level
    # Cells near a chosen one, per axis; a point on a grown-box face of the chosen cell, +-1 ulp.
    k = [draw(st.integers(0, cells - 1)) for _ in range(dim)]
    point = []
    for axis in range(dim):
        if axis == 0 or draw(st.booleans()):
            face = Fraction(origin_value) + (k[axis] + draw(st.sampled_from((0, 1)))) * edge
            face += draw(st.sampled_from((-1, 1))) * edge / 2
            point.append(_wiggle(_nearest(face), draw(st.integers(-1, 1))))
        else:
            inside = Fraction(origin_value) + (k[axis] + Fraction(draw(st.integers(1, 7)), 8)) * edge
            point.append(_nearest(inside))
    # Centres on cell faces (+-1 ulp) around the point, with radii at the top of the level's class.
    radius = math.nextafter(float(edge / 2), 0.0)
    centres = []
    for _ in range(draw(st.integers(1, 12))):
        centre = []
        for axis in range(dim):
            j = k[axis] + draw(st.integers(-1, 2))
            face = Fraction(origin_value) + j * edge
            centre.append(_wiggle(_nearest(face), draw(st.integers(-1, 1))))
        centres.append(centre)
    centres_array = np.array(centres)
    if kind == "grid":  # a grid's world is fixed: keep the centres inside it, exactly
        keep = [all(Fraction(origin_value) <= Fraction(c) < Fraction(origin_value) + Fraction(size) for c in row)
                for row in centres]
        centres_array = centres_array[keep]
    radii = np.full(centres_array.shape[0], radius)
    smaller = draw(st.sampled_from((1.0, 0.5, 0.25)))
    radii[::2] *= smaller
    return dim, size, origin, level, np.array(point), centres_array.reshape(-1, dim), radii


def _structure(kind: str, dim: int, size: float, origin: np.ndarray, level: int):
    if kind == "tree":
        return ViewDistanceTree(size, origin=origin, dim=dim)
    return DenseViewDistanceGrid(size, origin=origin, dim=dim, min_radius=math.ldexp(size, -(level + 3)))


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=worlds_and_points("tree"))
def test_tree_visit_holds_at_most_two_cells_per_axis_at_rounded_faces(case):
    _check_case("tree", case)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=worlds_and_points("grid"))
def test_grid_visit_holds_at_most_two_cells_per_axis_at_rounded_faces(case):
    _check_case("grid", case)


def _check_case(kind: str, case) -> None:
    dim, size, origin, level, point, centres, radii = case
    structure = _structure(kind, dim, size, origin, level)
    handles = structure.insert_many(centres, radii)
    structure.check_invariants()
    model = BruteForce(dim=dim, shape="sphere")
    for h, c, r in zip(handles.tolist(), centres, radii):
        model.insert(h, c, r)
    _check_levels(structure.trace(point), point, origin, dim, size)
    assert sorted_handles(structure.query(point, exact=True)) == sorted(model.query(point))
    # The centres' own grown-box faces: the points where a sphere's reach ends.
    for c, r in zip(centres[:4], radii[:4]):
        for step in (-1, 0, 1):
            q = c.copy()
            q[0] = _wiggle(_nearest(Fraction(float(c[0])) - Fraction(float(r))), step)
            _check_levels(structure.trace(q), q, origin, dim, size)
            assert sorted_handles(structure.query(q, exact=True)) == sorted(model.query(q))


def test_a_point_on_a_grown_box_face_visits_the_two_nodes_whose_grown_boxes_hold_it():
    tree = ViewDistanceTree(1.0, origin=(-0.5,), dim=1)
    tree.insert_many([[-0.375], [-0.125], [0.125]], [0.0625] * 3)
    p = np.array([np.nextafter(-0.125, -1.0)])
    bounds = tree.trace(p).levels[2].bounds[:, :, 0]
    assert bounds.tolist() == [[-0.5, -0.25], [-0.25, 0.0]]
    _check_levels(tree.trace(p), p, np.array([-0.5]), 1, 1.0)


def test_centre_rounding_onto_a_face_is_placed_by_its_exact_value():
    # fl(c - origin) rounds up onto a cell face; the exact placement keeps c below it, so the
    # exact window, which visits only nodes whose grown box holds the point, still finds it
    # from a point just within its reach on the far side.
    origin, size = -3072.1, 4096.0
    edge = Fraction(size) / 2 ** 20
    for j in range(1 << 19, (1 << 19) + 4096):
        face = Fraction(origin) + j * edge
        c = float(face)
        while Fraction(c) >= face:
            c = math.nextafter(c, -math.inf)
        if Fraction(c - origin) == face - Fraction(origin):
            break
    else:
        raise AssertionError("no centre whose difference to the origin rounds onto a face")
    tree = ViewDistanceTree(size, origin=(origin,), dim=1)
    r = math.nextafter(float(edge / 2), 0.0)
    h = tree.insert(c, r)
    tree.check_invariants()
    q = float(Fraction(c) - Fraction(r))
    q = q if Fraction(q) >= Fraction(c) - Fraction(r) else math.nextafter(q, math.inf)
    assert h in tree.query(q, exact=True).tolist()
    _check_levels(tree.trace(q), np.array([q]), np.array([origin]), 1, size)


def _at_reach_truth(p, c, limit, cube):
    """``|p - c| <= limit`` in exact arithmetic (largest axis for cubes)."""
    d = [abs(Fraction(a) - Fraction(b)) for a, b in zip(p, c)]
    return max(d) <= limit if cube else sum(x * x for x in d) <= limit * limit


@pytest.mark.parametrize("dim", [1, 2, 3])
@pytest.mark.parametrize("shape", ["sphere", "cube"])
def test_a_huge_worlds_levels_keep_the_cell_a_tiny_offset_underflows_out_of(dim, shape):
    """On levels whose half edge is beyond the exact range (a world of 2**1000), the window's estimate was
    kept unchecked: ``x - o`` of -5e-324 divided by the root's edge underflowed to 0, the point's cell
    became the one above the origin's face, and with a subnormal scale the walk never reached the node
    [-2**976, 0) its object lives in: an exact query at the object's own centre answered nothing."""
    from culling import ViewDistanceTree

    tiny = float.fromhex("-0x0.0000000000001p-1022")  # -5e-324
    centre = [tiny] + [1.0] * (dim - 1)
    tree = ViewDistanceTree(float.fromhex("0x1p+1000"), dim=dim, shape=shape)
    handle = tree.insert(centre, 0.0)
    for scale in (5e-324, 1e-322, 1.0):
        assert tree.query(centre, exact=True, scale=scale).tolist() == [handle]
        assert tree.query_many([centre], exact=True, scale=scale)[0].tolist() == [handle]
        assert tree.overlapping(centre, 0.0, exact=True, scale=scale).tolist() == [handle]
        assert tree.query_detailed(centre, scale=scale).handles.tolist() == [handle]


@pytest.mark.parametrize("shape", ["sphere", "cube"])
def test_a_probe_touching_at_the_smallest_normal_scale_in_a_huge_world_is_found(shape):
    from culling import ViewDistanceTree

    h = float.fromhex
    centre = [h("-0x0.0000000000001p-1022"), h("0x1.56e1fc2f8f359p-997")]
    radius = h("0x1.fffffffffffffp+1004")
    point = [h("0x1.fffffffffffffp-18"), h("0x1.56e1fc2f8f359p-997")]
    rho, scale = h("0x0.0000000000001p-1022"), h("0x1p-1022")
    assert _at_reach_truth(point, centre, Fraction(radius) * Fraction(scale) + Fraction(rho), shape == "cube")
    tree = ViewDistanceTree(h("0x1p+1015"), dim=2, shape=shape)
    handle = tree.insert(centre, radius)
    assert tree.overlapping(point, rho, exact=True, scale=scale).tolist() == [handle]
    assert tree.overlapping_many([point], [rho], exact=True, scale=scale)[0].tolist() == [handle]
    grown = ViewDistanceTree(1e300, dim=1)  # the 1-D variant, on a root grown twice
    first = grown.insert(h("-0x0.0000000000002p-1022"), h("0x1.7e43c8800759bp+995"))
    grown.insert(2e300, 1.0)
    assert grown.root_level == -2
    p, r, s = h("0x1.7e43c8800759bp-65"), h("0x0.0000000000002p-1022"), h("0x1p-1060")
    assert grown.overlapping(p, r, exact=True, scale=s).tolist() == [first]


@pytest.mark.parametrize("dim", [1, 2, 3])
def test_the_grids_trace_counts_the_cells_its_query_reads_not_their_ancestors(dim):
    """At scale 1e-300 a fine level keeps a cell it cannot decide, whose coarse ancestor lies outside that
    level's window: the trace listed the ancestor (the overlay draws the listing as a tree) and counted its
    members, so trace and query_detailed had a candidate the query did not (CONTRACT: the same)."""
    from culling import DenseViewDistanceGrid

    h = float.fromhex
    rest = [1.0] * (dim - 1)
    grid = DenseViewDistanceGrid(h("0x1p+40"), origin=[-0.1] * dim, dim=dim, min_radius=h("0x1p+35"))
    grid.insert([h("0x1p+40") * 0.3] + rest, h("0x1p+40") * 0.17)
    grid.insert([h("0x1p+39") - 0.1 - h("0x1p+30")] + rest, h("0x1p+31"))
    point = [h("0x1.ffffffffff99ap+38")] + rest
    for scale in (1e-300, 1.0):
        candidates = sorted(grid.query(point, scale=scale).tolist())
        trace = grid.trace(point, scale=scale)
        assert sorted(trace.candidates.tolist()) == candidates
        assert sum(level.objects for level in trace.levels) == len(candidates)
        assert grid.query_detailed(point, scale=scale).candidates == len(candidates)
