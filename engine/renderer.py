"""Turns a scene's arrays into GPU buffers and draws a frame with moderngl.

One instanced draw call per object kind and level of detail: each (kind,
level) pair owns a mesh buffer, an instance buffer preallocated to a capacity
that doubles when a frame needs more (``Buffer.orphan`` keeps the vertex
array bindings valid), and a vertex array tying them to the object program.  The ground is one indexed grid.
The renderer only draws; what to draw comes from the culling pipeline.
"""

from __future__ import annotations

from time import perf_counter
from typing import TYPE_CHECKING

import numpy as np
from numpy.typing import ArrayLike, NDArray

from engine.lod import MAX_LEVELS, lod_chain
from engine.meshes import get_mesh
from engine.records import INSTANCE_FLOATS
from engine.shaders import load_program, uniform

if TYPE_CHECKING:
    import moderngl

    from engine.scene_protocol import KindData, SceneData, TerrainData

__all__ = ["INITIAL_INSTANCE_CAPACITY", "Renderer", "terrain_mesh"]

#: Instances each kind's GPU buffer holds before its first growth (32 KiB).
INITIAL_INSTANCE_CAPACITY = 1024

LIGHT_DIR = np.array([0.45, 0.8, 0.35]) / np.linalg.norm([0.45, 0.8, 0.35])


def _set_all(prog: moderngl.Program, view_projection: np.ndarray, common: dict[str, object]) -> None:
    """The uniforms every program of a frame shares: the view-projection and ``common``'s."""
    _set(prog, "u_view_projection", view_projection)
    for name, value in common.items():
        _set(prog, name, value)


def _set(program: moderngl.Program, name: str, value: object) -> None:
    """Set a uniform if the compiler kept it (unused uniforms are optimised out)."""
    if name in program:
        if isinstance(value, np.ndarray) and value.shape == (4, 4):
            # Column-vector maths matrix -> GLSL's column-major layout.
            uniform(program, name).write(np.ascontiguousarray(value.T, dtype=np.float32).tobytes())
        else:
            uniform(program, name).value = value


def terrain_mesh(terrain: TerrainData) -> tuple[NDArray[np.float32], NDArray[np.uint32]]:
    """Grid vertices ``(res*res, 6)`` float32 (position, normal) and triangle indices uint32."""
    h = terrain.heights
    res = h.shape[0]
    step = terrain.step
    coords = np.arange(res) * step
    xs, zs = np.meshgrid(terrain.origin[0] + coords, terrain.origin[1] + coords)
    dz, dx = np.gradient(h, step)
    normals = np.stack([-dx, np.ones_like(h), -dz], axis=-1)
    normals /= np.linalg.norm(normals, axis=-1, keepdims=True)
    verts = np.concatenate([np.stack([xs, h, zs], axis=-1), normals], axis=-1).reshape(-1, 6).astype(np.float32)
    i, j = np.meshgrid(np.arange(res - 1), np.arange(res - 1), indexing="ij")
    a = (i * res + j).ravel()
    b, c, d = a + 1, a + res, a + res + 1
    indices = np.stack([a, c, b, b, c, d], axis=1).astype(np.uint32).ravel()
    return verts, indices


class _KindBatch:
    """GPU state of one object kind at one level: mesh, growing instance buffer, vertex array."""

    def __init__(self, ctx: moderngl.Context, program: moderngl.Program, kind: KindData, level: int = 0) -> None:
        chain = lod_chain(kind.mesh)
        mesh = get_mesh(chain.meshes[level])
        self.kind = kind
        self.level = level
        self.billboard = chain.billboard[level]
        self.triangles = mesh.triangle_count
        self.vertex_count = mesh.vertices.shape[0]
        self.mesh_buffer = ctx.buffer(mesh.vertices.tobytes())
        self.capacity = INITIAL_INSTANCE_CAPACITY
        self.instances = ctx.buffer(reserve=self.capacity * INSTANCE_FLOATS * 4, dynamic=True)
        self.vao = ctx.vertex_array(program, [
            (self.mesh_buffer, "3f 3f", "in_position", "in_normal"),
            (self.instances, "4f 4f/i", "in_instance", "in_params"),
        ])
        self.count = 0

    def upload(self, records: np.ndarray) -> None:
        n = records.shape[0]
        if n > self.capacity:
            self.capacity = 1 << (n - 1).bit_length()
            self.instances.orphan(self.capacity * INSTANCE_FLOATS * 4)
        if n:
            self.instances.write(records)
        self.count = n

    def release(self) -> None:
        for obj in (self.vao, self.instances, self.mesh_buffer):
            obj.release()


class Renderer:
    """Draws one scene: sky, ground, and the uploaded instances of every kind.

    Parameters
    ----------
    ctx : moderngl.Context
        pyglet's context in a window, or a standalone EGL context headless.
    scene : scenes.Scene
    """

    def __init__(self, ctx: moderngl.Context, scene: SceneData) -> None:
        self.ctx = ctx
        self.scene = scene
        self.object_program = load_program(ctx, "object")
        self.ground_program = load_program(ctx, "ground")
        #: One batch per (kind, level), at index ``kind * MAX_LEVELS + level``; None past a kind's last level.
        self.groups: list[_KindBatch | None] = [
            _KindBatch(ctx, self.object_program, kind, level) if level < lod_chain(kind.mesh).levels else None
            for kind in scene.kinds for level in range(MAX_LEVELS)]
        self.ground_vao: moderngl.VertexArray | None = None
        self._ground_buffers: tuple[moderngl.Buffer, ...] = ()
        if scene.terrain is not None:
            verts, indices = terrain_mesh(scene.terrain)
            vbo, ibo = ctx.buffer(verts.tobytes()), ctx.buffer(indices.tobytes())
            self.ground_vao = ctx.vertex_array(self.ground_program, [(vbo, "3f 3f", "in_position", "in_normal")],
                                               index_buffer=ibo, index_element_size=4)
            self._ground_buffers = (vbo, ibo)
        self.dither = True
        self.flat = False       # unlit kind colours, no fog: for pixel tests
        #: The fog's distance is the scene's times this (the demo's +/- view-distance scale: a larger
        #: scale shows objects farther away, and the fog thins with it so that they can be seen).
        self.fog_scale = 1.0

    @property
    def batches(self) -> list[_KindBatch]:
        """The full-detail batch of each kind."""
        return [g for g in self.groups[::MAX_LEVELS] if g is not None]

    def upload(self, instances: np.ndarray, kind_starts: np.ndarray) -> None:
        """Write each kind's run of ``instances`` (m, 8) float32 into its full-detail GPU buffer.

        ``kind_starts`` (kinds + 1,) says where each kind's run begins, as the
        culling pipeline hands it over.  One ``write`` per kind; O(m) bytes.
        """
        starts = np.repeat(np.asarray(kind_starts, dtype=np.int64), MAX_LEVELS)[MAX_LEVELS - 1:]
        self.upload_groups(instances, starts)

    def upload_groups(self, instances: np.ndarray, group_starts: np.ndarray) -> None:
        """Write each (kind, level) run of ``instances`` (m, 8) float32 into its GPU buffer.

        ``group_starts`` (kinds * MAX_LEVELS + 1,) says where the run of group
        ``kind * MAX_LEVELS + level`` begins (:func:`engine.lod.lod_instances`).
        One ``write`` per non-empty group; O(m) bytes.
        """
        for g, batch in enumerate(self.groups):
            run = instances[group_starts[g]:group_starts[g + 1]]
            if batch is not None:
                batch.upload(run)
            elif run.shape[0]:
                raise ValueError(f"{run.shape[0]} instances for level {g % MAX_LEVELS} of kind "
                                 f"{self.scene.kinds[g // MAX_LEVELS].name!r}, which has no such level")

    def triangles(self) -> int:
        """Triangles the uploaded instances make (what :meth:`draw` will rasterise)."""
        return sum(g.count * g.triangles for g in self.groups if g is not None)

    def draw(self, view_projection: NDArray[np.float64], camera_position: ArrayLike,
             framebuffer: moderngl.Framebuffer) -> float:
        """Clear ``framebuffer`` and draw ground and instances; returns milliseconds
        including ``ctx.finish()`` (so the time is the real cost on llvmpipe)."""
        import moderngl

        t0 = perf_counter()
        ctx, scene = self.ctx, self.scene
        framebuffer.use()
        framebuffer.clear(*scene.sky, 1.0, depth=1.0)
        ctx.enable_only(moderngl.DEPTH_TEST)
        cam = tuple(float(v) for v in np.asarray(camera_position, dtype=np.float64).reshape(3))
        common = dict(u_camera=cam, u_light_dir=tuple(LIGHT_DIR), u_sky=tuple(scene.sky),
                      u_fog_distance=float(scene.fog_distance) * self.fog_scale, u_flat=self.flat)
        terrain = scene.terrain
        if self.ground_vao is not None and terrain is not None:
            prog = self.ground_program
            _set_all(prog, view_projection, common)
            _set(prog, "u_low_colour", terrain.low_colour)
            _set(prog, "u_high_colour", terrain.high_colour)
            _set(prog, "u_height_range", terrain.height_range)
            self.ground_vao.render(moderngl.TRIANGLES)
        prog = self.object_program
        _set_all(prog, view_projection, common)
        _set(prog, "u_dither", self.dither)
        _set(prog, "u_highlight_colour", scene.highlight_colour)
        for batch in self.groups:
            if batch is not None and batch.count:
                _set(prog, "u_colour", tuple(batch.kind.colour))
                _set(prog, "u_billboard", batch.billboard)
                batch.vao.render(moderngl.TRIANGLES, vertices=batch.vertex_count, instances=batch.count)
        ctx.finish()
        return (perf_counter() - t0) * 1e3

    def release(self) -> None:
        for batch in self.groups:
            if batch is not None:
                batch.release()
        if self.ground_vao is not None:
            self.ground_vao.release()
            for buf in self._ground_buffers:
                buf.release()
        self.object_program.release()
        self.ground_program.release()
