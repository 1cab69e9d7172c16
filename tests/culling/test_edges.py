"""Hostile numbers at the edges: the reported repros, and generators aimed at the edges.

Truth is decided with ``fractions.Fraction`` for the float64 inputs
(docs/DESIGN.md, "The exact filter and its exact fallback"): a sphere contains ``p`` when ``sum((c - p)**2) <=
(radius * scale)**2`` exactly, a cube when every ``|c_i - p_i| <= radius *
scale``.  The generators put centres on cell faces (binary fractions of the
root size from the origin) and one ulp either side, radii at and one ulp
below the class edges ``W/4`` and ``W/2``, query points at a sphere's exact
reach and one ulp beyond, in worlds whose size and origin are not powers of
two, with scales over many decades on grown and ungrown roots.
"""

from __future__ import annotations

import contextlib
import math
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from library_arrays import read_only

import culling
from culling import CollisionCandidates, DenseViewDistanceGrid, MultiCameraTracker, ViewDistanceTree
from culling.core import members

EDGE_SETTINGS = settings(max_examples=80, deadline=None)


def exactly_inside(centre, point, radius: float, scale: float, shape: str) -> bool:
    offsets = [Fraction(float(c)) - Fraction(float(p)) for c, p in zip(centre, point)]
    limit = Fraction(float(radius)) * Fraction(float(scale))
    if shape == "cube":
        return all(abs(d) <= limit for d in offsets)
    return sum(d * d for d in offsets) <= limit * limit


def truth(centres, radii, point, scale, shape) -> list[int]:
    return [i for i, (c, r) in enumerate(zip(centres, radii)) if exactly_inside(c, point, r, scale, shape)]


# -- reported repros, one test each ---------------------------------------------------------

def test_query_at_a_rounded_grown_edge_finds_the_sphere():
    t = ViewDistanceTree(size=4096.0, origin=(-2048.0, -2048.0), dim=2)
    t.insert((-1.1368683772161605e-13, 0.0), 511.99999999999994)
    t.insert((1000.0, 1000.0), 1.0)
    assert t.query((511.9999999999998, 0.0), exact=True).tolist() == [0]
    assert 0 in t.query((511.9999999999998, 0.0)).tolist()
    t.check_invariants()


def test_radius_whose_ratio_to_size_overflows_is_rejected():
    t = ViewDistanceTree(size=0.5, dim=1)
    with pytest.raises(ValueError, match="the radius must be below"):
        t.insert(0.0, 1.7e308)
    with pytest.raises(ValueError, match="radii must be below"):
        t.insert_many([0.0, 1.0], [1.0, 1.7e308])
    assert len(t) == 0
    h = t.insert(1000.0, 1.0)
    assert t.query(1000.0, exact=True).tolist() == [h]
    t.check_invariants()


def test_touching_agrees_with_the_trees_exact_test_at_extreme_magnitudes():
    for magnitude in (1e-160, 1e-300, 1e150, 1e300):
        cc = CollisionCandidates(probe_radius=0.0, size=16.0 * magnitude, dim=3)
        r = 3.0 * magnitude
        inside = cc.insert((0.0, 0.0, 0.0), r)
        probe = (r, 0.0, 0.0)
        assert cc.touching(probe).tolist() == [inside]
        assert cc.touching((math.nextafter(r, math.inf), 0.0, 0.0)).tolist() == []
        diagonal = (2.0 * magnitude, 2.0 * magnitude, 1.0 * magnitude)  # |d| = 3 * magnitude, exactly
        expected = exactly_inside((0.0, 0.0, 0.0), diagonal, r, 1.0, "sphere")
        assert (inside in cc.touching(diagonal).tolist()) == expected
        assert cc.touching(diagonal).tolist() == sorted(cc.tree.query(diagonal, exact=True).tolist())
        cc.check_invariants()


def test_huge_scale_on_a_grown_root_answers_without_overflow_or_hang():
    t = ViewDistanceTree(size=1.0, dim=1)
    t.insert(0.0, 1.0)
    t.insert(100.0, 1.0)
    for scale in (1e20, 1e30, 1e100, 1e300, 1.7e308):
        assert sorted(t.query(0.0, exact=True, scale=scale).tolist()) == [0, 1]
        assert sorted(t.query(0.0, scale=scale).tolist()) == [0, 1]
        assert sorted(t.query_many([0.0, 50.0], exact=True, scale=scale)[0].tolist()) == [0, 0, 1, 1]
        assert len(t.trace(0.0, scale=scale).candidates) == 2
    assert t.query(0.0, exact=True, scale=1e-300).tolist() == [0]
    with pytest.raises(ValueError):
        t.query(0.0, scale=math.inf)


@pytest.mark.parametrize("make", [
    lambda: ViewDistanceTree(size=8.0, dim=2),
    lambda: DenseViewDistanceGrid(size=8.0, dim=2, min_radius=0.5),
], ids=["tree", "grid"])
def test_ints_beyond_int64_are_key_or_value_errors(make):
    s = make()
    h = s.insert((1.0, 1.0), 0.5)
    for handle in (2**64, 2**63, -(2**64), np.uint64(2**63)):
        assert handle not in s
        with pytest.raises(KeyError):
            s.remove(handle)
        with pytest.raises(KeyError):
            s.update(handle, (1.0, 1.0), 0.5)
        with pytest.raises(KeyError):
            s.remove_many([handle])
        with pytest.raises(KeyError):
            s.update_many([handle], [(1.0, 1.0)], [0.5])
        with pytest.raises(KeyError):
            s.centre(handle)
    for bad in (10**400, -(10**400)):
        with pytest.raises(ValueError):
            s.insert((bad, 1.0), 0.5)
        with pytest.raises(ValueError):
            s.insert((1.0, 1.0), bad)
        with pytest.raises(ValueError):
            s.insert_many([(1.0, bad)], [0.5])
        with pytest.raises(ValueError):
            s.query((1.0, 1.0), scale=bad)
        with pytest.raises(ValueError):
            s.query((bad, 1.0))
        with pytest.raises(ValueError):
            type(s)(size=bad, dim=2)
    assert s.handles().tolist() == [h]
    s.check_invariants()


def test_tracker_membership_and_forget_with_huge_handles():
    from culling import VisibilityTracker

    tracker = VisibilityTracker()
    tracker.update([1, 2])
    assert 2**64 not in tracker and 10**400 not in tracker
    tracker.forget([2**64, 1])
    assert tracker.visible.tolist() == [2]
    with pytest.raises(ValueError):
        tracker.update([2**64])
    assert tracker.visible.tolist() == [2]


@pytest.mark.parametrize("make", [
    lambda: ViewDistanceTree(size=8.0, origin=(1.0, 2.0), dim=2),
    lambda: DenseViewDistanceGrid(size=8.0, origin=(1.0, 2.0), dim=2, min_radius=0.5),
], ids=["tree", "grid"])
def test_origin_is_not_a_handle_on_the_internals(make):
    s = make()
    h = s.insert((2.0, 3.0), 0.25)
    o = s.origin
    with pytest.raises(ValueError):
        o += 64.0
    assert s.origin.tolist() == [1.0, 2.0]
    assert s.query((2.0, 3.0), exact=True).tolist() == [h]
    c = s.centre(h)
    c += 100.0
    assert s.centre(h).tolist() == [2.0, 3.0]
    handles, centres, radii = s.query_spheres((2.0, 3.0), exact=True)
    centres += 1.0
    radii += 1.0
    assert s.query_spheres((2.0, 3.0), exact=True)[1].tolist() == [[2.0, 3.0]]
    s.check_invariants()


def test_failed_multicamera_update_registers_nothing():
    cams = MultiCameraTracker(band_edges=(10.0,))
    with pytest.raises(ValueError):
        cams.update("new", [1, 2])  # distances missing
    assert "new" not in cams and len(cams) == 0
    with pytest.raises(TypeError):
        cams.update("new", [1.5])
    assert "new" not in cams
    cams.update("new", [1], distances=[3.0])
    assert "new" in cams


@pytest.mark.parametrize("make", [
    lambda: ViewDistanceTree(size=8.0, dim=3),
    lambda: DenseViewDistanceGrid(size=8.0, dim=3, min_radius=0.5),
], ids=["tree", "grid"])
def test_bools_complex_strings_and_masked_arrays_are_type_errors(make):
    from decimal import Decimal

    s = make()
    a, b, c = s.insert_many([(1.0, 1.0, 1.0), (2.0, 2.0, 2.0), (3.0, 3.0, 3.0)], [0.5, 0.5, 0.5])
    for scale in (True, np.True_, 1 + 0j, Decimal(1), "1", None):
        for call in (lambda sc: s.query((1.0, 1.0, 1.0), scale=sc),
                     lambda sc: s.query_many([(1.0, 1.0, 1.0)], scale=sc),
                     lambda sc: s.query_spheres((1.0, 1.0, 1.0), scale=sc),
                     lambda sc: s.trace((1.0, 1.0, 1.0), scale=sc)):
            with pytest.raises(TypeError):
                call(scale)
    for centre in ([True, 2.0, 3.0], [True, False, True], (1.0, np.True_, 2.0)):
        with pytest.raises(TypeError):
            s.insert(centre, 0.5)
        with pytest.raises(TypeError):
            s.query(centre)
    with pytest.raises(TypeError):
        s.insert_many([[1.0, 2.0, 3.0], [True, 2.0, 3.0]], [0.5, 0.5])
    with pytest.raises(TypeError):
        s.insert((1.0, 1.0, 1.0), True)
    masked = np.ma.array([a, b], mask=[False, True])
    with pytest.raises(TypeError):
        s.remove_many(masked)
    with pytest.raises(TypeError):
        s.insert_many(np.ma.array([[1.0, 1.0, 1.0]], mask=[[False, True, False]]), [0.5])
    assert sorted(s.handles().tolist()) == [a, b, c]
    s.remove_many(np.ma.array([a, b], mask=[False, False]))  # nothing masked: honoured as is
    assert s.handles().tolist() == [c]
    s.check_invariants()


def test_grid_has_query_spheres_like_the_tree():
    tree = ViewDistanceTree(size=16.0, dim=2)
    grid = DenseViewDistanceGrid(size=16.0, dim=2, min_radius=0.25)
    centres = np.array([[1.0, 1.0], [2.0, 1.5], [9.0, 9.0]])
    radii = np.array([1.0, 0.5, 3.0])
    tree.insert_many(centres, radii)
    grid.insert_many(centres, radii)
    for exact in (False, True):
        for structure in (tree, grid):
            handles, got_centres, got_radii = structure.query_spheres((1.7, 1.3), exact=exact)
            assert got_centres.shape == (handles.size, 2) and got_radii.shape == (handles.size,)
            assert (got_centres == centres[handles]).all() and (got_radii == radii[handles]).all()
        assert sorted(tree.query_spheres((1.7, 1.3), exact=True)[0].tolist()) == \
            sorted(grid.query_spheres((1.7, 1.3), exact=True)[0].tolist()) == [0, 1]


# -- generators aimed at the edges -------------------------------------------------------

SIZES = [1000.0, 7.3, 16.0, 4096.0]
ORIGINS = [0.0, -500.0, 1e6, -2048.0, 0.1]
SCALES = [1.0, 0.5, 2.5] + [10.0**k for k in range(-6, 13, 3)]


def _nudge(x: float, ulps: int) -> float:
    for _ in range(abs(ulps)):
        x = math.nextafter(x, math.inf if ulps > 0 else -math.inf)
    return x


@st.composite
def edge_worlds(draw, grid: bool):
    """A world (structure), its objects on cell faces and class edges, and query points at their reach."""
    dim = draw(st.integers(1, 3))
    shape = draw(st.sampled_from(["sphere", "cube"]))
    size = draw(st.sampled_from(SIZES))
    origin = [draw(st.sampled_from(ORIGINS)) for _ in range(dim)]
    levels = 5
    if grid:
        structure = DenseViewDistanceGrid(size=size, origin=origin, dim=dim, shape=shape,
                                          min_radius=size / 2**(levels + 2))
    else:
        structure = ViewDistanceTree(size=size, origin=origin, dim=dim, shape=shape)
    span = 1 if grid else 3  # the tree grows: faces of a world three times the root
    n = draw(st.integers(1, 8))
    centres, radii = [], []
    for _ in range(n):
        centre = []
        for axis in range(dim):
            j = draw(st.integers(0, levels))
            k = draw(st.integers(0 if grid else -(2**j), span * 2**j - (1 if grid else 0)))
            x = origin[axis] + size * k / 2**j
            x = _nudge(x, draw(st.integers(-1, 1)))
            if grid:
                hi = origin[axis] + size
                x = min(max(x, origin[axis]), math.nextafter(hi, -math.inf))
            centre.append(x)
        level = draw(st.integers(1 if grid else -2, levels))
        w = size / 2**level
        edge = draw(st.sampled_from([w / 4, w / 2]))
        r = _nudge(edge, -draw(st.integers(0, 1)))
        if grid:
            r = min(r, math.nextafter(size / 2, 0.0))
        if draw(st.booleans()):
            r = draw(st.floats(0.0, size / 2, exclude_max=True))
        centres.append(centre)
        radii.append(r)
    scale = draw(st.sampled_from(SCALES))
    points = []
    for _ in range(4):
        i = draw(st.integers(0, n - 1))
        reach = radii[i] * scale
        axis = draw(st.integers(0, dim - 1))
        sign = draw(st.sampled_from([-1.0, 1.0]))
        p = list(centres[i])
        if shape == "sphere" and dim > 1 and draw(st.booleans()):
            # on the diagonal: per axis reach / sqrt(dim), rounded, then nudged
            per_axis = reach / math.sqrt(dim)
            p = [c + sign * per_axis for c in p]
        else:
            p[axis] = p[axis] + sign * reach
        p[axis] = _nudge(p[axis], draw(st.integers(-1, 1)))
        if all(math.isfinite(x) for x in p):
            points.append(p)
    if not points:
        points.append(list(centres[0]))
    return structure, centres, radii, scale, points


def _check_exact(structure, centres, radii, scale, points):
    handles = structure.insert_many(np.array(centres), np.array(radii))
    structure.check_invariants()
    shape = structure.shape
    for p in points:
        want = sorted(handles[truth(centres, radii, p, scale, shape)].tolist())
        got = sorted(structure.query(p, exact=True, scale=scale).tolist())
        assert got == want, f"exact query at {p} (scale {scale}): got {got}, Fraction says {want}"
        assert set(want) <= set(structure.query(p, scale=scale).tolist()), "plain query misses a sphere"
        spheres = structure.query_spheres(p, exact=True, scale=scale)
        assert sorted(spheres[0].tolist()) == want
        assert set(structure.trace(p, scale=scale).candidates.tolist()) >= set(want)
    for chunked in (False, True):
        with _chunked_batches(chunked):
            many, counts = structure.query_many(np.array(points), exact=True, scale=scale)
        starts = np.concatenate([[0], np.cumsum(counts)])
        for i, p in enumerate(points):
            want = sorted(handles[truth(centres, radii, p, scale, shape)].tolist())
            assert sorted(many[starts[i]:starts[i + 1]].tolist()) == want, f"query_many at {p} (chunked {chunked})"


@contextlib.contextmanager
def _chunked_batches(on: bool):
    """``query_many`` in chunks of one point on two threads, however small the batch (else in one chunk)."""
    if not on:
        yield
        return
    saved = members.PARALLEL_MIN_POINTS
    members.PARALLEL_MIN_POINTS = 2  # chunks of one point
    culling.set_thread_count(2)
    try:
        yield
    finally:
        members.PARALLEL_MIN_POINTS = saved
        culling.set_thread_count(None)


@EDGE_SETTINGS
@given(edge_worlds(grid=False))
def test_tree_exact_at_faces_class_edges_and_reach(world):
    _check_exact(*world)


@EDGE_SETTINGS
@given(edge_worlds(grid=True))
def test_grid_exact_at_faces_class_edges_and_reach(world):
    _check_exact(*world)


@EDGE_SETTINGS
@given(st.integers(1, 3), st.sampled_from(SIZES), st.sampled_from(ORIGINS), st.integers(-12, 300),
       st.booleans(), st.data())
def test_scales_over_many_decades_on_grown_and_ungrown_roots(dim, size, origin, exponent, grow, data):
    """Every scale from 1e-12 to 1e300 either answers exactly or is a ValueError; never a hang."""
    scale = data.draw(st.sampled_from([10.0**exponent, _nudge(10.0**exponent, 1), 1.7e308]))
    tree = ViewDistanceTree(size=size, origin=[origin] * dim, dim=dim)
    centres = [[origin + size / 3] * dim, [origin + size * 0.7] * dim]
    if grow:
        centres.append([origin + size * 40.0] * dim)
    radii = [size / 100, size / 7, size / 3][: len(centres)]
    p = [origin + size / 2] * dim
    _check_exact(tree, centres, radii, scale, [p])


@EDGE_SETTINGS
@given(st.sampled_from([1e-300, 1e-160, 1e-10, 1.0, 1e10, 1e150, 1e300]), st.integers(1, 3), st.data())
def test_collision_touching_equals_exact_tree_query_at_every_magnitude(magnitude, dim, data):
    cc = CollisionCandidates(probe_radius=data.draw(st.sampled_from([0.0, magnitude])), size=4.0 * magnitude,
                             dim=dim)
    n = 5
    centres = [[data.draw(st.floats(-magnitude, magnitude)) for _ in range(dim)] for _ in range(n)]
    bounding = [data.draw(st.floats(0.0, magnitude)) for _ in range(n)]
    try:
        handles = cc.insert_many(centres, bounding)
    except ValueError:  # beyond the largest world: rejected, nothing stored
        assert len(cc) == 0
        return
    for _ in range(4):
        i = data.draw(st.integers(0, n - 1))
        p = list(centres[i])
        reach = bounding[i] + cc.probe_radius
        p[0] = _nudge(p[0] + reach, data.draw(st.integers(-1, 1)))
        if not math.isfinite(p[0]):
            continue
        # The truth, in rationals: |c - p| <= b + q, the sum exact (the tree stores bounding radii).
        stored = cc.tree.radii_of(handles)
        reach_of = [Fraction(float(stored[j])) + Fraction(cc.probe_radius) for j in range(n)]
        want = sorted(int(handles[j]) for j in range(n)
                      if sum((Fraction(c) - Fraction(q)) ** 2 for c, q in zip(centres[j], p)) <= reach_of[j] ** 2)
        assert cc.touching(p).tolist() == want
    cc.check_invariants()


def test_grid_window_keeps_the_home_cell_when_rounding_widens_it():
    """Rounding may widen the grid's window: it is never cut to ceil(scale) cells, so the home cell stays in it."""
    grid = DenseViewDistanceGrid(size=7.3, origin=(1e6,), dim=1, min_radius=7.3 / 2**7)
    lo = 1e6
    w = 7.3 / 2**5
    rng = np.random.default_rng(8)
    for _ in range(300):
        k = int(rng.integers(1, 2**5 - 1))
        c = _nudge(lo + w * k, int(rng.integers(-2, 3)))
        r = _nudge(w / 4, -int(rng.integers(0, 2)))
        h = grid.insert(c, r)
        for sign in (-1.0, 1.0):
            p = _nudge(c + sign * r, int(rng.integers(-1, 2)))
            assert (h in grid.query(p, exact=True).tolist()) == exactly_inside([c], [p], r, 1.0, "sphere")
        grid.remove(h)


def test_compiled_windows_are_the_exact_windows():
    """The tree's compiled window (culling.core.cells.window, half_reach), which the grid's
    (culling.grid.walk.cell_window) shifts and clamps to its world, is the exact definition's
    (the cells whose grown box holds the point, in rationals)."""
    from lattice_reference import cell as exact_cell
    from lattice_reference import decidable as _decidable
    from lattice_reference import visit_window as _exact_window

    from culling.core import cells
    from culling.core.lattice import ANCHOR, Lattice
    from culling.core.structs import World
    from culling.grid import walk as gridwalk

    rng = np.random.default_rng(11)
    for size, origin in [(7.3, 1e6), (1000.0, -500.0), (16.0, 0.0), (4096.0, -2048.0)]:
        lat = Lattice(size, np.array([origin, origin * 0.5]))
        world = World(read_only(lat.origin), size, 0, 0)
        for _ in range(300):
            p = (origin + size * rng.uniform(-3, 4, 2)).tolist()
            if rng.random() < 0.3:
                p = [_nudge(origin + size * int(rng.integers(-8, 9)) / 8, int(rng.integers(-1, 2))) for _ in p]
            scale = float(rng.choice([1.0, 0.5, 2.5, 1e-3, 1e9, 1.7e308]))
            level = int(rng.integers(-4, 10))
            half = cells.half_reach(size, level, scale)
            assert half == math.inf or Fraction(half) >= Fraction(scale) * Fraction(size) / Fraction(2) ** (level + 1)
            lo, hi = np.empty(2, dtype=np.int64), np.empty(2, dtype=np.int64)
            cells.window(np.array(p), scale, read_only(lat.origin), size, level, lo, hi, 0.0)
            if not _decidable(lat, level, scale):  # a tiny or huge scale: conservative, checked by the walk's tests
                continue
            want = _exact_window(lat, p, level, scale)  # the cells whose grown box holds p, in rationals
            # Beyond the largest world the window is clamped (no node is ever there): compare inside it.
            low, high = exact_cell(lat.clamp_lo_u, level), exact_cell(lat.clamp_hi_u, level)

            def clip(window):
                return [(min(max(a, low), high), min(max(b, low), high)) for a, b in window]

            assert clip(zip(lo.tolist(), hi.tolist())) == clip(want)
            if level < 1:
                continue
            n = gridwalk.cell_window(np.array(p), scale, world, level, lo, hi)
            top = (1 << level) - 1
            shifted = [(a - (ANCHOR << level), b - (ANCHOR << level)) for a, b in want]
            if any(b < 0 or a > top for a, b in shifted):  # no cell of the world holds p in its grown box
                assert n == 0
            else:
                assert list(zip(lo.tolist(), hi.tolist())) == [(max(a, 0), min(b, top)) for a, b in shifted]


@settings(max_examples=400, deadline=None)
@given(size=st.sampled_from([1.0, 7.3, 4096.0, 1e-3, 3e5]),
       origin=st.sampled_from([0.0, -2048.0, 1e6, -0.1, 1e12]),
       level=st.integers(0, 24),
       face=st.integers(-5, 40),
       offset=st.sampled_from([0, 0, 1, 5, 8]),
       ulps=st.one_of(st.integers(-3, 3), st.integers(-64, 64)),
       scale=st.sampled_from([1.0, 0.5, 1e-3, 2.5, 1.0 + 2.0 ** -52]),
       grow=st.sampled_from([0.0, 0.25, 1e-9, 3.0, 1e4]))
def test_window_ends_are_exact_beside_the_reach(size, origin, level, face, offset, ulps, scale, grow):
    """The compiled window (``cells.window``: the float estimate, its ends then decided exactly) at and
    beside its ends: ``x`` a cell face (or ``offset / 9`` of a cell past it) plus or minus the reach
    ``s*W/2 + grow``, nudged by up to 64 ulps.  It is the exact window (the cells whose grown box holds
    ``x``, in rationals) wherever floats resolve a cell; where the coordinates' ulp spans several cells,
    a window that holds it."""
    from lattice_reference import cell as exact_cell

    from culling.core import cells
    from culling.core.lattice import ANCHOR, Lattice

    edge = Fraction(size) * Fraction(2) ** -level
    reach = Fraction(scale) * edge / 2 + Fraction(grow)
    side = 1 if face % 2 else -1
    x = _nudge(float(Fraction(origin) + (face + Fraction(offset, 9)) * edge + side * reach), ulps)
    lo, hi = np.empty(1, dtype=np.int64), np.empty(1, dtype=np.int64)
    cells.window(np.array([x]), scale, read_only([origin]), size, level, lo, hi, grow)
    got = (int(lo[0]), int(hi[0]))
    t = (Fraction(x) - Fraction(origin)) / edge
    base = ANCHOR << level
    exact = (math.floor(t - reach / edge) + base, math.floor(t + reach / edge) + base)
    # Beyond the largest world the window is clamped (no node is ever there): compare inside it.
    lat = Lattice(size, np.array([origin]))
    low, high = exact_cell(lat.clamp_lo_u, level), exact_cell(lat.clamp_hi_u, level)
    got, exact = [tuple(min(max(k, low), high) for k in w) for w in (got, exact)]
    assert got[0] <= exact[0] and exact[1] <= got[1]
    if (abs(x) + abs(origin)) / float(edge) < 2.0 ** 40:
        assert got == exact


def _pairs_by_fractions(centres, radii, shape: str) -> list[tuple[int, int]]:
    """Every meeting pair (indices), decided in rationals: ``|c_i - c_j| <= r_i + r_j`` (max-norm for cubes)."""
    found = []
    for i in range(len(radii)):
        for j in range(i + 1, len(radii)):
            gaps = [abs(Fraction(a) - Fraction(b)) for a, b in zip(centres[i], centres[j])]
            reach = Fraction(radii[i]) + Fraction(radii[j])
            if (max(gaps) <= reach) if shape == "cube" else (sum(g * g for g in gaps) <= reach * reach):
                found.append((i, j))
    return found


@pytest.mark.parametrize("grid", [False, True])
@pytest.mark.parametrize("exponent", [-1054, -1030, -1022, -1000, -950, -899])
def test_overlapping_pairs_in_worlds_of_tiny_edges(grid, exponent):
    # The bands place members by 2**B / size, which overflowed below an edge of about 2**-975: a large
    # sphere's pairs were lost (five spheres on one centre: 6 of 10 pairs).  Such worlds take the dual walk.
    size = 2.0 ** exponent
    rng = np.random.default_rng(-exponent)
    for dim, shape in [(1, "sphere"), (2, "cube"), (3, "sphere"), (3, "cube")]:
        n = 24
        centres = np.floor(rng.random((n, dim)) * 64) / 64 * size
        centres[:5] = centres[0]  # five on one centre, one of them large
        radii = size * np.array([2.0 ** -int(rng.integers(2, 9)) * float(rng.choice([1.0, 1.5, 0.0])) for _ in range(n)])
        radii[0] = 29 / 64 * size
        if grid:
            s = DenseViewDistanceGrid(size, dim=dim, shape=shape, min_radius=size / 512)
        else:
            s = ViewDistanceTree(size, origin=(0.0,) * dim, dim=dim, shape=shape)
        handles = s.insert_many(centres, radii)
        first, second = s.overlapping_pairs()
        got = sorted(zip(first.tolist(), second.tolist()))
        expected = sorted((int(min(handles[i], handles[j])), int(max(handles[i], handles[j])))
                          for i, j in _pairs_by_fractions(centres.tolist(), radii.tolist(), shape))
        assert got == expected, (dim, shape)


@pytest.mark.parametrize("origin", [-8e307, -1e308, 1.7e308 - 2.0**1000])
def test_error_bounds_past_the_largest_float_still_decide(origin: float) -> None:
    """Where ``|x| + |origin|`` passes the largest float, the float tests' error bounds (each term scaled
    before the sum) stay finite: a face millions of cells away is decided, a point query's candidates
    are its neighbourhood's.  Before, at -1e308 the face test could not tell, every window spanned the
    largest world: the tree answered 1,001 candidates of 2,000 (the exact answer stayed right), and the
    dense grid's query read 16.7M cells to answer a candidate a sixth of the world away."""
    from culling.core.cells import face_sign

    size = 2.0**1000
    x, edge = origin + size / 3, size * 2.0**-24
    assert face_sign(x, origin, 5.0, edge, 1.0, edge / 2, 0.0) == 1  # the face lies 3.6e300 below x
    tree = ViewDistanceTree(size, origin=[origin], dim=1)
    tree.insert_many((origin + size * np.arange(1, 2001) / 2002.0)[:, None], np.full(2000, size * 2.0**-20))
    assert len(tree.query([x])) <= 4 and tree.query([x], exact=True).tolist() == []
    grid = DenseViewDistanceGrid(size, origin=[origin], dim=1, min_radius=size * 2.0**-26)
    grid.insert([origin + size / 2], 0.0)
    assert grid.query([x]).tolist() == []  # the one object lies size / 6 away, radius 0
