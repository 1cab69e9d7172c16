"""A fly camera: position and orientation in, view and projection matrices out.

World axes are OpenGL's: x east, y up, z south (the camera looks down -z at
yaw 0).  pyrr builds the matrices; pyrr writes them for row vectors
(``v @ M``), so :meth:`Camera.view_projection` transposes once and hands out
the column-vector form (``M @ v``) that the frustum maths and GLSL expect.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field, replace

import numpy as np
from numpy.typing import ArrayLike, NDArray
from pyrr import matrix44

__all__ = ["CAMERA_RADIUS", "Camera", "MAX_PITCH_DEG", "above_ground"]

#: Pitch is clamped just short of straight up/down so the look-at basis never
#: degenerates (forward parallel to up would make a zero cross product).
MAX_PITCH_DEG = 89.0
#: Radius of the camera's collision probe (metres): a person-sized sphere, and
#: so the least height of the eye above the ground.
CAMERA_RADIUS = 1.5


def above_ground(position: ArrayLike, ground_height: Callable[[float, float], ArrayLike],
                 clearance: float = CAMERA_RADIUS) -> NDArray[np.float64]:
    """``position`` (x, y, z; y up), raised where needed to ``clearance`` above the ground.

    ``ground_height(x, z)`` is the ground's height there (a scene's
    ``ground_height``).  Returns a new array, shape (3,), float64: a fly
    camera stays above the terrain however it is steered, the demo's and the
    examples' alike.

    >>> above_ground((1.0, -4.0, 2.0), lambda x, z: 10.0).tolist()
    [1.0, 11.5, 2.0]
    >>> above_ground((1.0, 40.0, 2.0), lambda x, z: 10.0).tolist()
    [1.0, 40.0, 2.0]
    """
    p = _as_position(position)
    p[1] = max(p[1], float(np.asarray(ground_height(p[0], p[2]))) + clearance)
    return p


def _as_position(value: ArrayLike) -> NDArray[np.float64]:
    pos = np.array(value, dtype=np.float64).reshape(-1)
    if pos.shape != (3,) or not np.all(np.isfinite(pos)):
        raise ValueError(f"camera position must be 3 finite numbers, got {value!r}")
    return pos


@dataclass
class Camera:
    """Perspective fly camera.

    Parameters
    ----------
    position : array_like, shape (3,)
        Eye point in world units (metres).
    yaw, pitch : float
        Heading and elevation in degrees; yaw 0 looks down -z, yaw 90 down +x (kept in ``[0, 360)``).
    fov_y : float
        Vertical field of view in degrees.
    aspect : float
        Width over height of the image.
    near, far : float
        Clip plane distances, ``0 < near < far``.

    Examples
    --------
    >>> cam = Camera(position=(0, 10, 0), yaw=90.0)
    >>> [round(float(v), 6) + 0.0 for v in cam.forward()]
    [1.0, 0.0, 0.0]
    """

    position: np.ndarray = field(default_factory=lambda: np.zeros(3))
    yaw: float = 0.0
    pitch: float = 0.0
    fov_y: float = 60.0
    aspect: float = 16.0 / 9.0
    near: float = 0.5
    far: float = 6000.0

    def __post_init__(self) -> None:
        self.position = _as_position(self.position)
        if not (0.0 < self.near < self.far and math.isfinite(self.far)):
            raise ValueError(f"need 0 < near < far, got near={self.near}, far={self.far}")
        if not (0.0 < self.fov_y < 180.0):
            raise ValueError(f"fov_y must be in (0, 180) degrees, got {self.fov_y}")
        if not (self.aspect > 0.0 and math.isfinite(self.aspect)):
            raise ValueError(f"aspect must be finite and positive, got {self.aspect}")
        self.yaw = float(self.yaw) % 360.0  # one range for every heading, as look() and look_at() keep it
        self.pitch = float(np.clip(self.pitch, -MAX_PITCH_DEG, MAX_PITCH_DEG))

    # -- orientation ---------------------------------------------------------
    def forward(self) -> np.ndarray:
        """Unit view direction, shape (3,), float64."""
        yaw, pitch = math.radians(self.yaw), math.radians(self.pitch)
        return np.array([math.sin(yaw) * math.cos(pitch), math.sin(pitch), -math.cos(yaw) * math.cos(pitch)])

    def right(self) -> np.ndarray:
        """Unit vector to the right of the view direction, level with the ground."""
        yaw = math.radians(self.yaw)
        return np.array([math.cos(yaw), 0.0, math.sin(yaw)])

    def look(self, d_yaw: float, d_pitch: float) -> None:
        """Turn by the given angles in degrees (pitch stays clamped)."""
        self.yaw = (self.yaw + d_yaw) % 360.0
        self.pitch = float(np.clip(self.pitch + d_pitch, -MAX_PITCH_DEG, MAX_PITCH_DEG))

    def look_at(self, target: ArrayLike) -> None:
        """Point the camera at ``target`` (shape (3,)); no-op if it is the eye."""
        d = _as_position(target) - self.position
        horiz = math.hypot(d[0], d[2])
        if horiz == 0.0 and d[1] == 0.0:
            return
        self.yaw = math.degrees(math.atan2(d[0], -d[2])) % 360.0
        self.pitch = float(np.clip(math.degrees(math.atan2(d[1], horiz)), -MAX_PITCH_DEG, MAX_PITCH_DEG))

    def move_local(self, forward: float, right: float, up: float) -> None:
        """Fly: ``forward`` along the view direction, ``right`` sideways, ``up`` along world y."""
        self.position = self.position + forward * self.forward() + right * self.right() + np.array([0.0, up, 0.0])

    def copy(self) -> Camera:
        return replace(self, position=self.position.copy())

    # -- matrices ------------------------------------------------------------
    def view_matrix(self) -> NDArray[np.float64]:
        """World to eye, column-vector form, shape (4, 4), float64."""
        up = np.array([0.0, 1.0, 0.0])
        m: NDArray[np.float64] = matrix44.create_look_at(self.position, self.position + self.forward(), up,
                                                         dtype=np.float64)
        return m.T

    def projection_matrix(self) -> NDArray[np.float64]:
        """Eye to clip (OpenGL depth range -1..1), column-vector form, shape (4, 4), float64."""
        m: NDArray[np.float64] = matrix44.create_perspective_projection(self.fov_y, self.aspect, self.near, self.far, dtype=np.float64)
        return m.T

    def view_projection(self) -> NDArray[np.float64]:
        """World to clip, column-vector form (``clip = M @ [x, y, z, 1]``), shape (4, 4), float64."""
        return self.projection_matrix() @ self.view_matrix()
