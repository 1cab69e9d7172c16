"""What the tree and the grid share: the lattice, the one containment test, the member passes,
tiles, input validation, array growth and the JIT wrapper.

Nothing here imports from :mod:`culling.tree`, :mod:`culling.grid` or :mod:`culling.uses`.
"""

from culling.core.lattice import ANCHOR, MAX_DEPTH, MAX_GROWTH, Lattice

__all__ = ["ANCHOR", "Lattice", "MAX_DEPTH", "MAX_GROWTH"]
