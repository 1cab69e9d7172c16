"""The view-distance tree: the tree itself, its node table, member pool, walk and batch kernels."""

from culling.tree.tree import ViewDistanceTree

__all__ = ["ViewDistanceTree"]
