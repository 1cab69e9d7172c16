"""Compile every kernel ahead of use: :func:`warm_up`, and ``python -m culling warm-up``.

The kernels (:mod:`culling.core.jit`) compile on their first call and are
cached on disk, so only a program's first run on a machine (or after an
upgrade of culling, numba or NumPy) pays the compile: a few seconds, spread
over the first calls of each kind (the first ``insert_many``, the first
exact query, the first ``query_many``...).  :func:`warm_up` makes each of
those calls once on a tiny tree and a tiny dense grid, so the compile
happens where the program chooses (a loading screen, a container image's
build, a server's start) and says how far it is.  With the cache present
it only loads the kernels: a fraction of a second.

>>> seen = []
>>> seconds = warm_up(lambda done, total, name: seen.append((done, total)))
>>> seen[-1][0] == seen[-1][1] == len(STEPS)
True
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any, cast

import numpy as np

from culling.core import members
from culling.core.jit import cache_writable
from culling.grid import walk as grid_walk
from culling.grid.grid import DenseViewDistanceGrid
from culling.tree import batch, nodes
from culling.tree import walk as tree_walk
from culling.tree.tree import ViewDistanceTree

__all__ = ["STEPS", "Progress", "kernels_cached", "warm_up"]

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
    centres, _ = _objects()
    points = _points(centres)
    for exact in (False, True):
        structure.query(points[0], exact=exact)
        structure.query_spheres(points[-1], exact=exact)
    structure.query(points[-1], exact=True)
    structure.query(points[1], exact=True, scale=40.0)  # many visits: the walk's buffer grows


def _query_many(structure: Structure) -> None:
    centres, _ = _objects()
    points = _points(centres)
    for exact in (False, True):
        structure.query_many(points, exact=exact)  # one chunk, on the calling thread
        structure.query_many(np.repeat(points, 3, axis=0), exact=exact)  # chunks on the library's threads
    structure.query_many(points, exact=True, scale=40.0)


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
    if isinstance(structure, ViewDistanceTree):  # its kernels are one per shape, the grid's join shares them
        cubes = ViewDistanceTree(size=_SIZE, dim=3, shape="cube")
        cubes.insert_many(centres, radii)
        cubes.overlapping_pairs()
    far = make()  # two small clusters far apart: the join by the structure's own walk
    corner = np.array([[1.0, 1.0, 1.0], [1.5, 1.0, 1.0], [_SIZE - 2.0, _SIZE - 2.0, _SIZE - 2.0],
                       [_SIZE - 2.5, _SIZE - 2.0, _SIZE - 2.0]])
    far.insert_many(corner, np.full(4, 0.5))
    far.overlapping_pairs()


def _mutations(structure: Structure, handles: np.ndarray) -> None:
    centres, radii = _objects()
    structure.update_many(handles, centres + 0.25, radii)  # in place
    structure.update_many(handles, centres[::-1].copy(), radii * 0.3)  # movers: unlink, link
    structure.update(int(handles[0]), centres[0], 2.0)
    structure.remove_many(handles[1:8])
    structure.remove(int(handles[0]))
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


def _steps(name: str, make: Callable[[], Structure]) -> tuple[tuple[str, Callable[[dict[str, object]], None]], ...]:
    """The warm-up steps of one structure: build one (kept in the steps' shared state), then each group
    of calls on it."""
    def build(state: dict[str, object]) -> None:
        centres, radii = _objects()
        structure = make()
        state[name] = structure, structure.insert_many(centres, radii)
        structure.insert(centres[0], 1.0)

    def built(state: dict[str, object]) -> Structure:
        structure, _ = cast(tuple[Structure, np.ndarray], state[name])
        return structure

    def mutations(state: dict[str, object]) -> None:
        structure, handles = cast(tuple[Structure, np.ndarray], state[name])
        _mutations(structure, handles)
        if isinstance(structure, ViewDistanceTree):
            _many_movers()

    return (
        (f"{name}: insert_many", build),
        (f"{name}: query", lambda s: _queries(built(s))),
        (f"{name}: query_many", lambda s: _query_many(built(s))),
        (f"{name}: trace", lambda s: _trace(built(s))),
        (f"{name}: overlapping, overlapping_pairs", lambda s: _probes(built(s), make)),
        (f"{name}: update_many, remove_many", mutations),
    )


#: The warm-up, one kernel group a step: ``(name, step(state))``, in order.
STEPS: tuple[tuple[str, Callable[[dict[str, object]], None]], ...] = (
    _steps("tree", _new_tree) + _steps("grid", _new_grid))


#: Kernels that the first steps of :data:`STEPS` compile, one per group: when numba's cache holds all of
#: them, fresh for these sources, the cache was filled by an earlier run.
_PROBED: tuple[Any, ...] = (batch.place, tree_walk.query, tree_walk.visits, members._answer_many,
                            batch._settle_part, grid_walk.query, grid_walk._visits)


def kernels_cached() -> bool:
    """Whether numba's cache already holds the kernels (compiled by an earlier run, for these sources).

    A fast check (reads a few cache index files, milliseconds) for a
    program that wants to say "compiling kernels (first run only)" only on a
    first run.  True where the installed wheel ships them compiled
    (:mod:`culling.shipped`); False when kernels are compiled in memory (no
    writable cache, nothing shipped) or the cache cannot be read.
    """
    try:
        return all(_has_index(kernel) for kernel in _PROBED)
    except Exception:  # noqa: BLE001 - numba's cache internals differ between versions: assume not cached
        return False


def _has_index(kernel: Any) -> bool:
    """Whether a kernel's own cache, or the kernels a wheel ships (:mod:`culling.shipped`), hold it."""
    shipped = getattr(kernel, "shipped_index", None)
    if shipped is not None and shipped._load_index():
        return True
    return cache_writable() and bool(kernel._cache._cache_file._load_index())


def warm_up(progress: Progress | None = None) -> float:
    """Compile (or load from the cache) every kernel the library's calls use, ahead of their first use.

    Parameters
    ----------
    progress : callable ``(done, total, name)``, optional
        Called after each step: ``done`` of ``total`` steps finished,
        ``name`` the kernel group just compiled (``"tree: query_many"``).
        Called from the thread that called ``warm_up``.

    Returns the seconds it took.  Cold (an empty numba cache) that is the
    whole compile, a few seconds; warm, loading the kernels from the cache,
    a fraction of a second.  Thread-safe (numba compiles under one lock);
    calling it again costs microseconds per kernel.
    """
    start = time.perf_counter()
    state: dict[str, object] = {}
    for done, (name, step) in enumerate(STEPS, 1):
        step(state)
        if progress is not None:
            progress(done, len(STEPS), name)
    return time.perf_counter() - start
