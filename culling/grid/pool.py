"""Members of many fixed cells in one array, with vectorised batch updates.

:class:`CellPool` is the membership store of the dense grid
(:mod:`culling.grid.grid`): cells are numbered ``0 .. n_cells - 1`` once and for
all, each object (a handle) lives in at most one cell, and every operation on
many objects is a handful of NumPy calls, never a Python loop over objects or
cells.

Layout (CSR with slack, over the rows the tree's pool also uses:
:class:`culling.core.rows.RowPool`): a non-empty cell ``c`` owns the block
``handles[start[c] : start[c] + capacity[c]]`` and its members are the first
``count[c]`` entries of that block, in no particular order.  Each entry may
carry a row of float payload (the dense grid keeps each sphere's centre and
radius there, column by column), so a query reads its candidates' data from
a few contiguous runs instead of gathering object by object.  An object
knows its cell and its slot (index inside the block), so unlinking it is
O(1): the block's last member moves into its slot.  A cell that outgrows its
block moves to a block at least twice as large at the end of the pool; a cell
that becomes empty gives its block up.  Blocks given up or left behind are
garbage until the pool is full, when one vectorised repack copies every live
block, with room for a quarter more members (:data:`BLOCK_HEADROOM`), into a
fresh pool sized :data:`POOL_SLACK` times their total: amortised O(1) per
member added, and about 1.9 entries per member right after a repack.

>>> cells = CellPool(n_cells=4, columns=1)
>>> cells.reserve_objects(3)
>>> cells.link_many(np.array([0, 1, 2]), np.array([3, 1, 3]), np.array([[0.5, 1.5, 2.5]]))
>>> members, rows, counts = cells.gather(np.array([3, 0]))
>>> members.tolist(), rows.tolist(), counts.tolist()
([0, 2], [[0.5, 2.5]], [2, 0])
>>> cells.unlink(0); cells.gather(np.array([3]))[1].tolist()
[[2.5]]
"""

from __future__ import annotations

import logging

import numpy as np

from culling.core import growth
from culling.core.rows import RowPool, concat_ranges

__all__ = ["BLOCK_HEADROOM", "CellPool", "MIN_POOL", "POOL_SLACK"]

logger = logging.getLogger(__name__)

#: Smallest pool (entries).  Tiny grids never repack more than a few times.
MIN_POOL = 64

#: Pool length after a repack, as a multiple of the live blocks' capacity
#: (their members and :data:`BLOCK_HEADROOM`).  The free third leaves room
#: for half the live capacity in new or doubled blocks before the next
#: repack (O(objects)), so repacks cost O(1) amortised per link.  1.5 as the
#: tree's pool growth factor.
POOL_SLACK = 1.5

#: A pool longer than this many entries per linked member (plus MIN_POOL) is
#: repacked after removals, giving memory back.  Above 2 * POOL_SLACK, so a
#: repack right after growth never triggers a shrink.
SHRINK_RATIO = 6

_INT32_MAX = np.iinfo(np.int32).max

#: Spare entries a repack gives each live block, as a share of its members (at least one).  Cut to
#: their members, every block was full after a repack: in a moving crowd nearly every cell that
#: received a member moved its block to the pool's end, and the next repack came within a frame or
#: two (a 200k crowd on a 2-D map, 1% dying and spawning a frame: 28 repacks in 20 frames, its
#: ``insert_many`` 7-10 ms against the tree's 0.6).  With a quarter spare: one repack in 20 frames,
#: ``insert_many`` 0.6 ms, ``update_many`` 32 -> 20 ms, at 85 bytes an object against 70 (3-D: 99
#: against 83).
BLOCK_HEADROOM = 0.25


def _headroom(need: np.ndarray) -> np.ndarray:
    """Spare entries per live block at a repack (:data:`BLOCK_HEADROOM`)."""
    return np.maximum(1, (need * BLOCK_HEADROOM).astype(np.int64))


def _block_sizes(needs: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """Capacity of a cell's new block: its new member count, and at least twice
    its old one (doubling keeps moves amortised O(1) per member); int64."""
    return np.maximum(np.asarray(needs, dtype=np.int64), 2 * np.asarray(counts, dtype=np.int64))


def _groups(sorted_keys: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Runs of equal values in a sorted array: ``(values, first index, lengths)``."""
    n = sorted_keys.shape[0]
    if n == 0:
        empty = np.empty(0, dtype=np.int64)
        return empty, empty, empty
    first = np.flatnonzero(np.concatenate([[True], sorted_keys[1:] != sorted_keys[:-1]]))
    lengths = np.diff(np.append(first, n))
    return sorted_keys[first], first, lengths


class CellPool(RowPool):
    """Which objects each of ``n_cells`` cells holds, with a float row per member.

    Parameters
    ----------
    n_cells : int
        Number of cells, fixed.  Costs 12 bytes per cell (three int32 arrays).
    columns : int
        Floats of payload per member (0 for none).

    Attributes
    ----------
    start, count, capacity : ndarray, shape (n_cells,), int32
        Each cell's block: first entry, members, capacity (0 for an empty
        cell, else >= count).
    handles : ndarray, shape (pool length,), int64
        Member handles, block by block; entries outside ``[start, start +
        count)`` of a live cell are garbage.  int64, as the tree's pool, so
        the same query kernels (:mod:`culling.core.members`) read both.
    columns : ndarray, shape (columns, pool length), float64
        The members' payload, entry by entry, one contiguous array per column.
    top : int
        Entries from ``top`` on are unused since the last repack.
    cell, slot : ndarray, shape (object capacity,), int32
        Per object: its cell (-1 when in none) and its index in the block.
    members, nonempty : int
        Objects linked, and cells with at least one member.
    """

    def __init__(self, n_cells: int, columns: int = 0):
        super().__init__(columns, MIN_POOL)
        # Mapped on first touch, on small pages: a scene touches a sparse few of the cells.
        self.start = growth.untouched_zeros(n_cells, np.int32)
        self.count = growth.untouched_zeros(n_cells, np.int32)
        self.capacity = growth.untouched_zeros(n_cells, np.int32)
        self.cell = np.full(0, -1, dtype=np.int32)
        self.slot = np.zeros(0, dtype=np.int32)
        self.members = 0
        self.nonempty = 0

    # ------------------------------------------------------------------
    # Objects

    def reserve_objects(self, capacity: int) -> None:
        """Make the per-object arrays at least ``capacity`` long (new objects in no cell)."""
        old = self.cell.shape[0]
        if capacity <= old:
            return
        cell = growth.allocate((capacity,), np.int32, -1)
        slot = growth.allocate((capacity,), np.int32, 0)
        cell[:old] = self.cell
        slot[:old] = self.slot
        self.cell, self.slot = cell, slot

    def position(self, handle: int) -> int:
        """Pool entry of one linked object."""
        return int(self.start[self.cell[handle]]) + int(self.slot[handle])

    def positions(self, handles: np.ndarray) -> np.ndarray:
        """Pool entries (int64 (n,)) of linked objects."""
        result: np.ndarray = self.start[self.cell[handles]].astype(np.int64) + self.slot[handles]
        return result

    def nbytes(self) -> int:
        """Bytes held in NumPy arrays (cells, pool, rows and per-object arrays)."""
        return super().nbytes() + sum(a.nbytes for a in (self.start, self.count, self.capacity, self.cell,
                                                         self.slot))

    # ------------------------------------------------------------------
    # One object: O(1) (amortised when a block has to move)

    def link(self, handle: int, cell: int, row: list[float] | tuple[float, ...] | np.ndarray = ()) -> None:
        """Add ``handle`` (in no cell) to ``cell`` with payload ``row`` (``columns`` floats)."""
        count = int(self.count[cell])
        if count == self.capacity[cell]:
            self._grow_one(cell, count)
        pos = int(self.start[cell]) + count
        self.handles[pos] = handle
        self.columns[:, pos] = row
        self.slot[handle] = count
        self.cell[handle] = cell
        self.count[cell] = count + 1
        self.members += 1
        if count == 0:
            self.nonempty += 1

    def unlink(self, handle: int, shrink: bool = True) -> None:
        """Take ``handle`` out of its cell: the cell's last member moves into its slot; ``shrink``: give
        memory back if the pool has become mostly empty (a repack)."""
        cell = int(self.cell[handle])
        slot = int(self.slot[handle])
        last = int(self.count[cell]) - 1
        if slot != last:
            start = int(self.start[cell])
            moved = int(self.handles[start + last])
            self.handles[start + slot] = moved
            self.columns[:, start + slot] = self.columns[:, start + last]
            self.slot[moved] = slot
        self.count[cell] = last
        self.cell[handle] = -1
        self.members -= 1
        if last == 0:
            self.capacity[cell] = 0
            self.nonempty -= 1
        if shrink and self.handles.shape[0] > SHRINK_RATIO * self.members + MIN_POOL:  # amortised O(1): see SHRINK_RATIO
            try:
                self._repack()
            except MemoryError:  # giving memory back is optional: the removal itself is done
                logger.warning("no memory to repack the grid's pool after a removal; it keeps its arrays")

    # ------------------------------------------------------------------
    # Many objects: O(k log k) for grouping, no Python loop

    def link_many(self, handles: np.ndarray, cells: np.ndarray, rows: np.ndarray | None = None) -> None:
        """Add distinct ``handles`` (each in no cell) to ``cells``, with payload ``rows`` (columns, n)."""
        if handles.size == 0:
            return
        order = np.argsort(cells, kind="stable")
        cells = cells[order].astype(np.int64)
        handles = handles[order]
        touched, first, added = _groups(cells)
        old = self.count[touched].astype(np.int64)
        new = old + added
        grow = new > self.capacity[touched]
        if grow.any():
            if self.top + int(_block_sizes(new[grow], old[grow]).sum()) > self.handles.shape[0]:
                self._repack(touched, new)  # every touched cell keeps room for its new members
            else:
                self._grow(touched[grow], new[grow])
        slots = np.repeat(old, added) + (np.arange(handles.size) - np.repeat(first, added))
        pos = np.repeat(self.start[touched].astype(np.int64), added) + slots
        self.handles[pos] = handles
        if rows is not None:
            for column, values in zip(self.columns, rows):  # 1-D scatters: faster than one 2-D one
                column[pos] = values[order]
        self.slot[handles] = slots
        self.cell[handles] = cells
        self.count[touched] = new
        self.members += int(handles.size)
        self.nonempty += int(np.count_nonzero(old == 0))

    def reserve_links(self, cells: np.ndarray) -> None:
        """Room for members joining ``cells`` (int64 (n,), one per member), so that a later
        :meth:`link_many` of them allocates nothing, even after :meth:`unlink_many` emptied some of
        those cells: the pool is repacked now, with that much room at its end, if it lacks it.

        A ``MemoryError`` here changes nothing; ``update_many`` calls this before it unlinks.
        """
        if cells.size == 0:
            return
        touched, added = np.unique(cells, return_counts=True)
        counts = self.count[touched].astype(np.int64)
        room = int(_block_sizes(counts + added, counts).sum())
        if self.top + room > self.handles.shape[0]:
            self._repack(extra=room)

    def unlink_many(self, handles: np.ndarray, shrink: bool = True) -> None:
        """Take distinct ``handles`` (each in a cell) out of their cells.

        Per cell, the members left in the tail (the last ``k`` slots, ``k``
        the number removed there) fill the holes in front of it, so the cost
        is O(k log k) whatever the cells' sizes.
        """
        if handles.size == 0:
            return
        cells = self.cell[handles].astype(np.int64)
        slots = self.slot[handles].astype(np.int64)
        order = np.lexsort((slots, cells))
        cells, slots = cells[order], slots[order]
        touched, _, removed = _groups(cells)
        kept = self.count[touched].astype(np.int64) - removed
        self.cell[handles] = -1  # marks the removed ones inside the tails
        in_front = slots < np.repeat(kept, removed)
        holes = self.start[cells[in_front]].astype(np.int64) + slots[in_front]
        tail = np.repeat(self.start[touched].astype(np.int64), removed) + concat_ranges(kept, removed)
        fillers = self.fill_holes(holes, tail, self.cell >= 0)  # grouped by cell like the holes
        self.slot[fillers] = slots[in_front]
        self.count[touched] = kept
        emptied = touched[kept == 0]
        self.capacity[emptied] = 0
        self.members -= int(handles.size)
        self.nonempty -= int(emptied.size)
        if shrink and self.handles.shape[0] > SHRINK_RATIO * self.members + MIN_POOL:
            try:
                self._repack()
            except MemoryError:  # giving memory back is optional: the removal itself is done
                logger.warning("no memory to repack the grid's pool after a removal; it keeps its arrays")

    def clear(self) -> None:
        """Forget every member and give the pool and per-object arrays back (sizes as new).

        O(1) beyond freeing: with no member, every cell's count and capacity are already 0.
        """
        RowPool.__init__(self, self.width, MIN_POOL)
        self.cell = np.full(0, -1, dtype=np.int32)
        self.slot = np.zeros(0, dtype=np.int32)
        self.members = 0
        self.nonempty = 0

    # ------------------------------------------------------------------
    # Reading

    def gather(self, cells: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Members of ``cells``: handles (int64 (k,)), rows (columns, k) and per-cell counts (int64).

        Fresh arrays, cell by cell in the order given; O(cells + k).
        """
        counts = self.count[cells].astype(np.int64)
        pos = concat_ranges(self.start[cells], counts)
        return self.handles[pos], self.columns.take(pos, axis=1), counts

    # ------------------------------------------------------------------
    # Blocks

    def _grow(self, cells: np.ndarray, needs: np.ndarray) -> None:
        """Give distinct ``cells`` new blocks of at least ``needs`` entries at the pool's end
        (the caller checked that they fit), keeping their members."""
        counts = self.count[cells]
        caps = _block_sizes(needs, counts)
        total = int(caps.sum())
        starts = self.top + np.cumsum(caps) - caps
        self.move_rows(concat_ranges(self.start[cells], counts), concat_ranges(starts, counts))
        self.start[cells] = starts
        self.capacity[cells] = caps
        self.top += total

    def _grow_one(self, cell: int, count: int) -> None:
        """:meth:`_grow` for one full cell: a block twice as large (or of 1) at the pool's end."""
        cap = 2 * count if count else 1
        end = self.top
        if end + cap > self.handles.shape[0]:
            self._repack(np.array([cell], dtype=np.int64), np.array([count + 1], dtype=np.int64))
            return
        if count:
            start = int(self.start[cell])
            self.handles[end:end + count] = self.handles[start:start + count]
            self.columns[:, end:end + count] = self.columns[:, start:start + count]
        self.start[cell] = end
        self.capacity[cell] = cap
        self.top = end + cap

    def _repack(self, cells: np.ndarray | None = None, needs: np.ndarray | None = None, extra: int = 0) -> None:
        """Copy every live block (and ``cells``, grown to ``needs``) into a fresh, packed pool,
        with at least ``extra`` free entries at its end.  Allocates before it changes anything.

        Live cells are found from their members (the one in slot 0), so the
        cost is O(objects), not O(cells).
        """
        live = self.cell[(self.cell >= 0) & (self.slot == 0)].astype(np.int64)
        need = self.count[live].astype(np.int64)
        if cells is not None:
            live = np.concatenate([live, cells])
            need = np.concatenate([need, needs])
            order = np.argsort(live, kind="stable")
            live, first, _ = _groups(live[order])
            need = np.maximum.reduceat(need[order], first)
        caps = need + _headroom(need)
        total = int(caps.sum())
        length = max(MIN_POOL, int(POOL_SLACK * total), total + extra)
        if length > _INT32_MAX:
            raise MemoryError(f"the dense grid's member pool would need {length} entries (int32 limit)")
        starts = np.cumsum(caps) - caps
        self.repacked(self.start[live], self.count[live], starts, length)  # allocates, then commits
        self.start[live] = starts
        self.capacity[live] = caps
        self.top = total

    # ------------------------------------------------------------------
    # Invariants

    def check(self, alive: np.ndarray) -> None:
        """Assert every rule of the layout; ``alive`` is the boolean mask of live handles.

        O(cells + objects).  For tests.
        """
        n_obj = alive.shape[0]
        cell = self.cell[:n_obj]
        assert (self.cell[n_obj:] == -1).all(), "an unissued handle is in a cell"
        assert (cell[~alive] == -1).all(), "a free handle is still in a cell"
        handles = np.flatnonzero(alive)
        cells = cell[handles].astype(np.int64)
        assert (cells >= 0).all() and (cells < self.count.shape[0]).all(), "a live handle is in no cell"
        slots = self.slot[handles].astype(np.int64)
        assert ((slots >= 0) & (slots < self.count[cells])).all(), "slot outside the cell's members"
        assert (self.handles[self.start[cells].astype(np.int64) + slots] == handles).all(), \
            "pool entry holds another handle"
        assert (np.bincount(cells, minlength=self.count.shape[0]) == self.count).all(), \
            "cell counts disagree with their members"
        assert self.members == handles.size, "member total is wrong"
        nonempty = self.count > 0
        assert self.nonempty == int(nonempty.sum()), "non-empty cell total is wrong"
        assert ((self.capacity > 0) == nonempty).all(), "an empty cell keeps a block, or a member has none"
        caps = self.capacity[nonempty].astype(np.int64)
        assert (caps >= self.count[nonempty]).all(), "a cell holds more than its block"
        starts = self.start[nonempty].astype(np.int64)
        order = np.argsort(starts)
        starts, caps = starts[order], caps[order]
        assert (starts[1:] >= starts[:-1] + caps[:-1]).all(), "pool blocks overlap"
        assert not starts.size or (starts[0] >= 0 and starts[-1] + caps[-1] <= self.top)
        assert self.top <= self.handles.shape[0] == self.columns.shape[1], "pool end beyond the pool"
