"""Screenshots compared with stored references, on the renderer that made them.

``reference/renderer.json`` records the ``GL_RENDERER`` and Mesa version the
references were rendered with.  Pixels are compared only when this machine's
renderer is the same one: another rasteriser (softpipe, another Mesa, a GPU)
rounds triangle edges differently, and a pixel comparison there would fail for
no real reason.  Everywhere, each view is rendered and checked for what holds
on any renderer: not blank, sky and ground both present, and the object classes
the view shows (unlit kind colours) on screen.  A skipped comparison is
reported as a ``ScreenshotComparisonSkipped`` warning naming both renderers (a
warning, not a skip: in CI a rendering test may not skip, see tests/conftest.py).

Regenerate after an intended visual change, on the machine whose renderer
should become the reference::

    pytest tests/demo/test_screenshots.py --regen-screenshots

On a mismatch the actual image and a diff image (differences in red over the
dimmed reference) are written to the test's temporary folder; the failure
message gives their paths.  HUD text is off here: it depends on the fonts.
"""

from __future__ import annotations

import json
import re
import warnings
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from demo.headless import headless_pose

pytestmark = pytest.mark.screenshot

REFERENCE_DIR = Path(__file__).resolve().parent / "reference"
RENDERER_FILE = REFERENCE_DIR / "renderer.json"
SIZE = (240, 135)
#: A pixel "differs" when a channel moves by more than this (the same renderer
#: still dithers the fade and rounds a few edges differently between runs of
#: the scene generator's float maths); at most this share of pixels may differ.
CHANNEL_TOLERANCE = 24
MAX_DIFFERING_SHARE = 0.01
#: A class "shows" in the unlit render with at least this many pixels of its colour.
MIN_CLASS_PIXELS = 4

CASES = {
    # name: (scene, objects, path fraction, freeze_at, classes that must show; each has
    #        at least 11 pixels on the reference renderer, so a few pixels' rounding cannot hide one)
    "forest": ("forest", 20_000, 0.35, None, {"bush", "rock", "tree", "tower"}),
    "forest_frozen": ("forest", 20_000, 0.8, 0.5, {"tree", "tower"}),
    "clusters": ("clusters", 30_000, 0.97, None, {"house", "roof", "town tree"}),
    "swarm": ("swarm", 1_500, 0.25, None, {"rock", "bird"}),
}


class ScreenshotComparisonSkipped(pytest.PytestWarning):
    """The frame was rendered and checked, but not compared: this is not the reference renderer."""


def renderer_of(ctx) -> dict[str, str | None]:
    """``GL_RENDERER``, ``GL_VERSION`` and the Mesa version (None off Mesa) of a moderngl context."""
    version = ctx.info["GL_VERSION"]
    mesa = re.search(r"Mesa (\S+)", version)
    return {"GL_RENDERER": ctx.info["GL_RENDERER"], "GL_VERSION": version, "mesa": mesa.group(1) if mesa else None}


def same_renderer(a: dict, b: dict) -> bool:
    """Same ``GL_RENDERER`` and the same Mesa version (off Mesa: the same ``GL_VERSION``, which names the driver)."""
    return bool(a.get("GL_RENDERER")) and a.get("GL_RENDERER") == b.get("GL_RENDERER") and \
        (a.get("mesa") or a.get("GL_VERSION")) == (b.get("mesa") or b.get("GL_VERSION"))


def _shoot(make_demo, render, scene, objects, u, freeze_at):
    """The shaded frame, the unlit (flat) frame, the demo and its frame statistics."""
    demo = make_demo(scene, objects, size=SIZE, overlay=True, seed=1)
    pos, yaw, pitch, frozen = headless_pose(demo.scene, u, freeze_at)
    if frozen:
        demo.set_pose(*headless_pose(demo.scene, freeze_at, None)[:3])
        demo.toggle_freeze()
    demo.set_pose(pos, yaw, pitch)
    stats = demo.update(0.0)
    return render(demo), render(demo, flat=True), demo, stats


def check_what_any_renderer_shows(name, shaded, flat, demo, stats, pixels_of):
    """Not blank, sky and ground on screen, the expected classes shown and only drawn classes."""
    expected = CASES[name][4]
    assert shaded.shape == (SIZE[1], SIZE[0], 3)
    assert shaded.std() > 10.0, f"{name}: the frame is blank"
    assert len(np.unique(shaded.reshape(-1, 3), axis=0)) > 50, f"{name}: the frame has almost no colours"
    sky = pixels_of(flat, demo.scene.sky, tol=1)
    assert 0 < sky < flat.shape[0] * flat.shape[1], f"{name}: sky pixels {sky} (none, or nothing but sky)"
    per_class = {k.name: pixels_of(flat, k.colour, tol=1) for k in demo.scene.kinds}
    shown = {n for n, c in per_class.items() if c >= MIN_CLASS_PIXELS}
    drawn = {k.name for k, n in zip(demo.scene.kinds, stats.kind_counts) if n > 0}
    assert expected <= shown, f"{name}: classes on screen {per_class}, expected at least {sorted(expected)}"
    assert shown <= drawn, f"{name}: classes on screen {sorted(shown)} but drawn only {sorted(drawn)}"


def _write_failure_images(name, actual, expected, diff, tmp_path) -> tuple[Path, Path]:
    actual_path, diff_path = tmp_path / f"{name}-actual.png", tmp_path / f"{name}-diff.png"
    Image.fromarray(actual).save(actual_path)
    vis = (expected // 3).astype(np.uint8)
    vis[diff > CHANNEL_TOLERANCE] = (255, 0, 0)
    Image.fromarray(vis).save(diff_path)
    return actual_path, diff_path


def differing_share(actual: np.ndarray, expected: np.ndarray) -> tuple[float, np.ndarray]:
    """Share of pixels whose largest channel difference exceeds CHANNEL_TOLERANCE, and the per-pixel difference."""
    diff = np.abs(actual.astype(np.int16) - expected.astype(np.int16)).max(axis=-1)
    return float(np.count_nonzero(diff > CHANNEL_TOLERANCE)) / diff.size, diff


@pytest.fixture(scope="module")
def regen(request) -> bool:
    return bool(request.config.getoption("--regen-screenshots"))


@pytest.fixture(scope="module")
def reference_renderer(gl_ctx, regen):
    """The renderer the references were made with; written from this machine's when regenerating."""
    here = renderer_of(gl_ctx)
    if regen:
        REFERENCE_DIR.mkdir(exist_ok=True)
        record = {**here, "size": list(SIZE), "images": sorted(f"{n}.png" for n in CASES)}
        RENDERER_FILE.write_text(json.dumps(record, indent=2) + "\n")
        return record
    if not RENDERER_FILE.exists():
        pytest.fail(f"no {RENDERER_FILE}; run pytest {Path(__file__).name} --regen-screenshots")
    return json.loads(RENDERER_FILE.read_text())


@pytest.mark.parametrize("name", list(CASES))
def test_screenshot(name, make_demo, render, pixels_of, gl_ctx, reference_renderer, regen, tmp_path):
    shaded, flat, demo, stats = _shoot(make_demo, render, *CASES[name][:4])
    check_what_any_renderer_shows(name, shaded, flat, demo, stats, pixels_of)

    ref_path = REFERENCE_DIR / f"{name}.png"
    if regen:
        Image.fromarray(shaded).save(ref_path)
        return
    here = renderer_of(gl_ctx)
    if not same_renderer(here, reference_renderer):
        warnings.warn(ScreenshotComparisonSkipped(
            f"{name}: rendered and checked, pixel comparison skipped: the references were made on "
            f"{reference_renderer.get('GL_RENDERER')} ({reference_renderer.get('GL_VERSION')}), this is "
            f"{here['GL_RENDERER']} ({here['GL_VERSION']})"), stacklevel=1)
        return
    if not ref_path.exists():
        pytest.fail(f"no reference {ref_path}; run with --regen-screenshots to create it")
    expected = np.asarray(Image.open(ref_path).convert("RGB"))
    assert expected.shape == shaded.shape
    share, diff = differing_share(shaded, expected)
    if share > MAX_DIFFERING_SHARE:
        actual_path, diff_path = _write_failure_images(name, shaded, expected, diff, tmp_path)
        pytest.fail(f"{name}: {share:.2%} of pixels differ by more than {CHANNEL_TOLERANCE} "
                    f"(allowed {MAX_DIFFERING_SHARE:.0%}); see {diff_path} and {actual_path}")


def test_renderer_record_matches_the_references():
    """renderer.json names every reference image, at the size the test renders."""
    record = json.loads(RENDERER_FILE.read_text())
    assert record["size"] == list(SIZE)
    assert set(record["images"]) == {f"{n}.png" for n in CASES}
    for image in record["images"]:
        with Image.open(REFERENCE_DIR / image) as ref:
            assert ref.size == SIZE, image
    assert record["GL_RENDERER"] and "GL_VERSION" in record


def test_renderers_compare_by_name_and_mesa_version():
    llvm = {"GL_RENDERER": "llvmpipe (LLVM 15.0.6, 256 bits)", "GL_VERSION": "4.5 (Core Profile) Mesa 22.3.6",
            "mesa": "22.3.6"}
    assert same_renderer(llvm, dict(llvm))
    assert same_renderer(llvm, {**llvm, "GL_VERSION": "4.3 (Compatibility Profile) Mesa 22.3.6"})
    assert not same_renderer(llvm, {**llvm, "mesa": "23.2.1", "GL_VERSION": "4.5 (Core Profile) Mesa 23.2.1"})
    assert not same_renderer(llvm, {**llvm, "GL_RENDERER": "softpipe"})
    nvidia = {"GL_RENDERER": "NVIDIA H100/PCIe/SSE2", "GL_VERSION": "4.6.0 NVIDIA 535.104.05", "mesa": None}
    assert same_renderer(nvidia, dict(nvidia))
    assert not same_renderer(nvidia, {**nvidia, "GL_VERSION": "4.6.0 NVIDIA 550.54.14"})
    assert not same_renderer({}, {})


def test_a_renderer_mismatch_warns_and_still_checks(make_demo, render, pixels_of, gl_ctx, tmp_path, monkeypatch):
    """On another renderer the view is still rendered and checked; the skipped comparison is a warning."""
    other = {"GL_RENDERER": "softpipe", "GL_VERSION": "4.5 (Core Profile) Mesa 99.0", "mesa": "99.0"}
    with pytest.warns(ScreenshotComparisonSkipped, match="softpipe"):
        test_screenshot("swarm", make_demo, render, pixels_of, gl_ctx, other, False, tmp_path)
    monkeypatch.setitem(CASES, "swarm", (*CASES["swarm"][:4], {"rock", "bird", "tower"}))
    with pytest.raises(AssertionError, match="expected at least"):
        test_screenshot("swarm", make_demo, render, pixels_of, gl_ctx, other, False, tmp_path)
