"""Closing the real window from outside under Xvfb: ``xdotool windowclose`` destroys it (XDestroyWindow,
what a crashed window manager or a killed session does, not the WM_DELETE_WINDOW message of a close
button).  The demo must end as if closed: exit status 0, its ``--stats`` file closed, no traceback."""

from __future__ import annotations

import pytest
from demo_window import DemoWindow

pytestmark = pytest.mark.window


def test_a_window_destroyed_from_outside_ends_the_demo_with_status_zero(tmp_path):
    with DemoWindow.started(tmp_path, ["--objects", "3000", "--size", "320x180"], screen="800x600x24") as demo:
        drawn = len(demo.rows())
        demo.xdo("windowclose", demo.window)
        status = demo.exit_status()
        assert status == 0, f"still running after the window was destroyed (rows {drawn} -> {len(demo.rows())})"
        _, err = demo.proc.communicate(timeout=60)
        assert "Traceback" not in err, err[-2000:]
        text = demo.stats.read_text()
        assert text.endswith("\n") and len(demo.rows()) >= drawn          # closed after whole rows
