"""Interest management on a game server, sharded over Ray actors: the server's template, as ``engine/`` is the
client's.

Built on ``culling``'s public names alone (``InterestManager``'s service:
``ViewDistanceTree``, ``InterestSets``, ``InterestTick``); it imports
neither ``engine`` nor ``scenes``.  Ray comes with the ``server`` extra
(``pip install -e ".[server]"``); :mod:`server.regions` needs NumPy only.
See docs/SERVER.md.
"""

from __future__ import annotations

from typing import Any

__all__ = ["ShardedInterest"]


def __getattr__(name: str) -> Any:
    if name == "ShardedInterest":  # imports Ray: only when asked for
        from server.sharded import ShardedInterest

        return ShardedInterest
    raise AttributeError(f"module 'server' has no attribute {name!r}")
