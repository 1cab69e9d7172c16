"""The per-frame culling stages, in order: query, distance filter, frustum filter, instances.

This is the part of the frame loop an engine programmer copies.  It is cut in
two at the place a game loop is cut:

* :meth:`CullingPipeline.cull` (``on_update``): query -> distance filter ->
  frustum filter.  It produces the visible object indices
  (:attr:`CullingPipeline.visible`) and the frame's statistics and touches no
  GPU object;
* :meth:`CullingPipeline.instances` (``on_render``): the survivors' per-instance
  records, fade included, grouped by kind, ready for one upload and one
  instanced draw per kind; :meth:`CullingPipeline.instance_groups` adds each
  instance's level of detail (:mod:`engine.lod`) from the same distances and
  groups them by (kind, level), one instanced draw per pair.

An object can also have a *begin distance* (``scene.begin_distance``): it is
visible only from at least that far, the near end of its visibility range
(:mod:`engine.visibility_range`).  The tree stores only the view distance;
the begin test is one more comparison in the distance filter, on the
candidates, and only in scenes that use it.

Each stage is timed; between stages only NumPy over the *candidates* runs,
never a Python loop and never work over all objects (the tree's query is what
keeps the candidate count following what is near the camera, not the world's
size).

Object indices (rows of the scene's arrays) and tree handles are kept apart:
``handles[i]`` is object ``i``'s handle, and a handle-to-object table maps
query results back (the identity, skipped, when the tree handed out
``0..n-1``).
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from dataclasses import dataclass, field
from time import perf_counter
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np
from numpy.typing import ArrayLike, NDArray

from culling.core.containment import contains_exact
from culling.core.validation import as_point, as_points, as_probe_radii, as_radius, as_scale
from engine.frustum import frustum_planes, spheres_in_frustum
from engine.visibility_range import begin_fade

if TYPE_CHECKING:
    from engine.lod import LodFrame
    from engine.scene_protocol import SceneData

__all__ = ["BruteForceIndex", "CullingPipeline", "EXACT_QUERY", "FADE_FRACTION", "FrameStats", "INSTANCE_FLOATS",
           "SpatialIndex"]

#: Objects dither out over the last 15 % of their view distance: long enough to
#: hide the pop at walking speed, short enough that they are solid most of the time.
FADE_FRACTION = 0.15

#: Per-instance record, two vec4s of float32 (32 bytes), what the object shader reads:
#: ``in_instance = (centre x, y, z, scale)``, ``in_params = (yaw, tint, fade, highlight)``.
INSTANCE_FLOATS = 8

#: Use the tree's exact query (``query_spheres(p, exact=True)``: centres and radii
#: read from contiguous node runs, only the runs' tiles near the camera tested)
#: instead of query + a gather by handle + our own distance test, when no trace
#: is wanted (``--no-overlay``).  Measured in one run on the 1M forest, 60
#: frames of its path, medians: query + distance 1.34 ms our way, 0.33 ms the
#: tree's way; culling with frustum and upload 2.34 ms against 1.28 ms, the
#: same objects drawn.  The funnel's first number is then the in-range count
#: (the tree does not report the candidates it skipped).  With a trace (the
#: overlay) the candidates come from the walk and our distance test runs.
EXACT_QUERY = True

#: Staging rows grow to the next power of two: amortised O(1), at most 2x memory.
_MIN_CAPACITY = 1024


@dataclass
class FrameStats:
    """What one frame's culling did: the funnel counts and per-stage times (ms)."""

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

    #: ``trace_ms`` is the debug overlay's own cost (its boxes built and uploaded);
    #: the trace itself comes from the query's traversal and is inside ``query_ms``.
    CSV_FIELDS = ("query_ms", "distance_ms", "frustum_ms", "upload_ms", "cull_ms", "draw_ms", "trace_ms",
                  "candidates", "in_range", "in_frustum", "drawn", "triangles")

    def csv_row(self) -> list[float | int]:
        return [getattr(self, name) for name in self.CSV_FIELDS]


class SpatialIndex(Protocol):
    """What the pipeline needs of an index: a point query returning handles.

    ``ViewDistanceTree``, ``DenseViewDistanceGrid`` and :class:`BruteForceIndex`
    all fit.  ``scale`` is passed only when the query accepts it; ``trace(p)``
    and ``query_spheres(p, exact=True)`` are used when the index has them.
    """

    def query(self, point: Any, exact: bool = False, scale: float = 1.0) -> NDArray[np.int64]: ...


class BruteForceIndex:
    """The baseline the tree replaces: every object is a candidate of every query.

    Satisfies :class:`culling.PointIndex`, so the pipeline runs unchanged and
    tests compare pictures made with it and with the tree.  Built from a
    count alone (``BruteForceIndex(n)``), its handles are ``0 .. n-1`` and it
    knows no spheres: the plain query returns them all, and the exact query
    and :meth:`query_spheres` need ``centres`` and ``radii`` (a ``ValueError``
    otherwise).  With them, ``exact=True`` is one vectorised exact test over
    all objects (O(n) per query, the point of a baseline).
    """

    def __init__(self, n: int, centres: ArrayLike | None = None, radii: ArrayLike | None = None,
                 shape: str = "sphere") -> None:
        self._all = np.arange(n, dtype=np.int64)
        self._shape = shape
        self._centres: np.ndarray | None = None
        self._radii: np.ndarray | None = None
        if centres is not None or radii is not None:
            points = np.asarray(centres, dtype=np.float64)
            points = points.reshape(n, -1) if points.ndim < 2 else points
            reach = np.asarray(radii, dtype=np.float64)
            if points.shape[0] != n or reach.shape != (n,):
                raise ValueError(f"need centres (n, dim) and radii (n,) for n = {n} objects")
            self._centres, self._radii = points.copy(), reach.copy()

    trace = None        # no tree, no trace: the overlay shows nothing

    @property
    def knows_spheres(self) -> bool:
        """Whether it was given centres and radii (so exact queries and ``query_spheres`` work)."""
        return self._centres is not None

    def __len__(self) -> int:
        return int(self._all.shape[0])

    def query(self, point: ArrayLike, exact: bool = False, scale: float = 1.0) -> np.ndarray:
        if exact:
            return self.query_spheres(point, exact, scale)[0]
        as_scale(scale)
        return self._all.copy()

    def query_many(self, points: ArrayLike, exact: bool = False,
                   scale: float = 1.0) -> tuple[np.ndarray, np.ndarray]:
        dim = 1 if self._centres is None else self._centres.shape[1]
        rows = np.asarray(points, dtype=np.float64).reshape(-1, dim)
        answers = [self.query(p, exact, scale) for p in rows]
        counts = np.array([a.size for a in answers], dtype=np.int64)
        return (np.concatenate(answers) if answers else np.empty(0, dtype=np.int64)), counts

    def query_spheres(self, point: ArrayLike, exact: bool = False,
                      scale: float = 1.0) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        if self._centres is None or self._radii is None:
            raise ValueError("this BruteForceIndex was built from a count: pass centres and radii "
                             "for exact queries and query_spheres")
        scale = as_scale(scale)
        p = as_point(point, self._centres.shape[1]).tolist()
        keep = self._all
        if exact:
            axes = [self._centres[:, axis] for axis in range(self._centres.shape[1])]
            keep = np.flatnonzero(contains_exact(axes, p, self._radii, self._shape, scale))
        return keep.astype(np.int64), self._centres[keep], self._radii[keep]

    def _spheres(self) -> tuple[np.ndarray, np.ndarray]:
        if self._centres is None or self._radii is None:
            raise ValueError("this BruteForceIndex was built from a count: pass centres and radii "
                             "for sphere probes and pairs")
        return self._centres, self._radii

    def overlapping(self, centre: ArrayLike, radius: float, exact: bool = False, scale: float = 1.0) -> np.ndarray:
        """Every object (or, ``exact``, those meeting the probe sphere): O(n), one vectorised exact test."""
        rho, scale = as_radius(radius), as_scale(scale)
        if not exact:
            return self._all.copy()
        centres, radii = self._spheres()
        p = as_point(centre, centres.shape[1], "centre").tolist()
        axes = [centres[:, axis] for axis in range(centres.shape[1])]
        return np.flatnonzero(contains_exact(axes, p, radii, self._shape, scale, grow=rho)).astype(np.int64)

    def overlapping_many(self, centres: ArrayLike, radii: ArrayLike, exact: bool = False,
                         scale: float = 1.0) -> tuple[np.ndarray, np.ndarray]:
        """:meth:`overlapping` per probe: O(m n)."""
        dim = 1 if self._centres is None else self._centres.shape[1]
        points = as_points(centres, dim, "centres")
        grows = as_probe_radii(radii, points.shape[0])
        answers = [self.overlapping(p, g, exact, scale) for p, g in zip(points, grows.tolist())]
        counts = np.array([a.size for a in answers], dtype=np.int64)
        return (np.concatenate(answers) if answers else np.empty(0, dtype=np.int64)), counts

    def overlapping_pairs(self) -> tuple[np.ndarray, np.ndarray]:
        """Every pair of objects whose spheres meet, ``first < second``: one exact test per object, O(n^2)."""
        centres, radii = self._spheres()
        axes = [centres[:, axis] for axis in range(centres.shape[1])]
        first, second = [], []
        for i in range(len(radii) - 1):
            rest = [a[i + 1:] for a in axes]
            meet = np.flatnonzero(contains_exact(rest, centres[i].tolist(), radii[i + 1:], self._shape,
                                                 grow=float(radii[i]))) + i + 1
            first.append(np.full(meet.size, i, dtype=np.int64))
            second.append(meet.astype(np.int64))
        if not first:
            return np.empty(0, dtype=np.int64), np.empty(0, dtype=np.int64)
        return np.concatenate(first), np.concatenate(second)


def _accepts_scale(index: SpatialIndex) -> bool:
    try:
        return "scale" in inspect.signature(index.query).parameters
    except (TypeError, ValueError):
        return False


class CullingPipeline:
    """Query -> distance filter -> frustum filter -> instance upload, for one scene.

    Parameters
    ----------
    scene : scenes.Scene
        Read for centres, view distances, bounding radii and per-instance looks.
    index : ViewDistanceTree or BruteForceIndex
        Holds every object's view distance; ``handles[i]`` is object ``i``'s handle.
    handles : ndarray, shape (n,), int64
    shape : {"sphere", "cube"}
        The exact distance test, matching the tree's: Euclidean or largest-axis.
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
        self.supports_scale = _accepts_scale(index)
        self.kind_offsets = scene.kind_offsets
        # Per-axis columns: np.take on a 1-d column is several times faster than
        # fancy-indexing rows of an (n, 3) array (measured: 0.26 ms vs 1.9 ms
        # for the 110k candidates of the 1M forest).
        self._xyz = tuple(np.zeros(n) for _ in range(3))
        self._view = np.zeros(n)
        self._radius = np.zeros(n)
        self._begin = np.zeros(n)
        self.records = np.zeros((n, INSTANCE_FLOATS), dtype=np.float32)
        self.has_begin = False          # any begin distance above 0 (refresh keeps it)
        self.refresh()
        self._staging = np.zeros((_MIN_CAPACITY, INSTANCE_FLOATS), dtype=np.float32)
        self.exact_query = (EXACT_QUERY and callable(getattr(index, "query_spheres", None))
                            and getattr(index, "knows_spheres", True))
        self.visible = np.zeros(0, dtype=np.int64)
        #: The last cull's ``QueryTrace`` when it was asked for one, else None.
        self.trace: Any = None
        # The survivors' centres (m, 3), (scaled) view distances (m,) and
        # (scaled) begin distances (m,), kept by cull() for the fade and the
        # level of detail that instances() computes.
        self._point = np.zeros(3)
        self._centres = np.zeros((0, 3))
        self._limit = np.zeros(0)
        self._begin_limit: np.ndarray | None = None
        self._dist_cache: tuple[np.ndarray, np.ndarray] | None = None
        from engine.lod import LodSelector  # engine.lod reads FADE_FRACTION from here

        self.lod = LodSelector([kind.mesh for kind in scene.kinds])

    def refresh(self, objects: ArrayLike | None = None) -> None:
        """Re-read ``objects`` (all when None) from the scene after it moved them.

        Updates the per-axis coordinate columns the filters gather from and
        the static instance records; O(len(objects)).
        """
        s = self.scene
        rows = slice(None) if objects is None else np.asarray(objects, dtype=np.int64)
        for axis, column in enumerate(self._xyz):
            column[rows] = s.centres[rows, axis]
        self._view[rows] = s.view_distance[rows]
        self._radius[rows] = s.bounding_radius[rows]
        self._begin[rows] = s.begin_distance[rows]
        some = bool(np.any(self._begin[rows] > 0.0))
        self.has_begin = some if objects is None else (self.has_begin or some)
        rec = self.records
        rec[rows, 0:3] = s.centres[rows]
        rec[rows, 3] = s.bounding_radius[rows]
        rec[rows, 4] = s.yaw[rows]
        rec[rows, 5] = s.tint[rows]
        rec[rows, 6] = 1.0
        rec[rows, 7] = s.highlight[rows]

    def objects_of(self, handles: np.ndarray) -> np.ndarray:
        """Object indices of tree handles, shape (m,), int64."""
        return handles if self._object_of is None else self._object_of[handles]

    def _staging_rows(self, n: int) -> np.ndarray:
        if n > self._staging.shape[0]:
            cap = max(_MIN_CAPACITY, 1 << (n - 1).bit_length())
            self._staging = np.zeros((cap, INSTANCE_FLOATS), dtype=np.float32)
        return self._staging[:n]

    def cull(self, camera_position: ArrayLike, view_projection: ArrayLike, scale: float = 1.0,
             trace: bool = False) -> FrameStats:
        """Query, distance filter and frustum filter for one frame (``on_update``).

        Parameters
        ----------
        camera_position : array_like, shape (3,)
            The query point (the frozen one while culling is frozen).
        view_projection : ndarray, shape (4, 4)
            Column-vector world-to-clip matrix; the frustum planes come from it.
        scale : float
            Global view-distance multiplier (used only if the index supports it).
        trace : bool
            Also keep what the query visited, level by level, in :attr:`trace`
            (for the debug overlay): the query is then ``index.trace(p)``,
            whose ``candidates`` are the query's answer, so the tree is walked
            once either way.

        Returns
        -------
        FrameStats
            Counts and the query, distance and frustum times; ``upload_ms`` and
            ``draw_ms`` are filled in when the frame is drawn.

        Sets :attr:`visible`: object indices, shape (m,), int64, sorted (so
        grouped by kind).  Touches no GPU object.  Cost: the tree query, then
        O(candidates) NumPy.
        """
        p = np.asarray(camera_position, dtype=np.float64).reshape(3)
        scale = float(scale) if self.supports_scale else 1.0
        scaled: dict[str, Any] = {} if scale == 1.0 else {"scale": scale}   # only to queries that take it
        stats = FrameStats()
        tracer = getattr(self.index, "trace", None) if trace else None
        query_spheres = getattr(self.index, "query_spheres", None) if self.exact_query else None

        t0 = perf_counter()
        if tracer is None and query_spheres is not None:
            # 1+2. Query and exact distance test in one call: centres and radii
            # come from the tree's own contiguous runs, not a gather by handle.
            found, centres, limit = query_spheres(p, exact=True, **scaled)
            obj = self.objects_of(np.asarray(found, dtype=np.int64))
            stats.candidates = stats.in_range = int(obj.shape[0])
            if scale != 1.0:
                limit = limit * scale
            t1 = perf_counter()
            if self.has_begin:
                # The near end: keep |camera - centre| >= scale * begin distance.
                off = centres - p
                dist = np.sqrt(np.einsum("ij,ij->i", off, off)) if self.shape == "sphere" \
                    else np.max(np.abs(off), axis=1)
                keep = dist >= np.take(self._begin, obj) * scale
                obj, limit, centres = obj[keep], limit[keep], centres[keep]
                stats.in_range = int(obj.shape[0])
            t2 = perf_counter()
            self.trace = None
        else:
            # 1. Query: objects whose (scaled) view distance might reach the camera.
            if tracer is not None:
                self.trace = tracer(p, **scaled)
                found = self.trace.candidates
            else:
                self.trace = None
                found = self.index.query(p, **scaled)
            obj = self.objects_of(np.asarray(found, dtype=np.int64))
            stats.candidates = int(obj.shape[0])
            t1 = perf_counter()

            # 2. Distance filter: keep |camera - centre| <= scale * view_distance (exact).
            x, y, z = (np.take(column, obj) for column in self._xyz)
            x -= p[0]
            y -= p[1]
            z -= p[2]
            limit = np.take(self._view, obj)
            if scale != 1.0:
                limit *= scale
            if self.shape == "sphere":
                d2 = x * x
                d2 += y * y
                d2 += z * z
                keep = d2 <= limit * limit
                if self.has_begin:
                    near = np.take(self._begin, obj) * scale
                    keep &= d2 >= near * near
            else:
                dist = np.maximum(np.maximum(np.abs(x), np.abs(y)), np.abs(z))
                keep = dist <= limit
                if self.has_begin:
                    keep &= dist >= np.take(self._begin, obj) * scale
            obj, limit = obj[keep], limit[keep]
            centres = None
            stats.in_range = int(obj.shape[0])
            t2 = perf_counter()

        # 3. Frustum filter on the bounding spheres (not the view-distance spheres),
        # then sort the survivors: sorted object indices fall into per-kind runs.
        planes = frustum_planes(view_projection)
        if centres is None:
            centres = np.stack([np.take(column, obj) for column in self._xyz], axis=1)
        keep = spheres_in_frustum(planes, centres, np.take(self._radius, obj))
        obj, limit, centres = obj[keep], limit[keep], centres[keep]
        order = np.argsort(obj, kind="stable")
        self.visible = obj[order]
        self._centres, self._limit, self._point = centres[order], limit[order], p
        self._begin_limit = np.take(self._begin, self.visible) * scale if self.has_begin else None
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

    def instances(self, fade: bool = True) -> tuple[np.ndarray, np.ndarray]:
        """The survivors' per-instance records (``on_render``, before the upload).

        Parameters
        ----------
        fade : bool
            Compute the dithered fade over the last :data:`FADE_FRACTION` of the
            view distance (else every survivor is drawn solid).

        Returns
        -------
        records : ndarray, shape (m, 8), float32
            One row per object of :attr:`visible`, in that order (see
            :data:`INSTANCE_FLOATS` for the layout).  A view of a staging
            buffer the next call overwrites: upload it, do not keep it.
        kind_starts : ndarray, shape (kinds + 1,), int64
            Where each kind's run of records starts (the last entry is m).

        Cost: O(m) NumPy over the survivors of the last :meth:`cull`.
        """
        obj = self.visible
        inst = self._staging_rows(obj.shape[0])
        np.take(self.records, obj, axis=0, out=inst)
        if fade and obj.shape[0]:
            dist, lim = self.distances(), self._limit
            band = np.maximum(lim * FADE_FRACTION, 1e-9)
            inst[:, 6] = np.clip((lim - dist) / band, 0.0, 1.0)
            if self._begin_limit is not None:
                inst[:, 6] *= begin_fade(dist, self._begin_limit)
        kind_starts = np.searchsorted(obj, self.kind_offsets).astype(np.int64)
        return inst, kind_starts

    def distances(self) -> np.ndarray:
        """Camera distance of each object of :attr:`visible` (the exact test's metric), shape (m,), float64.

        O(m); computed once per frame and shared by the fade and the level of detail.
        """
        if self._dist_cache is not None and self._dist_cache[0] is self._centres:
            return self._dist_cache[1]
        off = self._centres - self._point
        if self.shape == "sphere":
            dist: np.ndarray = np.sqrt(np.einsum("ij,ij->i", off, off))
        else:
            dist = np.max(np.abs(off), axis=1) if off.shape[0] else np.zeros(0)
        self._dist_cache = (self._centres, dist)
        return dist

    def instance_groups(self, fade: bool = True, lod: bool = True) -> LodFrame:
        """The survivors' records with each one's level of detail, grouped by (kind, level).

        Parameters
        ----------
        fade : bool
            As :meth:`instances`; with it, adjacent levels also cross-fade
            (dithered) over :data:`engine.lod.CROSSFADE_BAND`, else they switch hard.
        lod : bool
            False draws everything at full detail (``--no-lod``).

        Returns
        -------
        engine.lod.LodFrame
            Records (cross-fading instances twice), where each (kind, level)
            run starts, instances per level and the triangles they make.

        Cost: O(m) NumPy over the survivors of the last :meth:`cull`.
        """
        from engine.lod import CROSSFADE_BAND

        records, _ = self.instances(fade)
        kind = np.searchsorted(self.kind_offsets, self.visible, side="right") - 1
        if not lod:
            return self.lod.select(records, kind, lod=False)
        return self.lod.select(records, kind, self.distances(), self._limit, band=CROSSFADE_BAND if fade else 0.0)

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
