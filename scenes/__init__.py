"""Demo scenes: deterministic NumPy arrays of objects, built from a seed and a count.

>>> sorted(SCENES)
['aggro', 'clusters', 'forest', 'swarm']
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from scenes.base import ObjectKind, Pose, Scene, Terrain

__all__ = ["DEFAULT_SCENE", "ObjectKind", "Pose", "SCENES", "Scene", "SceneInfo", "Terrain", "build_scene"]


@dataclass(frozen=True)
class SceneInfo:
    """A registry entry: the builder (imported lazily), its default object count, and the kernel groups
    of ``culling`` its frames call (:data:`culling.KERNEL_GROUPS`: a loader compiles those first)."""

    module: str
    builder: str
    default_objects: int
    key: str            # number key that switches to it
    kernels: tuple[str, ...] = ("tree",)

    def load(self) -> Callable[..., Scene]:
        import importlib

        builder: Callable[..., Scene] = getattr(importlib.import_module(self.module), self.builder)
        return builder


#: Scene name -> how to build it.  Number keys 1..4 switch in this order.
SCENES: dict[str, SceneInfo] = {
    "forest": SceneInfo("scenes.forest", "make_forest", 200_000, "1"),
    "clusters": SceneInfo("scenes.clusters", "make_clusters", 400_000, "2"),
    "swarm": SceneInfo("scenes.swarm", "make_swarm", 30_000, "3", kernels=("tree", "pairs")),
    # The swarm with the interest view on: one player's InterestManager set and its events.
    "aggro": SceneInfo("scenes.swarm", "make_aggro", 30_000, "4", kernels=("tree", "pairs", "interest")),
}
DEFAULT_SCENE = "forest"


def build_scene(name: str, objects: int | None = None, seed: int = 1) -> Scene:
    """Build scene ``name`` with ``objects`` objects (its default when None).

    Raises
    ------
    ValueError
        Unknown name (the message lists the known ones) or a negative count.
    """
    if name not in SCENES:
        raise ValueError(f"unknown scene {name!r}; choose one of: {', '.join(SCENES)}")
    info = SCENES[name]
    count = info.default_objects if objects is None else int(objects)
    if count < 0:
        raise ValueError(f"object count must be >= 0, got {count}")
    return info.load()(objects=count, seed=seed)
