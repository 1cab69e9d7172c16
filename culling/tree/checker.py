"""The tree's invariant checker: every structural rule, asserted in O(objects + nodes).

For tests and for a caller who suspects the structure (``check_invariants``):
the node table (free stack, dead rows, levels, parents and child links, each
live node reached from the root), the pool's blocks (inside the pool, disjoint,
within capacity), the objects (node and row agree with the pool, each in the
home the insert would choose) and the tile summaries.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

import culling.tree.batch as batch
from culling.core.containment import squared_reach
from culling.core.lattice import MAX_DEPTH, MAX_GROWTH
from culling.core.tiles import TILE_ROWS, TILE_SHIFT
from culling.tree.nodes import DEAD_ROW

if TYPE_CHECKING:
    from culling.tree.tree import ViewDistanceTree

__all__ = ["check_tree"]


def check_tree(tree: ViewDistanceTree) -> None:
    """Assert every structural rule of ``tree`` (the caller holds its read lock)."""
    nodes = tree._nodes
    alive = np.flatnonzero(nodes.count[: nodes.issued] >= 0)
    assert alive.size == tree.node_count, "free node stack disagrees with dead nodes"
    free = nodes.free_ids()
    assert np.unique(free).size == free.size, "a node row is on the free stack twice"
    assert ((free >= 0) & (free < nodes.issued)).all() and (nodes.count[free] == -1).all(), \
        "a live node is on the free stack"
    dead = np.flatnonzero(nodes.count < 0)
    for name, fill in DEAD_ROW.items():
        assert (getattr(nodes, name)[dead] == fill).all(), f"a dead node row keeps its {name}"
    root = tree._root
    assert nodes.count[root] >= 0 and nodes.parent[root] == -1, "root must be live and parentless"
    root_level = tree.root_level
    assert -MAX_GROWTH <= root_level <= 0, "root level out of range"
    # The one index: every node's parent is the enclosing cell one level up, and every live node
    # is reached from the root through the child links, level by level (what the descent follows).
    levels = nodes.level[alive]
    assert ((levels >= root_level) & (levels <= MAX_DEPTH)).all(), "node level outside [root, MAX_DEPTH]"
    below = alive[alive != root]
    parents = nodes.parent[below]
    assert (nodes.count[parents] >= 0).all(), "parent is dead"
    assert (nodes.level[parents] == nodes.level[below] - 1).all(), "parent is not one level up"
    assert (nodes.cells[:, parents] == nodes.cells[:, below] >> 1).all(), "parent is not the enclosing cell"
    assert ((nodes.count[below] > 0) | (nodes.children[below] > 0)).all(), "empty leaf left after cleanup"
    reached, frontier = 1, np.array([root])
    for _ in range(MAX_GROWTH + MAX_DEPTH + 1):  # levels only go down: at most that many steps
        links = nodes.child[frontier]
        frontier = links[links >= 0]
        reached += frontier.size
    assert reached == alive.size, "a live node is not reachable from the root"
    children = np.bincount(tree._nodes.parent[alive][tree._nodes.parent[alive] >= 0], minlength=tree._nodes.issued)
    assert (children[alive] == tree._nodes.children[alive]).all(), "child counts are wrong"
    # Child links: each live non-root node in its parent's quadrant slot, nothing else linked.
    links = tree._nodes.child[alive]
    assert ((links >= 0).sum(axis=1) == tree._nodes.children[alive]).all(), "child links disagree with counts"
    linked = links[links >= 0]
    assert (tree._nodes.count[linked] >= 0).all(), "a child link points to a dead node"
    owners = np.repeat(alive, (links >= 0).sum(axis=1))
    assert (tree._nodes.parent[linked] == owners).all(), "a child link points to another node's child"
    quadrants = np.nonzero(links >= 0)[1]
    bits = sum((tree._nodes.cells[axis, linked] & 1) << axis for axis in range(tree.dim))
    assert (bits == quadrants).all(), "a child is linked in the wrong quadrant"
    if root_level < 0:
        assert not (tree._nodes.count[root] == 0 and tree._nodes.children[root] <= 1), "grown root should have shrunk"
    # Blocks: inside the pool, disjoint, counts within capacity.
    assert (tree._nodes.count[alive] <= tree._nodes.capacity[alive]).all(), "node holds more than its block"
    blocks = [(int(tree._nodes.start[n]), int(tree._nodes.capacity[n])) for n in alive.tolist() if tree._nodes.capacity[n] > 0]
    blocks += tree._pool.free_blocks()
    blocks.sort()
    for (s0, c0), (s1, _) in zip(blocks, blocks[1:]):
        assert s0 + c0 <= s1, "pool blocks overlap"
    assert not blocks or blocks[-1][0] + blocks[-1][1] <= tree._pool.top <= tree._pool.rows
    # Objects: node and row agree with the pool, rows inside the node's used part.
    live = tree._handles()
    assert live.size == tree._count, "len() disagrees with live handles"
    tree._ids.check(tree._obj_node[: tree._next_handle] >= 0)
    assert (tree._obj_node[tree._ids.free] == -1).all(), "a free handle still names a node"
    nodes, rows = tree._obj_node[live], tree._obj_pos[live]
    assert (tree._nodes.count[nodes] >= 0).all(), "object in a dead node"
    assert (tree._pool.handles[rows] == live).all(), "pool row holds another handle"
    assert ((rows >= tree._nodes.start[nodes]) & (rows < tree._nodes.start[nodes] + tree._nodes.count[nodes])).all()
    assert int(tree._nodes.count[alive].sum()) == live.size, "node counts disagree with objects"
    # Home node: a pure function of (centre, radius).
    columns = tree._pool.columns[:, rows]
    radii = columns[tree.dim]
    assert np.isfinite(columns[: tree.dim + 1]).all() and (radii >= 0).all()
    assert (columns[tree.dim + 1] == squared_reach(radii)).all(), "stale squared reach"
    group_of, keys, _ = batch.group(np.ascontiguousarray(columns[: tree.dim].T), np.ascontiguousarray(radii),
                                    tree.origin, tree.size)  # the home function, as insert_many places objects
    keys = keys[group_of]
    assert (keys[:, 0] >= root_level).all(), "a sphere is too large for the root"
    assert (tree._nodes.level[nodes] == keys[:, 0]).all(), "object on the wrong level"
    assert (tree._nodes.cells[:, nodes] == keys[:, 1:].T).all(), "object in the wrong cell"
    # Tile summaries (culling.core.tiles): every live row inside its tile's box, its radius within the tile's.
    pool, tile = tree._pool, rows >> TILE_SHIFT
    box = pool.tile_box[:, tile]
    assert pool.tile_box.shape[1] * TILE_ROWS >= pool.rows, "tile summaries shorter than the pool"
    assert (box[: tree.dim] <= columns[: tree.dim]).all(), "a centre below its tile's box"
    assert (box[tree.dim:2 * tree.dim] >= columns[: tree.dim]).all(), "a centre above its tile's box"
    assert (box[2 * tree.dim] >= radii).all(), "a radius above its tile's largest"
