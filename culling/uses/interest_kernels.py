"""The compiled passes of an interest tick: sort each viewer's row, keep the sticky ones, diff against last tick.

Every viewer's set is one row of a CSR array (``handles[offsets[i]:offsets[i + 1]]``),
sorted ascending.  A tick's passes are merges of sorted rows, one viewer
after another, so each costs O(row lengths) and touches memory in order:

1. :func:`sort_rows` sorts each row of the tree's answer in place (the tree
   answers node by node, not in handle order) and reports a row that holds a
   handle twice;
2. :func:`sticky_rows` (only with hysteresis) keeps, of each viewer's wider
   answer (``scale = 1 + m``), the handles in its inner answer and the ones
   it held last tick that were not removed since;
3. :func:`diff_rows` merges each new row with the viewer's previous row: the
   handles only in the new row entered, those only in the old one left, and
   one in both that was removed and handed out again since (``gone``) did
   both;
4. :func:`compact_rows` packs the rows written at their upper-bound places
   into a CSR array.

Each kernel works on the viewers ``lo .. hi - 1`` and writes only where
those viewers' rows go, so the library's threads run chunks of viewers at
once (:func:`culling.core.threads.run_chunks`).  Rows of different viewers
never share a previous row: viewer ids are unique within a tick.
"""

from __future__ import annotations

import numpy as np

from culling.core.jit import inline_kernel, kernel

__all__ = ["compact_rows", "diff_rows", "sort_rows", "sticky_rows"]


@kernel
def sort_rows(handles: np.ndarray, offsets: np.ndarray, lo: int, hi: int) -> int:
    """Sort rows ``lo .. hi - 1`` of ``(handles, offsets)`` in place.

    Returns the first row (``>= lo``) that holds a handle twice, or -1.  O(k log k) per row of k.
    """
    repeated = -1
    for i in range(lo, hi):
        a = offsets[i]
        b = offsets[i + 1]
        if b - a > 1:
            handles[a:b].sort()
            if repeated < 0:
                for j in range(a + 1, b):
                    if handles[j] == handles[j - 1]:
                        repeated = i
                        break
    return repeated


@inline_kernel
def _in_sorted(values: np.ndarray, h: int) -> bool:
    """Whether ``h`` is in the sorted ``values`` (binary search)."""
    if values.shape[0] == 0:
        return False
    k = np.searchsorted(values, h)
    return k < values.shape[0] and values[k] == h


@kernel
def sticky_rows(inner: np.ndarray, inner_offsets: np.ndarray, outer: np.ndarray, outer_offsets: np.ndarray,
                previous: np.ndarray, previous_offsets: np.ndarray, previous_row: np.ndarray, gone: np.ndarray,
                out: np.ndarray, counts: np.ndarray, lo: int, hi: int) -> int:
    """Hysteresis: row ``i``'s new set is ``inner_i | (outer_i & (previous_i - gone))``.

    All rows sorted; ``inner_i`` is a subset of ``outer_i`` (the same
    exact test at a larger scale).  Row ``i`` is written to
    ``out[outer_offsets[i]:]``, its length to ``counts[i]``.  ``previous_row[i]``
    is the viewer's row last tick, -1 for a new viewer.  O(row lengths).
    """
    for i in range(lo, hi):
        k = outer_offsets[i]
        a, a_end = inner_offsets[i], inner_offsets[i + 1]
        p = previous_row[i]
        b, b_end = 0, 0
        if p >= 0:
            b, b_end = previous_offsets[p], previous_offsets[p + 1]
        for j in range(outer_offsets[i], outer_offsets[i + 1]):
            h = outer[j]
            while a < a_end and inner[a] < h:
                a += 1
            keep = a < a_end and inner[a] == h
            if not keep:
                while b < b_end and previous[b] < h:
                    b += 1
                keep = b < b_end and previous[b] == h and not _in_sorted(gone, h)
            if keep:
                out[k] = h
                k += 1
        counts[i] = k - outer_offsets[i]
    return 0


@kernel
def diff_rows(new: np.ndarray, new_offsets: np.ndarray, previous: np.ndarray, previous_offsets: np.ndarray,
              previous_row: np.ndarray, gone: np.ndarray, entered: np.ndarray, entered_counts: np.ndarray,
              left: np.ndarray, left_counts: np.ndarray, lo: int, hi: int) -> int:
    """Entered and left handles of rows ``lo .. hi - 1``: a merge of the sorted new and previous rows.

    Row ``i``'s entered handles go to ``entered[new_offsets[i]:]`` (at most
    its new row's length), its left ones to ``left[previous_offsets[p]:]``
    with ``p = previous_row[i]`` (at most its previous row's length; -1: a
    new viewer, nothing left); their counts to ``entered_counts[i]`` and
    ``left_counts[i]``.  A handle in both rows that is in the sorted ``gone``
    (removed, then handed out to a new entity) both left and entered.
    O(row lengths), plus a binary search per common handle when ``gone`` is
    not empty.
    """
    check_gone = gone.shape[0] > 0
    for i in range(lo, hi):
        a, a_end = new_offsets[i], new_offsets[i + 1]
        e = a
        p = previous_row[i]
        b, b_end = 0, 0
        if p >= 0:
            b, b_end = previous_offsets[p], previous_offsets[p + 1]
        first_left = b
        g = b
        while a < a_end and b < b_end:
            x = new[a]
            y = previous[b]
            if x < y:
                entered[e] = x
                e += 1
                a += 1
            elif y < x:
                left[g] = y
                g += 1
                b += 1
            else:
                if check_gone and _in_sorted(gone, x):
                    entered[e] = x
                    e += 1
                    left[g] = y
                    g += 1
                a += 1
                b += 1
        while a < a_end:
            entered[e] = new[a]
            e += 1
            a += 1
        while b < b_end:
            left[g] = previous[b]
            g += 1
            b += 1
        entered_counts[i] = e - new_offsets[i]
        left_counts[i] = g - first_left
    return 0


@kernel
def compact_rows(buffer: np.ndarray, starts: np.ndarray, counts: np.ndarray, offsets: np.ndarray,
                 out: np.ndarray, lo: int, hi: int) -> int:
    """Copy row ``i`` (``buffer[starts[i]:][:counts[i]]``) to ``out[offsets[i]:]`` for ``i`` in ``lo .. hi - 1``."""
    for i in range(lo, hi):
        s = starts[i]
        o = offsets[i]
        for j in range(counts[i]):
            out[o + j] = buffer[s + j]
    return 0
