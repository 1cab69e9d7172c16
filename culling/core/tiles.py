"""Tile summaries: a box around the centres, and the largest radius, of every 64 pool rows.

A node at a coarse level holds thousands of members spread over a cell as
wide as the world's quarter, while the point sees only those within their
radius (below half the cell's edge).  The query must visit the node, but it
need not read every member: a node's members are laid out spatially sorted
(:func:`culling.tree.batch.spatial_order`), so each tile of
``TILE_ROWS`` consecutive pool rows covers a small part of the node, and a
tile whose box is farther from the point, along some axis, than its largest
radius can hold no answer.  The query then tests the remaining tiles only
(:func:`flag_tiles`): on the benchmark's forest less than half the
members a node-by-node test reads.

The summaries are conservative: every write of a row's centre or radius
grows its tile's box and radius (:func:`cover`).  Growing
alone, a summary would keep every place its rows ever held (members moving,
leaving, blocks released and reused by nodes elsewhere), and the member test
would slowly test more rows; so the tree re-summarises a few tiles from their
live rows after each batch of moves, round robin (:func:`refresh`), and a
compaction recomputes them all (:func:`summarise`).  A stale summary only
costs a test, never an answer; a re-summarised one is exactly the box of its
live rows rounded outward to float32, never smaller.

Why skipping is exact: a member with centre ``c`` and radius ``r <= R``
(the tile's) that contains ``p`` has ``|p[a] - c[a]| <= r * s`` on every
axis (for spheres and cubes, whether the limit is ``r * s`` or its rounding),
and ``low[a] <= c[a] <= high[a]``; rounding to nearest is monotone, so
``fl(p[a] - high[a]) <= fl(R * s)`` and ``fl(low[a] - p[a]) <= fl(R * s)``.
A tile failing either on some axis holds no member containing ``p``.

The summaries are float32, rounded outward (:func:`down32`, :func:`up32`):
the low corner at or below every centre, the high corner and the radius at
or above, so the stored box holds the real one and the stored radius is at
least ``R``; the argument above then holds for the stored summary as it is
(float32 values are float64 values, and the test computes in float64).
Half the bytes of float64 ones: 0.44 bytes a row in 3-D.

For spheres the box is also tested as a whole: a member containing ``p``
has ``|p - c| <= r * s``, and the real distance from ``p`` to the box (the
gaps ``max(low[a] - p[a], p[a] - high[a], 0)`` squared and summed) is at
most ``|p - c|``.  The float gaps, squares and sums are each within a
relative 2**-53 of the real ones (a gap's difference rounds to nearest, and
no square below :data:`SAFE_SQUARE` is relied on), so a computed squared gap
above the computed squared reach times :data:`NEAR_MARGIN` means a real one
above ``(R * s)**2``: no member of that tile contains ``p``.  On the
benchmark's forest at 1M, a tenth fewer rows to test.
"""

from __future__ import annotations

import math

import numpy as np

import culling.core.growth as growth
from culling.runtime.jit import inline_kernel, kernel

__all__ = ["TILE_ROWS", "TILE_SHIFT", "cover", "cover_row", "down32", "empty_summaries", "flag_tiles",
           "near_range", "refresh", "summarise", "tiles_for", "up32"]

#: log2 of the rows per tile.  Smaller tiles test fewer rows (on the benchmark's forest at 1M,
#: 15,374 rows at 16 a tile, 17,834 at 32, 20,636 at 64; 3,118, 1,566 and 790 tiles) but cut the
#: near rows into more, shorter ranges, each a flag pass and a write of its own: side by side in one
#: process (CPU time, three rounds) the forest's query took 40.6, 39.7, 42.8 us at 16 rows, 35.7,
#: 35.2, 36.3 at 32 and 35.3, 34.3, 35.6 at 64 (the scaling world's within 0.1 us), so 64.
TILE_SHIFT = 6
#: A sphere's tile is far when the squared distance from the point to its box, computed in floats,
#: exceeds the squared reach times this: each of the at most eight roundings between the real
#: quantities and the two computed ones (three gaps, their squares and sums, the reach and its
#: square) errs by 2**-53 at most, so the computed ratio is within 2**-49 of the real one.
NEAR_MARGIN = 1.0 + 2.0 ** -40

#: Squared reaches below this skip the Euclidean test (the L-infinity one still runs): a square that
#: underflows errs by more than a relative 2**-53.
SAFE_SQUARE = 2.0 ** -960

#: Rows per tile: small enough to cut a big node finely, large enough that a
#: tile's test (a few comparisons) is cheap next to testing its rows.
TILE_ROWS = 1 << TILE_SHIFT


def tiles_for(rows: int) -> int:
    """How many tiles ``rows`` pool rows span."""
    return (rows + TILE_ROWS - 1) >> TILE_SHIFT


def empty_summaries(dim: int, tiles: int) -> np.ndarray:
    """Summaries of ``tiles`` empty tiles: float32 ``(2 * dim + 1, tiles)``.

    Tile ``t``'s column is its box's low corner, its high corner and its
    largest radius (28 bytes in 3-D), each rounded outward; column-major, so
    that :func:`flag_tiles` tests consecutive tiles several at a time (0.6
    ns a tile in 3-D, against 4 to 6.6 ns with a tile's summary in a row).
    An empty tile's box is inverted (``low = inf``, ``high = -inf``), so it
    is far from every point.
    """
    box = growth.allocate((2 * dim + 1, tiles), np.float32, math.inf)
    box[dim:] = -math.inf
    return box


@inline_kernel
def down32(x: float) -> float:
    """The largest float32 at or below ``x`` (a float64), as a float64.

    >>> down32(0.1) <= 0.1 < up32(0.1), down32(3.0) == up32(3.0) == 3.0
    (True, True)
    """
    f = np.float32(x)
    if f > x:
        f = np.nextafter(f, np.float32(-math.inf))
    return float(f)


@inline_kernel
def up32(x: float) -> float:
    """The smallest float32 at or above ``x`` (a float64), as a float64 (``inf`` above float32's range)."""
    f = np.float32(x)
    if f < x:
        f = np.nextafter(f, np.float32(math.inf))
    return float(f)


@inline_kernel
def cover_row(columns: np.ndarray, row: int, box: np.ndarray) -> None:
    """Grow the summary of the tile holding pool row ``row`` to include it, rounded outward
    (inlined into per-object loops)."""
    dim = (box.shape[0] - 1) // 2
    tile = row >> TILE_SHIFT
    for axis in range(dim):
        x = columns[axis, row]
        if x < box[axis, tile]:
            box[axis, tile] = down32(x)
        if x > box[dim + axis, tile]:
            box[dim + axis, tile] = up32(x)
    if columns[dim, row] > box[2 * dim, tile]:
        box[2 * dim, tile] = up32(columns[dim, row])


@kernel
def cover(columns: np.ndarray, first: int, last: int, box: np.ndarray) -> None:
    """Grow the summaries of the tiles holding pool rows ``first .. last - 1`` to include them.  O(rows)."""
    for row in range(first, last):
        cover_row(columns, row, box)


@kernel
def summarise(columns: np.ndarray, starts: np.ndarray, counts: np.ndarray, box: np.ndarray) -> None:
    """Recompute every summary from the live runs ``starts[i] .. starts[i] + counts[i] - 1``.  O(rows + tiles)."""
    dim = (box.shape[0] - 1) // 2
    box[:dim] = math.inf
    box[dim:] = -math.inf
    for i in range(starts.shape[0]):
        cover(columns, starts[i], starts[i] + counts[i], box)


@kernel
def refresh(handles: np.ndarray, columns: np.ndarray, top: int, tile: int, count: int, box: np.ndarray) -> int:
    """Recompute the summaries of ``count`` tiles from their live rows (handle ``>= 0``), from tile
    ``tile`` on, wrapping round the tiles of rows ``0 .. top - 1``; returns the tile to start from
    next time.  Each summary becomes the box of its live rows and their largest radius (an empty
    tile's is inverted, as :func:`empty_summaries`): what :func:`summarise` gives, and never smaller
    than the rows need.  A column at a time over the tile's rows, a free row's stale value replaced
    by the empty summary's (no branch): 25% faster than row by row, and bound by the reads
    (the handles and ``dim + 1`` columns, about 5 ns a row in 3-D).  O(count * TILE_ROWS).
    """
    dim = (box.shape[0] - 1) // 2
    used = (top + TILE_ROWS - 1) >> TILE_SHIFT
    if used == 0:
        return 0
    tile %= used
    for _ in range(min(count, used)):
        first, end = tile << TILE_SHIFT, min(top, (tile + 1) << TILE_SHIFT)
        for column in range(dim + 1):  # the centre's axes, then the radius
            low, high = math.inf, -math.inf
            for row in range(first, end):
                live = handles[row] >= 0
                low = min(low, columns[column, row] if live else math.inf)
                high = max(high, columns[column, row] if live else -math.inf)
            if column < dim:
                box[column, tile] = down32(low)
                box[dim + column, tile] = up32(high)
            else:
                box[2 * dim, tile] = up32(high)
        tile += 1
        if tile == used:
            tile = 0
    return tile


@inline_kernel
def flag_tiles(first: int, last: int, p: np.ndarray, scale: float, box: np.ndarray, sphere: bool,
               near: np.ndarray) -> int:
    """Flag the tiles of the run ``first .. last - 1`` (``first < last``) near ``p``: ``near[i]`` for
    tile ``(first >> TILE_SHIFT) + i``, 1 near and 0 far; returns how many tiles the run spans.
    Without summaries (``box`` empty: the dense grid) the whole run is one near "tile" (:func:`near_range`).

    A tile is far when ``p`` lies farther from its box than its largest
    radius (times ``scale``) along some axis, or, for spheres (``sphere``),
    farther in Euclidean distance (:data:`NEAR_MARGIN`); the module
    docstring says why no far tile holds an answer.

    One pass over the run's tiles without a branch, each tile's test independent of the last (a
    range-by-range search stopping at each range's end was slower); in 3-D written out, so that over the
    column-major summaries it runs several tiles per instruction (0.6 ns a tile, measured on 100k
    tiles; 4 ns with the summaries a tile a row, 6.6 ns with a loop over the axes).  Its callers
    then read the ranges of near tiles from ``near``.  ``near`` needs ``tiles_for(last - first) + 1``
    bytes.  O(tiles).
    """
    if box.shape[1] == 0:
        near[0] = 1
        return 1
    dim = p.shape[0]
    t0 = first >> TILE_SHIFT
    n = ((last - 1) >> TILE_SHIFT) - t0 + 1
    if dim == 3:  # written out: one loop over the tiles the compiler runs several tiles at a time
        p0, p1, p2 = p[0], p[1], p[2]
        base = np.uint64(t0)  # unsigned indices: no check for a negative one (flag_rows says why)
        for i in range(np.uint64(n)):
            tile = base + i
            reach = box[6, tile] * scale
            a0, b0 = p0 - box[3, tile], box[0, tile] - p0
            a1, b1 = p1 - box[4, tile], box[1, tile] - p1
            a2, b2 = p2 - box[5, tile], box[2, tile] - p2
            far = (a0 > reach) | (b0 > reach) | (a1 > reach) | (b1 > reach) | (a2 > reach) | (b2 > reach)
            s0, s1, s2 = max(a0, b0, 0.0), max(a1, b1, 0.0), max(a2, b2, 0.0)
            bound = reach * reach
            far |= sphere & (bound >= SAFE_SQUARE) & (s0 * s0 + s1 * s1 + s2 * s2 > bound * NEAR_MARGIN)
            near[i] = not far
        return n
    for i in range(n):
        t = t0 + i
        reach = box[2 * dim, t] * scale
        far = False
        gap = 0.0
        for axis in range(dim):
            above = p[axis] - box[dim + axis, t]
            below = box[axis, t] - p[axis]
            far |= (above > reach) | (below > reach)
            side = max(above, below, 0.0)
            gap += side * side
        bound = reach * reach
        far |= sphere & (bound >= SAFE_SQUARE) & (gap > bound * NEAR_MARGIN)
        near[i] = not far
    return n


@inline_kernel
def near_range(first: int, last: int, i: int, j: int, box: np.ndarray) -> tuple[int, int]:
    """The rows of the run ``first .. last - 1`` in its tiles ``i .. j - 1`` (:func:`flag_tiles`'s
    numbering; the whole run without summaries)."""
    if box.shape[1] == 0:
        return first, last
    t0 = first >> TILE_SHIFT
    return max(first, (t0 + i) << TILE_SHIFT), min(last, (t0 + j) << TILE_SHIFT)
