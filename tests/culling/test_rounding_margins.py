"""The safety margins that rounding needs, each one held to a case where it decides the answer.

Every test here failed with its margin taken away (a mutation probe planted each change and found
the suite still passing): points and pairs exactly on surfaces were tested at small coordinates,
power-of-two sizes and round scales, where ``x - origin``, ``r * s`` and a tile's sum of squares do
not round.  The truth is decided with ``fractions.Fraction`` on the float64 inputs.
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np

from culling import BruteForceIndex, CollisionCandidates, ViewDistanceTree


def _inside(point: list[float], centre: list[float], radius: float, scale: float) -> bool:
    gap = sum((Fraction(x) - Fraction(c)) ** 2 for x, c in zip(point, centre))
    return gap <= (Fraction(radius) * Fraction(scale)) ** 2


def test_the_3d_tile_test_keeps_a_sphere_its_float_sum_of_squares_puts_outside():
    """``tiles.flag_tiles``' written-out 3-D loop compares the point's squared distance from a tile's box
    with ``(r s)**2`` grown by ``NEAR_MARGIN``: here the float sum of squares lies above the float
    ``s * s`` while the point lies inside the sphere exactly."""
    scale = 1.0949457516132066
    p = [0.6403757060777964, 0.8490081871475073, 0.2607877531589185]
    assert _inside(p, [0.0, 0.0, 0.0], 1.0, scale)
    assert p[0] * p[0] + p[1] * p[1] + p[2] * p[2] > scale * scale        # the floats alone would skip it
    tree = ViewDistanceTree(16.0, origin=(-8.0, -8.0, -8.0), dim=3)
    tree.insert((0.0, 0.0, 0.0), 1.0)
    assert tree.query(p, exact=True, scale=scale).tolist() == [0]
    assert tree.query_many([p], exact=True, scale=scale)[0].tolist() == [0]


def test_query_manys_window_keeps_the_low_cell_its_rounding_may_need():
    """``cells.scaled_window`` (the batch walk's window) trusts its low end only beyond the rounding's
    bound: a size and origin that are not powers of two, coordinates far from the origin, scale 0.5."""
    size, origin = 32739.233746429087, -10026.978671376388
    centre, radius, scale, p = 12.200426649718812, 15.985953977748576, 0.5, 20.1934036385931
    assert _inside([p], [centre], radius, scale)
    tree = ViewDistanceTree(size, origin=(origin,), dim=1)
    tree.insert([centre], radius)
    assert tree.query([p], exact=True, scale=scale).tolist() == [0]
    assert tree.query_many([[p]], exact=True, scale=scale)[0].tolist() == [0]


def test_the_broad_phase_keeps_a_pair_whose_bucket_place_rounds():
    """``bands``: whether a member may reach the next bucket along the last axis is decided with its
    rounding's slack; two spheres of 0.75 exactly 1.5 apart, a million units from a non-power-of-two
    origin, touch."""
    size, origin, radius = 3136961.6873214543, -1000000.2697867138, 0.75
    a, b = 500054.28853426094, 500055.78853426094
    assert Fraction(b) - Fraction(a) == 2 * Fraction(radius)              # touching exactly
    tree = ViewDistanceTree(size, origin=(origin,), dim=1)
    tree.insert_many([[a], [b]], [radius, radius])
    assert [part.tolist() for part in tree.overlapping_pairs()] == [[0], [1]]
    reference = BruteForceIndex(np.array([[a], [b]]), np.array([radius, radius]))
    assert [part.tolist() for part in reference.overlapping_pairs()] == [[0], [1]]


def test_query_many_from_the_spheres_side_keeps_a_viewer_on_the_surface_where_r_s_rounds_down():
    """``tree.inverted``'s grid asks each sphere's window at ``r * s`` grown by ``GRID_MARGIN``: here
    ``r * s`` rounds down and the lowest of 300 viewers lies exactly on the sphere's surface."""
    c, r, s = -1.0 - 2.0 ** -29, 1.0 + 2.0 ** -30, 1.0 + 2.0 ** -30
    y = 2.0 ** -60
    assert Fraction(y) - Fraction(c) == Fraction(r) * Fraction(s)          # on the surface
    tree = ViewDistanceTree(64.0, origin=(-32.0,), dim=1)
    tree.insert([c], r)
    points = np.concatenate([[y], 10.0 + 0.05 * np.arange(299)])[:, None]  # enough points, few spheres each
    handles, counts = tree.query_many(points, exact=True, scale=s)
    assert tree.query([y], exact=True, scale=s).tolist() == [0]
    assert handles[:counts[0]].tolist() == [0] and counts[1:].sum() == 0


def test_a_probe_resting_on_a_sphere_slides_along_its_tangent():
    """``sweep``: a probe that touches an object at ``start`` stops only when the move goes deeper
    (``w.d < 0``); along the tangent (``w.d = 0``) the path never enters the sphere."""
    cc = CollisionCandidates(probe_radius=1.0, size=64.0, origin=(-32.0, -32.0, -32.0))
    cc.insert((0.0, 0.0, 0.0), 2.0)
    assert cc.sweep((3.0, 0.0, 0.0), (3.0, 5.0, 0.0)) == (1.0, -1)         # |w| = 3 = b + q, w.d = 0
    assert cc.sweep((3.0, 0.0, 0.0), (2.0, 5.0, 0.0)) == (0.0, 0)          # w.d < 0: deeper
    assert cc.sweep((3.0, 0.0, 0.0), (4.0, 5.0, 0.0)) == (1.0, -1)         # w.d > 0: away
