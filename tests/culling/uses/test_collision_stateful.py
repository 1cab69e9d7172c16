"""CollisionCandidates as a state machine, against ``Fraction``: every mutation, then every query it answers.

``test_collision.py`` drives it with a seeded generator and checks ``touching`` in floats; this machine
draws the world (1-3 dimensions, a probe radius of 0 or not, sizes off the powers of two), mutates it
with every call (inserts, updates that keep or change the bounding radius, removals, a new default probe
radius) and checks ``touching`` (the default probe and a radius per call), ``candidates``,
``touching_many`` (a radius per probe), ``pairs`` and ``resolve`` with the truth decided in rational
arithmetic on the float inputs: a probe touches an object when ``|c - p| <= b + q``.  Probes are aimed at
surfaces: ``b + q`` from a centre along an axis, one ulp either side.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
from brute_force import exactly_inside
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

from culling.uses.collision import CollisionCandidates


def touches(centre, bounding: float, point, probe: float) -> bool:
    """``|c - p| <= b + q`` in rational arithmetic (contact counts)."""
    return exactly_inside(centre, point, bounding, 1.0, "sphere", probe)


def overlaps(centre, bounding: float, point, probe: float) -> bool:
    """``|c - p| < b + q``: what ``resolve`` pushes the probe out of (contact is not an overlap)."""
    reach = Fraction(bounding) + Fraction(probe)
    return sum((Fraction(c) - Fraction(p)) ** 2 for c, p in zip(centre, point)) < reach * reach


def _square_root(x: Fraction) -> Fraction:
    """The square root of ``x >= 0`` within a relative ``2**-120``, by the integer square root."""
    if x <= 0:
        return Fraction(0)
    shift = 2 * max(0, 256 - x.numerator.bit_length() + x.denominator.bit_length())
    return Fraction(math.isqrt((x.numerator << shift) // x.denominator), 1 << (shift // 2))


class CollisionMachine(RuleBasedStateMachine):
    @initialize(dim=st.integers(1, 3), probe=st.sampled_from([0.0, 1.5, 0.3]), size=st.sampled_from([64.0, 7.3]),
                origin=st.sampled_from([0.0, -20.0, 0.1]))
    def start(self, dim, probe, size, origin):
        self.dim, self.probe, self.size, self.origin = dim, probe, size, origin
        self.cc = CollisionCandidates(probe, size=size, origin=(origin,) * dim, dim=dim)
        self.objects: dict[int, tuple[list[float], float]] = {}
        note(f"dim={dim} probe={probe} size={size} origin={origin}")

    def coordinate(self, data) -> float:
        k = data.draw(st.integers(-16, 48), label="k")
        return self.origin + self.size * k / 32 if data.draw(st.booleans(), label="on a grid") else \
            data.draw(st.floats(self.origin - self.size, self.origin + 2 * self.size, allow_nan=False), label="x")

    def centre(self, data) -> list[float]:
        return [self.coordinate(data) for _ in range(self.dim)]

    def bounding(self, data) -> float:
        return data.draw(st.one_of(st.sampled_from([0.0, 0.5, 1.0, self.size / 8, 5e-324]),
                                   st.floats(0.0, self.size / 2, allow_nan=False)), label="bounding")

    def handle(self, data) -> int:
        return data.draw(st.sampled_from(sorted(self.objects)), label="handle")

    def point(self, data, probe: float) -> list[float]:
        """On or one ulp off an object's surface grown by ``probe`` (along an axis), or anywhere."""
        if self.objects and data.draw(st.booleans(), label="at a surface"):
            centre, b = self.objects[self.handle(data)]
            p = list(centre)
            axis = data.draw(st.integers(0, self.dim - 1), label="axis")
            p[axis] = p[axis] + data.draw(st.sampled_from([-1.0, 1.0]), label="sign") * (b + probe)
            step = data.draw(st.integers(-1, 1), label="ulps")
            if step:
                p[axis] = math.nextafter(p[axis], math.inf * step)
            return p
        return self.centre(data)

    def touching(self, point, probe: float) -> list[int]:
        return sorted(h for h, (c, b) in self.objects.items() if touches(c, b, point, probe))

    # -- mutations --------------------------------------------------------------

    @rule(data=st.data())
    def insert(self, data):
        centre, b = self.centre(data), self.bounding(data)
        self.objects[self.cc.insert(centre, b)] = (centre, b)

    @rule(data=st.data(), n=st.integers(0, 5))
    def insert_many(self, data, n):
        centres, radii = [self.centre(data) for _ in range(n)], [self.bounding(data) for _ in range(n)]
        handles = self.cc.insert_many(np.array(centres).reshape(n, self.dim), np.array(radii))
        self.objects.update({int(h): (c, b) for h, c, b in zip(handles.tolist(), centres, radii)})

    @precondition(lambda self: self.objects)
    @rule(data=st.data(), keep=st.booleans())
    def update(self, data, keep):
        h, centre = self.handle(data), self.centre(data)
        if keep:
            self.cc.update(h, centre)
            self.objects[h] = (centre, self.objects[h][1])
        else:
            b = self.bounding(data)
            self.cc.update(h, centre, b)
            self.objects[h] = (centre, b)

    @precondition(lambda self: self.objects)
    @rule(data=st.data(), keep=st.booleans())
    def update_many(self, data, keep):
        handles = data.draw(st.lists(st.sampled_from(sorted(self.objects)), unique=True, max_size=5), label="handles")
        centres = [self.centre(data) for _ in handles]
        radii = [self.objects[h][1] if keep else self.bounding(data) for h in handles]
        array = np.array(centres).reshape(len(handles), self.dim)
        if keep:
            self.cc.update_many(handles, array)
        else:
            self.cc.update_many(handles, array, np.array(radii))
        self.objects.update({h: (c, b) for h, c, b in zip(handles, centres, radii)})

    @precondition(lambda self: self.objects)
    @rule(data=st.data(), many=st.booleans())
    def remove(self, data, many):
        if many:
            handles = data.draw(st.lists(st.sampled_from(sorted(self.objects)), unique=True, max_size=5),
                                label="handles")
            self.cc.remove_many(handles)
        else:
            handles = [self.handle(data)]
            self.cc.remove(handles[0])
        for h in handles:
            del self.objects[h]

    @rule(probe=st.sampled_from([0.0, 0.3, 1.5, 2.0**-30]))
    def set_probe_radius(self, probe):
        self.cc.set_probe_radius(probe)
        self.probe = probe

    # -- queries ------------------------------------------------------------------

    def path(self, data, probe: float) -> tuple[list[float], list[float]]:
        """A move aimed at the edges: grazing an object (the line at exactly ``b + q`` from its centre,
        or an ulp off), ending on its surface, starting on it, or between two places anywhere."""
        if self.objects and data.draw(st.booleans(), label="aimed"):
            centre, b = self.objects[self.handle(data)]
            kind = data.draw(st.sampled_from(["graze", "end on", "start on"]), label="aim")
            if kind == "graze" and self.dim > 1:
                axis, other = data.draw(st.permutations(range(self.dim)), label="axes")[:2]
                start, end = list(centre), list(centre)
                offset = data.draw(st.sampled_from([-1.0, 1.0]), label="side") * (b + probe)
                start[other] = end[other] = centre[other] + offset
                if data.draw(st.booleans(), label="an ulp off"):
                    start[other] = end[other] = math.nextafter(start[other], math.inf)
                start[axis] = centre[axis] - self.size / 4
                end[axis] = centre[axis] + self.size / 4
                return start, end
            on = self.point(data, probe) if data.draw(st.booleans(), label="near") else list(centre)
            away = self.centre(data)
            return (away, on) if kind == "end on" else (on, away)
        return self.centre(data), self.centre(data)

    @rule(data=st.data(), own=st.booleans())
    def sweep(self, data, own):
        """The first contact along a move, against the exact truth: a path touches an object when its
        nearest point lies within ``b + q``, unless it starts touching and moves away or along."""
        probe = data.draw(st.sampled_from([0.0, 0.7]), label="probe") if own else self.probe
        start, end = self.path(data, probe)
        t, hit = self.cc.sweep(start, end, probe) if own else self.cc.sweep(start, end)
        first = {}
        s, e = [Fraction(x) for x in start], [Fraction(x) for x in end]
        d = [b - a for a, b in zip(s, e)]
        ll = sum(x * x for x in d)
        for h, (c, b) in self.objects.items():
            w = [a - Fraction(x) for a, x in zip(s, c)]
            reach = (Fraction(b) + Fraction(probe)) ** 2
            ww, wd = sum(x * x for x in w), sum(x * y for x, y in zip(w, d))
            if ll == 0:
                continue
            if ww <= reach:
                if wd < 0:
                    first[h] = 0.0
                continue
            nearest = min(max(-wd / ll, Fraction(0)), Fraction(1))
            if ww + 2 * nearest * wd + nearest * nearest * ll <= reach:
                # the nearer root, without cancellation (wd < 0 here), its square root to 2**-120
                first[h] = float((ww - reach) / (-wd + _square_root(wd * wd - ll * (ww - reach))))
        note(f"sweep {start} -> {end} (q={probe}): {(t, hit)}; truth {first}")
        if not first:
            assert (t, hit) == (1.0, -1)
            return
        assert hit in first and 0.0 <= t <= 1.0
        earliest = min(first.values())
        # t within two ulps of 1 of the real contact, also where the path grazes (it lost half its digits)
        assert abs(t - earliest) <= 2.0 ** -51 and abs(first[hit] - earliest) <= 2.0 ** -51

    @rule(data=st.data())
    def touching_and_candidates(self, data):
        p = self.point(data, self.probe)
        want = self.touching(p, self.probe)
        assert sorted(self.cc.touching(p).tolist()) == want, f"touching at {p}"
        assert set(want) <= set(self.cc.candidates(p).tolist()), f"candidates at {p}"
        other = data.draw(st.sampled_from([0.0, 0.75, self.size / 4]), label="probe radius")
        p = self.point(data, other)
        assert sorted(self.cc.touching(p, probe_radius=other).tolist()) == self.touching(p, other)

    @rule(data=st.data(), m=st.integers(1, 4))
    def touching_many(self, data, m):
        radii = [data.draw(st.sampled_from([0.0, 0.75, 3.0]), label="radius") for _ in range(m)]
        points = [self.point(data, q) for q in radii]
        handles, counts = self.cc.touching_many(np.array(points).reshape(m, self.dim), radii)
        for p, q, row in zip(points, radii, np.split(handles, np.cumsum(counts)[:-1])):
            assert sorted(row.tolist()) == self.touching(p, q), f"touching_many at {p} radius {q}"
        handles, counts = self.cc.touching_many(np.array(points).reshape(m, self.dim))   # the default radius
        for p, row in zip(points, np.split(handles, np.cumsum(counts)[:-1])):
            assert sorted(row.tolist()) == self.touching(p, self.probe)

    @rule()
    def pairs(self):
        first, second = self.cc.pairs()
        got = list(zip(first.tolist(), second.tolist()))
        handles = sorted(self.objects)
        want = {(a, b) for i, a in enumerate(handles) for b in handles[i + 1:]
                if touches(self.objects[a][0], self.objects[a][1], self.objects[b][0], self.objects[b][1])}
        assert len(got) == len(set(got)) and set(got) == want

    @rule(data=st.data())
    def resolve(self, data):
        """The result is a new finite position; with one object, it overlaps it no more (a probe radius of
        the call's own, or the default one)."""
        own = data.draw(st.booleans(), label="own probe radius")
        probe = data.draw(st.sampled_from([0.0, 0.7]), label="probe") if own else self.probe
        p = self.point(data, probe)
        given = np.array(p)
        result = self.cc.resolve(given, iterations=8, probe_radius=probe) if own else \
            self.cc.resolve(given, iterations=8)
        assert result is not given and given.tolist() == p and result.shape == (self.dim,)
        assert np.isfinite(result).all()
        if len(self.objects) == 1:
            (centre, b), = self.objects.values()
            assert not overlaps(centre, b, result.tolist(), probe), f"resolve({p}, q={probe}) -> {result.tolist()}"

    @invariant()
    def contents(self):
        if not hasattr(self, "cc"):
            return
        self.cc.check_invariants()
        handles = sorted(self.objects)
        assert self.cc.handles().tolist() == handles and self.cc.probe_radius == self.probe
        if handles:
            assert self.cc.bounding_radius_of(handles).tolist() == [self.objects[h][1] for h in handles]
            assert np.asarray(self.cc.centres_of(handles)).reshape(-1, self.dim).tolist() == \
                [self.objects[h][0] for h in handles]


def test_collision_machine():
    run_state_machine_as_test(CollisionMachine, settings=settings(
        max_examples=60, stateful_step_count=20, deadline=None, phases=[p for p in Phase if p != Phase.explain],
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large]))
