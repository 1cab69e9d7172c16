"""The window's new keys under a virtual X server, with real X input (xdotool):
M shows the map inset, Z held zooms (the query's scale grows, so more candidates),
so does the right mouse button held (without capturing the mouse), and G
switches levels of detail off (more triangles for the same objects).  Each step
waits for the ``--stats`` row that shows its effect, never for a time."""

import numpy as np
import pytest
from demo_window import DemoWindow
from PIL import Image

pytestmark = pytest.mark.window


def _zoom(row: dict) -> float:
    return float(row["zoom"])


def test_m_z_and_g_keys(tmp_path):
    with DemoWindow.started(tmp_path, ["--objects", "20000", "--size", "320x180", "--no-overlay"],
                            screen="800x600x24") as demo:
        # A screenshot (P), M, another screenshot; hold Z until zoomed, let go until it eases back,
        # G (no LOD), then hold the right mouse button until zoomed, and quit holding it.
        demo.press_until("p", lambda r: "screenshot_000.png" in r["status"], "P: the first screenshot")
        demo.press_until("m", lambda r: r["map"] == "1", "M: the map on")
        demo.press_until("p", lambda r: "screenshot_001.png" in r["status"], "P: the second screenshot")
        demo.xdo("keydown", "z")
        held = demo.wait(lambda r: _zoom(r) > 4.0, "Z held: the zoom")
        assert held["status"].startswith("Z: zoom x") and held["status"].endswith(" while held")
        demo.xdo("keyup", "z")
        demo.wait(lambda r: r["status"] == "Z: zoom off", "Z let go: said so")  # not "while held" for 3 s
        demo.wait(lambda r: _zoom(r) < 1.2, "Z let go: the zoom eases back")
        demo.press_until("g", lambda r: r["lod"] == "0", "G: levels of detail off")
        demo.xdo("mousedown", "3")
        demo.wait(lambda r: _zoom(r) > 4.0, "the right button held: the zoom")
        demo.settle()
        demo.quit()
        rows = demo.rows()
    zoom = np.array([_zoom(r) for r in rows])
    assert zoom[0] == 1.0 and zoom[-1] > 4.0                                # still zoomed: the button held
    assert rows[-1]["captured"] == "0" and rows[-1]["map"] == "1" and rows[-1]["lod"] == "0"
    cand = np.array([int(r["candidates"]) for r in rows])
    per_object = np.array([int(r["triangles"]) / max(int(r["drawn"]), 1) for r in rows])
    # Zoom: the view distances grow, so the query returns more candidates at the end than at the start.
    assert cand[-1] > 1.3 * cand[0], (cand[0], cand[-1])
    # G: everything at full detail, so more triangles per drawn object at the end.
    assert per_object[-1] > 1.5 * per_object[0], (per_object[0], per_object[-1])
    # M: the map inset appears in the bottom-right corner, and only there (below the HUD).
    before, after = (np.asarray(Image.open(demo.out / f"screenshot_00{i}.png").convert("RGB")).astype(int)
                     for i in (0, 1))
    side = int(180 * 0.38)
    changed = np.abs(after - before).max(axis=-1)
    assert changed[180 - 10 - side:170, 320 - 10 - side:310].mean() > 20
    assert changed[140:176, :200].max() == 0
