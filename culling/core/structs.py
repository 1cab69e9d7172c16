"""The structs the compiled kernels take: a few named tuples of arrays, not long positional lists.

A kernel's call reads ``query(p, q, world, nodes, pool)``, and a port to C++
or C# maps each struct to one struct.  Each is a ``NamedTuple``, which numba
compiles as a struct of its fields (a field access costs nothing).

Python hands a struct to the kernel it calls as a **plain tuple** of the
fields in their order, built per call by the structure that owns the arrays
(:meth:`culling.tree.nodes.NodeTable.arrays`, :meth:`culling.tree.pool.BlockPool.arrays`,
...: a tuple of references, no copy).  numba reads a plain tuple's type in C
when it dispatches, but a named tuple's in Python: measured, about 1 us more
per struct and call, a third of a small exact query.  The kernel Python calls
names its structs again on its first line (``nodes = Nodes(*nodes)``: free in
compiled code), and every kernel below it takes and passes the named tuples.

Each array handed from Python to a kernel costs about 90 ns at the call
(numba wraps it for its reference counting), so the node table's six
per-node integer columns travel as the rows of one array:
:data:`NodesFields` is ``(columns, cells, child)``, and :func:`nodes_of`
makes the :class:`Nodes` struct of it (row views, free in compiled code).

>>> q = (2.0, True, False, False)          # as Python passes it
>>> Query(*q).scale, Query(*q).want_rows   # as the kernels read it
(2.0, False)
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from culling.runtime.jit import inline_kernel

__all__ = ["NODE_COLUMNS", "Cells", "CellsFields", "Nodes", "NodesFields", "Objects", "ObjectsFields", "Pool",
           "PoolFields", "Query", "QueryFields", "World", "WorldFields", "nodes_of"]


class World(NamedTuple):
    """Where the lattice lies and which node is its root (the tree's; the grid's root is its level-0 cell).

    origin : ndarray, shape (dim,), float64: the root's low corner
    size : float: the root's edge on level 0
    root : int: the root node's id (0 for the grid)
    root_level : int: the root's level (``<= 0``: grown roots have negative levels)
    """

    origin: np.ndarray
    size: float
    root: int
    root_level: int


class Nodes(NamedTuple):
    """The tree's node table (:class:`culling.tree.nodes.NodeTable`), by node id; int64 throughout.

    start, capacity, members : shape (N,): the node's block of pool rows, its size, the rows in use
        (the table's ``count``; ``-1``: a dead row.  Not named ``count``, which a tuple's method holds)
    level : shape (N,)
    cells : shape (dim, N): the node's lattice cell per axis
    parent : shape (N,), -1 for the root
    children : shape (N,): number of live children
    child : shape (N, 2**dim): the live children by quadrant, -1 for none
    """

    start: np.ndarray
    capacity: np.ndarray
    members: np.ndarray
    level: np.ndarray
    cells: np.ndarray
    parent: np.ndarray
    children: np.ndarray
    child: np.ndarray


class Pool(NamedTuple):
    """The member rows the kernels test (:class:`culling.tree.pool.BlockPool`, the grid's cell pool).

    handles : shape (rows,), int64, -1 for a row not in use
    columns : shape (dim + 2, rows), float64: the centre's axes, the radius, the squared reach
    tile_box : shape (2 * dim + 1, tiles), float32: the tiles' summaries (rounded outward)
        (:mod:`culling.core.tiles`); no rows (the grid's) means every row is near
    """

    handles: np.ndarray
    columns: np.ndarray
    tile_box: np.ndarray


class Objects(NamedTuple):
    """Where each of the tree's objects is, by handle; int64 throughout.

    node : shape (handles,): its node, -1 for a handle not in use
    row : shape (handles,): its pool row
    """

    node: np.ndarray
    row: np.ndarray


class Cells(NamedTuple):
    """The dense grid's cells (:class:`culling.grid.grid.DenseViewDistanceGrid`).

    offsets : shape (levels + 1,), int64: the first global cell id of each level
    level_count : shape (levels,), int64: objects per level
    start, members : shape (cells,), int32: each cell's pool block and member count (the pool's ``count``)
    occupied : shape (k,), int64: the ids of the non-empty cells, ascending (so level by level,
        row-major in each), or empty when the query's windows are small enough to enumerate
    occupied_at : shape (levels + 1,), int64: level ``L``'s ids are ``occupied[occupied_at[L]:occupied_at[L+1]]``
        (empty with ``occupied``)
    """

    offsets: np.ndarray
    level_count: np.ndarray
    start: np.ndarray
    members: np.ndarray
    occupied: np.ndarray
    occupied_at: np.ndarray


class Query(NamedTuple):
    """How a query point tests the members (the point itself travels apart: one or many).

    scale : float: multiplies every radius (positive, finite)
    exact : bool: keep only the members that contain the point; otherwise every candidate
    cube : bool: the L-infinity test (axis-aligned cubes) instead of the Euclidean one
    want_rows : bool: answer pool rows instead of handles
    """

    scale: float
    exact: bool
    cube: bool
    want_rows: bool



# The structs' fields as plain tuples, in field order: how Python passes them (see the module's notes).
WorldFields = tuple[np.ndarray, float, int, int]
#: The node table as Python passes it: ``(columns, cells, child)``, ``columns`` int64 (6, N), the rows
#: :data:`NODE_COLUMNS` (see :func:`nodes_of`).
NodesFields = tuple[np.ndarray, np.ndarray, np.ndarray]
PoolFields = tuple[np.ndarray, np.ndarray, np.ndarray]
ObjectsFields = tuple[np.ndarray, np.ndarray]
CellsFields = tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]
QueryFields = tuple[float, bool, bool, bool]

#: The rows of the node table's ``columns`` array (:data:`NodesFields`), in order; ``count`` is
#: :class:`Nodes`'s ``members``.
NODE_COLUMNS = ("start", "capacity", "count", "level", "parent", "children")


@inline_kernel
def nodes_of(fields: NodesFields) -> Nodes:
    """The :class:`Nodes` struct of the node table as Python passes it (:data:`NodesFields`): each of
    the six per-node columns a row of one array, in :data:`NODE_COLUMNS`' order (views, no copy)."""
    columns, cells, child = fields
    return Nodes(columns[0], columns[1], columns[2], columns[3], cells, columns[4], columns[5], child)
