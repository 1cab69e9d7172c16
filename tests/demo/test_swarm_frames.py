"""Many swarm frames: both trees stay valid and agree with brute force."""

import numpy as np

from scenes import build_scene
from scenes.swarm import PLAYER_SENSE


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
        bodies = scene.bounding_radius[scene.first:]
        expected = np.flatnonzero(np.linalg.norm(creatures - cam, axis=1) <= bodies + PLAYER_SENSE)
        assert np.array_equal(scene.sensed_by(cam, PLAYER_SENSE), expected)
        demo.update(1.0 / 30.0)
        chased += int(scene.highlight.sum())
        if frame % 10 == 9:
            demo.tree.check_invariants()
            scene.bird_tree.check_invariants()
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
    """Tree culling with the swarm's batches through overlapping_many and
    overlapping_pairs, and brute force (and the hash grid) for all of them,
    simulate and draw exactly the same frames."""
    tree_demo, tree_img = _flown(make_demo, render, brute_force=False)
    brute_demo, brute_img = _flown(make_demo, render, brute_force=True)
    assert tree_demo.scene.sensing_stats.method == tree_demo.scene.separation_stats.method == "tree"
    assert brute_demo.scene.sensing_stats.method == brute_demo.scene.separation_stats.method == "brute force"
    assert np.array_equal(tree_demo.scene.centres, brute_demo.scene.centres)
    assert tree_demo.scene.highlight.sum() > 0                       # some creatures are chasing
    assert tree_demo.stats.candidates < brute_demo.stats.candidates  # the tree culls
    assert tree_demo.stats.drawn == brute_demo.stats.drawn > 0
    assert np.array_equal(tree_img, brute_img)
    for demo in (tree_demo, brute_demo):
        for stats in (demo.scene.sensing_stats, demo.scene.separation_stats):
            assert stats.compared > 0 and stats.mismatches == 0


def test_hud_shows_both_batches_against_their_peers(make_demo):
    from engine.hud import hud_lines

    demo = make_demo("swarm", 2_000, overlay=False)
    demo.update(1.0 / 30.0)
    texts = [text for text, _ in hud_lines(demo.hud_info())]
    at = next(i for i, t in enumerate(texts) if t.startswith("sensing"))
    batch = texts[at:at + 6]
    hunters = demo.scene.hunters.stop - demo.scene.hunters.start
    assert f"you + {hunters:,} hunters (" in batch[0] and f"x {len(demo.scene) - demo.scene.first:,} birds" in batch[0]
    assert "overlapping_many" in batch[2] and "brute force" in batch[2] and "x)" in batch[2]
    assert batch[3].startswith("separation:")
    assert "overlapping_pairs" in batch[4] and "NumPy grid" in batch[4] and "x)" in batch[4]
    assert "peers run every 10th frame" in batch[5]
    compact = [text for text, _ in hud_lines(demo.hud_info(), "compact")]
    assert [t for t in compact if t.startswith(("sensing", "separation"))] == demo.scene.status_lines(brief=True)
    assert not any(line in compact for line in batch)               # the compact HUD has them in brief
    assert all(not t.startswith(("sensing", "separation")) for t, _ in hud_lines(make_demo("forest", 500).hud_info()))
