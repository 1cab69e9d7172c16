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

__all__ = ["ANCHOR", "Lattice", "MAX_DEPTH", "MAX_GROWTH", "TOO_LARGE", "half_reach", "multiply_up", "round_down_add", "round_down_add_many", "round_down_sub", "round_down_sub_many"]

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


def round_down_sub(a: float, b: float) -> float:
    """The largest float ``<= a - b`` (exact real difference); ``b >= 0``.

    Round to nearest, then TwoSum's exact error term says whether the
    rounded result lies above the true difference; only then step one ulp
    down.  An overflow gives ``-inf``, which is below everything.
    """
    r = a - b
    if r == -math.inf or b == math.inf:
        return -math.inf
    bb = r - a
    error = (a - (r - bb)) + (-b - bb)  # TwoSum: a - b == r + error exactly
    return math.nextafter(r, -math.inf) if error < 0 else r


def round_down_add(a: float, b: float) -> float:
    """A float ``<= a + b`` (exact real sum), the largest one; ``b >= 0``.

    An overflow gives ``inf``: callers only need an upper bound of the
    centres below ``a + b``, and every finite float is below ``inf``.
    """
    r = a + b
    if r == math.inf or b == math.inf:
        return math.inf
    bb = r - a
    error = (a - (r - bb)) + (b - bb)  # TwoSum: a + b == r + error exactly
    return math.nextafter(r, -math.inf) if error < 0 else r


def round_down_sub_many(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """:func:`round_down_sub`, elementwise on arrays (broadcasting)."""
    with np.errstate(all="ignore"):
        r = a - b
        bb = r - a
        error = (a - (r - bb)) + (-b - bb)
        down = np.where(error < 0, np.nextafter(r, -np.inf), r)
    return np.where((r == -np.inf) | (b == np.inf), -np.inf, down)


def round_down_add_many(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """:func:`round_down_add`, elementwise on arrays (broadcasting)."""
    with np.errstate(all="ignore"):
        r = a + b
        bb = r - a
        error = (a - (r - bb)) + (b - bb)
        down = np.where(error < 0, np.nextafter(r, -np.inf), r)
    return np.where((r == np.inf) | (b == np.inf), np.inf, down)


def half_reach(size: float, level: int, scale: float) -> float:
    """The smallest float ``>= scale * W / 2`` for nodes of ``level`` (``W = size * 2**-level``).

    ``size * 2**(-level-1)`` is exact unless it leaves the normal range (then
    it is rounded up one ulp); the product with ``scale`` is rounded up only
    when inexact (:func:`multiply_up`).  May be ``inf`` for a huge scale: the
    window is then the whole level.
    """
    try:
        half = math.ldexp(size, -level - 1)
    except OverflowError:  # math.ldexp raises where NumPy would give inf
        half = math.inf
    if half == math.inf or math.ldexp(half, level + 1) != size:
        half = math.nextafter(half, math.inf)
    return half if scale == 1.0 else multiply_up(scale, half)


_SPLIT = 134217729.0  # 2**27 + 1: Veltkamp's split of a float into two 26-bit halves


def multiply_up(a: float, b: float) -> float:
    """The smallest float ``>= a * b`` (exact real product), for ``a, b >= 0``.

    Dekker's TwoProduct gives the rounding error of ``a * b`` exactly when
    nothing overflows or underflows; outside that range the product is
    stepped up one ulp unconditionally, which is still an upper bound.
    """
    r = a * b
    if r == math.inf or r == 0.0:
        return r if a == 0.0 or b == 0.0 or r == math.inf else math.nextafter(0.0, math.inf)
    if r < 2.0 ** -960 or a > 2.0 ** 995 or b > 2.0 ** 995:
        return math.nextafter(r, math.inf)
    c = _SPLIT * a
    a_hi = c - (c - a)
    a_lo = a - a_hi
    c = _SPLIT * b
    b_hi = c - (c - b)
    b_lo = b - b_hi
    error = ((a_hi * b_hi - r) + a_hi * b_lo + a_lo * b_hi) + a_lo * b_lo  # a * b == r + error
    return math.nextafter(r, math.inf) if error > 0 else r


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
        self.scales: dict[int, float] = {level: math.ldexp(1.0, level) for level in range(0, MAX_DEPTH + 1)}
        self.offsets: dict[int, int] = {level: ANCHOR << level for level in range(0, MAX_DEPTH + 1)}
        # The largest world: the level -MAX_GROWTH cell, cell 0 there.
        self.world_lo_u = -float(ANCHOR)
        self.world_hi_u = float((1 << MAX_GROWTH) - ANCHOR)
        # Query windows clamp root-relative coordinates to just outside that world.
        self.clamp_lo_u = self.world_lo_u - 1.0
        self.clamp_hi_u = self.world_hi_u + 1.0
        self.origin_list: list[float] = origin.tolist()

    # -- points -------------------------------------------------------------

    def to_u(self, points: np.ndarray) -> np.ndarray:
        """Root-relative coordinates of points (n, dim), as columns: shape (dim, n).

        Column-wise because every later step works per axis on contiguous
        1-D arrays (an inner axis of length 3 makes NumPy loop per row).
        The float quotient ``fl(fl(point - origin) / size)``; the structures place
        centres by :func:`culling.core.cells.placed_u`, which corrects it where
        it lies within rounding of a cell face.
        """
        u = np.empty((self.dim, points.shape[0]))
        with np.errstate(under="ignore", over="ignore"):  # an overflow is inf: outside the world
            for axis in range(self.dim):
                np.subtract(points[:, axis], self.origin[axis], out=u[axis])
                u[axis] /= self.size
        return u

    def outside_world(self, lo: list[float], hi: list[float]) -> bool:
        """Whether root-relative coordinates from ``lo`` to ``hi`` (per axis) leave the largest
        world the tree can grow to."""
        return min(lo) < self.world_lo_u or max(hi) >= self.world_hi_u

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
        with np.errstate(under="ignore", over="ignore"):
            relative = radii / self.size
        _, exponent = np.frexp(relative)
        levels = np.negative(exponent, dtype=np.int64)
        levels -= 1
        levels[relative == 0] = MAX_DEPTH
        levels[relative == np.inf] = TOO_LARGE  # radius / size overflowed: beyond every world
        return np.minimum(levels, MAX_DEPTH, out=levels)

    def level_for(self, radius: float) -> int:
        """:meth:`levels_for` of one radius, in Python floats (the same IEEE operations)."""
        relative = radius / self.size  # a Python float division overflows to inf, it does not raise
        if relative == 0:
            return MAX_DEPTH
        if relative == math.inf:
            return TOO_LARGE
        return min(-math.frexp(relative)[1] - 1, MAX_DEPTH)

    def cells(self, u: np.ndarray, levels: int | np.ndarray) -> np.ndarray:
        """Cells of the columns ``u`` (dim, n) on ``levels`` (an int or (n,) ints); int64 (dim, n)."""
        levels = np.asarray(levels, dtype=np.int64)
        if levels.ndim == 0:
            level = int(levels)
            result: np.ndarray
            if level >= 0:
                result = np.floor(u * self.scales[level]).astype(np.int64) + self.offsets[level]
            else:
                result = (np.floor(u).astype(np.int64) + ANCHOR) >> -level
            return result
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

    # -- query windows -------------------------------------------------------
    # The tree's visit window on a level is computed by the compiled walk,
    # :func:`culling.tree.walk.window`, from the functions above: the
    # cells of the largest floats <= p -+ half_reach(size, level, scale).

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
