"""The tree's sphere probes: which stored spheres may meet a probe sphere, or exactly which do.

A probe of radius ``rho`` walks the tree as a point query does
(:func:`culling.tree.walk.walk`), with every level's window widened by
``rho`` at both ends: a node is visited when the point's rule holds for its
box grown by ``rho`` too, at most ``(2 + ceil(2 * rho / W))**dim`` nodes per
level of edge ``W`` (``scale <= 1``).  The visited nodes' runs are tested by
:func:`culling.core.overlap.probe_run`.  One kernel answers a chunk of
probes; :meth:`ViewDistanceTree.overlapping_many` runs the chunks on the
library's threads.
"""

from __future__ import annotations

import numpy as np

from culling.core.overlap import owned, probe_run
from culling.core.structs import NodesFields, Pool, PoolFields, Query, QueryFields, World, WorldFields, nodes_of
from culling.runtime.jit import kernel
from culling.tree.walk import walk

__all__ = ["probe_chunk"]


@kernel
def probe_chunk(points: np.ndarray, grows: np.ndarray, lo: int, hi: int, query_fields: QueryFields,
                world_fields: WorldFields, nodes_fields: NodesFields,
                pool_fields: PoolFields) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Probes ``lo .. hi - 1`` (centres ``points``, radii ``grows``): walk, then test each visited run.

    Returns ``(handles, counts, unsure_rows, unsure_probes)``: probe ``lo + i``'s
    sure answer is the ``counts[i]`` handles after those of the probes before
    it; the pool rows the float filter left unsure, and the probe each was
    tested for, are settled exactly by the caller.  The structs as plain
    tuples.  O(probes x levels + candidates).
    """
    q, world, nodes, pool = Query(*query_fields), World(*world_fields), nodes_of(nodes_fields), Pool(*pool_fields)
    start, count = nodes.start, nodes.members
    counts = np.zeros(hi - lo, dtype=np.int64)
    out = np.empty(64, dtype=np.int64)
    unsure = np.empty(0, dtype=np.int64)
    owners = np.empty(0, dtype=np.int64)
    k = 0
    uk = 0
    for i in range(lo, hi):
        p = points[i]
        rho = grows[i]
        visited, _ = walk(p, q.scale, world, nodes, rho)
        before = k
        unsure_before = uk
        for node in visited:
            if count[node] > 0:
                out, k, unsure, uk = probe_run(pool, start[node], start[node] + count[node], p, rho, q, out, k,
                                               unsure, uk)
        counts[i - lo] = k - before
        owners = owned(owners, unsure_before, uk, i)
    return out[:k].copy(), counts, unsure[:uk].copy(), owners[:uk].copy()
