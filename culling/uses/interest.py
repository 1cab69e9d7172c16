"""Interest management: which entities each player (viewer) hears about, and what changed since last tick.

A game server asks, every tick and for every player, which entities are
relevant (a creature that can sense the player, a door within hearing), and
sends the *change*: the entities that entered and left each player's
interest set.  An entity's relevance is a sphere (its centre and its
relevance radius); a viewer's set is the entities whose sphere contains the
viewer's position, decided exactly as ``tree.query(p, exact=True)`` (the
library's one containment test, :mod:`culling.core.containment`).

:class:`InterestManager` owns a :class:`~culling.ViewDistanceTree` of the
entities and answers a whole tick in a few compiled passes over all viewers:
the sets (two answers with hysteresis), then one pass of
:mod:`culling.uses.interest_kernels` that merges each viewer's new set
with its previous sorted row.  The sets are found whichever way is cheaper:
each viewer walks the entity tree (``query_many``), or, where the entities
are few per viewer (:data:`~culling.tree.inverted.GRID_ENTITIES_PER_VIEWER`), each entity's sphere
asks a uniform grid over the viewers (:func:`grid_answer`); both decide
with the tree's exact test, so the answers are the same.  :class:`InterestSets` is the second
half alone (the previous sets as CSR arrays, and the diff): a sharded server
(``server.ShardedInterest``) computes the sets elsewhere and diffs them here.

>>> im = InterestManager(size=1024.0, dim=2)
>>> h = im.insert_many([[10.0, 10.0], [40.0, 10.0]], [20.0, 5.0])
>>> t = im.tick([7], [[12.0, 10.0]])
>>> t.entered_of(0).tolist(), t.left_of(0).tolist()
([0], [])
>>> im.update_many(h[1:], [[14.0, 10.0]])          # entity 1 comes within 5 of viewer 7
>>> t = im.tick([7], [[12.0, 10.0]])
>>> t.entered_of(0).tolist(), im.interest(7).tolist()
([1], [0, 1])
>>> im.remove_many([0])
>>> im.tick([7], [[12.0, 10.0]]).left_of(0).tolist()   # a removed entity leaves the sets that held it
[0]
"""

from __future__ import annotations

import copy
import operator
import threading
from dataclasses import dataclass
from typing import Any, TypeVar

import numpy as np
from numpy.typing import ArrayLike, NDArray

from culling.core.chunks import in_caller_order
from culling.core.validation import (
    Handle,
    as_dim,
    as_handles,
    as_integer,
    as_points,
    as_probe_radii,
    as_radius,
    as_real,
)
from culling.interface import Real
from culling.records import ValueRecord
from culling.runtime.locks import ReadWriteLock, reading, state_without_lock, writing
from culling.runtime.threads import run_chunks
from culling.tree import inverted
from culling.tree.inverted import MAX_HANDLE, SET_HANDLE, answers_from_objects, grid_answer, row_offsets
from culling.tree.tree import ViewDistanceTree
from culling.uses.interest_kernels import advance_rows, compact_rows, merge_rows
from culling.uses.tracker import read_only_again

__all__ = ["InterestManager", "InterestSets", "InterestTick", "tick_arguments"]

#: Viewers per chunk below which a pass runs on the calling thread: a merge of a few rows costs less
#: than waking a pool thread (about 20 us).
PARALLEL_MIN_VIEWERS = 512

#: Handles a packing copy (:func:`~culling.uses.interest_kernels.compact_rows`) moves below which it runs on the
#: calling thread, whatever the viewers: a tick's events (about 22k on 10k viewers x 100k entities) copy in
#: tens of microseconds, less than handing chunks to the pool.
PARALLEL_MIN_COPIED = 1 << 16

_EMPTY: NDArray[np.int64] = np.empty(0, dtype=np.int64)
_EMPTY.flags.writeable = False
_ZERO: NDArray[np.int64] = np.zeros(1, dtype=np.int64)
_ZERO.flags.writeable = False
_NO_SET: NDArray[np.int32] = np.empty(0, dtype=SET_HANDLE)
_NO_SET.flags.writeable = False


#: Handles as the sets hold them (:data:`SET_HANDLE`) or as a walk or a caller gives them (int64).
Handles = NDArray[np.signedinteger[Any]]

Array = TypeVar("Array", bound=np.ndarray)


def _frozen(array: Array) -> Array:
    array.flags.writeable = False
    return array


def _by_viewer(offsets: NDArray[np.int64], counts: NDArray[np.int64],
               order: NDArray[np.int64] | None) -> tuple[NDArray[np.int64], NDArray[np.int64]]:
    """Where each viewer's row starts, and its length, for rows ``offsets`` whose row ``j`` is viewer
    ``order[j]``'s (None: viewer ``j``'s): ``(start, count)``, int64 ``(m,)`` each, by viewer."""
    if order is None:
        return offsets[:-1], counts
    start = np.empty(counts.size, dtype=np.int64)
    count = np.empty(counts.size, dtype=np.int64)
    start[order] = offsets[:-1]
    count[order] = counts
    return start, count


def _ascending(ids: NDArray[np.int64]) -> bool:
    """Whether ``ids`` are strictly ascending (so unique): O(m), no sort."""
    return ids.size < 2 or bool((ids[1:] > ids[:-1]).all())


def _same_order(first: NDArray[np.int64] | None, second: NDArray[np.int64] | None) -> bool:
    """Whether two row orders (None: the caller's) are the same."""
    if first is None or second is None:
        return first is second
    return bool(np.array_equal(first, second))


def _in_chunks(m: int, fn: object) -> None:
    """Run ``fn(lo, hi)`` over chunks of ``range(m)`` on the library's threads."""
    run_chunks(fn, m, min_items=PARALLEL_MIN_VIEWERS)  # type: ignore[arg-type]


def as_viewer_ids(values: ArrayLike) -> NDArray[np.int64]:
    """Viewer ids as int64 ``(m,)``, each once: ``TypeError`` for non-integers, ``ValueError`` for a repeat
    or an id beyond int64."""
    try:
        ids = as_handles(values, "viewer_ids")
    except KeyError:
        raise ValueError("viewer_ids must fit in int64") from None
    if ids.size > 1 and not _ascending(ids):
        ordered = np.sort(ids)
        repeated = ordered[1:][ordered[1:] == ordered[:-1]]
        if repeated.size:
            raise ValueError(f"viewer_ids must be unique within a tick, id {int(repeated[0])} appears more than once")
    return ids


def tick_arguments(viewer_ids: ArrayLike, positions: ArrayLike, radii: ArrayLike | None = None,
                   dim: int = 3) -> tuple[NDArray[np.int64], NDArray[np.float64], NDArray[np.float64] | None]:
    """A tick's arguments checked as :meth:`InterestManager.tick` checks them: ``(ids int64 (m,), positions
    float64 (m, dim) C-contiguous, radii float64 (m,) or None)``, the same errors in the same words.

    For a service that answers ticks elsewhere (``server.ShardedInterest`` routes them to Ray actors): it
    refuses what ``InterestManager.tick`` refuses before anything is sent.  ``TypeError`` for ids that are
    not integers, ``ValueError`` for a ``dim`` other than 1, 2 or 3, a repeated id, an id beyond int64,
    positions of the wrong shape or not finite, radii negative or not finite.
    """
    dim = as_dim(dim)
    ids = as_viewer_ids(viewer_ids)
    points = np.ascontiguousarray(as_points(positions, dim, "positions"))
    if points.shape[0] != ids.size:
        raise ValueError(f"positions must have shape ({ids.size}, {dim}) to match viewer_ids, got {points.shape}")
    reach = None if radii is None else as_probe_radii(radii, ids.size)
    return ids, points, reach


def as_viewer_id(value: object) -> int:
    """One viewer id as an int: ``TypeError`` for a non-integer."""
    return as_integer(value, "viewer id")


def _row_span(offsets: NDArray[np.int64], row: int) -> tuple[int, int]:
    """Row ``row`` of a CSR array with ``offsets``, as ``(start, end)``: ``row`` indexes the rows as a list
    does.  Slicing the offsets with a negative row instead gave row -1 nothing and row -2 the last."""
    rows = offsets.shape[0] - 1
    try:
        at = operator.index(row)
    except TypeError:
        raise TypeError(f"row must be an integer, got {type(row).__name__}") from None
    if not -rows <= at < rows:
        raise IndexError(f"row {at} is out of range for {rows} viewers")
    at %= rows
    return int(offsets[at]), int(offsets[at + 1])


@dataclass(frozen=True, eq=False)
class InterestTick(ValueRecord):
    """What changed in every viewer's interest set at one tick.

    Attributes
    ----------
    viewer_ids : ndarray, shape (m,), int64
        The tick's viewers, in the order given; row ``i`` below is ``viewer_ids[i]``'s.
    entered_offsets : ndarray, shape (m + 1,), int64
        Row ``i`` of ``entered`` is ``entered[entered_offsets[i]:entered_offsets[i + 1]]``.
    entered : ndarray, int64
        Per viewer, sorted: the entities in its set now and not at its previous tick
        (all of its set for a viewer new at this tick).
    left_offsets : ndarray, shape (m + 1,), int64
    left : ndarray, int64
        Per viewer, sorted: the entities in its set at its previous tick and not now,
        entities removed since included.

    Every array is read-only and belongs to this tick.
    """

    viewer_ids: NDArray[np.int64]
    entered_offsets: NDArray[np.int64]
    entered: NDArray[np.int64]
    left_offsets: NDArray[np.int64]
    left: NDArray[np.int64]

    def entered_of(self, row: int) -> NDArray[np.int64]:
        """Row ``row``'s entered handles (a read-only view); ``row`` counts as a list's index does
        (``-1`` is the last viewer), one out of range is an ``IndexError``."""
        start, end = _row_span(self.entered_offsets, row)
        return self.entered[start:end]

    def left_of(self, row: int) -> NDArray[np.int64]:
        """Row ``row``'s left handles (a read-only view), ``row`` as in :meth:`entered_of`."""
        start, end = _row_span(self.left_offsets, row)
        return self.left[start:end]

    @property
    def events(self) -> int:
        """How many enter and leave events the tick holds."""
        return int(self.entered.size + self.left.size)

    def __setstate__(self, state: dict[str, Any]) -> None:
        read_only_again(self, state)


class InterestSets:
    """Every viewer's interest set as CSR rows, and the compiled diff that turns new sets into events.

    Parameters
    ----------
    hysteresis : float, optional
        Margin ``m >= 0``: a viewer keeps an entity it holds until it is
        beyond ``r * s``, ``s`` the float ``1.0 + m`` (exactly, for that ``s``:
        not the real ``1 + m``); :meth:`advance` then needs each viewer's
        answer at ``scale = 1 + m`` too (:attr:`query_scale`), as
        :class:`culling.VisibilityTracker` does.

    Notes
    -----
    State is three arrays (the viewers of the last tick, their CSR offsets
    and their sorted handles, 4 bytes each: :data:`SET_HANDLE`) plus the
    sorted handles removed since it;
    memory O(viewers + set sizes).  An :meth:`advance` costs O(m log m +
    answer sizes + previous sets) in one compiled pass on the library's
    threads (:func:`~culling.uses.interest_kernels.advance_rows`), with no
    Python step per viewer or per entity; a scratch array of 2 bits per
    handle per thread, and the buffers the rows are written into before
    packing (as large as the answers), are kept between ticks.
    """

    _rw: ReadWriteLock
    _hysteresis: float
    _bound: int

    def __init__(self, hysteresis: Real = 0.0) -> None:
        self._hysteresis = as_radius(as_real(hysteresis, "hysteresis"), "hysteresis")
        if not np.isfinite(1.0 + self._hysteresis):
            raise ValueError("hysteresis must be finite")
        self._rw = ReadWriteLock()
        self._ids: NDArray[np.int64] = _EMPTY          # the viewers of the last tick, in their rows' order
        self._offsets: NDArray[np.int64] = _ZERO        # their rows
        self._sets: NDArray[np.int32] = _NO_SET         # their sets (SET_HANDLE)
        self._sorted_ids: NDArray[np.int64] = _EMPTY    # the same ids ascending, and each one's row
        self._row_of: NDArray[np.int64] = _EMPTY
        self._gone: NDArray[np.int64] = _EMPTY          # handles removed since the last tick, sorted
        self._bound = 0                                 # every handle held is below it
        self._scratch: dict[int, NDArray[np.uint8]] = {}  # advance_rows' flags, per thread (zeros between rows)
        self._buffers: dict[str, NDArray[np.int32]] = {}  # the diff's outputs before packing, kept between ticks

    @property
    def hysteresis(self) -> float:
        """The margin ``m``: an entity held leaves beyond ``r * (1 + m)``."""
        return self._hysteresis

    @property
    def query_scale(self) -> float:
        """``1 + hysteresis``: the scale of the wider answer :meth:`advance` needs (with hysteresis)."""
        return 1.0 + self._hysteresis

    @property
    @reading
    def viewers(self) -> NDArray[np.int64]:
        """The viewer ids of the last tick, ascending, int64 (a copy)."""
        return self._sorted_ids.copy()

    @reading
    def __len__(self) -> int:
        return int(self._ids.size)

    @reading
    def __contains__(self, viewer_id: object) -> bool:
        try:
            return self._row(as_viewer_id(viewer_id)) >= 0
        except TypeError:
            return False

    def _row(self, viewer_id: int) -> int:
        """The row of ``viewer_id`` at the last tick, -1 if it had none."""
        ids = self._sorted_ids
        if not -2**63 <= viewer_id < 2**63:
            return -1
        k = int(np.searchsorted(ids, viewer_id))
        return int(self._row_of[k]) if k < ids.size and ids[k] == viewer_id else -1

    @reading
    def interest(self, viewer_id: Handle) -> NDArray[np.int64]:
        """The viewer's set as of its last tick, less the entities removed since: sorted int64 (a copy).

        Raises
        ------
        TypeError
            A non-integer id.
        KeyError
            An id that was not in the last tick.
        """
        row = self._row(as_viewer_id(viewer_id))
        if row < 0:
            raise KeyError(f"viewer {viewer_id} was not in the last tick")
        held = self._sets[self._offsets[row]:self._offsets[row + 1]].astype(np.int64)
        if self._gone.size:
            return held[~np.isin(held, self._gone, assume_unique=True)]
        return held

    @writing
    def forget(self, handles: ArrayLike) -> None:
        """Entities removed from the world: the next :meth:`advance` reports them left by every viewer that
        held them (also when a handle was handed out again meanwhile: then it left and entered).

        Parameters
        ----------
        handles : array_like of int, shape (k,)
        """
        self._gone = self._gone_with(handles)

    def _gone_with(self, handles: ArrayLike) -> NDArray[np.int64]:
        """The handles removed since the last tick, ``handles`` added: what :meth:`forget` keeps (made here,
        changing nothing, so that a caller can allocate it before it changes anything else)."""
        removed = as_handles(handles, beyond="drop")
        return _frozen(np.union1d(self._gone, removed).astype(np.int64)) if removed.size else self._gone

    @writing
    def reset(self) -> None:
        """Drop every viewer: the next tick's viewers are all new."""
        self._ids, self._offsets, self._sets = _EMPTY, _ZERO, _NO_SET
        self._sorted_ids, self._row_of, self._gone = _EMPTY, _EMPTY, _EMPTY

    @writing
    def advance(self, viewer_ids: ArrayLike, handles: ArrayLike, counts: ArrayLike,
                outer_handles: ArrayLike | None = None, outer_counts: ArrayLike | None = None) -> InterestTick:
        """Record this tick's sets and return each viewer's entered and left entities.

        Parameters
        ----------
        viewer_ids : array_like of int, shape (m,)
            Unique; a viewer of the last tick that is missing here is dropped without events.
        handles, counts : array_like of int, shapes (k,) and (m,)
            Each viewer's entities whose sphere contains it (``query_many(positions, exact=True)``'s answer:
            row ``i`` is ``handles[sum(counts[:i]):][:counts[i]]``), each once per row, in any order;
            non-negative and below :data:`MAX_HANDLE` (a structure's handles).
        outer_handles, outer_counts : array_like of int, optional
            With hysteresis (required then, refused otherwise): the same answer at ``scale = 1 +
            hysteresis``, a superset of each row.

        Returns
        -------
        InterestTick

        Raises
        ------
        TypeError, ValueError
            Non-integer ids or handles; a repeated viewer id or a handle twice in one row; counts that
            do not match. A failed call changes nothing.

        Notes
        -----
        One compiled pass (:func:`culling.uses.interest_kernels.advance_rows`) over all rows on the
        library's threads, then three copies packing its outputs: O(m log m) to find each viewer's
        previous row, O(answer + previous) for the merges, plus sorting what entered.  The arrays
        given are only read.
        """
        ids = as_viewer_ids(viewer_ids)
        m = ids.size
        new, new_counts = self._rows(handles, counts, m, "handles")
        outer, outer_counts_ = new, new_counts
        if self._hysteresis > 0.0:
            if outer_handles is None or outer_counts is None:
                raise ValueError("with hysteresis, advance needs outer_handles and outer_counts "
                                 f"(the answer at scale {self.query_scale})")
            outer, outer_counts_ = self._rows(outer_handles, outer_counts, m, "outer_handles")
        elif outer_handles is not None or outer_counts is not None:
            raise ValueError("outer_handles and outer_counts are for hysteresis > 0")
        bound = max(int(new.max()) + 1 if new.size else 0, int(outer.max()) + 1 if outer.size else 0)
        return self._diff(ids, (new, new_counts, outer, outer_counts_), None, bound)

    @writing
    def _advance(self, ids: NDArray[np.int64], rows: tuple[Handles, NDArray[np.int64], Handles, NDArray[np.int64]],
                 order: NDArray[np.int64] | None, bound: int, ascending: bool = False) -> InterestTick:
        """:meth:`_diff` holding the lock (:class:`InterestManager`'s way in, with the tree's rows)."""
        return self._diff(ids, rows, order, bound, ascending)

    def _diff(self, ids: NDArray[np.int64], rows: tuple[Handles, NDArray[np.int64], Handles, NDArray[np.int64]],
              order: NDArray[np.int64] | None, bound: int, ascending: bool = False) -> InterestTick:
        """:meth:`advance` on rows already checked: ``rows = (inner, inner_counts, outer, outer_counts)``
        (``outer`` is ``inner`` without hysteresis), their row ``j`` the viewer ``ids[order[j]]``'s
        (``order`` a permutation of ``range(m)``, or None: ``ids[j]``'s), every handle below ``bound``.
        ``ascending``: every row is sorted, each handle once (the grid's answer): then the rows are
        merged with the previous ones (:func:`~culling.uses.interest_kernels.merge_rows`), not flagged.

        :class:`InterestManager` passes the tree's answer in the order the tree walked the viewers
        (``ViewDistanceTree._walked_many``), so the answer is never copied back into the caller's
        order: the sets are kept in the walk's order (each viewer's row is found through
        ``_row_of``), and the events come out in the caller's order from the compaction they need
        anyway.
        """
        m = ids.size
        inner, inner_counts, outer, outer_counts = rows
        if not ascending:  # advance_rows reads int64 rows (the walk's, a caller's; the grid's are SET_HANDLE and
            same = outer is inner   # come here only where exact arithmetic kept a pair): one signature
            inner = inner.astype(np.int64, copy=False)
            outer = inner if same else outer.astype(np.int64, copy=False)
        inner_offsets = row_offsets(inner_counts)
        outer_offsets = inner_offsets if outer is inner else row_offsets(outer_counts)
        row_ids = ids if order is None else ids[order]
        inner_start, inner_count = _by_viewer(inner_offsets, inner_counts, order)
        outer_start, outer_count = ((inner_start, inner_count) if outer is inner
                                    else _by_viewer(outer_offsets, outer_counts, order))

        # Each viewer's previous row (-1: new).
        if np.array_equal(ids, self._sorted_ids):  # the last tick's viewers again, in order (a server's usual)
            previous_row = self._row_of.copy()
        else:
            previous_row = self._previous_rows(ids)
        previous, previous_offsets, gone = self._sets, self._offsets, self._gone
        sticky = self._hysteresis > 0.0
        bound = max(self._bound, bound)

        # Rows written at upper-bound places, then packed: buffers kept between ticks (the walk's unsticky
        # new sets are kept as they are written: those are the tick's own).
        kept = (self._buffer("kept", outer.size) if sticky
                else np.empty(outer.size if not ascending else 0, dtype=SET_HANDLE))
        kept_counts = np.empty(m, dtype=np.int64)
        entered_buffer = self._buffer("entered", inner.size)
        entered_counts = np.empty(m, dtype=np.int64)
        left_buffer = self._buffer("left", previous.size)
        left_counts = np.empty(m, dtype=np.int64)

        walk = np.arange(m, dtype=np.int64) if order is None else order
        # The events by walk step: step j's entered ones fit in its inner row (row j: the rows lie in the
        # walk's order), its left ones in its previous row; each chunk writes its own one after another.
        previous_sizes = np.zeros(m, dtype=np.int64)
        held = previous_row >= 0
        previous_sizes[held] = np.diff(previous_offsets)[previous_row[held]]
        events = (inner_offsets, row_offsets(previous_sizes[walk]), np.empty(m, dtype=np.int64),
                  np.empty(m, dtype=np.int64))

        def merge(lo: int, hi: int) -> int:
            return int(merge_rows(inner, inner_start, inner_count, outer, outer_start, outer_count, sticky,
                                  previous, previous_offsets, previous_row, gone, kept, kept_counts,
                                  entered_buffer, entered_counts, left_buffer, left_counts, events, walk, lo, hi))

        def chunk(lo: int, hi: int) -> int:
            return int(advance_rows(inner, inner_start, inner_count, outer, outer_start, outer_count, sticky,
                                    previous, previous_offsets, previous_row, gone, self._flags(bound),
                                    kept, kept_counts, entered_buffer, entered_counts, left_buffer, left_counts,
                                    events, walk, lo, hi))

        try:
            faults = [r for r in run_chunks(merge if ascending else chunk, m, min_items=PARALLEL_MIN_VIEWERS) if r >= 0]
        except BaseException:   # a Ctrl-C, a MemoryError: whatever a chunk left, the next tick starts from zeros
            self._scratch = {}
            raise
        if faults:
            self._scratch = {}   # a refused row leaves its flags set: start again from zeros
            row, kind = divmod(faults[0], 2)
            raise ValueError(f"row {row} holds a handle more than once" if kind == 0 else
                             f"row {row} of handles holds a handle that its row of outer_handles does not")
        sets: Handles
        if sticky:  # packed in the rows' order
            sets, offsets = self._packed(kept, outer_offsets[:-1], kept_counts if order is None else kept_counts[order])
        else:  # the new set is the inner answer, sorted: already packed, in the rows' order
            sets, offsets = (inner if ascending else kept), inner_offsets
        entered, entered_offsets = self._packed(entered_buffer, events[2], entered_counts)
        left, left_offsets = self._packed(left_buffer, events[3], left_counts)

        # The events' handles as callers get handles: int64 (the sets' are SET_HANDLE); made before the commit.
        caller_ids = _frozen(ids)
        tick = InterestTick(viewer_ids=caller_ids, entered_offsets=_frozen(entered_offsets),
                            entered=_frozen(entered.astype(np.int64)), left_offsets=_frozen(left_offsets),
                            left=_frozen(left.astype(np.int64)))
        # Commit (nothing below can fail but a MemoryError before the first assignment).
        if _ascending(ids):  # ids given in order (a server's usual): each id's row is the order's inverse
            sorted_ids = _frozen(ids.copy())
            row_of = np.arange(m, dtype=np.int64)
            if order is not None:
                row_of[order] = row_of.copy()
            row_of = _frozen(row_of)
        else:
            by_id = np.argsort(row_ids, kind="stable")
            sorted_ids = _frozen(row_ids[by_id])
            row_of = _frozen(by_id.astype(np.int64))
        self._ids = caller_ids if order is None else _frozen(row_ids)
        self._offsets, self._sets = _frozen(offsets), _frozen(sets)
        self._sorted_ids, self._row_of, self._gone = sorted_ids, row_of, _EMPTY
        self._bound = bound
        return tick

    def _previous_rows(self, ids: NDArray[np.int64]) -> NDArray[np.int64]:
        """Each viewer's row at the last tick, -1 for a viewer new now: int64 ``(m,)``."""
        previous_row = np.full(ids.size, -1, dtype=np.int64)
        if self._sorted_ids.size and ids.size:
            pos = np.searchsorted(self._sorted_ids, ids)
            pos[pos == self._sorted_ids.size] = 0
            hit = self._sorted_ids[pos] == ids
            previous_row[hit] = self._row_of[pos[hit]]
        return previous_row

    def _flags(self, bound: int) -> NDArray[np.uint8]:
        """The calling thread's scratch for :func:`advance_rows`: two bits for each handle below ``bound``, all
        zeros (kept between ticks: every row clears its flags; a refused row drops every thread's scratch)."""
        key = threading.get_ident()
        flags = self._scratch.get(key)
        size = (bound + 3) // 4
        if flags is None or flags.size < size:
            flags = np.zeros(max(size, 2 * (0 if flags is None else flags.size)), dtype=np.uint8)
            self._scratch[key] = flags   # one entry per thread: a dict assignment is atomic
        return flags

    def _buffer(self, name: str, size: int) -> NDArray[np.int32]:
        """A scratch array of ``size`` handles (:data:`SET_HANDLE`, its contents left over), kept between ticks
        under ``name``."""
        held = self._buffers.get(name)
        if held is None or held.size < size:
            held = np.empty(max(size, int(1.25 * (0 if held is None else held.size))), dtype=SET_HANDLE)
            self._buffers[name] = held
        return held[:size]

    @staticmethod
    def _rows(handles: ArrayLike, counts: ArrayLike, m: int,
              name: str) -> tuple[NDArray[np.int64], NDArray[np.int64]]:
        """Validated rows: ``(handles, counts)``; each handle non-negative (duplicates are found later)."""
        flat = as_handles(handles, name, copy=False)   # only read
        count_name = name.replace("handles", "counts")
        sizes = as_handles(counts, count_name, copy=False)
        if sizes.size != m:
            raise ValueError(f"{count_name} must have shape ({m},), got ({sizes.size},)")
        if sizes.size and sizes.min() < 0:
            raise ValueError(f"{count_name} must not be negative")
        offsets = row_offsets(sizes)
        if int(offsets[-1]) != flat.size:
            raise ValueError(f"{name} holds {flat.size} handles but the counts add up to {int(offsets[-1])}")
        if flat.size and flat.min() < 0:
            raise ValueError(f"{name} must not be negative, got {int(flat.min())}")
        if flat.size and flat.max() >= MAX_HANDLE:
            raise ValueError(f"{name} must be below {MAX_HANDLE} (a structure's handles: the diff keeps a "
                             f"scratch entry per handle value), got {int(flat.max())}")
        return flat, np.ascontiguousarray(sizes)

    @staticmethod
    def _packed(buffer: NDArray[np.int32], starts: NDArray[np.int64],
                counts: NDArray[np.int64]) -> tuple[NDArray[np.int32], NDArray[np.int64]]:
        """Rows written at ``buffer[starts[i]:][:counts[i]]``, packed into CSR ``(handles, offsets)``."""
        offsets = row_offsets(counts)
        out = np.empty(int(offsets[-1]), dtype=buffer.dtype)
        starts = np.ascontiguousarray(starts, dtype=np.int64)
        if out.size < PARALLEL_MIN_COPIED:
            compact_rows(buffer, starts, counts, offsets, out, 0, counts.size)
        else:
            _in_chunks(counts.size, lambda lo, hi: compact_rows(buffer, starts, counts, offsets, out, lo, hi))
        return out, offsets

    def __getstate__(self) -> dict[str, object]:
        with self._rw.reading():
            state = state_without_lock(self)
        state["_scratch"] = {}   # per-thread scratch, made again on use
        state["_buffers"] = {}
        return state

    def __setstate__(self, state: dict[str, object]) -> None:
        self.__dict__.update(state)
        self.__dict__.setdefault("_buffers", {})
        self._sets = self._sets.astype(SET_HANDLE, copy=False)   # int64 in a pickle made before SET_HANDLE
        for held in (self._ids, self._offsets, self._sets, self._sorted_ids, self._row_of, self._gone):
            held.flags.writeable = False  # frozen again (a copy comes back writable): numba types it apart
        self._rw = ReadWriteLock()

    def __repr__(self) -> str:
        return f"InterestSets(hysteresis={self._hysteresis}, viewers={self._ids.size}, held={self._sets.size})"


class InterestManager:
    """Entities with relevance radii, viewers that move, and each viewer's entered / left entities per tick.

    Parameters
    ----------
    size : float
        Edge of the entity tree's root (it grows on demand; see :class:`~culling.ViewDistanceTree`).
    origin : array_like, shape (dim,), optional
        Low corner of the root; zeros by default.
    dim : int
        1, 2 or 3.
    hysteresis : float, optional
        Margin ``m >= 0``: an entity enters a viewer's set when the viewer comes
        within its radius ``r`` and leaves only beyond ``r * (1 + m)``, so one at the
        edge does not flicker (the rule of :class:`culling.VisibilityTracker`).

    Notes
    -----
    A viewer's set is the entities whose sphere contains its position,
    decided exactly (``query(p, exact=True)``; with per-viewer radii the probe
    rule of ``overlapping(p, rho, exact=True)``: ``|c - p| <= r + rho``).  A
    viewer id new at a tick enters its whole set; one missing from a tick is
    dropped, without events, and starts afresh if it comes back.  Removed
    entities appear in ``left`` at the next tick for every viewer that held
    them (also when their handle was handed out again meanwhile: the new
    entity then enters).  Handles are the entity tree's: a removed handle may
    be handed out again.

    Threads: the manager has its own readers-writer lock
    (:mod:`culling.runtime.locks`): mutations and ticks run one at a time,
    :meth:`interest` and the read-only properties alongside each other.
    A tick's queries and merges run on the library's threads.
    """

    _rw: ReadWriteLock

    def __init__(self, size: Real, origin: ArrayLike | None = None, dim: int = 3,
                 hysteresis: Real = 0.0) -> None:
        self._tree = ViewDistanceTree(size, origin, dim)
        self._sets = InterestSets(hysteresis)
        self._rw = ReadWriteLock()
        self._grid_hint = inverted.GRID_FIRST_HINT   # pairs per pool row at the last grid answer (sizes the next one's buffers)

    # -- properties ----------------------------------------------------------

    @property
    def size(self) -> float:
        """Edge of the entity tree's root as constructed (level 0; the root grows beyond it on demand)."""
        return self._tree.size

    @property
    def origin(self) -> NDArray[np.float64]:
        """Low corner of the root, float64 (dim,), read-only."""
        return self._tree.origin

    @property
    def dim(self) -> int:
        """Dimensions of the world: 1, 2 or 3."""
        return self._tree.dim

    @property
    def hysteresis(self) -> float:
        """The margin ``m``: an entity in a viewer's set leaves it beyond ``r * (1 + m)``."""
        return self._sets.hysteresis

    @property
    def tree(self) -> ViewDistanceTree:
        """The entity tree (read it; mutate the entities through the manager, or the sets go stale)."""
        return self._tree

    @property
    @reading
    def viewers(self) -> NDArray[np.int64]:
        """The viewer ids of the last tick, ascending."""
        return self._sets.viewers

    @reading
    def __len__(self) -> int:
        """The number of entities."""
        return len(self._tree)

    @reading
    def __contains__(self, handle: object) -> bool:
        """Whether ``handle`` is a live entity."""
        return handle in self._tree

    # -- entities ------------------------------------------------------------

    @writing
    def insert_many(self, centres: ArrayLike, radii: ArrayLike) -> NDArray[np.int64]:
        """Add entities; returns their handles, int64 ``(n,)``.  As ``ViewDistanceTree.insert_many``."""
        handles: NDArray[np.int64] = self._tree.insert_many(centres, radii)
        return handles

    @writing
    def update_many(self, handles: ArrayLike, centres: ArrayLike, radii: ArrayLike | None = None) -> None:
        """Move entities, and with ``radii`` resize them too (omitted: each one's radius kept).  As
        ``ViewDistanceTree.update_many``.  An entity keeps its handle: at the next tick it enters or
        leaves only for the viewers its new sphere gains or loses (a remove and an insert would make it
        leave and enter again for every viewer that holds it)."""
        self._tree.update_many(handles, centres, radii)

    @writing
    def remove_many(self, handles: ArrayLike) -> None:
        """Remove entities: they appear in ``left`` at the next tick for every viewer that held them."""
        live = as_handles(handles)
        gone = self._sets._gone_with(live)  # first: a MemoryError there (a union over every pending removal) changes nothing
        self._tree.remove_many(live)   # validates: unknown or repeated handles change nothing
        self._sets._gone = gone

    @reading
    def centres_of(self, handles: ArrayLike) -> NDArray[np.float64]:
        """Centres of entities, ``(n, dim)`` float64."""
        centres: NDArray[np.float64] = self._tree.centres_of(handles)
        return centres

    @reading
    def radii_of(self, handles: ArrayLike) -> NDArray[np.float64]:
        """Relevance radii of entities, ``(n,)`` float64."""
        radii: NDArray[np.float64] = self._tree.radii_of(handles)
        return radii

    # -- ticks ---------------------------------------------------------------

    @writing
    def tick(self, viewer_ids: ArrayLike, positions: ArrayLike, radii: ArrayLike | None = None) -> InterestTick:
        """Every viewer's set at its position, and what entered and left it since the viewer's last tick.

        Parameters
        ----------
        viewer_ids : array_like of int, shape (m,)
            Unique.  A viewer of the last tick missing here is dropped without events.
        positions : array_like of float, shape (m, dim)
        radii : array_like of float, shape (m,) or one number, optional
            Per-viewer reach ``rho >= 0``: entity ``e`` is in the set when
            ``|c_e - p| <= r_e + rho`` (``overlapping_many``'s exact rule); omitted, 0.

        Returns
        -------
        InterestTick
            Rows in the order of ``viewer_ids``.

        Raises
        ------
        TypeError, ValueError
            Non-integer or repeated ids, positions of the wrong shape or not finite,
            negative or non-finite radii.  A failed tick changes nothing.

        Notes
        -----
        One ``query_many`` (``overlapping_many`` with radii) over all viewers, two with
        hysteresis, then :meth:`InterestSets.advance`: compiled, on the library's threads.
        Without radii, from :data:`~culling.tree.inverted.GRID_MIN_VIEWERS` viewers and up to
        :data:`~culling.tree.inverted.GRID_ENTITIES_PER_VIEWER` live entities per viewer, the same answer
        comes from the entities instead (:func:`~culling.tree.inverted.grid_answer`: each entity's sphere
        asks a grid over the viewers).
        """
        ids, points, reach = tick_arguments(viewer_ids, positions, radii, self.dim)
        inner, inner_counts, order, ascending = self._answer(points, reach, 1.0)
        outer, outer_counts = inner, inner_counts
        if self._sets.hysteresis > 0.0:
            outer, outer_counts, outer_order, outer_ascending = self._answer(points, reach, self._sets.query_scale)
            ascending = ascending and outer_ascending
            if not _same_order(order, outer_order):  # not so today (the order is the points'): both as given
                inner, inner_counts = self._in_caller_order(inner, inner_counts, order)
                outer, outer_counts = self._in_caller_order(outer, outer_counts, outer_order)
                order = None
        bound = self._tree._next_handle  # every handle the tree handed out is below it
        if bound > MAX_HANDLE:
            raise ValueError(f"the tree's handles reach {bound}, beyond the {MAX_HANDLE} the diff's scratch holds")
        return self._sets._advance(ids, (inner, inner_counts, outer, outer_counts), order, bound, ascending)

    def _answer(self, points: NDArray[np.float64], reach: NDArray[np.float64] | None,
                scale: float) -> tuple[Handles, NDArray[np.int64], NDArray[np.int64] | None, bool]:
        """The exact sets at ``scale``: the tree's exact decider, one batch call.  ``(handles, counts,
        order, ascending)``: row ``j`` is viewer ``order[j]``'s (the tree's walk order, not copied back),
        or viewer ``j``'s where ``order`` is None; ``ascending``: every row is sorted (the grid's)."""
        if reach is None:
            with self._tree._rw.reading():
                if answers_from_objects(self._tree._count, points.shape[0], self._tree.shape):
                    handles, counts, order, self._grid_hint, ascending = grid_answer(self._tree, points, scale,
                                                                                      self._grid_hint)
                    return handles, counts, order, ascending
                handles, counts, order = self._tree._walked_many(points, True, scale)
                return handles, counts, order, False
        handles, counts = self._tree.overlapping_many(points, reach, exact=True, scale=scale)
        return handles, counts, None, False

    @staticmethod
    def _in_caller_order(handles: NDArray[np.int64], counts: NDArray[np.int64],
                         order: NDArray[np.int64] | None) -> tuple[NDArray[np.int64], NDArray[np.int64]]:
        if order is None:
            return handles, counts
        return in_caller_order(handles, counts, order)

    @reading
    def interest(self, viewer_id: Handle) -> NDArray[np.int64]:
        """The viewer's current set (as of its last tick, less entities removed since): sorted int64.

        ``KeyError`` for an id that was not in the last tick, ``TypeError`` for a non-integer.
        """
        return self._sets.interest(viewer_id)

    def __getstate__(self) -> dict[str, object]:
        """The manager's state with its tree and sets copied under its lock: pickle and deepcopy copy
        them after this returns, when a tick or a removal on another thread could land between the two
        (a copy held the removed entities in its tree and already listed them as gone)."""
        with self._rw.reading():
            state = state_without_lock(self)
            state["_tree"], state["_sets"] = copy.copy(self._tree), copy.copy(self._sets)
        return state

    def __setstate__(self, state: dict[str, object]) -> None:
        self.__dict__.update(state)
        self.__dict__.setdefault("_grid_hint", inverted.GRID_FIRST_HINT)
        self._rw = ReadWriteLock()

    def __repr__(self) -> str:
        return (f"InterestManager(size={self.size}, dim={self.dim}, hysteresis={self.hysteresis}, "
                f"entities={len(self._tree)}, viewers={len(self._sets)})")
