"""Never a silent wait: the kernels' first-run compile and the scene build, shown as they happen.

``culling`` compiles its kernels on a program's first run on a machine
(later runs load them from numba's cache; ``pip install -e .`` ships them
compiled into the checkout, so usually there is nothing to compile).  The
demo compiles first only the kernel groups its scene's frames call
(:attr:`scenes.SceneInfo.kernels`: the forest never compiles the broad
phase or the dense grid), in worker processes, and says so at once: on
stderr when headless, as a loading screen with a progress bar and the time
so far in the window, which answers Esc, Q and its close button at once.
The other groups then compile in one background process while the demo
runs, so that switching scenes later finds them cached.  Building a large
scene shows its progress the same way (the scene's arrays, the tree batch
by batch, the renderer, the collision candidates, the warm-up of its query
paths), and the time it took.
"""

from __future__ import annotations

import atexit
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, TextIO

import culling
from culling import COMPILING, KERNEL_GROUPS, CompileWorkers

if TYPE_CHECKING:
    import moderngl
    import pyglet

__all__ = ["FIRST_RUN", "LOADING_CAPTION", "LoadingCancelled", "LoadingScreen", "await_kernels", "building", "compile_the_rest_later",
           "draw_bar", "progress_line", "warm_up_headless", "warm_up_window"]

#: ``progress(done, total, step)``: ``done`` of ``total`` steps finished, ``step`` the one just done.
Progress = Callable[[int, int, str], None]

#: What a first run says before the compile starts.
FIRST_RUN = COMPILING

#: The window's caption while a loading screen shows it; the engine sets the app's title when the app is
#: ready for input (so whoever looks for the window by its title finds it ready).
LOADING_CAPTION = "view-distance culling: loading"

#: Scenes with at least this many objects are announced while they build.
LARGE_SCENE = 100_000

_BAR = 30

#: The loading screen's font size (points), shrunk to fit a narrow window.
FONT_SIZE = 16

#: The loading screen's colours (0..1 RGB): background, bar frame, empty bar, filled bar.
BACKGROUND = (0.07, 0.08, 0.10)
FRAME = (0.45, 0.47, 0.52)
EMPTY = (0.12, 0.13, 0.16)
FILLED = (0.95, 0.78, 0.25)


def progress_line(done: int, total: int, seconds: float, step: str) -> str:
    """One line of text progress: ``  [#####.....] 3/7   1.2 s  step``."""
    filled = _BAR * done // max(total, 1)
    return f"  [{'#' * filled}{'.' * (_BAR - filled)}] {done}/{total} {seconds:5.1f} s  {step}"


class LoadingCancelled(Exception):
    """The user closed the window (Esc, Q, its close button) while it was loading."""


#: The background compile of the kernel groups the first scene did not need (one process; stopped at exit).
_LATER: list[CompileWorkers] = []


def compile_the_rest_later(groups: Sequence[str]) -> None:
    """Compile the kernel groups other than ``groups`` in one background process, if they are not cached,
    so that a later scene switch finds them cached (stopped when the demo exits)."""
    rest = [g for g in KERNEL_GROUPS if g not in groups and not culling.kernels_cached([g])]
    if rest and not _LATER:
        _LATER.append(CompileWorkers(rest, workers=1, background=True))
        atexit.register(_LATER[0].cancel)


def await_kernels(groups: Sequence[str], screen: LoadingScreen | None = None) -> None:
    """Make the kernel ``groups`` ready before a scene that calls them starts (a scene switch): wait for
    the background compile (:func:`compile_the_rest_later`) with the loading screen's bar, then load them
    (anything still missing compiles here)."""
    if not culling.kernels_cached(groups) and _LATER and _LATER[0].running:
        later, start = _LATER[0], time.perf_counter()
        while later.running and not culling.kernels_cached(groups):
            later.poll(timeout=1 / 30)
            if screen is not None:
                screen.show(f"{FIRST_RUN}: {len(later.finished)}/{later.total}, {time.perf_counter() - start:.0f} s",
                            len(later.finished) / max(later.total, 1))
    culling.warm_up(groups=groups, workers=1)


def warm_up_headless(stream: TextIO | None = None, groups: Sequence[str] = ("tree",)) -> float:
    """Compile (first run) or load the kernel ``groups``, with a message and a progress line per step on
    ``stream`` (stderr) when they compile; returns the seconds it took.  The other groups compile in the
    background (:func:`compile_the_rest_later`)."""
    stream = stream or sys.stderr
    if culling.kernels_cached(groups):
        seconds = culling.warm_up(groups=groups)
        compile_the_rest_later(groups)
        return seconds
    print(f"{FIRST_RUN} ...", file=stream, flush=True)
    start = time.perf_counter()

    def show(done: int, total: int, name: str) -> None:
        print(progress_line(done, total, time.perf_counter() - start, name), file=stream, flush=True)

    seconds = culling.warm_up(show, groups=groups)
    print(f"kernels compiled in {seconds:.1f} s (cached for the next runs)", file=stream, flush=True)
    compile_the_rest_later(groups)
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
    try:
        yield progress if large else quiet
    finally:
        if screen is not None:
            screen.close()
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

    It answers the window's events before each frame, so it must not be shown
    from inside an event handler (a key's load runs from the next update: a
    load that drew without answering them drew on a window closed meanwhile,
    and crashed in the GL driver).  While it is shown, Esc, Q and the
    window's close button cancel the loading (the next :meth:`show` raises
    :class:`LoadingCancelled`: the demo quits), and no other key is seen.
    """

    def __init__(self, window: pyglet.window.Window, ctx: moderngl.Context) -> None:
        import pyglet

        self.window, self.ctx = window, ctx
        self.cancelled = False
        self.label = pyglet.text.Label("", font_name="DejaVu Sans Mono", font_size=FONT_SIZE, anchor_x="center",
                                       anchor_y="bottom", align="center", color=(235, 235, 235, 255))
        self._handlers = {"on_key_press": self._on_key_press, "on_close": self._on_close}
        self._pushed = False

    def _on_key_press(self, symbol: int, modifiers: int) -> bool:
        from pyglet.window import key

        if symbol in (key.ESCAPE, key.Q):
            self.cancelled = True
        return True  # no other handler sees a key while loading

    def _on_close(self) -> bool:
        self.cancelled = True
        return True  # the window stays open until the loading has stopped cleanly

    def show(self, text: str, fraction: float) -> None:
        """Draw one frame of the screen with ``text`` and the bar filled to ``fraction``, and show it
        (the window's events are answered first, so it stays responsive between frames).  Raises
        :class:`LoadingCancelled` once the user has asked to quit."""
        if not self.window.visible:  # the engine shows the window once the app is ready: show it now
            self.window.set_caption(LOADING_CAPTION)
            self.window.set_visible(True)
        if not self._pushed:
            self.window.push_handlers(**self._handlers)
            self._pushed = True
        self.window.dispatch_events()
        if self.cancelled:
            self.close()
            raise LoadingCancelled("closed while loading")
        self.ctx.screen.use()
        _, _, _, bar_h = draw_bar(self.ctx, self.window.get_framebuffer_size(), fraction)
        self.label.text = text
        self.label.multiline, self.label.width = False, None
        room = int(0.95 * self.window.width)
        if self.label.content_width > room:  # a narrow window: the message wrapped, not cut at both ends
            # (a smaller font shrinks in whole pixels a glyph, not in proportion: 9.5 points are as wide as 10)
            self.label.width, self.label.multiline = room, True
        self.label.x, self.label.y = self.window.width // 2, self.window.height // 2 + 2 * bar_h
        self.label.draw()
        self.window.flip()

    def close(self) -> None:
        """Take the screen's key and close handlers off the window (the app's own take over)."""
        if self._pushed:
            self.window.remove_handlers(**self._handlers)
            self._pushed = False

    def __enter__(self) -> LoadingScreen:
        return self

    def __exit__(self, *exc: object) -> None:
        """Closed however the loading ends: a screen left on the window would take every key from then on."""
        self.close()


def warm_up_window(window: pyglet.window.Window, ctx: moderngl.Context, groups: Sequence[str] = ("tree",)) -> float:
    """Compile (first run) or load the kernel ``groups``; on a first run the window shows a loading screen
    with a progress bar and the time so far meanwhile: worker processes compile (:class:`CompileWorkers`),
    the window keeps drawing and answering its events, and Esc, Q or the close button stop the workers
    and raise :class:`LoadingCancelled` at once.  Then the kernels load into this process, and the other
    groups compile in the background (:func:`compile_the_rest_later`).  Returns the seconds it took."""
    start = time.perf_counter()
    if not culling.kernels_cached(groups):
        print(f"{FIRST_RUN} ...", file=sys.stderr, flush=True)
        screen = LoadingScreen(window, ctx)
        try:
            with CompileWorkers(groups) as workers:
                while workers.running:
                    workers.poll(timeout=1 / 30)
                    done, total = len(workers.finished), workers.total
                    latest = workers.finished[-1] if workers.finished else "starting the compiler"
                    screen.show(f"{FIRST_RUN}: {done}/{total}, {time.perf_counter() - start:.0f} s, {latest}",
                                done / max(total, 1))
            screen.show(f"{FIRST_RUN}: loading the compiled kernels", 1.0)
        finally:
            screen.close()
        print(f"kernels compiled in {time.perf_counter() - start:.1f} s (cached for the next runs)",
              file=sys.stderr, flush=True)
    culling.warm_up(groups=groups, workers=1)  # loads what the workers compiled (anything missing compiles)
    compile_the_rest_later(groups)
    return time.perf_counter() - start
