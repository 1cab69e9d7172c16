"""CollisionCandidates against a brute-force sphere-sphere scan, bad input, resolve."""

import math
import sys
from fractions import Fraction

import numpy as np
import pytest
from brute_force import distances
from hypothesis import given
from hypothesis import strategies as st

from culling.uses.collision import CollisionCandidates


class Reference:
    """handle -> (centre, bounding radius); touching is a scan over all objects."""

    def __init__(self, dim, probe):
        self.dim, self.probe, self.objects = dim, probe, {}

    def touching(self, p):
        if not self.objects:
            return []
        hs = sorted(self.objects)
        centres = np.array([self.objects[h][0] for h in hs]).reshape(-1, self.dim)
        bounding = np.array([self.objects[h][1] for h in hs])
        d = distances(centres, np.asarray(p, float).reshape(self.dim), "sphere")
        return [h for h, hit in zip(hs, d <= bounding + self.probe) if hit]


def check(cc, ref, points):
    """Invariants, contents, and touching/candidates at every point."""
    cc.check_invariants()
    assert len(cc) == len(ref.objects)
    assert cc.handles().tolist() == sorted(ref.objects)
    assert cc.probe_radius == ref.probe
    if ref.objects:
        hs = sorted(ref.objects)
        np.testing.assert_array_equal(cc.bounding_radius_of(hs), [ref.objects[h][1] for h in hs])
        np.testing.assert_array_equal(np.asarray(cc.centres_of(hs)).reshape(-1, ref.dim),
                                      np.array([ref.objects[h][0] for h in hs]).reshape(-1, ref.dim))
    for p in points:
        got = cc.touching(p)
        assert got.dtype == np.int64 and got.ndim == 1
        expected = ref.touching(p)
        assert got.tolist() == expected, f"at {np.asarray(p).tolist()}"
        cand = cc.candidates(p)
        assert cand.dtype == np.int64
        assert set(expected) <= set(cand.tolist()) <= set(ref.objects)


# -- brute-force comparison ----------------------------------------------------

@pytest.mark.parametrize("dim", [1, 2, 3])
def test_random_operations_match_brute_force(dim):
    rng = np.random.default_rng(100 + dim)
    probe = 1.5
    cc, ref = CollisionCandidates(probe, size=64.0, dim=dim), Reference(dim, probe)

    def rand_centres(n):
        return rng.uniform(-20.0, 90.0, (n, dim))   # partly outside the root: it grows

    def rand_radii(n):
        r = rng.exponential(3.0, n)
        r[rng.random(n) < 0.1] = 0.0
        return r

    for _step in range(150):
        op = rng.integers(0, 7)
        live = sorted(ref.objects)
        if op == 0 or not live:
            c, b = rand_centres(1)[0], float(rand_radii(1)[0])
            h = cc.insert(c if dim > 1 else float(c[0]), b)
            assert isinstance(h, int)
            ref.objects[h] = (c, b)
        elif op == 1:
            n = int(rng.integers(0, 40))
            c, b = rand_centres(n), rand_radii(n)
            hs = cc.insert_many(c, b)
            assert hs.dtype == np.int64 and hs.shape == (n,)
            ref.objects.update({int(h): (c[i], float(b[i])) for i, h in enumerate(hs)})
        elif op == 2:
            h = int(rng.choice(live))
            c = ref.objects[h][0] + rng.normal(0, 2.0, dim)
            if rng.random() < 0.5:
                cc.update(h, c)
                ref.objects[h] = (c, ref.objects[h][1])
            else:
                b = float(rand_radii(1)[0])
                cc.update(np.int64(h), c, b)
                ref.objects[h] = (c, b)
        elif op == 3:
            hs = rng.choice(live, size=int(rng.integers(0, len(live) + 1)), replace=False)
            c = np.array([ref.objects[int(h)][0] for h in hs]).reshape(-1, dim) \
                + rng.normal(0, 3.0, (hs.size, dim))
            if rng.random() < 0.5:
                cc.update_many(hs, c)
                ref.objects.update({int(h): (c[i], ref.objects[int(h)][1]) for i, h in enumerate(hs)})
            else:
                b = rand_radii(hs.size)
                cc.update_many(hs, c, b)
                ref.objects.update({int(h): (c[i], float(b[i])) for i, h in enumerate(hs)})
        elif op == 4:
            h = int(rng.choice(live))
            cc.remove(h)
            del ref.objects[h]
        elif op == 5:
            hs = rng.choice(live, size=int(rng.integers(0, len(live) // 2 + 1)), replace=False)
            cc.remove_many(hs)
            for h in hs:
                del ref.objects[int(h)]
        else:
            ref.probe = float(rng.choice([0.0, 0.5, 2.0, 6.0]))
            cc.set_probe_radius(ref.probe)
        check(cc, ref, rng.uniform(-25.0, 95.0, (8, dim)))


@given(
    st.lists(st.tuples(st.integers(-8, 8), st.integers(-8, 8), st.integers(0, 4)), max_size=20),
    st.integers(0, 3),
    st.tuples(st.integers(-10, 10), st.integers(-10, 10)),
)
def test_hypothesis_touching_on_a_grid(objects, probe, point):
    # Integer coordinates and radii make surface contacts common and exact.
    cc, ref = CollisionCandidates(probe, size=8.0, dim=2), Reference(2, float(probe))
    if objects:
        arr = np.array(objects, dtype=float)
        hs = cc.insert_many(arr[:, :2], arr[:, 2])
        ref.objects = {int(h): (arr[i, :2], arr[i, 2]) for i, h in enumerate(hs)}
    check(cc, ref, [point])


def test_surface_contact_counts_as_touching():
    cc = CollisionCandidates(probe_radius=1.0, size=16.0, dim=3)
    h = cc.insert((4.0, 4.0, 4.0), 2.0)
    assert cc.touching((7.0, 4.0, 4.0)).tolist() == [h]        # exactly 2 + 1 away
    assert cc.touching((4.0, 4.0, 1.0)).tolist() == [h]
    assert cc.touching((7.0 + 1e-12, 4.0, 4.0)).size == 0
    zero = CollisionCandidates(probe_radius=0.0, size=16.0, dim=2)
    point = zero.insert((1.0, 1.0), 0.0)
    assert zero.touching((1.0, 1.0)).tolist() == [point]
    assert zero.touching((1.0, 1.0 + 1e-12)).size == 0


# -- resolve -------------------------------------------------------------------

def test_resolve_pushes_out_along_centre_to_probe():
    cc = CollisionCandidates(probe_radius=0.5, size=32.0, dim=3)
    cc.insert((10.0, 10.0, 10.0), 2.0)
    p = np.array([11.0, 10.0, 11.0])
    out = cc.resolve(p)
    assert p.tolist() == [11.0, 10.0, 11.0]                      # input untouched
    offset = out - (10.0, 10.0, 10.0)
    assert math.isclose(np.linalg.norm(offset), 2.5, rel_tol=1e-12)
    np.testing.assert_allclose(offset / np.linalg.norm(offset), [2 ** -0.5, 0.0, 2 ** -0.5])
    # Free space and surface contact are left alone.
    assert cc.resolve((20.0, 20.0, 20.0)).tolist() == [20.0, 20.0, 20.0]
    assert cc.resolve((12.5, 10.0, 10.0)).tolist() == [12.5, 10.0, 10.0]


@pytest.mark.parametrize("dim, expected", [
    (1, [8.0]),
    (2, [5.0, 8.0]),
    (3, [5.0, 5.0, 8.0]),
])
def test_resolve_at_a_centre_moves_along_the_last_axis(dim, expected):
    cc = CollisionCandidates(probe_radius=1.0, size=16.0, dim=dim)
    centre = [5.0] * dim
    cc.insert(centre if dim > 1 else 5.0, 2.0)
    assert cc.resolve(centre if dim > 1 else 5.0).tolist() == expected


def test_resolve_several_objects_and_iterations():
    cc = CollisionCandidates(probe_radius=1.0, size=64.0, dim=2)
    cc.insert((0.0, 0.0), 3.0)              # reach 4
    cc.insert((10.0, 0.0), 3.0)             # reach 4: a gap of 2 between them
    assert cc.resolve((1.0, 0.0)).tolist() == [4.0, 0.0]
    assert cc.resolve((1.0, 0.0), iterations=0).tolist() == [1.0, 0.0]
    # A corner between two spheres: alternating pushes converge on the point
    # where their surfaces cross, (3.7, 1.52...), outside both.
    corner = CollisionCandidates(probe_radius=1.0, size=64.0, dim=2)
    corner.insert((0.0, 0.0), 3.0)          # reach 4
    corner.insert((5.0, 0.0), 1.0)          # reach 2
    start = (1.0, 0.1)

    def depth(p):
        return corner.bounding_radius_of([0, 1]) + 1.0 - distances(corner.centres_of([0, 1]), p, "sphere")

    assert depth(corner.resolve(start, iterations=1)).max() > 0.5      # pushed out of one into the other
    out = corner.resolve(start, iterations=200)
    np.testing.assert_allclose(out, [3.7, math.sqrt(16 - 3.7 ** 2)], rtol=1e-6)
    assert (depth(out) < 1e-6).all()


def test_resolve_overflowing_reach_is_refused():
    cc = CollisionCandidates(probe_radius=1e308, size=8.0)
    with pytest.raises(ValueError, match="probe_radius must be finite"):
        cc.insert((1.0, 2.0, 3.0), 1e308)
    with pytest.raises(ValueError, match="probe_radius must be finite"):
        cc.insert_many([(1.0, 2.0, 3.0)], [1e308])
    assert len(cc) == 0


@given(st.lists(st.tuples(st.floats(-20, 20), st.floats(-20, 20), st.floats(0, 5)),
                min_size=1, max_size=6),
       st.tuples(st.floats(-25, 25), st.floats(-25, 25)))
def test_hypothesis_resolve_leaves_no_deep_overlap_for_separated_objects(objects, point):
    # Objects far enough apart that their grown spheres do not meet: one pass
    # per object must clear the probe completely.
    probe = 0.5
    arr = np.array(objects, dtype=float)
    keep = [0]
    for i in range(1, len(arr)):
        gaps = distances(arr[keep, :2], arr[i, :2], "sphere") - arr[keep, 2] - arr[i, 2] - 2 * probe
        if (gaps > 1e-6).all():
            keep.append(i)
    arr = arr[keep]
    cc = CollisionCandidates(probe, size=16.0, dim=2)
    cc.insert_many(arr[:, :2], arr[:, 2])
    out = cc.resolve(point)
    dist = distances(arr[:, :2], out, "sphere")
    reach = arr[:, 2] + probe
    assert (dist >= reach * (1 - 1e-12) - 1e-12).all()


# -- probe radius, handles -----------------------------------------------------

def test_set_probe_radius_restores_everything(rng):
    cc = CollisionCandidates(0.0, size=32.0, dim=3)
    ref = Reference(3, 0.0)
    c, b = rng.uniform(0, 32, (300, 3)), rng.uniform(0, 2, 300)
    hs = cc.insert_many(c, b)
    ref.objects = {int(h): (c[i], float(b[i])) for i, h in enumerate(hs)}
    points = rng.uniform(0, 32, (20, 3))
    for probe in (0.0, 3.0, 0.25, 10.0, 1e-9):
        cc.set_probe_radius(probe)
        ref.probe = probe
        check(cc, ref, points)
    empty = CollisionCandidates(1.0, size=8.0)
    empty.set_probe_radius(2.0)
    assert empty.probe_radius == 2.0 and len(empty) == 0


def test_removed_handles_are_gone_and_reused_cleanly():
    cc = CollisionCandidates(1.0, size=16.0, dim=2)
    hs = cc.insert_many([[1.0, 1.0], [3.0, 3.0], [5.0, 5.0]], [1.0, 1.0, 1.0])
    cc.remove(hs[1])
    assert hs[1] not in cc and hs[0] in cc and len(cc) == 2
    assert int(hs[1]) not in cc.touching((3.0, 3.0)).tolist()
    with pytest.raises(KeyError):
        cc.bounding_radius_of([hs[1]])
    h = cc.insert((3.0, 3.0), 0.5)
    assert cc.bounding_radius_of([h]).tolist() == [0.5]
    assert cc.touching((3.0, 3.0)).tolist() == [h]
    cc.remove_many(cc.handles())
    assert len(cc) == 0 and cc.touching((3.0, 3.0)).size == 0
    cc.check_invariants()


def test_accepted_input_forms():
    cc = CollisionCandidates(np.float32(1.0), size=8, origin=[0, 0], dim=2)
    hs = cc.insert_many(np.array([[1, 1], [2, 2]], dtype=np.int32), (1, np.float32(0.5)))
    assert cc.insert_many(np.empty((0, 2)), []).shape == (0,)
    cc.update_many([], np.empty((0, 2)))
    cc.remove_many([])
    cc.update(hs[0], [1.5, 1.5], 2)
    assert cc.bounding_radius_of(hs).tolist() == [2.0, 0.5]
    assert cc.bounding_radius_of([]).shape == (0,)
    out = cc.candidates([1.5, 1.5])
    out[:] = -1                              # the caller owns returned arrays
    assert set(cc.candidates([1.5, 1.5]).tolist()) >= {int(hs[0])}
    one = CollisionCandidates(0.5, size=8.0, dim=1)
    h = one.insert(2.0, 1.0)
    assert one.touching(3.5).tolist() == [h]
    assert one.touching([3.5]).tolist() == [h]
    assert one.insert_many([4.0, 5.0], [0.0, 0.0]).size == 2
    assert "CollisionCandidates" in repr(one)


# -- bad input -----------------------------------------------------------------

def snapshot(cc):
    hs = cc.handles()
    return (hs.tolist(), np.asarray(cc.centres_of(hs)).tolist() if hs.size else [],
            cc.bounding_radius_of(hs).tolist(), cc.probe_radius, len(cc))


@pytest.fixture
def filled():
    cc = CollisionCandidates(1.0, size=16.0, dim=3)
    cc.insert_many([[1.0, 1.0, 1.0], [5.0, 5.0, 5.0], [9.0, 2.0, 3.0]], [1.0, 2.0, 0.5])
    return cc


@pytest.mark.parametrize("call, error, match", [
    (lambda cc: cc.insert((1.0, 2.0, float("nan")), 1.0), ValueError, "finite"),
    (lambda cc: cc.insert((1.0, 2.0), 1.0), ValueError, "shape"),
    (lambda cc: cc.insert((1.0, 2.0, 3.0), -1.0), ValueError, "bounding_radius must not be negative"),
    (lambda cc: cc.insert((1.0, 2.0, 3.0), float("inf")), ValueError, "finite"),
    (lambda cc: cc.insert_many([[1.0, 2.0, 3.0]] * 2, [1.0]), ValueError, r"shape \(2,\)"),
    (lambda cc: cc.insert_many([[1.0, 2.0, 3.0]] * 2, [1.0, -1.0]), ValueError, "negative"),
    (lambda cc: cc.insert_many([[1.0, 2.0, float("inf")]], [1.0]), ValueError, "finite"),
    (lambda cc: cc.update(99, (1.0, 2.0, 3.0)), KeyError, "'handle 99 is not in the structure'"),
    (lambda cc: cc.update(-1, (1.0, 2.0, 3.0)), KeyError, "-1"),
    (lambda cc: cc.update(1.0, (1.0, 2.0, 3.0)), TypeError, "integer"),
    (lambda cc: cc.update(0, (1.0, 2.0, float("nan"))), ValueError, "finite"),
    (lambda cc: cc.update(0, (1.0, 2.0, 3.0), -2.0), ValueError, "negative"),
    (lambda cc: cc.update_many([0, 1], [[1.0, 2.0, 3.0]] * 2, [1.0]), ValueError, "shape"),
    (lambda cc: cc.update_many([0, 1], [[1.0, 2.0, 3.0]]), ValueError, "shape"),
    (lambda cc: cc.update_many([0, 0], [[1.0, 2.0, 3.0]] * 2), ValueError, "unique"),
    (lambda cc: cc.update_many([0, 77], [[1.0, 2.0, 3.0]] * 2), KeyError, r"handle 77 .* \(handles\[1\]\)"),
    (lambda cc: cc.update_many([0, 1.5], [[1.0, 2.0, 3.0]] * 2), TypeError, "integers"),
    (lambda cc: cc.update_many([0, 1], [[1.0, 2.0, 3.0], [1.0, 2.0, float("nan")]]), ValueError, "finite"),
    (lambda cc: cc.remove(42), KeyError, "42"),
    (lambda cc: cc.remove("0"), TypeError, "integer"),
    (lambda cc: cc.remove_many([0, 42]), KeyError, r"handle 42 is not in the structure \(handles\[1\]\)"),
    (lambda cc: cc.remove_many([0, 0]), ValueError, "unique"),
    (lambda cc: cc.set_probe_radius(-0.5), ValueError, "probe_radius must not be negative"),
    (lambda cc: cc.set_probe_radius(float("nan")), ValueError, "finite"),
    (lambda cc: cc.bounding_radius_of([0, 5]), KeyError, r"handle 5 is not in the structure \(handles\[1\]\)"),
    (lambda cc: cc.centres_of([0, 5]), KeyError, r"handle 5 is not in the structure \(handles\[1\]\)"),
    (lambda cc: cc.touching_many([[1.0, 2.0, 3.0]] * 2, [1.0]), ValueError, r"probe_radii must have shape \(2,\)"),
    (lambda cc: cc.touching_many([[1.0, 2.0, 3.0]] * 2, [1.0, -1.0]), ValueError, "probe_radii.* negative"),
    (lambda cc: cc.touching((1.0, float("nan"), 0.0)), ValueError, "probe_centre must be finite"),
    (lambda cc: cc.touching([[1.0, 2.0, 3.0]]), ValueError, "probe_centre must have shape"),
    (lambda cc: cc.candidates((1.0, 2.0)), ValueError, "probe_centre must have shape"),
    (lambda cc: cc.resolve((1.0, 2.0, float("inf"))), ValueError, "finite"),
    (lambda cc: cc.resolve((1.0, 2.0, 3.0), iterations=-1), ValueError, "iterations"),
    (lambda cc: cc.resolve((1.0, 2.0, 3.0), iterations=2.0), TypeError, "iterations"),
])
def test_bad_input_changes_nothing(filled, call, error, match):
    before = snapshot(filled)
    with pytest.raises(error, match=match):
        call(filled)
    assert snapshot(filled) == before
    filled.check_invariants()


@pytest.mark.parametrize("kwargs, match", [
    (dict(probe_radius=-1.0, size=8.0), "probe_radius"),
    (dict(probe_radius=float("nan"), size=8.0), "probe_radius"),
    (dict(probe_radius=1.0, size=0.0), "size"),
    (dict(probe_radius=1.0, size=8.0, dim=4), "dim"),
    (dict(probe_radius=1.0, size=8.0, origin=(0.0, 0.0)), "origin"),
])
def test_bad_constructor(kwargs, match):
    with pytest.raises(ValueError, match=match):
        CollisionCandidates(**kwargs)


def test_resolve_leaves_no_overlap_in_exact_arithmetic():
    """An overlap is decided exactly and the push goes a few ulps on where the rounding of ``b + q`` or of
    the move would leave the probe inside: ``2**53 + 1`` is not a float, and a probe of 1 at ``2**53`` from
    an object of ``2**53`` came back where it was; at ordinary scales an overlap of an ulp was left in
    about 1,000 of 2,300 pushes."""
    from fractions import Fraction

    huge = CollisionCandidates(1.0, size=2.0 ** 60, dim=1)
    huge.insert(0.0, 2.0 ** 53)
    out = huge.resolve(2.0 ** 53)
    assert Fraction(out[0]) >= Fraction(2 ** 53) + 1 and out[0] - 2.0 ** 53 <= 8.0
    rng = np.random.default_rng(5)
    for k in range(600):
        dim, probe = 1 + k % 3, (0.0, 0.25, 1.0)[k % 3]
        cc = CollisionCandidates(probe, size=64.0, dim=dim)
        centre, bound = rng.uniform(10.0, 50.0, dim), rng.uniform(0.1, 3.0)
        cc.insert(centre, bound)
        start = centre + rng.normal(size=dim) * bound * 0.5
        out = cc.resolve(start)
        gap = sum((Fraction(a) - Fraction(c)) ** 2 for a, c in zip(out, centre))
        assert gap >= (Fraction(bound) + Fraction(probe)) ** 2, (k, centre.tolist(), bound, start.tolist())
        if math.dist(start, centre) < bound + probe:     # it was inside: now on the surface, not beyond it
            assert math.dist(out, centre) <= (bound + probe) * (1 + 1e-12) + 1e-12
        else:
            assert np.array_equal(out, start)


def test_a_shallow_copy_is_independent_as_the_trees_is():
    import copy

    cc = CollisionCandidates(1.0, 64.0, dim=1)
    cc.insert_many([[0.0]] * 16, [1.0] * 16)
    twin = copy.copy(cc)
    twin.insert(5.0, 1.0)
    twin.remove(0)
    cc.check_invariants()
    twin.check_invariants()
    assert len(cc) == 16 and len(twin) == 16 and 0 in cc and 0 not in twin


def test_resolve_pushes_a_probe_a_subnormal_distance_from_a_centre_to_the_surface():
    """``math.hypot`` of subnormal offsets rounds badly: the push went 1.41 long where 1 was asked, or stopped
    inside.  The offset is scaled by a power of two first."""
    from fractions import Fraction

    import culling

    tiny = float.fromhex("0x0.0000000000001p-1022")
    for dim, offsets, bounding, probe in ((2, (tiny, tiny), 1.0, 0.0), (2, (tiny, 2 * tiny), 1.0, 0.0),
                                          (2, (float.fromhex("0x0.00000000e8bd2p-1022"),
                                               -float.fromhex("0x0.0000000049bd4p-1022")), 1e6, 1.0),
                                          (3, (tiny, -tiny, tiny), float.fromhex("0x1.7e43c8800759cp+996"), tiny)):
        cc = culling.CollisionCandidates(probe, 1e300, dim=dim)
        cc.insert((0.0,) * dim, bounding)
        moved = cc.resolve(offsets, 1)
        reach = Fraction(bounding) + Fraction(probe)
        gap = sum(Fraction(x) ** 2 for x in moved.tolist())
        assert reach ** 2 <= gap <= (reach * (1 + Fraction(1, 2**40))) ** 2, (offsets, moved)  # at the surface
        assert cc.touching(moved).size == 0 or gap == reach ** 2


def test_resolve_refuses_a_push_beyond_the_largest_float():
    """A push out to ``b + q`` near 1.8e308 returned inf (or raised OverflowError, or a ValueError about the
    caller's finite centre): now one ValueError that says why, and nothing returned that is not finite."""
    import culling

    for probe, size, dim, centre, point in ((1.7e308, 1e300, 1, 1e307, 1e307),
                                            (sys.float_info.max, 1.0, 2, (0.0, 0.0), (1.0, 1.0))):
        cc = culling.CollisionCandidates(probe, size, dim=dim)
        cc.insert(centre, 0.0)
        for iterations in (1, 4):
            with pytest.raises(ValueError, match="beyond the largest float"):
                cc.resolve(point, iterations)
        assert len(cc) == 1


def test_resolve_stops_when_two_overlapping_objects_push_the_probe_back_and_forth():
    """Objects at -4 and -2 (bounding 0.5, probe 1) push the probe between -2.5 and -3.5 for ever: 10,000
    passes took 3 s.  The passes stop at the cycle; the result still overlaps, as the docstring says."""
    import culling

    cc = culling.CollisionCandidates(1.0, 64.0, dim=1)
    cc.insert_many(np.array([[-4.0], [-2.0]]), np.array([0.5, 0.5]))
    calls = []
    real = cc._contacts
    cc._contacts = lambda point, q: (calls.append(1), real(point, q))[1]  # count the passes
    moved = cc.resolve(-4.0, 10_000)
    assert moved.tolist() in ([-2.5], [-3.5]) and len(calls) <= 4


def test_sweep_decides_the_edges_a_probe_found_exactly():
    """Cases where the first sweep's float test was wrong (an exact truth in each comment)."""
    from fractions import Fraction as F

    cc = CollisionCandidates(probe_radius=0.0, size=4.0, origin=(-2.0, -2.0, -2.0), dim=3)
    wall = cc.insert((0.0, 0.0, 0.0), 1.0)
    t, hit = cc.sweep((1.0000077329968196, 0.0, 0.0), (1.0, 0.0, 0.0))       # ends exactly on the surface
    assert hit == wall and t == pytest.approx(1.0, abs=1e-9)
    c, b, q = 1.0866476238067597, 0.38154295243846603, 0.001
    cc = CollisionCandidates(probe_radius=q, size=4.0, origin=(-2.0,), dim=1)
    cc.insert(c, b)
    assert F(c) - F(0.7041046713682937) - (F(b) + F(q)) > 0                 # the end stops short: no contact
    assert cc.sweep(0.7041046649255505, 0.7041046713682937) == (1.0, -1)
    for scale in (1.0, 2.0 ** -300, 2.0 ** -540, 2.0 ** 300):               # no square under- or overflows
        cc = CollisionCandidates(probe_radius=0.0, size=4.0 * scale, origin=(-2.0 * scale,), dim=1)
        cc.insert(0.0, scale)
        t, hit = cc.sweep(3.0 * scale, -3.0 * scale)
        assert hit == 0 and t == pytest.approx(1.0 / 3.0, rel=1e-12), scale
    cc = CollisionCandidates(probe_radius=0.0, size=4096.0, origin=(-2048.0,) * 3, dim=3)
    cc.insert((960.0, 0.288, 0.0), 1e-6)                                    # a small sphere far along the move
    t, hit = cc.sweep((0.0, 0.0, 0.0), (1200.0, 0.36, 0.0))
    assert hit == 0 and abs(t - 0.7999999991666668) < 1e-12                # not 0.8, its centre


def test_sweep_in_a_subnormal_scene_finds_the_contact():
    """Every value below about 5.6e-309: the scale ``2**k`` that brings the scene to about 1 overflowed
    (``OverflowError``), where the contract says no call raises it."""
    cc = CollisionCandidates(probe_radius=0.0, size=1.0, dim=2)
    cc.insert((1e-310, 0.0), 1e-310)
    assert cc.sweep((-1e-310, 0.0), (3e-310, 0.0)) == (0.25, 0)
    assert cc.sweep((-5e-309, 0.0), (5e-309, 0.0)) == (0.5, 0)


def test_sweep_grazing_a_sphere_gives_the_contact_to_an_ulp():
    """A path an ulp inside the top of a sphere: its float root cancels (r*r - h*h) and lost half its
    digits, t 0.5 where the real contact is 0.4999999840202849."""
    cc = CollisionCandidates(probe_radius=0.0, size=16.0, dim=2)
    cc.insert((0.0, 1.3), 2.3)
    start, end = (-1.0, 1.3 + 2.3), (1.0, 1.3 + 2.3)
    w = [Fraction(start[0]), Fraction(start[1]) - Fraction(1.3)]
    ll, wd = Fraction(4), Fraction(2) * w[0]
    outside = w[0] ** 2 + w[1] ** 2 - Fraction(2.3) ** 2
    disc = wd * wd - ll * outside
    root = Fraction(math.isqrt(disc.numerator * 4 ** 200 // disc.denominator), 2 ** 200)
    t, hit = cc.sweep(start, end)
    assert hit == 0 and abs(t - float(outside / (-wd + root))) <= 2.0 ** -52


def test_sweep_with_a_probe_radius_near_the_largest_float():
    """``touching`` takes such a probe; ``sweep``'s candidate reach overflowed and it blamed the move."""
    cc = CollisionCandidates(probe_radius=0.5, size=64.0, dim=2)
    cc.insert((1.0, 1.0), 2.0)
    q = sys.float_info.max
    assert cc.touching((0.0, 0.0), probe_radius=q).tolist() == [0]
    assert cc.sweep((0.0, 0.0), (1.0, 0.0), probe_radius=q) == (0.0, 0)    # touching, and going deeper
    assert cc.sweep((0.0, 0.0), (-1.0, 0.0), probe_radius=q) == (1.0, -1)  # touching, and leaving


def test_resolve_takes_its_own_probe_radius():
    """The contract says every query may pass its own probe radius; ``resolve`` took none."""
    cc = CollisionCandidates(0.5, 64.0, dim=2)
    cc.insert((0.0, 0.0), 1.0)
    assert cc.resolve((0.0, 1.0)).tolist() == [0.0, 1.5]
    assert cc.resolve((0.0, 1.0), probe_radius=2.0).tolist() == [0.0, 3.0]
    assert cc.resolve((0.0, 1.0), 4, 0.0).tolist() == [0.0, 1.0]       # already clear of the object


def test_sweep_from_just_clear_of_a_sphere_is_not_a_touch_at_start():
    """A start an ulp clear of a sphere, decided in fractions: its float crossing clipped to 0 was kept,
    so ``t`` read as a touch at start, and a tie at 0 with an object really touched there went by
    handle to the wrong one."""
    cc = CollisionCandidates(probe_radius=0.2, size=64.0, dim=1)
    rock = cc.insert(0.0, 0.1)
    start = 0.1 + 0.2                                                      # 0.30000000000000004: clear
    assert cc.touching(start).size == 0
    exact = float((Fraction(start) - Fraction(0.1) - Fraction(0.2)) / (Fraction(start) - Fraction(-1.0)))
    assert cc.sweep(start, -1.0) == (exact, rock) and exact > 0.0
    wall = cc.insert(0.25, 0.1)                                            # touched at start, going deeper
    assert cc.sweep(start, -1.0) == (0.0, wall)
    cc = CollisionCandidates(probe_radius=0.0, size=64.0, dim=2)
    cc.insert([-1.7423478984394536, -2.6437863399855175], 2.250261510984017)
    a, b = [0.48675640166435574, -2.9516351455293712], [0.4867564016643557, -2.9516351455293712]
    assert cc.touching(a).size == 0 and cc.touching(b).tolist() == [0]
    t, hit = cc.sweep(a, b)                                                # a one-ulp move
    assert hit == 0 and abs(t - 0.5141948393197191) <= 2.0 ** -52
