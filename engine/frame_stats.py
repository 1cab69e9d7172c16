"""What one frame's culling did: the funnel counts and the per-stage times, for the HUD and ``--stats``.

:meth:`engine.culling_pipeline.CullingPipeline.cull` fills the counts and the
query, distance and frustum times; the renderer adds the upload and draw
times once the frame is drawn.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

__all__ = ["FrameStats"]


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
    scene_ms: float = 0.0
    triangles: int = 0
    kind_counts: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    #: Instances drawn at each level of detail (a cross-fading one counts at both).
    level_counts: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))

    @property
    def cull_ms(self) -> float:
        """Query + filters + instance upload: the budget the demo is measured on."""
        return self.query_ms + self.distance_ms + self.frustum_ms + self.upload_ms

    #: ``query_ms`` is the index's one call (walk, exact test, distances, and the
    #: trace with the overlay); ``distance_ms`` the begin-distance test; ``trace_ms`` the lines over the scene (the
    #: overlay's boxes, the map inset, the X pick's and the interest view's marks, built and uploaded); ``scene_ms`` the scene's own work before culling (its simulation and its
    #: batches: the swarm's sensing, separation pairs and interest tick) and the tree's ``update_many``
    #: of what moved: with ``cull_ms`` and ``draw_ms``, where a moving scene's frame goes.
    CSV_FIELDS = ("query_ms", "distance_ms", "frustum_ms", "upload_ms", "cull_ms", "draw_ms", "trace_ms",
                  "candidates", "in_range", "in_frustum", "drawn", "triangles", "scene_ms")

    def csv_row(self) -> list[float | int]:
        return [getattr(self, name) for name in self.CSV_FIELDS]
