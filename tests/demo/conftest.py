"""Demo test set-up: a ``Demo`` on the session's EGL context, rendering and pixel counts; a virtual X display."""

from __future__ import annotations

import numpy as np
import pytest
from demo_window import PATIENCE, need_tools
from xvfb_server import start_xvfb

from demo.demo import Demo, DemoSettings
from engine.framebuffers import release_framebuffer


@pytest.fixture
def make_demo(gl_ctx):
    """``make_demo(scene, objects, size=(160, 90), **settings)`` -> Demo, released after the test."""
    made = []

    def _make(scene: str, objects: int, size=(160, 90), **settings) -> Demo:
        settings.setdefault("hud", False)
        demo = Demo(gl_ctx, size, DemoSettings(scene=scene, objects=objects, seed=settings.pop("seed", 3), **settings))
        made.append(demo)
        return demo

    yield _make
    for demo in made:
        demo.release()


@pytest.fixture
def render(gl_ctx):
    """``render(demo, flat=False)`` -> the frame as an (h, w, 3) uint8 array (top row first)."""

    def _render(demo: Demo, flat: bool = False) -> np.ndarray:
        fbo = gl_ctx.simple_framebuffer(demo.size)
        try:
            demo.renderer.flat = flat
            demo.render(fbo)
            return np.asarray(demo.read_image(fbo))
        finally:
            demo.renderer.flat = False
            release_framebuffer(fbo)

    return _render


def _pixels_of(image: np.ndarray, rgb, tol: int = 1) -> int:
    target = np.round(np.asarray(rgb, dtype=np.float64) * 255.0).astype(np.int16)
    diff = np.abs(image.astype(np.int16) - target)
    return int(np.count_nonzero(np.all(diff <= tol, axis=-1)))


@pytest.fixture
def pixels_of():
    """``pixels_of(image, rgb, tol=1)``: pixels whose colour is ``rgb`` (0..1) within ``tol`` per channel."""
    return _pixels_of


@pytest.fixture
def xvfb():
    """A virtual X display of the test's own (``":N"``), for a test that starts its window itself."""
    need_tools(("Xvfb", "xdotool"))
    proc, display = start_xvfb("800x600x24")
    yield display
    proc.terminate()
    proc.wait(timeout=PATIENCE)
