"""Reliability under hostile numbers and faults: growth past the floats, memory
given back, bounded scratch, and the small contract points."""

from __future__ import annotations

import copy
import os
import pickle
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from brute_force import FailAt

from culling import DenseViewDistanceGrid, ViewDistanceTree


def test_root_growth_past_the_largest_float_is_a_value_error_that_changes_nothing():
    tree = ViewDistanceTree(1.7e308, origin=(-8.5e307,), dim=1)
    h = tree.insert(1.0, 1.0)
    before = (tree.root_level, tree.node_count, len(tree))
    with pytest.raises(ValueError, match="beyond the largest float"):
        tree.insert(0.0, 1.7e308)
    with pytest.raises(ValueError, match="beyond the largest float"):
        tree.insert_many([[0.0], [2.0]], [1.0, 1.7e308])
    assert (tree.root_level, tree.node_count, len(tree)) == before
    tree.check_invariants()
    levels = tree.trace(0.0).levels
    assert all(np.isfinite(level.node_size) for level in levels)
    assert tree.query(1.0, exact=True).tolist() == [h]
    h2 = tree.insert(0.0, 5e307)  # the largest radius class the finite root holds
    tree.check_invariants()
    assert sorted(tree.query(0.0, exact=True).tolist()) == sorted([h, h2])
    assert all(np.isfinite(level.node_size) for level in tree.trace(0.0).levels)


def test_root_growth_that_stays_finite_still_grows():
    tree = ViewDistanceTree(1e307, origin=(0.0, 0.0), dim=2)
    tree.insert((1.0, 1.0), 1.0)
    h = tree.insert((-1e307, 5e307), 3e307)  # a few levels up, edges still finite
    assert tree.root_level < 0 and all(np.isfinite(level.node_size) for level in tree.trace((0.0, 0.0)).levels)
    tree.check_invariants()
    assert h in tree.query((-1e307, 5e307), exact=True).tolist()


# ----------------------------------------------------------------------
# Small cases: single calls under faults, and update_many's radii default

STRUCTURES = ("tree", "grid")


def _make(kind: str, dim: int = 2):
    if kind == "tree":
        return ViewDistanceTree(100.0, dim=dim)
    return DenseViewDistanceGrid(100.0, dim=dim, min_radius=0.5)


@pytest.mark.parametrize("kind", STRUCTURES)
def test_uint64_handles_mixed_with_other_integers(kind):
    s = _make(kind)
    hs = s.insert_many([[1.0, 1.0], [2.0, 2.0], [3.0, 3.0]], [1.0, 1.0, 1.0])
    mixed = [np.uint64(hs[0]), int(hs[1]), np.int32(hs[2])]
    s.update_many(mixed, [[4.0, 4.0], [5.0, 5.0], [6.0, 6.0]], [1.0, 1.0, 1.0])
    assert s.centres_of(mixed).tolist() == [[4.0, 4.0], [5.0, 5.0], [6.0, 6.0]]
    s.remove_many(mixed)
    assert len(s) == 0
    s.check_invariants()


@pytest.mark.parametrize("kind", STRUCTURES)
def test_copy_is_independent_and_deepcopy_and_pickle_still_work(kind):
    s = _make(kind)
    hs = s.insert_many([[1.0, 1.0], [20.0, 20.0]], [1.0, 2.0])
    for clone in (copy.copy(s), copy.deepcopy(s), pickle.loads(pickle.dumps(s))):
        clone.update(int(hs[0]), (50.0, 50.0), 3.0)
        clone.remove(int(hs[1]))
        clone.insert((70.0, 70.0), 1.0)
        clone.check_invariants()
        s.check_invariants()
        assert s.centres_of(hs).tolist() == [[1.0, 1.0], [20.0, 20.0]]
        assert len(s) == 2 and s.query((1.0, 1.0), exact=True).tolist() == [hs[0]]


@pytest.mark.parametrize("kind", STRUCTURES)
@pytest.mark.parametrize("name, value", [("size", 1.0), ("origin", np.ones(2)), ("dim", 3), ("shape", "cube")])
def test_constructor_choices_are_read_only(kind, name, value):
    s = _make(kind)
    before = getattr(s, name)
    with pytest.raises(AttributeError):
        setattr(s, name, value)
    assert np.array_equal(getattr(s, name), before)


@pytest.mark.parametrize("kind", STRUCTURES)
@pytest.mark.parametrize("exact", ["yes", 1, 0, None, 1.0, np.array([True])])
def test_non_bool_exact_is_a_type_error(kind, exact):
    s = _make(kind)
    s.insert((1.0, 1.0), 1.0)
    for call in (lambda: s.query((1.0, 1.0), exact=exact),
                 lambda: s.query_many([(1.0, 1.0)], exact=exact),
                 lambda: s.query_spheres((1.0, 1.0), exact=exact)):
        with pytest.raises(TypeError, match="exact must be True or False"):
            call()
    assert s.query((1.0, 1.0), exact=np.bool_(True)).tolist() == [0]


@pytest.mark.parametrize("kind", STRUCTURES)
def test_batch_errors_name_the_bad_row(kind):
    s = _make(kind)
    centres = np.ones((80, 2))
    centres[57, 1] = np.nan
    with pytest.raises(ValueError, match=r"centres\[57\] is not finite"):
        s.insert_many(centres, np.ones(80))
    radii = np.ones(80)
    radii[12] = -1.0
    with pytest.raises(ValueError, match=r"radii\[12\] is negative"):
        s.insert_many(np.ones((80, 2)), radii)
    hs = s.insert_many(np.ones((5, 2)), np.ones(5))
    with pytest.raises(KeyError, match=r"handles\[3\]"):
        s.remove_many([hs[0], hs[1], hs[2], 999, hs[4]])
    with pytest.raises(ValueError, match=r"handles\[1\] and handles\[4\]"):
        s.update_many([hs[0], hs[1], hs[2], hs[3], hs[1]], np.ones((5, 2)), np.ones(5))
    assert len(s) == 5
    s.check_invariants()


@pytest.mark.parametrize("kind", STRUCTURES)
def test_update_many_without_radii_keeps_the_stored_radii(kind):
    s = _make(kind)
    hs = s.insert_many([[1.0, 1.0], [20.0, 20.0], [40.0, 40.0]], [0.5, 2.0, 9.0])
    s.update_many(hs[[2, 0]], [[41.0, 41.0], [60.0, 60.0]])
    s.check_invariants()
    assert s.radii_of(hs).tolist() == [0.5, 2.0, 9.0]
    assert s.centres_of(hs).tolist() == [[60.0, 60.0], [20.0, 20.0], [41.0, 41.0]]
    assert sorted(s.query((60.0, 60.4), exact=True).tolist()) == [hs[0]]
    with pytest.raises(ValueError, match="centres must have shape"):
        s.update_many(hs, [[1.0, 1.0]])


def test_collision_candidates_update_many_without_radii_still_works():
    from culling import CollisionCandidates

    cc = CollisionCandidates(probe_radius=1.0, size=100.0, dim=2)
    hs = cc.insert_many([[1.0, 1.0], [50.0, 50.0]], [1.0, 2.0])
    cc.update_many(hs, [[10.0, 10.0], [60.0, 60.0]])
    assert cc.bounding_radius_of(hs).tolist() == [1.0, 2.0]
    assert hs[1] in cc.candidates((62.5, 60.0)).tolist()
    assert hs[0] not in cc.candidates((1.0, 1.0)).tolist()


_NO_JIT_SCRIPT = """
import warnings
warnings.simplefilter("error")
import numpy as np
from culling import DenseViewDistanceGrid, ViewDistanceTree
rng = np.random.default_rng(1)
for dim in (1, 2, 3):
    for s in (ViewDistanceTree(100.0, dim=dim), DenseViewDistanceGrid(100.0, dim=dim, min_radius=1.0)):
        hs = s.insert_many(rng.uniform(0.0, 99.0, (50, dim)), rng.uniform(0.0, 5.0, 50))
        s.update_many(hs, rng.uniform(0.0, 99.0, (50, dim)), rng.uniform(0.0, 5.0, 50))
        s.update_many(hs[:10], rng.uniform(0.0, 99.0, (10, dim)))
        p = rng.uniform(0.0, 99.0, dim)
        s.query(p, exact=True)
        s.query_many(rng.uniform(0.0, 99.0, (4, dim)), exact=True)
        s.overlapping(p, 3.0, exact=True)
        s.overlapping_many(rng.uniform(0.0, 99.0, (4, dim)), 2.0, exact=True)
        first, second = s.overlapping_pairs()
        c, r = s.centres_of(hs), s.radii_of(hs)
        d = np.sqrt(((c[:, None, :] - c[None, :, :]) ** 2).sum(axis=2))
        a, b = np.nonzero(np.triu(d <= r[:, None] + r[None, :], 1))
        assert sorted(zip(first.tolist(), second.tolist())) == sorted(zip(hs[a].tolist(), hs[b].tolist()))
        s.remove_many(hs[:25])
        s.check_invariants()
print("ok")
"""


def test_numba_disable_jit_runs_batches_without_warnings():
    env = dict(os.environ, NUMBA_DISABLE_JIT="1", PYTHONWARNINGS="error")
    root = Path(__file__).resolve().parents[2]
    env["PYTHONPATH"] = str(root) + os.pathsep + env.get("PYTHONPATH", "")
    result = subprocess.run([sys.executable, "-c", _NO_JIT_SCRIPT], env=env, capture_output=True, text=True,
                            timeout=300, cwd=root)
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stdout.strip() == "ok"


# ----------------------------------------------------------------------
# Memory given back (item 4) and query_many's bounded scratch (item 5)


def test_memory_comes_back_when_most_objects_are_removed():
    rng = np.random.default_rng(4)
    n = 60_000
    tree = ViewDistanceTree(1000.0, dim=3)
    hs = tree.insert_many(rng.uniform(0.0, 1000.0, (n, 3)), rng.uniform(0.0, 5.0, n) ** 2)
    full = tree.nbytes()
    keep = int(hs[0])
    tree.remove_many(hs[1:])
    tree.check_invariants()
    fresh = ViewDistanceTree(1000.0, dim=3)
    fresh.insert(tree.centre(keep), tree.radius(keep))
    assert tree.nbytes() < 4 * fresh.nbytes() + 16_384, (tree.nbytes(), fresh.nbytes(), full)
    assert tree._nodes.nbytes() < full / 100
    assert tree.query(tree.centre(keep), exact=True).tolist() == [keep]
    # Removing in many small batches gives memory back as well (amortised compaction).
    hs = tree.insert_many(rng.uniform(0.0, 1000.0, (n, 3)), rng.uniform(0.0, 5.0, n) ** 2)
    for part in np.array_split(hs, 50):
        tree.remove_many(part)
    tree.check_invariants()
    assert tree.nbytes() < 4 * fresh.nbytes() + 16_384
    assert tree.query(tree.centre(keep), exact=True).tolist() == [keep]


def test_memory_kept_for_a_high_handle_is_only_the_per_handle_arrays():
    tree = ViewDistanceTree(1000.0, dim=2)
    hs = tree.insert_many(np.random.default_rng(5).uniform(0, 1000, (20_000, 2)), np.ones(20_000))
    tree.remove_many(hs[:-1])
    tree.check_invariants()
    assert tree._nodes.nbytes() + tree._pool.nbytes() < 50_000
    assert tree.query(tree.centre(int(hs[-1])), exact=True).tolist() == [hs[-1]]
    h = tree.insert((1.0, 1.0), 1.0)
    assert h not in hs[-1:] and h in tree
    tree.check_invariants()


_SCRATCH_SCRIPT = """
import resource, sys
import numpy as np
from culling import DenseViewDistanceGrid, ViewDistanceTree
kind, m = sys.argv[1], int(sys.argv[2])
rng = np.random.default_rng(2)
s = ViewDistanceTree(1000.0, dim=3) if kind == "tree" else DenseViewDistanceGrid(1000.0, dim=3)
s.insert_many(rng.uniform(0.0, 1000.0, (2000, 3)), rng.uniform(0.0, 5.0, 2000))
points = rng.uniform(0.0, 1000.0, (m, 3))
s.query_many(points[:1000], exact=True)  # compiled, pools started
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
handles, counts = s.query_many(points, exact=True)
after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print((after - before) * 1024, handles.nbytes + counts.nbytes)
"""


@pytest.mark.parametrize("kind", STRUCTURES)
def test_query_many_scratch_is_a_few_hundred_bytes_per_point(kind):
    m = 300_000
    env = dict(os.environ)
    root = Path(__file__).resolve().parents[2]
    env["PYTHONPATH"] = str(root) + os.pathsep + env.get("PYTHONPATH", "")
    result = subprocess.run([sys.executable, "-c", _SCRATCH_SCRIPT, kind, str(m)], env=env, capture_output=True,
                            text=True, timeout=600, cwd=root)
    assert result.returncode == 0, result.stderr[-3000:]
    peak, answer = map(int, result.stdout.split())
    assert (peak - answer) / m < 400, f"{(peak - answer) / m:.0f} bytes of scratch per point"


# ----------------------------------------------------------------------
# Batches all-or-nothing under MemoryError (item 3)


def _state(s, probes: np.ndarray):
    hs = s.handles()
    return (hs.tolist(), s.centres_of(hs).tolist(), s.radii_of(hs).tolist(),
            [sorted(s.query(p, exact=True).tolist()) for p in probes])


def _tree_scenarios():
    rng = np.random.default_rng(9)

    def build(kind):
        s = _make(kind, dim=2)
        hs = s.insert_many(rng.uniform(0.0, 99.0, (300, 2)), rng.uniform(0.0, 3.0, 300))
        s.remove_many(hs[::7])  # free handles, free blocks, free node rows
        return s

    def insert(s):
        n = 2000
        far = 400.0 if isinstance(s, ViewDistanceTree) else 99.0  # a tree grows its root; a grid cannot
        return s.insert_many(rng.uniform(0.0, far, (n, 2)), rng.uniform(0.0, 2.0, n) ** 3)

    def update(s):
        hs = s.handles()
        radii = rng.uniform(0.0, 1.0, hs.size) ** 4
        if isinstance(s, ViewDistanceTree):
            centres = rng.uniform(0.0, 300.0, (hs.size, 2))
        else:  # the grid's blocks have room for a quarter more: crowd 60 occupied cells, several each (as their
            pick = rng.integers(0, 60, hs.size)  # objects: same level, same cell), so their blocks move to the end
            centres, radii = s.centres_of(hs[:60])[pick], s.radii_of(hs[:60])[pick]
        s.update_many(hs, centres, radii)

    def remove(s):
        s.remove_many(s.handles()[5:])

    return build, {"insert_many": insert, "update_many": update, "remove_many": remove}


@pytest.mark.parametrize("kind", STRUCTURES)
@pytest.mark.parametrize("call", ["insert_many", "update_many", "remove_many"])
def test_batches_are_all_or_nothing_when_any_allocation_fails(kind, call, monkeypatch):
    from culling.core import growth

    build, calls = _tree_scenarios()
    op = calls[call]
    probes = np.random.default_rng(10).uniform(0.0, 99.0, (12, 2))
    counter = FailAt(0, growth.allocate)
    monkeypatch.setattr(growth, "allocate", counter)
    s = build(kind)
    counter.calls = 0
    op(s)
    sites = counter.calls
    if call != "remove_many":
        assert sites > 0, "the batch allocated nothing: the scenario does not exercise growth"
    for k in range(1, sites + 1):
        counter.k, counter.calls = 0, 0
        s = build(kind)
        before = _state(s, probes)
        counter.k, counter.calls = k, 0
        try:
            op(s)
            failed = False
        except MemoryError:
            failed = True
        counter.k = 0
        s.check_invariants()
        if failed:
            assert _state(s, probes) == before, f"allocation {k} of {sites} failed and the batch left changes"
        elif call == "remove_many":
            assert len(s) == 5  # compaction is optional: the removal is done, the memory kept
        # The structure still works after the failure.
        extra = s.insert_many([[1.0, 1.0], [50.0, 50.0]], [0.5, 1.0])
        s.remove_many(extra)
        s.check_invariants()
