"""Hierarchical LOD in the clusters scene: one stand-in per cluster seen from afar,
its members only near.  Counts here; pictures in ``test_lod_frames.py``."""

import numpy as np

from culling import ViewDistanceTree
from engine.visibility_range import in_visibility_range
from scenes import build_scene
from scenes.clusters import STAND_IN_BEGIN


def _setup(objects=60_000):
    scene = build_scene("clusters", objects, seed=2)
    tree = ViewDistanceTree(size=scene.world_size, origin=scene.world_origin)
    handles = tree.insert_many(scene.centres, scene.view_distance)
    names = [k.name for k in scene.kinds]
    return scene, tree, handles, scene.kind == names.index("stand-in"), scene.kind == names.index("crystal")


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
    assert stand[found].sum() == stand.sum() == 4            # every cluster costs one object
    assert stand[visible].sum() == 4


def test_from_inside_a_cluster_the_members_show_and_its_stand_in_does_not():
    scene, tree, handles, stand, members = _setup()
    centre = scene.cluster_centres[0]
    found, visible = _visible(scene, tree, centre)
    own = np.flatnonzero(stand)[np.argmin(np.linalg.norm(scene.centres[stand] - centre, axis=1))]
    assert own in found and own not in visible               # a candidate, refused by the begin test
    assert members[visible].sum() > 1000
    # Just beyond the begin distance it is back (and the nearest members are still in sight).
    outside = centre + np.array([STAND_IN_BEGIN * 1.01, 0.0, 0.0])
    _, visible = _visible(scene, tree, outside)
    assert own in visible and members[visible].any()
