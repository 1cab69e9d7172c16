"""Tile summaries (culling.core.tiles): the exact query skips far tiles and never an answer.

The stateful machines and the invariant checker already hold every summary
to "each live row inside its tile's box, its radius within the tile's" after
any sequence of mutations; here the skip itself is aimed at its edges.
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from culling import ViewDistanceTree
from culling.core.tiles import TILE_ROWS, next_near_rows


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
    box = tree._pool.tile_box[: tree._pool.top // TILE_ROWS]
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


def test_without_summaries_a_run_is_one_range() -> None:
    empty = np.empty((0, 5))
    assert next_near_rows(3, 700, np.zeros(2), 1.0, empty, True) == (3, 700)
    assert next_near_rows(700, 700, np.zeros(2), 1.0, empty, True) == (700, 700)


def test_far_tiles_are_skipped() -> None:
    """Every tile of a run far away: nothing to test; one near tile in the middle: just its rows."""
    box = np.empty((3, 5))
    box[:, :2], box[:, 2:4], box[:, 4] = 0.0, 1.0, 1.0   # boxes [0, 1]^2, radius 1
    box[1, :2], box[1, 2:4] = 10.0, 11.0                   # tile 1 at [10, 11]^2
    p = np.array([10.5, 10.5])
    assert next_near_rows(0, 3 * TILE_ROWS, p, 1.0, box, True) == (TILE_ROWS, 2 * TILE_ROWS)
    assert next_near_rows(2 * TILE_ROWS, 3 * TILE_ROWS, p, 1.0, box, True) == (3 * TILE_ROWS, 3 * TILE_ROWS)
    # exactly the tile's reach away along x (12 - 11 = 1 = radius): near
    assert next_near_rows(0, 3 * TILE_ROWS, np.array([12.0, 10.5]), 1.0, box, True)[0] == TILE_ROWS
    assert next_near_rows(0, 3 * TILE_ROWS, np.array([np.nextafter(12.0, 13.0), 10.5]), 1.0,
                          box, True) == (3 * TILE_ROWS, 3 * TILE_ROWS)


def test_sphere_tiles_far_in_euclidean_distance_are_skipped() -> None:
    """A tile near along every axis but farther than its reach diagonally is far for spheres and near
    for cubes; one at its reach diagonally (up to the rounding of the gaps) is near for both."""
    box = np.empty((1, 5))
    box[0, :2], box[0, 2:4], box[0, 4] = 0.0, 1.0, 1.0     # box [0, 1]^2, radius 1
    diagonal = np.array([1.8, 1.8])                         # gaps 0.8 and 0.8: 1.13 apart
    assert next_near_rows(0, TILE_ROWS, diagonal, 1.0, box, True) == (TILE_ROWS, TILE_ROWS)
    assert next_near_rows(0, TILE_ROWS, diagonal, 1.0, box, False) == (0, TILE_ROWS)
    at_reach = np.array([1.6, 1.8])                         # gaps 0.6 and 0.8: 1 apart, 1 + 2**-52 in floats
    assert next_near_rows(0, TILE_ROWS, at_reach, 1.0, box, True) == (0, TILE_ROWS)
    assert next_near_rows(0, TILE_ROWS, at_reach, 0.5, box, True) == (TILE_ROWS, TILE_ROWS)


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
