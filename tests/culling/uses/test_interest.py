"""InterestManager and InterestSets against a brute force decided in ``fractions.Fraction``.

The model keeps every entity's centre and radius and every viewer's set in
Python sets; a viewer's set is recomputed each tick from the contract's
rule, in exact rational arithmetic (``|c - p|**2 <= (r * s + rho)**2`` for the
float64 inputs, ``s = 1`` inside and ``s = 1 + hysteresis`` for an entity
held), and the events are the set differences.  Values are drawn from a
small lattice of binary fractions, so viewers stand exactly on spheres'
surfaces (3-4-5 offsets, offsets along an axis) and on the tree's cell faces,
and from points put on a surface by float arithmetic (within rounding of it).
"""

from __future__ import annotations

import math
import pickle
import threading
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import note, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule
from library_arrays import read_only

from culling import InterestManager, InterestSets, InterestTick, tick_arguments

SIZE = 16.0


# -- the model -------------------------------------------------------------------------------------------------


def inside(centre, radius: float, point, scale: float = 1.0, reach: float = 0.0) -> bool:
    """The contract's rule in rational arithmetic: ``|c - p| <= r * scale + reach`` (floats decide only far
    from the surface)."""
    f2 = sum((float(p) - float(c)) ** 2 for p, c in zip(point, centre))
    f_limit = float(radius) * float(scale) + float(reach)
    if f2 < f_limit * f_limit * (1 - 1e-9) - 1e-300 or f2 > f_limit * f_limit * (1 + 1e-9) + 1e-300:
        return f2 < f_limit * f_limit
    d2 = sum((Fraction(float(p)) - Fraction(float(c))) ** 2 for p, c in zip(point, centre))
    limit = Fraction(float(radius)) * Fraction(float(scale)) + Fraction(float(reach))
    return d2 <= limit * limit


class Model:
    """Entities and viewers' sets as Python dicts and sets."""

    def __init__(self, hysteresis: float = 0.0) -> None:
        self.hysteresis = hysteresis
        self.entities: dict[int, tuple[tuple[float, ...], float]] = {}
        self.sets: dict[int, set[int]] = {}
        self.gone: set[int] = set()

    def insert(self, handles, centres, radii) -> None:
        for h, c, r in zip(np.asarray(handles).tolist(), np.asarray(centres).tolist(), np.asarray(radii).tolist()):
            assert h not in self.entities
            self.entities[h] = (tuple(c), r)

    def update(self, handles, centres, radii=None) -> None:
        kept = [self.entities[h][1] for h in np.asarray(handles).tolist()] if radii is None else radii
        for h, c, r in zip(np.asarray(handles).tolist(), np.asarray(centres).tolist(), np.asarray(kept).tolist()):
            self.entities[h] = (tuple(c), r)

    def remove(self, handles) -> None:
        for h in np.asarray(handles).tolist():
            del self.entities[h]
            self.gone.add(h)

    def tick(self, ids, positions, reach=None) -> tuple[list[list[int]], list[list[int]]]:
        entered, left, sets = [], [], {}
        reach = np.zeros(len(ids)) if reach is None else np.broadcast_to(np.asarray(reach, dtype=float), (len(ids),))
        scale = 1.0 + self.hysteresis
        for v, p, rho in zip(list(ids), np.asarray(positions).tolist(), reach.tolist()):
            before = self.sets.get(v, set())
            held = before - self.gone
            now = {h for h, (c, r) in self.entities.items()
                   if inside(c, r, p, 1.0, rho) or (h in held and inside(c, r, p, scale, rho))}
            reborn = before & now & self.gone
            entered.append(sorted((now - before) | reborn))
            left.append(sorted((before - now) | reborn))
            sets[v] = now
        self.sets = sets
        self.gone = set()
        return entered, left

    def interest(self, v: int) -> list[int]:
        return sorted(self.sets[v] - self.gone)


def rows(offsets, values) -> list[list[int]]:
    return [values[offsets[i]:offsets[i + 1]].tolist() for i in range(len(offsets) - 1)]


def check_tick(t: InterestTick, expected: tuple[list[list[int]], list[list[int]]], ids) -> None:
    assert t.viewer_ids.tolist() == list(ids)
    assert t.entered_offsets.shape == t.left_offsets.shape == (len(ids) + 1,)
    assert t.entered.dtype == t.left.dtype == t.entered_offsets.dtype == np.int64
    assert rows(t.entered_offsets, t.entered) == expected[0]
    assert rows(t.left_offsets, t.left) == expected[1]
    assert not t.entered.flags.writeable and not t.left.flags.writeable


# -- exactness at faces and ties -------------------------------------------------------------------------------


def surface_world(dim: int, rng: np.random.Generator):
    """Entities on cell faces (multiples of node edges) and viewers exactly on their surfaces, plus viewers put
    on surfaces by float arithmetic (within rounding: only exact arithmetic tells)."""
    steps = SIZE / 2.0 ** rng.integers(0, 6, 40)
    centres = (rng.integers(0, 4, (40, dim)) * steps[:, None]).astype(float)
    radii = rng.choice([0.0, 0.5, 1.0, 2.5, 5.0, 3.0], 40)
    viewers = []
    for c, r in zip(centres, radii):
        axis = rng.integers(0, dim)
        on_axis = c.copy()
        on_axis[axis] += r                              # exactly on the surface along an axis
        viewers.append(on_axis)
        if dim >= 2:
            tri = c.copy()
            tri[:2] += np.array([0.6, 0.8]) * r         # 3-4-5: on the surface within rounding
            viewers.append(tri)
        direction = rng.normal(size=dim)
        viewers.append(c + direction / np.linalg.norm(direction) * r)
    return centres, radii, np.array(viewers)


@pytest.fixture(params=["walk", "grid"])
def direction(request, monkeypatch):
    """Both ways a tick finds the sets: each viewer walks the entity tree, or each entity asks a grid over
    the viewers (forced here at any size, in chunks of a few pool rows, from buffers that must grow)."""
    import culling.tree.inverted as inverted

    if request.param == "grid":
        monkeypatch.setattr(inverted, "GRID_MIN_VIEWERS", 1)
        monkeypatch.setattr(inverted, "GRID_ENTITIES_PER_VIEWER", math.inf)
        monkeypatch.setattr(inverted, "GRID_MIN_ROWS", 4)
        monkeypatch.setattr(inverted, "GRID_FIRST_HINT", 0.0)
        monkeypatch.setattr(inverted, "GRID_SLACK", 1)
        monkeypatch.setattr(inverted, "GRID_UNSURE_ROOM", 1)
    else:
        monkeypatch.setattr(inverted, "GRID_ENTITIES_PER_VIEWER", -1.0)
    return request.param


@pytest.mark.parametrize("dim", [1, 2, 3])
@pytest.mark.parametrize("hysteresis", [0.0, 0.25])
def test_sets_match_exact_rational_truth_on_surfaces_and_faces(dim, hysteresis, direction):
    rng = np.random.default_rng(dim)
    centres, radii, viewers = surface_world(dim, rng)
    im = InterestManager(SIZE, dim=dim, hysteresis=hysteresis)
    model = Model(hysteresis)
    h = im.insert_many(centres, radii)
    model.insert(h, centres, radii)
    ids = np.arange(viewers.shape[0], dtype=np.int64) * 3 - 7
    check_tick(im.tick(ids, viewers), model.tick(ids.tolist(), viewers), ids.tolist())
    for v in ids.tolist():
        assert im.interest(v).tolist() == model.interest(v)
    # Move every viewer a little off and back: with hysteresis the ones held stay.
    for shift in (1e-9, 0.3, -0.3, 0.0):
        moved = viewers + shift
        check_tick(im.tick(ids, moved), model.tick(ids.tolist(), moved), ids.tolist())


@pytest.mark.parametrize("hysteresis", [0.0, 0.5])
def test_per_viewer_radii_follow_the_probe_rule_exactly(hysteresis):
    rng = np.random.default_rng(5)
    centres, radii, viewers = surface_world(3, rng)
    reach = rng.choice([0.0, 0.5, 1.0, 2.0], viewers.shape[0])
    im = InterestManager(SIZE, hysteresis=hysteresis)
    model = Model(hysteresis)
    h = im.insert_many(centres, radii)
    model.insert(h, centres, radii)
    ids = np.arange(viewers.shape[0])
    check_tick(im.tick(ids, viewers, radii=reach), model.tick(ids.tolist(), viewers, reach), ids.tolist())
    check_tick(im.tick(ids, viewers + 0.25, radii=1.5), model.tick(ids.tolist(), viewers + 0.25, 1.5), ids.tolist())
    check_tick(im.tick(ids, viewers), model.tick(ids.tolist(), viewers), ids.tolist())


def test_hysteresis_keeps_an_entity_until_beyond_the_margin(direction):
    im = InterestManager(64.0, dim=1, hysteresis=0.1)
    (e,) = im.insert_many([0.0], [10.0]).tolist()
    assert im.tick([1], [[9.0]]).entered.tolist() == [e]
    assert im.tick([1], [[10.9]]).left.tolist() == []          # within 11: stays
    assert im.tick([1], [[11.0]]).left.tolist() == []          # exactly 10 * 1.1 (as the float product): stays
    assert im.tick([1], [[11.5]]).left.tolist() == [e]
    assert im.tick([1], [[10.5]]).entered.tolist() == []       # must come within 10 again
    assert im.tick([2], [[10.5]]).entered.tolist() == []       # a new viewer has held nothing


# -- viewers come and go, entities are removed -------------------------------------------------------------------


def test_new_viewer_enters_whole_set_and_missing_viewer_is_dropped_without_events():
    im = InterestManager(SIZE, dim=2)
    h = im.insert_many([[1.0, 1.0], [2.0, 2.0], [9.0, 9.0]], [3.0, 3.0, 1.0])
    t = im.tick([5, 6], [[1.5, 1.5], [9.0, 9.5]])
    assert t.entered_of(0).tolist() == [h[0], h[1]] and t.entered_of(1).tolist() == [h[2]]
    t = im.tick([6], [[9.0, 9.5]])                     # viewer 5 is dropped: no events for it
    assert t.viewer_ids.tolist() == [6] and t.events == 0
    with pytest.raises(KeyError, match="not in the last tick"):
        im.interest(5)
    t = im.tick([5, 6], [[1.5, 1.5], [9.0, 9.5]])      # comes back: enters its whole set again
    assert t.entered_of(0).tolist() == [h[0], h[1]] and t.left_of(0).tolist() == []
    assert im.tick([], np.empty((0, 2))).events == 0
    assert im.viewers.tolist() == []


def test_removed_entity_leaves_at_the_next_tick_even_when_its_handle_is_handed_out_again(direction):
    im = InterestManager(SIZE, dim=2)
    h = im.insert_many([[1.0, 1.0], [2.0, 2.0]], [3.0, 3.0])
    im.tick([1, 2], [[1.0, 1.0], [12.0, 12.0]])
    im.remove_many(h[:1])
    assert im.interest(1).tolist() == [h[1]]           # gone from the current set at once
    (again,) = im.insert_many([[1.5, 1.0]], [3.0]).tolist()
    assert again == h[0]                                 # the tree hands the handle out again
    t = im.tick([1, 2], [[1.0, 1.0], [12.0, 12.0]])
    assert t.left_of(0).tolist() == [h[0]] and t.entered_of(0).tolist() == [h[0]]   # the old left, the new came
    assert t.events == 2
    assert im.tick([1, 2], [[1.0, 1.0], [12.0, 12.0]]).events == 0


def test_interest_sets_alone_diff_unsorted_rows():
    sets = InterestSets()
    t = sets.advance([3, 1], [5, 2, 9], [2, 1])
    assert rows(t.entered_offsets, t.entered) == [[2, 5], [9]]
    t = sets.advance([1, 3], np.array([9, 4], dtype=np.int64), [2, 0])
    assert rows(t.entered_offsets, t.entered) == [[4], []]
    assert rows(t.left_offsets, t.left) == [[], [2, 5]]
    assert sets.interest(1).tolist() == [4, 9] and 1 in sets and 2 not in sets and len(sets) == 2


# -- hypothesis: random sequences of every operation --------------------------------------------------------------

LATTICE = st.integers(0, 32).map(lambda k: k / 2.0)           # halves in [0, 16]: faces and exact ties
OFF = st.sampled_from([0.0, 0.0, 1e-12, -1e-12, 0.1])


class InterestMachine(RuleBasedStateMachine):
    """Insert / update / remove / tick (viewers appearing and leaving, per-viewer radii) against the model."""

    @initialize(hysteresis=st.sampled_from([0.0, 0.0, 0.25]), dim=st.sampled_from([1, 2, 3]))
    def start(self, hysteresis, dim):
        self.dim = dim
        self.im = InterestManager(SIZE, dim=dim, hysteresis=hysteresis)
        self.model = Model(hysteresis)
        self.pool = [0, 1, 2, 3, 4, 5]
        note(f"InterestManager({SIZE}, dim={dim}, hysteresis={hysteresis})")

    def points(self, n):
        return st.lists(st.tuples(*[LATTICE] * self.dim), min_size=n, max_size=n)

    @rule(data=st.data(), n=st.integers(1, 5))
    def insert(self, data, n):
        centres = np.array(data.draw(self.points(n)), dtype=float)
        radii = np.array(data.draw(st.lists(st.sampled_from([0.0, 0.5, 1.0, 2.5, 5.0, 40.0]), min_size=n,
                                            max_size=n)))
        h = self.im.insert_many(centres, radii)
        self.model.insert(h, centres, radii)

    @precondition(lambda self: self.model.entities)
    @rule(data=st.data())
    def update(self, data):
        handles = data.draw(st.lists(st.sampled_from(sorted(self.model.entities)), min_size=1, max_size=4,
                                     unique=True))
        centres = np.array(data.draw(self.points(len(handles))), dtype=float)
        if data.draw(st.booleans(), label="resized too"):   # a new radius keeps the handle: no leave and enter
            radii = np.array(data.draw(st.lists(st.sampled_from([0.0, 0.5, 2.5, 40.0]), min_size=len(handles),
                                                max_size=len(handles))))
            self.im.update_many(handles, centres, radii)
            self.model.update(handles, centres, radii)
        else:
            self.im.update_many(handles, centres)
            self.model.update(handles, centres)

    @precondition(lambda self: self.model.entities)
    @rule(data=st.data())
    def remove(self, data):
        handles = data.draw(st.lists(st.sampled_from(sorted(self.model.entities)), min_size=1, max_size=3,
                                     unique=True))
        self.im.remove_many(handles)
        self.model.remove(handles)

    @rule(data=st.data(), with_radii=st.booleans())
    def tick(self, data, with_radii):
        ids = data.draw(st.lists(st.sampled_from(self.pool), max_size=len(self.pool), unique=True))
        near = data.draw(st.lists(st.sampled_from([None, *self.model.entities]), min_size=len(ids),
                                  max_size=len(ids)))
        positions = np.array(data.draw(self.points(len(ids))), dtype=float).reshape(len(ids), self.dim)
        for i, h in enumerate(near):     # some viewers on an entity's surface along an axis (+ a rounding nudge)
            if h is not None:
                c, r = self.model.entities[h]
                positions[i] = c
                positions[i, 0] += r + data.draw(OFF)
        reach = (np.array(data.draw(st.lists(st.sampled_from([0.0, 0.5, 1.5]), min_size=len(ids),
                                             max_size=len(ids))), dtype=float) if with_radii else None)
        t = self.im.tick(np.array(ids, dtype=np.int64), positions, radii=reach)
        check_tick(t, self.model.tick(ids, positions, reach), ids)

    @invariant()
    def sets_agree(self):
        if not hasattr(self, "im"):
            return
        assert self.im.viewers.tolist() == sorted(self.model.sets)
        for v in self.model.sets:
            assert self.im.interest(v).tolist() == self.model.interest(v)
        assert len(self.im) == len(self.model.entities)


InterestMachine.TestCase.settings = settings(InterestMachine.TestCase.settings, stateful_step_count=15)
test_interest_state_machine = InterestMachine.TestCase


class GridInterestMachine(InterestMachine):
    """:class:`InterestMachine` with every tick's sets found entity by entity (the viewers' grid)."""

    def __init__(self):
        super().__init__()
        import culling.tree.inverted as inverted

        self._module = inverted
        self._saved = {name: getattr(inverted, name) for name in GRID_FORCED}
        for name, value in GRID_FORCED.items():
            setattr(inverted, name, value)

    def teardown(self):
        for name, value in self._saved.items():
            setattr(self._module, name, value)


GRID_FORCED = {"GRID_MIN_VIEWERS": 1, "GRID_ENTITIES_PER_VIEWER": math.inf, "GRID_MIN_ROWS": 4,
               "GRID_FIRST_HINT": 0.0, "GRID_SLACK": 1, "GRID_UNSURE_ROOM": 1}
GridInterestMachine.TestCase.settings = settings(InterestMachine.TestCase.settings, stateful_step_count=15)
test_grid_interest_state_machine = GridInterestMachine.TestCase


# -- bad input ---------------------------------------------------------------------------------------------------


def _world():
    im = InterestManager(SIZE, dim=2, hysteresis=0.1)
    h = im.insert_many([[1.0, 1.0], [5.0, 5.0], [9.0, 9.0]], [2.0, 2.0, 2.0])
    im.tick([1, 2], [[1.0, 1.0], [5.0, 5.0]])
    return im, h


@pytest.mark.parametrize("call, error, match", [
    (lambda im, h: im.tick([1, 1], [[0.0, 0.0], [1.0, 1.0]]), ValueError, "unique"),
    (lambda im, h: im.tick([1.5], [[0.0, 0.0]]), TypeError, "integers"),
    (lambda im, h: im.tick([True], [[0.0, 0.0]]), TypeError, "integers"),
    (lambda im, h: im.tick([1, 2], [[0.0, 0.0]]), ValueError, "shape"),
    (lambda im, h: im.tick([1], [[0.0, 0.0, 0.0]]), ValueError, "shape"),
    (lambda im, h: im.tick([1], [[np.nan, 0.0]]), ValueError, "finite"),
    (lambda im, h: im.tick([1], [[0.0, 0.0]], radii=[-1.0]), ValueError, "negative"),
    (lambda im, h: im.tick([1], [[0.0, 0.0]], radii=[1.0, 2.0]), ValueError, "shape"),
    (lambda im, h: im.tick([1], [["a", 0.0]]), TypeError, "numeric"),
    (lambda im, h: im.remove_many([h[0], 99]), KeyError, "99"),
    (lambda im, h: im.remove_many([h[0], h[0]]), ValueError, "unique"),
    (lambda im, h: im.update_many([h[0]], [[np.inf, 0.0]]), ValueError, "finite"),
    (lambda im, h: im.update_many([77], [[1.0, 0.0]]), KeyError, "77"),
    (lambda im, h: im.update_many([h[0]], [[1.0, 0.0], [2.0, 0.0]]), ValueError, "shape"),
    (lambda im, h: im.insert_many([[1.0, 0.0]], [-2.0]), ValueError, "negative"),
    (lambda im, h: im.interest(3), KeyError, "not in the last tick"),
    (lambda im, h: im.interest("1"), TypeError, "integer"),
])
def test_bad_input_raises_and_changes_nothing(call, error, match):
    im, h = _world()
    twin, _ = _world()
    with pytest.raises(error, match=match):
        call(im, h)
    assert len(im) == len(twin)
    for v in (1, 2):
        assert im.interest(v).tolist() == twin.interest(v).tolist()
    ids, points = [2, 3], [[9.0, 9.0], [1.0, 1.0]]
    a, b = im.tick(ids, points), twin.tick(ids, points)
    assert rows(a.entered_offsets, a.entered) == rows(b.entered_offsets, b.entered)
    assert rows(a.left_offsets, a.left) == rows(b.left_offsets, b.left)


@pytest.mark.parametrize("dim", [0, 4, -1, True, 2.0, 2.5, "3"])
def test_tick_arguments_refuses_a_dim_no_manager_can_have(dim):
    """A service that checks ticks before sending them refuses what InterestManager(dim=...) refuses."""
    with pytest.raises(ValueError, match="dim must be 1, 2 or 3"):
        tick_arguments([1], [[0.0, 0.0]], dim=dim)
    with pytest.raises(ValueError, match="dim must be 1, 2 or 3"):
        InterestManager(SIZE, dim=dim)


def test_tick_arguments_checks_as_tick_does():
    ids, points, radii = tick_arguments(np.array([7, 3], dtype=np.uint8), [[1, 2], [3, 4]], [1, 2], dim=2)
    assert ids.dtype == np.int64 and ids.tolist() == [7, 3]
    assert points.dtype == np.float64 and points.flags.c_contiguous and points.shape == (2, 2)
    assert radii is not None and radii.tolist() == [1.0, 2.0]
    assert tick_arguments([1], [[0.0, 0.0, 0.0]])[2] is None
    with pytest.raises(ValueError, match=r"shape \(2, 2\)"):
        tick_arguments([1, 2], [[0.0, 0.0]], dim=2)


def test_bad_constructor_and_bad_rows():
    with pytest.raises(ValueError, match="hysteresis"):
        InterestManager(SIZE, hysteresis=-0.5)
    with pytest.raises(TypeError, match="hysteresis"):
        InterestManager(SIZE, hysteresis=True)
    with pytest.raises(ValueError, match="size"):
        InterestManager(-1.0)
    sets = InterestSets()
    with pytest.raises(ValueError, match="more than once"):
        sets.advance([1], [4, 4], [2])
    with pytest.raises(ValueError, match="add up"):
        sets.advance([1], [4, 5], [1])
    with pytest.raises(ValueError, match="hysteresis"):
        sets.advance([1], [4], [1], [4], [1])
    with pytest.raises(ValueError, match="outer_handles"):
        InterestSets(0.5).advance([1], [4], [1])
    with pytest.raises(ValueError, match="does not"):             # inner must be within outer
        InterestSets(0.5).advance([1, 2], [4, 9, 1_000_000], [1, 2], [4, 9], [1, 1])
    with pytest.raises(ValueError, match="more than once"):
        InterestSets(0.5).advance([1], [4], [1], [4, 4], [2])
    with pytest.raises(ValueError, match="below"):
        sets.advance([1], [2**40], [1])
    with pytest.raises(ValueError, match="negative"):
        sets.advance([1], [-3], [1])
    assert len(sets) == 0


# -- threads and copies -------------------------------------------------------------------------------------------


def test_readers_see_a_whole_tick_while_ticks_run():
    """``interest`` from other threads while one thread ticks: always one tick's set, never a mixture."""
    im = InterestManager(SIZE, dim=2)
    im.insert_many([[1.0, 1.0], [2.0, 1.0], [3.0, 1.0]], [1.5, 1.5, 1.5])
    spots = [[1.0, 1.0], [3.0, 1.0]]
    allowed = {(0, 1), (1, 2)}
    im.tick([1], [spots[0]])
    seen: list[tuple[int, ...]] = []
    stop = threading.Event()

    def read():
        while not stop.is_set():
            seen.append(tuple(im.interest(1).tolist()))

    readers = [threading.Thread(target=read) for _ in range(2)]
    for r in readers:
        r.start()
    try:
        for k in range(200):
            im.tick([1], [spots[k % 2]])
    finally:
        stop.set()
        for r in readers:
            r.join()
    assert set(seen) <= allowed


def test_pickled_manager_continues_identically():
    im, _ = _world()
    copy = pickle.loads(pickle.dumps(im))
    a, b = im.tick([1, 2], [[5.0, 5.0], [9.0, 9.0]]), copy.tick([1, 2], [[5.0, 5.0], [9.0, 9.0]])
    assert rows(a.entered_offsets, a.entered) == rows(b.entered_offsets, b.entered)
    assert rows(a.left_offsets, a.left) == rows(b.left_offsets, b.left)


def test_a_managers_state_holds_its_tree_and_sets_as_they_were_under_its_lock():
    # pickle and deepcopy copy the state after __getstate__ returns, outside the manager's lock: a
    # removal on another thread landing between the tree's copy and the sets' made a copy of no moment
    im, _ = _world()
    state = im.__getstate__()
    assert state["_tree"] is not im._tree and state["_sets"] is not im._sets
    before = sorted(im._tree.handles().tolist())
    im.remove_many(im._tree.handles()[:3])
    assert sorted(state["_tree"].handles().tolist()) == before  # the copy is the moment of the call


@pytest.mark.parametrize("hysteresis", [0.0, 0.2])
def test_many_viewers_on_the_library_threads_match_the_model(hysteresis, direction):
    """Enough viewers that the passes run in chunks on several threads, and that the tree walks them along
    its Morton curve (the sets are then kept in the walk's order: ``interest`` finds each row)."""
    rng = np.random.default_rng(3)
    im = InterestManager(256.0, dim=2, hysteresis=hysteresis)
    model = Model(hysteresis)
    centres = rng.integers(0, 512, (80, 2)) / 2.0
    radii = rng.integers(0, 80, 80) / 2.0
    h = im.insert_many(centres, radii)
    model.insert(h, centres, radii)
    ids = rng.permutation(3000)[:1200]
    for _ in range(3):
        pos = rng.integers(0, 512, (ids.size, 2)) / 2.0
        check_tick(im.tick(ids, pos), model.tick(ids.tolist(), pos), ids.tolist())
        for v in ids[::7].tolist():
            assert im.interest(v).tolist() == model.interest(v)
        moved = h[rng.random(h.size) < 0.3]
        new = rng.integers(0, 512, (moved.size, 2)) / 2.0
        im.update_many(moved, new)
        model.update(moved, new)
        ids = ids[rng.random(ids.size) < 0.9]


def test_a_refused_advance_leaves_no_flags_behind():
    """A row refused mid-way (a handle twice) leaves flags set in the scratch: the scratch is dropped, so the
    next ticks' answers do not notice."""
    from culling.uses.interest import InterestSets

    rng = np.random.default_rng(4)
    im = InterestManager(SIZE, dim=2)
    model = Model()
    centres, radii = rng.integers(0, 32, (60, 2)) / 2.0, rng.integers(0, 10, 60) / 2.0
    model.insert(im.insert_many(centres, radii), centres, radii)
    ids = np.arange(30)
    for _ in range(4):
        pos = rng.integers(0, 32, (30, 2)) / 2.0
        check_tick(im.tick(ids, pos), model.tick(ids.tolist(), pos), ids.tolist())
    sets = InterestSets()
    sets.advance([0, 1], [5, 6, 7, 8, 9], [3, 2])
    with pytest.raises(ValueError, match="more than once"):
        sets.advance([0, 1], [5, 6, 7, 3, 3], [3, 2])
    t = sets.advance([0, 1], [5, 6, 7, 3, 8], [3, 2])   # 3, flagged by the refused row, is in a row again
    assert t.entered.tolist() == [3] and t.left.tolist() == [9] and sets.interest(1).tolist() == [3, 8]
    for _ in range(4):
        pos = rng.integers(0, 32, (30, 2)) / 2.0
        check_tick(im.tick(ids, pos), model.tick(ids.tolist(), pos), ids.tolist())


@pytest.mark.parametrize("spread", ["one place", "beyond float64's range"])
def test_grid_over_viewers_at_one_place_or_spread_beyond_float_range(spread, direction):
    """The viewers' grid where its extent is zero (every viewer at one place) or overflows (viewers at
    +-1e308: the walk answers instead); the sets still equal the exact model."""
    rng = np.random.default_rng(6)
    im = InterestManager(SIZE, dim=2)
    model = Model()
    centres, radii = rng.integers(0, 32, (50, 2)) / 2.0, rng.integers(0, 12, 50) / 2.0
    model.insert(im.insert_many(centres, radii), centres, radii)
    ids = np.arange(40)
    pos = np.repeat(centres[:1] + 0.5, 40, axis=0)
    if spread == "one place":
        check_tick(im.tick(ids, pos), model.tick(ids.tolist(), pos), ids.tolist())
        return
    pos[0], pos[1] = -1e308, 1e308         # far from every entity (the model's float check would overflow)
    t = im.tick(ids, pos)
    near = model.tick(ids[2:].tolist(), pos[2:])
    assert rows(t.entered_offsets, t.entered)[2:] == near[0] and t.entered_of(0).size == t.entered_of(1).size == 0
    assert im.interest(0).size == im.interest(1).size == 0


@pytest.mark.parametrize("sticky", [False, True])
@pytest.mark.parametrize("with_gone", [False, True])
def test_merge_of_sorted_rows_equals_the_stamped_diff(sticky, with_gone):
    """:func:`merge_rows` (the grid's sorted rows) writes what :func:`advance_rows` writes, where it writes it:
    random sorted rows, previous rows, removed handles (some back in the new rows), new viewers."""
    import culling.uses.interest as interest_module
    from culling.uses.interest_kernels import advance_rows, merge_rows

    rng = np.random.default_rng(5)
    m, bound = 300, 200

    def rows(sizes, pick):
        return [np.sort(rng.choice(pick, size=min(s, pick.size), replace=False)).astype(np.int64) for s in sizes]

    universe = np.arange(bound)
    outer_rows = rows(rng.integers(0, 40, m), universe)
    inner_rows = [r[rng.random(r.size) < (0.8 if sticky else 1.0)] for r in outer_rows]
    previous_rows = rows(rng.integers(0, 40, m), universe)
    previous_rows = [np.union1d(p, o[rng.random(o.size) < 0.7]).astype(np.int64) for p, o in zip(previous_rows, outer_rows)]
    gone = np.sort(rng.choice(bound, 15, replace=False)).astype(np.int64) if with_gone else np.empty(0, np.int64)

    def csr(rs):
        counts = np.array([r.size for r in rs], dtype=np.int64)
        offsets = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
        return np.concatenate(rs).astype(np.int64), offsets, counts

    inner, inner_offsets, inner_count = csr(inner_rows)
    outer, outer_offsets, outer_count = (csr(outer_rows) if sticky else (inner, inner_offsets, inner_count))
    previous, previous_offsets, _ = csr(previous_rows)
    previous_row = rng.permutation(m).astype(np.int64)
    previous_row[rng.random(m) < 0.1] = -1        # new viewers
    walk = rng.permutation(m).astype(np.int64)
    outs = []
    held = interest_module.SET_HANDLE   # the sets' handles; the walk's rows (advance_rows) come as int64
    for merged in (False, True):
        new = np.full(outer.size, -7, dtype=held)
        entered = np.full(inner.size, -7, dtype=held)
        left = np.full(previous.size, -7, dtype=held)
        counts = [np.full(m, -7, dtype=np.int64) for _ in range(3)]
        rows = held if merged else np.int64
        args = (inner.astype(rows), inner_offsets[:-1], inner_count, outer.astype(rows), outer_offsets[:-1],
                outer_count, sticky, read_only(previous, held), read_only(previous_offsets), previous_row,
                read_only(gone))
        previous_sizes = np.where(previous_row >= 0, np.diff(previous_offsets)[np.maximum(previous_row, 0)], 0)
        base = (np.concatenate([[0], np.cumsum(inner_count[walk])]), np.concatenate([[0], np.cumsum(previous_sizes[walk])]))
        at = [np.full(m, -7, dtype=np.int64) for _ in range(2)]
        events = (*base, *at)
        if merged:
            assert merge_rows(*args, new, counts[0], entered, counts[1], left, counts[2], events, walk, 0, m) == -1
        else:
            flags = np.zeros((bound + 3) // 4, dtype=np.uint8)
            assert advance_rows(*args, flags, new, counts[0], entered, counts[1], left, counts[2], events, walk,
                                0, m) == -1
            assert not flags.any()   # every row cleared its flags
        outs.append((new, entered, left, counts, at))
    (new_a, entered_a, left_a, counts_a, at_a), (new_b, entered_b, left_b, counts_b, at_b) = outs
    assert np.array_equal(counts_a[1], counts_b[1]) and np.array_equal(counts_a[2], counts_b[2])
    assert np.array_equal(at_a[0], at_b[0]) and np.array_equal(at_a[1], at_b[1])   # the same dense places
    for step, i in enumerate(walk):   # each viewer's events follow the previous step's, within the room so far
        e0, g0 = at_a[0][i], at_a[1][i]
        assert e0 + counts_a[1][i] <= base[0][step + 1] and g0 + counts_a[2][i] <= base[1][step + 1]
        if step:
            j = walk[step - 1]
            assert e0 == at_a[0][j] + counts_a[1][j] and g0 == at_a[1][j] + counts_a[2][j]
    for i in range(m):
        e0, g0, p = at_a[0][i], at_a[1][i], previous_row[i]
        assert np.array_equal(entered_a[e0:e0 + counts_a[1][i]], entered_b[e0:e0 + counts_b[1][i]])
        assert np.array_equal(left_a[g0:g0 + counts_a[2][i]], left_b[g0:g0 + counts_b[2][i]])
        assert set(entered_a[e0:e0 + counts_a[1][i]].tolist()) <= set(inner[inner_offsets[i]:inner_offsets[i + 1]].tolist())
        if p < 0:
            assert counts_a[2][i] == 0
        e0 = inner_offsets[i]
        if sticky:
            assert counts_a[0][i] == counts_b[0][i]
            w0 = outer_offsets[i]
            assert np.array_equal(new_a[w0:w0 + counts_a[0][i]], new_b[w0:w0 + counts_b[0][i]])
        else:   # the new set is the inner row itself; the stamped diff wrote it again, sorted
            assert np.array_equal(new_a[e0:e0 + counts_a[0][i]], inner[e0:inner_offsets[i + 1]])


@pytest.mark.parametrize("scale", ["far", "tiny"])
def test_grid_filter_keeps_its_range_tests_far_out_and_for_tiny_reaches(scale):
    """The grid's float filter drops its tests against the safe range of squared distances only where no
    distance can leave it (every coordinate below 2**500, the reach not tiny): coordinates near 2**501
    and reaches near 2**-490 still take the range tests, and the sets equal the exact model."""
    import culling.tree.inverted as inverted

    rng = np.random.default_rng(8)
    unit = 2.0 ** 460 if scale == "far" else 2.0 ** -500
    corner = 2.0 ** 501 if scale == "far" else 0.0
    im = InterestManager(2.0 ** 503 if scale == "far" else SIZE, dim=2)
    model = Model()
    centres = corner + rng.integers(0, 16, (30, 2)) * unit
    radii = rng.integers(0, 6, 30) * unit
    model.insert(im.insert_many(centres, radii), centres, radii)
    ids = np.arange(300)
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(inverted, "GRID_MIN_VIEWERS", 1)
        mp.setattr(inverted, "GRID_ENTITIES_PER_VIEWER", math.inf)
        for _ in range(2):
            pos = corner + rng.integers(0, 16, (ids.size, 2)) * unit
            pos[:30] = centres + np.array([0.6, 0.8]) * radii[:, None]   # on the surface: 3-4-5
            check_tick(im.tick(ids, pos), model.tick(ids.tolist(), pos), ids.tolist())


def test_events_packed_in_place_equal_those_packed_on_the_threads():
    """A tick's entered and left rows are packed on the calling thread below PARALLEL_MIN_COPIED handles,
    in chunks on the threads above: the same events either way (viewers given again in order too)."""
    import culling.uses.interest as interest_module

    rng = np.random.default_rng(9)
    centres, radii = rng.integers(0, 400, (400, 2)) / 2.0, rng.integers(0, 40, 400) / 2.0
    ticks = []
    for least in (0, 1 << 40):
        with pytest.MonkeyPatch.context() as mp:
            mp.setattr(interest_module, "PARALLEL_MIN_COPIED", least)
            mp.setattr(interest_module, "PARALLEL_MIN_VIEWERS", 8)
            im = InterestManager(256.0, dim=2)
            h = im.insert_many(centres, radii)
            step = np.random.default_rng(10)
            ids = np.arange(2000)
            out = []
            for _ in range(3):
                t = im.tick(ids, step.integers(0, 400, (ids.size, 2)) / 2.0)
                out.append((t.entered_offsets, t.entered, t.left_offsets, t.left))
                im.update_many(h[::3], step.integers(0, 400, (h[::3].size, 2)) / 2.0)
            ticks.append(out)
    for a, b in zip(*ticks):
        assert all(np.array_equal(x, y) for x, y in zip(a, b))
