"""Hypothesis state machines: every public operation against the brute-force model.

One machine per (structure, dim, shape): the view-distance tree (whose root
grows) and, when ``culling`` has it, the dense grid (a fixed world, so centres
and radii are drawn inside it).  Each step is one of insert / insert_many /
update / update_many / remove / remove_many / query / query_many, and after
every step ``check_invariants()``, ``len`` and ``in`` are compared with the
model.  Each query compares the candidates, the exact answer and ``trace`` at
three view-distance scales (docs/CONTRACT.md, "Queries" and "Trace").

Values are drawn from binary fractions of the root size (so points land exactly
on node boundaries and on grown-box edges), from arbitrary floats, and near
existing objects (their centres, and their surfaces along an axis: surface
points count as inside).  The tree also gets radii from 0 to several root sizes
and centres far outside the root, so the root grows.

Budget: 12 machines x ``max_examples`` (60 in both conftest profiles) x up to
``STEPS`` steps: 720 examples, about 14,000 steps (each step also runs several
queries and traces), about 35 s on 2 cores.
"""

from __future__ import annotations

import numpy as np
import pytest
from brute_force import KINDS, BruteForce, absent_handles, all_nodes, check_contents, check_query, check_query_many
from hypothesis import note, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule, run_state_machine_as_test

SIZE = 16.0
ORIGIN = -8.0          # the root (or world) is [-8, 8) on every axis
SCALES = (0.5, 1.0, 2.5)
STEPS = 20             # steps per example: enough to grow, shrink and regrow a small tree
MAX_BATCH = 6
#: 12 parametrisations (2 structures x 3 dims x 2 shapes), each running the
#: profile's max_examples (60) sequences of up to STEPS steps.
HYPOTHESIS_EXAMPLES = 12 * 60
HYPOTHESIS_STEPS_AT_MOST = HYPOTHESIS_EXAMPLES * STEPS


# -- value strategies ----------------------------------------------------------

def binary_fraction(lo_k: int, hi_k: int, base: float, max_j: int) -> st.SearchStrategy[float]:
    """``base + SIZE * k / 2**j`` with ``lo_k * 2**j <= k <= hi_k * 2**j`` (exact binary values)."""
    return st.integers(0, max_j).flatmap(
        lambda j: st.integers(lo_k * 2**j, hi_k * 2**j).map(lambda k: base + SIZE * k / 2**j))


def coordinates(grows: bool) -> st.SearchStrategy[float]:
    top = ORIGIN + SIZE
    if grows:
        return st.one_of(
            binary_fraction(-2, 3, ORIGIN, 7),
            st.floats(ORIGIN - 2 * SIZE, top + 2 * SIZE, allow_nan=False, allow_infinity=False),
            st.floats(-1e4 * SIZE, 1e4 * SIZE, allow_nan=False, allow_infinity=False),
        )
    return st.one_of(
        binary_fraction(0, 1, ORIGIN, 7).filter(lambda x: x < top),
        st.floats(ORIGIN, top, exclude_max=True, allow_nan=False),
    )


def radii(grows: bool) -> st.SearchStrategy[float]:
    special = st.sampled_from([0.0, -0.0, 1e-30, 1e-300, SIZE / 4, SIZE / 8, SIZE / 64])
    if grows:
        return st.one_of(
            special,
            binary_fraction(0, 3, 0.0, 9),
            st.floats(0.0, 3 * SIZE, allow_nan=False),
            st.floats(0.0, 100 * SIZE, allow_nan=False),
        )
    below_half = st.floats(0.0, SIZE / 2, exclude_max=True, allow_nan=False)
    return st.one_of(special, binary_fraction(0, 1, 0.0, 9).filter(lambda r: r < SIZE / 2), below_half)


# -- the machine ---------------------------------------------------------------

class CullingMachine(RuleBasedStateMachine):
    """Drives one structure and the brute-force model with the same operations."""

    kind = None
    dim = 3
    shape = "sphere"

    def __init__(self) -> None:
        super().__init__()
        self.structure = self.kind.make(SIZE, origin=(ORIGIN,) * self.dim, dim=self.dim, shape=self.shape)
        self.model = BruteForce(self.dim, self.shape)
        self.removed: list[int] = []
        coordinate = coordinates(self.kind.grows)
        self.centres = st.lists(coordinate, min_size=self.dim, max_size=self.dim).map(np.array)
        self.radii = radii(self.kind.grows)

    # helpers
    def handles(self, data, unique_list=False):
        pool = st.sampled_from(self.model.handles())
        if unique_list:
            return data.draw(st.lists(pool, unique=True, max_size=MAX_BATCH), label="handles")
        return data.draw(pool, label="handle")

    def new_centre(self, data, old=None):
        """A fresh centre, or (for a move) the old one nudged a little."""
        if old is not None and data.draw(st.booleans(), label="small move"):
            step = data.draw(binary_fraction(-1, 1, 0.0, 3), label="nudge") / 2**10
            axis = data.draw(st.integers(0, self.dim - 1), label="axis")
            centre = old.copy()
            centre[axis] += step
            if not self.kind.grows:
                centre = np.clip(centre, ORIGIN, np.nextafter(ORIGIN + SIZE, -np.inf))
            return centre
        return data.draw(self.centres, label="centre")

    def new_radius(self, data, old=None):
        if old is not None and data.draw(st.booleans(), label="keep radius"):
            return old
        return data.draw(self.radii, label="radius")

    def batch(self, data, n, olds=None):
        centres = np.array([self.new_centre(data, None if olds is None else olds[i][0]) for i in range(n)],
                           dtype=np.float64).reshape(n, self.dim)
        radii_ = np.array([self.new_radius(data, None if olds is None else olds[i][1]) for i in range(n)],
                          dtype=np.float64)
        if self.dim == 1 and data.draw(st.booleans(), label="flat (n,) centres"):
            centres = centres.reshape(n)
        return centres, radii_

    def probe(self, centre, radius):
        """Query at a centre and on its surface along the first and last axis."""
        c = np.asarray(centre, dtype=np.float64).reshape(self.dim)
        nodes = all_nodes(self.structure, self.dim)
        check_query(self.structure, self.model, c, nodes=nodes)
        for axis, sign in ((0, 1.0), (self.dim - 1, -1.0)):
            p = c.copy()
            p[axis] += sign * radius
            check_query(self.structure, self.model, p, nodes=nodes)

    # mutations
    @rule(data=st.data())
    def insert(self, data):
        centre, radius = data.draw(self.centres, label="centre"), data.draw(self.radii, label="radius")
        if self.dim == 1 and data.draw(st.booleans(), label="scalar centre"):
            centre = float(centre[0])
        h = self.structure.insert(centre, radius)
        assert isinstance(h, (int, np.integer)) and not isinstance(h, bool), type(h)
        assert int(h) >= 0 and int(h) not in self.model, f"insert returned handle {h}"
        self.model.insert(h, centre, radius)
        self.probe(centre, radius)

    @rule(data=st.data(), n=st.integers(0, MAX_BATCH))
    def insert_many(self, data, n):
        centres, radii_ = self.batch(data, n)
        hs = self.structure.insert_many(centres, radii_)
        assert isinstance(hs, np.ndarray) and hs.dtype == np.int64 and hs.shape == (n,), hs
        assert len(set(hs.tolist())) == n and not set(hs.tolist()) & set(self.model.objects)
        for h, c, r in zip(hs.tolist(), centres.reshape(n, self.dim), radii_):
            self.model.insert(h, c, r)
        if n:
            self.probe(centres.reshape(n, self.dim)[0], radii_[0])

    @precondition(lambda self: len(self.model) > 0)
    @rule(data=st.data())
    def update(self, data):
        h = self.handles(data)
        old_c, old_r = self.model.objects[h]
        centre, radius = self.new_centre(data, old_c), self.new_radius(data, old_r)
        self.structure.update(h, centre, radius)
        self.model.update(h, centre, radius)
        self.probe(centre, radius)
        check_query(self.structure, self.model, old_c)

    @precondition(lambda self: len(self.model) > 0)
    @rule(data=st.data())
    def update_many(self, data):
        hs = self.handles(data, unique_list=True)
        olds = [self.model.objects[h] for h in hs]
        centres, radii_ = self.batch(data, len(hs), olds)
        self.structure.update_many(np.array(hs, dtype=np.int64), centres, radii_)
        for h, c, r in zip(hs, centres.reshape(len(hs), self.dim), radii_):
            self.model.update(h, c, r)
        if hs:
            self.probe(centres.reshape(len(hs), self.dim)[0], radii_[0])
            check_query(self.structure, self.model, olds[0][0])

    @precondition(lambda self: len(self.model) > 0)
    @rule(data=st.data())
    def remove(self, data):
        h = self.handles(data)
        centre, radius = self.model.objects[h]
        self.structure.remove(h)
        self.model.remove(h)
        self.removed.append(h)
        self.probe(centre, radius)

    @precondition(lambda self: len(self.model) > 0)
    @rule(data=st.data())
    def remove_many(self, data):
        hs = self.handles(data, unique_list=True)
        self.structure.remove_many(np.array(hs, dtype=np.int64))
        for h in hs:
            self.model.remove(h)
        self.removed.extend(hs)

    # queries
    @rule(data=st.data())
    def query(self, data):
        if len(self.model) and data.draw(st.booleans(), label="near an object"):
            h = self.handles(data)
            centre, radius = self.model.objects[h]
            scale = data.draw(st.sampled_from(SCALES), label="surface scale")
            where = data.draw(st.sampled_from(["centre", "axis", "diagonal"]), label="where")
            point = centre.copy()
            if where == "axis":
                axis = data.draw(st.integers(0, self.dim - 1), label="axis")
                point[axis] += data.draw(st.sampled_from([-1.0, 1.0]), label="sign") * radius * scale
            elif where == "diagonal":
                with np.errstate(under="ignore"):  # subnormal radii
                    point = centre + radius * scale / np.sqrt(self.dim)
        else:
            point = data.draw(self.centres, label="point")
        note(f"query point {point.tolist()}")
        traces = []
        nodes = all_nodes(self.structure, self.dim)
        for scale in SCALES:
            check_query(self.structure, self.model, point, scale, nodes=nodes)
            traces.append(self.structure.trace(point, scale=scale) if scale != 1.0
                          else self.structure.trace(point))
        # a smaller view-distance scale visits a subset of the nodes and candidates
        for small, large in zip(traces, traces[1:]):
            assert visited(small) <= visited(large), "smaller scale visited a node a larger one did not"
            assert set(small.candidates.tolist()) <= set(large.candidates.tolist())
        assert traces[0].visited_nodes <= traces[1].visited_nodes

    @rule(data=st.data(), m=st.integers(0, 4), scale=st.sampled_from(SCALES))
    def query_many(self, data, m, scale):
        points = np.array([data.draw(self.centres, label="point") for _ in range(m)]).reshape(m, self.dim)
        check_query_many(self.structure, self.model, points, scale)

    @rule()
    def overlapping_pairs(self):
        """The pairs against the model, after any mix of changes: the structure's bands, kept from its
        last call (culling.pairs.bands.PlanCache), must fit or be made again."""
        first, second = self.structure.overlapping_pairs()
        got = list(zip(first.tolist(), second.tolist()))
        assert len(got) == len(set(got)), "a pair reported twice"
        assert set(got) == self.model.pairs()

    # after every step
    @invariant()
    def agrees_with_model(self):
        check_contents(self.structure, self.model)
        for h in absent_handles(self.model, self.removed[-3:]):
            assert h not in self.structure, f"handle {h} should not be in the structure"


def visited(trace) -> set:
    """The visited nodes of a trace, as ``(node_size, low corner)`` keys."""
    return {(float(lv.node_size), tuple(lo)) for lv in trace.levels
            for lo in np.asarray(lv.bounds)[:, 0, :].tolist()}


def machine(kind, dim: int, shape: str) -> type[CullingMachine]:
    return type(f"{kind.name.title()}{dim}D{shape.title()}Machine", (CullingMachine,),
                {"kind": kind, "dim": dim, "shape": shape})


@pytest.mark.parametrize("shape", ["sphere", "cube"])
@pytest.mark.parametrize("dim", [1, 2, 3])
@pytest.mark.parametrize("kind", KINDS, ids=repr)
def test_state_machine(kind, dim, shape):
    run_state_machine_as_test(machine(kind, dim, shape), settings=settings(stateful_step_count=STEPS))
