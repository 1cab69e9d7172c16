"""``run_demo.py``: flags, the choice between window and headless, and clean errors.

Every failure a user can cause or fix (a bad flag, no usable GL context, no
display) ends with one line on stderr and a non-zero exit status, never a
traceback; set ``DEMO_DEBUG=1`` to get the traceback anyway.
"""

from __future__ import annotations

import argparse
import logging
import os
import re
import signal
import sys
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import NoReturn

from engine.arguments import whole_number
from engine.files import folder_argument

__all__ = ["EXIT_ERROR", "EXIT_USAGE", "build_parser", "display_available", "main", "parse_size"]

EXIT_ERROR = 1
EXIT_USAGE = 2
PROG = "run_demo.py"
DEFAULT_FRAMES = 60

#: Where headless frames and P-key screenshots go unless --out says otherwise.
DEFAULT_OUT = Path("out")

#: Peak memory per object (bytes) of a scene with its tree, pipeline and
#: staging arrays, and the fixed cost of the process: measured as the peak RSS
#: of a 2M-object scene minus a 10k one (forest 340 B, clusters 330 B, swarm
#: 590 B: its second, aggro tree and moving copies), rounded up.  The aggro
#: scene is the swarm plus a third tree (its interest manager's) and the
#: players' sets: its peak grew 1.20x the swarm's from 10k to 300k objects
#: (1,238,896 - 304,456 KB against 1,075,204 - 297,888 KB), so 640 x 1.2 = 770, rounded up.
BYTES_PER_OBJECT = {"swarm": 640, "aggro": 800}
DEFAULT_BYTES_PER_OBJECT = 380
BASE_BYTES = 200 << 20
#: Flags that only mean something for a headless run.
HEADLESS_ONLY = ("frames", "gif", "freeze_at", "no_images", "inspect")


class _OneLineParser(argparse.ArgumentParser):
    """argparse, but a usage error is a single line (no usage dump), and a value that looks like a
    negative number is the option's value: ``--size -800x450`` is refused for its range, where argparse
    took ``-800x450`` for an option and said "expected one argument"."""

    def error(self, message: str) -> NoReturn:  # noqa: D401 - argparse API
        self.exit(EXIT_USAGE, f"{self.prog}: error: {message} (see --help)\n")

    def parse_args(self, args: Sequence[str] | None = None,  # type: ignore[override]
                   namespace: argparse.Namespace | None = None) -> argparse.Namespace:
        given = list(sys.argv[1:] if args is None else args)
        valued = {name for action in self._actions if action.nargs is None and action.option_strings
                  and not isinstance(action.const, bool) and action.type is not None for name in action.option_strings}
        joined: list[str] = []
        for token in given:
            if joined and joined[-1] in valued and len(token) > 1 and token[0] == "-" and token[1].isdigit():
                joined[-1] = f"{joined[-1]}={token}"
            else:
                joined.append(token)
        return super().parse_args(joined, namespace)


def parse_size(text: str) -> tuple[int, int]:
    """``"960x540"`` -> ``(960, 540)``; each side 16..8192.

    >>> parse_size("640x360")
    (640, 360)
    """
    parts = text.lower().split("x")
    try:
        w, h = (int(p) for p in parts)
    except ValueError:
        raise argparse.ArgumentTypeError(f"size must look like 960x540, got {text!r}") from None
    if not (16 <= w <= 8192 and 16 <= h <= 8192):
        raise argparse.ArgumentTypeError(f"size sides must be 16..8192 pixels, got {text!r}")
    return w, h


_count, _positive = whole_number(0), whole_number(1)


def _fraction(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number in [0, 1], got {text!r}") from None
    if not 0.0 <= value <= 1.0:
        raise argparse.ArgumentTypeError(f"must be in [0, 1], got {value}")
    return value


def parse_point(text: str) -> tuple[int, int, int]:
    """``"640,360"`` -> ``(640, 360, 0)``: a pixel of the frame, from its top left corner, and the frame
    it is picked on (``"640,360@12"``: frame 12; the first by default).

    >>> parse_point("640,360"), parse_point("640,360@12")
    ((640, 360, 0), (640, 360, 12))
    """
    pixel, at_sign, frame = text.partition("@")
    try:
        parts = [*pixel.split(","), *([frame] if at_sign else [])]
        if len(parts) != (3 if at_sign else 2) or not all(re.fullmatch(r"-?[0-9]+", part.strip()) for part in parts):
            raise ValueError(text)          # "1,1@" (no frame), "1_0" (int() would take it)
        x, y, at = (int(part) for part in parts) if at_sign else (*(int(part) for part in parts), 0)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a pixel as X,Y or X,Y@FRAME (e.g. 640,360 or 640,360@12), "
                                         f"got {text!r}") from None
    if x < 0 or y < 0 or at < 0:
        raise argparse.ArgumentTypeError(f"X, Y and FRAME must be >= 0, got {text!r}")
    return x, y, at


def _stats_file(text: str) -> str:
    if not text.strip():  # it said "cannot write the --stats file .: Is a directory"
        raise argparse.ArgumentTypeError("must name a file, got an empty string (--stats alone: stdout)")
    return text


def build_parser() -> argparse.ArgumentParser:
    from engine.hud import HUD_MODES
    from scenes import DEFAULT_SCENE, SCENES

    p = _OneLineParser(
        prog=PROG,
        description="Fly-through demo of view-distance culling: per-frame tree query, distance and frustum "
                    "filters, instanced drawing and a per-level debug overlay.  Opens a window when a display "
                    "is available, else renders offscreen (EGL) and writes PNG frames.",
    )
    p.add_argument("--scene", choices=list(SCENES), default=DEFAULT_SCENE, help="scene to load (default %(default)s)")
    p.add_argument("--objects", type=_count, default=None,
                   help="object count of the starting scene, also when a number key switches back to it (the "
                        "other scenes take their default: "
                        + ", ".join(f"{k} {v.default_objects:,}" for k, v in SCENES.items()) + ")")
    p.add_argument("--seed", type=_count, default=1, help="random seed of the scene, >= 0 (default %(default)s)")
    p.add_argument("--size", type=parse_size, default=None, metavar="WxH",
                   help="window or image size (default 1280x720 window, 960x540 headless)")
    p.add_argument("--frames", type=_positive, default=None,
                   help=f"headless: frames to render (default {DEFAULT_FRAMES})")
    p.add_argument("--out", type=folder_argument, default=None,
                   help=f"folder for headless PNG frames (an earlier run's extra frames removed) and P-key screenshots "
                        f"(default {DEFAULT_OUT})")
    p.add_argument("--headless", action="store_true", help="render offscreen with EGL instead of opening a window")
    p.add_argument("--no-overlay", action="store_true", help="start without the debug overlay (boxes and level table)")
    p.add_argument("--no-hud", action="store_true", help="no HUD text (same as --hud off)")
    p.add_argument("--hud", choices=HUD_MODES, default=None,
                   help="HUD at start: compact (times, funnel, mouse and a key hint, four lines in the forest, and a colour legend), full (stage table, levels, controls) or off; "
                        "H cycles it in the window (default compact)")
    p.add_argument("--no-images", action="store_true", help="headless: do not write PNGs (for timing runs)")
    p.add_argument("--gif", action="store_true", help="headless: also write an animated GIF (out/demo.gif)")
    p.add_argument("--stats", nargs="?", const="-", default=None, metavar="FILE", type=_stats_file,
                   help="one CSV row per drawn frame (stage timings, funnel, camera, toggles), flushed each frame, "
                        "on stdout or into FILE")
    p.add_argument("--shape", choices=("sphere", "cube"), default="sphere",
                   help="view regions: spheres (Euclidean) or axis-aligned cubes (default %(default)s)")
    p.add_argument("--brute-force", action="store_true",
                   help="baseline: every object is a candidate (no tree), for comparing timings")
    p.add_argument("--no-lod", action="store_true",
                   help="draw every object at full detail (no levels of detail), for comparison")
    p.add_argument("--map", action="store_true",
                   help="show the map inset: the tree's nodes around the camera from above (M in the window)")
    p.add_argument("--exit-after", type=float, default=None, help=argparse.SUPPRESS)  # window smoke tests
    p.add_argument("--freeze-at", type=_fraction, default=None, metavar="U",
                   help="headless: freeze culling at path fraction U and back the camera away to view it")
    p.add_argument("--inspect", type=parse_point, default=None, metavar="X,Y[@F]",
                   help="headless: press X at pixel X,Y (from the top left) of frame F (default 0, the first): "
                        "the object there is explained on the HUD from that frame on and in --stats' inspected "
                        "column")
    return p


def display_available() -> bool:
    """Whether a window can be tried: on Linux/BSD that needs an X display (pyglet uses Xlib)."""
    if sys.platform.startswith(("linux", "freebsd", "openbsd")):
        return bool(os.environ.get("DISPLAY"))
    return True


def _noting_interrupts() -> list[int] | None:
    """A list a SIGINT is noted in, then raised as Python's default handler does (``KeyboardInterrupt``):
    where it lands inside a C extension's import, the import fails with an ``ImportError`` instead, and
    the note tells the two apart.  None (nothing noted) off the main thread or under a program's own
    handler."""
    if threading.current_thread() is not threading.main_thread() \
            or signal.getsignal(signal.SIGINT) is not signal.default_int_handler:
        return None
    noted: list[int] = []

    def note(number: int, frame: object) -> None:
        noted.append(number)
        raise KeyboardInterrupt

    signal.signal(signal.SIGINT, note)
    return noted


def _fail(message: str, code: int = EXIT_ERROR) -> int:
    print(f"{PROG}: error: {message}", file=sys.stderr)
    return code


def available_memory() -> int | None:
    """Bytes the system can still give this process (``MemAvailable``), None if unknown."""
    try:
        with open("/proc/meminfo", encoding="ascii") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    try:
        return int(os.sysconf("SC_AVPHYS_PAGES")) * int(os.sysconf("SC_PAGE_SIZE"))
    except (AttributeError, ValueError, OSError):
        return None


def memory_estimate(scene: str, objects: int) -> int:
    """Bytes a demo of ``objects`` objects of ``scene`` needs at its peak (an estimate).

    >>> round(memory_estimate("forest", 50_000_000) / 1e9, 1)
    19.2
    """
    return BASE_BYTES + objects * BYTES_PER_OBJECT.get(scene, DEFAULT_BYTES_PER_OBJECT)


def _run(args: argparse.Namespace) -> int:
    from demo.demo import DemoSettings
    from engine.hud import counted
    from scenes import SCENES

    if args.gif and args.no_images:
        return _fail("--gif needs images: drop --no-images", EXIT_USAGE)
    if args.no_hud and args.hud not in (None, "off"):
        return _fail(f"--no-hud and --hud {args.hud} contradict each other: give one", EXIT_USAGE)
    objects = SCENES[args.scene].default_objects if args.objects is None else args.objects
    need, have = memory_estimate(args.scene, objects), available_memory()
    if have is not None and need > have:
        return _fail(f"--objects {objects:,} needs about {need / 1e9:.1f} GB of memory for the {args.scene} "
                     f"scene, only {have / 1e9:.1f} GB is available: try fewer")
    settings = DemoSettings(scene=args.scene, objects=args.objects, seed=args.seed, shape=args.shape,
                            brute_force=args.brute_force, overlay=not args.no_overlay, hud=not args.no_hud,
                            hud_mode=args.hud or "compact", lod=not args.no_lod, map=args.map)
    headless = args.headless or not display_available()
    out = DEFAULT_OUT if args.out is None else args.out
    # Refused before a word about where the images go, and before the scene is built: headless, where
    # the frames go; in a window, a folder the user named (P's screenshots; the default is made when used)
    if (headless and not args.no_images) or (not headless and args.out is not None):
        from engine.files import unwritable_folder

        problem = unwritable_folder(out)
        if problem is not None:
            return _fail(problem + (" (choose another --out, or --no-images)" if headless else " (choose another --out)"))
    if headless and not args.headless:
        where = "no images written (--no-images)" if args.no_images else f"images go to {out}/"
        print(f"{PROG}: no display (DISPLAY is not set): running headless, {where}", file=sys.stderr)
    if not headless:
        given = [f"--{name.replace('_', '-')}" for name in HEADLESS_ONLY if getattr(args, name) not in (None, False)]
        if given:
            verb = "only apply" if len(given) > 1 else "only applies"
            return _fail(f"{', '.join(given)} {verb} to a headless run: "
                         "add --headless, or drop them (the window runs until you close it)", EXIT_USAGE)
        from demo.interactive import run_window
        from demo.stats import StatsWriter

        try:  # opened before the window and the scene, as a headless run does
            stats = None if args.stats is None else StatsWriter(args.stats)
        except ValueError as exc:
            return _fail(str(exc))
        try:
            return run_window(settings, args.size or (1280, 720), stats=stats, out=out, exit_after=args.exit_after)
        finally:
            if stats is not None:
                stats.close()

    from demo.headless import HeadlessOptions, run_headless

    size = args.size or (960, 540)
    if args.inspect is not None and not (args.inspect[0] < size[0] and args.inspect[1] < size[1]):
        return _fail(f"--inspect {args.inspect[0]},{args.inspect[1]} is outside the {size[0]}x{size[1]} frame",
                     EXIT_USAGE)
    frames = args.frames or DEFAULT_FRAMES
    if args.inspect is not None and args.inspect[2] >= frames:
        return _fail(f"--inspect ...@{args.inspect[2]} is past the last frame ({frames} frames: 0 to {frames - 1})",
                     EXIT_USAGE)
    options = HeadlessOptions(settings=settings, size=size, frames=frames,
                              out=None if args.no_images else out, gif=args.gif, stats=args.stats,
                              freeze_at=args.freeze_at, inspect=args.inspect)
    result = run_headless(options)
    med = result.medians()
    if result.images:
        where = f"images in {out}/" + (f" and the animation in {result.gif}" if result.gif else "")
        if result.removed:
            where += f" ({counted(len(result.removed), 'file')} of an earlier run removed)"
    else:
        where = "no images written"
    print(f"{PROG}: ran headless on {result.renderer}: {counted(len(result.frames), 'frame')} of {args.scene}, "
          f"{where}; median ms: query {med['query_ms']:.3f}, distance {med['distance_ms']:.3f}, "
          f"frustum {med['frustum_ms']:.3f}, upload {med['upload_ms']:.3f} "
          f"(cull total {med['cull_ms']:.3f}), draw {med['draw_ms']:.1f}, triangles {med['triangles']:,.0f}",
          file=sys.stderr)
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point; returns the process exit status."""
    args = build_parser().parse_args(argv)
    logging.basicConfig(level=logging.WARNING, format=f"{PROG}: %(message)s")
    interrupts = _noting_interrupts()
    try:
        from demo.demo import DemoError
        from engine.shaders import ShaderError
    except ValueError as exc:  # a setting the library refuses on import (CULLING_THREADS): one line
        return _fail(str(exc))
    except ImportError as exc:  # the demo's extra not installed (pyglet, moderngl, pyrr): one line
        if interrupts:  # a Ctrl-C inside a C extension's import (numba's) came out as its ImportError
            return _fail("interrupted", 130)
        return _fail(f"{exc}; the demo needs its extra: pip install -e \".[demo]\"")
    except KeyboardInterrupt:  # Ctrl-C while the modules load
        return _fail("interrupted", 130)
    finally:
        if interrupts is not None:  # Python's own handler again
            signal.signal(signal.SIGINT, signal.default_int_handler)

    try:
        return _run(args)
    except (DemoError, ShaderError) as exc:
        return _fail(" | ".join(line.strip() for line in str(exc).splitlines() if line.strip()))
    except KeyboardInterrupt:
        return _fail("interrupted", 130)
    except MemoryError:
        return _fail("out of memory: try fewer --objects")
    except Exception as exc:  # last resort: one line, not a traceback
        if os.environ.get("DEMO_DEBUG"):
            raise
        text = " ".join(str(exc).split()) or "no message"
        return _fail(f"unexpected {type(exc).__name__}: {text} (set DEMO_DEBUG=1 for the traceback)")
