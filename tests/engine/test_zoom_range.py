"""Zoom maths and the begin distance (near end of the visibility range), without GL."""

import math

import numpy as np
import pytest

from engine.visibility_range import BEGIN_FADE_FRACTION, begin_fade, in_visibility_range, visibility_fade
from engine.zoom import ZOOM_FOV, ZOOM_TIME, Zoom, zoom_scale
from scenes import build_scene
from scenes.clusters import CLUSTER_COUNT, CLUSTER_RADIUS, STAND_IN_BEGIN, STAND_IN_KINDS, STAND_IN_VIEW


def test_zoom_scale_is_the_ratio_of_the_half_angle_tangents():
    assert zoom_scale(60.0, 60.0) == 1.0
    assert zoom_scale(60.0, 15.0) == pytest.approx(math.tan(math.radians(30)) / math.tan(math.radians(7.5)))
    # An object of radius r at distance d covers the same height on screen at d * scale when zoomed.
    r, d, s = 2.0, 100.0, zoom_scale(60.0, 20.0)
    on_screen = (r / d) / math.tan(math.radians(30.0))
    assert (r / (d * s)) / math.tan(math.radians(10.0)) == pytest.approx(on_screen)


@pytest.mark.parametrize("bad, error", [(0.0, ValueError), (180.0, ValueError), (float("nan"), ValueError),
                                        (True, TypeError), ("60", TypeError)])
def test_bad_fov(bad, error):
    with pytest.raises(error, match="fov"):
        zoom_scale(60.0, bad)
    with pytest.raises(error, match="fov"):
        Zoom(60.0, bad)


def test_zoom_eases_in_and_out():
    z = Zoom(60.0)
    assert z.scale == 1.0
    z.held = True
    z.update(ZOOM_TIME)
    assert ZOOM_FOV < z.fov < 60.0 and 1.0 < z.scale < zoom_scale(60.0, ZOOM_FOV)
    for _ in range(50):
        z.update(1 / 60)
    assert z.fov == ZOOM_FOV and z.scale == pytest.approx(zoom_scale(60.0, ZOOM_FOV))
    z.held = False
    z.snap()
    assert z.fov == 60.0 and z.scale == 1.0
    assert z.update(0.0) == 60.0


def test_visibility_range_is_closed_at_both_ends():
    d = np.array([0.0, 9.999, 10.0, 50.0, 100.0, 100.001])
    view = np.full(6, 100.0)
    assert in_visibility_range(d, view, np.full(6, 10.0)).tolist() == [False, False, True, True, True, False]
    assert in_visibility_range(d, view, None).tolist() == [True] * 5 + [False]
    assert in_visibility_range(d, view, np.zeros(6)).tolist() == [True] * 5 + [False]


def test_begin_fade_ramps_over_its_band():
    b = np.full(4, 200.0)
    d = np.array([200.0, 200.0 + 15.0, 200.0 * (1 + BEGIN_FADE_FRACTION), 1000.0])
    assert begin_fade(d, b) == pytest.approx([0.0, 0.5, 1.0, 1.0])
    assert begin_fade(np.array([0.0, 5.0]), np.zeros(2)).tolist() == [1.0, 1.0]
    # Combined with the far fade: the product.
    f = visibility_fade(np.array([215.0, 1000.0]), np.array([1000.0, 1000.0]), np.array([200.0, 200.0]), 0.15)
    assert f == pytest.approx([0.5, 0.0])


def test_clusters_scene_has_one_stand_in_of_each_part_per_settlement():
    scene = build_scene("clusters", 20_000, seed=1)
    names = [k.name for k in scene.kinds]
    stand = np.isin(scene.kind, [names.index(n) for n in STAND_IN_KINDS])
    assert stand.sum() == len(STAND_IN_KINDS) * CLUSTER_COUNT
    assert np.all(scene.begin_distance[stand] == STAND_IN_BEGIN)
    assert np.all(scene.view_distance[stand] == STAND_IN_VIEW)
    assert np.all(scene.begin_distance[~stand] == 0.0)
    assert len(scene) == 20_000
    # Every member lies inside its settlement's stand-in, and from the begin distance every
    # building is in sight (so the stand-in never gives way to a half-empty place).
    members = ~stand & (np.linalg.norm(scene.centres[:, [0, 2]], axis=1) > 2000.0)
    d = np.linalg.norm(scene.centres[members][:, None, [0, 2]] - scene.centres[stand][None, :, [0, 2]],
                       axis=2).min(axis=1)
    assert np.all(d <= scene.bounding_radius[stand].min())
    buildings = np.isin(scene.kind, [names.index(n) for n in ("house", "roof", "tower", "town tree")])
    assert np.all(STAND_IN_BEGIN + CLUSTER_RADIUS <= scene.view_distance[buildings])


def test_scene_rejects_bad_begin_distances():
    scene = build_scene("forest", 100, seed=1)
    from dataclasses import replace
    with pytest.raises(ValueError, match="begin_distance has shape"):
        replace(scene, begin_distance=np.zeros(3))
    with pytest.raises(ValueError, match="begin distances"):
        replace(scene, begin_distance=np.full(100, -1.0))
