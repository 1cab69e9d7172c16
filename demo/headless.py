"""Offscreen rendering: the same demo frame on EGL, written to PNG files.

Used by ``run_demo.py --headless`` (and automatically with no display), by
the tests and to make the README screenshot.  The camera follows the scene's
scripted path; with ``freeze_at`` culling freezes part-way and the camera
backs away and up to look at the frozen query point, its frustum and the
visited nodes from outside.
"""

from __future__ import annotations

import csv
import io
import logging
import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from demo.demo import Demo, DemoError, DemoSettings
from engine.hud import draw_hud, hud_lines

__all__ = ["HeadlessOptions", "HeadlessResult", "create_offscreen_context", "headless_pose", "run_headless"]

log = logging.getLogger(__name__)

#: Simulated time per headless frame (s): the path and the swarm are deterministic.
FRAME_DT = 1.0 / 30.0


def create_offscreen_context():
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
        return moderngl.create_standalone_context(backend="egl", require=330)
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
    stats: bool = False
    freeze_at: float | None = None


@dataclass
class HeadlessResult:
    frames: list           # FrameStats per frame
    images: list           # written PNG paths
    gif: Path | None
    csv_text: str
    renderer: str

    def medians(self) -> dict[str, float]:
        keys = ("query_ms", "distance_ms", "frustum_ms", "upload_ms", "cull_ms", "draw_ms")
        return {k: float(np.median([getattr(f, k) for f in self.frames])) for k in keys}


def headless_pose(scene, u: float, freeze_at: float | None):
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


def run_headless(options: HeadlessOptions, ctx=None) -> HeadlessResult:
    """Render ``options.frames`` frames along the scene's camera path.

    Writes ``frame_0000.png``... (and ``demo.gif``) into ``options.out`` unless
    it is None.  Returns the per-frame stats and the CSV text of them.
    """
    own_ctx = ctx is None
    ctx = ctx or create_offscreen_context()
    w, h = options.size
    fbo = ctx.simple_framebuffer((w, h))
    demo = Demo(ctx, (w, h), options.settings)
    out = options.out
    if out is not None:
        try:
            out.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise DemoError(f"cannot create output folder {out}: {exc.strerror or exc}") from None
    frames, images, gif_frames = [], [], []
    try:
        for i in range(options.frames):
            u = i / (options.frames - 1) if options.frames > 1 else 0.0
            pos, yaw, pitch, frozen = headless_pose(demo.scene, u, options.freeze_at)
            if frozen and demo.frozen is None:
                demo.set_pose(*headless_pose(demo.scene, options.freeze_at, None)[:3])
                demo.toggle_freeze()
            demo.set_pose(pos, yaw, pitch)
            stats = demo.update(FRAME_DT)
            demo.render(fbo)
            frames.append(stats)
            if out is not None or options.gif:
                image = demo.read_image(fbo)
                if demo.show_hud:
                    draw_hud(image, hud_lines(demo.hud_info(help=False)), font_size=max(11, h // 50))
                if out is not None:
                    path = out / f"frame_{i:04d}.png"
                    image.save(path)
                    images.append(path)
                if options.gif:
                    gif_frames.append(image)
        gif_path = None
        if options.gif and gif_frames and out is not None:
            gif_path = out / "demo.gif"
            gif_frames[0].save(gif_path, save_all=True, append_images=gif_frames[1:],
                               duration=int(1000 * FRAME_DT * 2), loop=0, optimize=False)
        renderer = ctx.info.get("GL_RENDERER", "unknown")
    finally:
        demo.release()
        fbo.release()
        if own_ctx:
            ctx.release()
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow(("frame",) + type(frames[0]).CSV_FIELDS if frames else ("frame",))
    for i, f in enumerate(frames):
        writer.writerow([i] + [round(v, 4) if isinstance(v, float) else v for v in f.csv_row()])
    return HeadlessResult(frames, images, gif_path, buf.getvalue(), renderer)
