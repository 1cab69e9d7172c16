"""The map inset drawn with GL: :class:`MapRenderer` and :class:`MapInset` (see :mod:`engine.map_geometry`).

:class:`MapRenderer` draws a :class:`~engine.map_geometry.MapGeometry` with the
overlay's line program through the orthographic matrix
(:func:`~engine.map_geometry.map_matrix`) into a viewport in the frame's corner
(:func:`~engine.map_geometry.inset_rect`); :class:`MapInset` builds the
frame's geometry from its trace and uploads it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from engine.map_geometry import MAP_RADIUS, MapGeometry, build_map, inset_rect, map_matrix
from engine.shaders import load_program, uniform

if TYPE_CHECKING:
    from culling import ViewDistanceTree

__all__ = ["MapInset", "MapRenderer"]


class MapRenderer:
    """Draws :class:`MapGeometry` into the inset's viewport (no depth test, alpha blended)."""

    #: Pixel size of the object dots.
    DOT_SIZE = 1.5

    def __init__(self, ctx: Any) -> None:
        self.ctx = ctx
        self.program = load_program(ctx, "lines")
        self.capacity = 4096
        self.buffer = ctx.buffer(reserve=self.capacity * 28, dynamic=True)
        self.vao = ctx.vertex_array(self.program, [(self.buffer, "3f 4f", "in_position", "in_colour")])
        self.ranges = (0, 0, 0)
        self.geometry: MapGeometry | None = None

    def upload(self, geometry: MapGeometry) -> None:
        """One buffer: triangles, then lines, then points.  O(vertices)."""
        parts = [(geometry.triangles, geometry.triangle_colours), (geometry.lines, geometry.line_colours),
                 (geometry.points, geometry.point_colours)]
        n = sum(p[0].shape[0] for p in parts)
        if n > self.capacity:
            self.capacity = 1 << (n - 1).bit_length()
            self.buffer.orphan(self.capacity * 28)
        data = np.concatenate([np.concatenate([v, c], axis=1) for v, c in parts]).astype(np.float32)
        if n:
            self.buffer.write(data)
        self.ranges = tuple(p[0].shape[0] for p in parts)
        self.geometry = geometry

    def draw(self, framebuffer: Any, size: tuple[int, int]) -> None:
        import moderngl

        g = self.geometry
        if g is None:
            return
        framebuffer.use()
        old_viewport = self.ctx.viewport
        x, y, w, h = inset_rect(size)
        self.ctx.viewport = (x, y, w, h)
        self.ctx.scissor = (x, y, w, h)
        self.ctx.enable_only(moderngl.BLEND)
        self.ctx.blend_func = moderngl.SRC_ALPHA, moderngl.ONE_MINUS_SRC_ALPHA
        self.ctx.point_size = self.DOT_SIZE
        matrix = np.ascontiguousarray(map_matrix(g.centre, g.radius).T, dtype=np.float32)
        uniform(self.program, "u_view_projection").write(matrix.tobytes())
        tri, line, point = self.ranges
        if tri:
            self.vao.render(moderngl.TRIANGLES, vertices=tri, first=0)
        if line:
            self.vao.render(moderngl.LINES, vertices=line, first=tri)
        if point:
            self.vao.render(moderngl.POINTS, vertices=point, first=tri + line)
        self.ctx.scissor = None
        self.ctx.viewport = old_viewport
        self.ctx.enable_only(moderngl.NOTHING)

    def release(self) -> None:
        self.vao.release()
        self.buffer.release()
        self.program.release()


class MapInset:
    """The map as a frame sees it: build from the frame's trace, draw in the corner.

    ``update`` runs with the culling (it only builds arrays and uploads them);
    ``draw`` in the render pass.  The index's ``node_boxes`` (the tree's, when
    it has one) supplies the faint unvisited nodes around the camera.
    """

    def __init__(self, ctx: Any) -> None:
        self.renderer = MapRenderer(ctx)
        self.geometry: MapGeometry | None = None

    def update(self, trace: Any, camera: Any, query_point: Any, visible_centres: np.ndarray | None,
               index: ViewDistanceTree | None = None, scale: float = 1.0, only_depth: int | None = None,
               size: tuple[int, int] | None = None, viewer: Any = None) -> MapGeometry:
        """Build and upload this frame's map; O(visited + nearby nodes + visible)."""
        radius = MAP_RADIUS * scale
        context = None
        if index is not None:
            p = np.asarray(camera.position if query_point is None else query_point, dtype=np.float64)
            lo, hi = index.root_bounds
            lo, hi = np.array(lo, dtype=np.float64), np.array(hi, dtype=np.float64)
            if lo.shape[0] == 3:
                lo[[0, 2]] = p[[0, 2]] - radius
                hi[[0, 2]] = p[[0, 2]] + radius
                context = index.node_boxes(lo, hi)
        side = inset_rect(size)[2] if size is not None else None
        self.geometry = build_map(trace, camera, query_point, visible_centres, context, radius, only_depth,
                                  pixel=None if side is None else 2.0 * radius / side, viewer=viewer)
        self.renderer.upload(self.geometry)
        return self.geometry

    def draw(self, framebuffer: Any, size: tuple[int, int]) -> None:
        self.renderer.draw(framebuffer, size)

    def release(self) -> None:
        self.renderer.release()
