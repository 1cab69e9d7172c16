"""Bad input, for every public method: the right exception, a message that names
what was expected, and a structure left exactly as it was.

docs/CONTRACT.md, "Errors": ``ValueError`` for NaN/inf, a negative radius or a wrong
shape; ``TypeError`` for non-numeric input and non-integer handles;
``KeyError`` for a handle not in the structure (never inserted, removed,
negative); duplicate handles in ``update_many``/``remove_many`` are a
``ValueError``; a batch that fails validation changes nothing.  Messages are
matched loosely, on the word that names the problem.
"""

from __future__ import annotations

import numpy as np
import pytest
from brute_force import KINDS, BruteForce, check_contents, check_query, sorted_handles

SIZE = 16.0
NAN, INF = float("nan"), float("inf")
FINITE = "finite|NaN|nan|inf"
SHAPE = "shape|single|dimension|dim"
NEGATIVE = "negative"
NUMERIC = "numeric|number|float"
INTEGER = "integer"
MISSING = "not in|unknown|removed|handle"
UNIQUE = "unique|duplicate|more than once"
SCALE = "scale"
# None converts to NaN in NumPy: a TypeError, or a ValueError about NaN or the shape.
NONE = "|".join([NUMERIC, FINITE, SHAPE])


@pytest.fixture(params=KINDS, ids=repr)
def kind(request):
    return request.param


@pytest.fixture(params=[1, 2, 3])
def dim(request):
    return request.param


class World:
    """A populated structure, its model, a removed handle and probe points."""

    def __init__(self, kind, dim, shape="sphere"):
        rng = np.random.default_rng(dim)
        self.dim = dim
        self.s = kind.make(SIZE, dim=dim, shape=shape)
        self.model = BruteForce(dim, shape)
        centres, radii = rng.uniform(0, SIZE, (40, dim)), rng.uniform(0, 5, 40)
        for h, c, r in zip(self.s.insert_many(centres, radii).tolist(), centres, radii):
            self.model.insert(h, c, r)
        self.live = self.model.handles()
        self.removed = self.live[7]
        self.s.remove(self.removed)
        self.model.remove(self.removed)
        self.live = self.model.handles()
        self.unknown = max(self.live) + 1000
        self.points = np.concatenate([rng.uniform(0, SIZE, (6, dim)), centres[:4]])
        self.before = self.state()

    def state(self):
        s = self.s
        handles = self.model.handles()
        return (len(s), getattr(s, "node_count", None),
                [sorted_handles(s.query(p)) for p in self.points],
                [sorted_handles(s.query(p, exact=True)) for p in self.points],
                s.centres_of(handles).tolist(), s.radii_of(handles).tolist())

    def assert_unchanged(self):
        check_contents(self.s, self.model)
        assert self.state() == self.before, "a rejected call changed the structure"
        for p in self.points[:3]:
            check_query(self.s, self.model, p)
        assert self.removed not in self.s

    def point(self, value=1.0):
        return np.full(self.dim, value)

    def points_n(self, n=3, value=1.0):
        return np.full((n, self.dim), value)


def reject(world, error, match, call):
    with pytest.raises(error, match=match):
        call(world.s)
    world.assert_unchanged()


# -- constructor ------------------------------------------------------------------

@pytest.mark.parametrize("size", [NAN, INF, -INF, 0.0, -0.0, -16.0, "16", None, [16.0]])
def test_constructor_bad_size(kind, size):
    with pytest.raises(ValueError, match="size"):
        kind.make(size, dim=3)


@pytest.mark.parametrize("dim_", [0, 4, -1, 2.0, 2.5, "3", None])
def test_constructor_bad_dim(kind, dim_):
    with pytest.raises(ValueError, match="dim"):
        kind.make(SIZE, dim=dim_)


@pytest.mark.parametrize("shape", ["ball", "", None, "spheres", 1])
def test_constructor_bad_shape(kind, shape):
    with pytest.raises(ValueError, match="shape"):
        kind.make(SIZE, dim=3, shape=shape)


@pytest.mark.parametrize("origin", [(0.0, 0.0), (0.0, 0.0, 0.0, 0.0), (NAN, 0.0, 0.0), (0.0, INF, 0.0),
                                    [[0.0, 0.0, 0.0]]])
def test_constructor_bad_origin(kind, origin):
    with pytest.raises(ValueError, match="origin"):
        kind.make(SIZE, origin=origin, dim=3)


# -- insert ---------------------------------------------------------------------------

@pytest.mark.parametrize("bad,error,match", [
    (NAN, ValueError, FINITE), (INF, ValueError, FINITE), (-INF, ValueError, FINITE),
    ("wide", ValueError, SHAPE), ("matrix", ValueError, SHAPE), ("empty", ValueError, SHAPE),
    ("text", TypeError, NUMERIC), ("none", (TypeError, ValueError), NONE),
])
def test_insert_bad_centre(kind, dim, bad, error, match):
    w = World(kind, dim)
    centre = {"wide": np.ones(dim + 1), "matrix": np.ones((2, dim)), "empty": [],
              "text": ["a"] * dim, "none": None}.get(bad) if isinstance(bad, str) else w.point()
    if not isinstance(bad, str):
        centre[-1] = bad
    reject(w, error, match, lambda s: s.insert(centre, 1.0))


@pytest.mark.parametrize("radius,error,match", [
    (NAN, ValueError, FINITE), (INF, ValueError, FINITE), (-1.0, ValueError, NEGATIVE),
    (-1e-300, ValueError, NEGATIVE), (-INF, ValueError, FINITE + "|" + NEGATIVE),
    ([1.0, 2.0], ValueError, SHAPE), ("one", TypeError, NUMERIC), (None, (TypeError, ValueError), NONE),
    # One radius in a list or an array is still an array: the contract's scalar, not its shape (1,).
    ([1.0], ValueError, r"single number, got shape \(1,\)"), (np.ones(1), ValueError, SHAPE),
    (np.ones((1, 1)), ValueError, SHAPE),
])
def test_insert_bad_radius(kind, dim, radius, error, match):
    w = World(kind, dim)
    reject(w, error, match, lambda s: s.insert(w.point(), radius))


# -- insert_many ----------------------------------------------------------------------

@pytest.mark.parametrize("case,error,match", [
    ("nan centre", ValueError, FINITE), ("inf centre", ValueError, FINITE),
    ("nan radius", ValueError, FINITE), ("inf radius", ValueError, FINITE),
    ("negative radius", ValueError, NEGATIVE),
    ("wide centres", ValueError, SHAPE), ("3-d centres", ValueError, SHAPE),
    ("short radii", ValueError, SHAPE), ("long radii", ValueError, SHAPE), ("2-d radii", ValueError, SHAPE),
    ("one radius for all", ValueError, r"radii must have shape \(5,\), got a single number \(np.full\(5, r\)"),
    ("ragged", ValueError, "rectangular|shape|sequence|inhomogeneous"),
    ("text centres", TypeError, NUMERIC), ("text radii", TypeError, NUMERIC),
])
def test_insert_many_rejects_the_whole_batch(kind, dim, case, error, match):
    w = World(kind, dim)
    centres, radii = np.full((5, dim), 2.0), np.full(5, 1.0)
    if case == "nan centre":
        centres[3, -1] = NAN
    elif case == "inf centre":
        centres[4, 0] = -INF
    elif case == "nan radius":
        radii[2] = NAN
    elif case == "inf radius":
        radii[0] = INF
    elif case == "negative radius":
        radii[4] = -0.5
    elif case == "wide centres":
        centres = np.full((5, dim + 1), 2.0)
    elif case == "3-d centres":
        centres = np.full((5, 1, dim), 2.0)
    elif case == "short radii":
        radii = radii[:4]
    elif case == "long radii":
        radii = np.full(6, 1.0)
    elif case == "2-d radii":
        radii = radii.reshape(5, 1)
    elif case == "one radius for all":
        radii = 1.0
    elif case == "ragged":
        centres = [[2.0] * dim] * 4 + [[2.0] * (dim + 1)]
    elif case == "text centres":
        centres = [["x"] * dim] * 5
    elif case == "text radii":
        radii = ["r"] * 5
    reject(w, error, match, lambda s: s.insert_many(centres, radii))


# -- update -------------------------------------------------------------------------------

@pytest.mark.parametrize("which", ["unknown", "removed", "negative", "huge"])
def test_update_missing_handle(kind, dim, which):
    w = World(kind, dim)
    h = {"unknown": w.unknown, "removed": w.removed, "negative": -1, "huge": 2**62}[which]
    reject(w, KeyError, MISSING, lambda s: s.update(h, w.point(), 1.0))


@pytest.mark.parametrize("handle", [1.0, 2.5, "0", None, np.float64(1), [0]])
def test_update_non_integer_handle(kind, dim, handle):
    w = World(kind, dim)
    reject(w, TypeError, INTEGER, lambda s: s.update(handle, w.point(), 1.0))


@pytest.mark.parametrize("handles", [np.array([0]), [0, 1], (0,)])
def test_many_handles_given_to_a_one_handle_call_are_pointed_to_the_batch_calls(kind, dim, handles):
    w = World(kind, dim)
    for call in (lambda s: s.remove(handles), lambda s: s.centre(handles), lambda s: s.radius(handles)):
        reject(w, TypeError, "handle must be an integer, got .*; many handles go to the batch calls "
               r"\(remove_many, update_many, centres_of, radii_of", call)


@pytest.mark.parametrize("bad,error,match", [
    ("nan centre", ValueError, FINITE), ("inf centre", ValueError, FINITE),
    ("wide centre", ValueError, SHAPE), ("text centre", TypeError, NUMERIC),
    ("nan radius", ValueError, FINITE), ("negative radius", ValueError, NEGATIVE),
    ("text radius", TypeError, NUMERIC), ("two radii", ValueError, SHAPE), ("one radius in a list", ValueError, SHAPE),
])
def test_update_bad_values(kind, dim, bad, error, match):
    w = World(kind, dim)
    h = w.live[3]
    centre, radius = w.point(2.0), 1.0
    if bad == "nan centre":
        centre[0] = NAN
    elif bad == "inf centre":
        centre[-1] = INF
    elif bad == "wide centre":
        centre = np.ones(dim + 1)
    elif bad == "text centre":
        centre = ["c"] * dim
    elif bad == "nan radius":
        radius = NAN
    elif bad == "negative radius":
        radius = -2.0
    elif bad == "text radius":
        radius = "r"
    elif bad == "one radius in a list":
        radius = [1.0]
    else:
        radius = [1.0, 1.0]
    reject(w, error, match, lambda s: s.update(h, centre, radius))


# -- update_many ------------------------------------------------------------------------

@pytest.mark.parametrize("case,error,match", [
    ("duplicate", ValueError, UNIQUE), ("unknown", KeyError, MISSING), ("removed", KeyError, MISSING),
    ("negative", KeyError, MISSING), ("float handles", TypeError, INTEGER),
    ("text handles", TypeError, INTEGER), ("2-d handles", ValueError, SHAPE),
    ("nan centre", ValueError, FINITE), ("negative radius", ValueError, NEGATIVE),
    ("inf radius", ValueError, FINITE), ("short centres", ValueError, SHAPE),
    ("short radii", ValueError, SHAPE), ("wide centres", ValueError, SHAPE),
    # Centres short of the handles, radii matching them: the message names the centres, not the radii.
    ("short centres, radii right", ValueError, r"centres must have shape \(5, \d\) to match the handles"),
])
def test_update_many_rejects_the_whole_batch(kind, dim, case, error, match):
    w = World(kind, dim)
    handles = np.array(w.live[:5], dtype=np.int64)
    centres, radii = np.full((5, dim), 3.0), np.full(5, 0.5)
    if case == "duplicate":
        handles[4] = handles[1]
    elif case == "unknown":
        handles[4] = w.unknown
    elif case == "removed":
        handles[2] = w.removed
    elif case == "negative":
        handles[3] = -5
    elif case == "float handles":
        handles = handles.astype(np.float64)
    elif case == "text handles":
        handles = [str(h) for h in handles]
    elif case == "2-d handles":
        handles = handles.reshape(5, 1)
    elif case == "nan centre":
        centres[4, 0] = NAN
    elif case == "negative radius":
        radii[4] = -1.0
    elif case == "inf radius":
        radii[1] = INF
    elif case in ("short centres", "short centres, radii right"):
        centres = centres[:4]
    elif case == "short radii":
        radii = radii[:3]
    elif case == "wide centres":
        centres = np.full((5, dim + 1), 3.0)
    reject(w, error, match, lambda s: s.update_many(handles, centres, radii))


# -- remove and remove_many ----------------------------------------------------------

@pytest.mark.parametrize("which", ["unknown", "removed", "negative"])
def test_remove_missing_handle(kind, dim, which):
    w = World(kind, dim)
    h = {"unknown": w.unknown, "removed": w.removed, "negative": -1}[which]
    reject(w, KeyError, MISSING, lambda s: s.remove(h))


@pytest.mark.parametrize("handle", [1.0, 0.5, "3", None, np.float32(2)])
def test_remove_non_integer_handle(kind, dim, handle):
    w = World(kind, dim)
    reject(w, TypeError, INTEGER, lambda s: s.remove(handle))


@pytest.mark.parametrize("case,error,match", [
    ("duplicate", ValueError, UNIQUE), ("unknown", KeyError, MISSING), ("removed", KeyError, MISSING),
    ("negative", KeyError, MISSING), ("float handles", TypeError, INTEGER),
    ("mixed handles", TypeError, INTEGER), ("2-d handles", ValueError, SHAPE),
])
def test_remove_many_rejects_the_whole_batch(kind, dim, case, error, match):
    w = World(kind, dim)
    handles = list(w.live[:6])
    if case == "duplicate":
        handles.append(handles[0])
    elif case == "unknown":
        handles.append(w.unknown)
    elif case == "removed":
        handles.insert(2, w.removed)
    elif case == "negative":
        handles.append(-1)
    elif case == "float handles":
        handles = np.array(handles, dtype=np.float64)
    elif case == "mixed handles":
        handles.append(1.5)
    elif case == "2-d handles":
        handles = np.array(handles).reshape(2, 3)
    reject(w, error, match, lambda s: s.remove_many(handles))


# -- queries ----------------------------------------------------------------------------

@pytest.mark.parametrize("method", ["query", "query exact", "trace"])
@pytest.mark.parametrize("bad,error,match", [
    ("nan", ValueError, FINITE), ("inf", ValueError, FINITE), ("wide", ValueError, SHAPE),
    ("many", ValueError, SHAPE), ("empty", ValueError, SHAPE), ("text", TypeError, NUMERIC),
    ("none", (TypeError, ValueError), NONE),
])
def test_single_point_queries_reject_bad_points(kind, dim, method, bad, error, match):
    w = World(kind, dim)
    point = w.point(4.0)
    if bad == "nan":
        point[-1] = NAN
    elif bad == "inf":
        point[0] = -INF
    elif bad == "wide":
        point = np.ones(dim + 1)
    elif bad == "many":
        point = np.ones((3, dim))  # many points go through query_many
    elif bad == "empty":
        point = np.empty(0)
    elif bad == "text":
        point = ["p"] * dim
    else:
        point = None
    call = {"query": lambda s: s.query(point), "query exact": lambda s: s.query(point, exact=True),
            "trace": lambda s: s.trace(point)}[method]
    reject(w, error, match, call)


@pytest.mark.parametrize("bad,error,match", [
    ("nan", ValueError, FINITE), ("inf", ValueError, FINITE), ("wide", ValueError, SHAPE),
    ("3-d", ValueError, SHAPE), ("text", TypeError, NUMERIC), ("ragged", ValueError, "rectangular|shape"),
])
def test_query_many_rejects_bad_points(kind, dim, bad, error, match):
    w = World(kind, dim)
    points = w.points_n(4, 2.0)
    if bad == "nan":
        points[3, -1] = NAN
    elif bad == "inf":
        points[0, 0] = INF
    elif bad == "wide":
        points = np.ones((4, dim + 1))
    elif bad == "3-d":
        points = np.ones((4, 1, dim))
    elif bad == "text":
        points = [["q"] * dim] * 4
    else:
        points = [[1.0] * dim, [1.0] * (dim + 1)]
    for exact in (False, True):
        reject(w, error, match, lambda s: s.query_many(points, exact=exact))


@pytest.mark.parametrize("scale,error", [(0.0, ValueError), (-1.0, ValueError), (NAN, ValueError),
                                         (INF, ValueError), ("2", TypeError), (None, TypeError),
                                         (np.timedelta64(1, "s"), TypeError)])   # int() refused it, naming nothing
def test_bad_scale(kind, dim, scale, error):
    w = World(kind, dim)
    p = w.point(3.0)
    reject(w, error, SCALE, lambda s: s.query(p, scale=scale))
    reject(w, error, SCALE, lambda s: s.query(p, exact=True, scale=scale))
    reject(w, error, SCALE, lambda s: s.query_many(w.points_n(2), scale=scale))
    reject(w, error, SCALE, lambda s: s.trace(p, scale=scale))


@pytest.mark.parametrize("scale,error", [(np.array([2.0]), TypeError), (np.array(True), TypeError),
                                         (np.array(2 + 0j), TypeError), (np.array(0.0), ValueError)])
def test_scale_as_an_array(kind, dim, scale, error):
    """A 0-d array of an integer or float dtype is its number, as ``np.float32(2)`` is; any other
    array is a ``TypeError``."""
    w = World(kind, dim)
    p = w.point(3.0)
    for number in (np.array(2.0), np.array(2), np.array(2.0, dtype=np.float32)):
        assert sorted_handles(w.s.query(p, exact=True, scale=number)) == sorted_handles(w.s.query(p, exact=True,
                                                                                                     scale=2.0))
    reject(w, error, SCALE, lambda s: s.query(p, scale=scale))


# -- reading ------------------------------------------------------------------------------

def test_membership_is_false_for_anything_but_a_live_handle(kind, dim):
    """``h in tree`` is True for a live handle and False for anything else, never an
    exception (docs/CONTRACT.md, "Handles"): missing, removed, out of range or not an
    integer at all."""
    w = World(kind, dim)
    for h in (w.unknown, w.removed, -1, 2**62, 2**80, np.int64(-5)):
        assert (h in w.s) is False
    for odd in (1.0, 2.5, 0.0, "0", None, (1,), [0], np.array([0]), True, np.float64(0.0), object()):
        assert (odd in w.s) is False, f"{odd!r} in structure"
    w.assert_unchanged()


def test_centre_and_radius_of_missing_handles(kind, dim):
    w = World(kind, dim)
    for h in (w.unknown, w.removed, -1):
        reject(w, KeyError, MISSING, lambda s: s.centre(h))
        reject(w, KeyError, MISSING, lambda s: s.radius(h))
        reject(w, KeyError, MISSING, lambda s: s.centres_of([w.live[0], h]))
        reject(w, KeyError, MISSING, lambda s: s.radii_of([h]))
    reject(w, TypeError, INTEGER, lambda s: s.centre(1.5))


# -- the dense grid's fixed world -------------------------------------------------------

@pytest.mark.parametrize("case", ["below", "at the top", "far", "radius half the size", "huge radius"])
def test_dense_grid_rejects_what_lies_outside_its_world(dim, case):
    from brute_force import DENSE
    w = World(DENSE, dim)
    centre, radius = w.point(3.0), 1.0
    if case == "below":
        with np.errstate(under="ignore"):
            centre[0] = np.nextafter(0.0, -1.0)  # a subnormal just below the origin
    elif case == "at the top":
        centre[-1] = SIZE  # the world is half-open: [origin, origin + size)
    elif case == "far":
        centre[:] = 1e6
    elif case == "radius half the size":
        radius = SIZE / 2
    else:
        radius = 1e9
    reject(w, ValueError, "world|outside|size|radius|range", lambda s: s.insert(centre, radius))
    reject(w, ValueError, "world|outside|size|radius|range",
           lambda s: s.insert_many(np.concatenate([w.points_n(3), centre[None]]), [1.0, 1.0, 1.0, radius]))
    reject(w, ValueError, "world|outside|size|radius|range", lambda s: s.update(w.live[0], centre, radius))
    reject(w, ValueError, "world|outside|size|radius|range",
           lambda s: s.update_many(w.live[:2], np.stack([w.point(2.0), centre]), [1.0, radius]))


@pytest.mark.parametrize("case", ["insert_many centre", "insert_many radius", "update_many centre",
                                  "update_many radius"])
def test_a_batch_beyond_the_world_names_its_row(case, dim):
    """CONTRACT.md: a batch's error names the bad row, also beyond the largest world the tree can grow
    to (and outside a dense grid's world), numbered in the caller's batch (``update_many`` checks its
    movers alone)."""
    from brute_force import DENSE, TREE
    for kind in (TREE, DENSE):
        w = World(kind, dim)
        centres, radii = np.stack([w.point(2.0 + k) for k in range(5)]), np.full(5, 1.0)
        far = 1e300 if kind is TREE else 1e6
        if case.endswith("centre"):
            centres[3, -1] = far
            match = r"centres\[3\] is \["
        else:
            radii[3] = far
            match = r"radii\[3\] is 1e\+(300|06)"
        if case.startswith("insert_many"):
            reject(w, ValueError, match, lambda s: s.insert_many(centres, radii))
        else:
            reject(w, ValueError, match, lambda s: s.update_many(w.live[:5], centres, radii))


def test_tree_world_limit_is_a_value_error_or_works():
    """Beyond the largest world the tree can grow to: a ValueError that changes nothing,
    or an answer that is right."""
    from brute_force import TREE
    w = World(TREE, 2)
    for c, r in [((1e300, 0.0), 1.0), ((0.0, 0.0), 1e300), ((-1e200, 1e200), 0.0)]:
        try:
            h = w.s.insert(c, r)
        except ValueError as error:
            assert any(word in str(error) for word in ("world", "grow", "radius", "radii", "centre", "large"))
            w.assert_unchanged()
            continue
        w.model.insert(h, c, r)
        check_query(w.s, w.model, np.array(c))
        w.s.remove(h)
        w.model.remove(h)
        w.assert_unchanged()


def test_a_batch_that_grows_the_root_numbers_its_rows_only_for_an_error(monkeypatch):
    """The rows an error names (O(n log n)) were made for every batch that grew the root: the 1M forest's
    ``insert_many`` (its towers grow it) took 0.45 s instead of 0.13."""
    import culling.tree.tree as tree_module
    from culling import ViewDistanceTree

    def made():
        raise AssertionError("the caller's rows were made for a batch that fits the largest world")

    monkeypatch.setattr(tree_module, "_positions", lambda *args: made())
    tree = ViewDistanceTree(size=16.0, dim=3)
    rng = np.random.default_rng(3)
    handles = tree.insert_many(rng.uniform(-500.0, 500.0, (200, 3)), rng.uniform(0.1, 300.0, 200))  # grows
    assert tree.root_level < 0
    tree.update_many(handles, rng.uniform(-5000.0, 5000.0, (200, 3)), np.full(200, 2000.0))        # grows more
    tree.check_invariants()


def test_points_of_another_dimension_say_where_the_dimension_comes_from():
    """A 2-D point for a tree made without ``dim`` (3-D by default): the message says so."""
    from culling import ViewDistanceTree

    tree = ViewDistanceTree(100.0)
    hint = r"\(a 2-D point for a 3-D structure: dim is set when it is made, 3 by default\)"
    with pytest.raises(ValueError, match=r"centre must have shape \(3,\), got \(2,\) " + hint):
        tree.insert((1.0, 2.0), 1.0)
    with pytest.raises(ValueError, match=r"centres must have shape \(n, 3\), got \(4, 2\) \(2-D points for a 3-D"):
        tree.insert_many(np.zeros((4, 2)), np.ones(4))
    with pytest.raises(ValueError, match=r"got \(5,\)$"):  # five coordinates: no dimension read into it
        tree.query(np.zeros(5))
    assert len(tree) == 0
