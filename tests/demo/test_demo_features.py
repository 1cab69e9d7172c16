"""Demo features built on the rest of `culling`: collision, visibility events, view scale, key answers."""

import numpy as np
import pytest

from culling import CollisionCandidates, VisibilityTracker
from demo.demo import CAMERA_RADIUS, SCALE_STEP, SCALE_STEPS
from engine.framebuffers import release_framebuffer
from engine.hud import HudInfo, hud_lines
from engine.map_geometry import inset_rect


def _height_above_ground(demo) -> float:
    x, y, z = demo.camera.position
    return y - float(demo.scene.ground_height(x, z))


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


def test_a_fast_flight_stops_at_a_tree_instead_of_jumping_through_it(make_demo):
    """One frame's move of 60 m straight through a tree 30 m ahead (200 m/s at 0.3 s a frame): collision
    stops the camera at the tree's surface, where checking only where the move ends let it through."""
    demo = make_demo("forest", 20_000, overlay=False)
    scene = demo.scene
    first = int(scene.kind_offsets[[k.name for k in scene.kinds].index("tree")])
    centre, radius = scene.centres[first], scene.bounding_radius[first]
    reach = radius + CAMERA_RADIUS
    demo.set_pose(centre + np.array([30.0, 0.0, 0.0]), 270.0, 0.0)    # looking down -x, at the tree
    demo.set_collision(False)
    demo.fly(60.0, 0.0, 0.0)
    assert demo.camera.position[0] < centre[0] - reach                  # without collision: through it
    demo.set_pose(centre + np.array([30.0, 0.0, 0.0]), 270.0, 0.0)
    demo.set_collision(True)
    demo.fly(60.0, 0.0, 0.0)
    gap = np.linalg.norm(demo.camera.position - centre) - reach
    assert demo.camera.position[0] > centre[0] and -1e-9 <= gap < 0.5  # stopped at its surface


def test_a_fast_flight_past_a_tree_slides_along_it(make_demo):
    """A move that meets a tree off-centre keeps going along its surface, past it."""
    demo = make_demo("forest", 20_000, overlay=False)
    scene = demo.scene
    first = int(scene.kind_offsets[[k.name for k in scene.kinds].index("tree")])
    centre, radius = scene.centres[first], scene.bounding_radius[first]
    reach = radius + CAMERA_RADIUS
    start = centre + np.array([20.0, 0.0, reach / 2])                  # aimed to clip the tree's side
    moved = demo._slid(start, start - np.array([40.0, 0.0, 0.0]))
    assert np.linalg.norm(moved - centre) >= reach * (1 - 1e-9)
    assert moved[0] < centre[0] and moved[2] > start[2]                 # past the tree, pushed sideways


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


def test_with_collision_off_the_ground_still_holds_the_camera(make_demo):
    """C turns off collision with objects, not with the terrain: flying down stops at the ground."""
    demo = make_demo("forest", 20_000, overlay=False)
    demo.set_collision(False)
    heights = []
    for _ in range(100):                              # 500 m down: far below any hill
        demo.fly(0.0, 0.0, -5.0)
        heights.append(_height_above_ground(demo))
    assert min(heights) >= CAMERA_RADIUS - 1e-9 and heights[-1] == pytest.approx(CAMERA_RADIUS)


def test_turning_collision_on_inside_a_tree_leaves_it_at_once(make_demo):
    demo = make_demo("forest", 20_000, overlay=False)
    scene = demo.scene
    first = int(scene.kind_offsets[[k.name for k in scene.kinds].index("tree")])
    centre, radius = scene.centres[first], scene.bounding_radius[first]
    demo.set_collision(False)
    demo.set_pose(centre + np.array([0.5, 0.0, 0.0]), 270.0, 0.0)       # inside the trunk's sphere
    demo.set_collision(True)                                            # no move in between
    assert np.linalg.norm(demo.camera.position - centre) >= radius + CAMERA_RADIUS - 1e-9


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
    demo.step_scale(1)
    demo.step_scale(1)
    wider = demo.update(0.0).in_range
    assert demo.scale == pytest.approx(SCALE_STEP ** 2)
    assert wider > base
    d = np.linalg.norm(demo.scene.centres - demo.camera.position, axis=1)
    assert wider == np.count_nonzero(d <= demo.scale * demo.scene.view_distance)
    for _ in range(4):
        demo.step_scale(-1)
    assert demo.update(0.0).in_range < base
    assert "scale x0.64" in " ".join(text for text, _ in hud_lines(demo.hud_info()))


@pytest.mark.parametrize("way", [1, -1])
def test_the_scale_comes_back_to_one_after_pressing_past_its_limit(make_demo, way):
    """The scale is always a whole power of the step: after the limit, as many presses back as it
    took to get there give exactly x1.00, and the status line says when a press cannot go further."""
    demo = make_demo("forest", 2_000, overlay=False)
    limit = SCALE_STEPS[1] if way > 0 else SCALE_STEPS[0]
    said = [demo.step_scale(way) for _ in range(abs(limit) + 5)]             # 5 presses past the limit
    assert demo.scale == SCALE_STEP ** limit
    name = "+" if way > 0 else "-"
    assert said[-1] == said[abs(limit) - 1] == f"{name}: every view distance x{'35.53' if way > 0 else '0.028'} (the limit)"
    assert len({line for line in said[:abs(limit)]}) == abs(limit)          # every press says a scale of its own
    assert "(the limit)" not in said[abs(limit) - 2]
    back = [demo.step_scale(-way) for _ in range(abs(limit))]
    assert demo.scale == 1.0 and back[-1] == f"{'-' if way > 0 else '+'}: every view distance x1.00"


def test_brute_force_says_the_overlay_has_no_nodes_and_the_hud_names_the_shape(make_demo):
    demo = make_demo("forest", 2_000, overlay=False, brute_force=True, shape="cube")
    assert demo.tree is None
    on = demo.toggle_overlay()
    assert demo.show_overlay and "brute force visits no nodes" in on and "the nodes the query visited" not in on
    loose = demo.toggle_loose()
    assert "brute force visits no nodes" in loose and "the grown (loose) boxes the query tested" not in loose
    assert not demo.show_loose and not demo.state()["loose"]  # nothing to show: nothing changed (--stats says so)
    shown = demo.toggle_map()
    assert demo.show_map and "brute force visits no nodes" in shown and demo.toggle_map() == "M: map off"
    demo.update(0.0)
    assert hud_lines(demo.hud_info(), "full")[0][0].startswith("forest  2,000 objects  brute force, cubes")


def test_the_overlay_keys_with_a_tree_say_what_they_draw(make_demo):
    demo = make_demo("forest", 2_000, overlay=False)
    assert demo.toggle_overlay() == "O: overlay on (the nodes the query visited)"
    assert demo.toggle_loose() == "L: the grown (loose) boxes the query tested"
    assert demo.toggle_overlay() == "O: overlay off"
    # with the overlay off, L still switches, and says nothing shows until O (it toggled silently before)
    assert demo.toggle_loose() == "L: the nodes' own boxes, once the overlay is on (O)"
    demo.update(0.0)
    assert hud_lines(demo.hud_info(), "full")[0][0].startswith("forest  2,000 objects  tree, spheres")


def test_shift_n_is_named_as_pressed(make_demo):
    demo = make_demo("forest", 500)
    assert demo.follow_next(-1).startswith("Shift+N: the forest scene has no players")
    demo.load_scene("aggro", 1_500)
    first = demo.follow_next(1)
    back = demo.follow_next(-1)
    assert first.startswith("N: following ") and back == f"Shift+N: following {demo.scene.followed_name()}"


def test_objects_stays_with_the_scene_the_demo_started_with(make_demo):
    """--objects is the first scene's count: a number key switching back to it rebuilds it at that
    count; the other scenes load at their defaults."""
    demo = make_demo("forest", 3_000, overlay=False)
    assert demo.objects_for("swarm") is None and demo.objects_for("forest") == 3_000
    demo.load_scene("swarm", 1_500)
    demo.load_scene("forest")                      # what the 1 key does
    assert demo.scene.name == "forest" and len(demo.scene) == 3_000


def test_the_map_follows_a_resize_though_the_window_screen_keeps_its_first_size(make_demo, gl_ctx):
    # moderngl's ctx.screen keeps the size the window had when the context was made: the inset took its
    # corner from it, and after a window shrank the map stayed where the old right edge was, off-screen
    demo = make_demo("forest", 2_000, size=(320, 200), map=True)
    screen = gl_ctx.simple_framebuffer((320, 200))
    try:
        demo.resize((200, 150))
        images = []
        for shown in (False, True):
            demo.show_map = shown
            demo.update(0.0)
            demo.render(screen)
            images.append(np.frombuffer(screen.read(components=3), dtype=np.uint8).reshape(200, 320, 3))
    finally:
        release_framebuffer(screen)
    changed = np.any(images[0] != images[1], axis=-1)  # rows bottom first, as GL reads them
    x, y, w, h = inset_rect((200, 150))
    inside = np.zeros_like(changed)
    inside[y:y + h, x:x + w] = True
    assert changed[inside].mean() > 0.5 and not changed[~inside].any()


def test_a_headless_hud_offers_no_key_hint():
    from engine.frame_stats import FrameStats

    texts = [[text for text, _ in hud_lines(HudInfo("forest", 10, FrameStats(), help=shown), "compact")]
             for shown in (True, False)]
    assert "H: timings, levels, keys" in texts[0] and "H: timings, levels, keys" not in texts[1]


def test_a_frame_drawn_before_the_first_update_of_a_scene_shows_ground_and_sky(make_demo, render):
    """The load's warm-up left its last cull's survivors behind with no objects to draw them for: a render
    before the next update raised ``ValueError: out must have shape (745, 8), got (0, 8)`` (the number keys'
    load, moved out of their event handler, ended a frame before its update; a helper's window probe)."""
    demo = make_demo("forest", 3_000, overlay=False)
    for scene in ("forest", "swarm"):
        demo.load_scene(scene, 1_500)
        before = render(demo)                      # ground and sky: nothing culled yet
        assert demo.stats.drawn == 0
        demo.update(0.0)
        after = render(demo)
        assert demo.stats.drawn > 0 and np.abs(after.astype(int) - before.astype(int)).max() > 0


def test_a_scene_load_gives_back_every_gl_object_the_load_before_made(make_demo, monkeypatch):
    """The load's warm-up drew into a ``simple_framebuffer`` and released the framebuffer alone: its colour
    and depth renderbuffers stayed, and the window's memory grew with every number key (a helper's
    window probe: 300 MB to 1 GB in 65 loads)."""
    import moderngl

    demo = make_demo("forest", 2_000)
    made: list[object] = []

    def counting(make):
        def counted(self, *args, **kwargs):
            obj = make(self, *args, **kwargs)
            made.append(obj)
            return obj
        return counted

    for name in ("buffer", "vertex_array", "program", "renderbuffer", "depth_renderbuffer", "framebuffer",
                 "simple_framebuffer", "texture", "depth_texture"):
        monkeypatch.setattr(moderngl.Context, name, counting(getattr(moderngl.Context, name)))
    demo.load_scene("forest", 2_000)
    first = list(made)
    assert any(isinstance(obj, moderngl.Renderbuffer) for obj in first)   # the warm-up's target was seen
    demo.load_scene("swarm", 1_000)
    kept = [obj for obj in first if not isinstance(obj.mglo, moderngl.InvalidObject)]
    assert kept == []


def test_freezing_keeps_the_frustum_and_the_zoom_of_the_moment_it_froze(make_demo):
    """F: the frozen query's frustum (its aspect) and scale (the zoom's) stay put while the window is
    resized and the zoom moves on; +/- still scales it."""
    demo = make_demo("forest", 20_000, overlay=False, size=(320, 180))
    pose = demo.scene.camera_pose(0.3)
    demo.set_pose(pose.position, pose.yaw, pose.pitch)
    demo.update(0.0)
    demo.toggle_freeze()
    frozen_vp = demo.frozen.view_projection().copy()
    scale = demo.query_scale
    kept = demo.pipeline.visible.copy()
    demo.resize((100, 180))                                # a narrow window
    demo.zoom.held = True
    demo.zoom.snap()
    demo.update(0.0)
    assert np.array_equal(demo.frozen.view_projection(), frozen_vp)
    assert demo.query_scale == scale and demo.zoom.scale > 4.0
    assert np.array_equal(demo.pipeline.visible, kept)
    # The rows and the HUD report the zoom culling uses, and the HUD the view's own beside it.
    assert demo.state()["zoom"] == 1.0
    hud = demo.hud_info()
    assert hud.zoom is None and hud.view_zoom == pytest.approx(demo.zoom.scale)
    assert f"view zoom x{demo.zoom.scale:.2f}" in "\n".join(text for text, _ in hud_lines(hud, "full"))
    demo.view_scale.move(1)                                # +: every view distance x1.25
    assert demo.query_scale == pytest.approx(scale * SCALE_STEP)
    demo.toggle_freeze()                                   # thawed: the live zoom again
    assert demo.query_scale == pytest.approx(SCALE_STEP * demo.zoom.scale)


def test_the_far_plane_never_cuts_an_object_within_its_view_distance(make_demo):
    """At a large +/- scale the reach passes the default 6 km far plane: the far plane follows it, so
    an object dead ahead and within its scaled view distance is drawn."""
    from demo.demo import MIN_FAR

    demo = make_demo("forest", 20_000, overlay=False)
    far_view = float(demo.scene.view_distance.max())
    obj = int(np.argmax(demo.scene.view_distance))
    for _ in range(SCALE_STEPS[1]):
        demo.view_scale.move(1)
    centre = demo.scene.centres[obj]
    distance = MIN_FAR * 1.2
    assert distance < far_view * demo.query_scale
    demo.set_pose(centre + np.array([distance, 0.0, 0.0]), 270.0, 0.0)   # looking down -x, at it
    demo.update(0.0)
    assert demo.camera.far >= far_view * demo.query_scale
    assert demo.handles[obj] in set(demo.handles[demo.pipeline.visible].tolist())


def test_flying_at_a_towers_base_never_passes_through_it_or_rests_inside(make_demo):
    """A tower's bounding sphere reaches a little below its base: flying along the ground at its axis, the
    slide along the sphere went under the terrain, the ground lifted the camera into the sphere, and the
    next move (away from the centre) carried it through the tower.  Now every frame ends outside every
    object and on the near side."""
    demo = make_demo("forest", 50_000, overlay=False, seed=1)
    scene = demo.scene
    towers = np.flatnonzero(scene.kind == [k.name for k in scene.kinds].index("tower"))
    tried = 0
    for tower in towers:
        centre, radius = scene.centres[tower], scene.bounding_radius[tower]
        start = centre + np.array([radius + 30.0, 0.0, 0.0])
        start[1] = float(scene.ground_height(start[0], start[2])) + CAMERA_RADIUS
        demo.set_pose(start, 270.0, -2.0)                        # along the ground, at the tower's axis
        demo.set_collision(True)
        if not np.array_equal(demo.collision.resolve(demo.camera.position), demo.camera.position):
            continue                                            # a rock or a tree where it would start
        tried += 1
        for _ in range(400):                                    # 25 m/s at 60 frames a second
            demo.fly(25.0 / 60.0, 0.0, 0.0)
            at = demo.camera.position
            assert np.array_equal(demo.collision.resolve(at), at), f"inside an object at {at}"
            assert at[0] > centre[0], f"through tower {tower}: {at}"
    assert tried >= 3


def test_flying_at_a_towers_shaft_stops_at_its_wall_not_its_bounding_sphere(make_demo):
    """The shaft is 0.17 of the tower's bounding radius wide: held off the bounding sphere, the camera
    stopped some 30 m short of a 40 m tower's wall, against thin air.  Flying at the shaft at half its
    height now stops within a metre or two of the wall (the column's sphere there), and never inside."""
    demo = make_demo("forest", 50_000, overlay=False, seed=1)
    scene = demo.scene
    towers = np.flatnonzero(scene.kind == [k.name for k in scene.kinds].index("tower"))
    tried = 0
    for tower in towers:
        centre, radius = scene.centres[tower], scene.bounding_radius[tower]
        start = centre + np.array([radius + 30.0, -0.4 * radius, 0.0])   # the shaft's middle, its height
        if start[1] < float(scene.ground_height(start[0], start[2])) + 2.0 * CAMERA_RADIUS:
            continue
        demo.set_pose(start, 270.0, 0.0)                                 # looking down -x, at the axis
        demo.set_collision(True)
        if not np.array_equal(demo.camera.position, start):
            continue                                                     # a tree where it would start
        tried += 1
        for _ in range(200):
            demo.fly(0.5, 0.0, 0.0)
        off_axis = float(np.hypot(*(demo.camera.position - centre)[[0, 2]]))
        assert 0.17 * radius < off_axis < 0.25 * radius + CAMERA_RADIUS + 0.5, (tower, off_axis, radius)
    assert tried >= 3


def test_a_larger_view_scale_thins_the_fog_so_far_objects_show(make_demo, render):
    """+ to x35: objects 6 km away are within their scaled view distances and drawn, and the fog (2.5 km at
    x1) held them at 99.7 %: the frame was plain sky.  The fog's distance now follows the scale."""
    demo = make_demo("forest", 20_000, overlay=False, size=(160, 90))
    for _ in range(SCALE_STEPS[1]):
        demo.view_scale.move(1)
    demo.set_collision(False)
    demo.set_pose((0.0, 400.0, 6000.0), 0.0, -3.0)               # 6 km out, looking back at the forest
    demo.update(0.0)
    assert demo.pipeline.visible.size > 100
    image = render(demo).astype(int)
    sky = np.array(demo.scene.sky) * 255.0
    differs = np.abs(image - sky).max(axis=-1) > 40
    assert differs.mean() > 0.01, differs.mean()                # the forest's band on the horizon (x1: none)
