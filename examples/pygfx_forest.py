"""The view-distance tree inside pygfx: a forest drawn with one InstancedMesh per kind.

    python examples/pygfx_forest.py [--headless] [--frames N] [--objects N] [--out DIR] [--all]

Every object of the forest scene (grass, pebbles, bushes, rocks, trees, towers) has its own view
distance.  They go into a ``culling.ViewDistanceTree`` once; in pygfx's draw callback the tree is
asked at the camera, and only the objects whose view distance reaches it get their instance matrices
uploaded into their kind's ``InstancedMesh``.  pygfx draws those instances; the GPU clips what lies
outside the view (pygfx has no frustum culling of its own yet).  With a display a window opens: the
camera flies the scene's path until you touch a key, then W/A/S/D, space/shift and the arrow keys
fly it.  With no display, or ``--headless``, frames render offscreen (wgpu on Vulkan, lavapipe without a
GPU) into ``DIR/frame_NNNN.png``.  Each frame prints ``drawn D of N objects, query X ms``;
``--all`` draws every object instead, to time the engine without the tree.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the checkout: scenes/ and culling/
import pygfx as gfx  # noqa: E402
import pylinalg as la  # noqa: E402

from culling import ViewDistanceTree  # noqa: E402
from scenes.base import mesh_base  # noqa: E402
from scenes.forest import make_forest  # noqa: E402

FPS = 30.0            # headless frames are this far apart on the camera path
PATH_SECONDS = 60.0   # one lap of the scene's camera path
SIZE = (640, 360)
MOVES = {"w": (0, 0, -1), "s": (0, 0, 1), "a": (-1, 0, 0), "d": (1, 0, 0), " ": (0, 1, 0), "shift": (0, -1, 0)}
TURNS = {"arrowleft": ((0, 1, 0), 1), "arrowright": ((0, 1, 0), -1), "arrowup": ((1, 0, 0), 1), "arrowdown": ((1, 0, 0), -1)}


def build_world(objects: int, seed: int = 1):
    """The forest (y up, like pygfx), its tree, and handle -> object index."""
    scene = make_forest(objects, seed)
    tree = ViewDistanceTree(size=scene.world_size, origin=scene.world_origin)
    handles = tree.insert_many(scene.centres, scene.view_distance)
    object_of = np.zeros(int(handles.max(initial=-1)) + 1, dtype=np.int64)
    object_of[handles] = np.arange(len(scene))      # a handle is not an index: map it back
    return scene, tree, object_of


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
    m[:, 0, 0], m[:, 2, 0], m[:, 1, 1], m[:, 0, 2], m[:, 2, 2] = r * c, r * s, r, -r * s, r * c
    m[:, 3, :3], m[:, 3, 3] = scene.centres, 1.0   # the translation is the last *row* here
    return m


def kind_geometry(mesh: str) -> gfx.Geometry:
    """A unit shape per mesh name, turned y-up and standing where the scene expects its base."""
    shapes = {"grass_card": lambda: gfx.cone_geometry(0.35, 1.4, 4), "pebble": lambda: gfx.icosahedron_geometry(0.4),
              "bush": lambda: gfx.sphere_geometry(0.76, 8, 6), "rock": lambda: gfx.dodecahedron_geometry(0.6),
              "cone_tree": lambda: gfx.cone_geometry(0.55, 1.98, 8), "tower": lambda: gfx.cylinder_geometry(0.2, 0.1, 1.94, 8)}
    geometry = shapes[mesh]()
    for name in ("positions", "normals"):           # pygfx builds cones along z; the scene's up is y
        v = getattr(geometry, name).data
        v[:] = np.stack([v[:, 0], v[:, 2], -v[:, 1]], axis=1)
    geometry.positions.data[:, 1] += mesh_base(mesh) - geometry.positions.data[:, 1].min()
    return geometry


def ground_mesh(terrain, stride: int = 2) -> gfx.Mesh:
    """The height field as one mesh, every ``stride``-th sample (lavapipe pays for every triangle)."""
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


def parse_args(argv=None) -> argparse.Namespace:
    p = _OneLineParser(prog=Path(__file__).name, description="A forest in pygfx, culled by view distance.")
    p.add_argument("--headless", action="store_true", help="render offscreen (the default with no display)")
    p.add_argument("--frames", type=int, default=None, help="stop after N frames (headless default: 60)")
    p.add_argument("--objects", type=int, default=200_000, help="objects in the forest (default 200000)")
    p.add_argument("--out", type=Path, default=Path("out/pygfx_forest"), help="folder for headless frames")
    p.add_argument("--all", action="store_true", help="draw every object, no culling (to time the engine alone)")
    args = p.parse_args(argv)
    if args.objects < 1 or (args.frames is not None and args.frames < 1):
        p.error("--objects and --frames must be at least 1")
    return args


def main(argv=None) -> None:
    args = parse_args(argv)
    headless = args.headless or not (os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY"))
    if headless:
        from rendercanvas.offscreen import RenderCanvas, loop
    else:
        from rendercanvas.auto import RenderCanvas, loop
    print(f"building {args.objects} objects and their tree ...", flush=True)
    scene, tree, object_of = build_world(args.objects)
    matrices, offsets = instance_matrices(scene), scene.kind_offsets

    canvas = RenderCanvas(size=SIZE, title="pygfx forest: view-distance culling", **({"pixel_ratio": 1} if headless else {}))
    renderer = gfx.WgpuRenderer(canvas, pixel_scale=1, ppaa="none")    # pygfx supersamples 2x by default: 4x the pixels
    world = gfx.Scene()
    world.add(gfx.Background.from_color(scene.sky), gfx.AmbientLight(intensity=0.8), ground_mesh(scene.terrain))
    sun = gfx.DirectionalLight(intensity=2.5)
    sun.local.position = (0.4, 1.0, 0.3)
    world.add(sun)
    meshes = []                                      # one InstancedMesh per kind, room for all of it
    for k, kind in enumerate(scene.kinds):
        mesh = gfx.InstancedMesh(kind_geometry(kind.mesh), gfx.MeshPhongMaterial(color=kind.colour, flat_shading=True),
                                 max(int(offsets[k + 1] - offsets[k]), 1))
        meshes.append(mesh)
        world.add(mesh)
    aspect = SIZE[0] / SIZE[1]                       # pygfx's fov spans the mean of width and height
    fov = 2.0 * np.degrees(np.arctan(np.tan(np.radians(30.0)) * (1.0 + aspect) / 2.0))   # 60 degrees vertically
    camera = gfx.PerspectiveCamera(fov, aspect, depth_range=(0.3, 6000.0))
    state = {"flown": False, "frame": 0, "start": time.perf_counter(), "last": time.perf_counter()}
    held: set[str] = set()                           # keys down now: we poll them, as a game loop does
    if not headless:
        def on_key(event) -> None:
            (held.add if event["event_type"] == "key_down" else held.discard)(event["key"].lower())
            state["flown"] = True                    # the first key takes the camera off its path
        canvas.add_event_handler(on_key, "key_down", "key_up")
    frame_ms: list[float] = []
    query_ms: list[float] = []

    def fly(dt: float) -> None:
        for key in held:
            if key in MOVES:
                camera.local.position = camera.local.position + la.vec_transform_quat(MOVES[key], camera.local.rotation) * 40.0 * dt
            elif key in TURNS:
                axis, sign = TURNS[key]
                turn = la.quat_from_axis_angle(axis, sign * np.radians(60.0) * dt)
                rotation = camera.local.rotation     # heading turns about the world's up, pitch about the camera's x
                camera.local.rotation = la.quat_mul(turn, rotation) if axis[1] else la.quat_mul(rotation, turn)

    def draw_frame() -> None:                        # pygfx's draw callback: cull, upload, render
        i, t0 = state["frame"], time.perf_counter()
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
        cuts = np.searchsorted(visible, offsets)
        for k, mesh in enumerate(meshes):
            mine = visible[cuts[k]:cuts[k + 1]]
            mesh.instance_buffer.data["matrix"][: mine.size] = matrices[mine]
            mesh.instance_buffer.update_range(0, mine.size)
            mesh.instance_buffer.draw_range = (0, mine.size)
        renderer.render(world, camera)
        print(f"drawn {visible.size} of {len(scene)} objects, query {query_ms[-1]:.2f} ms", flush=True)
        state["frame"] = i + 1
        if not headless:
            if args.frames is not None and state["frame"] >= args.frames:
                canvas.close()
            else:
                canvas.request_draw()

    canvas.request_draw(draw_frame)
    if not headless:
        loop.run()
        return
    from PIL import Image

    args.out.mkdir(parents=True, exist_ok=True)
    frames = args.frames or 60
    for i in range(frames):
        t0 = time.perf_counter()
        image = np.asarray(canvas.draw())            # renders and reads the frame back
        frame_ms.append(1000.0 * (time.perf_counter() - t0))
        Image.fromarray(image[:, :, :3]).save(args.out / f"frame_{i:04d}.png")
    steady = frame_ms[1:] or frame_ms
    print(f"{frames} frames in {args.out}: median frame {np.median(steady):.1f} ms "
          f"(query {np.median(query_ms[1:] or query_ms):.2f} ms), first frame {frame_ms[0]:.0f} ms", flush=True)


if __name__ == "__main__":
    main()
