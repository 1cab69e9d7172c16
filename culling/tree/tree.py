"""The view-distance tree: which spheres contain a point, in O(levels + output).

Each object is a sphere whose radius is its maximum view distance.  A node of
edge ``W`` keeps the spheres whose centre lies in its half-open box and whose
radius lies in ``[W/4, W/2)``; smaller spheres live further down, larger ones
further up.  Because everything below a node of edge ``W`` has a radius under
``W/2``, a query point can only reach it from inside the node's box grown by
``W/2`` on every side, and at most two such boxes per axis contain any point:
a query visits at most ``2**dim`` nodes per level, however many objects crowd
the world elsewhere.

Nodes are named by ``(level, cell)`` (see :mod:`culling.core.lattice`) and found by
descending the child links from the root, one bit of the cell per level, so a
sphere's home node, and the nodes a query visits, are computed, not searched for.  Objects live in a :class:`~culling.tree.pool.BlockPool`, each
node's members in one contiguous block; an object knows its node and its row,
so removal is O(1).

>>> tree = ViewDistanceTree(size=1024.0, dim=2)
>>> grass = tree.insert((10.0, 10.0), 20.0)
>>> tower = tree.insert((900.0, 900.0), 2000.0)
>>> sorted(tree.query((15.0, 12.0), exact=True).tolist())
[0, 1]
>>> tree.query((100.0, 100.0), exact=True).tolist()
[1]
>>> tree.update(grass, (95.0, 95.0), 20.0)
>>> sorted(tree.query((100.0, 100.0), exact=True).tolist())
[0, 1]
>>> tree.remove(tower); len(tree)
1
"""

from __future__ import annotations

import logging
from collections.abc import Callable

import numpy as np
from numpy.typing import ArrayLike

import culling.tree.batch as batch
import culling.tree.inverted as inverted
import culling.tree.probe as probe
import culling.tree.root as root_growth
import culling.tree.walk as walk
from culling.core import chunks, growth, members
from culling.core.cells import home
from culling.core.containment import reach_of
from culling.core.growth import HANDLE_SHRINK_RATIO, OUT_OF_MEMORY, grown
from culling.core.handles import HandleStack
from culling.core.lattice import ANCHOR, MAX_DEPTH, MAX_GROWTH, Lattice
from culling.core.structs import (
    NodesFields,
    Objects,
    ObjectsFields,
    Pool,
    PoolFields,
    World,
    WorldFields,
    nodes_of,
)
from culling.core.tiles import cover_row
from culling.core.validation import (
    Handle,
    as_coords,
    as_flag,
    as_handles,
    as_points,
    as_radii,
    as_radius,
    as_scale,
    check_unique,
)
from culling.interface import Real
from culling.pairs import join
from culling.runtime.interrupts import hold_interrupts, release_interrupts, unmask_interrupt
from culling.runtime.jit import kernel
from culling.runtime.locks import reading, writing
from culling.structure import Parts, Structure, Walked
from culling.trace import LevelTrace, QueryTrace
from culling.tree.batch import unlink
from culling.tree.checker import check_tree
from culling.tree.nodes import NodeTable, prune_nodes
from culling.tree.pool import BlockPool, release_dead

__all__ = ["HANDLE_SHRINK_RATIO", "INSIDE", "MAX_DEPTH", "MAX_GROWTH", "OUTSIDE", "STAYS", "ViewDistanceTree"]

logger = logging.getLogger(__name__)

#: What :func:`_home_one` found: the sphere's home is the object's node (its row now holds the sphere),
#: another node below the root, or a node outside the root (the root must grow, or the sphere is
#: outside the world).
STAYS, INSIDE, OUTSIDE = 0, 1, 2

#: ``query_many`` walks its points along a Morton curve (:func:`culling.tree.batch.query_order`) from
#: this many on; fewer are walked in the caller's order, where the order's two passes and the answer's
#: copy back would cost more than the shared nodes save (viewers of the interest crowd over 100k
#: entities, alternated: 64 points 552 against 525 us, 128 points 926 against 959 us, 256 points
#: 1.66 against 1.80 ms, 1,024 points 5.9 against 8.1 ms).
QUERY_ORDER_MIN = 128

#: No values for :func:`culling.tree.batch.check_handles`: the handles alone are checked.
_NO_CENTRES, _NO_RADII = np.empty((0, 3)), np.empty(0)


class ViewDistanceTree(Structure):
    """A loose octree (quadtree, binary tree for dim 2, 1) of view-distance spheres.

    Parameters
    ----------
    size : float
        Edge length of the root node.  The root grows on demand (up to
        ``MAX_GROWTH`` levels) for spheres outside it or with a radius of
        ``size / 2`` or more, so this is a hint, not a limit.
    origin : array_like, shape (dim,), optional
        Low corner of the root node; zeros by default.
    dim : {1, 2, 3}
    shape : {"sphere", "cube"}
        The exact test: Euclidean distance (sphere) or the largest per-axis
        distance (axis-aligned cube whose half edge is the radius).
    """

    def __init__(self, size: Real, origin: ArrayLike | None = None, dim: int = 3, shape: str = "sphere") -> None:
        super().__init__(size, origin, dim, shape)
        self._lattice = Lattice(self.size, self.origin)
        self._origin_list = self.origin.tolist()
        self._cube = self.shape == "cube"
        self._key = np.zeros((1, self.dim + 1), dtype=np.int64)  # one home key, (level, cell...): _home's answer
        self._count = 0
        self._reset_storage()

    def _reset_storage(self) -> None:
        """Fresh, minimal arrays: at construction, and whenever the tree becomes empty.

        An emptied tree so holds no more memory than a new one, and handles
        start again from 0 (a removed handle may be handed out again).
        """
        # Pool columns: the centre's axes, the radius, and the squared reach
        # (see shapes.squared_reach) that makes the exact test root-free.
        pool = BlockPool(self.dim + 2)
        # Objects, indexed by handle: their node (-1 when the handle is free)
        # and their row in the pool.  Centre and radius live in the pool row.
        obj_node = growth.allocate((16,), np.int64, -1)
        obj_pos = growth.allocate((16,), np.int64, 0)
        ids = HandleStack()
        nodes = NodeTable(self.dim)
        root = nodes.new(0, (ANCHOR,) * self.dim, -1)
        # All made, then all replaced: a MemoryError while making them leaves an emptied tree as it was.
        self._pool, self._obj_node, self._obj_pos, self._ids = pool, obj_node, obj_pos, ids
        self._nodes, self._root = nodes, root
        self._handle_check = 1 << 62  # objects below which the next trim of the per-handle arrays is tried
        self._handle_blocker = (-1, 0)  # the live handle that stopped the last try, and the objects then

    def _after_removal(self) -> None:
        """Give memory back: reset an empty tree, compact a pool mostly garbage.

        Amortised O(1) per removal: after a compaction the pool holds fewer than
        2 rows per object, and the next one needs more than ``SHRINK_RATIO``
        (12), so at least five objects in six were removed in between.
        """
        try:
            if not self._count:
                self._reset_storage()
                return
            if self._pool.wasteful(self._count):
                self._compact()
            if self._nodes.wasteful():
                self._compact_nodes()
            if self._trim_due():
                self._trim_handles()
        except OUT_OF_MEMORY as exc:  # giving memory back is optional: the removal itself is done
            logger.warning("no memory to give the tree's arrays back after a removal (%s); it keeps them",
                           type(exc).__name__)

    def _compact_nodes(self) -> None:
        """Renumber the live nodes into a table sized to them (:meth:`NodeTable.compact`); O(nodes + objects)."""
        renumber = self._nodes.compact()
        live = np.flatnonzero(self._obj_node[: self._next_handle] >= 0)
        self._obj_node[live] = renumber[self._obj_node[live]]
        self._root = int(renumber[self._root])

    # Per-object storage, for the base class's accessors and handles

    _owner = "tree"

    def _object_state(self) -> np.ndarray:
        return self._obj_node

    def _object_rows(self, handles: np.ndarray | int) -> tuple[np.ndarray, np.ndarray | int]:
        return self._pool.columns, self._obj_pos[handles]

    def _grow_objects(self, needed: int) -> None:
        obj_node = grown(self._obj_node, needed, -1)
        obj_pos = grown(self._obj_pos, needed, 0)
        self._obj_node, self._obj_pos = obj_node, obj_pos

    def _object_arrays(self) -> tuple[np.ndarray, ...]:
        return self._obj_node, self._obj_pos

    def _put_object_arrays(self, arrays: tuple[np.ndarray, ...]) -> None:
        self._obj_node, self._obj_pos = arrays

    def _compact(self) -> None:
        """Pack every node's members into a fresh pool (:meth:`BlockPool.compact_nodes`); O(objects + nodes)."""
        self._pool.compact_nodes(self._nodes, self._obj_pos)

    # ------------------------------------------------------------------
    # Size and membership

    def __repr__(self) -> str:
        return (f"ViewDistanceTree(size={self.size}, origin={self._origin_list}, dim={self.dim}, "
                f"shape={self.shape!r}, objects={self._count}, nodes={self.node_count})")

    @property
    def node_count(self) -> int:
        """Number of live nodes, the root included."""
        return self._nodes.live

    @property
    def root_level(self) -> int:
        """Absolute level of the current root: 0, or negative once it has grown."""
        return int(self._nodes.level[self._root])

    def _world(self) -> WorldFields:
        """The :class:`~culling.core.structs.World` the kernels walk, as a plain tuple."""
        return self.origin, self.size, self._root, int(self._nodes.level[self._root])

    @property
    @reading
    def root_bounds(self) -> tuple[np.ndarray, np.ndarray]:
        """``(lo, hi)`` of the current root node."""
        return self._lattice.cell_bounds(self.root_level, self._nodes.cells[:, self._root])

    @reading
    def node_of(self, handle: Handle) -> tuple[int, np.ndarray]:
        """The node an object is stored in: ``(depth, bounds)``, ``depth`` 0 for the current root (as
        :attr:`LevelTrace.depth` and :meth:`node_boxes`), ``bounds`` float64 (2, dim): ``[lo, hi]``.

        The node is the tree's own record, not recomputed from the centre and radius: a level above
        the constructor's ``size`` sits where the root grew (CONTRACT.md, Geometry), not on a grid
        from ``origin``.  For debug views (why did this object show late?).  O(1).
        """
        node = int(self._obj_node[self._live(handle)])
        level = int(self._nodes.level[node])
        lo, hi = self._lattice.cell_bounds(level, self._nodes.cells[:, node])
        return level - self.root_level, np.stack([np.asarray(lo, dtype=np.float64), np.asarray(hi, dtype=np.float64)])

    @reading
    def node_boxes(self, lo: ArrayLike | None = None,
                   hi: ArrayLike | None = None) -> tuple[np.ndarray, np.ndarray]:
        """The live nodes (all, or those whose box overlaps ``[lo, hi]``): for maps and debug views.

        Parameters
        ----------
        lo, hi : array_like, shape (dim,), optional
            A closed box to clip to; both or neither.

        Returns
        -------
        depths : ndarray, shape (k,), int64
            0 for the current root, as :attr:`LevelTrace.depth`.
        bounds : ndarray, shape (k, 2, dim), float64
            ``[lo, hi]`` of each node, deepest levels last.

        Cost: O(nodes), vectorised per level.
        """
        if (lo is None) != (hi is None):
            raise ValueError("give both lo and hi, or neither")
        window = None if lo is None else (np.asarray(as_coords(lo, self.dim, "lo")),
                                          np.asarray(as_coords(hi, self.dim, "hi")))
        if window is not None and np.any(window[0] > window[1]):
            axis = int(np.argmax(window[0] > window[1]))
            raise ValueError(f"lo exceeds hi on axis {axis} ({float(window[0][axis])!r} > {float(window[1][axis])!r}): "
                             f"the box [lo, hi] is empty")
        nodes = self._nodes
        ids = np.flatnonzero(nodes.count[:nodes.issued] >= 0)
        levels = nodes.level[ids]
        depths, boxes = [], []
        for level in np.unique(levels).tolist():
            at = ids[levels == level]
            box_lo, box_hi = self._lattice.cell_bounds(level, nodes.cells[:, at].T)
            box = np.stack([box_lo, box_hi], axis=1)
            if window is not None:
                box = box[np.all((box[:, 1] >= window[0]) & (box[:, 0] <= window[1]), axis=1)]
            depths.append(np.full(box.shape[0], level - self.root_level, dtype=np.int64))
            boxes.append(box)
        if not boxes:
            return np.zeros(0, dtype=np.int64), np.zeros((0, 2, self.dim))
        return np.concatenate(depths), np.concatenate(boxes)

    @reading
    def nbytes(self) -> int:
        """Bytes held in NumPy arrays (objects, nodes and pool), without Python overhead."""
        return (self._pool.nbytes() + self._nodes.nbytes() + self._obj_node.nbytes + self._obj_pos.nbytes
                + self._ids.nbytes)

    # ------------------------------------------------------------------
    # Mutation: single objects

    @writing
    def insert(self, centre: ArrayLike, radius: Real) -> int:
        """Add one sphere; returns its handle.  O(1) amortised (plus root growth).

        Parameters
        ----------
        centre : array_like, shape (dim,) (a scalar for dim 1)
        radius : float, >= 0, the object's view distance
        """
        sphere = self._sphere(centre, radius)
        ids = self._ids
        handle = int(ids.free[-1]) if len(ids) else ids.issued  # what _peek_handles(1) shows, without arrays
        if handle >= self._obj_node.shape[0]:
            self._peek_handles(1)  # room in the per-handle arrays
        self._home(sphere, -1)
        node = self._room_at()
        ids.take(1)
        self._append(node, handle, sphere)
        self._count += 1
        self._shrink_root()
        return handle

    @writing
    def update(self, handle: Handle, centre: ArrayLike, radius: Real | None = None) -> None:
        """Move or resize one object in place (``radius`` None: it keeps its radius, as ``update_many``).

        O(1) when it stays in its node: one kernel call finds its home and,
        when that is its node, rewrites its row (:func:`_home_one`).  Otherwise
        its new home is found (one compiled descent) with room for it, then
        an O(1) unlink, the append, and one compiled pass deleting the old
        node and its ancestors if they emptied.
        """
        handle = self._live(handle)
        sphere = self._sphere(centre, self._stored_radius(handle) if radius is None else radius)
        if self._home(sphere, handle) == STAYS:
            return
        target = self._room_at()  # first: a MemoryError there changes nothing
        try:
            emptied = self._unlink(handle)  # allocates before it writes
        except MemoryError:
            self._drop_empty_nodes()  # a home _room_at made, a grown root
            raise
        self._append(target, handle, sphere)
        self._prune(emptied)

    def remove(self, handle: Handle) -> None:
        """Remove one object: an O(1) unlink, then its node and the ancestors that emptied deleted, in
        one kernel call (:func:`_remove_one`).  O(levels)."""
        held = hold_interrupts()  # as @writing does, which is not used here: its forwarding costs a tenth of a removal
        lock = self._rw
        try:
            lock.acquire_write()
            try:
                handle = self._live(handle)
                self._ids.make_room(1)  # first: a MemoryError there changes nothing
                nodes = self._nodes
                pool = self._pool
                nodes.free_count, pool.spare_count = _remove_one(
                    handle, self._root, (self._obj_node, self._obj_pos), nodes.arrays(),
                    (pool.arrays(), (pool.heads, pool.spare, pool.spare_count)), (nodes.free, nodes.free_count))
                self._ids.release(handle)
                self._shrink_root()
                self._count -= 1
                self._after_removal()
            except SystemError as exc:
                unmask_interrupt(exc)
                raise
            finally:
                lock.release_write()
        finally:
            release_interrupts(held)

    # ------------------------------------------------------------------
    # Mutation: batches (validated whole before anything changes)

    @writing
    def insert_many(self, centres: ArrayLike, radii: ArrayLike) -> np.ndarray:
        """Add many spheres; returns their handles.

        Parameters
        ----------
        centres : array_like, shape (n, dim) (or (n,) for dim 1), float
            The objects' centres, finite.
        radii : array_like, shape (n,), float
            Their view distances (the spheres' radii), finite and not negative.

        Returns
        -------
        handles : ndarray, shape (n,), int64
            One new handle per object, in the order given.

        Compiled passes over the objects (:mod:`culling.tree.batch`) and
        vectorised steps per home node: O(n + homes x depth), no Python step
        per object or per node.
        """
        centres = np.ascontiguousarray(as_points(centres, self.dim, "centres"))
        radii = as_radii(radii, centres.shape[0])
        n = centres.shape[0]
        if not n:
            return np.empty(0, dtype=np.int64)
        with self._new_handles(n) as handles:  # room for them first; handed out only at the commit
            # Along a Morton curve: each node's new members then lie along it too (see culling.core.tiles).
            laid_out, centres, radii = batch.layout_order(centres, radii, handles)
            links = self._prepare_links(centres, radii, rows=lambda: _positions(laid_out, handles))
            # Commit: nothing below allocates the tree's arrays.
            self._take_handles(n)
        self._place(laid_out, links, centres, radii)
        self._count += n
        self._shrink_root()
        return handles

    @writing
    def update_many(self, handles: ArrayLike, centres: ArrayLike, radii: ArrayLike | None = None) -> None:
        """Move or resize many objects; ``radii`` omitted (``None``) keeps each object's stored radius.

        One kernel pass rewrites in place the objects whose home node is
        unchanged and finds the others, the movers
        (:func:`culling.tree.batch.settle`); the movers' homes are prepared
        (found or created, with room; a failure puts the others back), the movers
        unlinked (:func:`culling.tree.batch.unlink`) and appended to their
        homes as ``insert_many`` appends, and the nodes they emptied deleted
        with their emptied ancestors (:meth:`NodeTable.prune`).  Last, about
        ``n`` rows' tile summaries are recomputed from their live rows, round
        robin (:meth:`BlockPool.refresh`): the summaries the writes grew shrink
        back, so the member test does not slow down as objects move.  O(n)
        compiled, plus O(movers + homes x depth); no Python step per object or node.
        """
        # Types and shapes here; the values (handles live and once, centres and radii finite, radii
        # not negative) in one compiled pass, and only on a fault the validators, to name it.
        handles = as_handles(handles, copy=False)  # only read
        centres = np.ascontiguousarray(as_points(centres, self.dim, "centres", values_checked=False))
        if centres.shape[0] != handles.size:  # before the radii: they are checked against the centres
            raise ValueError(f"centres must have shape ({handles.size}, {self.dim}) to match "
                             f"the handles, got {centres.shape}")
        kept = radii is None  # each object's stored radius: settle reads it from the row it reads anyway
        radii = (np.empty(centres.shape[0]) if kept
                 else as_radii(radii, centres.shape[0], values_checked=False))  # a copy either way
        if batch.check_handles(handles, self._next_handle, self._obj_node, centres, _NO_RADII if kept else radii) >= 0:
            self._live_unique(handles)
            as_points(centres, self.dim, "centres")
            if not kept:
                as_radii(radii, centres.shape[0])
        if not handles.size:
            return
        objects = (self._obj_node, self._obj_pos)
        backup = (np.empty((handles.size, self.dim + 1)), np.zeros(handles.size, dtype=np.bool_))
        _restore_loaded(backup, self._pool.arrays())
        try:  # the stayers written; the movers' homes (a grown root too), room in their blocks and the prune's
            movers = batch.settle(handles, centres, radii, self._world(), objects, self._nodes.arrays(),
                                  self._pool.arrays(), backup, kept)
            if movers.size:
                # np.take, not fancy indexing: a third of the time for rows of a 2-D array
                moving, moved, sized = np.take(handles, movers), np.take(centres, movers, axis=0), np.take(radii, movers)
                emptied = np.empty(movers.size, dtype=np.int64)  # unlink's answer
                links = self._prepare_links(moved, sized, np.take(self._obj_node, moving), lambda: movers)
        except BaseException:  # a MemoryError, a mover outside the world: the stayers go back
            batch.restore(handles, backup, self._obj_pos, self._pool.arrays())
            raise
        if movers.size:  # commit: nothing below allocates
            emptied = batch.unlink(moving, objects, self._nodes.arrays(), self._pool.arrays(), emptied)
            self._place(moving, links, moved, sized)
            self._prune(emptied)
        self._pool.refresh(handles.size)  # the summaries the moves grew shrink back, a few tiles a batch

    @writing
    def remove_many(self, handles: ArrayLike) -> None:
        """Remove many objects: a compiled unlink (:func:`culling.tree.batch.unlink`), then one compiled
        pass deleting the emptied nodes and their emptied ancestors (:meth:`NodeTable.prune`).  O(k)."""
        handles = self._live_unique(handles)
        if not handles.size:
            return
        self._ids.make_room(handles.size)  # first: a MemoryError there, or in unlink's answer, changes nothing
        emptied = np.empty(handles.size, dtype=np.int64)
        emptied = batch.unlink(handles, (self._obj_node, self._obj_pos), self._nodes.arrays(), self._pool.arrays(),
                               emptied)
        self._ids.release(handles)
        self._count -= handles.size
        self._prune(emptied)
        self._after_removal()

    # ------------------------------------------------------------------
    # Queries (the public methods and the exact fallback: culling.structure.Structure)

    def _rows(self) -> tuple[np.ndarray, np.ndarray]:
        return self._pool.columns, self._pool.handles

    def _query(self, p: np.ndarray, exact: bool, scale: float, want_rows: bool) -> tuple[np.ndarray, int]:
        """The walk of :func:`culling.tree.walk.query`: at most ``2**dim`` nodes per level for ``scale <= 1``."""
        world, nodes, pool = self._current(self._structs)
        return walk.query(p, (scale, exact, self._cube, want_rows), world, nodes, pool)

    def _structs(self) -> tuple[WorldFields, NodesFields, PoolFields]:
        return self._world(), self._nodes.arrays(), self._pool.arrays()

    def _query_order(self, points: np.ndarray) -> np.ndarray | None:
        """Along a Morton curve (:func:`culling.tree.batch.query_order`) from :data:`QUERY_ORDER_MIN`
        points on: neighbours walked one after the other share the nodes they visit."""
        return batch.query_order(points) if points.shape[0] >= QUERY_ORDER_MIN else None

    def _answer_from_objects(self, points: np.ndarray, exact: bool, scale: float) -> tuple[np.ndarray, np.ndarray] | None:
        """An exact ``query_many`` of many points among few spheres per point, answered from the spheres'
        side (:func:`culling.tree.inverted.grid_answer`, where :func:`~culling.tree.inverted.answers_from_objects`
        says it is cheaper): the walk's answer, in the caller's order."""
        if (not exact or self._next_handle > inverted.MAX_HANDLE
                or not inverted.answers_from_objects(self._count, points.shape[0], self.shape)):
            return None
        handles, counts, order, _, _ = inverted.grid_answer(self, points, scale)
        handles = handles.astype(np.int64, copy=False)
        return (handles, counts) if order is None else chunks.in_caller_order(handles, counts, order)

    def _tested(self, points: np.ndarray, exact: bool, scale: float) -> members.Tested:
        """A chunk of points: every point's nodes (:func:`culling.tree.walk.visits`), then their members
        tested (:func:`culling.core.members.test_many`); two kernel calls."""
        nodes = self._nodes
        visit_node, visit_point = walk.visits(points, scale, self._world(), nodes.arrays())
        return members.test_many(visit_node, visit_point, points, nodes.start, nodes.count, self._pool.arrays(),
                                   (scale, exact, self._cube, False))

    def _probe_chunk(self, points: np.ndarray, grows: np.ndarray, exact: bool,
                     scale: float) -> Callable[[int, int], Parts]:
        """:func:`culling.tree.probe.probe_chunk`: at most ``(2 + ceil(2 * radius / W))**dim`` nodes per level."""
        query, world, nodes, pool = (scale, exact, self._cube, False), self._world(), self._nodes.arrays(), \
            self._pool.arrays()

        def chunk(lo: int, hi: int) -> Parts:
            return probe.probe_chunk(points, grows, lo, hi, query, world, nodes, pool)

        return chunk

    @reading
    def overlapping_pairs(self) -> tuple[np.ndarray, np.ndarray]:
        """Every unordered pair of distinct stored spheres that meet: ``distance(c_i, c_j) <= r_i + r_j``.

        Returns
        -------
        first, second : ndarray, int64, shape (k,) each
            The pairs' handles, ``first[k] < second[k]``, each pair once, in no particular order.

        The tree joined with itself (:func:`culling.pairs.join.overlapping_pairs`):
        the nodes' levels grouped into bands, each band's members bucketed by
        their nodes' cells on one level and swept line by line, the coarser
        bands' members probing the finer bands' buckets
        (:mod:`culling.pairs.bands`); where a band's members sit in a few
        clusters far apart, a dual walk of the tree instead.  Compiled, on the
        library's threads.  Decided exactly, as :meth:`overlapping` with
        ``exact=True``.  Cost: O(objects + nodes + members within reach of
        each other); memory: the output plus O(objects + nodes).
        """
        nodes, pool = self._nodes, self._pool
        issued = nodes.count[: nodes.issued]  # the rows above were never handed out: the passes skip them
        return join.overlapping_pairs((nodes.start, issued, nodes.level, nodes.cells), pool.handles,
                                       pool.columns, self._count, (self.origin, self.size, float(ANCHOR)), self._cube,
                                       self.shape, lambda: (self._root, nodes.child, nodes.start, nodes.count),
                                       self._band_plans)

    @reading
    def query_spheres(self, point: ArrayLike, exact: bool = False,
                      scale: Real = 1.0) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Like :meth:`query`, with each answer's centre and radius.

        Engines need both for the next filters; reading them here, from the
        same contiguous node runs, avoids a random gather by handle.

        Returns
        -------
        handles : ndarray, shape (k,), int64
        centres : ndarray, shape (k, dim), float64
        radii : ndarray, shape (k,), float64
        """
        p = np.array(as_coords(point, self.dim, "point"))
        scale = as_scale(scale)
        pool = self._pool
        rows = self._settled(*self._query(p, as_flag(exact), scale, True), p, scale, True)
        return pool.handles[rows], pool.columns[: self.dim, rows].T.copy(), pool.columns[self.dim, rows]

    @reading
    def trace(self, point: ArrayLike, scale: Real = 1.0) -> QueryTrace:
        """What ``query(point, scale=scale)`` visits, level by level (for overlays and tests).

        The levels and the candidates come from one walk (:func:`culling.tree.walk.walk`).
        """
        p = np.array(as_coords(point, self.dim, "point"))
        scale = as_scale(scale)
        if not self._count:
            return QueryTrace(point=p, candidates=np.empty(0, dtype=np.int64), levels=[])
        visited, ends = walk.trace_walk(p, scale, self._world(), self._nodes.struct())
        return self._trace_of(p, scale, visited, ends)

    def _walked(self, p: np.ndarray, scale: float) -> Walked:
        """The nodes one query visits (:func:`culling.tree.walk.trace_walk`) as :class:`Walked`."""
        nodes, pool = self._nodes, self._pool
        visited, ends = walk.trace_walk(p, scale, self._world(), nodes.struct())
        return Walked(nodes.start[visited], nodes.count[visited], pool.arrays(), pool.columns, pool.handles,
                      lambda: self._trace_of(p, scale, visited, ends))

    def _trace_of(self, p: np.ndarray, scale: float, visited: np.ndarray, ends: np.ndarray) -> QueryTrace:
        """The :class:`QueryTrace` of one walk's visited nodes (``ends``: where each level's nodes end)."""
        nodes = self._nodes
        root_level = self.root_level
        candidates = members.gather(visited, nodes.start, nodes.count, self._pool.handles)
        levels = []
        first = 0
        for depth, last in enumerate(ends.tolist()):
            level = root_level + depth
            ids = visited[first:last]
            lo, hi = self._lattice.cell_bounds(level, nodes.cells[:, ids].T)
            margin = 0.0 if depth == 0 else 0.5 * scale * self._lattice.node_size(level)
            with np.errstate(over="ignore", invalid="ignore"):  # huge scales or worlds: inf margins
                loose = np.stack([lo - margin, hi + margin], axis=1)
            levels.append(LevelTrace(
                depth=depth,
                level=level,
                node_size=self._lattice.node_size(level),
                bounds=np.stack([lo, hi], axis=1),
                loose_bounds=loose,
                objects=int(nodes.count[ids].sum()),
            ))
            first = last
        return QueryTrace(point=p, candidates=candidates, levels=levels)

    # ------------------------------------------------------------------
    # The invariant checker

    @reading
    def check_invariants(self) -> None:
        """Assert every structural rule (:func:`culling.tree.checker.check_tree`); O(objects + nodes).  For tests."""
        check_tree(self)

    # ------------------------------------------------------------------
    # Internals: validation helpers

    def _live_unique(self, handles: ArrayLike) -> np.ndarray:
        """Many handles, live and each once (one compiled pass; the validators name a fault)."""
        handles = as_handles(handles)
        if batch.check_handles(handles, self._next_handle, self._obj_node, _NO_CENTRES, _NO_RADII) >= 0:
            check_unique(self._live_many(handles))
        return handles


    # ------------------------------------------------------------------
    # Internals: placement

    def _sphere(self, centre: ArrayLike, radius: Real) -> np.ndarray:
        """One validated sphere as a pool row, float64 (1, dim + 2): the centre's axes, the radius, and
        room for the squared reach (:func:`_home_one` writes it)."""
        return np.array([[*as_coords(centre, self.dim, "centre"), as_radius(radius), 0.0]])

    def _home(self, sphere: np.ndarray, handle: int) -> int:
        """Find one sphere's home key (into ``self._key``), validate it against the world and grow the
        root for it; when it is the home of ``handle`` (-1: none), store the sphere in that object's row.

        One kernel call (:func:`_home_one`); only a sphere outside the root takes
        Python's path (:meth:`_check_world`, :meth:`_grow_root_for`).  Returns
        :data:`STAYS` when the row was written, else :data:`INSIDE` (the home
        is below the root, now grown if it had to).  ``sphere`` as :meth:`_sphere` made it.
        """
        found = int(_home_one(sphere, handle, self._world(), (self._obj_node, self._obj_pos),
                              self._nodes.arrays(), self._pool.arrays(), self._key))
        if found == OUTSIDE:
            keys = self._key.tolist()
            self._check_world(keys, one=True)
            try:
                self._grow_root_for(keys)
            except MemoryError:  # the root grew part of the way: back
                self._shrink_root()
                raise
            return INSIDE
        return found

    def _prepare_links(self, centres: np.ndarray, radii: np.ndarray, near: np.ndarray | None = None,
                       rows: Callable[[], np.ndarray] | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Everything :meth:`_place` needs that allocates: the root grown to hold the objects, their
        home nodes created, room in the homes' blocks, the place's scratch.  Returns ``(group_of, homes,
        next_row)`` (:func:`culling.tree.batch.place`'s ``links``).

        Validation errors come first; a ``MemoryError`` undoes what was done
        (new empty nodes deleted, the root shrunk back) and propagates: the
        tree is as it was.  Grouping (:func:`culling.tree.batch.group`), the home nodes
        (:meth:`NodeTable.at_many`), their blocks (:meth:`BlockPool.make_room`).
        ``centres`` C-contiguous, non-empty.  ``near`` (int64 (n,), optional): a live node near each
        object's home (a mover's old node), where the search for the home starts.  ``rows`` (optional):
        each object's row in the caller's batch (int64 (n,), made only for an error to name).
        """
        made: list[np.ndarray] = []
        try:
            self._fit_many(centres, radii, rows)
            group_of, keys, sizes = batch.group(centres, radii, self.origin, self.size)
            begin = None
            if near is not None:
                begin = np.empty(keys.shape[0], dtype=np.int64)
                begin[group_of] = near  # any object's node of each group
            homes = self._nodes.at_many(keys, self._root, made, begin)
            self._pool.make_room(self._nodes, homes, sizes, self._obj_pos)
            next_row = np.empty(homes.shape[0], dtype=np.int64)
        except MemoryError:
            self._prune(made[0] if made else np.empty(0, dtype=np.int64))  # empty leaves, chains
            raise
        return group_of, homes, next_row

    def _place(self, handles: np.ndarray, links: tuple[np.ndarray, np.ndarray, np.ndarray], centres: np.ndarray,
               radii: np.ndarray) -> None:
        """Write the objects into the rows :meth:`_prepare_links` made room for (:func:`culling.tree.batch.place`)."""
        batch.place(handles, links, centres, radii, (self._obj_node, self._obj_pos),
                    self._nodes.arrays(), self._pool.arrays())

    def _fit_many(self, centres: np.ndarray, radii: np.ndarray, rows: Callable[[], np.ndarray] | None = None) -> None:
        """Validate many spheres against the world and grow the root to hold them all.

        Root-relative coordinates and levels are monotone in the centres and
        radii, so the extreme centres and the largest radius decide for the
        whole batch: the home keys of two corner spheres.  One kernel call
        decides the common case, a root that holds both
        (:func:`culling.tree.batch.fits_root`: 0.010 ms for a 10k swarm's
        1,200 movers, where the corners' keys found in Python's loop took
        0.027 ms); otherwise their keys (:func:`_home_one`) say whether the
        world holds them and how far to grow the root.
        ``centres`` float64 (n, dim), C-contiguous; ``radii`` float64 (n,); ``rows``: makes their rows in
        the caller's batch (default: the same), which an error names.
        """
        if not radii.size or batch.fits_root(centres, radii, self._world(), self._nodes.arrays()):
            return  # the common case, in one kernel call; else the corners' keys, to check and to grow for
        corners = batch.corners(centres, radii)
        keys = []
        outside = False
        for corner in range(2):
            outside |= _home_one(corners[corner:corner + 1], -1, self._world(), (self._obj_node, self._obj_pos),
                                 self._nodes.arrays(), self._pool.arrays(), self._key) == OUTSIDE
            keys += self._key.tolist()
        if outside:
            self._check_world(keys, batch=(centres, radii, rows))  # rows made only for an error's message
            self._grow_root_for(keys)

    def _check_world(self, keys: list[list[int]], one: bool = False,
                     batch: tuple[np.ndarray, np.ndarray, Callable[[], np.ndarray] | None] | None = None) -> None:
        """Reject home keys outside the largest world (:func:`culling.tree.root.check_world`; ``one``: for
        one object's call; ``batch``: a batch's centres, radii and rows in the caller's batch, its bad
        row named)."""
        root_growth.check_world(self._lattice, keys, one, batch)

    def _grow_root_for(self, keys: list[list[int]]) -> None:
        """Grow the root until it holds the home keys ``keys`` (:func:`culling.tree.root.root_level_for`
        counts the levels and refuses a root beyond the floats before anything changes)."""
        level = root_growth.root_level_for(self._nodes, self._root, self._lattice, keys)
        while self.root_level > level:
            self._root = root_growth.grow_root(self._nodes, self._pool, self._root)

    def _shrink_root(self) -> None:
        """Undo growth that no object needs any more."""
        self._root = root_growth.shrink_root(self._nodes, self._pool, self._root, self.dim)

    # ------------------------------------------------------------------
    # Internals: nodes

    def _prune(self, nodes: np.ndarray) -> None:
        """Delete the empty, childless ``nodes`` (int64) and their ancestors that become so, in one
        compiled pass (:meth:`NodeTable.prune`); their blocks go back to the pool, then the root shrinks
        if it can.  Allocates nothing: a batch prunes after its first write, an undo where memory ran out."""
        if nodes.size:
            self._pool.release_dead(self._nodes.prune(nodes, self._root), self._nodes)
        self._shrink_root()

    def _room_at(self) -> int:
        """The node of the home key :meth:`_home` found (``self._key``), created if missing, with room
        for one more member.  A ``MemoryError`` undoes what was done (new empty nodes, root growth)
        and propagates."""
        try:
            node = int(self._nodes.at_many(self._key, self._root)[0])
            if self._nodes.count[node] == self._nodes.capacity[node]:
                self._pool.make_room(self._nodes, np.array([node]), np.ones(1, dtype=np.int64), self._obj_pos)
        except MemoryError:
            self._drop_empty_nodes()
            raise
        return node

    def _drop_empty_nodes(self) -> None:
        """Delete every empty, childless node and shrink the root: the undo of a single insert or update
        that ran out of memory after its home was made."""
        issued = self._nodes.issued
        self._prune(np.flatnonzero((self._nodes.count[:issued] == 0) & (self._nodes.children[:issued] == 0)))

    # ------------------------------------------------------------------
    # Internals: membership

    def _append(self, node: int, handle: int, sphere: np.ndarray) -> None:
        """Append one object (``sphere``: its pool row as :meth:`_home` completed it) to ``node``, which
        has room (:meth:`_room_at`)."""
        count = int(self._nodes.count[node])
        pos = int(self._nodes.start[node]) + count
        self._pool.handles[pos] = handle
        self._pool.columns[:, pos] = sphere[0]
        self._pool.cover(pos, pos + 1)
        self._nodes.count[node] = count + 1
        self._obj_node[handle] = node
        self._obj_pos[handle] = pos

    def _unlink(self, handle: int) -> np.ndarray:
        """Take one object out of its node: its row gets the node's last member (one kernel call,
        :func:`culling.tree.batch.unlink`).  Returns the node when it emptied (int64, 1 or 0 long,
        for :meth:`_prune`); no cleanup."""
        return batch.unlink(np.array([handle]), (self._obj_node, self._obj_pos), self._nodes.arrays(),
                            self._pool.arrays(), np.empty(1, dtype=np.int64))


#: Whether :func:`culling.tree.batch.restore` is loaded in this process (:func:`_restore_loaded`).
_RESTORE = {"loaded": False}
_NO_HANDLES = np.empty(0, dtype=np.int64)


def _restore_loaded(backup: tuple[np.ndarray, np.ndarray], pool_fields: PoolFields) -> None:
    """Load :func:`culling.tree.batch.restore` (from the cache, or compile it) at a process's first
    ``update_many``, before anything is written: the undo runs where memory ran out, where a first
    load could fail too.  The call on no objects writes nothing."""
    if not _RESTORE["loaded"]:
        kept, written = backup
        batch.restore(_NO_HANDLES, (kept[:0], written[:0]), _NO_HANDLES, pool_fields)
        _RESTORE["loaded"] = True


def _positions(laid_out: np.ndarray, handles: np.ndarray) -> np.ndarray:
    """Where each of ``laid_out`` (a permutation of the distinct ``handles``) stands in ``handles``: the
    caller's rows of a batch :func:`culling.tree.batch.layout_order` reordered.  O(n log n)."""
    order = np.argsort(handles)
    return order[np.searchsorted(handles, laid_out, sorter=order)]


@kernel
def _remove_one(handle: int, root: int, objects_fields: ObjectsFields, nodes_fields: NodesFields,
                pool: tuple[PoolFields, tuple[np.ndarray, np.ndarray, int]],
                stack: tuple[np.ndarray, int]) -> tuple[int, int]:
    """:meth:`ViewDistanceTree.remove` of a live ``handle`` in one call: the unlink
    (:func:`culling.tree.batch.unlink`), then its node and the ancestors that emptied deleted
    (:func:`culling.tree.nodes.prune_nodes`) and their blocks released as a batch's are
    (:func:`culling.tree.pool.release_dead`; ``pool`` is the pool's arrays and ``(heads, spare,
    spare_count)``).  Returns the node table's new free count (``stack = (free, free_count)``)
    and the pool's new ``spare_count``.  O(levels).

    The three steps as three calls from Python cost some 3 us more, a
    third of a single removal.
    """
    nodes = nodes_of(nodes_fields)
    pool_fields, free_blocks = pool
    free_count, spare_count = stack[1], free_blocks[2]
    emptied = unlink(np.full(1, handle), objects_fields, nodes_fields, pool_fields, np.empty(1, dtype=np.int64))
    if emptied.shape[0]:
        before = free_count
        free_count = prune_nodes(emptied, root, stack, nodes_fields)
        spare_count = release_dead(stack[0][before:free_count], nodes.start, nodes.capacity, pool_fields[0], free_blocks)
    return free_count, spare_count


@kernel
def _home_one(sphere: np.ndarray, handle: int, world_fields: WorldFields, objects_fields: ObjectsFields,
              nodes_fields: NodesFields, pool_fields: PoolFields, key: np.ndarray) -> int:
    """One sphere's home: :data:`STAYS`, :data:`INSIDE` or :data:`OUTSIDE` (the single-object mutations).

    ``sphere`` is a pool row, float64 (1, dim + 2): the centre's axes and the
    radius; its squared reach is written into the last column.  Its home key
    (the home function, :func:`culling.core.cells.home`) goes into ``key``,
    int64 (1, dim + 1).  The root holds it when it holds the key's node
    (:func:`culling.tree.batch.under_root`).  When the key is
    the node of ``handle`` (-1: no object), the sphere is stored in the
    object's row and its tile covers it: :data:`STAYS`.  O(dim), no allocation.
    """
    world, objects, nodes, pool = World(*world_fields), Objects(*objects_fields), nodes_of(nodes_fields), Pool(*pool_fields)
    dim = world.origin.shape[0]
    sphere[0, dim + 1] = reach_of(sphere[0, dim])
    home(sphere[:, :dim], sphere[:, dim], 0, world.origin, world.size, key, 0)
    level = key[0, 0]
    if not batch.under_root(key, world, nodes):
        return OUTSIDE
    if handle < 0:
        return INSIDE
    node = objects.node[handle]
    if nodes.level[node] != level:
        return INSIDE
    for axis in range(dim):
        if nodes.cells[axis, node] != key[0, axis + 1]:
            return INSIDE
    row = objects.row[handle]
    for column in range(dim + 2):
        pool.columns[column, row] = sphere[0, column]
    cover_row(pool.columns, row, pool.tile_box)
    return STAYS
