"""What the tree and the grid share: the lattice and its cell and home functions, the one
containment test, the member passes, member rows and tiles, the kernels' structs, input
validation, array growth and the JIT wrapper (docs/DESIGN.md, "Module map").

Nothing here imports from :mod:`culling.tree`, :mod:`culling.grid` or :mod:`culling.uses`.
"""

from culling.core.lattice import ANCHOR, MAX_DEPTH, MAX_GROWTH, Lattice

__all__ = ["ANCHOR", "Lattice", "MAX_DEPTH", "MAX_GROWTH"]
