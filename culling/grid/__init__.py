"""The dense variant: per-level grids of cells over a fixed world, with the tree's interface."""

from culling.grid.grid import DenseViewDistanceGrid

__all__ = ["DenseViewDistanceGrid"]
