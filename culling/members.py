"""Testing and writing the members of the visited nodes (tree) or cells (dense grid).

Both structures keep each node's (cell's) members in one contiguous run of
pool rows: the centre's axes, the radius and the squared reach, column by
column.  A query's answer is written in one pass over those runs: each
row's index goes to ``rows[k]`` and ``k`` advances only when the row passes
the exact test, so there is no mask and no branch on the test.

The sphere test runs in a tight loop (squared distance against the stored
squared reach, or ``sqrt(d2) <= r * scale``) that only flags a square that
may have under- or overflowed; a run with such a square, which practically
never happens, is tested again with :func:`culling.shapes.inside`, which
recomputes it with scaling.  Keeping that rare path out of the loop is worth
about 10x: its call in the loop body stops the compiler from optimising the
loop.
"""

from __future__ import annotations

import math

import numpy as np

from culling.jit import kernel
from culling.shapes import UNSAFE_SQUARE, inside

__all__ = ["candidates", "keep_run", "test_runs"]


@kernel
def candidates(visited: np.ndarray, count: np.ndarray) -> int:
    """How many members the visited nodes hold together."""
    total = 0
    for node in visited:
        total += count[node]
    return total


@kernel
def keep_run(columns: np.ndarray, first: int, last: int, p: np.ndarray, cube: bool, scale: float,
             rows: np.ndarray, k: int, end: int) -> int:
    """Write the pool rows ``first .. last - 1`` that contain ``p`` to ``rows[k:end]``; returns the new ``k``.

    Past ``end`` (where a parallel neighbour's answer starts, or 0 when only
    counting) nothing is written, but ``k`` still counts.  O(last - first).
    """
    dim = p.shape[0]
    if cube:
        for row in range(first, last):
            if k < end:
                rows[k] = row
            k += inside(columns, row, p, cube, scale)
        return k
    k0 = k
    rare = False
    if end <= k and scale == 1.0:  # counting only: no stores, so the loop vectorises
        for row in range(first, last):
            d = columns[0, row] - p[0]
            d2 = d * d
            for axis in range(1, dim):
                d = columns[axis, row] - p[axis]
                d2 += d * d
            k += d2 <= columns[dim + 1, row]
            rare |= (d2 < UNSAFE_SQUARE) | (d2 == math.inf)
    elif scale == 1.0:
        for row in range(first, last):
            d = columns[0, row] - p[0]
            d2 = d * d
            for axis in range(1, dim):
                d = columns[axis, row] - p[axis]
                d2 += d * d
            if k < end:  # false only after the answer is complete
                rows[k] = row
            k += d2 <= columns[dim + 1, row]
            rare |= (d2 < UNSAFE_SQUARE) | (d2 == math.inf)
    else:
        for row in range(first, last):
            d = columns[0, row] - p[0]
            d2 = d * d
            for axis in range(1, dim):
                d = columns[axis, row] - p[axis]
                d2 += d * d
            if k < end:
                rows[k] = row
            k += math.sqrt(d2) <= columns[dim, row] * scale
            rare |= (d2 < UNSAFE_SQUARE) | (d2 == math.inf)
    if rare:  # a square may have under- or overflowed: this run again, carefully
        k = k0
        for row in range(first, last):
            if k < end:
                rows[k] = row
            k += inside(columns, row, p, cube, scale)
    return k


@kernel
def test_runs(visited: np.ndarray, start: np.ndarray, count: np.ndarray, columns: np.ndarray,
              p: np.ndarray, exact: bool, cube: bool, scale: float, rows: np.ndarray, k: int, end: int) -> int:
    """Write the rows of the visited members a query returns to ``rows[k:end]``; returns the new ``k``.

    All members unless ``exact``, else those that contain ``p`` (radii times
    ``scale``).  With ``end <= k`` this only counts them.  O(members).
    """
    for node in visited:
        first = start[node]
        last = first + count[node]
        if exact:
            k = keep_run(columns, first, last, p, cube, scale, rows, k, end)
        else:
            for row in range(first, last):
                if k < end:
                    rows[k] = row
                k += 1
    return k
