"""The overlay draws exactly the nodes the trace reports, level by level."""

import numpy as np
import pytest

from culling import ViewDistanceTree
from engine.camera import Camera
from engine.frame_stats import FrameStats
from engine.hud import HudInfo, hud_lines
from engine.overlay import LEVEL_COLOURS, OverlayRenderer, box_edges, build_overlay, level_colour, trace_levels
from scenes import build_scene


@pytest.fixture(scope="module")
def traced():
    scene = build_scene("forest", 20_000, seed=6)
    tree = ViewDistanceTree(size=scene.world_size, origin=scene.world_origin, dim=3)
    tree.insert_many(scene.centres, scene.view_distance)
    point = scene.camera_pose(0.25).position
    return tree, tree.trace(point), point


def _boxes_from_vertices(vertices: np.ndarray) -> np.ndarray:
    """Recover (k, 2, 3) [lo, hi] boxes from 24-vertex line lists."""
    per_box = vertices.reshape(-1, 24, 3)
    return np.stack([per_box.min(axis=1), per_box.max(axis=1)], axis=1)


def test_box_edges_are_the_twelve_edges():
    v = box_edges(np.array([[[0.0, 0.0, 0.0], [1.0, 2.0, 3.0]]]))
    assert v.shape == (24, 3)
    seg = v.reshape(12, 2, 3)
    lengths = np.sort(np.linalg.norm(seg[:, 1] - seg[:, 0], axis=1))
    assert np.allclose(lengths, [1] * 4 + [2] * 4 + [3] * 4)
    assert len(np.unique(v, axis=0)) == 8


def test_geometry_holds_every_traced_node_once_per_level(traced):
    _, trace, _ = traced
    geom = build_overlay(trace)
    assert len(trace.levels) > 3
    assert [lv.depth for lv in geom.levels] == [lv.depth for lv in trace.levels]
    assert geom.box_count == trace.visited_nodes
    assert geom.vertices.shape == (24 * trace.visited_nodes, 3)
    start = 0
    for lv in reversed(trace.levels):  # deepest first: coarser boxes are drawn over the edges they share
        k = lv.bounds.shape[0]
        block = geom.vertices[start * 24:(start + k) * 24]
        assert np.allclose(_boxes_from_vertices(block), lv.bounds, atol=1e-2)
        colours = geom.colours[start * 24:(start + k) * 24, :3]
        assert np.allclose(colours, level_colour(lv.depth))
        start += k


def test_single_level_and_loose_bounds(traced):
    _, trace, _ = traced
    for lv in trace.levels:
        geom = build_overlay(trace, only_depth=lv.depth)
        assert [g.depth for g in geom.levels] == [lv.depth]
        assert np.allclose(_boxes_from_vertices(geom.vertices), lv.bounds, atol=1e-2)
        loose = build_overlay(trace, loose=True, only_depth=lv.depth)
        assert np.allclose(_boxes_from_vertices(loose.vertices), lv.loose_bounds, atol=1e-2)


def test_frozen_frustum_and_point_are_added(traced):
    _, trace, point = traced
    cam = Camera(point, yaw=30.0)
    geom = build_overlay(trace, frozen_view_projection=cam.view_projection(), frozen_point=point)
    assert geom.vertices.shape[0] == 24 * trace.visited_nodes + 24 + 6


def test_hud_table_matches_trace(traced):
    _, trace, _ = traced
    lines = hud_lines(HudInfo("forest", 20_000, FrameStats(), levels=trace_levels(trace)))
    rows = [text for text, _ in lines if text.strip()[:1].isdigit() and "walked" not in text]
    assert len(rows) == len(trace.levels)
    for text, lv in zip(rows, trace.levels):
        depth, size, nodes, objects = text.split()
        assert (int(depth), float(size), int(nodes), int(objects.replace(",", ""))) == \
               (lv.depth, lv.node_size, lv.bounds.shape[0], lv.objects)


def test_rendered_overlay_shows_each_level_in_its_colour(gl_ctx, traced):
    """Looking down on the query point from high above, drawing one level at a
    time: lines appear, and every drawn pixel has that level's colour."""
    _, trace, point = traced
    overlay = OverlayRenderer(gl_ctx)
    fbo = gl_ctx.simple_framebuffer((200, 200))
    try:
        for lv in trace.levels:
            h = 3.0 * float(np.ptp(lv.bounds[:, :, 0])) + 3.0 * lv.node_size
            cam = Camera(point + [0.0, h, 0.0], pitch=-89.0, fov_y=60.0, aspect=1.0, near=h / 100, far=h * 10)
            fbo.use()
            fbo.clear(0.0, 0.0, 0.0, 1.0)
            overlay.upload(build_overlay(trace, only_depth=lv.depth))
            overlay.draw(cam.view_projection(), fbo)
            img = np.frombuffer(fbo.read(components=3), dtype=np.uint8).reshape(-1, 3)
            lit = img[img.max(axis=1) > 0]
            assert lit.shape[0] > 20, lv.depth
            expected = np.round(np.array(level_colour(lv.depth)) * 255)
            assert np.all(np.abs(lit.astype(float) - expected) <= 1.0), lv.depth
    finally:
        overlay.release()
        fbo.release()
    assert len(LEVEL_COLOURS) >= 8
