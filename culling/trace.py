"""What a query visited, level by level: the data behind the debug overlay.

:meth:`ViewDistanceTree.trace` returns a :class:`QueryTrace`.  Its levels run
from the current root (depth 0, exactly one node) downwards without gaps, and
each records the boxes of the nodes visited there and how many objects they
returned, so an overlay can draw the boxes and a HUD can print the table.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

__all__ = ["LevelTrace", "QueryTrace"]


@dataclass(frozen=True)
class LevelTrace:
    """The nodes one query visited on one level.

    Attributes
    ----------
    depth : int
        0 for the current root, 1 for its children, ...
    level : int
        Absolute level: 0 is a node of the constructor's ``size``, negative
        levels are roots grown above it.  Stable while the root grows.
    node_size : float
        Edge length of the nodes on this level.
    bounds : ndarray, shape (k, 2, dim), float64
        ``[lo, hi]`` of the ``k`` nodes visited.
    loose_bounds : ndarray, shape (k, 2, dim), float64
        The grown boxes the query tested the point against (the root's are
        its own box: the root is always visited).
    objects : int
        How many objects those ``k`` nodes returned (before any exact test).
    """

    depth: int
    level: int
    node_size: float
    bounds: np.ndarray
    loose_bounds: np.ndarray
    objects: int

    @property
    def nodes(self) -> int:
        """Number of nodes visited on this level."""
        return int(self.bounds.shape[0])


@dataclass(frozen=True)
class QueryTrace:
    """The candidates of one query and the levels it visited, root first."""

    point: np.ndarray
    candidates: np.ndarray
    levels: list[LevelTrace] = field(default_factory=list)

    @property
    def visited_nodes(self) -> int:
        """Total number of nodes visited over all levels."""
        return sum(level.nodes for level in self.levels)

    def table(self) -> str:
        """The per-level table a HUD prints: depth, node size, nodes, objects."""
        rows = ["depth  node size  nodes  objects"]
        rows += [f"{lv.depth:5d}  {lv.node_size:9.4g}  {lv.nodes:5d}  {lv.objects:7d}"
                 for lv in self.levels]
        return "\n".join(rows)
