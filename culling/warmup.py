"""Compile every kernel ahead of use: :func:`warm_up`, and ``python -m culling warm-up``.

The kernels (:mod:`culling.runtime.jit`) compile on their first call and are
cached on disk, so only a program's first run on a machine (or after an
edit of the kernels' sources, or an upgrade of numba) pays the compile,
spread over the first calls of each kind (the first ``insert_many``, the
first exact query, the first ``overlapping_pairs``...).  :func:`warm_up`
makes each of those calls once on a tiny tree and a tiny dense grid, so the
compile happens where the program chooses (a loading screen, a container
image's build, a server's start) and says how far it is.  With the cache
present it only loads the kernels: a fraction of a second.

The calls come in :data:`KERNEL_GROUPS` (the tree's point queries and batches, the
probes and the broad phase, the dense grid, the interest manager's ticks, the
broad phase of cubes), so a program compiles only what it calls (the demo's
forest never compiles the grid, a program of spheres never compiles the
cubes' broad phase), and a cold warm-up
runs the groups in worker processes, one per core and at most one per group, into the one cache
(numba's cache files are per kernel, so workers compiling different kernels
do not collide), then loads them: about half the wall time on two cores.
The workers claim each step before running it, and one that is done with its
own steps takes its partner's last ones, so neither sits idle while the other
still compiles.

>>> seen = []
>>> seconds = warm_up(lambda done, total, name: seen.append((done, total)), workers=1)
>>> seen[-1][0] == seen[-1][1] == len(STEPS)
True
"""

from __future__ import annotations

import os
import queue
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, TextIO, cast

import numpy as np

from culling.core import cells, chunks, containment, members
from culling.grid import geometry as grid_geometry
from culling.grid import probe as grid_probe
from culling.grid import walk as grid_walk
from culling.grid.grid import DenseViewDistanceGrid
from culling.pairs import bands, join
from culling.reference import BruteForceIndex
from culling.runtime.jit import JIT_DISABLED, cache_writable
from culling.runtime.threads import usable_cores
from culling.tree import batch, inverted, nodes
from culling.tree import pool as tree_pool
from culling.tree import probe as tree_probe
from culling.tree import tree as tree_module
from culling.tree import walk as tree_walk
from culling.tree.tree import ViewDistanceTree
from culling.uses import interest_kernels
from culling.uses.interest import InterestManager

__all__ = ["COMPILING", "KERNEL_GROUPS", "LOADING", "PARTNER_WAIT", "STEPS", "CompileWorkers", "Progress", "kernels_cached", "progress_bar", "warm_up",
           "worker_warm_up"]

#: ``progress(done, total, name)``: ``done`` of ``total`` steps finished, ``name`` the one just done.
Progress = Callable[[int, int, str], None]

_SIZE = 64.0


def _objects(dim: int = 3) -> tuple[np.ndarray, np.ndarray]:
    """A small crowd on several levels, and a sphere whose surface the last point lies on."""
    rng = np.random.default_rng(0)
    centres = rng.uniform(0.0, _SIZE - 2.0, (96, dim))
    radii = rng.uniform(0.5, 12.0, 96)
    centres[-1] = 8.0
    radii[-1] = 3.0
    return centres, radii


def _points(centres: np.ndarray) -> np.ndarray:
    """Query points: near the objects, plus one exactly on the last sphere's surface (exact arithmetic)."""
    points = centres[: 80] + 0.25
    points[-1] = centres[-1]
    points[-1, 0] += 3.0
    return np.ascontiguousarray(points)


#: What the warm-up builds and calls.
Structure = ViewDistanceTree | DenseViewDistanceGrid


def _new_tree() -> ViewDistanceTree:
    return ViewDistanceTree(size=_SIZE, dim=3)


def _new_grid() -> DenseViewDistanceGrid:
    return DenseViewDistanceGrid(size=_SIZE, dim=3, min_radius=0.5)


def _queries(structure: Structure) -> None:
    centres, radii = _objects()
    points = _points(centres)
    for exact in (False, True):
        structure.query(points[0], exact=exact)
        structure.query_spheres(points[-1], exact=exact)
    structure.query(points[-1], exact=True)
    structure.query(points[1], exact=True, scale=40.0)  # many visits: the walk's buffer grows
    if isinstance(structure, ViewDistanceTree):  # the reference index a program checks the tree against
        BruteForceIndex(centres, radii).query(points[-1], exact=True)


def _query_many(structure: Structure) -> None:
    centres, _ = _objects()
    points = _points(centres)
    for exact in (False, True):
        structure.query_many(points, exact=exact)  # one chunk, on the calling thread
        structure.query_many(np.repeat(points, 3, axis=0), exact=exact)  # chunks on the library's threads
    structure.query_many(points, exact=True, scale=40.0)
    if isinstance(structure, ViewDistanceTree):  # points that find little: the tree walks them in groups
        sparse = ViewDistanceTree(size=_SIZE, dim=3)
        sparse.insert_many(centres, np.full(centres.shape[0], 0.01))
        sparse.query_many(np.repeat(points, 3, axis=0) + 0.5, exact=True)
        # more points than a chunk: the chunks' answers go back to the caller's order in one pass (candidates:
        # an exact answer of so many points among so few objects comes from the objects)
        structure.query_many(np.resize(points, (chunks.QUERY_CHUNK + 1, 3)), exact=False)
        # many points, few objects each: the objects ask a grid over the points (culling.tree.inverted)
        structure.query_many(np.repeat(points, 4, axis=0), exact=True)


def _trace(structure: Structure) -> None:
    centres, _ = _objects()
    structure.trace(centres[0])
    structure.trace(centres[0], scale=40.0)


def _probes(structure: Structure,
            make: Callable[[], Structure]) -> None:
    """Sphere probes, one at a time and many, and the pairs: by bands, and by the structure's own walk."""
    centres, radii = _objects()
    points = _points(centres)
    for exact in (False, True):
        structure.overlapping(points[0], 2.0, exact=exact)
        structure.overlapping_many(points, radii[: points.shape[0]], exact=exact)  # on the library's threads
        structure.overlapping_many(points[:4], 1.5, exact=exact)  # on the calling thread
    structure.overlapping_pairs()  # the banded join
    far = make()  # two small clusters far apart: the join by the structure's own walk
    corner = np.array([[1.0, 1.0, 1.0], [1.5, 1.0, 1.0], [_SIZE - 2.0, _SIZE - 2.0, _SIZE - 2.0],
                       [_SIZE - 2.5, _SIZE - 2.0, _SIZE - 2.0]])
    far.insert_many(corner, np.full(4, 0.5))
    far.overlapping_pairs()
    # Large frames on several threads close the gaps between their parts' pairs (from
    # bands.PARALLEL_WRITE_MIN rows noted, far beyond the warm-up's crowd): compiled here directly.
    two = np.zeros(2, dtype=np.int64)
    bands._closed_up(two, two.copy(), np.zeros(1, dtype=np.int64), np.zeros(1, dtype=np.int64))


def _mutations(structure: Structure, handles: np.ndarray) -> None:
    centres, radii = _objects()
    structure.update_many(handles, centres + 0.25, radii)  # in place
    structure.update_many(handles, centres[::-1].copy(), radii * 0.3)  # movers: unlink, link
    structure.update(int(handles[0]), centres[0], 2.0)
    beyond = centres[:3].copy()
    beyond[0, 0] = 1e300  # beyond the largest world the tree can grow to: refused, the others' rows put back
    try:
        structure.update_many(handles[:3], beyond, radii[:3])
    except ValueError:
        pass
    structure.remove_many(handles[1:8])
    structure.remove(int(handles[0]))
    structure.remove_many(handles[8:-2])  # most of them: the tree packs its pool into fresh arrays
    structure.remove_many(structure.handles())  # emptied: back to fresh arrays


def _many_movers() -> None:
    """A tree whose ``update_many`` has enough movers for their searches to run apart, on the library's
    threads (:data:`culling.tree.nodes.PARALLEL_SEARCH_MIN`), and enough objects to be settled in parts
    (:data:`culling.tree.batch.PARALLEL_SETTLE_MIN`)."""
    n = max(nodes.PARALLEL_SEARCH_MIN, batch.PARALLEL_SETTLE_MIN) + 64
    centres = np.random.default_rng(1).uniform(1.0, _SIZE - 1.0, (n, 3))
    tree = _new_tree()
    handles = tree.insert_many(centres, np.full(n, 0.3))
    tree.update_many(handles, _SIZE - centres, np.full(n, 0.3))  # every object moves


def _root_grown_and_shrunk() -> None:
    """A view distance past the tree's root grows it; removing that object shrinks it back and releases
    the root's old blocks (:func:`culling.tree.pool.release`, called from Python only there: left out, the
    first removal of such an object compiled it, half a second)."""
    tree = _new_tree()
    tree.insert((1.0, 1.0, 1.0), 1.0)
    tree.remove(tree.insert((2.0, 2.0, 2.0), 4.0 * _SIZE))


def _filled(make: Callable[[], Structure]) -> Structure:
    """A new structure holding the small crowd (the probes' own: a group may run after the shared
    structure was emptied by the mutations' step, or alone in a worker)."""
    centres, radii = _objects()
    structure = make()
    structure.insert_many(centres, radii)
    return structure


def _steps(name: str, make: Callable[[], Structure]) -> tuple[tuple[str, Callable[[dict[str, object]], None]], ...]:
    """The warm-up steps of one structure: build one (kept in the steps' shared state), then each group
    of calls on it."""
    def build(state: dict[str, object]) -> None:
        centres, radii = _objects()
        structure = make()
        state[name] = structure, structure.insert_many(centres, radii)
        structure.insert(centres[0], 1.0)

    def built(state: dict[str, object]) -> Structure:
        if name not in state:  # a group run on its own (a worker's): build the structure first
            build(state)
        structure, _ = cast(tuple[Structure, np.ndarray], state[name])
        return structure

    def mutations(state: dict[str, object]) -> None:
        built(state)
        structure, handles = cast(tuple[Structure, np.ndarray], state[name])
        _mutations(structure, handles)
        if isinstance(structure, ViewDistanceTree):
            _many_movers()
            _root_grown_and_shrunk()

    return (
        (f"{name}: insert_many", build),
        (f"{name}: query", lambda s: _queries(built(s))),
        (f"{name}: query_many", lambda s: _query_many(built(s))),
        (f"{name}: trace", lambda s: _trace(built(s))),
        (f"{name}: overlapping, overlapping_pairs", lambda s: _probes(_filled(make), make)),
        (f"{name}: update_many, remove_many", mutations),
    )


def _interest(state: dict[str, object]) -> None:
    """Interest management (:class:`culling.InterestManager`): ticks with and without hysteresis, with
    per-viewer radii, and viewers over the library's threads (its diff kernels)."""
    centres, radii = _objects()
    points = _points(centres)
    for hysteresis in (0.0, 0.25):
        manager = InterestManager(_SIZE, dim=3, hysteresis=hysteresis)
        handles = manager.insert_many(centres, radii)
        viewers = np.arange(len(points), dtype=np.int64)
        many = np.arange(len(points) * 40, dtype=np.int64)
        manager.tick(viewers, points)
        manager.update_many(handles[:10], centres[:10] + 0.5)
        manager.tick(viewers, points + 0.25, radii=np.full(len(points), 0.5))
        manager.tick(many, np.repeat(points, 40, axis=0))  # rows diffed on the library's threads
        manager.remove_many(handles[:5])
        manager.tick(viewers[:3], points[:3])


def _cube_pairs(state: dict[str, object]) -> None:
    """The broad phase of cubes: its band kernels are one per shape (the grid's join and the dual walk
    share them), a group of their own so that a program of spheres never compiles them."""
    _filled(lambda: ViewDistanceTree(size=_SIZE, dim=3, shape="cube")).overlapping_pairs()


#: The warm-up, one kernel group a step: ``(name, step(state))``, in order.
STEPS: tuple[tuple[str, Callable[[dict[str, object]], None]], ...] = (
    _steps("tree", _new_tree) + _steps("grid", _new_grid) + (("interest: tick", _interest),
                                                              ("cubes: overlapping_pairs", _cube_pairs)))

_PAIRS_STEPS = ("tree: overlapping, overlapping_pairs",)

#: The steps by what a program calls, in the order a cold in-process warm-up runs them: ``tree`` (a
#: viewer's frame: build, queries, traces, moving objects), ``pairs`` (the probes and the broad phase:
#: ``overlapping*``, collision), ``grid`` (the dense variant, its probes and pairs included), ``interest``
#: (:class:`culling.InterestManager`'s ticks: its diff kernels, the tree's batch queries and probes), ``cubes``
#: (the broad phase of cube-shaped structures: its band kernels are one per shape).
KERNEL_GROUPS: dict[str, tuple[str, ...]] = {
    "tree": tuple(n for n, _ in STEPS if n.startswith("tree:") and n not in _PAIRS_STEPS),
    "pairs": _PAIRS_STEPS,
    "grid": tuple(n for n, _ in STEPS if n.startswith("grid:")),
    "interest": ("interest: tick",),
    "cubes": ("cubes: overlapping_pairs",),
}

#: CPU seconds of each group's cold compile on its own (numba's set-up and the group's structures
#: included; ``benchmarks.jitstart.compile_cost`` per group, 2-core machine, numba 0.68.1, December 2026).
KERNEL_GROUP_COST = {"tree": 32.0, "pairs": 25.0, "grid": 36.0, "interest": 41.0, "cubes": 24.5}

#: Groups that compile many of the same kernels (the grid's pairs are the broad phase's kernels; the
#: interest manager's ticks are the tree's batch queries and probes): a worker takes a family whole
#: while there are fewer workers than groups, so no kernel compiles twice.
KERNEL_FAMILIES = (("pairs", "grid", "cubes"), ("tree", "interest"))

#: The order the steps run in, whatever the groups chosen: two workers (one per family) compile the
#: same shared kernels at once unless one of them needs them only after the other has cached them
#: (numba looks in the cache when a process first calls a kernel).  So the tree's family compiles the
#: kernels the two share early (the tree's build, its queries' member tests, its probes through the
#: interest manager's tick), and the other family starts with what is its own (the grid's build, the
#: broad phase's bands) and reaches the grid's queries and the tree's probes last, loading them.  A
#: structure's mutations come after its queries (they empty it, and a query of nothing calls no kernel).
_ORDER: tuple[str, ...] = (
    "tree: insert_many", "tree: query", "tree: query_many", "interest: tick", "tree: trace",
    "tree: update_many, remove_many",
    "grid: insert_many", "grid: overlapping, overlapping_pairs", "cubes: overlapping_pairs",
    "grid: query", "grid: query_many", "grid: trace", "grid: update_many, remove_many",
    "tree: overlapping, overlapping_pairs")

#: The kernels a step shares with the steps of a group of the other family, by that group: a worker
#: whose partner worker compiles the group meanwhile (``python -m culling warm-up --beside``) waits before
#: the step until they are in the cache (at most :data:`PARTNER_WAIT` seconds), then loads them, so a
#: slower partner does not make both compile them.
_SHARED: dict[str, tuple[tuple[str, tuple[Any, ...]], ...]] = {
    "grid: query": (("tree", (members.answer,)),),
    "grid: query_many": (("tree", (members._answer_many, members._write_answers)),),
    "cubes: overlapping_pairs": (("tree", (batch.place,)),),
    "tree: overlapping, overlapping_pairs": (("tree", (batch.place,)), ("interest", (tree_probe.probe_chunk,))),
}

#: The longest a worker waits for its partner's kernels, all its steps together (it compiles them itself
#: after): a partner that failed costs this much wall time at most.  The partner compiles the shared
#: kernels first, within some 15 s of CPU on the 2-core machine.
PARTNER_WAIT = 60.0

#: Kernels that each group compiles, probed by :func:`kernels_cached`: when numba's cache (or the kernels
#: a wheel ships) holds them, fresh for these sources, the group was compiled by an earlier run.  Between
#: them their fingerprints cover every source file any of the group's kernels depends on, so an edit of
#: any of those files makes one of them stale too (tests/culling/test_warmup.py checks it): probing
#: the query kernels alone, an edit of ``tree/tree.py`` left ``kernels_cached(["tree"])`` True while the
#: first ``insert`` and ``remove`` compiled for a second.
_PROBED: dict[str, tuple[Any, ...]] = {
    "tree": (batch.place, tree_walk.query, tree_walk._visits_from, tree_walk._group_visits_from, members._answer_many,
             members._write_answers, members._place_answers, batch._layout_into,
             batch._settle_part, tree_module._remove_one, chunks._place_rows, containment._classify_all,
             inverted.grid_pairs, inverted.scatter_groups, tree_pool.release),
    "pairs": (join.join_chunk, bands._sphere_cells, bands._sphere_rows, bands._closed_up, batch.place,
              tree_probe.probe_chunk, nodes._descend, tree_pool._make_room),
    "grid": (grid_walk.query, grid_walk._visits, grid_probe.probe_visits, bands.gather, members._answer_many,
             grid_geometry._homes, join._expand),
    "interest": (interest_kernels.advance_rows, interest_kernels.compact_rows, inverted.grid_viewers,
                 inverted.grid_pairs, inverted.scatter_groups,
                 interest_kernels.merge_rows, batch._settle_part, tree_probe.probe_chunk, members._answer_many,
                 nodes._deepest, tree_pool._make_room),
    "cubes": (bands._cube_cells, bands._cube_rows, batch.place, cells._face_sign_exact, nodes._descend,
              tree_pool._make_room),
}


def _groups(groups: Sequence[str] | None) -> tuple[str, ...]:
    if groups is None:
        return tuple(KERNEL_GROUPS)
    if isinstance(groups, str):
        groups = (groups,)
    unknown = [g for g in groups if g not in KERNEL_GROUPS]
    if unknown:
        raise ValueError(f"unknown warm-up group {unknown[0]!r}; the groups are {', '.join(KERNEL_GROUPS)}")
    return tuple(g for g in KERNEL_GROUPS if g in groups)  # in KERNEL_GROUPS' order, each once


def kernels_cached(groups: Sequence[str] | None = None) -> bool:
    """Whether numba's cache already holds the kernels (compiled by an earlier run, for these sources).

    ``groups``: only those of :data:`KERNEL_GROUPS` (default: all).

    A fast check (reads a few cache index files, milliseconds) for a
    program that wants to say "compiling kernels (first run only)" only on a
    first run.  True where the installed wheel ships them compiled
    (:mod:`culling.shipped`); False when kernels are compiled in memory (no
    writable cache, nothing shipped) or the cache cannot be read.  A group that
    is not one of :data:`KERNEL_GROUPS` is a ``ValueError``, as in :func:`warm_up`.
    """
    chosen = _groups(groups)  # a misspelt group is refused, not read as "not cached"
    try:
        return all(_has_index(kernel) for group in chosen for kernel in _PROBED[group])
    except Exception:  # noqa: BLE001 - numba's cache internals differ between versions: assume not cached
        return False


def _has_index(kernel: Any) -> bool:
    """Whether a kernel's own cache, or the kernels a wheel ships (:mod:`culling.shipped`), hold it."""
    if JIT_DISABLED:
        return True
    shipped = getattr(kernel, "shipped_index", None)
    if shipped is not None and shipped()._load_index():
        return True
    return cache_writable() and bool(kernel._cache._cache_file._load_index())


def warm_up(progress: Progress | None = None, *, groups: Sequence[str] | None = None,
            workers: int | None = None) -> float:
    """Compile (or load from the cache) the kernels the library's calls use, ahead of their first use.

    Parameters
    ----------
    progress : callable ``(done, total, name)``, optional
        Called after each step: ``done`` of ``total`` steps finished,
        ``name`` the kernel group just compiled (``"tree: query_many"``).
        Called from the thread that called ``warm_up``.
    groups : sequence of str, optional
        Which of :data:`KERNEL_GROUPS` (``"tree"``, ``"pairs"``, ``"grid"``, ``"interest"``, ``"cubes"``);
        default all.  An empty sequence warms nothing.
    workers : int, optional
        Worker processes for a cold compile (default: one per core, at most
        one per group).  They compile into numba's disk cache, then this
        process loads the kernels.  1, a warm cache, or a cache that cannot
        be written: everything runs in this process.

    Returns the seconds it took.  Cold (an empty numba cache) that is the
    compile: tens of CPU seconds, shared between the workers; warm, loading
    the kernels from the cache, a fraction of a second.  Thread-safe (numba
    compiles under one lock); calling it again costs microseconds per kernel.
    """
    start = time.perf_counter()
    chosen = _groups(groups)
    names = sorted((name for group in chosen for name in KERNEL_GROUPS[group]), key=_ORDER.index)
    reported: set[str] = set()
    if not (workers is None or isinstance(workers, int) and not isinstance(workers, bool) and workers >= 1):
        raise ValueError(f"workers must be a positive integer, got {workers!r}")
    if workers is None:
        workers = max(1, min(usable_cores(), len(chosen)))  # no groups: nothing to compile, no worker
    cold = [group for group in chosen if not kernels_cached((group,))]
    if workers > 1 and len(cold) > 1 and cache_writable() and not JIT_DISABLED:
        for name in _compile_in_workers(cold, min(workers, len(cold))):
            reported.add(name)
            if progress is not None:
                progress(len(reported), len(names), name)
    _run_steps(names, progress, reported)
    return time.perf_counter() - start


def _run_steps(names: Sequence[str], progress: Progress | None, reported: set[str],
               beside: Sequence[str] = (), claims: str | None = None) -> None:
    """Run the steps ``names`` in this process, reporting those not in ``reported`` yet; ``beside``: the
    groups a partner worker compiles meanwhile (:data:`_SHARED`: their kernels are awaited, not compiled).

    ``claims``: the folder where workers claim steps (:data:`CLAIMS_ENV`): a step another worker claimed
    first is skipped, and once its own steps are done the worker takes the partners' unclaimed steps
    from the end of their order, so the worker that finishes first helps the other."""
    steps = dict(STEPS)
    state: dict[str, object] = {}
    patience = PARTNER_WAIT  # for all the steps together: a partner that failed costs a minute at most
    theirs: list[str] = []
    if claims is not None:
        mine = set(names)
        theirs = [n for n in reversed(_ORDER) for g in beside if n in KERNEL_GROUPS[g] and n not in mine]
    for name in [*names, *theirs]:  # loads what the workers compiled, compiles anything still missing
        if claims is not None and not _claim(claims, name):
            continue
        shared = [kernel for group, kernels in _SHARED.get(name, ()) if group in beside for kernel in kernels]
        since = time.monotonic()
        while shared and not all(_has_index(k) for k in shared) and time.monotonic() - since < patience:
            time.sleep(0.1)
        patience -= time.monotonic() - since
        steps[name](state)
        if name not in reported:
            reported.add(name)
            if progress is not None:
                progress(len(reported), len(names), name)


#: The environment variable that hands :class:`CompileWorkers`' workers the folder where they claim steps.
CLAIMS_ENV = "CULLING_WARM_UP_CLAIMS"


def _claim(claims: str, name: str) -> bool:
    """Whether this worker claimed step ``name`` (a file created exclusively), False where another did
    first; where the folder is gone (the program that started the workers ended), the step is run."""
    try:
        os.close(os.open(os.path.join(claims, name.replace(":", "").replace(",", "").replace(" ", "_")),
                         os.O_CREAT | os.O_EXCL | os.O_WRONLY))
    except FileExistsError:
        return False
    except OSError:
        return True
    return True


def worker_warm_up(progress: Progress, groups: Sequence[str], beside: Sequence[str]) -> None:
    """A worker's warm-up (``python -m culling warm-up --report``): ``groups``' steps in this process, in
    :data:`_ORDER`, waiting for the kernels it shares with ``beside``, the groups another worker compiles
    at the same time (:data:`_SHARED`); with :data:`CLAIMS_ENV` set, the steps are claimed, and the
    partners' last steps taken once this worker's own are done."""
    names = sorted((name for group in _groups(groups) for name in KERNEL_GROUPS[group]), key=_ORDER.index)
    claims = os.environ.get(CLAIMS_ENV) or None
    _run_steps(names, progress, set(), tuple(g for g in beside if g in KERNEL_GROUPS), claims)


def _share(groups: Sequence[str], workers: int) -> list[list[str]]:
    """The groups shared out between ``workers``: whole families (:data:`KERNEL_FAMILIES`) while there
    are fewer workers than groups, largest first, each to the least loaded worker.

    >>> _share(["tree", "pairs", "grid", "interest"], 2)
    [['tree', 'interest'], ['pairs', 'grid']]
    >>> _share(["tree", "grid"], 2)
    [['grid'], ['tree']]
    """
    if workers < len(groups):
        units = [[g for g in family if g in groups] for family in KERNEL_FAMILIES]
        units = [unit for unit in units if unit]
        units += [[g] for g in groups if not any(g in family for family in KERNEL_FAMILIES)]
    else:
        units = [[g] for g in groups]

    def cost(unit: list[str]) -> float:  # a family's kernels compile once: its largest group, and some
        return max(KERNEL_GROUP_COST[g] for g in unit) + 0.3 * (sum(KERNEL_GROUP_COST[g] for g in unit)
                                                                   - max(KERNEL_GROUP_COST[g] for g in unit))

    shares: list[list[str]] = [[] for _ in range(workers)]
    loads = [0.0] * workers
    for unit in sorted(units, key=lambda u: -cost(u)):
        least = loads.index(min(loads))
        shares[least].extend(unit)
        loads[least] += cost(unit)
    return [share for share in shares if share]


class CompileWorkers:
    """Worker processes compiling kernel groups into numba's disk cache, watched without blocking.

    Each worker runs ``python -m culling warm-up --groups ... --report`` (the
    groups shared out by their cost, :data:`KERNEL_GROUP_COST`; a worker done with its
    own steps takes the others' unclaimed last ones, :data:`CLAIMS_ENV`) and says each step it
    finishes; :meth:`poll` returns those names.  For a loading screen that
    must keep drawing and answering its keys, and for a compile left to run
    in the background while a program starts (a kernel found in the cache
    when first needed is loaded, not compiled).  A worker that fails costs
    only time: the program's own first call compiles what is missing.

    >>> workers = CompileWorkers(["grid"], workers=1)
    >>> workers.total == len(KERNEL_GROUPS["grid"])
    True
    >>> workers.cancel(); workers.running
    False
    """

    def __init__(self, groups: Sequence[str], workers: int | None = None, background: bool = False) -> None:
        """``background``: the workers run at a lower priority (``nice`` 10 on POSIX), so a program that
        compiles ahead while it runs keeps its frames."""
        chosen = _groups(groups)
        if workers is None:
            workers = min(usable_cores(), len(chosen))
        if not isinstance(workers, int) or isinstance(workers, bool) or workers < 1:
            raise ValueError(f"workers must be a positive integer, got {workers!r}")
        self.groups = chosen
        #: How many steps the workers will report in all.
        self.total = sum(len(KERNEL_GROUPS[g]) for g in chosen)
        #: The steps reported so far, in the order they finished.
        self.finished: list[str] = []
        self._reports: queue.Queue[str | None] = queue.Queue()
        package_parent = str(Path(__file__).resolve().parents[1])
        env = dict(os.environ,
                   PYTHONPATH=os.pathsep.join([package_parent, *filter(None, [os.environ.get("PYTHONPATH")])]))
        self._processes: list[subprocess.Popen[str]] = []
        self._readers: list[threading.Thread] = []
        shares = _share(chosen, workers)
        self._claims = tempfile.TemporaryDirectory(prefix="culling-warm-up-") if len(shares) > 1 else None
        if self._claims is not None:  # the workers share out the steps as they go (_run_steps)
            env[CLAIMS_ENV] = self._claims.name
        for share in shares:
            beside = [g for other in shares if other is not share for g in other]
            command = [sys.executable, "-m", "culling", "warm-up", "--groups", ",".join(share), "--report",
                       "--workers", "1"] + (["--beside", ",".join(beside)] if beside else [])
            lower = (lambda: os.nice(10)) if background and hasattr(os, "nice") else None
            process = subprocess.Popen(command, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                       stderr=subprocess.DEVNULL, text=True, preexec_fn=lower)
            self._processes.append(process)
            reader = threading.Thread(target=_read_reports, args=(process, self._reports), daemon=True,
                                      name="culling-warm-up-reports")
            reader.start()
            self._readers.append(reader)
        self._open = len(self._processes)

    @property
    def running(self) -> bool:
        """Whether any worker has not finished yet (its reports not all read)."""
        return self._open > 0

    def poll(self, timeout: float | None = 0.0) -> list[str]:
        """The steps finished since the last call (waiting up to ``timeout`` seconds for the first; None:
        until one finishes or every worker has ended)."""
        new: list[str] = []
        block = timeout is None or timeout > 0
        while self._open:
            try:
                name = self._reports.get(block=block, timeout=timeout if block else None)
            except queue.Empty:
                break
            block = False
            if name is None:
                self._open -= 1
            else:
                new.append(name)
        self.finished.extend(new)
        return new

    def cancel(self) -> None:
        """Stop every worker now (a kernel half written is never read: numba replaces files whole)."""
        for process in self._processes:
            if process.poll() is None:
                process.kill()
        for process in self._processes:
            process.wait()
        for reader in self._readers:  # each closes its worker's pipe at the end of its output
            reader.join(timeout=10.0)
        self._open = 0
        if self._claims is not None:
            self._claims.cleanup()

    def __enter__(self) -> CompileWorkers:
        return self

    def __exit__(self, *exc: object) -> None:
        self.cancel()


def _compile_in_workers(groups: Sequence[str], workers: int) -> Any:
    """Yield each step's name as a worker (:class:`CompileWorkers`) finishes it; Ctrl-C (or any exception)
    stops the workers."""
    with CompileWorkers(groups, workers) as running:
        while running.running:
            yield from running.poll(timeout=None)


def _read_reports(process: subprocess.Popen[str], finished: queue.Queue[str | None]) -> None:
    """Pass on a worker's reports until its output ends, then close the pipe (left to the collector, it
    was a ``ResourceWarning`` per worker) and say that the worker ended (None)."""
    if process.stdout is not None:
        with process.stdout:
            for line in process.stdout:
                if line.startswith(REPORT_PREFIX):
                    finished.put(line[len(REPORT_PREFIX):].rstrip("\n"))
    process.wait()
    finished.put(None)


#: What a first run says while the kernels compile.
COMPILING = "compiling kernels (first run only)"

#: What ``python -m culling warm-up`` says where every kernel is cached or shipped already (:func:`kernels_cached`).
LOADING = "loading the compiled kernels"

#: Cells of :func:`progress_bar`'s bar.
BAR_WIDTH = 30


def progress_bar(stream: TextIO, label: str = COMPILING) -> Progress:
    """A :func:`warm_up` progress callback that draws a bar with the time so far on ``stream`` (one line a
    step, or one line redrawn on a terminal), after ``label``, as ``python -m culling warm-up`` shows it.

    >>> import io
    >>> out = io.StringIO()
    >>> warm_up(progress_bar(out), groups=["tree"], workers=1) >= 0.0
    True
    >>> out.getvalue().splitlines()[-1].startswith(COMPILING + ": [" + "#" * BAR_WIDTH + "] 5/5")
    True
    """
    start = time.perf_counter()
    tty = stream.isatty()

    def show(done: int, total: int, name: str) -> None:
        filled = BAR_WIDTH * done // total
        line = (f"{label}: [{'#' * filled}{'.' * (BAR_WIDTH - filled)}] {done}/{total} "
                f"{time.perf_counter() - start:5.1f} s  {name}")
        stream.write("\r" + line.ljust(100) + ("\n" if done == total else "") if tty else line + "\n")
        stream.flush()

    return show


#: How a worker (``python -m culling warm-up --report``) says on stdout that it finished a step.
REPORT_PREFIX = "warm-up step done: "
