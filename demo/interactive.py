"""The interactive fly-through: :class:`demo.demo.Demo` in a pyglet window.

Only input, text and timing live here; the frame itself is ``Demo.update``
(in ``on_update``) and ``Demo.render`` (in ``on_render``).
"""

from __future__ import annotations

import sys
from pathlib import Path
from time import perf_counter

from demo.demo import SCALE_STEP, Demo, DemoError, DemoSettings
from engine.culling_pipeline import FrameStats
from engine.hud import hud_lines
from engine.window import App, WindowError
from scenes import SCENES

__all__ = ["FlyThroughApp", "run_window"]

HUD_REFRESH = 0.1          # seconds between HUD text updates (pyglet re-lays out text)


class FlyThroughApp(App):
    """Fly through a scene; the controls are in :data:`engine.hud.CONTROLS_HELP`."""

    title = "view-distance culling demo"
    window_size = (1280, 720)
    #: Base flying speed (m/s); the scroll wheel scales it, Shift multiplies it.
    move_speed = 25.0
    fast_factor = 6.0
    mouse_sensitivity = 0.12      # degrees per pixel
    hud_font = "DejaVu Sans Mono"
    hud_font_size = 10

    def __init__(self, window, ctx, settings: DemoSettings, stats: bool = False, out: Path = Path("out"),
                 save_on_exit: bool = False) -> None:
        super().__init__(window, ctx)
        self.demo = Demo(ctx, window.get_framebuffer_size(), settings)
        self.print_stats = stats
        self.out = out
        self.save_on_exit = save_on_exit
        self.show_help = True
        self.speed = self.move_speed
        self.mouse_captured = False
        self.fps = None
        self._last_render = None
        self._hud_age = HUD_REFRESH
        self._shots = 0
        self._want_shot = False
        self._build_hud()
        if stats:
            print("frame," + ",".join(FrameStats.CSV_FIELDS))

    # -- HUD with pyglet text --------------------------------------------------------
    def _build_hud(self) -> None:
        import pyglet

        self.hud_batch = pyglet.graphics.Batch()
        self._hud_back = pyglet.graphics.Group(order=0)
        self._hud_front = pyglet.graphics.Group(order=1)
        self.hud_panel = pyglet.shapes.Rectangle(0, 0, 10, 10, color=(0, 0, 0, 140),
                                                 batch=self.hud_batch, group=self._hud_back)
        self.hud_labels: list = []

    def _refresh_hud(self) -> None:
        import pyglet

        lines = hud_lines(self.demo.hud_info(fps=self.fps, speed=self.speed, help=self.show_help))
        while len(self.hud_labels) < len(lines):
            self.hud_labels.append(pyglet.text.Label("", font_name=self.hud_font, font_size=self.hud_font_size,
                                                     x=8, y=0, anchor_y="top", batch=self.hud_batch,
                                                     group=self._hud_front))
        _, height = self.window.get_size()
        line_h = int(self.hud_font_size * 1.6)
        width = 0
        for i, label in enumerate(self.hud_labels):
            text, rgb = lines[i] if i < len(lines) else ("", (1.0, 1.0, 1.0))
            if label.text != text:
                label.text = text
            label.color = tuple(int(255 * c) for c in rgb) + (255,)
            label.y = height - 6 - i * line_h
            if text:
                width = max(width, label.content_width)
        self.hud_panel.x, self.hud_panel.width = 0, width + 16
        self.hud_panel.height = line_h * len(lines) + 10
        self.hud_panel.y = height - self.hud_panel.height

    # -- frame -----------------------------------------------------------------------
    def on_update(self, dt: float) -> None:
        from pyglet.window import key

        k = self.keys
        speed = self.speed * (self.fast_factor if k[key.LSHIFT] or k[key.RSHIFT] else 1.0) * dt
        forward = (k[key.W] - k[key.S]) * speed
        right = (k[key.D] - k[key.A]) * speed
        up = (k[key.E] - k[key.Q]) * speed
        if forward or right or up:
            self.demo.fly(forward, right, up)
        self.demo.update(dt)
        self._hud_age += dt

    def on_render(self) -> None:
        import moderngl

        now = perf_counter()
        if self._last_render is not None and now > self._last_render:
            rate = 1.0 / (now - self._last_render)
            self.fps = rate if self.fps is None else 0.9 * self.fps + 0.1 * rate
        self._last_render = now
        stats = self.demo.render(self.ctx.screen)
        if self.print_stats:      # one row per drawn frame, complete: draw_ms included
            print(f"{self.frames}," + ",".join(f"{v:.4f}" if isinstance(v, float) else str(v)
                                                 for v in stats.csv_row()), flush=True)
        self.ctx.enable_only(moderngl.NOTHING)
        if self.demo.show_hud:
            if self._hud_age >= HUD_REFRESH:
                self._refresh_hud()
                self._hud_age = 0.0
            self.hud_batch.draw()
        if self._want_shot:
            self._want_shot = False
            self._save(self.out / f"screenshot_{self._shots:03d}.png")
            self._shots += 1

    def _save(self, path: Path) -> None:
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            image = self.demo.read_image(self.ctx.screen)
            # moderngl selects a colour attachment to read, which the default
            # framebuffer lacks: clear that GL error so pyglet does not trip on it.
            _ = self.ctx.error
            image.save(path)
            print(f"saved {path}", file=sys.stderr)
        except OSError as exc:
            print(f"cannot save {path}: {exc}", file=sys.stderr)

    def on_resize(self, width: int, height: int) -> None:
        self.demo.resize((width, height))
        self._hud_age = HUD_REFRESH

    def on_close(self) -> None:
        if self.save_on_exit:
            # The back buffer is undefined after a swap: draw once more, then read it.
            self.ctx.screen.use()
            self.on_render()
            self._save(self.out / "window.png")
            self.save_on_exit = False

    def close(self) -> None:
        if self.save_on_exit:
            # The back buffer is undefined after a swap: draw once more, then read it.
            self.ctx.screen.use()
            self.on_render()
            self._save(self.out / "window.png")
            self.save_on_exit = False
        super().close()

    # -- input -----------------------------------------------------------------------
    def on_key_press(self, symbol: int, modifiers: int) -> None:
        from pyglet.window import key

        demo = self.demo
        scene_keys = {getattr(key, f"_{info.key}"): name for name, info in SCENES.items()}
        if symbol == key.ESCAPE:
            self.close()
        elif symbol in scene_keys:
            demo.load_scene(scene_keys[symbol])
        elif symbol == key.F:
            demo.toggle_freeze()
        elif symbol == key.O:
            demo.show_overlay = not demo.show_overlay
        elif symbol == key.L:
            demo.show_loose = not demo.show_loose
        elif symbol == key.BRACKETLEFT:
            demo.step_level(-1)
        elif symbol == key.BRACKETRIGHT:
            demo.step_level(+1)
        elif symbol == key.T:
            demo.set_fade(not demo.fade)
        elif symbol in (key.PLUS, key.EQUAL, key.NUM_ADD):
            demo.scale_view(SCALE_STEP)
        elif symbol in (key.MINUS, key.NUM_SUBTRACT):
            demo.scale_view(1.0 / SCALE_STEP)
        elif symbol == key.C:
            demo.collide = not demo.collide
        elif symbol == key.P:
            self._want_shot = True
        elif symbol == key.H:
            self.show_help = not self.show_help
        elif symbol == key.TAB:
            self._capture(not self.mouse_captured)
        else:
            return
        self._hud_age = HUD_REFRESH

    def _capture(self, on: bool) -> None:
        self.mouse_captured = on
        self.window.set_exclusive_mouse(on)

    def on_mouse_press(self, x: int, y: int, button: int, modifiers: int) -> None:
        self._capture(not self.mouse_captured)

    def on_mouse_motion(self, x: int, y: int, dx: int, dy: int) -> None:
        if self.mouse_captured:
            self.demo.camera.look(dx * self.mouse_sensitivity, dy * self.mouse_sensitivity)

    def on_mouse_drag(self, x: int, y: int, dx: int, dy: int, buttons: int, modifiers: int) -> None:
        self.demo.camera.look(dx * self.mouse_sensitivity, dy * self.mouse_sensitivity)

    def on_mouse_scroll(self, x: int, y: int, scroll_x: float, scroll_y: float) -> None:
        self.speed = min(max(self.speed * 1.25 ** scroll_y, 1.0), 2000.0)
        self._hud_age = HUD_REFRESH


def run_window(settings: DemoSettings, size: tuple[int, int], stats: bool = False, out: Path = Path("out"),
               exit_after: float | None = None) -> int:
    """Open the demo window; returns an exit status (0 after a normal close)."""
    try:
        app = FlyThroughApp.run(size=size, exit_after=exit_after, settings=settings, stats=stats, out=out,
                                save_on_exit=exit_after is not None)
    except WindowError as exc:
        raise DemoError(f"{exc}; use --headless to render offscreen") from None
    return 0 if app.frames > 0 else 1
