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

import os
import threading
import weakref
from collections.abc import Callable
from typing import Protocol

import numpy as np

from culling.runtime.jit import kernel

__all__ = ["QUERY_CHUNK", "SCRATCH_HELD_MOST", "RowsLease", "chunk_bounds", "in_caller_order", "in_chunks", "join_answers",
           "merged", "parts_in_caller_order", "release_scratch", "rows_lease", "scratch_keeper"]

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


# ----------------------------------------------------------------------
# Kept rows reused between calls


#: The most int64 rows :class:`RowsLease` keeps between calls, all threads' arenas together
#: (64 MiB): room for the kept rows of an answer of 8M handles.
SCRATCH_HELD_MOST = 1 << 23

_held_lock = threading.Lock()
_held: list[np.ndarray] = []  # arenas between calls, each wanted again by the next call that needs room
_kept_share = [1.0]  # the most rows a chunk kept per candidate in the last call (:meth:`RowsLease.room`)
_current = threading.local()  # the lease of the call whose chunk this thread is testing, if any


class ScratchKeeper(Protocol):
    def release(self) -> None: ...

    def forked(self) -> None:
        """In a fork's child: a new lock (one another thread held at the fork stays held for ever), nothing kept."""


_keepers: weakref.WeakSet[ScratchKeeper] = weakref.WeakSet()  # other scratch kept between calls


def _after_fork_in_child() -> None:
    """A lock another thread held at the fork would stay held for ever in the child (``query_many`` and
    ``release_scratch`` hung there): new locks, and nothing kept (an arena or a buffer that thread was
    handing over may be half placed)."""
    global _held_lock
    _held_lock = threading.Lock()
    _held.clear()
    for keeper in list(_keepers):
        keeper.forked()


os.register_at_fork(after_in_child=_after_fork_in_child)


def scratch_keeper(keeper: ScratchKeeper) -> None:
    """Have :func:`release_scratch` call ``keeper.release()`` too, while ``keeper`` lives (a
    structure's kept broad-phase outputs: :meth:`culling.pairs.bands.PlanCache.room`)."""
    with _held_lock:
        _keepers.add(keeper)


def release_scratch() -> None:
    """Drop the scratch ``query_many`` keeps between calls (at most 64 MiB, :data:`SCRATCH_HELD_MOST`
    rows: :class:`RowsLease`'s arenas) and every structure's kept ``overlapping_pairs`` outputs (at
    most 64 MiB a structure); the next call allocates its own again.  Arrays a caller holds stay valid."""
    with _held_lock:
        _held.clear()
        keepers = list(_keepers)
    for keeper in keepers:
        keeper.release()


def rows_lease() -> RowsLease | None:
    """The lease of the ``query_many`` call whose chunk the calling thread is testing, or None."""
    return getattr(_current, "lease", None)


class RowsLease:
    """``query_many``'s room for its chunks' kept rows (:func:`culling.core.members.test_many`), one
    arena per thread that tests chunks, reused from call to call.

    The kept rows of every chunk live until the last chunk's answers are
    placed, so each thread's chunks take their rows one after the other from
    its arena.  A fresh NumPy array per chunk (room for every candidate: 33M
    rows for 2,000 viewers x 1M entities, radii x2) costs the first write to
    each page a fault on every call once two threads share the work: 2,000
    faults and a quarter of the call's CPU time.  An arena is checked out of
    a small list kept between calls (at most :data:`SCRATCH_HELD_MOST` rows
    in all; :func:`release_scratch` drops it) and given back, grown to what
    the call wanted, when the call ends: a call never shares an arena with
    another running at the same time.

    Use: ``with lease.testing(): ...`` around a chunk's test on any thread,
    then :meth:`close` once the answers are written.
    """

    def __init__(self) -> None:
        self._arenas: dict[int, _Arena] = {}  # by thread id
        self._share = 0.0  # the most rows a chunk kept per candidate

    def testing(self) -> _Testing:
        """A context in which :func:`rows_lease` answers this lease on the calling thread."""
        return _Testing(self)

    def room(self, candidates: int, exact: bool) -> np.ndarray:
        """Room for a chunk's kept rows, from the calling thread's arena: every candidate's where it has
        that much left; for an exact test, what it has left where that is as many as the most rows the last call's
        chunks kept per candidate (the rows near a point are a share of its nodes' members: a tenth
        for the heavy interest row); else a new array of ``candidates`` rows.  The caller tests the
        chunk again in a new array where :meth:`took` says its rows did not fit."""
        state = self._arenas.get(threading.get_ident())
        if state is None:
            with _held_lock:
                arena = _held.pop() if _held else np.empty(0, dtype=np.int64)
            state = self._arenas[threading.get_ident()] = _Arena(arena)
        left = state.arena.shape[0] - state.cursor
        if left >= candidates or (exact and left >= _kept_share[0] * candidates):
            room: np.ndarray = state.arena[state.cursor:state.cursor + min(left, candidates)]
            return room
        return np.empty(candidates, dtype=np.int64)

    def took(self, rows: np.ndarray, kept: int, candidates: int) -> bool:
        """Record that a chunk of ``candidates`` kept ``kept`` rows in ``rows`` (from :meth:`room`);
        False when they did not fit (nothing then taken: the chunk is tested again in a new array)."""
        state = self._arenas[threading.get_ident()]
        # the next call's arena: room to spare for its last chunk
        state.wanted = max(state.wanted, state.cursor + kept + kept // 4)
        if candidates:
            self._share = max(self._share, kept / candidates)
        if rows.base is not state.arena or rows.shape[0] < kept:  # a new array, or too little room
            return bool(rows.shape[0] >= kept)
        state.cursor += kept
        return True

    def close(self) -> None:
        """Give the arenas back, each grown to what this call wanted and a quarter more where that was
        more than it had; beyond :data:`SCRATCH_HELD_MOST` rows in all, dropped."""
        grown = []
        for state in self._arenas.values():
            arena, wanted = state.arena, state.wanted
            if wanted > arena.shape[0]:
                wanted += wanted // 4  # a quarter to spare: the threads' shares of the chunks vary from call to call
                arena = np.empty(wanted if wanted <= SCRATCH_HELD_MOST else 0, dtype=np.int64)
            grown.append(arena)
        self._arenas.clear()
        if self._share:
            _kept_share[0] = self._share
        with _held_lock:
            for arena in grown:
                if arena.shape[0] and sum(a.shape[0] for a in _held) + arena.shape[0] <= SCRATCH_HELD_MOST:
                    _held.append(arena)


class _Arena:
    """A thread's arena in a :class:`RowsLease`: its rows from ``cursor`` on are free; ``wanted``, the
    rows the call would have liked it to hold."""

    def __init__(self, arena: np.ndarray) -> None:
        self.arena = arena
        self.cursor = 0
        self.wanted = 0


class _Testing:
    """:meth:`RowsLease.testing`'s context."""

    def __init__(self, lease: RowsLease) -> None:
        self.lease = lease

    def __enter__(self) -> None:
        self.before = getattr(_current, "lease", None)
        _current.lease = self.lease

    def __exit__(self, *exc: object) -> None:
        _current.lease = self.before
