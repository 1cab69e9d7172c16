"""The interactive window path, under a virtual X server (skipped without Xvfb).

Starts ``run_demo.py`` with a window on Xvfb (pyglet's GLX context on Mesa),
lets it run about two seconds, and checks it drew frames: it saves the last
one on exit (the hidden ``--exit-after`` flag exists for this test).
"""

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

ROOT = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.skipif(shutil.which("Xvfb") is None, reason="Xvfb is not installed")


@pytest.fixture
def xvfb():
    display = f":{100 + os.getpid() % 500}"
    proc = subprocess.Popen(["Xvfb", display, "-screen", "0", "800x600x24", "-nolisten", "tcp"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    lock = Path(f"/tmp/.X11-unix/X{display[1:]}")
    for _ in range(100):
        if lock.exists() or proc.poll() is not None:
            break
        time.sleep(0.05)
    if proc.poll() is not None:
        pytest.skip("Xvfb did not start")
    yield display
    proc.terminate()
    proc.wait(timeout=10)


def test_window_opens_and_renders(xvfb, tmp_path):
    env = dict(os.environ, DISPLAY=xvfb)
    proc = subprocess.run([sys.executable, str(ROOT / "run_demo.py"), "--objects", "3000", "--size", "320x180",
                           "--exit-after", "2.5", "--out", str(tmp_path)], env=env, cwd=tmp_path,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    img = np.asarray(Image.open(tmp_path / "window.png").convert("RGB"))
    assert img.shape == (180, 320, 3)
    assert img.std() > 10.0
    # The HUD's white text is in the top-left corner.
    assert np.count_nonzero(img[:40, :200].min(axis=-1) > 230) > 20


KEY_SCRIPT = r'''
import sys
from pathlib import Path

import pyglet
from pyglet.window import key

from demo.demo import DemoSettings
from demo.interactive import FlyThroughApp

SEQUENCE = [key.F, key.O, key.O, key.L, key.BRACKETRIGHT, key.BRACKETRIGHT, key.BRACKETLEFT, key.T,
            key.PLUS, key.EQUAL, key.MINUS, key.C, key.H, key.P, key._3, key._1, key.F, key.TAB, key.TAB]
seen = []


class Scripted(FlyThroughApp):
    def __init__(self, window, ctx, **kwargs):
        super().__init__(window, ctx, **kwargs)
        for i, symbol in enumerate(SEQUENCE):
            pyglet.clock.schedule_once(lambda dt, s=symbol: self.press(s), 0.3 + 0.2 * i)
        pyglet.clock.schedule_once(lambda dt: self.on_mouse_drag(10, 10, 30, -5, 1, 0), 0.2)
        pyglet.clock.schedule_once(lambda dt: self.on_mouse_scroll(10, 10, 0, 2), 0.25)

    def press(self, symbol):
        self.on_key_press(symbol, 0)
        assert self.ctx.error == "GL_NO_ERROR"
        seen.append((self.demo.scene.name, self.demo.frozen is not None, self.demo.only_depth, self.demo.scale))


app = Scripted.run(size=(320, 180), exit_after=len(SEQUENCE) * 0.2 + 1.5, settings=DemoSettings(objects=5000),
                   out=Path(sys.argv[1]), save_on_exit=True)
assert len(seen) == len(SEQUENCE), seen
assert seen[0][1] and not seen[14][1] and seen[16][1]  # F froze; loading a scene thaws; F again
assert seen[5][2] == 1 and seen[6][2] == 0            # ] ] [ walked the single-level view
assert abs(seen[9][3] - 1.25 ** 2) < 1e-9             # + and = both widen the view scale
assert [s[0] for s in seen[14:16]] == ["swarm", "forest"]
print("frames", app.frames)
'''


def test_window_keys_drive_the_demo(xvfb, tmp_path):
    env = dict(os.environ, DISPLAY=xvfb, PYTHONPATH=str(ROOT))
    proc = subprocess.run([sys.executable, "-c", KEY_SCRIPT, str(tmp_path)], env=env, cwd=ROOT,
                          capture_output=True, text=True, timeout=180)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert (tmp_path / "screenshot_000.png").exists()          # the P key
    frames = int(proc.stdout.split()[-1])
    assert frames > 10
