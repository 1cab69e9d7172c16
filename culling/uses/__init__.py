"""What the point query is used for beyond drawing: visibility events and collision candidates."""

from culling.uses.collision import CollisionCandidates
from culling.uses.tracker import MultiCameraTracker, VisibilityEvents, VisibilityTracker

__all__ = ["CollisionCandidates", "MultiCameraTracker", "VisibilityEvents", "VisibilityTracker"]
