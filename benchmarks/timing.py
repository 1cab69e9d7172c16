"""Timing and memory helpers: warm-ups, medians of repeats, tracemalloc.

On a shared 2-core machine single timings are noisy, so every figure is a
median: per query point over repeats, then over the path.  The garbage
collector is paused inside timed loops (as ``timeit`` does).

The clock is the benchmark thread's CPU time by default (``"cpu"``:
``time.thread_time``), so that other processes taking turns on the cores do
not stretch the figures; ``"wall"`` uses ``time.perf_counter``.  The peers
and the library's single calls run on the calling thread, so its CPU time is
the whole of their cost.  A call that runs on the library's threads is timed
inside :func:`wall_clock` (where the benchmark compares elapsed time with
peers on all cores) or :func:`process_clock` (where it compares work with a
single-threaded peer: every thread's CPU).  The clock's own cost is
measured once and subtracted from per-call samples.
"""

from __future__ import annotations

import gc
import time
import tracemalloc
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import numpy as np

CLOCKS: dict[str, Callable[[], float]] = {"cpu": time.thread_time, "wall": time.perf_counter,
                                          "process": time.process_time}
_state = {"name": "cpu", "clock": time.thread_time, "overhead": 0.0}


def clock() -> float:
    """The current benchmark clock, in seconds."""
    return _state["clock"]()


def use_clock(name: str) -> None:
    """Select ``"cpu"``, ``"wall"`` or ``"process"`` time and measure the clock's own cost."""
    fn = CLOCKS[name]
    samples = []
    for _ in range(2000):
        t0 = fn()
        samples.append(fn() - t0)
    _state.update(name=name, clock=fn, overhead=float(np.median(samples)))


def clock_name() -> str:
    return str(_state["name"])


def _net(dt: float) -> float:
    return max(dt - _state["overhead"], 0.0)


@contextmanager
def no_gc() -> Iterator[None]:
    """Collect once, then keep the garbage collector out of the timed region."""
    gc.collect()
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


def time_points(fn: Callable[[np.ndarray], Any], points: np.ndarray, repeats: int, warmup: int = 3) -> np.ndarray:
    """Seconds per call of ``fn(point)``: shape (m,), the median over repeats.

    The first ``warmup`` points are run once untimed first.
    """
    for p in points[:warmup]:
        fn(p)
    out = np.empty((repeats, len(points)))
    with no_gc():
        for rep in range(repeats):
            for i, p in enumerate(points):
                t0 = clock()
                fn(p)
                out[rep, i] = _net(clock() - t0)
    return np.median(out, axis=0)


def time_interleaved(
    fns: Sequence[Callable[[np.ndarray], Any]], points: np.ndarray, repeats: int, warmup: int = 3
) -> list[np.ndarray]:
    """Like :func:`time_points` for several functions, alternated per point
    (in rotating order) so that machine drift hits them all alike."""
    for fn in fns:
        for p in points[:warmup]:
            fn(p)
    k = len(fns)
    out = np.empty((k, repeats, len(points)))
    with no_gc():
        for rep in range(repeats):
            for i, p in enumerate(points):
                for j in range(k):
                    f = (j + rep + i) % k
                    t0 = clock()
                    fns[f](p)
                    out[f, rep, i] = _net(clock() - t0)
    return [np.median(out[f], axis=0) for f in range(k)]


def time_call(fn: Callable[[], Any], repeats: int, warmup: int = 1, budget_s: float = 30.0) -> float:
    """Median seconds of ``fn()`` over up to ``repeats`` runs.

    Stops repeating once ``budget_s`` is spent (at least one timed run), so a
    slow method cannot stretch the whole benchmark.
    """
    spent = 0.0
    for _ in range(warmup):
        t0 = clock()
        fn()
        spent += clock() - t0
        if spent > budget_s:
            break
    times = []
    with no_gc():
        for _ in range(repeats):
            t0 = clock()
            fn()
            times.append(clock() - t0)
            spent += times[-1]
            if spent > budget_s:
                break
    return float(np.median(times))


def time_each(fn: Callable[..., Any], args: Sequence[tuple], repeats: int = 1, block: int = 100) -> float:
    """Seconds per call of ``fn(*a)`` for ``a`` in ``args``.

    The calls run in blocks of ``block``, each timed as a whole (so the
    clock's own cost is not counted per call); the result is the median over
    blocks of block time / block size, which ignores the blocks a busy
    machine preempted.  With ``repeats`` > 1 the same arguments run again
    (the function must allow that).
    """
    per_call = []
    chunks = [args[i : i + block] for i in range(0, len(args), block)] or [args]
    with no_gc():
        for _ in range(repeats):
            for chunk in chunks:
                t0 = clock()
                for a in chunk:
                    fn(*a)
                per_call.append((clock() - t0) / max(len(chunk), 1))
    return float(np.median(per_call))


def traced_memory(fn: Callable[[], Any]) -> tuple[Any, int]:
    """Run ``fn()`` under tracemalloc: (its result, bytes it still holds).

    The result is kept alive while measuring, so the figure is what the built
    structure occupies (NumPy reports its buffers to tracemalloc).
    """
    gc.collect()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        result = fn()
        gc.collect()
        after = tracemalloc.get_traced_memory()[0]
    finally:
        tracemalloc.stop()
    return result, after - before


@contextmanager
def wall_clock() -> Iterator[None]:
    """Time by ``time.perf_counter`` inside the block, whatever the run's clock.

    For methods that run on several threads (``query_many`` in parallel,
    cKDTree with ``workers=-1``): the benchmark thread's CPU time would miss
    the other threads' work.
    """
    with _clock_inside("wall"):
        yield


@contextmanager
def process_clock() -> Iterator[None]:
    """Time by the process's CPU time (``time.process_time``: every thread's) inside the block, whatever
    the run's clock, unless it is the wall clock.

    For the library's calls that run on its threads (``update_many``), compared with peers that run on
    one: the work they do, counted on every core.  The benchmark thread's CPU time would miss the
    other threads' work (about a quarter of ``update_many``'s at 100k moving on 2 cores).
    """
    with _clock_inside("wall" if _state["name"] == "wall" else "process"):
        yield


@contextmanager
def _clock_inside(name: str) -> Iterator[None]:
    saved = dict(_state)
    use_clock(name)
    try:
        yield
    finally:
        _state.update(saved)
