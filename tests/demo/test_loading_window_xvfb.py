"""A first run's loading screen is on screen: under a virtual X server the window shows, under its
loading caption, the message and the progress bar while the kernels compile (a stand-in warm-up
that sleeps), and takes the demo's title once the scene is loaded."""

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from PIL import Image
from test_lod_window_xvfb import _xdo, xvfb  # noqa: F401, F811 - the fixture

from demo.loading import FILLED, LOADING_CAPTION

ROOT = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.window

#: run_demo.py with a warm-up that takes 6 s (30 steps of 0.2 s) and reports each step, as a first run's.
_FIRST_RUN = """
import runpy, sys, time
import culling

def slow(progress=None):
    for i in range(1, 31):
        time.sleep(0.2)
        if progress is not None:
            progress(i, 30, f"step {i}")
    return 6.0

culling.kernels_cached = lambda: False
culling.warm_up = slow
sys.argv = ["run_demo.py", *sys.argv[1:]]
runpy.run_path(sys.argv[0], run_name="__main__")
"""


@pytest.mark.skipif(shutil.which("import") is None, reason="needs ImageMagick's import for the screenshot")
def test_the_loading_screen_shows_in_the_window_before_the_scene(xvfb, tmp_path):  # noqa: F811
    env = dict(os.environ, DISPLAY=xvfb, PYTHONPATH=str(ROOT))
    proc = subprocess.Popen([sys.executable, "-c", _FIRST_RUN, "--objects", "2000", "--size", "320x180",
                             "--exit-after", "1", "--out", str(tmp_path)],
                            env=env, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        loading = ""
        for _ in range(300):
            loading = _xdo(env, "search", "--onlyvisible", "--name", LOADING_CAPTION).stdout.strip()
            if loading or proc.poll() is not None:
                break
            time.sleep(0.05)
        assert loading, "no visible loading window"
        time.sleep(1.0)  # a few frames of the screen
        shot = tmp_path / "loading.png"
        subprocess.run(["import", "-window", "root", str(shot)], env=env, check=True, timeout=30)
        pixels = np.asarray(Image.open(shot).convert("RGB")).reshape(-1, 3).astype(int)
        bar = np.round(np.array(FILLED) * 255).astype(int)
        assert (np.abs(pixels - bar).max(axis=1) <= 3).sum() > 100, "the progress bar is not on screen"
        out, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0, err[-2000:]
    assert "compiling kernels (first run only)" in err
