"""The dense grid's non-empty cells as the broad phase sees them: runs with levels and coordinates, and a tree.

The non-empty cells' levels and coordinates (:func:`cell_runs`) let
:func:`culling.pairs.join.overlapping_pairs` join the grid's cells by bands
of levels as it joins the tree's nodes.  Where that does not suit (members in
a few clusters far apart), the levels' cells are a full tree (cell ``k`` of
level ``L`` has the cells ``2k + bits`` of level ``L + 1`` as children);
:func:`cell_tree` keeps the non-empty cells and their ancestors (the cells
whose subtree holds objects), numbered compactly with a child table, and the
join walks that tree with itself exactly as it walks the view-distance tree.

Both start from the grid's sorted index of non-empty cells (global ids
ascending, level ``L``'s from ``at[L]``: the grid's ``_occupied``), so they
cost O(non-empty cells x levels), never O(cells): a 3-D grid of 2**24 finest
cells has 19M cells whatever it holds.  A cell's global id is its level's
offset plus its row-major index (the last axis fastest).

The grid stores every radius below its finest level's on that level, so a
crowd of objects far smaller than ``min_radius`` shares a few finest cells,
and a join of those cells tested each member against the whole crowd: the
square of a cell's count.  :func:`split_crowded` gives such members the
finer levels the tree would give them, in a copy of the pool, so that the
join buckets them finely.
"""

from __future__ import annotations

import numpy as np

from culling.core.cells import placed_columns
from culling.core.lattice import MAX_DEPTH
from culling.core.rows import concat_ranges

__all__ = ["CROWDED", "cell_runs", "cell_tree", "split_crowded"]

#: A finest cell holding more members than this is split by :func:`split_crowded`.
CROWDED = 32

#: :func:`split_crowded` goes down until a crowded cell's members would fill about this many cells
#: each (the bands' own density, :data:`culling.pairs.bands.DENSITY`).
CROWD_DENSITY = 4.0


def _coords(cells: np.ndarray, level: int, offsets: np.ndarray, dim: int) -> np.ndarray:
    """Per-axis coordinates, int64 ``(dim, n)``, of global cell ids on one ``level``."""
    flat = cells - offsets[level]
    mask = (1 << level) - 1
    return np.stack([np.right_shift(flat, level * (dim - 1 - axis)) & mask for axis in range(dim)]).reshape(dim, -1)


def _ids(coords: np.ndarray, level: int, offsets: np.ndarray) -> np.ndarray:
    """Global ids (int64 ``(n,)``) of the cells with coordinates ``coords`` (``(dim, n)``) on ``level``."""
    dim = coords.shape[0]
    flat = np.zeros(coords.shape[1], dtype=np.int64)
    for axis in range(dim):
        flat |= np.left_shift(coords[axis], level * (dim - 1 - axis))
    result: np.ndarray = flat + offsets[level]
    return result


def cell_runs(occupied: np.ndarray, at: np.ndarray, start: np.ndarray, count: np.ndarray, offsets: np.ndarray,
              dim: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The non-empty cells as runs: ``(start, count, level, coords)``, int64 ``(k,)`` three times and
    ``(dim, k)``.

    ``occupied``: the non-empty cells' global ids ascending, level ``L``'s
    ``occupied[at[L]:at[L+1]]``; ``start``/``count``: every cell's pool
    block; ``offsets``: each level's first global id.  O(k x dim).
    """
    levels = at.shape[0] - 1
    level = np.repeat(np.arange(levels, dtype=np.int64), np.diff(at))
    coords = np.empty((dim, occupied.shape[0]), dtype=np.int64)
    for lv in range(levels):
        coords[:, at[lv]:at[lv + 1]] = _coords(occupied[at[lv]:at[lv + 1]], lv, offsets, dim)
    return start[occupied].astype(np.int64), count[occupied].astype(np.int64), level, coords


def cell_tree(occupied: np.ndarray, at: np.ndarray, start: np.ndarray, count: np.ndarray, offsets: np.ndarray,
              dim: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The non-empty cells and all their ancestors as a tree: ``(child, node_start, node_count)``.

    Node 0 is the level-0 cell, the others follow in ascending global id;
    ``child`` int64 ``(nodes, 2**dim)``, -1 for a child whose subtree is
    empty (bit ``a`` of the quadrant: the high half of axis ``a``);
    ``node_start``/``node_count`` int64, the cells' member runs (0 members
    for an empty ancestor).  Arguments as :func:`cell_runs`'.
    O(levels x k log k) for ``k`` non-empty cells.
    """
    levels = at.shape[0] - 1
    per_level = [occupied[at[level]:at[level + 1]] for level in range(levels)]
    child_ids: list[np.ndarray] = [np.empty(0, dtype=np.int64)] * levels
    parent_ids: list[np.ndarray] = [np.empty(0, dtype=np.int64)] * levels
    quadrants: list[np.ndarray] = [np.empty(0, dtype=np.int64)] * levels
    above = np.empty(0, dtype=np.int64)
    for level in range(levels - 1, 0, -1):  # every cell's ancestors, level by level upwards
        listed = np.union1d(per_level[level], above) if above.size else per_level[level]
        per_level[level] = listed
        coords = _coords(listed, level, offsets, dim)
        quadrant = np.zeros(listed.shape[0], dtype=np.int64)
        for axis in range(dim):
            quadrant |= (coords[axis] & 1) << axis
        parents = _ids(np.right_shift(coords, 1), level - 1, offsets)
        child_ids[level], parent_ids[level], quadrants[level] = listed, parents, quadrant
        above = np.unique(parents)
    per_level[0] = np.zeros(1, dtype=np.int64)
    nodes = np.concatenate(per_level)
    child = np.full((nodes.shape[0], 1 << dim), -1, dtype=np.int64)
    for level in range(1, levels):
        if child_ids[level].size:
            child[np.searchsorted(nodes, parent_ids[level]), quadrants[level]] = \
                np.searchsorted(nodes, child_ids[level])
    return child, start[nodes].astype(np.int64), count[nodes].astype(np.int64)


Runs = tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]


def split_crowded(runs: Runs, handles: np.ndarray, columns: np.ndarray, finest: int, origin: np.ndarray,
                  size: float) -> tuple[Runs, np.ndarray, np.ndarray]:
    """``runs`` (:func:`cell_runs`) with each finest cell of more than :data:`CROWDED` members split by
    finer levels, over a copy of the pool ``(handles, columns)`` whose crowded blocks are reordered.

    A member of a crowded cell goes to the level its radius would have in
    the tree (:func:`culling.core.cells.level_of`'s ``r < W/2``, so the join's
    rule still holds), at most as deep as spreads its cell's crowd (the box of
    its centres) over about :data:`CROWD_DENSITY` members a cell, and to the exact cell of its
    exactly placed centre on that level (:func:`~culling.core.cells.placed_columns`,
    clamped to the world as the grid clamps), the cells the join would compute.
    Each block's members are only reordered within it, so every run of the
    grid's own cells still holds the same members (the dual walk may read the
    copy).  Returns the inputs themselves when no cell is crowded.
    O(runs + members of crowded cells x log).
    """
    start, count, level, coords = runs
    crowded = np.flatnonzero((level == finest) & (count > CROWDED))
    if crowded.size == 0:
        return runs, handles, columns
    dim = coords.shape[0]
    rows = concat_ranges(start[crowded], count[crowded])
    run_of = np.repeat(np.arange(crowded.size, dtype=np.int64), count[crowded])
    # Each member's own level, r in [W/4, W/2) (MAX_DEPTH for r = 0 and radii below it) ...
    with np.errstate(under="ignore"):  # a subnormal radius over the size: 0, the deepest level, as level_of
        relative = columns[dim, rows] / size
    own = np.where(relative > 0.0, -np.frexp(relative)[1] - 1, MAX_DEPTH)
    # ... no deeper than spreads the crowd's own box (root-relative: it may fill a sliver of its cell)
    # over about CROWD_DENSITY members a cell.
    placed = placed_columns(np.ascontiguousarray(columns[:dim, rows].T), np.asarray(origin, dtype=np.float64), size)
    firsts = np.cumsum(count[crowded]) - count[crowded]
    extent = (np.maximum.reduceat(placed, firsts, axis=1) - np.minimum.reduceat(placed, firsts, axis=1)).max(axis=0)
    with np.errstate(divide="ignore"):   # a crowd at one place: no level spreads it, the deepest
        wanted = np.log2(count[crowded] / CROWD_DENSITY) / dim - np.log2(extent)
    deepest = np.clip(np.ceil(np.nan_to_num(wanted, posinf=MAX_DEPTH)), finest + 1, MAX_DEPTH).astype(np.int64)
    new_level = np.clip(own, finest, deepest[run_of]).astype(np.int64)
    scale = np.ldexp(1.0, new_level)
    cells = np.clip(np.floor(placed * scale).astype(np.int64), 0, np.left_shift(1, new_level) - 1)
    order = np.lexsort((*cells[::-1], new_level, run_of))   # by run (so within its block), level, cell
    handles = handles.copy()
    columns = columns.copy()
    handles[rows] = handles[rows[order]]
    columns[:, rows] = columns[:, rows[order]]
    key_level, key_cells, key_run = new_level[order], cells[:, order], run_of[order]
    first = np.ones(rows.size, dtype=bool)
    first[1:] = (key_run[1:] != key_run[:-1]) | (key_level[1:] != key_level[:-1]) | \
        (key_cells[:, 1:] != key_cells[:, :-1]).any(axis=0)
    firsts = np.flatnonzero(first)
    sizes = np.diff(np.append(firsts, rows.size))
    keep = np.ones(start.size, dtype=bool)
    keep[crowded] = False
    split = (rows[firsts], sizes, key_level[firsts], key_cells[:, firsts])
    return (np.concatenate([start[keep], split[0]]), np.concatenate([count[keep], split[1]]),
            np.concatenate([level[keep], split[2]]), np.concatenate([coords[:, keep], split[3]], axis=1)), \
        handles, columns
