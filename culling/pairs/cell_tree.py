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
"""

from __future__ import annotations

import numpy as np

__all__ = ["cell_runs", "cell_tree"]


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
