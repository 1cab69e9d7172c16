"""Every pair of stored spheres that meet, by bands of levels: a grid per band, its lines swept.

The lattice gives every stored sphere a level whose cells are wider than
twice its radius (``r < W/2``), and the structure's nodes (or the dense
grid's cells) give each member's level and exact cell.  That is all the
join needs:

1. **Bands** (:func:`layout`): the occupied levels, finest first, are grouped
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
2. **Lines**: each band's buckets are a dense box of cells, counted and
   sorted (a counting sort of the members, then an insertion sort of each
   *line* of cells along the last axis by the members' last coordinate:
   nearly sorted already, so O(members)).  Members are copied in that
   order: every line is one contiguous run sorted along the last axis.
3. **Within a band** (:func:`band_lines`): each line is swept against itself
   and the lines after it among its ``3**(dim-1)`` neighbours
   (:func:`forward_lines`: each unordered pair of neighbouring lines once),
   with pointers that keep, for each member, the run of every such line within
   twice the band's largest radius along the last axis.
4. **Across bands** (:func:`cross_rows`): each member of a coarser band is
   tested against the finer bands: the lines of their buckets within its
   radius plus the band's largest radius (a float window widened by one cell
   each way, so rounding never loses one), and in each line the run within
   that reach along the last axis (binary searches).
5. The tests are :func:`culling.core.overlap.pair_range`'s float filter;
   pairs within rounding of touching are settled exactly by the caller
   (:func:`culling.core.containment.decide_pairs`).

Each unordered pair is tested once: within a band by the member of the
earlier line (or, in one line, the earlier member), across bands by the
member of the coarser band.  Pruning is conservative in floats
(:func:`culling.core.overlap.far_apart`), so nothing that meets is lost.
Memory: the copy, the lines' starts (at most :data:`CELLS_PER_MEMBER` cells
per member) and the output.  A world whose crowd sits in a few small
clusters far apart makes a band's grid coarse (:func:`layout` reports it);
the caller then joins the tree with itself instead
(:func:`culling.core.pairs.overlapping_pairs`).
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

from culling.core.jit import inline_kernel, kernel
from culling.core.overlap import far_apart, pair_range, reach_up

__all__ = ["CELLS_PER_MEMBER", "COARSEN_LIMIT", "DENSITY", "Layout", "band_lines", "cross_rows", "forward_lines",
           "layout"]

#: A coarser level joins a band while the band has at most this many members per cell of its
#: box on that level: a member is then tested against about ``13.5 * DENSITY`` others in 3-D.
DENSITY = 4.0

#: A band's grid has at most this many cells per member (plus 64); a sparser band is moved to a
#: coarser bucket level.
CELLS_PER_MEMBER = 8

#: A band moved more than this many levels above its coarsest member's level (its members sit in
#: a few clusters far apart) is reported by :func:`layout`: the tree's own join suits it better.
COARSEN_LIMIT = 2

#: Columns of :attr:`Layout.band`: the bucket level, the band's first and end member rows, its
#: first line (in :attr:`Layout.line_start`) and number of lines; then the box's low cell and its
#: extent per axis (``LOW + axis``, ``LOW + dim + axis``).
LEVEL, FIRST_ROW, END_ROW, FIRST_LINE, LINES, LOW = 0, 1, 2, 3, 4, 5

#: Columns of :attr:`Layout.scales`: the band's largest radius, ``2**B`` and the root-relative
#: offset of cell 0 on ``B`` (the cell of root-relative ``u`` is ``floor(u * 2**B + offset)``).
RADIUS, FACTOR, OFFSET = 0, 1, 2

#: A relative bound on the rounding of the window's ends (three roundings of terms at most
#: ``|x| + reach + |origin|``, then a division, a product and two sums: far below ``2**-48``).
_ROUNDING = 2.0 ** -48


class Layout(NamedTuple):
    """The members grouped by band (coarsest band first), line by line, each line sorted along the last axis.

    ``columns`` (dim + 2, n) and ``handles`` (n,): the copied members.
    ``line_start`` int64 (lines + 1,): line ``g``'s members are rows
    ``line_start[g] .. line_start[g + 1] - 1``; a band's lines are
    consecutive.  ``band`` int64 (bands, LOW + 2 dim) and ``scales`` float64
    (bands, 3): see :data:`LEVEL`, :data:`RADIUS`.  ``forward`` int64
    (F, dim - 1): the offsets of the neighbouring lines after a line
    (:func:`forward_lines`).  ``ok``: False when a band had to be moved more
    than :data:`COARSEN_LIMIT` levels up (the rest is then empty).
    """

    columns: np.ndarray
    handles: np.ndarray
    line_start: np.ndarray
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
            out[k] = digits
            k += 1
    return out


@inline_kernel
def _cells_of(low: np.ndarray, high: np.ndarray, limit: float) -> float:
    """The number of cells of the box ``low .. high`` (inclusive), as a float (``limit + 1`` once it passes ``limit``)."""
    cells = 1.0
    for axis in range(low.shape[0]):
        cells *= float(high[axis] - low[axis] + 1)
        if cells > limit:
            return limit + 1.0
    return cells


@kernel
def layout(run_start: np.ndarray, run_count: np.ndarray, run_level: np.ndarray, run_cells: np.ndarray,
           handles: np.ndarray, columns: np.ndarray, objects: int, anchor: float) -> Layout:
    """The :class:`Layout` of the members of runs ``run_start[k] .. + run_count[k]`` (pool rows of
    ``handles``/``columns``; runs with ``run_count <= 0`` are skipped), each run's members of level
    ``run_level[k]`` in cell ``run_cells[:, k]``; ``objects`` members in all.

    The cell of root-relative ``u`` on level ``L`` is ``floor(u * 2**L + anchor * 2**L)``
    (``anchor``: the tree's ``ANCHOR``, 0 for the dense grid).  O(runs + members + cells).
    """
    dim = run_cells.shape[0]
    lead = dim - 1
    runs = run_start.shape[0]
    low_level, high_level = 1 << 30, -(1 << 30)
    for r in range(runs):
        if run_count[r] > 0:
            low_level = min(low_level, run_level[r])
            high_level = max(high_level, run_level[r])
    slots = max(high_level - low_level + 1, 1)
    members = np.zeros(slots, dtype=np.int64)
    low = np.full((slots, dim), 1 << 62, dtype=np.int64)
    high = np.full((slots, dim), -(1 << 62), dtype=np.int64)
    for r in range(runs):
        if run_count[r] > 0:
            s = run_level[r] - low_level
            members[s] += run_count[r]
            for axis in range(dim):
                low[s, axis] = min(low[s, axis], run_cells[axis, r])
                high[s, axis] = max(high[s, axis], run_cells[axis, r])
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
                band_low[p] = joined_low
                band_high[p] = joined_high
                band_of_slot[s] = p
                continue
        band_level[bands] = level
        band_own[bands] = level
        band_members[bands] = members[s]
        band_low[bands] = low[s]
        band_high[bands] = high[s]
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
    forward = forward_lines(lead)
    if not ok:
        return Layout(columns[:, :0].copy(), handles[:0].copy(), np.zeros(1, dtype=np.int64),
                      np.zeros((0, LOW + 2 * dim), dtype=np.int64), np.zeros((0, 3)), forward, False)
    # Bands in rows coarsest first: band p of the finest-first numbering is band bands - 1 - p.
    band = np.empty((bands, LOW + 2 * dim), dtype=np.int64)
    scales = np.zeros((bands, 3))
    cell_first = np.empty(bands + 1, dtype=np.int64)
    row, line, cell = 0, 0, 0
    for q in range(bands):
        p = bands - 1 - q
        band[q, LEVEL] = band_level[p]
        band[q, FIRST_ROW] = row
        band[q, FIRST_LINE] = line
        lines = 1
        for axis in range(dim):
            band[q, LOW + axis] = band_low[p, axis]
            band[q, LOW + dim + axis] = band_high[p, axis] - band_low[p, axis] + 1
            if axis < lead:
                lines *= band[q, LOW + dim + axis]
        band[q, LINES] = lines
        cell_first[q] = cell
        factor = math.ldexp(1.0, band_level[p])
        scales[q, FACTOR] = factor
        scales[q, OFFSET] = anchor * factor
        row += band_members[p]
        band[q, END_ROW] = row
        line += lines
        cell += lines * band[q, LOW + 2 * dim - 1]
    cell_first[bands] = cell
    # Counting sort of the runs by cell, band by band.
    fill = np.zeros(cell + 1, dtype=np.int64)
    run_cell = np.empty(runs, dtype=np.int64)
    for r in range(runs):
        if run_count[r] <= 0:
            run_cell[r] = -1
            continue
        q = bands - 1 - band_of_slot[run_level[r] - low_level]
        shift = run_level[r] - band[q, LEVEL]
        at = 0
        for axis in range(dim):
            at = at * band[q, LOW + dim + axis] + ((run_cells[axis, r] >> shift) - band[q, LOW + axis])
        at += cell_first[q]
        run_cell[r] = at
        fill[at + 1] += run_count[r]
        if columns.shape[1] > 0:
            for i in range(run_start[r], run_start[r] + run_count[r]):
                scales[q, RADIUS] = max(scales[q, RADIUS], columns[dim, i])
    for c in range(cell):
        fill[c + 1] += fill[c]
    line_start = np.empty(line + 1, dtype=np.int64)
    g = 0
    for q in range(bands):
        cells_per_line = band[q, LOW + 2 * dim - 1]
        for k in range(band[q, LINES]):
            line_start[g] = fill[cell_first[q] + k * cells_per_line]
            g += 1
    line_start[line] = row
    order = np.empty(row, dtype=np.int64)
    key = np.empty(row)
    for r in range(runs):
        at = run_cell[r]
        if at < 0:
            continue
        to = fill[at]
        for i in range(run_start[r], run_start[r] + run_count[r]):
            order[to] = i
            key[to] = columns[lead, i]
            to += 1
        fill[at] = to
    for g in range(line):  # insertion sort of each line along the last axis (sorted by cell already)
        for i in range(line_start[g] + 1, line_start[g + 1]):
            z = key[i]
            o = order[i]
            j = i - 1
            while j >= line_start[g] and key[j] > z:
                key[j + 1] = key[j]
                order[j + 1] = order[j]
                j -= 1
            key[j + 1] = z
            order[j + 1] = o
    out_columns = np.empty((dim + 2, row))
    out_handles = np.empty(row, dtype=np.int64)
    for axis in range(dim + 2):
        for i in range(row):
            out_columns[axis, i] = columns[axis, order[i]]
    for i in range(row):
        out_handles[i] = handles[order[i]]
    return Layout(out_columns, out_handles, line_start, band, scales, forward, True)


@inline_kernel
def _band_of_line(band: np.ndarray, line: int) -> int:
    q = 0
    while q + 1 < band.shape[0] and band[q + 1, FIRST_LINE] <= line:
        q += 1
    return q


@kernel
def band_lines(lay: Layout, first_line: int, last_line: int,
               cube: bool) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The pairs within bands with their earlier member in lines ``first_line .. last_line - 1``.

    Returns ``(first, second, unsure_a, unsure_b)``: the handles of the pairs
    surely meeting (``first < second``) and the rows (of ``lay.columns``) of
    the pairs the float filter is unsure of.  O(members of the lines x
    members within reach in their neighbouring lines).
    """
    columns, handles, line_start, band, forward = lay.columns, lay.handles, lay.line_start, lay.band, lay.forward
    dim = columns.shape[0] - 2
    lead = dim - 1
    neighbours = forward.shape[0]
    first = np.empty(64, dtype=np.int64)
    second = np.empty(64, dtype=np.int64)
    unsure_a = np.empty(0, dtype=np.int64)
    unsure_b = np.empty(0, dtype=np.int64)
    k = 0
    uk = 0
    coords = np.empty(max(lead, 1), dtype=np.int64)
    lo = np.empty(neighbours, dtype=np.int64)
    hi = np.empty(neighbours, dtype=np.int64)
    end = np.empty(neighbours, dtype=np.int64)
    q = _band_of_line(band, first_line)
    for g in range(first_line, last_line):
        s, e = line_start[g], line_start[g + 1]
        if s == e:
            continue
        while q + 1 < band.shape[0] and band[q + 1, FIRST_LINE] <= g:
            q += 1
        reach = reach_up(lay.scales[q, RADIUS], 1.0, lay.scales[q, RADIUS])
        local = g - band[q, FIRST_LINE]
        rest = local
        for axis in range(lead - 1, -1, -1):
            extent = band[q, LOW + dim + axis]
            coords[axis] = rest % extent
            rest //= extent
        for f in range(neighbours):  # the forward neighbouring lines inside the band's box
            other = 0
            inside = True
            for axis in range(lead):
                c = coords[axis] + forward[f, axis]
                extent = band[q, LOW + dim + axis]
                inside &= (c >= 0) & (c < extent)
                other = other * extent + c
            if inside:
                lo[f] = line_start[band[q, FIRST_LINE] + other]
                end[f] = line_start[band[q, FIRST_LINE] + other + 1]
            else:
                lo[f] = 0
                end[f] = 0
            hi[f] = lo[f]
        same = s
        for i in range(s, e):
            z = columns[lead, i]
            same = max(same, i + 1)
            while same < e and not far_apart(z, columns[lead, same], reach):
                same += 1
            first, second, k, unsure_a, unsure_b, uk = pair_range(columns, handles, i, i + 1, same, cube, first,
                                                                  second, k, unsure_a, unsure_b, uk)
            for f in range(neighbours):
                while lo[f] < end[f] and far_apart(columns[lead, lo[f]], z, reach):
                    lo[f] += 1
                hi[f] = max(hi[f], lo[f])
                while hi[f] < end[f] and not far_apart(z, columns[lead, hi[f]], reach):
                    hi[f] += 1
                first, second, k, unsure_a, unsure_b, uk = pair_range(columns, handles, i, lo[f], hi[f], cube,
                                                                      first, second, k, unsure_a, unsure_b, uk)
    return first[:k].copy(), second[:k].copy(), unsure_a[:uk].copy(), unsure_b[:uk].copy()


@inline_kernel
def _first_near(columns: np.ndarray, axis: int, s: int, e: int, z: float, reach: float) -> int:
    """The first row of ``s .. e - 1`` (sorted along ``axis``) not surely more than ``reach`` below ``z``."""
    while s < e:
        mid = (s + e) >> 1
        if far_apart(columns[axis, mid], z, reach):
            s = mid + 1
        else:
            e = mid
    return s


@inline_kernel
def _first_far(columns: np.ndarray, axis: int, s: int, e: int, z: float, reach: float) -> int:
    """The first row of ``s .. e - 1`` (sorted along ``axis``) surely more than ``reach`` above ``z``."""
    while s < e:
        mid = (s + e) >> 1
        if far_apart(z, columns[axis, mid], reach):
            e = mid
        else:
            s = mid + 1
    return s


@kernel
def cross_rows(lay: Layout, first_row: int, last_row: int, origin: np.ndarray, size: float,
               cube: bool) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The pairs of the members in rows ``first_row .. last_row - 1`` with the members of finer bands.

    A member ``(c, r)`` meets a member of band ``q`` only within ``r + R_q``
    (``R_q`` the band's largest radius) on every axis: the lines of the
    buckets within that reach of ``c`` (the cells of root-relative ``(c -
    origin) / size``, widened by one each way for rounding), and on each line
    the run within that reach along the last axis.  Returns as
    :func:`band_lines`.
    """
    columns, handles, line_start, band, scales = lay.columns, lay.handles, lay.line_start, lay.band, lay.scales
    dim = columns.shape[0] - 2
    lead = dim - 1
    first = np.empty(64, dtype=np.int64)
    second = np.empty(64, dtype=np.int64)
    unsure_a = np.empty(0, dtype=np.int64)
    unsure_b = np.empty(0, dtype=np.int64)
    k = 0
    uk = 0
    window_lo = np.empty(max(lead, 1), dtype=np.int64)
    window_hi = np.empty(max(lead, 1), dtype=np.int64)
    at = np.empty(max(lead, 1), dtype=np.int64)
    p = 0
    for i in range(first_row, last_row):
        while band[p, END_ROW] <= i:
            p += 1
        z = columns[lead, i]
        for q in range(p + 1, band.shape[0]):
            reach = reach_up(columns[dim, i], 1.0, scales[q, RADIUS])
            empty = False
            for axis in range(lead):  # the window of lines, in the band's box
                extent = band[q, LOW + dim + axis]
                base = float(band[q, LOW + axis])
                x, o = columns[axis, i], origin[axis]
                t_lo = ((x - reach) - o) / size * scales[q, FACTOR] + scales[q, OFFSET] - base
                t_hi = ((x + reach) - o) / size * scales[q, FACTOR] + scales[q, OFFSET] - base
                # The roundings above, in cells: a few ulps of |x| + reach + |o|, scaled like u (one cell at least).
                slack = min((abs(x) + reach + abs(o)) * _ROUNDING / size * scales[q, FACTOR], float(extent))
                t_lo = min(max(t_lo - slack, -2.0), float(extent) + 1.0)
                t_hi = max(min(t_hi + slack, float(extent) + 1.0), -2.0)
                window_lo[axis] = max(int(math.floor(t_lo)) - 1, 0)
                window_hi[axis] = min(int(math.floor(t_hi)) + 1, extent - 1)
                empty |= window_lo[axis] > window_hi[axis]
            if empty:
                continue
            for axis in range(lead):
                at[axis] = window_lo[axis]
            while True:
                line = 0
                for axis in range(lead):
                    line = line * band[q, LOW + dim + axis] + at[axis]
                g = band[q, FIRST_LINE] + line
                s = _first_near(columns, lead, line_start[g], line_start[g + 1], z, reach)
                e = _first_far(columns, lead, s, line_start[g + 1], z, reach)
                first, second, k, unsure_a, unsure_b, uk = pair_range(columns, handles, i, s, e, cube, first,
                                                                      second, k, unsure_a, unsure_b, uk)
                axis = lead - 1  # the next line of the window (an odometer over the lead axes)
                while axis >= 0:
                    at[axis] += 1
                    if at[axis] <= window_hi[axis]:
                        break
                    at[axis] = window_lo[axis]
                    axis -= 1
                if axis < 0:
                    break
    return first[:k].copy(), second[:k].copy(), unsure_a[:uk].copy(), unsure_b[:uk].copy()
