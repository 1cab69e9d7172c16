"""docs/INTEGRATION.md section 1's drawing block, run as written after the block before it, and its picture
checked: an engine programmer copies these lines, so they must draw what the guide says (issue: the guide
named the calls but gave none of them, and an integrator read the demo's source to find them)."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np

GUIDE = Path(__file__).resolve().parents[2] / "docs" / "INTEGRATION.md"


def _block(marker: str) -> str:
    """The fenced python block of the guide that holds ``marker``."""
    for block in re.findall(r"```python\n(.*?)```", GUIDE.read_text(), flags=re.S):
        if marker in block:
            return block
    raise AssertionError(f"no block of {GUIDE.name} holds {marker!r}")


def test_the_guides_drawing_block_draws_the_scene_and_the_visited_nodes(gl_ctx, monkeypatch):
    import moderngl

    from culling import ViewDistanceTree
    from engine import Camera, CullingPipeline
    from scenes import build_scene

    scene = build_scene("forest", objects=20_000, seed=1)           # the block before, as the guide has it
    world = ViewDistanceTree(size=scene.world_size, origin=scene.world_origin, dim=3)
    pipeline = CullingPipeline(scene, world, world.insert_many(scene.centres, scene.view_distance))
    eye = Camera(position=scene.camera_pose(0.3).position, yaw=45.0, pitch=-10.0)
    monkeypatch.setattr(moderngl, "create_standalone_context", lambda **_: gl_ctx)  # the session's context
    names = {"scene": scene, "pipeline": pipeline, "eye": eye}
    exec(_block("build_overlay(pipeline.trace)"), names)  # noqa: S102 - the guide's own lines
    stats, frame, target = names["stats"], names["frame"], names["target"]
    assert stats.draw_ms > 0 and stats.in_frustum > 0 and frame.instances.shape[0] >= stats.in_frustum
    image = np.frombuffer(names["pixels"], dtype=np.uint8).reshape(360, 640, 3)
    assert image.std() > 10                                              # a picture, not one clear colour
    names["renderer"].draw(names["view_projection"], eye.position, target)  # the same frame, no overlay
    bare = np.frombuffer(target.read(components=3), dtype=np.uint8).reshape(360, 640, 3)
    lines = np.abs(image.astype(int) - bare).max(axis=-1) > 40
    assert lines.sum() > 1000                                            # the visited nodes' boxes, drawn
    target.release()
