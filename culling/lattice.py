"""Integer cell coordinates for every level of the tree, fixed once and for all.

A node is named by ``(level, cell)``: its absolute level (0 is a node of the
constructor's ``size``, level ``L`` has edge ``size / 2**L``, negative levels
are roots grown above it) and its integer cell coordinates on that level.  The
cells of all levels form one nested lattice, so a cell's parent is
``cell >> 1`` and a sphere's home node follows from its centre and radius
alone: locating it is a hash lookup, not a walk, and growing the root
relabels nothing.

The lattice is anchored so that growing the root alternates direction: the
constructor's root is cell ``ANCHOR`` on level 0, with ``ANCHOR = 0b...0101``,
so its level -1 ancestor extends it downwards, the level -2 ancestor upwards,
and so on.  A world can therefore grow towards negative and positive
coordinates alike, up to ``MAX_GROWTH`` levels, and still keep every index a
non-negative integer.

>>> lat = Lattice(size=8.0, origin=np.zeros(1))
>>> lat.cell_bounds(0, lat.cells(lat.to_u(np.array([[3.0]])), 0)[:, 0])
(array([0.]), array([8.]))
>>> lat.cell_bounds(-1, lat.cells(lat.to_u(np.array([[3.0]])), -1)[:, 0])
(array([-8.]), array([8.]))
"""

from __future__ import annotations

import math

import numpy as np

__all__ = ["ANCHOR", "Lattice", "MAX_DEPTH", "MAX_GROWTH"]

#: Finest level, counted from the constructor's root: spheres smaller than a
#: quarter of a node of this level stay there.  24 levels take a 4 km world to
#: 0.24 mm cells, far below any object an engine culls, while keeping every
#: cell index below 2**48 (exact in float64 and int64).
MAX_DEPTH = 24

#: How many levels the root may grow above the constructor's root: a world up
#: to 2**24 times ``size`` across.  Even, so the anchor pattern is whole.
MAX_GROWTH = 24

#: The constructor's root is this cell on level 0 (binary 0101...01): each
#: ancestor level alternately extends the world downwards and upwards.
ANCHOR = (4 ** (MAX_GROWTH // 2) - 1) // 3


class Lattice:
    """Maps points and radii to levels and cells, and cells back to boxes.

    Points enter as ``u = (point - origin) / size``: root-relative
    coordinates in which a level-``L`` cell has edge ``2**-L``.
    """

    def __init__(self, size: float, origin: np.ndarray):
        self.size = size
        self.origin = origin
        self.dim = origin.shape[0]
        # Level L >= 0: cell = floor(u * 2**L) + (ANCHOR << L), exact because
        # the scaling is by a power of two.  Grown levels derive from level 0
        # with integer shifts, cell = (floor(u) + ANCHOR) >> -L, so every cell
        # is exactly its children's parent (a float sum u + offset would round).
        self.scales = {level: 2.0 ** level for level in range(0, MAX_DEPTH + 1)}
        self.offsets = {level: ANCHOR << level for level in range(0, MAX_DEPTH + 1)}
        # The largest world: the level -MAX_GROWTH cell, cell 0 there.
        self.world_lo_u = -float(ANCHOR)
        self.world_hi_u = float((1 << MAX_GROWTH) - ANCHOR)

    # -- points -------------------------------------------------------------

    def to_u(self, points: np.ndarray) -> np.ndarray:
        """Root-relative coordinates of points (n, dim), as columns: shape (dim, n).

        Column-wise because every later step works per axis on contiguous
        1-D arrays (an inner axis of length 3 makes NumPy loop per row).
        """
        u = np.empty((self.dim, points.shape[0]))
        with np.errstate(under="ignore"):
            for axis in range(self.dim):
                np.subtract(points[:, axis], self.origin[axis], out=u[axis])
                u[axis] /= self.size
        return u

    def outside_world(self, u: np.ndarray) -> bool:
        """Whether any coordinate of ``u`` lies outside the largest world the tree can grow to."""
        return bool(u.size) and (u.min() < self.world_lo_u or u.max() >= self.world_hi_u)

    def world_bounds(self) -> tuple[np.ndarray, np.ndarray]:
        """Low and high corner of the largest world, in world coordinates."""
        return (self.origin + self.world_lo_u * self.size,
                self.origin + self.world_hi_u * self.size)

    # -- levels -------------------------------------------------------------

    def levels_for(self, radii: np.ndarray) -> np.ndarray:
        """Home level of each radius: the level whose nodes hold radii in [W/4, W/2).

        Radii below the finest level's quarter edge (0 included) get
        ``MAX_DEPTH``; the result may lie above ``-MAX_GROWTH`` for radii
        too large for any world (callers reject those).  int64, shape (n,).
        """
        with np.errstate(under="ignore"):
            relative = radii / self.size
        _, exponent = np.frexp(relative)
        levels = np.negative(exponent, dtype=np.int64)
        levels -= 1
        levels[relative == 0] = MAX_DEPTH
        return np.minimum(levels, MAX_DEPTH, out=levels)

    def cells(self, u: np.ndarray, levels) -> np.ndarray:
        """Cells of the columns ``u`` (dim, n) on ``levels`` (an int or (n,) ints); int64 (dim, n)."""
        levels = np.asarray(levels, dtype=np.int64)
        if levels.ndim == 0:
            level = int(levels)
            if level >= 0:
                return np.floor(u * self.scales[level]).astype(np.int64) + self.offsets[level]
            return (np.floor(u).astype(np.int64) + ANCHOR) >> -level
        cells = np.empty(u.shape, dtype=np.int64)
        if u.shape[1] == 0:
            return cells
        fine = np.maximum(levels, 0)
        offset = np.left_shift(np.int64(ANCHOR), fine)
        grown = np.flatnonzero(levels < 0)
        for axis in range(self.dim):
            cells[axis] = np.floor(np.ldexp(u[axis], fine))
            cells[axis] += offset
            if grown.size:
                base = np.floor(u[axis, grown]).astype(np.int64) + ANCHOR
                cells[axis, grown] = base >> -levels[grown]
        return cells

    def cell(self, x: float, level: int) -> int:
        """One coordinate's cell on ``level``: the scalar form of :meth:`cells`."""
        if level >= 0:
            return math.floor(x * self.scales[level]) + self.offsets[level]
        return (math.floor(x) + ANCHOR) >> -level

    # -- boxes --------------------------------------------------------------

    def node_size(self, level: int) -> float:
        """Edge length of the nodes on ``level``."""
        return self.size * 2.0 ** -level

    def cell_bounds(self, level: int, cells) -> tuple[np.ndarray, np.ndarray]:
        """``(lo, hi)`` corners of cells on ``level``; cells (dim,) or (k, dim) ints."""
        cells = np.asarray(cells, dtype=np.int64)
        if level >= 0:  # integer offset first: exact below 2**53
            relative = (cells - self.offsets[level]).astype(np.float64) * 2.0 ** -level
        else:
            relative = ((cells << -level) - ANCHOR).astype(np.float64)
        lo = self.origin + relative * self.size
        return lo, lo + self.node_size(level)
