"""Columns or rows for the member pool, where rows are reached at random: ``python -m benchmarks.pool_layout``.

The pool keeps each member's centre, radius and squared reach column by
column (docs/DESIGN.md, "Pools and tiles").  Queries read a node's members
as runs, where columns are plainly right (SIMD over contiguous floats);
``update_many``'s settle reaches each object's row at random, where rows of
``dim + 2`` floats (one cache line, or two) might seem better.  This times
settle's memory traffic alone, as its kernel does it: per object, the stored
radius read, the old centre and radius copied to a backup, the new centre
written, the row ``AHEAD`` objects on fetched early; the memory evicted
before each pass, as the peers' frames evict it in the collision benchmark.

A fourth way keeps the columns and walks the pool's rows in order instead of
the objects (``columns, rows in order``): each row's object found through an
index by handle, its new centre and radius read at random from the caller's
arrays, the backup written by row; a batch of most objects would then write
the pool's lines in sequence.
"""

from __future__ import annotations

import argparse
import time

import numba
import numpy as np

from culling.runtime.prefetch import AHEAD, prefetch, prefetch_at
from engine.arguments import whole_number


@numba.njit(nogil=True, cache=True)  # not a library kernel: kept out of culling's warm-up and wheel
def _settle_columns(rows: np.ndarray, centres: np.ndarray, radii: np.ndarray, columns: np.ndarray,
                    backup: np.ndarray) -> int:
    """Settle's traffic on a pool of columns, ``(dim + 2, rows)``; returns the unchanged radii."""
    n, dim = centres.shape
    same = 0
    for i in range(n):
        if i + AHEAD < n:
            for column in range(dim + 1):
                prefetch_at(columns, column, rows[i + AHEAD])
        row = rows[i]
        same += radii[i] == columns[dim, row]
        for column in range(dim + 1):
            backup[i, column] = columns[column, row]
        for axis in range(dim):
            columns[axis, row] = centres[i, axis]
    return same


@numba.njit(nogil=True, cache=True)
def _settle_rows(rows: np.ndarray, centres: np.ndarray, radii: np.ndarray, pool: np.ndarray,
                 backup: np.ndarray) -> int:
    """The same traffic on a pool of rows, ``(rows, width)``, ``width >= dim + 2``: :func:`_settle_columns`'
    loop line for line on purpose, since the indexing is the one thing compared."""
    n, dim = centres.shape
    same = 0
    for i in range(n):
        if i + AHEAD < n:
            prefetch(pool[rows[i + AHEAD]], 0)
        row = rows[i]
        same += radii[i] == pool[row, dim]
        for column in range(dim + 1):
            backup[i, column] = pool[row, column]
        for axis in range(dim):
            pool[row, axis] = centres[i, axis]
    return same


@numba.njit(nogil=True, cache=True)
def _settle_sweep(owner: np.ndarray, index: np.ndarray, handles: np.ndarray, centres: np.ndarray,
                  radii: np.ndarray, columns: np.ndarray, backup: np.ndarray) -> int:
    """The same traffic with the pool's rows walked in order: ``owner`` int64 (rows,) each row's handle
    (-1: free), ``index`` int64 (handles,) all -1, filled here with each handle's object and emptied
    again; the object's centre and radius prefetched ``AHEAD`` rows on, its index ``2 * AHEAD``."""
    n, dim = centres.shape
    for i in range(n):
        index[handles[i]] = i
    same = 0
    pool_rows = owner.shape[0]
    for row in range(pool_rows):
        if row + 2 * AHEAD < pool_rows and owner[row + 2 * AHEAD] >= 0:
            prefetch(index, owner[row + 2 * AHEAD])
        if row + AHEAD < pool_rows and owner[row + AHEAD] >= 0 and index[owner[row + AHEAD]] >= 0:
            prefetch_at(centres, index[owner[row + AHEAD]], 0)
            prefetch(radii, index[owner[row + AHEAD]])
        if owner[row] < 0 or index[owner[row]] < 0:
            continue
        i = index[owner[row]]
        same += radii[i] == columns[dim, row]
        for column in range(dim + 1):
            backup[column, row] = columns[column, row]
        for axis in range(dim):
            columns[axis, row] = centres[i, axis]
    for i in range(n):
        index[handles[i]] = -1
    return same


def compare(objects: int = 10_000, repeats: int = 40, dim: int = 3, seed: int = 0) -> dict[str, float]:
    """Median seconds of one settle-like pass per layout, alternated, each after evicting the caches.

    ``columns``: ``(dim + 2, rows)``; ``rows of 64 B``: ``(rows, 8)`` (one cache line each);
    ``rows of 40 B``: ``(rows, dim + 2)``.  The pool has half again as many rows as objects, in no
    order the objects follow (the tree's pool after a few frames of a moving crowd).
    """
    rng = np.random.default_rng(seed)
    pool_rows = objects * 3 // 2
    rows = rng.permutation(pool_rows)[:objects].astype(np.int64)
    centres, radii = rng.random((objects, dim)), rng.random(objects)
    layouts = {"columns": np.zeros((dim + 2, pool_rows)), "rows of 64 B": np.zeros((pool_rows, 8)),
               f"rows of {8 * (dim + 2)} B": np.zeros((pool_rows, dim + 2))}
    backup = np.empty((objects, dim + 1))
    owner = np.full(pool_rows, -1, dtype=np.int64)  # the handle of each row (the objects' handles: 0 .. n - 1)
    owner[rows] = np.arange(objects)
    index, by_row = np.full(objects, -1, dtype=np.int64), np.empty((dim + 1, pool_rows))
    swept = np.zeros((dim + 2, pool_rows))
    evict = np.zeros(8_000_000)  # 64 MB, twice the last-level cache here
    times: dict[str, list[float]] = {name: [] for name in [*layouts, "columns, rows in order"]}
    for _ in range(repeats):
        for name in times:
            evict += 1.0
            start = time.perf_counter()
            if name == "columns, rows in order":
                _settle_sweep(owner, index, np.arange(objects), centres, radii, swept, by_row)
            elif name == "columns":
                _settle_columns(rows, centres, radii, layouts[name], backup)
            else:
                _settle_rows(rows, centres, radii, layouts[name], backup)
            times[name].append(time.perf_counter() - start)
    return {name: float(np.median(spent[1:] or spent)) for name, spent in times.items()}  # the first compiles


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m benchmarks.pool_layout", description=__doc__.splitlines()[0].replace("``", ""))
    ap.add_argument("--objects", type=whole_number(), default=10_000, help="objects settled per pass (default 10,000)")
    ap.add_argument("--repeats", type=whole_number(), default=40,
                    help="passes per layout (default 40; the first, which compiles, is not counted)")
    args = ap.parse_args(argv)
    if args.objects < 1:
        ap.error(f"--objects must be at least 1, got {args.objects}")
    if args.repeats < 2:
        ap.error(f"--repeats must be at least 2 (the first pass compiles and is not counted), got {args.repeats}")
    for name, seconds in compare(args.objects, args.repeats).items():
        print(f"{name:22s} {seconds * 1e6:8.1f} us a pass (median of {args.repeats - 1}, caches evicted before each)")
    return 0


if __name__ == "__main__":
    from benchmarks.command import exit_with

    exit_with(main, "python -m benchmarks.pool_layout")
