"""Never a silent wait: the kernels' first-run compile and the scene build, shown as they happen.

``culling`` compiles its kernels on a program's first run on a machine (a
few seconds; later runs load them from numba's cache).  The demo warms them
up before anything else and says so at once: on stderr when headless, as a
loading screen with a progress bar in the window.  Building a large scene
shows its progress the same way (the scene's arrays, the view-distance tree
batch by batch, the renderer, the collision candidates, the warm-up of its
query paths), and the time it took.
"""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, TextIO

import culling

if TYPE_CHECKING:
    import moderngl
    import pyglet

__all__ = ["FIRST_RUN", "LOADING_CAPTION", "LoadingScreen", "building", "draw_bar", "progress_line", "warm_up_headless",
           "warm_up_window"]

#: ``progress(done, total, step)``: ``done`` of ``total`` steps finished, ``step`` the one just done.
Progress = Callable[[int, int, str], None]

#: What a first run says before the compile starts.
FIRST_RUN = "compiling kernels (first run only)"

#: The window's caption while a loading screen shows it; the engine sets the app's title when the app is
#: ready for input (so whoever looks for the window by its title finds it ready).
LOADING_CAPTION = "view-distance culling: loading"

#: Scenes with at least this many objects are announced while they build.
LARGE_SCENE = 100_000

_BAR = 30

#: The loading screen's colours (0..1 RGB): background, bar frame, empty bar, filled bar.
BACKGROUND = (0.07, 0.08, 0.10)
FRAME = (0.45, 0.47, 0.52)
EMPTY = (0.12, 0.13, 0.16)
FILLED = (0.95, 0.78, 0.25)


def progress_line(done: int, total: int, seconds: float, step: str) -> str:
    """One line of text progress: ``  [#####.....] 3/7   1.2 s  step``."""
    filled = _BAR * done // max(total, 1)
    return f"  [{'#' * filled}{'.' * (_BAR - filled)}] {done}/{total} {seconds:5.1f} s  {step}"


def warm_up_headless(stream: TextIO | None = None) -> float:
    """Compile (first run) or load the kernels, with a message and a progress line per step on ``stream``
    (stderr) when they compile; returns the seconds it took."""
    stream = stream or sys.stderr
    if culling.kernels_cached():
        return culling.warm_up()
    print(f"{FIRST_RUN} ...", file=stream, flush=True)
    start = time.perf_counter()

    def show(done: int, total: int, name: str) -> None:
        print(progress_line(done, total, time.perf_counter() - start, name), file=stream, flush=True)

    seconds = culling.warm_up(show)
    print(f"kernels compiled in {seconds:.1f} s (cached for the next runs)", file=stream, flush=True)
    return seconds


@contextmanager
def building(scene: str, objects: int | None, stream: TextIO | None = None,
             screen: LoadingScreen | None = None) -> Iterator[Progress]:
    """Show the build of a large scene (``objects`` None: the scene's default): yields the ``progress``
    callback to hand to :class:`demo.demo.Demo` (a no-op for small scenes).

    A large scene (at least :data:`LARGE_SCENE` objects) is announced on
    ``stream`` (stderr) at once, each step is a progress line there and, with
    ``screen``, a frame of the loading screen; the time it took is said at the end.
    """
    stream = stream or sys.stderr
    from scenes import SCENES

    count = SCENES[scene].default_objects if objects is None else objects
    title = f"building the {scene} scene ({count:,} objects)"
    start = time.perf_counter()

    def progress(done: int, total: int, step: str) -> None:
        print(progress_line(done, total, time.perf_counter() - start, step), file=stream, flush=True)
        if screen is not None:
            screen.show(f"{title}: {step}", done / max(total, 1))

    def quiet(done: int, total: int, step: str) -> None:
        return None

    large = count >= LARGE_SCENE
    if large:
        print(f"{title} ...", file=stream, flush=True)
        if screen is not None:
            screen.show(title, 0.0)
    yield progress if large else quiet
    if large:
        print(f"built the {scene} scene in {time.perf_counter() - start:.1f} s", file=stream, flush=True)


def draw_bar(ctx: moderngl.Context, size: tuple[int, int], fraction: float) -> tuple[int, int, int, int]:
    """Clear the bound framebuffer (``size``: its pixels) to the loading screen: a dark screen and a
    progress bar filled to ``fraction`` (0..1).  Returns the bar's ``(x, y, width, height)`` in
    pixels (GL's origin: bottom left)."""
    width, height = size
    fraction = min(max(fraction, 0.0), 1.0)
    ctx.scissor = None
    ctx.clear(*BACKGROUND)
    bar_w, bar_h = width * 2 // 3, max(8, height // 40)
    x, y = (width - bar_w) // 2, height // 2 - bar_h
    ctx.scissor = (x - 2, y - 2, bar_w + 4, bar_h + 4)
    ctx.clear(*FRAME)
    ctx.scissor = (x, y, bar_w, bar_h)
    ctx.clear(*EMPTY)
    ctx.scissor = (x, y, max(0, int(bar_w * fraction)), bar_h)
    ctx.clear(*FILLED)
    ctx.scissor = None
    return x, y, bar_w, bar_h


class LoadingScreen:
    """The window's loading screen: a message above a progress bar, drawn at once by :meth:`show`.

    ``events``: answer the window's events before each frame (False inside an
    event handler, which must not dispatch events again).
    """

    def __init__(self, window: pyglet.window.Window, ctx: moderngl.Context, events: bool = True) -> None:
        import pyglet

        self.window, self.ctx, self.events = window, ctx, events
        self.label = pyglet.text.Label("", font_name="DejaVu Sans Mono", font_size=16, anchor_x="center",
                                       anchor_y="bottom", color=(235, 235, 235, 255))

    def show(self, text: str, fraction: float) -> None:
        """Draw one frame of the screen with ``text`` and the bar filled to ``fraction``, and show it
        (the window's events are answered first, so it stays responsive between frames)."""
        if not self.window.visible:  # the engine shows the window once the app is ready: show it now
            self.window.set_caption(LOADING_CAPTION)
            self.window.set_visible(True)
        if self.events:
            self.window.dispatch_events()
        self.ctx.screen.use()
        _, _, _, bar_h = draw_bar(self.ctx, self.window.get_framebuffer_size(), fraction)
        self.label.text = text
        self.label.x, self.label.y = self.window.width // 2, self.window.height // 2 + 2 * bar_h
        self.label.draw()
        self.window.flip()


def warm_up_window(window: pyglet.window.Window, ctx: moderngl.Context) -> float:
    """Compile (first run) or load the kernels; on a first run the window shows a loading screen with a
    progress bar meanwhile (the compile runs on a thread, the window keeps drawing and answering its
    events).  Returns the seconds it took."""
    if culling.kernels_cached():
        return culling.warm_up()
    counts = {"done": 0, "total": 0}  # total 0: no step has reported yet (its count comes with the first report)
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

    print(f"{FIRST_RUN} ...", file=sys.stderr, flush=True)
    screen = LoadingScreen(window, ctx)
    thread = threading.Thread(target=work, name="culling-warm-up", daemon=True)
    thread.start()
    while thread.is_alive():
        done, total = counts["done"], counts["total"]
        screen.show(f"{FIRST_RUN}: {done}/{total} {step[0]}" if total else f"{FIRST_RUN} ...", done / max(total, 1))
        thread.join(1 / 30)
    if failed:
        raise failed[0]
    return seconds[0]
