"""Tile summaries (culling.core.tiles): the exact query skips far tiles and never an answer.

The stateful machines and the invariant checker already hold every summary
to "each live row inside its tile's box, its radius within the tile's" after
any sequence of mutations; here the skip itself is aimed at its edges.
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from culling import ViewDistanceTree
from culling.core import tiles
from culling.core.tiles import TILE_ROWS
from culling.tree.pool import REFRESH_SHARE


def _brute(centres: np.ndarray, radii: np.ndarray, p: np.ndarray, scale: float = 1.0) -> set[int]:
    """Exact containment in rationals: the truth the tree must return."""
    out = set()
    for i, (c, r) in enumerate(zip(centres.tolist(), radii.tolist())):
        d2 = sum((Fraction(a) - Fraction(b)) ** 2 for a, b in zip(c, p.tolist()))
        if d2 <= (Fraction(r) * Fraction(scale)) ** 2:
            out.add(i)
    return out


def _big_node_tree(n: int = 3000, seed: int = 0) -> tuple[ViewDistanceTree, np.ndarray, np.ndarray, np.ndarray]:
    """One coarse radius class spread over a big node: many tiles, most far from any point."""
    rng = np.random.default_rng(seed)
    centres = rng.uniform(0.0, 1024.0, (n, 2))
    radii = rng.uniform(70.0, 127.0, n)  # [W/4, W/2) of the 256-wide level
    tree = ViewDistanceTree(1024.0, dim=2)
    handles = tree.insert_many(centres, radii)
    return tree, handles, centres, radii


def test_sorted_members_make_small_tiles() -> None:
    """insert_many lays each node's members along a Morton curve: a tile's box is a small part of its node."""
    rng = np.random.default_rng(3)
    tree = ViewDistanceTree(1024.0, dim=2)
    tree.insert_many(rng.uniform(0.0, 1024.0, (4000, 2)), rng.uniform(130.0, 250.0, 4000))  # 4 nodes 512 wide
    box = tree._pool.tile_box[:, : tree._pool.top // TILE_ROWS].T  # a tile a row
    box = box[np.isfinite(box[:, 0])]
    areas = np.prod(box[:, 2:4] - box[:, 0:2], axis=1)
    assert np.median(areas) < 512.0 ** 2 / 4


@settings(max_examples=60, deadline=None)
@given(which=st.integers(0, 2999), axis=st.integers(0, 1), side=st.sampled_from([-1.0, 1.0]),
       ulps=st.integers(-2, 2))
def test_points_at_the_exact_reach_of_a_member(which: int, axis: int, side: float, ulps: int) -> None:
    """A point at (and a few ulps around) a member's exact reach along an axis: tiles never drop it."""
    tree, handles, centres, radii = _big_node_tree()
    p = centres[which].copy()
    p[axis] = p[axis] + side * radii[which]
    for _ in range(abs(ulps)):
        p[axis] = np.nextafter(p[axis], np.inf if ulps > 0 else -np.inf)
    got = set(tree.query(p, exact=True).tolist())
    want = {int(handles[i]) for i in _brute(centres, radii, p)}
    assert got == want


@settings(max_examples=40, deadline=None)
@given(x=st.floats(-200.0, 1224.0), y=st.floats(-200.0, 1224.0), scale=st.sampled_from([0.5, 1.0, 1.7]))
def test_queries_agree_with_brute_force(x: float, y: float, scale: float) -> None:
    tree, handles, centres, radii = _big_node_tree()
    p = np.array([x, y])
    want = {int(handles[i]) for i in _brute(centres, radii, p, scale)}
    assert set(tree.query(p, exact=True, scale=scale).tolist()) == want
    found, counts = tree.query_many(np.repeat(p[None], 70, axis=0), exact=True, scale=scale)
    assert set(found[: counts[0]].tolist()) == want and (counts == counts[0]).all()


def test_summaries_stay_conservative_through_moves_and_removals() -> None:
    tree, handles, centres, radii = _big_node_tree(2000, seed=1)
    rng = np.random.default_rng(2)
    for _ in range(5):
        centres = centres + rng.normal(0.0, 3.0, centres.shape)
        tree.update_many(handles, centres, radii)
    for i in range(0, 200, 3):
        centres[i] += 40.0
        tree.update(handles[i], centres[i], radii[i])
    tree.remove_many(handles[1000:1900])
    tree.check_invariants()
    keep = np.r_[0:1000, 1900:2000]
    for p in rng.uniform(0.0, 1024.0, (20, 2)):
        want = {int(handles[keep][i]) for i in _brute(centres[keep], radii[keep], p)}
        assert set(tree.query(p, exact=True).tolist()) == want


def _tight(tree: ViewDistanceTree) -> np.ndarray:
    """The summaries :func:`culling.core.tiles.summarise` computes from the live nodes' rows now."""
    nodes, pool = tree._nodes, tree._pool
    alive = np.flatnonzero(nodes.count[: nodes.issued] > 0)
    box = tiles.empty_summaries(tree.dim, pool.tile_box.shape[1])
    tiles.summarise(pool.columns, nodes.start[alive], nodes.count[alive], box)
    return box


def test_summaries_shrink_back_to_the_live_rows_after_many_moves() -> None:
    """Moves grow the summaries (each write covers its row); update_many re-summarises tiles round
    robin from their live rows, so after enough batches every summary is the live rows' own box again
    (what a compaction would compute), and every batch on the way answers exactly."""
    tree, handles, centres, radii = _big_node_tree(2000, seed=4)
    rng = np.random.default_rng(5)
    for step in range(60):
        moving = np.flatnonzero(rng.random(centres.shape[0]) < 0.3)
        centres[moving] = np.clip(centres[moving] + rng.normal(0.0, 8.0, (moving.size, 2)), 0.0, 1023.0)
        jump = moving[: 5]  # a few leave their node's part of the world: other blocks, other tiles
        centres[jump] = rng.uniform(0.0, 1023.0, (jump.size, 2))
        tree.update_many(handles[moving], centres[moving])
        if step % 10 == 0:
            tree.check_invariants()
            for p in rng.uniform(0.0, 1024.0, (5, 2)):
                want = {int(handles[i]) for i in _brute(centres, radii, p)}
                assert set(tree.query(p, exact=True).tolist()) == want
    grown = tree._pool.tile_box.copy()
    tight = _tight(tree)
    assert (grown[:2] <= tight[:2]).all() and (grown[2:] >= tight[2:]).all()  # conservative (a tile a column)
    assert not np.array_equal(grown, tight)  # the last batches' writes grew some
    # Batches that move nothing (the same centres): they write every row in place and re-summarise
    # REFRESH_SHARE rows' tiles per object, so a pass over the pool's tiles takes this many.
    used = tiles.tiles_for(tree._pool.top)
    for _ in range(int(np.ceil(used * TILE_ROWS / (handles.size * REFRESH_SHARE))) + 1):
        tree.update_many(handles, centres)
    tree.check_invariants()
    assert np.array_equal(tree._pool.tile_box, _tight(tree))
    for p in rng.uniform(0.0, 1024.0, (10, 2)):
        want = {int(handles[i]) for i in _brute(centres, radii, p)}
        assert set(tree.query(p, exact=True).tolist()) == want


def test_refresh_is_the_live_rows_box_and_wraps_round() -> None:
    """tiles.refresh: each tile's summary from its rows with a handle (not the free rows' stale
    columns), an empty tile inverted, the tiles taken from ``tile`` on and round past ``top``."""
    rows = 3 * TILE_ROWS
    handles = np.full(rows, -1, dtype=np.int64)
    columns = np.zeros((4, rows))  # dim 2: x, y, radius, squared reach
    columns[:3] = 1e9  # stale values in free rows must not count
    handles[5], columns[:3, 5] = 0, [1.0, 2.0, 3.0]
    handles[9], columns[:3, 9] = 1, [-1.0, 4.0, 0.5]
    handles[TILE_ROWS + 1], columns[:3, TILE_ROWS + 1] = 2, [7.0, 7.0, 1.0]
    box = np.zeros((5, 3), dtype=np.float32).T  # the summaries column-major, read a tile a row; float32, as the pool's
    top = 2 * TILE_ROWS  # the third tile is above top: never visited
    assert tiles.refresh(handles, columns, top, 1, 3, box.T) == 1  # 3 clipped to the 2 tiles in use: 1, then 0; next 1
    assert box[0].tolist() == [-1.0, 2.0, 1.0, 4.0, 3.0]
    assert box[1].tolist() == [7.0, 7.0, 7.0, 7.0, 1.0]
    assert box[2].tolist() == [0.0] * 5
    handles[TILE_ROWS + 1] = -1
    assert tiles.refresh(handles, columns, top, 1, 1, box.T) == 0
    assert box[1].tolist() == [np.inf, np.inf, -np.inf, -np.inf, -np.inf]
    assert tiles.refresh(handles, columns, 0, 7, 4, box.T) == 0  # an empty pool


def near_rows(first: int, last: int, p: np.ndarray, scale: float, box: np.ndarray, sphere: bool) -> list[int]:
    """The rows of the run ``first .. last - 1`` that the member test reads: those of the tiles
    ``flag_tiles`` flags near, each tile's read back by ``near_range``."""
    flags = np.empty((last - first) // TILE_ROWS + 3, dtype=np.uint8)
    n = tiles.flag_tiles(first, last, p, scale, box, sphere, flags)
    return [r for i in range(n) if flags[i] for r in range(*tiles.near_range(first, last, i, i + 1, box))]


def _far_by_the_rule(p: np.ndarray, low: np.ndarray, high: np.ndarray, radius: float, scale: float,
                     sphere: bool) -> bool:
    """The tile rule of culling/core/tiles.py written plainly: farther than the reach along an axis, or,
    for spheres, in Euclidean distance beyond the margin."""
    reach = radius * scale
    above, below = p - high, low - p
    if (above > reach).any() or (below > reach).any():
        return True
    gap = float(sum(max(a, b, 0.0) ** 2 for a, b in zip(above, below)))
    return sphere and reach * reach >= tiles.SAFE_SQUARE and gap > reach * reach * tiles.NEAR_MARGIN


def test_without_summaries_a_run_is_one_range() -> None:
    empty = np.empty((5, 0), dtype=np.float32)
    assert near_rows(3, 700, np.zeros(2), 1.0, empty, True) == list(range(3, 700))
    flags = np.empty(2, dtype=np.uint8)
    assert tiles.flag_tiles(3, 700, np.zeros(2), 1.0, empty, True, flags) == 1 and flags[0] == 1
    assert tiles.near_range(3, 700, 0, 1, empty) == (3, 700)


def test_far_tiles_are_skipped() -> None:
    """Every tile of a run far away: nothing to test; one near tile in the middle: just its rows."""
    box = np.empty((3, 5))
    box[:, :2], box[:, 2:4], box[:, 4] = 0.0, 1.0, 1.0   # boxes [0, 1]^2, radius 1
    box[1, :2], box[1, 2:4] = 10.0, 11.0                   # tile 1 at [10, 11]^2
    box = np.ascontiguousarray(box.T)                      # column-major, as the pool keeps them
    p = np.array([10.5, 10.5])
    assert near_rows(0, 3 * TILE_ROWS, p, 1.0, box, True) == list(range(TILE_ROWS, 2 * TILE_ROWS))
    assert near_rows(2 * TILE_ROWS, 3 * TILE_ROWS, p, 1.0, box, True) == []
    # exactly the tile's reach away along x (12 - 11 = 1 = radius): near
    assert near_rows(0, 3 * TILE_ROWS, np.array([12.0, 10.5]), 1.0, box, True)[0] == TILE_ROWS
    assert near_rows(0, 3 * TILE_ROWS, np.array([np.nextafter(12.0, 13.0), 10.5]), 1.0, box, True) == []


def test_sphere_tiles_far_in_euclidean_distance_are_skipped() -> None:
    """A tile near along every axis but farther than its reach diagonally is far for spheres and near
    for cubes; one at its reach diagonally (up to the rounding of the gaps) is near for both."""
    box = np.empty((1, 5))
    box[0, :2], box[0, 2:4], box[0, 4] = 0.0, 1.0, 1.0     # box [0, 1]^2, radius 1
    box = np.ascontiguousarray(box.T)
    one_tile = list(range(TILE_ROWS))
    diagonal = np.array([1.8, 1.8])                         # gaps 0.8 and 0.8: 1.13 apart
    assert near_rows(0, TILE_ROWS, diagonal, 1.0, box, True) == []
    assert near_rows(0, TILE_ROWS, diagonal, 1.0, box, False) == one_tile
    at_reach = np.array([1.6, 1.8])                         # gaps 0.6 and 0.8: 1 apart, 1 + 2**-52 in floats
    assert near_rows(0, TILE_ROWS, at_reach, 1.0, box, True) == one_tile
    assert near_rows(0, TILE_ROWS, at_reach, 0.5, box, True) == []


def test_flag_tiles_follows_the_rule() -> None:
    """The one flag pass over a run's tiles (``flag_tiles``; in 3-D a loop of its own) flags exactly the
    tiles the rule, written plainly here, calls near, on random boxes and runs, at the edges of tiles too."""
    rng = np.random.default_rng(5)
    for _ in range(200):
        tiles_n, dim = int(rng.integers(1, 9)), int(rng.integers(1, 4))
        low = rng.uniform(0.0, 10.0, (tiles_n, dim))
        high = low + rng.uniform(0.0, 2.0, (tiles_n, dim))
        radius = rng.uniform(0.0, 3.0, tiles_n)
        box = np.ascontiguousarray(np.column_stack([low, high, radius]).T, dtype=np.float32)
        first = int(rng.integers(0, tiles_n * TILE_ROWS))
        last = int(rng.integers(first + 1, tiles_n * TILE_ROWS + 1))
        p, scale, sphere = rng.uniform(-2.0, 12.0, dim), float(rng.choice([0.5, 1.0, 2.0])), bool(rng.random() < 0.5)
        stored = box.astype(np.float64)
        expected = [r for r in range(first, last)
                    if not _far_by_the_rule(p, stored[:dim, r // TILE_ROWS], stored[dim:2 * dim, r // TILE_ROWS],
                                            float(stored[2 * dim, r // TILE_ROWS]), scale, sphere)]
        assert near_rows(first, last, p, scale, box, sphere) == expected


def test_float32_summaries_round_outward() -> None:
    """A summary holds its rows' centres and radius however float32 rounds them: the low corner at or
    below, the high corner and the radius at or above (values between float32s, and beyond their range)."""
    tree = ViewDistanceTree(1e6, dim=2)
    centres = np.array([[0.1, 0.7], [0.30000001, 0.1], [1e-50, 2.0 / 3.0]])
    tree.insert_many(centres, np.array([0.1, 1.0 / 3.0, 1e-45]))
    tree.check_invariants()  # every live row inside its tile's box, its radius within the tile's
    for x in (0.1, -0.1, 1.0 / 3.0, 1e300, -1e300, 1e-50, -1e-50, 0.0, np.inf, -np.inf):
        assert tiles.down32(x) <= x <= tiles.up32(x)
        assert np.float32(tiles.down32(x)) == tiles.down32(x) and np.float32(tiles.up32(x)) == tiles.up32(x)


@settings(max_examples=60, deadline=None)
@given(exponent=st.integers(-1074, 10), offset_exponent=st.integers(-1074, 0), dim=st.integers(1, 3))
def test_points_at_or_next_to_centres_at_every_magnitude(exponent: int, offset_exponent: int, dim: int) -> None:
    """A point at a centre (squared distance 0) or a subnormal step away: the filter's underflow
    rule leaves tiny reaches to exact arithmetic and decides the others at once, never wrongly."""
    radius = float(np.ldexp(1.0, exponent))
    centres = np.array([[1.0] * dim, [1.0 + 2.0 ** -40] * dim, [2.0] * dim])
    radii = np.array([radius, radius, 0.0])
    tree = ViewDistanceTree(4.0, dim=dim)
    handles = tree.insert_many(centres, radii)
    for p in (centres[0], centres[2], centres[0] + np.ldexp(1.0, offset_exponent)):
        want = {int(handles[i]) for i in _brute(centres, radii, p)}
        assert set(tree.query(p, exact=True).tolist()) == want
        found, counts = tree.query_many(np.repeat(p[None], 70, axis=0), exact=True)
        assert set(found[: counts[0]].tolist()) == want


def _compacted_tile_areas(monkeypatch: pytest.MonkeyPatch, spatial: bool) -> tuple[float, ViewDistanceTree]:
    """Nodes created in a random order (small batches all over the world), most objects removed so that
    the pool compacts; the summed area of the tiles' boxes afterwards."""
    from culling.tree.pool import BlockPool

    if not spatial:
        monkeypatch.setattr(BlockPool, "spatial_order", lambda self, starts: np.arange(starts.shape[0]))
    rng = np.random.default_rng(9)
    tree = ViewDistanceTree(1024.0, dim=2)
    handles = np.concatenate([tree.insert_many(rng.uniform(0.0, 1024.0, (40, 2)), rng.uniform(3.0, 7.0, 40))
                              for _ in range(200)])
    rows = tree._pool.rows
    tree.remove_many(handles[np.arange(handles.size) % 16 != 0])
    assert tree._pool.rows < rows  # compacted
    tree.check_invariants()
    used = tiles.tiles_for(tree._pool.top)
    box = tree._pool.tile_box[:, :used].T  # a tile a row
    box = box[np.isfinite(box[:, 0])]
    return float(np.prod(box[:, 2:4] - box[:, 0:2], axis=1).sum()), tree


def test_a_compaction_lays_the_blocks_along_a_curve(monkeypatch: pytest.MonkeyPatch) -> None:
    """A compaction packs the blocks in a Morton order of their places (BlockPool.spatial_order): tiles
    that span several small nodes' blocks span neighbours, far smaller than in node order; and the
    answers stay exact."""
    along, tree = _compacted_tile_areas(monkeypatch, True)
    monkeypatch.undo()
    in_node_order, _ = _compacted_tile_areas(monkeypatch, False)
    assert along < in_node_order / 3  # 5.3 times smaller when written
    rng = np.random.default_rng(10)
    live = tree._handles()
    centres, radii = tree.centres_of(live), tree.radii_of(live)
    for p in rng.uniform(0.0, 1024.0, (30, 2)):
        want = {int(live[i]) for i in _brute(centres, radii, p)}
        assert set(tree.query(p, exact=True).tolist()) == want
