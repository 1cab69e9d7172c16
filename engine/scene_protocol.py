"""What the engine reads from a scene, as structural types.

The engine imports no scene (scenes import no engine either): the demo wires
the two together.  These protocols name the attributes the culling pipeline
and the renderer read, so any object with them (``scenes.Scene``, a test's
stand-in) type-checks without either side importing the other.  They are
read-only properties so that a dataclass field of a narrower type (a tuple
of kinds, an optional terrain) still matches.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

import numpy as np
from numpy.typing import NDArray

__all__ = ["KindData", "MarkersData", "SceneData", "TerrainData"]


class KindData(Protocol):
    """One object kind: its name, the mesh it is drawn with and its colour."""

    @property
    def name(self) -> str: ...

    @property
    def mesh(self) -> str: ...

    @property
    def colour(self) -> tuple[float, float, float]: ...


class TerrainData(Protocol):
    """A square height field drawn as one grid mesh."""

    @property
    def origin(self) -> tuple[float, float]: ...

    @property
    def heights(self) -> NDArray[Any]: ...

    @property
    def step(self) -> float: ...

    @property
    def low_colour(self) -> tuple[float, float, float]: ...

    @property
    def high_colour(self) -> tuple[float, float, float]: ...

    @property
    def height_range(self) -> tuple[float, float]: ...


class MarkersData(Protocol):
    """Marks a scene asks to have drawn on top of the frame: boxes and wireframe spheres, a colour each.

    ``box_centres`` (k, 3), ``box_half`` (k,) half edges, ``box_colours`` (k, 4) RGBA;
    ``sphere_centres`` (j, 3), ``sphere_radii`` (j,), ``sphere_colours`` (j, 4).
    """

    @property
    def box_centres(self) -> NDArray[Any]: ...

    @property
    def box_half(self) -> NDArray[Any]: ...

    @property
    def box_colours(self) -> NDArray[Any]: ...

    @property
    def sphere_centres(self) -> NDArray[Any]: ...

    @property
    def sphere_radii(self) -> NDArray[Any]: ...

    @property
    def sphere_colours(self) -> NDArray[Any]: ...


class SceneData(Protocol):
    """Objects as structure-of-arrays sorted by kind, plus ground, sky and fog.

    Arrays have one row per object: ``centres`` (n, 3); ``view_distance``,
    ``bounding_radius``, ``begin_distance`` (n,) float64; ``yaw``, ``tint``,
    ``highlight`` (n,) float32; ``kind_offsets`` (kinds + 1,) int64; highlighted
objects are drawn towards ``highlight_colour``.
    """

    @property
    def kinds(self) -> Sequence[KindData]: ...

    @property
    def kind_offsets(self) -> NDArray[np.int64]: ...

    @property
    def centres(self) -> NDArray[Any]: ...

    @property
    def view_distance(self) -> NDArray[Any]: ...

    @property
    def bounding_radius(self) -> NDArray[Any]: ...

    @property
    def begin_distance(self) -> NDArray[Any]: ...

    @property
    def yaw(self) -> NDArray[Any]: ...

    @property
    def tint(self) -> NDArray[Any]: ...

    @property
    def highlight(self) -> NDArray[Any]: ...

    @property
    def terrain(self) -> TerrainData | None: ...

    @property
    def sky(self) -> tuple[float, float, float]: ...

    @property
    def fog_distance(self) -> float: ...

    @property
    def highlight_colour(self) -> tuple[float, float, float]: ...

    def __len__(self) -> int: ...
