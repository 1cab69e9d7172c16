"""The view-distance tree inside Panda3D: a forest drawn with hardware instancing, one node per kind.

    .venv/bin/python examples/panda3d_forest.py [--headless] [--frames N] [--objects N] [--out DIR] [--all]

Every object of the forest scene (grass, pebbles, bushes, rocks, trees, towers) has its own view
distance.  They go into a ``culling.ViewDistanceTree`` once, in Panda3D's frame (Z up).  A task on
Panda3D's task manager, which runs before the frame is culled and drawn, asks the tree at the camera
and copies the answer into each kind's per-instance vertex array (position, scale, heading; divisor
1); the node's instance count and bounds follow it, so Panda3D's own cull pass still skips a kind
that lies wholly outside the view; the ground is Panda3D's GeoMipTerrain.  With a
display a window opens: the camera flies the scene's path until you touch a key, then W/A/S/D,
space/shift and the arrow keys fly it, never below the ground; Esc or the window's close button
quits.  With no display, or ``--headless``, frames render offscreen (p3headlessgl: EGL, llvmpipe
without a GPU) into ``DIR/frame_NNNN.png``.  Once a second it prints a summary: the frame, how many
objects it drew, the median query time, the frame rate and where the camera is.  ``--all`` draws
every object, to time the engine alone.  A first run compiles the library's kernels and says so,
with a progress bar.

Copying it: besides ``culling`` it imports this repository's ``scenes/`` (the forest: ``make_forest``
and ``mesh_base``) and four helpers of ``engine/`` (``display_problem``, ``unwritable_folder`` and
``write_atomically``, ``above_ground``); run it from the checkout, put the checkout on ``PYTHONPATH``,
or put your own world and helpers in their place (a package of the same name beside the copy, a
project's own ``engine/``, comes first on the path and hides the checkout's: it says so in one line).
From the checkout (or with it on the path) it
imports the checkout's ``culling/``, not an installed wheel: install the checkout with
``pip install -e ".[examples]"``, which compiles its kernels once, or its first run compiles them
(38 s on a 2-core machine).  Moving objects are one
``tree.update_many(handles[moved], centres[moved], view_distances[moved])`` a frame before the query
(``build_world``'s ``handles[i]`` is object ``i``'s; centres in Panda3D's frame; the demo's swarm,
INTEGRATION.md, section 3), and their rows of ``records`` (the per-instance data) rewritten from the
same arrays.  The objects are rows grouped by kind (``scene.kind_offsets``), which is how a frame's
answer splits into the kinds' arrays: an object added later needs its kind kept beside it (split
``visible`` by ``kind_of[visible]`` instead).  The window draws at most :data:`WINDOW_FPS` frames a
second (Panda3D's ``clock-mode limited``), as a game does; headless frames follow each other at once.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import signal
import sys
import time
from pathlib import Path

try:
    import numpy as np
except ModuleNotFoundError:                          # one line, as for the other modules it needs (main)
    raise SystemExit(f"{Path(__file__).name}: error: needs numpy: pip install -e \".[examples]\" (the examples extra)") from None

CHECKOUT = Path(__file__).resolve().parents[1]
if (CHECKOUT / "engine" / "files.py").is_file():  # the checkout: engine/, scenes/ and culling/ (a copy elsewhere
    sys.path.insert(0, str(CHECKOUT))              # finds them on PYTHONPATH; see missing_message)
#: This repository's modules it imports (the forest, a few helpers; see the docstring), looked for first.
REPOSITORY_MODULES = ("engine.camera", "engine.display", "engine.files", "scenes.base", "scenes.forest", "culling")
# Panda3D, numba and the library load after the arguments are read (main): --help answers at once.

FPS = 30.0            # headless frames are this far apart on the camera path
PATH_SECONDS = 60.0   # one lap of the scene's camera path
SIZE = (640, 360)
MAX_OBJECTS = 100_000_000  # beyond it NumPy's own refusals (arrays too large), not a forest
SUMMARY_SECONDS = 1.0  # a summary line this often, not a line per frame
WINDOW_FPS = 60       # the window's frame cap: uncapped, a window looking at the sky drew 800 fps on a whole core
COMPILING = "compiling kernels (first run only)"   # what a first run says, as the demo and python -m culling do
#: Simple lathed shapes, (radius, height) from the bottom up, in units of the bounding radius.
PROFILES = {"grass_card": ([(0.35, 0.0), (0.0, 1.4)], 4), "pebble": ([(0.0, 0.0), (0.45, 0.3), (0.3, 0.6), (0.0, 0.7)], 5),
            "bush": ([(0.0, 0.0), (0.6, 0.3), (0.76, 0.76), (0.5, 1.3), (0.0, 1.5)], 7),
            "rock": ([(0.0, 0.0), (0.6, 0.3), (0.5, 0.9), (0.0, 1.1)], 5),
            "cone_tree": ([(0.1, 0.0), (0.1, 0.4), (0.6, 0.4), (0.0, 1.98)], 8), "tower": ([(0.2, 0.0), (0.1, 1.94), (0.0, 1.94)], 6)}
VERTEX = """#version 330
uniform mat4 p3d_ModelViewProjectionMatrix;
in vec4 p3d_Vertex; in vec3 p3d_Normal;
in vec4 offset; in vec2 heading;                // per instance: x, y, z, scale; cos and sin of the heading
out vec3 normal;
void main() {
    mat2 turn = mat2(heading.x, heading.y, -heading.y, heading.x);
    normal = vec3(turn * p3d_Normal.xy, p3d_Normal.z);
    gl_Position = p3d_ModelViewProjectionMatrix * vec4(vec3(turn * p3d_Vertex.xy, p3d_Vertex.z) * offset.w + offset.xyz, 1.0);
}"""
FRAGMENT = """#version 330
uniform vec3 colour; in vec3 normal; out vec4 p3d_FragColor;
void main() { p3d_FragColor = vec4(colour * (0.45 + 0.65 * max(dot(normalize(normal), normalize(vec3(0.4, -0.3, 1.0))), 0.0)), 1.0); }"""


def to_panda(xyz: np.ndarray) -> np.ndarray:
    """Scene frame (y up, -z ahead) -> Panda3D's (z up, +y ahead): (x, y, z) -> (x, -z, y), a rotation."""
    xyz = np.asarray(xyz, dtype=np.float64)
    return np.stack([xyz[..., 0], -xyz[..., 2], xyz[..., 1]], axis=-1)


def to_scene(xyz: np.ndarray) -> np.ndarray:
    """Panda3D's frame -> the scene's: the inverse of :func:`to_panda`."""
    xyz = np.asarray(xyz, dtype=np.float64)
    return np.stack([xyz[..., 0], xyz[..., 2], -xyz[..., 1]], axis=-1)


def warm_up_kernels() -> None:
    """Compile the kernels this example calls (the tree's: ``groups=["tree"]``) ahead of the first frame,
    with ``culling.progress_bar`` on stderr (a first run on a machine: numba caches them for the next
    runs, which load them in a fraction of a second; ``pip install -e .`` ships them compiled)."""
    import culling

    if culling.kernels_cached(["tree"]):
        culling.warm_up(groups=["tree"])
        return
    print(f"{COMPILING} ...", file=sys.stderr, flush=True)
    seconds = culling.warm_up(culling.progress_bar(sys.stderr), groups=["tree"])
    print(f"kernels compiled in {seconds:.1f} s (cached for the next runs)", file=sys.stderr, flush=True)


def build_world(objects: int, seed: int = 1):
    """The forest, its centres in Panda3D's frame, their tree, each object's handle (``handles[i]``: object
    ``i``'s, what ``tree.update_many`` and ``tree.remove`` take) and handle -> object index."""
    from culling import ViewDistanceTree
    from scenes.forest import make_forest

    scene = make_forest(objects, seed)
    centres = to_panda(scene.centres)
    o, size = scene.world_origin, scene.world_size
    tree = ViewDistanceTree(size=size, origin=(o[0], -(o[2] + size), o[1]))
    handles = tree.insert_many(centres, scene.view_distance)
    object_of = np.full(int(handles.max(initial=-1)) + 1, -1, dtype=np.int64)   # -1: no object (INTEGRATION.md)
    object_of[handles] = np.arange(len(scene))      # a handle is not an index: map it back
    return scene, centres, tree, handles, object_of


def camera_at(scene, seconds: float) -> tuple[np.ndarray, np.ndarray]:
    """Eye and look-at point (float64, Panda3D's frame) on the scene's scripted path."""
    pose = scene.camera_pose((seconds / PATH_SECONDS) % 1.0)
    yaw, pitch = np.radians(pose.yaw), np.radians(pose.pitch)
    forward = np.array([np.sin(yaw) * np.cos(pitch), np.sin(pitch), -np.cos(yaw) * np.cos(pitch)])
    return to_panda(pose.position), to_panda(pose.position + forward)


def instanced_kind(mesh: str):
    """A lathed shape with flat normals and an empty per-instance array (divisor 1) beside it: a GeomNode."""
    from panda3d.core import Geom, GeomNode, GeomTriangles, GeomVertexArrayFormat, GeomVertexData, GeomVertexFormat

    from scenes.base import mesh_base

    profile, segments = np.array(PROFILES[mesh][0]), PROFILES[mesh][1]
    a = np.linspace(0.0, 2.0 * np.pi, segments + 1)
    rings = np.stack([np.outer(profile[:, 0], np.cos(a)), np.outer(profile[:, 0], np.sin(a)),
                      np.repeat(profile[:, 1:] + mesh_base(mesh), a.size, axis=1)], axis=-1)
    p00, p01, p10, p11 = rings[:-1, :-1], rings[:-1, 1:], rings[1:, :-1], rings[1:, 1:]
    tris = np.concatenate([np.stack([p00, p01, p11], -2).reshape(-1, 3, 3), np.stack([p00, p11, p10], -2).reshape(-1, 3, 3)])
    normals = np.cross(tris[:, 1] - tris[:, 0], tris[:, 2] - tris[:, 0])
    keep = np.linalg.norm(normals, axis=1) > 1e-9  # drop the degenerate triangles at the tips
    normals = np.repeat(normals[keep] / np.linalg.norm(normals[keep], axis=1, keepdims=True), 3, axis=0)
    per_instance = GeomVertexArrayFormat("offset", 4, Geom.NT_float32, Geom.C_other, "heading", 2, Geom.NT_float32, Geom.C_other)
    per_instance.set_divisor(1)
    fmt = GeomVertexFormat()
    fmt.add_array(GeomVertexArrayFormat("vertex", 3, Geom.NT_float32, Geom.C_point, "normal", 3, Geom.NT_float32, Geom.C_normal))
    fmt.add_array(per_instance)
    vdata = GeomVertexData(mesh, GeomVertexFormat.register_format(fmt), Geom.UH_static)
    vdata.modify_array(0).modify_handle().copy_data_from(np.hstack([tris[keep].reshape(-1, 3), normals]).astype(np.float32))
    prim = GeomTriangles(Geom.UH_static)
    prim.add_consecutive_vertices(0, 3 * int(keep.sum()))
    geom = Geom(vdata)
    geom.add_primitive(prim)
    node = GeomNode(mesh)
    node.add_geom(geom)
    node.set_final(True)                             # the bounds we set are the whole story
    return node


class _OneLineParser(argparse.ArgumentParser):
    def error(self, message: str):
        self.exit(2, f"{self.prog}: error: {message}\n")


#: What this example imports beyond NumPy (the project's examples extra: the engine, and pyrr and numba
#: for the repository's engine/ and culling), looked for before anything is built.
ENGINE_MODULES = ("panda3d", "pyrr", "numba")


def parse_args(argv=None) -> argparse.Namespace:
    p = _OneLineParser(prog=Path(__file__).name, description="A forest in Panda3D, culled by view distance.",
                       epilog="It imports this repository's engine/ and scenes/ besides culling: run it from the "
                              "checkout, or a copy with the checkout on PYTHONPATH (its docstring: copying it).")
    p.add_argument("--headless", action="store_true", help="render offscreen (the default with no display)")
    p.add_argument("--frames", type=int, default=None, help="stop after N frames (headless default: 60)")
    p.add_argument("--objects", type=int, default=200_000, help="objects in the forest (default 200000)")
    p.add_argument("--out", type=Path, default=Path("out/panda3d_forest"),
                   help="folder for headless frames (default %(default)s), an earlier run's extra frames removed; "
                        "checked before any work")
    p.add_argument("--all", action="store_true", help="draw every object, no culling (to time the engine alone)")
    args = p.parse_args(argv)
    for flag, value in (("--objects", args.objects), ("--frames", args.frames)):
        if value is not None and value < 1:
            p.error(f"{flag} must be at least 1, got {value}")
    if args.objects > MAX_OBJECTS:
        p.error(f"--objects must be at most {MAX_OBJECTS:,}, got {args.objects:,}")
    if not str(args.out).strip() or str(args.out) == ".":   # Path("") is "." : frames into the current folder
        p.error("--out must name a folder")
    return args


def summary(frame: int, drawn: int, total: int, query_ms: list[float] | None, fps: float | None, eye: np.ndarray,
            ground: float) -> str:
    """The once-a-second line: the frame, what it drew, the median query time since the last line
    (None: ``--all`` asks no query), the frame rate over the frames finished since then (None: none
    yet) and the camera (Panda3D's frame) with its height above the ground."""
    x, y, z = (float(v) for v in eye)
    query = "no query (--all)" if query_ms is None else f"query {np.median(query_ms):.2f} ms (median of {len(query_ms)})"
    rate = "first frame" if fps is None else f"{fps:.1f} fps"
    return (f"frame {frame}: drawn {drawn} of {total} objects, {query}, {rate}, camera at ({x:.1f}, {y:.1f}, {z:.1f}), "
            f"{float(z) - ground:.1f} m above the ground")


def missing_message(wanted: tuple[str, ...]) -> str | None:
    """One line naming all this program cannot import, this repository's modules and the extra's (a copy
    outside the checkout, without the extra, learns both at once), or None.  A package of the same name
    found first (a project's own ``engine/`` beside the copy: the script's folder comes first on the path,
    before PYTHONPATH) hides the repository's: the line names it."""
    outside, hidden = [], {}
    for module in REPOSITORY_MODULES:
        package = module.partition(".")[0]
        spec = importlib.util.find_spec(package)
        if spec is None:
            outside.append(package)
        elif module != package and _not_found(module):
            hidden[package] = next(iter(spec.submodule_search_locations or []), spec.origin)
    missing = [module for module in wanted if importlib.util.find_spec(module) is None]
    needs = []
    if outside:
        needs.append(f"this repository's {', '.join(dict.fromkeys(outside))}: run it from the checkout or put the "
                     "checkout on PYTHONPATH (see its docstring)")
    for package, where in hidden.items():
        needs.append(f"this repository's {package}, hidden by {where} (a package of that name found first): "
                     "rename one, or put your own helpers in its place (see its docstring)")
    if missing:
        needs.append(f"{', '.join(missing)}: pip install -e \".[examples]\" (the examples extra)")
    return f"{Path(__file__).name}: error: needs " + "; and ".join(needs) if needs else None


def _not_found(module: str) -> bool:
    """Whether ``module`` (in a package that exists) cannot be found: its package imported to look."""
    try:
        return importlib.util.find_spec(module) is None
    except ImportError:                              # its package's own imports failed
        return True


def main(argv=None) -> int:
    args = parse_args(argv)
    missing = missing_message(ENGINE_MODULES)
    if missing:  # one line, not the ModuleNotFoundError of the first import below
        print(missing, file=sys.stderr)
        return 1
    headless = args.headless or not os.environ.get("DISPLAY")
    from engine.display import display_problem
    from engine.files import stale_frames, unwritable_folder, write_atomically

    problem = None if headless else display_problem()
    if problem is not None:  # Panda3D would raise a bare "Could not open window." after the world is built
        print(f"{Path(__file__).name}: error: cannot open a window: {problem} (--headless renders offscreen)",
              file=sys.stderr)
        return 1

    if headless:
        problem = unwritable_folder(args.out)
        if problem is not None:
            print(f"{Path(__file__).name}: error: {problem} (choose another --out)", file=sys.stderr)
            return 1
    from panda3d.core import (
        BoundingBox,
        ClockObject,
        GeoMipTerrain,
        KeyboardButton,
        PNMImage,
        Point3,
        Shader,
        StringStream,
        loadPrcFileData,
    )

    from engine.camera import MAX_PITCH_DEG, above_ground

    loadPrcFileData("", f"win-size {SIZE[0]} {SIZE[1]}\nwindow-title Panda3D forest: view-distance culling\n"
                        "audio-library-name null\nsync-video false\nnotify-level-egldisplay error\nnotify-level-device fatal\n"
                        "print-pipe-types false\n"
                        + ("load-display p3headlessgl\nwindow-type offscreen\n" if headless
                           else f"clock-mode limited\nclock-frame-rate {WINDOW_FPS}\n"))
    from direct.showbase.ShowBase import ShowBase

    warm_up_kernels()
    print(f"building {args.objects} objects and their tree ...", flush=True)
    scene, centres, tree, _, object_of = build_world(args.objects)
    records = np.hstack([centres, scene.bounding_radius[:, None], np.cos(-scene.yaw)[:, None],  # heading turns the
                         np.sin(-scene.yaw)[:, None]]).astype(np.float32)                       # other way in z-up
    offsets = scene.kind_offsets
    try:
        base = ShowBase()
    except Exception as exc:  # noqa: BLE001 - Panda3D raises a bare Exception: no GL, no EGL, no window
        print(f"{Path(__file__).name}: error: Panda3D: {exc} ({'no EGL driver for offscreen frames?' if headless else '--headless renders offscreen'})",
              file=sys.stderr)
        return 1
    base.disableMouse()
    base.accept("escape", base.userExit)             # the close button does the same (ShowBase's window event)
    base.setBackgroundColor(*scene.sky, 1.0)
    base.camLens.set_min_fov(60.0)                   # vertical, in a landscape window
    base.camLens.set_near_far(0.3, 6000.0)
    terrain, t = GeoMipTerrain("ground"), scene.terrain  # Panda3D's own terrain from a height field
    low, high = t.height_range
    pgm = np.round((t.heights - low) / max(high - low, 1e-9) * 65535).astype(">u2")   # row i: z = z0 + i step
    heights = PNMImage()                             # GeoMipTerrain puts image row 0 at its far (+y) edge
    heights.read(StringStream(b"P5 %d %d 65535\n" % pgm.shape[::-1] + pgm.tobytes()), "heights.pgm")
    terrain.set_heightfield(heights)
    terrain.set_block_size(32)
    terrain.set_bruteforce(True)                     # full detail: its LOD, updated at a moving camera, sank hills
    terrain.generate()
    ground = terrain.get_root()
    ground.reparent_to(base.render)
    ground.set_pos(t.origin[0], -(t.origin[1] + t.size), low)
    ground.set_scale(t.step, t.step, high - low)
    ground.set_color(*t.low_colour, 1.0)
    shader = Shader.make(Shader.SL_GLSL, VERTEX, FRAGMENT)
    nodes = []
    for kind in scene.kinds:
        node = base.render.attach_new_node(instanced_kind(kind.mesh))
        node.set_shader(shader)
        node.set_shader_input("colour", kind.colour)
        nodes.append(node)
    state = {"flown": False, "frame": 0, "query_ms": [], "said": time.perf_counter(), "said_frame": 0}
    keys = {"w": (0, 1, 0), "s": (0, -1, 0), "a": (-1, 0, 0), "d": (1, 0, 0)}   # the camera's own axes
    rises = {"space": 1, "shift": -1}                # along the world's up, as the demo flies
    turns = {"arrow_left": (1, 0), "arrow_right": (-1, 0), "arrow_up": (0, 1), "arrow_down": (0, -1)}
    frames = args.frames or (60 if headless else None)
    query_ms: list[float] = []                       # every frame's, for the headless run's last line

    def ground_under(eye: np.ndarray) -> float:
        x, _, z = to_scene(eye)
        return float(scene.ground_height(x, z))

    def fly(dt: float) -> None:
        down = base.mouseWatcherNode.is_button_down if base.mouseWatcherNode else (lambda button: False)
        pressed = [name for name in (*keys, *rises, *turns) if down(KeyboardButton.ascii_key(name) if len(name) == 1
                                                             else getattr(KeyboardButton, name.removeprefix("arrow_"))())]
        state["flown"] = state["flown"] or bool(pressed)
        for name in pressed:
            if name in keys:
                base.camera.set_pos(base.camera, *(40.0 * dt * np.array(keys[name])))
            elif name in rises:
                base.camera.set_z(base.render, base.camera.get_z(base.render) + 40.0 * dt * rises[name])
            else:
                pitch = base.camera.get_p() + 60.0 * dt * turns[name][1]   # never over the top (the demo's limit)
                base.camera.set_hpr(base.camera.get_h() + 60.0 * dt * turns[name][0],
                                    float(np.clip(pitch, -MAX_PITCH_DEG, MAX_PITCH_DEG)), 0.0)
        if pressed:                                  # the demo's rule: the eye stays above the ground
            eye = to_scene(np.array(base.camera.get_pos(base.render), dtype=np.float64))
            base.camera.set_pos(base.render, *to_panda(above_ground(eye, scene.ground_height)))

    def cull_and_draw(task):                         # a task: runs every frame before Panda3D culls and draws
        started = time.perf_counter()
        if state["frame"] == 0:
            state["said"] = started                  # the frame rate counts from the first frame's start
        fly(ClockObject.get_global_clock().get_dt())
        if state["flown"]:
            eye = np.array(base.camera.get_pos(base.render), dtype=np.float64)
        else:
            eye, target = camera_at(scene, state["frame"] / FPS if headless else task.time)
            base.camera.set_pos(*eye)
            base.camera.look_at(Point3(*target))
        t_query = time.perf_counter()
        visible = np.arange(len(scene)) if args.all else np.sort(object_of[tree.query(eye, exact=True)])
        state["query_ms"].append(1000.0 * (time.perf_counter() - t_query))
        if headless:                                 # (with --all, the time of np.arange: not reported)
            query_ms.append(state["query_ms"][-1])   # a window runs for hours: it keeps only the summary's
        cuts = np.searchsorted(visible, offsets)     # the objects are rows grouped by kind: a kind a slice
        for k, node in enumerate(nodes):
            rows = records[visible[cuts[k]:cuts[k + 1]]]
            node.set_instance_count(len(rows))       # 0 would mean "not instanced": hide instead
            node.show() if len(rows) else node.hide()
            node.node().modify_geom(0).modify_vertex_data().modify_array(1).modify_handle().copy_data_from(rows)
            if len(rows):
                lo, hi = rows[:, :3] - 2 * rows[:, 3:4], rows[:, :3] + 2 * rows[:, 3:4]
                node.node().set_bounds(BoundingBox(Point3(*lo.min(axis=0)), Point3(*hi.max(axis=0))))
        frame = state["frame"]
        last = frames is not None and frame + 1 >= frames
        if started - state["said"] >= SUMMARY_SECONDS or last:
            # the frames finished since the last line, from its frame's start to this one's (this frame is
            # still to be drawn: counting it would time its culling alone)
            done = frame - state["said_frame"]
            fps = done / max(started - state["said"], 1e-9) if done else None
            print(summary(frame, visible.size, len(scene), None if args.all else state["query_ms"], fps, eye,
                          ground_under(eye)), flush=True)
            state.update(said=started, said_frame=frame, query_ms=[])
        state["frame"] = frame + 1
        if not headless and last:
            base.userExit()
        return task.cont

    base.taskMgr.add(cull_and_draw, "cull-and-draw")
    # Ctrl-C: within a frame Panda3D's task manager catches it, prints "* interrupt by keyboard" and raises at
    # the frame's end (headless, out of taskMgr.step(); in the window, run() returns); noted here instead,
    # without the print, and raised after the loop: one line and status 130, as the demo ends
    interrupted: list[int] = []

    def within_a_frame(signum, _frame) -> None:      # the task manager's own handler, less its print
        interrupted.append(signum)
        base.taskMgr.fKeyboardInterrupt = 1          # it raises at the frame's end

    base.taskMgr.keyboardInterruptHandler = within_a_frame
    if not headless:
        def between_frames(signum, _frame) -> None:  # stops the loop (it catches KeyboardInterrupt)
            interrupted.append(signum)
            raise KeyboardInterrupt

        signal.signal(signal.SIGINT, between_frames)
        base.run()                                   # Esc, the close button or --frames: userExit, status 0
        if interrupted:
            raise KeyboardInterrupt
        return 0
    args.out.mkdir(parents=True, exist_ok=True)
    frame_ms, image = [], PNMImage()
    for i in range(frames):
        t0 = time.perf_counter()
        base.taskMgr.step()                          # the task, then Panda3D's cull and draw
        base.win.get_screenshot(image)               # reads the frame back (waits for the renderer)
        frame_ms.append(1000.0 * (time.perf_counter() - t0))
        image.remove_alpha()
        path = args.out / f"frame_{i:04d}.png"
        try:
            write_atomically(path, lambda tmp: tmp.write_bytes(png_bytes(image, StringStream)))
        except OSError as exc:
            print(f"{Path(__file__).name}: error: could not write {path}: {exc.strerror or exc}", file=sys.stderr)
            return 1
    for path in stale_frames(args.out, frames):     # a longer earlier run's last frames: not this run's
        path.unlink(missing_ok=True)
    steady = frame_ms[1:] or frame_ms
    query = "no query" if args.all else f"query {np.median(query_ms[1:] or query_ms):.2f} ms"
    print(f"{frames} frames in {args.out}: median frame {np.median(steady):.1f} ms ({query}), "
          f"first frame {frame_ms[0]:.0f} ms", flush=True)
    return 0


def png_bytes(image, string_stream) -> bytes:
    """``image`` (a PNMImage) encoded as PNG in memory (``string_stream``: panda3d.core.StringStream), for
    Python to write: PNMImage.write to a file answers True even where the disk is full (an empty file)."""
    stream = string_stream()
    data = bytes(stream.getData()) if image.write(stream, "frame.png") else b""
    if not data:  # libpng's own errors leave write() True and the stream empty
        raise OSError("Panda3D could not encode the frame as PNG")
    return data


if __name__ == "__main__":
    try:
        sys.exit(main())
    except KeyboardInterrupt:                        # Ctrl-C: one line, as the demo says it
        print(f"{Path(__file__).name}: error: interrupted", file=sys.stderr, flush=True)
        sys.stdout.flush()
        os._exit(130)    # no teardown: a GPU object the interrupt left half made prints its own traceback there
    except MemoryError:                              # --objects beyond this machine: one line
        print(f"{Path(__file__).name}: error: out of memory: try fewer --objects", file=sys.stderr)
        sys.exit(1)
