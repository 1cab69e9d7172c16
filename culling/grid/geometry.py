"""The arithmetic of a fixed stack of dense grids: levels, cells and their boxes.

Level ``L`` of a world ``[origin, origin + size)`` per axis is a grid of
``2**L`` cells per axis of edge ``W = size / 2**L``: the tree's level ``L``
(:class:`~culling.core.lattice.Lattice`) for the same ``size`` and ``origin``, cut
to the world.  A centre ``c`` lies in the lattice's cell
(:func:`culling.core.cells.cell_of`, the one cell function) less
``ANCHOR << L`` of its exactly placed coordinate
(:func:`culling.core.cells.placed_u`: the cell of the exact
``(c - origin) / size``), so the query kernels (:mod:`culling.grid.walk`) find
it with the tree's compiled window.  Cell ``k`` spans ``[origin + k*W, origin + (k+1)*W)``.  Cells of all levels are numbered by
one global id: the level's offset (``sum_{l<L} 2**(l*dim)``) plus the
row-major index in the level.

A sphere's level is the tree's (:func:`culling.core.cells.level_of`: cells of
level ``L`` hold radii in ``[W/4, W/2)``), the finest level everything
smaller, and its cell follows from its centre.  Nothing here holds objects; :class:`~culling.grid.grid.DenseViewDistanceGrid` does.

>>> geo = GridGeometry(size=8.0, origin=np.zeros(2), finest_level=2)
>>> geo.home([5.0, 1.0], 0.3)           # W = 2 on level 2: cell (2, 0)
(2, 13)
>>> geo.coords(np.array([13]), np.array([2])).tolist()
[[2, 0]]
"""

from __future__ import annotations

import numpy as np

from culling.core.cells import cell_of, level_of, placed_columns, placed_u
from culling.core.lattice import ANCHOR
from culling.runtime.jit import kernel

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
        #: edge of a cell on each level, exact: size * 2**-L (rounded, in a world of subnormal size); float64
        #: (levels,).  The rounding is no error here: NumPy's underflow flag (raised under np.seterr) is not.
        with np.errstate(under="ignore"):
            self.cell_size = np.ldexp(size, -levels)
        #: first global id of each level, and the total number of cells last; int64 (levels + 1,)
        self.offsets = np.concatenate([[0], np.cumsum(np.left_shift(np.int64(1), levels * self.dim))])
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
        """Level and global cell id of one sphere (centre inside the world, radius < size/2): :meth:`homes`
        of one."""
        levels, cells = self.homes(np.array([point]), np.array([radius]))
        return int(levels[0]), int(cells[0])

    def placed(self, centres: np.ndarray) -> np.ndarray:
        """Root-relative coordinates of centres (float64 (n, dim)) as placed: float64 (dim, n).

        :func:`culling.core.cells.placed_u`: each one's cell on every level is the
        cell of the exact ``(c - origin) / size``; ``u >= 1`` is at or beyond
        the world's high face, exactly.
        """
        return placed_columns(np.ascontiguousarray(centres, dtype=np.float64), self.origin, self.size)

    def homes(self, centres: np.ndarray, radii: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Levels and global cell ids (int64 (n,) each) of many spheres; O(n) compiled (:func:`_homes`)."""
        return _homes(np.ascontiguousarray(centres, dtype=np.float64), np.ascontiguousarray(radii, dtype=np.float64),
                      self.origin, self.size, self.finest_level, self.offsets)

    def coords(self, cells: np.ndarray, levels: np.ndarray) -> np.ndarray:
        """Per-axis coordinates (int64 (n, dim)) of global cell ids on their levels."""
        flat = cells - self.offsets[levels]
        mask = np.left_shift(np.int64(1), levels) - 1
        out = np.empty((flat.shape[0], self.dim), dtype=np.int64)
        for axis in range(self.dim):
            out[:, axis] = np.right_shift(flat, levels * (self.dim - 1 - axis)) & mask
        return out

    def ids(self, coords: np.ndarray, level: int) -> np.ndarray:
        """Global ids (int64 (n,)) of the cells with per-axis ``coords`` (int64 (n, dim)) on ``level``."""
        flat = np.zeros(coords.shape[0], dtype=np.int64)
        for axis in range(self.dim):
            flat |= np.left_shift(coords[:, axis], level * (self.dim - 1 - axis))
        result: np.ndarray = flat + self._offsets_list[level]
        return result

    def with_ancestors(self, cells: np.ndarray, ends: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Cells listed level by level (``cells[ends[L-1]:ends[L]]`` on level ``L``, ascending) with every
        ancestor added, down to the deepest level listing a cell: ``(cells, ends)`` again, level 0 the one
        level-0 cell.  So the listing is a tree, as the tree's nodes are.  O(levels x cells).

        >>> geo = GridGeometry(size=8.0, origin=np.zeros(2), finest_level=2)
        >>> cells, ends = geo.with_ancestors(np.array([13, 14]), np.array([0, 0, 2]))
        >>> cells.tolist(), ends.tolist()       # cells (2, 0) and (2, 1) of level 2 share parent (1, 0)
        ([0, 3, 13, 14], [1, 2, 4])
        """
        per_level = np.split(cells, ends[:-1]) if ends.size else []
        deepest = max((level for level, listed in enumerate(per_level) if listed.size), default=0)
        out = [np.zeros(1, dtype=np.int64)] * (deepest + 1)
        parents = np.empty(0, dtype=np.int64)
        for level in range(deepest, 0, -1):
            listed = np.union1d(per_level[level], parents) if parents.size else per_level[level]
            out[level] = listed
            coords = self.coords(listed, np.full(listed.shape[0], level))
            parents = np.unique(self.ids(np.right_shift(coords, 1), level - 1))
        return np.concatenate(out), np.cumsum([part.shape[0] for part in out]).astype(np.int64)

    def bounds(self, level: int, coords: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``(lo, hi)`` corners, float64 (k, dim), of cells with per-axis ``coords`` on ``level``."""
        w = self._w_list[level]
        k = coords.astype(np.float64)
        return self.origin + k * w, self.origin + (k + 1.0) * w


@kernel
def _homes(centres: np.ndarray, radii: np.ndarray, origin: np.ndarray, size: float, finest: int,
           offsets: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """:meth:`GridGeometry.homes`: the tree's level (:func:`culling.core.cells.level_of`) cut to
    ``0 .. finest``, and its cells (:func:`~culling.core.cells.cell_of` of the centre placed exactly,
    :func:`~culling.core.cells.placed_u`) numbered within the world, clamped to it."""
    n, dim = centres.shape
    levels = np.empty(n, dtype=np.int64)
    cells = np.empty(n, dtype=np.int64)
    for i in range(n):
        level = min(max(level_of(radii[i], size), 0), finest)
        shift, top = ANCHOR << level, (1 << level) - 1
        cell = 0
        for axis in range(dim):
            u = placed_u(centres[i, axis], origin[axis], size)
            cell = (cell << level) | min(max(cell_of(u, level) - shift, 0), top)
        levels[i] = level
        cells[i] = offsets[level] + cell
    return levels, cells
