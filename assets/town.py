"""One settlement's plan: where its houses, their turns and its trees stand.

Content both sides of the demo are built from, so it lives once, below both:
the clusters scene places a settlement's houses and trees by it
(``scenes/clusters.py``), and the engine merges the same houses and trees
into the settlement's far stand-in meshes (HLOD, ``engine/meshes.py``).
Scenes and engine never import each other; both import this (NumPy only).

>>> houses, yaws, trees = town_plan()
>>> houses.shape, yaws.shape, trees.shape
((80, 2), (80,), (40, 2))
"""

from __future__ import annotations

import numpy as np

__all__ = ["TOWN_EXTENT", "TOWN_PITCH", "town_plan"]

#: Houses stand on a square grid of this pitch, in units of the settlement's radius ...
TOWN_PITCH = 1.0 / 6.0
#: ... within this distance of its centre (the centre square is the tower's).
TOWN_EXTENT = 0.84


def town_plan() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """One settlement's plan: house centres (k, 2) and yaws (k,), tree centres (t, 2), float64.

    Positions are (x, z) offsets from the centre in units of the settlement's radius:
    houses on a square grid of pitch :data:`TOWN_PITCH` within :data:`TOWN_EXTENT`
    (the centre square is the tower's), every other row turned a quarter, trees at
    the centres of every other grid square.
    """
    steps = np.arange(-6, 7)
    i, j = (g.ravel() for g in np.meshgrid(steps, steps, indexing="ij"))
    house = (np.hypot(i, j) * TOWN_PITCH <= TOWN_EXTENT) & ((i != 0) | (j != 0))
    houses = np.stack([i[house], j[house]], axis=1) * TOWN_PITCH
    yaws = np.where(j[house] % 2 == 0, 0.0, np.pi / 2.0)
    tree = (np.hypot(i + 0.5, j + 0.5) * TOWN_PITCH <= TOWN_EXTENT) & ((i + j) % 2 == 0)
    trees = np.stack([i[tree] + 0.5, j[tree] + 0.5], axis=1) * TOWN_PITCH
    return houses, yaws, trees
