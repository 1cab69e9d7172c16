"""The distance filter with a near end: visible from ``begin`` out to the view distance.

Engines pair a view distance with a *begin* distance (Godot's
``visibility_range_begin``, Unreal's min draw distance): an object that is
visible only from beyond it.  That is how hierarchical LOD hides a cluster's
stand-in once the camera is close enough to see the members, which in turn
have short view distances.

The tree keeps storing the view distance only (a query point inside a ring is
not a sphere query); the begin test costs one more comparison on the
candidates in the distance filter, and a dithered fade-in over
:data:`BEGIN_FADE_FRACTION` beyond ``begin`` replaces the pop, as the far fade
does at the other end.

>>> import numpy as np
>>> in_visibility_range(np.array([5.0, 50.0, 150.0]), np.array([100.0] * 3), np.array([10.0, 10.0, 0.0])).tolist()
[False, True, False]
"""

from __future__ import annotations

import numpy as np

__all__ = ["BEGIN_FADE_FRACTION", "begin_fade", "in_visibility_range", "visibility_fade"]

#: An object with a begin distance fades in over the 15 % beyond it, matching
#: the far fade's share (``engine.culling_pipeline.FADE_FRACTION``): a stand-in
#: and the members it replaces then trade places over comparable distances.
BEGIN_FADE_FRACTION = 0.15


def in_visibility_range(distance: np.ndarray, view_distance: np.ndarray, begin: np.ndarray | None) -> np.ndarray:
    """Whether each object is visible at its camera distance: ``begin <= distance <= view_distance``.

    Parameters
    ----------
    distance, view_distance : ndarray, shape (m,), float64
        Same metric as the tree's exact test (Euclidean, or largest axis for cubes).
    begin : ndarray, shape (m,), float64, or None
        Begin distances (0: visible from the object's own centre); None for none.

    Returns
    -------
    ndarray, shape (m,), bool

    Cost: O(m).
    """
    keep = np.asarray(distance) <= np.asarray(view_distance)
    if begin is not None:
        keep &= np.asarray(distance) >= np.asarray(begin)
    return keep


def begin_fade(distance: np.ndarray, begin: np.ndarray) -> np.ndarray:
    """Fade-in 0..1 over ``[begin, begin * (1 + BEGIN_FADE_FRACTION)]``; 1 where ``begin`` is 0.

    Parameters
    ----------
    distance, begin : ndarray, shape (m,), float64

    Returns
    -------
    ndarray, shape (m,), float64
    """
    d = np.asarray(distance, dtype=np.float64)
    b = np.asarray(begin, dtype=np.float64)
    band = b * BEGIN_FADE_FRACTION
    out = np.ones(np.broadcast(d, b).shape)
    has = band > 0.0
    out[has] = np.clip((d[has] - b[has]) / band[has], 0.0, 1.0)
    return out


def visibility_fade(distance: np.ndarray, view_distance: np.ndarray, begin: np.ndarray | None,
                    far_fraction: float) -> np.ndarray:
    """The dither fade of an object: far fade-out times begin fade-in, shape (m,), float64.

    ``far_fraction`` is the share of the view distance the far fade spans
    (``engine.culling_pipeline.FADE_FRACTION``).
    """
    d = np.asarray(distance, dtype=np.float64)
    v = np.asarray(view_distance, dtype=np.float64)
    band = np.maximum(v * far_fraction, 1e-9)
    fade = np.clip((v - d) / band, 0.0, 1.0)
    if begin is not None:
        fade *= begin_fade(d, begin)
    return fade
