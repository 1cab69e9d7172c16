"""VisibilityTracker(hysteresis=m): enter at the view distance, leave beyond it times (1 + m).

Checked against a plain-Python model over random frame sequences (hypothesis),
with distances generated on purpose at the two edges, and with a tree: an
object circling at the edge of its view distance produces one event, not one
per frame.
"""

import math
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from culling import ViewDistanceTree
from culling.uses.tracker import MultiCameraTracker, VisibilityTracker


class Model:
    """The rule, object by object, in exact arithmetic: leave beyond ``v * s``, ``s`` the float ``1.0 + m``,
    the product unrounded."""

    def __init__(self, margin: float) -> None:
        self.margin = margin
        self.visible: set[int] = set()

    def update(self, handles, distances, views):
        now = set()
        for h, d, v in zip(handles, distances, views):
            if d <= v or (h in self.visible and Fraction(d) <= Fraction(v) * Fraction(1.0 + self.margin)):
                now.add(h)
        entered, left = sorted(now - self.visible), sorted(self.visible - now)
        self.visible = now
        return entered, left


@st.composite
def frames(draw):
    margin = draw(st.sampled_from([0.0, 0.05, 0.25, 1.0]))
    n = draw(st.integers(1, 12))
    views = draw(st.lists(st.sampled_from([0.0, 1.0, 10.0, 37.5, 100.0]), min_size=n, max_size=n))
    steps = []
    for _ in range(draw(st.integers(1, 12))):
        chosen = draw(st.lists(st.integers(0, n - 1), unique=True, max_size=n))
        ds = []
        for h in chosen:
            v = views[h]
            # Exactly at each edge, just beyond each, well inside, far, and anywhere.
            outer = v * (1.0 + margin)
            edge = draw(st.sampled_from([v, outer, v * (1.0 + 1e-15) + 1e-300, outer * (1.0 + 1e-15) + 1e-300,
                                         math.nextafter(outer, math.inf), math.nextafter(outer, 0.0),
                                         0.5 * v, 3.0 * v + 1.0]))
            ds.append(float(draw(st.one_of(st.just(edge), st.floats(0.0, 300.0)))))
        steps.append((chosen, ds))
    return margin, views, steps


@given(frames())
def test_against_the_model(case):
    margin, views, steps = case
    tracker, model = VisibilityTracker(hysteresis=margin), Model(margin)
    for chosen, ds in steps:
        v = [views[h] for h in chosen]
        ev = tracker.update(np.array(chosen, dtype=np.int64), distances=ds, view_distances=v)
        entered, left = model.update(chosen, ds, v)
        assert ev.entered.tolist() == entered
        assert ev.left.tolist() == left
        assert ev.visible.tolist() == sorted(model.visible)


@given(frames())
def test_each_camera_keeps_its_own_margin_state(case):
    margin, views, steps = case
    cams = MultiCameraTracker(hysteresis=margin)
    models = {"a": Model(margin), "b": Model(margin)}
    for i, (chosen, ds) in enumerate(steps):
        cam = "ab"[i % 2]
        v = [views[h] for h in chosen]
        ev = cams.update(cam, chosen, ds, v)
        entered, left = models[cam].update(chosen, ds, v)
        assert (ev.entered.tolist(), ev.left.tolist()) == (entered, left)
    assert cams.query_scale == 1.0 + margin


def test_no_flicker_at_the_edge_with_a_tree():
    """An object whose distance wobbles around its view distance: without a margin it
    enters and leaves every other frame; with 5 % it enters once and stays."""
    tree = ViewDistanceTree(size=1024.0, origin=(-512.0, -512.0, -512.0))
    centres = np.array([[0.0, 0.0, 0.0], [300.0, 0.0, 0.0]])
    views = np.array([100.0, 50.0])
    handles = tree.insert_many(centres, views)
    plain, sticky = VisibilityTracker(), VisibilityTracker(hysteresis=0.05)
    plain_events = sticky_events = 0
    for frame in range(20):
        camera = np.array([100.0 + (1.0 if frame % 2 else -1.0), 0.0, 0.0])
        ev = plain.update(tree.query(camera, exact=True))
        plain_events += ev.entered.size + ev.left.size
        found = tree.query(camera, scale=sticky.query_scale)
        d = np.linalg.norm(tree.centres_of(found) - camera, axis=1)
        ev = sticky.update(found, distances=d, view_distances=tree.radii_of(found))
        sticky_events += ev.entered.size + ev.left.size
    assert plain_events == 20
    assert sticky_events == 1
    assert sticky.visible.tolist() == [int(handles[0])]
    # Beyond the margin it leaves.
    camera = np.array([106.0, 0.0, 0.0])
    found = tree.query(camera, scale=sticky.query_scale)
    d = np.linalg.norm(tree.centres_of(found) - camera, axis=1)
    assert sticky.update(found, d, tree.radii_of(found)).left.tolist() == [int(handles[0])]


def test_bands_follow_the_kept_objects():
    tracker = VisibilityTracker(band_edges=(10.0,), hysteresis=0.5)
    ev = tracker.update([1, 2, 3], distances=[5.0, 20.0, 40.0], view_distances=[30.0, 30.0, 30.0])
    assert ev.visible.tolist() == [1, 2] and ev.bands.tolist() == [0, 1]
    ev = tracker.update([1, 2, 3], distances=[40.0, 44.0, 44.0], view_distances=[30.0, 30.0, 30.0])
    assert ev.visible.tolist() == [1, 2] and ev.bands.tolist() == [1, 1]
    assert ev.left.tolist() == [] and ev.band_changed.tolist() == [1]


def test_margin_zero_with_view_distances_is_the_plain_filter():
    tracker = VisibilityTracker()
    ev = tracker.update([4, 5], distances=[10.0, 10.0], view_distances=[10.0, 9.999])
    assert ev.visible.tolist() == [4]


@pytest.mark.parametrize("bad, error", [(-0.1, ValueError), (float("nan"), ValueError), (float("inf"), ValueError),
                                        (True, TypeError), ("0.1", TypeError), (None, TypeError), (1j, TypeError)])
def test_bad_margin(bad, error):
    with pytest.raises(error, match="hysteresis"):
        VisibilityTracker(hysteresis=bad)
    with pytest.raises(error, match="hysteresis"):
        MultiCameraTracker(hysteresis=bad)


def test_bad_updates_change_nothing():
    tracker = VisibilityTracker(hysteresis=0.1)
    tracker.update([1, 2], distances=[1.0, 2.0], view_distances=[5.0, 5.0])
    before = tracker.visible.tolist()
    with pytest.raises(ValueError, match="view_distances"):
        tracker.update([1, 2])                                           # margin needs them
    with pytest.raises(ValueError, match="view_distances"):
        tracker.update([1, 2], distances=[1.0, 2.0])
    with pytest.raises(ValueError, match="distances"):
        tracker.update([1, 2], view_distances=[5.0, 5.0])
    with pytest.raises(ValueError, match="view_distances"):
        tracker.update([1, 2], distances=[1.0, 2.0], view_distances=[5.0])
    with pytest.raises(ValueError, match="view_distances"):
        tracker.update([1, 2], distances=[1.0, 2.0], view_distances=[5.0, float("nan")])
    with pytest.raises(ValueError, match="unique"):
        tracker.update([1, 1], distances=[1.0, 2.0], view_distances=[5.0, 5.0])
    assert tracker.visible.tolist() == before
    assert repr(tracker).startswith("VisibilityTracker(band_edges=None, hysteresis=0.1")


def test_the_leave_edge_is_the_unrounded_product_as_the_interest_managers():
    """``v * (1 + m)`` rounds: a distance one ulp beyond the exact product stayed visible against the
    rounded one, where ``InterestManager`` (the same rule) let it leave."""
    from culling import InterestManager

    tracker = VisibilityTracker(hysteresis=0.1)
    tracker.update([1], distances=[100.0], view_distances=[100.0])
    beyond = 110.00000000000001                    # > 100 * 1.100000000000000088..., the float below rounds to it
    assert Fraction(beyond) > Fraction(100.0) * Fraction(1.1) and 100.0 * 1.1 == beyond
    assert tracker.update([1], distances=[beyond], view_distances=[100.0]).left.tolist() == [1]
    manager = InterestManager(size=1024.0, dim=1, hysteresis=0.1)
    manager.insert_many([0.0], [100.0])
    manager.tick([1], [[100.0]])
    assert manager.tick([1], [[beyond]]).left.tolist() == [0]
    huge = VisibilityTracker(hysteresis=1e308)    # the product overflows: inside, and no warning
    huge.update([1], distances=[1.0], view_distances=[2.0])
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert huge.update([1], distances=[1e300], view_distances=[2.0]).left.tolist() == []
