"""The window's new keys under a virtual X server, with real X input (xdotool):
M shows the map inset, Z held zooms (the query's scale grows, so more candidates),
so does the right mouse button held (without capturing the mouse), and G
switches levels of detail off (more triangles for the same objects)."""

import csv
import io
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from PIL import Image
from xvfb_server import start_xvfb

ROOT = Path(__file__).resolve().parents[2]

MISSING = [tool for tool in ("Xvfb", "xdotool") if shutil.which(tool) is None]
IN_CI = os.environ.get("CI", "").lower() in ("1", "true", "yes")

pytestmark = pytest.mark.window


@pytest.fixture
def xvfb():
    if MISSING:            # as tests/demo/test_window_xvfb.py: a skip here, a failure in CI
        message = f"window tests need {', '.join(MISSING)} (apt-get install xvfb xdotool)"
        if IN_CI:
            pytest.fail(message)
        pytest.skip(message)
    proc, display = start_xvfb("800x600x24")
    yield display
    proc.terminate()
    proc.wait(timeout=10)


def _xdo(env, *args):
    return subprocess.run(["xdotool", *args], env=env, capture_output=True, text=True, timeout=30)


def _drawn(stats):
    return max(len(stats.read_text().splitlines()) - 1, 0) if stats.exists() else 0


def _run_with_keys(env, tmp_path, actions, exit_after):
    """Start the demo, send each action ``delay`` seconds after the last one and once the demo
    has drawn two frames since it (a loaded machine must not merge two key presses into one
    frame), and return the ``--stats`` rows."""
    stats = tmp_path / "stats.csv"
    proc = subprocess.Popen([sys.executable, str(ROOT / "run_demo.py"), "--objects", "20000", "--size", "320x180",
                             "--stats", str(stats), "--exit-after", str(exit_after), "--out", str(tmp_path),
                             "--no-overlay"],
                            env=env, cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    found = None
    for _ in range(300):
        found = _xdo(env, "search", "--onlyvisible", "--name", "view-distance culling demo")
        if found.stdout.strip() or proc.poll() is not None:
            break
        time.sleep(0.1)
    window = found.stdout.split()[0] if found and found.stdout.strip() else None
    if window is not None:
        _xdo(env, "windowfocus", "--sync", window)
        _xdo(env, "mousemove", "--window", window, "160", "90")
        for delay, args in actions:
            time.sleep(delay)
            seen = _drawn(stats)
            deadline = time.monotonic() + 20.0
            while _drawn(stats) < seen + 2 and time.monotonic() < deadline and proc.poll() is None:
                time.sleep(0.05)
            _xdo(env, *args)
    _, err = proc.communicate(timeout=180)
    assert window is not None, err
    assert proc.returncode == 0, err[-2000:]
    return list(csv.DictReader(io.StringIO(stats.read_text()))), tmp_path / "window.png"


def test_m_z_and_g_keys(xvfb, tmp_path):
    env = dict(os.environ, DISPLAY=xvfb)
    # Fly still: a screenshot (P), M, another screenshot, then hold Z (zoom), let Z go, press G
    # (no LOD), hold the right mouse button instead, and exit holding it.  The first frame at full
    # detail can take a second on llvmpipe, so nothing else is sent while G takes effect.
    actions = [(2.0, ("key", "p")), (0.6, ("key", "m")), (0.8, ("key", "p")), (0.6, ("keydown", "z")),
               (1.5, ("keyup", "z")), (1.2, ("key", "g")), (1.8, ("mousedown", "3"))]
    rows, _ = _run_with_keys(env, tmp_path, actions, exit_after=16.0)
    assert len(rows) > 10
    zoom = np.array([float(r["zoom"]) for r in rows])
    assert zoom[0] == 1.0 and zoom.max() > 4.0 and zoom[-1] > 4.0       # Z, then the right button
    assert zoom[int(np.argmax(zoom > 4.0)):].min() < 1.2                # eased back between the two
    assert rows[-1]["captured"] == "0" and rows[-1]["map"] == "1" and rows[-1]["lod"] == "0"
    cand = np.array([int(r["candidates"]) for r in rows])
    per_object = np.array([int(r["triangles"]) / max(int(r["drawn"]), 1) for r in rows])
    # Zoom: the view distances grow, so the query returns more candidates at the end than at the start.
    assert cand[-1] > 1.3 * cand[0], (cand[0], cand[-1])
    # G: everything at full detail, so more triangles per drawn object at the end.
    assert per_object[-1] > 1.5 * per_object[0], (per_object[0], per_object[-1])
    # M: the map inset appears in the bottom-right corner, and only there (below the HUD).
    before, after = (np.asarray(Image.open(tmp_path / f"screenshot_00{i}.png").convert("RGB")).astype(int)
                     for i in (0, 1))
    side = int(180 * 0.38)
    changed = np.abs(after - before).max(axis=-1)
    assert changed[180 - 10 - side:170, 320 - 10 - side:310].mean() > 20
    assert changed[140:176, :200].max() == 0
