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


def _streamed(batches: int, size: int, seed: int = 9):
    """A 3-D world of ``batches * size`` objects in few nodes (radii a tenth of the world), as batches of ``size`` spread over all of it:
    every node grows again and again."""
    rng = np.random.default_rng(seed)
    n = batches * size
    return rng.uniform(0.0, 1000.0, (n, 3)), rng.uniform(60.0, 250.0, n)


def test_a_world_streamed_in_is_compacted_instead_of_growing_the_pool(monkeypatch):
    """Each outgrown block waits for a node growing into its size class; when the pool is full and such
    blocks hold a quarter of the rows in use, ``make_room`` compacts instead of growing (the new members'
    room included, and a quarter more for the growing nodes), so the pool stays near the rows its nodes
    need, and the tree answers exactly."""
    from culling import BruteForceIndex
    from culling.tree.pool import POOL_GROWTH, BlockPool

    compactions = []
    compact = BlockPool.compact
    monkeypatch.setattr(BlockPool, "compact", lambda self, *args: compactions.append(1) or compact(self, *args))
    centres, radii = _streamed(40, 1000)
    tree = ViewDistanceTree(size=1000.0, dim=3)
    for start in range(0, radii.size, 1000):
        tree.insert_many(centres[start:start + 1000], radii[start:start + 1000])
    brute = BruteForceIndex(centres, radii)  # handles 0 .. n - 1, as the tree issued them
    assert compactions, "no batch compacted the pool"
    in_use = int(tree._nodes.capacity[: tree._nodes.issued].sum())
    assert in_use <= 1.25 * 1.25 * radii.size, "blocks hold more than their size classes and growing room leave"
    assert tree._pool.rows <= POOL_GROWTH * 1.25 * in_use + 64, (tree._pool.rows, in_use)
    tree.check_invariants()
    for point in np.random.default_rng(10).uniform(0.0, 1000.0, (32, 3)):
        assert sorted(tree.query(point, exact=True).tolist()) == sorted(brute.query(point, exact=True).tolist())


def test_a_compaction_that_runs_out_of_memory_inside_a_batch_changes_nothing(monkeypatch):
    """The batch that compacts the pool of a world streamed in, with each of its allocations failing in
    turn: the batch raises ``MemoryError``, the tree is as it was, and the same batch then works."""
    import pickle

    from culling.core import growth
    from culling.tree.pool import BlockPool
    from tests.culling.brute_force import FailAt

    centres, radii = _streamed(12, 500, seed=11)
    tree = ViewDistanceTree(size=1000.0, dim=3)
    compactions, failed_inside = [], []
    compact = BlockPool.compact

    def counted(self, *args):  # noqa: ANN001, ANN002, ANN202
        compactions.append(1)
        try:
            return compact(self, *args)
        except MemoryError:
            failed_inside.append(1)
            raise

    monkeypatch.setattr(BlockPool, "compact", counted)
    for start in range(0, radii.size, 500):
        before = pickle.dumps(tree)
        tree.insert_many(centres[start:start + 500], radii[start:start + 500])
        if compactions:
            break
    assert compactions, "no batch compacted the pool"
    batch = (centres[start:start + 500], radii[start:start + 500])
    counter = FailAt(0, growth.allocate)
    monkeypatch.setattr(growth, "allocate", counter)
    pickle.loads(before).insert_many(*batch)
    probes = np.random.default_rng(12).uniform(0.0, 1000.0, (8, 3))
    raised = 0
    for k in range(1, counter.calls + 1):  # a run may allocate less: a buffer an earlier one made is kept
        tree = pickle.loads(before)
        expected = [sorted(tree.query(p, exact=True).tolist()) for p in probes]
        nbytes = tree.nbytes()
        counter.k, counter.calls = k, 0
        try:
            tree.insert_many(*batch)
        except MemoryError:
            raised += 1
            counter.k = 0
            tree.check_invariants()
            assert [sorted(tree.query(p, exact=True).tolist()) for p in probes] == expected, f"allocation {k}"
            assert tree.nbytes() >= nbytes
            tree.insert_many(*batch)
        counter.k = 0
        tree.check_invariants()
        assert len(tree) == start + 500
    assert raised and failed_inside, "no allocation of the compaction failed"


def test_size_classes_are_the_smallest_that_hold_a_count():
    """The compiled ``class_of`` and the vectorised ``block_capacities`` agree: the smallest class capacity
    that holds each count, four classes an octave, up to the last class."""
    from culling.tree.pool import CAPACITIES, CLASSES_PER_OCTAVE, block_capacities, class_capacity, class_of

    counts = np.concatenate([np.arange(1, 5000), CAPACITIES[CAPACITIES < 1 << 40] + 1, CAPACITIES[-3:]])
    expected = np.array([CAPACITIES[CAPACITIES >= c][0] for c in counts.tolist()])
    assert np.array_equal(block_capacities(counts), expected)
    assert [class_capacity(class_of(c)) for c in counts.tolist()] == expected.tolist()
    assert CAPACITIES[:12].tolist() == [1, 2, 3, 4, 5, 6, 7, 8, 10, 12, 14, 16] and CLASSES_PER_OCTAVE == 4
    assert (CAPACITIES[1:] / CAPACITIES[:-1] <= 2.0).all() and (np.diff(CAPACITIES) > 0).all()
    assert block_capacities(np.array([0])).tolist() == [1]
