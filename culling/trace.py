"""What a query visited, level by level: the data behind the debug overlay.

:meth:`ViewDistanceTree.trace` returns a :class:`QueryTrace`.  Its levels run
from the current root (depth 0, exactly one node) downwards without gaps, and
each records the boxes of the nodes visited there and how many objects they
returned, so an overlay can draw the boxes and a HUD can print the table.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from numpy.typing import NDArray

from culling.records import ValueRecord

__all__ = ["LevelTrace", "QueryTrace"]


@dataclass(frozen=True, eq=False)
class LevelTrace(ValueRecord):
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
    bounds: NDArray[np.float64]
    loose_bounds: NDArray[np.float64]
    objects: int

    @property
    def nodes(self) -> int:
        """Number of nodes visited on this level."""
        return int(self.bounds.shape[0])


@dataclass(frozen=True, eq=False)
class QueryTrace(ValueRecord):
    """The candidates of one query and the levels it visited, root first.

    Attributes
    ----------
    point : ndarray, shape (dim,), float64
        The query point.
    candidates : ndarray, shape (n,), int64
        The same handles as ``query(point)`` (before any exact test).
    levels : list of LevelTrace
        Root first, without gaps; empty for an empty tree.  The levels'
        ``objects`` sum to ``len(candidates)`` (docs/CONTRACT.md, "trace").

    Examples
    --------
    >>> from culling import ViewDistanceTree
    >>> tree = ViewDistanceTree(size=64.0, dim=2)
    >>> _ = tree.insert_many([[1.0, 1.0], [40.0, 40.0]], [20.0, 3.0])
    >>> trace = tree.trace((2.0, 2.0))
    >>> trace.levels[0].depth, trace.levels[0].nodes, sum(lv.objects for lv in trace.levels)
    (0, 1, 1)
    >>> print(trace.table().splitlines()[0])
    depth  node size  nodes  objects
    """

    point: NDArray[np.float64]
    candidates: NDArray[np.int64]
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
