"""Seeded stress tests: long random operation sequences against brute force.

Deterministic (fixed seeds), so a failure reproduces exactly.  Each sequence
mixes insert / insert_many / update / update_many (many of them small moves
that stay in their node) / remove / remove_many, and after *every* operation
compares ``len``, membership of the touched handles, and the exact query at a
point near the touched object with the brute-force model.  Every
``FULL_CHECK_EVERY`` operations it also runs ``check_invariants()``, compares
the stored centres and radii, and checks candidates, exact answers and trace at
several points (object centres, object surfaces along an axis, node boundaries)
and three view-distance scales, plus ``query_many``.

Values: radii 0, 1e-30, binary fractions of the root size, log-uniform from
1e-6 to 4x the root size and uniform up to 3x it (the tree's root grows);
coordinates on binary fractions down to 1/4096 of the root (node boundaries and
grown-box edges), uniform floats, and now and then far outside the root.

``STRESS_OPERATIONS`` is the total number of mutating operations the module
runs (the bulk tests count their batch calls as one operation each).
"""

from __future__ import annotations

import numpy as np
import pytest
from brute_force import (
    KINDS,
    TREE,
    BruteForce,
    all_nodes,
    check_contents,
    check_query,
    check_query_many,
    sorted_handles,
)

SIZE = 16.0
ORIGIN = -8.0
SCALES = (0.5, 1.0, 2.5)
FULL_CHECK_EVERY = 25
TARGET_OBJECTS = 150        # insert/remove balance around this many objects
SEQUENCE_OPS = 1200         # operations per (structure, dim, shape) sequence
SEEDS = {1: 101, 2: 202, 3: 303}

CONFIGS = [(kind, dim, shape) for kind in KINDS for dim in (1, 2, 3) for shape in ("sphere", "cube")]
BULK_OBJECTS = 4000
BULK_ROUNDS = 5              # update_many rounds in the bulk test
GROWTH_SMALL, GROWTH_STEPS = 20, 15
#: Mutating calls in this module: 12 mixed sequences of SEQUENCE_OPS (14,400),
#: 12 bulk tests of 1 insert_many + BULK_ROUNDS update_many + 1 remove_many
#: (84 calls moving ~27,000 objects each: ~320,000 object mutations), and 3
#: root-growth sequences of 35 inserts (105): 14,589 calls in all.
STRESS_OPERATIONS = (len(CONFIGS) * SEQUENCE_OPS + len(CONFIGS) * (BULK_ROUNDS + 2)
                     + 3 * (GROWTH_SMALL + GROWTH_STEPS))


class Values:
    """Random centres, radii and points for one structure's world."""

    def __init__(self, rng: np.random.Generator, dim: int, grows: bool) -> None:
        self.rng, self.dim, self.grows = rng, dim, grows
        self.top = ORIGIN + SIZE

    def coordinate(self) -> float:
        rng = self.rng
        u = rng.random()
        if u < 0.45:  # a node boundary: a binary fraction of the root
            j = int(rng.integers(0, 13))
            lo, hi = (-2, 3) if self.grows else (0, 1)
            x = ORIGIN + SIZE * int(rng.integers(lo * 2**j, hi * 2**j + 1)) / 2**j
        elif u < 0.95 or not self.grows:
            lo, hi = (ORIGIN - SIZE, self.top + SIZE) if self.grows else (ORIGIN, self.top)
            x = float(rng.uniform(lo, hi))
        else:  # far outside the root: grows it
            x = float(rng.choice([-1, 1]) * rng.uniform(2, 200) * SIZE)
        if not self.grows:
            x = min(max(x, ORIGIN), float(np.nextafter(self.top, -np.inf)))
        return x

    def centre(self) -> np.ndarray:
        return np.array([self.coordinate() for _ in range(self.dim)])

    def radius(self) -> float:
        rng = self.rng
        limit = 4 * SIZE if self.grows else SIZE / 2
        u = rng.random()
        if u < 0.05:
            r = 0.0
        elif u < 0.08:
            r = 1e-30
        elif u < 0.45:
            j = int(rng.integers(0, 12))
            r = SIZE * int(rng.integers(0, 2**j * (3 if self.grows else 1) // 2 + 1)) / 2**j
        elif u < 0.85:
            r = float(np.exp(rng.uniform(np.log(1e-6), np.log(limit))))
        else:
            r = float(rng.uniform(0, 3 * SIZE if self.grows else SIZE / 2))
        if not self.grows and r >= SIZE / 2:
            r = float(np.nextafter(SIZE / 2, 0))
        return r

    def nudge(self, centre: np.ndarray) -> np.ndarray:
        """A small move: usually stays in the object's node."""
        moved = centre + self.rng.normal(0, SIZE / 4096, self.dim)
        if not self.grows:
            moved = np.clip(moved, ORIGIN, np.nextafter(self.top, -np.inf))
        return moved

    def near(self, centre: np.ndarray, radius: float) -> np.ndarray:
        """The centre, or a surface point along an axis or through a corner."""
        u = self.rng.random()
        p = centre.copy()
        if u < 0.2:
            return p
        if u < 0.8:
            p[int(self.rng.integers(self.dim))] += self.rng.choice([-1.0, 1.0]) * radius
            return p
        return p + self.rng.choice([-1.0, 1.0], self.dim) * radius  # a cube's corner


def run_sequence(kind, dim: int, shape: str, seed: int, ops: int) -> dict:
    rng = np.random.default_rng(seed)
    values = Values(rng, dim, kind.grows)
    structure = kind.make(SIZE, origin=(ORIGIN,) * dim, dim=dim, shape=shape)
    model = BruteForce(dim, shape)
    counts = dict.fromkeys(["insert", "insert_many", "update", "update_many", "remove", "remove_many"], 0)

    def some_handles(k):
        handles = model.handles()
        return [int(h) for h in rng.choice(handles, size=min(k, len(handles)), replace=False)]

    for step in range(ops):
        n = len(model)
        fill = n / TARGET_OBJECTS
        weights = np.array([3.0, 1.0, 3.0, 2.0, 2.0 * fill, 0.7 * fill]) if n else np.array([1, 1, 0, 0, 0, 0.0])
        op = list(counts)[rng.choice(6, p=weights / weights.sum())]
        counts[op] += 1
        touched: list[int] = []
        gone: list[int] = []
        if op == "insert":
            c, r = values.centre(), values.radius()
            h = structure.insert(float(c[0]) if dim == 1 and rng.random() < 0.3 else c, r)
            model.insert(h, c, r)
            touched = [int(h)]
        elif op == "insert_many":
            k = int(rng.integers(0, 40))
            cs = np.array([values.centre() for _ in range(k)]).reshape(k, dim)
            rs = np.array([values.radius() for _ in range(k)])
            hs = structure.insert_many(cs, rs)
            assert hs.dtype == np.int64 and hs.shape == (k,)
            for h, c, r in zip(hs.tolist(), cs, rs):
                model.insert(h, c, r)
            touched = hs.tolist()
        elif op == "update":
            (h,) = some_handles(1)
            c0, r0 = model.objects[h]
            small = rng.random() < 0.5
            c = values.nudge(c0) if small else values.centre()
            r = r0 if small else values.radius()
            structure.update(h, c, r)
            model.update(h, c, r)
            touched = [h]
        elif op == "update_many":
            hs = some_handles(int(rng.integers(0, 40)))
            small = rng.random() < 0.6  # the engine's case: everything moves a little
            cs = np.array([values.nudge(model.objects[h][0]) if small else values.centre()
                           for h in hs]).reshape(len(hs), dim)
            rs = np.array([model.objects[h][1] if small else values.radius() for h in hs])
            structure.update_many(np.array(hs, dtype=np.int64), cs, rs)
            for h, c, r in zip(hs, cs, rs):
                model.update(h, c, r)
            touched = hs
        elif op == "remove":
            (h,) = some_handles(1)
            structure.remove(h)
            model.remove(h)
            gone = [h]
        else:
            gone = some_handles(int(rng.integers(0, 30)))
            structure.remove_many(np.array(gone, dtype=np.int64))
            for h in gone:
                model.remove(h)

        # after every operation: the cheap checks
        assert len(structure) == len(model), f"step {step} ({op}): len"
        assert all(h in structure for h in touched) and not any(h in structure for h in gone)
        if touched:
            h = touched[int(rng.integers(len(touched)))]
            c, r = model.objects[h]
            point = values.near(c, r)
            exact = structure.query(point, exact=True)
            assert set(exact.tolist()) == model.query(point), f"step {step} ({op}): exact query at {point}"
            assert h in exact.tolist() or not (point == c).all(), "an object must contain its centre"
        # every FULL_CHECK_EVERY operations: everything
        if step % FULL_CHECK_EVERY == FULL_CHECK_EVERY - 1 or step == ops - 1:
            check_contents(structure, model)
            points = [values.centre() for _ in range(3)]
            for h in some_handles(3):
                points.append(values.near(*model.objects[h]))
            nodes = all_nodes(structure, dim)
            for i, p in enumerate(points):
                check_query(structure, model, p, SCALES[i % 3], nodes=nodes)
            check_query_many(structure, model, np.array(points[:4]), SCALES[step % 3])
    return counts


@pytest.mark.parametrize("kind,dim,shape", CONFIGS, ids=[f"{k!r}-{d}d-{s}" for k, d, s in CONFIGS])
def test_mixed_sequence(kind, dim, shape):
    counts = run_sequence(kind, dim, shape, SEEDS[dim] + (shape == "cube"), SEQUENCE_OPS)
    assert sum(counts.values()) == SEQUENCE_OPS
    assert all(counts.values()), f"an operation never ran: {counts}"


@pytest.mark.parametrize("kind,dim,shape", CONFIGS, ids=[f"{k!r}-{d}d-{s}" for k, d, s in CONFIGS])
def test_bulk_batches(kind, dim, shape):
    """One big insert_many, rounds of update_many (small moves), then remove_many."""
    rng = np.random.default_rng(7 + dim)
    values = Values(rng, dim, kind.grows)
    structure = kind.make(SIZE, origin=(ORIGIN,) * dim, dim=dim, shape=shape)
    model = BruteForce(dim, shape)
    centres = np.array([values.centre() for _ in range(BULK_OBJECTS)])
    radii = np.array([values.radius() for _ in range(BULK_OBJECTS)])
    handles = structure.insert_many(centres, radii)
    assert len(np.unique(handles)) == BULK_OBJECTS
    for h, c, r in zip(handles.tolist(), centres, radii):
        model.insert(h, c, r)
    points = np.array([values.centre() for _ in range(40)] + [values.near(centres[i], radii[i]) for i in range(40)])

    def compare():
        check_contents(structure, model)
        got, counts = structure.query_many(points, exact=True)
        starts = np.concatenate([[0], np.cumsum(counts)])
        for i, p in enumerate(points):
            assert sorted_handles(got[starts[i]:starts[i + 1]]) == sorted(model.query(p)), f"point {i}"
        nodes = all_nodes(structure, dim)
        for p in points[::8]:
            check_query(structure, model, p, nodes=nodes)

    compare()
    for _ in range(BULK_ROUNDS):
        moved = np.array([values.nudge(c) for c in centres])
        if rng.random() < 0.5:
            moved[::50] = [values.centre() for _ in range(len(moved[::50]))]  # a few jump far
        structure.update_many(handles, moved, radii)
        for h, c in zip(handles.tolist(), moved):
            model.update(h, c, model.objects[h][1])
        centres = moved
        compare()
    drop = handles[rng.random(BULK_OBJECTS) < 0.7]
    structure.remove_many(drop)
    for h in drop.tolist():
        model.remove(h)
    compare()


@pytest.mark.parametrize("dim", [1, 2, 3])
def test_root_growth_sequence(dim):
    """Objects ever farther out and ever larger: the root grows many times over."""
    rng = np.random.default_rng(99 + dim)
    tree = TREE.make(SIZE, origin=(ORIGIN,) * dim, dim=dim)
    model = BruteForce(dim, "sphere")
    small = [tree.insert(c, 0.25) for c in rng.uniform(ORIGIN, ORIGIN + SIZE, (GROWTH_SMALL, dim))]
    for h, c in zip(small, tree.centres_of(np.array(small))):
        model.insert(h, c, 0.25)
    for k in range(1, GROWTH_STEPS + 1):
        far = rng.choice([-1.0, 1.0], dim) * SIZE * 2.0**k
        h = tree.insert(far, SIZE * 2.0 ** (k - 3))
        model.insert(h, far, SIZE * 2.0 ** (k - 3))
        check_contents(tree, model)
        nodes = all_nodes(tree, dim)
        for h in small[:5]:
            c, r = model.objects[h]
            check_query(tree, model, c, nodes=nodes)
            check_query(tree, model, c + r, nodes=nodes)
        check_query(tree, model, far, nodes=nodes)
