"""A first run's loading screen is on screen: under a virtual X server the window shows, under its
loading caption, the message, the time so far and the progress bar while the kernels compile (stand-in
compile workers that report a step per poll and finish only when the test lets them: nothing depends on
how fast the machine is), takes the demo's title once the scene is loaded, and
answers Esc, Q and the window's close button (a WM_DELETE_WINDOW message, as a window manager sends
it) at once: the workers stop and the demo exits 0."""

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from demo_window import xdotool
from PIL import Image

from demo.interactive import FlyThroughApp
from demo.loading import FILLED, LOADING_CAPTION

ROOT = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.window

#: run_demo.py whose kernel compile takes STEPS steps, one per poll of the loading screen, reported step
#: by step as the compile workers do (``demo.loading.CompileWorkers`` replaced; ``cancel`` says so on
#: stderr), as a first run's.  The last step waits until the file named by ``$LOADING_RELEASE`` exists
#: (when that is set), so the screen stays up until the test has seen it, however slow the machine.
_FIRST_RUN = """
import os, runpy, sys, time
import culling
import demo.loading

STEPS = int(sys.argv.pop(1))
RELEASE = os.environ.get("LOADING_RELEASE")

class SlowWorkers:
    def __init__(self, groups, workers=None):
        self.total, self.finished, self.polls, self.stopped = STEPS, [], 0, False

    @property
    def running(self):
        return not self.stopped and len(self.finished) < self.total

    def poll(self, timeout=0.0):
        time.sleep(timeout or 0.0)
        self.polls += 1
        released = RELEASE is None or os.path.exists(RELEASE)
        due = min(self.total if released else self.total - 1, self.polls)
        new = [f"step {i}" for i in range(len(self.finished) + 1, due + 1)]
        self.finished.extend(new)
        return new

    def cancel(self):
        if self.running:
            print("compile workers stopped", file=sys.stderr, flush=True)
        self.stopped = True

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.cancel()

culling.kernels_cached = lambda groups=None: False
demo.loading.CompileWorkers = SlowWorkers
demo.loading.compile_the_rest_later = lambda groups: None
sys.argv = ["run_demo.py", *sys.argv[1:]]
runpy.run_path(sys.argv[0], run_name="__main__")
"""


def _start(env, tmp_path, steps, *flags):
    return subprocess.Popen([sys.executable, "-c", _FIRST_RUN, str(steps), "--objects", "2000", "--size", "320x180",
                             "--out", str(tmp_path), *flags],
                            env=env, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _loading_window(env, proc, caption=LOADING_CAPTION):
    """The window's id once it is visible under ``caption`` (None if the demo ended first, or did not show
    it in a few minutes: a busy machine takes its time to start Python, numba and a GL context)."""
    for _ in range(3000):
        found = xdotool(env, "search", "--onlyvisible", "--name", caption).stdout.split()
        if found or proc.poll() is not None:
            return found[0] if found else None
        time.sleep(0.05)
    return None


def _send_wm_delete(display: str, window: int) -> None:
    """Ask ``window`` to close as a window manager's close button does: a ``WM_PROTOCOLS`` client message
    holding ``WM_DELETE_WINDOW`` (Xlib through ctypes; xdotool has no such command)."""
    import ctypes
    import ctypes.util

    x11 = ctypes.CDLL(ctypes.util.find_library("X11") or "libX11.so.6")
    x11.XOpenDisplay.restype = ctypes.c_void_p
    x11.XOpenDisplay.argtypes = [ctypes.c_char_p]
    x11.XInternAtom.restype = ctypes.c_ulong
    x11.XInternAtom.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_int]

    class ClientMessage(ctypes.Structure):
        _fields_ = [("type", ctypes.c_int), ("serial", ctypes.c_ulong), ("send_event", ctypes.c_int),
                    ("display", ctypes.c_void_p), ("window", ctypes.c_ulong), ("message_type", ctypes.c_ulong),
                    ("format", ctypes.c_int), ("l", ctypes.c_long * 5)]

    class Event(ctypes.Union):
        _fields_ = [("xclient", ClientMessage), ("pad", ctypes.c_long * 24)]

    x11.XSendEvent.argtypes = [ctypes.c_void_p, ctypes.c_ulong, ctypes.c_int, ctypes.c_long, ctypes.POINTER(Event)]
    x11.XFlush.argtypes = x11.XCloseDisplay.argtypes = [ctypes.c_void_p]
    dpy = x11.XOpenDisplay(display.encode())
    assert dpy, f"cannot open {display}"
    event = Event()
    event.xclient.type = 33  # ClientMessage
    event.xclient.window = window
    event.xclient.message_type = x11.XInternAtom(dpy, b"WM_PROTOCOLS", False)
    event.xclient.format = 32
    event.xclient.l[0] = x11.XInternAtom(dpy, b"WM_DELETE_WINDOW", False)
    x11.XSendEvent(dpy, window, False, 0, ctypes.byref(event))
    x11.XFlush(dpy)
    x11.XCloseDisplay(dpy)


@pytest.mark.parametrize("how", ["Escape", "q", "close button"])
def test_the_loading_screen_quits_at_once_on_esc_q_and_its_close_button(xvfb, tmp_path, how):
    env = dict(os.environ, DISPLAY=xvfb, PYTHONPATH=str(ROOT), LOADING_RELEASE=str(tmp_path / "never"))
    proc = _start(env, tmp_path, 30)  # never released: only a cancel ends the compile
    try:
        window = _loading_window(env, proc)
        if window is None:
            proc.kill()
            pytest.fail(f"no visible loading window; the demo said: {proc.communicate()[1][-2000:]}")
        if how == "close button":
            _send_wm_delete(xvfb, int(window))
        else:
            xdotool(env, "windowfocus", "--sync", window)
            xdotool(env, "key", "--window", window, how)
        out, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0, err[-2000:]
    assert "compile workers stopped" in err and "closed while loading" in err, err[-2000:]
    assert "Traceback" not in err


@pytest.mark.skipif(shutil.which("import") is None, reason="needs ImageMagick's import for the screenshot")
def test_the_loading_screen_shows_in_the_window_before_the_scene(xvfb, tmp_path):
    release = tmp_path / "release"
    env = dict(os.environ, DISPLAY=xvfb, PYTHONPATH=str(ROOT), LOADING_RELEASE=str(release))
    proc = _start(env, tmp_path, 30, "--exit-after", "1")  # 30 steps; the last waits for ``release``
    try:
        window = _loading_window(env, proc)
        if window is None:
            proc.kill()
            pytest.fail(f"no visible loading window; the demo said: {proc.communicate()[1][-2000:]}")
        bar = np.round(np.array(FILLED) * 255).astype(int)
        shot = tmp_path / "loading.png"
        filled = 0
        for _ in range(600):  # screenshots until the bar has grown: attempts, not a time (a few per second)
            subprocess.run(["import", "-window", "root", str(shot)], env=env, check=True, timeout=60)
            pixels = np.asarray(Image.open(shot).convert("RGB")).reshape(-1, 3).astype(int)
            filled = int((np.abs(pixels - bar).max(axis=1) <= 3).sum())
            if filled > 100 or proc.poll() is not None:
                break
        assert filled > 100, "the progress bar is not on screen"
        # The message ("compiling kernels (first run only): 3/30, 1 s, step 3") is wider than the 320-pixel
        # window at its font: wrapped within it, not cut at both edges (a smaller font shrinks in whole
        # pixels a glyph, and the line shrunk in proportion still overflowed)
        subprocess.run(["import", "-window", window, str(shot)], env=env, check=True, timeout=60)
        pixels = np.asarray(Image.open(shot).convert("RGB")).astype(int)
        text = (pixels.min(axis=2) >= 180) & (np.abs(pixels - bar).max(axis=2) > 3)   # light grey, not the bar
        columns, rows = np.flatnonzero(text.any(axis=0)), np.flatnonzero(text.any(axis=1))
        assert columns.size, "no message on the loading screen"
        assert columns[0] > 1 and columns[-1] < text.shape[1] - 2, "the message is cut at the window's edges"
        assert rows[-1] - rows[0] > 20, "a message wider than the window is on one line"
        release.touch()  # the compile may finish now
        out, err = proc.communicate(timeout=600)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0, err[-2000:]
    assert "compiling kernels (first run only)" in err


#: run_demo.py whose scene switch (a number key's load, not the first) holds its loading screen up, a frame
#: of it per poll, until the file named by ``$LOADING_RELEASE`` exists; it touches ``$LOADING_HELD`` then.
_SWITCH = """
import os, runpy, sys, time
import demo.demo

RELEASE, HELD = os.environ["LOADING_RELEASE"], os.environ["LOADING_HELD"]
load_scene, loads = demo.demo.Demo.load_scene, []

def held_load(self, name, objects=None, progress=None):
    loads.append(name)
    if len(loads) > 1:
        open(HELD, "w").close()
        while not os.path.exists(RELEASE):
            progress(0, 10, "held by the test")
            time.sleep(0.1)
    return load_scene(self, name, objects, progress)

demo.demo.Demo.load_scene = held_load
sys.argv = ["run_demo.py", *sys.argv[1:]]
runpy.run_path(sys.argv[0], run_name="__main__")
"""


@pytest.mark.parametrize("how", ["windowclose", "Escape"])
def test_a_number_keys_loading_screen_answers_the_window_too(xvfb, tmp_path, how):
    """The number keys' load ran inside the key's event handler, drawing its loading screen without
    answering the window's events: a window destroyed meanwhile (``xdotool windowclose``) crashed the demo
    in the GL driver (heap corruption, a segfault) or hung it in a buffer swap, and Esc went unseen.  Now
    it runs from the next update, and the screen quits as at start-up."""
    held = tmp_path / "held"
    env = dict(os.environ, DISPLAY=xvfb, PYTHONPATH=str(ROOT), LOADING_RELEASE=str(tmp_path / "never"),
               LOADING_HELD=str(held))
    proc = subprocess.Popen([sys.executable, "-c", _SWITCH, "--objects", "2000", "--size", "320x180",
                             "--out", str(tmp_path)], env=env, cwd=ROOT, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    try:
        window = _loading_window(env, proc, FlyThroughApp.title)  # once its first scene is loaded
        assert window is not None, f"no demo window; the demo said: {proc.communicate(timeout=60)[1][-2000:]}"
        xdotool(env, "windowfocus", "--sync", window)
        for _ in range(600):  # "2": the clusters, 400,000 objects, a load with the screen (held before it builds)
            xdotool(env, "key", "--window", window, "2")
            if held.exists() or proc.poll() is not None:
                break
            time.sleep(0.1)
        assert held.exists(), "the number key's load did not start"
        if how == "windowclose":
            xdotool(env, "windowclose", window)
        else:
            xdotool(env, "key", "--window", window, how)
        out, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0, err[-2000:]
    assert "closed while loading" in err and "Traceback" not in err, err[-2000:]


#: The interest kernels compiling in the background, done after three polls of the loading screen (each
#: poll touches ``$LOADING_SHOWN``): the I key's wait for them shows the screen.
_INTEREST_COMPILING = """
import os, time
import culling, demo.loading

class Compiling:
    total, finished = 3, []

    @property
    def running(self):
        return len(self.finished) < self.total

    def poll(self, timeout=0.0):
        time.sleep(timeout or 0.0)
        self.finished.append(f"step {len(self.finished) + 1}")
        open(os.environ["LOADING_SHOWN"], "w").close()
        return self.finished[-1:]

    def cancel(self):
        self.finished = ["cancelled"] * self.total

cached = culling.kernels_cached
culling.kernels_cached = lambda groups=None: cached(groups) and not (
    groups is not None and "interest" in groups and demo.loading._LATER[0].running)
demo.loading._LATER.append(Compiling())
demo.loading.compile_the_rest_later = lambda groups: None
"""


def test_keys_reach_the_demo_after_the_i_keys_wait_for_its_kernels(tmp_path, monkeypatch):
    """I's first press waits for the interest kernels behind the loading screen; the screen's handlers
    stayed on the window after it (nothing took them off), and every key went to the screen from then on."""
    from demo_window import DemoWindow

    shown = tmp_path / "shown"
    monkeypatch.setenv("LOADING_SHOWN", str(shown))
    with DemoWindow.started(tmp_path, ["--scene", "swarm", "--objects", "2000", "--size", "320x180"],
                            screen="800x600x24", prelude=_INTEREST_COMPILING) as demo:
        demo.press_until("i", lambda r: r["interest"] == "1", "I: the interest view on")
        assert shown.exists(), "the loading screen was not shown for the kernels"
        demo.press_until("m", lambda r: r["map"] == "1", "M after the loading screen")
        demo.quit()
