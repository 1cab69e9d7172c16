"""The compiled pass of an interest tick: each viewer's new set merged with its previous one, and the events.

Every viewer's set is one row of a CSR array (``handles[offsets[i]:offsets[i + 1]]``)
kept sorted ascending between ticks.  The tree answers a tick's rows node by
node, not in handle order; sorting every row (about 30 ns a handle) would
cost more than the diff itself, so :func:`advance_rows` does not sort the
new rows.  Per viewer it

1. flags the handles of its new row in a scratch bit array indexed by handle
   (2 bits a handle);
2. walks its previous row in order: a handle flagged stays (it is written to
   the new row, so the kept ones come out sorted; its flags cleared), any other left;
3. collects the new row's handles still flagged, the entered ones (few, except
   for a new viewer; their flags cleared), and sorts them;
4. merges the two sorted runs, kept and entered, backwards in place into the
   viewer's new row.

So a tick costs O(row lengths) per viewer plus the sort of what entered,
with the scratch array all zeros again after each row (a refused row drops it).  At
2 bits a handle it stays in a core's L2 cache up to a few million entities: 256 KB for
1M, where an int32 stamp per handle (a value unique to the viewer and tick, nothing
ever cleared: the pass before) took 4 MB and left the cache; on 2,000 viewers x 1M
entities, one thread, the diff takes about 7.9 ms against 10.5 ms with the stamps.
With hysteresis the pass also flags the wider
answer (``scale = 1 + m``): a previous handle flagged by either stays, the
entered ones come only from the inner answer (then the outer row's flags are cleared).  A handle in ``gone``
(removed since the last tick, perhaps handed out again to a new entity)
never stays: it left, and entered again if the new answer holds it.

:func:`advance_rows` works on the viewers ``lo .. hi - 1`` and writes only
where their rows go, so the library's threads run chunks of viewers at once
(:func:`culling.runtime.threads.run_chunks`), each with a scratch array of its
own.  Viewers never share a previous row: ids are unique within a tick.  A
chunk writes its viewers' events one after another from the start of its own
region of the event buffers (each region as large as the chunk's rows, an upper
bound), so the events, few, lie close together and :func:`compact_rows` packs
them from a few cache lines (rather than from one line per viewer and kind,
spread over buffers as large as the sets).

The other direction, where the entities are few per viewer, is :mod:`culling.tree.inverted`'s (each
entity's sphere asks a grid over the viewers): its rows come sorted, so :func:`merge_rows` diffs each
with the previous row by one merge, where :func:`advance_rows` (rows in any order: the walk's) flags a
scratch bit array and sorts what entered.
"""

from __future__ import annotations

import numpy as np

from culling.runtime.jit import inline_kernel, kernel

__all__ = ["SMALL_SORT", "advance_rows", "compact_rows", "merge_rows"]

#: Runs up to this length are sorted by insertion (no call, no recursion); longer ones by ``ndarray.sort``.
SMALL_SORT = 24


@inline_kernel
def _in_sorted(values: np.ndarray, h: int) -> bool:
    """Whether ``h`` is in the sorted ``values`` (binary search).  A loop rather than ``np.searchsorted``:
    a kernel holding numba's ``arraymath`` makes every process that loads it import that module (and its
    BLAS probe) first."""
    lo, hi = 0, values.shape[0]
    while lo < hi:  # the first place whose value is not below h
        mid = (lo + hi) >> 1
        if values[mid] < h:
            lo = mid + 1
        else:
            hi = mid
    return bool(lo < values.shape[0] and values[lo] == h)


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


@inline_kernel
def _flag(h: int, bits: int) -> np.uint8:
    """Handle ``h``'s ``bits`` (1: inner, 2: outer, 3: both) placed in its byte of :func:`advance_rows`' scratch."""
    return np.uint8(bits << ((h & 3) << 1))


@kernel
def advance_rows(inner: np.ndarray, inner_start: np.ndarray, inner_count: np.ndarray, outer: np.ndarray,
                 outer_start: np.ndarray, outer_count: np.ndarray, sticky: bool, previous: np.ndarray,
                 previous_offsets: np.ndarray, previous_row: np.ndarray,
                 gone: np.ndarray, flags: np.ndarray, new: np.ndarray, new_counts: np.ndarray,
                 entered: np.ndarray, entered_counts: np.ndarray, left: np.ndarray, left_counts: np.ndarray,
                 events: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray], walk: np.ndarray, lo: int,
                 hi: int) -> int:
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
    flags : uint8, two bits per possible handle (``flags[h >> 2]``, bits ``2 * (h & 3)`` and up)
        Scratch of this chunk's thread, all zeros; all zeros again on return -1 (each row's flags
        are cleared as the row is done), meaningless after a refused row.  2 bits a handle rather
        than a 4-byte stamp: 1M handles take 256 KB, which stays in the core's L2 cache.
    new, new_counts
        Row ``i``'s sorted new set is written to ``new[outer_start[i]:]`` (``inner_start``
        without ``sticky``), its length to ``new_counts[i]``.
    entered, entered_counts, left, left_counts
        Row ``i``'s sorted entered handles at ``entered[entered_at[i]:]``, its sorted left ones at
        ``left[left_at[i]:]``.
    events : ``(entered_base, left_base, entered_at, left_at)``
        The chunk starting at walk step ``lo`` writes its events one after another from
        ``entered_base[lo]`` and ``left_base[lo]`` (int64 ``(m + 1,)`` by walk step: step ``j`` may
        write ``base[j + 1] - base[j]`` of each, as many as its inner row and its previous row
        hold); each row's first place goes to ``entered_at[i]`` and ``left_at[i]``.

    walk : int64 (m,), a permutation
        The order the viewers are taken in: the tree's walk order, so that viewers one after the
        other hold mostly the same handles (their flags in cache) and read their rows in memory order.

    Returns -1, or (the outputs and ``flags`` then meaningless) ``2 * i`` for a row ``i`` that holds a
    handle twice, ``2 * i + 1`` for one whose inner handles are not all in its outer row (``sticky``).
    Every handle must be below ``4 * flags.shape[0]`` (not checked here).  O(row lengths) per viewer,
    plus a binary search in ``gone`` per previous handle when ``gone`` is not empty, plus the sort of
    the entered handles.
    """
    check_gone = gone.shape[0] > 0
    room = outer_start if sticky else inner_start
    entered_base, left_base, entered_at, left_at = events
    e = entered_base[lo] if lo < hi else 0   # this chunk's events, one after another
    g = left_base[lo] if lo < hi else 0
    for step in range(lo, hi):
        i = int(walk[step])
        if sticky:  # flag 2: in the outer row
            for j in range(outer_start[i], outer_start[i] + outer_count[i]):
                h = outer[j]
                b = flags[h >> 2]
                if b & _flag(h, 2):
                    return 2 * i
                flags[h >> 2] = b | _flag(h, 2)
        for j in range(inner_start[i], inner_start[i] + inner_count[i]):  # flag 1: in the inner row
            h = inner[j]
            b = flags[h >> 2]
            if b & _flag(h, 1):
                return 2 * i
            if sticky and not b & _flag(h, 2):
                return 2 * i + 1
            flags[h >> 2] = b | _flag(h, 1)
        # The previous row in order: flagged handles stay (sorted, their flags cleared), the others left.
        k0 = room[i]
        k = k0
        g0 = g
        p = previous_row[i]
        if p >= 0:
            for j in range(previous_offsets[p], previous_offsets[p + 1]):
                h = previous[j]
                b = flags[h >> 2]
                if b & _flag(h, 3) and not (check_gone and _in_sorted(gone, h)):
                    new[k] = h
                    k += 1
                    flags[h >> 2] = b & ~_flag(h, 3)
                else:
                    left[g] = h
                    g += 1
        # Entered: the inner handles still flagged (their flags cleared).
        e0 = e
        for j in range(inner_start[i], inner_start[i] + inner_count[i]):
            h = inner[j]
            b = flags[h >> 2]
            if b & _flag(h, 1):
                entered[e] = h
                e += 1
                flags[h >> 2] = b & ~_flag(h, 3)
        if sticky:  # the outer handles neither kept nor entered
            for j in range(outer_start[i], outer_start[i] + outer_count[i]):
                h = outer[j]
                flags[h >> 2] &= ~_flag(h, 3)
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
        entered_at[i] = e0
        entered_counts[i] = e - e0
        left_at[i] = g0
        left_counts[i] = g - g0
    return -1


@kernel
def merge_rows(inner: np.ndarray, inner_start: np.ndarray, inner_count: np.ndarray, outer: np.ndarray,
               outer_start: np.ndarray, outer_count: np.ndarray, sticky: bool, previous: np.ndarray,
               previous_offsets: np.ndarray, previous_row: np.ndarray, gone: np.ndarray, new: np.ndarray,
               new_counts: np.ndarray, entered: np.ndarray, entered_counts: np.ndarray, left: np.ndarray,
               left_counts: np.ndarray, events: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray],
               walk: np.ndarray, lo: int, hi: int) -> int:
    """:func:`advance_rows` for viewers ``walk[lo .. hi - 1]`` whose rows come sorted ascending, each handle once
    (the grid's rows, :func:`grid_pairs`): the same outputs at the same places, by one merge of each
    new row with its previous row, with no scratch and no sort.

    Without ``sticky`` the new set is the inner row itself (``new`` and ``new_counts`` are not
    written); with it, the previous handles in the outer row and not ``gone`` stay, merged with
    the inner row into ``new[outer_start[i]:]``.  A previous handle in ``gone`` never stays (it
    left, and entered again if the new row holds it).  O(row lengths) per viewer, plus a binary
    search in ``gone`` per handle in both rows when ``gone`` is not empty.  Returns -1 (no row is
    refused: the rows are the grid's).
    """
    check_gone = gone.shape[0] > 0
    entered_base, left_base, entered_at, left_at = events
    e = entered_base[lo] if lo < hi else 0   # this chunk's events, one after another
    g = left_base[lo] if lo < hi else 0
    for step in range(lo, hi):
        i = int(walk[step])
        a = inner_start[i]
        a_end = a + inner_count[i]
        e0 = e
        q = 0
        q_end = 0
        p = previous_row[i]
        if p >= 0:
            q = previous_offsets[p]
            q_end = previous_offsets[p + 1]
        g0 = g
        if not sticky:
            while a < a_end and q < q_end:
                x = inner[a]
                y = previous[q]
                if x < y:
                    entered[e] = x
                    e += 1
                    a += 1
                elif y < x:
                    left[g] = y
                    g += 1
                    q += 1
                else:
                    if check_gone and _in_sorted(gone, x):
                        entered[e] = x
                        e += 1
                        left[g] = y
                        g += 1
                    a += 1
                    q += 1
            while a < a_end:
                entered[e] = inner[a]
                e += 1
                a += 1
            while q < q_end:
                left[g] = previous[q]
                g += 1
                q += 1
        else:
            o = outer_start[i]
            o_end = o + outer_count[i]
            w0 = o
            w = o
            while a < a_end or q < q_end:
                if q < q_end and (a == a_end or previous[q] <= inner[a]):
                    y = previous[q]
                    q += 1
                    while o < o_end and outer[o] < y:
                        o += 1
                    if o < o_end and outer[o] == y and not (check_gone and _in_sorted(gone, y)):
                        new[w] = y
                        w += 1
                        if a < a_end and inner[a] == y:
                            a += 1
                    else:  # left (an inner copy of a gone handle comes next: it entered)
                        left[g] = y
                        g += 1
                else:
                    x = inner[a]
                    a += 1
                    new[w] = x
                    w += 1
                    entered[e] = x
                    e += 1
            new_counts[i] = w - w0
        entered_at[i] = e0
        entered_counts[i] = e - e0
        left_at[i] = g0
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
