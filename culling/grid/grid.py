"""The dense-array variant of the view-distance tree: one full grid of cells per level.

A :class:`DenseViewDistanceGrid` covers a fixed world ``[origin, origin +
size)`` per axis.  Level ``L`` is a full grid of ``2**L`` cells per axis, each
of edge ``W = size / 2**L``, and, as in :class:`~culling.tree.tree.ViewDistanceTree`,
a cell holds the spheres whose centre lies in its half-open box and whose
radius lies in ``[W/4, W/2)``.  So an object's level follows from its radius
alone and its cell from its centre (``floor((c - origin) / W)``): placement is
arithmetic, with no tree to walk or hash to probe, and insert, remove and
update are O(1).  Radii below ``min_radius`` live on the finest level.

A query visits every level that holds objects and, on each, the at most two
cells per axis whose box grown by ``scale * W / 2`` contains the point: O(levels
+ candidates), like the tree, with cells computed rather than hashed.  A large
``scale`` (or probe radius) widens the windows, but a level's work stays
bounded by its non-empty cells: a window larger than those is not enumerated,
the sorted non-empty cells are filtered by it instead (:mod:`culling.grid.walk`).  Cell
members and their spheres live in a :class:`~culling.grid.pool.CellPool`, one
contiguous block per cell.  The price is memory: 12 bytes per cell of every
level, whether or not it holds anything (see docs/DENSE.md for when that pays).

Level ``L`` is the tree's level ``L`` cut to the world, and centres are
placed by the tree's cell function, so the queries are the tree's compiled
kernels: the tree's conservative window per level
(:mod:`culling.grid.walk`), then the same member tests
(:mod:`culling.core.members`).  Where nothing rounds that is the visiting rule of
docs/CONTRACT.md (``lo - scale*W/2 <= p < hi + scale*W/2``) to the last bit;
elsewhere a window may take one more cell at an end of an axis, never one less.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable
from fractions import Fraction

import numpy as np
from numpy.typing import ArrayLike

import culling.grid.probe as probe
import culling.grid.walk as gridwalk
from culling.core import growth, members
from culling.core.cells import placed_u
from culling.core.containment import squared_reach, squared_reach_of
from culling.core.growth import ARRAY_GROWTH, OUT_OF_MEMORY
from culling.core.handles import HandleStack
from culling.core.structs import CellsFields, PoolFields, WorldFields
from culling.core.validation import (
    Handle,
    as_coords,
    as_flag,
    as_points,
    as_radii,
    as_radius,
    as_real,
    as_scale,
    check_unique,
)
from culling.grid.geometry import GridGeometry
from culling.grid.pool import CellPool
from culling.interface import Real
from culling.pairs import cell_tree, join
from culling.runtime.locks import reading, writing
from culling.structure import Parts, Structure, Walked
from culling.trace import LevelTrace, QueryTrace

__all__ = ["DEFAULT_FINEST_CELLS", "DenseViewDistanceGrid", "MAX_ENUMERATED_CELLS", "MAX_FINEST_CELLS"]

logger = logging.getLogger(__name__)

#: The grid's cells are small (a cell holds the objects of one radius class
#: in a box of twice their radius), so its runs have no tile summaries
#: (:mod:`culling.core.tiles`): an empty summary array, one per dimension, makes
#: the member kernels test every row.
_NO_TILES = {dim: np.empty((2 * dim + 1, 0), dtype=np.float32) for dim in (1, 2, 3)}

#: Cells on the finest level when no ``min_radius`` is given: 2**18 (64**3 in
#: 3D, 512**2 in 2D), 3.4 to 6 MiB of cell arrays for all levels together.
#: The default ``min_radius`` is the quarter edge of that level's cells:
#: ``size / 256`` in 3D, ``size / 2048`` in 2D, ``size / 2**20`` in 1D.
DEFAULT_FINEST_CELLS = 2 ** 18

#: The most cells a finest level may have (2**24: 256**3, 4096**2); with the
#: coarser levels that is 19.2M cells (219 MiB) in 3D, 22.4M (256 MiB) in 2D.
#: A smaller ``min_radius`` is a ``ValueError``: use the tree for such worlds.
MAX_FINEST_CELLS = 2 ** 24

#: A level's window of at most this many cells is enumerated cell by cell;
#: a larger one (a large distance scale or probe radius) is enumerated only
#: when the level has at least as many non-empty cells, and otherwise those
#: are filtered by the window (:func:`culling.grid.walk.visit`), so a level
#: costs O(min(window, max(this, non-empty cells))).  256 (4**4): every
#: window with ``scale <= 1`` (at most ``4**dim`` cells) and most with
#: ``scale <= 3`` are enumerated without the sorted index of non-empty
#: cells, which is built (O(objects), once per mutation) only for a larger one.
MAX_ENUMERATED_CELLS = 256

#: No occupied index (:attr:`culling.core.structs.Cells.occupied`): every window is enumerated.
_NO_INDEX = np.empty(0, dtype=np.int64)



class DenseViewDistanceGrid(Structure):
    """Dense per-level grids of view-distance spheres in a fixed world.

    The same interface as :class:`~culling.tree.tree.ViewDistanceTree`, with O(1)
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
    about ``8/7`` of the finest level in 3D), plus per object
    ``8 + 8*(dim+2)`` bytes per pool entry (about 1.9 to 3 entries with the
    blocks' and the pool's slack) and 17 bytes of per-handle arrays.  :meth:`nbytes`
    reports the total; docs/DENSE.md has the formula and the trade-off.

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
    >>> grid.insert((2000.0, 0.0), 1.0)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: centre must lie in the grid's world [[0.0, 0.0], [1024.0, 1024.0]) ...
    """

    def __init__(self, size: Real, origin: ArrayLike | None = None, dim: int = 3, shape: str = "sphere",
                 min_radius: Real | None = None) -> None:
        super().__init__(size, origin, dim, shape)
        self._finest, self._min_radius = self._finest_level(min_radius)
        self._geo = geo = GridGeometry(self.size, self.origin, self.finest_level)
        self._finest_edge = float(geo.cell_size[-1])
        self._origin_list = self.origin.tolist()
        self._hi_list = geo.hi.tolist()
        self._cube = shape == "cube"
        span, edge = self._narrowest_cell()
        if geo.cell_size[-1] < edge:
            raise ValueError(f"finest cells of {geo.cell_size[-1]:g} are too small for float64 coordinates near "
                             f"{span:g} (4 ulps of them, {edge:g}, at least); {self._coarsest_fit(edge)}")
        # Cell members, each with its sphere as a pool row, as in the tree's pool (the query
        # kernels of culling.core.members read both): the centre's axes, the radius and the squared
        # reach (culling.core.containment.squared_reach) that makes the sphere test root-free.
        self._cells = CellPool(geo.cell_count, columns=self.dim + 2)
        self._level_count = np.zeros(self.finest_level + 1, dtype=np.int64)
        self._count = 0
        self._reset_objects()

    def _reset_objects(self) -> None:
        """Empty per-object arrays and handles from 0: at construction and whenever the grid empties.

        With :meth:`CellPool.clear` an emptied grid holds no more memory than a new one.
        """
        # Objects, indexed by handle: level (-1 for a free handle); cell and slot in self._cells.
        level, ids = np.full(0, -1, dtype=np.int8), HandleStack()
        self._cells.clear()  # all made, then all replaced: a MemoryError leaves an emptied grid as it was
        self._level, self._ids = level, ids
        self._handle_check = 1 << 62  # objects below which the next trim of the per-handle arrays is tried
        self._handle_blocker = (-1, 0)  # the live handle that stopped the last try, and the objects then

    def _narrowest_cell(self) -> tuple[float, float]:
        """The largest coordinate magnitude in the world and the narrowest cell edge float64 can
        place there (4 ulps of it)."""
        span = float(np.abs(np.concatenate([self.origin, self.origin + self.size])).max())
        return span, 4 * math.ulp(span)

    def _coarsest_fit(self, edge: float) -> str:
        """What to do where finest cells must be at least ``edge`` wide: the smallest ``min_radius`` whose
        finest level has cells that wide (exact: ``size / 2**k``), or move the origin when even the
        whole world's one cell is narrower."""
        if self.size < edge:
            return "move the origin nearer 0 or use the tree"
        level = 0
        while math.ldexp(self.size, -(level + 1)) >= edge:
            level += 1
        return f"use min_radius >= {math.ldexp(self.size, -(level + 2))!r} (size/2**{level + 2}), move the origin or use the tree"

    def _finest_level(self, min_radius: Real | None) -> tuple[int, float]:
        """The finest level and the min_radius it stands for, validated."""
        max_level = (MAX_FINEST_CELLS.bit_length() - 1) // self.dim
        if min_radius is None:
            level = (DEFAULT_FINEST_CELLS.bit_length() - 1) // self.dim
            return level, math.ldexp(self.size, -(level + 2))
        try:
            value = as_real(min_radius, "min_radius")  # a 0-d array too, as every other number
        except TypeError:
            raise ValueError(f"min_radius must be a finite number > 0, got {min_radius!r}") from None
        if not math.isfinite(value) or value <= 0:
            raise ValueError(f"min_radius must be a finite number > 0, got {min_radius!r}")
        if 2.0 * value >= self.size:  # value >= size/2 exactly: a subnormal size's half rounds, the double never
            raise ValueError(f"min_radius must be below size/2 = {self.size / 2:g}, got {value:g}")
        level = 0
        while value < math.ldexp(self.size, -(level + 2)):
            level += 1
            if level > max_level:
                _, edge = self._narrowest_cell()  # the bound's cells may still be too narrow for the origin
                fit = (self._coarsest_fit(edge) if math.ldexp(self.size, -max_level) < edge else
                       f"use min_radius >= {math.ldexp(self.size, -(max_level + 2))!r} (size/2**{max_level + 2}) "
                       "or the tree")
                raise ValueError(f"min_radius={value!r} needs more than MAX_FINEST_CELLS = "
                                 f"2**{MAX_FINEST_CELLS.bit_length() - 1} cells on the finest level; {fit}")
        return level, value

    # ------------------------------------------------------------------
    # Size and membership

    def __repr__(self) -> str:
        return (f"DenseViewDistanceGrid(size={self.size}, origin={self._origin_list}, dim={self.dim}, "
                f"shape={self.shape!r}, min_radius={self.min_radius!r}, objects={self._count})")

    @property
    def finest_level(self) -> int:
        """The finest level, fixed at construction by ``min_radius`` (the root is level 0)."""
        return self._finest

    @property
    def min_radius(self) -> float:
        """The ``min_radius`` the grid was made with (or its default): the finest level's radii start there."""
        return self._min_radius

    @property
    def node_count(self) -> int:
        """Number of non-empty cells (the counterpart of the tree's nodes)."""
        return self._cells.nonempty

    @property
    def cell_count(self) -> int:
        """Cells over all levels, allocated up front: ``sum_L 2**(L*dim)``."""
        return self._geo.cell_count

    @property
    def level_counts(self) -> np.ndarray:
        """Objects stored on each level, int64 (finest_level + 1,), a copy."""
        return self._level_count.copy()

    @reading
    def nbytes(self) -> int:
        """Bytes held in NumPy arrays (cells, pool and objects), without Python overhead."""
        return self._cells.nbytes() + sum(a.nbytes for a in (self._level, self._ids, self._level_count))

    # ------------------------------------------------------------------
    # Mutation: single objects, O(1) (amortised when arrays or a block grow)

    @writing
    def insert(self, centre: ArrayLike, radius: Real) -> int:
        """Add one sphere; returns its handle.  O(1) amortised.

        Parameters
        ----------
        centre : array_like, shape (dim,) (a scalar for dim 1), inside the world
        radius : float, >= 0 and < size/2, the object's view distance
        """
        point = as_coords(centre, self.dim, "centre")
        radius = as_radius(radius)
        level, cell = self._home(point, radius)
        handle = int(self._peek_handles(1)[0])
        self._cells.link(handle, cell, self._row(point, radius))  # allocates (if at all) before it writes
        self._take_handles(1)
        self._level[handle] = level
        self._level_count[level] += 1
        self._count += 1
        return handle

    @writing
    def update(self, handle: Handle, centre: ArrayLike, radius: Real | None = None) -> None:
        """Move or resize one object (``radius`` None: it keeps its radius).  O(1): when it stays in its cell only its
        centre and radius are written; otherwise one unlink and one link, after the room for the link
        is made (all or nothing: a ``MemoryError`` leaves the object where it was)."""
        handle = self._live(handle)
        point = as_coords(centre, self.dim, "centre")
        radius = self._stored_radius(handle) if radius is None else as_radius(radius)
        level, cell = self._home(point, radius)
        row = self._row(point, radius)
        if cell == self._cells.cell[handle]:
            self._cells.columns[:, self._cells.position(handle)] = row
            return
        self._cells.reserve_link(cell)  # first: a MemoryError changes nothing
        self._level_count[self._level[handle]] -= 1
        self._cells.unlink(handle)  # no repack: it would give back the room just reserved
        self._cells.link(handle, cell, row)  # allocates nothing: the room is there
        self._level[handle] = level
        self._level_count[level] += 1

    @writing
    def remove(self, handle: Handle) -> None:
        """Remove one object; its handle may be handed out again.  O(1)."""
        handle = self._live(handle)
        self._ids.make_room(1)  # first: a MemoryError there changes nothing
        self._cells.unlink(handle)
        self._level_count[self._level[handle]] -= 1
        self._level[handle] = -1
        self._ids.release(handle)
        self._count -= 1
        self._after_removal()

    # ------------------------------------------------------------------
    # Mutation: batches, validated whole before anything changes

    @writing
    def insert_many(self, centres: ArrayLike, radii: ArrayLike) -> np.ndarray:
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
        level_count = self._level_count + np.bincount(levels, minlength=self._level_count.size)
        with self._new_handles(centres.shape[0]) as handles:  # room for them first; handed out below
            if handles.size:
                # link_many allocates before it writes: a MemoryError changes nothing.
                self._cells.link_many(handles, cells, np.vstack([centres.T, radii, squared_reach(radii)]))
                self._take_handles(handles.size)
        if handles.size:
            self._level[handles] = levels
            self._level_count[:] = level_count
            self._count += handles.size
        return handles

    @writing
    def update_many(self, handles: ArrayLike, centres: ArrayLike, radii: ArrayLike | None = None) -> None:
        """Move or resize many objects; ``radii`` omitted (``None``) keeps each object's stored radius.

        Objects that stay in their cell cost one vectorised store each and
        touch no cell; the others are unlinked and linked in batch.  O(n)
        plus O(movers log movers), no Python loop.
        """
        handles = self._live_many(handles)
        check_unique(handles)
        centres = as_points(centres, self.dim, "centres")
        if centres.shape[0] != handles.size:  # before the radii: they are checked against the centres
            raise ValueError(f"centres must have shape ({handles.size}, {self.dim}) to match "
                             f"the handles, got {centres.shape}")
        pool_rows, dim = self._cells.columns, self.dim
        pos = self._cells.positions(handles)
        radii = pool_rows[dim][pos] if radii is None else as_radii(radii, centres.shape[0])
        # The squared reach only changes with the radius: recompute it for the resized only.
        resized = radii != pool_rows[dim][pos]
        levels, cells = self._homes(centres, radii)
        if not handles.size:
            return
        rows = np.empty((pool_rows.shape[0], handles.size))
        rows[:dim] = centres.T
        rows[dim] = radii
        rows[dim + 1] = pool_rows[dim + 1][pos]
        rows[dim + 1, resized] = squared_reach(radii[resized])
        move = cells != self._cells.cell[handles]
        go = np.flatnonzero(move)
        movers = handles[go]
        # Planned whole (CellPool.relink), then written by scatters that allocate nothing: all or nothing.
        # Every row is rewritten in place, the movers' too (their old rows are then filled or given up):
        # no copy of the stayers' rows.
        relink = self._cells.relink(movers, movers, cells[go], rows.take(go, axis=1), (handles, pos, rows))
        size = self._level_count.size
        level_count = self._level_count - np.bincount(self._level[movers], minlength=size) \
            + np.bincount(levels[go], minlength=size)
        levels = levels[go]
        relink.write()
        self._level[movers] = levels
        self._level_count[:] = level_count

    @writing
    def remove_many(self, handles: ArrayLike) -> None:
        """Remove many objects, vectorised: O(n log n), no Python loop."""
        handles = self._live_many(handles)
        check_unique(handles)
        if not handles.size:
            return
        self._ids.make_room(handles.size)  # first: a MemoryError there changes nothing
        level_count = self._level_count - np.bincount(self._level[handles], minlength=self._level_count.size)
        self._cells.unlink_many(handles)  # allocates before it writes; the repack after (_after_removal)
        self._level_count[:] = level_count
        self._level[handles] = -1
        self._ids.release(handles)
        self._count -= handles.size
        self._after_removal()

    # ------------------------------------------------------------------
    # Queries

    def _rows(self) -> tuple[np.ndarray, np.ndarray]:
        return self._cells.columns, self._cells.handles

    def _tested(self, points: np.ndarray, exact: bool, scale: float) -> members.Tested:
        """Every point's non-empty cells (:func:`culling.grid.walk.visits`), then their members tested
        (:func:`culling.core.members.test_many`)."""
        visit_run, visit_point, run_start, run_count, _ = gridwalk.visits(
            points, scale, self._world(), self._cell_arrays(scale), MAX_ENUMERATED_CELLS)
        return members.test_many(visit_run, visit_point, points, run_start, run_count, self._pool_arrays(),
                                   (scale, exact, self._cube, False))

    def _probe_chunk(self, points: np.ndarray, grows: np.ndarray, exact: bool,
                     scale: float) -> Callable[[int, int], Parts]:
        """The probes' cells (:func:`culling.grid.walk.grown_visits`), then their members
        (:func:`culling.grid.probe.probe_visits`)."""
        grow = float(grows.max()) if grows.size else 0.0
        query, world, cell_arrays, pool = (scale, exact, self._cube, False), self._world(), \
            self._cell_arrays(scale, grow), self._pool_arrays()

        def chunk(lo: int, hi: int) -> Parts:
            visit_run, visit_point, run_start, run_count, _ = gridwalk.grown_visits(
                points[lo:hi], grows[lo:hi], scale, world, cell_arrays, MAX_ENUMERATED_CELLS)
            handles, counts, unsure, owners = probe.probe_visits(visit_run, visit_point, run_start, run_count,
                                                                 points[lo:hi], grows[lo:hi], query, pool)
            return handles, counts, unsure, owners + lo

        return chunk

    @reading
    def query_spheres(self, point: ArrayLike, exact: bool = False,
                      scale: Real = 1.0) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Like :meth:`query`, with each answer's centre and radius (as the tree's).

        Returns
        -------
        handles : ndarray, shape (k,), int64
        centres : ndarray, shape (k, dim), float64, a fresh array
        radii : ndarray, shape (k,), float64, a fresh array

        Cost: O(levels + candidates), read from the visited cells' contiguous runs.
        """
        p = np.array(as_coords(point, self.dim, "point"))
        scale = as_scale(scale)
        rows = self._settled(*self._query(p, as_flag(exact), scale, True), p, scale, True)
        columns = self._cells.columns
        return self._cells.handles[rows], columns[: self.dim, rows].T.copy(), columns[self.dim, rows]

    @reading
    def overlapping_pairs(self) -> tuple[np.ndarray, np.ndarray]:
        """Every unordered pair of distinct stored spheres that meet: ``distance(c_i, c_j) <= r_i + r_j``.

        Returns ``(first, second)``, int64, ``first < second``, each pair once,
        as :meth:`ViewDistanceTree.overlapping_pairs <culling.ViewDistanceTree.overlapping_pairs>`:
        the non-empty cells' levels and coordinates (:func:`culling.pairs.cell_tree.cell_runs`)
        joined by bands of levels (:func:`culling.pairs.join.overlapping_pairs`),
        or, for members in a few clusters far apart, the non-empty cells and
        their ancestors as a tree (:func:`culling.pairs.cell_tree.cell_tree`)
        joined with itself.  O(objects + pairs of members within reach of each
        other), never O(cells): both read the sorted index of non-empty cells.
        Members far smaller than ``min_radius`` share their finest cell; a
        crowded one is split by finer levels first (:func:`culling.pairs.cell_tree.split_crowded`),
        in a copy of the pool.
        """
        if self._count < 2:
            return np.empty(0, dtype=np.int64), np.empty(0, dtype=np.int64)
        cells, offsets, dim = self._cells, self._geo.offsets, self.dim
        occupied, at = self._occupied()

        def tree() -> tuple[int, np.ndarray, np.ndarray, np.ndarray]:
            return (0, *cell_tree.cell_tree(occupied, at, cells.start, cells.count, offsets, dim))

        runs, handles, columns = cell_tree.split_crowded(
            cell_tree.cell_runs(occupied, at, cells.start, cells.count, offsets, dim), cells.handles, cells.columns,
            self.finest_level, self.origin, self.size)
        return join.overlapping_pairs(runs, handles, columns, self._count, (self.origin, self.size, 0.0),
                                      self._cube, self.shape, tree, self._band_plans)

    @reading
    def trace(self, point: ArrayLike, scale: Real = 1.0) -> QueryTrace:
        """What ``query(point, scale=scale)`` visits, level by level.

        The listed nodes are the cells the query reads (non-empty cells
        whose grown box contains the point) and their ancestors, as the
        tree lists its existing nodes: depth 0 is the world's single level-0
        cell, every listed cell's parent is listed, and the levels run down
        to the deepest level where the query read a cell, without gaps
        (levels between hold only ancestors: 0 objects).  Empty cells in the
        windows are not listed: a fine grid's windows at a large ``scale``
        hold millions of them.

        Cost: O(levels x (read cells + 1) + candidates): a window larger than
        its level's non-empty cells is not enumerated (:func:`culling.grid.walk.visit`).
        """
        p = np.array(as_coords(point, self.dim, "point"))
        scale = as_scale(scale)
        if not self._count:
            return QueryTrace(point=p, candidates=np.empty(0, dtype=np.int64), levels=[])
        visited, ends, counts = self._traced_cells(p, scale)
        return self._trace_of(p, scale, visited, ends, counts)

    def _traced_cells(self, p: np.ndarray, scale: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The cells a query at ``p`` reads (:func:`culling.grid.walk.trace_visit`) with their ancestors
        (:meth:`GridGeometry.with_ancestors <culling.grid.geometry.GridGeometry.with_ancestors>`), level by
        level; ``ends``: where each level's cells end; ``counts``: each listed cell's members that the query
        reads, int64, 0 for an ancestor it does not read.  The grid decides each level's window on its own
        (no ancestor prunes it): where a tiny scale keeps a cell it cannot decide on a fine level, that
        cell's ancestor may lie outside its level's window, and counting the ancestor's members made the
        trace's candidates more than the query's."""
        read, read_ends, _ = gridwalk.trace_visit(p, scale, self._world(), self._cell_arrays(scale),
                                                  MAX_ENUMERATED_CELLS)
        visited, ends = self._geo.with_ancestors(read, read_ends)
        counts = self._cells.count[visited].astype(np.int64)
        counts[~np.isin(visited, read)] = 0
        return visited, ends, counts

    def _walked(self, p: np.ndarray, scale: float) -> Walked:
        """The cells one query reads and their ancestors (:meth:`_traced_cells`) as :class:`Walked`
        (0 members for an ancestor it does not read)."""
        visited, ends, counts = self._traced_cells(p, scale)
        cells = self._cells
        return Walked(cells.start[visited].astype(np.int64), counts, self._pool_arrays(), cells.columns,
                      cells.handles, lambda: self._trace_of(p, scale, visited, ends, counts))

    def _trace_of(self, p: np.ndarray, scale: float, visited: np.ndarray, ends: np.ndarray,
                  counts: np.ndarray) -> QueryTrace:
        """The :class:`QueryTrace` of one walk's visited cells (``ends``: where each level's cells end;
        ``counts``: the members each one's query reads)."""
        pool, geo = self._cells, self._geo
        candidates = members.gather(np.arange(visited.size), pool.start[visited].astype(np.int64), counts,
                                    pool.handles)
        levels = []
        first = 0
        for level, last in enumerate(ends.tolist()):
            lo, hi = geo.bounds(level, geo.coords(visited[first:last], np.full(last - first, level)))
            w = float(geo.cell_size[level])
            margin = 0.0 if level == 0 else scale * w / 2
            with np.errstate(over="ignore"):
                loose = np.stack([lo - margin, hi + margin], axis=1)
            levels.append(LevelTrace(depth=level, level=level, node_size=w, bounds=np.stack([lo, hi], axis=1),
                                     loose_bounds=loose, objects=int(counts[first:last].sum())))
            first = last
        return QueryTrace(point=p, candidates=candidates, levels=levels)

    def _query(self, p: np.ndarray, exact: bool, scale: float, want_rows: bool) -> tuple[np.ndarray, int]:
        """One point's answer from its visited cells' runs (:func:`culling.grid.walk.visits`, then
        :func:`culling.core.members.answer`): ``(found, sure)``, the sure handles (or pool rows), then the
        unsure rows."""
        if not self._count:
            return np.empty(0, dtype=np.int64), 0
        world, cells, pool, _ = self._current(self._structs)
        if scale > 1.0 and self._needs_index(scale, 0.0):  # scale <= 1: at most 4**dim <= 64 cells a window
            cells = self._cell_arrays(scale)
        found, sure, _ = gridwalk.query(p, (scale, exact, self._cube, want_rows), world, cells, pool,
                                        MAX_ENUMERATED_CELLS)
        return found, sure

    def _structs(self) -> tuple[WorldFields, CellsFields, PoolFields, list[tuple[np.ndarray, np.ndarray]]]:
        """What the kernels read, remade after each mutation (:meth:`_current`), with an empty list where
        the occupied index is kept once built (:meth:`_occupied`): it lives and dies with this state."""
        cells = self._cells
        plain = self._geo.offsets, self._level_count, cells.start, cells.count, _NO_INDEX, _NO_INDEX
        return self._world(), plain, self._pool_arrays(), []

    def _world(self) -> WorldFields:
        """The :class:`~culling.core.structs.World` the kernels read, as a plain tuple (the root is cell 0)."""
        return self.origin, self.size, 0, 0

    def _cell_arrays(self, scale: float = 1.0, grow: float = 0.0) -> CellsFields:
        """The :class:`~culling.core.structs.Cells` the kernels read, as a plain tuple: with the occupied
        index when a window of ``scale`` (probe radius ``grow``) may exceed :data:`MAX_ENUMERATED_CELLS`."""
        cells = self._cells
        occupied, at = self._occupied() if self._needs_index(scale, grow) else (_NO_INDEX, _NO_INDEX)
        return self._geo.offsets, self._level_count, cells.start, cells.count, occupied, at

    def _needs_index(self, scale: float, grow: float) -> bool:
        """Whether a window of ``scale`` (probe radius ``grow``) may hold more than
        :data:`MAX_ENUMERATED_CELLS` cells (:func:`culling.grid.walk.window_cells`)."""
        return gridwalk.window_cells(scale, grow, self._finest_edge, self.finest_level,
                                     self.dim) > MAX_ENUMERATED_CELLS

    def _occupied(self) -> tuple[np.ndarray, np.ndarray]:
        """The non-empty cells' ids ascending, int64 (k,), and where each level's begin, int64 (levels + 1,).

        Found from each non-empty cell's member in slot 0: O(objects), once per
        mutation (kept with :meth:`_structs`, so a copy or a mutation drops it);
        readers racing to build it build the same.
        """
        kept = self._current(self._structs)[3]
        if not kept:
            cells = self._cells
            occupied = np.sort(cells.cell[(cells.cell >= 0) & (cells.slot == 0)].astype(np.int64))
            kept.append((occupied, np.searchsorted(occupied, self._geo.offsets).astype(np.int64)))
        return kept[0]

    def _pool_arrays(self) -> PoolFields:
        """The :class:`~culling.core.structs.Pool` the kernels read, as a plain tuple (no tiles)."""
        return self._cells.handles, self._cells.columns, _NO_TILES[self.dim]

    # ------------------------------------------------------------------
    # The invariant checker

    @reading
    def check_invariants(self) -> None:
        """Assert every structural rule; O(cells + objects).  For tests."""
        n = self._next_handle
        alive = self._level[:n] >= 0
        live = np.flatnonzero(alive)
        assert live.size == self._count, "len() disagrees with live handles"
        self._ids.check(alive)
        assert (self._level[n:] == -1).all(), "an unissued handle is live"
        self._cells.check(alive)
        levels = self._level[live].astype(np.int64)
        assert (np.bincount(levels, minlength=self._level_count.size) == self._level_count).all(), \
            "per-level counts are wrong"
        # Home cell: a pure function of (centre, radius), inside its box in world coordinates.
        geo = self._geo
        rows = self._cells.columns[:, self._cells.positions(live)]
        centres, radii = rows[: self.dim].T, rows[self.dim]
        assert (rows[self.dim + 1] == squared_reach(radii)).all(), "stale squared reach"
        assert np.isfinite(centres).all() and np.isfinite(radii).all() and (radii >= 0).all()
        high = np.flatnonzero((geo.placed(centres) >= 1.0).any(axis=0))
        assert (centres >= self.origin).all() and not self._beyond_top(centres, high).any(), "a centre outside the world"
        expected_levels, expected_cells = geo.homes(centres, radii)
        assert (levels == expected_levels).all(), "object on the wrong level"
        cells = self._cells.cell[live].astype(np.int64)
        assert (cells == expected_cells).all(), "object in the wrong cell"
        # radius < size / 2**(level + 1), exactly: a subnormal size's cell edge rounds (r times 2**k does not)
        coarse = levels < self.finest_level  # the home level rounds radius / size: an ulp below W/4 may stay
        with np.errstate(over="ignore", under="ignore"):   # a subnormal result is exact here; NumPy flags it
            assert (np.ldexp(radii, levels + 1) < self.size).all(), "radius not below half its cell's edge"
            assert (np.ldexp(radii[coarse], levels[coarse] + 2) >= self.size * (1.0 - 2.0 ** -49)).all(), \
                "radius below a quarter of a coarse cell's edge"

    # ------------------------------------------------------------------
    # Internals

    def _row(self, point: list[float], radius: float) -> list[float]:
        """One object's pool row: centre, radius and the scalar :func:`squared_reach`."""
        return point + [radius, squared_reach_of(radius)]

    def _home(self, point: list[float], radius: float) -> tuple[int, int]:
        """Level and global cell of one validated sphere; ``ValueError`` outside the world."""
        if 2.0 * radius >= self.size or not all(o <= c and placed_u(c, o, self.size) < 1.0 for c, o in
                                                zip(point, self._origin_list)):
            self._homes(np.array([point]), np.array([radius]), single=True)  # raises the ValueError, if outside
        return self._geo.home(point, radius)

    def _beyond_top(self, centres: np.ndarray, rows: np.ndarray) -> np.ndarray:
        """Of ``rows`` (centres whose placed coordinate reads 1.0 or more on some axis), those at or beyond
        ``origin + size`` on some axis in exact arithmetic.  The placed coordinate is exact but in a
        world beyond about ``2**995`` or below ``2**-960`` (the face tests' range), where within
        rounding of the top face it reads 1.0 for a centre still inside; rare rows, so in fractions."""
        if not rows.size:
            return np.zeros(0, dtype=bool)
        top = [Fraction(o) + Fraction(self.size) for o in self._origin_list]
        return np.array([any(Fraction(float(centres[i, axis])) >= top[axis] for axis in range(self.dim))
                         for i in rows.tolist()], dtype=bool)

    def _homes(self, centres: np.ndarray, radii: np.ndarray, single: bool = False) -> tuple[np.ndarray, np.ndarray]:
        """Levels and global cells (int64 (n,) each) of many validated spheres.

        ``ValueError`` for a centre outside ``[origin, origin + size)`` or a
        radius of ``size / 2`` or more (``single``: worded for one object's call).
        """
        outside = np.zeros(centres.shape[0], dtype=bool)
        for axis, lo in enumerate(self._origin_list):
            outside |= centres[:, axis] < lo
        u = self._geo.placed(centres)
        high = np.flatnonzero((u >= 1.0).any(axis=0) & ~outside)  # at or beyond origin + size, but where
        outside[high] = self._beyond_top(centres, high)             # the world is huge or tiny: exactly
        if outside.any():
            i = int(np.flatnonzero(outside)[0])
            which = f"got {centres[i].tolist()}" if single else f"centres[{i}] is {centres[i].tolist()}"
            raise ValueError(f"{'centre' if single else 'centres'} must lie in the grid's world "
                             f"[{self._origin_list}, {self._hi_list}) (a dense grid does not grow); {which}")
        with np.errstate(over="ignore"):  # radius >= size/2 exactly: a subnormal size's half rounds, the double never
            too_big = 2.0 * radii >= self.size
        if too_big.any():
            i = int(np.flatnonzero(too_big)[0])
            which = f"got {radii[i]:g}" if single else f"radii[{i}] is {radii[i]:g}"
            raise ValueError(f"{'radius' if single else 'radii'} must be below size/2 = {self.size / 2:g} in a "
                             f"dense grid (it does not grow); {which}")
        return self._geo.homes(centres, radii)

    # Per-object storage, for the base class's accessors and handles

    _owner = "grid"

    def _object_state(self) -> np.ndarray:
        return self._level

    def _object_rows(self, handles: np.ndarray | int) -> tuple[np.ndarray, np.ndarray | int]:
        if isinstance(handles, np.ndarray):
            return self._cells.columns, self._cells.positions(handles)
        return self._cells.columns, self._cells.position(handles)

    def _object_arrays(self) -> tuple[np.ndarray, ...]:
        return self._level, self._cells.cell, self._cells.slot

    def _put_object_arrays(self, arrays: tuple[np.ndarray, ...]) -> None:
        self._level, self._cells.cell, self._cells.slot = arrays

    def _after_removal(self) -> None:
        """Give memory back: reset an emptied grid; cut the per-handle arrays to the highest live handle
        when they hold far more than the objects left need (as the tree's, amortised O(1) per removal).
        The pool gives its own back here too (:meth:`CellPool.give_back`), once the removal's bookkeeping is done."""
        try:
            if not self._count:
                self._reset_objects()
                return
            self._cells.give_back()
            if self._trim_due():
                self._trim_handles()
        except OUT_OF_MEMORY as exc:  # giving memory back is optional: the removal itself is done
            logger.warning("no memory to give the grid's arrays back after a removal (%s); it keeps them",
                           type(exc).__name__)

    def _grow_objects(self, needed: int) -> None:
        """Per-object arrays for ``needed`` handles: all allocated, then all replaced."""
        capacity = max(needed, int(self._level.shape[0] * ARRAY_GROWTH) + 8)
        old = self._level.shape[0]
        level = growth.allocate((capacity,), np.int8, -1)
        self._cells.reserve_objects(capacity)
        level[:old] = self._level
        self._level = level
