"""The birds' bodies in one tree, asked two batches a frame: who senses whom, and who is too close.

Every bird is stored in a :class:`~culling.ViewDistanceTree` as its
*personal-space* sphere: its bounding sphere grown by :data:`SPACE`.  A frame
asks that tree twice:

- **sensing**, one ``overlapping_many`` for the player and every hunter
  together, each probe with its own radius: a hunter senses the birds whose
  body (the stored radius times ``1 / SPACE``, the call's ``scale``) meets
  its sensing sphere, ``|c - p| <= body + rho``;
- **separation**, one ``overlapping_pairs``: every two birds whose
  personal-space spheres meet, ``|c_i - c_j| <= space_i + space_j``, each pair
  once.

Each batch has a peer that gives the same answer without the tree: brute force
for the sensing (every probe against every bird, NumPy in blocks) and a
uniform hash grid for the separation (all pairs by brute force would cost
seconds at 30,000 birds; the grid is the best NumPy does).  A peer runs every
:data:`COMPARE_EVERY` frames beside the tree, timed and checked, so the HUD can
show what the tree saves without paying for the peer every frame;
``method="brute force"`` answers with the peers every frame instead (the
tree then runs beside them now and then).

>>> import numpy as np
>>> birds = Aggro(np.array([[0.0, 0, 0], [3.0, 0, 0], [30.0, 0, 0]]), np.array([1.0, 1.0, 1.0]), 64.0, (-32.0,) * 3)
>>> creature, probe = birds.sensed(np.array([[0.0, 5.0, 0], [40.0, 0, 0]]), np.array([4.0, 9.5]))
>>> sorted(zip(creature.tolist(), probe.tolist()))
[(0, 0), (2, 1)]
>>> [pair.tolist() for pair in birds.pairs()]     # 3 m apart, personal spaces of 2 m each
[[0], [1]]
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from time import perf_counter

import numpy as np

from culling import BruteForceIndex, ViewDistanceTree

__all__ = ["AGGRO_METHODS", "COMPARE_EVERY", "RECENT", "SPACE", "Aggro", "BatchStats", "brute_force_pairs",
           "brute_force_sensed", "grid_pairs"]

AGGRO_METHODS = ("tree", "brute force")
SPACE = 2.0
"""A bird's personal space: its bounding radius times this (a power of two, so
``stored * (1 / SPACE)`` is the body radius exactly)."""
COMPARE_EVERY = 10
"""Frames between two runs of the other method (the peers beside the tree, or
the tree beside the peers): often enough for a steady HUD figure, rare enough
that the comparison costs a few percent of a frame."""
RECENT = 30
"""Timings kept per method: the HUD shows their median (warm figures, not one frame's)."""
BLOCK = 64
"""Probes per block of the brute-force scan: a (BLOCK, birds) float64 block."""

Pairs = tuple[np.ndarray, np.ndarray]


@dataclass
class BatchStats:
    """One batch's recent timings, for the HUD.

    ``tree_ms`` and ``peer_ms`` are the medians of each side's last
    :data:`RECENT` timings (the one in use runs every frame, the other every
    :data:`COMPARE_EVERY` frames); None until measured.  ``mismatches`` counts
    compared frames where the two disagreed (0: both are exact).
    """

    call: str
    peer: str
    method: str = "tree"
    answers: int = 0
    tree_ms: float | None = None
    peer_ms: float | None = None
    compared: int = 0
    mismatches: int = 0
    _times: dict[str, deque[float]] = field(default_factory=lambda: {m: deque(maxlen=RECENT) for m in AGGRO_METHODS},
                                            repr=False)

    def brief(self) -> str:
        """The compact HUD's figure: ``'1.20 ms (25.0x brute force)'``; the tree's time alone until the
        peer is timed, empty until either is.

        >>> BatchStats("overlapping_pairs", "NumPy grid", tree_ms=2.0, peer_ms=30.0).brief()
        '2.00 ms (15.0x NumPy grid)'
        """
        if self.tree_ms is None:
            return ""
        if self.peer_ms is None or not self.tree_ms:
            return f"{self.tree_ms:.2f} ms"
        return f"{self.tree_ms:.2f} ms ({self.peer_ms / self.tree_ms:.1f}x {self.peer})"

    def line(self) -> str:
        """``'  overlapping_many 1.20 ms, brute force 30.00 ms (25.0x)'``; empty until timed.

        >>> BatchStats("overlapping_pairs", "NumPy grid", tree_ms=2.0, peer_ms=30.0).line()
        '  overlapping_pairs 2.00 ms, NumPy grid 30.00 ms (15.0x)'
        """
        times = []
        if self.tree_ms is not None:
            times.append(f"{self.call} {self.tree_ms:.2f} ms")
        if self.peer_ms is not None:
            times.append(f"{self.peer} {self.peer_ms:.2f} ms"
                         + (f" ({self.peer_ms / self.tree_ms:.1f}x)" if self.tree_ms else ""))
        return "  " + ", ".join(times) if times else ""

    def run(self, frame: int, tree: Callable[[], Pairs], peer: Callable[[], Pairs], n: int) -> Pairs:
        """Answer with :attr:`method` (``tree`` or its peer), timed; every
        :data:`COMPARE_EVERY` frames run the other one too and compare.

        Both answers are index pairs ``(a, b)`` over ``n`` items, in any order;
        the result is sorted by ``(b, a)`` so the simulation never depends on
        which side answered or on the library's thread scheduling.
        """
        order = [self.method]
        if frame % COMPARE_EVERY == 0:
            order.append(AGGRO_METHODS[1] if self.method == AGGRO_METHODS[0] else AGGRO_METHODS[0])
        answers = {}
        for name in order:
            t0 = perf_counter()
            a, b = tree() if name == "tree" else peer()
            self._times[name].append((perf_counter() - t0) * 1e3)
            median = float(np.median(self._times[name]))
            if name == "tree":
                self.tree_ms = median
            else:
                self.peer_ms = median
            answers[name] = np.sort(b * max(n, 1) + a)
        keys = answers[self.method]
        if len(answers) == 2:
            self.compared += 1
            used, other = answers.values()
            self.mismatches += int(not np.array_equal(used, other))
        self.answers = int(keys.shape[0])
        return keys % max(n, 1), keys // max(n, 1)


def brute_force_sensed(points: np.ndarray, radii: np.ndarray, centres: np.ndarray,
                       bodies: np.ndarray) -> Pairs:
    """(bird, probe) of every bird whose body meets a probe sphere, by testing all: the sensing's peer.

    Squared distance summed x, y, z in order, ``<= (body + radius)**2``: the
    float scan a user would write, timed against the tree on the HUD (the
    exact reference is :class:`culling.BruteForceIndex`; the two differ only
    within rounding of a surface).
    O(probes x birds), vectorised in blocks of :data:`BLOCK` probes.
    """
    bird, probe = [], []
    for s in range(0, len(points), BLOCK):
        block = points[s:s + BLOCK]
        d2 = np.zeros((len(block), len(bodies)))
        for axis in range(3):
            diff = centres[:, axis][None, :] - block[:, axis][:, None]
            d2 += diff * diff
        reach = bodies[None, :] + radii[s:s + BLOCK, None]
        p, c = np.nonzero(d2 <= reach * reach)
        bird.append(c.astype(np.int64))
        probe.append(p.astype(np.int64) + s)
    if not bird:
        return np.empty(0, dtype=np.int64), np.empty(0, dtype=np.int64)
    return np.concatenate(bird), np.concatenate(probe)


def _close(i: np.ndarray, j: np.ndarray, centres: np.ndarray, radii: np.ndarray) -> Pairs:
    """The pairs ``(min, max)`` of ``(i, j)`` whose spheres meet: ``|c_i - c_j|**2 <= (r_i + r_j)**2``."""
    d2 = np.zeros(i.shape[0])
    for axis in range(3):
        diff = centres[i, axis] - centres[j, axis]
        d2 += diff * diff
    reach = radii[i] + radii[j]
    keep = d2 <= reach * reach
    i, j = i[keep], j[keep]
    return np.minimum(i, j), np.maximum(i, j)


def brute_force_pairs(centres: np.ndarray, radii: np.ndarray) -> Pairs:
    """Every pair ``i < j`` of spheres that meet, decided exactly: the library's reference index
    (:class:`culling.BruteForceIndex`, every pair tested).  For tests, O(n^2); not a peer (the
    HUD's peers, :func:`brute_force_sensed` and :func:`grid_pairs`, are plain float NumPy, as a
    user would write them)."""
    return BruteForceIndex(centres, radii).overlapping_pairs()


#: The 13 neighbour offsets of a 3 x 3 x 3 block with the first non-zero component positive, and (0, 0, 0).
_HALF = [(dx, dy, dz) for dx in (-1, 0, 1) for dy in (-1, 0, 1) for dz in (-1, 0, 1)
         if (dx, dy, dz) > (0, 0, 0)] + [(0, 0, 0)]


def grid_pairs(centres: np.ndarray, radii: np.ndarray) -> Pairs:
    """Every pair ``i < j`` of spheres that meet, through a uniform hash grid (NumPy).

    Cells of edge ``2 * max(radii)``, so two spheres that meet lie in the same
    or neighbouring cells; the points sorted by cell, then for the cell itself
    and each of 13 neighbour offsets every member pair of the two cells is
    tested exactly.  O(n log n + pairs tested).

    >>> grid_pairs(np.array([[0.0, 0, 0], [1.9, 0, 0], [5.0, 0, 0]]), np.ones(3))
    (array([0]), array([1]))
    """
    n = radii.shape[0]
    if n < 2:
        return np.empty(0, dtype=np.int64), np.empty(0, dtype=np.int64)
    edge = 2.0 * float(radii.max()) or 1.0
    cell = np.floor((centres - centres.min(axis=0)) / edge).astype(np.int64) + 1   # a free layer below
    span = cell.max(axis=0) + 2                                                     # ... and above
    key = (cell[:, 0] * span[1] + cell[:, 1]) * span[2] + cell[:, 2]
    order = np.argsort(key, kind="stable")
    cells, starts, counts = np.unique(key[order], return_index=True, return_counts=True)
    firsts, seconds = [], []
    for dx, dy, dz in _HALF:
        target = cells + (dx * span[1] + dy) * span[2] + dz
        at = np.minimum(np.searchsorted(cells, target), cells.shape[0] - 1)
        a = np.flatnonzero(cells[at] == target)
        b = at[a]
        ca, cb = counts[a], counts[b]
        total = ca * cb
        rep = np.repeat(np.arange(a.shape[0]), total)
        within = np.arange(int(total.sum())) - np.repeat(np.cumsum(total) - total, total)
        ia = starts[a][rep] + within // cb[rep]
        ib = starts[b][rep] + within % cb[rep]
        if (dx, dy, dz) == (0, 0, 0):
            keep = ia < ib
            ia, ib = ia[keep], ib[keep]
        i, j = _close(order[ia], order[ib], centres, radii)
        firsts.append(i)
        seconds.append(j)
    return np.concatenate(firsts), np.concatenate(seconds)


class Aggro:
    """Birds' personal-space spheres in a :class:`~culling.ViewDistanceTree`.

    Parameters
    ----------
    centres : ndarray, shape (n, 3), float64
    bodies : ndarray, shape (n,), float64: the birds' bounding radii
        (stored times :data:`SPACE`)
    world_size, world_origin
        The tree's root (it grows on demand).
    method : "tree" or "brute force"
        How :meth:`sensed` and :meth:`pairs` answer every frame.
    """

    def __init__(self, centres: np.ndarray, bodies: np.ndarray, world_size: float,
                 world_origin: tuple[float, float, float], method: str = "tree") -> None:
        self.bodies = np.asarray(bodies, dtype=np.float64)
        self.space = self.bodies * SPACE
        self.centres = np.array(centres, dtype=np.float64)
        self.tree = ViewDistanceTree(size=world_size, origin=world_origin, dim=3)
        self.handles = self.tree.insert_many(self.centres, self.space)
        self.creature_of = np.full(int(self.handles.max(initial=-1)) + 1, -1, dtype=np.int64)
        self.creature_of[self.handles] = np.arange(self.handles.shape[0])
        self.sensing = BatchStats("overlapping_many", "brute force")
        self.separation = BatchStats("overlapping_pairs", "NumPy grid")
        self.method = method
        self._frames = {"sensed": 0, "pairs": 0}

    @property
    def method(self) -> str:
        return self._method

    @method.setter
    def method(self, value: str) -> None:
        if value not in AGGRO_METHODS:
            raise ValueError(f"aggro method must be one of {AGGRO_METHODS}, got {value!r}")
        self._method = self.sensing.method = self.separation.method = value

    def move(self, centres: np.ndarray) -> None:
        """The birds moved: one ``update_many`` (radii kept).  O(n), vectorised."""
        self.centres[:] = centres
        self.tree.update_many(self.handles, self.centres, self.space)

    def _tree_sensed(self, points: np.ndarray, radii: np.ndarray) -> Pairs:
        handles, counts = self.tree.overlapping_many(points, radii, exact=True, scale=1.0 / SPACE)
        return self.creature_of[handles], np.repeat(np.arange(len(points), dtype=np.int64), counts)

    def _tree_pairs(self) -> Pairs:
        first, second = self.tree.overlapping_pairs()
        a, b = self.creature_of[first], self.creature_of[second]
        return np.minimum(a, b), np.maximum(a, b)

    def sensed(self, points: np.ndarray, radii: np.ndarray) -> Pairs:
        """(bird, probe) for every bird whose body meets a probe sphere
        ``(points[k], radii[k])``: one ``overlapping_many`` (or the brute-force scan).

        Parameters
        ----------
        points : ndarray, shape (m, 3), float64
        radii : ndarray, shape (m,), float64, each probe's sensing radius

        Returns
        -------
        bird, probe : ndarray, shape (pairs,), int64, sorted by probe, then bird
        """
        points = np.ascontiguousarray(points, dtype=np.float64).reshape(-1, 3)
        radii = np.broadcast_to(np.asarray(radii, dtype=np.float64), (points.shape[0],))
        frame = self._frames["sensed"]
        self._frames["sensed"] += 1
        return self.sensing.run(frame, lambda: self._tree_sensed(points, radii),
                                lambda: brute_force_sensed(points, radii, self.centres, self.bodies),
                                len(self.bodies))

    def pairs(self) -> Pairs:
        """Every pair ``i < j`` of birds whose personal spaces meet: one ``overlapping_pairs``
        (or the hash grid), sorted by ``(j, i)``."""
        frame = self._frames["pairs"]
        self._frames["pairs"] += 1
        i, j = self.separation.run(frame, self._tree_pairs, lambda: grid_pairs(self.centres, self.space),
                                   len(self.bodies))
        return i, j

    def warm_up(self, points: np.ndarray, radii: np.ndarray) -> None:
        """Ask the tree both batches once (compiling them) without recording anything."""
        self.tree.overlapping_many(np.asarray(points, dtype=np.float64).reshape(-1, 3), radii, exact=True,
                                   scale=1.0 / SPACE)
        self.tree.overlapping_pairs()

    def nearest(self, points: np.ndarray, radii: np.ndarray) -> np.ndarray:
        """For every bird, the nearest probe that senses it, or -1.

        Returns
        -------
        ndarray, shape (n,), int64: a probe index per bird (ties: the lower index).

        Cost: one :meth:`sensed` batch plus O(pairs log pairs).
        """
        points = np.asarray(points, dtype=np.float64).reshape(-1, 3)
        bird, probe = self.sensed(points, radii)
        target = np.full(len(self.bodies), -1, dtype=np.int64)
        if bird.size:
            d = self.centres[bird] - points[probe]
            d2 = d[:, 0] * d[:, 0] + d[:, 1] * d[:, 1] + d[:, 2] * d[:, 2]
            order = np.lexsort((probe, d2, bird))          # by bird, then distance, then probe
            first = np.ones(order.size, dtype=bool)
            first[1:] = bird[order][1:] != bird[order][:-1]
            target[bird[order][first]] = probe[order][first]
        return target
