"""run_demo.py --no-lod / --map / --stats triangles, as a user runs them."""

import csv
import io
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
from PIL import Image

RUN_DEMO = Path(__file__).resolve().parents[2] / "run_demo.py"


def run_demo(args, tmp_path, timeout=180):
    env = {k: v for k, v in os.environ.items() if k not in ("DISPLAY", "WAYLAND_DISPLAY")}
    return subprocess.run([sys.executable, str(RUN_DEMO), *args], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=timeout)


def _stats(proc):
    rows = list(csv.DictReader(io.StringIO(proc.stdout)))
    assert rows and "triangles" in rows[0]
    return rows


def test_stats_have_triangles_and_no_lod_draws_more(tmp_path, gl_ctx):
    common = ["--headless", "--frames", "3", "--size", "160x90", "--objects", "20000", "--stats", "--no-images"]
    lod = run_demo(common, tmp_path)
    full = run_demo(common + ["--no-lod"], tmp_path)
    assert lod.returncode == 0 and full.returncode == 0, lod.stderr + full.stderr
    a, b = _stats(lod), _stats(full)
    assert [r["drawn"] for r in a] == [r["drawn"] for r in b]
    for ra, rb in zip(a, b):
        assert 0 < int(ra["triangles"]) < int(rb["triangles"])
    assert "triangles" in lod.stderr


def test_map_flag_puts_the_inset_into_headless_frames(tmp_path, gl_ctx):
    shots = {}
    for name, extra in (("plain", []), ("map", ["--map"])):
        out = tmp_path / name
        proc = run_demo(["--headless", "--frames", "1", "--size", "320x180", "--objects", "5000", "--out", str(out),
                         "--no-hud", "--no-overlay", *extra], tmp_path)
        assert proc.returncode == 0, proc.stderr
        shots[name] = np.asarray(Image.open(out / "frame_0000.png").convert("RGB")).astype(int)
    side = int(180 * 0.38)
    corner = np.s_[180 - 10 - side:180 - 10, 320 - 10 - side:320 - 10]
    changed = np.abs(shots["map"] - shots["plain"]).max(axis=-1)
    assert changed[corner].mean() > 20                     # the inset is there
    outside = changed.copy()
    outside[corner] = 0
    assert outside.max() == 0                              # and nothing else changed
