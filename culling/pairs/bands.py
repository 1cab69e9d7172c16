"""Every pair of stored spheres that meet, by bands of levels: a dense bucket grid per band.

The lattice gives every stored sphere a level whose cells are wider than
twice its radius (``r < W/2``), and the structure's nodes (or the dense
grid's cells) give each member's level and exact cell.  That is all the
join needs:

1. **Bands** (:func:`_banded`): the occupied levels, finest first, are grouped
   into bands; a band's *bucket level* ``B`` is its coarsest level (or a
   coarser one, see below) and each member's bucket is its cell's ancestor on
   ``B`` (``cell >> (L - B)``, exact).  Two members of one band meet only if
   ``|c_i - c_j| <= r_i + r_j < W_B`` on every axis, so their buckets differ
   by at most one per axis.  A coarser level joins the band while the band's
   members per bucket cell (within its bounding box) stay at most
   :data:`DENSITY`; a band whose box would need more than
   :data:`CELLS_PER_MEMBER` cells per member is moved to a coarser bucket
   level.  A crowd of similar radii is one band; a heavy tail of large
   spheres is a band of its own.
   The bands, with each band's box grown by a cell on every side where the
   memory bound allows, are a :class:`Plan`; a structure keeps its last
   (:class:`PlanCache`) and uses it again while every member fits it, so a
   moving crowd's frame skips this step.
2. **Buckets** (:func:`build`): each band's buckets are a dense box of
   cells, row-major with the last axis fastest; the members are copied in
   that order by a counting sort (O(members + cells)): one pass over the
   runs buckets and counts them (:func:`_bucketed`), a second names each
   row's pool row (:func:`sources`), and the copy (:func:`gather`) writes
   the rows in order, both in parts on the library's threads.  Every run of
   cells along the last axis is one run of rows.
3. **Within a band** (:func:`band_cells`): each member against the members
   after it in its cell and the next cell along the last axis, and against
   the three cells along the last axis on each forward neighbouring line
   (:func:`forward_lines`: each unordered pair of neighbouring lines once);
   a neighbouring cell farther than the member's radius plus the band's
   largest is skipped.
4. **Across bands** (:func:`cross_rows`): each member of a coarser band
   against the finer bands' buckets within its radius plus the band's
   largest radius: one run of rows per line of that window, cut to the
   reach's chord along the last axis (the window's lines widened by their
   rounding's bound and one cell each way, the chord by the roundings' bound
   only, :func:`_chord_rounding`: a member's bucket is the exact floor of its
   place, so rounding never loses a bucket).
5. Each run is first screened by :func:`culling.core.overlap.first_near` (no
   writes; it stops at the first candidate near): :func:`noted_cells` and
   :func:`noted_rows` note the runs with a hit, in chunks on the library's
   threads (both passes' chunks in one batch).  Then the noted runs are
   tested again from that candidate on and their pairs written, every chunk's
   into one output (:func:`written`).  Pairs within rounding of
   touching are settled exactly by the caller
   (:func:`culling.core.containment.decide_pairs`).

Each unordered pair is tested once: within a band by the member of the
earlier cell in the forward order (in one cell, the earlier member), across
bands by the member of the coarser band.  Pruning is conservative in floats
(margins above every rounding's bound), so nothing that meets is lost.
Memory: the copy, the cells' starts (at most :data:`CELLS_PER_MEMBER` cells
per member and band), the runs noted for writing (at most ``1 + (3**(dim-1) - 1) / 2``
per member within a band) and the output.  A world whose crowd sits in a few small
clusters far apart makes a band's grid coarse (:func:`build` reports it);
the caller then joins the tree with itself instead
(:func:`culling.pairs.join.dual_pairs`).
"""

from __future__ import annotations

import math
import sys
import threading
from typing import NamedTuple

import numpy as np

from culling.core.chunks import scratch_keeper
from culling.core.overlap import NEAR_LANES, first_near, meet_filter, member, partner_rows, reach_up
from culling.pairs.output import joined, piece_buffers
from culling.runtime.jit import inline_kernel, kernel
from culling.runtime.prefetch import AHEAD, prefetch, prefetch_at
from culling.runtime.threads import run_chunks, thread_count

__all__ = ["CELLS_PER_MEMBER", "COARSEN_LIMIT", "DENSITY", "KEPT_BUFFERS", "KEPT_BYTES", "PARALLEL_WRITE_MIN", "REPLAN_EVERY",
           "SOURCES_PARALLEL_MIN", "Gather", "Layout", "Noted", "Plan", "PlanCache", "band_cells", "build", "cross_rows",
           "forward_lines", "gather", "noted_cells", "noted_rows", "plan_of", "sources", "written"]

#: A coarser level joins a band while the band has at most this many members per cell of its
#: box on that level: a member is then tested against about ``13.5 * DENSITY`` others in 3-D.
DENSITY = 4.0

#: A band's grid has at most this many cells per member (plus 64); a sparser band is moved to a
#: coarser bucket level.
CELLS_PER_MEMBER = 8

#: A band moved more than this many levels above its coarsest member's level (its members sit in
#: a few clusters far apart) is reported by :func:`build`: the tree's own join suits it better.
COARSEN_LIMIT = 2

#: Columns of :attr:`Layout.band`: the bucket level, the band's first and end member rows, its
#: first cell (in :attr:`Layout.cell_start`); then the box's low cell and its extent per axis
#: (``LOW + axis``, ``LOW + dim + axis``).
LEVEL, FIRST_ROW, END_ROW, FIRST_CELL, LOW = 0, 1, 2, 3, 4

#: Columns of :attr:`Layout.scales`: the band's largest radius, ``2**B`` and the root-relative
#: offset of cell 0 on ``B`` (the cell of root-relative ``u`` is ``floor(u * 2**B + offset)``).
RADIUS, FACTOR, OFFSET = 0, 1, 2

#: A relative bound on the rounding of the window's ends (three roundings of terms at most
#: ``|x| + reach + |origin|``, then a division, a product and two sums: far below ``2**-48``).
_ROUNDING = 2.0 ** -48

#: A member whose reach spans this many cells of a finer band meets most of its window there:
#: :func:`cross_rows` then writes its pairs without screening the runs first.
_WIDE = 2.0


#: A relative margin for a product or a square root rounded once or twice.
_MARGIN = 1.0 + 2.0 ** -50

#: An absolute bound, in cells, on the rounding of a member's place in its cell beyond
#: :data:`_ROUNDING` (the cell's corner is exact; the product by ``2**B / size`` rounds once more).
_CELL_SLACK = 2.0 ** -30


class Gather(NamedTuple):
    """Where :func:`sources` finds a :class:`Layout`'s rows, over the runs that hold members (``run``
    int64 (k,), ascending: a structure's empty nodes are skipped once, here, not by a branch per
    row): run ``run[g]``'s members go to the rows from ``cell_start[cell[g]] + offset[g]`` on
    (``offset``: the rows of the earlier runs of its cell)."""

    run: np.ndarray
    cell: np.ndarray
    offset: np.ndarray


class Layout(NamedTuple):
    """The members grouped by band (coarsest band first), then by bucket cell (row-major, the last axis fastest).

    ``columns`` (dim + 2, n + NEAR_LANES - 1) and ``handles`` (n,): the copied members (the
    columns after the last are room for :func:`culling.core.overlap.first_near`'s lanes).
    ``cell_start`` int64 (cells + 1,): cell ``c``'s members are rows
    ``cell_start[c] .. cell_start[c + 1] - 1``; a band's cells are
    consecutive, so a run of cells along the last axis is one run of rows.
    ``band`` int64 (bands, LOW + 2 dim) and ``scales`` float64 (bands, 3):
    see :data:`LEVEL`, :data:`RADIUS`.  ``forward`` int64
    (F, dim - 1): the offsets of the neighbouring lines after a line
    (:func:`forward_lines`).  ``ok``: False when a band had to be moved more
    than :data:`COARSEN_LIMIT` levels up (the rest is then empty).
    """

    columns: np.ndarray
    handles: np.ndarray
    cell_start: np.ndarray
    band: np.ndarray
    scales: np.ndarray
    forward: np.ndarray
    ok: bool


@kernel
def forward_lines(lead: int) -> np.ndarray:
    """The offsets in ``{-1, 0, 1}**lead`` that are lexicographically positive: int64 ``((3**lead - 1) / 2, lead)``.

    Of every two neighbouring lines exactly one sees the other at such an offset.
    """
    total = 1
    for _ in range(lead):
        total *= 3
    out = np.empty(((total - 1) // 2, lead), dtype=np.int64)
    k = 0
    for code in range(total):
        positive = False
        decided = False
        digits = np.empty(lead, dtype=np.int64)
        rest = code
        for axis in range(lead - 1, -1, -1):
            digits[axis] = rest % 3 - 1
            rest //= 3
        for axis in range(lead):
            if not decided and digits[axis] != 0:
                positive = digits[axis] > 0
                decided = True
        if positive:
            for axis in range(lead):
                out[k, axis] = digits[axis]
            k += 1
    return out


@kernel
def _cells_of(low: np.ndarray, high: np.ndarray, limit: float) -> float:
    """The number of cells of the box ``low .. high`` (inclusive), as a float (``limit + 1`` once it passes ``limit``)."""
    cells = 1.0
    for axis in range(low.shape[0]):
        cells *= float(high[axis] - low[axis] + 1)
        if cells > limit:
            return limit + 1.0
    return cells


@kernel
def _level_range(run_count: np.ndarray, run_level: np.ndarray) -> tuple[int, int]:
    """The finest and the coarsest level of the runs that hold members (``(2**30, -2**30)`` for none)."""
    low_level, high_level = 1 << 30, -(1 << 30)
    for r in range(run_count.shape[0]):
        if run_count[r] > 0:
            low_level = min(low_level, run_level[r])
            high_level = max(high_level, run_level[r])
    return low_level, high_level


@kernel
def _level_boxes(run_count: np.ndarray, run_level: np.ndarray, run_cells: np.ndarray, low_level: int, slots: int,
                 first: int, last: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Of runs ``first .. last - 1``, per level ``low_level + s``: the members, and the box of the runs'
    cells (``(members, low, high)``, int64 ``(slots,)``, ``(slots, dim)`` twice).  Parts of the runs
    may run at the same time; their answers add up (:func:`build`)."""
    dim = run_cells.shape[0]
    members = np.zeros(slots, dtype=np.int64)
    low = np.full((slots, dim), 1 << 62, dtype=np.int64)
    high = np.full((slots, dim), -(1 << 62), dtype=np.int64)
    for r in range(first, last):
        if run_count[r] > 0:
            s = run_level[r] - low_level
            members[s] += run_count[r]
            for axis in range(dim):
                low[s, axis] = min(low[s, axis], run_cells[axis, r])
                high[s, axis] = max(high[s, axis], run_cells[axis, r])
    return members, low, high


@kernel
def _banded(members: np.ndarray, low: np.ndarray, high: np.ndarray, low_level: int,
            anchor: float) -> tuple[np.ndarray, np.ndarray, np.ndarray, int, bool]:
    """The bands of the occupied levels ``low_level + s`` (``members[s]`` members, their cells in the
    box ``low[s] .. high[s]``): ``(band, scales, band_of_slot, cells, ok)``.

    ``band`` and ``scales`` as :class:`Layout` holds them (coarsest band first;
    each band's largest radius left 0), ``band_of_slot`` each level's band (its
    row), ``cells`` the buckets of every band together; ``ok`` False when a band
    had to move more than :data:`COARSEN_LIMIT` levels up.  O(levels).
    """
    slots, dim = low.shape
    # Bands, finest level first.
    band_level = np.empty(slots, dtype=np.int64)
    band_members = np.zeros(slots, dtype=np.int64)
    band_low = np.empty((slots, dim), dtype=np.int64)
    band_high = np.empty((slots, dim), dtype=np.int64)
    band_own = np.empty(slots, dtype=np.int64)  # the band's coarsest member level
    band_of_slot = np.full(slots, -1, dtype=np.int64)
    bands = 0
    joined_low = np.empty(dim, dtype=np.int64)
    joined_high = np.empty(dim, dtype=np.int64)
    for s in range(slots - 1, -1, -1):
        if members[s] == 0:
            continue
        level = s + low_level
        if bands > 0:
            p = bands - 1
            shift = band_level[p] - level
            for axis in range(dim):
                joined_low[axis] = min(band_low[p, axis] >> shift, low[s, axis])
                joined_high[axis] = max(band_high[p, axis] >> shift, high[s, axis])
            total = band_members[p] + members[s]
            limit = float(CELLS_PER_MEMBER * band_members[p] + 64)
            too_sparse = _cells_of(band_low[p], band_high[p], limit) > limit
            if too_sparse or total <= DENSITY * _cells_of(joined_low, joined_high, 4.0 * total):
                band_level[p] = level
                band_own[p] = level
                band_members[p] = total
                for axis in range(dim):
                    band_low[p, axis] = joined_low[axis]
                    band_high[p, axis] = joined_high[axis]
                band_of_slot[s] = p
                continue
        band_level[bands] = level
        band_own[bands] = level
        band_members[bands] = members[s]
        for axis in range(dim):
            band_low[bands, axis] = low[s, axis]
            band_high[bands, axis] = high[s, axis]
        band_of_slot[s] = bands
        bands += 1
    ok = True
    for p in range(bands):  # a band too sparse for a dense grid moves up
        limit = float(CELLS_PER_MEMBER * band_members[p] + 64)
        while _cells_of(band_low[p], band_high[p], limit) > limit:
            band_level[p] -= 1
            for axis in range(dim):
                band_low[p, axis] >>= 1
                band_high[p, axis] >>= 1
        ok &= band_own[p] - band_level[p] <= COARSEN_LIMIT
        for axis in range(dim):  # a cell of room on every side, where the limit allows: the plan
            joined_low[axis] = band_low[p, axis] - 1  # then fits while the crowd drifts (PlanCache)
            joined_high[axis] = band_high[p, axis] + 1
        if _cells_of(joined_low, joined_high, limit) <= limit:
            for axis in range(dim):
                band_low[p, axis] = joined_low[axis]
                band_high[p, axis] = joined_high[axis]
    # Bands in rows coarsest first: band p of the finest-first numbering is band bands - 1 - p.
    band = np.empty((bands, LOW + 2 * dim), dtype=np.int64)
    scales = np.zeros((bands, 3))
    row, cell = 0, 0
    for q in range(bands):
        p = bands - 1 - q
        band[q, LEVEL] = band_level[p]
        band[q, FIRST_ROW] = row
        band[q, FIRST_CELL] = cell
        cells = 1
        for axis in range(dim):
            band[q, LOW + axis] = band_low[p, axis]
            band[q, LOW + dim + axis] = band_high[p, axis] - band_low[p, axis] + 1
            cells *= band[q, LOW + dim + axis]
        factor = math.ldexp(1.0, int(band_level[p]))
        scales[q, FACTOR] = factor
        scales[q, OFFSET] = anchor * factor
        row += band_members[p]
        band[q, END_ROW] = row
        cell += cells
    for s in range(slots):
        if band_of_slot[s] >= 0:
            band_of_slot[s] = bands - 1 - band_of_slot[s]
    return band, scales, band_of_slot, cell, ok


@kernel
def _bucketed(runs: tuple[np.ndarray, np.ndarray, np.ndarray], plan: Plan,
              cell_start: np.ndarray) -> tuple[bool, tuple[np.ndarray, np.ndarray, np.ndarray], np.ndarray]:
    """Each run's bucket (its cell's ancestor on its band's level, numbered over every band's buckets;
    the runs without members left out) and its bucket's members counted into ``cell_start`` (zeros,
    cells + 1 long; its starts after), in one pass over the runs ``(count, level, cells)``; then
    this call's copy of ``plan.band``, with each band's rows (:data:`FIRST_ROW`, :data:`END_ROW`).
    The :class:`Gather` goes back as a plain tuple (:func:`_buckets` names it):
    numba boxes a named tuple by calling its class, which a Ctrl-C landing
    while numba looks the class up leaves NULL, and the process crashes.

    That pass gives each run its rows' offset in its bucket: the :class:`Gather`
    of :func:`sources`.  Returns ``(False, ...)`` as soon as
    a run's level has no band in ``plan`` or its bucket lies outside its
    band's box: a plan made for an earlier state of the structure no longer
    fits, and the caller makes a new one.  O(runs + cells).
    """
    run_count, run_level, run_cells = runs
    band, band_of_slot = plan.band, plan.band_of_slot
    dim = run_cells.shape[0]
    slots = band_of_slot.shape[0]
    n_runs = run_count.shape[0]
    run = np.empty(n_runs, dtype=np.int64)
    run_cell = np.empty(n_runs, dtype=np.int64)
    offset = np.empty(n_runs, dtype=np.int64)
    rows = band.copy()  # the plan is shared: this call's rows go in a copy
    held = 0  # the runs with members, listed first without a branch (40% of a crowd's nodes are empty)
    for r in range(n_runs):
        run[held] = r
        held += run_count[r] > 0
    for g in range(held):
        r = run[g]
        s = run_level[r] - plan.low_level
        if s < 0 or s >= slots or band_of_slot[s] < 0:
            return False, (run[:0], run_cell[:0], offset[:0]), rows
        q = band_of_slot[s]
        shift = run_level[r] - band[q, LEVEL]
        at = 0
        for axis in range(dim):
            k = (run_cells[axis, r] >> shift) - band[q, LOW + axis]
            extent = band[q, LOW + dim + axis]
            if k < 0 or k >= extent:
                return False, (run[:0], run_cell[:0], offset[:0]), rows
            at = at * extent + k
        c = at + band[q, FIRST_CELL]
        run_cell[g] = c
        offset[g] = cell_start[c + 1]
        cell_start[c + 1] += run_count[r]
    for c in range(cell_start.shape[0] - 1):
        cell_start[c + 1] += cell_start[c]
    bands = rows.shape[0]
    for q in range(bands):
        rows[q, FIRST_ROW] = cell_start[rows[q, FIRST_CELL]]
        rows[q, END_ROW] = cell_start[rows[q + 1, FIRST_CELL]] if q + 1 < bands else cell_start[-1]
    return True, (run[:held], run_cell[:held], offset[:held]), rows


@kernel
def sources(lay: Layout, plan: Gather, run_start: np.ndarray, run_count: np.ndarray, source: np.ndarray,
            first: int, end: int) -> None:
    """``source[row]``: the pool row that layout row ``row`` copies, for the runs ``plan.run[first ..
    end - 1]`` (disjoint rows: ranges may run at the same time).  One int64 written a row, at the
    run's place in the layout; :func:`gather` then copies the rows in the layout's order.
    O(runs + rows)."""
    cell_start = lay.cell_start
    for g in range(first, end):
        r = plan.run[g]
        to = cell_start[plan.cell[g]] + plan.offset[g]
        start = run_start[r]
        for u in range(run_count[r]):
            source[to + u] = start + u


@kernel
def gather(lay: Layout, source: np.ndarray, handles: np.ndarray, columns: np.ndarray, first_row: int,
           end_row: int) -> None:
    """Copy the centres, radii and handles of layout rows ``first_row .. end_row - 1`` from the pool
    rows ``source`` names (:func:`sources`); ranges of rows may run at the same time.

    The layout's rows are written in order and each pool row is fetched
    :data:`~culling.runtime.prefetch.AHEAD` rows early: a crowd's nodes hold
    one member or two, so a copy run by run wrote each run's rows at a
    random place as well as reading them from one (the 100k swarm's copy:
    4.8-5.3 ms of CPU, 3.3-3.6 ms in the layout's order, the ``source``
    pass included).  O(rows).
    """
    dim = columns.shape[0] - 2
    out_columns, out_handles = lay.columns, lay.handles
    for row in range(first_row, end_row):
        if row + AHEAD < end_row:  # a later row's pool row (culling.runtime.prefetch)
            ahead = source[row + AHEAD]
            prefetch(handles, ahead)
            for axis in range(dim + 1):
                prefetch_at(columns, axis, ahead)
        at = source[row]
        for axis in range(dim + 1):
            out_columns[axis, row] = columns[axis, at]
        out_handles[row] = handles[at]


#: :func:`sources` runs on the library's threads from this many runs on; below, one pass on the
#: calling thread costs less than waking them (10k swarm: the copy's two passes 0.44 ms on two
#: threads against 0.41 ms for the one copy run by run).
SOURCES_PARALLEL_MIN = 32_768


class Plan(NamedTuple):
    """The bands of a structure's occupied levels, as :func:`_banded` decides them: what a
    :class:`Layout` is built on, kept from one call to the next (:class:`PlanCache`).

    ``band`` int64 (bands, LOW + 2 dim), whose :data:`FIRST_ROW` and
    :data:`END_ROW` each call sets in its own copy; ``scales`` float64
    (bands, 3), whose :data:`RADIUS` each call sets likewise; ``band_of_slot`` int64 (slots,):
    the band of level ``low_level + s`` (-1: none); ``cells``: the buckets of
    every band together; ``forward``: :func:`forward_lines`.
    """

    band: np.ndarray
    scales: np.ndarray
    band_of_slot: np.ndarray
    low_level: int
    cells: int
    forward: np.ndarray


class PlanCache:
    """A structure's last :class:`Plan`, for its next :func:`build`.

    A crowd keeps its levels and, moving a little per frame, its boxes: the
    plan of the last call still fits, and a call then skips the levels'
    boxes and the bands (:func:`plan_of`) and goes straight to the buckets
    (:func:`_bucketed`, which checks that every run fits the plan).  The plan
    is made again when a run does not fit, when the members are more than
    twice or fewer than half as many as when it was made (the bands' density
    has changed), and after :data:`REPLAN_EVERY` uses (a slow drift of the
    crowd).  A plan that fits gives the same pairs as a new one: it only
    decides where members are bucketed.  Readers may share one: the plan is
    replaced whole, never changed in place.

    It also keeps the buffers of the last outputs (:meth:`room`): the pairs
    are written into one of them again once the caller has let go of the
    arrays it was given from it.
    """

    __slots__ = ("__weakref__", "_kept", "_lock", "members", "plan", "uses")

    def __init__(self) -> None:
        self.plan: Plan | None = None
        self.members = 0
        self.uses = 0
        self._kept: list[tuple[np.ndarray, np.ndarray]] = []
        self._lock = threading.Lock()
        scratch_keeper(self)

    def release(self) -> None:
        """Drop the kept output buffers (:func:`culling.release_scratch`); arrays a caller holds stay
        valid, they hold their buffer."""
        with self._lock:
            self._kept.clear()

    def forked(self) -> None:
        """In a fork's child (:mod:`culling.core.chunks`): a new lock, nothing kept."""
        self._lock = threading.Lock()
        self._kept = []

    def room(self, pairs: int) -> tuple[np.ndarray, np.ndarray]:
        """Two int64 arrays with room for ``pairs`` pairs, for :func:`written`: a kept buffer that
        nothing outside this cache refers to any more (the caller has dropped every array the last
        outputs handed out of it), else new ones, kept in turn (the :data:`KEPT_BUFFERS` last, while
        they hold at most :data:`KEPT_BYTES` together).

        A broad phase's pairs are fresh memory every frame otherwise: the heavy tail's million pairs,
        16 MB, faulted in and zeroed by the system on every frame.  A caller that keeps its last
        frame's answer while it asks for the next (``first, second = tree.overlapping_pairs()`` in a
        loop) holds one buffer: the other is free, hence two kept.  Nothing is written into a buffer
        an array that a caller holds refers to: every view of it holds a reference to it.
        """
        with self._lock:
            if not KEPT_BYTES:  # keeping nothing (read at call time: the frame-parts tool alternates it)
                self._kept.clear()
            for k, kept in enumerate(self._kept):
                if kept[0].shape[0] >= pairs and _unheld(kept[0]) and _unheld(kept[1]):
                    del self._kept[k]
                    self._kept.append(kept)  # the most recently used last
                    return kept[0], kept[1]  # a new tuple: the arrays are held (counted) before the lock goes
            size = pairs + pairs // 8  # some room for the next frames' growth
            made = np.empty(size, dtype=np.int64), np.empty(size, dtype=np.int64)
            if 16 * size <= KEPT_BYTES // KEPT_BUFFERS:
                self._kept.append(made)
                del self._kept[:-KEPT_BUFFERS]
            return made[0], made[1]

    def fresh(self, members: int) -> Plan | None:
        """The plan to try for ``members`` members, or None when one must be made."""
        plan = self.plan
        if plan is None or self.uses >= REPLAN_EVERY or not self.members <= 2 * members <= 4 * self.members:
            return None
        self.uses += 1
        return plan

    def keep(self, plan: Plan, members: int) -> None:
        self.plan, self.members, self.uses = plan, members, 0


def _unheld(array: np.ndarray) -> bool:
    """Whether only the cache's own tuple refers to ``array``: its reference count (CPython's) no more
    than that of an array only a tuple holds, counted the same way (:data:`_ONLY_KEPT`)."""
    return sys.getrefcount(array) <= _ONLY_KEPT


def _count(array: np.ndarray) -> int:
    return sys.getrefcount(array)  # as _unheld counts: one call deep


#: The reference count :func:`_unheld` reads of an array that only a tuple holds.
_probe = (np.empty(0, dtype=np.int64),)
_ONLY_KEPT = _count(_probe[0])
del _probe


#: The most output buffers a :class:`PlanCache` keeps, and the most bytes they hold together.
KEPT_BUFFERS = 2
KEPT_BYTES = 64 << 20


#: A :class:`PlanCache` makes its plan again after this many uses.
REPLAN_EVERY = 64


def plan_of(runs: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray], anchor: float, parallel: bool) -> Plan | None:
    """The :class:`Plan` of the runs ``(start, count, level, cells)`` as :func:`build` takes them: the
    levels' members and boxes (:func:`_level_boxes`, in parts on the library's threads when
    ``parallel``), then the bands (:func:`_banded`).  None when a band had to be moved more than
    :data:`COARSEN_LIMIT` levels up.  O(runs)."""
    _, count, level, cells = runs
    chunks = thread_count() if parallel else 1  # a streaming pass: one part a thread
    low_level, high_level = _level_range(count, level)
    slots = max(high_level - low_level + 1, 1)
    boxes = (run_chunks(lambda lo, hi: _level_boxes(count, level, cells, low_level, slots, lo, hi), count.shape[0],
                        chunks=chunks) or [_level_boxes(count, level, cells, low_level, slots, 0, 0)])
    members = np.sum([b[0] for b in boxes], axis=0)
    low = np.min([b[1] for b in boxes], axis=0)
    high = np.max([b[2] for b in boxes], axis=0)
    band, scales, band_of_slot, n_cells, ok = _banded(members, low, high, low_level, anchor)
    if not ok:
        return None
    return Plan(band, scales, band_of_slot, low_level, n_cells, forward_lines(cells.shape[0] - 1))


def _buckets(plan: Plan, runs: tuple[np.ndarray, np.ndarray, np.ndarray]) -> tuple[np.ndarray, Gather, np.ndarray] | None:
    """:func:`_bucketed` into new cell starts: ``(cell_start, gather plan, band)``, or None when a run
    does not fit ``plan``."""
    cell_start = np.zeros(plan.cells + 1, dtype=np.int64)
    fits, order, band = _bucketed(runs, plan, cell_start)
    return (cell_start, Gather(*order), band) if fits else None


def build(runs: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray], handles: np.ndarray, columns: np.ndarray,
          anchor: float, parallel: bool, objects: int, plans: PlanCache | None = None) -> Layout:
    """The :class:`Layout` of the runs ``(start, count, level, cells)``: run ``k``'s members, pool rows
    ``start[k] .. start[k] + count[k] - 1`` of ``handles``/``columns`` (runs with ``count <= 0``
    are skipped; about ``objects`` members in all), of level ``level[k]`` in cell ``cells[:, k]``.

    The cell of root-relative ``u`` on level ``L`` is ``floor(u * 2**L + anchor * 2**L)``
    (``anchor``: the tree's ``ANCHOR``, 0 for the dense grid).  The bands
    (:func:`plan_of`, or the last call's from ``plans`` while they fit), each
    run's bucket and the buckets counted (:func:`_bucketed`), each row's pool
    row (:func:`sources`), the members copied in the layout's order
    (:func:`gather`; both a part per library thread when ``parallel``, the
    first from :data:`SOURCES_PARALLEL_MIN` runs: more parts only cost their
    dispatch), then each band's largest radius.  O(runs + members + cells).
    """
    start, count, level, cells = runs
    dim = cells.shape[0]
    parts = thread_count() if parallel else 1
    plan = plans.fresh(objects) if plans is not None else None
    buckets = _buckets(plan, (count, level, cells)) if plan is not None else None
    if buckets is None:
        plan = plan_of(runs, anchor, parallel)
        if plan is None:
            return Layout(columns[:, :0].copy(), handles[:0].copy(), np.zeros(1, dtype=np.int64),
                          np.zeros((0, LOW + 2 * dim), dtype=np.int64), np.zeros((0, 3)), forward_lines(dim - 1), False)
        if plans is not None:
            plans.keep(plan, objects)
        buckets = _buckets(plan, (count, level, cells))
    if plan is None or buckets is None:
        raise RuntimeError("the bands made from these runs do not fit them")
    cell_start, order, band = buckets
    total = int(cell_start[-1])
    # row ``dim + 1`` of the copy (the squared reach) is not filled: nothing reads it; the columns after
    # the last member are first_near's lanes' room (culling.core.overlap.NEAR_LANES)
    lay = Layout(np.empty((dim + 2, total + NEAR_LANES - 1)), np.empty(total, dtype=np.int64), cell_start, band,
                 plan.scales.copy(), plan.forward, True)
    source = np.empty(total, dtype=np.int64)
    held = order.run.shape[0]
    run_chunks(lambda lo, hi: sources(lay, order, start, count, source, lo, hi), held,
               chunks=parts if held >= SOURCES_PARALLEL_MIN else 1)
    run_chunks(lambda lo, hi: gather(lay, source, handles, columns, lo, hi), total, chunks=parts)
    if total:  # each band's largest radius, from its gathered rows (0 for a band a kept plan has left empty)
        filled = lay.band[:, END_ROW] > lay.band[:, FIRST_ROW]
        lay.scales[:, RADIUS] = 0.0
        lay.scales[filled, RADIUS] = np.maximum.reduceat(lay.columns[dim, :total], lay.band[filled, FIRST_ROW])
    return lay


@inline_kernel
def _chord_rounding(place: float, half: float, reach: float) -> float:
    """A bound, in cells, on how far the rounding may have moved the ends of a chord ``place -+ half``
    of a reach ``reach`` (all in cells) inward, beyond ``place``'s own rounding (the caller's slack).

    ``half = sqrt(reach**2 - apart)`` rounds ``reach**2 - apart`` by a few ulps of ``reach**2``
    (``apart`` itself is a sum of squares, rounded likewise), which moves the root by at most the
    square root of that error: below ``reach * 2**-24``.  The two sums that make an end round by
    ulps of ``|place| + half``: below ``(|place| + half + 1) * 2**-48``.  A member's bucket is the
    exact floor of its exact place (the lattice's home function), so a window widened by this and
    the slack holds every bucket within the reach: no whole cell of margin is needed.
    """
    return reach * 2.0 ** -24 + (abs(place) + half + 1.0) * _ROUNDING + _CELL_SLACK


@inline_kernel
def _screened(hits: np.ndarray, hk: int, i: int, lo: int, hi: int) -> int:
    """Note the run ``lo .. hi - 1`` of row ``i``'s candidates in ``hits[:, hk]`` (room made by the caller)."""
    hits[0, hk] = i
    hits[1, hk] = lo
    hits[2, hk] = hi
    return hk + 1


Pairs = tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]


Noted = tuple[np.ndarray, int, int]


def band_cells(lay: Layout, first_cell: int, last_cell: int, origin: np.ndarray, size: float, cube: bool) -> Pairs:
    """The pairs within bands with their earlier member in cells ``first_cell .. last_cell - 1``:
    :func:`_band_cells`, by a kernel per shape.  With the shape a constant,
    :func:`culling.core.overlap.first_near` tests its lanes side by side; a kernel per shape
    compiles only the shape a program uses (one kernel holding both took 1.3 s more to compile)."""
    return written(lay, [noted_cells(lay, first_cell, last_cell, origin, size, cube)], cube)


def noted_cells(lay: Layout, first_cell: int, last_cell: int, origin: np.ndarray, size: float, cube: bool) -> Noted:
    """:func:`band_cells`' screening only: the runs noted ``(hits, runs, their rows in all)``, for
    :func:`written` to write (with other parts' runs into one output, when the caller has more)."""
    cells = _cube_cells if cube else _sphere_cells
    # Each member notes at most one run per forward line and one of its own: room for all of them at
    # once, so the loop never grows the array (growing it inside the loop kept numba's reference
    # counting on every cell: 0.63 against 0.60 ms for 10k creatures on one thread).  NumPy's, as
    # the output's (:func:`written`).
    rows = int(lay.cell_start[last_cell] - lay.cell_start[first_cell])
    hits = np.empty((3, (lay.forward.shape[0] + 1) * rows), dtype=np.int64)
    hk, noted = cells(lay, first_cell, last_cell, origin, size, hits)
    return hits, hk, noted


def written(lay: Layout, parts: list[Noted], cube: bool, parallel: bool = False,
            plans: PlanCache | None = None) -> Pairs:
    """The pairs of the runs the screening ``parts`` noted (:func:`noted_cells`, :func:`noted_rows`),
    into one output: :func:`_written` into buffers NumPy allocates, room for every row noted.

    A large buffer gets huge pages (``madvise``), where one a kernel allocates faults in 4 KiB pages
    every call once glibc maps it afresh (the heavy tail's million pairs: thousands of faults a
    frame).  One output for every part saves joining the parts' outputs after into a fresh array
    as large again: on the 100k heavy tail's frame, 2.6 to 2.9 ms on the calling thread, and 2,065
    page faults a frame against 1,300 (the parts moved up instead: 1.5 ms).
    The parts are written one after the other; with ``parallel`` and from
    :data:`PARALLEL_WRITE_MIN` rows noted, each part at the place its noted rows would take, on
    the library's threads, and then the parts' pairs are moved up to close the gaps.  ``plans``:
    the structure's :class:`PlanCache`, whose kept buffers are written again (:meth:`PlanCache.room`).
    An answer with more rows noted than a kept buffer may hold is written by :func:`_written_apart`,
    in the memory of its pairs.
    """
    room = sum(noted for _, _, noted in parts)
    parallel = parallel and len(parts) > 1 and thread_count() > 1
    if room > KEPT_BYTES // (16 * KEPT_BUFFERS):  # too large to keep: each part into buffers of its own
        return _written_apart(lay, parts, cube, parallel)
    if plans is not None:  # a kept buffer, when the caller has let go of it (PlanCache.room)
        first, second = plans.room(room)
    else:
        first, second = np.empty(room, dtype=np.int64), np.empty(room, dtype=np.int64)
    if parallel and room >= PARALLEL_WRITE_MIN:
        starts = np.cumsum([0] + [noted for _, _, noted in parts])
        ends = np.empty(len(parts), dtype=np.int64)
        doubt = _each_written(lay, [[part] for part in parts], cube,
                              [(first, second, int(start)) for start in starts[:-1]], ends, True)
        k = _closed_up(first, second, starts[:-1], ends)
    else:
        ends = np.empty(1, dtype=np.int64)
        doubt = _each_written(lay, [parts], cube, [(first, second, 0)], ends, False)
        k = int(ends[0])
    unsure_a, unsure_b = _doubt_joined(doubt)
    if 2 * k < room:  # most candidates apart: give back the room
        return first[:k].copy(), second[:k].copy(), unsure_a, unsure_b
    return first[:k], second[:k], unsure_a, unsure_b


def _written_apart(lay: Layout, parts: list[Noted], cube: bool, parallel: bool) -> Pairs:
    """:func:`written` for an answer too large to keep: each part's pairs into buffers of its own with
    room for its rows noted (:func:`culling.pairs.output.piece_buffers`; on the library's threads with
    ``parallel``), then joined (:func:`culling.pairs.output.joined`).  Memory: the answer and one
    part's pairs.  One buffer for every part, at the places their noted rows would take, touched up to
    twice the answer's pages once the gaps were closed, and the answer cut from it was a copy more."""
    outputs = [(*piece_buffers(noted), 0) for _, _, noted in parts]
    ends = np.empty(len(parts), dtype=np.int64)
    doubt = _each_written(lay, [[part] for part in parts], cube, outputs, ends, parallel)
    pieces = [(first, second, int(end)) for (first, second, _), end in zip(outputs, ends)]
    outputs.clear()                                  # the pieces hold the buffers alone: joined lets each go
    return *joined(pieces), *_doubt_joined(doubt)


def _each_written(lay: Layout, groups: list[list[Noted]], cube: bool, into: list[tuple[np.ndarray, np.ndarray, int]],
                  ends: np.ndarray, parallel: bool) -> list[tuple[np.ndarray, np.ndarray]]:
    """Group ``g``'s parts' pairs written by :func:`_written` one after the other into ``into[g] = (first,
    second, from row)``, a group a task (on the library's threads with ``parallel``); ``ends[g]``: the
    row after its last pair.  Returns the rows of the pairs within rounding of touching, of each part
    that had some."""
    def task(lo: int, hi: int) -> list[tuple[np.ndarray, np.ndarray]]:
        unsure = []
        for g in range(lo, hi):
            first, second, k = into[g]
            for hits, hk, _ in groups[g]:
                k, unsure_a, unsure_b = _written(lay.columns, lay.handles, hits, hk, cube, first, second, k)
                unsure.append((unsure_a, unsure_b))
            ends[g] = k
        return unsure

    chunks = run_chunks(task, len(groups), chunks=len(groups) if parallel else 1)
    return [d for chunk in chunks for d in chunk if d[0].size]


def _doubt_joined(doubt: list[tuple[np.ndarray, np.ndarray]]) -> tuple[np.ndarray, np.ndarray]:
    """The rows of the pairs within rounding of touching, from every part that had some."""
    if len(doubt) == 1:
        return doubt[0]
    if doubt:
        return np.concatenate([d[0] for d in doubt]), np.concatenate([d[1] for d in doubt])
    return np.empty(0, dtype=np.int64), np.empty(0, dtype=np.int64)


#: :func:`written` writes its parts on the library's threads from this many rows noted: below, the
#: pairs of one frame are few and a wake of the threads costs more than they save.
PARALLEL_WRITE_MIN = 1 << 16


@kernel
def _closed_up(first: np.ndarray, second: np.ndarray, starts: np.ndarray, ends: np.ndarray) -> int:
    """Close the gaps between the parts' pairs (part ``p``: rows ``starts[p] .. ends[p] - 1``, ascending,
    disjoint); returns the pairs in all, ``k``, now rows ``0 .. k - 1``.

    The pairs come in no particular order, so only the pairs written at ``k`` or beyond move: each
    fills a gap below ``k``, taken from the last part backwards.  On the heavy tail's million pairs
    that took half the time of moving every part up after the first gap.  O(gaps below k).
    """
    parts = starts.shape[0]
    k = 0
    for p in range(parts):
        k += ends[p] - starts[p]
    source = parts - 1  # the part the next pair to move is taken from, its rows from the end down
    row = ends[source] - 1
    for p in range(parts):
        if starts[p] >= k:
            break
        gap_end = starts[p + 1] if p + 1 < parts else k
        for hole in range(ends[p], min(gap_end, k)):
            while row < max(starts[source], k):  # nothing of this part at or beyond k is left to move
                source -= 1
                row = ends[source] - 1
            first[hole] = first[row]
            second[hole] = second[row]
            row -= 1
    return k


@kernel
def _sphere_cells(lay: Layout, first_cell: int, last_cell: int, origin: np.ndarray, size: float,
                  hits: np.ndarray) -> tuple[int, int]:
    return _band_cells(lay, first_cell, last_cell, origin, size, False, hits)


@kernel
def _cube_cells(lay: Layout, first_cell: int, last_cell: int, origin: np.ndarray, size: float,
                hits: np.ndarray) -> tuple[int, int]:
    return _band_cells(lay, first_cell, last_cell, origin, size, True, hits)


@inline_kernel
def _band_cells(lay: Layout, first_cell: int, last_cell: int, origin: np.ndarray, size: float,
                cube: bool, hits: np.ndarray) -> tuple[int, int]:
    """:func:`band_cells`: the pairs within bands with their earlier member in cells ``first_cell .. last_cell - 1``.

    A member of cell ``c`` is tested against the members after it in ``c``
    and in the next cell along the last axis (one run of rows), and against
    the three cells along the last axis around ``c`` on each forward
    neighbouring line (:func:`forward_lines`): ``1 + (3**(dim-1) - 1) / 2``
    runs.  Each run is screened by :func:`culling.core.overlap.first_near`
    (no writes); the runs with a hit are noted from the hit on and tested again at the
    end to write their pairs (:func:`_written`), so the screening loop moves
    no array in or out of a call.  A neighbouring
    cell farther from the member than its radius plus the band's largest
    (in floats, with the roundings' bound as margin) is left out of its runs:
    the member's place in its cell, ``u * 2**B + offset - cell``, is compared
    with that reach in cells.

    The runs go to ``hits`` (int64 ``(3, (F + 1) x rows)``, room for every
    run a member can note); returns ``(runs noted, their rows in all)``, for
    :func:`written` to write (:func:`band_cells` returns its
    ``(first, second, unsure_a, unsure_b)``: the handles of the pairs surely
    meeting, ``first < second``, and the rows of ``lay.columns`` of the pairs
    the float filter is unsure of).  O(members x members in their
    neighbouring cells).
    """
    columns, cell_start, band, forward = lay.columns, lay.cell_start, lay.band, lay.forward
    dim = columns.shape[0] - 2
    lead = dim - 1
    neighbours = forward.shape[0]
    hk = 0
    noted = 0
    offsets = np.empty(neighbours, dtype=np.int64)  # the forward lines inside the box, as cell offsets
    needs_low = np.empty(neighbours, dtype=np.int64)  # their lead axes stepped down / up, as bits
    needs_high = np.empty(neighbours, dtype=np.int64)
    corner = np.empty(dim)  # the cell's low corner on the band's level, less the lattice's offset
    q = -1
    line_start, line_end = 0, -1  # the current line's cells (its first, and the first after it)
    length = 1
    runs = 0
    scale = 0.0
    for c in range(first_cell, last_cell):
        s, e = cell_start[c], cell_start[c + 1]
        if s == e:
            continue
        if q < 0 or (q + 1 < band.shape[0] and c >= band[q + 1, FIRST_CELL]):
            q = 0
            while q + 1 < band.shape[0] and band[q + 1, FIRST_CELL] <= c:
                q += 1
            line_end = -1
            scale = lay.scales[q, FACTOR] / size
            length = band[q, LOW + 2 * dim - 1]  # cells along the last axis
        if c >= line_end:  # a new line (a division per line, not per cell): its forward neighbours
            line = (c - band[q, FIRST_CELL]) // length
            line_start = band[q, FIRST_CELL] + line * length
            line_end = line_start + length
            runs = 0
            rest = line
            for axis in range(lead - 1, -1, -1):
                extent = band[q, LOW + dim + axis]
                corner[axis] = float(band[q, LOW + axis] + rest % extent) - lay.scales[q, OFFSET]
                rest //= extent
            for f in range(neighbours):
                rest = line
                offset = 0
                stride = length
                inside = True
                for axis in range(lead - 1, -1, -1):
                    extent = band[q, LOW + dim + axis]
                    at = rest % extent + forward[f, axis]
                    rest //= extent
                    inside &= (at >= 0) & (at < extent)
                    offset += forward[f, axis] * stride
                    stride *= extent
                if inside:
                    offsets[runs] = offset
                    needs_low[runs] = 0
                    needs_high[runs] = 0
                    for axis in range(lead):
                        needs_low[runs] |= (forward[f, axis] < 0) << axis
                        needs_high[runs] |= (forward[f, axis] > 0) << axis
                    runs += 1
        z = c - line_start
        corner[lead] = float(band[q, LOW + lead] + z) - lay.scales[q, OFFSET]
        down, up = min(z, 1), min(length - 1 - z, 1)
        for i in range(s, e):
            reach = reach_up(columns[dim, i], 1.0, lay.scales[q, RADIUS]) * scale  # in cells
            low_near = 0  # bit ``axis``: the member may reach the cell below / above on that axis
            high_near = 0
            for axis in range(dim):
                x, o = columns[axis, i], origin[axis]
                place = (x - o) * scale - corner[axis]  # in [0, 1) but for rounding
                slack = (abs(x) * _ROUNDING + abs(o) * _ROUNDING) * scale + _CELL_SLACK  # scaled first: finite
                low_near |= (place <= reach + slack) << axis
                high_near |= (1.0 - place <= reach + slack) << axis
            lo_z = down if low_near >> lead & 1 else 0
            hi_z = up if high_near >> lead & 1 else 0
            for f in range(-1, runs):  # -1: this cell after the member, and the next along the last axis
                if f < 0:
                    lo, hi = i + 1, cell_start[c + hi_z + 1]
                else:
                    if (needs_low[f] & ~low_near) | (needs_high[f] & ~high_near):
                        continue
                    lo, hi = cell_start[c + offsets[f] - lo_z], cell_start[c + offsets[f] + hi_z + 1]
                lo = first_near(columns, i, lo, hi, cube)
                if lo < hi:
                    hk = _screened(hits, hk, i, lo, hi)
                    noted += hi - lo
    return hk, noted


@inline_kernel
def _pairs_sure(columns: np.ndarray, handles: np.ndarray, i: int, j0: int, j1: int, cube: bool,
                first: np.ndarray, second: np.ndarray, k: int) -> tuple[bool, int]:
    """:func:`culling.core.overlap.rows_sure` writing the pairs' handles (smaller first) to
    ``first[k:]``/``second[k:]`` instead of the partners' rows: one pass from the filter to the
    answer.  Returns ``(all sure, new k)``; not all sure: the writes mean nothing."""
    x, y, z, radius = member(columns, i)
    mine = handles[i]
    doubt = False
    dim = columns.shape[0] - 2
    for j in range(j0, j1):
        inside, near, unsafe = meet_filter(columns, j, x, y, z, radius, cube, dim)
        doubt |= (near > inside) | unsafe  # near and not inside: within rounding of touching
        other = handles[j]
        first[k] = min(mine, other)
        second[k] = max(mine, other)
        k += inside
    return not doubt, k


@kernel
def _written(columns: np.ndarray, handles: np.ndarray, hits: np.ndarray, hk: int, cube: bool, first: np.ndarray,
             second: np.ndarray, k: int) -> tuple[int, np.ndarray, np.ndarray]:
    """The pairs of the noted runs ``hits[:, :hk]``: the handles of the pairs surely meeting (smaller
    first) written to ``first[k:end]``/``second[k:end]`` (room for every row noted from ``k`` on), and
    the rows of the pairs within rounding of touching: returns ``(end, unsure_a, unsure_b)``.

    Each run by :func:`_pairs_sure` (branch-free, the pairs' handles straight into buffers sized
    for every row noted, so the loop never grows an array); the rare runs with a pair within
    rounding of touching again by :func:`culling.core.overlap.partner_rows`, after it, their rows
    made handles there.  (Writing the partners' rows first and the handles in a pass at the end
    cost two more passes over the answer: a heavy tail's million pairs.)
    """
    noted = first.shape[0]
    doubtful = np.empty(hk, dtype=np.int64)  # the runs _pairs_sure was not sure of
    doubts = 0
    for h in range(hk):
        sure, after = _pairs_sure(columns, handles, hits[0, h], hits[1, h], hits[2, h], cube, first, second, k)
        if sure:
            k = after
        else:
            doubtful[doubts] = h
            doubts += 1
    unsure_a = np.empty(0, dtype=np.int64)
    unsure_b = np.empty(0, dtype=np.int64)
    uk = 0
    if doubts:
        rows = np.empty(noted - k, dtype=np.int64)  # the doubtful runs' rows: at most what is left
        for d in range(doubts):
            i, j0, j1 = hits[0, doubtful[d]], hits[1, doubtful[d]], hits[2, doubtful[d]]
            found, unsure_a, unsure_b, uk = partner_rows(columns, i, j0, j1, cube, rows, 0, unsure_a, unsure_b, uk)
            for t in range(found):
                a, b = handles[i], handles[rows[t]]
                first[k] = min(a, b)
                second[k] = max(a, b)
                k += 1
    return k, unsure_a[:uk].copy(), unsure_b[:uk].copy()


def cross_rows(lay: Layout, first_row: int, last_row: int, origin: np.ndarray, size: float, cube: bool) -> Pairs:
    """The pairs of the members in rows ``first_row .. last_row - 1`` with the members of finer bands:
    :func:`_cross_rows`, by a kernel per shape as :func:`band_cells`."""
    return written(lay, [noted_rows(lay, first_row, last_row, origin, size, cube)], cube)


def noted_rows(lay: Layout, first_row: int, last_row: int, origin: np.ndarray, size: float, cube: bool) -> Noted:
    """:func:`cross_rows`' screening only, as :func:`noted_cells`."""
    rows = _cube_rows if cube else _sphere_rows
    return rows(lay, first_row, last_row, origin, size)


@kernel
def _sphere_rows(lay: Layout, first_row: int, last_row: int, origin: np.ndarray,
                 size: float) -> tuple[np.ndarray, int, int]:
    return _cross_rows(lay, first_row, last_row, origin, size, False)


@kernel
def _cube_rows(lay: Layout, first_row: int, last_row: int, origin: np.ndarray,
               size: float) -> tuple[np.ndarray, int, int]:
    return _cross_rows(lay, first_row, last_row, origin, size, True)


@inline_kernel
def _cross_rows(lay: Layout, first_row: int, last_row: int, origin: np.ndarray, size: float,
                cube: bool) -> tuple[np.ndarray, int, int]:
    """:func:`cross_rows`: the pairs of the members in rows ``first_row .. last_row - 1`` with the members of finer bands.

    A member ``(c, r)`` meets a member of band ``q`` only within ``r + R_q``
    (``R_q`` the band's largest radius): the band's buckets whose cells hold
    root-relative coordinates within that reach of ``(c - origin) / size``,
    one run of rows per line of the window, cut to the reach's chord along
    the last axis (a cube's side for cubes).  In floats: the window's lines
    widened by the roundings' bound and one cell each way, the chord by the
    roundings' bound only (:func:`_chord_rounding`; a cell each way there
    added a fifth of the heavy tail's candidates).  Returns the runs noted
    ``(hits, runs, their rows in all)`` for :func:`written`, as :func:`_band_cells`.
    """
    columns, cell_start, band, scales = lay.columns, lay.cell_start, lay.band, lay.scales
    dim = columns.shape[0] - 2
    lead = dim - 1
    hits = np.empty((3, 256), dtype=np.int64)
    hk = 0
    noted = 0
    window_lo = np.empty(dim, dtype=np.int64)
    window_hi = np.empty(dim, dtype=np.int64)
    at = np.empty(dim, dtype=np.int64)
    place = np.empty(dim)  # the member's centre in the band's cells (cell k spans [k, k + 1))
    slack = np.empty(dim)  # a bound on the rounding of ``place``, in cells
    p = 0
    for i in range(first_row, last_row):
        while band[p, END_ROW] <= i:
            p += 1
        for q in range(p + 1, band.shape[0]):
            scale = scales[q, FACTOR] / size
            reach = reach_up(columns[dim, i], 1.0, scales[q, RADIUS]) * scale * _MARGIN  # in cells
            empty = False
            for axis in range(dim):  # the window of cells, in the band's box
                extent = band[q, LOW + dim + axis]
                x, o = columns[axis, i], origin[axis]
                place[axis] = (x - o) * scale - (float(band[q, LOW + axis]) - scales[q, OFFSET])
                slack[axis] = (abs(x) * _ROUNDING + abs(o) * _ROUNDING) * scale + _CELL_SLACK
                t_lo = min(max(place[axis] - reach - slack[axis], -2.0), float(extent) + 1.0)
                t_hi = max(min(place[axis] + reach + slack[axis], float(extent) + 1.0), -2.0)
                window_lo[axis] = max(int(math.floor(t_lo)) - 1, 0)
                window_hi[axis] = min(int(math.floor(t_hi)) + 1, extent - 1)
                empty |= window_lo[axis] > window_hi[axis]
            if empty:
                continue
            wide = reach >= _WIDE  # most of the window meets: no screening, one pass writes the pairs
            for axis in range(lead):
                at[axis] = window_lo[axis]
            while True:
                line = 0
                apart = 0.0  # the distance from the centre to the line, on the lead axes (squared for spheres)
                for axis in range(lead):
                    line = line * band[q, LOW + dim + axis] + at[axis]
                    gap = max(max(float(at[axis]) - place[axis], place[axis] - float(at[axis] + 1)) - slack[axis],
                              0.0)
                    apart = max(apart, gap) if cube else apart + gap * gap
                if cube:
                    half = reach if apart <= reach else -1.0
                else:
                    half = math.sqrt(reach * reach - apart) * _MARGIN if apart <= reach * reach else -1.0
                if half >= 0.0:  # the chord of the reach along the last axis, widened by the roundings only
                    extent = band[q, LOW + 2 * dim - 1]
                    widen = slack[lead] + _chord_rounding(place[lead], half, reach)
                    t_lo = min(max(place[lead] - half - widen, -2.0), float(extent) + 1.0)
                    t_hi = max(min(place[lead] + half + widen, float(extent) + 1.0), -2.0)
                    z_lo = max(int(math.floor(t_lo)), 0)
                    z_hi = min(int(math.floor(t_hi)), extent - 1)
                    cell = band[q, FIRST_CELL] + line * extent
                    s = cell_start[cell + z_lo]
                    e = cell_start[cell + z_hi + 1]
                    if z_lo <= z_hi and not wide:
                        s = first_near(columns, i, s, e, cube)
                    if z_lo <= z_hi and s < e:
                        if hk == hits.shape[1]:
                            bigger = np.empty((3, 2 * hk), dtype=np.int64)
                            for k in range(3):  # loops, not slices: a slice copy pulls in numba's shape-mismatch
                                for j in range(hk):  # message, compiled once per process (issue 37)
                                    bigger[k, j] = hits[k, j]
                            hits = bigger
                        hk = _screened(hits, hk, i, s, e)
                        noted += e - s
                axis = lead - 1  # the next line of the window (an odometer over the lead axes)
                while axis >= 0:
                    at[axis] += 1
                    if at[axis] <= window_hi[axis]:
                        break
                    at[axis] = window_lo[axis]
                    axis -= 1
                if axis < 0:
                    break
    return hits, hk, noted
