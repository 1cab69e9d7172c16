"""Never a silent wait: the kernels' first-run compile and the scene build, shown as they happen.

``culling`` compiles its kernels on a program's first run on a machine (a
few seconds; later runs load them from numba's cache).  The demo warms them
up before anything else and says so at once: on stderr when headless, as a
loading screen with a progress bar in the window.  Building a large scene
is announced too, with the time it took.
"""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, TextIO

import culling

if TYPE_CHECKING:
    import moderngl
    import pyglet

__all__ = ["FIRST_RUN", "building", "warm_up_headless", "warm_up_window"]

#: What a first run says before the compile starts.
FIRST_RUN = "compiling kernels (first run only)"

#: Scenes with at least this many objects are announced while they build.
LARGE_SCENE = 100_000

_BAR = 30


def warm_up_headless(stream: TextIO | None = None) -> float:
    """Compile (first run) or load the kernels, with a message and a progress line per step on ``stream``
    (stderr) when they compile; returns the seconds it took."""
    stream = stream or sys.stderr
    if culling.kernels_cached():
        return culling.warm_up()
    print(f"{FIRST_RUN} ...", file=stream, flush=True)
    start = time.perf_counter()

    def show(done: int, total: int, name: str) -> None:
        filled = _BAR * done // total
        print(f"  [{'#' * filled}{'.' * (_BAR - filled)}] {done}/{total} {time.perf_counter() - start:5.1f} s  {name}",
              file=stream, flush=True)

    seconds = culling.warm_up(show)
    print(f"kernels compiled in {seconds:.1f} s (cached for the next runs)", file=stream, flush=True)
    return seconds


@contextmanager
def building(scene: str, objects: int | None, stream: TextIO | None = None) -> Iterator[None]:
    """Announce the build of a large scene (``objects`` None: the scene's default) and its time on ``stream``."""
    stream = stream or sys.stderr
    from scenes import SCENES

    count = SCENES[scene].default_objects if objects is None else objects
    large = count >= LARGE_SCENE
    if large:
        print(f"building the {scene} scene ({count:,} objects) ...", file=stream, flush=True)
    start = time.perf_counter()
    yield
    if large:
        print(f"built the {scene} scene in {time.perf_counter() - start:.1f} s", file=stream, flush=True)


def _draw_loading(window: pyglet.window.Window, ctx: moderngl.Context, label: pyglet.text.Label,
                  fraction: float) -> None:
    """One frame of the loading screen: a dark screen, the message and a bar filled to ``fraction``."""
    width, height = window.get_framebuffer_size()
    ctx.screen.use()
    ctx.scissor = None
    ctx.clear(0.07, 0.08, 0.10)
    bar_w, bar_h = width * 2 // 3, max(8, height // 40)
    x, y = (width - bar_w) // 2, height // 2 - bar_h
    ctx.scissor = (x - 2, y - 2, bar_w + 4, bar_h + 4)
    ctx.clear(0.45, 0.47, 0.52)
    ctx.scissor = (x, y, bar_w, bar_h)
    ctx.clear(0.12, 0.13, 0.16)
    ctx.scissor = (x, y, max(0, int(bar_w * fraction)), bar_h)
    ctx.clear(0.95, 0.78, 0.25)
    ctx.scissor = None
    label.x, label.y = window.width // 2, window.height // 2 + 2 * bar_h
    label.draw()


def warm_up_window(window: pyglet.window.Window, ctx: moderngl.Context) -> float:
    """Compile (first run) or load the kernels; on a first run the window shows a loading screen with a
    progress bar meanwhile (the compile runs on a thread, the window keeps drawing and answering its
    events).  Returns the seconds it took."""
    if culling.kernels_cached():
        return culling.warm_up()
    import pyglet

    counts = {"done": 0, "total": 1}
    step = [""]
    seconds = [0.0]
    failed: list[BaseException] = []

    def progress(done: int, total: int, name: str) -> None:
        counts.update(done=done, total=total)
        step[0] = name

    def work() -> None:
        try:
            seconds[0] = culling.warm_up(progress)
        except BaseException as exc:  # noqa: BLE001 - raised again on the main thread
            failed.append(exc)

    label = pyglet.text.Label(FIRST_RUN, font_name="DejaVu Sans Mono", font_size=16, anchor_x="center",
                              anchor_y="bottom", color=(235, 235, 235, 255))
    print(f"{FIRST_RUN} ...", file=sys.stderr, flush=True)
    thread = threading.Thread(target=work, name="culling-warm-up", daemon=True)
    thread.start()
    while thread.is_alive():
        window.dispatch_events()
        done, total = counts["done"], counts["total"]
        label.text = f"{FIRST_RUN}: {done}/{total} {step[0]}"
        _draw_loading(window, ctx, label, done / total)
        window.flip()
        thread.join(1 / 30)
    if failed:
        raise failed[0]
    return seconds[0]
