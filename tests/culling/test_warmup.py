"""The warm-up's plan, without compiling: its step order, the workers' shares, a worker's wait for its partner,
the steps the workers claim.

(Compiling every kernel once is tested in ``tests/culling/runtime/test_processes.py``.)
"""

from __future__ import annotations

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


class _Clock:
    """``time`` for :mod:`culling.warmup` with a clock that moves only when it sleeps: the waits are
    counted, not timed (a busy machine stretches a real sleep)."""

    def __init__(self) -> None:
        self.now = 0.0
        self.sleeps = 0

    def monotonic(self) -> float:
        return self.now

    def perf_counter(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.sleeps += 1
        self.now += seconds


def test_a_worker_awaits_only_its_partners_groups_and_gives_up_after_its_patience(
        monkeypatch: pytest.MonkeyPatch) -> None:
    ran: list[str] = []
    clock = _Clock()
    monkeypatch.setattr(warmup, "STEPS", tuple((name, lambda state, n=name: ran.append(n)) for name, _ in STEPS))
    monkeypatch.setattr(warmup, "_has_index", lambda kernel: False)  # the partner never delivers
    monkeypatch.setattr(warmup, "PARTNER_WAIT", 0.3)
    monkeypatch.setattr(warmup, "time", clock)
    names = sorted(warmup._SHARED, key=warmup._ORDER.index)
    assert len(names) > 1
    warmup._run_steps(names, None, set(), beside=("tree", "interest"))
    assert ran == names
    assert 3 <= clock.sleeps <= 4 and clock.now < 0.5  # one patience for all the steps, not one each
    ran.clear()
    clock.sleeps = 0
    warmup._run_steps(names, None, set(), beside=("grid",))  # nothing of the grid's is awaited
    assert ran == names and clock.sleeps == 0


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



#: Loads one group's kernels (from numba's cache or the shipped ones: the suite's environment has them) and
#: prints the kernels it loaded, one ``module:qualname`` a line.
_GROUP_KERNELS = """
import sys, culling
from culling.runtime.jit import KERNELS
culling.warm_up(groups=[sys.argv[1]], workers=1)
print(*(f"{k.py_func.__module__}:{k.py_func.__qualname__}" for k in KERNELS if k.signatures), sep="\\n")
"""


def test_the_probed_kernels_notice_an_edit_of_any_file_a_group_uses() -> None:
    """``kernels_cached(groups)`` reads a few kernels' cache entries: between them their fingerprints must
    cover every source file of every kernel the group's steps load, or an edit of a file they miss
    leaves it True while the next run compiles (``tree/tree.py``'s ``insert`` and ``remove`` did).
    (That the steps reach every kernel a call uses: ``tests/culling/runtime/test_processes.py``.)"""
    import subprocess
    import sys

    from culling.runtime.fingerprint import dependencies
    from culling.runtime.jit import KERNELS

    by_name = {f"{k.py_func.__module__}:{k.py_func.__qualname__}": k for k in KERNELS}
    for group in KERNEL_GROUPS:
        loaded = subprocess.run([sys.executable, "-c", _GROUP_KERNELS, group], capture_output=True, text=True,
                                timeout=600, check=True).stdout.split()
        assert loaded
        probed = set().union(*(dependencies(k.py_func) for k in warmup._PROBED[group]))
        for name in loaded:
            missed = dependencies(by_name[name].py_func) - probed
            assert not missed, f"group {group!r}: {name} depends on {sorted(map(str, missed))}, which no probe covers"
