"""The warm-up's plan, without compiling: its step order, the workers' shares, a worker's wait for its partner,
the steps the workers claim.

(Compiling every kernel once is tested in ``tests/culling/runtime/test_processes.py``.)
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from culling import warmup
from culling.warmup import KERNEL_GROUPS, STEPS


def test_every_step_has_one_place_in_the_order_and_one_group() -> None:
    names = [name for name, _ in STEPS]
    assert sorted(warmup._ORDER) == sorted(names)
    grouped = [name for steps in KERNEL_GROUPS.values() for name in steps]
    assert sorted(grouped) == sorted(names)


def test_each_structure_is_queried_before_its_mutations_empty_it() -> None:
    for name in ("tree", "grid"):
        mutations = warmup._ORDER.index(f"{name}: update_many, remove_many")
        assert all(warmup._ORDER.index(f"{name}: {step}") < mutations for step in ("query", "query_many", "trace"))


def test_two_workers_take_the_families_whole() -> None:
    shares = warmup._share(list(KERNEL_GROUPS), 2)
    assert sorted(map(sorted, shares)) == sorted(sorted(family) for family in warmup.KERNEL_FAMILIES)


def test_a_worker_awaits_only_its_partners_groups_and_gives_up_after_its_patience(
        monkeypatch: pytest.MonkeyPatch) -> None:
    ran: list[str] = []
    monkeypatch.setattr(warmup, "STEPS", tuple((name, lambda state, n=name: ran.append(n)) for name, _ in STEPS))
    monkeypatch.setattr(warmup, "_has_index", lambda kernel: False)  # the partner never delivers
    monkeypatch.setattr(warmup, "PARTNER_WAIT", 0.3)
    names = sorted(warmup._SHARED, key=warmup._ORDER.index)
    start = time.perf_counter()
    warmup._run_steps(names, None, set(), beside=("tree", "interest"))
    assert ran == names
    assert 0.3 <= time.perf_counter() - start < 1.5  # one patience for all the steps, not one each
    ran.clear()
    start = time.perf_counter()
    warmup._run_steps(names, None, set(), beside=("grid",))  # nothing of the grid's is awaited
    assert ran == names and time.perf_counter() - start < 0.2


def test_workers_claim_steps_and_one_done_early_takes_its_partners_last(monkeypatch: pytest.MonkeyPatch,
                                                                       tmp_path: Path) -> None:
    ran: list[str] = []
    monkeypatch.setattr(warmup, "STEPS", tuple((name, lambda state, n=name: ran.append(n)) for name, _ in STEPS))
    monkeypatch.setattr(warmup, "_has_index", lambda kernel: True)  # the partner's kernels are cached
    family = [sorted((n for g in f for n in KERNEL_GROUPS[g]), key=warmup._ORDER.index) for f in warmup.KERNEL_FAMILIES]
    grid, tree = family
    assert warmup._claim(str(tmp_path), tree[0])  # the partner is on its first step
    reported: list[str] = []
    warmup._run_steps(grid, lambda done, total, name: reported.append(name), set(), beside=("tree", "interest"),
                      claims=str(tmp_path))
    assert ran == reported == grid + tree[:0:-1]  # its own steps, then the partner's from the last, each once
    ran.clear()
    warmup._run_steps(tree, None, set(), beside=("pairs", "grid", "cubes"), claims=str(tmp_path))
    assert ran == []  # every step was claimed: none runs twice
    assert warmup._claim(str(tmp_path / "gone"), tree[0])  # no claims folder: the step is run
