"""The real demo window, driven the way a person drives it: real X input events.

``tests/demo_window.py`` starts its own Xvfb and ``run_demo.py`` as a user would, with
``--stats FILE`` so the demo reports, per drawn frame, its camera, mouse capture
and toggles, and drives it with ``xdotool``.  Each test checks an effect: the
camera moved, the picture changed (screen grabs with ImageMagick's ``import``),
the capture state follows the model, each toggle of docs/DEMO.md's controls
table did what it says and said so.

One demo process serves every test (they run in file order and build on
each other's state), so the whole module takes well under a minute.
"""

from __future__ import annotations

import math
import time

import numpy as np
import pytest
from demo_window import DemoWindow
from PIL import Image

from demo.interactive import FlyThroughApp
from engine.camera import CAMERA_RADIUS, Camera
from engine.inspection import pick, screen_ray
from scenes import build_scene

SIZE = (480, 270)
OBJECTS = 6000

pytestmark = pytest.mark.window


@pytest.fixture(scope="module")
def session(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("window")
    with DemoWindow.started(tmp, ["--objects", str(OBJECTS), "--size", f"{SIZE[0]}x{SIZE[1]}"]) as demo:
        yield demo


def _position(row: dict) -> np.ndarray:
    return np.array([float(row["x"]), float(row["y"]), float(row["z"])])


def _changed(a: np.ndarray, b: np.ndarray) -> float:
    """Share of pixels that changed by more than a little."""
    return float(np.mean(np.abs(a - b).max(axis=-1) > 24))


def test_rows_are_one_per_drawn_frame_with_real_draw_times(session):
    session.settle(5)
    rows = session.rows()
    frames = [int(r["frame"]) for r in rows]
    assert frames == list(range(frames[0], frames[0] + len(frames)))      # never repeated, none skipped
    assert all(float(r["draw_ms"]) > 0.0 for r in rows)
    assert rows[-1]["scene"] == "forest" and rows[-1]["captured"] == "0" and rows[-1]["hud"] == "compact"


def test_hold_w_then_d_moves_the_camera_and_changes_the_picture(session):
    before, picture = session.settle(), session.grab()
    session.hold("w", 0.6)
    after_w = session.settle()
    forward = _position(after_w) - _position(before)
    yaw = math.radians(float(before["yaw"]))
    ahead = np.array([math.sin(yaw), 0.0, -math.cos(yaw)])
    assert forward @ ahead > 3.0, (forward, ahead)                          # W flies forward
    session.hold("d", 0.6)
    after_d = session.settle()
    sideways = _position(after_d) - _position(after_w)
    right = np.array([math.cos(yaw), 0.0, math.sin(yaw)])
    assert sideways @ right > 3.0, (sideways, right)                        # D flies right
    assert _changed(picture, session.grab()) > 0.05


def test_s_a_q_e_and_shift_fly_the_other_ways(session):
    yaw = math.radians(float(session.last()["yaw"]))
    ahead = np.array([math.sin(yaw), 0.0, -math.cos(yaw)])
    right = np.array([math.cos(yaw), 0.0, math.sin(yaw)])
    moves = {}
    for key in ("s", "a", "e", "q"):
        start = session.settle()
        session.hold(key, 0.5)
        moves[key] = _position(session.settle()) - _position(start)
    assert moves["s"] @ ahead < -3.0 and moves["a"] @ right < -3.0
    assert moves["e"][1] > 3.0 and moves["q"][1] < -3.0
    start = session.settle()
    session.hold("shift+e", 0.5)
    fast = _position(session.settle()) - _position(start)
    assert fast[1] > 2.0 * moves["e"][1]                                    # Shift: six times the speed


def test_scroll_wheel_changes_the_flying_speed(session):
    speed = float(session.settle()["speed"])
    session.xdo("click", "--repeat", "2", "4")                             # wheel up, two notches
    row = session.settle()
    faster = float(row["speed"])
    assert faster == pytest.approx(speed * 1.25 ** 2, rel=1e-3)
    assert row["status"].startswith(f"wheel: flying speed {faster:.0f} m/s")
    session.xdo("click", "--repeat", "2", "5")
    assert float(session.settle()["speed"]) == pytest.approx(speed, rel=1e-3)


def test_the_wheel_stops_at_its_limit_and_comes_back_to_the_base_speed(session):
    """The speed is always the base times a whole power of the notch: past the top limit, as many
    notches down as it took to get there give the base speed again, and the status line says the limit."""
    app = FlyThroughApp
    top_notches = app.speed_steps[1]
    top = app.move_speed * app.wheel_step ** top_notches
    assert float(session.settle()["speed"]) == app.move_speed
    session.xdo("click", "--repeat", str(top_notches + 3), "--delay", "10", "4")       # 3 notches past it
    session.wait(lambda r: float(r["speed"]) == pytest.approx(top, rel=1e-6), "the top speed")
    row = session.settle()
    assert float(row["speed"]) == pytest.approx(top, rel=1e-6)
    assert row["status"] == f"wheel: flying speed {top:.0f} m/s (the limit) (Shift: x{app.fast_factor:.0f})"
    session.xdo("click", "--repeat", str(top_notches), "--delay", "10", "5")
    session.wait(lambda r: "(the limit)" not in r["status"], "the first notch down")
    row = session.settle()
    assert float(row["speed"]) == app.move_speed, row["speed"]
    assert row["status"].startswith(f"wheel: flying speed {app.move_speed:.0f} m/s (Shift")


def test_drag_looks_around_and_leaves_the_mouse_free(session):
    before = session.settle()
    session.xdo("mousemove", "--window", session.window, "200", "130")
    session.xdo("mousedown", "1")
    for _ in range(5):
        session.xdo("mousemove_relative", "--", "15", "0")
        time.sleep(0.03)
    session.xdo("mouseup", "1")
    after = session.settle()
    turned = (float(after["yaw"]) - float(before["yaw"])) % 360.0
    assert 3.0 < turned < 180.0, (before["yaw"], after["yaw"])              # right drag turns right
    assert after["captured"] == "0" and after["status"] == "drag: looking around, the mouse stays free"


def _dragged_yaw(session, step: int = 15) -> float:
    """Degrees a drag of 5 x ``step`` pixels to the right turns the camera (negative: to the left)."""
    before = session.settle()
    session.xdo("mousemove", "--window", session.window, "240", "130")
    session.xdo("mousedown", "1")
    for _ in range(5):
        session.xdo("mousemove_relative", "--", str(step), "0")
        time.sleep(0.03)
    session.xdo("mouseup", "1")
    return (float(session.settle()["yaw"]) - float(before["yaw"]) + 180.0) % 360.0 - 180.0


def test_a_drag_while_zoomed_turns_the_view_as_far_on_screen(session):
    """With Z held the view is 4.4 times narrower, and the same drag turns it 4.4 times less.  The drags
    are undone after (the tests after this one look where the session looked)."""
    yaw = float(session.settle()["yaw"])
    plain = _dragged_yaw(session)
    session.xdo("keydown", "z")
    try:
        session.wait(lambda r: float(r["zoom"]) > 4.3, "Z to zoom in")
        zoomed = _dragged_yaw(session)
        _dragged_yaw(session, -15)
    finally:
        session.xdo("keyup", "z")
    session.wait(lambda r: float(r["zoom"]) == 1.0, "the zoom to ease back")
    _dragged_yaw(session, -15)
    assert 3.0 < plain < 90.0 and zoomed > 0.0
    assert plain / zoomed == pytest.approx(4.385, rel=0.05), (plain, zoomed)
    assert float(session.settle()["yaw"]) == pytest.approx(yaw, abs=0.5)


def test_click_and_tab_capture_tab_and_esc_release(session):
    session.xdo("mousemove", "--window", session.window, "240", "135")
    session.xdo("click", "1")
    row = session.wait(lambda r: r["captured"] == "1", "a click to capture the mouse")
    yaw = float(row["yaw"])
    for _ in range(4):                      # captured: plain motion looks (the first event after the
        session.xdo("mousemove_relative", "--", "15", "0")     # grab only re-enters the window)
        time.sleep(0.03)
    session.wait(lambda r: abs(float(r["yaw"]) - yaw) > 1.0, "mouse motion to turn the captured camera")
    assert session.press("Tab")["captured"] == "0"
    assert session.press("Tab")["captured"] == "1"
    assert session.press("Escape")["captured"] == "0"                       # Esc releases first...
    assert session.proc.poll() is None                                      # ...and does not quit


@pytest.mark.parametrize("key, column, first, second, said", [
    ("f", "frozen", "1", "0", ("F: culling frozen", "F: culling follows")),
    ("l", "loose", "1", "0", ("L: the grown (loose) boxes", "L: the nodes' own boxes")),
    ("t", "fade", "0", "1", ("T: fade off", "T: dithered fade on")),
    ("c", "collide", "0", "1", ("C: camera collision off", "C: camera collision on")),
    ("g", "lod", "0", "1", ("G: levels of detail off", "G: levels of detail on")),
    ("m", "map", "1", "0", ("M: map on", "M: map off")),
])
def test_each_switch_toggles_and_says_so_on_screen(session, key, column, first, second, said):
    row = session.press(key)
    assert row[column] == first and row["status"].startswith(said[0])
    row = session.press(key)
    assert row[column] == second and row["status"].startswith(said[1])


def test_freeze_keeps_the_query_while_the_camera_flies_away(session):
    frozen = session.press("f")
    assert frozen["frozen"] == "1"
    drawn = int(frozen["drawn"])
    session.hold("s", 0.8)
    away = session.settle()
    assert np.linalg.norm(_position(away) - _position(frozen)) > 3.0
    assert int(away["drawn"]) == drawn and int(away["boxes"]) > int(frozen["boxes"]) - 1
    assert session.press("f")["frozen"] == "0"


def test_overlay_key_removes_and_restores_the_boxes(session):
    with_boxes = session.settle()
    assert with_boxes["overlay"] == "1" and int(with_boxes["boxes"]) > 0
    picture = session.grab()
    off = session.press("o")
    assert off["overlay"] == "0" and off["boxes"] == "0"
    assert _changed(picture, session.grab()) > 0.002                         # the boxes' lines are gone
    on = session.press("o")
    assert on["overlay"] == "1" and int(on["boxes"]) > 0


def test_level_keys_step_through_single_levels(session):
    first = session.press("bracketright")
    assert first["level"] == "0" and int(first["boxes"]) == 1               # the root alone
    assert first["status"] == "]: level 0 only"
    assert session.press("bracketright")["level"] == "1"
    assert session.press("bracketleft")["level"] == "0"
    assert session.press("bracketleft")["level"] == ""                      # past the end: all levels


def test_level_keys_with_the_overlay_off_say_to_turn_it_on(session):
    assert session.press("o")["overlay"] == "0"
    hint = session.press("bracketright")
    assert hint["level"] == "" and hint["status"] == "]: steps the overlay's levels: O turns the overlay on first"
    assert session.press("o")["overlay"] == "1"
    assert session.press("bracketright")["level"] == "0"                    # on again: the keys step
    assert session.press("bracketleft")["level"] == ""


def test_every_press_of_plus_equal_keypad_plus_and_minus_scales(session):
    """Shift+= ("plus") counts every time, not only the first (X sends later presses
    with a key symbol pyglet does not map; the typed "+" still arrives)."""
    presses = ["plus", "plus", "plus", "equal", "KP_Add", "minus", "minus", "KP_Subtract", "minus", "minus"]
    steps = [1, 1, 1, 1, 1, -1, -1, -1, -1, -1]
    power = 0
    for key, step in zip(presses, steps):
        power += step
        row = session.press(key)
        assert float(row["scale"]) == pytest.approx(1.25 ** power, rel=1e-4), (key, power, row["scale"])
        assert row["status"] == f"{'+' if step > 0 else '-'}: every view distance x{1.25 ** power:.2f}"
    assert power == 0


def test_the_status_line_answers_with_the_hud_off(session):
    """Every key answers on screen, in every HUD mode: with the HUD off only the status line shows."""
    assert session.press("h")["hud"] == "full"
    row = session.press("h")
    assert row["hud"] == "off" and row["status"].startswith("H: HUD off")
    corner = (slice(0, 40), slice(0, SIZE[0] // 2))
    for _ in range(5):  # attempts: on a slow machine the status may time out (3 s) before the grab
        said = session.grab()[corner]
        if session.settle(1)["status"]:                         # still shown after the grab: it was in it
            break
        for _ in range(3):                                      # compact, full, off: the status again
            session.press("h")
    else:
        pytest.fail("the status line timed out before every screenshot")
    session.wait(lambda r: r["status"] == "", "the status line to time out", timeout=60.0)
    assert _changed(said, session.grab()[corner]) > 0.02        # its text was on the picture
    assert session.press("h")["hud"] == "compact"


def test_h_cycles_the_hud_and_the_picture_shows_it(session):
    compact = session.settle()
    assert compact["hud"] == "compact"
    small = session.grab()
    full = session.press("h")
    assert full["hud"] == "full"
    time.sleep(0.2)
    large = session.grab()
    assert session.press("h")["hud"] == "off"
    time.sleep(0.2)
    none = session.grab()
    assert session.press("h")["hud"] == "compact"
    # The full HUD covers more of the picture than the compact one; off shows no panel.
    corner = (slice(0, SIZE[1] // 2), slice(0, SIZE[0] // 2))
    assert _changed(large[corner], none[corner]) > _changed(small[corner], none[corner]) > 0.01


def test_p_saves_screenshots_without_overwriting(session):
    session.press("p")
    assert session.settle()["status"].startswith("P: saved ") and "screenshot_000.png" in session.last()["status"]
    session.press("p")
    shots = sorted(p.name for p in session.out.glob("screenshot_*.png"))
    assert shots == ["screenshot_000.png", "screenshot_001.png"]
    image = np.asarray(Image.open(session.out / shots[0]))
    assert image.shape == (SIZE[1], SIZE[0], 3) and image.std() > 10.0


def test_p_into_an_out_folder_a_file_replaced_says_it_is_not_a_folder(session):
    session.out.mkdir(exist_ok=True)
    folder = session.out.rename(session.out.with_name("shots_moved"))
    session.out.write_text("a file where the folder was")
    try:
        row = session.press_until("p", lambda r: r["status"].startswith("P: cannot save"), "P's answer")
        assert row["status"].endswith(f"--out {session.out} is not a folder"), row["status"]
    finally:
        session.out.unlink()
        folder.rename(session.out)


def test_with_collision_off_the_ground_still_holds_the_camera(session):
    """C turns off collision with objects, not with the ground: holding Shift+Q flies down to the
    ground and stops there, as with collision on.  (Before the scene keys: they put the camera back.)"""
    ground = build_scene("forest", OBJECTS, 1).ground_height

    def above_ground(row: dict) -> float:
        return float(row["y"]) - float(ground(float(row["x"]), float(row["z"])))

    off = session.press("c")
    assert off["collide"] == "0" and off["status"].startswith("C: camera collision off")
    start = len(session.rows())
    session.xdo("keydown", "shift+q")
    try:
        session.wait(lambda r: above_ground(r) < CAMERA_RADIUS + 0.01, "the camera to reach the ground",
                     since=start)
        session.settle()                                   # still held: it would go on down
    finally:
        session.xdo("keyup", "shift+q")
    rows = session.rows()[start:]
    assert min(above_ground(r) for r in rows) >= CAMERA_RADIUS - 1e-3
    on = session.press("c")
    assert on["collide"] == "1" and above_ground(on) >= CAMERA_RADIUS - 1e-3


def test_x_explains_the_object_under_the_cursor_and_on_nothing_clears_it(session):
    """Real pointer motion and a real X press: the object picked is one whose bounding sphere the line of
    sight through the cursor meets (the camera and the scene as the demo reports and builds them), the
    status names it, its explanation and white marks appear on screen; X over the sky clears it."""
    scene = build_scene("forest", OBJECTS, 1)
    row = session.settle()
    assert row["captured"] == "0" and row["scene"] == "forest"
    width, height = int(row["width"]), int(row["height"])
    camera = Camera(_position(row), float(row["yaw"]), float(row["pitch"]), aspect=width / height)
    vp = camera.view_projection()
    scale = float(row["scale"]) * float(row["zoom"])
    distance = np.linalg.norm(scene.centres - camera.position, axis=1)
    clip = np.c_[scene.centres, np.ones(len(scene))] @ vp.T
    ndc = clip[:, :2] / np.maximum(clip[:, 3:], 1e-9)
    drawn = ((clip[:, 3] > 1.0) & (np.abs(ndc).max(axis=1) < 0.6) & (distance <= scene.view_distance * scale)
             & (distance >= scene.begin_distance * scale))
    assert drawn.any(), "nothing drawn in the middle of the view to point at"
    target = np.flatnonzero(drawn)[np.argmin(distance[drawn])]
    x, y = int((ndc[target, 0] + 1.0) / 2.0 * width), int((1.0 - ndc[target, 1]) / 2.0 * height)
    session.xdo("mousemove", "--window", session.window, str(x), str(y))
    before = session.grab()
    row = session.press_until("x", lambda r: r["status"].startswith("X: "), "X's answer")
    picked = int(row["inspected"])
    kind = int(np.searchsorted(scene.kind_offsets, picked, side="right")) - 1
    assert row["status"] == f"X: {scene.kinds[kind].name} #{picked} under the cursor"
    origin, direction = screen_ray(vp, ((x + 0.5) / width * 2.0 - 1.0, 1.0 - (y + 0.5) / height * 2.0))
    assert pick(origin, direction, scene.centres[[picked]], scene.bounding_radius[[picked]]) == 0
    after = session.grab()
    white = np.all(after >= 240, axis=-1) & ~np.all(before >= 240, axis=-1)
    assert white[max(y - 30, 0):y + 30, max(x - 30, 0):x + 30].sum() >= 5, "no white mark at the picked object"
    for sx, sy in ((px, py) for py in (2, height // 4) for px in range(2, width, 24)):   # a pixel on nothing
        if pick(*screen_ray(vp, ((sx + 0.5) / width * 2 - 1, 1 - (sy + 0.5) / height * 2)), scene.centres,
                scene.bounding_radius) is None:
            break
    else:
        pytest.fail("every pixel tried has an object's bounding sphere under it")
    session.xdo("mousemove", "--window", session.window, str(sx), str(sy))
    row = session.press_until("x", lambda r: r["status"].startswith("X: no object"), "X over nothing")
    assert row["inspected"] == "" and row["status"] == "X: no object under the cursor"


def test_number_keys_switch_scenes(session):
    for key, scene in (("3", "swarm"), ("2", "clusters"), ("1", "forest")):
        session.xdo("key", key)
        row = session.wait(lambda r, s=scene: r["scene"] == s, f"key {key} to load {scene}", timeout=30)
        assert row["status"].startswith(f"{key}: {scene}, ")
    assert row["status"] == f"1: forest, {OBJECTS:,} objects"         # --objects: the first scene's count


def test_resize_reaches_the_renderer(session):
    session.xdo("windowsize", session.window, "640", "360")
    row = session.wait(lambda r: (r["width"], r["height"]) == ("640", "360"), "the resize")
    assert float(row["draw_ms"]) > 0.0
    assert session.grab().shape[:2] == (360, 640)


def test_an_unmapped_window_draws_nothing_until_it_is_mapped_again(session):
    """Minimised or unmapped, the window drew every frame nobody could see; now its rows (one per drawn
    frame) stop, and start again once it is mapped."""
    session.settle()
    session.xdo("windowunmap", "--sync", session.window)
    try:
        counts = [len(session.rows())]
        for _ in range(40):                       # until two reads a while apart agree (attempts, not a time)
            time.sleep(0.25)
            counts.append(len(session.rows()))
            if counts[-1] == counts[-2]:
                break
        assert counts[-1] == counts[-2], f"rows kept coming while unmapped: {counts}"
    finally:
        session.xdo("windowmap", "--sync", session.window)
    assert float(session.settle()["draw_ms"]) > 0.0 and session.proc.poll() is None


def _resized_with_the_map(session, width: int, height: int) -> None:
    session.xdo("windowsize", session.window, str(width), str(height))
    session.wait(lambda r: (r["width"], r["height"]) == (str(width), str(height)), "the resize")
    session.press_until("m", lambda r: r["map"] == "1", "the map on")


def test_after_a_resize_the_maps_label_sits_in_its_inset_and_p_saves_the_new_size(session):
    """The map's scale label was placed for the size the window was created at (moderngl's screen keeps
    it): a wide window drew it in the 3-D view, left of the inset.  P read that old size too."""
    from engine.map_geometry import inset_rect

    width, height = 1000, 300
    _resized_with_the_map(session, width, height)
    session.settle()
    with_map = session.grab()
    session.press_until("m", lambda r: r["map"] == "0", "the map off")
    session.settle()
    without = session.grab()
    x, _, side, _ = inset_rect((width, height))
    band = np.abs(with_map - without).max(axis=-1)[height - side - 20:, :x - 4]  # the map's rows, left of it
    assert band.max() <= 24, "the map changed pixels outside its inset (its label misplaced)"
    assert np.abs(with_map - without).max(axis=-1)[height - side:, x:].max() > 24  # the map itself is there
    row = session.press_until("p", lambda r: r["status"].startswith("P: saved "), "P's answer")
    shot = Image.open(row["status"].removeprefix("P: saved "))
    assert shot.size == (width, height)


def test_in_a_small_window_the_full_hud_stops_above_the_map(session):
    """At 360x240 the full HUD (its key list and level table) ran down the window over the map inset."""
    from engine.map_geometry import inset_rect

    width, height = 360, 240
    _resized_with_the_map(session, width, height)
    session.press_until("h", lambda r: r["hud"] == "full", "the full HUD")
    session.settle()
    full = session.grab()
    session.press_until("h", lambda r: r["hud"] == "off", "the HUD off")
    session.settle()
    off = session.grab()
    session.press_until("h", lambda r: r["hud"] == "compact", "the compact HUD")
    session.press_until("m", lambda r: r["map"] == "0", "the map off")
    x, y, side, _ = inset_rect((width, height))
    top = height - y - side
    assert np.abs(full[top:height - y, x:x + side] - off[top:height - y, x:x + side]).max() <= 24
    assert _changed(full[:top, :x], off[:top, :x]) > 0.2  # the full HUD's panel is there, above the map


def test_escape_with_the_mouse_free_quits_with_status_zero(session):
    assert session.settle()["captured"] == "0"
    session.quit()


def test_x_picks_under_a_pointer_that_has_not_moved_since_the_window_opened_under_it(tmp_path):
    """The window opens under a still pointer and X is pressed with no motion at all: the demo knew the
    cursor from motion events only, and picked at the centre of the view instead.  The pointer's place
    comes with the window's enter event now."""
    with DemoWindow.started(tmp_path, ["--objects", str(OBJECTS), "--size", f"{SIZE[0]}x{SIZE[1]}"],
                            pointer_first=(SIZE[0] // 4, SIZE[1] // 4)) as demo:
        assert demo.settle()["captured"] == "0"
        row = demo.press_until("x", lambda r: r["status"].startswith("X: "), "X's answer")
        assert row["status"].endswith("under the cursor"), row["status"]
        demo.quit()
