"""The HUD: what it says (pure text, testable) and drawing it on an image.

:func:`hud_lines` turns one frame's numbers into coloured lines: timings per
stage, the funnel candidates -> in range -> in frustum -> drawn, and a table
per tree level (node size, nodes visited, objects returned).  In the window
pyglet draws those lines as labels; headless, :func:`draw_hud` paints them on
the read-back image with Pillow, so screenshots show the same HUD.
"""

from __future__ import annotations

import textwrap
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from engine.overlay import level_colour
from engine.stepped import scale_text

if TYPE_CHECKING:
    from PIL import Image, ImageFont

    from engine.frame_stats import FrameStats
    from engine.overlay import LevelBoxes

    Font = ImageFont.FreeTypeFont | ImageFont.ImageFont

__all__ = ["CONTROLS_HELP", "HUD_MODES", "HudInfo", "counted", "draw_hud", "fit_lines", "hud_font", "hud_font_size",
           "hud_legend", "hud_lines", "rows_clear_of", "text_colour", "wrap_legend"]

CONTROLS_HELP = ("WASD QE fly  Shift fast  wheel speed  1-4 scene  X explain",
                 "click/Tab mouse  drag look  Z/right mouse zoom  I interest",
                 "F freeze  O overlay  L loose  [ ] level  T fade  N player",
                 "G detail  M map  + - scale  C collide  P shot  H HUD")

#: The HUD's modes, in the order the H key cycles them.
HUD_MODES = ("compact", "full", "off")

WHITE = (1.0, 1.0, 1.0)
GREY = (0.78, 0.80, 0.84)
YELLOW = (1.0, 0.9, 0.4)
#: The picked object's lines (the X key): apart from the white of the HUD's own and every level colour.
INSPECTED = (1.0, 0.85, 0.2)
#: The status line (the last key's answer): bright cyan, apart from every level colour.
STATUS = (0.45, 1.0, 1.0)
#: The status line's width in characters: a longer answer (a path in a failed save) is wrapped onto more
#: lines, as the HUD's own lines stay within it, rather than the whole HUD's font shrunk to fit it.
STATUS_CHARS = 60
#: How long a key's answer stays on screen (seconds): long enough to read a short line.
STATUS_SECONDS = 3.0
#: Opacity of the panel behind the text: dark enough that every level colour
#: reads over sky, ground, roofs and walls alike.
PANEL_ALPHA = 200


@dataclass
class HudInfo:
    """Everything the HUD shows for one frame."""

    scene: str
    objects: int
    stats: FrameStats
    levels: list[LevelBoxes] = field(default_factory=list)   # the levels walked (only_depth: the one drawn)
    fps: float | None = None
    frozen: bool = False
    overlay: bool = True
    loose: bool = False
    only_depth: int | None = None
    fade: bool = True
    scale: float | None = None          # None: the tree has no scaled query
    zoom: float | None = None           # view-distance factor of the zoom culling uses; None: not zoomed
    view_zoom: float | None = None      # the view's own zoom where it differs (culling frozen); None: the same
    lod: bool = True
    show_map: bool = False
    collision: bool | None = None       # None: no collision module
    entered: int | None = None          # None: no visibility tracker
    left: int | None = None
    shape: str = "sphere"
    brute_force: bool = False
    help: bool = True
    speed: float | None = None
    mouse: str | None = None            # the mouse-capture state line (windows only)
    notes: list[str] = field(default_factory=list)   # the scene's own lines (e.g. its batch timings)
    brief_notes: list[str] = field(default_factory=list)  # the compact HUD's form of them (a line or two)
    status: str = ""                    # the last key's answer, shown in every mode while it lives
    warm_frames: int = 0                # the times are medians over this many recent frames (0: this frame's)
    cold: bool = False                  # this frame took far longer than the median: compiling, first use
    scene_legend: list[tuple[str, tuple[float, float, float]]] = field(default_factory=list)   # what looks mean
    inspection: list[str] = field(default_factory=list)   # the picked object's explanation (the X key)


def _ms(value: float) -> str:
    return f"{value:6.2f}"


def _moving(stats: FrameStats) -> bool:
    """Whether the scene's own work shows in the timings: a still scene's (well under 0.05 ms) would be
    a column of zeros."""
    return stats.scene_ms >= 0.05


def counted(n: int, word: str) -> str:
    """``n`` and ``word``, plural unless one.

    >>> counted(1, "object"), counted(20_000, "object"), counted(0, "bird")
    ('1 object', '20,000 objects', '0 birds')
    """
    return f"{n:,} {word}" + ("" if n == 1 else "s")


def text_colour(rgb: Iterable[float]) -> tuple[float, float, float]:
    """A level colour lightened towards white so it reads on the dark panel
    (the saturated blues and violets of deep levels are hard to read as they are)."""
    r, g, b = (0.55 * float(c) + 0.45 for c in rgb)
    return r, g, b


def hud_lines(info: HudInfo, mode: str = "full") -> list[tuple[str, tuple[float, float, float]]]:
    """The HUD as ``(text, rgb)`` lines, top to bottom.

    ``mode`` is one of :data:`HUD_MODES`: ``"full"`` (timings, funnel, state,
    scene notes, per-level table, mouse line, controls), ``"compact"`` (the
    times and the funnel, the scene's brief notes, the state, the mouse line and a
    key hint: four lines in the forest; :func:`hud_legend` adds the colours), ``"off"`` (nothing).  Every mode starts with the status
    line (the last key's answer) while it lives, wrapped at :data:`STATUS_CHARS`.  Lines stay within
    about 60 characters, so the full HUD covers at most about a quarter of a 16:9 view.

    >>> from engine.frame_stats import FrameStats
    >>> lines = hud_lines(HudInfo("forest", 1000, FrameStats(candidates=9, in_range=5, in_frustum=2, drawn=2)))
    >>> lines[3][0]
    '9 walked > 5 in range > 2 in frustum > 2 drawn'
    >>> [text for text, _ in hud_lines(HudInfo("forest", 1000, FrameStats()), "compact")][0]
    'forest 1,000  cull 0.00 ms  draw 0.0 ms'
    """
    if mode not in HUD_MODES:
        raise ValueError(f"HUD mode must be one of {', '.join(HUD_MODES)}, got {mode!r}")
    status = [(line, STATUS) for line in textwrap.wrap(info.status, STATUS_CHARS, subsequent_indent="  ")]
    if mode == "off":
        return status
    s = info.stats
    fps = "" if info.fps is None else f"   {info.fps:5.1f} fps"
    state = []
    if info.frozen:
        state.append("CULLING FROZEN (F)")
    if info.scale is not None and info.scale != 1.0:
        state.append(f"view scale x{scale_text(info.scale)}")
    if info.zoom is not None:
        state.append(f"zoom x{info.zoom:.1f}")
    if info.view_zoom is not None:
        state.append(f"view zoom x{info.view_zoom:.1f}")
    if not info.lod:
        state.append("full detail (G)")
    timing = f"median of {info.warm_frames}" if info.warm_frames > 1 else "this frame"
    cold = [("slow frame: a compile, a first use or a busy machine", YELLOW)] if info.cold else []
    if mode == "compact":
        lines = [
            (f"{info.scene} {info.objects:,}" + (f"  scene {s.scene_ms:.1f} ms" if _moving(s) else "")
             + f"  cull {s.cull_ms:.2f} ms  draw {s.draw_ms:.1f} ms"
             + ("" if info.fps is None else f"  {info.fps:.0f} fps"), WHITE),
            (f"{s.candidates:,} walked > {s.in_range:,} range > {s.in_frustum:,} frustum", WHITE),
        ]
        lines.extend((note, WHITE) for note in info.brief_notes)
        lines.extend((line, INSPECTED) for line in info.inspection)
        lines.extend(cold)
        if state:
            lines.append(("  ".join(state), YELLOW))
        if info.mouse:
            lines.append((info.mouse, GREY))
        if info.help:  # a window's: no key reaches a headless frame
            lines.append(("H: timings, levels, keys", GREY))
        return status + lines
    culling = f"{'brute force' if info.brute_force else 'tree'}, {info.shape}s"
    lines = [
        (f"{info.scene}  {counted(info.objects, 'object')}  {culling}{fps}", WHITE),
        (f"ms ({timing})" + (f"  scene {s.scene_ms:.1f}" if _moving(s) else "")
         + f"  cull {s.cull_ms:.2f}  draw {s.draw_ms:.1f}"
         + (f"  overlay {s.trace_ms:.2f}" if info.overlay else ""), WHITE),
        (f"  query {s.query_ms:.2f}  range {s.distance_ms:.2f}  frustum {s.frustum_ms:.2f}  "
         f"upload {s.upload_ms:.2f}", WHITE),
        (f"{s.candidates:,} walked > {s.in_range:,} in range > {s.in_frustum:,} in frustum > {s.drawn:,} drawn",
         WHITE),
        (_lod_line(info), WHITE),
    ]
    lines.extend(cold)
    extras = []
    if info.scale is not None:
        extras.append(f"scale x{scale_text(info.scale)}")
    if info.zoom is not None:
        extras.append(f"zoom x{info.zoom:.2f}")
    if info.view_zoom is not None:
        extras.append(f"view zoom x{info.view_zoom:.2f}")
    if info.speed is not None:
        extras.append(f"speed {info.speed:.0f} m/s")
    extras.append(f"fade {'on' if info.fade else 'off'}")
    if info.collision is not None:
        extras.append(f"collide {'on' if info.collision else 'off'}")
    if info.show_map:
        extras.append("map")
    lines.append(("  ".join(extras), GREY))
    if info.entered is not None:
        lines.append((f"came into view {info.entered:,}  left it {info.left:,}", GREY))
    if info.frozen:
        lines.append(("CULLING FROZEN (F)", YELLOW))
    lines.extend((note, WHITE) for note in info.notes)
    lines.extend((line, INSPECTED) for line in info.inspection)
    if info.overlay and info.levels:
        title = "loose boxes" if info.loose else "node boxes"
        if info.only_depth is not None:
            title += f", level {info.only_depth} only"
        lines.append((f"{LEVELS_TITLE}  (drawn: {title})", GREY))
        for lv in _shown_levels(info):               # the totals below stay those of every level walked
            lines.append((f"{lv.depth:5d} {_size(lv.node_size):>7s} {lv.nodes:6d} {lv.objects:8,d}",
                          text_colour(level_colour(lv.depth))))
        total_nodes = sum(lv.nodes for lv in info.levels)
        total_objects = sum(lv.objects for lv in info.levels)
        lines.append((f"{TOTALS}{'':7s} {total_nodes:6d} {total_objects:8,d}", GREY))
    if info.mouse:
        lines.append((info.mouse, GREY))
    if info.help:
        lines.extend((text, GREY) for text in CONTROLS_HELP)
    return status + lines


def _shown_levels(info: HudInfo) -> list[LevelBoxes]:
    """The levels the overlay draws: all of them, or the one ``[``/``]`` chose."""
    return [lv for lv in info.levels if info.only_depth is None or lv.depth == info.only_depth]


def _size(metres: float) -> str:
    """A node edge, short: ``16384``, ``512``, ``0.5``."""
    return f"{metres:.0f}" if metres >= 1.0 else f"{metres:.3g}"


def hud_legend(info: HudInfo, mode: str = "compact") -> list[list[tuple[str, tuple[float, float, float]]]]:
    """Rows of colour swatches with labels, drawn below the HUD's lines.

    The scene's own legend (what its colours mean) in every mode but off; in
    the compact mode also the overlay's key, one ``(node size, colour)`` per
    level drawn (the full mode's level table says it in colour already).

    >>> from engine.frame_stats import FrameStats
    >>> from engine.overlay import LevelBoxes
    >>> import numpy as np
    >>> lv = LevelBoxes(depth=0, node_size=4096.0, bounds=np.zeros((1, 2, 3)), objects=3)
    >>> [[text for text, _ in row] for row in hud_legend(HudInfo("forest", 10, FrameStats(), levels=[lv]))]
    [['4096 m boxes']]
    """
    rows = []
    if mode != "off" and info.scene_legend:
        rows.append(list(info.scene_legend))
    if mode == "compact" and info.overlay and info.levels:
        levels = [(_size(lv.node_size), level_colour(lv.depth)) for lv in _shown_levels(info)]
        levels[-1] = (levels[-1][0] + " m boxes", levels[-1][1])
        rows.append(levels)
    return rows


def _lod_line(info: HudInfo) -> str:
    """Instances per level of detail, the triangles they make and the draw calls."""
    s = info.stats
    counts = [int(c) for c in s.level_counts]
    if not info.lod:
        per_level = "off (full detail)"
    elif counts:
        per_level = "  ".join(f"L{i} {c:,}" for i, c in enumerate(counts))
    else:
        per_level = "-"
    return f"lod {per_level}  {s.triangles:,} tris  {s.draw_calls} draws"


#: What stands for the key list in a window too short for the full HUD (:func:`fit_lines`).
KEYS_HIDDEN = "keys: a taller window lists them (docs/DEMO.md)"
#: The first line of the per-level table; its rows run to the line of totals, which starts with ``TOTALS``.
LEVELS_TITLE, TOTALS = "depth  node m  nodes  objects", "  all "


def fit_lines(lines: Sequence[tuple[str, Any]], rows: int) -> list[tuple[str, Any]]:
    """``lines`` (:func:`hud_lines`) cut to ``rows``, what the picture's height holds: the full HUD in a
    small window showed its first lines and lost the rest below the frame.  What goes first: the key
    list (one line says where it is), then the per-level table's deepest rows (its title and totals
    kept, one line counting the rows left out), then the last lines (one line counts them).  The status line, first, stays.

    >>> lines = [(text, WHITE) for text in ("status", "times", *CONTROLS_HELP)]
    >>> [text for text, _ in fit_lines(lines, 3)]
    ['status', 'times', 'keys: a taller window lists them (docs/DEMO.md)']
    >>> [text for text, _ in fit_lines(lines, 2)]
    ['status', '... 2 more lines: a taller window shows them']
    """
    rows = max(rows, 1)
    lines = list(lines)
    if len(lines) <= rows:
        return lines
    keys = [k for k, (text, _) in enumerate(lines) if text in CONTROLS_HELP]
    if keys:
        lines = [line for k, line in enumerate(lines) if k not in keys[1:]]
        lines[keys[0]] = (KEYS_HIDDEN, GREY)
    title = next((k for k, (text, _) in enumerate(lines) if text.startswith(LEVELS_TITLE)), None)
    if len(lines) > rows and title is not None:
        end = next((k for k in range(title + 1, len(lines)) if lines[k][0].startswith(TOTALS)), title + 1)
        cut = min(end - title - 1, len(lines) - rows + 1)  # level rows to drop, the deepest first, and one
        if cut >= 2:                                          # line in their place that says so
            lines = lines[:end - cut] + [(f"... {cut} deeper levels: a taller window shows them", GREY)] + lines[end:]
        else:
            lines = lines[:end - cut] + lines[end:]
    if len(lines) > rows == 1:  # room for the first line only
        return lines[:1]
    if len(lines) > rows:
        more = len(lines) - rows + 1
        lines = lines[:rows - 1] + [(f"... {more} more lines: a taller window shows them", GREY)]
    return lines


def rows_clear_of(corner: tuple[float, float] | None, panel_width: float, line_height: float, rows: int,
                  pad: float) -> int:
    """How many of the ``rows`` the frame's height holds the HUD may show so that its panel (``panel_width``
    wide, ``pad`` pixels taller than its rows) stays clear of a box in the frame's bottom-right corner whose
    top-left corner is ``corner`` (image coordinates; the map inset's,
    :func:`engine.map_geometry.inset_corner`; None: no box).  Only a panel reaching over the box's left
    edge is cut, to the rows above its top, one at least: in a small window the full HUD covered the map.

    >>> rows_clear_of((295, 145), 390, 11, 14, 10), rows_clear_of((295, 145), 290, 11, 14, 10)
    (12, 14)
    """
    if corner is None or panel_width <= corner[0]:
        return rows
    return max(1, min(rows, int((corner[1] - pad) // line_height)))


def hud_font_size(height: int, width: int | None = None, chars: int = 0) -> int:
    """Font size (pixels) for a picture ``height`` pixels tall: 1/60 of it, 9..16;
    smaller (down to 7) when ``chars`` monospace characters must fit in ``width``.

    12 px at 720 lines keeps the full HUD within about a quarter of a 1280x720
    view; 9 px is the smallest that DejaVu Sans Mono keeps readable (640x360).

    >>> hud_font_size(720), hud_font_size(360), hud_font_size(2160), hud_font_size(180, 320, 90)
    (12, 9, 16, 7)
    """
    size = min(max(height // 60, 9), 16)
    if width is not None and chars > 0:
        size = min(size, max(7, int((width - 12) / (0.61 * chars))))
    return int(size)


_FONT_CACHE: dict[int, Font] = {}


def hud_font(size: int = 14) -> Font:
    """A monospace TrueType font if the system has one, else Pillow's built-in font."""
    if size not in _FONT_CACHE:
        from PIL import ImageFont

        font: Font | None = None
        for name in ("DejaVuSansMono.ttf", "LiberationMono-Regular.ttf", "Menlo.ttc", "consola.ttf"):
            try:
                font = ImageFont.truetype(name, size)
                break
            except OSError:
                continue
        if font is None:
            try:
                font = ImageFont.load_default(size=size)
            except TypeError:          # Pillow < 10.1: fixed-size bitmap font
                font = ImageFont.load_default()
        _FONT_CACHE[size] = font
    return _FONT_CACHE[size]


def wrap_legend(legend: Sequence[Sequence[tuple[str, Iterable[float]]]], width: int,
                entry: Callable[[str], int]) -> list[list[tuple[str, Iterable[float]]]]:
    """The legend's rows, each cut into rows no wider than ``width`` pixels (``entry(text)``: a swatch's
    width with its label), so a narrow window shows every swatch; an entry wider than ``width`` alone
    keeps a row of its own.

    >>> [[t for t, _ in row] for row in wrap_legend([[("aa", 0), ("bb", 0), ("cc", 0)], []], 25, lambda t: 10)]
    [['aa', 'bb'], ['cc'], []]
    """
    rows: list[list[tuple[str, Iterable[float]]]] = []
    for row in legend:
        current: list[tuple[str, Iterable[float]]] = []
        used = 0
        for text, rgb in row:
            if current and used + entry(text) > width:
                rows.append(current)
                current, used = [], 0
            current.append((text, rgb))
            used += entry(text)
        if current or not row:  # an empty row stays (a spacer)
            rows.append(current)
    return rows


def draw_hud(image: Image.Image, lines: Sequence[tuple[str, Iterable[float]]], font_size: int = 14,
             legend: Sequence[Sequence[tuple[str, Iterable[float]]]] = (),
             keep_clear: tuple[int, int] | None = None) -> Image.Image:
    """Paint ``lines`` (from :func:`hud_lines`) in the top-left of a Pillow RGB image.

    A translucent dark panel sits behind the text so it reads over sky and
    ground alike.  ``legend`` (from :func:`hud_legend`) adds rows of colour
    swatches with their labels below the lines.  ``keep_clear``: the top-left
    corner of a box in the bottom-right (the map inset) the panel stays off
    (:func:`rows_clear_of`).  Returns the image (modified in place).
    """
    from PIL import Image, ImageDraw

    if not lines and not legend:
        return image
    font = hud_font(font_size)
    line_height = int(font_size * 1.3)
    measure = ImageDraw.Draw(image)
    swatch = max(6, font_size * 2 // 3)
    gap = font_size // 2

    def entry(text: str) -> int:  # one swatch and its label, with the gap after it
        return swatch + 3 + int(measure.textlength(text, font=font)) + gap

    legend = wrap_legend(legend, image.size[0] - 16, entry)
    legend_width = [sum(entry(text) for text, _ in row) for row in legend]

    def fitted(rows: int) -> tuple[list[tuple[str, Iterable[float]]], int]:  # the lines and the panel's width
        shown = fit_lines(lines, rows - len(legend)) if lines else []
        return shown, max([int(measure.textlength(text, font=font)) for text, _ in shown] + legend_width) + 16

    rows = (image.size[1] - 10) // line_height
    shown, width = fitted(rows)
    clear = rows_clear_of(keep_clear, width, line_height, rows, 10)
    if clear < rows:
        shown, width = fitted(clear)
    lines = shown
    height = line_height * (len(lines) + len(legend)) + 10
    panel = Image.new("RGBA", image.size, (0, 0, 0, 0))
    draw = ImageDraw.Draw(panel)
    draw.rectangle([0, 0, min(width, image.size[0] - 1), min(height, image.size[1] - 1)], fill=(0, 0, 0, PANEL_ALPHA))
    for row, (text, rgb) in enumerate(lines):
        colour = tuple(int(round(255 * c)) for c in rgb) + (255,)
        draw.text((8, 5 + row * line_height), text, font=font, fill=colour)
    for r, swatches in enumerate(legend):
        x, y = 8, 5 + (len(lines) + r) * line_height
        for text, rgb in swatches:
            colour = tuple(int(round(255 * c)) for c in rgb) + (255,)
            top = y + (line_height - swatch) // 2
            draw.rectangle([x, top, x + swatch - 1, top + swatch - 1], fill=colour)
            x += swatch + 3
            draw.text((x, y), text, font=font, fill=tuple(int(round(255 * c)) for c in text_colour(rgb)) + (255,))
            x += int(measure.textlength(text, font=font)) + gap
    image.paste(Image.alpha_composite(image.convert("RGBA"), panel).convert("RGB"))
    return image
