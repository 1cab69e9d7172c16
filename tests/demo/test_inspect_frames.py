"""The X key's explanation on screen (offscreen EGL): the object under a point picked, its lines on the HUD
saying what the culling did with it, its marks drawn in white around it, and the verdict following the
camera out of its reach and back."""

from __future__ import annotations

import numpy as np

from engine.hud import hud_lines
from engine.inspection import pick, screen_ray

SIZE = (320, 180)


def _white(image: np.ndarray) -> np.ndarray:
    """The marks' lines: no lit surface, sky or ground of the forest is this bright."""
    return np.all(image >= 240, axis=-1)


def _ndc(demo, point) -> tuple[float, float]:
    clip = demo.view_projection @ np.append(point, 1.0)
    return float(clip[0] / clip[3]), float(clip[1] / clip[3])


def _pixel(demo, ndc) -> tuple[int, int]:
    return int((ndc[0] + 1.0) / 2.0 * demo.size[0]), int((1.0 - ndc[1]) / 2.0 * demo.size[1])


def _forest(make_demo):
    demo = make_demo("forest", 20_000, size=SIZE, overlay=False, hud=True, hud_mode="full")
    pose = demo.scene.camera_pose(0.1)
    demo.set_pose(pose.position, pose.yaw, pose.pitch)
    demo.update(1.0 / 30.0)
    return demo


def _a_drawn_object(demo) -> int:
    """A drawn object in the middle of the view, the nearest such (so nothing drawn hides it)."""
    scene, visible = demo.scene, demo.pipeline.visible
    ndc = np.array([_ndc(demo, scene.centres[i]) for i in visible])
    central = visible[np.abs(ndc).max(axis=1) < 0.6]
    assert central.size, "nothing drawn in the middle of the view"
    return int(central[np.argmin(np.linalg.norm(scene.centres[central] - demo.camera.position, axis=1))])


def test_x_picks_the_first_drawn_object_under_the_point_and_the_hud_explains_it(make_demo, render):
    demo = _forest(make_demo)
    target = _a_drawn_object(demo)
    at = _ndc(demo, demo.scene.centres[target])
    before = render(demo)
    said = demo.inspect_at(at)
    origin, direction = screen_ray(demo.view_projection, at)
    expected = pick(origin, direction, demo.scene.centres, demo.scene.bounding_radius, demo.pipeline.visible)
    assert demo.inspected == expected is not None and said == f"X: {demo.inspection().kind} #{expected} under the cursor"
    assert demo.state()["inspected"] == expected
    explained = demo.inspection()
    assert explained.drawn and explained.verdict().startswith("drawn")
    assert explained.distance <= explained.reach
    lines = [text for text, _ in hud_lines(demo.hud_info(help=False), "full")]
    assert lines[lines.index(explained.lines()[0]):][:4] == explained.lines()
    assert [text for text, _ in hud_lines(demo.hud_info(help=False), "compact")].count(explained.lines()[2]) == 1
    demo.update(1.0 / 30.0)
    after = render(demo)
    x, y = _pixel(demo, _ndc(demo, demo.scene.centres[demo.inspected]))
    near = _white(after) & ~_white(before)
    window = near[max(y - 40, 0):y + 40, max(x - 40, 0):x + 40]
    assert window.sum() >= 10, "no white mark around the picked object"


def test_the_verdict_follows_the_camera_out_of_the_reach_and_back(make_demo):
    demo = _forest(make_demo)
    demo.inspect_at(_ndc(demo, demo.scene.centres[_a_drawn_object(demo)]))
    explained = demo.inspection()
    centre = demo.scene.centres[explained.obj]
    away = demo.camera.position - centre
    away[1] = 0.0
    away /= np.linalg.norm(away)
    start = demo.camera.position.copy()
    demo.set_pose(centre + away * (explained.reach + 5.0) + [0.0, 40.0, 0.0], demo.camera.yaw, demo.camera.pitch)
    demo.update(1.0 / 30.0)
    out = demo.inspection()
    assert not out.drawn and out.verdict().startswith("beyond its reach by") and out.distance > out.reach
    assert explained.obj not in set(demo.pipeline.visible.tolist())            # the culling agrees
    only = demo.pipeline.visible
    demo.pipeline.visible = np.zeros(0, dtype=only.dtype)                     # nothing drawn on that line
    said = demo.inspect_at(_ndc(demo, centre))                                # X there again: its sphere, undrawn
    demo.pipeline.visible = only
    assert said == f"X: {explained.kind} #{explained.obj}, not drawn, on the line of sight through the cursor"
    demo.toggle_freeze()                                                      # frozen out there...
    demo.set_pose(start, demo.camera.yaw, demo.camera.pitch)
    demo.update(1.0 / 30.0)
    assert demo.inspection().lines()[0].endswith("from the frozen point") and not demo.inspection().drawn
    demo.toggle_freeze()                                                      # ...and back
    demo.update(1.0 / 30.0)
    assert demo.inspection().drawn


def test_x_on_nothing_clears_it_and_a_new_scene_forgets_it(make_demo):
    demo = _forest(make_demo)
    demo.inspect_at(_ndc(demo, demo.scene.centres[_a_drawn_object(demo)]))
    assert demo.inspected is not None
    demo.set_pose(demo.camera.position, demo.camera.yaw, 89.0)                # straight up: sky only
    demo.update(1.0 / 30.0)
    assert demo.inspect_at((0.0, 0.0), "the centre of the view") == "X: no object under the centre of the view"
    assert demo.inspected is None and demo.inspection() is None and demo.hud_info().inspection == []
    demo.set_pose(demo.camera.position, demo.camera.yaw, 0.0)
    demo.update(1.0 / 30.0)
    demo.inspect_at(_ndc(demo, demo.scene.centres[_a_drawn_object(demo)]))
    demo.load_scene("forest", 5000)
    assert demo.inspected is None and demo.state()["inspected"] == ""


def test_x_pressed_before_a_new_scenes_first_frame_picks_what_that_frame_draws(make_demo):
    """``xdotool key 1 x``: the scene's key and X in one burst of events, before the new scene had a frame.
    The pick preferred the drawn objects of a frame not culled yet (none), so an object drawn right under
    the cursor was said to be "not drawn, on the line of sight"; the HUD said "drawn" a frame later."""
    demo = _forest(make_demo)
    target = _a_drawn_object(demo)
    at = _ndc(demo, demo.scene.centres[target])
    pose = demo.camera.position.copy(), demo.camera.yaw, demo.camera.pitch
    demo.load_scene("forest", 20_000)                       # the same world again (its seed): the key 1
    demo.set_pose(*pose)
    said = demo.inspect_at(at)                               # X before any update
    assert said.endswith("under the cursor") and demo.inspection().drawn, said
    assert demo.inspected == target


def test_the_level_named_is_the_overlays_level_of_that_node_edge(make_demo):
    """The forest's root has grown above the constructor's (its world is larger): the node's level is
    counted from the current root, as the overlay's table and the [ ] keys count it."""
    demo = make_demo("forest", 20_000, size=SIZE, overlay=True)
    pose = demo.scene.camera_pose(0.1)
    demo.set_pose(pose.position, pose.yaw, pose.pitch)
    demo.update(1.0 / 30.0)
    assert demo.tree.root_level < 0
    demo.inspect_at(_ndc(demo, demo.scene.centres[_a_drawn_object(demo)]))
    demo.update(1.0 / 30.0)
    depth, edge, low = demo.inspection().node
    by_edge = {level.node_size: level.depth for level in demo.trace.levels}
    assert by_edge[edge] == depth
    visited = next(level for level in demo.trace.levels if level.depth == depth)
    assert any(np.allclose(box[0], low) for box in visited.bounds)            # the query visited that very node
