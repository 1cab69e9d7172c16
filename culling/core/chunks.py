"""Many queries in passes of bounded size: ``query_many``'s scratch does not grow with the batch.

A pass over ``m`` points needs scratch in proportion to ``m`` (each
point's walk, its visits and the member tests' row buffers: about 3 KB
per point).  :func:`in_chunks` answers the points ``QUERY_CHUNK`` at a
time and joins the answers, so a batch of millions of points needs the
scratch of one chunk (tens of MB) on top of its answer.  Each chunk is
independent of the others, so a caller may also run them on threads.

>>> import numpy as np
>>> def answer(first, last):  # point i's answer: i copies of i
...     counts = np.arange(first, last)
...     return np.repeat(counts, counts), counts
>>> handles, counts = in_chunks(5, answer, chunk=2)
>>> handles.tolist(), counts.tolist()
([1, 2, 2, 3, 3, 3, 4, 4, 4, 4], [0, 1, 2, 3, 4])
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from culling.runtime.jit import kernel

__all__ = ["QUERY_CHUNK", "chunk_bounds", "in_caller_order", "in_chunks", "join_answers", "merged", "parts_in_caller_order"]

#: Points per pass of ``query_many``: 8,192 points' scratch is about 25 MB,
#: and a pass stays long enough that its fixed costs (a few kernel calls, a
#: scan of the node counts) are noise; the many-query benchmark's 2,000
#: points are one pass.
QUERY_CHUNK = 8192

Answer = tuple[np.ndarray, np.ndarray]


def chunk_bounds(m: int, chunk: int = QUERY_CHUNK) -> list[tuple[int, int]]:
    """The ``(first, last)`` point ranges of the passes over ``m`` points, in order."""
    return [(first, min(first + chunk, m)) for first in range(0, m, chunk)] or [(0, 0)]


def join_answers(parts: list[Answer]) -> Answer:
    """The passes' ``(handles, counts)``, in point order, as one answer."""
    if len(parts) == 1:
        return parts[0]
    return (np.concatenate([handles for handles, _ in parts]),
            np.concatenate([counts for _, counts in parts]))


def in_chunks(m: int, answer: Callable[[int, int], Answer], chunk: int = QUERY_CHUNK) -> Answer:
    """``answer(first, last)`` for every pass of :func:`chunk_bounds`, joined: ``(handles, counts)``.

    ``answer`` returns the handles (int64, concatenated) and the counts
    (int64 ``(last - first,)``) of points ``first .. last - 1``.
    """
    if m <= chunk:  # one pass, the common case: no list and no join
        return answer(0, m)
    return join_answers([answer(first, last) for first, last in chunk_bounds(m, chunk)])


def merged(handles: np.ndarray, counts: np.ndarray, extra: np.ndarray, owners: np.ndarray) -> Answer:
    """``(handles, counts)`` with ``extra`` handles added to the answers of points ``owners``
    (int64 (k,) each): each point's answer stays one run, its added handles after its own.

    The batch calls' kernels answer most candidates themselves and set aside
    the few within rounding of a surface; exact arithmetic keeps some of
    those, and this puts them back by point.  O(answer) (a stable sort by point).
    """
    if not extra.size:
        return handles, counts
    m = counts.shape[0]
    owner = np.concatenate([np.repeat(np.arange(m), counts), owners])
    order = np.argsort(owner, kind="stable")
    return np.concatenate([handles, extra])[order], counts + np.bincount(owners, minlength=m)


@kernel
def in_caller_order(handles: np.ndarray, counts: np.ndarray, order: np.ndarray) -> Answer:
    """An answer given point by point in ``order`` (its row ``j`` answers the caller's point
    ``order[j]``; int64 (m,), a permutation), as the caller's rows: ``(handles, counts)``, new arrays.

    ``query_many`` may answer its points in an order of its own (the tree's
    walk along a Morton curve); this puts each row back where the caller's
    point is, its handles as they were.  One pass over the answer: O(m + answer).
    """
    m = counts.shape[0]
    first = np.empty(m, dtype=np.int64)  # where the caller's point i's row starts in ``handles``
    out_counts = np.empty(m, dtype=np.int64)
    at = 0
    for j in range(m):
        first[order[j]] = at
        out_counts[order[j]] = counts[j]
        at += counts[j]
    out = np.empty(handles.shape[0], dtype=np.int64)
    k = 0
    for i in range(m):
        for h in range(first[i], first[i] + out_counts[i]):
            out[k] = handles[h]
            k += 1
    return out, out_counts


def parts_in_caller_order(parts: list[Answer], order: np.ndarray) -> Answer:
    """:func:`in_caller_order` of the answer the ``parts`` would join into (:func:`join_answers`), without
    joining them: each part's rows are copied once, straight to the caller's rows.  O(m + answer).

    A large answer (2,000 viewers over 1M entities: 3.7M handles) then pays one
    new array and one copy rather than two of each.
    """
    counts = parts[0][1] if len(parts) == 1 else np.concatenate([part_counts for _, part_counts in parts])
    out_counts = np.empty_like(counts)
    out_counts[order] = counts
    starts = np.zeros(counts.shape[0] + 1, dtype=np.int64)
    np.cumsum(out_counts, out=starts[1:])
    out = np.empty(int(starts[-1]), dtype=np.int64)
    row = 0
    for handles, part_counts in parts:
        _place_rows(out, handles, part_counts, order[row:row + part_counts.shape[0]], starts)
        row += part_counts.shape[0]
    return out, out_counts


@kernel
def _place_rows(out: np.ndarray, handles: np.ndarray, counts: np.ndarray, order: np.ndarray,
                starts: np.ndarray) -> None:
    """Row ``j`` of ``(handles, counts)`` (the rows one after the other) to ``out[starts[order[j]]:]``."""
    at = 0
    for j in range(counts.shape[0]):
        first = starts[order[j]]
        for h in range(counts[j]):
            out[first + h] = handles[at + h]
        at += counts[j]
