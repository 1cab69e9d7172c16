"""The view-distance tree inside pygfx: a forest drawn with one InstancedMesh per kind.

    .venv/bin/python examples/pygfx_forest.py [--headless] [--frames N] [--objects N] [--out DIR] [--all]

Every object of the forest scene (grass, pebbles, bushes, rocks, trees, towers) has its own view
distance.  They go into a ``culling.ViewDistanceTree`` once; in pygfx's draw callback the tree is
asked at the camera, and only the objects whose view distance reaches it get their instance matrices
uploaded into their kind's ``InstancedMesh``.  pygfx draws those instances; the GPU clips what lies
outside the view (pygfx has no frustum culling of its own yet).  With a display a window opens: the
camera flies the scene's path until you touch a key, then W/A/S/D, space/shift and the arrow keys
fly it, never below the ground; Esc or the window's close button quits.  With no display, or
``--headless``, frames render offscreen (wgpu on Vulkan, lavapipe without a GPU) into
``DIR/frame_NNNN.png``.  The GPU adapter is chosen here, not left to wgpu: one that offers
everything pygfx asks for, Vulkan first; the run says which.  Once a second it prints a summary:
the frame, how many objects it drew, the median query time, the frame rate and where the camera is.
``--all`` draws every object instead, to time the engine without the tree.  A first run compiles
the library's kernels and says so, with a progress bar.

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
(``build_world``'s ``handles[i]`` is object ``i``'s; the demo's swarm, INTEGRATION.md, section 3),
and their rows of ``matrices`` (the per-instance data) rewritten from the same arrays.  The objects
are rows grouped by kind (``scene.kind_offsets``), which is how a frame's answer splits into the
kinds' meshes: an object added later needs its kind kept beside it (split ``visible`` by
``kind_of[visible]`` instead).  The window draws at most :data:`WINDOW_FPS` frames a second
(rendercanvas's ``max_fps``), as a game does; headless frames follow each other at once.
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
# pygfx, wgpu, numba and the library load after the arguments are read (main): --help answers at once.

FPS = 30.0            # headless frames are this far apart on the camera path
PATH_SECONDS = 60.0   # one lap of the scene's camera path
SIZE = (640, 360)
MAX_OBJECTS = 100_000_000  # beyond it NumPy's own refusals (arrays too large), not a forest
SUMMARY_SECONDS = 1.0  # a summary line this often, not a line per frame
WINDOW_FPS = 30       # the window's frame cap (rendercanvas's default, said here)
COMPILING = "compiling kernels (first run only)"   # what a first run says, as the demo and python -m culling do
#: Simple lathed shapes, (radius, height) from the bottom up, in units of the bounding radius (the Panda3D
#: example's, so both draw the same forest).
PROFILES = {"grass_card": ([(0.35, 0.0), (0.0, 1.4)], 4), "pebble": ([(0.0, 0.0), (0.45, 0.3), (0.3, 0.6), (0.0, 0.7)], 5),
            "bush": ([(0.0, 0.0), (0.6, 0.3), (0.76, 0.76), (0.5, 1.3), (0.0, 1.5)], 7),
            "rock": ([(0.0, 0.0), (0.6, 0.3), (0.5, 0.9), (0.0, 1.1)], 5),
            "cone_tree": ([(0.1, 0.0), (0.1, 0.4), (0.6, 0.4), (0.0, 1.98)], 8), "tower": ([(0.2, 0.0), (0.1, 1.94), (0.0, 1.94)], 6)}
#: What pygfx asks of every device by default, but which not every adapter offers (lavapipe's OpenGL
#: adapter does not): wgpu may hand out that adapter, and then the device request fails.
PYGFX_FEATURES = ("float32-filterable",)
#: Adapter kinds and backends, best first.
ADAPTER_TYPES = ("DiscreteGPU", "IntegratedGPU", "VirtualGPU", "CPU")
BACKENDS = ("Vulkan", "Metal", "D3D12", "OpenGL")
MOVES = {"w": (0, 0, -1), "s": (0, 0, 1), "a": (-1, 0, 0), "d": (1, 0, 0)}   # along the camera's own axes
RISES = {" ": 1, "shift": -1}   # along the world's up (y), as the demo flies
TURNS = {"arrowleft": ((0, 1, 0), 1), "arrowright": ((0, 1, 0), -1), "arrowup": ((1, 0, 0), 1), "arrowdown": ((1, 0, 0), -1)}


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


def rank_adapter(info: dict, features) -> tuple:
    """Sort key of an adapter (lower is better): one that offers every feature pygfx asks for, then a
    GPU before a CPU, then Vulkan before the other backends.

    >>> rank_adapter({"adapter_type": "CPU", "backend_type": "Vulkan"}, {"float32-filterable"})
    (0, 3, 0)
    >>> rank_adapter({"adapter_type": "CPU", "backend_type": "OpenGL"}, set())
    (1, 3, 3)
    """
    def place(options, value):
        return options.index(value) if value in options else len(options)

    missing = any(feature not in features for feature in PYGFX_FEATURES)
    return int(missing), place(ADAPTER_TYPES, info.get("adapter_type")), place(BACKENDS, info.get("backend_type"))


def choose_adapter() -> str:
    """Pick the GPU adapter for pygfx (before its first renderer) and return its summary: the best by
    :func:`rank_adapter`; on one without pygfx's default features they are not requested."""
    import wgpu
    from pygfx.renderers.wgpu import enable_wgpu_features, select_adapter

    adapters = wgpu.gpu.enumerate_adapters_sync()
    if not adapters:
        raise RuntimeError("wgpu finds no GPU adapter (install Mesa's Vulkan driver: mesa-vulkan-drivers)")
    adapter = min(adapters, key=lambda a: rank_adapter(a.info, set(a.features)))
    select_adapter(adapter)
    missing = [f for f in PYGFX_FEATURES if f not in adapter.features]
    if missing:
        enable_wgpu_features(*(f"!{f}" for f in missing))   # this example samples no float32 texture
    return adapter.summary


def build_world(objects: int, seed: int = 1):
    """The forest (y up, like pygfx), its tree, each object's handle (``handles[i]``: object ``i``'s, what
    ``tree.update_many`` and ``tree.remove`` take) and handle -> object index."""
    from culling import ViewDistanceTree
    from scenes.forest import make_forest

    scene = make_forest(objects, seed)
    tree = ViewDistanceTree(size=scene.world_size, origin=scene.world_origin)
    handles = tree.insert_many(scene.centres, scene.view_distance)
    object_of = np.full(int(handles.max(initial=-1)) + 1, -1, dtype=np.int64)   # -1: no object (INTEGRATION.md)
    object_of[handles] = np.arange(len(scene))      # a handle is not an index: map it back
    return scene, tree, handles, object_of


def camera_at(scene, seconds: float) -> tuple[np.ndarray, np.ndarray]:
    """Eye and look-at point (float64, scene frame) on the scene's scripted path."""
    pose = scene.camera_pose((seconds / PATH_SECONDS) % 1.0)
    yaw, pitch = np.radians(pose.yaw), np.radians(pose.pitch)
    forward = np.array([np.sin(yaw) * np.cos(pitch), np.sin(pitch), -np.cos(yaw) * np.cos(pitch)])
    return pose.position, pose.position + forward


def instance_matrices(scene) -> np.ndarray:
    """Every object's model matrix, (n, 4, 4) float32, stored transposed as pygfx's buffer wants."""
    c, s, r = np.cos(scene.yaw), np.sin(scene.yaw), scene.bounding_radius
    m = np.zeros((len(scene), 4, 4), dtype=np.float32)
    # Row k is the matrix's column k: the mesh's +x turns to (cos, 0, sin), its -z to (sin, 0, -cos), as the
    # engine's object shader (assets/shaders/object.vert.glsl) and the Panda3D example turn them.
    m[:, 0, 0], m[:, 0, 2], m[:, 1, 1], m[:, 2, 0], m[:, 2, 2] = r * c, r * s, r, -r * s, r * c
    m[:, 3, :3], m[:, 3, 3] = scene.centres, 1.0   # the translation is the last *row* here
    return m


def kind_geometry(mesh: str):
    """A lathed shape of :data:`PROFILES` with flat normals, y up, standing where the scene expects its
    base: a gfx.Geometry (the Panda3D example's shapes, turned from its z up)."""
    import pygfx as gfx

    from scenes.base import mesh_base

    profile, segments = np.array(PROFILES[mesh][0]), PROFILES[mesh][1]
    a = np.linspace(0.0, 2.0 * np.pi, segments + 1)
    rings = np.stack([np.outer(profile[:, 0], np.cos(a)), np.repeat(profile[:, 1:] + mesh_base(mesh), a.size, axis=1),
                      -np.outer(profile[:, 0], np.sin(a))], axis=-1)   # (x, y, z) z up -> (x, z, -y) y up: a turn
    p00, p01, p10, p11 = rings[:-1, :-1], rings[:-1, 1:], rings[1:, :-1], rings[1:, 1:]
    tris = np.concatenate([np.stack([p00, p01, p11], -2).reshape(-1, 3, 3), np.stack([p00, p11, p10], -2).reshape(-1, 3, 3)])
    normals = np.cross(tris[:, 1] - tris[:, 0], tris[:, 2] - tris[:, 0])
    keep = np.linalg.norm(normals, axis=1) > 1e-9  # drop the degenerate triangles at the tips
    normals = np.repeat(normals[keep] / np.linalg.norm(normals[keep], axis=1, keepdims=True), 3, axis=0)
    positions = tris[keep].reshape(-1, 3)
    return gfx.Geometry(positions=positions.astype(np.float32), normals=normals.astype(np.float32),
                        indices=np.arange(positions.shape[0], dtype=np.int32).reshape(-1, 3))


#: pygfx gives every instance of every InstancedMesh an id of its own, at most this many in a process
#: (``pygfx.objects._base.IdProvider``), and claims them one by one in Python when a mesh is built.
PYGFX_MAX_IDS = 1_000_000
#: A kind's first room, in instances: grown (doubled, or to what a frame needs) when a frame shows more.
FIRST_ROOM = 256


class KindInstances:
    """One kind's ``gfx.InstancedMesh``, with room for the instances a frame draws, not for every object.

    Room for every object of the kind would spend pygfx's instance ids on objects the tree culls (the
    1M forest could not be built: pygfx stops at :data:`PYGFX_MAX_IDS`) and seconds at start-up (pygfx
    claims each id in Python).  A frame that shows more of the kind than there is room for gets a new
    mesh with twice the room (or what it needs) in place of the old, whose ids pygfx frees.
    """

    ids_held = 0          # every kind's room together: pygfx's ids in use for instances

    def __init__(self, world, geometry, material) -> None:
        self.world, self.geometry, self.material = world, geometry, material
        self.mesh = None
        self._make_room(FIRST_ROOM)

    def _make_room(self, room: int) -> None:
        import pygfx as gfx

        held = 0 if self.mesh is None else self.mesh.instance_buffer.nitems
        if KindInstances.ids_held - held + room > PYGFX_MAX_IDS - 1_000:   # a margin for the scene's own objects
            raise SystemExit(f"{Path(__file__).name}: error: pygfx holds at most {PYGFX_MAX_IDS:,} instances in a "
                             f"process; this frame needs more (fewer --objects, or no --all)")
        if self.mesh is not None:
            self.world.remove(self.mesh)             # its ids go back to pygfx once it is collected
        self.mesh = gfx.InstancedMesh(self.geometry, self.material, room)
        self.world.add(self.mesh)
        KindInstances.ids_held += room - held

    def show(self, matrices: np.ndarray) -> None:
        """Draw these instances this frame: ``(k, 4, 4)`` float32, as :func:`instance_matrices` stores them."""
        k, buffer = matrices.shape[0], self.mesh.instance_buffer
        if k > buffer.nitems:
            self._make_room(max(k, 2 * buffer.nitems))
            buffer = self.mesh.instance_buffer
        buffer.data["matrix"][:k] = matrices
        buffer.update_range(0, k)
        buffer.draw_range = (0, k)


def ground_mesh(terrain, stride: int = 2):
    """The height field as one gfx.Mesh, every ``stride``-th sample (lavapipe pays for every triangle)."""
    import pygfx as gfx

    h, step = terrain.heights[::stride, ::stride], terrain.step * stride
    res = h.shape[0]
    j, i = np.meshgrid(np.arange(res), np.arange(res))
    xyz = np.stack([terrain.origin[0] + j * step, h, terrain.origin[1] + i * step], axis=-1)
    dz, dx = np.gradient(h, step)
    normals = np.stack([-dx, np.ones_like(h), -dz], axis=-1)
    normals /= np.linalg.norm(normals, axis=-1, keepdims=True)
    a = (i[:-1, :-1] * res + j[:-1, :-1]).ravel()
    faces = np.concatenate([np.stack([a, a + res, a + 1], 1), np.stack([a + 1, a + res, a + res + 1], 1)])
    geometry = gfx.Geometry(positions=xyz.reshape(-1, 3).astype(np.float32), indices=faces.astype(np.int32),
                            normals=normals.reshape(-1, 3).astype(np.float32))
    return gfx.Mesh(geometry, gfx.MeshPhongMaterial(color=terrain.low_colour, shininess=0))


class _OneLineParser(argparse.ArgumentParser):
    def error(self, message: str):
        self.exit(2, f"{self.prog}: error: {message}\n")


#: What this example imports beyond NumPy (the project's examples extra: the engine, and pyrr and numba
#: for the repository's engine/ and culling), looked for before anything is built; a window also needs
#: :data:`WINDOW_MODULES` (rendercanvas's GLFW backend).
ENGINE_MODULES = ("pygfx", "rendercanvas", "PIL", "pyrr", "numba")
WINDOW_MODULES = ("glfw",)


def parse_args(argv=None) -> argparse.Namespace:
    p = _OneLineParser(prog=Path(__file__).name, description="A forest in pygfx, culled by view distance.",
                       epilog="It imports this repository's engine/ and scenes/ besides culling: run it from the "
                              "checkout, or a copy with the checkout on PYTHONPATH (its docstring: copying it).")
    p.add_argument("--headless", action="store_true", help="render offscreen (the default with no display)")
    p.add_argument("--frames", type=int, default=None, help="stop after N frames (headless default: 60)")
    p.add_argument("--objects", type=int, default=200_000, help="objects in the forest (default 200000)")
    p.add_argument("--out", type=Path, default=Path("out/pygfx_forest"),
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
    yet) and the camera (y up) with its height above the ground."""
    x, y, z = (float(v) for v in eye)
    query = "no query (--all)" if query_ms is None else f"query {np.median(query_ms):.2f} ms (median of {len(query_ms)})"
    rate = "first frame" if fps is None else f"{fps:.1f} fps"
    return (f"frame {frame}: drawn {drawn} of {total} objects, {query}, {rate}, camera at ({x:.1f}, {y:.1f}, {z:.1f}), "
            f"{y - ground:.1f} m above the ground")


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
    headless = args.headless or not (os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY"))
    missing = missing_message(ENGINE_MODULES + (() if headless else WINDOW_MODULES))
    if missing:  # one line, not the ModuleNotFoundError of the first import below
        print(missing, file=sys.stderr)
        return 1
    if not headless:
        from engine.display import display_problem

        problem = display_problem()
        if problem is not None:  # GLFW would abort the process on an assertion
            print(f"{Path(__file__).name}: error: cannot open a window: {problem} (--headless renders offscreen)",
                  file=sys.stderr)
            return 1
    if headless:
        from engine.files import unwritable_folder

        problem = unwritable_folder(args.out)
        if problem is not None:
            print(f"{Path(__file__).name}: error: {problem} (choose another --out)", file=sys.stderr)
            return 1
    import pygfx as gfx
    import pylinalg as la

    from engine.camera import MAX_PITCH_DEG, above_ground

    if headless:
        from rendercanvas.offscreen import RenderCanvas, loop
    else:
        from rendercanvas.auto import RenderCanvas, loop
    warm_up_kernels()
    print(f"building {args.objects} objects and their tree ...", flush=True)
    scene, tree, _, object_of = build_world(args.objects)
    matrices, offsets = instance_matrices(scene), scene.kind_offsets
    try:
        print(f"pygfx on {choose_adapter()}", flush=True)
    except RuntimeError as exc:                      # no adapter at all: one line, as every other failure
        print(f"{Path(__file__).name}: error: {exc}", file=sys.stderr)
        return 1

    canvas = RenderCanvas(size=SIZE, title="pygfx forest: view-distance culling",
                          **({"pixel_ratio": 1} if headless else {"max_fps": WINDOW_FPS}))
    renderer = gfx.WgpuRenderer(canvas, pixel_scale=1, ppaa="none")    # pygfx supersamples 2x by default: 4x the pixels
    world = gfx.Scene()
    world.add(gfx.Background.from_color(scene.sky), gfx.AmbientLight(intensity=0.8), ground_mesh(scene.terrain))
    sun = gfx.DirectionalLight(intensity=2.5)
    sun.local.position = (0.4, 1.0, 0.3)
    world.add(sun)
    kinds = [KindInstances(world, kind_geometry(kind.mesh), gfx.MeshPhongMaterial(color=kind.colour, flat_shading=True))
             for kind in scene.kinds]              # one InstancedMesh per kind, room for what a frame draws
    aspect = SIZE[0] / SIZE[1]                       # pygfx's fov spans the mean of width and height
    fov = 2.0 * np.degrees(np.arctan(np.tan(np.radians(30.0)) * (1.0 + aspect) / 2.0))   # 60 degrees vertically
    camera = gfx.PerspectiveCamera(fov, aspect, depth_range=(0.3, 6000.0))
    start = time.perf_counter()
    state = {"flown": False, "frame": 0, "start": start, "last": start, "said": start, "said_frame": 0, "queried": 0}
    frames = args.frames or (60 if headless else None)
    held: set[str] = set()                           # keys down now: we poll them, as a game loop does
    if not headless:
        def on_key(event) -> None:
            key = event["key"].lower()
            if key == "escape":
                canvas.close()                       # as the close button does: the loop ends, status 0
                return
            (held.add if event["event_type"] == "key_down" else held.discard)(key)
            state["flown"] = True                    # the first key takes the camera off its path
        canvas.add_event_handler(on_key, "key_down", "key_up")
    frame_ms: list[float] = []
    query_ms: list[float] = []

    def fly(dt: float) -> None:
        moved = False
        for key in held:
            if key in MOVES:
                camera.local.position = camera.local.position + la.vec_transform_quat(MOVES[key], camera.local.rotation) * 40.0 * dt
                moved = True
            elif key in RISES:
                camera.local.position = camera.local.position + np.array([0.0, RISES[key] * 40.0 * dt, 0.0])
                moved = True
            elif key in TURNS:
                axis, sign = TURNS[key]
                turn = la.quat_from_axis_angle(axis, sign * np.radians(60.0) * dt)
                rotation = camera.local.rotation     # heading turns about the world's up, pitch about the camera's x
                turned = la.quat_mul(turn, rotation) if axis[1] else la.quat_mul(rotation, turn)
                ahead = la.vec_transform_quat((0.0, 0.0, -1.0), turned)   # pygfx's camera looks down its -z
                up = la.vec_transform_quat((0.0, 1.0, 0.0), turned)
                # Never over the top (the demo's limit): a long frame's step can pass the vertical, where the
                # pitch read from ``ahead`` alone looks small again; the camera's up then points down.
                if axis[1] or (up[1] > 0.0 and abs(np.degrees(np.arcsin(np.clip(ahead[1], -1.0, 1.0)))) <= MAX_PITCH_DEG):
                    camera.local.rotation = turned
        if moved:                                    # the demo's rule: the eye stays above the ground
            camera.local.position = above_ground(camera.local.position, scene.ground_height)

    def draw_frame() -> None:                        # pygfx's draw callback: cull, upload, render
        i, t0 = state["frame"], time.perf_counter()
        if i == 0:
            state.update(said=t0, start=t0, last=t0)
        fly(t0 - state["last"])
        state["last"] = t0
        if state["flown"]:
            eye = np.asarray(camera.world.position, dtype=np.float64)
        else:
            eye, target = camera_at(scene, i / FPS if headless else t0 - state["start"])
            camera.local.position = eye
            camera.look_at(target)
        t_query = time.perf_counter()
        if args.all:
            visible = np.arange(len(scene))
        else:
            visible = np.sort(object_of[tree.query(eye, exact=True)])   # sorted: objects are sorted by kind
        query_ms.append(1000.0 * (time.perf_counter() - t_query))
        cuts = np.searchsorted(visible, offsets)     # the objects are rows grouped by kind: a kind a slice
        try:
            for k, instances in enumerate(kinds):
                instances.show(matrices[visible[cuts[k]:cuts[k + 1]]])
        except SystemExit as exc:                    # pygfx's instance limit (KindInstances)
            if headless:
                raise
            state["error"] = str(exc.code)           # a window's callback: close it, and say it once after
            canvas.close()
            return
        renderer.render(world, camera)
        if i == 0:  # the frame rate, the path's clock and the first step count from the first frame's end: pygfx
            end = time.perf_counter()                # compiles its shaders in it (a second and more on a CPU)
            state.update(said=end, start=end, last=end)
        last = frames is not None and i + 1 >= frames
        if t0 - state["said"] >= SUMMARY_SECONDS or last:
            # the frames finished since the last line, from its frame's start to this one's (this frame is
            # still to be presented: counting it would time its culling and recording alone)
            done = i - state["said_frame"]
            fps = done / max(t0 - state["said"], 1e-9) if done else None
            ground = float(scene.ground_height(eye[0], eye[2]))
            print(summary(i, visible.size, len(scene), None if args.all else query_ms[state["queried"]:], fps,
                          eye, ground), flush=True)
            state.update(said=t0, said_frame=i, queried=len(query_ms))
            if not headless:                         # a window runs for hours: keep only what the next line needs
                query_ms.clear()
                state["queried"] = 0
        state["frame"] = i + 1
        if not headless:
            if last:
                canvas.close()
            else:
                canvas.request_draw()

    canvas.request_draw(draw_frame)
    print("first frame: pygfx compiles its shaders (seconds on a CPU renderer) ...", flush=True)
    if not headless:
        # Ctrl-C: rendercanvas's loop logs "Received signal Interrupt", closes the window and returns; its
        # handler is replaced once the loop runs, and the interrupt raised after it: one line, status 130.
        # The handler runs between any two bytecodes, a frame's drawing among them: stopping the loop there
        # closed the canvas under the frame ("Draw error", a traceback), so the stop waits for the loop's turn.
        def on_ctrl_c(_signum, _frame) -> None:
            state["interrupted"] = True
            loop.call_soon_threadsafe(loop.stop)

        loop.call_soon(lambda: signal.signal(signal.SIGINT, on_ctrl_c))
        loop.run()                                   # until Esc, the close button or --frames
        if state.get("interrupted"):
            raise KeyboardInterrupt
        if "error" in state:
            print(state["error"], file=sys.stderr)
            return 1
        return 0
    from PIL import Image

    from engine.files import stale_frames, write_atomically

    args.out.mkdir(parents=True, exist_ok=True)
    for i in range(frames):
        t0 = time.perf_counter()
        image = np.asarray(canvas.draw())            # renders and reads the frame back
        frame_ms.append(1000.0 * (time.perf_counter() - t0))
        frame = Image.fromarray(image[:, :, :3])
        path = args.out / f"frame_{i:04d}.png"
        try:
            write_atomically(path, frame.save)       # whole or not at all (Ctrl-C)
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
