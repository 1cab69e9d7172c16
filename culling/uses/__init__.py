"""What the point query is used for beyond drawing: visibility events, collision candidates, interest management."""

from culling.uses.collision import CollisionCandidates
from culling.uses.interest import InterestManager, InterestSets, InterestTick
from culling.uses.tracker import MultiCameraTracker, VisibilityEvents, VisibilityTracker

__all__ = ["CollisionCandidates", "InterestManager", "InterestSets", "InterestTick", "MultiCameraTracker", "VisibilityEvents", "VisibilityTracker"]
