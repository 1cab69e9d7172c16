"""Many swarm frames: both trees stay valid and agree with brute force."""

import numpy as np

from scenes import build_scene


def test_swarm_trees_stay_valid_over_many_frames(make_demo):
    demo = make_demo("swarm", 800, size=(64, 36), overlay=True)
    scene = demo.scene
    demo.set_pose(np.array([0.0, 30.0, 0.0]), 0.0, -5.0)
    chased = 0
    for frame in range(90):
        if frame % 30 == 0:
            demo.fly(40.0, 10.0, 0.0)
        cam = demo.camera.position.copy()
        creatures = scene.centres[scene.first:].copy()
        expected_aggro = np.flatnonzero(np.linalg.norm(creatures - cam, axis=1) <= scene.aggro_radius)
        assert np.array_equal(scene.aggro_at(cam), expected_aggro)
        demo.update(1.0 / 30.0)
        chased += int(scene.highlight.sum())
        if frame % 10 == 9:
            demo.tree.check_invariants()
            scene.aggro_tree.check_invariants()
        # The view tree holds every creature where the scene says it is.
        assert np.allclose(demo.tree.centres_of(demo.handles), scene.centres)
    assert chased > 0                                   # some creatures noticed the camera
    # After the flight, the culled set is still exactly the brute-force one.
    d = np.linalg.norm(scene.centres - demo.camera.position, axis=1)
    in_range = np.flatnonzero(d <= scene.view_distance)
    assert set(demo.pipeline.visible.tolist()) <= set(in_range.tolist())
    assert demo.stats.in_range == in_range.shape[0]


def test_swarm_is_deterministic():
    runs = []
    for _ in range(2):
        scene = build_scene("swarm", 300, seed=9)
        cam = np.array([10.0, 25.0, -20.0])
        for step in range(20):
            scene.update(step / 30.0, 1.0 / 30.0, cam)
        runs.append(scene.centres.copy())
    assert np.array_equal(runs[0], runs[1])


def _flown(make_demo, render, brute_force, frames=24):
    """A swarm demo after ``frames`` simulated frames along the scripted camera path."""
    demo = make_demo("swarm", 8_000, size=(160, 90), overlay=False, brute_force=brute_force, seed=6)
    for frame in range(frames):
        pose = demo.scene.camera_pose(0.2 + 0.002 * frame)
        demo.set_pose(pose.position, pose.yaw, pose.pitch)
        demo.update(1.0 / 30.0)
    return demo, render(demo)


def test_swarm_pixels_identical_with_tree_and_brute_force(make_demo, render):
    """Tree culling with the aggro batch through query_many, and brute force for
    both, simulate and draw exactly the same frames."""
    tree_demo, tree_img = _flown(make_demo, render, brute_force=False)
    brute_demo, brute_img = _flown(make_demo, render, brute_force=True)
    assert tree_demo.scene.aggro_stats.method == "tree"
    assert brute_demo.scene.aggro_stats.method == "brute force"
    assert np.array_equal(tree_demo.scene.centres, brute_demo.scene.centres)
    assert tree_demo.scene.highlight.sum() > 0                       # some creatures are chasing
    assert tree_demo.stats.candidates < brute_demo.stats.candidates  # the tree culls
    assert tree_demo.stats.drawn == brute_demo.stats.drawn > 0
    assert np.array_equal(tree_img, brute_img)
    for demo in (tree_demo, brute_demo):
        assert demo.scene.aggro_stats.compared > 0 and demo.scene.aggro_stats.mismatches == 0


def test_hud_shows_the_aggro_batch_against_brute_force(make_demo):
    from engine.hud import hud_lines

    demo = make_demo("swarm", 2_000, overlay=False)
    demo.update(1.0 / 30.0)
    texts = [text for text, _ in hud_lines(demo.hud_info())]
    at = next(i for i, t in enumerate(texts) if t.startswith("aggro"))
    who, times = texts[at], texts[at + 1]
    hunters = demo.scene.hunters.stop - demo.scene.hunters.start
    assert f"you + {hunters:,} hunters x {len(demo.scene) - demo.scene.first:,} creatures" in who
    assert "query_many" in times and "brute force" in times
    compact = [text for text, _ in hud_lines(demo.hud_info(), "compact")]
    assert who in compact and times in compact                      # the compact HUD keeps the batch lines
    assert all(not t.startswith("aggro") for t, _ in hud_lines(make_demo("forest", 500).hud_info()))
