"""Testing and writing the members of the visited nodes (tree) or cells.

Both keep each node's members in one contiguous run of pool rows: the
centre's axes, the radius and the squared reach, column by column.  A query's
answer is written in one pass over those runs: each row's index goes to
``rows[k]`` and ``k`` advances only when the row surely passes the exact
test, so there is no mask and no branch on the test.

The test is :func:`culling.shapes.contains_exact`'s: a float filter that is
sure of every object not within rounding of its surface, and exact rational
arithmetic for the few that are.  Those few (practically never any) are
written to a second list, ``unsure``, which the caller settles with
:func:`culling.shapes.decide`.  The common case (spheres, no scale) is
spelled out in a lean loop that only notes whether any row was unsure; such
a run (practically never) is filtered again in full.  The general filter
stays out of that loop: a call in its body costs about 10x.
"""

from __future__ import annotations

import numpy as np

from culling.jit import kernel
from culling.shapes import FILTER_EPS, SAFE_HI, SAFE_LO, classify

__all__ = ["candidates", "keep_run", "test_runs"]

_BELOW = 1.0 - FILTER_EPS
_ABOVE = 1.0 + FILTER_EPS


@kernel
def candidates(visited: np.ndarray, count: np.ndarray) -> int:
    """How many members the visited nodes hold together."""
    total = 0
    for node in visited:
        total += count[node]
    return total


@kernel
def keep_run(columns: np.ndarray, first: int, last: int, p: np.ndarray, cube: bool, scale: float,
             rows: np.ndarray, k: int, end: int, unsure: np.ndarray, uk: int, uend: int) -> tuple[int, int]:
    """Sort the pool rows ``first .. last - 1`` by the filter: sure ones to ``rows[k:end]``, unsure ones
    to ``unsure[uk:uend]``; returns the new ``(k, uk)``.

    Past ``end`` (``uend``), where a parallel neighbour's answer starts (or
    at once, when only counting), nothing is written but the counts go on.
    O(last - first).
    """
    dim = p.shape[0]
    if not cube and scale == 1.0:  # spheres, no scale: the filter spelled out, lean
        k0 = k
        maybe = 0  # rows inside the upper bound: as many as the sure ones unless one is unsure
        unsafe = False
        for row in range(first, last):
            d = columns[0, row] - p[0]
            squares = d * d
            for axis in range(1, dim):
                d = columns[axis, row] - p[axis]
                squares += d * d
            bound = columns[dim + 1, row]
            if k < end:  # false only after the answer is complete
                rows[k] = row
            k += squares < bound * _BELOW
            maybe += squares <= bound * _ABOVE
            unsafe |= (squares < SAFE_LO) | (squares > SAFE_HI)
        if maybe == k - k0 and not unsafe:
            return k, uk
        k = k0  # a row within rounding of its surface (practically never): the run again, in full
    for row in range(first, last):
        inside, doubtful = classify(columns, row, p, cube, scale)
        if k < end:
            rows[k] = row
        k += inside
        if doubtful and uk < uend:
            unsure[uk] = row
        uk += doubtful
    return k, uk


@kernel
def test_runs(visited: np.ndarray, start: np.ndarray, count: np.ndarray, columns: np.ndarray,
              p: np.ndarray, exact: bool, cube: bool, scale: float, rows: np.ndarray, k: int, end: int,
              unsure: np.ndarray, uk: int, uend: int) -> tuple[int, int]:
    """:func:`keep_run` over the visited nodes (every member unless ``exact``); returns ``(k, uk)``.

    O(members).
    """
    for node in visited:
        first = start[node]
        last = first + count[node]
        if exact:
            k, uk = keep_run(columns, first, last, p, cube, scale, rows, k, end, unsure, uk, uend)
        else:
            for row in range(first, last):
                if k < end:
                    rows[k] = row
                k += 1
    return k, uk
