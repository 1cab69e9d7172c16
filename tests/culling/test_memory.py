"""Memory is given back: fill/empty cycles, tracemalloc-bounded.

An emptied structure holds no more than a fresh one (``nbytes``), repeated
fill/empty cycles do not grow what tracemalloc sees (NumPy reports its
buffers to tracemalloc), and removing most objects compacts the tree's pool.
"""

from __future__ import annotations

import gc
import tracemalloc

import numpy as np
import pytest

from culling import DenseViewDistanceGrid, ViewDistanceTree

N = 30_000
#: Slack for Python-level bookkeeping that tracemalloc sees between cycles
#: (interned ints, dict resizes, NumPy's small caches).
TRACED_SLACK = 256 * 1024


def _make(kind):
    if kind == "tree":
        return ViewDistanceTree(size=1000.0, dim=3)
    return DenseViewDistanceGrid(size=1000.0, dim=3, min_radius=4.0)


@pytest.mark.parametrize("kind", ["tree", "grid"])
def test_fill_empty_cycles_do_not_grow(kind):
    rng = np.random.default_rng(5)
    centres = rng.uniform(0.0, 1000.0, (N, 3))
    radii = rng.uniform(0.0, 20.0, N)
    structure = _make(kind)
    fresh = structure.nbytes()
    warm = _make(kind)  # both emptying paths once, untraced: a cold cache compiles them (numba's memory)
    handles = warm.insert_many(centres[:20], radii[:20])
    warm.remove(int(handles[0]))
    warm.remove_many(handles[1:])
    gc.collect()
    tracemalloc.start()
    try:
        traced = []
        for cycle in range(3):
            handles = structure.insert_many(centres, radii)
            assert structure.nbytes() > fresh
            if cycle == 1:  # empty it one by one, another path
                for h in handles[: N // 10].tolist():
                    structure.remove(h)
                structure.remove_many(handles[N // 10:])
            else:
                structure.remove_many(handles)
            del handles
            assert len(structure) == 0
            assert structure.nbytes() == fresh, f"cycle {cycle}: an emptied {kind} holds more than a new one"
            gc.collect()
            traced.append(tracemalloc.get_traced_memory()[0])
    finally:
        tracemalloc.stop()
    assert max(traced) - traced[0] <= TRACED_SLACK, f"traced memory grows over cycles: {traced}"
    structure.check_invariants()


def test_tree_pool_compacts_after_most_removals():
    rng = np.random.default_rng(6)
    tree = ViewDistanceTree(size=1000.0, dim=3)
    handles = tree.insert_many(rng.uniform(0.0, 1000.0, (N, 3)), rng.uniform(0.0, 20.0, N))
    full_pool = tree._pool.rows
    keep = handles[:: 20]
    tree.remove_many(np.setdiff1d(handles, keep))
    assert tree._pool.rows <= full_pool / 4, "the pool kept the rows of removed objects"
    tree.check_invariants()
    assert sorted(tree.handles().tolist()) == sorted(keep.tolist())
    # Still answers exactly after compaction, and grows again.
    point = tree.centre(int(keep[0]))
    assert int(keep[0]) in tree.query(point, exact=True).tolist()
    tree.insert_many(rng.uniform(0.0, 1000.0, (1000, 3)), rng.uniform(0.0, 20.0, 1000))
    tree.check_invariants()


def test_tree_reuses_freed_blocks_before_growing():
    rng = np.random.default_rng(7)
    tree = ViewDistanceTree(size=1000.0, dim=3)
    keep = tree.insert(np.array([1.0, 1.0, 1.0]), 1.0)
    centres = rng.uniform(0.0, 1000.0, (5000, 3))
    radii = rng.uniform(0.0, 20.0, 5000)
    capacities = []
    for _ in range(6):
        handles = tree.insert_many(centres, radii)
        capacities.append(tree._pool.rows)
        tree.remove_many(handles)
    assert capacities[-1] <= capacities[1], f"the pool grows over identical cycles: {capacities}"
    assert tree.handles().tolist() == [keep]
    tree.check_invariants()


def test_one_row_blocks_wait_on_the_spare_stack_and_overflow_to_the_lists():
    """Released one-row blocks go on the pool's spare stack while it has room (``spare_room``), the
    rest on the class's list; moving objects takes them back from both without growing the pool,
    the invariant checker sees every free block once, and a pickled tree keeps its stack."""
    import pickle

    from culling.tree.pool import spare_room

    rng = np.random.default_rng(8)
    n = 4000
    tree = ViewDistanceTree(size=1000.0, dim=3)
    handles = tree.insert_many(rng.uniform(0.0, 1000.0, (n, 3)), np.full(n, 0.5))  # a node each
    pool = tree._pool
    room = spare_room(pool.rows)
    assert 0 < room < n
    tree.remove_many(handles[: n // 2])  # more one-row blocks than the stack holds
    assert pool.spare_count == room
    assert pool.heads[0] >= 0, "the blocks beyond the stack's room are on the one-row list"
    tree.check_invariants()
    rows = pool.rows
    moved = tree.insert_many(rng.uniform(0.0, 1000.0, (n // 2, 3)), np.full(n // 2, 0.5))
    assert pool.rows == rows, "the released blocks were not taken back"
    assert pool.spare_count == 0
    tree.check_invariants()
    for _ in range(3):  # a swarm's frames: every object moves to a node of its own
        everyone = tree.handles()
        tree.update_many(everyone, rng.uniform(0.0, 1000.0, (everyone.size, 3)), np.full(everyone.size, 0.5))
        tree.check_invariants()
    copy = pickle.loads(pickle.dumps(tree))
    assert copy._pool.spare_count == pool.spare_count
    assert np.array_equal(copy._pool.spare[: pool.spare_count], pool.spare[: pool.spare_count])
    copy.update_many(moved, rng.uniform(0.0, 1000.0, (moved.size, 3)), np.full(moved.size, 0.5))
    copy.check_invariants()
    probe = copy.centre(int(moved[0]))
    assert int(moved[0]) in copy.query(probe, exact=True).tolist()


@pytest.mark.parametrize("make", [lambda: ViewDistanceTree(1024.0, dim=3),
                                  lambda: DenseViewDistanceGrid(1024.0, dim=3, min_radius=2.0)], ids=["tree", "grid"])
def test_per_handle_arrays_come_back_when_the_last_high_handle_goes(make):
    """A level unloaded but for one late-spawned object (the highest handle), which goes later: the
    per-handle arrays kept room for every handle ever issued until fewer than half the objects were left
    (a tree of 1,000 objects held 27.5 MB where a fresh one holds 0.9)."""
    rng = np.random.default_rng(0)
    pinned, plain = make(), make()
    for structure in (pinned, plain):
        handles = structure.insert_many(rng.uniform(0.0, 1000.0, (100_000, 3)), rng.uniform(0.5, 10.0, 100_000))
        if structure is pinned:
            structure.remove_many(handles[1000:-1])
            structure.remove(int(handles[-1]))
        else:
            structure.remove_many(handles[1000:])
    assert pinned._object_state().shape[0] == plain._object_state().shape[0] < 4 * 1000 + 64
    assert pinned.nbytes() < 1.05 * plain.nbytes()                # (the nodes left may differ a little)
    pinned.check_invariants()


def test_a_trim_reads_only_the_free_handles_the_removals_since_paid_for(monkeypatch):
    """Removing the highest live handle one at a time must not read every handle each time (quadratic):
    the retry waits for as many removals as there are handles above the last blocker, and reads from the
    top down."""
    import culling.structure as structure_module

    read = []
    scan = structure_module._live_end

    def counted(state, issued):
        end = scan(state, issued)
        read.append(issued - end)
        return end

    monkeypatch.setattr(structure_module, "_live_end", counted)
    tree = ViewDistanceTree(1024.0, dim=3)
    handles = tree.insert_many(np.random.default_rng(1).uniform(0.0, 1000.0, (20_000, 3)), np.ones(20_000))
    tree.remove_many(handles[:15_000])                       # the arrays long, the top handles alive: tries fail
    for h in handles[::-1][:4_900].tolist():                 # then the top goes, one handle at a time
        tree.remove(h)
    assert len(read) < 200 and sum(read) <= 2 * 4_900 + 20_000, (len(read), sum(read))
    tree.check_invariants()


def test_removing_the_top_handle_one_at_a_time_does_not_copy_the_arrays_each_time():
    """Live handles sitting just under two thirds of the arrays, removed highest first: every removal
    trimmed a few entries off and copied the per-handle arrays (5,000 copies for 5,000 removals, 464 us
    each).  A trim now cuts a quarter or more, or is not made."""
    tree = ViewDistanceTree(1024.0, dim=3)
    handles = tree.insert_many(np.random.default_rng(2).uniform(0.0, 1000.0, (30_000, 3)), np.ones(30_000))
    keep = handles[13_999:19_999]
    tree.remove_many(np.setdiff1d(handles, keep))
    lengths = [tree._object_state().shape[0]]
    for h in keep[::-1][:500].tolist():
        tree.remove(h)
        lengths.append(tree._object_state().shape[0])
    assert sum(1 for a, b in zip(lengths, lengths[1:]) if a != b) <= 3, lengths[::50]
    tree.check_invariants()
