"""The arithmetic of a fixed stack of dense grids: levels, cells and query windows.

Level ``L`` of a world ``[origin, origin + size)`` per axis is a grid of
``2**L`` cells per axis of edge ``W = size / 2**L``; cell ``k`` (per axis)
spans ``[origin + k*W, origin + (k+1)*W)``, both ends computed in float64
exactly as written, and every test here compares against those floats.  Cells
of all levels are numbered by one global id: the level's offset
(``sum_{l<L} 2**(l*dim)``) plus the row-major index in the level.

A sphere's level follows from its radius (cells of level ``L`` hold radii in
``[W/4, W/2)``, the finest level everything smaller) and its cell from its
centre.  A query point's *window* on a level is the cells whose box grown by
``scale * W / 2`` contains it: at most ``ceil(1 + scale)`` per axis.  Nothing
here holds objects; :class:`~culling.dense.DenseViewDistanceGrid` does.

>>> geo = GridGeometry(size=8.0, origin=np.zeros(2), finest_level=2)
>>> geo.home([5.0, 1.0], 0.3)           # W = 2 on level 2: cell (2, 0)
(2, 13)
>>> geo.window_one([3.9, 0.5], 1.0, 2)[2]   # per axis: first cell and last cell
[(1, 2), (0, 0)]
"""

from __future__ import annotations

import bisect
import math

import numpy as np

from culling.lattice import half_reach, round_down_add_many, round_down_sub_many

__all__ = ["GridGeometry"]


class GridGeometry:
    """Levels ``0 .. finest_level`` of a fixed world; all methods are pure.

    Parameters
    ----------
    size : float, the world's edge (the level-0 cell)
    origin : ndarray, shape (dim,), float64, the world's low corner
    finest_level : int, the last level
    """

    def __init__(self, size: float, origin: np.ndarray, finest_level: int):
        self.size = size
        self.origin = origin
        self.dim = origin.shape[0]
        self.finest_level = finest_level
        with np.errstate(over="ignore"):
            self.hi = origin + size
        levels = np.arange(finest_level + 1)
        #: edge of a cell on each level, exact: size * 2**-L; float64 (levels,)
        self.cell_size = np.ldexp(size, -levels)
        #: first global id of each level, and the total number of cells last; int64 (levels + 1,)
        self.offsets = np.concatenate([[0], np.cumsum(np.left_shift(np.int64(1), levels * self.dim))])
        # W_L/4 for L = F-1 .. 0, ascending: a radius's level is F - #(thresholds <= r).
        self._thresholds = np.ldexp(size, -(levels[:-1][::-1] + 2))
        self._thresholds_list = self._thresholds.tolist()
        self._origin_list: list[float] = origin.tolist()
        self._hi_list: list[float] = self.hi.tolist()
        self._unit_halves = [half_reach(size, level, 1.0) for level in range(finest_level + 1)]
        self._w_list: list[float] = self.cell_size.tolist()
        self._offsets_list: list[int] = self.offsets.tolist()

    @property
    def cell_count(self) -> int:
        """Cells over all levels."""
        return self._offsets_list[-1]

    # ------------------------------------------------------------------
    # Placement

    def home(self, point: list[float], radius: float) -> tuple[int, int]:
        """Level and global cell id of one sphere (centre inside the world, radius < size/2).

        Python floats through the same IEEE operations as :meth:`homes`.
        """
        level = self.finest_level - bisect.bisect_right(self._thresholds_list, radius)
        w = self._w_list[level]
        scale = 2.0 ** level
        top = (1 << level) - 1
        size = self.size
        cell = 0
        for c, o in zip(point, self._origin_list):
            k = min(max(math.floor((c - o) / size * scale), 0), top)
            if c < o + k * w:
                k -= 1
            elif c >= o + (k + 1) * w:
                k += 1
            cell = (cell << level) | min(max(k, 0), top)
        return level, self._offsets_list[level] + cell

    def levels_of(self, radii: np.ndarray) -> np.ndarray:
        """Level of each radius (int64 (n,)): the one whose cells hold it in ``[W/4, W/2)``."""
        return self.finest_level - np.searchsorted(self._thresholds, radii, side="right").astype(np.int64)

    def homes(self, centres: np.ndarray, radii: np.ndarray,
              levels: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
        """Levels and global cell ids (int64 (n,) each) of many spheres; O(n).

        ``levels``, when given, are :meth:`levels_of` the radii, already
        known.  Axis by axis on 1-D arrays (an inner axis of length ``dim``
        would make NumPy loop per object); the same IEEE operations as :meth:`home`.
        """
        if levels is None:
            levels = self.levels_of(radii)
        w = self.cell_size[levels]
        factor = np.ldexp(1.0, levels)
        top = factor - 1.0
        cells = np.zeros(levels.shape[0], dtype=np.int64)
        for axis in range(self.dim):
            c, o = centres[:, axis], self._origin_list[axis]
            with np.errstate(under="ignore"):
                k = (c - o) / self.size
            k *= factor
            np.floor(k, out=k)
            np.clip(k, 0.0, top, out=k)
            # One cell of correction either way, so that origin + k*W <= c < origin + (k+1)*W holds
            # for the floats the queries and the trace compare against.
            below = c < o + k * w
            above = c >= o + (k + 1.0) * w
            k -= below
            k += above
            np.clip(k, 0.0, top, out=k)
            np.left_shift(cells, levels, out=cells)
            cells |= k.astype(np.int64)
        return levels, self.offsets[levels] + cells

    def coords(self, cells: np.ndarray, levels: np.ndarray) -> np.ndarray:
        """Per-axis coordinates (int64 (n, dim)) of global cell ids on their levels."""
        flat = cells - self.offsets[levels]
        mask = np.left_shift(np.int64(1), levels) - 1
        out = np.empty((flat.shape[0], self.dim), dtype=np.int64)
        for axis in range(self.dim):
            out[:, axis] = np.right_shift(flat, levels * (self.dim - 1 - axis)) & mask
        return out

    def bounds(self, level: int, coords: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``(lo, hi)`` corners, float64 (k, dim), of cells with per-axis ``coords`` on ``level``."""
        w = self._w_list[level]
        k = coords.astype(np.float64)
        return self.origin + k * w, self.origin + (k + 1.0) * w

    # ------------------------------------------------------------------
    # Query windows

    def axis_cell(self, q: float, axis: int, level: int) -> int:
        """Cell of coordinate ``q`` on one axis and level, as :meth:`home` places centres.

        Extended outside the world (``-1`` below it, ``2**level`` at or above
        its end), so it is a monotone (non-decreasing) function of ``q`` over
        all floats, infinities included; query windows rely on that.
        """
        o = self._origin_list[axis]
        if q < o:
            return -1
        if q >= self._hi_list[axis]:
            return 1 << level
        w = self._w_list[level]
        top = (1 << level) - 1
        k = min(max(math.floor((q - o) / self.size * math.ldexp(1.0, level)), 0), top)
        if q < o + k * w:
            k -= 1
        elif q >= o + (k + 1) * w:
            k += 1
        return min(max(k, 0), top)

    def window_one(self, point: list[float], scale: float, deepest: int) -> list[list[tuple[int, int]]]:
        """The visited cells of one point: per level ``[(first, last)]`` per axis.

        Levels ``0 .. deepest``, stopping before the first level with no
        visited cell (finer levels have none either); level 0 is always its
        one cell.  A sphere on level ``L`` has ``radius < W/2`` exactly, so
        a containing centre ``c`` lies in ``(p - h, p + h)``, ``h`` >=
        ``scale * W / 2`` (:func:`~culling.lattice.half_reach`); with
        ``q_lo``, ``q_hi`` the largest floats at or below ``p - h`` and
        ``p + h`` (directed rounding by TwoSum) and the monotone
        :meth:`axis_cell`, every cell from ``axis_cell(q_lo)`` to
        ``axis_cell(q_hi)`` is visited: never a cell that truly holds a
        containing sphere is skipped, and where the coordinates are exact this
        is the rule ``lo - h <= p < hi + h``.  The same IEEE operations as
        :meth:`windows`, in Python floats: O(levels x dim), no NumPy call.
        """
        result = [[(0, 0)] * self.dim]
        inf, nextafter, floor = math.inf, math.nextafter, math.floor
        size = self.size
        halves = self._unit_halves if scale == 1.0 else [half_reach(size, level, scale)
                                                          for level in range(self.finest_level + 1)]
        bounds = list(zip(point, self._origin_list, self._hi_list))
        for level in range(1, deepest + 1):
            h = halves[level]
            w = self._w_list[level]
            factor = 2.0 ** level
            top = (1 << level) - 1
            axes = []
            for p, o, hi in bounds:
                # q_lo, q_hi: round_down_sub(p, h), round_down_add(p, h), inlined (hot path)
                q_lo = p - h
                if q_lo != -inf and h != inf:
                    bb = q_lo - p
                    if (p - (q_lo - bb)) + (-h - bb) < 0:
                        q_lo = nextafter(q_lo, -inf)
                else:
                    q_lo = -inf
                q_hi = p + h
                if q_hi != inf and h != inf:
                    bb = q_hi - p
                    if (p - (q_hi - bb)) + (h - bb) < 0:
                        q_hi = nextafter(q_hi, -inf)
                else:
                    q_hi = inf
                if q_hi < o or q_lo >= hi:
                    return result
                # axis_cell(q_lo) clamped to 0 and axis_cell(q_hi) clamped to top, inlined
                if q_lo < o:
                    low = 0
                else:
                    low = min(max(floor((q_lo - o) / size * factor), 0), top)
                    if q_lo < o + low * w:
                        low -= 1
                    elif q_lo >= o + (low + 1) * w:
                        low += 1
                    low = min(max(low, 0), top)
                if q_hi >= hi:
                    high = top
                else:
                    high = min(max(floor((q_hi - o) / size * factor), 0), top)
                    if q_hi < o + high * w:
                        high -= 1
                    elif q_hi >= o + (high + 1) * w:
                        high += 1
                    high = min(max(high, 0), top)
                axes.append((low, high))
            result.append(axes)
        return result

    def window_cells(self, level: int, axes: list[tuple[int, int]]) -> list[int]:
        """Global ids of the cells of one window (row-major), from :meth:`window_one`."""
        base = self._offsets_list[level]
        if self.dim == 3:
            (a0, a1), (b0, b1), (c0, c1) = axes
            return [base + (((a << level) | b) << level | c)
                    for a in range(a0, a1 + 1) for b in range(b0, b1 + 1) for c in range(c0, c1 + 1)]
        if self.dim == 2:
            (a0, a1), (b0, b1) = axes
            return [base + ((a << level) | b) for a in range(a0, a1 + 1) for b in range(b0, b1 + 1)]
        ((a0, a1),) = axes
        return list(range(base + a0, base + a1 + 1))

    def windows(self, points: np.ndarray, scale: float, deepest: int) -> tuple[np.ndarray, np.ndarray]:
        """:meth:`window_one` for many points, vectorised.

        Returns ``low`` and ``width``: int64 (m, deepest + 1, dim), the first
        visited cell and how many per axis (width 0 on the levels past the
        first empty window).
        """
        levels = np.arange(deepest + 1)
        h = np.array([half_reach(self.size, level, scale) for level in range(deepest + 1)])[None, :, None]
        p = points[:, None, :]
        low = np.maximum(self._axis_cells(round_down_sub_many(p, h), levels), 0)
        high = np.minimum(self._axis_cells(round_down_add_many(p, h), levels),
                          np.left_shift(1, levels)[None, :, None] - 1)
        width = np.maximum(high - low + 1, 0)
        low[:, 0, :] = 0
        width[:, 0, :] = 1
        reached = np.cumprod((width > 0).all(axis=2), axis=1).astype(bool)
        return low, np.where(reached[:, :, None], width, 0)

    def _axis_cells(self, q: np.ndarray, levels: np.ndarray) -> np.ndarray:
        """:meth:`axis_cell` of ``q`` (m, levels, dim) on ``levels``; int64, the same IEEE operations."""
        o = self.origin[None, None, :]
        factor = np.ldexp(1.0, levels)[None, :, None]
        w = self.cell_size[levels][None, :, None]
        top = factor - 1.0
        with np.errstate(all="ignore"):  # q may be infinite: those are replaced below
            k = (q - o) / self.size
            k = k * factor
            np.floor(k, out=k)
            np.clip(k, 0.0, top, out=k)
            k -= q < o + k * w
            k += q >= o + (k + 1.0) * w
        np.clip(k, 0.0, top, out=k)
        k = np.where(q < o, -1.0, np.where(q >= self.hi[None, None, :], factor, k))
        return k.astype(np.int64)

    def enumerate(self, low: np.ndarray, width: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Every cell of many windows: point-major, then level, then row-major.

        Returns ``(cells, owners, levels)``: global ids, point index and level,
        int64 (K,) each, K the total number of cells; O(K).
        """
        m, n_levels, dim = low.shape
        per_window = np.prod(width, axis=2).ravel()
        window = np.repeat(np.arange(m * n_levels), per_window)
        rest = np.arange(window.size) - np.repeat(np.cumsum(per_window) - per_window, per_window)
        low_w = low.reshape(-1, dim)[window]
        width_w = width.reshape(-1, dim)[window]
        levels = window % n_levels
        cells = np.zeros(window.size, dtype=np.int64)
        for axis in range(dim - 1, -1, -1):
            k = low_w[:, axis] + rest % width_w[:, axis]
            rest //= width_w[:, axis]
            cells |= np.left_shift(k, levels * (dim - 1 - axis))
        return self.offsets[levels] + cells, window // n_levels, levels
