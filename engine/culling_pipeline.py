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
``0..n-1``).  A game that spawns or destroys objects changes the scene's
arrays and the index, then hands the pipeline the new table
(:meth:`CullingPipeline.set_handles`).
"""

from __future__ import annotations

from collections.abc import Callable
from time import perf_counter
from typing import TYPE_CHECKING

import numpy as np
from numpy.typing import ArrayLike, NDArray

from culling import PointIndex, QueryTrace
from engine.frame_stats import FrameStats
from engine.frustum import frustum_planes, spheres_in_frustum
from engine.lod import LodFrame, LodSelector
from engine.records import CROSSFADE_BAND, FADE_COLUMN, INSTANCE_FLOATS, build_records, far_fade
from engine.visibility_range import begin_fade

if TYPE_CHECKING:
    from engine.scene_protocol import SceneData

__all__ = ["CullingPipeline"]

#: Staging rows grow to the next power of two: amortised O(1), at most 2x memory.
_MIN_CAPACITY = 1024


class CullingPipeline:
    """Walk -> exact distance test -> frustum filter -> instance upload, for one scene.

    Parameters
    ----------
    scene : engine.SceneData
        Read (never copied) for centres, bounding radii, begin distances and
        per-instance looks.
    index : culling.PointIndex
        Holds every object's view distance (a tree, a dense grid, or
        :class:`culling.BruteForceIndex` for ``--brute-force``); ``handles[i]`` is object ``i``'s handle.
    handles : ndarray, shape (n,), int64
    shape : {"sphere", "cube"}
        The index's exact test (Euclidean or largest axis): the distances
        that feed the fade and the level of detail use the same metric.
    """

    def __init__(self, scene: SceneData, index: PointIndex, handles: ArrayLike, shape: str = "sphere") -> None:
        if shape not in ("sphere", "cube"):
            raise ValueError(f"shape must be 'sphere' or 'cube', got {shape!r}")
        self.scene = scene
        self.index = index
        self.shape = shape
        self.set_handles(handles)
        self._staging = np.zeros((_MIN_CAPACITY, INSTANCE_FLOATS), dtype=np.float32)
        #: Object indices drawn this frame, shape (m,), int64, sorted (so grouped by kind).
        self.visible: np.ndarray
        self.in_range = np.zeros(0, dtype=np.int64)
        #: The last cull's ``QueryTrace`` when it was asked for one, else None.
        self.trace: QueryTrace | None = None
        self.forget_frame()
        self._lod: LodSelector | None = None

    def forget_frame(self) -> None:
        """No survivors, as before the first :meth:`cull`: the next :meth:`instances` draws nothing."""
        self.visible = np.zeros(0, dtype=np.int64)
        # The survivors' centres (m, 3), camera distances (m,), (scaled) view
        # distances (m,) and (scaled) begin distances (m,), from cull() for
        # the records, the fade and the level of detail.
        self._centres = np.zeros((0, 3))
        self._distance = np.zeros(0)
        self._limit = np.zeros(0)
        self._begin_limit = np.zeros(0)

    @property
    def lod(self) -> LodSelector:
        """The kinds' levels of detail, made on first use (:meth:`instance_groups`): only that needs each
        kind's ``mesh`` to be one of :mod:`engine.meshes`; :meth:`cull` and :meth:`instances` draw nothing."""
        if self._lod is None:
            self._lod = LodSelector([kind.mesh for kind in self.scene.kinds])
        return self._lod

    def set_handles(self, handles: ArrayLike) -> None:
        """``handles[i]``: object ``i``'s handle in the index, one per row of the scene's arrays.

        Call it again after objects were spawned or destroyed, once the scene's arrays and the index
        agree (new rows, rows gone, handles the index handed out again): the pipeline maps the index's
        answers back to rows through this table, so a stale one reads rows that no longer exist, or
        draws a spawned object with the looks of the destroyed one whose handle it got.  O(n).
        """
        table = np.asarray(handles, dtype=np.int64)
        n = len(self.scene)
        if table.shape != (n,):
            raise ValueError(f"need one handle per object ({n}), got shape {table.shape}")
        if np.array_equal(table, np.arange(n)):
            object_of: NDArray[np.int64] | None = None    # None: handles are object indices
        else:
            if n and table.min() < 0:
                raise ValueError(f"handles must not be negative, got {int(table.min())}")
            object_of = np.full(int(table.max(initial=-1)) + 1, -1, dtype=np.int64)
            object_of[table] = np.arange(n)
            if np.count_nonzero(object_of >= 0) != n:
                raise ValueError("handles must be unique: two objects share one")
        self.handles, self._object_of = table, object_of
        self.kind_offsets = self.scene.kind_offsets

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
            ``draw_ms`` are the drawing code's to fill (:meth:`run` fills ``upload_ms``;
            ``engine.renderer.Renderer.draw`` returns the draw's milliseconds).

        Sets :attr:`visible`: object indices, shape (m,), int64, sorted (so
        grouped by kind), and their camera distances (:meth:`distances`).
        Touches no GPU object.  Cost: one call into the index (its walk and
        exact test, O(levels + candidates), the candidates' 64-row tiles far from the camera
        skipped whole); the trace adds
        O(visited nodes)), then O(in range) NumPy.
        """
        p = np.asarray(camera_position, dtype=np.float64).reshape(3)
        scene = self.scene
        stats = FrameStats()

        # 1-2. One walk and the index's exact test: |p - centre| <= scale * view distance,
        # with the answer's centres, view distances and camera distances, the walk's
        # candidate count (the funnel's first number) and, for the overlay, its trace.
        t0 = perf_counter()
        seen = self.index.query_detailed(p, scale=scale, trace=trace)    # checks scale (PointIndex)
        scale = float(scale)
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
        self.in_range = obj          # the objects in range this frame, unsorted (the X key's exact verdict)
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
