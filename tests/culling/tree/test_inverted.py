"""``query_many(points, exact=True)`` answered from the spheres' side (:mod:`culling.tree.inverted`): where
the points are many and the spheres few per point, each sphere asks a grid over the points.  The answer is
the walk's, row for row in the caller's order, and the exact rational model's, with points on surfaces and
cell faces, in 1-3 dimensions, at every scale; cubes, candidates and handles beyond the grid's 4-byte rows
walk."""

from __future__ import annotations

import math

import numpy as np
import pytest
from brute_force import FACE_COORDS as COORDS
from brute_force import BruteForce, check_query_many
from hypothesis import given, settings
from hypothesis import strategies as st

from culling import ViewDistanceTree
from culling.tree import inverted

SIZE = 64.0

#: The grid forced at any size, in chunks of a few pool rows, from buffers that must grow.
FORCED = {"GRID_MIN_VIEWERS": 1, "GRID_ENTITIES_PER_VIEWER": math.inf, "GRID_MIN_ROWS": 4, "GRID_SLACK": 1,
          "GRID_UNSURE_ROOM": 1}


def _world(dim: int, n: int, seed: int, shape: str = "sphere") -> tuple[ViewDistanceTree, BruteForce,
                                                                        np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    centres = rng.uniform(0.0, SIZE, (n, dim))
    radii = rng.choice([0.0, 0.3, 1.0, 2.0, 4.0, 9.0, 20.0], n)
    tree = ViewDistanceTree(SIZE, dim=dim, shape=shape)
    model = BruteForce(dim=dim, shape=shape)
    for h, c, r in zip(tree.insert_many(centres, radii).tolist(), centres, radii.tolist()):
        model.insert(h, c, r)
    return tree, model, centres, radii


def _on_surfaces(centres: np.ndarray, radii: np.ndarray, rng: np.random.Generator, k: int) -> np.ndarray:
    """``k`` points on spheres' surfaces, within rounding (3-4-5 along the first two axes where there are two)."""
    which = rng.integers(0, len(radii), k)
    points = centres[which].copy()
    if centres.shape[1] >= 2:
        points[:, :2] += np.array([0.6, 0.8]) * radii[which, None]
    else:
        points[:, 0] += radii[which]
    return points


def _walked(tree: ViewDistanceTree, points: np.ndarray, scale: float,
            monkeypatch: pytest.MonkeyPatch) -> tuple[np.ndarray, np.ndarray]:
    with monkeypatch.context() as patch:
        patch.setattr(inverted, "GRID_ENTITIES_PER_VIEWER", -1.0)
        return tree.query_many(points, exact=True, scale=scale)


def _rows(handles: np.ndarray, counts: np.ndarray) -> list[list[int]]:
    return [sorted(part.tolist()) for part in np.split(handles, np.cumsum(counts)[:-1])]


@settings(max_examples=60, deadline=None)
@given(dim=st.integers(1, 3), n=st.integers(1, 40), seed=st.integers(0, 2**32 - 1),
       coords=st.lists(COORDS, min_size=1, max_size=90), surfaces=st.integers(0, 20),
       scale=st.sampled_from([1.0, 0.5, 2.0, 40.0, 1e-9]))
def test_from_the_spheres_side_the_answer_is_the_walks_and_the_exact_models(dim, n, seed, coords, surfaces, scale):
    tree, model, centres, radii = _world(dim, n, seed)
    rng = np.random.default_rng(seed)
    points = np.array(coords[: len(coords) // dim * dim] or coords[:1] * dim, dtype=np.float64).reshape(-1, dim)
    points = np.concatenate([points, _on_surfaces(centres, radii, rng, surfaces)])
    with pytest.MonkeyPatch.context() as patch:
        walked = _walked(tree, points, scale, patch)
        for name, value in FORCED.items():
            patch.setattr(inverted, name, value)
        calls = []
        answer = inverted.grid_answer
        patch.setattr(inverted, "grid_answer", lambda *args: calls.append(1) or answer(*args))
        handles, counts = tree.query_many(points, exact=True, scale=scale)
        assert calls, "the spheres' side did not answer"
        assert handles.dtype == np.int64 and counts.dtype == np.int64 and counts.shape == (len(points),)
        assert _rows(handles, counts) == _rows(*walked)
        for row, p in zip(_rows(handles, counts), points):
            assert set(row) == model.query(p, scale)
        check_query_many(tree, model, points[:12], scale)


def test_a_sparse_batch_goes_to_the_spheres_and_a_dense_one_walks(monkeypatch):
    """The defaults: many points among few spheres a point are answered from the spheres' side, the same points over a tree of many more spheres a point walk, and so do candidates, cubes,
    and a tree whose handles reach beyond the grid's 4-byte rows."""
    calls = []
    answer = inverted.grid_answer
    monkeypatch.setattr(inverted, "grid_answer", lambda *args: calls.append(1) or answer(*args))
    rng = np.random.default_rng(3)
    tree, model, centres, radii = _world(3, 300, 4)
    points = np.concatenate([rng.uniform(0.0, SIZE, (inverted.GRID_MIN_VIEWERS, 3)),
                             _on_surfaces(centres, radii, rng, 40)])
    handles, counts = tree.query_many(points, exact=True)
    assert calls == [1]
    assert all(set(row) == model.query(p, 1.0) for row, p in zip(_rows(handles, counts), points))
    tree.query_many(points, exact=False)
    tree.query_many(points[: inverted.GRID_MIN_VIEWERS - 1], exact=True)
    assert calls == [1], "candidates and a batch below GRID_MIN_VIEWERS points walk"
    cubes, cube_model, _, _ = _world(3, 300, 4, shape="cube")
    cube_handles, cube_counts = cubes.query_many(points, exact=True)
    assert calls == [1], "cubes walk"
    assert all(set(row) == cube_model.query(p, 1.0) for row, p in zip(_rows(cube_handles, cube_counts), points))
    monkeypatch.setattr(inverted, "MAX_HANDLE", 10)
    tree.query_many(points, exact=True)
    assert calls == [1], "handles beyond MAX_HANDLE walk"
    monkeypatch.undo()
    dense = ViewDistanceTree(SIZE, dim=3)
    few = points[: inverted.GRID_MIN_VIEWERS]
    many = int(inverted.GRID_ENTITIES_PER_VIEWER) * len(few) + 1
    dense.insert_many(rng.uniform(0.0, SIZE, (many, 3)), np.full(many, 1.0))
    monkeypatch.setattr(inverted, "grid_answer", lambda *args: calls.append(1) or answer(*args))
    dense.query_many(few, exact=True)
    assert calls == [1], "more than GRID_ENTITIES_PER_VIEWER spheres a point walk"


@pytest.mark.parametrize(("base", "spread"), [(1.0, 2.0 ** -52), (1e-300, 1e-312), (1e-310, 5e-324), (1.0, 0.0)])
def test_points_within_float_noise_of_each_other_under_a_large_sphere(base, spread):
    """256 points within rounding of one place (the grid's cells then a few ulps wide, or subnormal) under a
    sphere a thousand units wide: the cell range of its reach passed 2**63 and was converted to an integer
    unclamped (the call then read the grid out of its bounds and grew its buffers until killed), and a
    subnormal edge made every cell index undefined.  Every point is answered, by ``query_many`` and by an
    interest tick."""
    from culling import InterestManager

    rng = np.random.default_rng(0)
    points = base + rng.integers(0, 8, size=(inverted.GRID_MIN_VIEWERS, 3)) * spread
    tree, model = ViewDistanceTree(size=4096.0), BruteForce(dim=3, shape="sphere")
    for h, c, r in zip(tree.insert_many([[0.0, 0.0, 0.0], [2000.0, 2000.0, 2000.0]], [1000.0, 1.0]).tolist(),
                       [(0.0, 0.0, 0.0), (2000.0, 2000.0, 2000.0)], [1000.0, 1.0]):
        model.insert(h, c, r)
    for scale in (1.0, 1e-300, 1e300):
        handles, counts = tree.query_many(points, exact=True, scale=scale)
        assert _rows(handles, counts) == [sorted(model.query(p, scale)) for p in points]
    manager = InterestManager(4096.0)
    manager.insert_many([[0.0, 0.0, 0.0]], [1000.0])
    tick = manager.tick(np.arange(len(points)), points)
    assert np.diff(tick.entered_offsets).tolist() == [1] * len(points)


@pytest.mark.parametrize(("size", "radius", "spread", "scale"),
                         [(2.0 ** 70, 2.0 ** 65, 0.0, 1.0),       # identical points, a reach of 2**65 cells
                          (16.0, 1.0, 1.0, 1e19), (16.0, 1.0, 1.0, 1.7e308)])  # a reach scaled past 2**63, to inf
def test_a_reach_of_more_cells_than_an_integer_holds(size, radius, spread, scale):
    points = 0.5 + np.random.default_rng(1).random((inverted.GRID_MIN_VIEWERS, 3)) * spread
    tree = ViewDistanceTree(size=size)
    tree.insert_many([[0.5, 0.5, 0.5]], [radius])
    handles, counts = tree.query_many(points, exact=True, scale=scale)
    assert counts.tolist() == [1] * len(points) and handles.tolist() == [0] * len(points)


@pytest.mark.parametrize("dim", [1, 2, 3])
@pytest.mark.parametrize("n", [599, 600, 601])
def test_an_entity_at_the_highest_viewer_whose_cell_index_rounds_to_the_grids_width(dim, n):
    """``(y - low) * inverse`` of the highest viewer can round up to the number of cells (its cell clamped
    to the last): a radius-0 sphere there computed that index too and took its range as empty (600 points
    on [0, 511] in 1-D: 511.0 * 1.8786... == 960.0, the width)."""
    tree = ViewDistanceTree(size=512.0, dim=dim)
    for radius in (0.0, 2.0 ** -40, 0.25):
        tree.insert([511.0] * dim, radius)
    points = np.zeros((n, dim))
    points[:, 0] = np.linspace(0.0, 511.0, n)
    points[:, 1:] = 511.0
    handles, counts = tree.query_many(points, exact=True)
    rows = np.split(handles, np.cumsum(counts)[:-1])
    assert [sorted(row.tolist()) for row in rows] == [sorted(tree.query(p, exact=True).tolist()) for p in points]
    assert sorted(rows[-1].tolist()) == [0, 1, 2]
