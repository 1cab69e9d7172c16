"""The demo's frame, shared by the window and the headless runner.

:class:`Demo` wires a scene (``scenes/``) into the engine (``engine/``): it owns
the scene, its view-distance tree, the culling pipeline, the renderer and the
overlay.  A frame is two calls:

* :meth:`Demo.update` (``on_update``: simulation and culling, no GPU object):
  move objects, push the moves into the tree with ``update_many``, compute
  the camera matrices, then query (with the overlay's trace from the same
  traversal) -> distance filter -> frustum filter
  (:meth:`CullingPipeline.cull`), giving the visible object indices;
* :meth:`Demo.render` (``on_render``: drawing): the survivors' instance
  records with the fade and each one's level of detail (from the distances
  the culling computed), one upload and one instanced draw per (mesh kind,
  level), then the overlay and the map inset.  The frame's statistics are
  complete after it.

The interactive window (:mod:`demo.interactive`) and the headless runner
(:mod:`demo.headless`) only add input, text and image output around these.
"""

from __future__ import annotations

import logging
import math
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, replace
from time import perf_counter
from types import SimpleNamespace
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import ArrayLike

from culling import (
    BruteForceIndex,
    CollisionCandidates,
    QueryTrace,
    ViewDistanceTree,
    VisibilityEvents,
    VisibilityTracker,
)
from engine.camera import CAMERA_RADIUS, Camera, above_ground
from engine.collision_shapes import collision_spheres
from engine.culling_pipeline import CullingPipeline
from engine.frame_stats import FrameStats
from engine.framebuffers import offscreen_framebuffer
from engine.hud import HudInfo
from engine.inspection import Inspection, inspect, pick, screen_ray
from engine.map import MapInset
from engine.overlay import (
    OverlayGeometry,
    OverlayRenderer,
    build_overlay,
    dashed,
    marker_lines,
    trace_levels,
    with_lines,
)
from engine.renderer import Renderer
from engine.stepped import Stepped, scale_text
from engine.zoom import Zoom
from scenes import DEFAULT_SCENE, build_scene

if TYPE_CHECKING:
    import moderngl
    from PIL import Image

__all__ = ["CAMERA_RADIUS", "Demo", "DemoError", "DemoSettings", "SCALE_STEP", "SCALE_STEPS"]

log = logging.getLogger(__name__)

#: ``progress(done, total, step)`` after each step of a scene's build (:meth:`Demo.load_scene`).
BuildProgress = Callable[[int, int, str], None]

#: A scene's objects go into the view-distance tree this many at a time, so that a large build
#: reports progress between the batches (one ``insert_many`` each).
BUILD_CHUNK = 250_000

#: The colour of the picked object's marks (the X key): white, apart from every level colour of the
#: overlay, and dashed, apart from the solid white of the frozen frustum and the followed player's box.
INSPECTED = (1.0, 1.0, 1.0, 1.0)
#: How many pixels off an object the X key may point and still pick it (a far or moving one is a pixel wide).
PICK_PIXELS = 4.0

#: The +/- keys multiply / divide the global view-distance scale by this.
SCALE_STEP = 1.25
#: The scale stays within this many steps of 1 either way: 1.25 ** 16 = x35.53 (and x0.03), wider
#: than the forest's 4 km needs; whole steps, so every press back returns exactly to x1.00.
SCALE_STEPS = (-16, 16)
#: The HUD's times are medians over this many recent frames: one slow frame
#: (a compile, a scene switch, the OS) does not set the figure people read.
WARM_FRAMES = 30
#: A frame slower than this many times the median (and than COLD_MS) is marked
#: on the HUD as one that paid for compiling or a first use (20 ms: above the
#: spikes of a loaded machine, below any kernel compile, 0.1 s and more).
COLD_FACTOR = 5.0
COLD_MS = 20.0
#: The camera's far plane lies at least this far (m), and beyond the farthest reach of every view
#: distance at the frame's scale (:meth:`Demo.update`): an object within its view distance is never
#: cut by the far plane, whatever the +/- scale or the zoom.
MIN_FAR = 6000.0
#: One move of the camera slides along at most this many objects it meets (a corner between two
#: rocks takes two); then it stops at the last contact.
SLIDES = 4
#: Rounds of push-out and lift a camera's hold takes (:meth:`Demo._hold_camera`) before it gives up.
HOLDS = 4

class DemoError(RuntimeError):
    """A problem the user can fix (bad scene, unsupported option); one line."""


@dataclass
class DemoSettings:
    """Start-up choices, from the command line."""

    scene: str = DEFAULT_SCENE
    objects: int | None = None
    seed: int = 1
    shape: str = "sphere"
    brute_force: bool = False
    overlay: bool = True
    hud: bool = True
    #: "compact", "full" or "off" (engine.hud.HUD_MODES); ``hud=False`` means "off".
    hud_mode: str = "compact"
    lod: bool = True        # False: everything at full detail (--no-lod)
    map: bool = False       # the map inset (--map; M in the window)



class Demo:
    """One scene, culled with a view-distance tree and drawn with moderngl.

    Parameters
    ----------
    ctx : moderngl.Context
    size : tuple of int
        Framebuffer width and height (for the camera's aspect).
    settings : DemoSettings
    """

    def __init__(self, ctx: moderngl.Context, size: tuple[int, int], settings: DemoSettings | None = None,
                 progress: BuildProgress | None = None) -> None:
        self.ctx = ctx
        self.settings = settings or DemoSettings()
        self.size = size
        self.overlay_renderer = OverlayRenderer(ctx)
        self.map_inset = MapInset(ctx)
        self._renderer: Renderer | None = None     # None until load_scene
        # Toggles (keys in the window, flags headless).
        self.show_overlay = self.settings.overlay
        self.show_hud = self.settings.hud
        self.show_loose = False
        self.show_map = self.settings.map
        self.lod = self.settings.lod
        self.only_depth: int | None = None
        self.fade = True
        self.view_scale = Stepped(1.0, SCALE_STEP, SCALE_STEPS)
        self.collide = True
        self.frozen: Camera | None = None
        self.frozen_zoom = 1.0          # the zoom's scale when culling froze: the frozen query keeps it
        self._farthest_view = 0.0       # the largest view distance (set by load_scene): the far plane follows it
        self.stats = FrameStats()
        self.trace: QueryTrace | None = None
        self.events: VisibilityEvents | None = None
        self.view_projection: np.ndarray = np.eye(4)      # set for real by load_scene and update
        self._cull_view_projection: np.ndarray = np.eye(4)
        self._drawn = False
        self.boxes = 0                  # overlay boxes in the last drawn frame
        #: The object the X key picked (a row of the scene's arrays), explained every frame; None: none.
        self.inspected: int | None = None
        self.recent: deque[FrameStats] = deque(maxlen=WARM_FRAMES)     # drawn frames, newest last
        self.load_scene(self.settings.scene, self.settings.objects, progress)

    # -- scene -----------------------------------------------------------------
    def objects_for(self, name: str) -> int | None:
        """The object count scene ``name`` is built with: the user's (``--objects``) for the scene
        the demo started with, whenever it is loaded; None (the scene's default) for the others."""
        return self.settings.objects if name == self.settings.scene else None

    def load_scene(self, name: str, objects: int | None = None, progress: BuildProgress | None = None) -> None:
        """Build scene ``name`` and everything derived from it; O(objects).

        ``objects`` None: :meth:`objects_for` (a number key switching back to
        the first scene keeps the user's count).  ``progress(done, total,
        step)`` is called after each step: the scene's arrays, the
        view-distance tree (one step per :data:`BUILD_CHUNK` objects), the
        renderer, the collision candidates and the warm-up of the query paths.
        """
        if objects is None:
            objects = self.objects_for(name)
        try:
            scene = build_scene(name, objects, self.settings.seed)
        except ValueError as exc:
            raise DemoError(str(exc)) from None
        n = len(scene)
        chunks = 1 if self.settings.brute_force else max(1, -(-n // BUILD_CHUNK))
        total = chunks + 4
        steps = iter(range(1, total + 1))

        def report(step: str) -> None:
            if progress is not None:
                progress(next(steps), total, step)

        report(f"scene data: {n:,} objects")
        scene.set_brute_force(self.settings.brute_force)     # the scene's own queries too (swarm aggro)
        t0 = perf_counter()
        index: ViewDistanceTree | BruteForceIndex
        if self.settings.brute_force:
            index = BruteForceIndex(scene.centres, scene.view_distance, shape=self.settings.shape)
            handles = np.arange(n, dtype=np.int64)
            report(f"brute-force index: {n:,} objects")
        else:
            try:
                index = ViewDistanceTree(size=scene.world_size, origin=scene.world_origin, dim=3,
                                         shape=self.settings.shape)
            except (TypeError, ValueError) as exc:
                raise DemoError(f"cannot build a {self.settings.shape!r} tree: {exc}") from None
            parts: list[np.ndarray] = []
            for c in range(chunks):
                lo, hi = c * BUILD_CHUNK, min(n, (c + 1) * BUILD_CHUNK)
                parts.append(index.insert_many(scene.centres[lo:hi], scene.view_distance[lo:hi]))
                report(f"view-distance tree: {hi:,}/{n:,} objects")
            handles = parts[0] if chunks == 1 else np.concatenate(parts)
        log.info("%s: %d objects, index built in %.2f s", name, len(scene), perf_counter() - t0)
        if self._renderer is not None:
            self._renderer.release()
        self.scene = scene
        self.index = index
        self.handles = handles
        self.pipeline = CullingPipeline(scene, index, handles, shape=self.settings.shape)
        self._renderer = Renderer(self.ctx, scene)
        self._renderer.dither = self.fade
        report("renderer")
        pose = scene.camera_pose(0.0)
        self.camera = Camera(pose.position, pose.yaw, pose.pitch, aspect=self._aspect())
        self.zoom = Zoom(self.camera.fov_y)
        self.frozen = None
        # The farthest any object can be seen at scale 1: its view distance, along the diagonal for cubes.
        self._farthest_view = float(scene.view_distance.max(initial=0.0)) * \
            (math.sqrt(3.0) if self.settings.shape == "cube" else 1.0)
        self.time = 0.0
        self.only_depth = None
        self.inspected = None
        solid = np.flatnonzero([k.solid for k in scene.kinds])
        mask = np.isin(scene.kind, solid)
        self.collision = CollisionCandidates(CAMERA_RADIUS, scene.world_size, scene.world_origin, dim=3)
        self.collision.insert_many(*collision_spheres(scene.centres[mask], scene.bounding_radius[mask],
                                                      [k.mesh for k in scene.kinds], scene.kind[mask]))
        report("collision candidates")
        self.tracker = VisibilityTracker()
        self.events = None
        # Nothing culled yet: a render before the next update draws ground and sky.
        self.stats = FrameStats()
        self.trace = None
        self._cull_position = self.camera.position
        self.map_inset.geometry = None
        self.view_projection = self._cull_view_projection = self.camera.view_projection()
        self._drawn = False
        self._culled = False  # no frame culled since the scene loaded (inspect_at culls one first)
        self.recent = deque(maxlen=WARM_FRAMES)
        self._warm_up()
        report("query paths")

    def _warm_up(self) -> None:
        """Run every query path once (walk, trace, exact query, records, levels) and
        the scene's own batches, so the first frame shows warm times: compiling
        happens here, at load, not in a frame people read figures from."""
        t0 = perf_counter()
        position, vp = self.camera.position, self.camera.view_projection()
        for trace in (True, False):
            self.pipeline.cull(position, vp, scale=1.0, trace=trace and self.tree is not None)
            frame = self.pipeline.instance_groups(self.fade, lod=self.lod)
            self.renderer.upload_groups(frame.instances, frame.group_starts)
            if trace:
                self._warm_draw(vp, position)
            self.renderer.upload_groups(frame.instances[:0], np.zeros_like(frame.group_starts))   # draw nothing yet
        self.scene.warm_up(position)
        self.pipeline.forget_frame()
        log.info("%s: query paths warmed up in %.2f s", self.scene.name, perf_counter() - t0)

    def _warm_draw(self, view_projection: np.ndarray, position: np.ndarray) -> None:
        """Draw the uploaded instances once into a throwaway framebuffer of the frame's size: the GL
        driver compiles its shader variants at a program's first draw (half a second on llvmpipe),
        which would otherwise land in frame 0's draw time."""
        import moderngl

        previous = self.ctx.fbo
        try:
            with offscreen_framebuffer(self.ctx, self.size) as target:
                self.renderer.draw(view_projection, position, target)
        finally:
            if previous is not None and not isinstance(previous.mglo, moderngl.InvalidObject):   # not released
                previous.use()

    @property
    def renderer(self) -> Renderer:
        """The current scene's renderer (load_scene replaces it)."""
        if self._renderer is None:
            raise RuntimeError("no scene loaded")
        return self._renderer

    @property
    def tree(self) -> ViewDistanceTree | None:
        """The view-distance tree (None in brute-force mode)."""
        return None if isinstance(self.index, BruteForceIndex) else self.index

    def _aspect(self) -> float:
        w, h = self.size
        return max(w, 1) / max(h, 1)

    def resize(self, size: tuple[int, int]) -> None:
        """A new window size: the drawing camera's aspect follows it; a frozen camera keeps its own
        (its frustum stays put, as F says)."""
        self.size = size
        self.camera.aspect = self._aspect()

    # -- camera ------------------------------------------------------------------
    def set_pose(self, position: ArrayLike, yaw: float, pitch: float) -> None:
        self.camera.position = np.asarray(position, dtype=np.float64).copy()
        self.camera.yaw, self.camera.pitch = float(yaw) % 360.0, float(pitch)

    def fly(self, forward: float, right: float, up: float) -> None:
        """Move the camera in its own frame; it stays above the ground, and with
        collision on (the C key) it also slides off solid objects (rocks, trees,
        towers, houses), however far it moves in one frame."""
        start = self.camera.position.copy()
        self.camera.move_local(forward, right, up)
        if self.collide:
            self.camera.position = self._slid(start, self.camera.position)
        self._hold_camera(fallback=start)

    def _slid(self, start: np.ndarray, target: np.ndarray) -> np.ndarray:
        """Where the camera moving from ``start`` towards ``target`` ends with collision on.

        It stops where it first touches a solid object on the way
        (:meth:`culling.CollisionCandidates.sweep`), and the rest of the move
        slides along that object's surface (its part into the object removed,
        and a hair outward kept, so the next sweep lets it go), up to
        :data:`SLIDES` times.  Checking only where each move ends let a fast
        flight (2 km/s, a long frame) pass through a tower between frames.
        """
        position = start
        target = above_ground(target, self.scene.ground_height)
        for _ in range(SLIDES):
            t, hit = self.collision.sweep(position, target)
            if hit < 0:
                return target
            position = np.asarray(position + (target - position) * t, dtype=np.float64)
            normal = position - self.collision.centres_of([hit])[0]
            length = float(np.linalg.norm(normal))
            if length == 0.0:
                return position
            normal /= length
            rest = target - position
            into = float(rest @ normal)
            if into < 0.0:
                rest = rest - (into - 1e-6 * float(np.linalg.norm(rest))) * normal
            target = above_ground(position + rest, self.scene.ground_height)   # no slide under the terrain
        return position

    def set_collision(self, on: bool) -> None:
        """Camera collision on or off (the C key).  Turned on inside an object, the camera leaves
        it at once, not at its next move."""
        self.collide = bool(on)
        self._hold_camera()

    def _hold_camera(self, fallback: np.ndarray | None = None) -> None:
        """The ground holds the camera whatever collision says (nobody means to fly under the
        terrain); collision adds the solid objects.  A push out of an object that ends under the
        ground, lifted back into the object (a tower's sphere reaching below its base), is pushed
        again, a few times; a place still inside an object then gives way to ``fallback`` (where a
        move started), so the camera never rests inside one."""
        position = self.camera.position
        for _ in range(HOLDS):
            if self.collide:
                position = self.collision.resolve(position)
            lifted = above_ground(position, self.scene.ground_height)
            if np.array_equal(lifted, position):
                break
            position = lifted
        if self.collide and fallback is not None and not np.array_equal(self.collision.resolve(position), position):
            position = fallback
        self.camera.position = position

    # -- toggles -----------------------------------------------------------------
    def toggle_interest(self) -> str:
        """The interest view on / off (the I key); returns what the status line says.  A scene without
        players answers so and changes nothing."""
        scene = self.scene
        if not scene.has_players:
            return f"I: the {scene.name} scene has no players (the interest view is in swarm and aggro)"
        scene.set_interest_view(not scene.interest_on)
        if scene.interest_on:
            return f"I: interest view on, following {scene.followed_name()} (N: next player)"
        return "I: interest view off"

    def follow_next(self, step: int = 1) -> str:
        """Follow the next (``step`` 1) or previous (-1) player and look at it (the N key, Shift+N
        backwards); returns the status line, which names the key as pressed.  Turns the interest view
        on when it is off."""
        scene = self.scene
        pressed = "N" if step > 0 else "Shift+N"
        if not scene.has_players:
            return f"{pressed}: the {scene.name} scene has no players (the interest view is in swarm and aggro)"
        name = scene.follow_next(step)
        scene.set_interest_view(True)
        pose = scene.watch_pose()
        if pose is not None:
            self.set_pose(pose.position, pose.yaw, pose.pitch)
        return f"{pressed}: following {name}" + ("" if pose is not None else " (the camera: its set is around you)")

    def toggle_overlay(self) -> str:
        """The debug overlay on / off (the O key); returns the status line.  Brute force has no
        tree: it visits no nodes, so the line says there is nothing to draw."""
        self.show_overlay = not self.show_overlay
        if not self.show_overlay:
            return "O: overlay off"
        if self.tree is None:
            return "O: overlay on, but brute force visits no nodes: no boxes to draw (the overlay needs the tree)"
        return "O: overlay on (the nodes the query visited)"

    def toggle_map(self) -> str:
        """The map inset on / off (the M key); returns the status line.  Brute force has no tree: the map
        then shows the visible objects and the camera, and the line says why no node is drawn."""
        self.show_map = not self.show_map
        if not self.show_map:
            return "M: map off"
        if self.tree is None:
            return "M: map on: the visible objects; brute force visits no nodes, so none is drawn (nodes need the tree)"
        return "M: map on"

    def toggle_loose(self) -> str:
        """The overlay's grown (loose) boxes or the nodes' own (the L key); returns the status line."""
        if self.tree is None:  # nothing changes
            return "L: brute force visits no nodes, so it tests no boxes: nothing to show (L needs the tree)"
        self.show_loose = not self.show_loose
        shown = "L: the grown (loose) boxes the query tested" if self.show_loose else "L: the nodes' own boxes"
        return shown if self.show_overlay else f"{shown}, once the overlay is on (O)"

    def inspect_at(self, ndc: tuple[float, float], where: str = "the cursor") -> str:
        """Pick the object under the point ``ndc`` of the screen (x, y in [-1, 1], y up) for the X key:
        the first one drawn there, else the first bounding sphere there of one not drawn (the status
        line says so: nothing of it is on screen there); its
        explanation then stays on the HUD, frame after frame, with its reach sphere and its node's box
        drawn, until X picks another or finds nothing (which clears it).  Returns the status line."""
        if not self._culled:  # X pressed with a scene's key, before its first frame: nothing culled yet to prefer
            self.update(0.0)
        origin, direction = screen_ray(self.view_projection, ndc)
        scene = self.scene
        per_pixel = 2.0 * math.tan(math.radians(self.camera.fov_y) / 2.0) / max(self.size[1], 1)
        picked = pick(origin, direction, scene.centres, scene.bounding_radius, preferred=self.pipeline.visible,
                      slack=PICK_PIXELS * per_pixel)
        self.inspected = picked
        if picked is None:
            return f"X: no object under {where}"
        explained = self.inspection()
        if explained is None:
            return ""
        if explained.drawn:
            return f"X: {explained.kind} #{picked} under {where}"
        return f"X: {explained.kind} #{picked}, not drawn, on the line of sight through {where}"

    def inspection(self) -> Inspection | None:
        """The picked object's place in the last culled frame (:mod:`engine.inspection`), or None."""
        obj = self.inspected
        if obj is None:
            return None
        scene = self.scene
        kind = int(np.searchsorted(scene.kind_offsets, obj, side="right")) - 1
        visible = self.pipeline.visible
        at = int(np.searchsorted(visible, obj))
        tree = self.tree
        return inspect(obj, scene.kinds[kind].name, self._cull_position, scene.centres[obj],
                       float(scene.view_distance[obj]), float(scene.begin_distance[obj]), self.query_scale,
                       drawn=at < visible.shape[0] and int(visible[at]) == obj, shape=self.settings.shape,
                       frozen=self.frozen is not None, fade=self.fade,
                       node=None if tree is None else tree.node_of(self.handles[obj]),
                       within=bool((self.pipeline.in_range == obj).any()))

    def _inspection_marks(self) -> tuple[np.ndarray, np.ndarray]:
        """Lines of the picked object's marks (:data:`INSPECTED`, dashed): a pin standing on it (which
        object it is, without hiding it: a far one is a few pixels wide), its reach (view distance times
        the scale: it is drawn while the query point is inside; a cube with ``--shape cube``), its begin
        distance's when it has one, and its tree node's box (``ViewDistanceTree.node_of``)."""
        explained = self.inspection()
        if explained is None:
            return np.zeros((0, 3), np.float32), np.zeros((0, 4), np.float32)
        centre = self.scene.centres[explained.obj]
        radius = float(self.scene.bounding_radius[explained.obj])
        reaches = [explained.reach] + ([explained.begin] if explained.begin else [])
        height = 2.0 * radius + 0.05 * float(np.linalg.norm(centre - self.camera.position))
        top = centre + [0.0, radius + height, 0.0]
        boxes = [(top, height / 8.0)] + [(low + edge / 2.0, edge / 2.0) for _, edge, low in
                                         ([] if explained.node is None else [explained.node])]
        spheres = [] if explained.cube else reaches
        boxes += [(centre, reach) for reach in reaches] if explained.cube else []
        marks = SimpleNamespace(
            box_centres=np.array([c for c, _ in boxes]).reshape(-1, 3), box_half=np.array([h for _, h in boxes]),
            box_colours=np.tile(INSPECTED, (len(boxes), 1)),
            sphere_centres=np.tile(centre, (len(spheres), 1)), sphere_radii=np.array(spheres),
            sphere_colours=np.tile(INSPECTED, (len(spheres), 1)))
        vertices, colours = marker_lines(marks)
        boxes_end = 24 * len(boxes)
        pin = np.array([centre + [0.0, radius, 0.0], top - [0.0, height / 8.0, 0.0]], np.float32)
        parts = [dashed(vertices[:boxes_end], colours[:boxes_end], dashes=8),
                 dashed(vertices[boxes_end:], colours[boxes_end:], dashes=1), (pin, np.tile(INSPECTED, (2, 1)))]
        return (np.concatenate([v for v, _ in parts]).astype(np.float32),
                np.concatenate([c for _, c in parts]).astype(np.float32))

    def toggle_freeze(self) -> None:
        """Freeze culling at the current camera, or thaw it.  The frozen query keeps the camera's
        place, frustum and zoom; the +/- scale still applies to it."""
        self.frozen = None if self.frozen is not None else self.camera.copy()
        self.frozen_zoom = float(self.zoom.scale)

    def step_level(self, delta: int) -> None:
        """Show a single level (``[`` / ``]``); stepping past either end shows all."""
        depths = [lv.depth for lv in trace_levels(self.trace)]
        if not depths:
            self.only_depth = None
            return
        if self.only_depth is None:
            self.only_depth = depths[0] if delta > 0 else depths[-1]
        else:
            nxt = self.only_depth + delta
            self.only_depth = nxt if depths[0] <= nxt <= depths[-1] else None

    @property
    def scale(self) -> float:
        """The global view-distance scale: :data:`SCALE_STEP` to a whole power within :data:`SCALE_STEPS`."""
        return self.view_scale.value

    def step_scale(self, steps: int) -> str:
        """Widen (``steps`` > 0) or narrow every view distance by whole steps (the + and - keys);
        the scale stops at the ends of :data:`SCALE_STEPS`.  Returns the status line, which says
        when the scale is at its limit (a further press that way changes nothing)."""
        self.view_scale.move(steps)
        limit = " (the limit)" if self.view_scale.at_limit else ""
        return f"{'+' if steps > 0 else '-'}: every view distance x{scale_text(self.scale)}{limit}"

    def set_fade(self, on: bool) -> None:
        self.fade = bool(on)
        self.renderer.dither = self.fade

    def set_zoom(self, held: bool, snap: bool = False) -> None:
        """Zoom in while ``held`` (Z or the right mouse button); ``snap`` skips the easing."""
        self.zoom.held = bool(held)
        if snap:
            self.zoom.snap()
            self.camera.fov_y = self.zoom.fov

    @property
    def query_zoom(self) -> float:
        """The zoom's view-distance factor culling uses this frame: the live zoom's, or while culling is
        frozen the zoom's when it froze (its frustum is the zoom's then)."""
        return self.frozen_zoom if self.frozen is not None else float(self.zoom.scale)

    @property
    def query_scale(self) -> float:
        """The scale every view distance is multiplied by this frame: the +/- keys' times the zoom's
        (:attr:`query_zoom`)."""
        return self.scale * self.query_zoom

    # -- the frame -----------------------------------------------------------------
    def update(self, dt: float) -> FrameStats:
        """Simulation, then culling (``on_update``); touches no GPU object.

        Moves the scene's objects and pushes the moves into the tree with one
        ``update_many``; computes the camera matrices (once per frame); runs
        query -> distance filter -> frustum filter, with the overlay's trace
        from the same traversal as the query.  Call once per frame before
        :meth:`render`, which completes the returned statistics.
        """
        scene = self.scene
        self.time += dt

        # Simulation: moving objects are pushed into the tree in one batch.
        started = perf_counter()
        moved = scene.update(self.time, dt, self.camera.position)
        if moved is not None and moved.shape[0] and self.tree is not None:
            self.tree.update_many(self.handles[moved], scene.centres[moved], scene.view_distance[moved])
        scene_ms = (perf_counter() - started) * 1e3

        # Zoom narrows the field of view; the view distances grow with it (query_scale).
        # At rest the zoom follows the camera's own field of view (a caller may set it).
        if self.zoom.held or self.zoom.fov != self.zoom.base_fov:
            self.camera.fov_y = self.zoom.update(dt)
        else:
            self.zoom.base_fov = self.zoom.fov = float(self.camera.fov_y)

        # Camera matrices, once per frame: the drawing camera's, and the frozen
        # one's while culling is frozen (it culls and its frustum is drawn).
        far = max(MIN_FAR, self._farthest_view * self.query_scale * 1.01)
        self.camera.far = far
        if self.frozen is not None:
            self.frozen.far = far
        self.view_projection = self.camera.view_projection()
        if self.frozen is not None:
            cull_position, cull_vp = self.frozen.position, self.frozen.view_projection()
        else:
            cull_position, cull_vp = self.camera.position, self.view_projection
        self._cull_view_projection = cull_vp

        # Culling: the walk (the overlay's trace when asked) -> the exact query -> frustum filter.
        stats = self.pipeline.cull(cull_position, cull_vp, scale=self.query_scale,
                                   trace=(self.show_overlay or self.show_map) and self.tree is not None)
        stats.scene_ms = scene_ms
        self.trace = self.pipeline.trace
        self._cull_position = cull_position

        # Gameplay hook: which objects came into view or left it this frame.
        self.events = self.tracker.update(self.handles[self.pipeline.visible])
        self.stats = stats
        self._drawn = False
        self._culled = True
        return stats

    def render(self, framebuffer: moderngl.Framebuffer) -> FrameStats:
        """Draw the frame into ``framebuffer`` (``on_render``): instance records
        with the fade, one upload and one instanced draw per mesh kind, then
        the overlay.  Returns the frame's statistics, now complete (upload,
        draw and overlay times included).

        Drawing the same frame again (a window redraw with no update between)
        redraws it without rebuilding the instances.
        """
        stats = self.stats
        if not self._drawn:
            self.recent.append(stats)             # completed below (draw_ms)
            t0 = perf_counter()
            frame = self.pipeline.instance_groups(self.fade, lod=self.lod)
            self.renderer.upload_groups(frame.instances, frame.group_starts)
            stats.triangles, stats.level_counts, stats.draw_calls = \
                frame.triangles, frame.level_counts, frame.draw_calls
            t1 = perf_counter()
            self.boxes = 0
            geometry = OverlayGeometry(np.zeros((0, 3), np.float32), np.zeros((0, 4), np.float32), [])
            if self.show_overlay and self.trace is not None:
                geometry = build_overlay(
                    self.trace, loose=self.show_loose, only_depth=self.only_depth,
                    frozen_view_projection=self._cull_view_projection if self.frozen is not None else None,
                    frozen_point=self.frozen.position if self.frozen is not None else None)
                self.boxes = geometry.box_count
            # The scene's own marks (the interest view's) and the picked object's ride on the overlay's
            # lines, overlay on or off.
            geometry = with_lines(geometry, *marker_lines(self.scene.markers()))
            self.overlay_renderer.upload(with_lines(geometry, *self._inspection_marks()))
            if self.show_map:
                frozen = self.frozen is not None
                self.map_inset.update(self.trace, self.frozen if frozen else self.camera, self._cull_position,
                                      self.scene.centres[self.pipeline.visible], index=self.tree,
                                      scale=self.query_scale, only_depth=self.only_depth, size=self.size,
                                      viewer=self.camera.position if frozen else None)
            stats.upload_ms = (t1 - t0) * 1e3
            stats.trace_ms = (perf_counter() - t1) * 1e3
            self._drawn = True
        vp = self.view_projection
        self.renderer.fog_scale = self.scale      # +/-: objects seen farther, and the fog thins with them
        stats.draw_ms = self.renderer.draw(vp, self.camera.position, framebuffer)
        self.overlay_renderer.draw(vp, framebuffer)          # nothing when there are no lines
        if self.show_map and self.map_inset.geometry is not None:
            self.map_inset.draw(framebuffer, self.size)  # a window's screen keeps the size it was made with
        return stats

    def state(self) -> dict[str, Any]:
        """Where the demo stands, for ``--stats`` rows (see :mod:`demo.stats`)."""
        x, y, z = (float(v) for v in self.camera.position)
        return dict(scene=self.scene.name, x=x, y=y, z=z, yaw=float(self.camera.yaw),
                    pitch=float(self.camera.pitch), frozen=self.frozen is not None, scale=float(self.scale),
                    overlay=self.show_overlay, boxes=self.boxes if self.show_overlay else 0,
                    loose=self.show_loose, level="" if self.only_depth is None else self.only_depth,
                    fade=self.fade, collide=self.collide,
                    width=int(self.size[0]), height=int(self.size[1]),
                    lod=self.lod, map=self.show_map, zoom=self.query_zoom,
                    interest=self.scene.interest_on, followed=self.scene.followed_name(),
                    inspected="" if self.inspected is None else self.inspected)

    def warm_stats(self) -> tuple[FrameStats, bool]:
        """The last frame's counts with the median times of :data:`WARM_FRAMES` recent frames,
        and whether the last frame was cold (slower than ``COLD_FACTOR`` times that median)."""
        frames = list(self.recent)
        if not frames or frames[-1] is not self.stats:
            return self.stats, False
        def median(name: str) -> float:
            return float(np.median([getattr(f, name) for f in frames]))

        warm = replace(self.stats, query_ms=median("query_ms"), distance_ms=median("distance_ms"),
                       frustum_ms=median("frustum_ms"), upload_ms=median("upload_ms"), draw_ms=median("draw_ms"),
                       trace_ms=median("trace_ms"), scene_ms=median("scene_ms"))
        earlier = [f.cull_ms for f in frames[:-1]]
        cold = bool(earlier) and self.stats.cull_ms > max(COLD_FACTOR * float(np.median(earlier)), COLD_MS)
        return warm, cold

    def hud_info(self, fps: float | None = None, speed: float | None = None, help: bool = True,
                 mouse: str | None = None) -> HudInfo:
        """The numbers the HUD shows for the last frame (times: medians of recent frames)."""
        levels = trace_levels(self.trace, self.show_loose)   # every level: the HUD shows only_depth's row
        ev = self.events
        warm, cold = self.warm_stats()
        return HudInfo(
            scene=self.scene.name, objects=len(self.scene), stats=warm, levels=levels, fps=fps,
            warm_frames=len(self.recent), cold=cold,
            frozen=self.frozen is not None, overlay=self.show_overlay, loose=self.show_loose,
            only_depth=self.only_depth, fade=self.fade,
            scale=self.scale,
            zoom=self.query_zoom if self.query_zoom != 1.0 else None,
            view_zoom=float(self.zoom.scale) if self.zoom.scale != self.query_zoom else None,
            lod=self.lod, show_map=self.show_map,
            collision=self.collide,
            entered=None if ev is None else int(ev.entered.shape[0]),
            left=None if ev is None else int(ev.left.shape[0]),
            shape=self.settings.shape, brute_force=self.settings.brute_force, help=help, speed=speed,
            mouse=mouse,
            notes=self.scene.status_lines(), brief_notes=self.scene.status_lines(brief=True),
            scene_legend=self.scene.legend(),
            inspection=[] if (explained := self.inspection()) is None else explained.lines(),
        )

    def read_image(self, framebuffer: moderngl.Framebuffer) -> Image.Image:
        """The framebuffer's viewport as a Pillow RGB image (top row first): a window's screen keeps the
        size it had at creation, its viewport follows the window's resizes (engine.window)."""
        from PIL import Image

        x, y, w, h = framebuffer.viewport
        data = framebuffer.read(viewport=(x, y, w, h), components=3, alignment=1)
        return Image.frombytes("RGB", (w, h), data).transpose(Image.Transpose.FLIP_TOP_BOTTOM)

    def release(self) -> None:
        if self._renderer is not None:
            self._renderer.release()
        self.overlay_renderer.release()
        self.map_inset.release()

