"""The dense grid's cells as the broad phase sees them: levels, coordinates and a tree.

Every cell's level and coordinates (:func:`cell_levels`) let
:func:`culling.pairs.join.overlapping_pairs` join the grid's cells by bands
of levels as it joins the tree's nodes.  Where that does not suit (members in
a few clusters far apart), the levels' cells are a full tree (cell ``k`` of
level ``L`` has the cells ``2k + bits`` of level ``L + 1`` as children);
:func:`cell_tree` keeps the cells whose subtree holds objects, numbered
compactly with a child table, and the join walks that tree with itself
exactly as it walks the view-distance tree.
"""

from __future__ import annotations

import functools

import numpy as np

from culling.runtime.jit import kernel

__all__ = ["cell_levels", "cell_tree"]


@kernel
def cell_tree(offsets: np.ndarray, start: np.ndarray, count: np.ndarray,
              dim: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The grid's cells whose subtree holds objects, as a tree: ``(child, node_start, node_count)``.

    Node 0 is the level-0 cell; ``child`` int64 ``(nodes, 2**dim)``, -1 for a
    child whose subtree is empty; ``node_start``/``node_count`` int64, the
    cells' member runs.  O(cells): every cell's subtree count, bottom up.
    """
    levels = offsets.shape[0] - 1
    cells = offsets[levels]
    quadrants = 1 << dim
    below = np.zeros(cells, dtype=np.int64)  # objects in the subtree of each cell
    for c in range(cells):
        below[c] = count[c]
    for level in range(levels - 2, -1, -1):
        side = 1 << level
        for flat in range(offsets[level + 1] - offsets[level]):
            total = below[offsets[level] + flat]
            for q in range(quadrants):
                total += below[_child_id(offsets, level, flat, q, dim, side)]
            below[offsets[level] + flat] = total
    ids = np.full(cells, -1, dtype=np.int64)
    n = 0
    for c in range(cells):
        if below[c] > 0:
            ids[c] = n
            n += 1
    if n == 0:  # an empty grid: the level-0 cell alone
        ids[0] = 0
        n = 1
    child = np.full((n, quadrants), -1, dtype=np.int64)
    node_start = np.zeros(n, dtype=np.int64)
    node_count = np.zeros(n, dtype=np.int64)
    for level in range(levels):
        side = 1 << level
        for flat in range(offsets[level + 1] - offsets[level]):
            c = offsets[level] + flat
            node = ids[c]
            if node < 0:
                continue
            node_start[node] = start[c]
            node_count[node] = count[c]
            if level + 1 < levels:
                for q in range(quadrants):
                    child[node, q] = ids[_child_id(offsets, level, flat, q, dim, side)]
    return child, node_start, node_count


@kernel
def _child_id(offsets: np.ndarray, level: int, flat: int, quadrant: int, dim: int, side: int) -> int:
    """Global id of child ``quadrant`` (bit ``a``: the high half of axis ``a``) of cell ``flat`` of ``level``."""
    rest = flat
    child_flat = 0
    shift = 0
    for axis in range(dim - 1, -1, -1):  # row-major: the last axis runs fastest
        k = rest % side
        rest //= side
        child_flat += (2 * k + ((quadrant >> axis) & 1)) << shift
        shift += level + 1
    return int(offsets[level + 1] + child_flat)


def cell_levels(offsets: np.ndarray, dim: int) -> tuple[np.ndarray, np.ndarray]:
    """Every cell's level and coordinates by global id: int64 ``(cells,)`` and ``(dim, cells)``.

    Cell ``k`` of level ``L`` (row-major, the last axis fastest) spans
    ``[origin + k_a * W, origin + (k_a + 1) * W)`` on axis ``a``.  Fixed for a
    grid's levels and dimension, so computed once per shape and shared: not to be written.
    """
    return _cell_levels(offsets.shape[0] - 1, dim)


@functools.lru_cache(maxsize=8)
def _cell_levels(levels: int, dim: int) -> tuple[np.ndarray, np.ndarray]:
    level, coords = _levels_and_coords(levels, dim)
    return level, coords


@kernel
def _levels_and_coords(levels: int, dim: int) -> tuple[np.ndarray, np.ndarray]:
    cells = 0
    for level in range(levels):
        cells += 1 << (level * dim)
    level_of = np.empty(cells, dtype=np.int64)
    coords = np.empty((dim, cells), dtype=np.int64)
    c = 0
    for level in range(levels):
        side = 1 << level
        for flat in range(1 << (level * dim)):
            level_of[c] = level
            rest = flat
            for axis in range(dim - 1, -1, -1):
                coords[axis, c] = rest % side
                rest //= side
            c += 1
    return level_of, coords
