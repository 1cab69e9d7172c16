"""The tree's batch-mutation kernels: the per-object loops of ``insert_many`` and ``update_many``.

Grouping, node creation and block allocation stay in NumPy and Python (they
run per node, not per object); what runs per object is here, as plain loops
that touch each object's row once:

- :func:`settle` (``update_many``): compute each object's home cell, and
  when it is the node the object is already in (a small move), rewrite its
  centre and radius in place; return the others, the movers.
- :func:`place` (``insert_many`` and the movers): append objects, grouped
  by home node, after their node's members.

NumPy needed a dozen passes and two 2-D scatters for each (measured: 82 ns
per object for a frame of small moves, against about 25 here).
"""

from __future__ import annotations

import numpy as np

from culling.jit import kernel
from culling.shapes import reach_of
from culling.treekernels import cell_of

__all__ = ["place", "settle"]


@kernel
def settle(handles: np.ndarray, centres: np.ndarray, radii: np.ndarray, u: np.ndarray, levels: np.ndarray,
           obj_node: np.ndarray, obj_pos: np.ndarray, node_level: np.ndarray, node_cells: np.ndarray,
           columns: np.ndarray, cells: np.ndarray) -> np.ndarray:
    """Store every object whose home is unchanged in place; return the indices of the others.

    Parameters
    ----------
    handles : int64 (n,), live and unique
    centres : float64 (n, dim); radii : float64 (n,)
    u : float64 (dim, n), root-relative centres; levels : int64 (n,), home levels
    cells : int64 (dim, n), written: every object's home cell

    Returns
    -------
    int64 (k,): indices into ``handles`` of the objects whose home node changed
    (nothing of theirs is written).  O(n).
    """
    n, dim = centres.shape
    movers = np.empty(n, dtype=np.int64)
    k = 0
    for i in range(n):
        node = obj_node[handles[i]]
        stay = node_level[node] == levels[i]
        for axis in range(dim):
            cell = cell_of(u[axis, i], levels[i])
            cells[axis, i] = cell
            stay &= node_cells[axis, node] == cell
        if stay:
            row = obj_pos[handles[i]]
            for axis in range(dim):
                columns[axis, row] = centres[i, axis]
            if columns[dim, row] != radii[i]:  # the squared reach only changes with the radius
                columns[dim, row] = radii[i]
                columns[dim + 1, row] = reach_of(radii[i])
        else:
            movers[k] = i
            k += 1
    return movers[:k]


@kernel
def place(handles: np.ndarray, order: np.ndarray, starts: np.ndarray, homes: np.ndarray,
          centres: np.ndarray, radii: np.ndarray, reach: np.ndarray, node_start: np.ndarray,
          node_count: np.ndarray, pool_handles: np.ndarray, columns: np.ndarray,
          obj_node: np.ndarray, obj_pos: np.ndarray) -> None:
    """Append objects to their home nodes, whose blocks already have room.

    ``order`` sorts the objects by home; the objects of home ``g`` (node
    ``homes[g]``) are ``order[starts[g]:starts[g + 1]]``.  Writes each
    object's pool row (handle, centre, radius, squared reach), its node and
    row, and the nodes' counts.  O(n).
    """
    dim = centres.shape[1]
    for g in range(homes.shape[0]):
        node = homes[g]
        row = node_start[node] + node_count[node]
        for j in range(starts[g], starts[g + 1]):
            i = order[j]
            h = handles[i]
            pool_handles[row] = h
            for axis in range(dim):
                columns[axis, row] = centres[i, axis]
            columns[dim, row] = radii[i]
            columns[dim + 1, row] = reach[i]
            obj_node[h] = node
            obj_pos[h] = row
            row += 1
        node_count[node] = row - node_start[node]
