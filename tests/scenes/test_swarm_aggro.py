"""The swarm's aggro batch: one query_many for every hunter, equal to brute force,
and a simulation that does not depend on which of the two answered."""

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from scenes import build_scene
from scenes.aggro import COMPARE_EVERY, Aggro, brute_force_pairs
from scenes.base import mesh_base
from scenes.swarm import DENSITY, arena_radius, make_swarm, separation_pairs

ROOT = Path(__file__).resolve().parents[2]


def _pair_set(creature, point):
    return set(zip(creature.tolist(), point.tolist()))


def test_pairs_equal_brute_force_on_random_worlds(rng):
    for _ in range(5):
        n, m = int(rng.integers(0, 400)), int(rng.integers(0, 40))
        centres = rng.uniform(-100.0, 100.0, (n, 3))
        radii = rng.uniform(0.0, 40.0, n)
        points = rng.uniform(-120.0, 120.0, (m, 3))
        points[: min(m, n) // 2] = centres[: min(m, n) // 2]          # points exactly at centres
        aggro = Aggro(centres, radii, 256.0, (-128.0,) * 3)
        d = np.linalg.norm(centres[None, :, :] - points[:, None, :], axis=2)
        expected = {(c, p) for p, c in zip(*np.nonzero(d <= radii[None, :]))}
        assert _pair_set(*aggro.pairs(points)) == expected
        assert _pair_set(*brute_force_pairs(points, centres, radii)) == expected


def test_nearest_picks_the_closest_point_inside_the_sphere():
    centres = np.array([[0.0, 0.0, 0.0], [50.0, 0.0, 0.0], [100.0, 0.0, 0.0]])
    aggro = Aggro(centres, np.array([10.0, 10.0, 1.0]), 256.0, (-128.0,) * 3)
    points = np.array([[5.0, 0.0, 0.0], [3.0, 0.0, 0.0], [50.0, 8.0, 0.0], [50.0, -8.0, 0.0], [200.0, 0, 0]])
    # creature 0: points 0 (5 m) and 1 (3 m) -> 1; creature 1: a tie at 8 m -> the lower index 2; creature 2: none.
    assert aggro.nearest(points).tolist() == [1, 2, -1]
    assert aggro.stats.chasing == 2


def test_bad_method_is_refused():
    aggro = Aggro(np.zeros((1, 3)), np.ones(1), 8.0, (-4.0,) * 3)
    with pytest.raises(ValueError, match="aggro method must be one of"):
        aggro.method = "octree"
    assert aggro.method == "tree"


def test_swarm_asks_every_hunter_in_one_batch_and_checks_it():
    scene = build_scene("swarm", 6_000, seed=4)
    hunters = scene.hunters.stop - scene.hunters.start
    assert hunters == 60 and len(scene) - scene.first > 5_000
    calls = []
    real = scene.aggro.tree.query_many

    def counting(points, exact=False):
        calls.append(len(points))
        return real(points, exact=exact)

    scene.aggro.tree.query_many = counting
    cam = scene.camera_pose(0.0).position
    for frame in range(2 * COMPARE_EVERY):
        scene.update(frame / 30.0, 1.0 / 30.0, cam)
    assert calls == [hunters + 1] * (2 * COMPARE_EVERY)          # one batch per frame: camera + hunters
    stats = scene.aggro_stats
    assert stats.compared == 2 and stats.mismatches == 0
    assert stats.pairs > 0 and stats.chasing > 0
    assert stats.tree_ms is not None and stats.brute_ms is not None
    who, times, flocks = scene.status_lines()
    assert who.startswith(f"aggro: you + {hunters:,} hunters x {len(scene) - scene.first:,} creatures")
    assert "query_many" in times and "brute force" in times


def test_brute_force_and_tree_give_the_same_simulation():
    runs = []
    for brute in (False, True):
        scene = make_swarm(2_000, seed=5)
        scene.set_brute_force(brute)
        cam = scene.camera_pose(0.1).position
        for frame in range(25):
            scene.update(frame / 30.0, 1.0 / 30.0, cam + frame)
        assert scene.aggro_stats.method == ("brute force" if brute else "tree")
        assert scene.aggro_stats.mismatches == 0
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
    scene.aggro_tree.check_invariants()
    assert np.array_equal(scene.aggro_tree.centres_of(scene.aggro.handles), creatures)


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
    i, j = separation_pairs(birds, 1.0)
    assert len(i) < 0.01 * len(birds)                               # hardly any two birds overlap
    # Alignment: within a flock the headings agree (mean resultant length of the unit headings).
    heading = scene.velocity[:, [0, 2]] / np.linalg.norm(scene.velocity[:, [0, 2]], axis=1, keepdims=True)
    mean = np.stack([np.bincount(scene.flock, heading[:, a]) for a in range(2)], axis=1)
    agreement = np.linalg.norm(mean, axis=1) / np.bincount(scene.flock)
    assert np.median(agreement) > 0.7


def test_separation_pairs_finds_close_pairs_once():
    rng = np.random.default_rng(4)
    pos = rng.uniform(0.0, 40.0, size=(400, 3))
    i, j = separation_pairs(pos, 4.0)
    d = np.linalg.norm(pos[i] - pos[j], axis=1)
    assert np.all(d < 4.0) and np.all(i != j)
    pairs = {tuple(sorted(p)) for p in zip(i.tolist(), j.tolist())}
    assert len(pairs) == len(i)                                     # each pair once
