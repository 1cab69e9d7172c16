"""Hierarchical LOD in the clusters scene: one stand-in per cluster seen from afar,
its members only near.  Counts here; pictures in ``test_lod_frames.py``."""

import numpy as np

from culling import ViewDistanceTree
from engine.visibility_range import in_visibility_range
from scenes import build_scene
from scenes.clusters import CLUSTER_COUNT, STAND_IN_BEGIN, STAND_IN_KINDS


def _setup(objects=60_000):
    scene = build_scene("clusters", objects, seed=2)
    tree = ViewDistanceTree(size=scene.world_size, origin=scene.world_origin)
    handles = tree.insert_many(scene.centres, scene.view_distance)
    names = [k.name for k in scene.kinds]
    stand_in = np.isin(scene.kind, [names.index(n) for n in STAND_IN_KINDS])
    gardens = np.isin(scene.kind, [names.index("lawn"), names.index("flower bed")])   # the bulk
    return scene, tree, handles, stand_in, gardens


def _visible(scene, tree, point):
    found = tree.query(point)
    d = np.linalg.norm(scene.centres[found] - point, axis=1)
    return found, found[in_visibility_range(d, scene.view_distance[found], scene.begin_distance[found])]


def test_from_afar_the_stand_ins_are_the_only_cluster_candidates():
    scene, tree, handles, stand, members = _setup()
    assert np.array_equal(handles, np.arange(len(scene)))
    camera = scene.camera_pose(0.1).position
    found, visible = _visible(scene, tree, camera)
    assert not members[found].any()                          # no member is even a candidate
    assert stand[found].sum() == stand.sum() == 3 * CLUSTER_COUNT    # a settlement costs three objects
    assert stand[visible].sum() == 3 * CLUSTER_COUNT


def test_from_inside_a_cluster_the_members_show_and_its_stand_in_does_not():
    scene, tree, handles, stand, members = _setup()
    centre = scene.cluster_centres[0]
    found, visible = _visible(scene, tree, centre)
    own = np.flatnonzero(stand & np.all(scene.centres == centre, axis=1))
    assert own.shape == (3,)
    assert np.isin(own, found).all() and not np.isin(own, visible).any()   # candidates, refused by the begin test
    assert members[visible].sum() > 1000
    # Just beyond the begin distance it is back, and every building is still in sight (cross-fading).
    outside = centre + np.array([STAND_IN_BEGIN * 1.01, 0.0, 0.0])
    _, visible = _visible(scene, tree, outside)
    names = [k.name for k in scene.kinds]
    buildings = np.flatnonzero(np.isin(scene.kind, [names.index(n) for n in ("house", "roof", "tower")])
                               & (np.linalg.norm(scene.centres - centre, axis=1) < 200.0))
    assert np.isin(own, visible).all() and np.isin(buildings, visible).all()
