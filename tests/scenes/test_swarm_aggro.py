"""The swarm's two batches on the birds' tree: one overlapping_many for the player
and every hunter (each with its own sensing radius), one overlapping_pairs for
separation; both equal brute force, and the simulation does not depend on which
side answered.  The expected answers are the library's exact reference index
(culling.BruteForceIndex); the HUD's peers (a float scan, a hash grid) must give them too."""

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from culling import BruteForceIndex
from scenes import build_scene
from scenes.aggro import COMPARE_EVERY, SPACE, Aggro, brute_force_pairs, brute_force_sensed, grid_pairs
from scenes.base import mesh_base
from scenes.swarm import DENSITY, PLAYER_SENSE, SENSE_RADIUS, arena_radius, make_swarm

ROOT = Path(__file__).resolve().parents[2]


def _pair_set(a, b):
    return set(zip(a.tolist(), b.tolist()))


def test_sensing_equals_brute_force_with_every_probe_its_own_radius(rng):
    for _ in range(5):
        n, m = int(rng.integers(0, 400)), int(rng.integers(0, 40))
        centres = rng.uniform(-100.0, 100.0, (n, 3))
        bodies = rng.uniform(0.0, 3.0, n)
        points = rng.uniform(-120.0, 120.0, (m, 3))
        points[: min(m, n) // 2] = centres[: min(m, n) // 2]          # probes exactly at birds
        radii = rng.uniform(0.0, 40.0, m)
        radii[: m // 4] = 0.0                                           # radius 0: a point probe
        birds = Aggro(centres, bodies, 256.0, (-128.0,) * 3)
        bird, counts = BruteForceIndex(centres, bodies).overlapping_many(points, radii, exact=True)
        expected = _pair_set(bird, np.repeat(np.arange(m), counts))
        assert _pair_set(*birds.sensed(points, radii)) == expected
        assert _pair_set(*brute_force_sensed(points, radii, centres, bodies)) == expected


def test_separation_pairs_equal_brute_force(rng):
    for _ in range(5):
        n = int(rng.integers(0, 500))
        centres = rng.uniform(-40.0, 40.0, (n, 3))
        centres[: n // 10] = centres[n // 10: 2 * (n // 10)]            # identical centres
        bodies = rng.uniform(0.0, 2.0, n)
        birds = Aggro(centres, bodies, 256.0, (-128.0,) * 3)
        space = bodies * SPACE
        expected = _pair_set(*brute_force_pairs(centres, space))          # the exact reference
        first, second = birds.pairs()
        assert np.all(first < second) and len(first) == len(expected)   # each pair once
        assert _pair_set(first, second) == expected
        assert _pair_set(*grid_pairs(centres, space)) == expected
    birds = Aggro(np.array([[0.0, 0, 0], [4.0, 0, 0], [8.5, 0, 0]]), np.ones(3), 64.0, (-32.0,) * 3)
    assert _pair_set(*birds.pairs()) == {(0, 1)}                       # touching spaces (2 + 2 = 4) count


def test_nearest_picks_the_closest_probe_that_senses_the_bird():
    centres = np.array([[0.0, 0.0, 0.0], [50.0, 0.0, 0.0], [100.0, 0.0, 0.0]])
    birds = Aggro(centres, np.ones(3), 256.0, (-128.0,) * 3)
    points = np.array([[5.0, 0.0, 0.0], [3.0, 0.0, 0.0], [50.0, 8.0, 0.0], [50.0, -8.0, 0.0], [110.0, 0, 0]])
    radii = np.array([9.0, 9.0, 7.0, 7.0, 8.0])
    # bird 0: probes 0 (5 m) and 1 (3 m) -> 1; bird 1: a tie at 8 m -> the lower index 2;
    # bird 2: probe 4 is 10 m away, reaching 8 + 1 = 9 m -> none.
    assert birds.nearest(points, radii).tolist() == [1, 2, -1]


def test_bad_method_is_refused():
    aggro = Aggro(np.zeros((1, 3)), np.ones(1), 8.0, (-4.0,) * 3)
    with pytest.raises(ValueError, match="aggro method must be one of"):
        aggro.method = "octree"
    assert aggro.method == "tree"


def test_swarm_asks_both_batches_once_a_frame_and_checks_them():
    scene = build_scene("swarm", 6_000, seed=4)
    hunters = scene.hunters.stop - scene.hunters.start
    birds = len(scene) - scene.first
    assert hunters == 60 and birds > 5_000
    assert SENSE_RADIUS[0] <= scene.sense_radius.min() < scene.sense_radius.max() <= SENSE_RADIUS[1]
    calls = []
    tree = scene.bird_tree
    real_many, real_pairs = tree.overlapping_many, tree.overlapping_pairs

    def many(points, radii, exact=False, scale=1.0):
        calls.append(("many", len(points), np.array(radii).tolist()))
        return real_many(points, radii, exact=exact, scale=scale)

    def pairs():
        calls.append(("pairs",))
        return real_pairs()

    tree.overlapping_many, tree.overlapping_pairs = many, pairs
    cam = scene.camera_pose(0.0).position
    radii = [PLAYER_SENSE] + scene.sense_radius.tolist()
    for frame in range(2 * COMPARE_EVERY):
        scene.update(frame / 30.0, 1.0 / 30.0, cam)
    assert calls == [("many", hunters + 1, radii), ("pairs",)] * (2 * COMPARE_EVERY)   # one of each a frame
    for stats in (scene.sensing_stats, scene.separation_stats):
        assert stats.compared == 2 and stats.mismatches == 0
        assert stats.answers > 0 and stats.tree_ms is not None and stats.peer_ms is not None
    assert scene.aggro_count > 0
    lines = scene.status_lines()
    assert lines[0].startswith(f"sensing: you + {hunters:,} hunters (")
    assert lines[0].endswith(f" m) x {birds:,} birds")
    assert "overlapping_many" in lines[2] and "brute force" in lines[2]
    assert lines[3].startswith("separation: ") and "overlapping_pairs" in lines[4] and "NumPy grid" in lines[4]
    assert f"every {COMPARE_EVERY}th frame" in lines[5]
    assert max(len(line) for line in lines) <= 62
    brief = scene.status_lines(brief=True)                     # the compact HUD's: a line per batch
    assert brief[0].startswith(f"sensing: {scene.sensing_stats.answers:,} sensed pairs  ")
    assert brief[0].endswith("x brute force)") and brief[1].endswith("x NumPy grid)")
    assert brief[1].startswith(f"separation: {scene.separation_stats.answers:,} pairs  ")
    assert len(brief) == 2 and max(len(line) for line in brief) <= 62


def test_brute_force_and_tree_give_the_same_simulation():
    runs = []
    for brute in (False, True):
        scene = make_swarm(2_000, seed=5)
        scene.set_brute_force(brute)
        cam = scene.camera_pose(0.1).position
        for frame in range(25):
            scene.update(frame / 30.0, 1.0 / 30.0, cam + frame)
        for stats in (scene.sensing_stats, scene.separation_stats):
            assert stats.method == ("brute force" if brute else "tree")
            assert stats.mismatches == 0
        runs.append((scene.centres.copy(), scene.highlight.copy()))
    assert np.array_equal(runs[0][0], runs[1][0])
    assert np.array_equal(runs[0][1], runs[1][1])
    assert runs[0][1].sum() > 0


def test_hunters_walk_and_creatures_stay_near_the_arena():
    scene = make_swarm(3_000, seed=2)
    start = scene.hunter_positions()
    cam = np.array([0.0, 30.0, 0.0])
    for frame in range(60):
        scene.update(frame / 30.0, 1.0 / 30.0, cam)
    moved = np.linalg.norm(scene.hunter_positions()[:, [0, 2]] - start[:, [0, 2]], axis=1)
    assert (moved > 1.0).all()
    ground = scene.ground_height(scene.centres[scene.hunters, 0], scene.centres[scene.hunters, 2])
    lift = -mesh_base("hunter") * scene.bounding_radius[scene.hunters]
    assert np.allclose(scene.centres[scene.hunters, 1], ground + lift)
    creatures = scene.centres[scene.first:]
    assert np.hypot(creatures[:, 0], creatures[:, 2]).max() < scene.arena + 100.0
    scene.bird_tree.check_invariants()
    assert np.array_equal(scene.bird_tree.centres_of(scene.aggro.handles), creatures)


def test_density_is_the_same_at_every_size():
    small, large = make_swarm(1_500, seed=1), make_swarm(30_000, seed=1)
    for scene in (small, large):
        n = len(scene) - scene.first
        assert scene.arena == pytest.approx(arena_radius(n))
        assert n / (np.pi * scene.arena ** 2) == pytest.approx(DENSITY, rel=1e-6)


def test_swarm_scene_imports_no_engine_or_gl():
    code = ("import sys, scenes.swarm, scenes.aggro; "
            "bad = sorted(m for m in sys.modules if m.split('.')[0] in "
            "('engine', 'demo', 'pyglet', 'moderngl', 'pyrr', 'PIL')); print(bad); sys.exit(bool(bad))")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True)
    assert out.returncode == 0, out.stdout + out.stderr


def test_flocks_hold_together_and_birds_keep_apart():
    """Cohesion keeps a flock's birds near its centre; separation pushes close pairs apart."""
    scene = make_swarm(6_000, seed=3)
    cam = np.array([0.0, 400.0, 0.0])                               # far above: nobody chases
    birds = scene.centres[scene.first:]

    def spread() -> float:
        centre = np.stack([np.bincount(scene.flock, birds[:, a]) for a in range(3)], axis=1)
        centre /= np.bincount(scene.flock)[:, None]
        return float(np.median(np.linalg.norm(birds - centre[scene.flock], axis=1)))

    before = spread()
    for frame in range(90):
        scene.update(frame / 30.0, 1.0 / 30.0, cam)
    assert spread() < 1.5 * before + 5.0                            # flocks do not dissolve
    i, j = grid_pairs(birds, np.full(len(birds), 0.5))
    assert len(i) < 0.01 * len(birds)                               # hardly any two birds within 1 m
    # Alignment: within a flock the headings agree (mean resultant length of the unit headings).
    heading = scene.velocity[:, [0, 2]] / np.linalg.norm(scene.velocity[:, [0, 2]], axis=1, keepdims=True)
    mean = np.stack([np.bincount(scene.flock, heading[:, a]) for a in range(2)], axis=1)
    agreement = np.linalg.norm(mean, axis=1) / np.bincount(scene.flock)
    assert np.median(agreement) > 0.7


def test_a_bird_chases_for_the_leash_at_most_then_ignores_the_hunters_while_calm():
    """Without a leash a chaser stayed near the hunter that sensed it: within a minute nearly every bird
    chased (9,356 of 9,600) and the colours told nothing apart."""
    from scenes.swarm import CALM, LEASH

    scene = make_swarm(2_000, seed=3)
    birds = len(scene) - scene.first
    always = np.zeros(birds, dtype=np.int64)                  # every bird sensed by probe 0, every frame
    dt = 0.25
    chased = [bool(scene._leashed(always.copy(), dt)[0] >= 0) for _ in range(int((LEASH + CALM) / dt) + 4)]
    runs = [len(list(group)) * dt for _, group in __import__("itertools").groupby(chased)]
    assert chased[0] and runs[0] == LEASH and runs[1] == CALM and chased[int((LEASH + CALM) / dt)]
    never = np.full(birds, -1, dtype=np.int64)
    assert (scene._leashed(never, dt) == -1).all()           # nothing sensed: nothing chased, nothing owed
