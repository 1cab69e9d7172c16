"""Offscreen rendering: the same demo frame on EGL, written to PNG files.

Used by ``run_demo.py --headless`` (and automatically with no display), by
the tests and to make the README screenshot.  The camera follows the scene's
scripted path; with ``freeze_at`` culling freezes part-way and the camera
backs away and up to look at the frozen query point, its frustum and the
visited nodes from outside.
"""

from __future__ import annotations

import logging
import math
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
from numpy.typing import NDArray

from demo.demo import Demo, DemoError, DemoSettings
from demo.interactive import save_image
from demo.loading import building, warm_up_headless
from demo.stats import StatsWriter
from engine.files import stale_frames, write_atomically
from engine.framebuffers import release_framebuffer
from engine.hud import GREY, STATUS_SECONDS, WHITE, YELLOW, draw_hud, hud_font_size, hud_legend, hud_lines, text_colour
from engine.map_geometry import inset_corner, label_font_size
from engine.map_label import draw_map_label
from engine.overlay import LEVEL_COLOURS, POINT_COLOUR
from scenes import SCENES

if TYPE_CHECKING:
    import moderngl
    from PIL import Image

    from engine.frame_stats import FrameStats
    from scenes import Scene

__all__ = ["HeadlessOptions", "HeadlessResult", "create_offscreen_context", "gif_palette", "headless_pose", "run_headless", "stale_outputs",
           "write_gif"]

log = logging.getLogger(__name__)

#: Simulated time per headless frame (s): the path and the swarm are deterministic.
FRAME_DT = 1.0 / 30.0


def create_offscreen_context() -> moderngl.Context:
    """A standalone OpenGL 3.3+ context on EGL (Mesa llvmpipe without a GPU).

    Raises
    ------
    DemoError
        One line saying why no context could be made.
    """
    try:
        import moderngl
    except ImportError as exc:
        raise DemoError(f"moderngl is not installed ({exc}); pip install moderngl") from None
    try:
        # The stub types every **setting as a dict; moderngl takes backend="egl" (a str).
        return moderngl.create_standalone_context(backend="egl", require=330)  # type: ignore[arg-type]
    except Exception as exc:  # moderngl raises plain Exception subclasses from glcontext
        reason = " ".join(str(exc).split()) or type(exc).__name__
        raise DemoError(f"no usable OpenGL 3.3 context on EGL for headless rendering: {reason} "
                        "(install Mesa's EGL: libegl1 libegl-mesa0 libgl1-mesa-dri)") from None


@dataclass
class HeadlessOptions:
    """What ``run_demo.py --headless`` was asked for."""

    settings: DemoSettings
    size: tuple[int, int] = (960, 540)
    frames: int = 60
    out: Path | None = Path("out")
    gif: bool = False
    stats: str | Path | None = None       # "-" for stdout, a path, or None for no CSV
    freeze_at: float | None = None
    inspect: tuple[int, int, int] | None = None   # a pixel (from the top left) and the frame X is pressed on


@dataclass
class HeadlessResult:
    """What a headless run made: per-frame stats, the files written, the GL renderer."""

    frames: list[FrameStats]       # per frame
    images: list[Path]             # written PNG paths
    gif: Path | None
    renderer: str
    removed: list[Path] = field(default_factory=list)  # an earlier run's outputs this run did not replace

    def medians(self) -> dict[str, float]:
        keys = ("query_ms", "distance_ms", "frustum_ms", "upload_ms", "cull_ms", "draw_ms", "triangles")
        return {k: float(np.median([getattr(f, k) for f in self.frames])) for k in keys}


def headless_pose(scene: Scene, u: float,
                  freeze_at: float | None) -> tuple[NDArray[np.float64], float, float, bool]:
    """Camera pose at path fraction ``u``, and whether culling is frozen there.

    Before ``freeze_at`` (or always, when None) this is the scene's path.
    After it, the camera backs away from the frozen point by up to 260 m, steps
    150 m aside and rises by up to 220 m (smoothstep), looking at a spot 150 m
    in front of the frozen point, so the frozen frustum and what it kept fill the view.
    """
    if freeze_at is None or u < freeze_at:
        pose = scene.camera_pose(u)
        return pose.position, pose.yaw, pose.pitch, False
    anchor = scene.camera_pose(freeze_at)
    s = 1.0 if freeze_at >= 1.0 else (u - freeze_at) / (1.0 - freeze_at)
    s = s * s * (3.0 - 2.0 * s)
    yaw = math.radians(anchor.yaw)
    back = -np.array([math.sin(yaw), 0.0, -math.cos(yaw)])
    side = np.array([math.cos(yaw), 0.0, math.sin(yaw)])
    pos = anchor.position + s * (260.0 * back + 150.0 * side + np.array([0.0, 220.0, 0.0]))
    d = anchor.position - 150.0 * s * back - pos
    if np.allclose(d, 0.0):
        return pos, anchor.yaw, anchor.pitch, True
    look_yaw = math.degrees(math.atan2(d[0], -d[2]))
    look_pitch = math.degrees(math.atan2(d[1], math.hypot(d[0], d[2])))
    # Blend from the path's view so the first frozen frame does not jump.
    return pos, anchor.yaw + s * (((look_yaw - anchor.yaw + 180.0) % 360.0) - 180.0), \
        anchor.pitch + s * (look_pitch - anchor.pitch), True


def gif_palette(frames: list[Image.Image], sample: int = 12) -> Image.Image:
    """One palette for a whole animation, as a Pillow "P" image to quantize every frame with.

    Its first entries are the overlay's level colours, the HUD's text
    colours and the frozen-frustum white, exactly, so boxes and HUD rows keep
    the colours the HUD's table names; the rest is a median cut of up to
    ``sample`` frames spread over the animation.  Quantizing every frame with
    it (no dithering) keeps colours from drifting frame to frame.
    """
    from PIL import Image

    fixed = [tuple(int(round(255 * c)) for c in rgb) for rgb in
             [*(tuple(c) for c in LEVEL_COLOURS), *(text_colour(c) for c in LEVEL_COLOURS), WHITE, GREY, YELLOW,
              POINT_COLOUR[:3]]]
    fixed = list(dict.fromkeys(fixed))
    picks = frames[:: max(1, len(frames) // sample)][:sample]
    w, h = picks[0].size
    montage = Image.new("RGB", (w, h * len(picks)))
    for i, frame in enumerate(picks):
        montage.paste(frame, (0, i * h))
    rest = montage.quantize(colors=256 - len(fixed), method=Image.Quantize.MEDIANCUT, dither=Image.Dither.NONE)
    palette = [v for rgb in fixed for v in rgb] + (rest.getpalette() or [])[: 3 * (256 - len(fixed))]
    palette += [0] * (768 - len(palette))
    image = Image.new("P", (1, 1))
    image.putpalette(palette)
    return image


def write_gif(frames: list[Image.Image], path: Path, frame_ms: int) -> None:
    """Write ``frames`` (Pillow RGB images) as a looping GIF with one palette."""
    from PIL import Image

    palette = gif_palette(frames)
    indexed = [f.quantize(palette=palette, dither=Image.Dither.NONE) for f in frames]
    write_atomically(path, lambda tmp: indexed[0].save(tmp, format="GIF", save_all=True, append_images=indexed[1:],
                                                       duration=frame_ms, loop=0, optimize=False))


def stale_outputs(out: Path, frames: int, gif: bool) -> list[Path]:
    """What an earlier run left in ``out`` that a run of ``frames`` frames (with or without the
    animation) does not write again: the frames past its last (:func:`engine.files.stale_frames`), and
    ``demo.gif`` where it makes none."""
    found = stale_frames(out, frames)
    if not gif and (out / "demo.gif").is_file():
        found.append(out / "demo.gif")
    return sorted(found)


def run_headless(options: HeadlessOptions, ctx: moderngl.Context | None = None) -> HeadlessResult:
    """Render ``options.frames`` frames along the scene's camera path.

    Writes ``frame_0000.png``... (and ``demo.gif``) into ``options.out`` unless
    it is None; each PNG is written to a temporary name and renamed, so an
    interrupted run (Ctrl-C) never leaves a truncated image.  Once every frame
    is written, an earlier run's frames past the last (and its ``demo.gif``,
    where this run makes none) are removed (:func:`stale_outputs`).  With
    ``options.stats`` each frame's CSV row is written and flushed as soon as
    the frame is drawn, so an interrupted run keeps the rows so far.
    """
    if options.frames < 1:
        raise ValueError(f"frames must be >= 1, got {options.frames}")
    warm_up_headless(groups=SCENES[options.settings.scene].kernels)  # says so at once when they compile
    out = options.out
    if out is not None:
        try:
            out.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise DemoError(f"cannot create output folder {out}: {exc.strerror or exc}") from None
    try:
        writer = StatsWriter(options.stats) if options.stats is not None else None
    except ValueError as exc:
        raise DemoError(str(exc)) from None
    own_ctx = ctx is None
    ctx = ctx or create_offscreen_context()
    w, h = options.size
    fbo = ctx.simple_framebuffer((w, h))
    with building(options.settings.scene, options.settings.objects) as progress:
        demo = Demo(ctx, (w, h), options.settings, progress)
    hud_mode = options.settings.hud_mode if options.settings.hud else "off"
    frames: list[FrameStats] = []
    images: list[Path] = []
    gif_frames: list[Image.Image] = []
    gif_path = None
    said, said_until = "", -1  # X's answer and the last frame it is on screen: STATUS_SECONDS, as in the window
    try:
        for i in range(options.frames):
            u = i / (options.frames - 1) if options.frames > 1 else 0.0
            pos, yaw, pitch, frozen = headless_pose(demo.scene, u, options.freeze_at)
            if frozen and demo.frozen is None and options.freeze_at is not None:
                demo.set_pose(*headless_pose(demo.scene, options.freeze_at, None)[:3])
                demo.toggle_freeze()
            demo.set_pose(pos, yaw, pitch)
            demo.update(FRAME_DT)
            inspect = options.inspect
            pressed = inspect is not None and i == inspect[2]
            if inspect is not None and pressed:  # X, as in the window: the object at that pixel
                x, y, _ = inspect
                said = demo.inspect_at(((x + 0.5) / w * 2.0 - 1.0, 1.0 - (y + 0.5) / h * 2.0),
                                       f"pixel {x},{y}")
                said_until = i + round(STATUS_SECONDS / FRAME_DT) - 1
                print(f"run_demo.py: {said}", file=sys.stderr)
            status = said if i <= said_until else ""
            stats = demo.render(fbo)
            frames.append(stats)
            if writer is not None:
                writer.write(i, stats, dict(demo.state(), captured=False, hud=hud_mode, status=status))
            if out is not None or options.gif:
                image = demo.read_image(fbo)
                if hud_mode != "off" or status:
                    info = demo.hud_info(help=False)
                    info.status = status
                    lines = hud_lines(info, hud_mode)
                    chars = max((len(text) for text, _ in lines), default=0)
                    corner = inset_corner((w, h)) if demo.show_map else None  # the map's, kept clear
                    draw_hud(image, lines, font_size=hud_font_size(h, w, chars),
                             legend=hud_legend(info, hud_mode), keep_clear=corner)
                if demo.show_map and demo.map_inset.geometry is not None:
                    draw_map_label(image, demo.map_inset.geometry, font_size=label_font_size((w, h)))
                if out is not None:
                    path = out / f"frame_{i:04d}.png"
                    save_image(image, path)
                    images.append(path)
                if options.gif:
                    gif_frames.append(image)
        if options.gif and gif_frames and out is not None:
            gif_path = out / "demo.gif"
            write_gif(gif_frames, gif_path, int(1000 * FRAME_DT * 2))
        removed = stale_outputs(out, options.frames, options.gif) if out is not None else []
        for path in removed:
            path.unlink(missing_ok=True)
        renderer = ctx.info.get("GL_RENDERER", "unknown")
    finally:
        if writer is not None:
            writer.close()
        demo.release()
        release_framebuffer(fbo)
        if own_ctx:
            ctx.release()
    return HeadlessResult(frames, images, gif_path, renderer, removed)
