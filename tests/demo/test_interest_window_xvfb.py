"""The interest view's keys in the real window under Xvfb, pressed with xdotool (real X key events):
I turns the view on in the swarm (the HUD's status says whom it follows, the frame gains the
tint and the marks), N follows the next player and moves the camera to look at it, Shift+N the
previous one, I again turns it off.  The demo reports its state per drawn frame in ``--stats``;
each step waits for a fresh row, never for a time."""

from __future__ import annotations

import numpy as np
import pytest
from demo_window import DemoWindow

SIZE = (480, 270)

pytestmark = pytest.mark.window


@pytest.fixture
def window(tmp_path):
    """``run_demo.py --scene swarm`` in a window on its own Xvfb display."""
    with DemoWindow.started(tmp_path, ["--scene", "swarm", "--objects", "3000", "--size", f"{SIZE[0]}x{SIZE[1]}",
                                       "--no-overlay", "--no-hud"], screen="800x600x24") as demo:
        yield demo


def _cyan(image: np.ndarray) -> int:
    """Pixels of birds tinted towards the interest colour (see tests/demo/test_interest_frames.py), below
    the top eighth (where the status line's cyan text is)."""
    below = image[image.shape[0] // 8:]
    r, g, b = below[..., 0], below[..., 1], below[..., 2]
    return int(np.count_nonzero((g - r > 70) & (b - r > 70) & (np.abs(g - b) < 50)))


def test_i_shows_the_interest_view_and_n_follows_the_players(window):
    assert window.last()["interest"] == "0"
    plain = window.grab()

    on = window.press_until("i", lambda r: r["interest"] == "1", "I: interest view on")
    assert on["status"] == f"I: interest view on, following {on['followed']} (N: next player)"
    assert on["followed"].startswith("hunter ")

    nxt = window.press_until("n", lambda r: r["followed"] != on["followed"], "N: next player")
    assert nxt["status"] == f"N: following {nxt['followed']}" and int(nxt["followed"].split()[1]) == \
        int(on["followed"].split()[1]) + 1
    moved = np.hypot(float(nxt["x"]) - float(on["x"]), float(nxt["z"]) - float(on["z"]))
    assert moved > 1.0, "N did not move the camera to the followed player"
    watching = window.grab()                                          # rows are written once drawn
    assert np.abs(watching - plain).max(axis=-1).astype(bool).mean() > 0.05       # a new view
    assert np.count_nonzero(np.all(watching >= 235, axis=-1)) >= 8              # the white box and reach sphere
    assert _cyan(watching) > 0 and _cyan(plain) == 0                            # its set tinted

    back = window.press_until("shift+n", lambda r: r["followed"] == on["followed"], "Shift+N: the previous player")
    assert back["interest"] == "1" and back["status"] == f"Shift+N: following {on['followed']}"   # the key as pressed

    off = window.press_until("i", lambda r: r["interest"] == "0", "I: interest view off")
    assert off["status"] == "I: interest view off"
    image = window.grab()
    assert np.count_nonzero(np.all(image >= 235, axis=-1)) == 0 and _cyan(image) == 0    # no marks, no tint
