"""``ShardedInterest``: ``culling.InterestManager``'s service, its world split over Ray actors.

The coordinator (this object, in the caller's process) holds the
authoritative state: every entity in a :class:`culling.ViewDistanceTree`
(whose handles are the ones an ``InterestManager`` would hand out, call
for call), which shards hold each entity, and every viewer's previous set
(:class:`culling.InterestSets`).  Each shard (:class:`server.shard.Shard`, a
Ray actor) holds the entities homed in its region plus ghost copies of the
entities from elsewhere whose sphere reaches in (:class:`server.regions.Regions`).

- ``insert_many`` / ``update_many`` / ``remove_many`` change the
  coordinator's tree, then send each shard its share (entities that came
  into its region, moved in it, left it), without waiting: an actor runs
  its calls in the order they were sent, and the next tick collects them.
- ``tick`` routes every viewer to the shard of its position, runs every
  shard's query at once, and diffs the concatenated rows against the
  previous sets in one :meth:`culling.InterestSets.advance` (its rows in
  shard order, then put back in the caller's order).  The answer is the
  one ``InterestManager`` gives: the same exact decider on the same floats,
  and every entity that can contain a viewer is in that viewer's shard.
- An actor that died (``ray.kill``, a crash), or whose sent changes failed,
  is replaced by a new one, loaded from the coordinator's tree, and its part
  of the tick asked again.
- A Ctrl-C waits for a mutation to finish (:mod:`server.interrupts`): the
  coordinator's tree, its map of the shards' entities and what it sent them
  never disagree.  :meth:`ShardedInterest.close` is final.  Threads take
  turns: the mutations, ticks and ``close`` hold one lock.

The shards hold no viewer state, so a viewer crossing a border costs
nothing, and the rows travel back to the coordinator (8 bytes a held pair
a tick): docs/SERVER.md weighs that against diffing in the shards.
"""

from __future__ import annotations

import functools
import math
import numbers
import os
import site
import sys
import threading
from collections.abc import Callable
from typing import Any, TypeVar

import numpy as np
import ray
from numpy.typing import ArrayLike, NDArray
from ray.exceptions import RayActorError, RayError

from culling import InterestSets, InterestTick, ViewDistanceTree, tick_arguments
from server.interrupts import runs_whole
from server.regions import Regions
from server.shard import Shard

T = TypeVar("T")

__all__ = ["ShardedInterest"]

_RemoteShard = ray.remote(Shard)


def _ray_session() -> tuple[str, str]:
    """The Ray session this process is connected to: its node and job (a new ``ray.init`` changes one)."""
    context = ray.get_runtime_context()
    return context.get_node_id(), context.get_job_id()


def _actor_options() -> dict[str, Any]:
    """The shard actors' Ray options.

    Their calls are not recorded as Ray task events: a shard is called twice a tick, and the records, kept
    by Ray's control store (the GCS) up to 100,000 tasks, took its memory from 58 to 159 MB in 90 s of
    ``python -m server.demo --players 1000 --entities 10000`` and to 420 MB in 14 minutes.

    This package's folder goes on their ``PYTHONPATH`` where Ray's workers would not find it.  They import
    ``server`` from the folders of the driver's ``PYTHONPATH``, its script's folder, its working folder and
    the site folders; a script that put the checkout on its own ``sys.path`` left them without it (the
    actors failed to start).  Naming the folder costs their start some 3 s (Ray starts workers of their own
    for it), so only then."""
    options: dict[str, Any] = {"enable_task_events": False}
    root = os.path.realpath(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    given = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    script = os.path.dirname(os.path.abspath(sys.argv[0])) if sys.argv and sys.argv[0] else os.getcwd()
    if root not in {os.path.realpath(p) for p in [*given, script, os.getcwd(), *site.getsitepackages()]}:
        options["runtime_env"] = {"env_vars": {"PYTHONPATH": os.pathsep.join([root, *given])}}
    return options


def _one_at_a_time(method: Callable[..., T]) -> Callable[..., T]:
    """``method`` under the service's lock: its coordinator state (the map of which shard holds what,
    the changes sent and not yet applied) is one thread's at a time.  Two threads, one mutating and one
    ticking, read a shard's list of sent changes while the other appended to it: every tick failed."""
    @functools.wraps(method)
    def run(self: ShardedInterest, *args: Any, **kwargs: Any) -> T:
        with self._lock:
            return method(self, *args, **kwargs)
    return run


def _reordered(offsets: NDArray[np.int64], values: NDArray[np.int64],
               rows: NDArray[np.int64]) -> tuple[NDArray[np.int64], NDArray[np.int64]]:
    """CSR rows ``rows[0], rows[1], ...`` of ``(offsets, values)``, packed: vectorised, no loop per row."""
    counts = (offsets[1:] - offsets[:-1])[rows]
    out_offsets = np.zeros(rows.size + 1, dtype=np.int64)
    np.cumsum(counts, out=out_offsets[1:])
    shift = np.repeat(offsets[:-1][rows] - out_offsets[:-1], counts)
    out = values[np.arange(int(out_offsets[-1]), dtype=np.int64) + shift]
    out.flags.writeable = False
    out_offsets.flags.writeable = False
    return out_offsets, out


class ShardedInterest:
    """The methods and answers of :class:`culling.InterestManager`, over ``shards`` Ray actors.

    Parameters
    ----------
    size, origin, dim, hysteresis
        As for ``InterestManager``; ``size`` and ``origin`` also bound the region grid (entities and
        viewers outside it belong to the border regions).
    shards : int
        Regions, one Ray actor each (1 to 64).  Ray must be initialised (``ray.init``), or it is
        initialised here with its defaults.
    probe_margin : float
        The largest per-viewer radius ``tick(..., radii=)`` accepts: ghosts are placed for each
        entity's ``r * (1 + hysteresis) + probe_margin``.  A larger radius is refused (``ValueError``),
        never answered with a set missing entities.
    """

    def __init__(self, size: float, origin: ArrayLike | None = None, dim: int = 3, *, shards: int = 2,
                 hysteresis: float = 0.0, probe_margin: float = 0.0) -> None:
        self._tree = ViewDistanceTree(size, origin, dim)          # validates size, origin, dim
        self._sets = InterestSets(hysteresis)                      # validates hysteresis
        if isinstance(probe_margin, bool) or not isinstance(probe_margin, numbers.Real):
            raise TypeError(f"probe_margin must be a real number, got {type(probe_margin).__name__}")
        try:  # any real number Python has (a Fraction, an int past float64's range), as hysteresis takes them
            margin = float(probe_margin)
        except OverflowError:
            margin = math.inf
        if not math.isfinite(margin) or margin < 0:  # 10**400 said all its 401 digits
            shown = "a number beyond float64" if margin == math.inf and not isinstance(probe_margin, float) \
                else repr(probe_margin)
            raise ValueError(f"probe_margin must be a finite number >= 0, got {shown}")
        self._margin: float = margin
        self.regions: Regions = Regions(self._tree.size, self._tree.origin, dim, shards)
        if not ray.is_initialized():
            ray.init()
        self._session: tuple[str, str] = _ray_session()
        self._config: tuple[float, tuple[float, ...], int] = (self._tree.size, tuple(self._tree.origin.tolist()), dim)
        self._actor_options: dict[str, Any] = _actor_options()
        self._actors: list[Any] = [self._start() for _ in range(shards)]
        self._started()
        self._where: NDArray[np.bool_] = np.zeros((0, shards), dtype=np.bool_)  # which shards hold each handle
        self._pending: list[list[Any]] = [[] for _ in range(shards)]
        #: Actors replaced after a fault, since construction.
        self.restarts: int = 0
        #: Per-shard figures of the last tick: viewers, held entities, seconds in the actor.
        self.last_tick: dict[str, list[float]] = {}
        self._closed: bool = False
        self._lock: threading.RLock = threading.RLock()

    # -- properties ----------------------------------------------------------

    @property
    def size(self) -> float:
        return float(self._tree.size)

    @property
    def origin(self) -> NDArray[np.float64]:
        return self._tree.origin

    @property
    def dim(self) -> int:
        return int(self._tree.dim)

    @property
    def shards(self) -> int:
        return len(self._actors)

    @property
    def hysteresis(self) -> float:
        return self._sets.hysteresis

    @property
    def probe_margin(self) -> float:
        return self._margin

    @property
    def viewers(self) -> NDArray[np.int64]:
        return self._sets.viewers

    @property
    def tree(self) -> ViewDistanceTree:
        """The coordinator's entity tree (read it; mutate the entities through the service, or the shards
        and the sets go stale), as ``InterestManager.tree``."""
        return self._tree

    @property
    def closed(self) -> bool:
        """Whether :meth:`close` stopped the actors: ticks and mutations are then a ``RuntimeError``."""
        return self._closed

    @property
    def actors(self) -> list[Any]:
        """The Ray actor of each region (for tests and operators: ``ray.kill(actors[k])`` is a fault)."""
        return list(self._actors)

    def __len__(self) -> int:
        return len(self._tree)

    def __contains__(self, handle: object) -> bool:
        return handle in self._tree

    def interest(self, viewer_id: int) -> NDArray[np.int64]:
        """As ``InterestManager.interest``."""
        return self._sets.interest(viewer_id)

    def centres_of(self, handles: ArrayLike) -> NDArray[np.float64]:
        return self._tree.centres_of(handles)

    def radii_of(self, handles: ArrayLike) -> NDArray[np.float64]:
        return self._tree.radii_of(handles)

    def ghost_fraction(self) -> float:
        """Copies beyond the first, per entity: ``(sum of shards' entities - entities) / entities``."""
        n = len(self._tree)
        return float(self._where.sum() - n) / n if n else 0.0

    # -- entities ------------------------------------------------------------

    def _reach(self, radii: NDArray[np.float64]) -> NDArray[np.float64]:
        with np.errstate(over="ignore", under="ignore"):
            reach: NDArray[np.float64] = radii * self._sets.query_scale + self._margin
        return reach

    def _send(self, k: int, call: Callable[..., Any], *args: Any) -> None:
        self._pending[k].append(call(*args))

    def _ours(self) -> bool:
        """Whether Ray runs, and is the session the actors were started in: a call on another (after
        ``ray.shutdown``, perhaps a new ``ray.init``) would start a Ray of its own, or fail to find them."""
        return ray.is_initialized() and _ray_session() == self._session

    def _open(self) -> None:
        if self._closed:
            raise RuntimeError("this ShardedInterest is closed: its actors are stopped (make a new one)")
        if not self._ours():  # before anything changes: a mutation half sent is none of the shards'
            raise RuntimeError("Ray was shut down under this ShardedInterest (ray.shutdown, perhaps then "
                               "ray.init again): its actors are gone; close() it, and make a new one")

    @runs_whole
    @_one_at_a_time
    def insert_many(self, centres: ArrayLike, radii: ArrayLike) -> NDArray[np.int64]:
        """As ``InterestManager.insert_many``: the same handles."""
        self._open()
        handles = np.asarray(self._tree.insert_many(centres, radii), dtype=np.int64)
        if not handles.size:
            return handles
        c, r = self._tree.centres_of(handles), self._tree.radii_of(handles)
        where = self.regions.touched(c, self._reach(r))
        top = int(handles.max()) + 1
        if top > self._where.shape[0]:
            grown = np.zeros((max(top, 2 * self._where.shape[0]), self.shards), dtype=np.bool_)
            grown[: self._where.shape[0]] = self._where
            self._where = grown
        self._where[handles] = where
        empty_h, empty_c = np.empty(0, dtype=np.int64), np.empty((0, self.dim))
        for k, actor in enumerate(self._actors):
            sel = where[:, k]
            if sel.any():
                self._send(k, actor.apply.remote, (handles[sel], c[sel], r[sel]), (empty_h, empty_c), empty_h)
        return handles

    @runs_whole
    @_one_at_a_time
    def update_many(self, handles: ArrayLike, centres: ArrayLike, radii: ArrayLike | None = None) -> None:
        """As ``InterestManager.update_many`` (``radii`` resizes them too); entities crossing a border,
        or whose grown sphere reaches new regions, migrate, their ghosts follow."""
        self._open()
        self._tree.update_many(handles, centres, radii)   # validates: a failure changes nothing
        h = np.asarray(handles, dtype=np.int64).reshape(-1)
        if not h.size:
            return
        c, r = self._tree.centres_of(h), self._tree.radii_of(h)
        new = self.regions.touched(c, self._reach(r))
        old = self._where[h]
        self._where[h] = new
        for k, actor in enumerate(self._actors):
            came, stay, went = new[:, k] & ~old[:, k], new[:, k] & old[:, k], old[:, k] & ~new[:, k]
            if came.any() or stay.any() or went.any():
                moved = (h[stay], c[stay]) if radii is None else (h[stay], c[stay], r[stay])
                self._send(k, actor.apply.remote, (h[came], c[came], r[came]), moved, h[went])

    @runs_whole
    @_one_at_a_time
    def remove_many(self, handles: ArrayLike) -> None:
        """As ``InterestManager.remove_many``: removed entities leave at the next tick."""
        self._open()
        self._tree.remove_many(handles)            # validates
        h = np.asarray(handles, dtype=np.int64).reshape(-1)
        if not h.size:
            return
        old = self._where[h]
        self._where[h] = False
        empty_h, empty_c, empty_r = np.empty(0, dtype=np.int64), np.empty((0, self.dim)), np.empty(0)
        for k, actor in enumerate(self._actors):
            went = old[:, k]
            if went.any():
                self._send(k, actor.apply.remote, (empty_h, empty_c, empty_r), (empty_h, empty_c), h[went])
        self._sets.forget(h)

    # -- faults --------------------------------------------------------------

    def _start(self) -> Any:
        return _RemoteShard.options(**self._actor_options).remote(*self._config)

    def _started(self) -> None:
        """Wait until every actor runs (one round trip each, at once).  An actor that cannot start (Ray's
        workers cannot import ``server``: a cluster elsewhere without the checkout, say) failed only at the
        first tick, as Ray's long ``ActorDiedError``."""
        try:
            ray.get([actor.held.remote() for actor in self._actors])
        except RayActorError as error:
            for actor in self._actors:
                ray.kill(actor)
            missing = "ModuleNotFoundError" in str(error) or "No module named" in str(error)
            raise RuntimeError(
                "the shard actors did not start" + (": Ray's workers cannot import this package; give them the "
                "checkout on PYTHONPATH (PYTHONPATH=. python my_server.py, or a runtime_env: docs/SERVER.md)"
                if missing else f" ({error})")) from None

    def _rebuild(self, k: int) -> None:
        """Replace shard ``k``'s actor by a new one loaded from the coordinator's tree."""
        try:
            ray.kill(self._actors[k])
        except Exception:  # noqa: BLE001 - already gone, whatever Ray says about it
            pass
        actor = self._start()
        live = self._tree.handles()
        held = live[self._where[live, k]]
        ray.get(actor.load.remote(held, self._tree.centres_of(held), self._tree.radii_of(held)))
        self._actors[k] = actor
        self._pending[k] = []
        self.restarts += 1

    def _settle(self, k: int) -> None:
        """Wait for shard ``k``'s sent changes; an actor that died, or failed to apply them, is rebuilt from
        the coordinator's tree (it then holds them all)."""
        try:
            ray.get(self._pending[k])
            self._pending[k] = []
        except RayError:  # RayActorError, or a RayTaskError its apply raised: the coordinator's state stands
            self._rebuild(k)

    def _answer(self, k: int, ask: Callable[[], Any], ref: Any = None) -> Any:
        """Shard ``k``'s answer to ``ask()`` (``ref``: already asked); an actor that died meanwhile is
        rebuilt and asked again, three tries in all."""
        ref = ask() if ref is None else ref
        for _ in range(2):
            try:
                return ray.get(ref)
            except RayActorError:
                self._rebuild(k)
                ref = ask()
        return ray.get(ref)

    @_one_at_a_time
    def held_by(self, k: int) -> NDArray[np.int64]:
        """The global handles shard ``k`` (``0 .. shards - 1``) holds now (a round trip; for tests and operators)."""
        if isinstance(k, bool) or not isinstance(k, (int, np.integer)):
            raise TypeError(f"the shard must be an integer, got {type(k).__name__}")
        if not 0 <= k < len(self._actors):
            raise ValueError(f"the shard must be from 0 to {len(self._actors) - 1}, got {k}")
        self._open()
        self._settle(k)
        return self._answer(k, lambda: self._actors[k].held.remote())  # type: ignore[no-any-return]

    # -- ticks ---------------------------------------------------------------

    @_one_at_a_time
    def tick(self, viewer_ids: ArrayLike, positions: ArrayLike, radii: ArrayLike | None = None) -> InterestTick:
        """As ``InterestManager.tick``: the same rows, in the order of ``viewer_ids``.

        Raises ``ValueError`` also for a per-viewer radius above ``probe_margin`` (the ghosts
        would not cover it).  A failed tick changes nothing (a Ctrl-C is a failure until
        :meth:`InterestSets.advance`, which runs whole).
        """
        self._open()
        ids, points, reach = tick_arguments(viewer_ids, positions, radii, self.dim)  # as InterestManager.tick
        m = ids.size
        if reach is not None and m and reach.max() > self._margin:
            raise ValueError(f"a viewer radius of {float(reach.max())} is beyond the probe_margin "
                                 f"{self._margin} the ghosts were placed for: construct ShardedInterest "
                                 "with a larger probe_margin")
        region = self.regions.region_of(points)
        order = np.argsort(region, kind="stable")
        ends = np.searchsorted(region[order], np.arange(self.shards + 1))
        scales = (1.0, self._sets.query_scale) if self._sets.hysteresis > 0.0 else (1.0,)
        parts: list[Any] = [None] * self.shards
        asked: dict[int, Any] = {}

        def ask(k: int) -> Any:
            rows = order[ends[k]:ends[k + 1]]
            return self._actors[k].sets.remote(points[rows], None if reach is None else reach[rows], scales)

        for k in range(self.shards):
            self._settle(k)
            if ends[k + 1] > ends[k]:
                asked[k] = ask(k)
        for k, ref in asked.items():
            parts[k] = self._answer(k, functools.partial(ask, k), ref)
        empty = (np.empty(0, dtype=np.int64), np.empty(0, dtype=np.int64))
        merged = []
        for s in range(len(scales)):
            handles = [parts[k][0][s][0] if parts[k] is not None else empty[0] for k in range(self.shards)]
            counts = [parts[k][0][s][1] if parts[k] is not None else empty[1] for k in range(self.shards)]
            merged.append((np.concatenate(handles), np.concatenate(counts)))
        if len(scales) == 2:
            t = self._sets.advance(ids[order], merged[0][0], merged[0][1], merged[1][0], merged[1][1])
        else:
            t = self._sets.advance(ids[order], merged[0][0], merged[0][1])
        self.last_tick = {
            "viewers": [float(ends[k + 1] - ends[k]) for k in range(self.shards)],
            "pairs": [float(parts[k][0][0][0].size) if parts[k] is not None else 0.0 for k in range(self.shards)],
            "seconds": [float(parts[k][1]) if parts[k] is not None else 0.0 for k in range(self.shards)],
        }
        back = np.argsort(order, kind="stable")
        entered_offsets, entered = _reordered(t.entered_offsets, t.entered, back)
        left_offsets, left = _reordered(t.left_offsets, t.left, back)
        out_ids = ids.copy()
        out_ids.flags.writeable = False
        return InterestTick(viewer_ids=out_ids, entered_offsets=entered_offsets, entered=entered,
                            left_offsets=left_offsets, left=left)

    @_one_at_a_time
    def close(self) -> None:
        """Stop the actors, for good: later ticks and mutations are a ``RuntimeError`` (the coordinator's
        state stays readable)."""
        self._closed = True
        if not self._ours():  # the actors went with their Ray; ray.kill would start a new one
            return
        for actor in self._actors:
            try:
                ray.kill(actor)
            except Exception:  # noqa: BLE001
                pass

    def __repr__(self) -> str:
        return (f"ShardedInterest(size={self.size}, dim={self.dim}, shards={self.shards}, "
                f"entities={len(self._tree)}, viewers={len(self._sets)}{', closed' if self._closed else ''})")
