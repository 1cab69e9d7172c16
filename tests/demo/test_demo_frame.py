"""The frame cut: ``Demo.update`` culls and touches no GPU object, ``Demo.render`` draws.

Also: the overlay's trace is the frame's walk (the same path with the
overlay on or off), the camera matrices are computed once per frame, and the
statistics are complete after drawing.
"""

import numpy as np
import pytest

from engine.camera import Camera
from engine.framebuffers import release_framebuffer


def _counting(monkeypatch, obj, name, calls):
    original = getattr(obj, name)

    def wrapper(*args, **kwargs):
        calls.append(name)
        return original(*args, **kwargs)

    monkeypatch.setattr(obj, name, wrapper)


def _forbid(monkeypatch, obj, name):
    def boom(*args, **kwargs):
        raise AssertionError(f"{name} called during update")

    monkeypatch.setattr(obj, name, boom)


@pytest.mark.parametrize("overlay", [False, True])
def test_update_touches_no_gpu_object_and_render_completes_the_stats(make_demo, gl_ctx, monkeypatch, overlay):
    demo = make_demo("forest", 20_000, overlay=overlay)
    pose = demo.scene.camera_pose(0.4)
    demo.set_pose(pose.position, pose.yaw, pose.pitch)
    with monkeypatch.context() as m:
        for obj, name in ((demo.renderer, "upload"), (demo.renderer, "upload_groups"), (demo.renderer, "draw"),
                          (demo.overlay_renderer, "upload"), (demo.overlay_renderer, "draw")):
            _forbid(m, obj, name)
        stats = demo.update(0.0)
    assert stats.drawn > 0 and stats.draw_ms == 0.0
    assert sum(b.count for b in demo.renderer.batches) == 0          # nothing uploaded yet
    fbo = gl_ctx.simple_framebuffer(demo.size)
    try:
        done = demo.render(fbo)
    finally:
        release_framebuffer(fbo)
    assert done is stats and stats.draw_ms > 0.0 and stats.upload_ms > 0.0
    # Every (kind, level) batch: cross-fading instances are drawn at two levels.
    uploaded = sum(b.count for b in demo.renderer.groups if b is not None)
    assert uploaded == int(stats.level_counts.sum()) >= stats.drawn
    assert (demo.overlay_renderer.count > 0) == overlay


@pytest.mark.parametrize("overlay", [False, True])
def test_one_index_call_and_one_matrix_per_frame_with_or_without_the_overlay(make_demo, gl_ctx, monkeypatch, overlay):
    demo = make_demo("forest", 20_000, overlay=overlay)
    demo.update(0.0)
    calls: list[str] = []
    for name in ("query", "query_spheres", "query_detailed", "trace", "query_many"):
        _counting(monkeypatch, demo.tree, name, calls)
    matrices: list[str] = []
    _counting(monkeypatch, Camera, "view_projection", matrices)
    fbo = gl_ctx.simple_framebuffer(demo.size)
    try:
        demo.update(1 / 60)
        demo.render(fbo)
        # one walk: the exact answer with its distances, and the trace when the overlay is on
        assert calls == ["query_detailed"]
        assert matrices == ["view_projection"]
        demo.toggle_freeze()
        matrices.clear()
        demo.update(1 / 60)
        demo.render(fbo)
        assert len(matrices) == 2                    # the camera's and the frozen camera's
    finally:
        release_framebuffer(fbo)


def test_traced_and_exact_frames_keep_the_same_objects(make_demo):
    traced = make_demo("forest", 20_000, overlay=True)
    exact = make_demo("forest", 20_000, overlay=False)
    for u in (0.1, 0.4, 0.8):
        pose = traced.scene.camera_pose(u)
        for demo in (traced, exact):
            demo.set_pose(pose.position, pose.yaw, pose.pitch)
        a, b = traced.update(0.0), exact.update(0.0)
        assert np.array_equal(traced.pipeline.visible, exact.pipeline.visible)
        assert a.in_range == b.in_range and a.candidates == b.candidates >= a.in_range
        assert np.array_equal(np.sort(traced.trace.candidates), np.sort(traced.tree.query(pose.position)))


def test_demo_uploads_exactly_the_traced_boxes(make_demo, render):
    demo = make_demo("forest", 20_000, overlay=True)
    pose = demo.scene.camera_pose(0.4)
    demo.set_pose(pose.position, pose.yaw, pose.pitch)
    demo.update(0.0)
    render(demo)
    trace = demo.trace
    assert np.array_equal(np.sort(trace.candidates), np.sort(demo.tree.query(demo.camera.position)))
    assert demo.overlay_renderer.count == 24 * trace.visited_nodes
    demo.toggle_freeze()
    demo.camera.move_local(-200.0, 0.0, 100.0)
    demo.update(0.0)
    render(demo)
    assert np.allclose(demo.trace.point, pose.position)             # the query stayed put
    assert demo.overlay_renderer.count == 24 * demo.trace.visited_nodes + 24 + 6
    demo.step_level(+1)
    demo.update(0.0)
    render(demo)
    assert demo.only_depth == 0
    assert demo.overlay_renderer.count == 24 * 1 + 24 + 6
    # the HUD's table: the chosen level's row alone, and its "all" row still every level walked (it read
    # that one level's counts, beside a funnel line counting every level's)
    from engine.hud import LEVELS_TITLE, TOTALS, hud_lines

    texts = [text for text, _ in hud_lines(demo.hud_info(), "full")]
    title = next(k for k, text in enumerate(texts) if text.startswith(LEVELS_TITLE))
    end = next(k for k in range(title, len(texts)) if texts[k].startswith(TOTALS))
    assert [int(text.split()[0]) for text in texts[title + 1:end]] == [0]
    nodes, objects = texts[end].split()[1:3]
    assert int(nodes) == demo.trace.visited_nodes
    assert int(objects.replace(",", "")) == sum(level.objects for level in demo.trace.levels)


def test_hud_times_are_medians_of_recent_frames_and_a_slow_one_is_marked(make_demo, render):
    demo = make_demo("forest", 5_000, overlay=True)
    for _ in range(5):
        demo.update(1 / 60)
        render(demo)
    info = demo.hud_info()
    assert info.warm_frames == 5 and not info.cold
    assert info.stats.query_ms == float(np.median([f.query_ms for f in demo.recent]))
    assert info.stats.candidates == demo.stats.candidates
    demo.update(1 / 60)
    render(demo)
    demo.stats.query_ms += 1000.0                         # as a frame that compiled a kernel would be
    info = demo.hud_info()
    assert info.cold and info.stats.query_ms < 1000.0


def test_loading_a_scene_draws_its_first_view_once_offscreen_so_frame_0_is_warm(make_demo, gl_ctx, monkeypatch):
    """The GL driver compiles a program's shader variants at its first draw: loading draws the scene's
    first view with every kind uploaded, into a framebuffer of its own."""
    from engine.renderer import Renderer

    drawn: list[int] = []
    original = Renderer.draw

    def counting(self, view_projection, camera_position, framebuffer):
        drawn.append(sum(b.count for b in self.groups if b is not None))
        return original(self, view_projection, camera_position, framebuffer)

    monkeypatch.setattr(Renderer, "draw", counting)
    demo = make_demo("forest", 20_000)
    assert len(drawn) == 1 and drawn[0] > 0
    assert sum(b.count for b in demo.renderer.groups if b is not None) == 0     # frame 0 uploads its own
