"""The HUD's size, its legend and its warm figures, checked in pixels and numbers."""

import numpy as np
import pytest
from PIL import Image

from engine.frame_stats import FrameStats
from engine.hud import (
    CONTROLS_HELP,
    KEYS_HIDDEN,
    HudInfo,
    draw_hud,
    fit_lines,
    hud_font_size,
    hud_legend,
    hud_lines,
    rows_clear_of,
)
from engine.map_geometry import inset_corner, inset_rect
from engine.overlay import LevelBoxes, level_colour


def _levels(n: int = 10) -> list[LevelBoxes]:
    return [LevelBoxes(depth=d, node_size=16384.0 / 2 ** d, bounds=np.zeros((8, 2, 3)), objects=12_345)
            for d in range(n)]


def _busy_info(**kw) -> HudInfo:
    stats = FrameStats(candidates=1_234_567, in_range=123_456, in_frustum=12_345, drawn=12_345, draw_calls=21,
                       query_ms=12.34, distance_ms=1.23, frustum_ms=1.23, upload_ms=1.23, draw_ms=123.4,
                       trace_ms=1.23, triangles=1_234_567, level_counts=np.array([1234, 5678, 9012]))
    return HudInfo("clusters", 1_000_000, stats, levels=_levels(), fps=59.9, frozen=True, scale=1.25, zoom=4.4,
                   collision=True, entered=1234, left=1234, speed=250.0, help=True, status="F: culling frozen",
                   mouse="mouse free: click or Tab captures, drag looks; Esc quits",
                   notes=["aggro: you + 300 hunters x 29,100 creatures, 9,999 pairs, 9,999 chasing",
                          "  query_many 1.50 ms, brute force 70.00 ms (46.7x)"], **kw)


def _panel_share(size: tuple[int, int], mode: str) -> float:
    w, h = size
    info = _busy_info()
    lines = hud_lines(info, mode)
    image = Image.new("RGB", size, (255, 255, 255))
    chars = max(len(text) for text, _ in lines)
    draw_hud(image, lines, hud_font_size(h, w, chars), legend=hud_legend(info, mode))
    dark = np.asarray(image).max(axis=-1) < 120
    return float(dark.any(axis=1).sum() * dark.any(axis=0).sum()) / (w * h)


def test_full_hud_covers_at_most_a_quarter_of_1280x720():
    assert _panel_share((1280, 720), "full") <= 0.25


def test_full_hud_stays_readable_at_640x360():
    lines = hud_lines(_busy_info(), "full")
    assert max(len(text) for text, _ in lines) <= 72             # no line wider than the view at 9 px
    assert hud_font_size(360, 640, max(len(text) for text, _ in lines)) >= 9
    assert _panel_share((640, 360), "full") < 0.8


def test_compact_hud_draws_a_legend_swatch_per_level_colour():
    info = _busy_info()
    (legend,) = hud_legend(info)
    assert [text for text, _ in legend][:2] == ["16384", "8192"] and legend[-1][0].endswith(" m boxes")
    image = Image.new("RGB", (1280, 720), (255, 255, 255))
    draw_hud(image, hud_lines(info, "compact"), 12, legend=[legend])
    pixels = np.asarray(image).reshape(-1, 3).astype(int)
    for lv in info.levels:
        rgb = np.array([round(255 * c) for c in level_colour(lv.depth)])
        assert (np.abs(pixels - rgb).max(axis=1) <= 1).sum() >= 36, lv.depth     # a swatch, not a stray pixel


def test_status_line_shows_in_every_mode():
    info = _busy_info()
    for mode in ("compact", "full", "off"):
        assert hud_lines(info, mode)[0][0] == "F: culling frozen"
    info.status = ""
    assert hud_lines(info, "off") == []


def test_a_long_status_is_wrapped_not_shrunk():
    """A failed save names the folder (a path of any length): the status is wrapped at the HUD's width
    rather than setting the width of every line (the window's HUD font shrank to 4 pixels a character)."""
    from engine.hud import STATUS, STATUS_CHARS

    folder = "/tmp/" + "a-very-long-folder-name/" * 5
    info = _busy_info()
    info.status = f"P: cannot save {folder}screenshot_000.png: --out {folder} is not a folder"
    for mode in ("compact", "full", "off"):
        status = [text for text, rgb in hud_lines(info, mode) if rgb == STATUS]
        assert len(status) > 2 and max(map(len, status)) <= STATUS_CHARS
        assert "".join(line.strip() for line in status).replace(" ", "") == info.status.replace(" ", "")


def test_times_say_they_are_medians_and_cold_frames_are_marked():
    text = [t for t, _ in hud_lines(_busy_info(warm_frames=30, cold=True), "full")]
    assert text[2].startswith("ms (median of 30)")
    assert any(t.startswith("slow frame") for t in text)


def test_compact_hud_shows_the_scenes_brief_lines_and_leaves_most_of_a_small_view_free():
    brief = ["interest: hunter 126, 335 in its set, +5 -1; tick 18.53 ms",
             "sensing: 11,201 sensed pairs  7.62 ms (24.9x brute force)",
             "separation: 11,433 pairs  6.46 ms (3.5x NumPy grid)"]
    info = _busy_info(brief_notes=brief)
    texts = [text for text, _ in hud_lines(info, "compact")]
    assert all(line in texts for line in brief) and not any(note in texts for note in info.notes)
    assert [text for text, _ in hud_lines(info, "full")].count(info.notes[0]) == 1    # the full HUD spells them out
    image = Image.new("RGB", (640, 360), (255, 255, 255))
    lines = hud_lines(info, "compact")
    draw_hud(image, lines, hud_font_size(360, 640, max(len(text) for text, _ in lines)),
             legend=hud_legend(info, "compact"))
    dark = np.asarray(image).max(axis=-1) < 120
    assert dark.any(axis=1).sum() / 360 < 0.4                                  # the HUD's rows: under 40 % of the height


def test_a_full_hud_taller_than_the_window_drops_the_keys_then_levels_and_never_runs_off_the_frame():
    """At 400x225 the full HUD showed its first key line and lost the rest below the frame."""
    info = _busy_info()
    lines = hud_lines(info, "full")
    texts = [text for text, _ in lines]
    legend = hud_legend(info, "full")
    for rows in range(1, len(lines) + 2):
        fitted = [text for text, _ in fit_lines(lines, rows)]
        assert len(fitted) <= rows and fitted[0] == texts[0]  # within the rows; the status line stays
        assert len(fitted) >= min(rows, len(lines) - len(CONTROLS_HELP) + 1)  # nothing dropped that fits
        if rows < len(lines):
            assert not set(CONTROLS_HELP) & set(fitted)
        if KEYS_HIDDEN in fitted or any(t.startswith("...") for t in fitted):
            kept = [t for t in fitted if t in texts]
            assert kept == [t for t in texts if t in kept]  # what stays keeps its order
    fitted = [text for text, _ in fit_lines(lines, len(lines) - 1)]
    assert KEYS_HIDDEN in fitted and texts[-len(CONTROLS_HELP) - 1] in fitted  # the keys go first, in one line
    table = texts.index(next(t for t in texts if t.startswith("depth  node m")))
    fitted = [text for text, _ in fit_lines(lines, len(lines) - len(CONTROLS_HELP) - 3)]
    assert texts[table] in fitted and any(t.startswith("  all ") for t in fitted)  # the title and totals stay
    assert fitted.count(KEYS_HIDDEN) == 1 and not any("more lines" in t for t in fitted)
    assert sum("deeper levels: a taller window shows them" in t for t in fitted) == 1  # the rows cut, counted
    for rows in range(2, len(lines)):                     # a count of levels cut names as many as are gone
        fitted = [text for text, _ in fit_lines(lines, rows)]
        said = [t for t in fitted if "deeper levels" in t]
        shown = sum(t in texts[table + 1:] and t[:1] == " " and not t.startswith("  all ") for t in fitted)
        if said:
            levels = next(k for k in range(table + 1, len(texts)) if texts[k].startswith("  all ")) - table - 1
            assert int(said[0].split()[1]) + shown == levels
    for size in ((400, 225), (320, 180), (640, 360)):
        w, h = size
        image = Image.new("RGB", size, (255, 255, 255))
        draw_hud(image, lines, hud_font_size(h, w, max(len(t) for t in texts)), legend=legend)
        dark = np.asarray(image).max(axis=-1) < 120
        assert not dark[-3:].any(), size  # the panel ends above the frame's bottom: every row it has is whole


def test_a_narrow_window_wraps_the_legend_and_shows_every_swatch():
    """At 320 px the swarm's legend ran off the right edge ("hunters ▇ bir"): its rows wrap to the width."""
    from scenes.swarm import INTEREST_LEGEND

    legend = [list(INTEREST_LEGEND)]
    image = Image.new("RGB", (320, 780), (255, 255, 255))
    draw_hud(image, [("status", (1.0, 1.0, 1.0))], 12, legend=legend)
    pixels = np.asarray(image).astype(int)
    for _, colour in INTEREST_LEGEND:
        rgb = np.array([round(255 * c) for c in colour])
        hits = np.argwhere(np.abs(pixels - rgb).max(axis=-1) <= 1)
        assert len(hits) >= 36, colour                          # each swatch drawn whole, inside the window
    dark = np.asarray(image).max(axis=-1) < 120
    assert dark.any(axis=1).sum() > 3 * 16                      # the legend took more than one row


@pytest.mark.parametrize("size", [(320, 200), (400, 250), (480, 300)])
def test_the_full_hud_stays_off_the_map_inset_and_keeps_its_first_lines(size):
    """In a small frame the full HUD ran down over the map in the bottom-right corner."""
    w, h = size
    lines = hud_lines(_busy_info(), "full")
    font = hud_font_size(h, w, max(len(text) for text, _ in lines))
    x, y, side, _ = inset_rect(size)
    inset = (slice(h - y - side, h - y), slice(x, x + side))
    covered = Image.new("RGB", size, (255, 255, 255))
    draw_hud(covered, lines, font)
    assert (np.asarray(covered)[inset].max(axis=-1) < 120).any()  # without keep_clear: over the map
    image = Image.new("RGB", size, (255, 255, 255))
    draw_hud(image, lines, font, keep_clear=inset_corner(size))
    pixels = np.asarray(image)
    assert (pixels[inset] == 255).all()
    assert (pixels[:20, :40].max(axis=-1) < 120).any()  # the panel still stands in the top-left


def test_a_hud_narrower_than_the_maps_left_edge_keeps_every_row():
    assert rows_clear_of((295, 145), 294, 11, 20, 10) == 20
    assert rows_clear_of(None, 1000, 11, 20, 10) == 20
    assert rows_clear_of((295, 5), 400, 11, 20, 10) == 1  # one row at least: the status line
