"""Regions (NumPy only, no Ray): every viewer inside an entity's sphere is in a region that holds the entity."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest

from server.regions import Regions


def _inside(c, r, p, reach=0.0, scale=1.0) -> bool:
    d2 = sum((Fraction(float(a)) - Fraction(float(b))) ** 2 for a, b in zip(c, p))
    limit = Fraction(float(r)) * Fraction(float(scale)) + Fraction(float(reach))
    return d2 <= limit * limit


@pytest.mark.parametrize("dim, shards", [(1, 3), (2, 2), (2, 7), (3, 5), (3, 64)])
def test_a_viewer_inside_a_sphere_is_in_a_region_holding_it(dim, shards):
    rng = np.random.default_rng(shards)
    regions = Regions(64.0, np.full(dim, -32.0), dim, shards)
    cell = regions.cell
    # Entities on cell faces and off them, radii up to a region's width, viewers exactly on their surfaces.
    centres = np.where(rng.random((300, dim)) < 0.5, rng.integers(-5, 5, (300, dim)) * cell,
                       rng.uniform(-40.0, 40.0, (300, dim)))
    radii = rng.choice([0.0, cell / 4, cell, 2.5 * cell, 64.0, 1e-300], 300)
    touched = regions.touched(centres, radii)
    assert touched.any(axis=1).all()
    for c, r, holds in zip(centres, radii, touched):
        for axis in range(dim):
            for sign in (-1.0, 1.0):
                p = c.copy()
                p[axis] += sign * r
                if _inside(c, r, p):
                    assert holds[regions.region_of([p])[0]], (c, r, p)
        direction = rng.normal(size=dim)
        p = c + direction / np.linalg.norm(direction) * r
        if _inside(c, r, p):
            assert holds[regions.region_of([p])[0]]
    # Regions partition the cells in runs of nearly equal length.
    sizes = np.diff(regions.bounds)
    assert sizes.min() >= 1 and sizes.max() - sizes.min() <= 1 and regions.bounds[-1] == regions.cells_per_axis ** min(dim, 2)


def test_bad_shard_counts_are_refused():
    for bad in (0, 65):
        with pytest.raises(ValueError, match="shards"):
            Regions(64.0, (0.0, 0.0), 2, bad)
    for bad in (2.0, True, None):  # not an integer: the type's error, as the library's
        with pytest.raises(TypeError, match="shards"):
            Regions(64.0, (0.0, 0.0), 2, bad)


def test_the_scale_model_runs_small_without_ray():
    from server.scale import measure

    rows = measure(2000, 100, 512.0, [1, 4], repeats=1)
    assert [r["shards"] for r in rows] == [1, 4]
    assert rows[0]["ghosts"] == 0.0 <= rows[1]["ghosts"]
    assert rows[0]["max_viewers"] == 100 and rows[1]["max_viewers"] <= 100
    assert all(r["model"] >= r["actor"] > 0.0 and r["bytes"] > 0 for r in rows)
