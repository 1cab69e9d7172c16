"""The dense grid's sphere probes: the tree's algorithm over the grid's cells.

A probe of radius ``rho`` visits, on every level, the cells of the point's
window widened by ``rho`` at both ends (:func:`culling.grid.walk.visits` with
the probes' radii): at most ``(2 + ceil(2 * rho / W))**dim`` cells per level
of edge ``W`` (``scale <= 1``), clamped to the world.  Their runs are tested
by :func:`culling.core.overlap.probe_run`, as the tree's.

The grid's pairs are the broad phase's (:mod:`culling.pairs.cell_tree`).
"""

from __future__ import annotations

import numpy as np

from culling.core.overlap import owned, probe_run
from culling.core.structs import Pool, PoolFields, Query, QueryFields
from culling.runtime.jit import kernel

__all__ = ["probe_visits"]


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
