"""The interest view on screen (offscreen EGL): the followed hunter framed in white where it projects,
the birds of its set tinted cyan, the enter / leave flashes in their colours, and none of it once the
view is off."""

import numpy as np

from scenes.interest_view import ENTERED_COLOUR, LEFT_COLOUR

SIZE = (320, 180)


def _cyan(image: np.ndarray) -> np.ndarray:
    """Pixels of a bird tinted towards the interest colour: green and blue well above red, and close
    (the sky's blue is only 0.12 above its red; the hunters' blue is far above their green)."""
    r, g, b = (image[..., k].astype(np.int16) for k in range(3))
    return (g - r > 70) & (b - r > 70) & (np.abs(g - b) < 50)


def _white(image: np.ndarray) -> np.ndarray:
    """The followed player's box and sphere (white at 90 % and 50 % over the frame): no lit surface is this bright."""
    return np.all(image >= 235, axis=-1)


def _flash(image: np.ndarray, rgba) -> np.ndarray:
    """Pixels of a flashing box: the colour blended over anything at its alpha, so near it in hue only."""
    target = np.asarray(rgba[:3]) * 255.0
    diff = image.astype(np.float64) - target
    return np.linalg.norm(diff, axis=-1) < 70.0


def _project(demo, point) -> tuple[int, int]:
    clip = demo.view_projection @ np.append(point, 1.0)
    x, y = clip[:2] / clip[3]
    return int((x + 1.0) / 2.0 * demo.size[0]), int((1.0 - y) / 2.0 * demo.size[1])


def _aggro(make_demo, frames: int):
    demo = make_demo("aggro", 3000, size=SIZE, overlay=False, seed=5)
    scene = demo.scene
    for i in range(frames):
        pose = scene.camera_pose(i / 30.0)
        demo.set_pose(pose.position, pose.yaw, pose.pitch)
        demo.update(1.0 / 30.0)
    return demo


def test_the_followed_hunter_is_framed_and_its_set_tinted(make_demo, render):
    demo = _aggro(make_demo, 8)
    scene = demo.scene
    image = render(demo)
    hunter = scene.centres[scene.hunters.start + scene.followed - 1]
    x, y = _project(demo, hunter)
    assert 0 <= x < SIZE[0] and 0 <= y < SIZE[1]
    near = _white(image)[max(y - 12, 0):y + 13, max(x - 12, 0):x + 13]
    assert near.sum() >= 8, "no white box around the followed hunter"
    assert scene.interest.members.size > 0 and _cyan(image).sum() > 0

    said = demo.toggle_interest()                        # the same frame without the view
    assert said == "I: interest view off" and not scene.interest_on
    demo._drawn = False
    off = render(demo)
    assert _white(off).sum() == 0 and _cyan(off).sum() == 0
    # The reach sphere's horizontal circle: the frame changed along it (the marks are the only difference there).
    angles = np.linspace(0.0, 2.0 * np.pi, 24, endpoint=False)
    reach = scene.reach(scene.followed)
    changed = np.any(image != off, axis=-1)
    hits = 0
    for a in angles:
        px, py = _project(demo, hunter + reach * np.array([np.cos(a), 0.0, np.sin(a)]))
        if 1 <= px < SIZE[0] - 1 and 1 <= py < SIZE[1] - 1:
            hits += bool(changed[py - 1:py + 2, px - 1:px + 2].any())
    assert hits >= 20, f"the reach circle shows at {hits} of 24 points"


def test_enter_and_leave_flashes_show_in_their_colours_and_go_with_the_view(make_demo, render):
    demo = _aggro(make_demo, 1)
    view = demo.scene.interest
    for frame in range(1, 300):                          # until an enter and a leave both flash (deterministic)
        lit = view.flash > 0
        if (lit & view.flash_entered).any() and (lit & ~view.flash_entered).any():
            break
        pose = demo.scene.camera_pose(frame / 300.0)
        demo.set_pose(pose.position, pose.yaw, pose.pitch)
        demo.update(1.0 / 30.0)
    else:
        raise AssertionError("no enter and leave flashing together in 300 frames")
    image = render(demo)
    assert _flash(image, ENTERED_COLOUR).sum() > 0 and _flash(image, LEFT_COLOUR).sum() > 0
    demo.toggle_interest()
    demo.update(1.0 / 30.0)
    off = render(demo)
    assert _flash(off, ENTERED_COLOUR).sum() == 0 and _flash(off, LEFT_COLOUR).sum() == 0


def test_the_i_and_n_keys_answer_in_every_scene(make_demo):
    demo = make_demo("forest", 500, size=SIZE)
    assert demo.toggle_interest().startswith("I: the forest scene has no players")
    assert demo.follow_next(1).startswith("N: the forest scene has no players")
    assert demo.state()["interest"] is False and demo.state()["followed"] == ""
    demo.load_scene("swarm", 1500)
    said = demo.follow_next(1)
    scene = demo.scene
    assert scene.interest_on and said == f"N: following {scene.followed_name()}"
    target = scene.centres[scene.hunters.start + scene.followed - 1]
    direction = (target - demo.camera.position) / np.linalg.norm(target - demo.camera.position)
    assert np.allclose(demo.camera.forward(), direction)            # the camera looks at the new player
    assert demo.state()["followed"] == scene.followed_name()
