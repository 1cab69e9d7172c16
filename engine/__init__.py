"""The demo engine: camera, frustum, culling pipeline, renderer, overlay, HUD, window.

It turns a scene's NumPy arrays into GPU buffers and draws what the
view-distance tree (``culling``) says the camera can see.  Importing it opens
no window and creates no GL context; the modules that need pyglet or moderngl
import them when they are used.
"""

from engine.camera import Camera
from engine.culling_pipeline import BruteForceIndex, CullingPipeline, FrameStats, SpatialIndex
from engine.frustum import frustum_corners, frustum_planes, spheres_in_frustum
from engine.meshes import MESHES, Mesh, get_mesh
from engine.scene_protocol import KindData, SceneData, TerrainData
from engine.shaders import ShaderError, load_program

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
