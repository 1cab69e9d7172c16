"""The engine examples in a real window under Xvfb, flown with real X key events (xdotool).

Each program starts with a display, flies its scripted path, and a tap of a key takes the camera
off the path: two screen grabs (ImageMagick's ``import``) a few frames apart are then the same
picture; holding W flies the camera forward, and the next grab differs.  Without Xvfb, xdotool or
ImageMagick, or without the ``examples`` extra, the tests skip, except in CI, where that fails.
"""

from __future__ import annotations

import io
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from tests.examples.test_engine_examples import IN_CI, NEEDS, ROOT, _need

TITLES = {"panda3d_forest": "Panda3D forest", "pygfx_forest": "pygfx forest"}
pytestmark = pytest.mark.window


@pytest.fixture(scope="module")
def display():
    missing = [tool for tool in ("Xvfb", "xdotool", "import") if shutil.which(tool) is None]
    if missing:
        message = f"window tests need {', '.join(missing)} (apt-get install xvfb xdotool imagemagick)"
        pytest.fail(message) if IN_CI else pytest.skip(message)
    read, write = os.pipe()
    xvfb = subprocess.Popen(["Xvfb", "-displayfd", str(write), "-screen", "0", "800x600x24", "-nolisten", "tcp"],
                            pass_fds=(write,), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    os.close(write)
    number = os.read(read, 16).decode().strip()     # keep the pipe open: Xvfb may write to it again on a reset
    yield f":{number}"
    xvfb.terminate()
    xvfb.wait(10)
    os.close(read)


class Running:
    """One example in a window: its output so far, X input, screen grabs."""

    def __init__(self, name: str, display: str, log: Path) -> None:
        self.env, self.log = dict(os.environ, DISPLAY=display), log
        self.proc = subprocess.Popen([sys.executable, str(ROOT / "examples" / f"{name}.py"), "--objects", "5000"],
                                     cwd=ROOT, env=self.env, stdout=log.open("w"), stderr=subprocess.STDOUT)

    def frames(self) -> int:
        return sum(line.startswith("drawn ") for line in self.log.read_text().splitlines())

    def wait_frames(self, count: int, timeout: float = 120.0) -> None:
        goal, end = self.frames() + count, time.monotonic() + timeout
        while self.frames() < goal:
            assert self.proc.poll() is None, f"the example exited: {self.log.read_text()[-2000:]}"
            assert time.monotonic() < end, f"no {count} new frames in {timeout} s"
            time.sleep(0.05)

    def xdotool(self, *args: str) -> str:
        return subprocess.run(["xdotool", *args], env=self.env, check=True, capture_output=True, text=True).stdout

    def settled(self, tries: int = 20) -> np.ndarray | None:
        """The screen once two grabs three frames apart agree (the camera at rest), None if it never is.

        On a loaded machine the key's release and the last fades may land a few frames late, so
        rest is waited for, not assumed after a fixed count; a camera still on its path never rests.
        """
        self.wait_frames(3)
        before = self.grab()
        for _ in range(tries):
            self.wait_frames(3)
            after = self.grab()
            if np.array_equal(before, after):
                return after
            before = after
        return None

    def grab(self) -> np.ndarray:
        from PIL import Image

        png = subprocess.run(["import", "-window", "root", "png:-"], env=self.env, check=True, capture_output=True)
        return np.asarray(Image.open(io.BytesIO(png.stdout)).convert("RGB")).astype(np.int16)


@pytest.mark.parametrize("name", sorted(NEEDS))
def test_a_key_takes_the_camera_off_its_path_and_w_flies_it(name, display, tmp_path):
    _need(name)
    app = Running(name, display, tmp_path / "out.txt")
    try:
        app.wait_frames(3)
        window = app.xdotool("search", "--sync", "--name", TITLES[name]).split()[0]
        still = None
        for _ in range(3):  # a tap sent while the engine still starts up may be lost: tap again
            app.xdotool("windowfocus", window)
            app.xdotool("key", "d")                  # a tap: off the path, the camera stays put
            still = app.settled(tries=10)
            if still is not None:
                break
        assert still is not None, "the camera kept moving after a key took it off its path"
        app.xdotool("keydown", "w")                 # 40 m/s: a second is well past the nearest trees
        time.sleep(1.0)
        app.wait_frames(2)
        app.xdotool("keyup", "w")
        app.wait_frames(3)
        flown = app.grab()
        changed = np.count_nonzero(np.abs(flown - still).max(axis=-1) > 24)
        assert changed > 1000, f"holding W changed only {changed} pixels"
        foliage = (still[..., 1] > 2.2 * still[..., 0]) & (still[..., 1] > 1.5 * still[..., 2]) & (still[..., 1] > 30)
        assert np.count_nonzero(foliage) > 100, "no trees in the window"   # (after W it may look into a hill)
    finally:
        app.proc.terminate()
        app.proc.wait(20)
