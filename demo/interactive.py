"""The interactive fly-through: :class:`demo.demo.Demo` in a pyglet window.

Only input, text and timing live here; the frame itself is ``Demo.update``
(in ``on_update``) and ``Demo.render`` (in ``on_render``).

The mouse has one model.  A click (press and release without moving) or Tab
*captures* the mouse: the cursor hides and every movement looks around.  Tab
or Esc *releases* it.  Dragging with a button held looks around without
capturing and leaves the mouse as it was.  Esc with the mouse free quits
(so from captured, Esc twice: release, then quit).  The HUD says which state
the mouse is in and how to leave it.
"""

from __future__ import annotations

import functools
import logging
import sys
from collections.abc import Callable
from pathlib import Path
from time import perf_counter
from typing import TYPE_CHECKING, Any

from demo.demo import Demo, DemoError, DemoSettings
from demo.loading import LoadingCancelled, LoadingScreen, await_kernels, building, warm_up_window
from demo.stats import StatsWriter
from engine.files import unwritable_folder, write_atomically
from engine.hud import (
    HUD_MODES,
    STATUS_SECONDS,
    fit_lines,
    hud_font_size,
    hud_legend,
    hud_lines,
    rows_clear_of,
    text_colour,
)
from engine.stepped import Stepped
from engine.window import App, WindowError
from engine.zoom import zoom_scale
from scenes import SCENES

if TYPE_CHECKING:
    import moderngl
    import pyglet.text
    import pyglet.window
    from PIL import Image

    from engine.frame_stats import FrameStats

__all__ = ["FlyThroughApp", "next_free_path", "run_window", "save_image"]

log = logging.getLogger(__name__)

HUD_REFRESH = 0.1          # seconds between HUD text updates (pyglet re-lays out text)
MOUSE_CAPTURED = "mouse captured: moving looks around; Tab or Esc releases"
MOUSE_FREE = "mouse free: click or Tab captures, drag looks; Esc quits"
#: What a drag (a button held while the mouse moves, not captured) says: it looks, the mouse stays free.
DRAGGING = "drag: looking around, the mouse stays free"
#: Typed characters that scale every view distance, and by how many steps.  ``+`` is read
#: from the typed text: after the first Shift+= press, X servers (Xvfb included) deliver
#: further presses with a key symbol pyglet does not map to ``key.PLUS``, only the text.
SCALE_TEXT = {"+": 1, "=": 1, "-": -1}


def next_free_path(folder: Path, stem: str, suffix: str = ".png") -> Path:
    """``folder/stem_NNN.suffix`` with the lowest NNN not yet taken (never overwrites).

    Cost: one ``exists`` per taken number from the highest already there.
    """
    taken = [int(p.stem[len(stem) + 1:]) for p in folder.glob(f"{stem}_*{suffix}")
             if p.stem[len(stem) + 1:].isdigit()] if folder.is_dir() else []
    n = max(taken, default=-1) + 1
    while (folder / f"{stem}_{n:03d}{suffix}").exists():
        n += 1
    return folder / f"{stem}_{n:03d}{suffix}"


def cannot_save(path: Path, folder: Path, error: OSError) -> str:
    """Why ``path`` in the ``--out`` ``folder`` could not be written, in the words of the start-up
    check (``--out out is not a folder``) when the folder is the reason: a bare OS error such as
    "File exists" would not say that a file has taken the folder's place."""
    problem = unwritable_folder(folder)
    return f"cannot save {path}: {problem or error.strerror or error}"


def save_image(image: Image.Image, path: Path) -> None:
    """Write a Pillow image to ``path`` atomically (:func:`engine.files.write_atomically`): an
    interrupted write never leaves a truncated PNG."""
    write_atomically(path, lambda tmp: image.save(tmp, format=(path.suffix.lstrip(".") or "png").upper()))


class FlyThroughApp(App):
    """Fly through a scene; the controls are in :data:`engine.hud.CONTROLS_HELP`."""

    title = "view-distance culling demo"
    window_size = (1280, 720)
    #: Base flying speed (m/s); the scroll wheel scales it, Shift multiplies it.
    move_speed = 25.0
    fast_factor = 6.0
    #: One scroll-wheel notch multiplies the speed by this, and the speed stays within this many
    #: notches of the base: 25 / 1.25 ** 14 = 1.1 m/s (a walk among the grass) to 25 * 1.25 ** 20
    #: = 2168 m/s (the forest's 4 km in two seconds).  Whole notches: the base is always reachable.
    wheel_step = 1.25
    speed_steps = (-14, 20)
    mouse_sensitivity = 0.12      # degrees per pixel
    hud_font = "DejaVu Sans Mono"

    def __init__(self, window: pyglet.window.Window, ctx: moderngl.Context, settings: DemoSettings,
                 stats: str | Path | StatsWriter | None = None,
                 out: Path = Path("out"), save_on_exit: bool = False) -> None:
        super().__init__(window, ctx)
        warm_up_window(window, ctx, SCENES[settings.scene].kernels)  # a loading screen while they compile
        with building(settings.scene, settings.objects, screen=LoadingScreen(window, ctx)) as progress:
            self.demo = Demo(ctx, window.get_framebuffer_size(), settings, progress)
        # a writer the caller opened (run_demo.py: before the window, so a bad path costs no wait), or a path
        self.stats_writer = stats if isinstance(stats, StatsWriter) or stats is None else StatsWriter(stats)
        self.out = out
        self.save_on_exit = save_on_exit
        self.hud_mode = settings.hud_mode if settings.hud else "off"
        self.flying_speed = Stepped(self.move_speed, self.wheel_step, self.speed_steps)
        self._wheel_rest = 0.0           # a fraction of a notch (a touchpad's), kept for the next scroll
        self.mouse_captured = False
        self.fps: float | None = None
        self._last_render: float | None = None
        self._hud_age = HUD_REFRESH
        self._want_shot = False
        self._pressed_at: tuple[int, int] | None = None
        self._cursor: tuple[int, int] | None = None     # the free mouse's last place (window points)
        self._dragged = False
        self._scaled_by_key = False     # this press's on_text must not scale a second time
        #: A load a key asked for (a scene, the interest kernels), run by the next :meth:`on_update`.
        self._deferred: Callable[[], None] | None = None
        self._after_load = False        # the next update's dt spans the load: nothing moves across it
        #: The last key's or action's answer, shown on screen until ``status_until``.
        self.status = ""
        self.status_until = 0.0
        self._build_hud()

    @property
    def speed(self) -> float:
        """The flying speed (m/s) without Shift: the wheel's notches on :attr:`move_speed`."""
        return self.flying_speed.value

    # -- HUD with pyglet text --------------------------------------------------------
    def _build_hud(self) -> None:
        import pyglet

        self.hud_batch = pyglet.graphics.Batch()
        self._hud_back = pyglet.graphics.Group(order=0)
        self._hud_front = pyglet.graphics.Group(order=1)
        self.hud_panel = pyglet.shapes.Rectangle(0, 0, 10, 10, color=(0, 0, 0, 200),
                                                 batch=self.hud_batch, group=self._hud_back)
        self.hud_labels: list[pyglet.text.Label] = []
        self.legend_items: list[tuple[pyglet.shapes.Rectangle, pyglet.text.Label]] = []
        self._hud_font_size = 0
        # The map's scale-bar label (the map itself is drawn with GL by the demo).
        self.map_label = pyglet.text.Label("", font_name=self.hud_font, font_size=9, x=0, y=0, anchor_y="bottom",
                                           color=(255, 255, 255, 255))
        self._right_held = False

    def _refresh_hud(self) -> None:
        import pyglet

        mouse = MOUSE_CAPTURED if self.mouse_captured else MOUSE_FREE
        info = self.demo.hud_info(fps=self.fps, speed=self.speed, help=True, mouse=mouse)
        info.status = self.current_status()
        lines = hud_lines(info, self.hud_mode)
        legend_rows = hud_legend(info, self.hud_mode)
        width, height = self.window.get_size()
        chars = max((len(text) for text, _ in lines), default=0)
        size = hud_font_size(height, width, -(-chars // 8) * 8)     # rounded: no flicker as digits change
        if size != self._hud_font_size:            # scaled to the window: rebuild labels
            for label in self.hud_labels:
                label.delete()
            for swatch, label in self.legend_items:
                swatch.delete()
                label.delete()
            self.hud_labels, self.legend_items = [], []
            self._hud_font_size = size
        while len(self.hud_labels) < len(lines):
            self.hud_labels.append(pyglet.text.Label("", font_name=self.hud_font, font_size=size * 0.75,
                                                     x=6, y=0, anchor_y="top", batch=self.hud_batch,
                                                     group=self._hud_front))
        line_h = int(size * 1.3)
        rows = (height - 8) // line_h                       # what the window's height holds
        width_used = self._lay_out_hud(lines, legend_rows, rows, size, line_h)
        corner = self._map_corner() if self.demo.show_map else None
        clear = rows_clear_of(corner, width_used, line_h, rows, 8)
        if clear < rows:                                    # the panel reached over the map: stop above it
            self._lay_out_hud(lines, legend_rows, clear, size, line_h)

    def _map_corner(self) -> tuple[float, float]:
        """The map inset's top-left corner in the window's coordinates (origin top-left)."""
        from engine.map_geometry import inset_corner

        fb_w, fb_h = self.demo.size  # the inset is laid out in the frame's pixels
        w, h = self.window.get_size()
        x, top = inset_corner((fb_w, fb_h))
        return x * w / max(fb_w, 1), top * h / max(fb_h, 1)

    def _lay_out_hud(self, all_lines: list[tuple[str, tuple[float, float, float]]],
                     legend_rows: list[list[tuple[str, tuple[float, float, float]]]], rows: int, size: int,
                     line_h: int) -> int:
        """Place the HUD's labels, legend and panel (font ``size``, rows ``line_h`` apart): ``all_lines`` cut
        to ``rows`` less the legend's (:func:`engine.hud.fit_lines`).  Returns the panel's width in pixels."""
        import pyglet

        width, height = self.window.get_size()
        legend = [(r, item) for r, row in enumerate(legend_rows) for item in row]
        lines = fit_lines(all_lines, rows - len(legend_rows))
        text_width = 0
        for i, label in enumerate(self.hud_labels):
            text, rgb = lines[i] if i < len(lines) else ("", (1.0, 1.0, 1.0))
            if label.text != text:
                label.text = text
            r, g, b = (int(255 * c) for c in rgb)
            label.color = (r, g, b, 255)
            label.y = height - 4 - i * line_h
            if text:
                text_width = max(text_width, label.content_width)
        # Legend rows: the scene's colours; in the compact HUD also each level's colour and node size.
        while len(self.legend_items) < len(legend):
            self.legend_items.append((
                pyglet.shapes.Rectangle(0, 0, 1, 1, color=(255, 255, 255, 255), batch=self.hud_batch,
                                        group=self._hud_front),
                pyglet.text.Label("", font_name=self.hud_font, font_size=size * 0.75, x=0, y=0, anchor_y="top",
                                  batch=self.hud_batch, group=self._hud_front)))
        swatch_px = max(6, size * 2 // 3)
        x, row_now = 6, 0
        for i, (swatch, label) in enumerate(self.legend_items):
            shown = i < len(legend)
            swatch.visible = shown
            row, (text, rgb) = legend[i] if shown else (0, ("", (1.0, 1.0, 1.0)))
            if label.text != text:
                label.text = text
            if not shown:
                continue
            if row != row_now:
                text_width, x, row_now = max(text_width, x), 6, row
            y = height - 4 - (len(lines) + row) * line_h
            swatch.x, swatch.y = x, y - (line_h + swatch_px) // 2
            swatch.width = swatch.height = swatch_px
            r, g, b = (int(255 * c) for c in rgb)
            swatch.color = (r, g, b, 255)
            r, g, b = (int(255 * c) for c in text_colour(rgb))
            label.color = (r, g, b, 255)
            label.x, label.y = x + swatch_px + 3, y
            x = label.x + label.content_width + size // 2
        if legend:
            text_width = max(text_width, x)
        rows = len(lines) + len(legend_rows)
        self.hud_panel.x, self.hud_panel.width = 0, min(text_width + 12, width)
        self.hud_panel.height = line_h * rows + 8
        self.hud_panel.y = height - self.hud_panel.height
        self.hud_panel.visible = bool(lines) or bool(legend)
        return int(self.hud_panel.width)

    # -- frame -----------------------------------------------------------------------
    def on_update(self, dt: float) -> None:
        from pyglet.window import key

        deferred, self._deferred = self._deferred, None
        if deferred is not None:
            deferred()
        if deferred is not None or self._after_load:  # this frame's dt, or the next one's, spans the load
            dt = 0.0
        self._after_load = deferred is not None
        k = self.keys
        speed = self.speed * (self.fast_factor if k[key.LSHIFT] or k[key.RSHIFT] else 1.0) * dt
        forward = (k[key.W] - k[key.S]) * speed
        right = (k[key.D] - k[key.A]) * speed
        up = (k[key.E] - k[key.Q]) * speed
        if forward or right or up:
            self.demo.fly(forward, right, up)
        self.demo.set_zoom(bool(k[key.Z]) or self._right_held)
        self.demo.update(dt)
        self._hud_age += dt
        self._scaled_by_key = False

    def on_render(self) -> None:
        now = perf_counter()
        if self._last_render is not None and now > self._last_render:
            rate = 1.0 / (now - self._last_render)
            self.fps = rate if self.fps is None else 0.9 * self.fps + 0.1 * rate
        self._last_render = now
        stats = self._draw()
        if self.stats_writer is not None:     # one row per drawn frame, complete: draw_ms included
            self.stats_writer.write(self.frames, stats, self.state())
        if self._want_shot:                   # read before the swap: the frame just drawn
            self._want_shot = False
            self._save(next_free_path(self.out, "screenshot"))

    def _draw(self) -> FrameStats:
        """The scene, the overlay and the HUD into the window's framebuffer."""
        import moderngl

        stats = self.demo.render(self.ctx.screen)
        self.ctx.enable_only(moderngl.NOTHING)
        if self.hud_mode != "off" or self.current_status():
            if self._hud_age >= HUD_REFRESH:
                self._refresh_hud()
                self._hud_age = 0.0
            self.hud_batch.draw()
        geometry = self.demo.map_inset.geometry
        if self.demo.show_map and geometry is not None:
            from engine.map_geometry import label_font_size, label_position

            fb_w, fb_h = self.demo.size  # the inset's frame as drawn (ctx.screen keeps the size at creation)
            w, h = self.window.get_size()
            px, py = label_position(geometry, (fb_w, fb_h))
            self.map_label.text = geometry.label
            points = label_font_size((fb_w, fb_h)) * 0.75 * h / max(fb_h, 1)  # pixels of the frame to points
            if self.map_label.font_size != points:  # a new size lays the label out again: only when it changes
                self.map_label.font_size = points
            self.map_label.x, self.map_label.y = px * w / max(fb_w, 1), (fb_h - py) * h / max(fb_h, 1) + 4
            self.map_label.draw()
        return stats

    def state(self) -> dict[str, Any]:
        """The demo's state plus the window's: mouse capture, HUD mode, flying speed."""
        return dict(self.demo.state(), captured=self.mouse_captured, hud=self.hud_mode, speed=self.speed,
                    status=self.current_status())

    def say(self, text: str) -> None:
        """Show ``text`` on screen for :data:`STATUS_SECONDS` (every HUD mode, off included)."""
        self.status, self.status_until = text, perf_counter() + STATUS_SECONDS
        self._hud_age = HUD_REFRESH

    def current_status(self) -> str:
        """The status line while it lives, else ``""``."""
        return self.status if perf_counter() < self.status_until else ""

    def _save(self, path: Path) -> None:
        try:
            image = self.demo.read_image(self.ctx.screen)
            # moderngl selects a colour attachment to read, which the default
            # framebuffer lacks: clear that GL error so pyglet does not trip on it.
            _ = self.ctx.error
            save_image(image, path)
            print(f"saved {path}", file=sys.stderr)
            self.say(f"P: saved {path}")
        except OSError as exc:
            reason = cannot_save(path, self.out, exc)
            print(reason, file=sys.stderr)
            self.say(f"P: {reason}")

    def _final_shot(self) -> None:
        """Save the last frame on close: drawn afresh and read before any swap
        (after a swap the back buffer's content is undefined)."""
        if self.save_on_exit:
            self.save_on_exit = False
            self.ctx.screen.use()
            self._draw()
            self._save(self.out / "window.png")

    def on_resize(self, width: int, height: int) -> None:
        self.demo.resize((width, height))
        self._hud_age = HUD_REFRESH

    def on_close(self) -> None:
        self._final_shot()
        if self.stats_writer is not None:
            self.stats_writer.close()

    def close(self) -> None:
        self._final_shot()
        if self.stats_writer is not None:
            self.stats_writer.close()
        super().close()

    # -- input -----------------------------------------------------------------------
    def on_key_press(self, symbol: int, modifiers: int) -> bool:
        from pyglet.window import key

        demo = self.demo
        scene_keys = {getattr(key, f"_{info.key}"): name for name, info in SCENES.items()}
        scene_keys.update({getattr(key, f"NUM_{info.key}"): name for name, info in SCENES.items()})
        on_off = {True: "on", False: "off"}
        if symbol == key.ESCAPE:
            if self.mouse_captured:
                self._capture(False)          # Esc releases first, quits second
            else:
                self.close()
        elif symbol in scene_keys:
            self._deferred = functools.partial(self._switch_scene, scene_keys[symbol])
        elif symbol == key.F:
            demo.toggle_freeze()
            self.say("F: culling frozen: fly away to look at the query point and frustum"
                     if demo.frozen is not None else "F: culling follows the camera again")
        elif symbol == key.O:
            self.say(demo.toggle_overlay())
        elif symbol == key.L:
            self.say(demo.toggle_loose())
        elif symbol in (key.BRACKETLEFT, key.BRACKETRIGHT):
            name = "[" if symbol == key.BRACKETLEFT else "]"
            if not demo.show_overlay:  # the levels stepped are the overlay's: nothing would change on screen
                self.say(f"{name}: steps the overlay's levels: O turns the overlay on first")
            elif demo.tree is None:
                self.say(f"{name}: brute force visits no nodes: no levels to step")
            else:
                demo.step_level(-1 if symbol == key.BRACKETLEFT else +1)
                self.say(f"{name}: all levels" if demo.only_depth is None
                         else f"{name}: level {demo.only_depth} only")
        elif symbol == key.T:
            demo.set_fade(not demo.fade)
            self.say("T: dithered fade on" if demo.fade
                     else f"T: fade off: objects pop{', levels switch hard' if demo.lod else ''}")
        elif symbol == key.M:
            self.say(demo.toggle_map())
        elif symbol == key.G:
            demo.lod = not demo.lod
            self.say("G: levels of detail on" if demo.lod else "G: levels of detail off: full detail everywhere")
        elif symbol == key.Z:
            self.say(f"Z: zoom x{zoom_scale(demo.zoom.base_fov, demo.zoom.zoomed_fov):.1f} while held")
        elif symbol in (key.PLUS, key.EQUAL, key.NUM_ADD):
            self.say(demo.step_scale(1))
            self._scaled_by_key = True
        elif symbol in (key.MINUS, key.NUM_SUBTRACT):
            self.say(demo.step_scale(-1))
            self._scaled_by_key = True
        elif symbol in (key.I, key.N):
            answer = (demo.toggle_interest if symbol == key.I
                      else functools.partial(demo.follow_next, -1 if modifiers & key.MOD_SHIFT else 1))
            if demo.scene.has_players and not demo.scene.interest_on:     # its kernels, before the first tick
                self._deferred = functools.partial(self._with_kernels, ("interest",), answer)
            else:
                self.say(answer())
        elif symbol == key.C:
            demo.set_collision(not demo.collide)
            self.say(f"C: camera collision {on_off[demo.collide]}"
                     + ("" if demo.collide else " (the ground still holds the camera)"))
        elif symbol == key.X:
            self.say(self._explain())
        elif symbol == key.P:
            self._want_shot = True
        elif symbol == key.H:
            self.hud_mode = HUD_MODES[(HUD_MODES.index(self.hud_mode) + 1) % len(HUD_MODES)]
            self.say(f"H: HUD {self.hud_mode}" + (" (H brings it back)" if self.hud_mode == "off" else ""))
        elif symbol == key.TAB:
            self._capture(not self.mouse_captured)
        else:
            return False
        self._hud_age = HUD_REFRESH
        return True

    def on_text(self, text: str) -> bool:
        """``+``, ``=`` and ``-`` as typed: counts a press whose key symbol was not recognised."""
        if text not in SCALE_TEXT:
            return False
        if self._scaled_by_key:               # on_key_press already counted this press
            self._scaled_by_key = False
        else:
            self.say(self.demo.step_scale(SCALE_TEXT[text]))
        return True

    def _explain(self) -> str:
        """The X key: pick the object under the free mouse's cursor, or at the screen's centre while the
        mouse is captured (it looks where the camera looks) or while the pointer has not yet been over the
        window (pyglet knows the cursor from its enter and motion events only), and have the HUD explain it
        (:meth:`Demo.inspect_at`)."""
        width, height = self.window.get_size()
        if self.mouse_captured or self._cursor is None:
            return self.demo.inspect_at((0.0, 0.0), "the centre of the view")
        x, y = self._cursor
        return self.demo.inspect_at((2.0 * x / max(width, 1) - 1.0, 2.0 * y / max(height, 1) - 1.0))

    def _capture(self, on: bool) -> None:
        self.mouse_captured = on
        self.window.set_exclusive_mouse(on)
        self.say(MOUSE_CAPTURED if on else MOUSE_FREE)

    def on_key_release(self, symbol: int, modifiers: int) -> bool:
        from pyglet.window import key

        status = self.current_status()  # its answer said "while held"; another answer since (a scene switch) ended
        if symbol == key.Z and (status.startswith("Z: zoom") or not status):
            self.say("Z: zoom off")
        return False

    def on_mouse_press(self, x: int, y: int, button: int, modifiers: int) -> bool:
        from pyglet.window import mouse

        if button == mouse.RIGHT:             # held: zoom (see on_update); never captures
            self._right_held = True
            zoom = self.demo.zoom
            self.say(f"right mouse: zoom x{zoom_scale(zoom.base_fov, zoom.zoomed_fov):.1f} while held")
            return True
        self._pressed_at, self._dragged = (x, y), False
        return True

    def on_mouse_release(self, x: int, y: int, button: int, modifiers: int) -> bool:
        from pyglet.window import mouse

        if button == mouse.RIGHT:
            self._right_held = False
            status = self.current_status()
            if status.startswith("right mouse: zoom") or not status:  # as Z's release says it
                self.say("right mouse: zoom off")
            return True
        # A click (no drag in between) captures; a drag leaves the mouse as it was.
        if self._pressed_at is not None and not self._dragged and not self.mouse_captured:
            self._capture(True)
        self._pressed_at = None
        return True

    def on_mouse_enter(self, x: int, y: int) -> bool:
        self._cursor = (x, y)                         # a window opened under a still pointer: X picks there
        return True

    def on_mouse_motion(self, x: int, y: int, dx: int, dy: int) -> bool:
        self._cursor = (x, y)
        if self.mouse_captured:
            self._look(dx, dy)
        return True

    def _look(self, dx: int, dy: int) -> None:
        """Turn the camera by a mouse move of ``(dx, dy)`` pixels: :attr:`mouse_sensitivity` degrees a pixel,
        divided by the zoom's magnification, so that a pixel turns the zoomed view as far on screen as it
        turns the unzoomed one (0.12 degrees a pixel swung a 15-degree view by a tenth of itself)."""
        per_pixel = self.mouse_sensitivity / self.demo.zoom.scale
        self.demo.camera.look(dx * per_pixel, dy * per_pixel)

    def _switch_scene(self, name: str) -> None:
        """Load scene ``name`` behind the loading screen.  Run by :meth:`on_update`, not in the key's event
        handler: the screen answers the window's events between its frames, so closing the window (or Esc,
        Q) cancels the load, as at start-up, where a load inside the handler drew on a destroyed window
        (a crash in the GL driver)."""
        with LoadingScreen(self.window, self.ctx) as screen:
            await_kernels(SCENES[name].kernels, screen)
            with building(name, self.demo.objects_for(name), screen=screen) as progress:
                self.demo.load_scene(name, progress=progress)
        self.say(f"{SCENES[name].key}: {self.demo.scene.name}, {len(self.demo.scene):,} objects")

    def _with_kernels(self, groups: tuple[str, ...], answer: Callable[[], str]) -> None:
        """Make the kernel ``groups`` ready (behind the loading screen while they compile), then say ``answer()``."""
        with LoadingScreen(self.window, self.ctx) as screen:
            await_kernels(groups, screen)
        self.say(answer())

    def on_mouse_drag(self, x: int, y: int, dx: int, dy: int, buttons: int, modifiers: int) -> bool:
        self._cursor = (x, y)
        if dx or dy:
            if not self._dragged and self._pressed_at is not None:   # once a drag, not per motion
                self.say(DRAGGING)
            self._dragged = True
            self._look(dx, dy)
        return True

    def on_mouse_scroll(self, x: int, y: int, scroll_x: float, scroll_y: float) -> bool:
        self._wheel_rest += scroll_y
        notches = int(self._wheel_rest)          # whole notches (X sends whole ones; a touchpad fractions)
        self._wheel_rest -= notches
        self.flying_speed.move(notches)
        limit = " (the limit)" if self.flying_speed.at_limit else ""
        speed = f"{self.speed:.1f}" if self.speed < 10.0 else f"{self.speed:.0f}"  # 1.1 m/s at the bottom, not 1
        self.say(f"wheel: flying speed {speed} m/s{limit} (Shift: x{self.fast_factor:.0f})")
        return True


def run_window(settings: DemoSettings, size: tuple[int, int], stats: str | Path | StatsWriter | None = None,
               out: Path = Path("out"), exit_after: float | None = None) -> int:
    """Open the demo window; returns an exit status (0 after a normal close)."""
    try:
        app = FlyThroughApp.run(size=size, exit_after=exit_after, settings=settings, stats=stats, out=out,
                                save_on_exit=exit_after is not None)
    except WindowError as exc:
        raise DemoError(f"{exc}; use --headless to render offscreen") from None
    except LoadingCancelled:
        print("run_demo.py: closed while loading", file=sys.stderr)
        return 0
    return 0 if app.frames > 0 else 1
