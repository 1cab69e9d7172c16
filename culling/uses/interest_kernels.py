"""The compiled pass of an interest tick: each viewer's new set merged with its previous one, and the events.

Every viewer's set is one row of a CSR array (``handles[offsets[i]:offsets[i + 1]]``)
kept sorted ascending between ticks.  The tree answers a tick's rows node by
node, not in handle order; sorting every row (about 30 ns a handle) would
cost more than the diff itself, so :func:`advance_rows` does not sort the
new rows.  Per viewer it

1. stamps the handles of its new row in a scratch array indexed by handle
   (a value unique to the viewer and tick: nothing is ever cleared);
2. walks its previous row in order: a handle stamped stays (it is written to
   the new row, so the kept ones come out sorted), any other left;
3. collects the new row's handles not kept, the entered ones (few, except
   for a new viewer), and sorts them;
4. merges the two sorted runs, kept and entered, backwards in place into the
   viewer's new row.

So a tick costs O(row lengths) per viewer plus the sort of what entered,
with the scratch array (4 bytes a handle, per thread) in cache for worlds up to a few
hundred thousand entities.  With hysteresis the pass also stamps the wider
answer (``scale = 1 + m``): a previous handle stamped by either stays, the
entered ones come only from the inner answer.  A handle in ``gone``
(removed since the last tick, perhaps handed out again to a new entity)
never stays: it left, and entered again if the new answer holds it.

:func:`advance_rows` works on the viewers ``lo .. hi - 1`` and writes only
where their rows go, so the library's threads run chunks of viewers at once
(:func:`culling.runtime.threads.run_chunks`), each with a scratch array of its
own.  Viewers never share a previous row: ids are unique within a tick.
:func:`compact_rows` then packs the rows written at their upper-bound places.
"""

from __future__ import annotations

import numpy as np

from culling.runtime.jit import inline_kernel, kernel

__all__ = ["SMALL_SORT", "advance_rows", "compact_rows"]

#: Runs up to this length are sorted by insertion (no call, no recursion); longer ones by ``ndarray.sort``.
SMALL_SORT = 24


@inline_kernel
def _in_sorted(values: np.ndarray, h: int) -> bool:
    """Whether ``h`` is in the sorted ``values`` (binary search)."""
    if values.shape[0] == 0:
        return False
    k = np.searchsorted(values, h)
    return bool(k < values.shape[0] and values[k] == h)


@inline_kernel
def _sort_run(values: np.ndarray, a: int, b: int) -> None:
    """Sort ``values[a:b]`` in place."""
    if b - a > SMALL_SORT:
        values[a:b].sort()
        return
    for j in range(a + 1, b):
        x = values[j]
        k = j - 1
        while k >= a and values[k] > x:
            values[k + 1] = values[k]
            k -= 1
        values[k + 1] = x


@kernel
def advance_rows(inner: np.ndarray, inner_start: np.ndarray, inner_count: np.ndarray, outer: np.ndarray,
                 outer_start: np.ndarray, outer_count: np.ndarray, sticky: bool, previous: np.ndarray,
                 previous_offsets: np.ndarray, previous_row: np.ndarray,
                 gone: np.ndarray, stamps: np.ndarray, base: int, new: np.ndarray, new_counts: np.ndarray,
                 entered: np.ndarray, entered_counts: np.ndarray, left: np.ndarray, left_counts: np.ndarray,
                 walk: np.ndarray, lo: int, hi: int) -> int:
    """Viewers ``walk[lo .. hi - 1]``: the new sorted set, the entered and the left handles of each.

    Parameters
    ----------
    inner, inner_start, inner_count : int64
        Each viewer's handles within reach: row ``i`` is ``inner[inner_start[i]:][:inner_count[i]]``
        (rows apart from each other, in any order: the tree's walk order, say; a row's handles in any
        order, each once).
    outer, outer_start, outer_count : int64
        With ``sticky`` (hysteresis): each viewer's handles within the wider reach, a superset of
        its inner row; otherwise ignored (pass the inner rows).
    previous, previous_offsets : int64
        The previous tick's sorted rows; ``previous_row[i]`` is viewer ``i``'s, -1 for a new viewer.
    gone : int64, sorted
        Handles removed since the previous tick.
    stamps : int32, one entry per possible handle
        Scratch of this chunk's thread, every entry below ``base + 1``; ``base + 3 * hi`` fits in int32.
    new, new_counts
        Row ``i``'s sorted new set is written to ``new[outer_start[i]:]`` (``inner_start``
        without ``sticky``), its length to ``new_counts[i]``.
    entered, entered_counts
        Row ``i``'s sorted entered handles at ``entered[inner_start[i]:]``.
    left, left_counts
        Its sorted left handles at ``left[previous_offsets[previous_row[i]]:]``.

    walk : int64 (m,), a permutation
        The order the viewers are taken in: the tree's walk order, so that viewers one after the
        other hold mostly the same handles (their stamps in cache) and read their rows in memory order.

    Returns -1, or (the outputs then meaningless) ``2 * i`` for a row ``i`` that holds a handle
    twice, ``2 * i + 1`` for one whose inner handles are not all in its outer row (``sticky``).
    Every handle must be below ``stamps.shape[0]`` (not checked here).  O(row lengths) per viewer, plus a binary search in ``gone`` per
    previous handle when ``gone`` is not empty, plus the sort of the entered handles.
    """
    check_gone = gone.shape[0] > 0
    room = outer_start if sticky else inner_start
    for step in range(lo, hi):
        i = int(walk[step])
        s_outer = base + 3 * i + 1
        s_inner = s_outer + 1
        s_kept = s_outer + 2
        if sticky:
            for j in range(outer_start[i], outer_start[i] + outer_count[i]):
                h = outer[j]
                if stamps[h] == s_outer:
                    return 2 * i
                stamps[h] = s_outer
        for j in range(inner_start[i], inner_start[i] + inner_count[i]):
            h = inner[j]
            if stamps[h] == s_inner:
                return 2 * i
            if sticky and stamps[h] != s_outer:
                return 2 * i + 1
            stamps[h] = s_inner
        # The previous row in order: stamped handles stay (sorted), the others left.
        k0 = room[i]
        k = k0
        g0 = 0
        g = 0
        p = previous_row[i]
        if p >= 0:
            g0 = previous_offsets[p]
            g = g0
            for j in range(previous_offsets[p], previous_offsets[p + 1]):
                h = previous[j]
                mark = stamps[h]
                if (mark == s_inner or mark == s_outer) and not (check_gone and _in_sorted(gone, h)):
                    new[k] = h
                    k += 1
                    stamps[h] = s_kept
                else:
                    left[g] = h
                    g += 1
        # Entered: the inner handles that did not stay.
        e0 = inner_start[i]
        e = e0
        for j in range(inner_start[i], inner_start[i] + inner_count[i]):
            h = inner[j]
            if stamps[h] == s_inner:
                entered[e] = h
                e += 1
        _sort_run(entered, e0, e)
        # Merge the kept run new[k0:k] and the entered run backwards into new[k0:k + e - e0].
        w = k + (e - e0) - 1
        a = k - 1
        b = e - 1
        while b >= e0:
            if a >= k0 and new[a] > entered[b]:
                new[w] = new[a]
                a -= 1
            else:
                new[w] = entered[b]
                b -= 1
            w -= 1
        new_counts[i] = k - k0 + e - e0
        entered_counts[i] = e - e0
        left_counts[i] = g - g0
    return -1


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
