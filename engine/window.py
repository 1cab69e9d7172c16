"""A small application base class: pyglet owns the window, moderngl draws in it.

Subclass :class:`App`, set its class attributes, override the hooks.  A
frame runs every ``update_rate`` seconds: ``on_update`` then ``on_render``,
then the buffers swap.

* ``on_update(dt)``: simulation and culling (no GPU object), once per frame;
* ``on_render()``: drawing only, right after it (the window's framebuffer is bound);
* ``on_resize(width, height)``: the framebuffer changed size;
* input hooks with pyglet's signatures (``on_key_press``, ``on_mouse_motion``...).

``App.run()`` opens the window, makes a moderngl context on pyglet's GL
context and runs pyglet's event loop; nothing happens at import time, so
this module imports fine on a machine without a display.

Example (not run by doctest: it opens a window)::

    class Spin(App):
        title = "spin"

        def on_update(self, dt):
            self.angle += dt

        def on_render(self):
            self.ctx.clear(0.1, 0.1, 0.1)

    Spin.run()
"""

from __future__ import annotations

import logging
import os
import sys
from collections.abc import Callable
from time import perf_counter
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import moderngl
    import pyglet.window

__all__ = ["App", "WindowError"]

log = logging.getLogger(__name__)


class WindowError(RuntimeError):
    """The window or its OpenGL context could not be created; one line."""


def _reason(exc: BaseException) -> str:
    """One line for a pyglet failure; an X connection failure names $DISPLAY
    (pyglet itself says 'Cannot connect to "None"' when it used the default)."""
    reason = " ".join(str(exc).split()) or type(exc).__name__
    if "Cannot connect to" in reason:
        display = os.environ.get("DISPLAY", "")
        reason = f"cannot connect to X display {display!r} (is an X server running there?)"
    return reason


def _handled(method: Callable[..., bool | None]) -> Callable[..., bool | None]:
    """Wrap an app hook for pyglet: a True result becomes ``EVENT_HANDLED``."""
    import pyglet

    def handler(*args: Any) -> bool | None:
        return pyglet.event.EVENT_HANDLED if method(*args) else None

    return handler


def _window_class() -> type[pyglet.window.Window]:
    """pyglet's window class; on X11 one that also closes when the window is destroyed from outside.

    pyglet answers the window manager's close message (WM_DELETE_WINDOW) with
    ``on_close``, but has no handler for X's DestroyNotify: a window destroyed
    by another client (``xdotool windowclose``, a crashed window manager) would
    leave the event loop drawing into nothing.  A platform event handler on a
    subclass is pyglet's own hook for X events (``XlibEventHandler``).
    """
    import pyglet.window

    platform_window: type[pyglet.window.Window] = pyglet.window.Window
    if "pyglet.window.xlib" not in sys.modules:     # imported by pyglet.window on X11 only
        return platform_window
    from pyglet.libs.x11 import xlib
    from pyglet.window.xlib import XlibEventHandler, XlibWindow

    if not issubclass(platform_window, XlibWindow):
        return platform_window

    class DestroyClosingWindow(XlibWindow):
        @XlibEventHandler(xlib.DestroyNotify)
        def _event_destroynotify(self, event: Any) -> None:
            # X unmaps a window before destroying it (UnmapNotify came first), so pyglet's close()
            # that follows waits for nothing; its requests on the gone window fail quietly
            # (pyglet's X error handler ignores errors).
            if event.xdestroywindow.window == self._window:
                self.dispatch_event("on_close")

    return DestroyClosingWindow


class App:
    """Base class for a windowed moderngl application driven by pyglet.

    Class attributes are the settings; instances get ``window`` (the pyglet
    window), ``ctx`` (moderngl context) and ``keys`` (pyglet's
    ``KeyStateHandler``: ``keys[key.W]`` is True while W is held).
    """

    #: Window caption.
    title = "moderngl + pyglet"
    #: Initial client size in pixels.
    window_size = (1280, 720)
    resizable = True
    vsync = False
    #: OpenGL core profile version requested.
    gl_version = (3, 3)
    #: Depth buffer bits; 24 is universally available.
    depth_size = 24
    #: How often a frame (``on_update`` then ``on_render``) runs (s); 1/60 caps the loop at 60 Hz.
    update_rate = 1.0 / 60.0
    #: pyglet input events forwarded to the methods of the same name.  A handler
    #: that returns True consumes the event (pyglet's defaults do not run: the
    #: window's own Esc-closes-the-window, for one).
    input_events = ("on_key_press", "on_key_release", "on_text", "on_mouse_motion", "on_mouse_drag",
                    "on_mouse_press", "on_mouse_release", "on_mouse_scroll", "on_mouse_enter")

    def __init__(self, window: pyglet.window.Window, ctx: moderngl.Context, **kwargs: Any) -> None:
        self.window = window
        self.ctx = ctx
        self.keys: Any = None           # pyglet.window.key.KeyStateHandler once running
        self.frames = 0
        #: True once the window is closing: no more frames are drawn.
        self.closed = False
        #: True while the window is unmapped (minimised, on another workspace): frames update but are
        #: not drawn, so a hidden window spends no time on drawing nobody sees.
        self.hidden = False

    # -- hooks --------------------------------------------------------------------
    def on_update(self, dt: float) -> None:
        """Simulation (and culling) for ``dt`` seconds."""

    def on_render(self) -> None:
        """Draw the frame (the window's framebuffer is bound)."""

    def on_resize(self, width: int, height: int) -> None:
        """The window's framebuffer is now ``width`` x ``height`` pixels."""

    def on_key_press(self, symbol: int, modifiers: int) -> bool | None:
        return None

    def on_text(self, text: str) -> bool | None:
        """Typed text (after the keyboard layout and Shift); pyglet sends it after ``on_key_press``."""
        return None

    def on_key_release(self, symbol: int, modifiers: int) -> bool | None:
        return None

    def on_mouse_motion(self, x: int, y: int, dx: int, dy: int) -> bool | None:
        return None

    def on_mouse_drag(self, x: int, y: int, dx: int, dy: int, buttons: int, modifiers: int) -> bool | None:
        return None

    def on_mouse_press(self, x: int, y: int, button: int, modifiers: int) -> bool | None:
        return None

    def on_mouse_release(self, x: int, y: int, button: int, modifiers: int) -> bool | None:
        return None

    def on_mouse_scroll(self, x: int, y: int, scroll_x: float, scroll_y: float) -> bool | None:
        return None

    def on_mouse_enter(self, x: int, y: int) -> bool | None:
        """The pointer came into the window, or the window opened under it: where it is, before any motion."""
        return None

    def on_close(self) -> None:
        pass

    def close(self) -> None:
        """Leave the event loop (after the current frame)."""
        import pyglet

        self.closed = True
        self.window.close()
        pyglet.app.exit()

    # -- running ------------------------------------------------------------------
    @classmethod
    def create_window(cls, size: tuple[int, int] | None = None) -> pyglet.window.Window:
        """Open the pyglet window with a core-profile context; ``WindowError`` if impossible."""
        import pyglet

        pyglet.options["shadow_window"] = False      # no hidden window at import
        pyglet.options["debug_gl"] = False           # per-call glGetError costs ~2x in Python
        try:
            import pyglet.window
        except Exception as exc:
            raise WindowError(f"pyglet cannot use the display: {_reason(exc)}") from None
        width, height = size or cls.window_size
        major, minor = cls.gl_version
        # pyglet binds gl.Config to the platform's concrete class at import; mypy
        # follows the branch for pyglet's doc build, the abstract base class.
        config = pyglet.gl.Config(major_version=major, minor_version=minor,  # type: ignore[abstract]
                                  forward_compatible=True, double_buffer=True, depth_size=cls.depth_size)
        try:
            # Hidden until the app is built (run() shows it): a window on screen answers its keys.
            return _window_class()(width=width, height=height, caption=cls.title, resizable=cls.resizable,
                                        vsync=cls.vsync, config=config, visible=False)
        except Exception as exc:
            raise WindowError(f"cannot open an OpenGL {major}.{minor} window: {_reason(exc)}") from None

    @classmethod
    def run(cls, size: tuple[int, int] | None = None, exit_after: float | None = None, **kwargs: Any) -> App:
        """Open the window, build the app, run the event loop until it closes.

        Parameters
        ----------
        size : (width, height), optional
            Overrides :attr:`window_size`.
        exit_after : float, optional
            Close the window after this many seconds (smoke tests under Xvfb).
        **kwargs
            Passed to the subclass constructor.

        Returns
        -------
        App
            The finished app (``frames`` says how many frames were drawn).
        """
        import moderngl
        import pyglet

        window = cls.create_window(size)
        try:
            ctx = moderngl.create_context(require=cls.gl_version[0] * 100 + cls.gl_version[1] * 10)
        except Exception as exc:
            window.close()
            raise WindowError(f"moderngl cannot use the window's OpenGL context: {exc}") from None
        app = cls(window, ctx, **kwargs)
        window.set_caption(cls.title)      # a loading screen may have shown the window under its own caption
        window.set_visible(True)           # only now: the scene is loaded and every key is handled
        # Input: the app's handlers in one frame, pyglet's key-state handler in a
        # frame above it.  KeyStateHandler returns nothing, so every key event
        # reaches both; setting the app's key handlers into the key-state
        # frame instead (window.set_handler) would replace its entries and
        # leave ``keys`` forever empty.
        window.push_handlers(**{name: _handled(getattr(app, name)) for name in cls.input_events})
        app.keys = pyglet.window.key.KeyStateHandler()
        window.push_handlers(app.keys)

        def on_draw() -> None:
            ctx.screen.use()
            app.on_render()
            app.frames += 1

        def on_resize(width: int, height: int) -> None:
            fw, fh = window.get_framebuffer_size()
            ctx.screen.viewport = (0, 0, max(fw, 1), max(fh, 1))
            app.on_resize(max(fw, 1), max(fh, 1))

        def on_close() -> None:
            app.on_close()
            app.closed = True
            pyglet.app.exit()

        def on_hide() -> None:
            app.hidden = True

        def on_show() -> None:
            app.hidden = False

        # What ``@window.event`` does (set_handler on the top frame), minus its untyped decorator.
        for handler in (on_draw, on_resize, on_close, on_hide, on_show):
            window.set_handler(handler.__name__, handler)

        last = [perf_counter()]

        def frame(_dt: float) -> None:
            # One frame = one update, then one draw: on_update always runs
            # before the on_render that shows it, and each drawn frame follows
            # exactly one update (pyglet's own redraw timer would run apart).
            if app.closed:
                return
            now = perf_counter()
            dt, last[0] = now - last[0], now
            app.on_update(dt)
            if not app.closed and not app.hidden:
                window.draw(dt)

        pyglet.clock.schedule_interval(frame, cls.update_rate)
        if exit_after is not None:
            pyglet.clock.schedule_once(lambda _dt: app.close(), exit_after)
        try:
            pyglet.app.run(None)
        finally:
            pyglet.clock.unschedule(frame)
        log.info("window closed after %d frames", app.frames)
        return app

