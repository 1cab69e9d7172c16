"""What a newcomer met using the installed wheel at the contract's edges (docs/CONTRACT.md): each test
is one finding, fixed.  Records compare by value, rows index as lists do, misspelt groups and empty
boxes are refused, a root corner at inf and a long double beyond float64 are ``ValueError``s."""

from __future__ import annotations

import copy
import pickle
import warnings

import numpy as np
import pytest

import culling
from culling.uses.tracker import VisibilityTracker


def _tree() -> culling.ViewDistanceTree:
    tree = culling.ViewDistanceTree(64.0, dim=2)
    tree.insert_many([[1.0, 1.0], [40.0, 40.0], [3.0, 2.0]], [20.0, 3.0, 5.0])
    return tree


def test_a_detailed_query_equals_its_trace_and_itself_by_value():
    """CONTRACT: ``query_detailed``'s trace equals ``trace(point)``; ``==`` on the records raised ValueError
    (a dataclass compares its fields as a tuple, and a tuple of arrays has no truth value)."""
    tree = _tree()
    details = tree.query_detailed((2.0, 2.0), trace=True)
    assert details.trace == tree.trace((2.0, 2.0))
    assert details.trace.levels[0] == tree.trace((2.0, 2.0)).levels[0]
    assert details == tree.query_detailed((2.0, 2.0), trace=True)
    assert details == pickle.loads(pickle.dumps(details)) == copy.deepcopy(details)
    assert details != tree.query_detailed((3.0, 2.0), trace=True)  # other distances
    assert details.trace != tree.trace((41.0, 41.0))
    assert details != tree.query_detailed((2.0, 2.0))  # no trace against a trace
    assert details != "details" and details.trace != details
    with pytest.raises(TypeError, match="unhashable"):
        hash(details)


def test_ticks_and_visibility_events_compare_by_value():
    manager = culling.InterestManager(size=64.0, dim=2)
    manager.insert_many([[1.0, 1.0], [10.0, 10.0]], [5.0, 5.0])
    other = copy.deepcopy(manager)
    tick = manager.tick([7, 9], [[1.0, 1.0], [10.0, 10.0]])
    assert tick == other.tick([7, 9], [[1.0, 1.0], [10.0, 10.0]])
    assert tick != manager.tick([7, 9], [[1.0, 1.0], [10.0, 10.0]])  # nothing entered the second time
    first, second = VisibilityTracker(), VisibilityTracker()
    assert first.update([3, 1]) == second.update([1, 3])
    assert first.update([1]) != second.update([1, 3])


def test_a_ticks_rows_index_as_a_list_does():
    """``entered_of(-1)`` gave nothing and ``entered_of(-2)`` the last row (slices of the offsets)."""
    manager = culling.InterestManager(size=64.0, dim=2)
    manager.insert_many([[1.0, 1.0], [10.0, 10.0]], [5.0, 5.0])
    tick = manager.tick([7, 9], [[1.0, 1.0], [10.0, 10.0]])
    rows = [tick.entered_of(r).tolist() for r in range(2)]
    assert rows == [[0], [1]]
    assert [tick.entered_of(r).tolist() for r in (-2, -1)] == rows
    assert tick.entered_of(np.int64(-1)).tolist() == [1] and tick.left_of(-1).tolist() == []
    for row in (2, -3, 2**70):
        with pytest.raises(IndexError, match="out of range for 2 viewers"):
            tick.entered_of(row)
        with pytest.raises(IndexError, match="out of range for 2 viewers"):
            tick.left_of(row)
    for row in (1.0, "0", None):
        with pytest.raises(TypeError, match="row must be an integer"):
            tick.entered_of(row)  # type: ignore[arg-type]


def test_kernels_cached_refuses_a_group_that_does_not_exist():
    """A misspelt group read as "not cached": a program then said "compiling" and warm_up failed."""
    with pytest.raises(ValueError, match="unknown warm-up group 'tre'"):
        culling.kernels_cached(["tre"])
    assert isinstance(culling.kernels_cached(["tree"]), bool)


def test_node_boxes_refuses_an_empty_box():
    tree = _tree()
    with pytest.raises(ValueError, match=r"lo exceeds hi on axis 1 \(5.0 > 4.0\)"):
        tree.node_boxes((1.0, 5.0), (10.0, 4.0))
    depths, bounds = tree.node_boxes((5.0, 5.0), (5.0, 5.0))  # a point is a box
    assert depths.size and np.all(bounds[:, 0] <= 5.0) and np.all(bounds[:, 1] >= 5.0)


def test_the_grids_levels_are_read_only_and_node_count_is_as_documented():
    grid = culling.DenseViewDistanceGrid(64.0, dim=2, min_radius=1.0)
    for name, value in (("finest_level", 2), ("min_radius", 8.0)):
        with pytest.raises(AttributeError):
            setattr(grid, name, value)
    assert (grid.finest_level, grid.min_radius) == (4, 1.0)
    assert grid.node_count == 0 and culling.ViewDistanceTree(64.0, dim=2).node_count == 1
    grid.insert((2.0, 2.0), 0.5)
    assert grid.node_count == 1 and grid.level_counts.size == grid.finest_level + 1
    made = culling.DenseViewDistanceGrid(np.array(64.0), dim=2, min_radius=np.array(1.0))
    assert (made.finest_level, made.min_radius) == (4, 1.0)


@pytest.mark.parametrize("make", [culling.ViewDistanceTree, culling.DenseViewDistanceGrid])
def test_a_root_whose_far_corner_overflows_is_refused(make):
    with pytest.raises(ValueError, match=r"origin \+ size must be finite"):
        make(1e308, origin=(1e308, 0.0), dim=2)
    with pytest.raises(ValueError, match=r"origin \+ size must be finite"):
        culling.CollisionCandidates(0.5, 1.7e308, origin=(0.0, 1.7e308), dim=2)
    lo, hi = make(1e308, origin=(-1e308, 0.0), dim=2).root_bounds if make is culling.ViewDistanceTree \
        else (np.array([-1e308, 0.0]), np.array([0.0, 1e308]))
    assert np.isfinite(hi).all() and np.isfinite(lo).all()


@pytest.mark.skipif(np.finfo(np.longdouble).max <= np.finfo(np.float64).max, reason="long double is float64 here")
def test_a_long_double_beyond_float64_is_a_value_error_not_a_warning():
    """NumPy warned "overflow encountered in cast" from inside culling first: with warnings as errors the
    warning was raised in place of the documented ValueError."""
    huge = np.longdouble("1e4000")
    tree = _tree()
    before = tree.handles().tolist()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(ValueError, match="radius must be finite"):
            tree.insert((0.0, 0.0), huge)
        with pytest.raises(ValueError, match="not finite"):
            tree.insert_many(np.array([[huge, 0.0]]), np.array([1.0]))
        with pytest.raises(ValueError, match="not finite"):
            tree.query_many(np.array([[huge, 0.0]]))
        assert tree.insert((np.longdouble(1.5), 0.0), np.longdouble(2.0)) == 3  # one that fits is taken
    assert tree.handles().tolist() == before + [3]


@pytest.mark.parametrize("handles", [[0, 2**70], np.array([0, 2**64 - 1], dtype=np.uint64)])
def test_a_handle_beyond_int64_is_named_by_its_row(handles):
    tree = _tree()
    with pytest.raises(KeyError, match=r"is not in the structure \(handles\[1\]: beyond int64\)"):
        tree.remove_many(handles)
    assert len(tree) == 3


def test_collision_candidates_store_the_bounding_radius_and_probe_with_the_probe():
    """CONTRACT said each object is stored with radius ``bounding + probe``; it is stored with its bounding
    radius and asked with the probe's, so changing the probe moves nothing."""
    cc = culling.CollisionCandidates(probe_radius=0.5, size=64.0, dim=2)
    h = cc.insert((1.0, 1.0), 1.0)
    assert cc.tree.radius(h) == 1.0
    assert cc.touching((2.5, 1.0)).tolist() == [h]  # exactly bounding + probe away
    assert cc.touching((2.5 + 2.0**-40, 1.0)).size == 0
    cc.set_probe_radius(2.0)
    assert cc.tree.radius(h) == 1.0 and cc.touching((4.0, 1.0)).tolist() == [h]


def test_root_members_are_candidates_everywhere_and_the_rest_keep_the_6r_bound():
    """CONTRACT's cost bound: a member below the root is never a candidate 6 r away; the root, visited by
    every query, hands its members (r >= a quarter of its edge) to every point, for the exact test."""
    tree = culling.ViewDistanceTree(64.0, dim=2)
    root_member = tree.insert((1.0, 1.0), 16.0)
    below = tree.insert((1.0, 1.0), 15.0)
    assert tree.node_of(root_member)[0] == 0 and tree.node_of(below)[0] == 1
    for point in [(200.0, 1.0), (1e6, 1.0), (-1e9, -1e9)]:
        assert tree.query(point).tolist() == [root_member]
        assert tree.query(point, exact=True).size == 0
    assert below not in tree.query((1.0 + 6 * 15.0, 1.0)).tolist()


def test_a_query_while_another_thread_imports_numpy_ma_answers(monkeypatch):
    """The input check read ``numpy.ma.MaskedArray`` off ``sys.modules`` while another thread's first import
    of ``numpy.ma`` (``np.unique`` makes one; ``InterestManager.remove_many`` calls it) had only begun:
    ``AttributeError: partially initialized module 'numpy.ma'`` from a plain query, 29 runs in 30.  The
    half-made module stands in for that moment here."""
    import sys
    import types

    tree = _tree()
    manager = culling.InterestManager(size=64.0, dim=2)
    manager.insert_many([[1.0, 1.0]], [5.0])
    monkeypatch.setitem(sys.modules, "numpy.ma", types.ModuleType("numpy.ma"))  # no MaskedArray yet
    assert tree.query((2.0, 2.0), exact=True).tolist() == [0, 2]
    assert tree.query_many([(2.0, 2.0)], exact=True)[0].tolist() == [0, 2]
    assert manager.tick([1], [[1.0, 1.0]]).entered.tolist() == [0]
    assert VisibilityTracker().update([3, 1]).visible.tolist() == [1, 3]
    monkeypatch.undo()
    masked = np.ma.masked_array([[1.0, 1.0]], mask=[[False, True]])
    with pytest.raises(TypeError, match="masked"):
        tree.insert_many(masked, [1.0])  # a real masked array is still refused
    assert len(tree) == 3
