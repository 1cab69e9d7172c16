"""Why one object is drawn or not: the object under a point of the screen, and its place in the culling.

For someone chasing an object that pops in late.  :func:`pick` finds the
object whose bounding sphere a ray from the camera through a point of the
screen meets first (one drawn this frame before any other: a ray through a
drawn tree also passes the grass far behind it).  :func:`inspect` then says,
for the current frame, everything that decides whether it is drawn:

- its distance to the query point (the frozen one while culling is frozen),
  in the index's metric, against its view distance times the scale: the one
  rule the tree answers exactly (``|p - c| <= scale * view distance``);
- the near end of its visibility range (``begin_distance``, a settlement's
  members inside its stand-in's reach), the frustum, the fade over the last
  part of its reach;
- the tree node it is stored in (``ViewDistanceTree.node_of``, the tree's own
  record): its level follows from its view distance alone (CONTRACT.md,
  Geometry: a node of edge ``W`` holds radii in ``[W/4, W/2)``), and a query
  visits that node from within ``scale * W / 2`` of its box, so the overlay's
  level of that edge is where to look for it.

Everything here reads the scene's arrays and the frame's visible set; O(n)
NumPy for a pick (once a key press), O(1) for an inspection (once a frame).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray

from engine.records import FADE_FRACTION
from engine.stepped import scale_text
from engine.visibility_range import BEGIN_FADE_FRACTION

__all__ = ["Inspection", "inspect", "pick", "screen_ray"]


def screen_ray(view_projection: ArrayLike, ndc: tuple[float, float]) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """The ray through the point ``ndc`` of the screen (x and y in [-1, 1], y up, as OpenGL's normalised
    device coordinates): ``(origin, direction)``, the origin on the near plane, the direction a unit
    vector, for the column-vector world-to-clip matrix ``view_projection``."""
    inverse = np.linalg.inv(np.asarray(view_projection, dtype=np.float64))
    ends = []
    for depth in (-1.0, 1.0):
        point = inverse @ np.array([ndc[0], ndc[1], depth, 1.0])
        ends.append(point[:3] / point[3])
    direction = ends[1] - ends[0]
    return ends[0], direction / np.linalg.norm(direction)


def pick(origin: ArrayLike, direction: ArrayLike, centres: ArrayLike, radii: ArrayLike,
         preferred: ArrayLike | None = None, slack: float = 0.0) -> int | None:
    """The object whose sphere (``centres`` (n, 3), ``radii`` (n,)) the ray ``origin + t * direction``
    (``t >= 0``, ``direction`` a unit vector) meets at the smallest ``t``, among ``preferred`` (object
    indices, the frame's drawn ones) when the ray meets any of those, else among all; None when it
    meets none.  A sphere the origin is inside counts from ``t = 0``.  ``slack``: each sphere grown by
    ``slack`` times its distance along the ray (a cone of that half-angle's tangent rather than a
    line: a few pixels' tolerance, so a far or moving object a pixel wide can be pointed at).  O(n),
    vectorised.

    >>> pick([0, 0, 0], [1, 0, 0], [[5, 0, 0], [9, 0.5, 0], [3, 4, 0]], [1.0, 1.0, 1.0])
    0
    >>> pick([0, 0, 0], [1, 0, 0], [[5, 0, 0], [9, 0.5, 0]], [1.0, 1.0], preferred=[1])
    1
    """
    c = np.asarray(centres, dtype=np.float64).reshape(-1, 3)
    r = np.asarray(radii, dtype=np.float64).reshape(-1)
    o, d = np.asarray(origin, dtype=np.float64).reshape(3), np.asarray(direction, dtype=np.float64).reshape(3)
    along = (c - o) @ d                              # the closest approach's parameter
    miss = np.einsum("ij,ij->i", c - o, c - o) - along * along     # squared distance of the ray's line to each centre
    r = r + slack * np.maximum(along, 0.0)
    enter = along - np.sqrt(np.maximum(r * r - miss, 0.0))
    hit = (miss <= r * r) & (along + r >= 0.0)
    first = np.maximum(enter, 0.0)
    if preferred is not None:
        rows = np.asarray(preferred, dtype=np.int64)
        rows = rows[hit[rows]]
        if rows.size:
            return int(rows[np.argmin(first[rows])])
    rows = np.flatnonzero(hit)
    return int(rows[np.argmin(first[rows])]) if rows.size else None


@dataclass(frozen=True)
class Inspection:
    """One object's place in the current frame's culling (see the module docstring)."""

    obj: int                    #: its row in the scene's arrays
    kind: str                   #: its kind's name
    distance: float             #: from the query point, in the index's metric
    view_distance: float        #: as stored in the index
    scale: float                #: the frame's view-distance scale (the +/- keys' times the zoom's)
    begin: float                #: its begin distance, scaled (0: none)
    drawn: bool                 #: in the frame's visible set (in range and in the frustum)
    frozen: bool                #: culling frozen: the distance is from the frozen query point
    #: Its tree node: ``(depth below the current root, as the overlay counts levels; edge; low corner)``;
    #: None without a tree.
    node: tuple[int, float, NDArray[np.float64]] | None = None
    fade: bool = True           #: the dithered fades are on (T): the ends of the range fade rather than pop
    cube: bool = False          #: the index's metric is the largest per-axis distance (``--shape cube``)
    #: In range as the frame decided it (the index's exact test, then the begin distance); None: decided here
    #: from the float distance, which at the very edge of the reach can disagree with the exact test.
    within: bool | None = None

    @property
    def reach(self) -> float:
        """The distance it is drawn within: its view distance times the scale."""
        return self.view_distance * self.scale

    @property
    def in_range(self) -> bool:
        """Within its reach and beyond its begin distance: the frame's exact answer where it was given."""
        return self.within if self.within is not None else self.begin <= self.distance <= self.reach

    def verdict(self) -> str:
        """Why it is drawn, or not, this frame: one short line."""
        if not self.in_range:
            if self.distance < self.begin:
                return f"nearer than its begin distance {self.begin:,.1f} m: not drawn"
            beyond = self.distance - self.reach
            if beyond < 0.05:  # at the edge: the exact test decided what the rounded distance cannot show
                return "just beyond its reach (decided exactly): not drawn"
            return f"beyond its reach by {beyond:,.1f} m: not drawn"
        if not self.drawn:
            return "in range, outside the view (frustum): not drawn"
        if self.fade and self.distance > (1.0 - FADE_FRACTION) * self.reach:
            return f"drawn, fading out (the last {FADE_FRACTION:.0%} of its reach)"
        if self.fade and self.begin and self.distance < (1.0 + BEGIN_FADE_FRACTION) * self.begin:
            return f"drawn, fading in ({BEGIN_FADE_FRACTION:.0%} past its begin distance)"
        return "drawn"

    def lines(self) -> list[str]:
        """The HUD's lines, each within 60 characters."""
        where = "the frozen point" if self.frozen else "you"
        lines = [f"X: {self.kind} #{self.obj}, {self.distance:,.1f} m from {where}",
                 f"  view distance {self.view_distance:,.1f} m x{scale_text(self.scale)} = {self.reach:,.1f} m"]
        if self.cube:
            lines.append("  cubes: a distance is the largest per-axis one")
        if self.begin:
            lines.append(f"  begin distance x{scale_text(self.scale)} = {self.begin:,.1f} m: drawn from there out")
        lines.append(f"  {self.verdict()}")
        if self.node is not None:
            depth, edge, _ = self.node
            if depth == 0:
                lines.append(f"  in the root ({_metres(edge)} m): every query visits it")
            else:
                lines.append(f"  in a {_metres(edge)} m node (level {depth}), visited within "
                             f"{_metres(edge / 2 * self.scale)} m")
        else:
            lines.append("  brute force: every object is tested, no node")
        return lines


def _metres(value: float) -> str:
    return f"{value:,.0f}" if value >= 10.0 else f"{value:.3g}"


def inspect(obj: int, kind: str, query_point: ArrayLike, centre: ArrayLike, view_distance: float, begin: float,
            scale: float, drawn: bool, shape: str = "sphere", frozen: bool = False, fade: bool = True,
            node: tuple[int, ArrayLike] | None = None, within: bool | None = None) -> Inspection:
    """:class:`Inspection` of object ``obj`` this frame.

    ``query_point`` the culling's (the frozen one while frozen); ``begin`` its unscaled begin
    distance; ``drawn`` whether the frame drew it; ``shape`` the index's metric (``"cube"``: the
    largest per-axis distance); ``fade`` whether the fades are on; ``node`` the tree node it is stored
    in, as ``ViewDistanceTree.node_of`` gives it: ``(depth, [lo, hi])`` (None: brute force); ``within``
    whether the frame found it in range (:attr:`Inspection.within`).
    """
    offset = np.asarray(centre, dtype=np.float64) - np.asarray(query_point, dtype=np.float64)
    distance = float(np.abs(offset).max()) if shape == "cube" else float(np.linalg.norm(offset))
    box = None
    if node is not None:
        low, high = np.asarray(node[1], dtype=np.float64)
        box = (int(node[0]), float(high[0] - low[0]), low)
    return Inspection(obj=obj, kind=kind, distance=distance, view_distance=float(view_distance), scale=float(scale),
                      begin=float(begin) * float(scale), drawn=drawn, frozen=frozen, node=box, fade=fade,
                      cube=shape == "cube", within=within)
