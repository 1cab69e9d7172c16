"""Batch mutations at the edges of their bookkeeping (the ``insert_many`` and ``update_many`` kernels).

``insert_many`` and the movers of ``update_many`` group objects by home node
in a compiled hash table, find or create the home nodes by walking child
links (reusing dead node rows, growing the node table in the middle of a
batch), and make room in the nodes' blocks for all of them at once (moving
members, reusing released blocks).  Each test drives one of those paths
through the public API and checks the structure (``check_invariants``, which
recomputes every home with the lattice's NumPy functions) and the answers
against brute force.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import pytest
from brute_force import BruteForce, check_contents, check_query
from hypothesis import given, settings
from hypothesis import strategies as st
from library_arrays import read_only

from culling import ViewDistanceTree
from culling.core.containment import squared_reach

SIZE = 64.0


def build(dim: int, centres: np.ndarray, radii: np.ndarray) -> tuple[ViewDistanceTree, BruteForce]:
    tree = ViewDistanceTree(SIZE, dim=dim)
    model = BruteForce(dim=dim, shape="sphere")
    for h, c, r in zip(tree.insert_many(centres, radii).tolist(), centres, radii.tolist()):
        model.insert(h, c, r)
    return tree, model


def check(tree: ViewDistanceTree, model: BruteForce, points: np.ndarray) -> None:
    check_contents(tree, model)
    for p in points:
        check_query(tree, model, p)


@pytest.mark.parametrize("dim", [1, 2, 3])
def test_one_batch_creates_thousands_of_nodes(dim):
    """The node table starts with 16 rows: one batch fills it many times over (the walk resumes)."""
    rng = np.random.default_rng(dim)
    n = 6000
    centres = rng.uniform(0.0, SIZE, (n, dim))
    radii = SIZE * 2.0 ** -rng.integers(3, 12, n) * rng.uniform(0.25, 0.5, n)
    tree, model = build(dim, centres, radii)
    assert tree.node_count > 1000
    check(tree, model, centres[:20])


@pytest.mark.parametrize("dim", [1, 2, 3])
def test_homes_on_cell_and_level_edges(dim):
    """Centres on the cell boundaries of every level, radii exactly at and next to the level
    boundaries (W/4, W/2), zero and tiny: the compiled homes equal the lattice's, and a batch
    places each object where single inserts do."""
    rng = np.random.default_rng(10 + dim)
    n = 3000
    levels = rng.integers(0, 25, (n, 1))
    centres = rng.integers(0, 2 ** 12, (n, dim)) * SIZE * 2.0 ** -np.minimum(levels, 12)
    centres = np.minimum(centres, np.nextafter(SIZE, 0.0))
    edges = SIZE * 2.0 ** -rng.integers(0, 26, n) / 4.0
    radii = np.choose(rng.integers(0, 5, n), [edges, np.nextafter(edges, 0.0), np.nextafter(edges, np.inf),
                                              np.zeros(n), np.full(n, 1e-300)])
    tree, model = build(dim, centres, radii)
    check(tree, model, centres[:10])
    one_by_one = ViewDistanceTree(SIZE, dim=dim)
    for c, r in zip(centres, radii.tolist()):
        one_by_one.insert(c, r)
    assert one_by_one.node_count == tree.node_count
    depths, boxes = tree.node_boxes()
    other_depths, other_boxes = one_by_one.node_boxes()
    order = np.lexsort(boxes.reshape(len(boxes), -1).T[::-1])
    other_order = np.lexsort(other_boxes.reshape(len(other_boxes), -1).T[::-1])
    assert (boxes[order] == other_boxes[other_order]).all()
    assert (depths[order] == other_depths[other_order]).all()


def test_batches_reuse_dead_nodes_and_released_blocks():
    """After removing most objects, batches elsewhere take the dead node rows and freed blocks."""
    rng = np.random.default_rng(5)
    n = 4000
    centres = rng.uniform(0.0, SIZE, (n, 3))
    radii = rng.uniform(0.05, 2.0, n)
    tree, model = build(3, centres, radii)
    for _ in range(3):
        gone = rng.choice(tree.handles(), len(tree) // 2, replace=False)
        tree.remove_many(gone)
        for h in gone.tolist():
            model.remove(h)
        check_contents(tree, model)
        more = rng.uniform(0.0, SIZE, (gone.size, 3))
        more_radii = rng.uniform(0.05, 2.0, gone.size)
        for h, c, r in zip(tree.insert_many(more, more_radii).tolist(), more, more_radii.tolist()):
            model.insert(h, c, r)
        check(tree, model, more[:10])


def test_batch_into_nodes_whose_blocks_are_full_moves_their_members():
    """A batch that overflows existing blocks moves their members to larger blocks, intact."""
    tree = ViewDistanceTree(SIZE, dim=2)
    model = BruteForce(dim=2, shape="sphere")
    rng = np.random.default_rng(7)
    for count in (3, 1, 4, 9, 30, 2, 100):
        centres = rng.uniform(10.0, 11.0, (count, 2))  # the same few nodes every time
        radii = rng.choice([0.3, 0.6, 1.2], count)
        for h, c, r in zip(tree.insert_many(centres, radii).tolist(), centres, radii.tolist()):
            model.insert(h, c, r)
        check(tree, model, centres[:5])


def test_movers_go_to_new_and_reused_nodes():
    """update_many's movers are linked by the same batch path: into nodes that exist, nodes
    created for them, and rows of nodes their departure just emptied."""
    rng = np.random.default_rng(9)
    n = 3000
    centres = rng.uniform(0.0, SIZE, (n, 3))
    radii = rng.uniform(0.01, 3.0, n)
    tree, model = build(3, centres, radii)
    handles = tree.handles()
    for step in range(4):
        centres = np.where(rng.random((n, 1)) < 0.3, rng.uniform(0.0, SIZE, (n, 3)), centres + 0.01)
        centres = np.clip(centres, 0.0, np.nextafter(SIZE, 0.0))
        radii = radii * rng.choice([0.5, 1.0, 2.0], n)
        tree.update_many(handles, centres, radii)
        for h, c, r in zip(handles.tolist(), centres, radii.tolist()):
            model.update(h, c, r)
        check(tree, model, centres[step::500])


def test_batch_grows_the_root_both_ways():
    tree = ViewDistanceTree(SIZE, dim=2)
    model = BruteForce(dim=2, shape="sphere")
    centres = np.array([[-1000.0, 5.0], [3000.0, -7000.0], [1.0, 1.0], [40.0, 40.0]])
    radii = np.array([1.0, 5000.0, 0.5, 200.0])
    for h, c, r in zip(tree.insert_many(centres, radii).tolist(), centres, radii.tolist()):
        model.insert(h, c, r)
    assert tree.root_level < -5
    check(tree, model, centres)


def test_squared_reach_is_exact_at_every_magnitude():
    """The largest ``t`` with ``sqrt(t) <= r``, for subnormal, huge and exactly square radii."""
    rng = np.random.default_rng(3)
    with np.errstate(all="ignore"):  # subnormal powers, the float above the largest
        radii = np.concatenate([
            rng.uniform(0.0, 100.0, 20000), 10.0 ** rng.uniform(-323.5, 308.2, 40000),
            np.sqrt(rng.integers(0, 2 ** 40, 20000).astype(np.float64)), np.arange(1000.0),
            [0.0, 5e-324, 1e-323, 2.2250738585072014e-308, 1.4916681462400413e-154, 1.3407807929942596e154,
             1.7976931348623157e308]])
        radii = np.concatenate([radii, np.nextafter(radii, np.inf), np.nextafter(radii, 0.0)])
        radii = radii[np.isfinite(radii)]
        reach = squared_reach(radii)
        assert (np.sqrt(reach) <= radii).all()
        assert (np.sqrt(np.nextafter(reach, np.inf)) > radii).all()


def test_batch_homes_are_the_exact_levels_and_cells():
    """The one home function (:func:`culling.core.cells.home`, which insert_many's grouping, update_many,
    the single-object kernel and the invariant checker inline), as :func:`culling.tree.batch.group` keys
    a batch, gives the exponent's level and the lattice cell of the exact centre, on cell edges, their
    neighbours and beyond the world."""
    from fractions import Fraction

    from lattice_reference import placed_cell

    from culling.core.lattice import MAX_DEPTH
    from culling.tree.batch import group

    rng = np.random.default_rng(11)
    size = 7.3
    edges = rng.integers(-2 ** 20, 2 ** 20, 300) * 2.0 ** -rng.integers(0, 25, 300) * size
    x = np.concatenate([edges, np.nextafter(edges, np.inf), np.nextafter(edges, -np.inf),
                        rng.uniform(-6e6, 1.2e7, 300), [0.0, -0.0, 5e-324, -5e-324, 1e300, -1e300]])
    radii = size * 2.0 ** -rng.integers(-20, 30, x.size) * rng.choice([1.0, 0.75, 0.5 + 2 ** -52], x.size)
    group_of, keys, _ = group(np.ascontiguousarray(x[:, None]), radii, read_only(np.zeros(1)), size)
    keys = keys[group_of]
    for (level, c), xi, r in zip(keys.tolist(), x.tolist(), radii.tolist()):
        relative = Fraction(r / size)
        want = MAX_DEPTH
        while want > -30 and relative >= Fraction(2) ** -(want + 1):  # level L holds r/size below 2**-(L+1)
            want -= 1
        assert level == want, (r, level, want)
        assert c == placed_cell(xi, 0.0, size, level), (xi, level)


@pytest.fixture
def three_threads() -> Iterator[None]:
    """The library's batch calls on three threads for the test, whatever this machine has."""
    from culling.runtime import threads

    before = threads.thread_count()
    threads.set_thread_count(3)
    try:
        yield
    finally:
        threads.set_thread_count(before)


@pytest.mark.parametrize("dim", [1, 2, 3])
@pytest.mark.usefixtures("three_threads")
def test_update_many_settles_in_parts_on_the_threads(dim: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """From ``PARALLEL_SETTLE_MIN`` objects the stayers are settled in parts (pool row ranges) on the
    library's threads: the tree ends as the one-part settle leaves it, tiles included, and answers as
    brute force; a failing batch (a mover outside the world) puts every part's stayers back."""
    from culling.tree import batch

    rng = np.random.default_rng(30 + dim)
    n = 6000
    centres = rng.uniform(0.0, SIZE, (n, dim))
    radii = rng.uniform(0.05, 0.4, n)
    moved = centres + rng.uniform(-0.1, 0.1, centres.shape)  # mostly stayers, some movers
    order = rng.permutation(n)  # the handles in no particular order: every part gets rows from all over
    states = []
    for minimum in (1 << 62, 0):
        monkeypatch.setattr(batch, "PARALLEL_SETTLE_MIN", minimum)
        tree, model = build(dim, centres, radii)
        handles = tree.handles()
        tree.update_many(handles[order], moved[order], radii[order])
        for h, c, r in zip(handles[order].tolist(), moved[order], radii[order].tolist()):
            model.update(h, c, r)
        tree.check_invariants()
        check(tree, model, rng.uniform(0.0, SIZE, (20, dim)))
        states.append((tree._pool.columns.copy(), tree._pool.tile_box.copy(), tree._obj_pos.copy()))
        bad = moved[order].copy()
        bad[-1] = 1e300
        kept = tree.centres_of(handles).copy()
        with pytest.raises(ValueError, match="largest world"):
            tree.update_many(handles[order], bad + 0.05, radii[order])
        tree.check_invariants()
        assert np.array_equal(tree.centres_of(handles), kept)
    for one, many in zip(states[0], states[1]):
        assert np.array_equal(one, many)


@pytest.mark.parametrize("dim", [1, 2, 3])
@pytest.mark.usefixtures("three_threads")
def test_update_many_without_radii_keeps_each_stored_radius(dim: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """``update_many`` with ``radii`` omitted: the settle reads each object's stored radius from its row
    (in one part and in parts on the threads), for stayers and movers alike (movers across cells and
    levels' faces, a radius of 0, of -0.0 stored as 0.0); the tree answers as brute force with the old
    radii.  Bad input with radii omitted (a dead or repeated handle, a centre not finite) changes nothing."""
    from culling.tree import batch

    rng = np.random.default_rng(60 + dim)
    n = 3000
    centres = rng.uniform(0.0, SIZE, (n, dim))
    radii = rng.uniform(0.05, 0.4, n)
    radii[:40] = 0.0
    radii[40:80] = 2.0 ** rng.integers(-6, 0, 40)   # radius-class edges
    radii[80:90] = -0.0
    for minimum in (1 << 62, 0):
        monkeypatch.setattr(batch, "PARALLEL_SETTLE_MIN", minimum)
        tree, model = build(dim, centres, radii)
        handles = tree.handles()
        stored = tree.radii_of(handles).copy()
        order = rng.permutation(n)
        for step in (0.01, 0.3, 3.0):   # mostly stayers, then ever more movers
            moved = np.clip(tree.centres_of(handles[order]) + rng.uniform(-step, step, (n, dim)), 0.0, SIZE)
            tree.update_many(handles[order], moved)
            for h, c in zip(handles[order].tolist(), moved):
                model.update(h, c, model.objects[h][1])
            tree.check_invariants()
            assert np.array_equal(tree.radii_of(handles), stored)
            assert not np.signbit(tree.radii_of(handles)).any()
            check(tree, model, rng.uniform(0.0, SIZE, (20, dim)))
        dead = int(handles[5])
        tree.remove_many([dead])
        model.remove(dead)
        live = handles[6:]
        kept = (tree.centres_of(live).copy(), tree._pool.columns.copy(), tree._obj_pos.copy())
        some = tree.centres_of(live[:3]) + 0.01
        nan = some.copy()
        nan[1, 0] = np.nan
        for call, error in ((lambda: tree.update_many([live[0], dead, live[1]], some), KeyError),
                            (lambda: tree.update_many([live[0], live[1], live[0]], some), ValueError),
                            (lambda: tree.update_many(live[:3], nan), ValueError)):
            with pytest.raises(error):
                call()
            tree.check_invariants()
            for before, after in zip(kept, (tree.centres_of(live), tree._pool.columns, tree._obj_pos)):
                assert np.array_equal(before, after, equal_nan=True)
        check(tree, model, rng.uniform(0.0, SIZE, (20, dim)))


@pytest.mark.parametrize("dim", [1, 2, 3])
@pytest.mark.usefixtures("three_threads")
def test_update_many_searches_the_movers_homes_on_the_threads(dim: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """From ``PARALLEL_SEARCH_MIN`` movers their homes are searched in chunks on the library's threads
    (``nodes._deepest``), then created from where the searches ended: the same tree as the serial search
    leaves, node for node, answering as brute force, with movers that climb many levels, change level
    and leave the root (which grows)."""
    from culling.tree import nodes

    rng = np.random.default_rng(40 + dim)
    n = 3000
    centres = rng.uniform(0.0, SIZE, (n, dim))
    radii = rng.uniform(0.05, 0.4, n)
    moved = centres + rng.normal(0.0, 0.3, centres.shape)  # most move out of their nodes, some out of the root
    moved[:50] = rng.uniform(0.0, SIZE, (50, dim))  # far jumps: long climbs
    grown = radii * np.where(np.arange(n) % 7 == 0, 3.0, 1.0)  # some change level
    tables = []
    for minimum in (1 << 62, 1):
        monkeypatch.setattr(nodes, "PARALLEL_SEARCH_MIN", minimum)
        tree, model = build(dim, centres, radii)
        handles = tree.handles()
        tree.update_many(handles, moved, grown)
        for h, c, r in zip(handles.tolist(), moved, grown.tolist()):
            model.update(h, c, r)
        tree.check_invariants()
        check(tree, model, rng.uniform(0.0, SIZE, (20, dim)))
        table = tree._nodes
        tables.append((table.columns[:, :table.issued].copy(), table.cells[:, :table.issued].copy(),
                       table.child[:table.issued].copy()))
    for one, many in zip(tables[0], tables[1]):
        assert np.array_equal(one, many)


@given(st.lists(st.integers(-50, 50), max_size=40), st.lists(st.integers(-50, 50), max_size=40))
@settings(max_examples=80, deadline=None)
def test_ascending_union_is_the_sorted_union_of_two_ascending_arrays(first: list[int], second: list[int]) -> None:
    """settle's parts return their movers ascending; ``ascending_union`` joins two such lists in order
    (repeats and empty lists included), as sorting them together would."""
    from culling.tree.batch import ascending_union

    a, b = np.sort(np.array(first, dtype=np.int64)), np.sort(np.array(second, dtype=np.int64))
    assert ascending_union(a, b).tolist() == sorted(first + second)


def _edge_spheres(dim: int) -> st.SearchStrategy[tuple[np.ndarray, np.ndarray]]:
    """Small batches whose centres sit on, next to and beyond the faces of the root's cells and whose
    radii sit on the edges of the radius classes (``size / 2**k / 4`` for a 64-wide world)."""
    faces = [0.0, 64.0, -64.0, 128.0, 32.0, 16.0, 96.0, -0.5, 63.999999, 64.000001, 1e-9, -1e-9, 200.0]
    coordinate = st.one_of(st.sampled_from(faces), st.floats(-300.0, 300.0, allow_nan=False))
    radius = st.one_of(st.sampled_from([0.0, 4.0, 8.0, 16.0, 32.0, 64.0, 7.999999, 8.000001, 31.9999, 100.0]),
                       st.floats(0.0, 120.0, allow_nan=False))
    sphere = st.tuples(st.lists(coordinate, min_size=dim, max_size=dim), radius)
    return st.lists(sphere, min_size=1, max_size=6).map(
        lambda rows: (np.array([c for c, _ in rows], dtype=np.float64), np.array([r for _, r in rows])))


@pytest.mark.parametrize("dim", [1, 2, 3])
@pytest.mark.parametrize("grown", [False, True])
def test_fits_root_decides_as_every_sphere_would(dim: int, grown: bool) -> None:
    """``fits_root`` decides for a whole batch from its two corner spheres (levels and cells are
    monotone in the centres and the radii): it says the root holds the batch exactly when the root
    holds each sphere's home, as ``_home_one`` finds it one sphere at a time.  Roots of the first
    world and grown ones; centres on the cells' faces, radii on the classes' edges."""
    from culling.tree import batch
    from culling.tree.tree import OUTSIDE, _home_one

    tree = ViewDistanceTree(SIZE, dim=dim)
    tree.insert_many(np.full((1, dim), 10.0), np.array([1.0]))
    if grown:
        tree.insert_many(np.full((1, dim), -70.0), np.array([40.0]))
        assert tree.root_level < 0

    @given(_edge_spheres(dim))
    @settings(max_examples=150, deadline=None)
    def decide(batch_spheres: tuple[np.ndarray, np.ndarray]) -> None:
        centres, radii = batch_spheres
        world, nodes = tree._world(), tree._nodes.arrays()
        objects, pool = (tree._obj_node, tree._obj_pos), tree._pool.arrays()
        key = np.empty((1, dim + 1), dtype=np.int64)
        each = []
        for c, r in zip(centres, radii):
            sphere = np.zeros((1, dim + 2))
            sphere[0, :dim], sphere[0, dim] = c, r
            each.append(_home_one(sphere, -1, world, objects, nodes, pool, key) != OUTSIDE)
        assert batch.fits_root(centres, radii, world, nodes) == all(each)

    decide()


@pytest.mark.parametrize("dim", [1, 2, 3])
def test_update_many_reads_its_arrays_as_given(dim: int) -> None:
    """``update_many`` takes the caller's int64 and float64 arrays without copying them (strided
    views made contiguous): it never writes into them, and changing them afterwards changes nothing
    stored.  Radii of -0.0 are stored as 0.0."""
    rng = np.random.default_rng(50 + dim)
    n = 400
    tree, model = build(dim, rng.uniform(0.0, SIZE, (n, dim)), rng.uniform(0.0, 2.0, n))
    handles = tree.handles()
    every_other = handles[::2]  # a strided view
    centres = rng.uniform(0.0, SIZE, (every_other.size, dim))
    radii = rng.uniform(0.0, 2.0, every_other.size)
    radii[:3] = -0.0
    given_arrays = [a.copy() for a in (handles, centres, radii)]
    tree.update_many(every_other, centres, radii)
    for h, c, r in zip(every_other.tolist(), centres, radii.tolist()):
        model.update(h, c, r + 0.0)
    for before, after in zip(given_arrays, (handles, centres, radii)):
        assert np.array_equal(before, after) and np.array_equal(np.signbit(before), np.signbit(after))
    assert not np.signbit(tree.radii_of(every_other[:3])).any()
    handles[:] = handles[::-1]  # the caller reuses its arrays: the tree has its own
    centres[:] = 0.0
    radii[:] = 5.0
    tree.check_invariants()
    check(tree, model, rng.uniform(0.0, SIZE, (20, dim)))
