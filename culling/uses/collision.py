"""Collision candidates: which objects does a moving probe sphere touch, and which objects touch?

A probe sphere of radius ``q`` (the camera, a player capsule's sphere, a
projectile) touches an object with bounding radius ``b`` exactly when
``|c - p| <= b + q``.  :class:`CollisionCandidates` stores every object in a
:class:`~culling.ViewDistanceTree` with its bounding radius and asks the
tree's sphere probe (:meth:`~culling.ViewDistanceTree.overlapping`), whose
walk widens every window by ``q``: O(levels + candidates) whatever the size
of the world, for the default probe radius or any other one per call.
:meth:`CollisionCandidates.pairs` is the broad phase among the objects
themselves (:meth:`~culling.ViewDistanceTree.overlapping_pairs`).

>>> cc = CollisionCandidates(probe_radius=1.0, size=64.0)
>>> rock = cc.insert((10.0, 0.0, 0.0), 2.0)
>>> tower = cc.insert((30.0, 0.0, 0.0), 5.0)
>>> cc.touching((7.5, 0.0, 0.0)).tolist() == [rock]     # 2.5 <= 2 + 1
True
>>> cc.resolve((9.0, 0.0, 0.0)).tolist()                 # pushed out to 10 - 3
[7.0, 0.0, 0.0]
>>> cc.touching((22.0, 0.0, 0.0), probe_radius=3.0).tolist() == [tower]   # 8 <= 5 + 3
True
>>> [p.tolist() for p in cc.pairs()]                     # 20 > 2 + 5: no pair
[[], []]
>>> t, hit = cc.sweep((0.0, 0.0, 0.0), (40.0, 0.0, 0.0))  # a jump past the rock: it touches at x = 7
>>> t * 40.0, hit == rock
(7.0, True)
"""

from __future__ import annotations

import copy
import math
import numbers
from fractions import Fraction

import numpy as np
from numpy.typing import ArrayLike, NDArray

from culling.core.containment import distances
from culling.core.validation import (
    Handle,
    as_handle,
    as_handles,
    as_point,
    as_points,
    as_probe_radii,
    as_radii,
    as_radius,
    check_constructor,
    check_unique,
)
from culling.interface import Real
from culling.runtime.interrupts import runs_whole
from culling.tree.tree import ViewDistanceTree

__all__ = ["CollisionCandidates", "MAX_RESOLVE_ITERATIONS"]

#: The most passes :meth:`CollisionCandidates.resolve` accepts: a probe boxed
#: in between objects may never get free, and a bound the caller gives must
#: also bound the time (a larger value is a ``ValueError``, not a hang).
MAX_RESOLVE_ITERATIONS = 10_000


class CollisionCandidates:
    """Objects with bounding spheres, queried by a probe sphere of fixed radius.

    Parameters
    ----------
    probe_radius : float
        Radius ``q`` of the probe sphere, finite and ``>= 0``.
    size : float
        Edge of the tree's root node (it grows on demand).
    origin : array_like, shape (dim,), optional
        Low corner of the root node; zeros by default.
    dim : int
        1, 2 or 3.

    Notes
    -----
    Each object is stored in the tree with its bounding radius ``b`` (also
    kept in an array indexed by handle); the probe radius is only the
    queries' default, so changing it (:meth:`set_probe_radius`) moves
    nothing.  ``b + q`` must stay finite.  Handles are the tree's handles.
    Bad input raises the tree's exceptions (``ValueError``, ``TypeError``,
    ``KeyError``) and changes nothing.
    """

    def __init__(self, probe_radius: Real, size: Real, origin: ArrayLike | None = None,
                 dim: int = 3) -> None:
        self._probe: float = as_radius(probe_radius, "probe_radius")
        size, origin, dim, _ = check_constructor(size, origin, dim, "sphere")
        self._dim: int = dim
        self._tree = ViewDistanceTree(size=size, origin=origin, dim=dim)
        self._bounding: NDArray[np.float64] = np.zeros(0, dtype=np.float64)   # by handle
        self._alive: NDArray[np.bool_] = np.zeros(0, dtype=np.bool_)          # by handle

    # -- properties ----------------------------------------------------------

    @property
    def probe_radius(self) -> float:
        """Radius of the probe sphere."""
        return self._probe

    @property
    def dim(self) -> int:
        """Number of axes: 1, 2 or 3."""
        return self._dim

    @property
    def tree(self) -> ViewDistanceTree:
        """The underlying tree (radii are the bounding radii); read it, do not mutate it."""
        return self._tree

    def handles(self) -> NDArray[np.int64]:
        """Every handle stored, ascending; shape (n,), int64.  O(largest handle)."""
        return np.flatnonzero(self._alive).astype(np.int64)

    def __len__(self) -> int:
        return len(self._tree)

    def __contains__(self, handle: object) -> bool:
        return handle in self._tree

    # -- bookkeeping ---------------------------------------------------------

    def _reach(self, bounding: NDArray[np.float64], probe: float) -> NDArray[np.float64]:
        """Tree radii ``bounding + probe``; ``ValueError`` if that overflows."""
        with np.errstate(over="ignore"):
            reach = bounding + probe
        if reach.size and not np.isfinite(reach).all():
            raise ValueError("bounding radius + probe_radius must be finite")
        return reach

    def _reserve(self, n: int) -> None:
        """Room in the per-handle arrays for ``n`` new objects, before the tree takes them: the tree
        hands out handles below ``issued + n``, so storing them afterwards allocates nothing and a
        ``MemoryError`` here leaves no object in the tree that this wrapper does not know."""
        needed = self._tree._next_handle + n
        if needed > self._bounding.size:
            capacity = max(needed, 2 * self._bounding.size, 16)
            grown = np.zeros(capacity, dtype=np.float64)
            alive = np.zeros(capacity, dtype=np.bool_)
            grown[:self._bounding.size] = self._bounding
            alive[:self._alive.size] = self._alive
            self._bounding, self._alive = grown, alive

    def _store(self, handles: NDArray[np.int64], bounding: NDArray[np.float64]) -> None:
        """Record new objects (room made by :meth:`_reserve`)."""
        self._bounding[handles] = bounding
        self._alive[handles] = True

    def _check_known(self, handles: NDArray[np.int64], single: bool = False) -> None:
        """``KeyError`` naming the first handle not stored (and its row in a batch, as the tree does)."""
        known = (handles >= 0) & (handles < self._alive.size)
        known[known] = self._alive[handles[known]]
        if not known.all():
            row = int(np.flatnonzero(~known)[0])
            where = "" if single else f" (handles[{row}])"
            raise KeyError(f"handle {int(handles[row])} is not in the structure{where}")

    # -- mutation ------------------------------------------------------------

    @runs_whole
    def insert(self, centre: ArrayLike, bounding_radius: Real) -> int:
        """Add one object; returns its handle.  O(1) amortised (a hash lookup).

        Parameters
        ----------
        centre : array_like, shape (dim,), float (a scalar for dim 1)
        bounding_radius : float, finite and ``>= 0``
        """
        bounding = as_radius(bounding_radius, "bounding_radius")
        self._reach(np.array([bounding]), self._probe)
        self._reserve(1)
        handle = int(self._tree.insert(centre, bounding))
        self._bounding[handle] = bounding
        self._alive[handle] = True
        return handle

    @runs_whole
    def insert_many(self, centres: ArrayLike, bounding_radii: ArrayLike) -> NDArray[np.int64]:
        """Add ``n`` objects; returns their handles, shape (n,), int64.  O(n), vectorised.

        Parameters
        ----------
        centres : array_like, shape (n, dim), float
        bounding_radii : array_like, shape (n,), float, finite and ``>= 0``
        """
        points = as_points(centres, self._dim, "centres")
        bounding = as_radii(bounding_radii, points.shape[0], "bounding_radii")
        self._reach(bounding, self._probe)
        self._reserve(points.shape[0])
        handles = self._tree.insert_many(points, bounding)
        self._store(handles, bounding)
        return handles

    @runs_whole
    def update(self, handle: Handle, centre: ArrayLike, bounding_radius: Real | None = None) -> None:
        """Move (and optionally resize) one object.  O(1) for a small move.

        Parameters
        ----------
        handle : int
        centre : array_like, shape (dim,), float
        bounding_radius : float, optional
            New bounding radius; the current one when omitted.

        Raises
        ------
        KeyError
            ``handle`` is not stored.
        """
        h = as_handle(handle)
        self._check_known(as_handles([h]), single=True)
        bounding = (self._bounding[h] if bounding_radius is None
                    else as_radius(bounding_radius, "bounding_radius"))
        self._reach(np.array([bounding]), self._probe)
        self._tree.update(h, centre, float(bounding))
        self._bounding[h] = bounding

    @runs_whole
    def update_many(self, handles: ArrayLike, centres: ArrayLike,
                    bounding_radii: ArrayLike | None = None) -> None:
        """Move (and optionally resize) ``n`` objects at once.  O(n), vectorised.

        Parameters
        ----------
        handles : array_like of int, shape (n,), unique
        centres : array_like, shape (n, dim), float
        bounding_radii : array_like, shape (n,), float, optional
            New bounding radii; the current ones when omitted.
        """
        hs = as_handles(handles)
        check_unique(hs)
        self._check_known(hs)
        points = as_points(centres, self._dim, "centres")
        if points.shape[0] != hs.size:
            raise ValueError(f"centres must have shape ({hs.size}, {self._dim}), got {points.shape}")
        bounding = (self._bounding[hs] if bounding_radii is None
                    else as_radii(bounding_radii, hs.size, "bounding_radii"))
        self._reach(bounding, self._probe)
        self._tree.update_many(hs, points, bounding)
        self._bounding[hs] = bounding

    @runs_whole
    def remove(self, handle: Handle) -> None:
        """Remove one object; ``KeyError`` if it is not stored.  O(1) plus node cleanup."""
        h = as_handle(handle)
        self._check_known(as_handles([h]), single=True)
        self._tree.remove(h)
        self._alive[h] = False

    @runs_whole
    def remove_many(self, handles: ArrayLike) -> None:
        """Remove ``n`` objects (unique, all stored, else nothing changes).  O(n)."""
        hs = as_handles(handles)
        check_unique(hs)
        self._check_known(hs)
        self._tree.remove_many(hs)
        self._alive[hs] = False

    @runs_whole
    def set_probe_radius(self, probe_radius: Real) -> None:
        """Change the default probe radius; nothing is re-stored.

        O(n) only to check that every ``bounding + probe`` stays finite;
        nothing changes on bad input.
        """
        probe = as_radius(probe_radius, "probe_radius")
        self._reach(self._bounding[self.handles()], probe)
        self._probe = probe

    def _probe_of(self, probe_radius: Real | None) -> float:
        return self._probe if probe_radius is None else as_radius(probe_radius, "probe_radius")

    # -- queries -------------------------------------------------------------

    def bounding_radius_of(self, handles: ArrayLike) -> NDArray[np.float64]:
        """Bounding radii of ``handles``, shape (k,), float64 (a fresh array).  O(k).

        Raises
        ------
        KeyError
            A handle that is not stored.
        """
        hs: NDArray[np.int64] = as_handles(handles)
        self._check_known(hs)
        return self._bounding[hs].copy()

    def centres_of(self, handles: ArrayLike) -> NDArray[np.float64]:
        """Centres of ``handles``, shape (k, dim), float64.  O(k)."""
        hs = as_handles(handles)
        self._check_known(hs)
        centres: NDArray[np.float64] = self._tree.centres_of(hs)
        return centres

    def candidates(self, probe_centre: ArrayLike, probe_radius: Real | None = None) -> NDArray[np.int64]:
        """A superset of the objects touching the probe, int64, each once.

        ``probe_radius``: this query's probe radius (the default one when
        None).  O(levels + candidates): the tree's sphere probe
        (:meth:`~culling.ViewDistanceTree.overlapping`) without the exact test.
        """
        point = as_point(probe_centre, self._dim, "probe_centre")
        return self._tree.overlapping(point, self._probe_of(probe_radius))

    def _contacts(self, point: NDArray[np.float64], q: float) -> tuple[
            NDArray[np.int64], NDArray[np.float64], NDArray[np.float64], NDArray[np.float64]]:
        """Candidates of a probe of radius ``q`` with their centres, reach ``b + q`` and distance to ``point``."""
        hs = self._tree.overlapping(point, q)
        centres = self._tree.centres_of(hs)
        with np.errstate(over="ignore"):  # inf past the largest float: the push refuses it (ValueError)
            reach = self._bounding[hs] + q
        return hs, centres, reach, distances(list(centres.T), point.tolist(), "sphere")

    def touching(self, probe_centre: ArrayLike, probe_radius: Real | None = None) -> NDArray[np.int64]:
        """Objects whose bounding sphere touches the probe sphere.

        Sphere-sphere test ``|c - p| <= b + q`` (touching surfaces count),
        decided exactly for the float64 inputs: the rounding of ``b + q``
        never flips an answer (:meth:`~culling.ViewDistanceTree.overlapping`
        with ``exact=True``).

        Parameters
        ----------
        probe_centre : array_like, shape (dim,), float
        probe_radius : float, optional
            This query's probe radius ``q``; the default one when None.

        Returns
        -------
        ndarray, shape (k,), int64, sorted

        Notes
        -----
        O(levels + candidates).
        """
        point = as_point(probe_centre, self._dim, "probe_centre")
        return np.sort(self._tree.overlapping(point, self._probe_of(probe_radius), exact=True))

    def touching_many(self, probe_centres: ArrayLike,
                      probe_radii: ArrayLike | None = None) -> tuple[NDArray[np.int64], NDArray[np.int64]]:
        """:meth:`touching` for many probes at once, each with its own radius (the default when None).

        Returns ``(handles, counts)`` as :meth:`~culling.ViewDistanceTree.overlapping_many`
        (each probe's handles in no particular order).  O(m x levels + candidates), on all cores.
        """
        points = as_points(probe_centres, self._dim, "probe_centres")
        radii = self._probe if probe_radii is None else as_probe_radii(probe_radii, points.shape[0], "probe_radii")
        handles, counts = self._tree.overlapping_many(points, radii, exact=True)
        return handles, counts

    def pairs(self) -> tuple[NDArray[np.int64], NDArray[np.int64]]:
        """Every pair of stored objects whose bounding spheres touch: ``|c_i - c_j| <= b_i + b_j``.

        Returns ``(first, second)``, int64, ``first < second``, each pair once,
        in no particular order: the broad phase among the objects
        (:meth:`~culling.ViewDistanceTree.overlapping_pairs`), decided exactly.
        """
        first, second = self._tree.overlapping_pairs()
        return first, second

    def resolve(self, probe_centre: ArrayLike, iterations: int = 4,
                probe_radius: Real | None = None) -> NDArray[np.float64]:
        """Push the probe out of every object it overlaps.

        Each pass queries the tree at the current position and, deepest
        overlap first, moves the probe along the direction from the object's
        centre to the probe until their distance is ``b + probe_radius``
        (a probe exactly at a centre moves along the last axis, +z in 3-D),
        or a few ulps beyond where the rounding of ``b + q`` and of the
        move would leave it inside: an overlap is decided exactly, as
        :meth:`touching` decides contact.  Passes repeat until nothing
        overlaps or ``iterations`` are done.

        Parameters
        ----------
        probe_centre : array_like, shape (dim,), float
        iterations : int, 0 to ``MAX_RESOLVE_ITERATIONS``
            Upper bound on the passes.  Between objects that box the probe
            in, or two that overlap each other and push the probe back and
            forth (the passes then stop at once), the result may still
            overlap; check :meth:`touching` if that matters.
        probe_radius : float, optional
            This call's probe radius ``q``; the default one when None.

        Returns
        -------
        ndarray, shape (dim,), float64
            The corrected position (a new array; the input is not changed).
            Touching surfaces (distance exactly ``b + q``) are not overlaps.

        Raises
        ------
        ValueError
            Bad input, or a push that would move the probe beyond the largest
            float (an object's ``b + q`` near ``1.8e308``).

        Notes
        -----
        O(iterations × (levels + candidates)); the Python loop runs over the
        objects overlapping the probe only, a handful in practice.
        """
        point = as_point(probe_centre, self._dim, "probe_centre").copy()
        if isinstance(iterations, bool) or not isinstance(iterations, (numbers.Integral, np.integer)):
            raise TypeError(f"iterations must be an integer, got {type(iterations).__name__}")
        if not 0 <= iterations <= MAX_RESOLVE_ITERATIONS:
            raise ValueError(f"iterations must be in [0, {MAX_RESOLVE_ITERATIONS}], got {iterations}")
        q = self._probe_of(probe_radius)
        before = None  # the position two passes ago: a pass that comes back to it starts a cycle
        for _ in range(int(iterations)):
            hs, centres, reach, dist = self._contacts(point, q)
            p = point.tolist()
            bounds = self._bounding[hs].tolist()
            overlap = [i for i, (centre, b) in enumerate(zip(centres.tolist(), bounds)) if _overlaps(centre, p, b, q)]
            if not overlap:
                break
            for i in sorted(overlap, key=lambda i: (dist[i] - reach[i], i)):       # deepest overlap first
                centre, b = centres[i].tolist(), bounds[i]
                if _overlaps(centre, p, b, q):  # an earlier push may have cleared it
                    try:
                        p = _pushed_out(centre, p, b, q)
                    except OverflowError:
                        raise ValueError(f"resolve cannot push the probe out of object {int(hs[i])}: it would lie "
                                         f"beyond the largest float (b + q = {b + q!r})") from None
            moved = np.array(p, dtype=np.float64)
            if np.array_equal(moved, point) or (before is not None and np.array_equal(moved, before)):
                break  # a fixed point, or two objects pushing the probe back and forth: passes change nothing
            before, point = point, moved
        return point

    def sweep(self, start: ArrayLike, end: ArrayLike, probe_radius: Real | None = None) -> tuple[float, int]:
        """Where a probe moving in a straight line from ``start`` to ``end`` first touches an object.

        A probe that jumps from one place to the next (a camera at 500 m a frame, a bullet) can pass
        through an object that neither place touches; the sweep finds the first contact on the way.

        Parameters
        ----------
        start, end : array_like, shape (dim,), float
            The probe's centre before and after the move.
        probe_radius : float, optional
            This query's probe radius ``q``; the default one when None.

        Returns
        -------
        (float, int)
            ``(t, handle)``: the fraction ``0 <= t <= 1`` of the move at which the probe first touches
            the object ``handle`` (``|c - p| = b + q`` at ``p = start + t * (end - start)``), or
            ``(1.0, -1)`` when the path is clear (or
            ``start == end``).  An object the probe already touches at ``start`` stops it there
            (``t = 0``) only when the move goes deeper into it, so a probe resting against a wall
            can slide along it or leave it.

        Raises
        ------
        ValueError
            Bad input, or a move too long for float64 (its length overflows).

        Notes
        -----
        One sphere probe around the path's midpoint (radius half the path plus ``q``: every object
        the moving probe can touch), then the first root of ``|start + t d - c| = b + q`` for each
        candidate (:func:`_first_contacts`, on coordinates scaled by a power of two to about 1).
        Whether the path touches an object is decided exactly for the float64 inputs, as
        :meth:`touching` decides (a grazing path counts).  ``t`` is the float nearest the real
        contact (within an ulp or two) for every object that could come first, recomputed in
        fractions (a grazing path's float root loses half its digits), so the probe at ``t`` may
        overlap or miss by a rounding (:meth:`resolve` settles it exactly).  Objects whose ``t``
        round to the same float go by handle.  O(levels + candidates), the candidates tested in
        NumPy, and in fractions those that could come first.
        """
        a = as_point(start, self._dim, "start")
        b = as_point(end, self._dim, "end")
        q = self._probe_of(probe_radius)
        if np.array_equal(a, b):
            return 1.0, -1
        with np.errstate(all="ignore"):
            d = b - a
            longest = float(np.abs(d).max())
            length = longest * float(np.sqrt(np.sum((d / longest) ** 2)))   # scaled: no square underflows
            # Rounded up, by a share and by the grain of the coordinates (the midpoint and d are rounded):
            # every object the moving probe touches is a candidate.
            grain = 2.0 ** -50 * float(max(np.abs(a).max(), np.abs(b).max()))
            reach = (length / 2.0 + q) * (1.0 + 2.0 ** -48) + grain
            if not math.isfinite(length):
                raise ValueError(f"the move from {a.tolist()} to {b.tolist()} is too long for float64")
            # A probe radius near the largest float takes the reach past float64: every object a candidate
            hs = self._tree.overlapping(a / 2.0 + b / 2.0, reach) if math.isfinite(reach) else self.handles()
            if hs.size == 0:
                return 1.0, -1
            centres = self._tree.centres_of(hs)
            t = _first_contacts(a, b, centres, self._bounding[hs], q)
        hit = np.flatnonzero(t <= 1.0)
        if hit.size == 0:
            return 1.0, -1
        first = hit[np.lexsort((hs[hit], t[hit]))[0]]
        return float(t[first]), int(hs[first])

    # -- testing -------------------------------------------------------------

    def check_invariants(self) -> None:
        """Assert the tree's invariants and that its radii are the bounding radii."""
        self._tree.check_invariants()
        hs = self.handles()
        assert len(self._tree) == hs.size, "tree and bounding radii disagree on the count"
        if hs.size:
            stored = np.asarray(self._tree.radii_of(hs))
            assert np.array_equal(stored, self._bounding[hs]), "a stored radius is not the bounding radius"

    def __copy__(self) -> CollisionCandidates:
        """An independent copy, as the tree's: a shallow one shared the tree and the per-handle radii, and a
        change to either copy left the other's tree and radii disagreeing."""
        return copy.deepcopy(self)

    def __repr__(self) -> str:
        return f"CollisionCandidates(probe_radius={self._probe}, objects={len(self)}, dim={self._dim})"


#: A float test of the sweep within this relative share of its terms is settled in fractions.
_SWEEP_DOUBT = 2.0 ** -40


def _first_contacts(start: NDArray[np.float64], end: NDArray[np.float64], centres: NDArray[np.float64],
                    bounding: NDArray[np.float64], q: float) -> NDArray[np.float64]:
    """Each candidate's first contact along the move from ``start`` to ``end`` (``t`` in floats; inf: none).

    Everything is first scaled by one power of two (exact; ``ldexp``, as ``2**k`` itself may overflow)
    so that the largest magnitude is about 1:
    no square underflows or overflows, and every rounding is below ``2**-50`` in absolute terms.
    With ``d = end - start``, ``w = start - c`` and ``r = b + q``, the path touches an object when
    its nearest point lies within ``r``, unless the probe touches it at ``start`` and moves away or
    along (``w.d >= 0``): that is decided in floats where the distance lies clearly off ``r`` (and
    ``w.d`` clearly off 0), and in fractions otherwise (:func:`_first_contact_exactly`), only for the
    candidates that could come first.  The contact's ``t``: 0 for one touched at ``start``, else the
    nearer crossing of the sphere by the line, from the line's nearest point (no cancellation of
    large terms), kept within ``[0, 1]``.  Called with NumPy's floating-point errors ignored.
    """
    largest = max(float(np.abs(start).max()), float(np.abs(end).max()), float(np.abs(centres).max()),
                  float(bounding.max()), q)
    k = -math.frexp(largest)[1] if largest > 0.0 else 0   # up to 1074 for a subnormal scene: 2**k overflows
    s, e, c = np.ldexp(start, k), np.ldexp(end, k), np.ldexp(centres, k)
    r = np.ldexp(bounding, k) + math.ldexp(q, k)          # each below 1: b + q cannot overflow here
    d = e - s
    ll = float(d @ d)
    t = np.full(r.size, np.inf)
    if not ll > 0.0:                      # a move below 2**-537 of the scene: every candidate in fractions
        for i in range(r.size):
            t[i] = _first_contact_exactly(start, end, centres[i], float(bounding[i]), q)
        return t
    w = s - c
    along = w @ d                                           # < 0: the move goes towards the centre
    at_start = np.sqrt(np.einsum("ij,ij->i", w, w))
    line_t = -along / ll                                    # the line's nearest point to each centre
    nearest_t = np.clip(line_t, 0.0, 1.0)
    nearest = s + nearest_t[:, None] * d
    nearest[nearest_t == 1.0] = e                           # the end exactly, not start + (end - start)
    near = np.sqrt(np.einsum("ij,ij->i", nearest - c, nearest - c))
    slack = 2.0 ** -44 + r * 2.0 ** -48                     # well above every rounding, in scaled units
    touched_first = at_start <= r - slack                   # surely touching at start
    touches = (near <= r - slack) & ~touched_first          # surely touching on the way
    doubt = (np.abs(near - r) <= slack) | (np.abs(at_start - r) <= slack) | \
        ((at_start <= r + slack) & (np.abs(along) <= 2.0 ** -44 * math.sqrt(ll)))
    sure_start = touched_first & ~doubt
    t[sure_start & (along < 0.0)] = 0.0
    on_line = s + line_t[:, None] * d
    h2 = np.einsum("ij,ij->i", on_line - c, on_line - c)
    crossing = np.clip(line_t - np.sqrt(np.maximum(r * r - h2, 0.0) / ll), 0.0, 1.0)
    sure = touches & ~doubt
    t[sure] = crossing[sure]
    best = float(t.min())
    exact = np.zeros(r.size, dtype=np.bool_)   # t from fractions already (0 there: touched at start)
    for i in np.flatnonzero(doubt).tolist():   # in fractions, only where it could come first
        if crossing[i] <= best + 2.0 ** -20 or at_start[i] <= r[i] + slack[i]:
            t[i] = _first_contact_exactly(start, end, centres[i], float(bounding[i]), q)
            exact[i] = True
    # The other contacts on the way that could come first, their t from fractions too: a path that grazes
    # a sphere crosses it where r*r - h*h cancels, and the floats' t lost half its digits (3.2e-8 of a
    # move of 2); a crossing clipped to 0 would read as a touch at start.
    best = float(t.min())
    for i in np.flatnonzero(sure & (t <= min(best + 2.0 ** -20, 1.0)) & ~exact).tolist():
        t[i] = _crossing_exactly(start, end, centres[i], float(bounding[i]), q, max(float(t[i]), math.ulp(0.0)))
    return t


def _first_contact_exactly(start: NDArray[np.float64], end: NDArray[np.float64], centre: NDArray[np.float64],
                           bounding: float, q: float) -> float:
    """:func:`_first_contacts` for one candidate, whether it is touched decided in fractions: the
    path touches when the squared distance at its nearest point is at most ``(b + q)^2``, unless
    it touches at ``start`` and moves away or along (``w.d >= 0``).  Then ``t``: 0 at ``start``,
    else the crossing in fractions (:func:`_root_exactly`); inf where it does not touch."""
    ww, wd, ll, reach = _exact_terms(start, end, centre, bounding, q)
    if ww <= reach:
        return 0.0 if wd < 0 else math.inf
    nearest = min(max(-wd / ll, Fraction(0)), Fraction(1))
    if ww + 2 * nearest * wd + nearest * nearest * ll > reach:
        return math.inf
    return _root_exactly(ww, wd, ll, reach)


def _crossing_exactly(start: NDArray[np.float64], end: NDArray[np.float64], centre: NDArray[np.float64],
                      bounding: float, q: float, estimate: float) -> float:
    """The float ``t`` of a candidate :func:`_first_contacts` found touched on the way, recomputed in
    fractions (:func:`_root_exactly`); ``estimate``, its float ``t``, is kept where the line, in exact
    arithmetic, does not cross from outside (a touch decided within rounding at the very end)."""
    ww, wd, ll, reach = _exact_terms(start, end, centre, bounding, q)
    if ww <= reach or wd >= 0 or wd * wd < ll * (ww - reach):
        return estimate
    return _root_exactly(ww, wd, ll, reach)


def _exact_terms(start: NDArray[np.float64], end: NDArray[np.float64], centre: NDArray[np.float64],
                 bounding: float, q: float) -> tuple[Fraction, Fraction, Fraction, Fraction]:
    """``(|w|^2, w.d, |d|^2, (b + q)^2)`` in fractions, with ``w = start - c`` and ``d = end - start``
    (the move itself, not its rounding)."""
    w = [Fraction(float(a)) - Fraction(float(c)) for a, c in zip(start, centre)]
    dd = [Fraction(float(e)) - Fraction(float(a)) for a, e in zip(start, end)]
    return (sum((x * x for x in w), Fraction(0)), sum((x * y for x, y in zip(w, dd)), Fraction(0)),
            sum((x * x for x in dd), Fraction(0)), (Fraction(bounding) + Fraction(q)) ** 2)


def _root_exactly(ww: Fraction, wd: Fraction, ll: Fraction, reach: Fraction) -> float:
    """The first crossing of a sphere by a probe that starts clear of it (``ww > reach``) on a line that
    crosses it (``w.d < 0``): the nearer root in the form without cancellation,
    ``t = (|w|^2 - r^2) / (-w.d + sqrt((w.d)^2 - |d|^2 (|w|^2 - r^2)))``, as the float nearest it
    (within an ulp or two), in ``(0, 1]``: never 0, which says the probe touched at ``start``."""
    outside = ww - reach
    t = outside / (-wd + _square_root(wd * wd - ll * outside))
    return min(max(float(t), math.ulp(0.0)), 1.0)


def _square_root(x: Fraction) -> Fraction:
    """The square root of a fraction ``x >= 0``, within ``2**-63`` of itself: an integer square root of
    ``x`` scaled by a power of four to about 128 bits (floats would overflow or underflow at the
    extremes ``x`` reaches)."""
    if x <= 0:
        return Fraction(0)
    p, n = x.numerator, x.denominator
    k = (128 - (p.bit_length() - n.bit_length())) // 2
    scaled = (p << (2 * k)) // n if k >= 0 else p // (n << (-2 * k))
    return Fraction(math.isqrt(scaled), 1 << k) if k >= 0 else Fraction(math.isqrt(scaled) << -k)


def _overlaps(centre: list[float], point: list[float], bounding: float, probe: float) -> bool:
    """Whether the probe at ``point`` overlaps the object: ``|c - p| < b + q`` in exact arithmetic
    (touching surfaces do not overlap).  Floats decide where they can; within rounding, fractions."""
    d = math.hypot(*(a - c for a, c in zip(point, centre)))
    reach = bounding + probe
    if d > reach * (1.0 + 2.0 ** -48) + 2.0 ** -1060:
        return False
    if d < reach * (1.0 - 2.0 ** -48) - 2.0 ** -1060:
        return True
    gap = sum((Fraction(a) - Fraction(c)) ** 2 for a, c in zip(point, centre))
    return gap < (Fraction(bounding) + Fraction(probe)) ** 2


def _pushed_out(centre: list[float], point: list[float], bounding: float, probe: float) -> list[float]:
    """``point`` moved along the direction from ``centre`` (the last axis when they coincide) to the
    distance ``b + q``, then on by a few ulps while the rounding of ``b + q`` and of the move leaves it
    overlapping in exact arithmetic (``2**53 + 1`` is not a float: a probe of 1 at ``2**53`` from an
    object of ``2**53`` stayed where it was)."""
    offset = [a - c for a, c in zip(point, centre)]
    largest = max(abs(o) for o in offset)
    if largest > 0.0:  # the offset scaled by a power of two (exact) to near 1 first: hypot of subnormal
        shift = math.frexp(largest)[1]  # offsets rounds badly (a push 1.41 long where 1 was asked)
        scaled = [math.ldexp(o, -shift) for o in offset]
        length = math.hypot(*scaled)
        direction = [o / length for o in scaled]
    else:
        direction = [0.0] * (len(offset) - 1) + [1.0]
    step = bounding + probe
    grain = max(math.ulp(x) for x in [*centre, *point, step])  # the coarsest rounding of a coordinate
    moved = point
    for ulps in (0, 1, 2, 4, 8, 16, 32, 64):
        reach = step * (1.0 + ulps * 2.0 ** -52) + ulps * grain
        farther = [c + u * reach for c, u in zip(centre, direction)]
        if not all(map(math.isfinite, farther)):  # no float lies that far out: the caller says so
            raise OverflowError("the probe pushed out of an object would lie beyond the largest float")
        moved = farther
        if not _overlaps(centre, moved, bounding, probe):
            return moved
    return moved
