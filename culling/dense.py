"""The dense-array variant of the view-distance tree: one full grid of cells per level.

A :class:`DenseViewDistanceGrid` covers a fixed world ``[origin, origin +
size)`` per axis.  Level ``L`` is a full grid of ``2**L`` cells per axis, each
of edge ``W = size / 2**L``, and, as in :class:`~culling.tree.ViewDistanceTree`,
a cell holds the spheres whose centre lies in its half-open box and whose
radius lies in ``[W/4, W/2)``.  So an object's level follows from its radius
alone and its cell from its centre (``floor((c - origin) / W)``): placement is
arithmetic, with no tree to walk or hash to probe, and insert, remove and
update are O(1).  Radii below ``min_radius`` live on the finest level.

A query visits every level that holds objects and, on each, the at most two
cells per axis whose box grown by ``scale * W / 2`` contains the point: O(levels
+ candidates), like the tree, but with no empty nodes to skip and no child
pointers to follow.  The price is memory: 12 bytes per cell of every level,
whether or not it holds anything (see docs/DENSE.md for when that pays).

Cell boxes are computed in world coordinates as ``origin + k * W`` and
``origin + (k + 1) * W``; both the placement and the query test compare
against exactly those floats, so the grid answers the rule of DESIGN.md
section 2 (``lo - scale*W/2 <= p < hi + scale*W/2``) to the last bit.
"""

from __future__ import annotations

import bisect
import math
import numbers

import numpy as np

from culling.cellpool import CellPool, concat_ranges
from culling.shapes import distances, within
from culling.trace import LevelTrace, QueryTrace
from culling.validation import (
    as_handle,
    as_handles,
    as_point,
    as_points,
    as_radii,
    as_radius,
    as_scale,
    check_constructor,
    check_unique,
)

__all__ = ["DEFAULT_FINEST_CELLS", "DenseViewDistanceGrid", "MAX_ENUMERATED_CELLS", "MAX_FINEST_CELLS"]

#: Cells on the finest level when no ``min_radius`` is given: 2**18 (64**3 in
#: 3D, 512**2 in 2D), 3 MiB of cell arrays for all levels together.  The
#: default ``min_radius`` is the quarter edge of that level's cells:
#: ``size / 256`` in 3D, ``size / 2048`` in 2D, ``size / 2**20`` in 1D.
DEFAULT_FINEST_CELLS = 2 ** 18

#: The most cells a finest level may have (2**24: 256**3, 4096**2); with the
#: coarser levels that is at most 19.2M cells, 230 MiB.  A smaller
#: ``min_radius`` is a ``ValueError``: use the tree for such worlds.
MAX_FINEST_CELLS = 2 ** 24

#: A query whose windows span more cells than this (only with a large
#: distance scale or many points) tests every stored object's cell against
#: the windows instead, when that is fewer tests.
MAX_ENUMERATED_CELLS = 4096

#: Object arrays grow by this factor when full (amortised O(1) inserts).
ARRAY_GROWTH = 1.5


class DenseViewDistanceGrid:
    """Dense per-level grids of view-distance spheres in a fixed world.

    The same interface as :class:`~culling.tree.ViewDistanceTree`, with O(1)
    insert, remove and update, at the cost of allocating every cell of every
    level up front.

    Parameters
    ----------
    size : float
        Edge of the world (the level-0 cell).  Fixed: a centre outside
        ``[origin, origin + size)`` on some axis, or a radius of ``size / 2``
        or more, is a ``ValueError``.
    origin : array_like, shape (dim,), optional
        Low corner of the world; zeros by default.
    dim : {1, 2, 3}
    shape : {"sphere", "cube"}
        The exact test: Euclidean or largest per-axis distance.
    min_radius : float, optional
        The smallest radius that gets its own level: the finest level is the
        one whose cells hold radii in ``[W/4, W/2)`` for ``min_radius``;
        smaller radii (0 included) are stored there too, which stays correct
        but returns more candidates.  Default: the radius for which the
        finest level has about :data:`DEFAULT_FINEST_CELLS` cells.  A value
        needing more than :data:`MAX_FINEST_CELLS` finest cells is a
        ``ValueError``.

    Notes
    -----
    Memory: 12 bytes per cell summed over all levels (``sum_L 2**(L*dim)``,
    about ``8/7`` of the finest level in 3D), plus per object about
    ``8*dim + 17`` bytes of arrays and 4 to 16 bytes of pool, times the
    arrays' growth slack.  :meth:`nbytes` reports the total.

    Examples
    --------
    >>> grid = DenseViewDistanceGrid(size=1024.0, dim=2, min_radius=4.0)
    >>> grid.finest_level, grid.cell_count
    (6, 5461)
    >>> grass = grid.insert((10.0, 10.0), 20.0)
    >>> tower = grid.insert((900.0, 900.0), 500.0)
    >>> grid.query((15.0, 12.0), exact=True).tolist()
    [0]
    >>> grid.update(grass, (95.0, 95.0), 20.0)
    >>> sorted(grid.query((100.0, 100.0), exact=True).tolist())
    [0]
    >>> grid.insert((2000.0, 0.0), 1.0)
    Traceback (most recent call last):
    ...
    ValueError: centres must lie in the grid's world [[0.0, 0.0], [1024.0, 1024.0]) (a dense grid does not grow); centre 0 is [2000.0, 0.0]
    """

    def __init__(self, size: float, origin=None, dim: int = 3, shape: str = "sphere", min_radius=None):
        self.size, self.origin, self.dim, self.shape = check_constructor(size, origin, dim, shape)
        with np.errstate(over="ignore"):
            self._hi = self.origin + self.size
        if not np.isfinite(self._hi).all():
            raise ValueError(f"origin + size must be finite, got {self._hi.tolist()}")
        self.finest_level, self.min_radius = self._finest_level(min_radius)
        levels = np.arange(self.finest_level + 1)
        #: edge of a cell on each level, exact: size * 2**-L
        self._cell_size = np.ldexp(self.size, -levels)
        #: quarter edges W_L/4 for L = F-1 .. 0, ascending: level = F - #(thresholds <= r)
        self._thresholds = np.ldexp(self.size, -(levels[:-1][::-1] + 2)).tolist()
        #: first global cell id of each level (and the total at the end)
        self._offsets = np.concatenate([[0], np.cumsum(np.left_shift(np.int64(1), levels * self.dim))])
        self._origin_list = self.origin.tolist()
        self._hi_list = self._hi.tolist()
        self._check_resolution()
        self._cells = CellPool(int(self._offsets[-1]))
        self._level_count = np.zeros(self.finest_level + 1, dtype=np.int64)
        # Objects, indexed by handle (structure of arrays).  _level is -1 for a free handle;
        # the cell and the slot in it live in self._cells.cell / .slot.
        self._centres = np.zeros((0, self.dim), dtype=np.float64)
        self._radii = np.zeros(0, dtype=np.float64)
        self._level = np.full(0, -1, dtype=np.int8)
        self._free = np.zeros(0, dtype=np.int32)  # stack of free handles
        self._n_free = 0
        self._next_handle = 0
        self._count = 0

    def _finest_level(self, min_radius) -> tuple[int, float]:
        """The finest level and the min_radius it stands for, validated."""
        max_level = (MAX_FINEST_CELLS.bit_length() - 1) // self.dim
        if min_radius is None:
            level = (DEFAULT_FINEST_CELLS.bit_length() - 1) // self.dim
            return level, float(np.ldexp(self.size, -(level + 2)))
        if isinstance(min_radius, bool) or not isinstance(min_radius, numbers.Real):
            raise ValueError(f"min_radius must be a finite number > 0, got {min_radius!r}")
        value = float(min_radius)
        if not math.isfinite(value) or value <= 0:
            raise ValueError(f"min_radius must be a finite number > 0, got {min_radius!r}")
        if value >= self.size / 2:
            raise ValueError(f"min_radius must be below size/2 = {self.size / 2:g}, got {value:g}")
        level = 0
        while value < math.ldexp(self.size, -(level + 2)):
            level += 1
            if level > max_level:
                smallest = math.ldexp(self.size, -(max_level + 2))
                raise ValueError(
                    f"min_radius={value:g} needs {2 ** level}**{self.dim} cells on the finest level, "
                    f"more than MAX_FINEST_CELLS = 2**{MAX_FINEST_CELLS.bit_length() - 1}; use "
                    f"min_radius >= {smallest:g} (size/2**{max_level + 2}) or the ViewDistanceTree")
        return level, value

    def _check_resolution(self) -> None:
        """The finest cells must be wide enough for float64 at this origin."""
        span = max(abs(x) for x in self._origin_list + self._hi_list)
        if self._cell_size[-1] < 4 * math.ulp(span):
            raise ValueError(f"finest cells of {self._cell_size[-1]:g} are too small for float64 "
                             f"coordinates near {span:g}; raise min_radius or move the origin")

    # ------------------------------------------------------------------
    # Size and membership

    def __len__(self) -> int:
        return self._count

    def __contains__(self, handle) -> bool:
        if isinstance(handle, (bool, np.bool_)) or not isinstance(handle, (numbers.Integral, np.integer)):
            return False
        handle = int(handle)
        return 0 <= handle < self._next_handle and self._level[handle] >= 0

    def __repr__(self) -> str:
        return (f"DenseViewDistanceGrid(size={self.size}, origin={self._origin_list}, dim={self.dim}, "
                f"shape={self.shape!r}, min_radius={self.min_radius:g}, objects={self._count}, "
                f"levels={self.finest_level + 1})")

    @property
    def node_count(self) -> int:
        """Number of non-empty cells (the tree's counterpart: nodes that hold objects)."""
        return self._cells.nonempty

    @property
    def cell_count(self) -> int:
        """Number of cells over all levels, allocated up front: ``sum_L 2**(L*dim)``."""
        return int(self._offsets[-1])

    @property
    def level_counts(self) -> np.ndarray:
        """Objects stored on each level, int64 (finest_level + 1,); a copy."""
        return self._level_count.copy()

    def handles(self) -> np.ndarray:
        """Every handle in the grid, ascending; int64, O(handles ever issued)."""
        return np.flatnonzero(self._level[: self._next_handle] >= 0).astype(np.int64)

    def centre(self, handle) -> np.ndarray:
        """The centre of one object, shape (dim,), float64 (a copy)."""
        return self._centres[self._live(handle)].copy()

    def radius(self, handle) -> float:
        """The radius (view distance) of one object."""
        return float(self._radii[self._live(handle)])

    def centres_of(self, handles) -> np.ndarray:
        """Centres of many objects, shape (n, dim), float64 (a copy), O(n)."""
        return self._centres[self._live_many(handles)]

    def radii_of(self, handles) -> np.ndarray:
        """Radii of many objects, shape (n,), float64 (a copy), O(n)."""
        return self._radii[self._live_many(handles)]

    def nbytes(self) -> int:
        """Bytes held in NumPy arrays (cells, pool and objects), without Python overhead."""
        arrays = (self._centres, self._radii, self._level, self._free)
        return self._cells.nbytes() + sum(a.nbytes for a in arrays)

    # ------------------------------------------------------------------
    # Mutation: single objects, O(1) (amortised when arrays or a block grow)

    def insert(self, centre, radius) -> int:
        """Add one sphere; returns its handle.  O(1) amortised.

        Parameters
        ----------
        centre : array_like, shape (dim,) (a scalar for dim 1), inside the world
        radius : float, >= 0 and < size/2, the object's view distance
        """
        point = self._point(centre, "centre")
        radius = as_radius(radius)
        level, cell = self._home(point, radius)
        handle = int(self._new_handles(1)[0])
        self._centres[handle] = point
        self._radii[handle] = radius
        self._level[handle] = level
        self._cells.link(handle, cell)
        self._level_count[level] += 1
        self._count += 1
        return handle

    def update(self, handle, centre, radius) -> None:
        """Move or resize one object.  O(1): when it stays in its cell only its
        centre and radius are written; otherwise one unlink and one link."""
        handle = self._live(handle)
        point = self._point(centre, "centre")
        radius = as_radius(radius)
        level, cell = self._home(point, radius)
        self._centres[handle] = point
        self._radii[handle] = radius
        if cell == self._cells.cell[handle]:
            return
        self._level_count[self._level[handle]] -= 1
        self._cells.unlink(handle)
        self._cells.link(handle, cell)
        self._level[handle] = level
        self._level_count[level] += 1

    def remove(self, handle) -> None:
        """Remove one object; its handle may be handed out again.  O(1)."""
        handle = self._live(handle)
        self._cells.unlink(handle)
        self._level_count[self._level[handle]] -= 1
        self._level[handle] = -1
        self._free[self._n_free] = handle
        self._n_free += 1
        self._count -= 1

    # ------------------------------------------------------------------
    # Mutation: batches, validated whole before anything changes

    def insert_many(self, centres, radii) -> np.ndarray:
        """Add many spheres; returns their handles, int64 (n,).

        Parameters
        ----------
        centres : array_like, shape (n, dim) (or (n,) for dim 1), float
        radii : array_like, shape (n,), float

        Vectorised: O(n log n) (grouping by cell), no Python loop.
        """
        centres = as_points(centres, self.dim, "centres")
        radii = as_radii(radii, centres.shape[0])
        levels, cells = self._homes(centres, radii)
        handles = self._new_handles(centres.shape[0])
        if handles.size:
            self._centres[handles] = centres
            self._radii[handles] = radii
            self._level[handles] = levels
            self._cells.link_many(handles, cells)
            self._level_count += np.bincount(levels, minlength=self._level_count.size)
            self._count += handles.size
        return handles

    def update_many(self, handles, centres, radii) -> None:
        """Move or resize many objects.

        Objects that stay in their cell cost one vectorised store each and
        touch no cell; the others are unlinked and linked in batch.  O(n)
        plus O(movers log movers), no Python loop.
        """
        handles = self._live_many(handles)
        check_unique(handles)
        centres = as_points(centres, self.dim, "centres")
        radii = as_radii(radii, centres.shape[0])
        if centres.shape[0] != handles.size:
            raise ValueError(f"centres must have shape ({handles.size}, {self.dim}) to match "
                             f"the handles, got {centres.shape}")
        levels, cells = self._homes(centres, radii)
        if not handles.size:
            return
        self._centres[handles] = centres
        self._radii[handles] = radii
        move = cells != self._cells.cell[handles]
        if move.any():
            movers = handles[move]
            size = self._level_count.size
            self._level_count -= np.bincount(self._level[movers], minlength=size)
            self._cells.unlink_many(movers)
            self._cells.link_many(movers, cells[move])
            self._level[movers] = levels[move]
            self._level_count += np.bincount(levels[move], minlength=size)

    def remove_many(self, handles) -> None:
        """Remove many objects, vectorised: O(n log n), no Python loop."""
        handles = self._live_many(handles)
        check_unique(handles)
        if not handles.size:
            return
        self._cells.unlink_many(handles)
        self._level_count -= np.bincount(self._level[handles], minlength=self._level_count.size)
        self._level[handles] = -1
        self._free[self._n_free:self._n_free + handles.size] = handles
        self._n_free += handles.size
        self._count -= handles.size

    # ------------------------------------------------------------------
    # Queries

    def query(self, point, exact: bool = False, scale: float = 1.0) -> np.ndarray:
        """Handles of the spheres that may contain ``point``; int64 (k,), each once.

        Parameters
        ----------
        point : array_like, shape (dim,) (a scalar for dim 1); may lie outside the world
        exact : bool
            Keep only the spheres that contain the point (distance <= radius *
            scale); otherwise a superset: every member of every visited cell.
        scale : float
            Multiplies every view distance.

        Cost: O(levels + candidates); at most ``2**dim`` cells per level for
        ``scale <= 1`` (``ceil(1 + scale)**dim`` in general).
        """
        p = as_point(point, self.dim, "point")
        scale = as_scale(scale) if scale != 1.0 else 1.0
        handles, owners = self._candidates(p[None, :], scale)
        if exact:
            handles, _ = self._exact(handles, owners, p[None, :], scale)
        return handles

    def query_many(self, points, exact: bool = False, scale: float = 1.0) -> tuple[np.ndarray, np.ndarray]:
        """Answer many points at once, vectorised over points, levels and cells.

        Parameters
        ----------
        points : array_like, shape (m, dim) (or (m,) for dim 1)

        Returns
        -------
        handles : ndarray, int64, the answers concatenated
        counts : ndarray, shape (m,), int64: point ``i``'s answer is
            ``handles[counts[:i].sum():][:counts[i]]``
        """
        points = as_points(points, self.dim, "points")
        scale = as_scale(scale) if scale != 1.0 else 1.0
        handles, owners = self._candidates(points, scale)
        if exact:
            handles, owners = self._exact(handles, owners, points, scale)
        return handles, np.bincount(owners, minlength=points.shape[0]).astype(np.int64)

    def trace(self, point, scale: float = 1.0) -> QueryTrace:
        """What ``query(point, scale=scale)`` visits, level by level.

        A visited node is a cell whose grown box contains the point, whether
        or not it holds objects; depth 0 is the world's single level-0 cell.
        Levels run down to the deepest level that holds any object and stop
        early where no cell of a level (nor, then, of any finer one) reaches
        the point.  Levels that hold no objects are listed (their cells
        return 0 objects) so the listing has no gaps; the query itself skips
        them.
        """
        p = as_point(point, self.dim, "point")
        scale = as_scale(scale) if scale != 1.0 else 1.0
        if not self._count:
            return QueryTrace(point=p, candidates=np.empty(0, dtype=np.int64), levels=[])
        deepest = int(np.flatnonzero(self._level_count)[-1])
        low, width = self._windows(p[None, :], scale, deepest)
        cells, _, level_of, coords = self._enumerate(low, width)
        candidates, counts = self._cells.gather(cells)
        levels = []
        for level in range(deepest + 1):
            mine = level_of == level
            if not mine.any():
                break
            w = float(self._cell_size[level])
            k = coords[mine].astype(np.float64)
            lo = self.origin + k * w
            hi = self.origin + (k + 1.0) * w
            margin = 0.0 if level == 0 else scale * w / 2
            with np.errstate(over="ignore"):
                loose = np.stack([lo - margin, hi + margin], axis=1)
            levels.append(LevelTrace(depth=level, level=level, node_size=w,
                                     bounds=np.stack([lo, hi], axis=1), loose_bounds=loose,
                                     objects=int(counts[mine].sum())))
        return QueryTrace(point=p, candidates=candidates, levels=levels)

    # ------------------------------------------------------------------
    # The invariant checker

    def check_invariants(self) -> None:
        """Assert every structural rule; O(cells + objects).  For tests."""
        n = self._next_handle
        alive = self._level[:n] >= 0
        live = np.flatnonzero(alive)
        assert live.size == self._count, "len() disagrees with live handles"
        free = self._free[: self._n_free]
        assert np.unique(free).size == free.size, "handle freed twice"
        assert not alive[free].any() if free.size else True, "a live handle is on the free list"
        assert live.size + free.size == n, "handles lost"
        assert (self._level[n:] == -1).all(), "an unissued handle is live"
        self._cells.check(alive)
        assert self._cells.members == self._count
        levels = self._level[live].astype(np.int64)
        assert (np.bincount(levels, minlength=self._level_count.size) == self._level_count).all(), \
            "per-level counts are wrong"
        # Home cell: a pure function of (centre, radius), inside its box in world coordinates.
        centres, radii = self._centres[live], self._radii[live]
        assert np.isfinite(centres).all() and np.isfinite(radii).all() and (radii >= 0).all()
        assert (radii < self.size / 2).all(), "a radius too large for the world"
        assert ((centres >= self.origin) & (centres < self._hi)).all(), "a centre outside the world"
        expected_levels, expected_cells = self._homes(centres, radii)
        assert (levels == expected_levels).all(), "object on the wrong level"
        cells = self._cells.cell[live].astype(np.int64)
        assert (cells == expected_cells).all(), "object in the wrong cell"
        assert ((cells >= self._offsets[levels]) & (cells < self._offsets[levels + 1])).all()
        coords = self._coords(cells - self._offsets[levels], levels).astype(np.float64)
        w = self._cell_size[levels][:, None]
        assert ((self.origin + coords * w <= centres) & (centres < self.origin + (coords + 1) * w)).all(), \
            "centre outside its cell's box"
        w_level = self._cell_size[levels]
        assert (radii < w_level / 2).all(), "radius not below half its cell's edge"
        coarse = levels < self.finest_level
        assert (radii[coarse] >= w_level[coarse] / 4).all(), "radius below a quarter of its cell's edge"

    # ------------------------------------------------------------------
    # Internals: placement

    def _point(self, value, name: str) -> list[float]:
        """One point as a list of floats, validated."""
        return as_point(value, self.dim, name).tolist()

    def _home(self, point: list[float], radius: float) -> tuple[int, int]:
        """Level and global cell id of one sphere; pure Python floats, the same
        IEEE operations as :meth:`_homes`."""
        origin, hi = self._origin_list, self._hi_list
        if not all(o <= c < h for c, o, h in zip(point, origin, hi)):
            self._homes(np.array([point]), np.array([radius]))  # raises the ValueError
        if radius >= self.size / 2:
            self._homes(np.array([point]), np.array([radius]))
        level = self.finest_level - bisect.bisect_right(self._thresholds, radius)
        w = float(self._cell_size[level])
        top = (1 << level) - 1
        size = self.size
        cell = 0
        for c, o in zip(point, origin):
            k = min(max(math.floor((c - o) / size * 2.0 ** level), 0), top)
            if c < o + k * w:
                k -= 1
            elif c >= o + (k + 1) * w:
                k += 1
            cell = (cell << level) | min(max(k, 0), top)
        return level, int(self._offsets[level]) + cell

    def _homes(self, centres: np.ndarray, radii: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Levels (int64 (n,)) and global cell ids (int64 (n,)) of many spheres.

        Raises ``ValueError`` for a centre outside the world or a radius of
        ``size / 2`` or more.
        """
        outside = ((centres < self.origin) | (centres >= self._hi)).any(axis=1)
        if outside.any():
            i = int(np.flatnonzero(outside)[0])
            raise ValueError(f"centres must lie in the grid's world [{self._origin_list}, {self._hi_list}) "
                             f"(a dense grid does not grow); centre {i} is {centres[i].tolist()}")
        too_big = radii >= self.size / 2
        if too_big.any():
            i = int(np.flatnonzero(too_big)[0])
            raise ValueError(f"radii must be below size/2 = {self.size / 2:g} in a dense grid "
                             f"(it does not grow); radius {i} is {radii[i]:g}")
        levels = self.finest_level - np.searchsorted(self._thresholds, radii, side="right").astype(np.int64)
        w = self._cell_size[levels][:, None]
        top = np.left_shift(np.int64(1), levels)[:, None] - 1
        with np.errstate(under="ignore"):
            u = (centres - self.origin) / self.size
        k = np.clip(np.floor(np.ldexp(u, levels[:, None])).astype(np.int64), 0, top)
        kf = k.astype(np.float64)
        k = k - (centres < self.origin + kf * w) + (centres >= self.origin + (kf + 1.0) * w)
        k = np.clip(k, 0, top)
        cells = k[:, 0]
        for axis in range(1, self.dim):
            cells = np.left_shift(cells, levels) | k[:, axis]
        return levels, self._offsets[levels] + cells

    def _coords(self, flat: np.ndarray, levels: np.ndarray) -> np.ndarray:
        """Per-axis cell coordinates (int64 (n, dim)) of flat in-level cell indices."""
        mask = np.left_shift(np.int64(1), levels) - 1
        coords = np.empty((flat.shape[0], self.dim), dtype=np.int64)
        for axis in range(self.dim):
            coords[:, axis] = np.right_shift(flat, levels * (self.dim - 1 - axis)) & mask
        return coords

    def _new_handles(self, n: int) -> np.ndarray:
        """``n`` handles: the most recently freed first, then fresh ones; int64."""
        reused = min(n, self._n_free)
        taken = self._free[self._n_free - reused:self._n_free][::-1].astype(np.int64)
        self._n_free -= reused
        fresh = np.arange(self._next_handle, self._next_handle + n - reused, dtype=np.int64)
        self._next_handle += n - reused
        if self._next_handle > self._level.shape[0]:
            self._grow_objects(self._next_handle)
        return np.concatenate([taken, fresh])

    def _grow_objects(self, needed: int) -> None:
        capacity = max(needed, int(self._level.shape[0] * ARRAY_GROWTH) + 8)
        old = self._level.shape[0]
        centres = np.zeros((capacity, self.dim))
        centres[:old] = self._centres
        radii = np.zeros(capacity)
        radii[:old] = self._radii
        level = np.full(capacity, -1, dtype=np.int8)
        level[:old] = self._level
        free = np.zeros(capacity, dtype=np.int32)
        free[:old] = self._free
        self._centres, self._radii, self._level, self._free = centres, radii, level, free
        self._cells.reserve_objects(capacity)

    def _live(self, handle) -> int:
        handle = as_handle(handle)
        if not (0 <= handle < self._next_handle) or self._level[handle] < 0:
            raise KeyError(f"handle {handle} is not in the grid")
        return handle

    def _live_many(self, handles) -> np.ndarray:
        handles = as_handles(handles)
        if handles.size:
            outside = (handles < 0) | (handles >= self._next_handle)
            if outside.any():
                raise KeyError(f"handle {int(handles[outside][0])} is not in the grid")
            dead = self._level[handles] < 0
            if dead.any():
                raise KeyError(f"handle {int(handles[dead][0])} is not in the grid")
        return handles

    # ------------------------------------------------------------------
    # Internals: queries

    def _windows(self, points: np.ndarray, scale: float, deepest: int) -> tuple[np.ndarray, np.ndarray]:
        """Per point, level 0..deepest and axis: the first visited cell and how many.

        Returns ``low`` and ``width``, int64 (m, deepest + 1, dim).  Cell ``k``
        of edge ``W`` is visited when ``lo - h <= p < hi + h`` with ``lo =
        origin + k*W``, ``hi = origin + (k+1)*W``, ``h = scale*W/2``: a window
        is first estimated in cell units, then each end is corrected by one
        cell against those exact world-coordinate floats.  Level 0 is always
        its one cell; a level with an empty window empties all finer ones.
        """
        m = points.shape[0]
        levels = np.arange(deepest + 1)
        w = self._cell_size[: deepest + 1][None, :, None]
        n = np.ldexp(1.0, levels)[None, :, None]
        o = self.origin[None, None, :]
        p = points[:, None, :]
        with np.errstate(all="ignore"):
            limit = 2.0 ** 80  # far outside any world: keeps cell arithmetic finite
            u = np.clip((points - self.origin) / self.size, -limit, limit)
            x = np.ldexp(u[:, None, :], levels[None, :, None])
            half = 0.5 * scale
            low = np.clip(np.floor(x - 1.0 - half) + 1.0, -1.0, n)
            high = np.clip(np.floor(x + half), -1.0, n)
            h = scale * w / 2

            def below_top(k):  # p < hi_k + h
                return p < (o + (k + 1.0) * w) + h

            def above_bottom(k):  # lo_k - h <= p
                return (o + k * w) - h <= p

            low = np.where(below_top(low - 1.0), low - 1.0, np.where(below_top(low), low, low + 1.0))
            high = np.where(above_bottom(high + 1.0), high + 1.0, np.where(above_bottom(high), high, high - 1.0))
        low = np.maximum(low, high - np.ceil(scale))  # ceil(1 + scale) cells per axis, whatever rounding did
        low = np.maximum(low, 0.0).astype(np.int64)
        high = np.minimum(high, n - 1.0).astype(np.int64)
        width = np.maximum(high - low + 1, 0)
        low[:, 0, :] = 0
        width[:, 0, :] = 1
        reached = np.cumprod((width > 0).all(axis=2), axis=1).astype(bool)  # (m, levels)
        width = np.where(reached[:, :, None], width, 0)
        return low, width.reshape(m, deepest + 1, self.dim)

    def _enumerate(self, low: np.ndarray, width: np.ndarray):
        """Every cell of the windows, point-major then level then row-major cell order.

        Returns ``(cells, owners, levels, coords)``: global cell ids, point
        index, level (int64 (K,)) and per-axis coordinates (int64 (K, dim)).
        """
        m, n_levels, dim = low.shape
        per_window = np.prod(width, axis=2).ravel()
        window = np.repeat(np.arange(m * n_levels), per_window)
        rest = np.arange(window.size) - np.repeat(np.cumsum(per_window) - per_window, per_window)
        low_w = low.reshape(-1, dim)[window]
        width_w = width.reshape(-1, dim)[window]
        coords = np.empty((window.size, dim), dtype=np.int64)
        for axis in range(dim - 1, -1, -1):
            coords[:, axis] = low_w[:, axis] + rest % width_w[:, axis]
            rest //= width_w[:, axis]
        levels = window % n_levels
        cells = coords[:, 0].copy()
        for axis in range(1, dim):
            cells = np.left_shift(cells, levels) | coords[:, axis]
        return self._offsets[levels] + cells, window // n_levels, levels, coords

    def _candidates(self, points: np.ndarray, scale: float) -> tuple[np.ndarray, np.ndarray]:
        """Members of the visited cells and the index of the point each came for.

        int64 arrays, grouped by point (ascending).  Enumerates the visited
        cells of the levels that hold objects; when that would be more cells
        than (points x objects) and more than MAX_ENUMERATED_CELLS, tests
        each object's cell against the windows instead.  Either way the
        same set.
        """
        m = points.shape[0]
        if not self._count or not m:
            return np.empty(0, dtype=np.int64), np.empty(0, dtype=np.int64)
        occupied = self._level_count > 0
        deepest = int(np.flatnonzero(occupied)[-1])
        low, width = self._windows(points, scale, deepest)
        width = np.where(occupied[None, : deepest + 1, None], width, 0)
        total = int(np.prod(width, axis=2).sum())
        if total > MAX_ENUMERATED_CELLS and total > m * self._count:
            return self._candidates_by_object(low, width)
        cells, owners, _, _ = self._enumerate(low, width)
        nonempty = self._cells.count[cells] > 0
        cells, owners = cells[nonempty], owners[nonempty]
        handles, counts = self._cells.gather(cells)
        return handles, np.repeat(owners, counts)

    def _candidates_by_object(self, low: np.ndarray, width: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Objects whose cell lies in a window: O(points x objects), for huge windows."""
        handles = self.handles()
        levels = self._level[handles].astype(np.int64)
        cells = self._cells.cell[handles].astype(np.int64)
        coords = self._coords(cells - self._offsets[levels], levels)
        lo = low[:, levels, :]
        inside = ((coords[None] >= lo) & (coords[None] < lo + width[:, levels, :])).all(axis=2)
        owners, which = np.nonzero(inside)
        return handles[which], owners.astype(np.int64)

    def _exact(self, handles: np.ndarray, owners: np.ndarray, points: np.ndarray, scale: float):
        """Keep the candidates whose shape contains their point (:mod:`culling.shapes`)."""
        if not handles.size:
            return handles, owners
        axes = [self._centres[handles, axis] for axis in range(self.dim)]
        at = [points[owners, axis] for axis in range(self.dim)]
        keep = within(distances(axes, at, self.shape), self._radii[handles], scale)
        return handles[keep], owners[keep]
