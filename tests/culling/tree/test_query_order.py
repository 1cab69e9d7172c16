"""``query_many`` along a Morton curve: the same answer, row for row, as walking the caller's order.

From ``QUERY_ORDER_MIN`` points the tree walks a batch in the order of
:func:`culling.tree.batch.query_order`, each walk sharing the levels whose
windows equal the previous point's (:func:`culling.tree.walk.visits`), and
writes each row at the caller's (:func:`culling.core.members.place_many`; a batch of several passes,
or one with rows left unsure, copies them back: :func:`culling.core.chunks.in_caller_order`).
These tests force that path on small batches and compare it with the caller's
order (identical arrays, not only equal sets), with each point's own walk
(:func:`culling.tree.walk.walk`), and with brute force in exact arithmetic.
"""

from __future__ import annotations

import threading

import numpy as np
import pytest
from brute_force import FACE_COORDS as COORDS
from brute_force import BruteForce, check_query_many
from hypothesis import given, settings
from hypothesis import strategies as st

import culling.tree.tree as tree_module
from culling import ViewDistanceTree
from culling.core import chunks, members
from culling.core.chunks import in_caller_order
from culling.core.structs import World, nodes_of
from culling.runtime import threads
from culling.tree import batch, inverted, walk

SETTINGS = settings(max_examples=60, deadline=None)
SIZE = 64.0

SCALES = st.sampled_from([1.0, 0.5, 2.0, 40.0, 1e-9])


def _tree(dim: int, centres: np.ndarray, radii: np.ndarray) -> tuple[ViewDistanceTree, BruteForce]:
    tree = ViewDistanceTree(SIZE, dim=dim)
    model = BruteForce(dim=dim, shape="sphere")
    for h, c, r in zip(tree.insert_many(centres, radii).tolist(), centres, radii.tolist()):
        model.insert(h, c, r)
    return tree, model


def _spheres(dim: int, n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    return rng.uniform(0.0, SIZE, (n, dim)), rng.choice([0.0, 0.3, 1.0, 2.0, 4.0, 9.0, 20.0], n)


def _answers(tree: ViewDistanceTree, points: np.ndarray, exact: bool, scale: float, ordered: bool,
             monkeypatch: pytest.MonkeyPatch) -> tuple[np.ndarray, np.ndarray]:
    with monkeypatch.context() as patch:
        patch.setattr(tree_module, "QUERY_ORDER_MIN", 1 if ordered else 1 << 62)
        patch.setattr(inverted, "GRID_ENTITIES_PER_VIEWER", -1.0)  # the points walk, whatever their objects
        return tree.query_many(points, exact=exact, scale=scale)


@SETTINGS
@given(dim=st.integers(1, 3), n=st.integers(1, 60), seed=st.integers(0, 2**32 - 1),
       coords=st.lists(COORDS, min_size=1, max_size=90), repeat=st.integers(1, 3), scale=SCALES,
       exact=st.booleans())
def test_ordered_batch_answers_as_the_callers_order(dim: int, n: int, seed: int, coords: list[float], repeat: int,
                                                    scale: float, exact: bool) -> None:
    centres, radii = _spheres(dim, n, seed)
    tree, model = _tree(dim, centres, radii)
    rows = len(coords) // dim or 1
    points = np.resize(np.array(coords), rows * dim).reshape(rows, dim)
    points = np.repeat(points, repeat, axis=0)  # the same point several times: equal windows throughout
    with pytest.MonkeyPatch.context() as patch:
        ordered = _answers(tree, points, exact, scale, True, patch)
        plain = _answers(tree, points, exact, scale, False, patch)
        assert np.array_equal(ordered[0], plain[0]) and np.array_equal(ordered[1], plain[1])
        patch.setattr(tree_module, "QUERY_ORDER_MIN", 1)
        check_query_many(tree, model, points, scale)


@SETTINGS
@given(dim=st.integers(1, 3), n=st.integers(1, 200), seed=st.integers(0, 2**32 - 1), m=st.integers(1, 300),
       spread=st.sampled_from([1e-6, 1.0, 64.0, 1e4]), scale=SCALES)
def test_shared_walks_visit_what_each_points_own_walk_visits(dim: int, n: int, seed: int, m: int, spread: float,
                                                             scale: float) -> None:
    centres, radii = _spheres(dim, n, seed)
    tree, _ = _tree(dim, centres, radii)
    rng = np.random.default_rng(seed + 1)
    points = 32.0 + rng.uniform(-spread, spread, (m, dim))
    for pts in (points, points[batch.query_order(points)]):
        node_ids, owners = walk.visits(pts, scale, tree._world(), tree._nodes.arrays())
        nodes = tree._nodes
        want_nodes, want_owners = [], []
        for i, p in enumerate(pts):
            visited, _ = walk.walk(p, scale, World(*tree._world()), nodes_of(nodes.arrays()), 0.0)
            kept = [v for v in visited.tolist() if nodes.count[v] > 0]
            want_nodes += kept
            want_owners += [i] * len(kept)
        assert node_ids.tolist() == want_nodes and owners.tolist() == want_owners


def test_ordered_batch_grows_the_walks_buffers(monkeypatch: pytest.MonkeyPatch) -> None:
    """A huge scale visits every node of a deep tree: the shared walk's buffers double (several times)."""
    centres, radii = _spheres(3, 3000, 5)
    tree, model = _tree(3, centres, np.full(3000, 0.05))
    points = np.random.default_rng(6).uniform(0.0, SIZE, (300, 3))
    for scale in (1.0, 1e6):
        ordered = _answers(tree, points, True, scale, True, monkeypatch)
        plain = _answers(tree, points, True, scale, False, monkeypatch)
        assert np.array_equal(ordered[0], plain[0]) and np.array_equal(ordered[1], plain[1])
    assert ordered[1].min() == len(tree)  # the huge scale: every object, at every point


@settings(max_examples=100, deadline=None)
@given(points=st.lists(st.tuples(st.floats(-1e300, 1e300), st.floats(-1e300, 1e300)), max_size=60),
       bits=st.integers(0, 14))
def test_morton_order_is_a_permutation(points: list[tuple[float, float]], bits: int) -> None:
    arr = np.array(points, dtype=np.float64).reshape(-1, 2)
    order = batch.morton_order(arr, bits)
    assert sorted(order.tolist()) == list(range(len(points)))


def test_morton_order_walks_neighbours_together() -> None:
    """A grid of points: consecutive points of the order are neighbours far more often than not."""
    axis = np.arange(16.0)
    points = np.stack(np.meshgrid(axis, axis, axis, indexing="ij"), axis=-1).reshape(-1, 3)
    shuffled = points[np.random.default_rng(3).permutation(len(points))]
    ordered = shuffled[batch.query_order(shuffled)]
    steps = np.abs(np.diff(ordered, axis=0)).sum(axis=1)
    assert np.mean(steps == 1.0) > 0.5 and steps.max() < 32


@settings(max_examples=100, deadline=None)
@given(counts=st.lists(st.integers(0, 5), max_size=40), seed=st.integers(0, 2**32 - 1))
def test_in_caller_order_puts_each_row_at_its_point(counts: list[int], seed: int) -> None:
    m = len(counts)
    order = np.random.default_rng(seed).permutation(m).astype(np.int64)
    given_counts = np.array(counts, dtype=np.int64)
    rows = [np.arange(c, dtype=np.int64) + 100 * int(order[j]) for j, c in enumerate(counts)]
    handles = np.concatenate(rows) if rows else np.empty(0, dtype=np.int64)
    got, got_counts = in_caller_order(handles, given_counts, order)
    want = [rows[j] for j in np.argsort(order)]
    assert got_counts.tolist() == [len(r) for r in want]
    assert got.tolist() == (np.concatenate(want).tolist() if want else [])


@pytest.mark.parametrize("on_surfaces", [False, True])
def test_ordered_batch_on_threads_writes_each_answer_at_its_row(on_surfaces: bool,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """One pass of ordered points, cut into chunks on three threads: every chunk tested first, then each
    answer written straight at its caller's row (:func:`culling.core.members.place_many`); where the
    float filter left rows unsure (points on spheres' surfaces, within rounding), the
    answers are joined, settled and copied back instead.  Either way row for row the caller's order's
    answer, and brute force's."""
    rng = np.random.default_rng(11)
    centres, radii = rng.uniform(0.0, SIZE, (400, 3)), rng.uniform(0.5, 12.0, 400)
    tree, model = _tree(3, centres, radii)
    points = rng.uniform(0.0, SIZE, (700, 3))
    if on_surfaces:  # a tenth of the points on a sphere's surface, within rounding
        on = rng.integers(0, 400, 70)
        towards = rng.normal(size=(70, 3))
        points[:70] = centres[on] + radii[on, None] * towards / np.linalg.norm(towards, axis=1)[:, None]
    placed: list[int] = []
    place_many = members.place_many
    monkeypatch.setattr(members, "place_many", lambda *args: (placed.append(1), place_many(*args))[1])
    before = threads.thread_count()
    threads.set_thread_count(3)
    try:
        for exact in (False, True):
            placed.clear()
            ordered = _answers(tree, points, exact, 1.0, True, monkeypatch)
            assert (not placed) if exact and on_surfaces else len(placed) > 1, (exact, len(placed))
            plain = _answers(tree, points, exact, 1.0, False, monkeypatch)
            assert np.array_equal(ordered[0], plain[0]) and np.array_equal(ordered[1], plain[1])
        monkeypatch.setattr(tree_module, "QUERY_ORDER_MIN", 1)
        check_query_many(tree, model, points[:200])
    finally:
        threads.set_thread_count(before)


@pytest.mark.parametrize(("share", "held_most"), [(None, 1 << 20), (1e-9, 3000)])
def test_ordered_batches_reuse_kept_rows_between_calls(share: float | None, held_most: int,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """The chunks' kept rows go in arenas kept between calls (:class:`culling.core.chunks.RowsLease`):
    calls of growing and shrinking answers, one after the other, each row for row the caller's order's
    answer.  ``share`` None: the arenas sized by the calls before; 1e-9: the arenas are tried with too little room, and each chunk that does not
    fit is tested again in an array of its own.  The arenas held stay within
    :data:`culling.core.chunks.SCRATCH_HELD_MOST` rows, and :func:`culling.core.chunks.release_scratch`
    drops them."""
    rng = np.random.default_rng(12)
    centres, radii = rng.uniform(0.0, SIZE, (500, 3)), rng.uniform(0.5, 16.0, 500)
    tree, _ = _tree(3, centres, radii)
    monkeypatch.setattr(chunks, "SCRATCH_HELD_MOST", held_most)
    monkeypatch.setattr(chunks, "_kept_share", [1.0])
    chunks.release_scratch()
    before = threads.thread_count()
    threads.set_thread_count(3)
    try:
        for scale in (0.2, 1.0, 3.0, 0.5, 3.0, 1.0, 2.0):
            if share is not None:
                monkeypatch.setattr(chunks, "_kept_share", [share])
            points = rng.uniform(0.0, SIZE, (int(rng.integers(300, 900)), 3))
            ordered = _answers(tree, points, True, scale, True, monkeypatch)
            plain = _answers(tree, points, True, scale, False, monkeypatch)
            assert np.array_equal(ordered[0], plain[0]) and np.array_equal(ordered[1], plain[1]), scale
            assert sum(arena.shape[0] for arena in chunks._held) <= chunks.SCRATCH_HELD_MOST
        chunks.release_scratch()
        assert not chunks._held
    finally:
        threads.set_thread_count(before)
        chunks.release_scratch()


def test_a_lease_hands_out_room_and_takes_back_what_fits() -> None:
    """:class:`culling.core.chunks.RowsLease` on one thread: room from the arena while it lasts, a new
    array beyond it, a chunk that kept more than its room refused; the arena given back grown."""
    chunks.release_scratch()
    lease = chunks.RowsLease()
    first = lease.room(10, True)  # no arena yet: a new array with room for every candidate
    assert first.shape == (10,) and first.base is None
    assert lease.took(first, 4, 10)
    lease.close()
    assert [arena.shape[0] for arena in chunks._held] == [6]  # 4 rows and a quarter, and a quarter more
    lease = chunks.RowsLease()
    room = lease.room(5, False)  # the arena has every candidate's room
    assert room.shape == (5,) and room.base is lease._arenas[threading.get_ident()].arena
    assert lease.took(room, 5, 5)
    assert lease.room(5, False).base is None  # one row left: a new array
    lease.close()
    chunks.release_scratch()
