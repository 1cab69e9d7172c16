"""The engine examples run as a user runs them: headless, a few frames, a small forest.

Each program is started with ``--headless --frames 3 --objects 20000``; the test checks its frames
(sky, ground and foliage-coloured pixels, not a blank image) and that every frame drew fewer
objects than the world holds, exactly as many as the tree's exact answer at the camera and as a
NumPy brute force over all objects (the camera path and the world come from the program's own
functions, so nothing here re-implements its maths).  Bad flags: one line on stderr, exit 2.

Without the ``examples`` extra (panda3d, pygfx, rendercanvas) the tests skip, except in CI
(``CI=true``), where that is a failure: ``.ci/run`` installs the extra and Mesa's Vulkan driver.
"""

from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[2]
IN_CI = os.environ.get("CI", "").strip().lower() not in ("", "0", "false", "no")
OBJECTS, FRAMES = 20_000, 3
LINE = re.compile(r"^drawn (\d+) of (\d+) objects, query ([0-9.]+) ms$")
#: What each example needs beyond the test extra.
NEEDS = {"panda3d_forest": ("panda3d",), "pygfx_forest": ("pygfx", "rendercanvas", "PIL")}

pytestmark = pytest.mark.gl   # renders offscreen (EGL; Vulkan for pygfx): never skipped in CI


def _need(name: str) -> None:
    missing = [m for m in NEEDS[name] if importlib.util.find_spec(m) is None]
    if missing:
        message = f"{name} needs {', '.join(missing)}: pip install -e '.[examples]'"
        if IN_CI:
            pytest.fail(message)
        pytest.skip(message)


def _load(name: str):
    spec = importlib.util.spec_from_file_location(f"example_{name}", ROOT / "examples" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _run(name: str, *flags: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in ("DISPLAY", "WAYLAND_DISPLAY")}
    return subprocess.run([sys.executable, str(ROOT / "examples" / f"{name}.py"), *flags], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=240)


@pytest.fixture(scope="module", params=sorted(NEEDS))
def headless_run(request, tmp_path_factory):
    """(name, frame lines as (drawn, total) pairs, out folder) of one headless run."""
    name = request.param
    _need(name)
    out = tmp_path_factory.mktemp(name)
    proc = _run(name, "--headless", "--frames", str(FRAMES), "--objects", str(OBJECTS), "--out", str(out))
    assert proc.returncode == 0, proc.stderr[-3000:]
    frames = [LINE.match(line) for line in proc.stdout.splitlines()]
    return name, [(int(m[1]), int(m[2])) for m in frames if m], out


def test_every_frame_reports_drawn_of_total(headless_run):
    name, lines, _ = headless_run
    assert len(lines) == FRAMES, f"{name}: expected {FRAMES} 'drawn D of N objects, query X ms' lines, got {lines}"
    assert all(total == OBJECTS for _, total in lines)


def test_drawn_is_the_exact_answer_at_the_camera_and_fewer_than_all(headless_run):
    name, lines, _ = headless_run
    module = _load(name)
    scene, *world, tree, _ = module.build_world(OBJECTS)
    centres = world[0] if world else scene.centres   # Panda3D's example keeps its centres in its own frame
    for frame, (drawn, total) in enumerate(lines):
        eye = module.camera_at(scene, frame / module.FPS)[0]
        brute = int(np.count_nonzero(np.linalg.norm(centres - eye, axis=1) <= scene.view_distance))
        assert 0 < drawn < total, f"{name} frame {frame}: drew {drawn} of {total}"
        assert drawn == brute == tree.query(eye, exact=True).size, f"{name} frame {frame}"


def test_frames_show_sky_ground_and_trees(headless_run):
    from PIL import Image

    name, _, out = headless_run
    files = sorted(out.glob("frame_*.png"))
    assert [f.name for f in files] == [f"frame_{i:04d}.png" for i in range(FRAMES)]
    for path in files:
        rgb = np.asarray(Image.open(path).convert("RGB")).astype(np.int32)
        r, g, b = rgb[..., 0], rgb[..., 1], rgb[..., 2]
        assert rgb.shape == (360, 640, 3) and rgb.std() > 20, f"{path.name} is blank"
        sky = np.count_nonzero((b > g) & (g > r))
        foliage = np.count_nonzero((g > 2.2 * r) & (g > 1.5 * b) & (g > 30))   # trees and bushes, not the ground
        assert sky > 0.1 * r.size, f"{name} {path.name}: {sky} sky pixels"
        assert foliage > 300, f"{name} {path.name}: {foliage} tree-coloured pixels"


@pytest.mark.parametrize("name", sorted(NEEDS))
def test_a_bad_flag_is_one_line_on_stderr_and_exit_2(name):
    _need(name)
    proc = _run(name, "--bogus")
    assert proc.returncode == 2
    assert proc.stdout == "" and proc.stderr == f"{name}.py: error: unrecognized arguments: --bogus\n"


@pytest.mark.parametrize("name", sorted(NEEDS))
@pytest.mark.parametrize("flags", [("--frames", "x"), ("--frames", "0"), ("--objects", "-5"), ("--out",)])
def test_bad_values_are_refused_by_the_parser(name, flags, capsys):
    _need(name)
    with pytest.raises(SystemExit) as stop:
        _load(name).parse_args(list(flags))
    assert stop.value.code == 2
    err = capsys.readouterr().err
    assert len(err.splitlines()) == 1 and err.startswith(f"{name}.py: error: "), err
