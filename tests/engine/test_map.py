"""The map inset draws exactly the nodes the query visited (compared with the trace),
in their level colours, plus the camera wedge, the dots and a scale bar."""

import numpy as np
import pytest

from culling import ViewDistanceTree
from engine.camera import Camera
from engine.framebuffers import release_framebuffer
from engine.map import MapRenderer
from engine.map_geometry import LEVEL_OUTLINE_ALPHA, build_map, inset_rect, map_matrix, scale_bar_length
from engine.overlay import LEVEL_COLOURS, level_colour


def _tree_and_trace(rng, n=3000):
    tree = ViewDistanceTree(size=2048.0, origin=(-1024.0, -1024.0, -1024.0))
    centres = rng.uniform(-600.0, 600.0, size=(n, 3))
    centres[:, 1] = rng.uniform(-5.0, 5.0, size=n)
    tree.insert_many(centres, rng.uniform(5.0, 120.0, size=n))
    camera = Camera(position=(12.0, 3.0, -40.0), yaw=30.0, pitch=-5.0, aspect=1.0)
    return tree, camera, tree.trace(camera.position)


def test_geometry_holds_exactly_the_traced_boxes(rng):
    tree, camera, trace = _tree_and_trace(rng)
    g = build_map(trace, camera)
    expected = np.concatenate([lv.bounds[:, :, [0, 2]] for lv in trace.levels])
    depths = np.concatenate([np.full(lv.nodes, lv.depth) for lv in trace.levels])
    assert np.array_equal(g.visited_bounds, expected)
    assert np.array_equal(g.visited_depths, depths)
    assert g.visited_depths.shape[0] == trace.visited_nodes
    # 8 line vertices per visited node, then wedge (4), query cross (4) and scale bar (6).
    assert g.lines.shape[0] == 8 * trace.visited_nodes + 14
    assert g.triangles.shape[0] == 6 + 6 * trace.visited_nodes + 3
    assert g.points.shape[0] == 0 and g.context_nodes == 0


def test_context_nodes_and_dots(rng):
    tree, camera, trace = _tree_and_trace(rng)
    r = 300.0
    lo = camera.position - r
    hi = camera.position + r
    context = tree.node_boxes(lo, hi)
    all_depths, all_boxes = tree.node_boxes()
    assert all_depths.shape[0] == tree.node_count
    overlap = np.all((all_boxes[:, 1] >= lo) & (all_boxes[:, 0] <= hi), axis=1)
    assert context[0].shape[0] == overlap.sum()
    dots = tree.centres_of(tree.query(camera.position, exact=True))
    g = build_map(trace, camera, visible_centres=dots, context=context, radius=r)
    assert g.context_nodes == overlap.sum()
    assert g.points.shape[0] == dots.shape[0]
    assert np.allclose(g.points[:, [0, 2]], dots[:, [0, 2]])


def test_node_boxes_validates():
    tree = ViewDistanceTree(size=64.0)
    with pytest.raises(ValueError, match="both lo and hi"):
        tree.node_boxes(lo=(0, 0, 0))
    with pytest.raises(ValueError):
        tree.node_boxes((0, 0), (1, 1))
    depths, boxes = tree.node_boxes()
    assert depths.tolist() == [0] and boxes.shape == (1, 2, 3)


def test_scale_bar_and_matrix():
    assert [scale_bar_length(r) for r in (500.0, 90.0, 3000.0, 1.0)] == [200.0, 20.0, 1000.0, 0.5]
    m = map_matrix((100.0, -50.0), 250.0)
    corner = m @ np.array([350.0, 77.0, -300.0, 1.0])         # east edge, north edge
    assert corner[:2].tolist() == [1.0, 1.0]
    with pytest.raises(ValueError, match="radius"):
        build_map(None, Camera(), radius=0.0)


def _colour_pixels(img, rgb, tol=2):
    target = np.round(np.asarray(rgb) * 255).astype(np.int16)
    return int(np.count_nonzero(np.all(np.abs(img.astype(np.int16) - target) <= tol, axis=-1)))


def _render_inset(gl_ctx, geometry, size=(320, 320)):
    fbo = gl_ctx.simple_framebuffer(size)
    renderer = MapRenderer(gl_ctx)
    try:
        fbo.use()
        fbo.clear(0.0, 0.0, 0.0, 1.0)
        renderer.upload(geometry)
        renderer.draw(fbo, size)
        img = np.frombuffer(fbo.read(components=3), dtype=np.uint8).reshape(size[1], size[0], 3)[::-1]
    finally:
        renderer.release()
        release_framebuffer(fbo)
    x, y, w, h = inset_rect(size)
    rows = np.s_[size[1] - (y + h):size[1] - y]
    return img[rows, x:x + w], np.delete(img, rows, axis=0)


def _crosses(boxes, centre, r):
    """Whether an edge of some plan box passes through the open square of half-side r."""
    lo, hi = boxes[:, 0] - centre, boxes[:, 1] - centre
    vertical = [(np.abs(e) < r) & (lo[:, 1] < r) & (hi[:, 1] > -r) for e in (lo[:, 0], hi[:, 0])]
    horizontal = [(np.abs(e) < r) & (lo[:, 0] < r) & (hi[:, 0] > -r) for e in (lo[:, 1], hi[:, 1])]
    return bool(np.any(vertical + horizontal))


def test_rendered_inset_draws_each_visited_level_and_no_other(gl_ctx, rng):
    tree, camera, trace = _tree_and_trace(rng)
    r = 200.0
    inset, outside = _render_inset(gl_ctx, build_map(trace, camera, radius=r))
    assert outside.max() == 0                                   # nothing leaks out of the inset
    drawn = {lv.depth for lv in trace.levels}
    for depth in range(len(LEVEL_COLOURS)):
        if depth not in drawn:
            assert _colour_pixels(inset, level_colour(depth)) == 0, depth
    # The camera marker is white, at the centre of the inset.
    h, w = inset.shape[:2]
    assert _colour_pixels(inset[h // 2 - 4:h // 2 + 5, w // 2 - 4:w // 2 + 5], (1.0, 1.0, 1.0)) > 0
    # One level at a time: its colour shows exactly when one of its boxes has an edge on the map.
    centre = camera.position[[0, 2]]
    for lv in trace.levels:
        g = build_map(trace, camera, radius=r, only_depth=lv.depth)
        assert np.array_equal(g.visited_bounds, lv.bounds[:, :, [0, 2]])
        level_inset, _ = _render_inset(gl_ctx, g)
        shown = _colour_pixels(level_inset, level_colour(lv.depth)) > 0
        assert shown == _crosses(g.visited_bounds, centre, r * 0.99), lv.depth
    assert LEVEL_OUTLINE_ALPHA == 1.0


def test_frozen_map_centres_on_the_query_point_and_marks_the_viewer(rng):
    tree, camera, trace = _tree_and_trace(rng)
    viewer = camera.position + np.array([150.0, 80.0, 60.0])
    g = build_map(trace, camera, query_point=camera.position, viewer=viewer, radius=300.0)
    plain = build_map(trace, camera, radius=300.0)
    assert np.array_equal(g.centre, camera.position[[0, 2]]) and np.array_equal(plain.centre, g.centre)
    assert g.lines.shape[0] == plain.lines.shape[0] + 8                 # the viewer's square
    square = g.lines[-14:-6][:, [0, 2]]                                 # before the scale bar (6)
    assert np.allclose(square.mean(axis=0), viewer[[0, 2]], atol=1e-3)


@pytest.mark.parametrize("size", [(1280, 720), (960, 540), (320, 200)])
def test_the_headless_scale_label_stands_above_its_place_as_the_windows_does(size):
    """Headless frames painted the label's top-left at font size + 2 above its place: its digits sat 5 px
    lower than the window's bottom-anchored label, the scale bar through them (a helper's window probe)."""
    from types import SimpleNamespace

    from PIL import Image

    from engine.map_geometry import label_position
    from engine.map_label import draw_map_label

    image = Image.new("RGB", size)
    font_size = max(10, size[1] // 60)
    draw_map_label(image, SimpleNamespace(label="200 m"), font_size=font_size)
    rows = np.flatnonzero(np.asarray(image).max(axis=(1, 2)) > 0)
    _, place = label_position(SimpleNamespace(label="200 m"), size)
    assert rows.size and rows[-1] <= place - 4 and rows[0] >= place - 4 - 2 * font_size
