"""The dense grid's query work is bounded by the cells it holds, not by the cells a window covers.

On the finest grids the grid allows (2**24 finest cells: 2**24 per axis in 1-D,
2**12 in 2-D, 2**8 in 3-D) a large ``scale``, a large probe radius or a point
far outside the world gives windows of up to every cell of a level.  Every
query method must still answer exactly (checked against the brute-force
model and ``Fraction`` truth) while the cells its walk looks at, counted by the
walk itself (:func:`culling.grid.walk.visit`'s ``examined``, read here by
wrapping the kernels' Python entry points), stay within
``levels x MAX_ENUMERATED_CELLS + non-empty cells`` per point.  Work is
counted, never timed.
"""

from __future__ import annotations

import copy
import pickle
from fractions import Fraction

import numpy as np
import pytest
from brute_force import BruteForce, check_trace, sorted_handles

import culling.grid.grid as dense_module
import culling.grid.walk as gridwalk
from culling import DenseViewDistanceGrid, ViewDistanceTree

SIZE = 1024.0
#: The finest level each dimension allows (MAX_FINEST_CELLS = 2**24 finest cells).
FINEST = {1: 24, 2: 12, 3: 8}
#: Far points (on every axis) and large scales: the windows they give cover up to every cell of a level.
FAR = (1e6, 1e100, -1e100)
SCALES = (1.0, 30.0, 1e6, 1e100)


class Work:
    """The cells each walk looked at, recorded from the kernels' own count (``examined``)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.calls: list[tuple[str, int]] = []
        for name in ("trace_visit", "visits", "grown_visits", "query"):
            monkeypatch.setattr(gridwalk, name, self._wrapped(name, getattr(gridwalk, name)))

    def _wrapped(self, name, function):
        def counted(*args):
            result = function(*args)
            self.calls.append((name, int(result[-1])))
            return result
        return counted

    def take(self) -> list[tuple[str, int]]:
        calls, self.calls = self.calls, []
        return calls


@pytest.fixture
def work(monkeypatch):
    return Work(monkeypatch)


def fine_grid(dim: int, shape: str, n: int = 120, seed: int = 0) -> tuple[DenseViewDistanceGrid, BruteForce]:
    """A grid at its finest allowed level, with radii of every level and a tight cluster."""
    grid = DenseViewDistanceGrid(SIZE, dim=dim, shape=shape, min_radius=SIZE / 2 ** (FINEST[dim] + 2))
    assert grid.finest_level == FINEST[dim]
    rng = np.random.default_rng(seed)
    centres = np.concatenate([rng.uniform(0, SIZE, (n - 20, dim)), rng.normal(300.0, 0.01, (20, dim))])
    radii = np.exp(rng.uniform(np.log(grid.min_radius / 4), np.log(SIZE / 2), n))
    radii = np.minimum(radii, np.nextafter(SIZE / 2, 0))
    radii[-20:] = grid.min_radius  # the cluster: the finest level
    radii[:3] = 0.0
    model = BruteForce(dim, shape)
    for h, c, r in zip(grid.insert_many(centres, radii).tolist(), centres, radii):
        model.insert(h, c, r)
    return grid, model


def points_for(dim: int, rng: np.random.Generator) -> list[np.ndarray]:
    """Points inside the world, far outside it on every axis, and far on one axis only."""
    points = [rng.uniform(0, SIZE, dim), np.full(dim, 300.0)]
    for far in FAR:
        points.append(np.full(dim, far))
        mixed = rng.uniform(0, SIZE, dim)
        mixed[0] = far
        points.append(mixed)
    return points


def bound(grid: DenseViewDistanceGrid, points: int = 1) -> int:
    """The most cells a walk of ``points`` points may look at: per level the smaller of its window and
    the larger of MAX_ENUMERATED_CELLS and the level's non-empty cells."""
    return points * ((grid.finest_level + 1) * dense_module.MAX_ENUMERATED_CELLS + grid.node_count)


def truth_probe(model: BruteForce, p, rho: float, scale: float) -> list[int]:
    """``|c - p| <= r * scale + rho`` (largest axis for cubes), in Fractions."""
    handles, centres, radii = model.arrays()
    out = []
    for h, c, r in zip(handles.tolist(), centres, radii.tolist()):
        offsets = [Fraction(float(a)) - Fraction(float(b)) for a, b in zip(c, p)]
        limit = Fraction(r) * Fraction(scale) + Fraction(rho)
        inside = (max(abs(d) for d in offsets) <= limit if model.shape == "cube"
                  else sum(d * d for d in offsets) <= limit * limit)
        if inside:
            out.append(h)
    return sorted(out)


def check_all_methods(grid: DenseViewDistanceGrid, model: BruteForce, work: Work, p: np.ndarray,
                      scale: float) -> None:
    """Every query method of the grid at ``p`` and ``scale``: exact answers, bounded work."""
    dim = grid.dim
    limit = bound(grid)
    expected = sorted(model.query(p, scale))
    # query, both forms, and the answers' spheres
    candidates = grid.query(p, scale=scale)
    assert sorted_handles(grid.query(p, exact=True, scale=scale)) == expected
    assert set(expected) <= set(candidates.tolist()) and len(set(candidates.tolist())) == candidates.size
    handles, centres, radii = grid.query_spheres(p, exact=True, scale=scale)
    assert sorted_handles(handles) == expected
    np.testing.assert_array_equal(centres, grid.centres_of(handles))
    np.testing.assert_array_equal(radii, grid.radii_of(handles))
    # query_many: the same answers, point by point (a second point inside the world)
    other = np.full(dim, SIZE / 3)
    for exact in (False, True):
        many, counts = grid.query_many(np.stack([p, other]), exact=exact, scale=scale)
        assert counts.sum() == many.size
        first = sorted_handles(many[: counts[0]])
        assert first == (expected if exact else sorted_handles(candidates))
        assert sorted_handles(many[counts[0]:]) == sorted_handles(grid.query(other, exact=exact, scale=scale))
    # trace and query_detailed: the same walk, its cells and their ancestors listed
    trace = grid.trace(p, scale=scale)
    assert sorted_handles(trace.candidates) == sorted_handles(candidates)
    listed = sum(level.nodes for level in trace.levels)
    assert listed <= (grid.finest_level + 1) * (grid.node_count + 1)
    check_trace(grid, p, candidates, dim, scale)
    details = grid.query_detailed(p, scale=scale, trace=True)
    assert sorted_handles(details.handles) == expected and details.candidates == candidates.size
    assert [lv.nodes for lv in details.trace.levels] == [lv.nodes for lv in trace.levels]
    # probes: a point probe, one reaching across the world, both exact and as supersets
    for rho in (0.0, SIZE):
        truth = truth_probe(model, p, rho, scale)
        assert sorted_handles(grid.overlapping(p, rho, exact=True, scale=scale)) == truth
        assert set(truth) <= set(grid.overlapping(p, rho, scale=scale).tolist())
        many, counts = grid.overlapping_many(np.stack([p, other]), [rho, 0.0], exact=True, scale=scale)
        assert sorted_handles(many[: counts[0]]) == truth
        assert sorted_handles(many[counts[0]:]) == truth_probe(model, other, 0.0, scale)
    calls = work.take()
    assert {name for name, _ in calls} == {"query", "visits", "grown_visits", "trace_visit"}
    for name, examined in calls:
        points = 1 if name in ("query", "trace_visit") else 2
        assert examined <= bound(grid, points), (name, examined, limit)


@pytest.mark.parametrize("shape", ["sphere", "cube"])
@pytest.mark.parametrize("dim", [1, 2, 3])
def test_every_query_method_at_large_scales_and_far_points_is_exact_and_bounded(dim, shape, work):
    grid, model = fine_grid(dim, shape)
    rng = np.random.default_rng(dim)
    for p in points_for(dim, rng):
        for scale in SCALES:
            check_all_methods(grid, model, work, p, scale)


@pytest.mark.parametrize("dim", [1, 2, 3])
def test_the_bound_holds_after_mutations_and_in_copies(dim, work):
    """The sorted index of non-empty cells is rebuilt after every mutation, and a copy has its own."""
    grid, model = fine_grid(dim, "sphere", n=60, seed=dim)
    rng = np.random.default_rng(10 + dim)
    p = np.full(dim, 1e6)
    check_all_methods(grid, model, work, p, 1e6)
    handles = grid.handles()
    moved = handles[::3]
    centres = rng.uniform(0, SIZE, (moved.size, dim))
    grid.update_many(moved, centres)
    for h, c in zip(moved.tolist(), centres):
        model.update(h, c, grid.radius(h))
    grid.remove_many(handles[1::3])
    for h in handles[1::3].tolist():
        model.remove(h)
    h = grid.insert(np.full(dim, 700.0), 2.0)
    model.insert(h, np.full(dim, 700.0), 2.0)
    grid.check_invariants()
    check_all_methods(grid, model, work, p, 1e6)
    for twin in (copy.deepcopy(grid), pickle.loads(pickle.dumps(grid))):
        extra = twin.insert(np.full(dim, 5.0), 1.0)
        assert extra in twin.query(np.full(dim, -1e100), scale=1e100)
        assert extra not in grid.query(np.full(dim, -1e100), scale=1e100)
    check_all_methods(grid, model, work, p, 1e6)


def test_a_huge_window_looks_at_the_non_empty_cells_not_the_window(work):
    """1-D, 2**24 finest cells, 3 objects: a scale covering the world looks at a few hundred cells at
    most (the window is 2**24 cells on the finest level alone)."""
    grid = DenseViewDistanceGrid(SIZE, dim=1, min_radius=SIZE / 2 ** 26)
    grid.insert_many([[1.0], [500.0], [1000.0]], [grid.min_radius] * 3)
    for p in (0.0, 1e6, -1e90):  # each object reaches 2**-16 * 1e100 = 1.5e95
        trace = grid.trace(p, scale=1e100)
        assert sorted_handles(trace.candidates) == [0, 1, 2] == sorted_handles(grid.query(p, True, 1e100))
        assert len(trace.levels) == 25 and trace.levels[-1].nodes == 3
    assert [lv.nodes for lv in grid.trace(-1e100, scale=1e100).levels] == [1]  # beyond every reach
    examined = [n for _, n in work.take()]
    assert max(examined) <= dense_module.MAX_ENUMERATED_CELLS + grid.node_count
    assert gridwalk.window_cells(1e100, 0.0, float(SIZE / 2 ** 24), 24, 1) == 2.0 ** 24


@pytest.mark.parametrize("dim", [2, 3])
def test_the_indexed_walk_lists_what_enumerating_the_window_lists(dim, monkeypatch):
    """Filtering the non-empty cells gives the cells enumerating the windows gives, in the same order."""
    rng = np.random.default_rng(dim)
    grid = DenseViewDistanceGrid(64.0, dim=dim, min_radius=0.2)
    grid.insert_many(rng.uniform(0, 64, (300, dim)), np.exp(rng.uniform(np.log(0.05), np.log(31.0), 300)))
    points = [rng.uniform(-10, 74, dim) for _ in range(20)] + [np.full(dim, 1e6)]
    listings = {}
    for limit in (0, 10 ** 12):  # the index wherever it is shorter / always enumerate
        monkeypatch.setattr(dense_module, "MAX_ENUMERATED_CELLS", limit)
        listings[limit] = [
            (grid.query(p, scale=s).tolist(), [lv.bounds.tolist() for lv in grid.trace(p, scale=s).levels],
             grid.overlapping(p, 3.0, scale=s).tolist())
            for p in points for s in (0.5, 3.0, 40.0)]
    assert listings[0] == listings[10 ** 12]


@pytest.mark.parametrize("method", ["query", "trace", "query_detailed", "query_spheres", "overlapping"])
def test_infinite_points_and_scales_are_still_refused(method):
    grid, _ = fine_grid(2, "sphere", n=30)
    before = pickle.dumps(grid)
    call = getattr(grid, method)
    extra = (0.0,) if method == "overlapping" else ()
    for p, scale in (([np.inf, 0.0], 1.0), ([0.0, -np.inf], 1.0), ([0.0, 0.0], np.inf), ([np.nan, 0.0], 1.0)):
        with pytest.raises(ValueError):
            call(p, *extra, scale=scale)
    with pytest.raises(ValueError):
        grid.query_many([[0.0, 0.0], [np.inf, 0.0]], scale=1e100)
    with pytest.raises(ValueError):
        grid.overlapping_many([[0.0, 0.0]], [np.inf], scale=1e100)
    assert pickle.dumps(grid) == before


@pytest.mark.parametrize("shape", ["sphere", "cube"])
@pytest.mark.parametrize("dim", [1, 2, 3])
def test_the_tree_visits_only_existing_nodes_at_large_scales_and_far_points(dim, shape):
    """The tree's bound (docs/CONTRACT.md, Work bounds): its walk visits existing nodes only, at most
    ``node_count`` and per level at most the window's cells, at any scale and point; answers exact."""
    tree = ViewDistanceTree(SIZE, dim=dim, shape=shape)
    rng = np.random.default_rng(dim)
    centres = np.concatenate([rng.uniform(0, SIZE, (80, dim)), rng.normal(300.0, 0.01, (20, dim))])
    radii = np.exp(rng.uniform(np.log(1e-3), np.log(SIZE / 2), 100))
    radii[:3] = 0.0
    model = BruteForce(dim, shape)
    for h, c, r in zip(tree.insert_many(centres, radii).tolist(), centres, radii):
        model.insert(h, c, r)
    depths, _ = tree.node_boxes()
    per_depth = np.bincount(depths)
    for p in points_for(dim, rng):
        for scale in SCALES:
            trace = tree.trace(p, scale=scale)
            visited = [lv.nodes for lv in trace.levels]
            assert sum(visited) <= tree.node_count
            assert all(n <= per_depth[d] for d, n in enumerate(visited))
            window = min(2.0 ** 62, np.ceil(1.0 + scale) + 2) ** dim
            assert all(n <= window for n in visited)
            assert sorted_handles(trace.candidates) == sorted_handles(tree.query(p, scale=scale))
            assert sorted_handles(tree.query(p, exact=True, scale=scale)) == sorted(model.query(p, scale))
            details = tree.query_detailed(p, scale=scale, trace=True)
            assert [lv.nodes for lv in details.trace.levels] == visited
            for rho in (0.0, SIZE):
                assert sorted_handles(tree.overlapping(p, rho, exact=True, scale=scale)) == \
                    truth_probe(model, p, rho, scale)


@pytest.mark.parametrize("dim", [1, 2, 3])
def test_overlapping_pairs_reads_the_non_empty_cells_not_every_cell(dim, monkeypatch):
    """The pairs join runs of the non-empty cells only (and, for the dual walk, those and their
    ancestors), on a grid of 2**24 finest cells: the runs are counted, and the pairs are exact."""
    import culling.pairs.join as pairs_module

    grid, model = fine_grid(dim, "sphere", n=80, seed=5)
    seen = []
    join = pairs_module.overlapping_pairs

    def counted(runs, *args):
        tree = args[-2]
        _, child, start, count = tree()
        seen.append((runs[0].shape[0], child.shape[0], int(count.sum())))
        return join(runs, *args)

    monkeypatch.setattr(pairs_module, "overlapping_pairs", counted)
    first, second = grid.overlapping_pairs()
    assert sorted(zip(first.tolist(), second.tolist())) == sorted(model.pairs())
    (runs, nodes, members), = seen
    assert runs == grid.node_count and members == len(grid)
    assert nodes <= (grid.finest_level + 1) * grid.node_count + 1 < grid.cell_count
