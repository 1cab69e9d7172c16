"""The per-frame stages against the exact reference index over all objects and a frustum mask."""

import numpy as np
import pytest

from culling import BruteForceIndex, ViewDistanceTree
from engine.camera import Camera
from engine.culling_pipeline import CullingPipeline
from engine.frustum import frustum_planes, spheres_in_frustum
from engine.records import FADE_FRACTION
from scenes import build_scene


def brute_force_visible(scene, camera, scale=1.0, shape="sphere"):
    """Objects in range (the exact reference, culling.BruteForceIndex) and in the frustum, and how many in range."""
    in_range = np.zeros(len(scene), dtype=bool)
    in_range[BruteForceIndex(scene.centres, scene.view_distance, shape).query(camera.position, True, scale)] = True
    in_frustum = spheres_in_frustum(frustum_planes(camera.view_projection()), scene.centres, scene.bounding_radius)
    return np.flatnonzero(in_range & in_frustum), int(in_range.sum())


def random_cameras(scene, rng, n):
    for _ in range(n):
        pos = rng.uniform(-600, 600, 3)
        pos[1] = float(scene.ground_height(np.array(pos[0]), np.array(pos[2]))) + rng.uniform(1, 60)
        yield Camera(pos, yaw=rng.uniform(0, 360), pitch=rng.uniform(-30, 20), aspect=16 / 9)


@pytest.mark.parametrize("shape", ["sphere", "cube"])
def test_tree_pipeline_matches_brute_force(rng, shape):
    scene = build_scene("forest", 30_000, seed=4)
    tree = ViewDistanceTree(size=scene.world_size, origin=scene.world_origin, dim=3, shape=shape)
    handles = tree.insert_many(scene.centres, scene.view_distance)
    pipe = CullingPipeline(scene, tree, handles, shape=shape)
    uploads = []
    for cam in random_cameras(scene, rng, 25):
        stats = pipe.run(cam.position, cam.view_projection(),
                         upload=lambda inst, starts: uploads.append((inst.copy(), starts.copy())))
        expected, in_range = brute_force_visible(scene, cam, shape=shape)
        assert np.array_equal(pipe.visible, expected)
        assert stats.in_range == in_range and stats.in_frustum == expected.shape[0]
        assert stats.candidates >= in_range
        inst, starts = uploads[-1]
        assert inst.shape == (expected.shape[0], 8) and inst.dtype == np.float32
        assert np.allclose(inst[:, :3], scene.centres[expected], atol=1e-3)
        assert np.array_equal(np.diff(starts), np.bincount(scene.kind[expected], minlength=len(scene.kinds)))
        assert np.all((inst[:, 6] >= 0) & (inst[:, 6] <= 1))


def test_scaled_query_matches_scaled_brute_force(rng):
    scene = build_scene("forest", 20_000, seed=8)
    tree = ViewDistanceTree(size=scene.world_size, origin=scene.world_origin, dim=3)
    pipe = CullingPipeline(scene, tree, tree.insert_many(scene.centres, scene.view_distance))
    for scale, cam in zip((0.5, 1.25, 2.0, 3.0), random_cameras(scene, rng, 4)):
        pipe.run(cam.position, cam.view_projection(), scale=scale)
        expected, _ = brute_force_visible(scene, cam, scale=scale)
        assert np.array_equal(pipe.visible, expected)


def test_fade_runs_over_the_last_stretch_of_view_distance():
    scene = build_scene("swarm", 500, seed=1)
    pipe = CullingPipeline(scene, BruteForceIndex(scene.centres, scene.view_distance), np.arange(len(scene)))
    cam = Camera(np.array([0.0, 30.0, 0.0]), yaw=0.0, pitch=-10.0)
    got = []
    pipe.run(cam.position, cam.view_projection(), upload=lambda inst, starts: got.append(inst.copy()))
    vis = pipe.visible
    dist = np.linalg.norm(scene.centres[vis] - cam.position, axis=1)
    limit = scene.view_distance[vis]
    expected = np.clip((limit - dist) / (FADE_FRACTION * limit), 0, 1)
    assert np.allclose(got[0][:, 6], expected, atol=1e-6)


def test_handles_need_not_be_object_indices():
    scene = build_scene("forest", 5_000, seed=2)
    tree = ViewDistanceTree(size=scene.world_size, origin=scene.world_origin, dim=3)
    tree.insert_many(scene.centres[:100], scene.view_distance[:100])       # occupy handles 0..99
    handles = tree.insert_many(scene.centres, scene.view_distance)
    tree.remove_many(np.arange(100))
    pipe = CullingPipeline(scene, tree, handles)
    cam = Camera(scene.camera_pose(0.2).position, yaw=10.0)
    pipe.run(cam.position, cam.view_projection())
    assert np.array_equal(pipe.visible, brute_force_visible(scene, cam)[0])


def test_staging_grows_and_rejects_bad_input():
    scene = build_scene("swarm", 3000, seed=1)
    pipe = CullingPipeline(scene, BruteForceIndex(scene.centres, scene.view_distance), np.arange(len(scene)))
    cam = Camera(np.array([0.0, 60.0, 0.0]), pitch=-89.0, fov_y=150.0)
    got = []
    pipe.run(cam.position, cam.view_projection(), upload=lambda inst, starts: got.append(inst.shape))
    assert got == [(pipe.visible.shape[0], 8)]
    assert pipe._staging_rows(5000).shape == (5000, 8)                # grows past the initial 1024 rows
    assert pipe._staging.shape[0] == 8192
    with pytest.raises(ValueError, match="one handle per object"):
        CullingPipeline(scene, BruteForceIndex(scene.centres[:3], scene.view_distance[:3]), np.arange(3))
    with pytest.raises(ValueError, match="shape must be"):
        CullingPipeline(scene, BruteForceIndex(scene.centres, scene.view_distance), np.arange(len(scene)), shape="torus")


def test_clusters_query_ignores_far_clusters():
    """While the camera stays in the neighbourhood, the visited nodes and candidates
    are the same whether the far clusters hold 20 thousand or 300 thousand objects."""
    results = []
    for total in (30_000, 310_000):
        scene = build_scene("clusters", total, seed=1)
        tree = ViewDistanceTree(size=scene.world_size, origin=scene.world_origin, dim=3)
        tree.insert_many(scene.centres, scene.view_distance)
        trace = tree.trace(scene.camera_pose(0.1).position)
        results.append(([(lv.depth, lv.nodes, lv.objects) for lv in trace.levels], np.sort(trace.candidates)))
    assert results[0][0] == results[1][0]
    assert np.array_equal(results[0][1], results[1][1])


@pytest.mark.parametrize("trace", [False, True])
def test_funnel_means_the_same_with_and_without_the_trace(trace):
    """candidates = what the walk's nodes hold (query(p)), in range = the exact query."""
    scene = build_scene("forest", 20_000, seed=3)
    tree = ViewDistanceTree(size=scene.world_size, origin=scene.world_origin, dim=3)
    pipe = CullingPipeline(scene, tree, tree.insert_many(scene.centres, scene.view_distance))
    cam = Camera(scene.camera_pose(0.3).position, yaw=30.0)
    stats = pipe.cull(cam.position, cam.view_projection(), trace=trace)
    assert stats.candidates == tree.query(cam.position).shape[0]
    assert stats.in_range == tree.query(cam.position, exact=True).shape[0]
    assert (pipe.trace is not None) == trace
    dist = np.linalg.norm(scene.centres[pipe.visible] - cam.position, axis=1)
    assert np.allclose(pipe.distances(), dist)


def test_pipeline_reads_moved_objects_from_the_scene():
    """No copy to refresh: a scene that moves objects in place is drawn where they are."""
    scene = build_scene("swarm", 400, seed=2)
    pipe = CullingPipeline(scene, BruteForceIndex(scene.centres, scene.view_distance), np.arange(len(scene)))
    scene.update(0.1, 0.1, np.zeros(3))
    cam = Camera(np.array([0.0, 60.0, 0.0]), pitch=-89.0, fov_y=150.0)
    got = []
    pipe.run(cam.position, cam.view_projection(), upload=lambda inst, starts: got.append(inst.copy()))
    assert got[0].shape[0] > 0
    assert np.allclose(got[0][:, :3], scene.centres[pipe.visible].astype(np.float32))
    assert np.array_equal(got[0][:, 7], scene.highlight[pipe.visible])


class _OwnScene:
    """An engine's own scene, as INTEGRATION.md section 1 lists what the pipeline reads: arrays sorted by
    kind, ``len()``, and kinds whose meshes are the engine's own (none of ``engine.meshes``)."""

    def __init__(self, centres, kind_counts, tints):
        self.centres = np.asarray(centres, dtype=np.float64)
        n = len(self.centres)
        self.view_distance = np.full(n, 50.0)
        self.bounding_radius = np.ones(n)
        self.begin_distance = np.zeros(n)
        self.yaw = np.zeros(n, dtype=np.float32)
        self.tint = np.asarray(tints, dtype=np.float32)
        self.highlight = np.zeros(n, dtype=np.float32)
        self.kind_offsets = np.concatenate([[0], np.cumsum(kind_counts)]).astype(np.int64)
        self.kinds = [type("Kind", (), {"name": k, "mesh": f"my_{k}", "colour": (1.0, 1.0, 1.0)})()
                      for k in ("crate", "barrel")]

    def __len__(self):
        return len(self.centres)


def test_an_engines_own_meshes_cull_and_build_records_without_the_demos_mesh_library():
    """The pipeline made its levels of detail at construction, from engine.meshes: an engine with meshes of
    its own could not cull at all (KeyError: unknown mesh 'my_crate').  Only instance_groups needs them now."""
    scene = _OwnScene([[0.0, 0.0, 10.0], [1.0, 0.0, 12.0], [2.0, 0.0, 14.0]], [2, 1], [0.1, 0.2, 0.3])
    tree = ViewDistanceTree(size=256.0, origin=(-128.0, -128.0, -128.0), dim=3)
    pipe = CullingPipeline(scene, tree, tree.insert_many(scene.centres, scene.view_distance))
    cam = Camera(np.zeros(3), yaw=0.0, pitch=0.0, aspect=1.0)
    forward = cam.forward()
    scene.centres[:] = 10.0 * forward + np.array([[0.0, 0.0, 0.0], [0.5, 0.0, 0.0], [0.0, 0.5, 0.0]])
    tree.update_many(pipe.handles, scene.centres, scene.view_distance)
    stats = pipe.cull(cam.position, cam.view_projection())
    records, kind_starts = pipe.instances()
    assert stats.in_frustum == 3 and kind_starts.tolist() == [0, 2, 3]
    assert np.allclose(records[:, 5], scene.tint)
    with pytest.raises(KeyError, match="unknown mesh 'my_crate'"):
        pipe.instance_groups()  # levels of detail are engine.meshes' chains


def test_spawned_and_destroyed_objects_reach_the_pipeline_through_set_handles():
    """A spawn culled with the table made at construction read a row beyond the scene's (IndexError), and an
    object spawned on a destroyed one's handle was drawn with the destroyed one's looks."""
    cam = Camera(np.zeros(3), yaw=0.0, pitch=0.0, aspect=1.0)
    ahead = 10.0 * cam.forward()
    centres = ahead + np.array([[0.0, 0.0, 0.0], [0.5, 0.0, 0.0], [0.0, 0.5, 0.0]])
    scene = _OwnScene(centres, [2, 1], [0.1, 0.2, 0.3])
    tree = ViewDistanceTree(size=256.0, origin=(-128.0, -128.0, -128.0), dim=3)
    handles = tree.insert_many(scene.centres, scene.view_distance)
    pipe = CullingPipeline(scene, tree, handles)
    assert pipe.cull(cam.position, cam.view_projection()).in_frustum == 3

    # Destroy the first crate: its row leaves the scene's arrays, its handle the tree.
    tree.remove(int(handles[0]))
    keep = np.arange(1, 3)
    scene.__init__(scene.centres[keep], [1, 1], scene.tint[keep])
    handles = handles[keep]
    pipe.set_handles(handles)
    assert pipe.cull(cam.position, cam.view_projection()).in_frustum == 2
    assert pipe.visible.tolist() == [0, 1] and np.allclose(pipe.instances()[0][:, 5], [0.2, 0.3])

    # Spawn a barrel: a row at the end of its kind, the tree hands out the destroyed crate's handle again.
    spawned = tree.insert(ahead + np.array([-0.5, 0.0, 0.0]), 50.0)
    assert spawned == 0
    scene.__init__(np.vstack([scene.centres, ahead + [-0.5, 0.0, 0.0]]), [1, 2], np.append(scene.tint, 0.9))
    pipe.set_handles(np.append(handles, spawned))
    assert pipe.cull(cam.position, cam.view_projection()).in_frustum == 3
    records, kind_starts = pipe.instances()
    assert kind_starts.tolist() == [0, 1, 3] and np.allclose(records[:, 5], [0.2, 0.3, 0.9])  # its own looks
    for bad, match in (([0, 1], "one handle per object"), ([0, 0, 1], "unique"), ([-1, 1, 2], "negative")):
        with pytest.raises(ValueError, match=match):
            pipe.set_handles(bad)
    assert pipe.cull(cam.position, cam.view_projection()).in_frustum == 3  # a refused table changed nothing
