"""The tree's one node index (child links, no hash) and the compiled mover path of ``update_many``.

A node is found by descending its child links from the root; emptied nodes
and their emptied ancestors are deleted by one compiled pass; ``update_many``
decides in place which objects stay (a fast cell test on each object's own
row, the exact home function near faces) and relinks the movers in kernels.
Each test checks the structure (``check_invariants``) and the answers against
brute force or against a tree built from scratch at the final positions.
"""

from __future__ import annotations

import pickle

import numpy as np
import pytest
from brute_force import BruteForce, FailAt, check_contents, check_query

from culling import ViewDistanceTree
from culling.core import growth

SIZE = 64.0


def live_nodes(tree: ViewDistanceTree) -> np.ndarray:
    nodes = tree._nodes
    return np.flatnonzero(nodes.count[: nodes.issued] >= 0)


def same_nodes(tree: ViewDistanceTree, other: ViewDistanceTree) -> None:
    """Both trees hold the same node boxes and each object in the node of the same box."""
    assert tree.node_count == other.node_count
    depths, boxes = tree.node_boxes()
    other_depths, other_boxes = other.node_boxes()
    order = np.lexsort(boxes.reshape(len(boxes), -1).T[::-1])
    other_order = np.lexsort(other_boxes.reshape(len(other_boxes), -1).T[::-1])
    assert (boxes[order] == other_boxes[other_order]).all()
    assert (depths[order] == other_depths[other_order]).all()


def test_the_table_has_no_hash_index():
    tree = ViewDistanceTree(SIZE, dim=2)
    tree.insert_many(np.random.default_rng(0).uniform(0.0, SIZE, (50, 2)), np.full(50, 0.5))
    assert not hasattr(tree._nodes, "by_level") and not hasattr(tree._nodes, "key")
    assert tree._nodes.free.dtype == np.int64


@pytest.mark.parametrize("dim", [1, 2, 3])
def test_every_node_is_found_by_its_key_after_many_inserts_and_removes(dim):
    rng = np.random.default_rng(dim)
    tree = ViewDistanceTree(SIZE, dim=dim)
    handles = tree.insert_many(rng.uniform(0.0, SIZE, (3000, dim)), SIZE * 2.0 ** -rng.integers(2, 14, 3000))
    tree.remove_many(handles[rng.random(handles.size) < 0.6])
    tree.insert_many(rng.uniform(-SIZE, 2 * SIZE, (500, dim)), rng.uniform(0.0, 3.0, 500))  # a grown root
    for h in tree.handles()[:200].tolist():
        tree.remove(h)
    tree.check_invariants()
    nodes, root = tree._nodes, tree._root
    alive = live_nodes(tree)
    for node in alive.tolist():
        level, cell = nodes.key_of(node)
        assert nodes.find(level, cell, root) == node
    live = tree.node_count
    for node in alive[:50].tolist():  # at() of an existing key finds it and creates nothing
        assert nodes.at(*nodes.key_of(node), root) == node
    assert tree.node_count == live
    # Keys of no node: a free cell next to a leaf, a level below every node.
    for node in alive[:50].tolist():
        level, cell = nodes.key_of(node)
        for sibling in range(1 << dim):
            key = tuple((c & ~1) | ((sibling >> axis) & 1) for axis, c in enumerate(cell))
            found = nodes.find(level, key, root)
            assert found == -1 or nodes.key_of(found) == (level, key)
        assert nodes.find(25, tuple(c << (25 - level) for c in cell), root) == -1
    with pytest.raises(KeyError):
        nodes.key_of(int(nodes.free_ids()[0]) if nodes.free_count else nodes.issued)


def test_removing_a_deep_object_deletes_its_chain_of_empty_ancestors():
    tree = ViewDistanceTree(SIZE, dim=3)
    big = tree.insert((1.0, 1.0, 1.0), 20.0)
    deep = tree.insert((33.0, 33.0, 33.0), 1e-9)  # level 24: a chain of 24 nodes below the root
    assert tree.node_count == 25
    free_before = tree._nodes.free_count
    tree.remove(deep)
    tree.check_invariants()
    assert tree.node_count == 1 and tree._nodes.free_count == free_before + 24
    again = tree.insert((33.0, 33.0, 33.0), 1e-9)  # the chain comes back on the freed rows
    assert tree.node_count == 25 and tree._nodes.free_count == free_before
    tree.check_invariants()
    tree.remove_many([again, big])
    assert len(tree) == 0 and tree.node_count == 1
    tree.check_invariants()


def test_one_pass_deletes_many_chains_that_share_ancestors():
    rng = np.random.default_rng(3)
    tree = ViewDistanceTree(SIZE, dim=2)
    keep = tree.insert_many(rng.uniform(0.0, 8.0, (20, 2)), np.full(20, 0.3))  # one corner stays
    deep = tree.insert_many(rng.uniform(32.0, 64.0, (400, 2)), SIZE * 2.0 ** -rng.integers(5, 24, 400))
    model = BruteForce(dim=2, shape="sphere")
    for h in keep.tolist():
        model.insert(h, tree.centre(h), tree.radius(h))
    with_deep = tree.node_count
    tree.remove_many(deep)
    tree.check_invariants()
    assert tree.node_count < with_deep
    check_contents(tree, model)
    fresh = ViewDistanceTree(SIZE, dim=2)
    fresh.insert_many(tree.centres_of(keep), tree.radii_of(keep))
    same_nodes(tree, fresh)


@pytest.mark.parametrize("dim", [1, 2, 3])
def test_movers_across_cells_levels_and_faces_land_where_a_fresh_tree_puts_them(dim):
    """Small moves onto, just before and just after cell faces of every level (the fast cell test's
    edge, where the exact home function decides), radii across level boundaries, moves out of the
    root (it grows) and back (it shrinks): the nodes equal a fresh tree's, the answers brute force's."""
    rng = np.random.default_rng(20 + dim)
    n = 2000
    levels = rng.integers(0, 25, n)
    radii = SIZE * 2.0 ** -levels.astype(float) * rng.uniform(0.25, 0.5, n)
    tree = ViewDistanceTree(SIZE, dim=dim)
    handles = tree.insert_many(rng.uniform(0.0, SIZE, (n, dim)), radii)
    for step in range(6):
        centres = tree.centres_of(handles)
        edge = SIZE * 2.0 ** -np.minimum(levels, 12).astype(float)
        pick = rng.integers(0, 5, (n, 1))
        with np.errstate(under="ignore"):  # the float next to a face at 0 is subnormal
            faces = np.round(centres / edge[:, None]) * edge[:, None]
            centres = np.choose(pick, [centres + rng.normal(0.0, 1e-3, (n, dim)) * edge[:, None], faces,
                                       np.nextafter(faces, -np.inf), np.nextafter(faces, np.inf), centres])
        centres = np.clip(centres, 0.0, np.nextafter(SIZE, 0.0))
        new_radii = radii.copy()
        if step % 2:  # some radii cross a level boundary, exactly or next to it
            cross = rng.random(n) < 0.1
            boundary = SIZE * 2.0 ** -levels.astype(float) / 4.0
            new_radii[cross] = np.choose(rng.integers(0, 3, cross.sum()),
                                         [boundary[cross], np.nextafter(boundary[cross], 0.0), 2 * boundary[cross]])
        if step == 2:
            centres[:5] += 3 * SIZE  # the root grows for these
        tree.update_many(handles, centres, new_radii if step % 2 else None)
        tree.check_invariants()
        radii = tree.radii_of(handles)
    fresh = ViewDistanceTree(SIZE, dim=dim)
    fresh.insert_many(tree.centres_of(handles), tree.radii_of(handles))
    tree.update_many(handles[:5], tree.centres_of(handles[5:10]))  # back inside: the root shrinks
    fresh.update_many(handles[:5], tree.centres_of(handles[5:10]))
    tree.check_invariants()
    same_nodes(tree, fresh)
    model = BruteForce(dim=dim, shape="sphere")
    for h in handles.tolist():
        model.insert(h, tree.centre(h), tree.radius(h))
    check_contents(tree, model)
    for p in tree.centres_of(handles[:15]):
        check_query(tree, model, p)


def test_stayers_near_a_face_are_decided_exactly():
    """A centre one float either side of a face, on levels 0 to 24 and at large offsets from the
    origin: the fast test defers to the exact home function, and stay or move is what a fresh
    tree says."""
    origin = (1e6 + 0.1, -3.0)
    tree = ViewDistanceTree(SIZE, origin=origin, dim=2)
    fresh_centres, fresh_radii, handles = [], [], []
    for level in range(25):
        w = SIZE * 2.0 ** -level
        face = origin[0] + 3 * w if level else origin[0] + 0.5 * SIZE
        for start, end in ((np.nextafter(face, -np.inf), face), (face, np.nextafter(face, -np.inf)),
                           (np.nextafter(face, np.inf), face)):
            h = tree.insert((start, origin[1] + w / 3), 0.3 * w)
            handles.append(h)
            fresh_centres.append((end, origin[1] + w / 3))
            fresh_radii.append(0.3 * w)
    tree.update_many(handles, np.array(fresh_centres))
    tree.check_invariants()
    fresh = ViewDistanceTree(SIZE, origin=origin, dim=2)
    fresh.insert_many(np.array(fresh_centres), np.array(fresh_radii))
    same_nodes(tree, fresh)


def _movers_scenario(rng):
    """A tree, and an update where most objects stay (moved a little) and some move far: their new homes
    need new nodes (the table grows) and blocks (the pool grows), some in nodes where others stay."""
    tree = ViewDistanceTree(SIZE, dim=2)
    centres = rng.uniform(0.0, SIZE, (400, 2))
    radii = rng.uniform(0.2, 0.6, 400)
    handles = tree.insert_many(centres, radii)
    moved = centres + rng.uniform(-1e-3, 1e-3, centres.shape)
    movers = rng.random(400) < 0.3
    moved[movers] = rng.uniform(0.0, 2 * SIZE, (movers.sum(), 2))  # far: fresh nodes, a grown root
    moved[:40] = centres[40:80] + 1e-4  # into nodes that stay, overflowing their blocks
    new_radii = radii.copy()
    new_radii[movers] = rng.uniform(0.0, 0.05, movers.sum())  # deeper levels: chains of new nodes
    return tree, handles, moved, new_radii


def _state(tree, probes):
    hs = tree.handles()
    return (hs.tolist(), tree.centres_of(hs).tolist(), tree.radii_of(hs).tolist(),
            [sorted(tree.query(p, exact=True).tolist()) for p in probes])


def test_update_many_of_movers_is_all_or_nothing_when_any_allocation_fails(monkeypatch):
    rng_seed = 11
    probes = np.random.default_rng(12).uniform(0.0, 2 * SIZE, (16, 2))
    counter = FailAt(0, growth.allocate)
    monkeypatch.setattr(growth, "allocate", counter)
    tree, handles, moved, radii = _movers_scenario(np.random.default_rng(rng_seed))
    counter.calls = 0
    tree.update_many(handles, moved, radii)
    sites = counter.calls
    assert sites > 2, "the scenario must grow the node table and the pool"
    for k in range(1, sites + 1):
        counter.k = 0
        tree, handles, moved, radii = _movers_scenario(np.random.default_rng(rng_seed))
        before, nodes_before = _state(tree, probes), tree.node_count
        counter.k, counter.calls = k, 0
        with pytest.raises(MemoryError):
            tree.update_many(handles, moved, radii)
        counter.k = 0
        tree.check_invariants()
        assert _state(tree, probes) == before, f"allocation {k} of {sites} failed and the update left changes"
        assert tree.node_count == nodes_before
        tree.update_many(handles, moved, radii)  # and it works afterwards
        tree.check_invariants()


def test_a_mover_outside_the_world_puts_the_stayers_back():
    rng = np.random.default_rng(4)
    tree, handles, moved, radii = _movers_scenario(rng)
    probes = rng.uniform(0.0, SIZE, (8, 2))
    before = _state(tree, probes)
    moved[-1] = (1e300, 0.0)  # beyond the largest world the root can grow to
    with pytest.raises(ValueError, match="largest world"):
        tree.update_many(handles, moved, radii)
    tree.check_invariants()
    assert _state(tree, probes) == before


def test_update_many_without_movers_touches_no_node():
    rng = np.random.default_rng(6)
    tree = ViewDistanceTree(SIZE, dim=3)
    centres = (rng.integers(0, 16, (1000, 3)) + 0.5) * 4.0  # centres of level-4 cells (edge 4)
    handles = tree.insert_many(centres, np.full(1000, 1.5))
    nodes = {name: getattr(tree._nodes, name).copy() for name in ("start", "capacity", "count", "child")}
    tree.update_many(handles, centres + rng.uniform(-1.9, 1.9, centres.shape))
    for name, before in nodes.items():
        assert (getattr(tree._nodes, name) == before).all(), name
    tree.check_invariants()


@pytest.mark.parametrize("dim", [1, 2, 3])
def test_searches_from_start_nodes_leave_the_table_a_search_from_the_root_leaves(dim):
    """``at_many`` with start nodes (the movers' old nodes) runs ``nodes.LANES`` searches side by side
    (``_deepest``), then creates what is missing from where they ended; from the root instead, one key at
    a time.  Both give every key the same node and leave the same table, row for row: start nodes far
    from their key (long climbs), below it (a climb past the key's level), on it, and batches that do
    not fill the last group of lanes; keys that share missing nodes too."""
    from culling.tree import nodes as node_module

    rng = np.random.default_rng(60 + dim)
    tree = ViewDistanceTree(SIZE, dim=dim)
    tree.insert_many(rng.uniform(0.0, SIZE, (800, dim)), SIZE * 2.0 ** -rng.integers(3, 12, 800))
    table, root = tree._nodes, tree._root
    alive = live_nodes(tree)
    for k in (1, node_module.LANES - 1, node_module.LANES, 3 * node_module.LANES + 5, 600):
        below = rng.integers(2, 14, k)  # levels below the root's
        inside = np.floor(rng.uniform(0.0, 1.0, (k, dim)) * (2.0 ** below)[:, None]).astype(np.int64)
        inside[k // 2:] = inside[: k - k // 2]  # keys that repeat: their missing nodes are made once
        below[k // 2:] = below[: k - k // 2]
        root_cell = table.cells[:, root][None, :]
        keys = np.concatenate([(below + table.level[root])[:, None], (root_cell << below[:, None]) + inside], axis=1)
        near = rng.choice(alive, k)
        on_key = [table.find(int(key[0]), tuple(key[1:].tolist()), root) for key in keys]
        near = np.where(np.arange(k) % 5 == 0, np.maximum(on_key, 0), near)
        near = np.where(near >= 0, near, rng.choice(alive, k))
        ends = []
        for start in (None, near):
            copy = pickle.loads(pickle.dumps(table))
            homes = copy.at_many(keys, root, near=start)
            assert all(copy.key_of(int(h)) == (int(key[0]), tuple(key[1:].tolist())) for h, key in zip(homes, keys))
            ends.append((homes, copy.columns[:, :copy.issued], copy.cells[:, :copy.issued],
                         copy.child[:copy.issued], copy.free_ids()))
            made = copy.live - table.live
        assert made > 0 or k < 600
        for from_root, side_by_side in zip(*ends):
            assert np.array_equal(from_root, side_by_side)


@pytest.mark.parametrize("shape, dtype", [((5,), np.int64), ((3, 7), np.float64), ((1000, 8), np.int64),
                                          ((0, 4), np.int64), ((9,), np.int8)])
def test_stored_arrays_start_on_a_cache_line_and_hold_their_fill(shape, dtype):
    """``growth.allocate`` (every array a structure keeps): C-contiguous, filled, on a 64-byte line, so
    a node's eight child links in 3-D are one line; a grown array, a compacted table and a pickled
    one keep that."""
    array = growth.allocate(shape, dtype, 7)
    assert array.shape == shape and array.dtype == dtype and array.flags.c_contiguous and array.flags.writeable
    assert (array == 7).all() and (array.size == 0 or array.ctypes.data % growth.CACHE_LINE == 0)
    assert growth.grown(array, shape[0] + 3, 1).ctypes.data % growth.CACHE_LINE == 0
    tree = ViewDistanceTree(SIZE, dim=3)
    handles = tree.insert_many(np.random.default_rng(0).uniform(0.0, SIZE, (2000, 3)), np.full(2000, 0.3))
    tree.remove_many(handles[:1900])  # most of the nodes go: the table is compacted
    for table in (tree._nodes, pickle.loads(pickle.dumps(tree))._nodes):
        assert table.child.ctypes.data % growth.CACHE_LINE == 0 and table.child.strides[0] == 64
