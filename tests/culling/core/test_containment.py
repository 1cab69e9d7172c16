"""The one containment test (culling.core.containment) against exact arithmetic.

Points at a sphere's or cube's exact reach and one ulp either side, tiny and
huge magnitudes whose squares leave the float range, one point for all the
objects or one point per object: the flag pass of a pool run, the row-by-row
classification and the exact decider together answer what ``Fraction`` does.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from brute_force import exactly_inside
from hypothesis import given, settings
from hypothesis import strategies as st

from culling.core.containment import SURE, TILE, UNSURE, contains_exact, decide, flag_rows, squared_reach
from culling.core.structs import Pool, Query

MAGNITUDES = [1e-170, 1e-3, 1.0, 7.3, 1e5, 1e160]


def _near_surface(rng: np.random.Generator, n: int, dim: int, magnitude: float) -> tuple[np.ndarray, np.ndarray,
                                                                                         np.ndarray]:
    """Centres, radii and one point: half the objects with the point on their surface, nudged an ulp."""
    point = rng.uniform(-1.0, 1.0, dim) * magnitude
    centres = point + rng.uniform(-1.0, 1.0, (n, dim)) * magnitude
    with np.errstate(all="ignore"):  # squares beyond the float range are what this is for
        offsets = np.abs(centres - point)
        radii = offsets.max(axis=1) if rng.random() < 0.5 else np.sqrt((offsets ** 2).sum(1))
        radii = np.where(np.isfinite(radii) & (radii > 0), radii, offsets.max(axis=1))
        radii = np.where(rng.random(n) < 0.5, radii, rng.uniform(0.0, 2.0, n) * magnitude)
        radii = np.nextafter(radii, np.where(rng.random(n) < 0.5, 0.0, np.inf))  # just below or just above
        radii = np.where(rng.random(n) < 0.3, np.abs(centres - point).max(axis=1), radii)  # on a cube's surface
    return centres, radii, point


@pytest.mark.parametrize("shape", ["sphere", "cube"])
@pytest.mark.parametrize("magnitude", MAGNITUDES)
def test_contains_exact_is_the_fraction_answer(shape, magnitude):
    rng = np.random.default_rng(MAGNITUDES.index(magnitude) + 10 * len(shape))
    for dim in (1, 2, 3):
        for scale in (1.0, 0.5, math.nextafter(1.0, 2.0)):
            centres, radii, point = _near_surface(rng, 200, dim, magnitude)
            got = contains_exact(list(centres.T), point.tolist(), radii, shape, scale)
            want = [exactly_inside(c, point, r, scale, shape) for c, r in zip(centres, radii)]
            assert got.tolist() == want
            # one point per object: the same answers
            points = np.repeat(point[None], len(radii), axis=0)
            assert contains_exact(list(centres.T), list(points.T), radii, shape, scale).tolist() == want


@settings(max_examples=60, deadline=None)
@given(st.sampled_from(MAGNITUDES), st.sampled_from(["sphere", "cube"]), st.integers(1, 3), st.integers(0, 2 ** 31),
       st.sampled_from([1.0, 0.5, math.nextafter(1.0, 2.0)]))
def test_flag_pass_and_exact_decider_are_the_fraction_answer(magnitude, shape, dim, seed, scale):
    """A pool run's flag pass (its SIMD filter, a tile re-classified row by row where unsure) and the
    decider for its unsure rows give exactly the Fraction answer, at scale 1 (spheres: the squared
    reach column) and others (the radius times the scale)."""
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 2 * TILE))
    centres, radii, point = _near_surface(rng, n, dim, magnitude)
    columns = np.ascontiguousarray(np.vstack([centres.T, radii, squared_reach(radii)]))
    pool = Pool(np.arange(n, dtype=np.int64), columns, np.empty((0, 2 * dim + 1)))
    flags = np.full(n, 7, dtype=np.uint8)
    q = Query(scale, True, shape == "cube", False)
    sure, unsure = flag_rows(pool, (0, n), point, q, np.empty(TILE), flags)
    assert set(np.unique(flags).tolist()) <= {0, SURE, UNSURE}
    assert sure == int((flags == SURE).sum()) and unsure == int((flags == UNSURE).sum())
    got = flags == SURE
    doubtful = np.flatnonzero(flags == UNSURE)
    got[doubtful] = decide(columns, doubtful, point, shape, scale)
    assert got.tolist() == [exactly_inside(c, point, r, scale, shape) for c, r in zip(centres, radii)]


@pytest.mark.parametrize("kind", ["tree", "grid"])
def test_a_world_below_1e_145_is_decided_in_floats_as_its_copy_at_scale_1_is(kind, monkeypatch):
    """Below about 1e-145 every square leaves the float filter's safe range, and every candidate (not just
    those near a surface) went to ``Fraction``: ``query_many`` of 5,000 points among 20,000 spheres of radius
    ``3 * 2**-490`` took 9 s and 2.4 GB (0.02 s at scale 1), a grid's pairs at ``2**-1000`` minutes.  The
    filter scaled by a power of two (``rescaled_in_floats``) decides them; nothing here touches exactly (radii
    of 2.75 units: whole and half-unit offsets never square to 2.75**2, 3.75**2 or 5.5**2), so nothing is
    left to rational arithmetic."""
    import culling
    import culling.core.containment as containment

    sent = []
    exact = containment._exact
    monkeypatch.setattr(containment, "_exact", lambda axes, point, radii, shape, scale, which, *rest:
                        sent.append(which.size) or exact(axes, point, radii, shape, scale, which, *rest))
    rng = np.random.default_rng(0)
    cells, points = rng.integers(0, 64, (3000, 3)).astype(float), rng.integers(0, 64, (600, 3)) + 0.5
    answers = []
    for unit in (1.0, 2.0 ** -490, 2.0 ** -1000):
        structure = (culling.ViewDistanceTree(size=128 * unit, dim=3) if kind == "tree"
                     else culling.DenseViewDistanceGrid(size=128 * unit, dim=3, min_radius=unit))
        handles = structure.insert_many(cells * unit, np.full(len(cells), 2.75 * unit))
        found, counts = structure.query_many(points * unit, exact=True)
        probed, probe_counts = structure.overlapping_many(points * unit, np.full(len(points), unit), exact=True)
        single = [np.sort(structure.query(p * unit, exact=True)) for p in points[:50]]
        first, second = structure.overlapping_pairs()
        answers.append((handles.tolist(), np.sort(found).tolist(), counts.tolist(), np.sort(probed).tolist(),
                        probe_counts.tolist(), [s.tolist() for s in single],
                        sorted(zip(first.tolist(), second.tolist()))))
    assert answers[1] == answers[0] and answers[2] == answers[0]
    assert sum(sent) == 0, f"{sum(sent)} rows left to rational arithmetic"
