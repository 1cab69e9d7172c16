"""The clusters scene's camera path: to settlement 0 when there is one, round the neighbourhood when not."""

import numpy as np

from scenes.clusters import CLUSTER_COUNT, make_clusters


def test_with_too_few_objects_for_a_settlement_the_path_circles_the_neighbourhood():
    """``--scene clusters --objects 100`` has no settlement; its path flew 3 km out to an empty hilltop."""
    scene = make_clusters(100)
    assert scene.settlements == 0 and len(scene) == 100
    poses = [scene.camera_pose(u) for u in np.linspace(0.0, 1.0, 41)]
    assert max(np.hypot(p.position[0], p.position[2]) for p in poses) <= 501.0
    seen = [np.linalg.norm(scene.centres[:, [0, 2]] - p.position[[0, 2]], axis=1).min() for p in poses]
    assert max(seen) < 400.0                                  # some object always near the camera


def test_with_settlements_the_path_ends_in_settlement_zero():
    scene = make_clusters(20_000)
    assert 0 < scene.settlements <= CLUSTER_COUNT
    end = scene.camera_pose(1.0).position
    assert np.hypot(*(end - scene.cluster_centres[0])[[0, 2]]) < 200.0
