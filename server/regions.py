"""How the world is split into regions: Morton ranges of a grid of cells on the ground plane.

The root box ``[origin, origin + size)`` is cut into ``2**level`` cells per
horizontal axis (the first two axes; dim 1: the one axis): game worlds
spread along the ground, and a cut across the vertical axis would leave
regions empty.  The cells are numbered along the Morton (Z-order) curve and
the curve is cut into ``shards`` runs of (nearly) equal length: region ``k``
owns the cells whose code is in ``[k * C // shards, (k + 1) * C // shards)``,
``C`` the number of cells.  A run of the Z curve is a few compact blocks, so
a region's border (and its ghosts) stays short; ``level`` is the smallest
that gives every region at least :data:`CELLS_PER_REGION` cells, so the runs
are balanced to a cell.

A point belongs to the region of its cell (a point outside the root box to
the nearest border cell).  An entity whose sphere (centre ``c``, reach
``R``) is relevant there must be known to every region owning a cell that
its box ``[c - R, c + R]`` meets: :meth:`Regions.touched` finds them.  The
box is rounded outwards (:func:`outward_box`) and cells are found with the
same monotone function as points, so a viewer inside a sphere (decided
exactly) is always in a region that holds the entity.

>>> r = Regions(size=64.0, origin=(0.0, 0.0), dim=2, shards=2)
>>> r.level, r.cells_per_axis
(2, 4)
>>> r.region_of([[1.0, 1.0], [60.0, 60.0], [-5.0, 70.0]]).tolist()
[0, 1, 1]
>>> r.touched([[31.0, 1.0]], [0.5]).tolist(), r.touched([[31.0, 31.0]], [2.0]).tolist()
([[True, False]], [[True, True]])
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike, NDArray

__all__ = ["CELLS_PER_REGION", "MAX_LEVEL", "Regions", "outward_box"]

#: At least this many cells per region: Morton runs balanced to an eighth of a region.
CELLS_PER_REGION = 8
#: The most regions (and so Ray actors) a service splits its world into.
MAX_SHARDS = 64
#: The finest grid: ``2**MAX_LEVEL`` cells per axis (a box's cells are enumerated; see :meth:`Regions.touched`).
MAX_LEVEL = 10
#: Relative widening of a reach before its box is rounded: covers the few roundings of ``r * scale + margin``.
REACH_SLACK = 2.0 ** -40


def _spread(bits: NDArray[np.int64], axes: int) -> NDArray[np.int64]:
    """Interleave: bit ``b`` of each value goes to bit ``b * axes``."""
    out = np.zeros_like(bits)
    for b in range(MAX_LEVEL):
        out |= ((bits >> b) & 1) << (b * axes)
    return out


def outward_box(centres: NDArray[np.float64], reach: NDArray[np.float64]) -> tuple[NDArray[np.float64],
                                                                                 NDArray[np.float64]]:
    """``(lo, hi)`` floats with ``lo <= c - R`` and ``hi >= c + R`` in exact arithmetic, per axis.

    ``reach`` is widened by :data:`REACH_SLACK` (so it is at least the exact ``r * scale + margin``
    it was computed from) and each bound moved one float outwards (so the rounding of the sum
    cannot bring it inside).
    """
    with np.errstate(over="ignore", under="ignore"):
        wide = (reach * (1.0 + REACH_SLACK))[:, None]
        lo = np.nextafter(centres - wide, -np.inf)
        hi = np.nextafter(centres + wide, np.inf)
    return lo, hi


class Regions:
    """``shards`` regions of the ground plane: Morton runs of a grid of cells over the root box.

    Parameters
    ----------
    size : float
        Edge of the root box (the world's extent; points outside go to the border cells).
    origin : array_like, shape (dim,)
    dim : int
    shards : int
        How many regions, 1 to :data:`MAX_SHARDS`.
    """

    def __init__(self, size: float, origin: ArrayLike, dim: int, shards: int) -> None:
        if isinstance(shards, bool) or not isinstance(shards, (int, np.integer)):
            raise TypeError(f"shards must be an integer from 1 to {MAX_SHARDS}, got {type(shards).__name__}")
        if not 1 <= shards <= MAX_SHARDS:
            raise ValueError(f"shards must be an integer from 1 to {MAX_SHARDS}, got {shards!r}")
        self.size = float(size)
        self.origin = np.asarray(origin, dtype=np.float64).reshape(dim)
        self.dim = dim
        self.shards = int(shards)
        self.axes = min(dim, 2)
        level = 0
        while (1 << (self.axes * level)) < CELLS_PER_REGION * self.shards and level < MAX_LEVEL:
            level += 1
        self.level = level
        self.cells_per_axis = 1 << level
        self.cell = self.size / self.cells_per_axis
        n_cells = 1 << (self.axes * level)
        self.bounds = np.array([k * n_cells // self.shards for k in range(self.shards + 1)], dtype=np.int64)
        codes = np.arange(n_cells, dtype=np.int64)
        #: region of each cell, indexed by its Morton code
        self.region_of_code = (np.searchsorted(self.bounds, codes, side="right") - 1).astype(np.int64)

    def cells(self, coords: NDArray[np.float64]) -> NDArray[np.int64]:
        """Cell index per axis of each row of ``coords`` (n, axes), clamped to the grid: monotone in each axis."""
        with np.errstate(over="ignore", under="ignore", invalid="ignore"):
            scaled = np.floor((coords - self.origin[: self.axes]) / self.cell)
        cells: NDArray[np.int64] = np.clip(np.nan_to_num(scaled, nan=0.0), 0, self.cells_per_axis - 1).astype(np.int64)
        return cells

    def _code(self, cells: NDArray[np.int64]) -> NDArray[np.int64]:
        code = np.zeros(cells.shape[0], dtype=np.int64)
        for a in range(self.axes):
            code |= _spread(cells[:, a], self.axes) << a
        return code

    def region_of(self, points: ArrayLike) -> NDArray[np.int64]:
        """Region of each point, int64 (m,)."""
        pts = np.asarray(points, dtype=np.float64).reshape(-1, self.dim)
        return self.region_of_code[self._code(self.cells(pts[:, : self.axes]))]

    def touched(self, centres: ArrayLike, reach: ArrayLike) -> NDArray[np.bool_]:
        """Which regions each sphere's box meets: bool (n, shards).

        ``reach`` is each sphere's full reach (``r * (1 + hysteresis) + probe margin``).  Cost
        O(cells the boxes cover): a box is clamped to the grid, so a sphere larger than the world
        costs ``4**level`` cells.
        """
        c = np.asarray(centres, dtype=np.float64).reshape(-1, self.dim)[:, : self.axes]
        lo, hi = outward_box(c, np.asarray(reach, dtype=np.float64).reshape(-1))
        first, last = self.cells(lo), self.cells(hi)
        span = last - first + 1                                    # cells per axis of each box
        per = np.prod(span, axis=1)
        out = np.zeros((c.shape[0], self.shards), dtype=bool)
        if self.shards == 1:
            out[:, 0] = True
            return out
        owner = np.repeat(np.arange(c.shape[0]), per)
        k = np.arange(int(per.sum()), dtype=np.int64) - np.repeat(np.cumsum(per) - per, per)
        cells = np.empty((owner.size, self.axes), dtype=np.int64)
        for a in range(self.axes):   # the k-th cell of a box, axis 0 fastest
            cells[:, a] = first[owner, a] + k % span[owner, a]
            k = k // span[owner, a]
        out[owner, self.region_of_code[self._code(cells)]] = True
        return out
