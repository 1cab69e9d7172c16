"""Many swarm frames: both trees stay valid and agree with brute force."""

import numpy as np

from engine.culling_pipeline import CullingPipeline
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


def test_swarm_pipeline_refresh_moves_instances():
    scene = build_scene("swarm", 200, seed=2)
    from engine.culling_pipeline import BruteForceIndex

    pipe = CullingPipeline(scene, BruteForceIndex(len(scene)), np.arange(len(scene)))
    moved = scene.update(0.1, 0.1, np.zeros(3))
    pipe.refresh(moved)
    assert np.allclose(pipe.records[:, :3], scene.centres.astype(np.float32))
    assert np.array_equal(pipe.records[:, 7], scene.highlight)
