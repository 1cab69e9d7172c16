"""Real frames on EGL/llvmpipe: every scene shows several classes, and culling
never changes the picture (tree vs brute force, with and without the frustum filter)."""

import numpy as np
import pytest

import engine.culling_pipeline as pipeline_module
import engine.renderer as renderer_module

SIZE = (192, 108)
SCENE_CASES = {
    # scene: (objects, path fraction, classes that must show)
    "forest": (20_000, 0.0, 3),
    "clusters": (30_000, 0.1, 3),
    "swarm": (8_000, 0.0, 2),        # dense flocks: fewer objects would all be within reach
}


@pytest.mark.parametrize("name", list(SCENE_CASES))
def test_each_scene_renders_several_classes(name, make_demo, render, pixels_of):
    objects, u, min_classes = SCENE_CASES[name]
    demo = make_demo(name, objects, size=SIZE, overlay=False)
    pose = demo.scene.camera_pose(u)
    demo.set_pose(pose.position, pose.yaw, pose.pitch)
    demo.set_fade(False)
    stats = demo.update(0.0)
    assert stats.drawn > 0

    shaded = render(demo)
    assert shaded.shape == (SIZE[1], SIZE[0], 3)
    assert shaded.std() > 10.0                                           # not blank
    assert len(np.unique(shaded.reshape(-1, 3), axis=0)) > 50

    flat = render(demo, flat=True)
    per_class = {k.name: pixels_of(flat, k.colour, tol=1) for k in demo.scene.kinds}
    shown = [n for n, c in per_class.items() if c >= 4]
    assert len(shown) >= min_classes, per_class
    # Every kind with pixels on screen was uploaded; none shows that was not.
    uploaded = {k.name for k, n in zip(demo.scene.kinds, stats.kind_counts) if n > 0}
    assert set(shown) <= uploaded
    sky = pixels_of(flat, demo.scene.sky, tol=1)
    assert 0 < sky < flat.shape[0] * flat.shape[1]


def _frame(make_demo, render, name, brute_force, pose_u=0.3, objects=None, size=SIZE):
    count = objects or SCENE_CASES[name][0]
    demo = make_demo(name, count, size=size, overlay=False, brute_force=brute_force)
    pose = demo.scene.camera_pose(pose_u)
    demo.set_pose(pose.position, pose.yaw, pose.pitch)
    stats = demo.update(0.0)
    return render(demo), stats, demo


@pytest.mark.parametrize("name", list(SCENE_CASES))
def test_tree_culling_gives_the_brute_force_picture(name, make_demo, render):
    tree_img, tree_stats, tree_demo = _frame(make_demo, render, name, brute_force=False)
    brute_img, brute_stats, brute_demo = _frame(make_demo, render, name, brute_force=True)
    assert brute_stats.candidates == len(brute_demo.scene)
    assert tree_stats.candidates < brute_stats.candidates
    assert tree_stats.drawn == brute_stats.drawn > 0
    assert np.array_equal(tree_img, brute_img)


def test_frustum_filter_never_removes_a_visible_pixel(make_demo, render, monkeypatch):
    """Drawing every in-range object, frustum filter off, gives the same image:
    the bounding spheres really bound the meshes."""
    culled, culled_stats, _ = _frame(make_demo, render, "forest", brute_force=False, pose_u=0.6)
    monkeypatch.setattr(pipeline_module, "spheres_in_frustum",
                        lambda planes, centres, radii: np.ones(len(radii), dtype=bool))
    everything, all_stats, _ = _frame(make_demo, render, "forest", brute_force=False, pose_u=0.6)
    assert all_stats.drawn > 2 * culled_stats.drawn
    assert np.array_equal(culled, everything)


def _wide_swarm_frame(make_demo, render):
    demo = make_demo("swarm", 6000, size=(96, 54), overlay=False, lod=False)
    demo.set_pose(np.array([0.0, 60.0, 0.0]), 0.0, -89.0)
    demo.camera.fov_y = 170.0
    demo.camera.aspect = 4.0
    return demo, demo.update(0.0), render(demo, flat=True)


#: A small first capacity, so that the wide swarm view must grow the buffers whatever the scene's density.
SMALL_CAPACITY = 64


def test_instance_buffers_grow(make_demo, render, pixels_of, monkeypatch):
    monkeypatch.setattr(renderer_module, "INITIAL_INSTANCE_CAPACITY", SMALL_CAPACITY)
    demo, stats, grown = _wide_swarm_frame(make_demo, render)
    k = [kind.name for kind in demo.scene.kinds].index("bird")
    creatures = demo.renderer.batches[k]
    assert stats.kind_counts[k] > SMALL_CAPACITY      # the view is wide enough to need growth
    assert creatures.count == stats.kind_counts[k]
    assert creatures.capacity >= stats.kind_counts[k]
    assert pixels_of(grown, demo.scene.kinds[k].colour) > 0
    # Every uploaded creature was drawn: the frame equals one drawn from buffers that never had to grow.
    monkeypatch.setattr(renderer_module, "INITIAL_INSTANCE_CAPACITY", 1 << 16)
    roomy, roomy_stats, never_grown = _wide_swarm_frame(make_demo, render)
    assert roomy.renderer.batches[k].capacity == 1 << 16
    assert np.array_equal(roomy_stats.kind_counts, stats.kind_counts)
    assert np.array_equal(grown, never_grown)
