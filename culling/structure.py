"""What the tree and the dense grid share as Python objects: the constructor's read-only choices,
a readers-writer lock, handles and the per-object accessors, the query methods' validation and
exact fallback, and copies that never share arrays.

Both structures keep their arrays private and serialise mutations with a
:class:`~culling.runtime.locks.ReadWriteLock`; this base class holds the parts
of that which do not depend on how objects are stored.  A structure says how
it stores them through hooks: :meth:`Structure._object_state` (one entry per
handle, negative for a free one), :meth:`Structure._object_rows` (where an
object's centre and radius sit), :meth:`Structure._grow_objects` (longer
per-handle arrays), :meth:`Structure._rows` (the member rows the kernels
read) and the three walks: :meth:`Structure._query` (one point),
:meth:`Structure._tested` (many points) and
:meth:`Structure._probe_chunk` (sphere probes).
"""

from __future__ import annotations

import contextlib
import copy
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator
from typing import Any, NamedTuple, Self, TypeVar, cast

import numpy as np
from numpy.typing import ArrayLike

from culling.answer import QueryDetails
from culling.core import chunks, members, overlap
from culling.core.containment import decide, distances
from culling.core.growth import ARRAY_GROWTH, HANDLE_SHRINK_RATIO
from culling.core.handles import HandleStack
from culling.core.structs import PoolFields
from culling.core.validation import (
    Handle,
    as_coords,
    as_flag,
    as_points,
    as_probe_radii,
    as_radius,
    as_scale,
    check_constructor,
    is_live,
    live_handle,
    live_handles,
)
from culling.interface import Real
from culling.pairs.bands import PlanCache
from culling.runtime.interrupts import unmask_interrupt
from culling.runtime.locks import ReadWriteLock, reading, state_without_lock
from culling.runtime.threads import run_chunks
from culling.trace import QueryTrace

#: A batch kernel's chunk: ``(handles, counts, unsure_rows, unsure_owners)`` of points ``lo .. hi - 1``.
Parts = tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]

__all__ = ["Structure"]

T = TypeVar("T")



#: A trim that would keep more than this share of the per-handle arrays is not made (a failed try): each
#: trim then cuts a quarter or more, every entry is cut at most once, and the copies stay amortised O(1)
#: (a trim of a few entries on every removal of the top handle copied the arrays each time).
TRIM_KEEPS = 0.75

#: Handles read at once while looking for the highest live one from the top (:func:`_live_end`).
LIVE_SCAN = 4096


def _live_end(state: np.ndarray, issued: int) -> int:
    """One past the highest live handle below ``issued`` (``state >= 0`` marks the live ones), 0 for none,
    read from the top down a block of :data:`LIVE_SCAN` at a time: O(free handles above it + LIVE_SCAN)."""
    hi = issued
    while hi > 0:
        lo = max(0, hi - LIVE_SCAN)
        live = np.flatnonzero(state[lo:hi] >= 0)
        if live.size:
            return lo + int(live[-1]) + 1
        hi = lo
    return 0

class Walked(NamedTuple):
    """One point's walk as :meth:`Structure.query_detailed` reads it: the handshake between the base
    class and a tree or grid (:meth:`Structure._walked`), one call instead of a hook per field."""

    #: Each visited node's (or cell's) member run: first pool row and count, int64 (visited,).
    run_start: np.ndarray
    run_count: np.ndarray
    #: The member rows as the kernels read them (:class:`~culling.core.structs.Pool`).
    pool: PoolFields
    #: The rows' columns (centre, radius, squared reach) and handles.
    columns: np.ndarray
    handles: np.ndarray
    #: The walk's :class:`~culling.trace.QueryTrace`, built only when asked for.
    trace: Callable[[], QueryTrace]


class Structure(ABC):
    """Base of :class:`culling.ViewDistanceTree` and :class:`culling.DenseViewDistanceGrid`.

    ``size``, ``origin``, ``dim`` and ``shape`` are read-only: changing one
    would misplace every stored object.  A copy (``copy.copy``,
    ``copy.deepcopy``, pickle) is independent and gets a lock of its own.
    """

    _count: int
    _ids: HandleStack
    #: How errors name the structure ("handle 7 is not in the tree").
    _owner = "structure"

    def __init__(self, size: Real, origin: ArrayLike | None, dim: int, shape: str) -> None:
        self._size, self._origin, self._dim, self._shape = check_constructor(size, origin, dim, shape)
        self._rw = ReadWriteLock()
        self._structs_cache: tuple[int, Any] = (-1, None)
        self._band_plans = PlanCache()  # overlapping_pairs' bands from its last call

    def _current(self, make: Callable[[], T]) -> T:
        """``make()``, the plain tuples a structure's kernels read (:mod:`culling.core.structs`), made again
        only after a mutation (the lock counts them; readers racing to remake them make the same): a single
        query saves the half microsecond of collecting its arrays."""
        writes, structs = self._structs_cache
        if writes != self._rw.writes:
            structs = make()
            self._structs_cache = (self._rw.writes, structs)
        return cast(T, structs)

    @property
    def size(self) -> float:
        """Edge of the constructor's root node (level 0; the grid's whole world)."""
        return self._size

    @property
    def origin(self) -> np.ndarray:
        """Low corner of the constructor's root node, float64 (dim,), read-only."""
        return self._origin

    @property
    def dim(self) -> int:
        """1, 2 or 3."""
        return self._dim

    @property
    def shape(self) -> str:
        """``"sphere"`` or ``"cube"``: the exact test."""
        return self._shape

    def __len__(self) -> int:
        return self._count

    # ------------------------------------------------------------------
    # Handles and the objects they name

    @abstractmethod
    def _object_state(self) -> np.ndarray:
        """One entry per handle the arrays can hold, negative for a free (or never issued) handle."""

    @abstractmethod
    def _object_rows(self, handles: np.ndarray | int) -> tuple[np.ndarray, np.ndarray | int]:
        """``(columns, positions)``: the objects' centres are ``columns[:dim, positions]``, their radii
        ``columns[dim, positions]``."""

    @abstractmethod
    def _grow_objects(self, needed: int) -> None:
        """Per-handle arrays for at least ``needed`` handles, contents kept."""

    @abstractmethod
    def _object_arrays(self) -> tuple[np.ndarray, ...]:
        """The per-handle arrays (what :meth:`_grow_objects` replaces), for :meth:`_put_object_arrays`."""

    @abstractmethod
    def _put_object_arrays(self, arrays: tuple[np.ndarray, ...]) -> None:
        """Put back per-handle arrays :meth:`_object_arrays` gave (the longer ones grown since let go)."""

    @property
    def _next_handle(self) -> int:
        """Handles ``0 .. _next_handle - 1`` have been handed out at some time."""
        return self._ids.issued

    def _trim_due(self) -> bool:
        """Whether removals left the per-handle arrays far longer than the objects left need
        (:data:`~culling.core.growth.HANDLE_SHRINK_RATIO`), and a try is not waiting (see
        :meth:`_trim_handles`): amortised O(1) per removal."""
        state = self._object_state()
        if not state.shape[0] > HANDLE_SHRINK_RATIO * self._count + 64:
            return False
        if self._count < self._handle_check:
            return True
        blocker, count_then = self._handle_blocker
        return (0 <= blocker < state.shape[0] and state[blocker] < 0
                and count_then - self._count >= self._ids.issued - blocker)

    def _trim_handles(self) -> None:
        """Cut the per-handle arrays (:meth:`_object_arrays`) to the highest live handle (free handles above
        it are forgotten).

        Handles are the caller's names, so the live ones never move: this gives memory back when the
        high handles are gone.  When it cannot (a high handle is alive: the blocker), the next try waits
        until half the objects are gone again, or until the blocker is gone and as many objects as
        there are handles above it: a level unloaded but for one late-spawned object gives its memory
        back when that object goes.  The highest live handle is found from the top down, so a try
        reads only the free handles above it, which the removals since the last try pay for.  Every
        array is copied before any is replaced: a ``MemoryError`` changes nothing.  (Entries past the
        highest live handle are free ones, marked free already.)
        """
        state = self._object_state()
        end = _live_end(state, self._ids.issued)
        length = max(16, int(end * ARRAY_GROWTH))
        if length > TRIM_KEEPS * state.shape[0]:  # a cut this small would copy the arrays for little
            self._handle_check = self._count // 2
            self._handle_blocker = (end - 1, self._count)
            return
        arrays = tuple(array[:length].copy() for array in self._object_arrays())
        self._ids.trim(end)
        self._put_object_arrays(arrays)
        self._handle_check = 1 << 62
        self._handle_blocker = (-1, 0)

    @reading
    def __contains__(self, handle: object) -> bool:
        """Whether ``handle`` is a live handle; anything else (1.5, "a", -1) is simply not stored."""
        return is_live(handle, self._ids.issued, self._object_state())

    @reading
    def handles(self) -> np.ndarray:
        """Every live handle, ascending; int64, O(handles ever issued)."""
        return self._handles()

    def _handles(self) -> np.ndarray:
        return np.flatnonzero(self._object_state()[: self._ids.issued] >= 0).astype(np.int64)

    @reading
    def centre(self, handle: Handle) -> np.ndarray:
        """The centre of one object, shape (dim,), float64 (a copy)."""
        columns, row = self._object_rows(self._live(handle))
        return columns[: self.dim, row].copy()

    @reading
    def radius(self, handle: Handle) -> float:
        """The radius (view distance) of one object."""
        return self._stored_radius(self._live(handle))

    def _stored_radius(self, handle: int) -> float:
        """The radius of the live ``handle``, under the caller's lock (``update`` without a radius)."""
        columns, row = self._object_rows(handle)
        return float(columns[self.dim, row])

    @reading
    def centres_of(self, handles: ArrayLike) -> np.ndarray:
        """Centres of many objects, shape (n, dim), float64 (a copy), O(n)."""
        columns, rows = self._object_rows(self._live_many(handles))
        return np.ascontiguousarray(columns[: self.dim, rows].T)

    @reading
    def radii_of(self, handles: ArrayLike) -> np.ndarray:
        """Radii of many objects, shape (n,), float64 (a copy), O(n)."""
        columns, rows = self._object_rows(self._live_many(handles))
        radii: np.ndarray = columns[self.dim, rows]  # fancy indexing: a copy
        return radii

    def _live(self, handle: object) -> int:
        """``handle`` as an int if it is live: ``TypeError`` for a non-integer, ``KeyError`` otherwise.

        A plain live ``int``, the single-object calls' common case, is checked
        here (a microsecond less than the general validator)."""
        state = self._object_state()
        if type(handle) is int and 0 <= handle < self._ids.issued and state[handle] >= 0:
            return handle
        return live_handle(handle, self._ids.issued, state, self._owner)

    def _live_many(self, handles: ArrayLike) -> np.ndarray:
        """Many handles as int64 (n,), all live (see :meth:`_live`)."""
        return live_handles(handles, self._ids.issued, self._object_state(), self._owner)

    def _peek_handles(self, n: int) -> np.ndarray:
        """The ``n`` handles the next :meth:`_take_handles` hands out (the most recently freed first),
        with room for them in the per-handle arrays; nothing is handed out yet."""
        end = self._ids.end_after(n)
        if end > self._object_state().shape[0]:
            self._grow_objects(end)
        return self._ids.peek(n)

    def _take_handles(self, n: int) -> None:
        """Hand out the handles :meth:`_peek_handles` showed (no allocation)."""
        self._ids.take(n)

    @contextlib.contextmanager
    def _new_handles(self, n: int) -> Iterator[np.ndarray]:
        """:meth:`_peek_handles` for a batch: where the batch then fails before it hands the handles out
        (a later allocation raising ``MemoryError``), the per-handle arrays grown for them are given back,
        so a failed batch keeps none of the memory it took."""
        arrays, handed_out = self._object_arrays(), (self._ids.issued, len(self._ids))
        try:
            yield self._peek_handles(n)  # the handles' list itself may be what runs out of memory
        except BaseException:
            if (self._ids.issued, len(self._ids)) == handed_out:  # none handed out: nothing refers to the room
                for kept, now in zip(arrays, self._object_arrays(), strict=True):
                    if now is not kept:  # what the batch wrote for the handles there (rows it moved), kept
                        kept[...] = now[: kept.shape[0]]
                self._put_object_arrays(arrays)
            raise

    # ------------------------------------------------------------------
    # Queries: validation and the exact fallback here, the walks in the structures

    @abstractmethod
    def _rows(self) -> tuple[np.ndarray, np.ndarray]:
        """``(columns, handles)`` of the member rows the kernels answer with: a row's centre, radius
        and squared reach, and its handle."""

    @abstractmethod
    def _query(self, p: np.ndarray, exact: bool, scale: float, want_rows: bool) -> tuple[np.ndarray, int]:
        """One validated point's walk: ``(found, sure)``, ``found[:sure]`` the sure handles (member rows if
        ``want_rows``), ``found[sure:]`` the unsure rows (:func:`culling.core.members.answer`)."""

    def _settled(self, found: np.ndarray, sure: int, p: np.ndarray, scale: float, want_rows: bool,
                 rows: tuple[np.ndarray, np.ndarray] | None = None) -> np.ndarray:
        """A single walk's answer: ``found[:sure]``, then those of the rows ``found[sure:]`` that the float filter
        left unsure which exact arithmetic keeps (within rounding of a surface: practically never any).
        ``rows``: the member rows' ``(columns, handles)`` when the caller has them (:meth:`_rows` otherwise)."""
        if sure == found.shape[0]:
            return found
        columns, row_handles = self._rows() if rows is None else rows
        unsure = found[sure:]
        kept = unsure[decide(columns, unsure, p, self.shape, scale)]
        return np.concatenate([found[:sure], kept if want_rows else row_handles[kept]])

    @abstractmethod
    def _tested(self, points: np.ndarray, exact: bool, scale: float) -> members.Tested:
        """Many validated points' walks and member tests (a chunk of one pass of :mod:`culling.core.chunks`),
        the answers not yet written (:func:`culling.core.members.test_many`)."""

    def _answer_parts(self, points: np.ndarray, exact: bool, scale: float) -> Parts:
        """Many validated points' answers (a chunk of one pass of :mod:`culling.core.chunks`):
        :meth:`_tested`, then the answers written (:func:`culling.core.members.write_many`)."""
        return members.write_many(self._tested(points, exact, scale))

    @abstractmethod
    def _probe_chunk(self, points: np.ndarray, grows: np.ndarray, exact: bool,
                     scale: float) -> Callable[[int, int], Parts]:
        """The kernel call answering probes ``lo .. hi - 1`` (their owners counted from 0)."""

    def query(self, point: ArrayLike, exact: bool = False, scale: Real = 1.0) -> np.ndarray:
        """Handles of the spheres that may contain ``point``; int64 (k,), each once.

        Parameters
        ----------
        point : array_like, shape (dim,) (a scalar for dim 1)
        exact : bool
            Keep only the spheres that do contain the point (distance <=
            radius * scale); otherwise a superset: every object of every
            visited node (the grid: cell).
        scale : float
            Multiplies every view distance (a quality preset or zoom factor).

        Cost: O(levels + candidates), compiled; at most ``2**dim`` nodes per
        level for ``scale <= 1`` (the grid: ``ceil(1 + scale)**dim`` cells in
        general, O(objects) at most).
        """
        lock = self._rw  # taken here, not by @reading: its generic forwarding costs 0.4 us, a twentieth of a query
        token = object()
        try:
            lock.enter_read(token)
            p = np.array(as_coords(point, self.dim, "point"))
            scale = as_scale(scale)
            found, sure = self._query(p, as_flag(exact), scale, False)
            return found if sure == found.shape[0] else self._settled(found, sure, p, scale, False)
        except SystemError as exc:  # as @reading does
            unmask_interrupt(exc)
            raise
        finally:  # as @reading does: the removal first, inline (a Ctrl-C cannot come before it)
            if lock.running.pop(token, None) is not None and lock._closed:
                lock.wake()

    @reading
    def query_many(self, points: ArrayLike, exact: bool = False,
                   scale: Real = 1.0) -> tuple[np.ndarray, np.ndarray]:
        """Answer many points at once, on the library's threads (:mod:`culling.runtime.threads`).

        Parameters
        ----------
        points : array_like, shape (m, dim) (or (m,) for dim 1)
        exact, scale : as for :meth:`query`

        Returns
        -------
        handles : ndarray, shape (counts.sum(),), int64
            The answers concatenated, point by point.
        counts : ndarray, shape (m,), int64
            How many handles each point's answer holds.

        Cost: O(m x levels + candidates), compiled: the points are cut into
        chunks answered on the library's threads (a small batch stays on the
        calling thread), each visited node's members read once for all the
        chunk's points that visit it, and the scratch memory beyond the
        answer is bounded however many points there are.
        An exact batch of a sphere tree with many points among few spheres a
        point (from 256 points, at most 64 spheres a point) is answered from
        the spheres' side instead, with the same answer:
        O(m + objects x the points their boxes reach), each sphere asking a
        uniform grid over the points (:mod:`culling.tree.inverted`; 1M points
        among 200k small spheres: 77-100 ms where the walks took 200).

        Examples
        --------
        One array of handles per point, with NumPy's ``split``:

        >>> import numpy as np
        >>> from culling import ViewDistanceTree
        >>> tree = ViewDistanceTree(size=100.0)
        >>> tree.insert_many([[10.0, 10.0, 10.0], [90.0, 90.0, 90.0]], [5.0, 5.0]).tolist()
        [0, 1]
        >>> handles, counts = tree.query_many([[10.0, 12.0, 10.0], [50.0, 50.0, 50.0], [88.0, 90.0, 90.0]])
        >>> [part.tolist() for part in np.split(handles, np.cumsum(counts)[:-1])]
        [[0], [], [1]]
        """
        points, exact, scale = self._many_arguments(points, exact, scale)
        from_objects = self._answer_from_objects(points, exact, scale)
        if from_objects is not None:
            return from_objects
        points, order = self._in_walk_order(points)
        if order is not None and points.shape[0] <= chunks.QUERY_CHUNK:
            return self._placed_many(points, order, exact, scale)
        parts = self._walked_parts(points, exact, scale, order)
        return chunks.join_answers(parts) if order is None else chunks.parts_in_caller_order(parts, order)

    def _walked_many(self, points: ArrayLike, exact: bool,
                     scale: float) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
        """:meth:`query_many`'s answer in the order it walks the points: ``(handles, counts, order)``, row
        ``j`` answering the caller's point ``order[j]`` (``order`` None: the caller's order).  Validates
        as :meth:`query_many`; the caller holds the lock.  For a caller that reads the rows through the
        permutation (:class:`culling.uses.interest.InterestManager`), which saves the copy of the answer
        back into the caller's order."""
        points, exact, scale, order = self._walk_order(points, exact, scale)
        handles, counts = chunks.join_answers(self._walked_parts(points, exact, scale, order))
        return handles, counts, order

    def _walk_order(self, points: ArrayLike, exact: bool,
                    scale: Real) -> tuple[np.ndarray, bool, float, np.ndarray | None]:
        """:meth:`query_many`'s arguments validated, the points in the order they are walked:
        ``(points, exact, scale, order)``, row ``j`` being the caller's point ``order[j]`` (``order``
        None: the caller's order, and always for an empty structure or batch)."""
        points, exact, scale = self._many_arguments(points, exact, scale)
        ordered, order = self._in_walk_order(points)
        return ordered, exact, scale, order

    def _many_arguments(self, points: ArrayLike, exact: bool, scale: Real) -> tuple[np.ndarray, bool, float]:
        """:meth:`query_many`'s arguments validated: ``(points, exact, scale)``, the points C-contiguous float64."""
        return np.ascontiguousarray(as_points(points, self.dim, "points")), as_flag(exact), as_scale(scale)

    def _in_walk_order(self, points: np.ndarray) -> tuple[np.ndarray, np.ndarray | None]:
        """The points in the order they are walked: ``(points, order)``, row ``j`` being the caller's point
        ``order[j]`` (``order`` None: the caller's order, and always for an empty structure or batch)."""
        if not self._count or not points.shape[0]:
            return points, None
        order = self._query_order(points)
        if order is not None:
            # the rows gathered: a third of ``points[order]``'s time (1M x 3)
            points = np.take(points, order, axis=0)
        return points, order

    def _answer_from_objects(self, points: np.ndarray, exact: bool, scale: float) -> tuple[np.ndarray, np.ndarray] | None:
        """:meth:`query_many`'s answer found from the objects' side, where a structure does that and it is
        cheaper than the points' walks; None where the points walk (here: always)."""
        return None

    def _walked_parts(self, points: np.ndarray, exact: bool, scale: float,
                      order: np.ndarray | None) -> list[tuple[np.ndarray, np.ndarray]]:
        """The answer of :meth:`_walk_order`'s points as the parts the threads answered (``(handles,
        counts)`` each, their rows one after the other in the walk's order), not yet joined."""
        if not self._count or not points.shape[0]:
            return [(np.empty(0, dtype=np.int64), np.zeros(points.shape[0], dtype=np.int64))]
        parts: list[tuple[np.ndarray, np.ndarray]] = []
        for first, last in chunks.chunk_bounds(points.shape[0]):
            parts += self._answer_many_parts(points[first:last], exact, scale)
        return parts

    def _placed_many(self, points: np.ndarray, order: np.ndarray, exact: bool,
                     scale: float) -> tuple[np.ndarray, np.ndarray]:
        """:meth:`query_many` of one pass of points walked in ``order`` (:meth:`_walk_order`), each answer
        written once, at its caller's row: the chunks tested on the library's threads
        (:meth:`_tested`), then, every point's count known, the caller's offsets, and each chunk's
        answers written there on the threads (:func:`culling.core.members.place_many`).  No answer
        is copied back into the caller's order (:func:`culling.core.chunks.parts_in_caller_order`,
        which rows left unsure by the float filter still take: practically never).

        2,000 viewers x 1M entities, radii x2 (3.7M answers), CPU time on one thread, processes
        alternated with the copy back, medians of 9 calls: 26.5, 25.6, 27.9 against 37.6, 36.8, 38.5 ms.
        The chunks keep their rows in arenas reused between calls (:class:`culling.core.chunks.RowsLease`):
        on two threads, processes alternated with a new array per chunk, medians of 21 calls, CPU
        25.3, 24.7, 26.7, 26.5 against 31.4, 33.6, 34.0, 33.0 ms (page faults 0 against 2,000 a call).
        """
        lease = chunks.RowsLease()

        def test(lo: int, hi: int) -> tuple[int, members.Tested]:
            with lease.testing():
                return lo, self._tested(points[lo:hi], exact, scale)

        try:
            tested = run_chunks(test, points.shape[0], min_items=members.PARALLEL_MIN_POINTS // 2)
            return self._placed_from(tested, points, order, scale)
        finally:
            lease.close()

    def _placed_from(self, tested: list[tuple[int, members.Tested]], points: np.ndarray, order: np.ndarray,
                     scale: float) -> tuple[np.ndarray, np.ndarray]:
        """:meth:`_placed_many`'s answer from its chunks' tests: the offsets, then the writes."""
        if any(part.unsure_at[-1] for _, part in tested):  # within rounding of a surface: exact arithmetic
            parts = []
            for lo, part in tested:
                handles, counts, unsure, owners = members.write_many(part)
                parts.append((handles, counts, unsure, owners + lo))
            return chunks.parts_in_caller_order(self._settled_parts(parts, points, scale), order)
        counts = tested[0][1].counts if len(tested) == 1 else np.concatenate([part.counts for _, part in tested])
        out_counts = np.empty_like(counts)
        out_counts[order] = counts
        starts = np.zeros(counts.shape[0] + 1, dtype=np.int64)
        np.cumsum(out_counts, out=starts[1:])
        out = np.empty(int(starts[-1]), dtype=np.int64)
        # chunk point i's answer starts at at_point[i] in its chunk's joined answer, at starts[order[lo + i]] in out
        walked = np.zeros(counts.shape[0] + 1, dtype=np.int64)
        np.cumsum(counts, out=walked[1:])
        shift = starts[order] - walked[:-1]
        bounds = [lo for lo, _ in tested] + [counts.shape[0]]

        def place(first: int, last: int) -> None:
            for c in range(first, last):
                lo, hi = bounds[c], bounds[c + 1]
                members.place_many(tested[c][1], out, shift[lo:hi] + walked[lo])

        run_chunks(place, len(tested), chunks=len(tested))
        return out, out_counts

    def _query_order(self, points: np.ndarray) -> np.ndarray | None:
        """The order :meth:`query_many` walks ``points`` in (int64 (m,), a permutation; its answer
        goes back in the caller's order), or None for the caller's own."""
        return None

    def _answer_many_parts(self, points: np.ndarray, exact: bool,
                           scale: float) -> list[tuple[np.ndarray, np.ndarray]]:
        """:meth:`query_many` of one pass of points, validated: chunks of points on the library's threads,
        each walked and answered in two kernel calls (:meth:`_answer_parts`), then the exact fallback.
        Returns the chunks' ``(handles, counts)`` in order, not yet joined (one joined part where the
        exact fallback had rows to settle).

        Each chunk is independent, so the threads meet once per pass (every
        meeting costs a wake of a pool thread, 10 to 100 us on a busy
        machine); within a chunk the members are tested node-major.
        """
        def chunk(lo: int, hi: int) -> Parts:
            handles, counts, unsure, owners = self._answer_parts(points[lo:hi], exact, scale)
            return handles, counts, unsure, owners + lo

        parts = run_chunks(chunk, points.shape[0], min_items=members.PARALLEL_MIN_POINTS // 2)
        if not any(part[2].size for part in parts):
            return [(handles, counts) for handles, counts, _, _ in parts]
        return self._settled_parts(parts, points, scale)

    def _settled_parts(self, parts: list[Parts], points: np.ndarray, scale: float) -> list[tuple[np.ndarray, np.ndarray]]:
        """The chunks' answers joined, the rows they left unsure decided in exact arithmetic: one part."""
        handles, counts, unsure, owners = overlap.joined(parts)
        columns, row_handles = self._rows()  # within rounding of a surface: exact arithmetic decides
        keep = decide(columns, unsure, points[owners], self.shape, scale)
        return [chunks.merged(handles, counts, row_handles[unsure[keep]], owners[keep])]

    @reading
    def overlapping(self, centre: ArrayLike, radius: Real, exact: bool = False, scale: Real = 1.0) -> np.ndarray:
        """Handles of the stored spheres that may meet the probe sphere ``(centre, radius)``; int64 (k,).

        Parameters
        ----------
        centre : array_like, shape (dim,) (a scalar for dim 1); may lie outside the world
        radius : float, >= 0, the probe's radius ``rho``
        exact : bool
            Keep exactly the spheres with ``distance(c_i, centre) <= r_i * scale
            + radius`` (the largest per-axis distance for cubes), decided
            exactly (rounding of the sum never flips an answer); otherwise a
            superset.  ``radius=0`` answers as :meth:`query`.
        scale : float, multiplies every stored radius

        Cost: O(levels + candidates), compiled: at most ``(2 + ceil(2 * radius
        / W))**dim`` nodes (cells) per level of edge ``W`` (``scale <= 1``); a
        probe covering the whole world visits every node once.
        """
        p = np.array([as_coords(centre, self.dim, "centre")])
        grows = np.array([as_radius(radius)])
        handles, _ = self._probe(p, grows, as_flag(exact), as_scale(scale))
        return handles

    @reading
    def overlapping_many(self, centres: ArrayLike, radii: ArrayLike, exact: bool = False,
                         scale: Real = 1.0) -> tuple[np.ndarray, np.ndarray]:
        """:meth:`overlapping` for many probes, each with its own radius, on the library's threads.

        Parameters
        ----------
        centres : array_like, shape (m, dim) (or (m,) for dim 1)
        radii : array_like, shape (m,), or one number for every probe; >= 0
        exact, scale : as for :meth:`overlapping`

        Returns
        -------
        handles : ndarray, int64, the answers concatenated
        counts : ndarray, shape (m,), int64: probe ``i``'s answer is
            ``handles[counts[:i].sum():][:counts[i]]``

        Cost: O(m x levels + candidates), compiled, the probes cut into chunks
        run on all cores (:func:`culling.runtime.threads.run_chunks`).
        """
        points = np.ascontiguousarray(as_points(centres, self.dim, "centres"))
        grows = as_probe_radii(radii, points.shape[0])
        return self._probe(points, grows, as_flag(exact), as_scale(scale))

    def _probe(self, points: np.ndarray, grows: np.ndarray, exact: bool, scale: float) -> tuple[np.ndarray, np.ndarray]:
        """Probes ``(points (m, dim), grows (m,))``, validated: their answers and counts."""
        m = points.shape[0]
        if not self._count or not m:
            return np.empty(0, dtype=np.int64), np.zeros(m, dtype=np.int64)
        parts = run_chunks(self._probe_chunk(points, grows, exact, scale), m,
                           min_items=members.PARALLEL_MIN_POINTS // 2)
        handles, counts, unsure, owners = overlap.joined(parts)
        columns, row_handles = self._rows()
        return overlap.settle(handles, counts, unsure, owners, columns, row_handles, points, grows, self.shape, scale)

    @abstractmethod
    def _walked(self, p: np.ndarray, scale: float) -> Walked:
        """One validated point's walk for :meth:`query_detailed`: its member runs, the rows they index
        and how to trace it (:class:`Walked`)."""

    @reading
    def visible_from(self, handle: Handle, point: ArrayLike, scale: Real = 1.0) -> bool:
        """Whether ``query(point, exact=True, scale=scale)`` holds ``handle``: the same exact test (rational
        arithmetic on the stored float64 centre and radius), for that one object.  The question a debug
        view asks of one object that pops in late; comparing a float distance with its reach instead
        can answer wrong within rounding of the reach.  ``KeyError`` for a handle not stored,
        ``TypeError`` for one that is not an integer.  O(1), but rational arithmetic every time: some
        30 microseconds, several times a whole ``query`` (a debug view's question, not a frame's).

        >>> from culling import ViewDistanceTree
        >>> tree = ViewDistanceTree(size=64.0, dim=2)
        >>> h = tree.insert((0.0, 0.0), 0.3)
        >>> tree.visible_from(h, (0.1, 0.2)), tree.visible_from(h, (0.1, 0.2), scale=0.5)
        (True, False)
        """
        row_of = self._object_rows(self._live(handle))
        p = np.array(as_coords(point, self.dim, "point"))
        scale = as_scale(scale)
        columns, row = row_of
        return bool(decide(columns, np.array([row], dtype=np.int64), p, self.shape, scale)[0])

    @reading
    def query_detailed(self, point: ArrayLike, scale: Real = 1.0, trace: bool = False) -> QueryDetails:
        """The exact query with what a frame needs next, from one walk.

        The handles of ``query(point, exact=True, scale=scale)`` with their
        centres, radii and distances, the number of candidates the walk
        returned before the exact test (the first number of a culling
        funnel) and, with ``trace=True``, the walk's :class:`QueryTrace`:
        an overlay shows the production path, not a second walk.

        Cost: O(levels + candidates), as :meth:`query`; the trace adds
        O(visited nodes).

        >>> from culling import ViewDistanceTree
        >>> tree = ViewDistanceTree(size=64.0, dim=2)
        >>> _ = tree.insert_many([[1.0, 1.0], [4.0, 1.0]], [5.0, 1.0])
        >>> seen = tree.query_detailed((2.0, 1.0), trace=True)
        >>> seen.handles.tolist(), seen.distances.tolist(), seen.candidates, seen.trace.levels[0].depth
        ([0], [1.0], 2, 0)
        """
        p = np.array(as_coords(point, self.dim, "point"))
        scale = as_scale(scale)
        want_trace = as_flag(trace, "trace")
        if not self._count:
            empty = np.empty(0, dtype=np.int64)
            levels = QueryTrace(point=p, candidates=empty.copy(), levels=[]) if want_trace else None
            return QueryDetails(empty, np.empty((0, self.dim)), np.empty(0), np.empty(0), 0, levels)
        walked = self._walked(p, scale)
        found, sure = members.answer_runs(np.arange(walked.run_start.size), walked.run_start, walked.run_count, walked.pool, p,
                                          (scale, True, self.shape == "cube", True))
        rows = self._settled(found, sure, p, scale, True, (walked.columns, walked.handles))
        axes = walked.columns[: self.dim, rows]  # (dim, k): the centres axis by axis, as distances reads them
        return QueryDetails(
            handles=walked.handles[rows],
            centres=axes.T.copy(),
            radii=walked.columns[self.dim, rows],
            distances=distances(axes, p, self.shape),
            candidates=int(walked.run_count.sum()),
            trace=walked.trace() if want_trace else None,
        )

    def __copy__(self) -> Self:
        """An independent copy (a shallow copy would share the arrays, and mutating one would corrupt
        the other): the same as :func:`copy.deepcopy`."""
        return copy.deepcopy(self)

    def __deepcopy__(self, memo: dict[int, Any]) -> Self:
        """Copy the arrays while holding the lock as a reader (a mutation on another thread waits), once."""
        twin = type(self).__new__(type(self))
        memo[id(self)] = twin
        twin.__setstate__(self._copied_state(memo))
        return twin

    def __getstate__(self) -> dict[str, object]:
        """Pickle everything but the lock; the copy gets a lock of its own.  The arrays are copied while
        the lock is held (a mutation on another thread waits): pickle reads them only after this returns."""
        return self._copied_state({})

    def _copied_state(self, memo: dict[int, Any]) -> dict[str, object]:
        with self._rw.reading():
            state = state_without_lock(self)
            del state["_structs_cache"]  # references to this structure's arrays
            del state["_band_plans"]  # made again by the next overlapping_pairs
            return cast(dict[str, object], copy.deepcopy(state, memo))

    def __setstate__(self, state: dict[str, object]) -> None:
        self.__dict__.update(state)
        self.__dict__.setdefault("_handle_blocker", (-1, 0))  # a pickle from before the blocker was kept
        self._origin.flags.writeable = False  # read-only again (a copy comes back writable): numba types it apart
        self._rw = ReadWriteLock()
        self._structs_cache = (-1, None)
        self._band_plans = PlanCache()
