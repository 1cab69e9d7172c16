"""One region's worker: a view-distance tree of the entities homed in the region and its ghosts.

A :class:`Shard` is a plain class; :mod:`server.sharded` runs each one as a
Ray actor.  It knows entities by the coordinator's (global) handles and
keeps its own tree, whose handles are local: two arrays map one to the
other.  It holds no viewer state: each tick it answers the sets of the
viewers routed to it, in global handles, and the coordinator diffs them
(:class:`culling.InterestSets`), so a viewer crossing a border, or a shard
rebuilt after a fault, loses nothing.
"""

from __future__ import annotations

import time

import numpy as np
from numpy.typing import NDArray

from culling import ViewDistanceTree

__all__ = ["Shard"]

Rows = tuple[NDArray[np.int64], NDArray[np.int64]]


class Shard:
    """The entities one region holds (homed there, or ghosts whose sphere reaches in), in a tree of its own."""

    def __init__(self, size: float, origin: tuple[float, ...], dim: int) -> None:
        self._config = (size, origin, dim)
        self.load(np.empty(0, dtype=np.int64), np.empty((0, dim)), np.empty(0))

    def load(self, handles: NDArray[np.int64], centres: NDArray[np.float64], radii: NDArray[np.float64]) -> int:
        """Start again with exactly these entities (the coordinator's authoritative copy); returns how many."""
        size, origin, dim = self._config
        self.tree = ViewDistanceTree(size, origin, dim)
        self.global_of = np.empty(0, dtype=np.int64)       # local handle -> global handle
        self.local_of = np.full(0, -1, dtype=np.int64)      # global handle -> local handle (-1: not here)
        self._add(handles, centres, radii)
        return len(self.tree)

    def _add(self, handles: NDArray[np.int64], centres: NDArray[np.float64], radii: NDArray[np.float64]) -> None:
        if not handles.size:
            return
        local = self.tree.insert_many(centres, radii)
        top = int(local.max()) + 1
        if top > self.global_of.size:
            grown = np.full(max(top, 2 * self.global_of.size), -1, dtype=np.int64)
            grown[: self.global_of.size] = self.global_of
            self.global_of = grown
        self.global_of[local] = handles
        top = int(handles.max()) + 1
        if top > self.local_of.size:
            grown = np.full(max(top, 2 * self.local_of.size), -1, dtype=np.int64)
            grown[: self.local_of.size] = self.local_of
            self.local_of = grown
        self.local_of[handles] = local

    def apply(self, add: tuple[NDArray[np.int64], NDArray[np.float64], NDArray[np.float64]],
              move: tuple[NDArray[np.int64], NDArray[np.float64]] | tuple[NDArray[np.int64], NDArray[np.float64],
                                                                          NDArray[np.float64]],
              drop: NDArray[np.int64]) -> int:
        """One batch of changes: entities that came into the region, moved within it (``(handles, centres)``,
        or with their new radii ``(handles, centres, radii)``), left it (disjoint)."""
        if drop.size:
            local = self.local_of[drop]
            self.tree.remove_many(local)
            self.local_of[drop] = -1
            self.global_of[local] = -1
        if move[0].size:
            self.tree.update_many(self.local_of[move[0]], *move[1:])
        self._add(*add)
        return len(self.tree)

    def sets(self, points: NDArray[np.float64], reach: NDArray[np.float64] | None,
             scales: tuple[float, ...]) -> tuple[list[Rows], float]:
        """Each point's entities at each scale, in global handles: ``([(handles, counts), ...], seconds)``.

        The tree's exact decider: ``query_many(points, exact=True, scale=s)``, or with per-viewer
        reach ``overlapping_many(points, reach, exact=True, scale=s)``, as ``InterestManager`` asks.
        """
        t0 = time.perf_counter()
        out = []
        for s in scales:
            if reach is None:
                local, counts = self.tree.query_many(points, exact=True, scale=s)
            else:
                local, counts = self.tree.overlapping_many(points, reach, exact=True, scale=s)
            out.append((self.global_of[local], counts))
        return out, time.perf_counter() - t0

    def held(self) -> NDArray[np.int64]:
        """The global handles this shard holds, ascending."""
        return np.sort(self.global_of[self.tree.handles()])

    def ping(self) -> int:
        return len(self.tree)
