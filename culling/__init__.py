"""View-distance culling: which objects could the camera see from here?

Every object is a sphere whose radius is its maximum view distance; the
camera sees an object when the camera point lies inside that sphere.  The
:class:`ViewDistanceTree` answers that point query in time that depends on
what is near the point, not on how many objects the world holds.

The public contract (names, shapes, dtypes, errors, the precise geometric
rules) is docs/CONTRACT.md in the repository.
"""

from typing import TYPE_CHECKING

from culling.answer import QueryDetails
from culling.core.chunks import release_scratch
from culling.grid.grid import DenseViewDistanceGrid
from culling.interface import PointIndex
from culling.reference import BruteForceIndex
from culling.runtime.threads import set_thread_count, thread_count
from culling.trace import LevelTrace, QueryTrace
from culling.tree.tree import MAX_DEPTH, MAX_GROWTH, ViewDistanceTree
from culling.uses.collision import CollisionCandidates
from culling.uses.interest import InterestManager, InterestSets, InterestTick, tick_arguments
from culling.uses.tracker import MultiCameraTracker, VisibilityEvents, VisibilityTracker
from culling.warmup import COMPILING, KERNEL_GROUPS, CompileWorkers, kernels_cached, progress_bar, warm_up

if TYPE_CHECKING:  # ``mypy culling`` checks that each index is a PointIndex (the one protocol, no second one)
    _INDEXES: tuple[PointIndex, ...] = (ViewDistanceTree(1.0), DenseViewDistanceGrid(1.0),
                                        BruteForceIndex([[0.0, 0.0, 0.0]], [1.0]))

__all__ = [
    "BruteForceIndex",
    "COMPILING",
    "CompileWorkers",
    "KERNEL_GROUPS",
    "CollisionCandidates",
    "DenseViewDistanceGrid",
    "InterestManager",
    "InterestSets",
    "InterestTick",
    "LevelTrace",
    "MAX_DEPTH",
    "MAX_GROWTH",
    "MultiCameraTracker",
    "PointIndex",
    "QueryDetails",
    "QueryTrace",
    "ViewDistanceTree",
    "VisibilityEvents",
    "VisibilityTracker",
    "kernels_cached",
    "progress_bar",
    "release_scratch",
    "set_thread_count",
    "thread_count",
    "tick_arguments",
    "warm_up",
]
