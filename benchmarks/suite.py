"""Run presets and shared steps: building methods, verifying them, single ops.

The benchmarks themselves live in :mod:`benchmarks.sections`; this module
holds what they share and :func:`run_suite`, which runs the chosen ones.
"""

from __future__ import annotations

import copy
import gc
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from benchmarks.peers import CullingMethod, ExactReference, check_agreement
from benchmarks.report import Results, machine_info
from benchmarks.timing import clock, clock_name, time_call, time_each, use_clock
from benchmarks.workloads import Workload


@dataclass(frozen=True)
class Config:
    """Sizes and repeat counts of one preset."""

    name: str
    forest_sizes: tuple[int, ...]
    path_points: int
    repeats: int
    peer_repeats: int
    build_repeats: int
    clusters: tuple[int, int]
    remote_repeats: int
    colocated_sizes: tuple[int, ...]
    moving_n: int
    frames: int
    sprawl_sizes: tuple[int, ...]
    dense_worlds: tuple[tuple[str, int], ...]
    single_ops: int
    rtree_ops: int
    interest_small: tuple[int, int]          # (mobs, players)
    interest_sizes: tuple[int, ...]          # entities, each with interest_viewers viewers
    interest_viewers: int
    interest_repeats: int
    collision_sizes: tuple[int, ...]
    collision_frames: int
    collision_full_check: int                # brute-force every pair up to this N, else a sample
    collision_sample: int
    jit_warm_runs: int                       # 0: skip the JIT start-up section
    jit_cold: bool                           # also a cold start (compiles every kernel: seconds)
    collision_heavy: int = 100_000           # creatures of the heavy-tail case (0: skip)
    collision_probes: tuple[int, int] = (2000, 1_000_000)   # (probes, entities) of the probe case
    # query_many where points find little: (objects, points) of benchmarks.workloads.sparse_points (0: skip)
    sparse_many: tuple[int, int] = (200_000, 1_000_000)
    # interest-ticks: (viewers, entities) cases; ticks timed for the manager, the peer and the tracker loop
    ticks_cases: tuple[tuple[int, int], ...] = ((10_000, 100_000), (2_000, 1_000_000))
    ticks_count: int = 30
    ticks_peer: int = 5
    ticks_tracker: int = 2


PRESETS: dict[str, Config] = {
    "full": Config(
        "full", (10_000, 100_000, 1_000_000), 64, 5, 3, 3, (100_000, 1_000_000), 9,
        (10_000, 100_000), 100_000, 12, (10_000, 100_000, 1_000_000),
        (("dense", 1_000_000), ("sparse", 10_000)), 2000, 300,
        (5_000, 100), (10_000, 100_000, 1_000_000), 2000, 5,
        (10_000, 100_000, 1_000_000), 6, 20_000, 1000, 3, True,
    ),
    "quick": Config(
        "quick", (1_000, 10_000, 100_000), 32, 3, 2, 1, (10_000, 100_000), 5,
        (1_000, 10_000), 10_000, 6, (1_000, 10_000, 100_000),
        (("dense", 100_000), ("sparse", 1_000)), 500, 100,
        (5_000, 100), (100_000,), 500, 3,
        (2_000, 5_000), 4, 5_000, 500, 1, False, 20_000, (500, 100_000),
        ticks_cases=((2_000, 20_000), (500, 100_000)), ticks_count=10, ticks_peer=2, ticks_tracker=2,
        sparse_many=(50_000, 200_000),
    ),
    "tiny": Config(
        "tiny", (200, 1_000), 6, 1, 1, 1, (300, 2_000), 1,
        (100, 1_000), 500, 3, (100, 1_000), (("dense", 2_000), ("sparse", 200)), 50, 20,
        (500, 20), (2_000,), 40, 1,
        (300, 1_500), 3, 1_000, 200, 0, False, 2_000, (50, 5_000),
        ticks_cases=((60, 2_000),), ticks_count=3, ticks_peer=2, ticks_tracker=1,
        sparse_many=(20_000, 50_000),
    ),
}


@dataclass
class Structures:
    """The ``culling`` classes under test (the dense grid may be missing)."""

    tree: Any
    dense: Any = None
    collision: Any = None


def load_structures() -> Structures:
    """Import ``culling``: the tree is required; the dense grid is used once
    ``culling`` exports it (its public name, docs/CONTRACT.md "Package")."""
    import culling

    return Structures(culling.ViewDistanceTree, getattr(culling, "DenseViewDistanceGrid", None),
                      culling.CollisionCandidates)


def tree_method(structs: Structures, wl: Workload, name: str = "tree (exact)") -> CullingMethod:
    """An unbuilt tree method with the workload's root."""
    return CullingMethod(
        name, lambda: structs.tree(size=wl.root_size, origin=wl.root_origin, dim=wl.centres.shape[1])
    )


def candidates_of(method: CullingMethod, name: str = "tree (candidates)") -> CullingMethod:
    """The same built structure, answering ``query(point, exact=False)``."""
    other = copy.copy(method)
    other.name, other.exact = name, False
    return other


def built(method: Any, wl: Workload, repeats: int = 1, budget_s: float = 20.0) -> float:
    """Build ``method`` on the workload; return the median build time of ``repeats`` builds after one
    untimed: a method's first build paid its imports (SciPy's: 0.3 s) and first allocations."""
    return time_call(lambda: method.build(wl.centres, wl.radii), repeats, warmup=1, budget_s=budget_s)


def verify(wl: Workload, methods: Sequence[Any], reference: Any = None) -> tuple[list[np.ndarray], int]:
    """Check every method against the exact reference (:class:`~benchmarks.peers.ExactReference`,
    unless ``reference`` is given) at every path point.

    Returns the exact index sets (one sorted array per point) and the number
    of surface ties seen.  Raises ``AgreementError`` on any disagreement.
    """
    if reference is None:
        reference = ExactReference()
        reference.build(wl.centres, wl.radii)
    results, ties = [], 0
    for p in wl.path:
        expected = reference.indices(reference.query(p))
        results.append(expected)
        for m in methods:
            got = m.indices(m.query(p))
            superset = not getattr(m, "exact", True)
            ties += check_agreement(f"{m.name} on {wl.name}", p, expected, got, wl.centres, wl.radii, superset)
    return results, ties


def verify_query_many(method: CullingMethod, wl: Workload, expected: list[np.ndarray]) -> None:
    """``query_many(path, exact=True)`` must split into the per-point sets."""
    handles, counts = method.structure.query_many(wl.path, exact=True)
    starts = np.concatenate([[0], np.cumsum(counts)])
    for i, p in enumerate(wl.path):
        got = method.indices(handles[starts[i] : starts[i + 1]])
        check_agreement(f"{method.name} query_many on {wl.name}", p, expected[i], got, wl.centres, wl.radii)


def visited_nodes(method: CullingMethod, wl: Workload) -> tuple[np.ndarray, np.ndarray]:
    """Per path point: (levels visited, nodes visited), from ``trace``."""
    levels, nodes = [], []
    for p in wl.path:
        per_level = method.visited(p)
        levels.append(len(per_level))
        nodes.append(sum(len(b) for b in per_level))
    return np.array(levels), np.array(nodes)


def single_ops(method: CullingMethod, wl: Workload, k: int, seed: int = 11) -> tuple[float, float]:
    """Seconds per single in-node ``update`` and per single ``remove``.

    ``k`` random objects get a move of 1e-7 (which stays in the node) through
    ``update(h, centre, radius)``, three times over; then ``k`` random objects
    are removed one by one (after one untimed).  The structure is changed: use it last.
    """
    s = method.structure
    rng = np.random.default_rng(seed)
    k = min(k, len(method.handles))
    pick = rng.choice(len(method.handles), k, replace=False)
    args = [(int(method.handles[i]), wl.centres[i] + 1e-7, float(wl.radii[i])) for i in pick]
    t_update = time_each(s.update, args, repeats=3)
    gone = rng.choice(len(method.handles), min(k + 1, len(method.handles)), replace=False)
    s.remove(int(method.handles[gone[0]]))  # untimed: a process's first remove() loads its kernel (some 5 ms)
    before, gone = len(s), gone[1:]
    t_remove = time_each(s.remove, [(int(method.handles[i]),) for i in gone])
    if len(s) != before - len(gone):
        raise RuntimeError(f"{method.name}: {len(gone)} removals left {len(s)} of {before} objects")
    return t_update, t_remove


def timed_loop(fn: Callable[..., Any], args: Sequence[tuple]) -> tuple[float, list[Any]]:
    """Total seconds of one pass of ``fn(*a)`` over ``args``, and the results."""
    out = []
    t0 = clock()
    for a in args:
        out.append(fn(*a))
    return clock() - t0, out


SECTIONS: dict[str, tuple[str, str]] = {
    "forest": ("benchmarks.sections", "run_forest"),
    "clusters": ("benchmarks.sections", "run_clusters"),
    "colocated": ("benchmarks.sections", "run_colocated"),
    "moving": ("benchmarks.sections", "run_moving"),
    "scaling": ("benchmarks.sections", "run_scaling"),
    "dense": ("benchmarks.sections", "run_dense"),
    "interest": ("benchmarks.batch_sections", "run_interest"),
    "interest-ticks": ("benchmarks.interest_ticks", "run_interest_ticks"),
    "collision": ("benchmarks.batch_sections", "run_collision"),
    "jit": ("benchmarks.batch_sections", "run_jit"),
}
"""Section name -> (module, function): each function adds tables, targets and series to the run."""
SECTION_NAMES = tuple(SECTIONS)

#: What each section's tables are, for ``--help``: a table of PERFORMANCE.md is found under the
#: section that writes it.
SECTION_TABLES: dict[str, str] = {
    "forest": "the exact point query against the peers at 10k, 100k, 1M; build, memory, single operations",
    "clusters": "dense clusters far away (remote clusters)",
    "colocated": "every object at one point",
    "moving": "update_many against rebuilding or moving the peers",
    "scaling": "the query at constant density, 10k to 1M",
    "dense": "the dense grid against the tree",
    "interest": "query_many: viewers x entities, radii x2, where points find little",
    "interest-ticks": "InterestManager's ticks with events",
    "collision": "the broad phase: the swarm, its heavy tail, mixed radii 10:1 and 100:1, sphere probes",
    "jit": "start-up: cold and warm first frames, the compile of every kernel",
}


def run_suite(
    cfg: Config,
    only: Sequence[str] | None = None,
    structs: Structures | None = None,
    progress: Callable[[str], None] = lambda s: None,
    clock_kind: str = "cpu",
) -> Results:
    """Run the chosen sections (all by default) and return their results.

    ``clock_kind`` is ``"cpu"`` (the thread's CPU time) or ``"wall"``.
    """
    import importlib

    structs = structs or load_structures()
    use_clock(clock_kind)
    res = Results(preset=cfg.name, machine=machine_info())
    res.machine["clock"] = clock_name()
    if structs.dense is None:
        res.notes.append("culling.DenseViewDistanceGrid is not importable: the dense-grid comparison was skipped.")
    t0 = time.perf_counter()
    try:
        for name in only or SECTION_NAMES:
            progress(f"running {name} ({cfg.name})")
            t = time.perf_counter()
            module, function = SECTIONS[name]
            # What outlives a section (the imported modules, numba's loaded kernels, the results) is frozen,
            # so the collection before each timed region (timing.no_gc) scans only the section's own objects:
            # a full collection of such a process costs 0.05-0.1 s, and 166 of them were 30% of a quick run's
            # CPU.  The section's garbage is still collected; unfrozen at the end.
            gc.collect()
            gc.freeze()
            getattr(importlib.import_module(module), function)(cfg, structs, res)
            progress(f"  {name} took {time.perf_counter() - t:.1f} s")
    finally:
        gc.unfreeze()
    res.elapsed_s = time.perf_counter() - t0
    res.machine["load_end"] = machine_info()["load"]
    return res
