"""One player's interest set, ticked as a game server ticks it, made visible.

A server asks every tick, for every player, which entities are relevant and
sends the *change*: who entered and who left each player's set
(``culling.InterestManager``, docs/SERVER.md).  :class:`InterestView` runs
exactly that on a scene's players and creatures: it owns an
``InterestManager`` whose entities are the creatures (each with its body
radius as relevance radius), and every frame it moves them with one
``update_many`` and ticks *all* players at once with their own radii
(``tick(ids, positions, radii=)``, the sphere-probe rule of
``overlapping_many``): a player's set is the creatures whose body meets its
sensing sphere, ``|c - p| <= body + rho``.  One of the players is
*followed*: its set, its entered and left handles this tick and the last few
of each are kept for the HUD, and the looks are NumPy arrays the engine
draws with its usual means: a highlight level per creature (in the set, a
flash on entering) and overlay markers (a box around the followed player and
a wireframe sphere of its reach, green boxes flashing on entered creatures,
orange on those that left).  Nothing loops over creatures in Python.  The
first tick after the view turns on is every player's join: it enters each
whole set, counted and listed like any tick's events but not flashed.

>>> import numpy as np
>>> view = InterestView(np.array([[0.0, 0, 0], [10.0, 0, 0]]), np.array([1.0, 1.0]), 64.0, (-32.0,) * 3)
>>> view.tick(np.array([[0.0, 3.0, 0]]), np.array([2.5]), 0.1).tolist()     # body 1 + reach 2.5 >= 3
[0]
>>> view.entered.tolist(), view.left.tolist()
([0], [])
>>> view.tick(np.array([[10.0, 0.0, 0]]), np.array([2.5]), 0.1).tolist()
[1]
>>> view.entered.tolist(), view.left.tolist(), view.recent_left.tolist()
([1], [0], [0])
"""

from __future__ import annotations

from collections import deque
from time import perf_counter

import numpy as np
from numpy.typing import NDArray

from culling import InterestManager, InterestTick
from scenes.aggro import RECENT
from scenes.base import Markers

__all__ = ["ENTERED_COLOUR", "FLASH_SECONDS", "FOLLOWED_COLOUR", "INTEREST_COLOUR", "IN_SET", "LEFT_COLOUR",
           "RECENT_HANDLES", "InterestView"]

#: How long an enter or leave event flashes (s): long enough to catch the eye at 30 fps, short enough
#: that a busy player's flashes do not pile up into a blur.
FLASH_SECONDS = 0.8
#: Handles of the followed player's last events the HUD lists (each kind): what fits on a 60-character line.
RECENT_HANDLES = 5
#: Highlight level (0..1, towards :data:`INTEREST_COLOUR`) of a creature in the followed player's set; an
#: entering creature flashes from 1 down to it, so steady members stay apart from fresh ones.
IN_SET = 0.7
#: The highlight colour while the view is on: cyan, apart from the birds' yellow, the hunters' blue and
#: the chase red it replaces.
INTEREST_COLOUR = (0.10, 0.85, 1.00)
#: Overlay colours (RGBA): the followed player's box and reach, an entered creature's box, a left one's.
FOLLOWED_COLOUR = (1.0, 1.0, 1.0, 0.9)
ENTERED_COLOUR = (0.25, 1.0, 0.25, 1.0)
LEFT_COLOUR = (1.0, 0.45, 0.10, 1.0)
#: A marker box's half edge is the marked object's bounding radius times this (it frames the mesh).
BOX_MARGIN = 1.6

_NO_ROWS: NDArray[np.int64] = np.zeros(0, dtype=np.int64)


class InterestView:
    """Creatures in a :class:`culling.InterestManager`, every player ticked per frame, one followed.

    Parameters
    ----------
    centres : ndarray, shape (n, 3), float64: the creatures
    bodies : ndarray, shape (n,), float64: their body radii (the relevance radii)
    world_size, world_origin
        The manager's root (it grows on demand).

    Players are rows ``0..m-1`` of the positions handed to :meth:`tick`
    (viewer id = row); the followed one is :attr:`followed`.  The sets and
    events are the manager's handles (:attr:`handles` ``[i]`` is creature
    ``i``'s; :attr:`creature_of` maps back), as a server would send them.
    """

    def __init__(self, centres: np.ndarray, bodies: np.ndarray, world_size: float,
                 world_origin: tuple[float, float, float]) -> None:
        self.bodies = np.asarray(bodies, dtype=np.float64)
        self.manager = InterestManager(world_size, origin=world_origin, dim=3)
        self.handles = self.manager.insert_many(np.asarray(centres, dtype=np.float64), self.bodies)
        self.creature_of = np.full(int(self.handles.max(initial=-1)) + 1, -1, dtype=np.int64)
        self.creature_of[self.handles] = np.arange(self.handles.shape[0])
        self.followed = 0
        self.ticks = 0
        self.players = 0
        self.members: NDArray[np.int64] = _NO_ROWS           # the followed player's set (handles, sorted)
        self.entered: NDArray[np.int64] = _NO_ROWS           # ... what entered and left it this tick
        self.left: NDArray[np.int64] = _NO_ROWS
        self.recent_entered: NDArray[np.int64] = _NO_ROWS    # its last RECENT_HANDLES of each, newest first
        self.recent_left: NDArray[np.int64] = _NO_ROWS
        self.all_entered = 0                                 # every player's events this tick
        self.all_left = 0
        self.times: deque[float] = deque(maxlen=RECENT)       # update_many + tick (ms), the last frames
        self.joining = True                                  # the next tick is the players' first
        self.flash = np.zeros(self.handles.shape[0])         # seconds of flash left, per creature
        self.flash_entered = np.zeros(self.handles.shape[0], dtype=bool)   # its flash is an enter (else a leave)
        self.last: InterestTick | None = None

    def follow(self, player: int) -> None:
        """Follow player ``player`` (a row of the next ticks' positions); its recent events start afresh."""
        player = int(player)
        if player < 0:
            raise ValueError(f"player must be >= 0, got {player}")
        if player != self.followed:
            self.followed = player
            self.members = self.entered = self.left = self.recent_entered = self.recent_left = _NO_ROWS
            self.flash[:] = 0.0

    def tick(self, positions: np.ndarray, radii: np.ndarray, dt: float,
             centres: np.ndarray | None = None) -> NDArray[np.int64]:
        """One server tick: move the creatures (``centres``, when given), then tick every player.

        Parameters
        ----------
        positions : ndarray, shape (m, 3), float64: the players, viewer id = row
        radii : ndarray, shape (m,), float64: each player's sensing radius
        dt : float: seconds since the last tick (the flashes fade by it)
        centres : ndarray, shape (n, 3), float64, optional: the creatures' new centres

        Returns
        -------
        ndarray, shape (k,), int64: the followed player's set (handles, sorted)

        Cost: one ``update_many`` (O(n)) and one ``tick`` over all m players
        (one ``overlapping_many`` plus the compiled diff), then O(n) NumPy for the flashes.
        """
        positions = np.asarray(positions, dtype=np.float64).reshape(-1, 3)
        m = positions.shape[0]
        if m and not 0 <= self.followed < m:
            raise ValueError(f"followed player {self.followed} is not among the {m} players")
        t0 = perf_counter()
        if centres is not None:
            self.manager.update_many(self.handles, centres)
        tick = self.manager.tick(np.arange(m, dtype=np.int64), positions, radii=radii)
        self.times.append((perf_counter() - t0) * 1e3)
        self.last, self.players, self.ticks = tick, m, self.ticks + 1
        self.all_entered, self.all_left = int(tick.entered.size), int(tick.left.size)
        if m == 0:
            self.members = self.entered = self.left = _NO_ROWS
        else:
            self.entered = tick.entered_of(self.followed)
            self.left = tick.left_of(self.followed)
            self.members = self.manager.interest(self.followed)
        self.recent_entered = np.concatenate([self.entered[::-1], self.recent_entered])[:RECENT_HANDLES]
        self.recent_left = np.concatenate([self.left[::-1], self.recent_left])[:RECENT_HANDLES]
        came, went = self.creature_of[self.entered], self.creature_of[self.left]
        np.maximum(self.flash - max(float(dt), 0.0), 0.0, out=self.flash)
        if self.joining:            # a join enters the whole set: counted and listed, not flashed
            came, self.joining = came[:0], False
        self.flash[came] = FLASH_SECONDS
        self.flash[went] = FLASH_SECONDS
        self.flash_entered[came] = True
        self.flash_entered[went] = False
        return self.members

    def reset(self) -> None:
        """Forget every player (an empty tick drops them without events) and every flash: the next
        tick enters each player's whole set, as a server does for players that just joined."""
        self.manager.tick(_NO_ROWS, np.zeros((0, 3)))
        self.members = self.entered = self.left = self.recent_entered = self.recent_left = _NO_ROWS
        self.all_entered = self.all_left = self.players = 0
        self.flash[:] = 0.0
        self.last, self.joining = None, True

    @property
    def tick_ms(self) -> float | None:
        """Median of the last :data:`~scenes.aggro.RECENT` ticks' times (``update_many`` included), ms;
        None before the first."""
        return float(np.median(self.times)) if self.times else None

    def highlight(self) -> NDArray[np.float32]:
        """Each creature's highlight level: :data:`IN_SET` in the set, up to 1 while an enter flashes.

        Returns
        -------
        ndarray, shape (n,), float32.  Cost: O(n), vectorised.
        """
        level = np.zeros(self.flash.shape[0], dtype=np.float32)
        level[self.creature_of[self.members]] = IN_SET
        fresh = self.flash_entered & (self.flash > 0.0)
        level[fresh] = np.maximum(level[fresh], IN_SET + (1.0 - IN_SET) * self.flash[fresh] / FLASH_SECONDS)
        return level

    def markers(self, centres: np.ndarray, sizes: np.ndarray, player: np.ndarray | None, player_size: float,
                reach: float) -> Markers:
        """Boxes on the creatures whose enter or leave still flashes (alpha fading with it), and a box
        on the followed player and a sphere of its reach (unless ``player`` is None: the camera itself).

        Parameters
        ----------
        centres : ndarray, shape (n, 3), float64: the creatures now
        sizes : ndarray, shape (n,), float64: their bounding radii
        player : ndarray, shape (3,), float64, or None: the followed player
        player_size : float: its bounding radius
        reach : float: its sensing radius

        Cost: O(n) to find the flashing creatures, O(flashing) to mark them.
        """
        lit = np.flatnonzero(self.flash > 0.0)
        colours = np.where(self.flash_entered[lit, None], np.array(ENTERED_COLOUR, dtype=np.float32),
                           np.array(LEFT_COLOUR, dtype=np.float32)).astype(np.float32)
        colours[:, 3] *= (self.flash[lit] / FLASH_SECONDS).astype(np.float32)
        box_centres, box_half = centres[lit], sizes[lit] * BOX_MARGIN
        spheres, radii = np.zeros((0, 3)), np.zeros(0)
        if player is not None:
            where = np.asarray(player, dtype=np.float64).reshape(1, 3)
            box_centres = np.concatenate([box_centres, where])
            box_half = np.concatenate([box_half, [player_size * BOX_MARGIN]])
            colours = np.concatenate([colours, np.array([FOLLOWED_COLOUR], dtype=np.float32)])
            spheres, radii = where, np.array([float(reach)])
        faint = np.array(FOLLOWED_COLOUR, dtype=np.float32) * np.array([1.0, 1.0, 1.0, 0.5], dtype=np.float32)
        sphere_colours = np.tile(faint, (radii.shape[0], 1))
        return Markers(box_centres, box_half, colours, spheres, radii, sphere_colours)
