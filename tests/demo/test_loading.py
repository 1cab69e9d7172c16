"""Building a large scene shows its progress: lines on stderr headless, a loading screen's bar in the window."""

from __future__ import annotations

import re

import numpy as np
import pytest

import demo.demo as demo_module
import demo.loading as loading
from demo.demo import Demo, DemoSettings
from demo.headless import HeadlessOptions, run_headless
from engine.framebuffers import release_framebuffer


def test_a_large_scene_build_reports_each_step_on_stderr(gl_ctx, capsys, monkeypatch):
    monkeypatch.setattr(loading, "LARGE_SCENE", 1_000)     # "large" from 1,000 objects on
    monkeypatch.setattr(demo_module, "BUILD_CHUNK", 700)   # the tree in batches of 700: 3 steps for 2,000
    settings = DemoSettings(scene="forest", objects=2_000, seed=3, hud=False)
    run_headless(HeadlessOptions(settings=settings, size=(96, 54), frames=1, out=None), ctx=gl_ctx)
    err = capsys.readouterr().err
    assert "building the forest scene (2,000 objects) ..." in err
    lines = [line for line in err.splitlines() if re.match(r"\s+\[[#.]+\] \d+/7 ", line)]
    steps = [line.split(" s  ", 1)[1] for line in lines]
    assert steps == ["scene data: 2,000 objects", "view-distance tree: 700/2,000 objects",
                     "view-distance tree: 1,400/2,000 objects", "view-distance tree: 2,000/2,000 objects",
                     "renderer", "collision candidates", "query paths"]
    assert [int(re.search(r"(\d+)/7", line).group(1)) for line in lines] == list(range(1, 8))
    assert lines[-1].lstrip().startswith("[" + "#" * 30 + "]")
    assert re.search(r"built the forest scene in \d+\.\d s", err)
    assert err.index("building the forest") < err.index("scene data") < err.index("built the forest")


def test_a_small_scene_builds_silently(gl_ctx, capsys):
    settings = DemoSettings(scene="forest", objects=500, seed=3, hud=False)
    run_headless(HeadlessOptions(settings=settings, size=(96, 54), frames=1, out=None), ctx=gl_ctx)
    err = capsys.readouterr().err
    assert "building the" not in err and "view-distance tree" not in err


def test_a_tree_built_in_batches_answers_as_one_built_at_once(gl_ctx, monkeypatch):
    settings = DemoSettings(scene="clusters", objects=3_000, seed=3, hud=False)
    whole = Demo(gl_ctx, (64, 36), settings)
    monkeypatch.setattr(demo_module, "BUILD_CHUNK", 1_000)
    seen: list[tuple[int, int, str]] = []
    batched = Demo(gl_ctx, (64, 36), settings, progress=lambda done, total, step: seen.append((done, total, step)))
    try:
        assert [done for done, _, _ in seen] == list(range(1, 8)) and {total for _, total, _ in seen} == {7}
        assert np.array_equal(batched.handles, whole.handles)
        batched.tree.check_invariants()
        for p in whole.scene.centres[::300]:
            assert np.array_equal(np.sort(batched.tree.query(p, exact=True)), np.sort(whole.tree.query(p, exact=True)))
    finally:
        whole.release()
        batched.release()


@pytest.mark.parametrize("fraction", [0.0, 0.25, 1.0])
def test_the_loading_screen_bar_is_filled_to_the_fraction(gl_ctx, fraction):
    size = (320, 180)
    fbo = gl_ctx.simple_framebuffer(size)
    try:
        fbo.use()
        x, y, bar_w, bar_h = loading.draw_bar(gl_ctx, size, fraction)
        image = np.frombuffer(fbo.read(components=3), dtype=np.uint8).reshape(size[1], size[0], 3)  # bottom row first
    finally:
        release_framebuffer(fbo)

    def pixels(rgb: tuple[float, float, float]) -> np.ndarray:
        return np.all(np.abs(image.astype(np.int16) - np.round(np.asarray(rgb) * 255.0)) <= 1, axis=-1)

    filled, empty = pixels(loading.FILLED), pixels(loading.EMPTY)
    width = int(bar_w * fraction)
    assert filled.sum() == width * bar_h
    assert empty.sum() == (bar_w - width) * bar_h
    if width:  # the filled part is the bar's left end
        assert filled[y:y + bar_h, x:x + width].all()
    assert pixels(loading.FRAME).sum() == (bar_w + 4) * (bar_h + 4) - bar_w * bar_h
    assert pixels(loading.BACKGROUND).sum() == size[0] * size[1] - (bar_w + 4) * (bar_h + 4)
