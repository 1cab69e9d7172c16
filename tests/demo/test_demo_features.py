"""Demo features built on the rest of `culling`: collision, visibility events, view scale."""

import numpy as np
import pytest

from culling import CollisionCandidates, VisibilityTracker
from demo.demo import CAMERA_RADIUS, SCALE_STEP
from engine.hud import hud_lines


def test_camera_cannot_fly_into_a_tree(make_demo):
    demo = make_demo("forest", 20_000, overlay=False)
    assert isinstance(demo.collision, CollisionCandidates)
    scene = demo.scene
    tree_kind = [k.name for k in scene.kinds].index("tree")
    first = int(scene.kind_offsets[tree_kind])
    centre, radius = scene.centres[first], scene.bounding_radius[first]
    start = centre + np.array([radius + CAMERA_RADIUS + 5.0, 0.0, 0.0])
    demo.set_pose(start, 270.0, 0.0)                  # yaw 270: looking down -x, at the tree
    assert demo.collide
    for _ in range(20):
        demo.fly(1.0, 0.0, 0.0)
    gap = np.linalg.norm(demo.camera.position - centre) - (radius + CAMERA_RADIUS)
    assert gap >= -1e-9
    demo.collide = False                             # C key: now it flies straight through
    closest = np.inf
    for _ in range(20):
        demo.fly(1.0, 0.0, 0.0)
        closest = min(closest, np.linalg.norm(demo.camera.position - centre))
    assert closest < radius


def test_flying_down_into_the_hills_stops_the_eye_a_camera_radius_above_the_ground(make_demo):
    demo = make_demo("forest", 20_000, overlay=False)
    pose = demo.scene.camera_pose(0.3)
    demo.set_pose(pose.position, pose.yaw, -60.0)     # steeply down
    heights = []
    for _ in range(40):
        demo.fly(5.0, 0.0, 0.0)
        x, y, z = demo.camera.position
        heights.append(y - float(demo.scene.ground_height(x, z)))
    assert min(heights) >= CAMERA_RADIUS - 1e-9 and heights[-1] == pytest.approx(CAMERA_RADIUS)


def test_entered_and_left_follow_the_visible_set(make_demo):
    demo = make_demo("forest", 20_000, overlay=False)
    assert isinstance(demo.tracker, VisibilityTracker)
    pose = demo.scene.camera_pose(0.2)
    demo.set_pose(pose.position, pose.yaw, pose.pitch)
    demo.update(0.0)
    before = set(demo.handles[demo.pipeline.visible].tolist())
    demo.set_pose(pose.position, pose.yaw + 60.0, pose.pitch)
    demo.update(0.0)
    after = set(demo.handles[demo.pipeline.visible].tolist())
    assert set(demo.events.entered.tolist()) == after - before
    assert set(demo.events.left.tolist()) == before - after
    info = demo.hud_info()
    assert info.entered == len(after - before) and info.left == len(before - after)


def test_view_scale_keys_widen_and_narrow_the_query(make_demo):
    demo = make_demo("forest", 20_000, overlay=True)
    pose = demo.scene.camera_pose(0.2)
    demo.set_pose(pose.position, pose.yaw, pose.pitch)
    base = demo.update(0.0).in_range
    demo.scale_view(SCALE_STEP)
    demo.scale_view(SCALE_STEP)
    wider = demo.update(0.0).in_range
    assert demo.scale == pytest.approx(SCALE_STEP ** 2)
    assert wider > base
    d = np.linalg.norm(demo.scene.centres - demo.camera.position, axis=1)
    assert wider == np.count_nonzero(d <= demo.scale * demo.scene.view_distance)
    for _ in range(4):
        demo.scale_view(1.0 / SCALE_STEP)
    assert demo.update(0.0).in_range < base
    assert "scale x0.64" in " ".join(text for text, _ in hud_lines(demo.hud_info()))
