"""The map inset's geometry: the tree seen from above, around the camera, as plain arrays.

A top-down plan (north, world -z, up) in a square in the frame's corner:

* the tree's nodes near the camera, outlined faintly in their level's colour
  (the overlay's colours, :data:`engine.overlay.LEVEL_COLOURS`);
* the nodes the frame's query visited, filled and outlined brightly: exactly
  the boxes of its :class:`culling.QueryTrace`, nothing else;
* the visible objects as dots, the camera with its frustum wedge, the query
  point (the frozen one while culling is frozen) and a scale bar.

What the map answers is where the query looked: the visited nodes around the
camera, level by level, and which of their objects were drawn.  (It does not
say why one object popped in late: an object comes into range only inside its
node's grown box, so its node is always visited by then; its reach, and the
scale, decide it.  The X key's explanation says that, object by object.)

Everything here is NumPy, testable without GL: :func:`build_map` builds the
geometry in world coordinates ``(x, 0, z)``, :func:`map_matrix` is the
orthographic matrix into the inset, :func:`inset_rect` its viewport in the
corner and :func:`label_position` where the scale bar's label goes.
:mod:`engine.map` draws it with GL; :mod:`engine.map_label` writes the label
on headless frames with Pillow (the window draws it with pyglet).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from engine.overlay import level_colour

__all__ = ["LEVEL_OUTLINE_ALPHA", "MAP_FRACTION", "MAP_RADIUS", "MapGeometry", "build_map", "inset_corner",
           "inset_rect", "label_font_size", "label_position", "map_matrix", "scale_bar_length"]

#: The inset's side is 38 % of the frame's shorter side: big enough to read
#: node boxes, small enough to leave the view and the HUD (top left) free.
MAP_FRACTION = 0.38
#: Pixels between the inset and the frame's bottom-right corner.
MAP_MARGIN = 10
#: The map shows 500 m around the camera (times the query's scale): the
#: forest's grass and bush nodes (80-320 m) read as boxes, its tree nodes
#: (1.4-2.8 km) as the edges crossing the map.
MAP_RADIUS = 500.0

PANEL_COLOUR = (0.05, 0.06, 0.08, 0.82)
CONTEXT_ALPHA = 0.2           # outlines of nodes the query did not visit: context, not content
LEVEL_OUTLINE_ALPHA = 1.0     # outlines of the visited nodes: exactly the overlay colours
VISITED_FILL_ALPHA = 0.12      # nested visited nodes stack: deeper reads brighter
DOT_COLOUR = (0.92, 0.92, 0.86, 0.55)   # many thousands: faint, so the boxes still read
CAMERA_COLOUR = (1.0, 1.0, 1.0, 1.0)
WEDGE_COLOUR = (1.0, 1.0, 1.0, 0.85)
POINT_COLOUR = (1.0, 0.1, 1.0, 1.0)
BAR_COLOUR = (1.0, 1.0, 1.0, 1.0)


@dataclass(frozen=True)
class MapGeometry:
    """What the inset draws, in world coordinates ``(x, 0, z)``, float32.

    Attributes
    ----------
    triangles, triangle_colours : ndarray, shape (3t, 3) and (3t, 4)
    lines, line_colours : ndarray, shape (2l, 3) and (2l, 4)
    points, point_colours : ndarray, shape (p, 3) and (p, 4)
    visited_depths : ndarray, shape (k,), int64
        Depth of each visited node drawn (as the trace's levels).
    visited_bounds : ndarray, shape (k, 2, 2), float64
        Its plan-view ``[lo, hi]`` in ``(x, z)``: the trace's boxes, in
        order (those of ``only_depth`` when given).
    context_nodes : int
        Unvisited nodes outlined.
    centre : ndarray, shape (2,), float64
        The map's centre ``(x, z)`` (the camera).
    radius : float
        Metres from the centre to the inset's edges.
    bar_metres : float
        Length of the scale bar.
    """

    triangles: np.ndarray
    triangle_colours: np.ndarray
    lines: np.ndarray
    line_colours: np.ndarray
    points: np.ndarray
    point_colours: np.ndarray
    visited_depths: np.ndarray
    visited_bounds: np.ndarray
    context_nodes: int
    centre: np.ndarray
    radius: float
    bar_metres: float

    @property
    def label(self) -> str:
        m = self.bar_metres
        return f"{m / 1000:g} km" if m >= 1000 else f"{m:g} m"


def scale_bar_length(radius: float) -> float:
    """The longest 1, 2 or 5 x 10^k metres not above ``radius / 2``.

    >>> scale_bar_length(500.0), scale_bar_length(90.0)
    (200.0, 20.0)
    """
    target = max(radius / 2.0, 1e-9)
    power = 10.0 ** math.floor(math.log10(target))
    for step in (5.0, 2.0, 1.0):
        if step * power <= target:
            return step * power
    return power


def _plan(bounds: np.ndarray) -> np.ndarray:
    """``(k, 2, dim)`` boxes -> ``(k, 2, 2)`` plan-view ``(x, z)`` boxes (dim 2: x, y as x, z)."""
    b = np.asarray(bounds, dtype=np.float64)
    axes = [0, 2] if b.shape[2] == 3 else [0, min(1, b.shape[2] - 1)]
    return b[:, :, axes]


def _xz(points2: np.ndarray) -> np.ndarray:
    out = np.zeros((points2.shape[0], 3), dtype=np.float32)
    out[:, 0], out[:, 2] = points2[:, 0], points2[:, 1]
    return out


def _rect_lines(boxes: np.ndarray) -> np.ndarray:
    """Four edges per plan box: ``(k * 8, 3)`` line-list vertices."""
    lo, hi = boxes[:, 0], boxes[:, 1]
    c = np.stack([lo, np.stack([hi[:, 0], lo[:, 1]], 1), hi, np.stack([lo[:, 0], hi[:, 1]], 1)], axis=1)
    seg = c[:, [0, 1, 1, 2, 2, 3, 3, 0]]
    return _xz(seg.reshape(-1, 2))


def _rect_triangles(boxes: np.ndarray) -> np.ndarray:
    lo, hi = boxes[:, 0], boxes[:, 1]
    c = np.stack([lo, np.stack([hi[:, 0], lo[:, 1]], 1), hi, np.stack([lo[:, 0], hi[:, 1]], 1)], axis=1)
    return _xz(c[:, [0, 1, 2, 0, 2, 3]].reshape(-1, 2))


def _colours(depths: np.ndarray, per: int, alpha: float) -> np.ndarray:
    """``per`` RGBA rows per entry of ``depths``, in its level colour; a loop over levels only."""
    out = np.empty((depths.shape[0] * per, 4), dtype=np.float32)
    if depths.size:
        levels, which = np.unique(depths, return_inverse=True)
        rgb = np.array([level_colour(int(d)) for d in levels], dtype=np.float32)
        out[:, :3] = np.repeat(rgb[which.reshape(-1)], per, axis=0)
    out[:, 3] = alpha
    return out


def _solid(n: int, colour: Sequence[float]) -> np.ndarray:
    return np.tile(np.asarray(colour, dtype=np.float32), (n, 1))


def build_map(trace: Any, camera: Any, query_point: Any = None, visible_centres: np.ndarray | None = None,
              context: tuple[np.ndarray, np.ndarray] | None = None, radius: float = MAP_RADIUS,
              only_depth: int | None = None, pixel: float | None = None, viewer: Any = None) -> MapGeometry:
    """The inset's geometry for one frame.

    Parameters
    ----------
    trace : culling.QueryTrace or None
        The frame's query; its visited boxes are drawn, all of them, in order.
    camera : engine.camera.Camera
        The culling camera (the frozen one while culling is frozen): its
        position, yaw and horizontal field of view make the marker and the wedge.
    query_point : array_like, shape (3,), optional
        Where the tree was queried; the map centres on it.  Default: the camera.
    visible_centres : ndarray, shape (m, 3), optional
        The frame's visible objects, drawn as dots.
    context : tuple (depths (c,), bounds (c, 2, dim)), optional
        Other nodes to outline faintly (``tree.node_boxes`` near the camera).
    radius : float
        Metres from the camera to the inset's edge.
    only_depth : int, optional
        Draw a single level's nodes (the overlay's ``[`` / ``]`` keys).
    pixel : float, optional
        Metres per inset pixel: the visited outlines are then drawn twice, the
        second one a pixel inside, so they read two pixels wide.
    viewer : array_like, shape (3,), optional
        Where the drawing camera is, when it is not the culling camera (culling
        frozen): a small square.

    Returns
    -------
    MapGeometry

    Cost: O(visited nodes + context nodes + m), vectorised; a loop over levels only.
    """
    if not (radius > 0.0 and math.isfinite(radius)):
        raise ValueError(f"map radius must be finite and > 0, got {radius}")
    eye = np.asarray(camera.position, dtype=np.float64)[[0, 2]]
    q = eye if query_point is None else np.asarray(query_point, dtype=np.float64)[[0, 2]]
    centre = q
    tris, tri_cols, lines, line_cols, pts, pt_cols = [], [], [], [], [], []

    # The dark panel behind everything.
    panel = np.array([[centre - radius, centre + radius]])
    tris.append(_rect_triangles(panel))
    tri_cols.append(_solid(6, PANEL_COLOUR))

    if context is not None and len(context[0]):
        depths, boxes = np.asarray(context[0], dtype=np.int64), _plan(context[1])
        if only_depth is not None:
            depths, boxes = depths[depths == only_depth], boxes[depths == only_depth]
        lines.append(_rect_lines(boxes))
        line_cols.append(_colours(depths, 8, CONTEXT_ALPHA))
        n_context = int(depths.shape[0])
    else:
        n_context = 0

    levels = [] if trace is None else [lv for lv in trace.levels if only_depth is None or lv.depth == only_depth]
    if levels:
        v_depths = np.concatenate([np.full(lv.bounds.shape[0], lv.depth, dtype=np.int64) for lv in levels])
        v_bounds = np.concatenate([_plan(lv.bounds) for lv in levels])
    else:
        v_depths, v_bounds = np.zeros(0, dtype=np.int64), np.zeros((0, 2, 2))
    if v_depths.size:
        tris.append(_rect_triangles(v_bounds))
        tri_cols.append(_colours(v_depths, 6, VISITED_FILL_ALPHA))
        lines.append(_rect_lines(v_bounds))
        line_cols.append(_colours(v_depths, 8, LEVEL_OUTLINE_ALPHA))
        if pixel is not None and pixel > 0.0:
            inner = v_bounds + np.array([[pixel, pixel], [-pixel, -pixel]])
            lines.append(_rect_lines(inner))
            line_cols.append(_colours(v_depths, 8, LEVEL_OUTLINE_ALPHA))

    if visible_centres is not None and len(visible_centres):
        vc = np.asarray(visible_centres, dtype=np.float64)
        pts.append(_xz(vc[:, [0, 2]]))
        pt_cols.append(_solid(vc.shape[0], DOT_COLOUR))

    # Camera: the frustum wedge (horizontal half-angle from fov_y and aspect), a marker.
    yaw = math.radians(camera.yaw)
    half = math.atan(math.tan(math.radians(camera.fov_y) / 2.0) * camera.aspect)
    reach = 2.0 * radius + float(np.abs(eye - centre).max())
    wedge = []
    for a in (yaw - half, yaw + half):
        wedge += [eye, eye + reach * np.array([math.sin(a), -math.cos(a)])]
    lines.append(_xz(np.array(wedge)))
    line_cols.append(_solid(4, WEDGE_COLOUR))
    size = radius * 0.035
    fwd = np.array([math.sin(yaw), -math.cos(yaw)])
    side = np.array([math.cos(yaw), math.sin(yaw)])
    marker = np.array([eye + 1.6 * size * fwd, eye - size * fwd - size * side, eye - size * fwd + size * side])
    tris.append(_xz(marker))
    tri_cols.append(_solid(3, CAMERA_COLOUR))
    cross = np.array([q - [size, size], q + [size, size], q - [size, -size], q + [size, -size]])
    lines.append(_xz(cross))
    line_cols.append(_solid(4, POINT_COLOUR))
    if viewer is not None:
        v = np.asarray(viewer, dtype=np.float64)[[0, 2]]
        lines.append(_rect_lines(np.array([[v - size, v + size]])))
        line_cols.append(_solid(8, CAMERA_COLOUR))

    # Scale bar along the bottom-left, with end ticks.
    bar = scale_bar_length(radius)
    x0, z0 = centre[0] - radius * 0.9, centre[1] + radius * 0.86
    tick = radius * 0.03
    lines.append(_xz(np.array([[x0, z0], [x0 + bar, z0], [x0, z0 - tick], [x0, z0 + tick],
                               [x0 + bar, z0 - tick], [x0 + bar, z0 + tick]])))
    line_cols.append(_solid(6, BAR_COLOUR))

    def cat(parts: list[np.ndarray], width: int) -> np.ndarray:
        return np.concatenate(parts).astype(np.float32) if parts else np.zeros((0, width), np.float32)

    return MapGeometry(cat(tris, 3), cat(tri_cols, 4), cat(lines, 3), cat(line_cols, 4), cat(pts, 3),
                       cat(pt_cols, 4), v_depths, v_bounds, n_context, centre, float(radius), bar)


def map_matrix(centre: Sequence[float] | np.ndarray, radius: float) -> np.ndarray:
    """World ``(x, y, z)`` to the inset's clip space, north up; column-vector form, (4, 4) float64.

    ``x`` maps to ``(x - cx) / radius``, ``z`` to ``-(z - cz) / radius``; height is dropped.
    """
    cx, cz = float(centre[0]), float(centre[1])
    m = np.zeros((4, 4))
    m[0, 0], m[0, 3] = 1.0 / radius, -cx / radius
    m[1, 2], m[1, 3] = -1.0 / radius, cz / radius
    m[3, 3] = 1.0
    return m


def inset_rect(size: tuple[int, int]) -> tuple[int, int, int, int]:
    """``(x, y, width, height)`` of the inset in GL pixels (origin bottom-left), bottom-right corner."""
    w, h = size
    side = max(16, int(min(w, h) * MAP_FRACTION))
    return max(0, w - side - MAP_MARGIN), MAP_MARGIN, side, side


def inset_corner(size: tuple[int, int]) -> tuple[int, int]:
    """The inset's top-left corner in image coordinates (origin top-left) for a frame of ``size``: what
    the HUD's panel keeps clear of (:func:`engine.hud.rows_clear_of`).

    >>> inset_corner((400, 250))
    (295, 145)
    """
    x, y, _, h = inset_rect(size)
    return x, size[1] - (y + h)


def label_font_size(size: tuple[int, int]) -> int:
    """The scale bar's label size in pixels for a frame of ``size``: the HUD's (1/60 of the height, 10..16)
    but no more than an eighth of the inset's side (7 at least), so that in a small window it labels the
    map instead of covering a quarter of it.

    >>> label_font_size((1280, 720)), label_font_size((3840, 2160)), label_font_size((320, 200))
    (12, 16, 9)
    """
    _, _, side, _ = inset_rect(size)
    return max(7, min(max(10, size[1] // 60), 16, side // 8))


def label_position(geometry: MapGeometry, size: tuple[int, int]) -> tuple[int, int]:
    """The pixel (image coordinates, origin top-left) the scale bar's label stands on: its text's bottom
    goes 4 px above it (the window's bottom-anchored pyglet label, the headless frames' Pillow text)."""
    x, y, side, _ = inset_rect(size)
    top = size[1] - (y + side)
    return x + int(0.05 * side), top + int(0.94 * side) - 2
