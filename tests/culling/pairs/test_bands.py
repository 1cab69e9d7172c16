"""overlapping_pairs by bands of levels (culling.pairs.bands) against the dual walk and brute force.

The bands' join and the tree's dual walk (:func:`culling.pairs.join.dual_pairs`)
are two independent algorithms over the same members; both must give every
meeting pair once.  The worlds are chosen to exercise each part of the
bands: one band (a crowd of similar radii), several bands (a heavy tail,
radii over many levels: the cross-band windows), the last axis's runs at the
box's ends, a far origin (the windows' rounding margin), grown roots
(negative levels), clusters far apart (the fallback to the dual walk) and
exact ties (the exact decision).
"""

from __future__ import annotations

import copy
import itertools
import os
import pickle
import subprocess
import sys
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from culling import DenseViewDistanceGrid, ViewDistanceTree, release_scratch
from culling.core.lattice import ANCHOR
from culling.pairs import bands
from culling.pairs import join as pairs


def brute(centres: np.ndarray, radii: np.ndarray, handles: np.ndarray, shape: str) -> set[tuple[int, int]]:
    """Every meeting pair by handles: floats, and ``fractions.Fraction`` where they are within rounding of a tie."""
    n = len(radii)
    out = set()
    for i in range(n):
        d = centres[i + 1:] - centres[i]
        limit = radii[i] + radii[i + 1:]
        with np.errstate(under="ignore"):  # tiny squares: within 1e-300 of a tie, decided in fractions below
            if shape == "cube":
                dist, bound = np.abs(d).max(axis=1), limit
            else:
                dist, bound = (d * d).sum(axis=1), limit * limit
            near = np.abs(dist - bound) <= 1e-9 * bound + 1e-300
        for j in np.nonzero((dist <= bound) | near)[0] + i + 1:
            if near[j - i - 1]:
                offsets = [Fraction(a) - Fraction(b) for a, b in zip(centres[i], centres[j])]
                reach = Fraction(radii[i]) + Fraction(radii[j])
                exact = max(map(abs, offsets)) if shape == "cube" else sum(x * x for x in offsets)
                if exact > (reach if shape == "cube" else reach * reach):
                    continue
            a, b = int(handles[i]), int(handles[j])
            out.add((min(a, b), max(a, b)))
    return out


def as_set(first: np.ndarray, second: np.ndarray) -> set[tuple[int, int]]:
    got = list(zip(first.tolist(), second.tolist()))
    assert len(got) == len(set(got)), "a pair reported twice"
    assert all(a < b for a, b in got)
    return set(got)


def layout_of(tree: ViewDistanceTree) -> bands.Layout:
    nodes = tree._nodes.struct()
    return bands.build((nodes.start, nodes.members, nodes.level, nodes.cells), tree._pool.handles,
                       tree._pool.columns, float(ANCHOR), False, len(tree))


def dual(tree: ViewDistanceTree) -> set[tuple[int, int]]:
    nodes = tree._nodes.struct()
    return as_set(*pairs.dual_pairs(tree._root, nodes.child, nodes.start, nodes.members, tree._pool.handles,
                                    tree._pool.columns, len(tree), tree._cube, tree.shape))


def runs_and_split(grid: DenseViewDistanceGrid) -> tuple[tuple, tuple]:
    """The grid's cells as the broad phase's runs, before and after :func:`split_crowded`, as
    ``DenseViewDistanceGrid.overlapping_pairs`` makes them."""
    from culling.pairs import cell_tree

    occupied, at = grid._occupied()
    cells = grid._cells
    runs = cell_tree.cell_runs(occupied, at, cells.start, cells.count, grid._geo.offsets, grid.dim)
    split, _, _ = cell_tree.split_crowded(runs, cells.handles, cells.columns, grid.finest_level, grid.origin,
                                          grid.size)
    return runs, split


def world(kind: str, n: int, dim: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray, float]:
    edge = float((n * 6.0 ** dim) ** (1.0 / dim))
    centres = rng.uniform(0, edge, (n, dim))
    radii = rng.uniform(0.5, 2.5, n)
    if kind == "heavy":  # 2% of radii 10-25: a band of their own
        large = rng.random(n) < 0.02
        radii[large] = rng.uniform(10, 25, large.sum())
    elif kind == "spread":  # radii over many levels: several bands, windows across them
        radii = 2.0 ** rng.uniform(-6, 4, n)
    elif kind == "edges":  # centres on the cells' faces of several levels, radii on class boundaries
        centres = np.round(centres / 4.0) * 4.0 + rng.choice([0.0, 2.0 ** -40, -(2.0 ** -40)], (n, dim))
        centres = np.clip(centres, 0.0, edge)
        radii = rng.choice([0.5, 1.0, 2.0, 4.0], n) * rng.choice([1.0, 1.0 - 2.0 ** -52], n)
    return centres, radii, edge


@pytest.mark.parametrize("dim", [1, 2, 3])
@pytest.mark.parametrize("shape", ["sphere", "cube"])
@pytest.mark.parametrize("kind", ["crowd", "heavy", "spread", "edges"])
def test_bands_agree_with_the_dual_walk_and_brute_force(dim, shape, kind):
    rng = np.random.default_rng(hash((dim, shape, kind)) % 2**32)
    centres, radii, edge = world(kind, 1500, dim, rng)
    tree = ViewDistanceTree(size=edge, dim=dim, shape=shape)
    handles = tree.insert_many(centres, radii)
    assert layout_of(tree).ok
    got = as_set(*tree.overlapping_pairs())
    assert got == dual(tree) == brute(centres, radii, handles, shape)
    if radii.max() < edge / 2 * 0.99:  # the dense grid, over the same world
        grid = DenseViewDistanceGrid(size=edge * 1.001, origin=np.full(dim, -edge * 0.0005), dim=dim, shape=shape,
                                     min_radius=max(float(radii.min()), edge * 2.0 ** -8))
        grid_handles = grid.insert_many(centres, radii)
        assert as_set(*grid.overlapping_pairs()) == brute(centres, radii, grid_handles, shape)


@pytest.mark.parametrize("dim", [1, 2, 3])
@pytest.mark.parametrize("shape", ["sphere", "cube"])
def test_a_crowded_finest_cell_of_the_grid_is_split_and_its_pairs_stay_exact(dim, shape):
    """Thousands of objects far smaller than ``min_radius`` share a few finest cells (one crowd on the
    faces at 0, one against the world's far edge): the grid splits those cells by finer levels before
    the join (every member was tested against its whole cell), and the pairs are brute force's,
    exact ties included (centres on a 1/64 lattice, radii of 0 and powers of two)."""
    from culling.pairs import cell_tree

    rng = np.random.default_rng(7 * dim + (shape == "cube"))
    grid = DenseViewDistanceGrid(64.0, origin=np.full(dim, -32.0), dim=dim, shape=shape, min_radius=4.0)
    n = 1600
    centres = np.concatenate([rng.uniform(-1.5, 1.5, (n // 2, dim)), rng.uniform(30.5, 32.0, (n // 2, dim))])
    centres[::3] = np.round(centres[::3] * 64.0) / 64.0                    # on a lattice: exact ties
    centres = np.minimum(centres, np.nextafter(32.0, 0.0))                  # the world is half-open
    radii = rng.choice([0.0, 2.0 ** -7, 2.0 ** -6, 0.01, 0.03], n)
    radii[rng.random(n) < 0.01] = 5.0                                       # a few on the finest level itself
    handles = grid.insert_many(centres, radii)
    runs, split = runs_and_split(grid)
    assert runs[1].max() > cell_tree.CROWDED and split[1].size > runs[1].size      # crowded, then split
    assert sorted(split[1].tolist()) != sorted(runs[1].tolist()) and split[1].sum() == runs[1].sum()
    assert as_set(*grid.overlapping_pairs()) == brute(centres, radii, handles, shape)
    grid.check_invariants()


@settings(max_examples=80, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(data=st.data(), dim=st.integers(1, 3), shape=st.sampled_from(["sphere", "cube"]),
       origin=st.sampled_from([0.0, -20.0, 0.1]), size=st.sampled_from([64.0, 7.3]))
def test_every_finest_cell_split_gives_brute_forces_pairs(data, dim, shape, origin, size, monkeypatch):
    """:func:`split_crowded` with every finest cell counted crowded, on worlds aimed at the edges: centres
    on the faces of the finest and finer levels (and an ulp off), radii at class edges, 0 and subnormal,
    the world's far edge; the pairs are brute force's."""
    from culling.pairs import cell_tree

    monkeypatch.setattr(cell_tree, "CROWDED", 0)
    grid = DenseViewDistanceGrid(size, origin=np.full(dim, origin), dim=dim, shape=shape, min_radius=size / 16)
    top = np.nextafter(origin + size, -np.inf)
    step = size / 256

    def coordinate() -> float:
        x = origin + data.draw(st.integers(0, 256), label="k") * step
        if data.draw(st.booleans(), label="an ulp off"):
            with np.errstate(under="ignore"):
                x = np.nextafter(x, data.draw(st.sampled_from([-np.inf, np.inf]), label="side"))
        return float(min(max(x, origin), top))

    n = data.draw(st.integers(2, 40), label="n")
    centres = np.array([[coordinate() for _ in range(dim)] for _ in range(n)])
    radii = np.array([data.draw(st.sampled_from([0.0, 5e-324, step / 2, step, step * (1 - 2.0 ** -52), size / 64,
                                                 size / 32, size / 20]), label="r") for _ in range(n)])
    handles = grid.insert_many(centres, radii)
    assert as_set(*grid.overlapping_pairs()) == brute(centres, radii, handles, shape)


@pytest.mark.parametrize("dim", [1, 2, 3])
def test_a_crowd_in_a_sliver_of_its_cell_is_split_as_finely_as_its_own_box_needs(dim):
    """The split's depth follows the crowd's box, not its cell: a crowd filling a thousandth of its cell
    stayed a few hundred to a cell (100k objects in 3-D: 9.6 s a call against the tree's 0.02 s)."""
    from culling.pairs import cell_tree

    rng = np.random.default_rng(dim)
    grid = DenseViewDistanceGrid(1024.0, dim=dim, min_radius=4.0)
    cell = 1024.0 / 2 ** grid.finest_level
    n = 4000
    centres = 5.3 * cell + rng.random((n, dim)) * cell * 0.001
    radii = np.full(n, cell * 1e-9)
    handles = grid.insert_many(centres, radii)
    runs, split = runs_and_split(grid)
    assert runs[1].max() == n and split[1].max() <= 16 * cell_tree.CROWD_DENSITY
    assert as_set(*grid.overlapping_pairs()) == brute(centres, radii, handles, "sphere")


def test_a_heavy_tail_is_a_band_of_its_own():
    rng = np.random.default_rng(3)
    centres, radii, edge = world("heavy", 4000, 3, rng)
    tree = ViewDistanceTree(size=edge, dim=3)
    tree.insert_many(centres, radii)
    lay = layout_of(tree)
    assert lay.ok and lay.band.shape[0] >= 2
    rows = lay.band[:, bands.END_ROW] - lay.band[:, bands.FIRST_ROW]
    assert rows.sum() == 4000 and rows[-1] > 3800  # the crowd is the finest band, last in rows
    assert (lay.scales[:-1, bands.RADIUS] >= 10.0).all() and lay.scales[-1, bands.RADIUS] <= 2.5


@pytest.mark.parametrize("shape", ["sphere", "cube"])
def test_cross_band_chords_keep_partners_on_their_ends(shape):
    """A large sphere's window along the last axis is its chord widened by the roundings only
    (:func:`culling.pairs.bands._chord_rounding`), no whole cell: partners with the fine band's
    largest radius exactly touching at the chord's ends (its reach is the large radius plus that
    largest), centred on the fine band's bucket faces, and one ulp beyond, are decided right."""
    rng = np.random.default_rng(8)
    crowd = 8_000  # dense enough that the large spheres make a band of their own
    centres = [rng.uniform(0.0, 1.0, (crowd, 3)) * [128.0, 128.0, 192.0]]
    radii = [rng.uniform(0.5, 2.5, crowd)]
    offsets = np.array([(0, 0, 20), (0, 0, -20), (20, 0, 0), (0, -20, 0), (0, 12, 16), (12, 0, -16),
                        (16, 12, 0), (0, 16, 20), (20, -20, 20)], dtype=float)  # the last three: cube corners
    for k in range(48):
        # the far end along the last axis, c_z + 20, on a face of every fine level (a multiple of 16)
        c = np.array([40.0 + 4 * (k % 11), 48.0 + 8 * (k // 11), 16.0 * (3 + k % 9) - 20.0])
        big = 17.5 if k % 2 else float(np.nextafter(17.5, 0.0))  # touching, or one ulp short
        centres.append(c[None, :])
        radii.append(np.array([big]))
        centres.append(c + offsets)
        radii.append(np.full(len(offsets), 2.5))  # the crowd's largest radius
    everything = np.concatenate(centres)
    sizes = np.concatenate(radii)
    tree = ViewDistanceTree(size=256.0, dim=3, shape=shape)
    handles = tree.insert_many(everything, sizes)
    lay = layout_of(tree)
    assert lay.ok and lay.band.shape[0] >= 2
    expected = brute(everything, sizes, handles, shape)
    assert as_set(*tree.overlapping_pairs()) == dual(tree) == expected
    ties = {(int(handles[a]), int(handles[b])) for a in range(crowd, len(sizes)) for b in range(a + 1, len(sizes))
            if sizes[a] > 10.0 and b <= a + len(offsets)}
    assert ties & expected  # the touching partners are found (the ulp-short ones are not: brute decides)


def test_clusters_far_apart_fall_back_to_the_dual_walk():
    rng = np.random.default_rng(4)
    centres = np.concatenate([rng.uniform(0, 1, (600, 3)), rng.uniform(0, 1, (600, 3)) + 1e6])
    radii = rng.uniform(0.01, 0.05, 1200)
    tree = ViewDistanceTree(size=1.0, dim=3)
    handles = tree.insert_many(centres, radii)
    assert not layout_of(tree).ok
    assert as_set(*tree.overlapping_pairs()) == brute(centres, radii, handles, "sphere")


@pytest.mark.parametrize("offset", [1e9, -3.5e12])
def test_a_far_origin_and_a_grown_root_keep_every_pair(offset):
    rng = np.random.default_rng(5)
    n = 1200
    centres = offset + rng.uniform(0, 60, (n, 3))
    radii = np.concatenate([rng.uniform(0.5, 2.5, n - 20), rng.uniform(8, 15, 20)])
    tree = ViewDistanceTree(size=8.0, origin=np.full(3, offset), dim=3)  # the root grows above level 0
    handles = tree.insert_many(centres, radii)
    assert tree.root_level < 0
    assert as_set(*tree.overlapping_pairs()) == dual(tree) == brute(centres, radii, handles, "sphere")


def test_touching_pairs_are_decided_exactly():
    # Pythagorean offsets: |c_i - c_j| == r_i + r_j exactly, and one ulp apart.
    centres, radii = [], []
    for k in range(200):
        base = np.array([10.0 * (k % 14), 10.0 * (k // 14), 5.0])
        centres += [base, base + [3.0, 4.0, 0.0]]
        radii += [2.0, 3.0 if k % 2 else np.nextafter(3.0, 0.0)]
    centres, radii = np.array(centres), np.array(radii)
    tree = ViewDistanceTree(size=160.0, dim=3)
    handles = tree.insert_many(centres, radii)
    got = as_set(*tree.overlapping_pairs())
    expected = {(int(handles[2 * k]), int(handles[2 * k + 1])) for k in range(200) if k % 2}
    assert got == expected


def test_pairs_follow_moves_between_calls():
    rng = np.random.default_rng(6)
    centres, radii, edge = world("crowd", 2000, 3, rng)
    tree = ViewDistanceTree(size=edge, dim=3)
    handles = tree.insert_many(centres, radii)
    for _ in range(4):
        centres = centres + rng.uniform(-1, 1, centres.shape) * radii[:, None] / 4
        tree.update_many(handles, centres, radii)
        assert as_set(*tree.overlapping_pairs()) == brute(centres, radii, handles, "sphere")
    gone = handles[::3]
    tree.remove_many(gone)
    keep = np.ones(len(handles), dtype=bool)
    keep[::3] = False
    assert as_set(*tree.overlapping_pairs()) == brute(centres[keep], radii[keep], handles[keep], "sphere")
    tree.remove_many(handles[keep])
    assert tree.overlapping_pairs()[0].size == 0


@pytest.mark.parametrize("lead", [0, 1, 2, 3])
def test_forward_lines_name_each_neighbouring_pair_once(lead):
    forward = [tuple(f) for f in bands.forward_lines(lead).tolist()]
    everything = [d for d in itertools.product((-1, 0, 1), repeat=lead) if any(d)]
    assert len(forward) == len(everything) // 2 == len(set(forward))
    assert all(tuple(-x for x in d) not in forward for d in forward)
    assert {d for d in everything if d in forward or tuple(-x for x in d) in forward} == set(everything)


def test_gather_in_parts_matches_one_part() -> None:
    """The copy cut into parts (the library's threads) gives every cell the same members as one
    part, with the same centres and radii, and the same bands."""
    rng = np.random.default_rng(5)
    tree = ViewDistanceTree(size=256.0, dim=3)
    n = 3000
    centres = rng.uniform(0.0, 256.0, (n, 3))
    radii = np.where(rng.random(n) < 0.02, rng.uniform(8.0, 20.0, n), rng.uniform(0.5, 2.5, n))
    handles = tree.insert_many(centres, radii)
    tree.update_many(handles[::3], centres[::3] + rng.uniform(-2.0, 2.0, (len(handles[::3]), 3)))
    nodes = tree._nodes.struct()
    runs = (nodes.start, nodes.members, nodes.level, nodes.cells)
    one = bands.build(runs, tree._pool.handles, tree._pool.columns, float(ANCHOR), False, n)
    many = bands.build(runs, tree._pool.handles, tree._pool.columns, float(ANCHOR), True, n)
    assert one.ok and many.ok and len(one.band) >= 2
    assert np.array_equal(one.cell_start, many.cell_start) and np.array_equal(one.band, many.band)
    assert np.array_equal(one.scales, many.scales)
    dim = 3
    for c in range(len(one.cell_start) - 1):
        lo, hi = one.cell_start[c], one.cell_start[c + 1]
        a, b = np.argsort(one.handles[lo:hi]), np.argsort(many.handles[lo:hi])
        assert np.array_equal(one.handles[lo:hi][a], many.handles[lo:hi][b])
        assert np.array_equal(one.columns[:dim + 1, lo:hi][:, a], many.columns[:dim + 1, lo:hi][:, b])
    rows = tree._pool.handles >= 0
    expected = dict(zip(tree._pool.handles[rows].tolist(), tree._pool.columns[dim, rows].tolist()))
    assert {h: expected[h] for h in many.handles.tolist()} == dict(zip(many.handles.tolist(),
                                                                     many.columns[dim].tolist()))


def test_a_kept_output_buffer_is_written_again_only_once_nothing_outside_holds_it():
    cache = bands.PlanCache()
    first, second = cache.room(1000)
    kept = id(first)  # alive while the cache keeps it: its id names it
    again, _ = cache.room(1000)
    assert id(again) != kept  # the caller still holds the first buffer
    other = id(again)
    del first, second, again
    reused, _ = cache.room(500)
    assert id(reused) == kept  # let go of: written again
    view = reused[:10]
    del reused
    assert id(cache.room(900)[0]) == other  # a view holds its buffer: the other one
    third, _ = cache.room(900)  # neither is free (the view; the answer just taken was dropped: free again)
    assert id(third) == other
    fourth, _ = cache.room(900)
    assert id(fourth) not in (kept, other) and len(cache._kept) == bands.KEPT_BUFFERS
    assert not np.shares_memory(fourth, view) and not np.shares_memory(third, view)
    huge = cache.room(bands.KEPT_BYTES // 16)  # too large to keep
    assert all(pair[0] is not huge[0] for pair in cache._kept)


def test_release_scratch_drops_the_kept_output_buffers_and_leaves_held_answers_alone():
    cache = bands.PlanCache()
    held, _ = cache.room(1000)
    free = cache.room(1000)[0].copy()  # the second buffer, let go of at once
    assert len(cache._kept) == 2
    held[:] = 7
    release_scratch()
    assert cache._kept == [] and (held == 7).all() and free.shape == (1000 + 1000 // 8,)
    assert id(cache.room(10)[0]) != id(held)  # kept again from new buffers


@pytest.mark.parametrize("kind", ["tree", "grid"])
def test_overlapping_pairs_reuse_their_buffers_only_after_the_caller_lets_go(kind):
    """Frames whose answers the caller drops or keeps in turn: every answer is the brute force's, and an
    answer still held is never written into by a later frame."""
    rng = np.random.default_rng(17)
    n = 1500
    index = (ViewDistanceTree(size=256.0, dim=3) if kind == "tree"
             else DenseViewDistanceGrid(size=256.0, dim=3, min_radius=0.25))
    centres = rng.uniform(20.0, 236.0, (n, 3))
    radii = np.where(rng.random(n) < 0.02, rng.uniform(10.0, 20.0, n), rng.uniform(0.5, 2.5, n))
    handles = np.asarray(index.insert_many(centres, radii))
    held = []  # (answer, its copy when returned)
    for frame in range(6):
        centres = centres + rng.uniform(-0.5, 0.5, centres.shape)
        index.update_many(handles, centres)
        first, second = index.overlapping_pairs()
        assert set(zip(first.tolist(), second.tolist())) == brute(centres, radii, handles, "sphere")
        assert len(first) == len(set(zip(first.tolist(), second.tolist())))
        for (a, b), _ in held:
            assert not np.shares_memory(a, first) and not np.shares_memory(b, second)
        if frame % 2 == 0:
            held.append(((first, second), (first.copy(), second.copy())))
    for (a, b), (a0, b0) in held:  # untouched since they were returned
        assert np.array_equal(a, a0) and np.array_equal(b, b0)


@pytest.mark.parametrize("kind", ["tree", "grid"])
def test_the_bands_are_kept_while_they_fit_and_made_again_when_not(kind):
    """A moving crowd's next call uses the last call's bands (the same plan object); a member outside
    every band's box, a radius on a new level, more than twice the members and REPLAN_EVERY uses
    each make a new plan; every answer is the brute force's."""
    rng = np.random.default_rng(11)
    index = (ViewDistanceTree(size=256.0, dim=3) if kind == "tree"
             else DenseViewDistanceGrid(size=256.0, dim=3, min_radius=0.25))
    plans = index._band_plans

    def add(centres: np.ndarray, radii: np.ndarray) -> np.ndarray:
        return np.asarray(index.insert_many(centres, radii))

    def pairs_checked() -> None:
        live = np.asarray(index.handles())
        expected = brute(index.centres_of(live), index.radii_of(live), live, "sphere")
        assert as_set(*index.overlapping_pairs()) == expected

    radii = rng.uniform(0.5, 2.5, 1500)
    centres = rng.uniform(96.0, 160.0, (1500, 3))
    handles = add(centres, radii)
    pairs_checked()
    kept = plans.plan
    assert kept is not None
    for _ in range(3):  # small moves: the plan fits
        centres = centres + rng.uniform(-0.5, 0.5, centres.shape)
        index.update_many(handles, centres, radii)
        pairs_checked()
        assert plans.plan is kept
    index.update_many(handles[:40], rng.uniform(10.0, 20.0, (40, 3)))  # out of every box (a cell of room)
    pairs_checked()
    assert plans.plan is not kept
    kept = plans.plan
    add(rng.uniform(96.0, 160.0, (30, 3)), np.full(30, 0.3))  # a level the plan has no band for
    pairs_checked()
    assert plans.plan is not kept
    kept = plans.plan
    add(rng.uniform(96.0, 160.0, (3100, 3)), rng.uniform(0.5, 2.5, 3100))  # more than twice the members
    pairs_checked()
    assert plans.plan is not kept
    kept = plans.plan
    for _ in range(bands.REPLAN_EVERY):
        index.overlapping_pairs()
    assert plans.plan is kept
    pairs_checked()
    assert plans.plan is not kept


def test_a_copy_makes_its_own_bands():
    rng = np.random.default_rng(12)
    centres, radii, edge = world("crowd", 800, 3, rng)
    tree = ViewDistanceTree(size=edge, dim=3)
    handles = tree.insert_many(centres, radii)
    before = as_set(*tree.overlapping_pairs())
    twin = pickle.loads(pickle.dumps(tree))
    assert twin._band_plans.plan is None and twin._band_plans is not tree._band_plans
    assert as_set(*twin.overlapping_pairs()) == before == brute(centres, radii, handles, "sphere")
    assert copy.deepcopy(tree)._band_plans is not tree._band_plans


@pytest.mark.parametrize("kind", ["tree", "grid"])
def test_a_kept_plan_whose_last_band_a_removal_emptied_still_joins(kind):
    """The bands are kept from one call to the next while every member fits them: a removal can
    leave a band with no members (here the radius-0 object's, the finest), and its largest radius
    must not be read past the gathered rows (hypothesis found it on a 1-D dense grid)."""
    from culling import DenseViewDistanceGrid, ViewDistanceTree

    structure = ViewDistanceTree(16.0, origin=(-8.0,), dim=1) if kind == "tree" else \
        DenseViewDistanceGrid(16.0, origin=(-8.0,), dim=1)
    centres = np.array([[0.0], [0.0], [2.39097819], [-4.50074179e-57], [1.08269828e-90]])
    radii = np.array([4.0, 0.0, 4.0, 4.0, 4.0])
    handles = structure.insert_many(centres, radii)
    first = set(zip(*(a.tolist() for a in structure.overlapping_pairs())))
    structure.remove(int(handles[1]))
    second = set(zip(*(a.tolist() for a in structure.overlapping_pairs())))
    keep = [0, 2, 3, 4]
    want = {(int(handles[i]), int(handles[j])) for a, i in enumerate(keep) for j in keep[a + 1:]
            if abs(centres[i, 0] - centres[j, 0]) <= radii[i] + radii[j]}
    assert {tuple(sorted(p)) for p in second} == {tuple(sorted(p)) for p in want}
    assert len(first) == len(second) + 4


@pytest.mark.parametrize("shape", ["sphere", "cube"])
@pytest.mark.parametrize("kind", ["heavy", "edges"])
def test_pairs_written_on_threads_match_one_thread(monkeypatch, shape, kind):
    """Both passes' chunks in one batch, each chunk's pairs written apart and joined, or every
    chunk's runs noted and their pairs written in parts at the places their noted rows would take,
    then moved up (bands.written on the library's threads): the same pairs as on one thread, ties
    decided exactly."""
    from culling.runtime.threads import set_thread_count, thread_count

    rng = np.random.default_rng(11)
    centres, radii, edge = world(kind, 2500, 3, rng)
    tree = ViewDistanceTree(size=edge, dim=3, shape=shape)
    handles = tree.insert_many(centres, radii)
    expected = brute(centres, radii, handles, shape)
    assert as_set(*tree.overlapping_pairs()) == expected  # below PARALLEL_MIN_OBJECTS: one part
    lay, origin = layout_of(tree), tree.origin  # the passes one call each, their pairs written apart
    coarse = int(lay.band[-1, bands.FIRST_ROW])
    parts = [bands.band_cells(lay, 0, len(lay.cell_start) - 1, origin, tree.size, shape == "cube"),
             bands.cross_rows(lay, 0, coarse, origin, tree.size, shape == "cube")]
    first, second = pairs._settled(parts, lay.columns, lay.handles, shape)
    assert as_set(first, second) == expected
    before = thread_count()
    monkeypatch.setattr(pairs, "PARALLEL_MIN_OBJECTS", 0)
    monkeypatch.setattr(bands, "PARALLEL_WRITE_MIN", 0)
    set_thread_count(3)
    try:
        assert as_set(*tree.overlapping_pairs()) == expected  # each chunk's pairs apart, joined after
        monkeypatch.setattr(pairs, "ONE_OUTPUT_MIN", 0)
        assert as_set(*tree.overlapping_pairs()) == expected  # every chunk's runs, then one output
        set_thread_count(1)
        assert as_set(*tree.overlapping_pairs()) == expected
    finally:
        set_thread_count(before)


@pytest.mark.parametrize("shape", ["sphere", "cube"])
@pytest.mark.parametrize("kind", ["heavy", "edges"])
@pytest.mark.parametrize("structure", ["tree", "grid"])
def test_an_answer_too_large_to_keep_is_written_in_pieces_and_joined(monkeypatch, shape, kind, structure):
    """With no room kept (KEPT_BYTES 0) every answer is one too large to keep: each chunk's pairs into
    buffers of their own, joined after (bands._written_apart, output.joined), on three threads and on
    one: the same pairs, ties decided exactly."""
    from culling.runtime.threads import set_thread_count, thread_count

    rng = np.random.default_rng(12)
    centres, radii, edge = world(kind, 2500, 3, rng)
    if structure == "tree":
        s = ViewDistanceTree(size=edge, dim=3, shape=shape)
    else:
        s = DenseViewDistanceGrid(size=edge * 1.001, origin=np.full(3, -edge * 0.0005), dim=3, shape=shape,
                                  min_radius=max(float(radii.min()), edge * 2.0 ** -8))
    handles = s.insert_many(centres, radii)
    expected = brute(centres, radii, handles, shape)
    monkeypatch.setattr(bands, "KEPT_BYTES", 0)
    monkeypatch.setattr(pairs, "PARALLEL_MIN_OBJECTS", 0)
    monkeypatch.setattr(pairs, "ONE_OUTPUT_MIN", 0)
    before = thread_count()
    try:
        for threads in (3, 1):
            set_thread_count(threads)
            assert as_set(*s.overlapping_pairs()) == expected
    finally:
        set_thread_count(before)


def test_joined_moves_every_piece_in_order_and_lets_each_go():
    from culling.pairs.output import joined, piece_buffers

    rng = np.random.default_rng(3)
    for _ in range(300):
        pieces, want = [], []
        for _ in range(rng.integers(1, 6)):
            room = int(rng.integers(0, 9))
            first, second = piece_buffers(room) if rng.random() < 0.5 else (np.empty(room, np.int64),) * 2
            count = int(rng.integers(0, room + 1))
            first[:count] = rng.integers(0, 100, count)
            second[:count] = first[:count] + 1 if first is not second else first[:count]
            want += list(zip(first[:count].tolist(), second[:count].tolist()))
            pieces.append((first, second, count))
        many = len(pieces) > 1
        got_first, got_second = joined(pieces)
        assert pieces == []
        assert list(zip(got_first.tolist(), got_second.tolist())) == want
        assert got_first.dtype == got_second.dtype == np.int64
        if many:  # a new answer, the pieces' memory let go
            assert got_first.flags.owndata and got_second.flags.owndata


def test_piece_buffers_are_writable_int64_of_the_room_asked():
    from culling.pairs.output import piece_buffers

    for room in (0, 1, 1000, 1 << 20):
        first, second = piece_buffers(room)
        assert first.shape == second.shape == (room,) and first.dtype == np.int64 and first.flags.writeable
        first[:] = 7
        second[:] = 8
        assert (first == 7).all() and (second == 8).all()


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
def test_an_answer_in_piece_buffers_is_copied_on_write_after_a_fork():
    """An answer can be views of a piece's buffers (one piece alone).  Mapped shared, a forked child's
    writes to its answer showed in the parent's, where NumPy's own arrays are copied on write."""
    from culling.pairs.output import joined, piece_buffers

    first, second = piece_buffers(1000)
    first[:10], second[:10] = 1, 2
    first, second = joined([(first, second, 10)])
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: writes its answer, says what it reads
        first[:] = 99
        os.write(write, bytes([int(first[0])]))
        os._exit(0)
    os.close(write)
    assert os.read(read, 1) == bytes([99])
    os.waitpid(pid, 0)
    assert first.tolist() == [1] * 10 and second.tolist() == [2] * 10


_PEAK_SCRIPT = """
import sys
import numpy as np
from culling import DenseViewDistanceGrid, ViewDistanceTree

def status(key):
    with open("/proc/self/status") as lines:
        return next(int(line.split()[1]) * 1024 for line in lines if line.startswith(key))

kind = sys.argv[1]
rng = np.random.default_rng(1)
s = ViewDistanceTree(size=128.0, dim=3) if kind == "tree" else DenseViewDistanceGrid(size=128.0, dim=3, min_radius=1.0)
s.insert_many(rng.uniform(0.0, 100.0, (60_000, 3)), np.full(60_000, 3.0))
first, second = s.overlapping_pairs()   # compiled, its plan kept
answer = first.nbytes + second.nbytes
del first, second
try:
    with open("/proc/self/clear_refs", "w") as peak:
        peak.write("5")                  # the process's peak resident memory starts again from here
except OSError:
    print("no clear_refs")
    sys.exit(0)
before = status("VmRSS:")
first, second = s.overlapping_pairs()
print(status("VmHWM:") - before, answer)
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads the peak from /proc")
@pytest.mark.parametrize("kind", ["tree", "grid"])
def test_a_crowded_worlds_pairs_take_little_more_memory_than_the_answer(kind):
    """60,000 objects of radius 3 in a 100-cube: 1.5 million pairs (23 MiB), screened from about four
    times as many candidates.  Their buffers held the gaps between the chunks' pairs, then a copy of
    the answer: the call raised the peak by 3.95 times the answer; now 1.4 times."""
    root = Path(__file__).resolve().parents[3]
    env = dict(os.environ, PYTHONPATH=str(root) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    result = subprocess.run([sys.executable, "-c", _PEAK_SCRIPT, kind], env=env, capture_output=True, text=True,
                            timeout=600, cwd=root)
    assert result.returncode == 0, result.stderr[-3000:]
    if result.stdout.startswith("no clear_refs"):
        pytest.skip("this kernel does not let a process reset its peak (/proc/self/clear_refs)")
    peak, answer = map(int, result.stdout.split())
    assert peak < 2 * answer, f"the call raised the peak by {peak / answer:.2f} times its answer"


def test_closing_the_gaps_keeps_every_pair_once_and_moves_only_those_past_the_total():
    # The parts' pairs written at their noted rows, a gap after each: closed up in place, every pair
    # once (a multiset, not a set: a pair moved twice and one lost would pass a set's equality)
    rng = np.random.default_rng(7)
    for _ in range(2_000):
        noted = rng.integers(0, 6, rng.integers(1, 8))
        starts = np.concatenate([[0], np.cumsum(noted)[:-1]]).astype(np.int64)
        ends = starts + np.array([rng.integers(0, n + 1) for n in noted], dtype=np.int64)
        first = np.full(int(noted.sum()), -1, dtype=np.int64)
        second = first.copy()
        written = [(row, -row) for p in range(noted.size) for row in range(starts[p], ends[p])]
        for a, b in written:
            first[a], second[a] = a, b
        kept = [(a, b) for a, b in written if a < len(written)]
        k = bands._closed_up(first, second, starts, ends)
        assert k == len(written)
        assert sorted(zip(first[:k].tolist(), second[:k].tolist())) == sorted(written)
        assert all(first[a] == a for a, _ in kept)  # a pair already below the total stays where it is
