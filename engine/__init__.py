"""The demo engine: camera, frustum, culling pipeline, renderer, overlay, HUD, window.

It turns a scene's NumPy arrays into GPU buffers and draws what the
view-distance tree (``culling``) says the camera can see.  Importing it opens
no window and creates no GL context; the modules that need pyglet or moderngl
import them when they are used.
"""

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from engine.camera import Camera
    from engine.culling_pipeline import BruteForceIndex, CullingPipeline, FrameStats, SpatialIndex
    from engine.frustum import frustum_corners, frustum_planes, spheres_in_frustum
    from engine.meshes import MESHES, Mesh, get_mesh
    from engine.scene_protocol import KindData, SceneData, TerrainData
    from engine.shaders import ShaderError, load_program

#: Where each public name lives: imported on first use (PEP 562), so that ``import engine.hud`` (a command
#: line's ``--help``) loads neither numba nor pyrr.
_HOMES = {
    "Camera": "engine.camera",
    "BruteForceIndex": "engine.culling_pipeline", "CullingPipeline": "engine.culling_pipeline",
    "FrameStats": "engine.culling_pipeline", "SpatialIndex": "engine.culling_pipeline",
    "frustum_corners": "engine.frustum", "frustum_planes": "engine.frustum", "spheres_in_frustum": "engine.frustum",
    "MESHES": "engine.meshes", "Mesh": "engine.meshes", "get_mesh": "engine.meshes",
    "KindData": "engine.scene_protocol", "SceneData": "engine.scene_protocol", "TerrainData": "engine.scene_protocol",
    "ShaderError": "engine.shaders", "load_program": "engine.shaders",
}


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module 'engine' has no attribute {name!r}")
    value = getattr(importlib.import_module(home), name)
    globals()[name] = value
    return value


__all__ = [
    "BruteForceIndex",
    "Camera",
    "CullingPipeline",
    "FrameStats",
    "KindData",
    "MESHES",
    "Mesh",
    "SceneData",
    "ShaderError",
    "SpatialIndex",
    "TerrainData",
    "frustum_corners",
    "frustum_planes",
    "get_mesh",
    "load_program",
    "spheres_in_frustum",
]
