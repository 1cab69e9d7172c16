"""A second state machine: worlds off the powers of two, the probes and every form of the point query, against Fraction.

``test_structure_stateful.py`` drives one world (size 16 at -8, so every face is a binary fraction) and
checks the point query, ``query_many`` and the pairs against the library's own reference index.  This
machine draws its world per run (sizes 16, 7.3, 1000 and 0.3; origins 0, -8, 0.1, -2048 and 1e6: faces
that round, and coordinates whose ulp is far above a node's), and decides every answer with
``fractions.Fraction`` on the float inputs, independently of the library's exact decider:

- the sphere probes (``overlapping``, exact and as candidates, ``overlapping_many`` with a radius per
  probe), with probe radii that just reach a stored surface, one ulp either side;
- the other forms of the point query (``query_spheres``, ``query_detailed``, ``visible_from``,
  ``query_many``) at scales that round (one ulp above 1, 1e-3, 1e6);
- updates that keep the stored radius (``update(h, c)``, ``update_many(hs, cs)``);
- the contents read back (``handles``, ``centre``, ``radius``) after every step, with
  ``check_invariants``; a move the tree cannot hold (beyond the largest world it grows to) is a
  ``ValueError`` that changes nothing.

Values: binary fractions of the world's size from its origin (node faces as the float arithmetic
rounds them), one ulp either side, anywhere in and around the world, and now and then far outside (the
tree's root grows); radii at radius-class edges (a power of two of the size, times 1/4 or 1/2, and one
ulp below), 0, subnormal, and anywhere below the size.

Budget: 12 machines x :data:`EXAMPLES` runs of up to :data:`STEPS` steps, about 20 s on 2 cores.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from brute_force import KINDS, Kind, exactly_inside
from hypothesis import HealthCheck, Phase, note, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    initialize,
    invariant,
    precondition,
    rule,
    run_state_machine_as_test,
)

SIZES = (16.0, 7.3, 1000.0, 0.3)
ORIGINS = (0.0, -8.0, 0.1, -2048.0, 1e6)
SCALES = (1.0, 0.5, 2.5, math.nextafter(1.0, 2.0), 1e-3, 1e6)
EXAMPLES = 20
STEPS = 20
MAX_BATCH = 5


def nudged(x: float, ulps: int) -> float:
    """``x`` moved ``ulps`` floats up (or down, negative)."""
    for _ in range(abs(ulps)):
        x = math.nextafter(x, math.inf if ulps > 0 else -math.inf)
    return x


class WorldsMachine(RuleBasedStateMachine):
    """One structure and a dict of its objects, in a world drawn per run."""

    kind: Kind
    dim = 3
    shape = "sphere"

    @initialize(size=st.sampled_from(SIZES), origin=st.sampled_from(ORIGINS))
    def start(self, size: float, origin: float) -> None:
        self.size, self.origin = size, origin
        self.structure = self.kind.make(size, origin=(origin,) * self.dim, dim=self.dim, shape=self.shape)
        self.objects: dict[int, tuple[list[float], float]] = {}
        note(f"{self.kind!r} size={size} origin={origin} dim={self.dim} shape={self.shape}")

    # -- values -------------------------------------------------------------

    def coordinate(self, data) -> float:
        o, s, grows = self.origin, self.size, self.kind.grows
        j = data.draw(st.integers(0, 6), label="face level")
        k = data.draw(st.integers(-(2**j) if grows else 0, 3 * 2**j if grows else 2**j - 1), label="face")
        x = nudged(o + s * k / 2**j, data.draw(st.integers(-1, 1), label="ulps"))
        if data.draw(st.integers(0, 4), label="anywhere") == 0:
            x = data.draw(st.floats(o - (2 * s if grows else 0), o + s * (3 if grows else 1), allow_nan=False),
                          label="x")
        if grows and data.draw(st.integers(0, 12), label="far") == 0:
            x = data.draw(st.sampled_from([o + 1e5 * s, o - 3e7 * s]), label="far x")
        if not grows:  # the dense grid's fixed world: [origin, origin + size)
            x = min(max(x, o), math.nextafter(o + s, -math.inf))
        return x

    def centre(self, data) -> list[float]:
        return [self.coordinate(data) for _ in range(self.dim)]

    def radius(self, data) -> float:
        s = self.size
        level = data.draw(st.integers(-3 if self.kind.grows else 1, 9), label="radius level")
        r = nudged(s / 2**level * data.draw(st.sampled_from([0.25, 0.5]), label="class edge"),
                   -data.draw(st.integers(0, 1), label="below"))
        choice = data.draw(st.integers(0, 5), label="radius kind")
        if choice == 0:
            r = data.draw(st.sampled_from([0.0, -0.0, 5e-324, 1e-300]), label="special radius")
        elif choice == 1:
            r = data.draw(st.floats(0.0, s, allow_nan=False), label="any radius")
        if not self.kind.grows:  # the dense grid's radii are below half its size
            r = min(r, math.nextafter(s / 2, 0.0))
        return r

    def handle(self, data) -> int:
        return data.draw(st.sampled_from(sorted(self.objects)), label="handle")

    def point(self, data, scale: float) -> list[float]:
        """A point near an object's surface at ``scale`` (along an axis or a diagonal, one ulp either side),
        or anywhere."""
        if self.objects and data.draw(st.booleans(), label="near a surface"):
            centre, radius = self.objects[self.handle(data)]
            p = list(centre)
            axis = data.draw(st.integers(0, self.dim - 1), label="axis")
            sign = data.draw(st.sampled_from([-1.0, 1.0]), label="sign")
            with np.errstate(all="ignore"):
                if self.shape == "sphere" and self.dim > 1 and data.draw(st.booleans(), label="diagonal"):
                    p = [x + sign * radius * scale / math.sqrt(self.dim) for x in p]
                else:
                    p[axis] = p[axis] + sign * radius * scale
            p[axis] = nudged(p[axis], data.draw(st.integers(-1, 1), label="ulps"))
            if all(math.isfinite(x) for x in p):
                return p
        return self.centre(data)

    def meeting(self, point, reach: float = 0.0, scale: float = 1.0) -> list[int]:
        return sorted(h for h, (c, r) in self.objects.items() if exactly_inside(c, point, r, scale, self.shape, reach))

    def keep(self, handle, centre, radius) -> None:
        self.objects[int(handle)] = ([float(x) for x in centre], float(radius) + 0.0)

    # -- mutations ------------------------------------------------------------

    @rule(data=st.data())
    def insert(self, data):
        centre, radius = self.centre(data), self.radius(data)
        try:
            handle = self.structure.insert(centre, radius)
        except ValueError as refused:  # beyond the largest world the tree grows to
            note(f"refused: {refused}")
            return
        self.keep(handle, centre, radius)

    @rule(data=st.data(), n=st.integers(0, MAX_BATCH))
    def insert_many(self, data, n):
        centres = [self.centre(data) for _ in range(n)]
        radii = [self.radius(data) for _ in range(n)]
        try:
            handles = self.structure.insert_many(np.array(centres).reshape(n, self.dim), np.array(radii))
        except ValueError as refused:
            note(f"refused: {refused}")
            return
        for h, c, r in zip(handles.tolist(), centres, radii):
            self.keep(h, c, r)

    @precondition(lambda self: self.objects)
    @rule(data=st.data(), keep_radius=st.booleans())
    def update(self, data, keep_radius):
        h = self.handle(data)
        centre = self.centre(data)
        radius = self.objects[h][1] if keep_radius else self.radius(data)
        try:
            if keep_radius:
                self.structure.update(h, centre)
            else:
                self.structure.update(h, centre, radius)
        except ValueError as refused:  # changes nothing: the invariant reads the contents back
            note(f"refused: {refused}")
            return
        self.keep(h, centre, radius)

    @precondition(lambda self: self.objects)
    @rule(data=st.data(), keep_radii=st.booleans())
    def update_many(self, data, keep_radii):
        handles = data.draw(st.lists(st.sampled_from(sorted(self.objects)), unique=True, max_size=MAX_BATCH),
                            label="handles")
        centres = [self.centre(data) for _ in handles]
        radii = [self.objects[h][1] if keep_radii else self.radius(data) for h in handles]
        array = np.array(centres, dtype=np.float64).reshape(len(handles), self.dim)
        try:
            if keep_radii:
                self.structure.update_many(handles, array)
            else:
                self.structure.update_many(handles, array, np.array(radii, dtype=np.float64))
        except ValueError as refused:
            note(f"refused: {refused}")
            return
        for h, c, r in zip(handles, centres, radii):
            self.keep(h, c, r)

    @precondition(lambda self: self.objects)
    @rule(data=st.data())
    def remove(self, data):
        h = self.handle(data)
        self.structure.remove(h)
        del self.objects[h]

    @precondition(lambda self: self.objects)
    @rule(data=st.data())
    def remove_many(self, data):
        handles = data.draw(st.lists(st.sampled_from(sorted(self.objects)), unique=True, max_size=MAX_BATCH),
                            label="handles")
        self.structure.remove_many(handles)
        for h in handles:
            del self.objects[h]

    # -- queries --------------------------------------------------------------

    @rule(data=st.data(), scale=st.sampled_from(SCALES))
    def probes(self, data, scale):
        """``overlapping`` and ``overlapping_many``, probe radii just reaching a stored surface included."""
        p = self.point(data, scale)
        reach = data.draw(st.sampled_from([0.0, 5e-324, self.size / 64, self.size / 3, self.size * 2]), label="reach")
        if self.objects and data.draw(st.booleans(), label="reach a surface"):
            c, r = self.objects[self.handle(data)]
            with np.errstate(all="ignore"):
                d = np.asarray(c) - np.asarray(p)
                gap = float(np.abs(d).max() if self.shape == "cube" else np.sqrt(np.sum(d * d))) - r * scale
            if math.isfinite(gap) and gap >= 0.0:
                reach = max(nudged(gap, data.draw(st.integers(-1, 1), label="ulps")), 0.0)
        note(f"probe at {p}, reach {reach!r}, scale {scale!r}")
        want = self.meeting(p, reach, scale)
        assert sorted(self.structure.overlapping(p, reach, exact=True, scale=scale).tolist()) == want
        candidates = set(self.structure.overlapping(p, reach, scale=scale).tolist())
        assert set(want) <= candidates, f"candidates miss {set(want) - candidates}"
        handles, counts = self.structure.overlapping_many(np.array([p, p]), [reach, 0.0], exact=True, scale=scale)
        first, second = np.split(handles, np.cumsum(counts)[:-1])
        assert sorted(first.tolist()) == want and sorted(second.tolist()) == self.meeting(p, 0.0, scale)

    @rule(data=st.data(), scale=st.sampled_from(SCALES))
    def point_query_forms(self, data, scale):
        """``query_spheres``, ``query_detailed`` and ``visible_from`` at one point: the same exact set."""
        p = self.point(data, scale)
        note(f"point {p}, scale {scale!r}")
        want = self.meeting(p, 0.0, scale)
        handles, centres, radii = self.structure.query_spheres(p, exact=True, scale=scale)
        assert sorted(handles.tolist()) == want
        for h, c, r in zip(handles.tolist(), centres.reshape(-1, self.dim).tolist(), radii.tolist()):
            assert (c, r) == tuple(self.objects[h]), f"query_spheres: object {h}"
        detailed = self.structure.query_detailed(p, scale=scale, trace=data.draw(st.booleans(), label="trace"))
        assert sorted(detailed.handles.tolist()) == want
        assert detailed.candidates == len(self.structure.query(p, scale=scale))
        for h in self.objects:
            assert self.structure.visible_from(h, p, scale=scale) == (h in want), f"visible_from({h})"

    @rule(data=st.data(), scale=st.sampled_from(SCALES), m=st.integers(1, MAX_BATCH))
    def query_many(self, data, scale, m):
        points = np.array([self.point(data, scale) for _ in range(m)], dtype=np.float64).reshape(m, self.dim)
        handles, counts = self.structure.query_many(points, exact=True, scale=scale)
        for p, row in zip(points.tolist(), np.split(handles, np.cumsum(counts)[:-1])):
            assert sorted(row.tolist()) == self.meeting(p, 0.0, scale), f"query_many at {p}"

    @rule()
    def overlapping_pairs(self):
        first, second = self.structure.overlapping_pairs()
        got = list(zip(first.tolist(), second.tolist()))
        assert len(got) == len(set(got)), "a pair reported twice"
        handles = sorted(self.objects)
        want = {(a, b) for i, a in enumerate(handles) for b in handles[i + 1:]
                if exactly_inside(self.objects[a][0], self.objects[b][0], self.objects[a][1], 1.0, self.shape,
                                  self.objects[b][1])}
        assert set(got) == want, f"missing {want - set(got)}, extra {set(got) - want}"

    # -- after every step ---------------------------------------------------------

    @invariant()
    def contents_read_back(self):
        self.structure.check_invariants()
        handles = sorted(self.objects)
        assert len(self.structure) == len(handles) and self.structure.handles().tolist() == handles
        for h in handles:
            assert self.structure.centre(h).tolist() == self.objects[h][0]
            assert self.structure.radius(h) == self.objects[h][1]


@pytest.mark.parametrize("shape", ["sphere", "cube"])
@pytest.mark.parametrize("dim", [1, 2, 3])
@pytest.mark.parametrize("kind", KINDS, ids=repr)
def test_worlds_machine(kind, dim, shape):
    machine = type(f"{kind.name.title()}{dim}D{shape.title()}WorldsMachine", (WorldsMachine,),
                   {"kind": kind, "dim": dim, "shape": shape})
    run_state_machine_as_test(machine, settings=settings(max_examples=EXAMPLES, stateful_step_count=STEPS,
                                                         deadline=None, phases=[p for p in Phase if p != Phase.explain],
                                                         suppress_health_check=[HealthCheck.too_slow,
                                                                                HealthCheck.data_too_large]))
