"""The per-instance record: its layout, and the fades written into it.

One home for what the culling pipeline writes, the level-of-detail selector
rewrites and the object shader (``assets/shaders/object.vert.glsl``) reads:
two vec4s of float32 per instance, 32 bytes.

* ``in_instance`` = (centre x, centre y, centre z, scale: the bounding radius);
* ``in_params`` = (yaw in radians, tint -0.5..0.5, fade, highlight 0..1).

The fade column holds ``0..1`` for the far fade (and an incoming level of
detail): the share of the dither's thresholds kept; ``1 < fade <= 2`` keeps
the complementary share (an outgoing level), so two levels cross-fading
cover every pixel once (:mod:`engine.lod`).

>>> rec = build_records(np.zeros((2, 3)), np.ones(2), np.zeros(2), np.zeros(2), np.zeros(2))
>>> rec.shape, rec.dtype.name, rec[:, FADE_COLUMN].tolist()
((2, 8), 'float32', [1.0, 1.0])
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike

__all__ = ["CROSSFADE_BAND", "FADE_COLUMN", "FADE_FRACTION", "HIGHLIGHT_COLUMN", "INSTANCE_FLOATS", "SCALE_COLUMN",
           "TINT_COLUMN", "YAW_COLUMN", "build_records", "far_fade"]

#: Floats per instance: two vec4s (``in_instance``, ``in_params``), 32 bytes.
INSTANCE_FLOATS = 8
#: Columns of the record (the centre is columns 0..2).
SCALE_COLUMN = 3
YAW_COLUMN = 4
TINT_COLUMN = 5
FADE_COLUMN = 6
HIGHLIGHT_COLUMN = 7

#: Objects dither out over the last 15 % of their view distance: long enough to
#: hide the pop at walking speed, short enough that they are solid most of the time.
FADE_FRACTION = 0.15

#: Adjacent levels of detail cross-fade over 6 % of the view distance, centred
#: on the switch: 42 m for a 700 m tree, about 1.7 s at the demo's walking
#: speed of 25 m/s, enough for the dither to read as a blend rather than a pop,
#: short enough that few instances are drawn twice (about 6 % of those in range).
CROSSFADE_BAND = 0.06


def build_records(centres: ArrayLike, scale: ArrayLike, yaw: ArrayLike, tint: ArrayLike, highlight: ArrayLike,
                  out: np.ndarray | None = None) -> np.ndarray:
    """Records of ``m`` instances, fade 1 (solid).

    Parameters
    ----------
    centres : array_like, shape (m, 3)
    scale, yaw, tint, highlight : array_like, shape (m,)
    out : ndarray, shape (m, INSTANCE_FLOATS), float32, optional
        Written in place when given (a staging buffer).

    Returns
    -------
    ndarray, shape (m, INSTANCE_FLOATS), float32

    Cost: O(m).
    """
    c = np.asarray(centres)
    m = c.shape[0]
    rec = np.empty((m, INSTANCE_FLOATS), dtype=np.float32) if out is None else out
    if rec.shape != (m, INSTANCE_FLOATS):
        raise ValueError(f"out must have shape ({m}, {INSTANCE_FLOATS}), got {rec.shape}")
    rec[:, 0:3] = c
    rec[:, SCALE_COLUMN] = scale
    rec[:, YAW_COLUMN] = yaw
    rec[:, TINT_COLUMN] = tint
    rec[:, FADE_COLUMN] = 1.0
    rec[:, HIGHLIGHT_COLUMN] = highlight
    return rec


def far_fade(distance: np.ndarray, view_distance: np.ndarray) -> np.ndarray:
    """Fade 0..1 over the last :data:`FADE_FRACTION` of each view distance, shape (m,), float64.

    >>> far_fade(np.array([0.0, 90.0, 100.0]), np.array([100.0, 100.0, 100.0])).round(3).tolist()
    [1.0, 0.667, 0.0]
    """
    band = np.maximum(view_distance * FADE_FRACTION, 1e-9)
    out: np.ndarray = np.clip((view_distance - distance) / band, 0.0, 1.0)
    return out
