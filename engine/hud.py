"""The HUD: what it says (pure text, testable) and drawing it on an image.

:func:`hud_lines` turns one frame's numbers into coloured lines: timings per
stage, the funnel candidates -> in range -> in frustum -> drawn, and a table
per tree level (node size, nodes visited, objects returned).  In the window
pyglet draws those lines as labels; headless, :func:`draw_hud` paints them on
the read-back image with Pillow, so screenshots show the same HUD.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from engine.overlay import level_colour

__all__ = ["CONTROLS_HELP", "HudInfo", "draw_hud", "hud_font", "hud_lines"]

CONTROLS_HELP = ("WASD/QE move  mouse: click + look  Shift fast  wheel speed  1-3 scene",
                 "F freeze  O overlay  L loose  [ ] level  T fade  +/- scale  C collide  P shot  H help  Esc quit")

WHITE = (1.0, 1.0, 1.0)
GREY = (0.75, 0.78, 0.82)
YELLOW = (1.0, 0.9, 0.4)


@dataclass
class HudInfo:
    """Everything the HUD shows for one frame."""

    scene: str
    objects: int
    stats: object                       # engine.culling_pipeline.FrameStats
    levels: list = field(default_factory=list)   # engine.overlay.LevelBoxes, drawn levels
    fps: float | None = None
    frozen: bool = False
    overlay: bool = True
    loose: bool = False
    only_depth: int | None = None
    fade: bool = True
    scale: float | None = None          # None: the tree has no scaled query
    collision: bool | None = None       # None: no collision module
    entered: int | None = None          # None: no visibility tracker
    left: int | None = None
    shape: str = "sphere"
    brute_force: bool = False
    help: bool = True
    speed: float | None = None
    notes: list[str] = field(default_factory=list)   # the scene's own lines (e.g. its batch timings)


def _ms(value: float) -> str:
    return f"{value:6.2f}"


def hud_lines(info: HudInfo) -> list[tuple[str, tuple[float, float, float]]]:
    """The HUD as ``(text, rgb)`` lines, top to bottom.

    >>> from engine.culling_pipeline import FrameStats
    >>> lines = hud_lines(HudInfo("forest", 1000, FrameStats(candidates=9, in_range=5, in_frustum=2, drawn=2)))
    >>> lines[2][0]
    'funnel  candidates 9 -> in range 5 -> in frustum 2 -> drawn 2'
    """
    s = info.stats
    fps = "" if info.fps is None else f"   {info.fps:5.1f} fps"
    culling = "brute force" if info.brute_force else f"tree ({info.shape})"
    lines = [
        (f"{info.scene}  {info.objects:,} objects  culling: {culling}{fps}", WHITE),
        (f"ms  query {_ms(s.query_ms)}  dist {_ms(s.distance_ms)}  frustum {_ms(s.frustum_ms)}  "
         f"upload {_ms(s.upload_ms)}  = {_ms(s.cull_ms)}   draw {_ms(s.draw_ms)}"
         + (f"   trace {_ms(s.trace_ms)}" if info.overlay else ""), WHITE),
        (f"funnel  candidates {s.candidates:,} -> in range {s.in_range:,} -> in frustum {s.in_frustum:,} "
         f"-> drawn {s.drawn:,}", WHITE),
    ]
    extras = []
    if info.scale is not None:
        extras.append(f"view scale x{info.scale:.2f}")
    if info.entered is not None:
        extras.append(f"entered {info.entered:,} left {info.left:,}")
    if info.collision is not None:
        extras.append(f"collision {'on' if info.collision else 'off'}")
    if info.speed is not None:
        extras.append(f"speed {info.speed:.0f} m/s")
    extras.append(f"fade {'on' if info.fade else 'off'}")
    if info.frozen:
        extras.append("CULLING FROZEN")
    lines.append(("   ".join(extras), YELLOW if info.frozen else GREY))
    lines.extend((note, WHITE) for note in info.notes)
    if info.overlay and info.levels:
        title = "loose bounds" if info.loose else "nodes"
        if info.only_depth is not None:
            title += f", level {info.only_depth} only"
        lines.append((f"depth   node size   nodes  objects   ({title})", GREY))
        for lv in info.levels:
            lines.append((f"{lv.depth:5d} {lv.node_size:11.1f} {lv.nodes:7d} {lv.objects:8,d}", level_colour(lv.depth)))
        total_nodes = sum(lv.nodes for lv in info.levels)
        total_objects = sum(lv.objects for lv in info.levels)
        lines.append((f"  all {'':11s} {total_nodes:7d} {total_objects:8,d}", GREY))
    if info.help:
        lines.extend((text, GREY) for text in CONTROLS_HELP)
    return lines


_FONT_CACHE: dict[int, object] = {}


def hud_font(size: int = 14):
    """A monospace TrueType font if the system has one, else Pillow's built-in font."""
    if size not in _FONT_CACHE:
        from PIL import ImageFont

        font = None
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


def draw_hud(image, lines, font_size: int = 14):
    """Paint ``lines`` (from :func:`hud_lines`) in the top-left of a Pillow RGB image.

    A translucent dark panel sits behind the text so it reads over sky and
    ground alike.  Returns the image (modified in place).
    """
    from PIL import Image, ImageDraw

    if not lines:
        return image
    font = hud_font(font_size)
    line_height = int(font_size * 1.3)
    width = max(int(ImageDraw.Draw(image).textlength(text, font=font)) for text, _ in lines) + 16
    height = line_height * len(lines) + 10
    panel = Image.new("RGBA", image.size, (0, 0, 0, 0))
    draw = ImageDraw.Draw(panel)
    draw.rectangle([0, 0, min(width, image.size[0] - 1), min(height, image.size[1] - 1)], fill=(0, 0, 0, 140))
    for row, (text, rgb) in enumerate(lines):
        colour = tuple(int(round(255 * c)) for c in rgb) + (255,)
        draw.text((8, 5 + row * line_height), text, font=font, fill=colour)
    image.paste(Image.alpha_composite(image.convert("RGBA"), panel).convert("RGB"))
    return image
