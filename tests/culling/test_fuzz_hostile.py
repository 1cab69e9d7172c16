"""Every public method of every structure, called with hostile values.

Each call must either succeed (leaving a structure whose invariants hold) or
raise the documented ``ValueError``/``TypeError``/``KeyError`` and leave the
structure exactly as it was.  Nothing else: no ``OverflowError``, no
``FloatingPointError``, no NumPy ``RuntimeWarning`` (warnings are errors in
these tests, and NumPy's error state is the user's default, "warn").
"""

from __future__ import annotations

import itertools
import math
import warnings
from decimal import Decimal
from fractions import Fraction

import numpy as np
import pytest

from culling import (
    CollisionCandidates,
    DenseViewDistanceGrid,
    InterestManager,
    InterestSets,
    MultiCameraTracker,
    ViewDistanceTree,
    VisibilityTracker,
)

DOCUMENTED = (ValueError, TypeError, KeyError)

#: Hostile scalars: huge ints, overflowing and tiny floats, bools, complex,
#: Decimal, strings, None, masked and NumPy special values.
SCALARS = [
    2**64, 2**63, -(2**64), 10**400, -(10**400), np.uint64(2**63), np.int64(-1),
    1.7e308, -1.7e308, 1e308, 5e-324, -5e-324, 2.2250738585072014e-308, -0.0, 0.0, 1e-300,
    math.nan, math.inf, -math.inf, np.float32(3.4e38), np.float16(1.0),
    True, False, np.True_, 1 + 0j, np.complex128(1), Decimal(1), Fraction(1, 3), "1", b"1", None,
    np.ma.masked, np.ma.array(1.0, mask=True), np.array(2.0), object(),
]

#: Hostile arrays: masked entries, bools among floats, object arrays, wrong shapes and dtypes.
ARRAYS = [
    np.ma.array([1.0, 2.0, 3.0], mask=[False, True, False]),
    [True, 2.0, 3.0], [True, False, True], [10**400, 1.0, 1.0], [2**64, 1, 1],
    np.array([1.0, math.nan, 2.0]), np.array([1.0, math.inf, 2.0]), [1e308, -1e308, 1e308],
    [5e-324, -5e-324, 0.0], np.array(["a", "b", "c"]), [None, 1.0, 2.0], [[1.0, 2.0], [3.0]],
    np.zeros((2, 2, 2)), np.array([1 + 0j, 2, 3]), [Decimal(1), 2.0, 3.0], np.empty(0), [],
]

VALUES = SCALARS + ARRAYS


def _fingerprint(structure):
    """What a failed call must not change: contents, and answers at a few points."""
    if isinstance(structure, InterestSets):
        return structure.viewers.tolist(), [structure.interest(v).tolist() for v in structure.viewers]
    if isinstance(structure, InterestManager):
        handles = structure.tree.handles()
        return (_fingerprint(structure.tree), structure.centres_of(handles).tolist(),
                structure.radii_of(handles).tolist(), structure.viewers.tolist(),
                [structure.interest(v).tolist() for v in structure.viewers])
    if isinstance(structure, (VisibilityTracker,)):
        return structure.visible.tolist(), structure.bands.tolist()
    if isinstance(structure, MultiCameraTracker):
        return sorted(map(str, structure)), [(structure[c].visible.tolist()) for c in list(structure)]
    handles = structure.handles()
    centres = structure.centres_of(handles).tolist()
    radii = (structure.bounding_radius_of(handles) if isinstance(structure, CollisionCandidates)
             else structure.radii_of(handles)).tolist()
    dim = structure.dim
    answers = [sorted(structure.query(np.full(dim, x), exact=True).tolist()) for x in (0.5, 3.0)] \
        if not isinstance(structure, CollisionCandidates) else \
        [structure.touching(np.full(dim, x)).tolist() for x in (0.5, 3.0)]
    return handles.tolist(), centres, radii, len(structure), answers


def _make(kind: str, dim: int):
    if kind == "tree":
        s = ViewDistanceTree(size=8.0, origin=[-1.0] * dim, dim=dim)
    elif kind == "grid":
        s = DenseViewDistanceGrid(size=8.0, origin=[-1.0] * dim, dim=dim, min_radius=0.25)
    else:
        s = CollisionCandidates(probe_radius=0.5, size=8.0, origin=[-1.0] * dim, dim=dim)
    s.insert_many(np.array([[0.5] * dim, [3.0] * dim, [1.0] * dim]), np.array([1.0, 2.0, 0.0]))
    return s


def _calls(kind: str, dim: int):
    """(name, function of one hostile value) for every public method, the value in each argument."""
    good_point = [0.5] * dim
    calls = [
        ("insert centre", lambda s, v: s.insert(v, 1.0)),
        ("insert radius", lambda s, v: s.insert(good_point, v)),
        ("insert_many centres", lambda s, v: s.insert_many(v, [1.0])),
        ("insert_many radii", lambda s, v: s.insert_many([good_point], v)),
        ("update handle", lambda s, v: s.update(v, good_point, 1.0)),
        ("update centre", lambda s, v: s.update(0, v, 1.0)),
        ("update radius", lambda s, v: s.update(0, good_point, v)),
        ("update_many handles", lambda s, v: s.update_many(v, [good_point], [1.0])),
        ("update_many centres", lambda s, v: s.update_many([0], v, [1.0])),
        ("update_many radii", lambda s, v: s.update_many([0], [good_point], v)),
        ("remove", lambda s, v: s.remove(v)),
        ("remove_many", lambda s, v: s.remove_many(v)),
        ("contains", lambda s, v: v in s),
        ("centres_of", lambda s, v: s.centres_of(v)),
    ]
    if kind == "collision":
        calls += [
            ("touching", lambda s, v: s.touching(v)),
            ("touching radius", lambda s, v: s.touching(good_point, v)),
            ("touching_many centres", lambda s, v: s.touching_many(v)),
            ("touching_many radii", lambda s, v: s.touching_many([good_point], v)),
            ("candidates", lambda s, v: s.candidates(v)),
            ("resolve point", lambda s, v: s.resolve(v)),
            ("resolve iterations", lambda s, v: s.resolve(good_point, v)),
            ("sweep start", lambda s, v: s.sweep(v, good_point)),
            ("sweep end", lambda s, v: s.sweep(good_point, v)),
            ("sweep radius", lambda s, v: s.sweep(good_point, [3.0] * dim, v)),
            ("set_probe_radius", lambda s, v: s.set_probe_radius(v)),
            ("bounding_radius_of", lambda s, v: s.bounding_radius_of(v)),
        ]
        return calls
    calls += [
        ("centre", lambda s, v: s.centre(v)),
        ("radius", lambda s, v: s.radius(v)),
        ("radii_of", lambda s, v: s.radii_of(v)),
        ("query point", lambda s, v: s.query(v)),
        ("query exact point", lambda s, v: s.query(v, exact=True)),
        ("query scale", lambda s, v: s.query(good_point, exact=True, scale=v)),
        ("query_many points", lambda s, v: s.query_many(v, exact=True)),
        ("query_many scale", lambda s, v: s.query_many([good_point], exact=True, scale=v)),
        ("query_spheres point", lambda s, v: s.query_spheres(v, exact=True)),
        ("query_spheres scale", lambda s, v: s.query_spheres(good_point, exact=True, scale=v)),
        ("trace point", lambda s, v: s.trace(v)),
        ("trace scale", lambda s, v: s.trace(good_point, scale=v)),
        ("overlapping point", lambda s, v: s.overlapping(v, 1.0, exact=True)),
        ("overlapping radius", lambda s, v: s.overlapping(good_point, v, exact=True)),
        ("overlapping scale", lambda s, v: s.overlapping(good_point, 1.0, exact=True, scale=v)),
        ("overlapping_many points", lambda s, v: s.overlapping_many(v, [1.0], exact=True)),
        ("overlapping_many radii", lambda s, v: s.overlapping_many([good_point], v, exact=True)),
        ("query_detailed point", lambda s, v: s.query_detailed(v)),
        ("query_detailed scale", lambda s, v: s.query_detailed(good_point, scale=v)),
        ("visible_from handle", lambda s, v: s.visible_from(v, good_point)),
        ("visible_from point", lambda s, v: s.visible_from(0, v)),
        ("visible_from scale", lambda s, v: s.visible_from(0, good_point, scale=v)),
    ]
    if kind == "tree":
        calls += [("node_of", lambda s, v: s.node_of(v)), ("node_boxes lo", lambda s, v: s.node_boxes(v, good_point)),
                  ("node_boxes hi", lambda s, v: s.node_boxes(good_point, v))]
    return calls


def _call_hostile(structure, name, call, value):
    before = _fingerprint(structure)
    with warnings.catch_warnings(), np.errstate(all="warn"):
        warnings.simplefilter("error", RuntimeWarning)
        try:
            call(structure, value)
        except DOCUMENTED:
            after = _fingerprint(structure)
            assert after == before, f"{name}({value!r}) raised but changed the structure"
            return False
        except Exception as error:  # noqa: BLE001 - the point of the test
            pytest.fail(f"{name}({value!r}) raised {type(error).__name__}: {error}")
    if hasattr(structure, "check_invariants"):
        structure.check_invariants()
    if isinstance(structure, InterestManager):
        structure.tree.check_invariants()
    return True


@pytest.mark.parametrize("kind", ["tree", "grid", "collision"])
@pytest.mark.parametrize("dim", [1, 3])
def test_every_method_with_every_hostile_value(kind, dim):
    structure = _make(kind, dim)
    calls = _calls(kind, dim)
    for (name, call), value in itertools.product(calls, VALUES):
        if _call_hostile(structure, name, call, value) and name.split()[0] in (
                "insert", "insert_many", "update", "update_many", "remove", "remove_many", "set_probe_radius"):
            structure = _make(kind, dim)  # a mutation went through: start again from the known state


@pytest.mark.parametrize("kind", ["tree", "grid", "collision"])
def test_documented_exception_classes(kind):
    """The precise points of the contract (docs/CONTRACT.md, "Errors"), value by value."""
    s = _make(kind, 2)
    for handle in (2**64, -1, 10**400, np.uint64(2**63)):
        with pytest.raises(KeyError):
            s.remove(handle)
    for handle in (1.5, True, np.True_, "0", None):
        with pytest.raises(TypeError):
            s.remove(handle)
    for coordinate in (10**400, math.nan, math.inf, 1e308 * 10, 2**63, -(2**63) - 1, 2**70, np.uint64(2**63)):
        with pytest.raises(ValueError):
            s.insert([coordinate, 0.0], 1.0)
    beyond_int64 = (2**63, 2**70, np.uint64(2**64 - 1))   # an integer too large for int64: a ValueError, as
    for huge in beyond_int64:                              # a coordinate, a radius, a scale or a size (CONTRACT)
        before = (len(s), s.handles().tolist())
        for call in (lambda: s.insert([1.0, 1.0], huge), lambda: s.insert_many([[1.0, 1.0]], [huge]),
                     lambda: s.insert_many(np.array([[1, huge]], dtype=object), [1.0]),
                     lambda: s.insert_many([[1, huge], [2.5, 1.0]], [1.0, 1.0])):
            with pytest.raises(ValueError, match="beyond int64"):
                call()
        assert (len(s), s.handles().tolist()) == before
    if kind != "collision":
        for fits in (2**63 - 1, -(2**63), np.int64(2**62)):  # the largest int64 is a number like any other
            assert s.query([fits, 0.0], exact=True).dtype == np.int64
    for bad in ("a", None, 1 + 0j, Decimal(1), True):
        with pytest.raises(TypeError):
            s.insert([bad, 0.0], 1.0)
    if kind != "collision":
        for scale in (True, np.True_, 1 + 0j, Decimal(1), "1", None):
            with pytest.raises(TypeError):
                s.query([0.0, 0.0], scale=scale)
        for scale in (0.0, -1.0, math.nan, math.inf, 10**400, -0.0, *beyond_int64):
            with pytest.raises(ValueError):
                s.query([0.0, 0.0], scale=scale)
            with pytest.raises(ValueError):
                s.query_many([[0.0, 0.0]], scale=scale)
        s.query([0.0, 0.0], scale=2**63 - 1)
    for size in (10**400, math.inf, 0.0, -1.0, True, "8", None, 1 + 0j, *beyond_int64):
        with pytest.raises(ValueError):
            if kind == "collision":
                CollisionCandidates(probe_radius=0.5, size=size, dim=2)
            else:
                type(s)(size=size, dim=2)


def test_trackers_with_hostile_values():
    def make():
        tracker = VisibilityTracker(band_edges=(5.0,))
        tracker.update([1, 2], distances=[1.0, 9.0])
        return tracker

    tracker = make()
    calls = [
        ("update handles", lambda t, v: t.update(v, distances=[1.0])),
        ("update distances", lambda t, v: t.update([3], distances=v)),
        ("forget", lambda t, v: t.forget(v)),
        ("bands_of", lambda t, v: t.bands_of(v)),
        ("contains", lambda t, v: v in t),
    ]
    for (name, call), value in itertools.product(calls, VALUES):
        if _call_hostile(tracker, name, call, value) and name.split()[0] in ("update", "forget"):
            tracker = make()
    for edges in VALUES:
        with warnings.catch_warnings(), np.errstate(all="warn"):
            warnings.simplefilter("error", RuntimeWarning)
            try:
                VisibilityTracker(band_edges=edges)
            except DOCUMENTED:
                pass
    cams = MultiCameraTracker(band_edges=(5.0,))
    cams.update("a", [1], distances=[1.0])
    for (name, call), value in itertools.product(
            [("update", lambda c, v: c.update("b", v, distances=[1.0])),
             ("update distances", lambda c, v: c.update("b", [1], distances=v)),
             ("update camera", lambda c, v: c.update(v, [1], distances=[1.0])),
             ("forget", lambda c, v: c.forget(v))], VALUES):
        if _call_hostile(cams, name, call, value):
            cams = MultiCameraTracker(band_edges=(5.0,))
            cams.update("a", [1], distances=[1.0])


@pytest.mark.parametrize("dim", [1, 3])
def test_interest_with_hostile_values(dim):
    """InterestManager and InterestSets: every call with every hostile value, in every argument."""
    point = [0.5] * dim

    def make_manager():
        im = InterestManager(8.0, origin=[-1.0] * dim, dim=dim, hysteresis=0.25)
        im.insert_many(np.array([[0.5] * dim, [3.0] * dim, [1.0] * dim]), np.array([1.0, 2.0, 0.0]))
        im.tick([7, 8], np.array([[0.5] * dim, [3.0] * dim]))
        return im

    def make_sets():
        sets = InterestSets(0.25)
        sets.advance([7, 8], [0, 2, 1], [2, 1], [0, 2, 1], [2, 1])
        return sets

    manager_calls = [
        ("insert_many centres", lambda s, v: s.insert_many(v, [1.0])),
        ("insert_many radii", lambda s, v: s.insert_many([point], v)),
        ("update_many handles", lambda s, v: s.update_many(v, [point])),
        ("update_many centres", lambda s, v: s.update_many([0], v)),
        ("update_many radii", lambda s, v: s.update_many([0], [point], v)),
        ("remove_many", lambda s, v: s.remove_many(v)),
        ("contains", lambda s, v: v in s),
        ("centres_of", lambda s, v: s.centres_of(v)),
        ("radii_of", lambda s, v: s.radii_of(v)),
        ("interest", lambda s, v: s.interest(v)),
        ("tick viewers", lambda s, v: s.tick(v, [point])),
        ("tick positions", lambda s, v: s.tick([7], v)),
        ("tick radii", lambda s, v: s.tick([7], [point], v)),
    ]
    manager = make_manager()
    for (name, call), value in itertools.product(manager_calls, VALUES):
        if _call_hostile(manager, name, call, value) and name.split()[0] in (
                "insert_many", "update_many", "remove_many", "tick"):
            manager = make_manager()
    sets_calls = [
        ("advance viewers", lambda s, v: s.advance(v, [0], [1], [0], [1])),
        ("advance handles", lambda s, v: s.advance([7], v, [1], [0, 1], [2])),
        ("advance counts", lambda s, v: s.advance([7], [0], v, [0], [1])),
        ("advance outer handles", lambda s, v: s.advance([7], [0], [1], v, [1])),
        ("advance outer counts", lambda s, v: s.advance([7], [0], [1], [0], v)),
        ("forget", lambda s, v: s.forget(v)),
        ("interest", lambda s, v: s.interest(v)),
        ("contains", lambda s, v: v in s),
    ]
    sets = make_sets()
    for (name, call), value in itertools.product(sets_calls, VALUES):
        if _call_hostile(sets, name, call, value) and name.split()[0] in ("advance", "forget"):
            sets = make_sets()
    for margin in VALUES:
        for make in (InterestSets, lambda m: InterestManager(8.0, dim=dim, hysteresis=m)):
            with warnings.catch_warnings(), np.errstate(all="warn"):
                warnings.simplefilter("error", RuntimeWarning)
                try:
                    make(margin)
                except DOCUMENTED:
                    pass


@pytest.mark.parametrize("kind", ["tree", "grid", "collision"])
def test_worlds_at_the_edge_of_float64(kind):
    """Sizes and origins near the float limits or subnormal: documented exceptions or answers, never a warning."""
    for origin, size in itertools.product([-1e308, 1e308, -1.7e308, 0.0, 1e-300, 5e-324],
                                          [1e308, 1.7e308, 1e-300, 5e-324, 1.0]):
        with warnings.catch_warnings(), np.errstate(all="warn"):
            warnings.simplefilter("error", RuntimeWarning)
            try:
                if kind == "tree":
                    s = ViewDistanceTree(size, origin=(origin,) * 2, dim=2)
                elif kind == "grid":
                    s = DenseViewDistanceGrid(size, origin=(origin,) * 2, dim=2, min_radius=size / 64)
                else:
                    s = CollisionCandidates(0.5, size, origin=(origin,) * 2, dim=2)
            except DOCUMENTED:
                continue
            for c, r in [((1e308, 1e308), 1.0), ((-1e308, 1e308), 1e308), ((origin, origin), size / 4),
                         ((origin, origin), 0.0), ((5e-324, 0.0), 5e-324)]:
                for call in (lambda: s.insert(c, r), lambda: s.insert_many([c, c], [r, r])):
                    try:
                        call()
                    except DOCUMENTED:
                        pass
            s.check_invariants()
            for p in [(1e308, 1e308), (-1.7e308, 1.7e308), (origin, origin), (0.0, 0.0)]:
                if kind == "collision":
                    s.touching(p)
                    s.resolve(p)
                    continue
                for scale in [1.0, 1e300, 5e-324, 1.7e308]:
                    exact = s.query(p, exact=True, scale=scale)
                    assert set(exact.tolist()) <= set(s.query(p, scale=scale).tolist())
                    s.query_many([p], exact=True, scale=scale)
                    s.query_spheres(p, exact=True, scale=scale)
                    s.trace(p, scale=scale)
