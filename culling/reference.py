"""The reference index: every object tested exactly, on every query, with no structure at all.

:class:`BruteForceIndex` answers every :class:`~culling.PointIndex` call by
testing all ``n`` objects, O(n) per query (O(n^2) for the pairs).  It is the
one reference truth the project compares against: the tests' model, the
benchmarks' agreement checks, the scenes' test references and the demo's
``--brute-force`` baseline.  It decides exactly as ``query(exact=True)`` of
the tree and the grid does, on the same decider
(:mod:`culling.core.containment`): point queries through
:func:`~culling.core.containment.contains_exact`, probes and pairs through a
deliberately wide float filter whose doubtful objects go to
:func:`~culling.core.containment.decide_grown`'s rational arithmetic.  Its
answers are therefore the ones ``fractions.Fraction`` gives for the float64
inputs, not the ones a plain float scan gives (which differ within rounding
of a surface).

It reads ``centres`` and ``radii`` where they are when they are float64
already (no copy): a caller that moves its objects in place, as the demo's
scenes do, moves them here too, and must keep them finite (and the radii not
negative) itself: they are checked once, when the index is made.

>>> import numpy as np
>>> index = BruteForceIndex(np.array([[0.0, 0.0], [3.0, 4.0]]), np.array([5.0, 1.0]))
>>> index.query((3.0, 4.0), exact=True).tolist()      # on the first one's surface, at the second one's centre
[0, 1]
>>> index.overlapping((3.0, 12.0), 7.0, exact=True).tolist()   # 8 from the second centre: 1 + 7
[1]
>>> [a.tolist() for a in index.overlapping_pairs()]
[[0], [1]]
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike

from culling.answer import QueryDetails
from culling.core.containment import contains_exact, decide_grown, distances
from culling.core.validation import (
    as_dim,
    as_flag,
    as_handles,
    as_integer,
    as_point,
    as_points,
    as_probe_radii,
    as_radii,
    as_radius,
    as_scale,
    check_unique,
)
from culling.interface import Real
from culling.trace import QueryTrace

__all__ = ["BruteForceIndex"]

#: Relative band of the probes' float filter: a squared distance (or a cube's distance) this close to its
#: limit goes to rational arithmetic.  The float error of either is a few ``2**-53``; ``2**-40`` is wide on
#: purpose, so the filter is obviously safe (a reference should be, more than fast): about one object in
#: ``10**12`` of a random world is decided in ``Fraction``.
BAND = 2.0 ** -40
#: Limits and distances outside ``[TINY, HUGE]`` may have lost bits to under- or overflow: decided exactly
#: unless a tiny limit is far below the distance.
TINY = 2.0 ** -800
HUGE = 2.0 ** 900

_EMPTY = np.empty(0, dtype=np.int64)


class BruteForceIndex:
    """Exact answers by testing every object: the reference of :class:`~culling.PointIndex`.

    Parameters
    ----------
    centres : array_like, shape (n, dim), float64, dim 1, 2 or 3
        Read in place when float64 (see the module's note); ``(n,)`` for dim 1 needs ``dim=1``.
    radii : array_like, shape (n,), float64
        View distances (radii; half the edge for cubes), finite and not negative.
    shape : {"sphere", "cube"}
        Euclidean distance or the largest per-axis distance.
    handles : array_like, shape (n,), int64, optional
        Object ``i``'s handle, distinct and not negative; ``0 .. n-1`` when omitted.
    dim : int, optional
        The dimension when ``centres`` cannot say it (an empty or flat dim-1 array).

    Every query costs O(n) (compiled or vectorised NumPy, plus a few microseconds
    per object within rounding of its surface), ``overlapping_pairs`` O(n^2).
    Its trace has no levels: there is no tree to draw.  ``ValueError`` or
    ``TypeError`` on bad input, as the tree's.
    """

    def __init__(self, centres: ArrayLike, radii: ArrayLike, shape: str = "sphere",
                 handles: ArrayLike | None = None, dim: int | None = None) -> None:
        if shape not in ("sphere", "cube"):
            raise ValueError(f"shape must be 'sphere' or 'cube', got {shape!r}")
        if dim is None:
            array = np.asarray(centres)
            if array.ndim != 2:
                raise ValueError(f"centres must have shape (n, dim), got {array.shape}; pass dim= for a flat array")
            dim = int(array.shape[1])
        dim = as_dim(dim)
        self._centres = as_points(centres, dim)   # float64 (n, dim) arrays are kept as they are
        n = self._centres.shape[0]
        as_radii(radii, n)                          # the checks (as_radii copies)
        self._radii = np.asarray(radii, dtype=np.float64).reshape(n)
        if handles is None:
            self._handles = np.arange(n, dtype=np.int64)
        else:
            self._handles = as_handles(handles)
            if self._handles.shape != (n,):
                raise ValueError(f"handles must have shape ({n},), got {self._handles.shape}")
            if n and int(self._handles.min()) < 0:
                raise ValueError("handles must not be negative")
            check_unique(self._handles)
        self._handles.flags.writeable = False
        self.shape = shape
        self.dim = dim

    def __len__(self) -> int:
        return int(self._handles.shape[0])

    @property
    def handles(self) -> np.ndarray:
        """Object ``i``'s handle, int64 (n,), read-only."""
        return self._handles

    # -- point queries ---------------------------------------------------------------------------------

    def _inside(self, p: np.ndarray, scale: float) -> np.ndarray:
        """Rows whose sphere (cube) times ``scale`` contains ``p``, int64: the library's exact test."""
        if not len(self):
            return _EMPTY
        axes = [self._centres[:, axis] for axis in range(self.dim)]
        return np.flatnonzero(contains_exact(axes, p.tolist(), self._radii, self.shape, scale))

    def query(self, point: ArrayLike, exact: bool = False, scale: Real = 1.0) -> np.ndarray:
        """Every handle (the candidates of a scan), or with ``exact`` those whose shape holds ``point``:
        ``|p - c| <= radius * scale``.  Handles int64 (k,), the caller's own; O(n)."""
        return self.query_spheres(point, exact, scale)[0]

    def query_many(self, points: ArrayLike, exact: bool = False,
                   scale: Real = 1.0) -> tuple[np.ndarray, np.ndarray]:
        """:meth:`query` of each point (m, dim): ``(handles, counts)`` as the tree's; O(m n)."""
        exact, scale = as_flag(exact), as_scale(scale)
        rows = as_points(points, self.dim, "points")
        answers = [self._handles[self._inside(p, scale)] if exact else self._handles for p in rows]
        counts = np.array([a.shape[0] for a in answers], dtype=np.int64)
        return (np.concatenate(answers) if answers else _EMPTY.copy()), counts

    def query_spheres(self, point: ArrayLike, exact: bool = False,
                      scale: Real = 1.0) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(handles (k,), centres (k, dim), radii (k,))`` of :meth:`query`'s answer, copies; O(n)."""
        exact, scale = as_flag(exact), as_scale(scale)
        p = as_point(point, self.dim)
        if not exact:
            return self._handles.copy(), self._centres.copy(), self._radii.copy()
        rows = self._inside(p, scale)
        return self._handles[rows], self._centres[rows], self._radii[rows]

    def query_detailed(self, point: ArrayLike, scale: Real = 1.0, trace: bool = False) -> QueryDetails:
        """The exact answer with centres, radii and distances (:class:`culling.QueryDetails`); every object
        is a candidate, and the trace (``trace=True``) has no levels.  O(n)."""
        trace = as_flag(trace, "trace")
        handles, centres, radii = self.query_spheres(point, exact=True, scale=scale)
        p = as_point(point, self.dim)
        found = QueryTrace(point=p, candidates=self._handles.copy(), levels=[]) if trace else None
        return QueryDetails(handles, centres, radii, distances(centres.T, p, self.shape), len(self),
                            found)

    def visible_from(self, handle: object, point: ArrayLike, scale: Real = 1.0) -> bool:
        """Whether ``query(point, exact=True, scale=scale)`` holds ``handle``, by the same exact test, as the
        tree's and the grid's ``visible_from``: ``KeyError`` for a handle this index does not hold,
        ``TypeError`` for a non-integer.  O(n): finding the handle's row is a scan, as everything here."""
        h = as_integer(handle, "handle")
        rows = np.flatnonzero(self._handles == h)
        if not rows.size:
            raise KeyError(f"handle {h} is not in this index")
        p = as_point(point, self.dim)
        scale = as_scale(scale)
        row = int(rows[0])
        axes = [self._centres[row:row + 1, axis] for axis in range(self.dim)]
        return bool(contains_exact(axes, p.tolist(), self._radii[row:row + 1], self.shape, scale)[0])

    def trace(self, point: ArrayLike, scale: Real = 1.0) -> QueryTrace:
        """Every handle as a candidate, no levels (a scan visits no nodes)."""
        as_scale(scale)
        return QueryTrace(point=as_point(point, self.dim), candidates=self._handles.copy(), levels=[])

    # -- probes and pairs ------------------------------------------------------------------------------

    def _meeting(self, rows: np.ndarray, p: np.ndarray, rho: float, scale: float) -> np.ndarray:
        """Which of ``rows`` meet the probe ``(p, rho)``: ``|c - p| <= radius * scale + rho``, exactly; bool.

        Floats decide where they are sure by :data:`BAND`; the rest (ties, tiny or huge magnitudes)
        go to the library's rational decider.
        """
        centres = self._centres[rows]
        with np.errstate(over="ignore", under="ignore"):
            limit = self._radii[rows] * scale + rho
            offsets = np.abs(centres - p)
            if self.shape == "cube":
                d = offsets.max(axis=1, initial=0.0)
                bound = limit
            else:
                d = np.zeros(rows.shape[0])
                for axis in range(self.dim):        # in order, as every distance of the library
                    d += offsets[:, axis] * offsets[:, axis]
                bound = limit * limit
            usable = (bound >= TINY) & (bound <= HUGE) & (d <= HUGE)
            inside: np.ndarray = usable & (d < bound * (1.0 - BAND))
            outside = (usable & (d > bound * (1.0 + BAND))) | ((bound < TINY) & (d > 2.0 ** -700) & (d <= HUGE))
        unsure = np.flatnonzero(~(inside | outside))
        if unsure.size:
            columns = np.zeros((self.dim + 2, unsure.shape[0]))
            columns[:self.dim] = centres[unsure].T
            columns[self.dim] = self._radii[rows[unsure]]
            points = np.broadcast_to(p, (unsure.shape[0], self.dim))
            inside[unsure] = decide_grown(columns, np.arange(unsure.shape[0]), points,
                                          np.full(unsure.shape[0], rho), self.shape, scale)
        return inside

    def overlapping(self, centre: ArrayLike, radius: Real, exact: bool = False, scale: Real = 1.0) -> np.ndarray:
        """Every handle, or with ``exact`` those whose shape (radius times ``scale``) meets the probe
        ``(centre, radius)``: ``|c - centre| <= radius_i * scale + radius``.  Int64 (k,); O(n)."""
        exact, scale = as_flag(exact), as_scale(scale)
        p, rho = as_point(centre, self.dim, "centre"), as_radius(radius)
        if not exact:
            return self._handles.copy()
        rows = np.arange(len(self))
        found: np.ndarray = self._handles[rows[self._meeting(rows, p, rho, scale)]]
        return found

    def overlapping_many(self, centres: ArrayLike, radii: ArrayLike, exact: bool = False,
                         scale: Real = 1.0) -> tuple[np.ndarray, np.ndarray]:
        """:meth:`overlapping` per probe (``radii`` (m,) or one number): ``(handles, counts)``; O(m n)."""
        exact, scale = as_flag(exact), as_scale(scale)
        points = as_points(centres, self.dim)
        rhos = as_probe_radii(radii, points.shape[0])
        rows = np.arange(len(self))
        answers = [self._handles[rows[self._meeting(rows, p, float(rho), scale)]] if exact else self._handles
                   for p, rho in zip(points, rhos.tolist())]
        counts = np.array([a.shape[0] for a in answers], dtype=np.int64)
        return (np.concatenate(answers) if answers else _EMPTY.copy()), counts

    def overlapping_pairs(self) -> tuple[np.ndarray, np.ndarray]:
        """``(first, second)``, int64: every two objects that meet, ``|c_i - c_j| <= r_i + r_j``, once,
        ``first < second``, sorted by ``(first, second)``.  O(n^2): one vectorised test per object."""
        first, second = [], []
        for i in range(len(self) - 1):
            rows = np.arange(i + 1, len(self))
            hits = self._handles[rows[self._meeting(rows, self._centres[i], float(self._radii[i]), 1.0)]]
            mine = np.full(hits.shape[0], self._handles[i])
            first.append(np.minimum(mine, hits))
            second.append(np.maximum(mine, hits))
        if not first:
            return _EMPTY.copy(), _EMPTY.copy()
        a, b = np.concatenate(first), np.concatenate(second)
        order = np.lexsort((b, a))
        return a[order], b[order]
