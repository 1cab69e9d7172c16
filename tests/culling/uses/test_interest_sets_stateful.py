"""InterestSets alone as a state machine: :meth:`advance` with and without hysteresis, :meth:`forget`,
:meth:`reset` and refused calls, against sets in Python.

``test_interest.py`` drives the sets through :class:`InterestManager`, whose rows come from the tree or
the grid; here the rows are the caller's, as a server with its own spatial answer would hand them over:
any order, a viewer's outer row (hysteresis) a superset of its inner row, handles forgotten and handed
out again, viewers coming and going.  The rule a tick follows, per viewer, with ``P`` its previous set
and ``G`` the handles forgotten since::

    kept    = {h in P - G : h in outer}      (outer = inner without hysteresis)
    left    = P - kept
    entered = inner - kept
    new set = kept | entered
"""

from __future__ import annotations

import pickle

import numpy as np
import pytest
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

from culling import InterestSets

HANDLES = st.integers(0, 40) | st.sampled_from([1_000, 70_000])     # a few far above the rest: the flags grow
VIEWERS = st.integers(-3, 12) | st.sampled_from([-2**63, 2**63 - 1])


def csr(rows: list[list[int]]) -> tuple[np.ndarray, np.ndarray]:
    return (np.array([h for r in rows for h in r], dtype=np.int64), np.array([len(r) for r in rows], dtype=np.int64))


def split(offsets: np.ndarray, values: np.ndarray) -> list[list[int]]:
    return [values[offsets[i]:offsets[i + 1]].tolist() for i in range(offsets.size - 1)]


class InterestSetsMachine(RuleBasedStateMachine):
    @initialize(hysteresis=st.sampled_from([0.0, 0.25]))
    def start(self, hysteresis: float) -> None:
        self.sets = InterestSets(hysteresis)
        self.sticky = hysteresis > 0.0
        self.held: dict[int, set[int]] = {}      # the last tick's sets, as stored (forgotten handles still in)
        self.gone: set[int] = set()
        note(f"InterestSets({hysteresis})")

    def snapshot(self) -> tuple:
        return (self.sets.viewers.tolist(), {v: self.sets.interest(v).tolist() for v in self.held})

    @rule(data=st.data())
    def advance(self, data) -> None:
        ids = data.draw(st.lists(VIEWERS, max_size=6, unique=True), label="viewers")
        inner_rows, outer_rows = [], []
        for _ in ids:
            outer = data.draw(st.lists(HANDLES, max_size=8, unique=True), label="outer")
            inner = [h for h in outer if data.draw(st.booleans(), label="inner")] if self.sticky else outer
            if self.sticky and self.held and data.draw(st.booleans(), label="keep some held"):
                held = sorted(set().union(*self.held.values()) - set(outer))
                outer = outer + data.draw(st.lists(st.sampled_from(held), unique=True), label="held") if held else outer
            inner_rows.append(data.draw(st.permutations(inner), label="inner order"))
            outer_rows.append(data.draw(st.permutations(outer), label="outer order"))
        handles, counts = csr(inner_rows)
        if self.sticky:
            outer_handles, outer_counts = csr(outer_rows)
            tick = self.sets.advance(ids, handles, counts, outer_handles, outer_counts)
        else:
            tick = self.sets.advance(ids, handles, counts)

        assert tick.viewer_ids.tolist() == ids
        entered, left = split(tick.entered_offsets, tick.entered), split(tick.left_offsets, tick.left)
        held = {}
        for row, (viewer, inner, outer) in enumerate(zip(ids, inner_rows, outer_rows)):
            previous = self.held.get(viewer, set())
            kept = {h for h in previous - self.gone if h in set(outer)}
            assert left[row] == sorted(previous - kept), f"viewer {viewer}'s left"
            assert entered[row] == sorted(set(inner) - kept), f"viewer {viewer}'s entered"
            assert tick.entered_of(row).tolist() == entered[row] and tick.left_of(row).tolist() == left[row]
            held[viewer] = kept | set(inner)
        assert tick.events == sum(map(len, entered)) + sum(map(len, left))
        self.held, self.gone = held, set()

    @rule(data=st.data())
    def refused_advance(self, data) -> None:
        """A handle twice in a row, an inner handle missing from its outer row, counts that do not add up,
        a negative handle, a viewer twice: an error, and nothing changes."""
        before = self.snapshot()
        fault = data.draw(st.sampled_from(["twice", "not in outer", "counts", "negative", "viewer twice"]))
        if fault == "not in outer" and not self.sticky:
            fault = "twice"
        ids, rows = [5, 7], [[1, 2], [3, 3 if fault == "twice" else 4]]
        counts = [2, 2] if fault != "counts" else [2, 3]
        if fault == "negative":
            rows[1][1] = -1
        if fault == "viewer twice":
            ids = [5, 5]
        handles = [h for r in rows for h in r]
        outer = [h for h in handles if not (fault == "not in outer" and h == 4)]
        outer_counts = [2, 1] if fault == "not in outer" else counts
        with pytest.raises((ValueError, TypeError)):
            if self.sticky:
                self.sets.advance(ids, handles, counts, outer, outer_counts)
            else:
                self.sets.advance(ids, handles, counts)
        assert self.snapshot() == before

    @rule(handles=st.lists(HANDLES, max_size=4))
    def forget(self, handles: list[int]) -> None:
        self.sets.forget(handles)
        self.gone |= set(handles)

    @precondition(lambda self: hasattr(self, "sets"))
    @rule()
    def reset(self) -> None:
        self.sets.reset()
        self.held, self.gone = {}, set()

    @precondition(lambda self: hasattr(self, "sets"))
    @rule()
    def pickle_round_trip(self) -> None:
        copy = pickle.loads(pickle.dumps(self.sets))
        assert copy.viewers.tolist() == self.sets.viewers.tolist() and copy.hysteresis == self.sets.hysteresis
        for viewer in self.held:
            assert copy.interest(viewer).tolist() == self.sets.interest(viewer).tolist()
        self.sets = copy

    @invariant()
    def sets_as_held(self) -> None:
        if not hasattr(self, "sets"):
            return
        assert self.sets.viewers.tolist() == sorted(self.held) and len(self.sets) == len(self.held)
        for viewer, held in self.held.items():
            assert viewer in self.sets
            assert self.sets.interest(viewer).tolist() == sorted(held - self.gone)
        for absent in {-1, 99} - set(self.held):
            assert absent not in self.sets
            with pytest.raises(KeyError):
                self.sets.interest(absent)


def test_interest_sets_machine():
    run_state_machine_as_test(InterestSetsMachine, settings=settings(
        max_examples=80, stateful_step_count=25, deadline=None, phases=[p for p in Phase if p != Phase.explain],
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large]))
