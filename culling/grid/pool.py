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
block moves to a block at least twice as large (and a quarter larger than its
members, :data:`BLOCK_HEADROOM`) at the end of the pool; a cell that becomes
empty gives its block up.  A batch is planned whole before it writes
(:meth:`CellPool.relink`), so a ``MemoryError`` changes nothing.  Blocks given up or left behind are
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

from dataclasses import dataclass

import numpy as np

from culling.core import growth
from culling.core.rows import RowPool, concat_ranges

__all__ = ["BLOCK_HEADROOM", "CellPool", "MIN_POOL", "POOL_SLACK", "Relink"]


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
    """Capacity of a cell's new block: its new member count with headroom (:data:`BLOCK_HEADROOM`),
    and at least twice its old one (doubling keeps moves amortised O(1) per member); int64."""
    needs = np.asarray(needs, dtype=np.int64)
    result: np.ndarray = np.maximum(needs + _headroom(needs), 2 * np.asarray(counts, dtype=np.int64))
    return result


def _groups(sorted_keys: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Runs of equal values in a sorted array: ``(values, first index, lengths)``."""
    n = sorted_keys.shape[0]
    if n == 0:
        empty = np.empty(0, dtype=np.int64)
        return empty, empty, empty
    first = np.flatnonzero(np.concatenate([[True], sorted_keys[1:] != sorted_keys[:-1]]))
    lengths = np.diff(np.append(first, n))
    return sorted_keys[first], first, lengths


def _index_of(values: np.ndarray, keys: np.ndarray) -> np.ndarray:
    """Where each of ``values`` is in ``keys`` (distinct, non-negative int64): int64, -1 where absent.

    Keys as dense as handles are looked up in a table over their range (O(n + largest)): a
    batch of every object of a 200k grid, 0.5 ms where a sort takes 4; others are sorted."""
    if keys.size == 0 or values.size == 0:
        return np.full(values.size, -1, dtype=np.int64)
    high = int(keys.max())
    if high < 8 * keys.size + 4096:
        table = np.full(high + 1, -1, dtype=np.int64)
        table[keys] = np.arange(keys.size)
        return np.where(values <= high, table[np.minimum(values, high)], -1)
    order = np.argsort(keys)
    at = np.minimum(np.searchsorted(keys[order], values), keys.size - 1)
    return np.where(keys[order[at]] == values, order[at], -1)


def _by_cell(cells: np.ndarray, then: np.ndarray) -> np.ndarray:
    """The order of ``cells`` (int64), ties in the order of ``then`` (distinct within a cell; both
    below 2**31): one sort of one key, 3-4x faster than ``lexsort`` or a stable sort (100k, 3 ms
    against 12 and 8)."""
    result: np.ndarray = np.argsort((cells << 31) | then)
    return result


_NONE = np.empty(0, dtype=np.int64)


@dataclass(frozen=True)
class Relink:
    """One batch of :meth:`CellPool.relink`, planned: every array made, so :meth:`write` allocates nothing.

    Rows ``rewritten`` take payload ``rewritten_rows``; rows ``moved`` take ``members`` and ``payload``
    (columns, n); rows ``joining_at`` take ``joining`` and ``joining_rows``; the rest is the cells' and
    the members' bookkeeping, in the types the pool keeps it in.
    """

    pool: CellPool
    rewritten: np.ndarray
    rewritten_rows: np.ndarray
    moved: np.ndarray
    members: np.ndarray
    payload: np.ndarray
    leaving: np.ndarray
    fillers: np.ndarray
    filler_slots: np.ndarray
    joining: np.ndarray
    joining_at: np.ndarray
    joining_rows: np.ndarray
    joining_cells: np.ndarray
    joining_slots: np.ndarray
    left: np.ndarray
    kept: np.ndarray
    emptied: np.ndarray
    joined: np.ndarray
    counts: np.ndarray
    grown: np.ndarray
    starts: np.ndarray
    capacities: np.ndarray
    top: int
    nonempty: int

    def write(self) -> None:
        """Apply the batch: scatters of the planned arrays, in this order (a rewritten member's old row
        may be a hole or a joiner's row; no other row is written twice)."""
        pool = self.pool
        pool.handles[self.moved] = self.members
        pool.handles[self.joining_at] = self.joining
        for column, rewritten, moved, joining in zip(pool.columns, self.rewritten_rows, self.payload,
                                                     self.joining_rows, strict=True):
            column[self.rewritten] = rewritten
            column[self.moved] = moved
            column[self.joining_at] = joining
        pool.cell[self.leaving] = -1
        pool.slot[self.fillers] = self.filler_slots
        pool.cell[self.joining] = self.joining_cells
        pool.slot[self.joining] = self.joining_slots
        pool.count[self.left] = self.kept
        pool.capacity[self.emptied] = 0
        pool.count[self.joined] = self.counts
        pool.start[self.grown] = self.starts
        pool.capacity[self.grown] = self.capacities
        pool.top = self.top
        pool.members += self.joining.size - self.leaving.size
        pool.nonempty = self.nonempty


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

    def unlink(self, handle: int) -> None:
        """Take ``handle`` out of its cell: the cell's last member moves into its slot.  No repack: the
        caller gives memory back once its own bookkeeping is done (:meth:`give_back`)."""
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

    # ------------------------------------------------------------------
    # Many objects: O(k log k) for grouping, no Python loop; planned whole, then written

    def link_many(self, handles: np.ndarray, cells: np.ndarray, rows: np.ndarray | None = None) -> None:
        """Add distinct ``handles`` (each in no cell) to ``cells``, with payload ``rows`` (columns, n).
        All or nothing: a ``MemoryError`` changes no member (:meth:`relink`)."""
        self.relink(_NONE, handles, cells, rows).write()

    def unlink_many(self, handles: np.ndarray) -> None:
        """Take distinct ``handles`` (each in a cell) out of their cells, as :meth:`unlink` each.  All or
        nothing, as :meth:`link_many`."""
        self.relink(handles, _NONE, _NONE).write()

    def give_back(self) -> None:
        """Repack the pool if it has become mostly empty (amortised O(1) per removal: see
        :data:`SHRINK_RATIO`).  The repack allocates before it changes anything; a failure is the
        caller's to take as optional (the grid's ``_after_removal``)."""
        if self.handles.shape[0] > SHRINK_RATIO * self.members + MIN_POOL:
            self._repack()

    def relink(self, leaving: np.ndarray, joining: np.ndarray, cells: np.ndarray, rows: np.ndarray | None = None,
               rewritten: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None) -> Relink:
        """Plan one batch: distinct ``leaving`` (each in a cell) leave their cells, distinct ``joining``
        (each in no cell once those have left) join ``cells`` with payload ``rows`` (columns, n), and
        the members ``rewritten[0]``, now at pool rows ``rewritten[1]`` (:meth:`positions`), take
        payload ``rewritten[2]`` (columns, k) where they stay (a leaver among them has its old row
        written, then filled or given up).

        Every array the batch needs is made here, after the pool is repacked if it lacks room (which
        moves blocks but changes no member); nothing is written until :meth:`Relink.write`, which
        allocates nothing.  So a ``MemoryError`` in either leaves every member as it was.

        Leaving: per cell, the members left in the tail (the last ``k`` slots, ``k`` the number that
        leave there) fill the holes in front of it, so the cost is O(k log k) whatever the cells'
        sizes.  Joining: a cell whose block is too small moves, members and all, to a block at least
        twice as large at the pool's end (amortised O(1) per member).
        """
        # The leavers by cell, then slot; the joiners by cell; the joiners' cells' counts once the
        # leavers have left (a cell emptied and joined keeps its block).
        from_cells, from_slots = self.cell[leaving].astype(np.int64), self.slot[leaving].astype(np.int64)
        by_cell = _by_cell(from_cells, from_slots)
        from_cells, from_slots = from_cells[by_cell], from_slots[by_cell]
        left, first, removed = _groups(from_cells)
        kept = self.count[left].astype(np.int64) - removed
        order = _by_cell(cells.astype(np.int64), np.arange(cells.size))
        joined, first_joiner, added = _groups(cells[order].astype(np.int64))
        before = self.count[joined].astype(np.int64)
        rejoined = _index_of(joined, left)
        before[rejoined >= 0] = kept[rejoined[rejoined >= 0]]
        after = before + added
        # Room for the blocks that grow (a repack moves blocks, not members), then every row.
        if rewritten is None:
            rewritten = (_NONE, _NONE, np.empty((self.width, 0)))
        rewritten_handles, rewritten_at, rewritten_rows = rewritten
        if self._reserve(joined, before, after):
            rewritten_at = self.positions(rewritten_handles)  # the repack moved them
        kept_each = np.repeat(kept, removed)
        in_front = from_slots < kept_each  # each cell's holes in front of its tail
        holes = self.start[from_cells[in_front]].astype(np.int64) + from_slots[in_front]
        tail = np.repeat(self.start[left].astype(np.int64), removed) + concat_ranges(kept, removed)
        stays = np.ones(tail.size, dtype=bool)  # the tail rows whose members stay: they fill the holes
        stays[(np.repeat(first, removed) + from_slots - kept_each)[~in_front]] = False
        survivors = tail[stays]
        emptied = left[kept == 0]
        if rejoined.max(initial=-1) >= 0:
            emptied = np.setdiff1d(emptied, joined, assume_unique=True)
        grow = after > self.capacity[joined]
        grown, moving = joined[grow], before[grow]
        capacities = _block_sizes(after[grow], moving)
        starts = self.top + np.cumsum(capacities) - capacities
        top = self.top + int(capacities.sum())
        if top > self.handles.shape[0]:
            raise AssertionError("_reserve left the pool too little room")
        block_starts = self.start[joined].astype(np.int64)
        block_starts[grow] = starts
        slots = np.repeat(before, added) + (np.arange(cells.size) - np.repeat(first_joiner, added))
        joining_slots, joining_at = np.empty_like(slots), np.empty_like(slots)  # in the joiners' own order
        joining_slots[order] = slots
        joining_at[order] = np.repeat(block_starts, added) + slots
        # The rows moved: into the holes (from their tail survivors) and into the grown cells' blocks (from
        # their old rows, a hole's from its survivor).
        moved_from = concat_ranges(self.start[grown], moving)
        hole = _index_of(moved_from, holes)
        moved_from[hole >= 0] = survivors[hole[hole >= 0]]
        source = np.concatenate([survivors, moved_from])
        members = self.handles[source]
        payload = self.columns.take(source, axis=1)
        fresh = _index_of(members, rewritten_handles)  # a member moved with the payload it is given
        payload[:, fresh >= 0] = rewritten_rows[:, fresh[fresh >= 0]]
        return Relink(
            pool=self,
            rewritten=rewritten_at, rewritten_rows=np.ascontiguousarray(rewritten_rows),
            moved=np.concatenate([holes, concat_ranges(starts, moving)]), members=members, payload=payload,
            leaving=leaving, fillers=members[: survivors.size], filler_slots=from_slots[in_front].astype(np.int32),
            joining=joining, joining_at=joining_at,
            joining_rows=np.zeros((self.width, cells.size)) if rows is None else np.ascontiguousarray(rows),
            joining_cells=cells.astype(np.int32), joining_slots=joining_slots.astype(np.int32),
            left=left, kept=kept.astype(np.int32), emptied=emptied,
            joined=joined, counts=after.astype(np.int32),
            grown=grown, starts=starts.astype(np.int32), capacities=capacities.astype(np.int32), top=top,
            nonempty=self.nonempty + int(np.count_nonzero(before == 0)) - int(np.count_nonzero(kept == 0)))

    def reserve_link(self, cell: int) -> None:
        """Room for one member joining ``cell`` (a single update's, before it unlinks), so that
        :meth:`link` allocates nothing: the block it would grow fits at the pool's end, or the pool is
        repacked now (a ``MemoryError`` here changes nothing).  O(1) in Python: the vectorised form
        (``np.unique`` of one cell) took half of a single ``update``."""
        count = int(self.count[cell])
        if count < int(self.capacity[cell]) or self.top + (2 * count or 1) <= self.handles.shape[0]:
            return
        self._reserve(np.array([cell], dtype=np.int64), np.array([count], dtype=np.int64),
                      np.array([count + 1], dtype=np.int64))

    def _reserve(self, cells: np.ndarray, counts: np.ndarray, needs: np.ndarray) -> bool:
        """Room for the distinct ``cells``, holding ``counts`` members, to hold ``needs``.  If the blocks
        that would grow do not fit at the pool's end, the pool is repacked, the blocks of those cells that
        have members now holding their needs, with room at its end for the others' new blocks.  Returns
        whether it was repacked (members' rows moved); a ``MemoryError`` changes nothing."""
        grow = needs > self.capacity[cells]
        room = int(_block_sizes(needs[grow], counts[grow]).sum())
        if self.top + room <= self.handles.shape[0]:
            return False
        held = self.count[cells] > 0  # an empty cell given a block now would keep it if the batch failed
        self._repack(cells[held], needs[held], int(_block_sizes(needs[~held], counts[~held]).sum()))
        return True

    def clear(self) -> None:
        """Forget every member and give the pool and per-object arrays back (sizes as new).

        O(1) beyond freeing: with no member, every cell's count and capacity are already 0.
        """
        empty = RowPool(self.width, MIN_POOL)  # all made, then all replaced: a MemoryError changes nothing
        cell, slot = np.full(0, -1, dtype=np.int32), np.zeros(0, dtype=np.int32)
        vars(self).update(vars(empty))
        self.cell, self.slot = cell, slot
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
        """Copy every live block (and ``cells``, grown to ``needs``) into a fresh, packed pool, sized
        for them and ``extra`` more entries (at its end), with :data:`POOL_SLACK`.  Allocates before it changes anything.

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
        length = max(MIN_POOL, int(POOL_SLACK * (total + extra)))
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
