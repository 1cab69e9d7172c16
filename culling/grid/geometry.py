"""The arithmetic of a fixed stack of dense grids: levels, cells and their boxes.

Level ``L`` of a world ``[origin, origin + size)`` per axis is a grid of
``2**L`` cells per axis of edge ``W = size / 2**L``: the tree's level ``L``
(:class:`~culling.core.lattice.Lattice`) for the same ``size`` and ``origin``, cut
to the world.  A centre ``c`` lies in cell ``floor(fl(fl(c - origin) / size)
* 2**L)`` per axis, the lattice's monotone cell function, clamped to the last
cell for the few floats below ``origin + size`` whose quotient rounds up to
1; so the query kernels (:mod:`culling.grid.walk`) find it with the tree's
compiled window.  Cell ``k`` spans ``[origin + k*W, origin + (k+1)*W)``
where nothing rounds; a centre within rounding of a face may lie an ulp
outside those floats, as in the tree.  Cells of all levels are numbered by
one global id: the level's offset (``sum_{l<L} 2**(l*dim)``) plus the
row-major index in the level.

A sphere's level follows from its radius (cells of level ``L`` hold radii in
``[W/4, W/2)``, the finest level everything smaller) and its cell from its
centre.  Nothing here holds objects; :class:`~culling.grid.grid.DenseViewDistanceGrid` does.

>>> geo = GridGeometry(size=8.0, origin=np.zeros(2), finest_level=2)
>>> geo.home([5.0, 1.0], 0.3)           # W = 2 on level 2: cell (2, 0)
(2, 13)
>>> geo.coords(np.array([13]), np.array([2])).tolist()
[[2, 0]]
"""

from __future__ import annotations

import bisect
import math

import numpy as np

from culling.core.cells import placed_columns, placed_u

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
        scale = math.ldexp(1.0, level)
        top = (1 << level) - 1
        size = self.size
        cell = 0
        for c, o in zip(point, self._origin_list):
            cell = (cell << level) | min(max(math.floor(placed_u(c, o, size) * scale), 0), top)
        return level, self._offsets_list[level] + cell

    def levels_of(self, radii: np.ndarray) -> np.ndarray:
        """Level of each radius (int64 (n,)): the one whose cells hold it in ``[W/4, W/2)``."""
        return self.finest_level - np.searchsorted(self._thresholds, radii, side="right").astype(np.int64)

    def placed(self, centres: np.ndarray) -> np.ndarray:
        """Root-relative coordinates of centres (float64 (n, dim)) as placed: float64 (dim, n).

        :func:`culling.core.cells.placed_u`: each one's cell on every level is the
        cell of the exact ``(c - origin) / size``; ``u >= 1`` is at or beyond
        the world's high face, exactly.
        """
        return placed_columns(np.ascontiguousarray(centres, dtype=np.float64), self.origin, self.size)

    def homes(self, centres: np.ndarray, radii: np.ndarray,
              levels: np.ndarray | None = None, u: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
        """Levels and global cell ids (int64 (n,) each) of many spheres; O(n).

        ``levels``, when given, are :meth:`levels_of` the radii, and ``u``
        :meth:`placed` the centres, already known.  Axis by axis on 1-D arrays (an inner axis of length ``dim``
        would make NumPy loop per object); the same IEEE operations as
        :meth:`home` and as the tree's :meth:`~culling.core.lattice.Lattice.cells`.
        """
        if levels is None:
            levels = self.levels_of(radii)
        if u is None:
            u = self.placed(centres)
        factor = np.ldexp(1.0, levels)
        top = factor - 1.0
        cells = np.zeros(levels.shape[0], dtype=np.int64)
        for axis in range(self.dim):
            k = u[axis] * factor  # exact: a power of two (the lattice's cell function)
            np.floor(k, out=k)
            np.clip(k, 0.0, top, out=k)  # a quotient rounded up to 1: the last cell
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
