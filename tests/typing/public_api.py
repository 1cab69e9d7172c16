"""The public API called as CONTRACT.md allows, for ``mypy --strict`` (``.ci/run``) and at run time
(``tests/typing/test_public_api.py``): NumPy scalars and 0-d arrays wherever one number goes, NumPy integers
wherever a handle or an id goes.  A type hint narrower than what the library accepts makes a user's
strict type check fail on a call that works."""

from __future__ import annotations

import numpy as np

import culling
from culling import CollisionCandidates, DenseViewDistanceGrid, InterestManager, PointIndex, ViewDistanceTree


def run() -> None:
    tree = ViewDistanceTree(64.0, dim=2)
    a = tree.insert((1.0, 1.0), np.float32(2.0))
    b = tree.insert((1.0, 1.0), np.array(2.0))
    c = tree.insert((1.0, 1.0), 2)
    tree.update(np.int64(c), (2.0, 2.0), np.float64(3.0))
    assert tree.query((1.0, 1.0), exact=True, scale=np.float32(2.0)).tolist() == [a, b, c]
    assert tree.query((1.0, 1.0), exact=True, scale=np.array(1.0)).size == 3
    assert tree.overlapping((9.0, 9.0), np.float32(1.0), exact=True, scale=np.array(1.0)).size == 0
    tree.query_many([(1.0, 1.0)], exact=True, scale=np.int32(2))
    tree.trace((1.0, 1.0), scale=np.float32(2.0))
    tree.query_detailed((1.0, 1.0), scale=np.float64(1.0))
    seen: bool = tree.visible_from(np.int64(b), np.array([1.0, 1.0]), scale=np.float32(1.0))
    assert seen
    tree.remove(np.int64(a))
    grid = DenseViewDistanceGrid(64.0, dim=2)
    grid.update(np.int32(grid.insert((1.0, 1.0), np.float32(1.0))), (3.0, 3.0), np.array(2.0))
    for index in (tree, grid, culling.BruteForceIndex([(1.0, 1.0)], [1.0])):
        typed: PointIndex = index
        typed.query((1.0, 1.0), scale=np.float32(1.5))
    candidates = CollisionCandidates(probe_radius=np.float32(0.5), size=np.array(64.0), dim=2)
    first = candidates.insert((0.0, 0.0), np.float32(1.0))
    candidates.update(np.int64(first), (0.5, 0.0), np.array(1.5))
    candidates.set_probe_radius(np.float64(0.25))
    candidates.candidates((0.0, 0.0), np.float32(1.0))
    candidates.touching((0.0, 0.0), np.array(1.0))
    candidates.remove(np.int64(first))
    for made in (ViewDistanceTree(np.float32(64.0), dim=2), ViewDistanceTree(np.array(64.0), dim=2),
                 DenseViewDistanceGrid(np.float32(64.0), dim=2, min_radius=np.float32(1.0)),
                 DenseViewDistanceGrid(np.array(64.0), dim=2, min_radius=np.array(1.0))):
        assert made.size == 64.0
    assert InterestManager(size=np.float32(64.0), dim=2, hysteresis=np.array(0.25)).hysteresis == 0.25
    assert culling.VisibilityTracker(hysteresis=np.float32(0.5)).hysteresis == 0.5
    assert culling.MultiCameraTracker(hysteresis=np.array(0.5)).hysteresis == 0.5
    manager = InterestManager(size=64.0, dim=2)
    manager.insert_many([(1.0, 1.0)], [5.0])
    manager.tick(np.array([7, 9]), [(1.0, 1.0), (2.0, 2.0)])
    assert manager.interest(np.int64(7)).size == 1
    culling.set_thread_count(np.int64(2))
    culling.set_thread_count(None)


if __name__ == "__main__":
    run()
