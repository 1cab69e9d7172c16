"""The demo in a real window, driven the way a person drives it (imported by the window tests of tests/demo).

:meth:`DemoWindow.started` starts an Xvfb server (``tests/xvfb_server.py``) and ``run_demo.py`` on it
as a user would, with ``--stats FILE``, so that the demo reports one row per drawn frame: its camera,
mouse capture, toggles and status line.  The tests send real X input with ``xdotool`` (XTEST key and
button events, pointer motion), grab the screen with ImageMagick's ``import``, and wait for the row
that shows an effect, never for a time: :data:`PATIENCE` only bounds a wait, generously for a loaded
machine.  Without Xvfb, xdotool or ImageMagick the tests are skipped, except under CI (``CI=true``),
where that is a failure: ``.ci/run`` installs them.
"""

from __future__ import annotations

import csv
import io
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

import numpy as np
import pytest
from PIL import Image
from xvfb_server import start_xvfb

ROOT = Path(__file__).resolve().parents[1]
TOOLS = ("Xvfb", "xdotool", "import")
MISSING = [tool for tool in TOOLS if shutil.which(tool) is None]
IN_CI = os.environ.get("CI", "").lower() in ("1", "true", "yes")
#: The longest wait for the demo's next rows or its exit: a bound for a loaded machine, not a measured time.
PATIENCE = 60.0
#: :meth:`DemoWindow.exit_status` looks this many times, :data:`POLL_SECONDS` apart (PATIENCE in all).
POLL_SECONDS = 0.05
EXIT_POLLS = int(PATIENCE / POLL_SECONDS)

Row = dict[str, str]


def need_tools(tools: Sequence[str] = TOOLS) -> None:
    """Skip the test where one of ``tools`` is missing; under CI, fail it."""
    missing = [tool for tool in MISSING if tool in tools]
    if missing:
        message = f"window tests need {', '.join(missing)} (apt-get install xvfb xdotool imagemagick)"
        if IN_CI:
            pytest.fail(message)
        pytest.skip(message)


def xdotool(env: dict[str, str], *args: str, check: bool = False) -> subprocess.CompletedProcess[str]:
    """``xdotool ARGS`` on ``env``'s display, its output as text (``check``: a failure raises; a search
    that finds nothing fails, so searches are not checked)."""
    return subprocess.run(["xdotool", *args], env=env, capture_output=True, text=True, timeout=PATIENCE,
                          check=check)


class DemoWindow:
    """The running demo on its display, and ways to poke and observe it."""

    def __init__(self, display: str, proc: subprocess.Popen, stats: Path, out: Path) -> None:
        self.display, self.proc, self.stats, self.out = display, proc, stats, out
        self.env = dict(os.environ, DISPLAY=display)
        self.window = ""

    @classmethod
    @contextmanager
    def started(cls, folder: Path, args: Sequence[str], screen: str = "1024x768x24",
                prelude: str = "", pointer_first: tuple[int, int] | None = None) -> Iterator[DemoWindow]:
        """``run_demo.py ARGS`` in a window on a new Xvfb display, focused, the pointer on it, two frames
        drawn; ``--stats`` and ``--out`` go into ``folder``.  ``prelude``: Python run first in the demo's
        process (a stand-in patched in).  ``pointer_first``: the pointer put at this place on the screen
        before the demo starts and not moved after (the window opens under a still pointer).  On leaving,
        a demo still running is killed."""
        need_tools()
        xvfb, display = start_xvfb(screen)
        stats, out = folder / "stats.csv", folder / "shots"
        env = dict(os.environ, DISPLAY=display)
        if pointer_first is not None:
            xdotool(env, "mousemove", *map(str, pointer_first), check=True)
        program = [str(ROOT / "run_demo.py")]
        if prelude:
            env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH", "")) if p)
            program = ["-c", f"{prelude}\nimport runpy, sys\nsys.argv[0] = {str(ROOT / 'run_demo.py')!r}\n"
                             "runpy.run_path(sys.argv[0], run_name='__main__')"]
        proc = subprocess.Popen([sys.executable, *program, *args, "--stats", str(stats), "--out", str(out)],
                                env=env, cwd=folder, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        demo = cls(display, proc, stats, out)
        try:
            demo._find_window()
            demo.xdo("windowmove", demo.window, "0", "0")
            demo.xdo("windowfocus", "--sync", demo.window)
            width, height = demo.size()
            if pointer_first is None:
                demo.xdo("mousemove", "--window", demo.window, str(width // 2), str(height // 2))
            demo.wait(lambda row: int(row["frame"]) >= 2, "the first frames")
            yield demo
        finally:
            if proc.poll() is None:
                proc.kill()
            proc.communicate(timeout=PATIENCE)
            xvfb.terminate()
            xvfb.wait(timeout=PATIENCE)

    def _find_window(self) -> None:
        deadline = time.monotonic() + 3 * PATIENCE  # a first start may load the kernels
        while time.monotonic() < deadline and self.proc.poll() is None:
            found = xdotool(self.env, "search", "--onlyvisible", "--name", "culling demo").stdout.split()
            if found:
                self.window = found[0]
                return
            time.sleep(0.1)
        self.proc.kill()
        _, err = self.proc.communicate(timeout=PATIENCE)
        raise AssertionError(f"the demo's window never showed (exit status {self.proc.returncode}): {err[-2000:]}")

    # -- observing ---------------------------------------------------------------
    def rows(self) -> list[Row]:
        """Every ``--stats`` row written so far (one per drawn frame), but a row still being written."""
        text = self.stats.read_text() if self.stats.exists() else ""
        lines = text.splitlines()
        if lines and not text.endswith("\n"):
            lines = lines[:-1]
        return list(csv.DictReader(io.StringIO("\n".join(lines))))

    def last(self) -> Row:
        rows = self.rows()
        assert rows, "no --stats rows yet"
        return rows[-1]

    def wait(self, predicate: Callable[[Row], bool], what: str, since: int | None = None,
             timeout: float = PATIENCE) -> Row:
        """The first row from row ``since`` on (default: rows drawn after this call) for which ``predicate``
        holds."""
        start = len(self.rows()) if since is None else since
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            assert self.proc.poll() is None, f"the demo exited ({self.proc.returncode}) waiting for {what}"
            for row in self.rows()[start:]:
                if predicate(row):
                    return row
            time.sleep(0.03)
        raise AssertionError(f"timed out waiting for {what}; last row {self.rows()[-1:]}")

    def settle(self, frames: int = 3) -> Row:
        """A row drawn ``frames`` frames from now (input already sent has been handled)."""
        start = len(self.rows())
        return self.wait(lambda row: True, f"{frames} new frames", since=start + frames - 1)

    def grab(self) -> np.ndarray:
        """The window's picture now, RGB as int16."""
        png = subprocess.run(["import", "-window", self.window, "png:-"], env=self.env, capture_output=True,
                             check=True, timeout=PATIENCE).stdout
        return np.asarray(Image.open(io.BytesIO(png)).convert("RGB")).astype(np.int16)

    # -- driving -----------------------------------------------------------------
    def xdo(self, *args: str) -> None:
        """``xdotool ARGS`` on the demo's display; a failure raises."""
        xdotool(self.env, *args, check=True)

    def size(self) -> tuple[int, int]:
        """The window's width and height (``xdotool getwindowgeometry --shell``)."""
        out = xdotool(self.env, "getwindowgeometry", "--shell", self.window).stdout
        values = dict(line.split("=", 1) for line in out.split() if "=" in line)
        return int(values["WIDTH"]), int(values["HEIGHT"])

    def hold(self, keys: str, seconds: float) -> None:
        """Hold ``keys`` down for about ``seconds`` (how far the camera flies is checked, not the time)."""
        self.xdo("keydown", keys)
        time.sleep(seconds)
        self.xdo("keyup", keys)

    def press(self, key: str) -> Row:
        """Press ``key``; a row drawn a few frames after it."""
        self.xdo("key", key)
        return self.settle()

    def press_until(self, key: str, predicate: Callable[[Row], bool], what: str) -> Row:
        """Press ``key``; the first row drawn since for which ``predicate`` holds."""
        start = len(self.rows())
        self.xdo("key", key)
        return self.wait(predicate, what, since=start)

    def exit_status(self) -> int | None:
        """The demo's exit status once it has exited, looked for at most :data:`EXIT_POLLS` times;
        None if it still runs after the last look."""
        for _ in range(EXIT_POLLS):
            if self.proc.poll() is not None:
                return self.proc.returncode
            time.sleep(POLL_SECONDS)
        return self.proc.poll()

    def quit(self) -> str:
        """Escape (the mouse free: the demo quits); asserts exit status 0 and returns its stderr."""
        self.xdo("key", "Escape")
        assert self.proc.wait(timeout=PATIENCE) == 0
        _, err = self.proc.communicate(timeout=PATIENCE)
        assert "Traceback" not in err, err[-2000:]
        return err
