"""The collision broad phase: every pair of stored spheres that meet.

:mod:`culling.pairs.bands` joins by bands of levels over dense bucket grids,
:mod:`culling.pairs.join` plans the join and holds the tree's dual walk
(docs/DESIGN.md, "Module map").  Built on :mod:`culling.core` and
:mod:`culling.runtime`; the tree and the grid call it.
"""

from culling.pairs.join import overlapping_pairs

__all__ = ["overlapping_pairs"]
