"""The stable sort inside the kernels, written as plain loops.

numba compiles ``np.argsort(..., kind="mergesort")`` from its own generic
merge sort, built for any key type and compiled as a subroutine of the kernel
that calls it: 0.7 CPU s of a cold compile of every kernel.  This loop does
the same for integer keys, compiled as part of its caller, and on the sizes
:func:`culling.core.members._by_node` sorts (a few hundred to a few
thousand visits) runs about twice as fast (3.2 against 4.8 us for 200 keys,
38 against 70 us for 2,000).  numba's quicksort (``ndarray.sort()``) stays where
the kernels use it: the same algorithm written out here ran 6 % slower on the
interest ticks' runs, for 0.6 CPU s of compile.

>>> keys = np.array([3, 1, 2, 1, 0], dtype=np.int64)
>>> stable_order(keys).tolist()
[4, 1, 3, 2, 0]
"""

from __future__ import annotations

import numpy as np

from culling.runtime.jit import inline_kernel

__all__ = ["INSERTION_BELOW", "stable_order"]

#: Runs of this many keys are sorted by insertion before the merges: fewer moves than merging them.
INSERTION_BELOW = 16


@inline_kernel
def stable_order(keys: np.ndarray) -> np.ndarray:
    """The permutation that sorts ``keys`` (int (n,)), equal keys in their given order:
    ``np.argsort(keys, kind="stable")``.  A bottom-up merge sort over runs sorted by
    insertion, O(n log n), one scratch array."""
    n = keys.shape[0]
    order = np.empty(n, dtype=np.int64)
    for i in range(n):
        order[i] = i
    for lo in range(0, n, INSERTION_BELOW):  # runs sorted by insertion (stable: strict comparison)
        hi = min(lo + INSERTION_BELOW, n)
        for i in range(lo + 1, hi):
            item = order[i]
            key = keys[item]
            j = i - 1
            while j >= lo and keys[order[j]] > key:
                order[j + 1] = order[j]
                j -= 1
            order[j + 1] = item
    spare = np.empty(n, dtype=np.int64)
    width = INSERTION_BELOW
    while width < n:  # merge neighbouring runs pairwise, the left one winning ties
        for lo in range(0, n, 2 * width):
            mid = min(lo + width, n)
            hi = min(lo + 2 * width, n)
            i, j = lo, mid
            for k in range(lo, hi):
                if j >= hi or (i < mid and keys[order[i]] <= keys[order[j]]):
                    spare[k] = order[i]
                    i += 1
                else:
                    spare[k] = order[j]
                    j += 1
        order, spare = spare, order
        width *= 2
    return order
