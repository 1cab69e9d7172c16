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

The cell function itself, the home function and the exact float helpers
are kernels, written once in :mod:`culling.core.cells`; this module holds the
lattice's constants and its boxes.

>>> lat = Lattice(size=8.0, origin=np.zeros(1))
>>> lat.cell_bounds(0, [ANCHOR]), lat.cell_bounds(-1, [ANCHOR >> 1])
((array([0.]), array([8.])), (array([-8.]), array([8.])))
"""

from __future__ import annotations

import numpy as np

__all__ = ["ANCHOR", "Lattice", "MAX_DEPTH", "MAX_GROWTH", "TOO_LARGE"]

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
ANCHOR: int = int((4 ** (MAX_GROWTH // 2) - 1) // 3)

#: The level reported for a radius whose ``radius / size`` overflows: above
#: every level a tree can grow to, so placement rejects it with a ``ValueError``.
TOO_LARGE = -MAX_GROWTH - 1


class Lattice:
    """The lattice of one tree: the largest world it can grow to, and its cells' boxes.

    Points enter the cell function (:func:`culling.core.cells.cell_of`) as
    ``u = (point - origin) / size``: root-relative coordinates in which a
    level-``L`` cell has edge ``2**-L``.
    """

    def __init__(self, size: float, origin: np.ndarray):
        self.size = size
        self.origin = origin
        self.dim = origin.shape[0]
        self.offsets: dict[int, int] = {level: ANCHOR << level for level in range(0, MAX_DEPTH + 1)}
        # The largest world: the level -MAX_GROWTH cell, cell 0 there.
        self.world_lo_u = -float(ANCHOR)
        self.world_hi_u = float((1 << MAX_GROWTH) - ANCHOR)
        # Query windows clamp root-relative coordinates to just outside that world.
        self.clamp_lo_u = self.world_lo_u - 1.0
        self.clamp_hi_u = self.world_hi_u + 1.0
        self.origin_list: list[float] = origin.tolist()

    # -- the world ------------------------------------------------------------

    def world_bounds(self) -> tuple[np.ndarray, np.ndarray]:
        """Low and high corner of the largest world, in world coordinates."""
        return (self.origin + self.world_lo_u * self.size,
                self.origin + self.world_hi_u * self.size)

    # -- boxes --------------------------------------------------------------

    def node_size(self, level: int) -> float:
        """Edge length of the nodes on ``level``."""
        return self.size * 2.0 ** -level

    def cell_bounds(self, level: int, cells: object) -> tuple[np.ndarray, np.ndarray]:
        """``(lo, hi)`` corners of cells on ``level``; cells (dim,) or (k, dim) ints."""
        cells = np.asarray(cells, dtype=np.int64)
        if level >= 0:  # integer offset first: exact below 2**53
            relative = (cells - self.offsets[level]).astype(np.float64) * 2.0 ** -level
        else:
            relative = ((cells << -level) - ANCHOR).astype(np.float64)
        with np.errstate(over="ignore", invalid="ignore"):  # a world at the float limit: inf bounds, no warning
            lo = self.origin + relative * self.size
            return lo, lo + self.node_size(level)
