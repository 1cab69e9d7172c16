"""Aggro: which creatures notice which hunters, every frame, in one batch.

Each creature has an aggro radius; it notices a hunter (or the player) standing
inside that sphere.  That is the view-distance tree's question with the
creatures' aggro spheres as the objects and the hunters as the query points,
so a frame asks it once for every hunter: ``tree.query_many(hunters,
exact=True)``.  The same answer by brute force (every hunter against every
creature, NumPy in blocks) is run now and then beside it, timed and checked,
so the HUD can show what the batch saves; ``method="brute force"`` uses it for
every frame instead.

>>> import numpy as np
>>> aggro = Aggro(np.array([[0.0, 0, 0], [10.0, 0, 0]]), np.array([5.0, 1.0]), 64.0, (-32.0,) * 3)
>>> creature, hunter = aggro.pairs(np.array([[3.0, 0, 0], [10.5, 0, 0], [20.0, 0, 0]]))
>>> sorted(zip(creature.tolist(), hunter.tolist()))
[(0, 0), (1, 1)]
>>> aggro.nearest(np.array([[3.0, 0, 0], [1.0, 0, 0]])).tolist()
[1, -1]
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass
from time import perf_counter

import numpy as np

from culling import ViewDistanceTree

__all__ = ["AGGRO_METHODS", "Aggro", "AggroStats", "brute_force_pairs"]

AGGRO_METHODS = ("tree", "brute force")
COMPARE_EVERY = 10
"""Frames between two runs of the other method (brute force beside the tree, or
the tree beside brute force): often enough for a steady HUD figure, rare
enough that the comparison costs a few percent of a frame."""
RECENT = 30
"""Timings kept per method: the HUD shows their median (warm figures, not one frame's)."""
BLOCK = 64
"""Hunters per block of the brute-force scan: a (BLOCK, creatures) float64 block."""


@dataclass
class AggroStats:
    """One frame's aggro batch, for the HUD.

    ``tree_ms`` and ``brute_ms`` are the medians of each method's last
    ``RECENT`` timings (the one in use runs every frame, the other every
    ``COMPARE_EVERY`` frames); None until measured.  ``mismatches`` counts frames where the two disagreed
    (always 0: both are exact).
    """

    method: str = "tree"
    hunters: int = 0
    creatures: int = 0
    pairs: int = 0
    chasing: int = 0
    tree_ms: float | None = None
    brute_ms: float | None = None
    compared: int = 0
    mismatches: int = 0

    def lines(self, who: str | None = None) -> list[str]:
        """The HUD lines: who asks, how many pairs, and the batch against brute force.

        ``who`` names the query points (default ``"<hunters> hunters"``).

        >>> AggroStats(hunters=3, creatures=90, pairs=5, chasing=4, tree_ms=1.0, brute_ms=30.0).lines()
        ['aggro: 3 hunters x 90 creatures, 5 pairs, 4 chasing', '  query_many 1.00 ms, brute force 30.00 ms (30.0x)']
        """
        who = who or f"{self.hunters:,} hunters"
        first = f"aggro: {who} x {self.creatures:,} creatures, {self.pairs:,} pairs, {self.chasing:,} chasing"
        times = []
        if self.tree_ms is not None:
            times.append(f"query_many {self.tree_ms:.2f} ms")
        if self.brute_ms is not None:
            times.append(f"brute force {self.brute_ms:.2f} ms"
                         + (f" ({self.brute_ms / self.tree_ms:.1f}x)" if self.tree_ms else ""))
        return [first] + (["  " + ", ".join(times)] if times else [])


def brute_force_pairs(points: np.ndarray, centres: np.ndarray, radii: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(creature, point) of every creature whose sphere holds a point, by testing all.

    Squared distance summed x, y, z in order, ``<= radius**2``.  O(points x
    creatures), vectorised in blocks of ``BLOCK`` points.
    """
    r2 = radii * radii
    creature, point = [], []
    for s in range(0, len(points), BLOCK):
        block = points[s:s + BLOCK]
        d2 = np.zeros((len(block), len(radii)))
        for axis in range(3):
            diff = centres[:, axis][None, :] - block[:, axis][:, None]
            d2 += diff * diff
        p, c = np.nonzero(d2 <= r2[None, :])
        creature.append(c.astype(np.int64))
        point.append(p.astype(np.int64) + s)
    if not creature:
        return np.empty(0, dtype=np.int64), np.empty(0, dtype=np.int64)
    return np.concatenate(creature), np.concatenate(point)


def _keys(creature: np.ndarray, point: np.ndarray, n: int) -> np.ndarray:
    return np.sort(point * n + creature)


class Aggro:
    """Creatures' aggro spheres in a :class:`~culling.ViewDistanceTree`.

    Parameters
    ----------
    centres : ndarray, shape (n, 3), float64
    radii : ndarray, shape (n,), float64 (aggro radii)
    world_size, world_origin
        The tree's root (it grows on demand).
    method : "tree" or "brute force"
        How :meth:`pairs` answers every frame.
    """

    def __init__(self, centres: np.ndarray, radii: np.ndarray, world_size: float,
                 world_origin: tuple[float, float, float], method: str = "tree") -> None:
        self.radii = np.asarray(radii, dtype=np.float64)
        self.centres = np.array(centres, dtype=np.float64)
        self.tree = ViewDistanceTree(size=world_size, origin=world_origin, dim=3)
        self.handles = self.tree.insert_many(self.centres, self.radii)
        self.creature_of = np.full(int(self.handles.max(initial=-1)) + 1, -1, dtype=np.int64)
        self.creature_of[self.handles] = np.arange(self.handles.shape[0])
        self.method = method
        self.stats = AggroStats(method=method, creatures=len(self.radii))
        self._frames = 0
        self._times: dict[str, deque[float]] = {name: deque(maxlen=RECENT) for name in AGGRO_METHODS}

    @property
    def method(self) -> str:
        return self._method

    @method.setter
    def method(self, value: str) -> None:
        if value not in AGGRO_METHODS:
            raise ValueError(f"aggro method must be one of {AGGRO_METHODS}, got {value!r}")
        self._method = value

    def move(self, centres: np.ndarray) -> None:
        """The creatures moved: one ``update_many``.  O(n), vectorised."""
        self.centres[:] = centres
        self.tree.update_many(self.handles, self.centres, self.radii)

    def _tree_pairs(self, points: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        handles, counts = self.tree.query_many(points, exact=True)
        return self.creature_of[handles], np.repeat(np.arange(len(points), dtype=np.int64), counts)

    def pairs(self, points: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(creature, point) for every creature whose aggro sphere holds a point.

        One batch over all points (``query_many`` or the brute-force scan),
        timed into :attr:`stats`; every ``COMPARE_EVERY`` calls the other
        method runs too, timed and checked against it.

        Parameters
        ----------
        points : ndarray, shape (m, 3), float64

        Returns
        -------
        creature, point : ndarray, shape (pairs,), int64
        """
        points = np.asarray(points, dtype=np.float64).reshape(-1, 3)
        runs = {"tree": lambda: self._tree_pairs(points),
                "brute force": lambda: brute_force_pairs(points, self.centres, self.radii)}
        order = [self._method]
        if self._frames % COMPARE_EVERY == 0:
            order.append("brute force" if self._method == "tree" else "tree")
        self._frames += 1
        answers = {}
        for name in order:
            t0 = perf_counter()
            answers[name] = runs[name]()
            self._times[name].append((perf_counter() - t0) * 1e3)
            median = float(np.median(self._times[name]))
            if name == "tree":
                self.stats.tree_ms = median
            else:
                self.stats.brute_ms = median
        creature, point = answers[self._method]
        if len(answers) == 2:
            n = len(self.radii)
            a, b = (_keys(*answers[k], n) for k in AGGRO_METHODS)
            self.stats.compared += 1
            self.stats.mismatches += int(not np.array_equal(a, b))
        self.stats.method = self._method
        self.stats.hunters = len(points)
        self.stats.pairs = len(creature)
        return creature, point

    def warm_up(self, points: np.ndarray) -> None:
        """Ask the tree once (compiling its batch query) without recording anything."""
        self.tree.query_many(np.asarray(points, dtype=np.float64).reshape(-1, 3), exact=True)

    def nearest(self, points: np.ndarray) -> np.ndarray:
        """For every creature, the nearest point inside its aggro sphere, or -1.

        Returns
        -------
        ndarray, shape (n,), int64: a point index per creature (ties: the lower index).

        Cost: one :meth:`pairs` batch plus O(pairs log pairs).
        """
        points = np.asarray(points, dtype=np.float64).reshape(-1, 3)
        creature, point = self.pairs(points)
        target = np.full(len(self.radii), -1, dtype=np.int64)
        if creature.size:
            d = self.centres[creature] - points[point]
            d2 = d[:, 0] * d[:, 0] + d[:, 1] * d[:, 1] + d[:, 2] * d[:, 2]
            order = np.lexsort((point, d2, creature))          # by creature, then distance, then point
            first = np.ones(order.size, dtype=bool)
            first[1:] = creature[order][1:] != creature[order][:-1]
            target[creature[order][first]] = point[order][first]
        self.stats.chasing = int((target >= 0).sum())
        return target
