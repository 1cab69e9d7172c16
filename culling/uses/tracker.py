"""Visibility events: which objects came into view, left it, or changed band.

A renderer asks the tree every frame which objects are visible; gameplay,
audio and streaming code usually want the *changes*: start the particle
system when a campfire becomes visible, stop it when it leaves, swap to the
high-detail model when the camera comes within 50 m.  A
:class:`VisibilityTracker` turns the per-frame visible sets into those events
(Unity's ``CullingGroup`` offers the same), with sorted-array set operations
and no Python loop over objects.

Use one tracker per camera (a split-screen game, a shadow-casting light, a
server-side player view): events are "since *this camera's* last frame".
:class:`MultiCameraTracker` keeps one per camera id.

With ``hysteresis=m`` an object enters when the camera comes within its view
distance ``v`` and leaves only once it is beyond ``v * (1 + m)``, so one that
sits at the edge does not flicker in and out of the events (Godot keeps this
per viewport).  The tracker then needs the candidates out to the wider reach
(``tree.query(camera, scale=tracker.query_scale)``) with their distances and
view distances, and decides itself:

>>> sticky = VisibilityTracker(hysteresis=0.1)
>>> sticky.update([5], distances=[99.0], view_distances=[100.0]).entered.tolist()
[5]
>>> sticky.update([5], distances=[105.0], view_distances=[100.0]).left.tolist()  # within 110: stays
[]
>>> sticky.update([5], distances=[111.0], view_distances=[100.0]).left.tolist()
[5]
>>> sticky.update([5], distances=[105.0], view_distances=[100.0]).entered.tolist()  # must come within 100
[]

>>> import numpy as np
>>> tracker = VisibilityTracker(band_edges=(50.0,))
>>> ev = tracker.update([7, 3], distances=[10.0, 80.0])
>>> ev.entered.tolist(), ev.left.tolist(), ev.bands.tolist()
([3, 7], [], [1, 0])
>>> ev = tracker.update([3, 9], distances=[20.0, 5.0])
>>> ev.entered.tolist(), ev.left.tolist(), ev.band_changed.tolist()
([9], [7], [3])
>>> tracker.forget([9])            # object 9 was removed from the tree
>>> tracker.visible.tolist()
[3]
"""

from __future__ import annotations

import copy
import numbers
from collections.abc import Hashable, Iterator
from dataclasses import dataclass
from typing import Any, TypeVar

import numpy as np
from numpy.typing import ArrayLike, NDArray

from culling.core.containment import contains_exact
from culling.core.validation import as_handles, as_radii, as_radius, as_real, has_masked_entries
from culling.interface import Real
from culling.records import ValueRecord
from culling.runtime.interrupts import runs_whole

__all__ = ["MultiCameraTracker", "VisibilityEvents", "VisibilityTracker", "read_only_again"]

_A = TypeVar("_A", bound="NDArray[Any]")

_EMPTY: NDArray[np.int64] = np.empty(0, dtype=np.int64)
_EMPTY.flags.writeable = False


def _frozen(array: _A) -> _A:
    array.flags.writeable = False
    return array


def read_only_again(owner: object, state: dict[str, Any]) -> None:
    """``__setstate__`` of an object whose arrays are handed out read-only: a pickled or deep-copied
    array comes back writable, and a caller writing into it would break the sorted state (or the
    snapshot) it belongs to."""
    for name, value in state.items():
        if isinstance(value, np.ndarray):
            value.flags.writeable = False
        object.__setattr__(owner, name, value)


@dataclass(frozen=True, eq=False)
class VisibilityEvents(ValueRecord):
    """What changed between two consecutive updates of one tracker.

    Attributes
    ----------
    entered : ndarray, shape (a,), int64
        Sorted handles visible now and not in the previous update.
    left : ndarray, shape (b,), int64
        Sorted handles visible in the previous update and not now (objects
        dropped with :meth:`VisibilityTracker.forget` never appear here).
    band_changed : ndarray, shape (c,), int64
        Sorted handles visible in both updates whose distance band differs.
        Always empty for a tracker without ``band_edges``.
    visible : ndarray, shape (n,), int64
        Sorted handles visible now (read-only).
    bands : ndarray, shape (n,), int64
        Band of each handle of ``visible``, aligned with it (read-only); all
        zeros for a tracker without ``band_edges``.
    """

    entered: NDArray[np.int64]
    left: NDArray[np.int64]
    band_changed: NDArray[np.int64]
    visible: NDArray[np.int64]
    bands: NDArray[np.int64]

    def __setstate__(self, state: dict[str, Any]) -> None:
        read_only_again(self, state)

    @property
    def changed(self) -> bool:
        """True when anything entered, left or changed band."""
        return bool(self.entered.size or self.left.size or self.band_changed.size)

    def bands_of(self, handles: ArrayLike) -> NDArray[np.int64]:
        """Band of each of ``handles`` (which must be in ``visible``).

        Parameters
        ----------
        handles : array_like of int, shape (k,)

        Returns
        -------
        ndarray, shape (k,), int64

        Raises
        ------
        KeyError
            A handle that is not visible in this update.
        """
        return _lookup(self.visible, self.bands, as_handles(handles))


def _lookup(keys: NDArray[np.int64], values: NDArray[np.int64],
            handles: NDArray[np.int64]) -> NDArray[np.int64]:
    """``values`` at the positions of ``handles`` in the sorted ``keys``."""
    pos = np.searchsorted(keys, handles)
    ok = pos < keys.size
    ok[ok] = keys[pos[ok]] == handles[ok]
    if not ok.all():
        raise KeyError(f"handle {int(handles[~ok][0])} is not visible")
    return values[pos].astype(np.int64)


class VisibilityTracker:
    """Turns each frame's visible handles into entered / left / band-changed events.

    Parameters
    ----------
    band_edges : sequence of float, optional
        Strictly increasing distance thresholds ``e_0 < e_1 < ...``.  An object
        at distance ``d`` is in band ``i`` = the number of edges ``<= d``: with
        ``(50.0, 200.0)`` band 0 is ``d < 50``, band 1 ``50 <= d < 200`` and
        band 2 ``d >= 200``.  Without edges every object is in band 0 and
        :meth:`update` takes no distances.
    hysteresis : float, optional
        Margin ``m >= 0``: an object enters at its view distance ``v`` and
        leaves beyond ``v * (1 + m)``.  Above 0, :meth:`update` needs the
        distances and view distances of the candidates (see :attr:`query_scale`).

    Notes
    -----
    One tracker follows one camera.  State is two sorted arrays (visible
    handles and their bands), so memory is O(visible) and an update costs
    O(n log n) for sorting the ``n`` handles given plus O(n log m) for
    matching them against the ``m`` of the previous frame; there is no Python
    loop over objects.  Arrays handed out are read-only or fresh, and a later
    update never changes them.
    """

    def __init__(self, band_edges: ArrayLike | None = None, hysteresis: Real = 0.0) -> None:
        self._hysteresis: float = as_radius(as_real(hysteresis, "hysteresis"), "hysteresis")
        self._edges: NDArray[np.float64] | None
        self._visible: NDArray[np.int64]
        self._bands: NDArray[np.int64]
        if band_edges is None:
            self._edges = None
        else:
            edges = np.asarray(band_edges, dtype=np.float64) if _is_numeric(band_edges) else None
            if edges is None or edges.ndim != 1:
                raise ValueError("band_edges must be a 1-D sequence of numbers, "
                                 f"got {band_edges!r}")
            if not np.isfinite(edges).all():
                raise ValueError("band_edges must be finite (no NaN or inf)")
            if edges.size > 1 and not (edges[1:] > edges[:-1]).all():  # no np.diff: it overflows
                raise ValueError(f"band_edges must be strictly increasing as float64, got {edges.tolist()}")
            self._edges = _frozen(edges + 0.0)
        self.reset()

    # -- state ---------------------------------------------------------------

    @property
    def band_edges(self) -> NDArray[np.float64] | None:
        """The distance thresholds, shape (k,), float64, read-only; None without bands."""
        return self._edges

    @property
    def hysteresis(self) -> float:
        """The margin ``m``: objects leave beyond ``view distance * (1 + m)``."""
        return self._hysteresis

    @property
    def query_scale(self) -> float:
        """``1 + hysteresis``: query the tree with this ``scale`` to get every candidate that may stay."""
        return 1.0 + self._hysteresis

    @property
    def n_bands(self) -> int:
        """Number of bands: ``len(band_edges) + 1`` (1 without bands)."""
        return 1 if self._edges is None else self._edges.size + 1

    @property
    def visible(self) -> NDArray[np.int64]:
        """Handles visible after the last update, shape (n,), int64, sorted, read-only."""
        return self._visible

    @property
    def bands(self) -> NDArray[np.int64]:
        """Band of each handle of :attr:`visible`, shape (n,), int64, read-only."""
        return self._bands

    def __len__(self) -> int:
        return int(self._visible.size)

    def __contains__(self, handle: object) -> bool:
        """Whether the integer ``handle`` is visible now; anything else (``[1]``, 1.5, "a") is not, as
        for a structure's ``in`` (a one-element list read as its element was True)."""
        if isinstance(handle, (bool, np.bool_)) or not isinstance(handle, (numbers.Integral, np.integer)):
            return False
        value = int(handle)
        pos = int(np.searchsorted(self._visible, value)) if -2**63 <= value < 2**63 else self._visible.size
        return pos < self._visible.size and int(self._visible[pos]) == value

    def bands_of(self, handles: ArrayLike) -> NDArray[np.int64]:
        """Current band of each of ``handles``; ``KeyError`` for one not visible.

        O(k log n) for ``k`` handles.
        """
        return _lookup(self._visible, self._bands, as_handles(handles))

    # -- mutation ------------------------------------------------------------

    @runs_whole
    def update(self, visible_handles: ArrayLike, distances: ArrayLike | None = None,
               view_distances: ArrayLike | None = None) -> VisibilityEvents:
        """Record this frame's visible set and return what changed.

        Parameters
        ----------
        visible_handles : array_like of int, shape (n,)
            Handles visible this frame, unique, in any order (for instance the
            output of ``tree.query(camera, exact=True)``).  With
            ``view_distances`` these are *candidates* (for instance
            ``tree.query(camera, scale=tracker.query_scale)``) and the tracker
            decides which are visible: those within their view distance, and
            those visible before that are still within ``view distance * (1 +
            hysteresis)``.
        distances : array_like of float, shape (n,), optional
            Camera distance of each handle, aligned with ``visible_handles``;
            required when the tracker has ``band_edges`` or ``view_distances``
            are given, refused otherwise.
        view_distances : array_like of float, shape (n,), optional
            View distance of each handle; required when ``hysteresis > 0``.

        Returns
        -------
        VisibilityEvents

        Raises
        ------
        TypeError
            Non-integer handles.
        ValueError
            A negative or duplicate handle, NaN/inf or negative distances or
            view distances, either of the wrong length, missing or unexpected.
            A failed update changes nothing.

        Notes
        -----
        Cost O(n log n + n log m), ``m`` the previous frame's visible count.
        """
        try:
            handles = as_handles(visible_handles, "visible_handles")
        except KeyError:
            raise ValueError("visible_handles must fit in int64 (a handle beyond it was given)") from None
        if handles.size and handles.min() < 0:
            raise ValueError("visible_handles must not be negative, "
                             f"got {int(handles.min())}")
        # ``dist`` is set whenever ``view`` or the band edges are.
        dist: NDArray[np.float64] | None = None
        view: NDArray[np.float64] | None = None
        if view_distances is not None:
            if distances is None:
                raise ValueError("view_distances need distances (one per handle)")
            view = as_radii(view_distances, handles.size, "view_distances")
        elif self._hysteresis > 0.0:
            raise ValueError("a tracker with hysteresis needs distances and view_distances of the candidates")
        if self._edges is None and view is None:
            if distances is not None:
                raise ValueError("distances given but the tracker has no band_edges; "
                                 "pass band_edges=... to the constructor to use bands")
        elif distances is None:
            raise ValueError("distances are required: the tracker has band_edges")
        else:
            dist = as_radii(distances, handles.size, "distances")

        order = np.argsort(handles, kind="stable")
        visible = handles[order]
        if visible.size > 1:
            repeated = visible[1:][visible[1:] == visible[:-1]]
            if repeated.size:
                raise ValueError("visible_handles must be unique, handle "
                                 f"{int(repeated[0])} appears more than once")
        if view is not None and dist is not None:
            order = order[self._stays(visible, dist[order], view[order])]
            visible = handles[order]
        if self._edges is None or dist is None:
            bands = np.zeros(visible.size, dtype=np.int64)
        else:
            bands = np.searchsorted(self._edges, dist[order], side="right").astype(np.int64)

        # Match the new sorted set against the previous one.
        previous, previous_bands = self._visible, self._bands
        pos = np.searchsorted(previous, visible)
        found = pos < previous.size
        found[found] = previous[pos[found]] == visible[found]
        kept = np.zeros(previous.size, dtype=bool)
        kept[pos[found]] = True

        entered = visible[~found]
        left = previous[~kept]
        band_changed = visible[found][bands[found] != previous_bands[pos[found]]]

        self._visible = _frozen(visible)
        self._bands = _frozen(bands)
        return VisibilityEvents(entered=entered, left=left, band_changed=band_changed,
                                visible=self._visible, bands=self._bands)

    def _stays(self, candidates: NDArray[np.int64], distances: NDArray[np.float64],
               view: NDArray[np.float64]) -> NDArray[np.bool_]:
        """Mask of sorted ``candidates`` visible now: in view, or visible before and within the margin."""
        inside = distances <= view
        if self._hysteresis > 0.0 and self._visible.size:
            pos = np.searchsorted(self._visible, candidates)
            was = pos < self._visible.size
            was[was] = self._visible[pos[was]] == candidates[was]
            # |d - 0| <= v * s with the product unrounded (the library's exact containment test, as
            # InterestSets decides it): against the rounded product, a distance one ulp past it stayed
            inside |= was & contains_exact([distances], [0.0], view, "cube", 1.0 + self._hysteresis)
        return inside

    @runs_whole
    def forget(self, handles: ArrayLike) -> None:
        """Drop objects removed from the world: no ``left`` event will follow.

        Call it next to ``tree.remove_many(handles)``; a handle the tree
        hands out again later then starts fresh (an ``entered`` event when it
        becomes visible).  Unknown handles and repeats are ignored.

        Parameters
        ----------
        handles : array_like of int, shape (k,)

        Raises
        ------
        TypeError
            Non-integer handles (nothing is forgotten).

        Notes
        -----
        Cost O(k log n + n).
        """
        self._visible, self._bands = self._forgotten(as_handles(handles, beyond="drop"))

    def _forgotten(self, handles: NDArray[np.int64]) -> tuple[NDArray[np.int64], NDArray[np.int64]]:
        """The visible handles and their bands without ``handles`` (the same arrays if none is visible):
        both made before either is kept, so a ``MemoryError`` changes nothing."""
        if handles.size == 0 or self._visible.size == 0:
            return self._visible, self._bands
        pos = np.searchsorted(self._visible, handles)
        hit = pos < self._visible.size
        hit[hit] = self._visible[pos[hit]] == handles[hit]
        if not hit.any():
            return self._visible, self._bands
        keep = np.ones(self._visible.size, dtype=bool)
        keep[pos[hit]] = False
        return _frozen(self._visible[keep]), _frozen(self._bands[keep])

    @runs_whole
    def reset(self) -> None:
        """Forget everything: the next update reports all its handles as entered."""
        self._visible = _EMPTY
        self._bands = _EMPTY

    def __setstate__(self, state: dict[str, Any]) -> None:
        read_only_again(self, state)

    def __repr__(self) -> str:
        edges = None if self._edges is None else tuple(self._edges.tolist())
        return (f"VisibilityTracker(band_edges={edges}, hysteresis={self._hysteresis}, "
                f"visible={self._visible.size})")


def _is_numeric(values: object) -> bool:
    if isinstance(values, (list, tuple)) and any(isinstance(v, (bool, np.bool_)) for v in values):
        return False
    if has_masked_entries(values):
        return False
    try:
        array = np.asarray(values)
    except (TypeError, ValueError):
        return False
    return array.dtype != object and (np.issubdtype(array.dtype, np.integer)
                                      or np.issubdtype(array.dtype, np.floating)) \
        and array.dtype != np.bool_


class MultiCameraTracker:
    """One :class:`VisibilityTracker` per camera id, created by the camera's first :meth:`update`.

    Parameters
    ----------
    band_edges : sequence of float, optional
        Passed to every camera's tracker.
    hysteresis : float, optional
        Passed to every camera's tracker: each camera keeps its own margin state.

    Examples
    --------
    >>> cams = MultiCameraTracker()
    >>> cams.update("left", [1, 2]).entered.tolist()
    [1, 2]
    >>> cams.update("right", [2]).entered.tolist()
    [2]
    >>> cams.forget([2])                 # removed from the world: gone for every camera
    >>> cams["left"].visible.tolist(), cams["right"].visible.tolist()
    ([1], [])
    """

    def __init__(self, band_edges: ArrayLike | None = None, hysteresis: Real = 0.0) -> None:
        checked = VisibilityTracker(band_edges, hysteresis)   # validates both
        self._band_edges = checked.band_edges                 # read-only
        self._hysteresis = checked.hysteresis
        self._trackers: dict[Hashable, VisibilityTracker] = {}

    def __setstate__(self, state: dict[str, Any]) -> None:
        read_only_again(self, state)

    @property
    def band_edges(self) -> NDArray[np.float64] | None:
        """Every camera's distance thresholds, shape (k,), float64, read-only; None without bands."""
        return self._band_edges

    @property
    def hysteresis(self) -> float:
        """Every camera's margin ``m`` (:attr:`VisibilityTracker.hysteresis`)."""
        return self._hysteresis

    def __getitem__(self, camera: Hashable) -> VisibilityTracker:
        """The tracker of a camera that has had an update; ``KeyError`` for any other id.

        Reading registers nothing (``in``, ``len`` and iteration see only the cameras :meth:`update`
        made): a lookup that created a camera left an empty tracker behind for a mistyped id.
        """
        tracker = self._trackers.get(camera)
        if tracker is None:
            raise KeyError(f"no camera {camera!r}: a camera is registered by its first update()")
        return tracker

    def __copy__(self) -> MultiCameraTracker:
        """An independent copy: a shallow one shared the cameras' trackers, so an update of a camera
        through either copy changed the other's events."""
        return copy.deepcopy(self)

    def __contains__(self, camera: object) -> bool:
        return camera in self._trackers

    def __len__(self) -> int:
        return len(self._trackers)

    def __iter__(self) -> Iterator[Hashable]:
        return iter(self._trackers)

    @property
    def query_scale(self) -> float:
        """``1 + hysteresis``, as :attr:`VisibilityTracker.query_scale`."""
        return 1.0 + self._hysteresis

    @runs_whole
    def update(self, camera: Hashable, visible_handles: ArrayLike, distances: ArrayLike | None = None,
               view_distances: ArrayLike | None = None) -> VisibilityEvents:
        """:meth:`VisibilityTracker.update` for ``camera`` (any hashable id).

        A new camera is registered only when its first update succeeds: bad
        input raises and leaves the set of cameras unchanged.
        """
        hash(camera)  # an unhashable id is a TypeError before anything happens
        tracker = self._trackers.get(camera)
        if tracker is not None:
            return tracker.update(visible_handles, distances, view_distances)
        tracker = VisibilityTracker(self._band_edges, self._hysteresis)
        events = tracker.update(visible_handles, distances, view_distances)
        self._trackers[camera] = tracker
        return events

    @runs_whole
    def forget(self, handles: ArrayLike) -> None:
        """Drop removed objects from every camera, silently.  O(cameras × forget)."""
        handles = as_handles(handles, beyond="drop")
        kept = [(tracker, tracker._forgotten(handles)) for tracker in self._trackers.values()]  # first: all or none
        for tracker, (visible, bands) in kept:
            tracker._visible, tracker._bands = visible, bands

    @runs_whole
    def remove_camera(self, camera: Hashable) -> None:
        """Stop tracking ``camera``; unknown ids are ignored."""
        self._trackers.pop(camera, None)

    @runs_whole
    def reset(self) -> None:
        """Drop every camera's state."""
        self._trackers.clear()
