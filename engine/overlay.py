"""Debug overlay: the nodes a query visited, as wireframe boxes coloured by level.

The geometry is built by pure functions from a ``QueryTrace`` (testable
without GL); :class:`OverlayRenderer` only uploads and draws the lines.  While
culling is frozen, the frozen frustum and query point are drawn too.  A
scene's own marks (:func:`marker_lines`: boxes and wireframe spheres with a
colour each, the swarm's interest view) are drawn by the same lines.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
from numpy.typing import ArrayLike, NDArray

from engine.frustum import frustum_corners
from engine.shaders import load_program, uniform

if TYPE_CHECKING:
    import moderngl

    from culling import LevelTrace, QueryTrace
    from engine.scene_protocol import MarkersData

__all__ = ["LEVEL_COLOURS", "SPHERE_SEGMENTS", "LevelBoxes", "OverlayGeometry", "OverlayRenderer", "box_edges",
           "build_overlay", "dashed", "level_colour", "loose_bounds", "marker_lines", "trace_levels", "with_lines"]

#: One colour per tree depth (cycled): root red, then orange, yellow, ...
#: White is kept for the frozen frustum, magenta-pink for the frozen query point.
LEVEL_COLOURS = np.array([
    (1.00, 0.25, 0.25), (1.00, 0.60, 0.15), (1.00, 0.95, 0.20), (0.45, 1.00, 0.30),
    (0.20, 0.95, 0.85), (0.30, 0.60, 1.00), (0.65, 0.40, 1.00), (1.00, 0.40, 0.85),
    (0.95, 0.75, 0.55), (0.60, 0.60, 0.60),
], dtype=np.float32)
FRUSTUM_COLOUR = (1.0, 1.0, 1.0, 1.0)
POINT_COLOUR = (1.0, 0.1, 1.0, 1.0)

#: Segments of each of a marker sphere's three great circles: round at the sizes the demo shows
#: (a 45 m reach seen from 100 m: a segment spans about 6 px at 1280x720).
SPHERE_SEGMENTS = 48

# The 12 edges of a box as pairs of corner indices (corner bit k = axis k high).
_EDGES = np.array([(0, 1), (2, 3), (4, 5), (6, 7), (0, 2), (1, 3), (4, 6), (5, 7),
                   (0, 4), (1, 5), (2, 6), (3, 7)], dtype=np.int64)


def level_colour(depth: int) -> tuple[float, float, float]:
    """RGB in 0..1 for tree depth ``depth`` (0 = root)."""
    r, g, b = (float(c) for c in LEVEL_COLOURS[depth % len(LEVEL_COLOURS)])
    return r, g, b


def box_edges(bounds: ArrayLike) -> NDArray[np.float32]:
    """Line-list vertices of the 12 edges of each box.

    Parameters
    ----------
    bounds : ndarray, shape (k, 2, dim), dim 1..3
        ``[lo, hi]`` per box; missing axes (dim < 3) are drawn flat at 0.

    Returns
    -------
    ndarray, shape (k * 24, 3), float32
    """
    b = np.asarray(bounds, dtype=np.float64)
    k, _, dim = b.shape
    lo = np.zeros((k, 3))
    hi = np.zeros((k, 3))
    lo[:, :dim], hi[:, :dim] = b[:, 0], b[:, 1]
    bits = (np.arange(8)[:, None] >> np.arange(3)[None, :]) & 1          # (8, 3)
    corners = lo[:, None, :] + bits[None, :, :] * (hi - lo)[:, None, :]  # (k, 8, 3)
    return corners[:, _EDGES.ravel(), :].reshape(-1, 3).astype(np.float32)


def loose_bounds(level: LevelTrace) -> NDArray[np.float64]:
    """The grown boxes a query tested at this level (the root's are its own box), (k, 2, dim)."""
    return np.asarray(level.loose_bounds, dtype=np.float64)


@dataclass(frozen=True)
class LevelBoxes:
    """The boxes drawn for one level of a trace."""

    depth: int
    node_size: float
    bounds: np.ndarray          # (k, 2, dim)
    objects: int

    @property
    def nodes(self) -> int:
        return int(self.bounds.shape[0])


def trace_levels(trace: QueryTrace | None, loose: bool = False) -> list[LevelBoxes]:
    """The trace's levels as :class:`LevelBoxes` (loose bounds if asked), root first."""
    if trace is None:
        return []
    return [LevelBoxes(int(lv.depth), float(lv.node_size),
                       loose_bounds(lv) if loose else np.asarray(lv.bounds, dtype=np.float64), int(lv.objects))
            for lv in trace.levels]


@dataclass(frozen=True)
class OverlayGeometry:
    """Line vertices and colours ready to upload, and which levels they hold."""

    vertices: np.ndarray        # (m, 3) float32
    colours: np.ndarray         # (m, 4) float32
    levels: list[LevelBoxes]    # the levels drawn, root first (their lines: deepest first)

    @property
    def box_count(self) -> int:
        return sum(lv.nodes for lv in self.levels)


def build_overlay(trace: QueryTrace | None, loose: bool = False, only_depth: int | None = None,
                  frozen_view_projection: ArrayLike | None = None, frozen_point: ArrayLike | None = None,
                  marker_size: float = 3.0) -> OverlayGeometry:
    """Line geometry for the overlay.

    Parameters
    ----------
    trace : culling.QueryTrace or None
    loose : bool
        Draw the grown boxes the query tested instead of the nodes' own boxes.
    only_depth : int, optional
        Draw a single level (the ``[`` / ``]`` keys).
    frozen_view_projection, frozen_point : optional
        While culling is frozen: the frustum and query point to draw as well.

    Cost: O(nodes visited); a Python loop over levels only.
    """
    levels = [lv for lv in trace_levels(trace, loose) if only_depth is None or lv.depth == only_depth]
    verts, cols = [], []
    for lv in reversed(levels):  # deepest first: a coarser level's few boxes stay visible over the edges they share
        # with their children (drawn root first, every edge a child shared took the child's colour)
        v = box_edges(lv.bounds)
        c = np.empty((v.shape[0], 4), dtype=np.float32)
        c[:, :3] = level_colour(lv.depth)
        c[:, 3] = 1.0
        verts.append(v)
        cols.append(c)
    if frozen_view_projection is not None:
        corners = frustum_corners(frozen_view_projection)
        v = corners[_EDGES.ravel()].astype(np.float32)
        verts.append(v)
        cols.append(np.tile(np.array(FRUSTUM_COLOUR, dtype=np.float32), (v.shape[0], 1)))
    if frozen_point is not None:
        p = np.asarray(frozen_point, dtype=np.float64)
        v = np.repeat(p[None, :], 6, axis=0)
        for axis in range(3):
            v[2 * axis, axis] -= marker_size
            v[2 * axis + 1, axis] += marker_size
        verts.append(v.astype(np.float32))
        cols.append(np.tile(np.array(POINT_COLOUR, dtype=np.float32), (6, 1)))
    if not verts:
        return OverlayGeometry(np.zeros((0, 3), np.float32), np.zeros((0, 4), np.float32), levels)
    return OverlayGeometry(np.concatenate(verts), np.concatenate(cols), levels)


def marker_lines(markers: MarkersData, segments: int = SPHERE_SEGMENTS) -> tuple[NDArray[np.float32],
                                                                                 NDArray[np.float32]]:
    """Line-list vertices and colours of a scene's marks: each box's 12 edges, each sphere's three
    great circles (in the xz, xy and yz planes) of ``segments`` segments.

    Returns
    -------
    vertices : ndarray, shape (k * 24 + j * 6 * segments, 3), float32
    colours : ndarray, same rows, 4 columns, float32

    Cost: O(k + j * segments), vectorised.

    >>> from types import SimpleNamespace
    >>> marks = SimpleNamespace(box_centres=np.zeros((1, 3)), box_half=np.ones(1), box_colours=np.ones((1, 4)),
    ...                         sphere_centres=np.zeros((1, 3)), sphere_radii=np.full(1, 2.0),
    ...                         sphere_colours=np.ones((1, 4)))
    >>> v, c = marker_lines(marks, segments=4)
    >>> v.shape, c.shape, float(abs(v[24:]).max())
    ((48, 3), (48, 4), 2.0)
    """
    centres = np.asarray(markers.box_centres, dtype=np.float64).reshape(-1, 3)
    half = np.asarray(markers.box_half, dtype=np.float64).reshape(-1, 1)
    boxes = box_edges(np.stack([centres - half, centres + half], axis=1))
    box_colours = np.repeat(np.asarray(markers.box_colours, dtype=np.float32).reshape(-1, 4), 24, axis=0)
    spheres = np.asarray(markers.sphere_centres, dtype=np.float64).reshape(-1, 3)
    radii = np.asarray(markers.sphere_radii, dtype=np.float64).reshape(-1)
    t = 2.0 * np.pi * np.arange(segments + 1) / segments
    ring = np.zeros((3, segments + 1, 3))                 # three unit circles: xz, xy, yz planes
    for plane, (a, b) in enumerate(((0, 2), (0, 1), (1, 2))):
        ring[plane, :, a], ring[plane, :, b] = np.cos(t), np.sin(t)
    ends = np.stack([ring[:, :-1], ring[:, 1:]], axis=2).reshape(-1, 3)           # (3 * segments * 2, 3)
    circles = (spheres[:, None, :] + radii[:, None, None] * ends[None, :, :]).reshape(-1, 3)
    sphere_colours = np.repeat(np.asarray(markers.sphere_colours, dtype=np.float32).reshape(-1, 4),
                               ends.shape[0], axis=0)
    return (np.concatenate([boxes, circles.astype(np.float32)]),
            np.concatenate([box_colours, sphere_colours]))


def dashed(vertices: NDArray[np.float32], colours: NDArray[np.float32],
           dashes: int = 1) -> tuple[NDArray[np.float32], NDArray[np.float32]]:
    """Line-list segments as dashed lines: each segment cut into ``2 * dashes`` equal parts, every other
    one kept (``dashes`` dashes a segment, the first at its start).  Marks drawn dashed read apart from
    the solid lines of the same colour (the frozen frustum, the followed player's box).

    >>> v, c = dashed(np.array([[0, 0, 0], [4, 0, 0]], np.float32), np.ones((2, 4), np.float32), dashes=2)
    >>> v[:, 0].tolist(), c.shape
    ([0.0, 1.0, 2.0, 3.0], (4, 4))
    """
    if not vertices.shape[0]:
        return vertices, colours
    start, end = vertices[0::2].astype(np.float64), vertices[1::2].astype(np.float64)
    cuts = np.arange(2 * dashes + 1) / (2 * dashes)                       # 0 .. 1 in 2 * dashes steps
    points = start[:, None, :] + (end - start)[:, None, :] * cuts[None, :, None]   # (segments, cuts, 3)
    ends = np.stack([points[:, 0:-1:2], points[:, 1::2]], axis=2)                  # (segments, dashes, 2, 3)
    colour = np.repeat(colours[0::2], 2 * dashes, axis=0)
    return ends.reshape(-1, 3).astype(np.float32), colour.astype(np.float32)


def with_lines(geometry: OverlayGeometry, vertices: NDArray[np.float32],
               colours: NDArray[np.float32]) -> OverlayGeometry:
    """``geometry`` with more lines after its own (its levels unchanged)."""
    if not vertices.shape[0]:
        return geometry
    return OverlayGeometry(np.concatenate([geometry.vertices, vertices]), np.concatenate([geometry.colours, colours]),
                           geometry.levels)


class OverlayRenderer:
    """Draws :class:`OverlayGeometry` as lines on top of the frame (no depth test)."""

    def __init__(self, ctx: moderngl.Context) -> None:
        self.ctx = ctx
        self.program = load_program(ctx, "lines")
        self.capacity = 4096
        self.buffer = ctx.buffer(reserve=self.capacity * 28, dynamic=True)
        self.vao = ctx.vertex_array(self.program, [(self.buffer, "3f 4f", "in_position", "in_colour")])
        self.count = 0

    def upload(self, geometry: OverlayGeometry) -> None:
        n = geometry.vertices.shape[0]
        if n > self.capacity:
            self.capacity = 1 << (n - 1).bit_length()
            self.buffer.orphan(self.capacity * 28)
        if n:
            data = np.concatenate([geometry.vertices, geometry.colours], axis=1).astype(np.float32)
            self.buffer.write(data)
        self.count = n

    def draw(self, view_projection: ArrayLike, framebuffer: moderngl.Framebuffer) -> None:
        import moderngl

        if not self.count:
            return
        framebuffer.use()
        self.ctx.enable_only(moderngl.BLEND)
        self.ctx.blend_func = moderngl.SRC_ALPHA, moderngl.ONE_MINUS_SRC_ALPHA
        matrix = np.ascontiguousarray(np.asarray(view_projection).T, dtype=np.float32)   # GLSL is column-major
        uniform(self.program, "u_view_projection").write(matrix.tobytes())
        self.vao.render(moderngl.LINES, vertices=self.count)
        self.ctx.enable_only(moderngl.NOTHING)

    def release(self) -> None:
        self.vao.release()
        self.buffer.release()
        self.program.release()
