"""The tree's batch-mutation kernels: the per-object loops of ``insert_many`` and ``update_many``.

Node creation and block allocation run per node (:meth:`culling.tree.nodes.NodeTable.at_many`,
:meth:`culling.tree.pool.BlockPool.make_room`); what runs per object is here,
as plain loops that read each object's data once and keep its home
``(level, cell)`` in registers instead of arrays:

- :func:`group` (``insert_many`` and the movers of ``update_many``): which
  objects share a home node, by a hash table keyed by ``(level, cell)``;
  O(n) where sorting is O(n log n).
- :func:`settle` (``update_many``): rewrite in place every object whose
  home node is the one it is in (a small move), covering its tile, its old
  row kept for :func:`restore`; return the others, the movers.
- :func:`fits_root` (``update_many``'s movers, ``insert_many``): whether
  the root holds a whole batch, decided by its two corner spheres.
- :func:`unlink` (``update_many``'s movers, ``remove_many``, ``remove``): take objects
  out of their nodes, each node's last member filling the hole; returns the
  nodes emptied, for :meth:`culling.tree.nodes.NodeTable.prune`.
- :func:`place`: append the grouped objects after their home node's
  members, with their squared reach, and cover their tiles.
- :func:`layout_order` (``insert_many``): the batch along a Morton curve,
  so that each node's new members follow it and each tile of pool rows
  covers a small part of its node (:mod:`culling.core.tiles`).
- :func:`query_order` (``query_many``): the batch's points along a Morton
  curve, so that neighbours walk the tree one after the other.

Homes come from the one home function, :func:`culling.core.cells.home`.
"""

from __future__ import annotations

import math

import numpy as np

from culling.core.cells import home, level_of
from culling.core.containment import reach_of
from culling.core.lattice import MAX_DEPTH
from culling.core.structs import Nodes, NodesFields, ObjectsFields, PoolFields, World, WorldFields, nodes_of
from culling.core.tiles import TILE_SHIFT, cover, cover_row
from culling.runtime.jit import inline_kernel, kernel
from culling.runtime.prefetch import AHEAD, prefetch, prefetch_at
from culling.runtime.threads import run_chunks, thread_count

#: Bits of :func:`layout_order`'s Morton code: 4,096 cells over the batch's box.
LAYOUT_BITS = 12

__all__ = ["PARALLEL_SETTLE_MIN", "SETTLE_SLACK", "ascending_union", "check_handles", "corners", "fits_root", "group",
           "layout_order", "morton_order", "place", "query_order", "restore", "settle", "under_root", "unlink"]


#: Golden-ratio multiplier of the hash in :func:`group` (Fibonacci hashing).
_GOLDEN = np.uint64(0x9E3779B97F4A7C15)


@inline_kernel
def _slot(keys: np.ndarray, g: int, bits: int) -> np.int64:
    """Hash table slot (of ``2**bits``) of the key ``keys[g] = (level, cell...)``: multiply-xor, top bits."""
    h = np.uint64(0)
    for part in range(keys.shape[1]):
        h = (h ^ np.uint64(keys[g, part])) * _GOLDEN
    return np.int64(h >> np.uint64(64 - bits))


def group(centres: np.ndarray, radii: np.ndarray, origin: np.ndarray,
          size: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Group objects by home node: ``(group_of, keys, sizes)``.

    Object ``i`` (centre ``centres[i]``, radius ``radii[i]``) is in group
    ``group_of[i]``; group ``g`` is the node ``keys[g] = (level, cell...)``
    (int64 (k, dim + 1)) and holds ``sizes[g]`` objects.  Groups are
    numbered in order of first appearance.

    A hash table from key to group (open addressing, at most half full):
    :func:`_group_into` fills it until it is half full; then the table and
    the groups' columns double and it goes on.  The table starts with room
    for a group per object (up to 2**15 groups, a table of 512 kB), so a
    batch of movers, most of them in nodes of their own, takes one pass.
    O(n), where sorting the keys would be O(n log n).  The doubling is
    driven from here rather than from a kernel: a kernel calling
    ``_group_into`` would compile it a second time (a second in a cold start).
    """
    n, dim = centres.shape
    group_of = np.empty(n, dtype=np.int64)
    bits = max(10, min(int(n).bit_length() + 1, 16))  # a group per object fits, up to 2**15 objects
    keys = np.empty((1 << (bits - 1), dim + 1), dtype=np.int64)
    sizes = np.zeros(1 << (bits - 1), dtype=np.int64)
    done, groups = _group_into(centres, radii, origin, size, 0, 0, bits, keys, sizes, group_of)
    while done < n:
        bits += 1
        keys = np.concatenate([keys, np.empty_like(keys)])
        sizes = np.concatenate([sizes, np.zeros_like(sizes)])
        done, groups = _group_into(centres, radii, origin, size, done, groups, bits, keys, sizes, group_of)
    return group_of, keys[:groups].copy(), sizes[:groups].copy()


@kernel
def _group_into(centres: np.ndarray, radii: np.ndarray, origin: np.ndarray, size: float, done: int, groups: int,
                bits: int, keys: np.ndarray, sizes: np.ndarray, group_of: np.ndarray) -> tuple[int, int]:
    """:func:`group`'s loop over objects ``done ..``, with ``groups`` groups so far.

    Builds a table of ``2**bits`` slots holding the groups so far, then
    adds objects while ``keys`` and ``sizes`` have room for their groups.
    Returns ``(done, groups)``: the first object not grouped (``n`` when
    all are) and the groups so far.  The loop's arrays never change size,
    so they stay in registers (reassigning an array inside a numba loop
    costs reference counting on every iteration).
    """
    n, dim = centres.shape
    mask = (1 << bits) - 1
    table = np.full(1 << bits, -1, dtype=np.int64)  # slot -> group, -1 for empty
    for g in range(groups):
        slot = _slot(keys, g, bits)
        while table[slot] >= 0:
            slot = (slot + 1) & mask
        table[slot] = g
    key = np.empty((1, dim + 1), dtype=np.int64)
    for i in range(done, n):
        home(centres, radii, i, origin, size, key, 0)
        slot = _slot(key, 0, bits)
        g = table[slot]
        while g >= 0:
            same = True
            for part in range(dim + 1):
                same &= keys[g, part] == key[0, part]
            if same:
                break
            slot = (slot + 1) & mask
            g = table[slot]
        if g < 0:  # a new group
            if groups == keys.shape[0]:
                return i, groups
            g = groups
            groups += 1
            for part in range(dim + 1):
                keys[g, part] = key[0, part]
            table[slot] = g
        group_of[i] = g
        sizes[g] += 1
    return n, groups


#: The fast cell test of :func:`settle` trusts ``floor`` of the float ``(c - o) * (2**L / size)``
#: farther than ``(|x| + 1) * SETTLE_SLACK`` from an integer: three roundings move it by under
#: ``|x| * 2**-51``; nearer a face (or beyond 2**52), the exact home function decides.
SETTLE_SLACK = 2.0 ** -50


def settle(handles: np.ndarray, centres: np.ndarray, radii: np.ndarray, world_fields: WorldFields,
           objects_fields: ObjectsFields, nodes_fields: NodesFields, pool_fields: PoolFields,
           backup: tuple[np.ndarray, np.ndarray], stored_radii: bool = False) -> np.ndarray:
    """Store every object whose home node is unchanged in place; return the others (the movers).

    Per object, the new home is compared with the old, without reading the
    node: an unchanged radius keeps its level ``L`` (a level is a function
    of the radius), and on levels ``L >= 0`` each axis's cell is ``floor((c
    - o) / size * 2**L)`` plus the level's anchor, so the new centre stays
    in the node when that floor equals the stored centre's.  A
    multiplication by ``1 / size`` decides each floor unless the value lies
    within rounding of a face (:data:`SETTLE_SLACK`).  Every other case (a
    new radius, a grown level, a value near a face) takes the home function,
    :func:`culling.core.cells.home`, against the node's key.  The fast test
    reads only the object's own row, which a stayer writes anyway.  An object that stays gets its centre,
    radius and squared reach (when the radius changed) in its row, and its
    tile covers it; its old centre and radius are kept in ``kept[i]`` first
    and ``written[i]`` set (``backup = (kept, written)``: float64 (n, dim + 1), and bool (n,) all
    False), so ``update_many`` can put them back (:func:`restore`) when anything after the first
    write fails: the movers' preparation, or this call itself (a part's allocation on another
    thread, the movers' copy).  Nothing of a
    mover is written, and the squared reach (the row's last column) is read
    and written only when the radius changes: four of the row's five cache
    lines in 3-D.

    The objects are visited in the caller's order, each one's pool row
    fetched :data:`~culling.runtime.prefetch.AHEAD` objects early, so the random
    rows arrive side by side (the 100k moving swarm, when this replaced
    sorting the objects by window of pool rows first: 3.5 against 3.8 ms).  From
    :data:`PARALLEL_SETTLE_MIN` objects the pool's rows are cut into a range
    per thread, on whole tiles (:data:`culling.core.tiles.TILE_ROWS`): each
    thread settles the objects whose row is in its range, so the threads
    write nothing in common.  The objects' rows are read first, once, a part
    per thread (:func:`_rows_of`), and each thread picks its objects from
    that array in one sequential pass: each thread used to read every
    object's row itself, a random read per object and thread (100k movers
    of 1M, the interest tick's: ``update_many`` 8.7 against 7.2 ms).

    Parameters
    ----------
    handles : int64 (n,), live and unique
    centres : float64 (n, dim); radii : float64 (n,); validated
    stored_radii : bool
        The objects keep their radii (``update_many`` without radii): each object's radius is read
        from the row the test reads anyway, and ``radii`` is written, not read, for the movers alone
        (what the caller reads of it).  A gather of the radii before the call read two more random
        places an object (1.2-1.8 ms for 100k movers of 1M); writing every object's radius made the
        threads write the same cache lines (100k all moving: 0.3 ms slower than radii given).

    Returns
    -------
    int64 (k,): indices into ``handles`` of the movers, ascending.  O(n); with
    ``t`` threads, ``n / t`` random reads and a sequential pass of ``n`` per thread.
    """
    batch = (handles, centres, radii, stored_radii)
    rows = pool_fields[1].shape[1]
    threads = thread_count()
    if handles.shape[0] < PARALLEL_SETTLE_MIN or threads == 1:
        return _settle_part(batch, _NO_ROWS, 0, rows, world_fields, objects_fields, nodes_fields, pool_fields, backup)
    cut = [((rows * p // threads) >> TILE_SHIFT) << TILE_SHIFT for p in range(threads)] + [rows]
    object_rows = np.empty(handles.shape[0], dtype=np.int64)
    run_chunks(lambda lo, hi: _rows_of(handles, objects_fields[1], object_rows, lo, hi), handles.shape[0],
               chunks=threads)

    def part(lo: int, hi: int) -> np.ndarray:
        return _settle_part(batch, object_rows, cut[lo], cut[hi], world_fields, objects_fields, nodes_fields,
                            pool_fields, backup)

    parts = run_chunks(part, threads, chunks=threads)
    movers = parts[0]
    for more in parts[1:]:  # each part's movers are ascending: joined in order, not sorted again
        movers = ascending_union(movers, more)
    return movers


@kernel
def ascending_union(first: np.ndarray, second: np.ndarray) -> np.ndarray:
    """Two ascending int64 arrays as one ascending array.  O(n)."""
    out = np.empty(first.shape[0] + second.shape[0], dtype=np.int64)
    i, j = 0, 0
    for k in range(out.shape[0]):
        if j == second.shape[0] or (i < first.shape[0] and first[i] <= second[j]):
            out[k] = first[i]
            i += 1
        else:
            out[k] = second[j]
            j += 1
    return out


#: :func:`settle` runs on the library's threads from this many objects on: as the pairs' join
#: (``culling.pairs.join.PARALLEL_MIN_OBJECTS``, where the measurements are), so a frame of
#: ``update_many`` and ``overlapping_pairs`` below it wakes no thread.
PARALLEL_SETTLE_MIN = 8_000


#: :func:`_settle_part`'s ``object_rows`` when it settles every object, reading each one's row itself.
_NO_ROWS = np.empty(0, dtype=np.int64)


@kernel
def _rows_of(handles: np.ndarray, obj_pos: np.ndarray, object_rows: np.ndarray, lo: int, hi: int) -> None:
    """``object_rows[i] = obj_pos[handles[i]]`` for ``i`` in ``lo .. hi - 1``: the objects' pool rows, each a
    random read, fetched :data:`~culling.runtime.prefetch.AHEAD` objects early."""
    for i in range(lo, hi):
        if i + AHEAD < hi:
            prefetch(obj_pos, handles[i + AHEAD])
        object_rows[i] = obj_pos[handles[i]]


@kernel
def _settle_part(batch: tuple[np.ndarray, np.ndarray, np.ndarray, bool], object_rows: np.ndarray, first_row: int,
                 end_row: int, world_fields: WorldFields, objects_fields: ObjectsFields, nodes_fields: NodesFields,
                 pool_fields: PoolFields, backup: tuple[np.ndarray, np.ndarray]) -> np.ndarray:
    """:func:`settle` for the objects whose pool row (``object_rows``, one per object) is in ``first_row ..
    end_row - 1``; with ``object_rows`` empty, for every object, each one's row read here.  ``batch``:
    the call's handles, centres and radii, and whether each object keeps its stored radius
    (``stored_radii``: read from its row, written to ``radii`` for the movers alone).  Returns the
    movers' indices, ascending."""
    handles, centres, radii, stored_radii = batch
    kept, written = backup
    origin, size, _, _ = world_fields  # the structs of culling.core.structs, in field order
    obj_node, obj_pos = objects_fields
    nodes = nodes_of(nodes_fields)
    _, columns, tile_box = pool_fields
    n, dim = centres.shape
    every = object_rows.shape[0] == 0
    mine = _objects_in_rows(object_rows, first_row, end_row)
    count = n if every else mine.shape[0]
    movers = np.empty(count, dtype=np.int64)
    key = np.empty((1, dim + 1), dtype=np.int64)
    k = 0
    for j in range(count):
        if j + AHEAD < count:  # a later object's row (culling.runtime.prefetch)
            ahead = obj_pos[handles[j + AHEAD]] if every else object_rows[mine[j + AHEAD]]
            for column in range(dim + 1):  # the centre and the radius
                prefetch_at(columns, column, ahead)
            if every and j + 2 * AHEAD < n:
                prefetch(obj_pos, handles[j + 2 * AHEAD])
        i = j if every else mine[j]
        row = obj_pos[handles[i]] if every else object_rows[i]
        radius = columns[dim, row] if stored_radii else radii[i]
        same_radius = radius == columns[dim, row]
        stays = UNSURE
        level = level_of(radius, size)
        if same_radius and 0 <= level <= MAX_DEPTH:  # the floors on its level decide, unless near a face
            stays = 1
            factor = float(1 << level) / size
            for axis in range(dim):
                x = (centres[i, axis] - origin[axis]) * factor
                was = (columns[axis, row] - origin[axis]) * factor
                cell, cell_was = np.floor(x), np.floor(was)
                if not (abs(x) < 2.0 ** 52 and abs(was) < 2.0 ** 52 and _clear_of_faces(x, cell)
                        and _clear_of_faces(was, cell_was)):
                    stays = UNSURE
                    break
                if cell != cell_was:
                    stays = 0
        if stays == UNSURE:  # the home function decides, against the node's key
            node = obj_node[handles[i]]
            radii[i] = radius
            home(centres, radii, i, origin, size, key, 0)
            stays = 1 if key[0, 0] == nodes.level[node] else 0
            for axis in range(dim):
                if nodes.cells[axis, node] != key[0, axis + 1]:
                    stays = 0
        if not stays:
            radii[i] = radius
            movers[k] = i
            k += 1
            continue
        for column in range(dim + 1):
            kept[i, column] = columns[column, row]
        written[i] = True
        for axis in range(dim):
            columns[axis, row] = centres[i, axis]
        if not same_radius:  # the squared reach only changes with the radius
            columns[dim, row] = radius
            columns[dim + 1, row] = reach_of(radius)
        cover_row(columns, row, tile_box)
    return movers[:k].copy()


#: The fast test's answer when the floats cannot decide (``stays`` is 1 or 0 when they can).
UNSURE = 2


@inline_kernel
def _clear_of_faces(x: float, cell: float) -> bool:
    """Whether ``x`` lies farther than its rounding's bound (:data:`SETTLE_SLACK`) from the faces of
    its cell ``cell = floor(x)``: the fast test of :func:`settle` trusts that floor."""
    slack = (abs(x) + 1.0) * SETTLE_SLACK
    return slack < x - cell < 1.0 - slack


@inline_kernel
def _objects_in_rows(object_rows: np.ndarray, first_row: int, end_row: int) -> np.ndarray:
    """The indices of the objects whose pool row (``object_rows``) is in ``first_row .. end_row - 1``,
    ascending: one sequential pass."""
    n = object_rows.shape[0]
    mine = np.empty(n, dtype=np.int64)
    m = 0
    for i in range(n):
        row = object_rows[i]
        mine[m] = i  # kept when in range: no branch on the rows
        m += (first_row <= row) & (row < end_row)
    return mine[:m]


@kernel
def corners(centres: np.ndarray, radii: np.ndarray) -> np.ndarray:
    """The two corner spheres of a batch, as pool rows (float64 (2, dim + 2)): the smallest and the
    largest centre on each axis, each with the largest radius (the last column, the squared reach,
    left 0).  One pass; ``n >= 1``.  O(n)."""
    n, dim = centres.shape
    out = np.zeros((2, dim + 2))
    for axis in range(dim):
        out[0, axis] = centres[0, axis]
        out[1, axis] = centres[0, axis]
    top = radii[0]
    for i in range(n):
        for axis in range(dim):
            out[0, axis] = min(out[0, axis], centres[i, axis])
            out[1, axis] = max(out[1, axis], centres[i, axis])
        top = max(top, radii[i])
    out[0, dim] = top
    out[1, dim] = top
    return out


@inline_kernel
def under_root(key: np.ndarray, world: World, nodes: Nodes) -> bool:
    """Whether the node of the home key ``key`` (int64 (1, dim + 1)) lies in the root: its level is
    the root's or below and its cell's ancestor on the root's level, ``cell >> (level -
    root_level)`` per axis (cells nest), is the root's cell."""
    shift = key[0, 0] - world.root_level
    if shift < 0:
        return False
    for axis in range(key.shape[1] - 1):
        if key[0, axis + 1] >> shift != nodes.cells[axis, world.root]:
            return False
    return True


@kernel
def fits_root(centres: np.ndarray, radii: np.ndarray, world_fields: WorldFields, nodes_fields: NodesFields) -> bool:
    """Whether the root holds every sphere of a batch (``n >= 1``).  Root-relative coordinates and
    levels are monotone in the centres and radii, so the two corner spheres (:func:`corners`)
    decide for the whole batch: the root holds both homes (:func:`under_root`).  One pass, O(n)."""
    world, nodes = World(*world_fields), nodes_of(nodes_fields)
    dim = centres.shape[1]
    spheres = corners(centres, radii)
    key = np.empty((1, dim + 1), dtype=np.int64)
    for corner in range(2):
        home(spheres[:, :dim], spheres[:, dim], corner, world.origin, world.size, key, 0)
        if not under_root(key, world, nodes):
            return False
    return True


@kernel
def restore(handles: np.ndarray, backup: tuple[np.ndarray, np.ndarray], obj_pos: np.ndarray,
            pool_fields: PoolFields) -> None:
    """Undo :func:`settle`'s writes: every object it wrote (``written[i]`` of ``backup = (kept, written)``)
    gets its centre and radius back from ``kept[i]``, and their squared reach, at the row it holds now
    (the movers' preparation may have moved its block), and its tile covers it again.  Allocates
    nothing: it runs where memory ran out.  O(n)."""
    kept, written = backup
    _, columns, tile_box = pool_fields
    dim = kept.shape[1] - 1
    for i in range(handles.shape[0]):
        if written[i]:
            row = obj_pos[handles[i]]
            for column in range(dim + 1):
                columns[column, row] = kept[i, column]
            columns[dim + 1, row] = reach_of(kept[i, dim])
            cover_row(columns, row, tile_box)


@kernel
def check_handles(handles: np.ndarray, issued: int, obj_node: np.ndarray, centres: np.ndarray,
                  radii: np.ndarray) -> int:
    """The index of the first object whose handle is out of range, not live or a repeat, or (for the
    first ``len(centres)`` objects: pass empty arrays to check the handles alone) whose centre is not
    finite, or (for the first ``len(radii)``: empty for radii kept) whose radius is not finite or is
    negative; -1 when all are good.

    One pass, a mark per handle issued; the caller then names the fault with the
    validators of :mod:`culling.core.validation`.  ``update_many`` checks its
    values here too, without the validators' temporary arrays (a 10k swarm's
    frame, interleaved with its peers: its validation 0.100/0.082 ms against
    0.129/0.105 with NumPy's checks, alternated in one process).  O(n + issued).
    """
    seen = np.zeros(issued, dtype=np.bool_)
    valued, dim = centres.shape
    sized = radii.shape[0]
    for i in range(handles.shape[0]):
        h = handles[i]
        if h < 0 or h >= issued or obj_node[h] < 0 or seen[h]:
            return i
        seen[h] = True
        if i < valued:
            good = i >= sized or (math.isfinite(radii[i]) and radii[i] >= 0.0)
            for axis in range(dim):
                good &= math.isfinite(centres[i, axis])
            if not good:
                return i
    return -1


@kernel
def unlink(handles: np.ndarray, objects_fields: ObjectsFields, nodes_fields: NodesFields,
           pool_fields: PoolFields, emptied: np.ndarray) -> np.ndarray:
    """Take objects out of their nodes: each object's row gets its node's last member, whose tile then
    covers it, and its node (``obj_node``) becomes -1.  Returns the nodes emptied, int64, each once:
    the front of ``emptied`` (int64, room for one per object), which the caller allocates before
    its first write, as everything after it: this allocates nothing.

    ``handles`` int64, live and unique.  The rows of later objects are fetched
    ahead, a step of their chain at a time (:mod:`culling.runtime.prefetch`).
    One plain loop: the same steps as inlined helpers taking the arrays kept
    numba's reference counting per array and object (0.12 ms for 1,000
    movers, against 0.02 ms).  O(len(handles)).
    """
    nodes = nodes_of(nodes_fields)
    obj_node, obj_pos = objects_fields
    node_start, node_count = nodes.start, nodes.members
    pool_handles, columns, tile_box = pool_fields
    width = columns.shape[0]
    n = handles.shape[0]
    k = 0
    for g in range(n):
        if g + 2 * AHEAD < n:  # a later object's node and row entries
            prefetch(obj_node, handles[g + 2 * AHEAD])
            prefetch(obj_pos, handles[g + 2 * AHEAD])
        if g + AHEAD < n:  # a nearer one's block and row
            h = handles[g + AHEAD]
            node, row = obj_node[h], obj_pos[h]
            prefetch(node_start, node)
            prefetch(node_count, node)
            prefetch(pool_handles, row)
            for column in range(width):
                prefetch_at(columns, column, row)
        if g + AHEAD // 2 < n:  # a still nearer one's last row, which fills its hole
            node = obj_node[handles[g + AHEAD // 2]]
            last = node_start[node] + node_count[node] - 1
            if last >= 0:
                prefetch(pool_handles, last)
                for column in range(width):
                    prefetch_at(columns, column, last)
        h = handles[g]
        node, row = obj_node[h], obj_pos[h]
        last = node_start[node] + node_count[node] - 1
        if row != last:
            moved = pool_handles[last]
            pool_handles[row] = moved
            for column in range(width):
                columns[column, row] = columns[column, last]
            cover_row(columns, row, tile_box)
            obj_pos[moved] = row
        pool_handles[last] = -1
        node_count[node] -= 1
        obj_node[h] = -1
        if node_count[node] == 0:
            emptied[k] = node
            k += 1
    return emptied[:k]


@kernel
def place(handles: np.ndarray, links: tuple[np.ndarray, np.ndarray, np.ndarray], centres: np.ndarray,
          radii: np.ndarray, objects_fields: ObjectsFields, nodes_fields: NodesFields, pool_fields: PoolFields) -> None:
    """Append objects to their home nodes, whose blocks already have room.  ``links = (group_of, homes,
    next_row)``: ``next_row`` int64 (homes,), scratch allocated with the homes, before the batch's first
    write: this allocates nothing.

    Object ``i`` (handle ``handles[i]``) goes to node ``homes[group_of[i]]``
    (:func:`group`).  Writes each object's pool row (handle, centre, radius,
    squared reach), its node and row, the nodes' counts, and covers the new
    rows' tiles (:mod:`culling.core.tiles`; each home's new rows are one range,
    covered in one sweep).  The objects are read in their own order
    (sequential reads), each written at its home's next free row: one write
    stream per home.  O(n).
    """
    obj_node, obj_pos = objects_fields  # the structs of culling.core.structs, in field order
    nodes = nodes_of(nodes_fields)
    node_start, node_count = nodes.start, nodes.members
    pool_handles, columns, tile_box = pool_fields
    n, dim = centres.shape
    group_of, homes, next_row = links
    for g in range(homes.shape[0]):
        next_row[g] = node_start[homes[g]] + node_count[homes[g]]
    for i in range(n):
        if i + AHEAD < n:  # a later object's row (culling.runtime.prefetch)
            ahead = next_row[group_of[i + AHEAD]]
            prefetch(pool_handles, ahead)
            for column in range(dim + 2):
                prefetch_at(columns, column, ahead)
        g = group_of[i]
        row = next_row[g]
        next_row[g] = row + 1
        h = handles[i]
        pool_handles[row] = h
        for axis in range(dim):
            columns[axis, row] = centres[i, axis]
        columns[dim, row] = radii[i]
        columns[dim + 1, row] = reach_of(radii[i])
        obj_node[h] = homes[g]
        obj_pos[h] = row
    for g in range(homes.shape[0]):
        cover(columns, node_start[homes[g]] + node_count[homes[g]], next_row[g], tile_box)
        node_count[homes[g]] = next_row[g] - node_start[homes[g]]


def layout_order(centres: np.ndarray, radii: np.ndarray,
                 handles: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The objects along a Morton curve over the batch's bounding box: their handles, centres and
    radii in that order (new arrays: int64 (n,), float64 (n, dim), float64 (n,)).

    ``insert_many`` takes its objects in this order, so every node's new
    members lie along the curve too (the curve restricted to an aligned cell
    is the cell's own Morton curve), and each tile of pool rows covers a
    small part of its node (:mod:`culling.core.tiles`).  Only the layout follows
    from it, never a node or an answer.  :func:`morton_order`'s order with
    :data:`LAYOUT_BITS` bits (equal codes in input order).

    The objects are scattered by code, as the counting sort places them
    (:func:`_layout_into`): one sequential read of each input and a write
    stream per code (4,096 of them, their current cache lines fit in L2),
    instead of the order first and then a gather of every object from a
    random place (two cache misses an object) and of the handles.  The
    arrays are NumPy's, allocated here: NumPy asks for transparent huge pages
    on large arrays, a kernel's own allocations fault in 4 KiB pages (at 1M,
    11,700 faults).  ``insert_many`` of the forest's 1M objects, CPU time:
    alternated in one process, 130 ms with the gather, 106 with the scatter
    (memory reused, no faults: 106 with NumPy's arrays too); alternated
    processes, 121 ms with the kernel's arrays, 110 with NumPy's.
    O(n + 2**LAYOUT_BITS).
    """
    n, dim = centres.shape
    laid_out = (np.empty(n, dtype=np.int64), np.empty((n, dim)), np.empty(n))
    _layout_into(centres, radii, handles, np.empty(n, dtype=np.int64), laid_out)
    return laid_out


@kernel
def _layout_into(centres: np.ndarray, radii: np.ndarray, handles: np.ndarray, codes: np.ndarray,
                 laid_out: tuple[np.ndarray, np.ndarray, np.ndarray]) -> None:
    """:func:`layout_order`'s pass: the codes (into ``codes``, int64 (n,)), their counting sort's
    starts, then every object scattered to its place in ``laid_out`` (handles, centres, radii).
    O(n + 2**LAYOUT_BITS)."""
    sorted_handles, sorted_centres, sorted_radii = laid_out
    n, dim = centres.shape
    used = _morton_codes(centres, LAYOUT_BITS, codes)
    starts = _code_starts(codes, used)
    for i in range(n):
        j = starts[codes[i]]
        starts[codes[i]] = j + 1
        sorted_handles[j] = handles[i]
        for axis in range(dim):
            sorted_centres[j, axis] = centres[i, axis]
        sorted_radii[j] = radii[i]


#: Most bits of :func:`query_order`'s Morton code: a counting sort over 2**21 codes (16 MB of
#: counts) for batches of a million points or more.
QUERY_ORDER_BITS = 21


def query_order(points: np.ndarray) -> np.ndarray:
    """The order ``query_many`` walks its points in: along a Morton curve over their bounding box,
    int64 (m,).

    Neighbouring points visit the same nodes, so walked one after the other
    they find those nodes' rows in cache, and a walk shares the upper levels
    of the one before it (:func:`culling.tree.walk.visits`); each answer is
    the same in any order, and ``query_many`` writes them back in the
    caller's.  The code has about one bit per point (at least
    :data:`LAYOUT_BITS`, at most :data:`QUERY_ORDER_BITS`): about a point
    per code.  O(m + 2**bits).
    """
    bits = min(max(LAYOUT_BITS, int(points.shape[0]).bit_length()), QUERY_ORDER_BITS)
    order: np.ndarray = morton_order(points, bits)
    return order


@kernel
def morton_order(centres: np.ndarray, bits: int) -> np.ndarray:
    """:func:`_morton_order` for Python: the points ``centres`` (float64 (n, dim)) along a Morton curve
    of ``bits`` bits over their bounding box, int64 (n,).  O(n + 2**bits)."""
    return _morton_order(centres, bits)


@inline_kernel
def _morton_order(centres: np.ndarray, bits: int) -> np.ndarray:
    """An order of the points along a Morton curve over their bounding box: int64 (n,).

    Each point's code is :func:`_morton_codes`'s, and a counting sort orders
    the codes, equal codes in input order.  O(n + 2**bits).
    """
    n = centres.shape[0]
    codes = np.empty(n, dtype=np.int64)
    used = _morton_codes(centres, bits, codes)
    starts = _code_starts(codes, used)
    order = np.empty(n, dtype=np.int64)
    for i in range(n):
        order[starts[codes[i]]] = i
        starts[codes[i]] += 1
    return order


@inline_kernel
def _code_starts(codes: np.ndarray, used: int) -> np.ndarray:
    """Where each code's points begin in code order (the counting sort's prefix sums): int64
    ``(2**used + 1,)``, ``starts[c]`` the first place of code ``c``.  O(n + 2**used)."""
    starts = np.zeros((1 << used) + 1, dtype=np.int64)
    for i in range(codes.shape[0]):
        starts[codes[i] + 1] += 1
    for c in range(1 << used):
        starts[c + 1] += starts[c]
    return starts


@inline_kernel
def _morton_codes(centres: np.ndarray, bits: int, codes: np.ndarray) -> int:
    """Each point's Morton code over the points' bounding box, into ``codes`` (int64 (n,)); returns
    how many bits the codes use (``<= bits``).

    ``bits`` bits are handed out one at a time to the axis whose cells are
    widest (a flat batch splits only its wide axes), and each point's code is
    the Morton interleave of its cell.  O(n + 2**bits).
    """
    n, dim = centres.shape
    low = np.empty(dim)
    width = np.empty(dim)
    for axis in range(dim):
        lo, hi = math.inf, -math.inf
        for i in range(n):
            lo = min(lo, centres[i, axis])
            hi = max(hi, centres[i, axis])
        low[axis] = 0.5 * lo
        width[axis] = 0.5 * hi - 0.5 * lo if n else 0.0  # halves: no overflow across a huge world
    # which axis each bit of the code splits, most significant first
    per_axis = np.zeros(dim, dtype=np.int64)
    split = np.empty(bits, dtype=np.int64)
    used = 0
    while used < bits:
        widest = 0
        for axis in range(1, dim):
            if math.ldexp(width[axis], -int(per_axis[axis])) > math.ldexp(width[widest], -int(per_axis[widest])):
                widest = axis
        if not width[widest] > 0.0:  # every point at one place (or a single point): nothing to split
            break
        split[used] = widest
        per_axis[widest] += 1
        used += 1
    # part[axis, cell]: what the cell number on ``axis`` adds to the code
    most = 0  # the most bits an axis has; a loop, as ``per_axis.max()`` would make a load import numba's arraymath
    for axis in range(dim):
        most = max(most, per_axis[axis])
    part = np.zeros((dim, 1 << most), dtype=np.int64)
    seen = np.zeros(dim, dtype=np.int64)
    for k in range(used):
        axis = split[k]
        seen[axis] += 1
        for cell in range(1 << per_axis[axis]):
            part[axis, cell] |= ((cell >> (per_axis[axis] - seen[axis])) & 1) << (used - 1 - k)
    for i in range(n):
        code = 0
        for axis in range(dim):
            if per_axis[axis]:
                top = (1 << per_axis[axis]) - 1
                cell = min(top, int((0.5 * centres[i, axis] - low[axis]) / width[axis] * (top + 1)))
                code |= part[axis, cell]
        codes[i] = code
    return used
