"""The interest view's keys in the real window under Xvfb, pressed with xdotool (real X key events):
I turns the view on in the swarm (the HUD's status says whom it follows, the frame gains the
tint and the marks), N follows the next player and moves the camera to look at it, Shift+N the
previous one, I again turns it off.  The demo reports its state per drawn frame in ``--stats``;
each step waits for a fresh row, never for a time."""

from __future__ import annotations

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
MISSING = [tool for tool in ("Xvfb", "xdotool", "import") if shutil.which(tool) is None]
IN_CI = os.environ.get("CI", "").lower() in ("1", "true", "yes")
SIZE = (480, 270)
#: How long to wait for the demo's next rows (a generous bound for a loaded machine, not a measured time).
PATIENCE = 60.0

pytestmark = pytest.mark.window


@pytest.fixture
def window(tmp_path):
    """Xvfb (it picks its own display) and ``run_demo.py --scene swarm`` on it; yields (env, stats, proc, id)."""
    if MISSING:               # as tests/demo/test_window_xvfb.py: a skip here, a failure in CI
        message = f"window tests need {', '.join(MISSING)} (apt-get install xvfb xdotool imagemagick)"
        if IN_CI:
            pytest.fail(message)
        pytest.skip(message)
    xvfb, display = start_xvfb("800x600x24")
    env = dict(os.environ, DISPLAY=display)
    stats = tmp_path / "stats.csv"
    proc = subprocess.Popen([sys.executable, str(ROOT / "run_demo.py"), "--scene", "swarm", "--objects", "3000",
                             "--size", f"{SIZE[0]}x{SIZE[1]}", "--stats", str(stats), "--out", str(tmp_path),
                             "--no-overlay", "--no-hud"],
                            env=env, cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        found = subprocess.run(["xdotool", "search", "--sync", "--onlyvisible", "--name", "culling demo"], env=env,
                               capture_output=True, text=True, timeout=PATIENCE * 3)
        wid = found.stdout.split()[0]
        subprocess.run(["xdotool", "windowfocus", "--sync", wid], env=env, check=True, timeout=PATIENCE)
        yield env, stats, proc, wid
    finally:
        if proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(timeout=PATIENCE)
            except subprocess.TimeoutExpired:
                proc.kill()
        xvfb.terminate()
        xvfb.wait(timeout=PATIENCE)


def _rows(stats: Path) -> list[dict]:
    text = stats.read_text() if stats.exists() else ""
    lines = text.splitlines()
    if lines and not text.endswith("\n"):
        lines = lines[:-1]                                  # a row being written
    return list(csv.DictReader(io.StringIO("\n".join(lines))))


def _press(env, stats: Path, proc, key: str, predicate, what: str) -> dict:
    """Press ``key``, then the first fresh row for which ``predicate`` holds."""
    start = len(_rows(stats))
    subprocess.run(["xdotool", "key", key], env=env, check=True, timeout=PATIENCE)
    deadline = time.monotonic() + PATIENCE
    while time.monotonic() < deadline:
        assert proc.poll() is None, f"the demo exited ({proc.returncode}) waiting for {what}"
        for row in _rows(stats)[start:]:
            if predicate(row):
                return row
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}; last row {_rows(stats)[-1:]}")


def _grab(env, wid: str) -> np.ndarray:
    png = subprocess.run(["import", "-window", wid, "png:-"], env=env, capture_output=True, check=True,
                         timeout=PATIENCE).stdout
    return np.asarray(Image.open(io.BytesIO(png)).convert("RGB")).astype(np.int16)


def _cyan(image: np.ndarray) -> int:
    """Pixels of birds tinted towards the interest colour (see tests/demo/test_interest_frames.py), below
    the top eighth (where the status line's cyan text is)."""
    below = image[image.shape[0] // 8:]
    r, g, b = below[..., 0], below[..., 1], below[..., 2]
    return int(np.count_nonzero((g - r > 70) & (b - r > 70) & (np.abs(g - b) < 50)))


def test_i_shows_the_interest_view_and_n_follows_the_players(window):
    env, stats, proc, wid = window
    deadline = time.monotonic() + PATIENCE
    while not _rows(stats) and time.monotonic() < deadline and proc.poll() is None:
        time.sleep(0.05)
    assert _rows(stats)[-1]["interest"] == "0"
    plain = _grab(env, wid)

    on = _press(env, stats, proc, "i", lambda r: r["interest"] == "1", "I: interest view on")
    assert on["status"] == f"I: interest view on, following {on['followed']} (N: next player)"
    assert on["followed"].startswith("hunter ")

    nxt = _press(env, stats, proc, "n", lambda r: r["followed"] != on["followed"], "N: next player")
    assert nxt["status"] == f"N: following {nxt['followed']}" and int(nxt["followed"].split()[1]) == \
        int(on["followed"].split()[1]) + 1
    moved = np.hypot(float(nxt["x"]) - float(on["x"]), float(nxt["z"]) - float(on["z"]))
    assert moved > 1.0, "N did not move the camera to the followed player"
    watching = _grab(env, wid)                                          # rows are written once drawn
    assert np.abs(watching - plain).max(axis=-1).astype(bool).mean() > 0.05       # a new view
    assert np.count_nonzero(np.all(watching >= 235, axis=-1)) >= 8              # the white box and reach sphere
    assert _cyan(watching) > 0 and _cyan(plain) == 0                            # its set tinted

    back = _press(env, stats, proc, "shift+n", lambda r: r["status"].startswith("N: following")
                  and r["followed"] == nxt["followed"], "Shift+N: the previous player")
    assert back["interest"] == "1"

    off = _press(env, stats, proc, "i", lambda r: r["interest"] == "0", "I: interest view off")
    assert off["status"] == "I: interest view off"
    image = _grab(env, wid)
    assert np.count_nonzero(np.all(image >= 235, axis=-1)) == 0 and _cyan(image) == 0    # no marks, no tint
