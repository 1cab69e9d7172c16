"""One declared interface, ``culling.PointIndex``, satisfied by tree, dense grid and the reference index.

The same conformance test runs over all three (``culling.BruteForceIndex`` is
also the demo's ``--brute-force`` index): the same objects, the same queries
(exact and not, scaled, single and batched, with spheres), the same exact
answers, decided by ``fractions.Fraction``.
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest

from culling import BruteForceIndex, DenseViewDistanceGrid, PointIndex, ViewDistanceTree

SIZE = 100.0
N = 300


def _world(dim: int, shape: str):
    rng = np.random.default_rng(dim * 10 + (shape == "cube"))
    centres = rng.uniform(0.0, SIZE, (N, dim))
    radii = np.where(rng.random(N) < 0.8, rng.uniform(0.0, 4.0, N), rng.uniform(4.0, 40.0, N))
    return centres, radii


def _build(kind: str, dim: int, shape: str):
    centres, radii = _world(dim, shape)
    if kind == "tree":
        index = ViewDistanceTree(size=SIZE, dim=dim, shape=shape)
    elif kind == "grid":
        index = DenseViewDistanceGrid(size=SIZE, dim=dim, shape=shape, min_radius=1.0)
    else:
        return BruteForceIndex(centres, radii, shape), centres, radii
    handles = index.insert_many(centres, radii)
    assert handles.tolist() == list(range(N))
    return index, centres, radii


def _truth(centres, radii, point, scale, shape) -> list[int]:
    out = []
    for i, (c, r) in enumerate(zip(centres.tolist(), radii.tolist())):
        d = [Fraction(a) - Fraction(b) for a, b in zip(c, point)]
        limit = Fraction(r) * Fraction(scale)
        inside = all(abs(x) <= limit for x in d) if shape == "cube" else sum(x * x for x in d) <= limit * limit
        if inside:
            out.append(i)
    return out


@pytest.mark.parametrize("kind", ["tree", "grid", "brute force"])
@pytest.mark.parametrize("dim", [1, 2, 3])
@pytest.mark.parametrize("shape", ["sphere", "cube"])
def test_conformance(kind, dim, shape):
    index, centres, radii = _build(kind, dim, shape)
    assert isinstance(index, PointIndex)
    assert len(index) == N
    rng = np.random.default_rng(99)
    points = np.concatenate([rng.uniform(-10.0, SIZE + 10.0, (12, dim)), centres[:3] + radii[:3, None]])
    for scale in (1.0, 0.5, 3.0):
        for p in points:
            want = _truth(centres, radii, p.tolist(), scale, shape)
            exact = index.query(p, exact=True, scale=scale)
            assert exact.dtype == np.int64 and sorted(exact.tolist()) == want
            plain = index.query(p, scale=scale)
            assert plain.dtype == np.int64 and np.unique(plain).size == plain.size
            assert set(want) <= set(plain.tolist())
            handles, got_centres, got_radii = index.query_spheres(p, exact=True, scale=scale)
            assert sorted(handles.tolist()) == want
            assert got_centres.shape == (handles.size, dim)
            assert (got_centres == centres[handles]).all() and (got_radii == radii[handles]).all()
            got_centres += 1.0  # belongs to the caller
        many, counts = index.query_many(points, exact=True, scale=scale)
        assert counts.shape == (points.shape[0],) and counts.sum() == many.size
        starts = np.concatenate([[0], np.cumsum(counts)])
        for i, p in enumerate(points):
            assert sorted(many[starts[i]:starts[i + 1]].tolist()) == _truth(centres, radii, p.tolist(), scale, shape)
    for bad_scale in (True, "1", 1 + 0j):
        with pytest.raises(TypeError):
            index.query(points[0], exact=True, scale=bad_scale)
    for bad_scale in (0.0, -1.0, float("nan"), float("inf")):
        with pytest.raises(ValueError):
            index.query(points[0], exact=True, scale=bad_scale)
