"""The demo engine: camera, frustum, culling pipeline, renderer, overlay, HUD, window.

``engine.BruteForceIndex`` is ``culling.BruteForceIndex`` (the reference index,
the ``--brute-force`` baseline), and ``engine.SpatialIndex`` names
``culling.PointIndex``, the one protocol the pipeline takes.

It turns a scene's NumPy arrays into GPU buffers and draws what the
view-distance tree (``culling``) says the camera can see.  Importing it opens
no window and creates no GL context; the modules that need pyglet or moderngl
import them when they are used.
"""

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from culling import BruteForceIndex
    from engine.camera import Camera
    from engine.culling_pipeline import CullingPipeline
    from engine.frame_stats import FrameStats
    from engine.frustum import frustum_corners, frustum_planes, spheres_in_frustum
    from engine.meshes import MESHES, Mesh, get_mesh
    from engine.scene_protocol import KindData, SceneData, TerrainData
    from engine.shaders import ShaderError, load_program

#: Where each public name lives: imported on first use (PEP 562), so that ``import engine.hud`` (a command
#: line's ``--help``) loads neither numba nor pyrr.
_HOMES = {
    "Camera": "engine.camera",
    "BruteForceIndex": "culling", "CullingPipeline": "engine.culling_pipeline", "FrameStats": "engine.frame_stats",
    "frustum_corners": "engine.frustum", "frustum_planes": "engine.frustum", "spheres_in_frustum": "engine.frustum",
    "MESHES": "engine.meshes", "Mesh": "engine.meshes", "get_mesh": "engine.meshes",
    "KindData": "engine.scene_protocol", "SceneData": "engine.scene_protocol", "TerrainData": "engine.scene_protocol",
    "ShaderError": "engine.shaders", "load_program": "engine.shaders",
}


#: Former names kept working: the engine's own index protocol is ``culling.PointIndex`` now.
_ALIASES = {"SpatialIndex": ("culling", "PointIndex")}


def __getattr__(name: str) -> Any:
    home, real = _ALIASES.get(name, (_HOMES.get(name), name))
    if home is None:
        raise AttributeError(f"module 'engine' has no attribute {name!r}")
    value = getattr(importlib.import_module(home), real)
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
    "TerrainData",
    "frustum_corners",
    "frustum_planes",
    "get_mesh",
    "load_program",
    "spheres_in_frustum",
]
