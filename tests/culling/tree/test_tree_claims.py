"""The description's claims about the tree, checked as counts, not timings.

- a dense cluster far from the query point is never looked at: the visited
  nodes, their object counts and the candidates do not change when it is added;
- the visited nodes follow the number of levels, not the number of objects;
- a small move inside a node changes no node;
- removal cleans up empty, childless nodes (depth follows the local objects);
- root growth moves and relabels nothing;
- radius 0 and 1e-30 terminate, and are found only at (or next to) their centre.

A sphere of radius ``r`` lives in a node of edge ``W`` with ``r`` in
``[W/4, W/2)``, so ``W <= 4r``, and that node is visited from up to ``1.5 W``
beyond its centre's side: the cluster bound that follows from the contract is
6 radii along one axis (see ``test_cluster_bound_is_six_radii_not_two``).
"""

from __future__ import annotations

import numpy as np
import pytest
from brute_force import TREE, BruteForce, check_contents, check_query, sorted_handles

SIZE = 16.0
DIMS = [1, 2, 3]


def snapshot(trace) -> tuple:
    """What a query visited: per level (level, node size, sorted boxes, objects), and the candidates."""
    levels = []
    for lv in trace.levels:
        bounds = np.asarray(lv.bounds)
        boxes = tuple(sorted(map(tuple, bounds.reshape(len(bounds), -1).tolist())))
        levels.append((lv.depth, float(lv.node_size), boxes, int(lv.objects)))
    levels = tuple(levels)
    return levels, tuple(sorted_handles(trace.candidates))


def populated(dim: int, rng, n=120, low=0.0, high=4.0, rmax=2.0, shape="sphere"):
    """A tree over [0, 16)^dim with ``n`` objects centred in [low, high)^dim."""
    tree = TREE.make(SIZE, dim=dim, shape=shape)
    model = BruteForce(dim, shape)
    centres = rng.uniform(low, high, (n, dim))
    radii = np.concatenate([[0.0, 1e-30], rng.uniform(0, rmax, n - 2)])
    for h, c, r in zip(tree.insert_many(centres, radii).tolist(), centres, radii):
        model.insert(h, c, r)
    return tree, model


def home_box(c: np.ndarray, r: float, size=SIZE):
    """Home node of (c, r) below the root [0, size) by the contract: ``r`` in ``[W/4, W/2)``."""
    w = size
    while r < w / 4:
        w /= 2
    lo = np.floor(c / w) * w
    return lo, w


# -- a far cluster is never looked at --------------------------------------------

@pytest.mark.parametrize("dim", DIMS)
def test_far_cluster_changes_nothing_the_query_sees(dim):
    rng = np.random.default_rng(dim)
    tree, model = populated(dim, rng)
    points = rng.uniform(0, 4, (30, dim))
    points[0] = 0.0                    # the root's corner, a node boundary
    points[1] = 4.0 - 2.0**-20         # close to the edge of the cluster's grown box
    before = [snapshot(tree.trace(p)) for p in points]
    nodes = tree.node_count
    # 2000 objects of radius <= 1 centred in [12, 16) on axis 0: >= 8 away from
    # every query point, and all their nodes lie inside the root's child
    # [8, 16) on that axis, whose grown box [4, 20) no query point reaches.
    cluster = rng.uniform(0, SIZE, (2000, dim))
    cluster[:, 0] = rng.uniform(12, 16, 2000)
    cluster_radii = rng.uniform(0, 1.0, 2000)
    handles = tree.insert_many(cluster, cluster_radii)
    for h, c, r in zip(handles.tolist(), cluster, cluster_radii):
        model.insert(h, c, r)
    assert tree.node_count > nodes  # the cluster did build nodes
    tree.check_invariants()
    for p, old in zip(points, before):
        assert snapshot(tree.trace(p)) == old, f"the far cluster changed what a query at {p} visits"
        check_query(tree, model, p)


@pytest.mark.parametrize("dim", DIMS)
def test_cluster_six_radii_away_is_never_a_candidate(dim):
    """Along one axis, 6 r or more from every centre: no cluster object is a candidate,
    and the per-level object counts do not change (new nodes it visits are empty)."""
    rng = np.random.default_rng(10 + dim)
    tree, model = populated(dim, rng, low=0.0, high=16.0, rmax=3.0)
    for trial in range(20):
        r = float(2.0 ** rng.integers(-6, 0)) * rng.uniform(1, 2)
        p = rng.uniform(0, SIZE, dim)
        centre = rng.uniform(0, SIZE, dim)
        axis = int(rng.integers(dim))
        side = rng.choice([-1.0, 1.0])
        centre[axis] = p[axis] + side * 6 * r * rng.uniform(1.0, 1.3)  # centre 6r+ away
        if not (0 <= centre[axis] < SIZE):
            continue
        cluster = centre + rng.uniform(-r, r, (300, dim))  # a dense pile ...
        cluster[:, axis] = centre[axis] + side * rng.uniform(0, r, 300)  # ... on the far side
        if not ((cluster >= 0) & (cluster < SIZE)).all():
            continue  # stay inside the root: growth is tested below
        before = tree.trace(p)
        handles = tree.insert_many(cluster, np.full(300, r))
        after = tree.trace(p)
        assert not set(handles.tolist()) & set(after.candidates.tolist()), \
            f"trial {trial}: a cluster 6r away along axis {axis} was looked at"
        assert sorted_handles(after.candidates) == sorted_handles(before.candidates)
        assert [int(lv.objects) for lv in after.levels][:len(before.levels)] == \
            [int(lv.objects) for lv in before.levels]
        assert all(int(lv.objects) == 0 for lv in after.levels[len(before.levels):])
        tree.remove_many(handles)
        tree.check_invariants()


def test_cluster_bound_is_six_radii_not_two():
    """Objects of view distance r are never looked at from 6 r away along an axis
    (docs/CONTRACT.md, "Queries"), and 6 r, not 2 r, is the bound: the visiting
    rule ("Geometry") gives 1.5 W <= 6 r, and a sphere of radius W/4 at its
    node's low edge is a candidate 5 r away."""
    tree = TREE.make(SIZE, dim=1)
    r = 1.0                                       # home node edge W = 4: [8, 12)
    handles = tree.insert_many(np.full(100, 8.0), np.full(100, r))
    p = 8.0 + 5 * r                               # 13 < hi + W/2 = 14
    assert set(tree.query(p).tolist()) == set(handles.tolist())
    assert tree.query(p, exact=True).size == 0
    assert tree.query(8.0 + 6 * r).size == 0      # hi + W/2 = 14 itself is outside (strict)


# -- visited nodes follow levels, not objects ------------------------------------

@pytest.mark.parametrize("dim", DIMS)
def test_visited_nodes_follow_levels_not_objects(dim):
    rng = np.random.default_rng(20 + dim)
    r = 0.3                                # home node edge 1: depth 4 below a root of 16
    points = rng.uniform(0, SIZE, (40, dim))
    stats = {}
    for n in (100 * dim, 1000 * dim):
        tree = TREE.make(SIZE, dim=dim)
        tree.insert_many(rng.uniform(0, SIZE, (n, dim)), np.full(n, r))
        traces = [tree.trace(p) for p in points]
        levels = max(len(t.levels) for t in traces)
        assert levels == 5, f"objects of one radius live on one level: {levels} levels"
        for t in traces:
            assert all(lv.nodes <= 2**dim for lv in t.levels)
            assert t.visited_nodes <= len(t.levels) * 2**dim
        stats[n] = (np.mean([t.visited_nodes for t in traces]), np.mean([len(t.candidates) for t in traces]))
    (few_nodes, few_cands), (many_nodes, many_cands) = stats.values()
    assert many_nodes <= 5 * 2**dim
    assert many_nodes <= few_nodes * 2 + 1, "10x the objects must not mean ~10x the visited nodes"
    assert many_cands > 3 * few_cands  # while the candidates do grow with the density


# -- a small move changes no node --------------------------------------------------

@pytest.mark.parametrize("dim", DIMS)
@pytest.mark.parametrize("batch", [False, True])
def test_small_move_inside_node_changes_no_node(dim, batch):
    rng = np.random.default_rng(30 + dim)
    tree, model = populated(dim, rng, n=200, low=0.0, high=16.0, rmax=3.0)
    handles, centres, radii = model.arrays()
    keep = radii > SIZE / 2**8           # well above the finest level
    handles, centres, radii = handles[keep], centres[keep], radii[keep]
    moved = centres.copy()
    for i in range(len(handles)):
        lo, w = home_box(centres[i], radii[i])
        moved[i] = lo + rng.uniform(0, 1, dim) * w        # anywhere in the same node
    points = np.concatenate([rng.uniform(0, SIZE, (30, dim)), centres[:10]])
    before = [snapshot(tree.trace(p)) for p in points]
    nodes = tree.node_count
    if batch:
        tree.update_many(handles, moved, radii)
    else:
        for h, c, r in zip(handles.tolist(), moved, radii):
            tree.update(h, c, r)
    for h, c, r in zip(handles.tolist(), moved, radii):
        model.update(h, c, r)
    tree.check_invariants()
    assert tree.node_count == nodes
    for p, old in zip(points, before):
        assert snapshot(tree.trace(p)) == old, "a move inside its node changed what a query visits"
        check_query(tree, model, p)


# -- removal cleans up ---------------------------------------------------------------

@pytest.mark.parametrize("dim", DIMS)
def test_remove_cleans_up_empty_childless_nodes(dim):
    rng = np.random.default_rng(40 + dim)
    tree, model = populated(dim, rng, low=0.0, high=8.0)
    nodes = tree.node_count
    spot = np.full(dim, 13.3)
    before = snapshot(tree.trace(spot))
    for radius in (1e-3, 0.0, 1e-30, 0.01):
        h = tree.insert(spot, radius)
        assert tree.node_count > nodes and len(tree.trace(spot).levels) > len(before[0])
        tree.remove(h)
        tree.check_invariants()
        assert tree.node_count == nodes, "removal left empty childless nodes behind"
        assert snapshot(tree.trace(spot)) == before, "query depth must follow the local objects again"
    # the same through update: a tiny object moved away and back, then enlarged
    h = tree.insert(spot, 1e-3)
    deep = tree.node_count
    tree.update(h, np.full(dim, 2.0), 1e-3)
    tree.update(h, spot, 1e-3)
    assert tree.node_count == deep
    tree.update(h, spot, 5.0)  # now a root-level object: the deep path is gone
    assert tree.node_count <= nodes + 1
    tree.remove(h)
    assert tree.node_count == nodes
    # and everything, in two batches
    handles = model.handles()
    tree.remove_many(handles[::2])
    tree.check_invariants()
    tree.remove_many(handles[1::2])
    tree.check_invariants()
    assert len(tree) == 0 and tree.node_count <= 1
    assert list(tree.trace(spot).levels) == []


# -- root growth moves nothing ---------------------------------------------------------

@pytest.mark.parametrize("dim", DIMS)
@pytest.mark.parametrize("how", ["far centre", "large radius", "negative side"])
def test_root_growth_moves_and_relabels_nothing(dim, how):
    rng = np.random.default_rng(50 + dim)
    tree, model = populated(dim, rng, low=0.0, high=16.0, rmax=3.0)
    handles, centres, radii = model.arrays()
    points = np.concatenate([rng.uniform(0, SIZE, (20, dim)), centres[:10], centres[:5] + radii[:5, None]])
    before = [tree.trace(p) for p in points]
    assert all(lv.level >= 0 for t in before for lv in t.levels)
    if how == "far centre":
        c, r = np.full(dim, 37 * SIZE), 1.0
    elif how == "large radius":
        c, r = np.full(dim, 5.0), 7 * SIZE
    else:
        c, r = np.full(dim, -3 * SIZE), 0.5
    h = tree.insert(c, r)
    model.insert(h, c, r)
    tree.check_invariants()
    np.testing.assert_array_equal(tree.centres_of(handles), centres)
    np.testing.assert_array_equal(tree.radii_of(handles), radii)
    for p, old in zip(points, before):
        new = tree.trace(p)
        grown = [lv for lv in new.levels if lv.level < 0]
        assert grown, "the root must have grown"
        assert [lv.depth for lv in grown] == list(range(len(grown)))
        kept = [lv for lv in new.levels if lv.level >= 0]
        assert len(kept) == len(old.levels)
        for a, b in zip(kept, old.levels):
            assert a.level == b.level and a.node_size == b.node_size and a.depth == b.depth + len(grown)
            np.testing.assert_array_equal(np.asarray(a.bounds), np.asarray(b.bounds))
            assert a.objects == b.objects
        check_query(tree, model, p)
    # removing the object that grew the root keeps every answer right
    tree.remove(h)
    model.remove(h)
    check_contents(tree, model)
    for p in points:
        check_query(tree, model, p)


# -- radius 0 and 1e-30 ----------------------------------------------------------------

@pytest.mark.parametrize("dim", DIMS)
@pytest.mark.parametrize("shape", ["sphere", "cube"])
def test_zero_and_tiny_radii_terminate_and_are_found_only_at_their_centre(dim, shape):
    from culling import MAX_DEPTH
    tree = TREE.make(SIZE, dim=dim, shape=shape)
    centres = [np.full(dim, 3.7), np.full(dim, 8.0), np.zeros(dim), np.full(dim, 15.999999)]
    for c in centres:
        for r in (0.0, -0.0, 1e-30):
            h = tree.insert(c, r)
            tree.check_invariants()
            assert h in tree.query(c, exact=True).tolist()
            t = tree.trace(c)
            assert 1 <= len(t.levels) <= MAX_DEPTH + 2, f"{len(t.levels)} levels for radius {r}"
            for axis in range(dim):
                for direction in (-np.inf, np.inf):
                    p = c.copy()
                    with np.errstate(under="ignore"):  # next to 0.0 is a subnormal
                        p[axis] = np.nextafter(c[axis], direction)
                    if r == 0.0 or abs(p[axis] - c[axis]) > r:
                        assert h not in tree.query(p, exact=True).tolist()
            tree.remove(h)
            assert len(tree) == 0 and tree.node_count <= 1
    # 1e-30 at the origin: found 5e-31 away, not 2e-30 away
    h = tree.insert(np.zeros(dim), 1e-30)
    near, far = np.zeros(dim), np.zeros(dim)
    near[0], far[0] = 5e-31, 2e-30
    assert h in tree.query(near, exact=True).tolist()
    assert h not in tree.query(far, exact=True).tolist()
    # many point objects on one spot and on node boundaries
    spots = np.repeat(np.array([[8.0] * dim, [4.0] * dim, [0.5] * dim]), 50, axis=0)
    hs = tree.insert_many(spots, np.zeros(150))
    tree.check_invariants()
    for s in (8.0, 4.0, 0.5):
        found = set(tree.query(np.full(dim, s), exact=True).tolist()) & set(hs.tolist())
        assert len(found) == 50
    tree.remove_many(hs)
    tree.remove(h)
    tree.check_invariants()
    assert len(tree) == 0
