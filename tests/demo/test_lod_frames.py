"""Levels of detail, HLOD, zoom and the map, in real frames (EGL/llvmpipe) and in counts."""

import math

import numpy as np
import pytest

from engine.lod import MAX_LEVELS
from engine.map_geometry import LEVEL_OUTLINE_ALPHA, inset_rect
from engine.overlay import level_colour
from engine.zoom import ZOOM_FOV, zoom_scale
from scenes.clusters import CLUSTER_COUNT, STAND_IN_BEGIN, STAND_IN_KINDS

SIZE = (320, 180)


def _frame(demo, render, lod=True, flat=False):
    demo.lod = lod
    stats = demo.update(0.0)
    return render(demo, flat=flat), stats


@pytest.mark.parametrize("u", [0.1, 0.45, 0.8])
def test_lod_keeps_the_picture_and_drops_triangles(make_demo, render, pixels_of, u):
    demo = make_demo("forest", 40_000, size=SIZE, overlay=False)
    pose = demo.scene.camera_pose(u)
    demo.set_pose(pose.position, pose.yaw, pose.pitch)
    full, full_stats = _frame(demo, render, lod=False)
    full_flat = render(demo, flat=True)
    lod, lod_stats = _frame(demo, render, lod=True)
    lod_flat = render(demo, flat=True)

    assert full_stats.drawn == lod_stats.drawn > 0
    assert full_stats.level_counts.tolist() == [full_stats.drawn, 0, 0]
    assert lod_stats.level_counts[1:].sum() > 0                        # lower levels in use
    assert lod_stats.triangles < 0.6 * full_stats.triangles
    # The picture stays close: few pixels move by more than a little, the mean barely.
    diff = np.abs(full.astype(np.int16) - lod.astype(np.int16)).max(axis=-1)
    assert np.mean(diff > 40) < 0.015, np.mean(diff > 40)
    assert diff.mean() < 1.5
    # Every class on screen at full detail is on screen with LOD, with a similar area.
    for kind in demo.scene.kinds:
        a, b = pixels_of(full_flat, kind.colour), pixels_of(lod_flat, kind.colour)
        if a >= 20:
            assert 0.6 * a <= b <= 1.5 * a, (kind.name, a, b)


def test_no_lod_flag_and_hud_line(make_demo, render):
    demo = make_demo("forest", 20_000, size=SIZE, overlay=False, lod=False)
    pose = demo.scene.camera_pose(0.3)
    demo.set_pose(pose.position, pose.yaw, pose.pitch)
    demo.update(0.0)
    render(demo)
    from engine.hud import hud_lines

    text = [t for t, _ in hud_lines(demo.hud_info())]
    assert any(t.startswith("lod off (full detail)  ") and t.endswith(" draws") for t in text)
    demo.lod = True
    stats = demo.update(0.0)
    render(demo)
    line = next(t for t, _ in hud_lines(demo.hud_info()) if t.startswith("lod "))
    assert f"L0 {stats.level_counts[0]:,}" in line and f"{stats.triangles:,} tris" in line
    assert stats.draw_calls == sum(1 for g in demo.renderer.groups if g is not None and g.count)
    assert stats.draw_calls <= len(demo.scene.kinds) * MAX_LEVELS


def test_cross_fade_band_is_dithered_not_popped(make_demo, render, pixels_of):
    """A tree right on its level switch is drawn at both levels, with complementary dithers:
    its pixel area matches the area at either level alone."""
    demo = make_demo("forest", 2_000, size=SIZE, overlay=False)
    names = [k.name for k in demo.scene.kinds]
    tree = np.flatnonzero(demo.scene.kind == names.index("tree"))[0]
    centre, view = demo.scene.centres[tree], demo.scene.view_distance[tree]
    from engine.lod import TREE_LOD_STARTS

    colour = demo.scene.kinds[names.index("tree")].colour
    areas = {}
    for label, fraction in (("before", TREE_LOD_STARTS[0] - 0.05), ("inside", TREE_LOD_STARTS[0]),
                            ("after", TREE_LOD_STARTS[0] + 0.05)):
        eye = centre + np.array([0.0, 0.0, fraction * view])
        demo.set_pose(eye, 0.0, 0.0)             # looking down -z at the tree
        stats = demo.update(0.0)
        img = render(demo, flat=True)
        areas[label] = pixels_of(img, colour)
        if label == "inside":
            assert stats.level_counts[0] >= 1 and stats.level_counts[1] >= 1
    # Scale the areas to one distance: area goes with 1 / distance^2.
    f0 = TREE_LOD_STARTS[0]
    expect = [areas["before"] * ((f0 - 0.05) / f0) ** 2, areas["after"] * ((f0 + 0.05) / f0) ** 2]
    assert min(expect) * 0.7 <= areas["inside"] <= max(expect) * 1.3, areas


def _names(scene):
    return [k.name for k in scene.kinds]


def _kinds(names, *wanted):
    return [names.index(n) for n in wanted]


def _pixels(pixels_of, img, scene, kinds):
    return sum(pixels_of(img, scene.kinds[k].colour) for k in kinds)


def test_hlod_from_afar_the_stand_in_is_drawn_and_no_garden_is_a_candidate(make_demo, render, pixels_of):
    demo = make_demo("clusters", 40_000, size=SIZE, overlay=True)
    names = _names(demo.scene)
    stand, gardens = _kinds(names, *STAND_IN_KINDS), _kinds(names, "lawn", "flower bed")
    members = _kinds(names, "house", "roof", "tower", "town tree")
    target = demo.scene.cluster_centres[0]
    eye = demo.scene.camera_pose(0.0).position
    demo.set_pose(eye, 0.0, 0.0)
    demo.camera.look_at(target)
    stats = demo.update(0.0)
    kinds = demo.scene.kind[demo.pipeline.trace.candidates]
    assert not np.isin(kinds, gardens).any()
    assert np.isin(kinds, stand).sum() == 3 * CLUSTER_COUNT
    assert stats.kind_counts[stand].sum() >= 3
    img = render(demo, flat=True)
    assert _pixels(pixels_of, img, demo.scene, stand) > 10
    assert _pixels(pixels_of, img, demo.scene, members) == 0


def test_hlod_from_inside_the_members_are_drawn_and_the_stand_in_is_not(make_demo, render, pixels_of):
    demo = make_demo("clusters", 40_000, size=SIZE, overlay=False)
    names = _names(demo.scene)
    stand, members = _kinds(names, *STAND_IN_KINDS), _kinds(names, "house", "roof", "tower", "town tree")
    centre = demo.scene.cluster_centres[0]
    ground = float(demo.scene.ground_height(np.array(centre[0]), np.array(centre[2] + 60.0)))
    demo.set_pose(np.array([centre[0], ground + 20.0, centre[2] + 60.0]), 0.0, -10.0)
    stats = demo.update(0.0)
    assert stats.kind_counts[stand].sum() == 0
    assert stats.kind_counts[members].sum() > 50
    img = render(demo, flat=True)
    assert _pixels(pixels_of, img, demo.scene, stand) == 0
    assert _pixels(pixels_of, img, demo.scene, members) > 200
    # Backing out past the begin distance brings it back, faded in over its band.
    demo.set_pose(centre + np.array([0.0, 60.0, STAND_IN_BEGIN * 1.3]), 0.0, -5.0)
    stats = demo.update(0.0)
    assert stats.kind_counts[stand].sum() == 3
    assert _pixels(pixels_of, render(demo, flat=True), demo.scene, stand) > 100


def test_the_stand_in_covers_the_place_its_members_cover(make_demo, render, pixels_of):
    """Seen from just beyond the begin distance, the stand-in alone and the members alone
    cover about the same pixels: footprint, height and colours match."""
    demo = make_demo("clusters", 40_000, size=(320, 180), overlay=False)
    names = _names(demo.scene)
    centre = demo.scene.cluster_centres[0]
    eye = centre + np.array([0.0, 80.0, STAND_IN_BEGIN * 1.05])
    demo.set_pose(eye, 0.0, 0.0)
    demo.camera.look_at(centre)
    demo.update(0.0)
    shown = demo.pipeline.visible
    stand = np.isin(demo.scene.kind[shown], _kinds(names, *STAND_IN_KINDS))
    areas = {}
    for label, keep in (("stand-in", stand), ("members", ~stand)):
        demo.pipeline.visible = shown[keep]
        demo.pipeline._distance = np.full(keep.sum(), 1.0)            # drawn solid, no fade
        demo.pipeline._limit = np.full(keep.sum(), 1e9)
        demo.pipeline._begin_limit = np.zeros(keep.sum())
        demo.pipeline._centres = demo.scene.centres[shown[keep]]
        demo._drawn = False
        img = render(demo, flat=True)
        areas[label] = {part: pixels_of(img, demo.scene.kinds[names.index(k)].colour)
                        for part, k in (("walls", "stand-in walls" if label == "stand-in" else "house"),
                                        ("roofs", "stand-in roofs" if label == "stand-in" else "roof"))}
    for part in ("walls", "roofs"):
        a, b = areas["stand-in"][part], areas["members"][part]
        assert a > 30 and 0.6 <= a / b <= 1.6, areas


def test_zoom_scales_view_distances_and_brings_far_objects_in(make_demo, render):
    demo = make_demo("forest", 40_000, size=SIZE, overlay=False)
    pose = demo.scene.camera_pose(0.2)
    demo.set_pose(pose.position, pose.yaw, pose.pitch)
    wide = demo.update(0.0)
    wide_far = _farthest(demo)
    demo.set_zoom(True, snap=True)
    assert demo.camera.fov_y == ZOOM_FOV
    expected = math.tan(math.radians(30.0)) / math.tan(math.radians(ZOOM_FOV / 2.0))
    assert demo.zoom.scale == pytest.approx(expected) == pytest.approx(zoom_scale(60.0, ZOOM_FOV))
    assert demo.query_scale == pytest.approx(expected)
    narrow = demo.update(0.0)
    narrow_far = _farthest(demo)
    # Objects beyond their own view distance are now drawn: the far ones the zoom brought in.
    beyond = _beyond_own_view(demo)
    assert beyond > 0 and narrow_far > 1.5 * wide_far
    assert narrow.candidates > wide.candidates
    img = render(demo)
    assert img.std() > 10.0
    demo.set_zoom(False, snap=True)
    assert demo.camera.fov_y == 60.0 and demo.query_scale == 1.0
    assert _beyond_own_view_after(demo) == 0


def _distances(demo):
    return np.linalg.norm(demo.scene.centres[demo.pipeline.visible] - demo.camera.position, axis=1)


def _farthest(demo):
    return float(_distances(demo).max())


def _beyond_own_view(demo):
    return int(np.count_nonzero(_distances(demo) > demo.scene.view_distance[demo.pipeline.visible]))


def _beyond_own_view_after(demo):
    demo.update(0.0)
    return _beyond_own_view(demo)


def test_map_draws_exactly_the_visited_nodes(make_demo, render, pixels_of):
    demo = make_demo("forest", 40_000, size=(480, 270), overlay=False, map=True)
    pose = demo.scene.camera_pose(0.3)
    demo.set_pose(pose.position, pose.yaw, pose.pitch)
    demo.update(0.0)
    trace = demo.trace
    assert trace is not None                               # the map needs the trace even without the overlay
    img = render(demo)
    g = demo.map_inset.geometry
    expected = np.concatenate([lv.bounds[:, :, [0, 2]] for lv in trace.levels])
    assert np.array_equal(g.visited_bounds, expected)
    assert g.visited_depths.tolist() == [lv.depth for lv in trace.levels for _ in range(lv.nodes)]
    assert g.points.shape[0] == demo.stats.drawn
    # The inset is in the bottom-right corner and shows the visited levels' colours.
    x, y, w, h = inset_rect(demo.size)
    inset = img[demo.size[1] - (y + h):demo.size[1] - y, x:x + w]
    deepest = max(lv.depth for lv in trace.levels)
    assert LEVEL_OUTLINE_ALPHA == 1.0 and pixels_of(inset, level_colour(deepest), tol=2) > 10
    # Turned off (M), the corner shows the scene again.
    demo.show_map = False
    demo.update(0.0)
    plain = render(demo)
    assert np.abs(plain[demo.size[1] - (y + h):demo.size[1] - y, x:x + w].astype(int) - inset).mean() > 10


def test_zoom_follows_a_field_of_view_set_from_outside(make_demo):
    demo = make_demo("forest", 2_000, size=SIZE, overlay=False)
    demo.camera.fov_y = 90.0
    demo.update(0.0)
    assert demo.camera.fov_y == 90.0 and demo.query_scale == 1.0
    demo.set_zoom(True, snap=True)
    demo.update(0.0)
    assert demo.camera.fov_y == ZOOM_FOV and demo.zoom.scale == pytest.approx(zoom_scale(90.0, ZOOM_FOV))
    demo.set_zoom(False, snap=True)
    demo.update(0.0)
    assert demo.camera.fov_y == 90.0 and demo.query_scale == 1.0


def _close_up(demo, render, index, dist, lod=True):
    """Object ``index`` from ``dist`` metres, framed by a narrow field of view; its pixels' mask and mean colour."""
    scene = demo.scene
    c, r = scene.centres[index], scene.bounding_radius[index]
    eye = c + np.array([dist * 0.9, dist * 0.3 + 1.0, dist * 0.3])
    demo.set_pose(eye, 0.0, 0.0)
    demo.camera.look_at(c)
    demo.camera.fov_y = float(np.degrees(2.0 * np.arctan(3.0 * r / dist)))
    demo.lod = lod
    demo.update(0.0)
    shaded = render(demo).astype(float)
    plain = render(demo, flat=True)
    mask = np.all(np.abs(plain.astype(int) - np.round(np.array(scene.kinds[scene.kind[index]].colour) * 255)) <= 1,
                  axis=-1)
    return mask, shaded[mask].mean(axis=0)


@pytest.mark.parametrize("fraction", [0.5, 0.85])
def test_a_bush_keeps_its_silhouette_and_colour_at_its_lower_levels(make_demo, render, fraction):
    """At each lower level a bush covers about the same pixels, in about the same mean colour,
    as its full mesh seen from the same place (not a bright pointed shape)."""
    demo = make_demo("forest", 3_000, size=(120, 120), overlay=False)
    names = _names(demo.scene)
    bushes = np.flatnonzero(demo.scene.kind == names.index("bush"))
    index = int(bushes[len(bushes) // 3])
    dist = fraction * demo.scene.view_distance[index]
    full_mask, full_rgb = _close_up(demo, render, index, dist, lod=False)
    demo.set_fade(False)                     # no dither: the level alone, solid
    low_mask, low_rgb = _close_up(demo, render, index, dist, lod=True)
    area = low_mask.sum() / full_mask.sum()
    overlap = (low_mask & full_mask).sum() / full_mask.sum()
    assert 0.8 <= area <= 1.2 and overlap > 0.8, (area, overlap)
    assert np.abs(low_rgb - full_rgb).max() < 20, (low_rgb, full_rgb)
