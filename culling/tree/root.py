"""The tree's root: grown when a sphere lands outside it, shrunk when nothing needs the growth.

The root is the node every descent starts from.  A sphere whose centre lies
outside it, or whose radius is too large for its level, needs a coarser root:
a parent is put above the root, level by level, and nothing stored moves (the
world doubles, cells nest).  After removals the root steps back down while it
holds no members and has one child.  The largest world is the level
``-MAX_GROWTH`` cell 0 (:mod:`culling.core.lattice`); keys beyond it are
refused before anything changes.

These functions work on the node table and the pool; :class:`~culling.tree.tree.ViewDistanceTree`
keeps the root's id.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import TYPE_CHECKING

import numpy as np

from culling.core.lattice import ANCHOR, MAX_GROWTH, Lattice

if TYPE_CHECKING:
    from culling.tree.nodes import NodeTable
    from culling.tree.pool import BlockPool

__all__ = ["check_world", "delete_node", "grow_root", "root_level_for", "shrink_root"]


def check_world(lattice: Lattice, keys: list[list[int]], one: bool = False,
                batch: tuple[np.ndarray, np.ndarray, Callable[[], np.ndarray] | None] | None = None) -> None:
    """Reject home keys ``(level, cell...)`` outside the largest world (a centre there), or above its
    root (a radius too large), with a ``ValueError`` (worded for one object's call where ``one``;
    ``batch``: a batch's ``(centres, radii, rows)``, whose bad row the message names by its number
    in the caller's batch, ``rows()[i]``, or ``i`` where ``rows`` is None: made only for the message,
    as a batch that fits costs nothing for it).

    A key on a level below the largest world's is inside exactly when its
    ancestor there, ``cell >> (level + MAX_GROWTH)`` per axis, is 0 (the cell
    function clamps coordinates beyond the world to a cell just outside it).
    """
    if any(level < -MAX_GROWTH for level, *_ in keys):
        limit = lattice.node_size(-MAX_GROWTH) / 2
        which = ""
        if batch is not None:
            radii = batch[1]
            with np.errstate(over="ignore"):
                row = _named_row(radii >= limit, radii - limit)
            which = f"; radii[{_caller_row(batch[2], row)}] is {radii[row]:g}"
        raise ValueError(f"{'the radius' if one else 'radii'} must be below {limit:g}, "
                         f"the largest this tree can grow to{which}")
    if any(c >> (level + MAX_GROWTH) for level, *cell in keys for c in cell):
        low, high = lattice.world_bounds()
        which = ""
        if batch is not None:
            centres = batch[0]
            outside = np.any((centres < low) | (centres >= high), axis=1)
            with np.errstate(over="ignore"):  # centres near the largest float: inf is still the farthest
                row = _named_row(outside, np.maximum(low - centres, centres - high).max(axis=1))
            which = f"; centres[{_caller_row(batch[2], row)}] is {centres[row].tolist()}"
        raise ValueError(f"{'the centre' if one else 'centres'} must lie within the largest world this tree can grow to, "
                         f"[{low.tolist()}, {high.tolist()}){which}")


def _caller_row(rows: Callable[[], np.ndarray] | None, row: int) -> int:
    """Row ``row`` of the objects checked, numbered in the caller's batch (``rows`` makes them all)."""
    return row if rows is None else int(rows()[row])


def _named_row(bad: np.ndarray, beyond: np.ndarray) -> int:
    """The row an error names: the first ``bad`` one, or, where the floats put none beyond the bound
    (the keys decide within rounding of it), the one farthest ``beyond`` it."""
    return int(np.flatnonzero(bad)[0]) if bad.any() else int(np.argmax(beyond))


def root_level_for(nodes: NodeTable, root: int, lattice: Lattice, keys: list[list[int]]) -> int:
    """The level the root must grow to so that it holds the home keys ``keys`` (inside the world,
    :func:`check_world`): on their levels or above, their cells below its own.  A root whose box
    would leave the floats is a ``ValueError``, raised before anything changes.

    The ancestor of cell ``c`` ``g`` levels up is ``c >> g``, so the levels are counted, not grown.
    """
    level, cell = nodes.key_of(root)
    while not all(level <= k_level and all(c >> (k_level - level) == r for c, r in zip(k_cell, cell))
                  for k_level, *k_cell in keys):
        level, cell = level - 1, tuple(c >> 1 for c in cell)
    box_lo, box_hi = lattice.cell_bounds(level, cell)
    if not (np.isfinite(box_lo).all() and np.isfinite(box_hi).all() and math.isfinite(lattice.node_size(level))):
        raise ValueError(f"the root would have to grow to nodes of edge {lattice.node_size(level):g} "
                         f"from {box_lo.tolist()}, beyond the largest float; centres and radii must "
                         f"stay within a world whose corners are finite")
    return level


def grow_root(nodes: NodeTable, pool: BlockPool, root: int) -> int:
    """Put a parent above ``root`` and return it: the world doubles, nothing stored moves.

    The new root is made first (a ``MemoryError`` there changes nothing).
    """
    level, cell = nodes.key_of(root)
    parent = nodes.new(level - 1, tuple(c >> 1 for c in cell), -1)
    if nodes.count[root] > 0 or nodes.children[root] > 0:
        nodes.adopt(parent, root)
    else:  # an empty root would become an empty leaf
        delete_node(nodes, pool, root)
    return parent


def shrink_root(nodes: NodeTable, pool: BlockPool, root: int, dim: int) -> int:
    """Undo growth that no object needs any more; returns the root."""
    while nodes.level[root] < 0 and nodes.count[root] == 0:
        if nodes.children[root] == 1:
            child = nodes.only_child(root)
            nodes.orphan(child)
            delete_node(nodes, pool, root)
            root = child
        elif nodes.children[root] == 0:  # the tree is empty: back to the constructor's root
            delete_node(nodes, pool, root)
            root = nodes.new(0, (ANCHOR,) * dim, -1)
        else:
            break
    return root


def delete_node(nodes: NodeTable, pool: BlockPool, node: int) -> None:
    """Delete ``node``; its block goes back to the pool."""
    if nodes.capacity[node]:
        pool.release_many(nodes.start[node:node + 1], nodes.capacity[node:node + 1])
    nodes.delete(node)
