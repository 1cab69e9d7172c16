"""The X key's parts (engine/inspection.py): the ray through a screen point, the pick against brute force,
the node explained against the tree's own nodes, and what the explanation says."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from culling import ViewDistanceTree
from engine.camera import Camera
from engine.inspection import inspect, pick, screen_ray


def test_the_ray_through_a_projected_point_passes_through_it():
    camera = Camera(np.array([10.0, 5.0, -3.0]), yaw=37.0, pitch=-12.0, aspect=16 / 9)
    vp = camera.view_projection()
    rng = np.random.default_rng(1)
    for _ in range(20):
        target = camera.position + rng.uniform(-50.0, 50.0, 3)
        clip = vp @ np.append(target, 1.0)
        if clip[3] <= 0.1 or np.abs(clip[:2] / clip[3]).max() > 1.0:
            continue
        origin, direction = screen_ray(vp, tuple(clip[:2] / clip[3]))
        assert np.linalg.norm(direction) == pytest.approx(1.0)
        miss = target - origin - ((target - origin) @ direction) * direction
        assert np.linalg.norm(miss) < 1e-6 * np.linalg.norm(target - origin)
        assert (target - origin) @ direction > 0.0                        # ahead, not behind


def _brute_pick(origin, direction, centres, radii, preferred):
    """The first sphere the ray meets, by testing points along it... exactly: per sphere, the entry parameter."""
    best = {}
    for i, (c, r) in enumerate(zip(centres, radii)):
        along = (c - origin) @ direction
        miss2 = (c - origin) @ (c - origin) - along ** 2
        if miss2 <= r * r and along + r >= 0.0:
            best[i] = max(along - np.sqrt(max(r * r - miss2, 0.0)), 0.0)
    if not best:
        return None
    chosen = [i for i in best if preferred is not None and i in set(preferred)] or list(best)
    return min(chosen, key=lambda i: (best[i], i))


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 2**32 - 1), st.booleans())
def test_pick_is_the_first_sphere_the_ray_meets_preferring_the_drawn(seed, prefer):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 40))
    centres = rng.uniform(-20.0, 20.0, (n, 3))
    radii = rng.uniform(0.0, 6.0, n)
    origin = rng.uniform(-5.0, 5.0, 3)
    direction = rng.normal(size=3)
    direction /= np.linalg.norm(direction)
    preferred = np.sort(rng.choice(n, int(rng.integers(0, n + 1)), replace=False)) if prefer else None
    got = pick(origin, direction, centres, radii, preferred)
    expected = _brute_pick(origin, direction, centres, radii, preferred)
    if expected is None or got is None:
        assert got == expected
    else:  # ties in the entry parameter may pick either
        assert got == expected or np.isclose(_entry(origin, direction, centres[got], radii[got]),
                                             _entry(origin, direction, centres[expected], radii[expected]))


def _entry(origin, direction, c, r):
    along = (c - origin) @ direction
    return max(along - np.sqrt(max(r * r - ((c - origin) @ (c - origin) - along ** 2), 0.0)), 0.0)


def test_pick_of_nothing_and_from_inside_a_sphere():
    assert pick([0, 0, 0], [0, 0, 1], np.zeros((0, 3)), np.zeros(0)) is None
    assert pick([0, 0, 0], [0, 0, 1], [[0, 0, -5]], [1.0]) is None                # behind the origin
    assert pick([0, 0, 0], [0, 0, 1], [[0, 0, -0.5], [0, 0, 3]], [1.0, 1.0]) == 0   # around the origin: t = 0


def test_the_node_explained_is_the_trees_own_on_a_grown_level_too():
    """The forest's towers sit on a level above the constructor's (the root grew): their node was drawn
    on a grid from ``origin``, a box that is no node of the tree.  The node now comes from the tree."""
    tree = ViewDistanceTree(4096.0, origin=(-2048.0, -2048.0, -2048.0), dim=3)
    centres = np.array([[100.0, 0.0, 300.0], [-1500.0, 20.0, 900.0], [3.0, 1.0, 2.0]])
    radii = np.array([5000.0, 2500.0, 30.0])                                # levels -2, -1 and 6
    handles = tree.insert_many(centres, radii)
    depths, boxes = tree.node_boxes()
    for h, c, r in zip(handles.tolist(), centres, radii):
        explained = inspect(obj=h, kind="tower", query_point=c, centre=c, view_distance=r, begin=0.0, scale=1.0,
                            drawn=True, node=tree.node_of(h))
        depth, edge, low = explained.node
        assert any(d == depth and np.array_equal(b, [low, low + edge]) for d, b in zip(depths, boxes))
        assert np.all(low <= c) and np.all(c < low + edge) and edge / 4 <= r < edge / 2


def test_the_explanation_follows_the_rules_of_the_culling():
    base = dict(obj=7, kind="rock", query_point=[0.0, 0.0, 0.0], view_distance=100.0, begin=0.0, scale=1.0,
                node=(2, [[0.0, 0.0, 0.0], [256.0, 256.0, 256.0]]))
    assert inspect(centre=[50.0, 0.0, 0.0], drawn=True, **base).verdict() == "drawn"
    fading = inspect(centre=[90.0, 0.0, 0.0], drawn=True, **base)
    assert fading.verdict().startswith("drawn, fading out")
    assert inspect(centre=[90.0, 0.0, 0.0], drawn=True, fade=False, **base).verdict() == "drawn"   # T: it pops
    beyond = inspect(centre=[130.0, 0.0, 0.0], drawn=False, **base)
    assert beyond.verdict() == "beyond its reach by 30.0 m: not drawn" and not beyond.in_range
    assert inspect(centre=[130.0, 0.0, 0.0], drawn=False, **dict(base, scale=1.5)).in_range   # the scale widens it
    assert inspect(centre=[80.0, 0.0, 0.0], drawn=False, **base).verdict().startswith("in range, outside the view")
    near = inspect(centre=[20.0, 0.0, 0.0], drawn=False, **dict(base, begin=30.0))
    assert near.verdict() == "nearer than its begin distance 30.0 m: not drawn"
    fading_in = inspect(centre=[32.0, 0.0, 0.0], drawn=True, **dict(base, begin=30.0))
    assert fading_in.verdict().startswith("drawn, fading in")
    assert "  begin distance x1.00 = 30.0 m: drawn from there out" in fading_in.lines()
    assert inspect(centre=[32.0, 0.0, 0.0], drawn=True, fade=False, **dict(base, begin=30.0)).verdict() == "drawn"
    cube = inspect(centre=[70.0, 70.0, 0.0], drawn=True, shape="cube", **base)                # largest axis: 70
    assert cube.distance == 70.0 and cube.in_range and "  cubes: a distance is the largest per-axis one" in cube.lines()
    lines = inspect(centre=[50.0, 0.0, 0.0], drawn=True, frozen=True, **base).lines()
    assert lines == ["X: rock #7, 50.0 m from the frozen point", "  view distance 100.0 m x1.00 = 100.0 m", "  drawn",
                     "  in a 256 m node (level 2), visited within 128 m"]        # radius 100: W in (200, 400]
    grown = inspect(centre=[50.0, 0.0, 0.0], drawn=True, **dict(base, node=(4, [[0.0] * 3, [256.0] * 3])))
    assert grown.lines()[-1] == "  in a 256 m node (level 4), visited within 128 m"  # depth below a grown root
    assert all(len(line) <= 60 for line in lines + cube.lines() + fading_in.lines())
    assert inspect(centre=[5.0, 0.0, 0.0], drawn=True, **dict(base, node=None)).lines()[-1].startswith("  brute force")


def test_the_slack_picks_what_the_line_of_sight_passes_within_a_few_pixels_of():
    centres, radii = [[100.0, 1.0, 0.0]], [0.5]
    assert pick([0, 0, 0], [1, 0, 0], centres, radii) is None
    assert pick([0, 0, 0], [1, 0, 0], centres, radii, slack=0.004) is None      # grown to 0.9 at 100 m
    assert pick([0, 0, 0], [1, 0, 0], centres, radii, slack=0.006) == 0        # grown to 1.1


def test_at_the_edge_of_its_reach_the_verdict_is_the_trees_exact_answer():
    """The explanation decided "in range" from the rounded distance: an object the tree drew was "beyond its
    reach by 0.0 m: not drawn", and one the exact test left out was blamed on the frustum.  A newcomer's
    cases, both decided by the tree (and by Fraction) against the float test."""
    from fractions import Fraction

    cases = [((466.6623953878383, -41.92043951388081, 337.4714217984049),
              (-444.1280349681288, -114.41274276994238, 60.496443642399186), 954.7300563949458, 1.0),
             ((0.0, 0.0, 0.0), (float(0.512 * 700), 0.0, 0.0), 700.0, 1.25 ** -3)]
    for p, c, r, scale in cases:
        exact = sum((Fraction(a) - Fraction(b)) ** 2 for a, b in zip(c, p)) <= (Fraction(r) * Fraction(scale)) ** 2
        tree = ViewDistanceTree(4096.0, origin=(-2048.0, -2048.0, -2048.0), dim=3)
        h = int(tree.insert(c, r))
        assert (h in tree.query(p, exact=True, scale=scale).tolist()) == exact
        floats = float(np.linalg.norm(np.subtract(c, p))) <= r * scale
        assert floats != exact                                   # the float test gets these two wrong
        explained = inspect(obj=h, kind="tree", query_point=p, centre=c, view_distance=r, begin=0.0, scale=scale,
                            drawn=exact, within=exact)
        assert explained.in_range == exact
        verdict = explained.verdict()
        assert verdict.startswith("drawn") if exact else verdict == "just beyond its reach (decided exactly): not drawn"


def test_the_scale_reads_as_the_status_line_says_it_and_the_root_is_always_visited():
    base = dict(obj=7, kind="rock", query_point=[0.0, 0.0, 0.0], centre=[5.0, 0.0, 0.0], view_distance=300.0,
                begin=0.0, drawn=True)
    assert inspect(scale=0.8 ** 15, **base).lines()[1] == f"  view distance 300.0 m x0.035 = {300 * 0.8 ** 15:,.1f} m"
    root = inspect(scale=1.0, node=(0, [[0.0] * 3, [16384.0] * 3]), **base)
    assert root.lines()[-1] == "  in the root (16,384 m): every query visits it" and all(len(x) <= 60 for x in root.lines())
