"""The per-frame culling stages, in order: walk, exact distance test, frustum filter, instances.

This is the part of the frame loop an engine programmer copies.  It is cut in
two at the place a game loop is cut:

* :meth:`CullingPipeline.cull` (``on_update``): the tree's walk and its exact
  query -> the frustum filter.  It produces the visible object indices
  (:attr:`CullingPipeline.visible`), their camera distances and the frame's
  statistics, and touches no GPU object;
* :meth:`CullingPipeline.instances` (``on_render``): the survivors' per-instance
  records (:mod:`engine.records`), fade included, grouped by kind, ready for
  one upload and one instanced draw per kind;
  :meth:`CullingPipeline.instance_groups` adds each instance's level of detail
  (:mod:`engine.lod`) from the same distances and groups them by (kind,
  level), one instanced draw per pair.

There is one path, whether the debug overlay is on or not: one call,
``index.query_detailed(p, scale, trace=overlay)``, walks the index once and
returns the exact answer with its centres, view distances and camera
distances, how many candidates the walk saw and, for the overlay, the
walk's per-level trace (:class:`culling.QueryDetails`).  The funnel means
the same in every mode: *walked candidates* (every object the walk's nodes
hold) -> *in range* (the exact test, then the begin distance) -> *in
frustum* -> *drawn*.  The camera distances come with the answer, once a
frame, and feed the fade and the level of detail.

An object can also have a *begin distance* (``scene.begin_distance``): it is
visible only from at least that far, the near end of its visibility range
(:mod:`engine.visibility_range`).  The index stores only the view distance;
the begin test is one comparison on the objects in range.

Nothing is copied from the scene: the pipeline reads its arrays (``centres``,
``bounding_radius``, ``begin_distance``, ``yaw``, ``tint``, ``highlight``,
``kind_offsets``) each frame, for the survivors only, so a scene that moves
objects (and pushes the moves into the index) needs to tell nobody else.

Object indices (rows of the scene's arrays) and index handles are kept apart:
``handles[i]`` is object ``i``'s handle, and a handle-to-object table maps
query results back (the identity, skipped, when the index handed out
``0..n-1``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from numbers import Real
from time import perf_counter
from typing import TYPE_CHECKING, Protocol

import numpy as np
from numpy.typing import ArrayLike, NDArray

from culling import QueryDetails, QueryTrace
from engine.frustum import frustum_planes, spheres_in_frustum
from engine.lod import LodFrame, LodSelector
from engine.records import CROSSFADE_BAND, FADE_COLUMN, INSTANCE_FLOATS, build_records, far_fade
from engine.visibility_range import begin_fade

if TYPE_CHECKING:
    from engine.scene_protocol import SceneData

__all__ = ["BruteForceIndex", "CullingPipeline", "FrameStats", "SpatialIndex"]

#: Staging rows grow to the next power of two: amortised O(1), at most 2x memory.
_MIN_CAPACITY = 1024


@dataclass
class FrameStats:
    """What one frame's culling did: the funnel counts and per-stage times (ms).

    The funnel: ``candidates`` (what the walk's nodes hold) >= ``in_range``
    (the exact query, and the begin distance) >= ``in_frustum`` == ``drawn``.
    """

    candidates: int = 0
    in_range: int = 0
    in_frustum: int = 0
    drawn: int = 0
    draw_calls: int = 0
    query_ms: float = 0.0
    distance_ms: float = 0.0
    frustum_ms: float = 0.0
    upload_ms: float = 0.0
    draw_ms: float = 0.0
    trace_ms: float = 0.0
    triangles: int = 0
    kind_counts: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    #: Instances drawn at each level of detail (a cross-fading one counts at both).
    level_counts: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))

    @property
    def cull_ms(self) -> float:
        """Query + filters + instance upload: the budget the demo is measured on."""
        return self.query_ms + self.distance_ms + self.frustum_ms + self.upload_ms

    #: ``query_ms`` is the index's one call (walk, exact test, distances, and the
    #: trace with the overlay); ``distance_ms`` the begin-distance test; ``trace_ms`` the debug overlay's own cost (its
    #: boxes built and uploaded).
    CSV_FIELDS = ("query_ms", "distance_ms", "frustum_ms", "upload_ms", "cull_ms", "draw_ms", "trace_ms",
                  "candidates", "in_range", "in_frustum", "drawn", "triangles")

    def csv_row(self) -> list[float | int]:
        return [getattr(self, name) for name in self.CSV_FIELDS]


class SpatialIndex(Protocol):
    """What the pipeline needs of an index: :class:`culling.PointIndex`'s queries, ``query_detailed`` and ``trace``.

    ``ViewDistanceTree``, ``DenseViewDistanceGrid`` and :class:`BruteForceIndex`
    all fit.  (Spelled out with ``ArrayLike`` points: ``culling.PointIndex``
    declares ``point: object``, which the tree's own methods do not accept in
    mypy's eyes.)
    """

    def __len__(self) -> int: ...

    def query(self, point: ArrayLike, exact: bool = False, scale: float = 1.0) -> np.ndarray: ...

    def query_spheres(self, point: ArrayLike, exact: bool = False,
                      scale: float = 1.0) -> tuple[np.ndarray, np.ndarray, np.ndarray]: ...

    def query_detailed(self, point: ArrayLike, scale: float = 1.0, trace: bool = False) -> QueryDetails: ...

    def trace(self, point: ArrayLike, scale: float = 1.0) -> QueryTrace: ...


def _as_scale(scale: object) -> float:
    if isinstance(scale, bool) or not isinstance(scale, Real):
        raise TypeError(f"scale must be a real number, got {type(scale).__name__}")
    value = float(scale)
    if not (np.isfinite(value) and value > 0.0):
        raise ValueError(f"scale must be finite and above 0, got {scale!r}")
    return value


def _as_probe_radius(radius: object) -> float:
    if isinstance(radius, bool) or not isinstance(radius, Real):
        raise TypeError(f"radius must be a real number, got {type(radius).__name__}")
    value = float(radius)
    if not (np.isfinite(value) and value >= 0.0):
        raise ValueError(f"radius must be finite and not negative, got {radius!r}")
    return value


class BruteForceIndex:
    """The baseline the tree replaces: every object is a candidate of every query.

    Satisfies :class:`SpatialIndex`, so the pipeline runs unchanged and tests
    compare pictures made with it and with the tree.  Its handles are ``0 ..
    n-1``; it reads ``centres`` and ``radii`` where they are (no copy), so a
    scene that moves its objects in place moves them here too.  ``query(p)``
    returns every handle; ``exact=True`` is one vectorised test over all
    objects (O(n) per query, the point of a baseline).  Its trace has no
    levels: there is no tree to draw.
    """

    def __init__(self, centres: ArrayLike, radii: ArrayLike, shape: str = "sphere") -> None:
        if shape not in ("sphere", "cube"):
            raise ValueError(f"shape must be 'sphere' or 'cube', got {shape!r}")
        self._centres = np.asarray(centres, dtype=np.float64)
        self._radii = np.asarray(radii, dtype=np.float64)
        if self._centres.ndim != 2 or self._radii.shape != (self._centres.shape[0],):
            raise ValueError(f"need centres (n, dim) and radii (n,), got {self._centres.shape} "
                             f"and {self._radii.shape}")
        self._shape = shape
        self._all = np.arange(self._centres.shape[0], dtype=np.int64)

    def __len__(self) -> int:
        return int(self._all.shape[0])

    def _point(self, point: ArrayLike) -> np.ndarray:
        dim = self._centres.shape[1]
        p = np.asarray(point, dtype=np.float64).reshape(-1)
        if p.shape != (dim,) or not np.isfinite(p).all():
            raise ValueError(f"the query point must be {dim} finite coordinates, got {point!r}")
        return p

    def query(self, point: ArrayLike, exact: bool = False, scale: float = 1.0) -> np.ndarray:
        if exact:
            return self.query_spheres(point, exact, scale)[0]
        _as_scale(scale)
        self._point(point)
        return self._all.copy()

    def query_many(self, points: ArrayLike, exact: bool = False,
                   scale: float = 1.0) -> tuple[np.ndarray, np.ndarray]:
        rows = np.asarray(points, dtype=np.float64).reshape(-1, self._centres.shape[1])
        answers = [self.query(p, exact, scale) for p in rows]
        counts = np.array([a.size for a in answers], dtype=np.int64)
        return (np.concatenate(answers) if answers else np.empty(0, dtype=np.int64)), counts

    def query_spheres(self, point: ArrayLike, exact: bool = False,
                      scale: float = 1.0) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        s = _as_scale(scale)
        p = self._point(point)
        keep = self._all
        if exact:
            off = np.abs(self._centres - p)
            reach = self._radii * s
            if self._shape == "sphere":
                keep = np.flatnonzero(np.einsum("ij,ij->i", off, off) <= reach * reach)
            else:
                keep = np.flatnonzero(off.max(axis=1) <= reach)
        return keep.astype(np.int64), self._centres[keep], self._radii[keep]

    def query_detailed(self, point: ArrayLike, scale: float = 1.0, trace: bool = False) -> QueryDetails:
        found, centres, radii = self.query_spheres(point, exact=True, scale=scale)
        p = self._point(point)
        off = np.abs(centres - p)
        dist = np.sqrt(np.einsum("ij,ij->i", off, off)) if self._shape == "sphere" else off.max(axis=1, initial=0.0)
        return QueryDetails(found, centres, radii.copy(), dist, len(self), self.trace(p, scale) if trace else None)

    def trace(self, point: ArrayLike, scale: float = 1.0) -> QueryTrace:
        _as_scale(scale)
        return QueryTrace(point=self._point(point), candidates=self._all.copy(), levels=[])

    def overlapping(self, centre: ArrayLike, radius: float, exact: bool = False, scale: float = 1.0) -> np.ndarray:
        """Every handle; with ``exact``, those whose sphere (radius times ``scale``) meets the probe
        sphere ``(centre, radius)``: one vectorised test over all objects, O(n)."""
        s, rho = _as_scale(scale), _as_probe_radius(radius)
        p = self._point(centre)
        if not exact:
            return self._all.copy()
        off = np.abs(self._centres - p)
        reach = self._radii * s + rho
        if self._shape == "sphere":
            return np.flatnonzero(np.einsum("ij,ij->i", off, off) <= reach * reach).astype(np.int64)
        return np.flatnonzero(off.max(axis=1) <= reach).astype(np.int64)

    def overlapping_many(self, centres: ArrayLike, radii: ArrayLike, exact: bool = False,
                         scale: float = 1.0) -> tuple[np.ndarray, np.ndarray]:
        """:meth:`overlapping` per probe (``radii`` (m,) or one number): O(m n)."""
        points = np.asarray(centres, dtype=np.float64).reshape(-1, self._centres.shape[1])
        rhos = np.broadcast_to(np.asarray(radii, dtype=np.float64), (points.shape[0],))
        answers = [self.overlapping(p, float(r), exact, scale) for p, r in zip(points, rhos)]
        counts = np.array([a.size for a in answers], dtype=np.int64)
        return (np.concatenate(answers) if answers else np.empty(0, dtype=np.int64)), counts

    def overlapping_pairs(self) -> tuple[np.ndarray, np.ndarray]:
        """Every pair of objects whose spheres meet, ``first < second``: one vectorised test per object, O(n^2)."""
        first, second = [], []
        for i in range(len(self._radii) - 1):
            off = np.abs(self._centres[i + 1:] - self._centres[i])
            reach = self._radii[i + 1:] + self._radii[i]
            if self._shape == "sphere":
                meet = np.einsum("ij,ij->i", off, off) <= reach * reach
            else:
                meet = off.max(axis=1) <= reach
            hits = np.flatnonzero(meet) + i + 1
            first.append(np.full(hits.size, i, dtype=np.int64))
            second.append(hits.astype(np.int64))
        if not first:
            return np.empty(0, dtype=np.int64), np.empty(0, dtype=np.int64)
        return np.concatenate(first), np.concatenate(second)


class CullingPipeline:
    """Walk -> exact distance test -> frustum filter -> instance upload, for one scene.

    Parameters
    ----------
    scene : engine.SceneData
        Read (never copied) for centres, bounding radii, begin distances and
        per-instance looks.
    index : SpatialIndex
        Holds every object's view distance; ``handles[i]`` is object ``i``'s handle.
    handles : ndarray, shape (n,), int64
    shape : {"sphere", "cube"}
        The index's exact test (Euclidean or largest axis): the distances
        that feed the fade and the level of detail use the same metric.
    """

    def __init__(self, scene: SceneData, index: SpatialIndex, handles: ArrayLike, shape: str = "sphere") -> None:
        if shape not in ("sphere", "cube"):
            raise ValueError(f"shape must be 'sphere' or 'cube', got {shape!r}")
        self.scene = scene
        self.index = index
        self.shape = shape
        self.handles = np.asarray(handles, dtype=np.int64)
        n = len(scene)
        if self.handles.shape != (n,):
            raise ValueError(f"need one handle per object ({n}), got shape {self.handles.shape}")
        if np.array_equal(self.handles, np.arange(n)):
            self._object_of: NDArray[np.int64] | None = None    # None: handles are object indices
        else:
            self._object_of = np.full(int(self.handles.max(initial=-1)) + 1, -1, dtype=np.int64)
            self._object_of[self.handles] = np.arange(n)
        self.kind_offsets = scene.kind_offsets
        self._staging = np.zeros((_MIN_CAPACITY, INSTANCE_FLOATS), dtype=np.float32)
        #: Object indices drawn this frame, shape (m,), int64, sorted (so grouped by kind).
        self.visible = np.zeros(0, dtype=np.int64)
        #: The last cull's ``QueryTrace`` when it was asked for one, else None.
        self.trace: QueryTrace | None = None
        # The survivors' centres (m, 3), camera distances (m,), (scaled) view
        # distances (m,) and (scaled) begin distances (m,), from cull() for
        # the records, the fade and the level of detail.
        self._centres = np.zeros((0, 3))
        self._distance = np.zeros(0)
        self._limit = np.zeros(0)
        self._begin_limit = np.zeros(0)
        self.lod = LodSelector([kind.mesh for kind in scene.kinds])

    def objects_of(self, handles: np.ndarray) -> np.ndarray:
        """Object indices of index handles, shape (m,), int64."""
        return handles if self._object_of is None else self._object_of[handles]

    def _staging_rows(self, n: int) -> np.ndarray:
        if n > self._staging.shape[0]:
            cap = max(_MIN_CAPACITY, 1 << (n - 1).bit_length())
            self._staging = np.zeros((cap, INSTANCE_FLOATS), dtype=np.float32)
        return self._staging[:n]

    def cull(self, camera_position: ArrayLike, view_projection: ArrayLike, scale: float = 1.0,
             trace: bool = False) -> FrameStats:
        """Walk, exact distance test and frustum filter for one frame (``on_update``).

        Parameters
        ----------
        camera_position : array_like, shape (3,)
            The query point (the frozen one while culling is frozen).
        view_projection : ndarray, shape (4, 4)
            Column-vector world-to-clip matrix; the frustum planes come from it.
        scale : float
            Global view-distance multiplier, passed to the index's queries.
        trace : bool
            Keep the walk's trace in :attr:`trace` (the debug overlay's boxes
            and table); the walk and the answer are the same either way.

        Returns
        -------
        FrameStats
            Counts and the query, distance and frustum times; ``upload_ms`` and
            ``draw_ms`` are filled in when the frame is drawn.

        Sets :attr:`visible`: object indices, shape (m,), int64, sorted (so
        grouped by kind), and their camera distances (:meth:`distances`).
        Touches no GPU object.  Cost: one call into the index (its walk and
        exact test, O(levels + the tiles near the camera); the trace adds
        O(visited nodes)), then O(in range) NumPy.
        """
        p = np.asarray(camera_position, dtype=np.float64).reshape(3)
        scale = _as_scale(scale)
        scene = self.scene
        stats = FrameStats()

        # 1-2. One walk and the index's exact test: |p - centre| <= scale * view distance,
        # with the answer's centres, view distances and camera distances, the walk's
        # candidate count (the funnel's first number) and, for the overlay, its trace.
        t0 = perf_counter()
        seen = self.index.query_detailed(p, scale=scale, trace=trace)
        self.trace = seen.trace
        stats.candidates = seen.candidates
        t1 = perf_counter()

        # The near end of the visibility range, |p - centre| >= scale * begin distance,
        # on those in range.
        obj = self.objects_of(seen.handles)
        begin = np.take(scene.begin_distance, obj) * scale
        keep = seen.distances >= begin
        obj, centres, dist, begin = obj[keep], seen.centres[keep], seen.distances[keep], begin[keep]
        limit = seen.radii[keep] * scale
        stats.in_range = int(obj.shape[0])
        t2 = perf_counter()

        # 3. Frustum filter on the bounding spheres (not the view-distance spheres),
        # then sort the survivors: sorted object indices fall into per-kind runs.
        planes = frustum_planes(view_projection)
        keep = spheres_in_frustum(planes, centres, np.take(scene.bounding_radius, obj))
        obj = obj[keep]
        order = np.argsort(obj, kind="stable")
        self.visible = obj[order]
        self._centres = centres[keep][order]
        self._distance = dist[keep][order]
        self._limit = limit[keep][order]
        self._begin_limit = begin[keep][order]
        t3 = perf_counter()

        kind_starts = np.searchsorted(self.visible, self.kind_offsets)
        counts = np.diff(kind_starts)
        stats.in_frustum = stats.drawn = int(self.visible.shape[0])
        stats.draw_calls = int(np.count_nonzero(counts))
        stats.kind_counts = counts
        stats.query_ms = (t1 - t0) * 1e3
        stats.distance_ms = (t2 - t1) * 1e3
        stats.frustum_ms = (t3 - t2) * 1e3
        return stats

    def distances(self) -> np.ndarray:
        """Camera distance of each object of :attr:`visible`, shape (m,), float64.

        The exact test's metric, computed once per frame by :meth:`cull`;
        the fade and the level of detail read it.
        """
        return self._distance

    def instances(self, fade: bool = True) -> tuple[np.ndarray, np.ndarray]:
        """The survivors' per-instance records (``on_render``, before the upload).

        Parameters
        ----------
        fade : bool
            Compute the dithered fade over the last
            :data:`engine.records.FADE_FRACTION` of the view distance (and
            the fade-in beyond a begin distance); else every survivor is solid.

        Returns
        -------
        records : ndarray, shape (m, 8), float32
            One row per object of :attr:`visible`, in that order
            (:mod:`engine.records` gives the layout).  A view of a staging
            buffer the next call overwrites: upload it, do not keep it.
        kind_starts : ndarray, shape (kinds + 1,), int64
            Where each kind's run of records starts (the last entry is m).

        Cost: O(m) NumPy over the survivors of the last :meth:`cull`.
        """
        obj = self.visible
        s = self.scene
        inst = build_records(self._centres, np.take(s.bounding_radius, obj), np.take(s.yaw, obj),
                             np.take(s.tint, obj), np.take(s.highlight, obj),
                             out=self._staging_rows(obj.shape[0]))
        if fade and obj.shape[0]:
            inst[:, FADE_COLUMN] = far_fade(self._distance, self._limit) * begin_fade(self._distance,
                                                                                       self._begin_limit)
        kind_starts = np.searchsorted(obj, self.kind_offsets).astype(np.int64)
        return inst, kind_starts

    def instance_groups(self, fade: bool = True, lod: bool = True) -> LodFrame:
        """The survivors' records with each one's level of detail, grouped by (kind, level).

        Parameters
        ----------
        fade : bool
            As :meth:`instances`; with it, adjacent levels also cross-fade
            (dithered) over :data:`engine.records.CROSSFADE_BAND`, else they switch hard.
        lod : bool
            False draws everything at full detail (``--no-lod``).

        Returns
        -------
        engine.lod.LodFrame
            Records (cross-fading instances twice), where each (kind, level)
            run starts, instances per level and the triangles they make.

        Cost: O(m) NumPy over the survivors of the last :meth:`cull`.
        """
        records, _ = self.instances(fade)
        kind = np.searchsorted(self.kind_offsets, self.visible, side="right") - 1
        if not lod:
            return self.lod.select(records, kind, lod=False)
        return self.lod.select(records, kind, self._distance, self._limit, band=CROSSFADE_BAND if fade else 0.0)

    def run(self, camera_position: ArrayLike, view_projection: ArrayLike, scale: float = 1.0, fade: bool = True,
            upload: Callable[[np.ndarray, np.ndarray], None] | None = None, trace: bool = False) -> FrameStats:
        """:meth:`cull`, then :meth:`instances` handed to ``upload``: a whole frame's culling in one call.

        For code without an update/render split (tests, benchmarks, a server).
        ``upload`` is called as ``upload(records, kind_starts)``; ``upload_ms``
        times building the records and that call.
        """
        stats = self.cull(camera_position, view_projection, scale=scale, trace=trace)
        t0 = perf_counter()
        records, kind_starts = self.instances(fade)
        if upload is not None:
            upload(records, kind_starts)
        stats.upload_ms = (perf_counter() - t0) * 1e3
        return stats
