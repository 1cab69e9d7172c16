"""VisibilityTracker against Python set arithmetic, bad input, forget and reset."""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule

from culling.uses.tracker import MultiCameraTracker, VisibilityEvents, VisibilityTracker


class ReferenceTracker:
    """The obvious per-object version: a dict handle -> band."""

    def __init__(self, band_edges=None):
        self.edges = band_edges
        self.state = {}

    def band(self, d):
        return 0 if self.edges is None else sum(1 for e in self.edges if e <= d)

    def update(self, handles, distances=None):
        new = {int(h): (self.band(float(d)) if distances is not None else 0)
               for h, d in zip(handles, distances if distances is not None else [None] * len(handles))}
        entered = sorted(set(new) - set(self.state))
        left = sorted(set(self.state) - set(new))
        changed = sorted(h for h in set(new) & set(self.state) if new[h] != self.state[h])
        self.state = new
        return entered, left, changed

    def forget(self, handles):
        for h in handles:
            self.state.pop(int(h), None)


def assert_same(tracker, ref, ev, expected):
    entered, left, changed = expected
    assert ev.entered.tolist() == entered
    assert ev.left.tolist() == left
    assert ev.band_changed.tolist() == changed
    for arr in (ev.entered, ev.left, ev.band_changed, ev.visible, ev.bands):
        assert arr.dtype == np.int64 and arr.ndim == 1
    check_state(tracker, ref)


def check_state(tracker, ref):
    keys = sorted(ref.state)
    assert tracker.visible.tolist() == keys
    assert tracker.bands.tolist() == [ref.state[h] for h in keys]
    assert len(tracker) == len(keys)


# -- brute-force comparison ----------------------------------------------------

@pytest.mark.parametrize("edges", [None, (), (50.0,), (10.0, 50.0, 200.0)])
def test_random_frames_match_set_arithmetic(rng, edges):
    tracker, ref = VisibilityTracker(edges), ReferenceTracker(edges)
    universe = 300
    for _ in range(150):
        n = int(rng.integers(0, 120))
        handles = rng.choice(universe, size=n, replace=False)
        distances = None
        if edges is not None:
            # Mostly continuous, sometimes exactly on an edge.
            distances = rng.uniform(0.0, 300.0, n)
            if len(edges) and n:
                on_edge = rng.random(n) < 0.1
                distances[on_edge] = rng.choice(edges, on_edge.sum())
        if rng.random() < 0.2:
            gone = rng.choice(universe, size=int(rng.integers(0, 40)), replace=False)
            tracker.forget(gone)
            ref.forget(gone)
            check_state(tracker, ref)
        ev = tracker.update(handles, distances)
        assert_same(tracker, ref, ev, ref.update(handles, distances))


frames = st.lists(
    st.dictionaries(st.integers(0, 40), st.floats(0.0, 100.0), max_size=25),
    max_size=12,
)


@given(frames, st.lists(st.lists(st.integers(0, 45), max_size=6), max_size=12))
def test_hypothesis_frames(frame_list, forgets):
    edges = (10.0, 20.0, 60.0)
    tracker, ref = VisibilityTracker(edges), ReferenceTracker(edges)
    for i, frame in enumerate(frame_list):
        if i < len(forgets):
            tracker.forget(forgets[i])
            ref.forget(forgets[i])
        handles, distances = list(frame), list(frame.values())
        ev = tracker.update(handles, distances)
        assert_same(tracker, ref, ev, ref.update(handles, distances))


def test_band_boundaries():
    tracker = VisibilityTracker(band_edges=(50.0, 200.0))
    ev = tracker.update([1, 2, 3, 4, 5], [0.0, 49.999, 50.0, 199.9, 200.0])
    assert ev.bands.tolist() == [0, 0, 1, 1, 2]
    assert tracker.n_bands == 3
    ev = tracker.update([1, 2, 3, 4, 5], [50.0, 49.0, 50.0, 1e9, 0.0])
    assert ev.band_changed.tolist() == [1, 4, 5]
    assert ev.entered.size == ev.left.size == 0
    assert ev.changed
    assert ev.bands_of([5, 1]).tolist() == [0, 1]
    assert tracker.bands_of([4]).tolist() == [2]
    with pytest.raises(KeyError, match="not visible"):
        tracker.bands_of([6])


def test_no_bands_means_band_zero_and_no_band_changes():
    tracker = VisibilityTracker()
    assert tracker.band_edges is None and tracker.n_bands == 1
    tracker.update([3, 1])
    ev = tracker.update([1, 3, 2])
    assert ev.entered.tolist() == [2] and ev.band_changed.size == 0
    assert ev.bands.tolist() == [0, 0, 0]
    assert not tracker.update([1, 2, 3]).changed


def test_events_aligned_and_sorted():
    tracker = VisibilityTracker((5.0,))
    ev = tracker.update(np.array([9, 2, 7], dtype=np.int32), np.array([1, 8, 3], dtype=np.float32))
    assert ev.visible.tolist() == [2, 7, 9]
    assert ev.bands.tolist() == [1, 0, 0]          # aligned with visible, not with input
    assert ev.visible is tracker.visible
    assert isinstance(ev, VisibilityEvents)


def test_accepts_lists_tuples_uint_and_empty():
    tracker = VisibilityTracker()
    assert tracker.update(()).entered.size == 0
    assert tracker.update(np.array([4, 2], dtype=np.uint64)).entered.tolist() == [2, 4]
    assert tracker.update([]).left.tolist() == [2, 4]
    assert tracker.update(np.empty(0, dtype=np.int64)).left.size == 0
    banded = VisibilityTracker((1.0,))
    assert banded.update([], []).entered.size == 0
    assert banded.update(np.int64(5), 3.0).entered.tolist() == [5]


# -- returned arrays -----------------------------------------------------------

def test_returned_arrays_are_read_only_or_stable():
    tracker = VisibilityTracker((10.0,))
    ev1 = tracker.update([1, 2, 3], [1.0, 20.0, 5.0])
    visible1 = tracker.visible
    with pytest.raises(ValueError):
        visible1[0] = 99
    with pytest.raises(ValueError):
        tracker.bands[0] = 5
    snapshot = (ev1.entered.copy(), ev1.visible.copy(), ev1.bands.copy())
    tracker.update([2, 4], [1.0, 1.0])
    tracker.forget([2])
    assert np.array_equal(ev1.entered, snapshot[0])
    assert np.array_equal(ev1.visible, snapshot[1]) and np.array_equal(visible1, snapshot[1])
    assert np.array_equal(ev1.bands, snapshot[2])


# -- forget and reset ----------------------------------------------------------

def test_forget_leaves_no_left_event_and_reused_handle_enters_again():
    tracker = VisibilityTracker()
    tracker.update([1, 2, 3])
    tracker.forget([2, 99, 2])                       # unknown and repeated are ignored
    assert tracker.visible.tolist() == [1, 3]
    assert 2 not in tracker and 1 in tracker
    ev = tracker.update([1, 3])
    assert ev.left.size == 0 and ev.entered.size == 0
    ev = tracker.update([1, 2, 3])                   # the tree reused handle 2
    assert ev.entered.tolist() == [2]
    tracker.forget([])
    tracker.forget(np.int64(1))
    assert tracker.visible.tolist() == [2, 3]


def test_forget_with_removed_tree_objects():
    culling = pytest.importorskip("culling")
    tree = culling.ViewDistanceTree(size=64.0, dim=2)
    tracker = VisibilityTracker()
    rng = np.random.default_rng(3)
    handles = tree.insert_many(rng.uniform(0, 64, (200, 2)), rng.uniform(1, 20, 200))
    camera = np.array([32.0, 32.0])
    first = tracker.update(tree.query(camera, exact=True))
    gone = first.visible[::3].copy()
    tree.remove_many(gone)
    tracker.forget(gone)
    ev = tracker.update(tree.query(camera, exact=True))
    assert ev.left.size == 0 and ev.entered.size == 0
    assert not np.isin(gone, tracker.visible).any()
    assert np.isin(tracker.visible, handles).all()


def test_reset():
    tracker = VisibilityTracker((1.0,))
    tracker.update([5, 6], [0.0, 2.0])
    tracker.reset()
    assert len(tracker) == 0 and tracker.visible.size == 0 and tracker.bands.size == 0
    ev = tracker.update([5], [0.0])
    assert ev.entered.tolist() == [5] and ev.left.size == 0


# -- bad input -----------------------------------------------------------------

def snapshot(tracker):
    return tracker.visible.tolist(), tracker.bands.tolist()


@pytest.mark.parametrize("handles, error, match", [
    ([1.0, 2.0], TypeError, "integers"),
    (["a"], TypeError, "integers"),
    ([True, False], TypeError, "integers"),
    ([[1, 2]], ValueError, r"shape \(n,\)"),
    ([1, 2, 1], ValueError, "unique, handle 1"),
    ([3, -1], ValueError, "negative"),
])
def test_bad_handles_change_nothing(handles, error, match):
    tracker = VisibilityTracker()
    tracker.update([1, 2])
    before = snapshot(tracker)
    with pytest.raises(error, match=match):
        tracker.update(handles)
    assert snapshot(tracker) == before


@pytest.mark.parametrize("distances, match", [
    (None, "distances are required"),
    ([1.0], r"shape \(2,\)"),
    ([1.0, 2.0, 3.0], r"shape \(2,\)"),
    ([1.0, float("nan")], "finite"),
    ([1.0, float("inf")], "finite"),
    ([1.0, -2.0], "negative"),
    ([[1.0, 2.0]], r"shape \(2,\)"),
])
def test_bad_distances_change_nothing(distances, match):
    tracker = VisibilityTracker((10.0,))
    tracker.update([1, 2], [1.0, 20.0])
    before = snapshot(tracker)
    with pytest.raises(ValueError, match=match):
        tracker.update([2, 3], distances)
    assert snapshot(tracker) == before


def test_distances_without_bands_is_an_error():
    tracker = VisibilityTracker()
    tracker.update([1])
    with pytest.raises(ValueError, match="no band_edges"):
        tracker.update([1, 2], [1.0, 2.0])
    assert tracker.visible.tolist() == [1]


def test_bad_forget_changes_nothing():
    tracker = VisibilityTracker()
    tracker.update([1, 2])
    with pytest.raises(TypeError, match="integers"):
        tracker.forget([1.5])
    assert tracker.visible.tolist() == [1, 2]


@pytest.mark.parametrize("edges, match", [
    ((50.0, 50.0), "strictly increasing"),
    ((200.0, 50.0), "strictly increasing"),
    ((float("nan"),), "finite"),
    ((1.0, float("inf")), "finite"),
    ([[1.0, 2.0]], "1-D"),
    (("near", "far"), "numbers"),
    (5.0, "1-D"),
])
def test_bad_band_edges(edges, match):
    with pytest.raises(ValueError, match=match):
        VisibilityTracker(edges)
    with pytest.raises(ValueError, match=match):
        MultiCameraTracker(edges)


# -- many cameras --------------------------------------------------------------

def test_multi_camera_tracker_keeps_cameras_apart(rng):
    cams = MultiCameraTracker(band_edges=(30.0,))
    refs = {"a": ReferenceTracker((30.0,)), 7: ReferenceTracker((30.0,))}
    for _ in range(30):
        for cam, ref in refs.items():
            handles = rng.choice(60, size=int(rng.integers(0, 30)), replace=False)
            distances = rng.uniform(0, 60, handles.size)
            ev = cams.update(cam, handles, distances)
            assert_same(cams[cam], ref, ev, ref.update(handles, distances))
        gone = rng.choice(60, size=3, replace=False)
        cams.forget(gone)
        for ref in refs.values():
            ref.forget(gone)
    assert set(cams) == {"a", 7} and len(cams) == 2 and "a" in cams
    cams.remove_camera("a")
    cams.remove_camera("missing")
    assert "a" not in cams
    cams.reset()
    assert len(cams) == 0


def test_reading_a_camera_registers_nothing():
    cams = MultiCameraTracker()
    cams.update("a", [1])
    with pytest.raises(KeyError, match="first update"):
        cams["typo"]
    assert "typo" not in cams and list(cams) == ["a"] and len(cams) == 1
    cams.remove_camera("a")
    with pytest.raises(KeyError):
        cams["a"]


def test_large_update_is_vectorised():
    # 200k handles per frame: a per-object Python loop would take seconds.
    rng = np.random.default_rng(0)
    tracker = VisibilityTracker((100.0, 500.0))
    handles = rng.permutation(400_000)[:200_000]
    tracker.update(handles, rng.uniform(0, 1000, handles.size))
    shifted = handles + 1000
    ev = tracker.update(shifted, rng.uniform(0, 1000, handles.size))
    expected_entered = np.setdiff1d(shifted, handles)
    assert np.array_equal(ev.entered, expected_entered)
    assert np.array_equal(ev.left, np.setdiff1d(handles, shifted))


def test_copies_hand_out_read_only_arrays_as_the_original_does():
    """A pickled or deep-copied tracker (and its events, and an interest tick) keeps its arrays read-only:
    a caller writing into a copy's ``visible`` broke its sorted state (``99 in copy`` was False)."""
    import copy
    import pickle

    from culling import InterestManager

    tracker = VisibilityTracker(band_edges=(5.0,))
    events = tracker.update([3, 1], distances=[1.0, 7.0])
    cams = MultiCameraTracker(band_edges=(5.0,))
    cams.update("a", [2], distances=[1.0])
    manager = InterestManager(64.0, dim=2)
    manager.insert_many([[1.0, 1.0]], [5.0])
    tick = manager.tick([7], [[1.0, 2.0]])
    for make in (lambda x: pickle.loads(pickle.dumps(x)), copy.deepcopy):
        twin = make(tracker)
        assert not any(a.flags.writeable for a in (twin.visible, twin.bands, twin.band_edges))
        with pytest.raises(ValueError, match="read-only"):
            twin.visible[0] = 99
        assert twin.update([3], distances=[6.0]).left.tolist() == [1] and tracker.visible.tolist() == [1, 3]
        assert not any(getattr(make(events), name).flags.writeable for name in ("visible", "bands"))
        cams_twin = make(cams)
        cams_twin.update("b", [], distances=[])  # a camera the copy makes
        assert not cams_twin["a"].visible.flags.writeable and not cams_twin["b"].band_edges.flags.writeable
        assert not any(getattr(make(tick), name).flags.writeable
                       for name in ("viewer_ids", "entered_offsets", "entered", "left_offsets", "left"))


def test_a_shallow_copy_of_the_cameras_is_independent():
    import copy

    cams = MultiCameraTracker()
    cams.update("a", [1, 2])
    twin = copy.copy(cams)
    assert twin.update("a", [2]).left.tolist() == [1] and "b" not in cams
    twin.update("b", [3])
    assert cams["a"].visible.tolist() == [1, 2] and "b" not in cams


def test_in_takes_one_integer_handle_as_a_structures_in_does():
    """``[1] in tracker`` was True (a one-element list read as its element); ``in`` now answers for integers
    only, as ``handle in tree`` does: anything else is simply not visible."""
    from culling import VisibilityTracker

    tracker = VisibilityTracker()
    tracker.update([1, 5])
    assert 1 in tracker and np.int64(5) in tracker and np.uint8(5) in tracker
    for other in ([1], (5,), np.array([1]), 1.0, True, "1", None, 2**70, -1, 2):
        assert other not in tracker


class MultiCameraMachine(RuleBasedStateMachine):
    """MultiCameraTracker against one :class:`ReferenceTracker` per camera, over every call it has: updates
    (with distances on and beside the band edges), ``forget``, ``remove_camera`` (known and unknown ids)
    and ``reset``, in any order; each camera's events and state checked after every step."""

    EDGES = (10.0, 20.0, 60.0)

    def __init__(self) -> None:
        super().__init__()
        self.cams = MultiCameraTracker(self.EDGES)
        self.refs: dict[str, ReferenceTracker] = {}

    @rule(camera=st.sampled_from(["a", "b", "c"]),
          frame=st.dictionaries(st.integers(0, 30), st.one_of(st.sampled_from(EDGES), st.floats(0.0, 100.0)),
                                max_size=15))
    def update(self, camera, frame):
        handles, distances = list(frame), list(frame.values())
        ref = self.refs.setdefault(camera, ReferenceTracker(self.EDGES))
        ev = self.cams.update(camera, handles, distances)
        assert_same(self.cams[camera], ref, ev, ref.update(handles, distances))

    @rule(handles=st.lists(st.integers(0, 35), max_size=8))
    def forget(self, handles):
        self.cams.forget(handles)
        for ref in self.refs.values():
            ref.forget(handles)

    @rule(camera=st.sampled_from(["a", "b", "c", "never seen"]))
    def remove_camera(self, camera):
        self.cams.remove_camera(camera)
        self.refs.pop(camera, None)

    @rule()
    def reset(self):
        self.cams.reset()
        self.refs.clear()

    @invariant()
    def every_camera_agrees(self):
        assert sorted(self.cams) == sorted(self.refs) and len(self.cams) == len(self.refs)
        for camera, ref in self.refs.items():
            check_state(self.cams[camera], ref)
        for camera in {"a", "b", "c"} - set(self.refs):
            assert camera not in self.cams
            with pytest.raises(KeyError):
                self.cams[camera]


TestMultiCameraMachine = MultiCameraMachine.TestCase
