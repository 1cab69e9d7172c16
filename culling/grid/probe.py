"""The dense grid's sphere probes and pairs: the tree's algorithms over the grid's cells.

A probe of radius ``rho`` visits, on every level, the cells of the point's
window widened by ``rho`` at both ends (:func:`culling.grid.walk.visits` with
the probes' radii): at most ``(2 + ceil(2 * rho / W))**dim`` cells per level
of edge ``W`` (``scale <= 1``), clamped to the world.  Their runs are tested
by :func:`culling.core.overlap.probe_run`, as the tree's.

For the pairs, the non-empty cells' levels and coordinates
(:func:`occupied_runs`) let :func:`culling.core.pairs.overlapping_pairs` join
the cells by bands of levels as it joins the tree's nodes.  Where that does
not suit (members in a few clusters far apart), the levels' cells are a full
tree (cell ``k`` of level ``L`` has the cells ``2k + bits`` of level ``L + 1``
as children); :func:`occupied_tree` keeps the non-empty cells and their
ancestors, numbered compactly with a child table, and
:func:`culling.core.pairs.overlapping_pairs` joins that tree with itself
exactly as it joins the view-distance tree.  Both read the grid's sorted
index of non-empty cells: O(objects), never O(cells).
"""

from __future__ import annotations

import numpy as np

from culling.core.jit import kernel
from culling.core.overlap import owned, probe_run
from culling.core.structs import Pool, PoolFields, Query, QueryFields
from culling.grid.geometry import GridGeometry

__all__ = ["occupied_runs", "occupied_tree", "probe_visits"]


@kernel
def probe_visits(visit_run: np.ndarray, visit_point: np.ndarray, run_start: np.ndarray, run_count: np.ndarray,
                 points: np.ndarray, grows: np.ndarray, query_fields: QueryFields,
                 pool_fields: PoolFields) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The probes' answers from their visits (visit ``v``: probe ``visit_point[v]`` reads run
    ``visit_run[v]``, the probes in order; ``points`` (m, dim) and ``grows`` (m,) the probes).

    Returns ``(handles, counts, unsure_rows, unsure_probes)`` as
    :func:`culling.tree.probe.probe_chunk`.  O(visits + candidates).
    """
    q, pool = Query(*query_fields), Pool(*pool_fields)
    counts = np.zeros(points.shape[0], dtype=np.int64)
    out = np.empty(64, dtype=np.int64)
    unsure = np.empty(0, dtype=np.int64)
    owners = np.empty(0, dtype=np.int64)
    k = 0
    uk = 0
    for v in range(visit_run.shape[0]):
        i = visit_point[v]
        run = visit_run[v]
        before = k
        unsure_before = uk
        out, k, unsure, uk = probe_run(pool, run_start[run], run_start[run] + run_count[run], points[i], grows[i], q,
                                       out, k, unsure, uk)
        counts[i] += k - before
        owners = owned(owners, unsure_before, uk, i)
    return out[:k].copy(), counts, unsure[:uk].copy(), owners[:uk].copy()


def occupied_runs(geo: GridGeometry, occupied: np.ndarray, at: np.ndarray, start: np.ndarray,
                  count: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The non-empty cells as the runs :func:`culling.core.pairs.overlapping_pairs` joins:
    ``(start, count, level, coords)``, int64 ``(k,)`` three times and ``(dim, k)``.

    ``occupied``: the non-empty cells' global ids, ascending, level ``L``'s from ``at[L]``
    (:meth:`DenseViewDistanceGrid._occupied <culling.grid.grid.DenseViewDistanceGrid._occupied>`);
    ``start``/``count``: every cell's pool block.  O(k x dim), never O(cells).
    """
    levels = np.repeat(np.arange(at.shape[0] - 1, dtype=np.int64), np.diff(at))
    coords = np.ascontiguousarray(geo.coords(occupied, levels).T)
    return start[occupied].astype(np.int64), count[occupied].astype(np.int64), levels, coords


def occupied_tree(geo: GridGeometry, occupied: np.ndarray, at: np.ndarray, start: np.ndarray,
                  count: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The non-empty cells and all their ancestors as a tree: ``(child, node_start, node_count)``.

    Node 0 is the level-0 cell, the others follow in ascending global id;
    ``child`` int64 ``(nodes, 2**dim)``, -1 for a child whose subtree is
    empty (bit ``a`` of the quadrant: the high half of axis ``a``);
    ``node_start``/``node_count`` int64, the cells' member runs (0 members
    for an empty ancestor).  O(levels x k log k) for ``k`` non-empty cells,
    never O(cells).
    """
    dim = geo.dim
    levels = at.shape[0] - 1
    per_level = [occupied[at[level]:at[level + 1]] for level in range(levels)]
    parents = np.empty(0, dtype=np.int64)
    for level in range(levels - 1, 0, -1):  # every cell's ancestors, level by level upwards
        listed = np.union1d(per_level[level], parents) if parents.size else per_level[level]
        per_level[level] = listed
        parents = np.unique(geo.ids(np.right_shift(geo.coords(listed, np.full(listed.shape[0], level)), 1),
                                    level - 1))
    per_level[0] = np.zeros(1, dtype=np.int64)
    nodes = np.concatenate(per_level)
    node_level = np.repeat(np.arange(levels, dtype=np.int64), [part.shape[0] for part in per_level])
    child = np.full((nodes.shape[0], 1 << dim), -1, dtype=np.int64)
    coords = geo.coords(nodes[1:], node_level[1:])
    quadrant = np.zeros(nodes.shape[0] - 1, dtype=np.int64)
    for axis in range(dim):
        quadrant |= (coords[:, axis] & 1) << axis
    parent_ids = np.empty(nodes.shape[0] - 1, dtype=np.int64)
    for level in range(1, levels):
        mask = node_level[1:] == level
        parent_ids[mask] = geo.ids(np.right_shift(coords[mask], 1), level - 1)
    child[np.searchsorted(nodes, parent_ids), quadrant] = np.arange(1, nodes.shape[0])
    return child, start[nodes].astype(np.int64), count[nodes].astype(np.int64)
