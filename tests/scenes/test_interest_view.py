"""The interest view: the set it shows is InterestManager's and brute force's, its events are the set
differences, and the swarm/aggro scenes show it (highlight, marks, HUD) without touching the simulation."""

import numpy as np
import pytest

from culling import InterestManager
from scenes import build_scene
from scenes.aggro import brute_force_sensed
from scenes.interest_view import (
    ENTERED_COLOUR,
    FLASH_SECONDS,
    FOLLOWED_COLOUR,
    IN_SET,
    INTEREST_COLOUR,
    LEFT_COLOUR,
    RECENT_HANDLES,
    InterestView,
)
from scenes.swarm import CHASE_COLOUR, LEGEND, PLAYER_SENSE


def _brute(points, radii, centres, bodies):
    """Per player, the sorted creature indices whose body meets its sphere (the scene's brute-force scan)."""
    bird, probe = brute_force_sensed(points, radii, centres, bodies)
    return [np.sort(bird[probe == k]) for k in range(len(points))]


def _row(rows, k):
    return rows[1][rows[0][k]:rows[0][k + 1]]


def test_every_tick_sets_equal_interest_manager_and_brute_force_and_events_are_differences(rng):
    for _ in range(4):
        n, m = int(rng.integers(1, 300)), int(rng.integers(1, 12))
        centres = rng.uniform(-60.0, 60.0, (n, 3))
        bodies = rng.uniform(0.0, 3.0, n)
        view = InterestView(centres, bodies, 256.0, (-128.0,) * 3)
        players = rng.uniform(-60.0, 60.0, (m, 3))
        radii = rng.uniform(0.0, 30.0, m)
        view.follow(int(rng.integers(0, m)))
        before = [np.zeros(0, dtype=np.int64)] * m
        for step in range(8):
            centres = centres + rng.normal(0.0, 4.0, centres.shape)
            players = players + rng.normal(0.0, 4.0, players.shape)
            shown = view.tick(players, radii, 1.0 / 30.0, centres=centres)
            now = _brute(players, radii, centres, bodies)
            tick = view.last
            for k in range(m):
                handles = view.manager.interest(k)
                assert np.array_equal(np.sort(view.creature_of[handles]), now[k])
                entered = view.creature_of[tick.entered_of(k)]
                left = view.creature_of[tick.left_of(k)]
                assert np.array_equal(np.sort(entered), np.setdiff1d(now[k], before[k]))
                assert np.array_equal(np.sort(left), np.setdiff1d(before[k], now[k]))
            f = view.followed
            assert np.array_equal(shown, view.manager.interest(f))
            assert np.array_equal(np.sort(view.creature_of[view.members]), now[f])
            assert np.array_equal(view.entered, tick.entered_of(f)) and np.array_equal(view.left, tick.left_of(f))
            assert view.all_entered == sum(len(np.setdiff1d(now[k], before[k])) for k in range(m))
            assert view.all_left == sum(len(np.setdiff1d(before[k], now[k])) for k in range(m))
            before = now
            if step == 4 and m > 1:                     # following another player keeps the ticks going
                view.follow((f + 1) % m)


def test_a_sphere_touching_the_player_counts_and_one_just_beyond_does_not():
    view = InterestView(np.array([[3.0, 0.0, 0.0], [0.0, 0.0, 3.0000001]]), np.array([1.0, 1.0]), 64.0,
                        (-32.0,) * 3)
    assert view.tick(np.zeros((1, 3)), np.array([2.0]), 0.0).tolist() == [0]        # |c - p| = 1 + 2 exactly


def test_recent_handles_keep_the_newest_first_and_at_most_a_line():
    centres = np.stack([np.arange(12.0) * 10.0, np.zeros(12), np.zeros(12)], axis=1)
    view = InterestView(centres, np.ones(12), 256.0, (-128.0,) * 3)
    view.tick(np.array([[-50.0, 0.0, 0.0]]), np.array([1.0]), 0.1)                      # joins with nothing
    for x in range(12):
        view.tick(np.array([[x * 10.0, 0.0, 0.0]]), np.array([1.0]), 0.1)
        assert view.entered.tolist() == [view.handles[x]]
        assert view.left.tolist() == ([] if x == 0 else [view.handles[x - 1]])
    assert view.recent_entered.tolist() == view.handles[::-1][:RECENT_HANDLES].tolist()
    assert view.recent_left.tolist() == view.handles[10::-1][:RECENT_HANDLES].tolist()


def test_a_join_enters_the_whole_set_without_flashing_and_reset_joins_again():
    centres = np.array([[0.0, 0, 0], [1.0, 0, 0], [40.0, 0, 0]])
    view = InterestView(centres, np.ones(3), 128.0, (-64.0,) * 3)
    view.tick(np.zeros((1, 3)), np.array([5.0]), 0.1)
    assert view.entered.tolist() == [0, 1] and view.left.size == 0
    assert not view.flash.any()
    assert view.highlight().tolist() == pytest.approx([IN_SET, IN_SET, 0.0])
    view.tick(np.array([[38.0, 0, 0]]), np.array([5.0]), 0.1)                           # 0 and 1 leave, 2 enters
    assert view.entered.tolist() == [2] and view.left.tolist() == [0, 1]
    assert view.flash.tolist() == [FLASH_SECONDS] * 3 and view.flash_entered.tolist() == [False, False, True]
    level = view.highlight()
    assert level[2] == pytest.approx(1.0) and level[0] == level[1] == 0.0
    view.reset()
    assert view.members.size == 0 and not view.flash.any() and len(view.manager.viewers) == 0
    view.tick(np.array([[38.0, 0, 0]]), np.array([5.0]), 0.1)
    assert view.entered.tolist() == [2] and not view.flash.any()                          # joined again


def test_flashes_fade_with_time_and_end():
    view = InterestView(np.array([[0.0, 0, 0]]), np.ones(1), 64.0, (-32.0,) * 3)
    view.tick(np.array([[20.0, 0, 0]]), np.array([1.0]), 0.1)                            # join: empty
    view.tick(np.zeros((1, 3)), np.array([1.0]), 0.1)                                    # enters
    marks = view.markers(np.zeros((1, 3)), np.ones(1), None, 0.0, 1.0)
    assert marks.box_colours.tolist() == [list(ENTERED_COLOUR)] and marks.sphere_radii.size == 0
    view.tick(np.zeros((1, 3)), np.array([1.0]), FLASH_SECONDS / 2)
    assert view.flash[0] == pytest.approx(FLASH_SECONDS / 2)
    assert view.highlight()[0] == pytest.approx(IN_SET + (1 - IN_SET) / 2)
    view.tick(np.array([[9.0, 0, 0]]), np.array([1.0]), FLASH_SECONDS / 2)                # leaves
    marks = view.markers(np.zeros((1, 3)), np.ones(1), np.array([9.0, 0, 0]), 2.0, 1.0)
    assert np.allclose(marks.box_colours, [LEFT_COLOUR, FOLLOWED_COLOUR])
    assert marks.box_centres.tolist() == [[0.0, 0, 0], [9.0, 0, 0]] and marks.sphere_radii.tolist() == [1.0]
    for _ in range(3):
        view.tick(np.array([[9.0, 0, 0]]), np.array([1.0]), FLASH_SECONDS / 2)
    assert not view.flash.any() and len(view.markers(np.zeros((1, 3)), np.ones(1), None, 0.0, 1.0)) == 0


def test_bad_players_are_refused_and_change_nothing():
    view = InterestView(np.zeros((2, 3)), np.ones(2), 64.0, (-32.0,) * 3)
    with pytest.raises(ValueError, match="player must be >= 0"):
        view.follow(-1)
    view.follow(3)
    with pytest.raises(ValueError, match="followed player 3 is not among the 2 players"):
        view.tick(np.zeros((2, 3)), np.ones(2), 0.1)
    assert view.ticks == 0 and len(view.manager.viewers) == 0


# -- the scenes ---------------------------------------------------------------------------------------------------


def _player(scene, player):
    return scene.centres[scene.hunters.start + player - 1]


def test_the_aggro_scene_shows_the_busiest_hunters_set_as_the_sensing_tree_and_brute_force_see_it():
    scene = build_scene("aggro", 3000, seed=2)
    assert scene.interest_on and scene.followed >= 1 and scene.highlight_colour == INTEREST_COLOUR
    birds = slice(scene.first, len(scene))
    shown_some = False
    for frame in range(12):
        camera = scene.camera_pose(frame / 11).position
        scene.update(frame / 30.0, 1.0 / 30.0, camera)
        view, f = scene.interest, scene.followed
        members = np.sort(view.creature_of[view.members])
        point, reach = _player(scene, f), scene.reach(f)
        assert np.array_equal(members, scene.sensed_by(point, reach))          # the aggro tree's own answer
        expected = _brute(point[None, :], np.array([reach]), scene.centres[birds], scene.bounding_radius[birds])
        assert np.array_equal(members, expected[0])
        im = InterestManager(scene.world_size, scene.world_origin)           # a server's own manager, fresh
        im.insert_many(scene.centres[birds], scene.bounding_radius[birds])
        im.tick([7], point[None, :], radii=[reach])
        assert np.array_equal(np.sort(im.interest(7)), members)
        level = scene.highlight[birds]
        assert np.all(level[members] >= np.float32(IN_SET)) and np.array_equal(np.flatnonzero(level), members)
        hunters = scene.highlight[scene.hunters]
        assert np.count_nonzero(hunters) == 0                                  # cyan is the set alone
        shown_some |= members.size > 0
        lines = scene.status_lines()
        assert lines[0].startswith(f"interest: hunter {f - 1} (reach {reach:.0f} m), {members.size:,} in its set")
        assert f"+{view.entered.size} -{view.left.size}" in lines[2]
        brief = scene.status_lines(brief=True)[0]
        assert brief.startswith(f"interest: hunter {f - 1}, {members.size:,} in its set, "
                                f"+{view.entered.size} -{view.left.size}; tick ")
    assert shown_some
    assert scene.legend()[1] == ("in its interest set", INTEREST_COLOUR)


def test_the_view_never_changes_the_simulation():
    plain, shown = build_scene("swarm", 2000, seed=4), build_scene("aggro", 2000, seed=4)
    for frame in range(10):
        camera = plain.camera_pose(frame / 9).position
        plain.update(frame / 30.0, 1.0 / 30.0, camera)
        shown.update(frame / 30.0, 1.0 / 30.0, camera)
        if frame == 3:
            shown.follow_next(1)
        if frame == 6:
            shown.set_interest_view(False)
            assert np.array_equal(shown.highlight, plain.highlight)       # the chase highlight is back at once
            assert shown.highlight_colour == CHASE_COLOUR and shown.legend() == list(LEGEND)
            shown.set_interest_view(True)
    assert np.array_equal(plain.centres, shown.centres) and np.array_equal(plain.yaw, shown.yaw)


def test_following_cycles_you_and_every_hunter_and_you_see_the_birds_around_the_camera():
    scene = build_scene("swarm", 1500, seed=1)
    assert not scene.interest_on and scene.interest is None and scene.markers().box_half.size == 0
    names = [scene.follow_next(1) for _ in range(scene.players)]
    assert names[-1] == scene.followed_name() and sorted(set(names)) == sorted(names)
    assert "you" in names and scene.follow_next(-1) == names[-2]
    scene.follow(0)
    scene.set_interest_view(True)
    assert scene.watch_pose() is None
    camera = np.array([0.0, 30.0, 0.0])
    scene.update(0.0, 1.0 / 30.0, camera)
    members = np.sort(scene.interest.creature_of[scene.interest.members])
    assert np.array_equal(members, scene.sensed_by(camera, PLAYER_SENSE))
    assert scene.markers().box_half.size == 0 and scene.markers().sphere_radii.size == 0   # no box round you
    with pytest.raises(ValueError, match=r"player must be in 0\.\.15, got 16"):
        scene.follow(16)


def test_the_watch_pose_looks_at_the_followed_hunter_with_its_reach_in_view():
    scene = build_scene("aggro", 1500, seed=3)
    pose = scene.watch_pose()
    target = _player(scene, scene.followed)
    d = target - pose.position
    yaw, pitch = np.radians(pose.yaw), np.radians(pose.pitch)
    forward = np.array([np.sin(yaw) * np.cos(pitch), np.sin(pitch), -np.cos(yaw) * np.cos(pitch)])
    assert np.allclose(forward, d / np.linalg.norm(d))
    assert np.linalg.norm(d) >= 2.0 * scene.reach(scene.followed)


def test_scenes_without_players_say_so():
    scene = build_scene("forest", 500)
    assert not scene.has_players and not scene.interest_on and scene.followed_name() == ""
    with pytest.raises(ValueError, match="scene 'forest' has no players"):
        scene.set_interest_view(True)
    with pytest.raises(ValueError, match="scene 'forest' has no players"):
        scene.follow_next(1)
    assert len(scene.markers()) == 0
