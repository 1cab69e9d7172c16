"""``python -m server.demo``: players and moving entities on a sharded interest service, headless.

Builds a world (entities on a ground plane, 90% spread and 10% in towns,
each with its own relevance radius; players half in towns), starts
``--shards`` Ray actors (:class:`server.ShardedInterest`), and runs
``--ticks`` server ticks after a first one where every player enters its
whole set (tick 0, not timed): each tick 10% of the entities and every
player take a step, and every player's entered / left entities are computed.  A
progress bar on stderr (redrawn in place on a terminal, a line a tick in a
log); per tick one line of figures (tick time, events,
the shards' share of the viewers and their seconds); at the end ticks per
second.  ``--check`` also runs one ``culling.InterestManager`` beside it
and asserts the answers are identical, tick for tick.

    python -m server.demo --players 10000 --entities 100000 --shards 2 --ticks 20
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
import time
from collections.abc import Sequence
from typing import Any, TextIO

PROG = "python -m server.demo"

try:
    import numpy as np

    from server.interrupts import Termination, ctrl_c_held, terminate_as_ctrl_c
    from server.regions import MAX_SHARDS
except KeyboardInterrupt:  # a Ctrl-C while NumPy loads (a tenth of a second): as main() says it later
    if __name__ != "__main__":
        raise
    print(f"{PROG}: error: interrupted", file=sys.stderr)
    sys.exit(130)

#: Share of the entities that move each tick, and the step (sigma per ground axis, world units).
MOVING_SHARE = 0.10
STEP = 1.5
#: The smallest ``--world``: the entities' radii (10 to 150), heights (0 to 2) and steps are in world
#: units, so a world far smaller than a radius is no town map (and below 2**-23 of the largest
#: radius, beyond what a tree can grow to hold).
MIN_WORLD = 1.0
#: The largest ``--world``: a town map of radii 10 to 150 needs no more, and a tree over 1e308 grew a
#: thousand levels down to them (1.4 s a tick, every player alone).
MAX_WORLD = 1e9
#: The largest ``--hysteresis``: held until twice the radius.  More, and every player soon holds most of
#: the world (``--hysteresis 1e308`` at the default counts: 10k x 100k pairs held, a tick never ended).
MAX_HYSTERESIS = 1.0
#: The most players or entities the demos take: a hundred million entities are some 40 GB in the
#: coordinator and the shards together; beyond, NumPy refused the arrays with a traceback.
MAX_COUNT = 100_000_000
#: The kernel groups the coordinator and the shards call (``culling.KERNEL_GROUPS``): compiled, with a
#: bar on stderr, before the first tick where a cold cache holds none of them (the shards then load them).
KERNELS = ("tree", "interest")


def check_world(ap: argparse.ArgumentParser, args: argparse.Namespace, least: int) -> None:
    """``--players``, ``--entities`` (``least`` .. :data:`MAX_COUNT`) and ``--world`` (:data:`MIN_WORLD` ..
    :data:`MAX_WORLD`): one argparse line each, for both entry points (``server.demo``, ``server.scale``)."""
    for name in ("players", "entities"):
        value = getattr(args, name)
        if not least <= value <= MAX_COUNT:
            ap.error(f"--{name} must be from {least} to {MAX_COUNT:,}, got {value}")
    if not MIN_WORLD <= args.world <= MAX_WORLD:  # nan fails too
        ap.error(f"--world must be from {MIN_WORLD:g} to {MAX_WORLD:g} (the entities' radii are 10 to 150 "
                 f"world units), got {args.world:g}")


def parse(argv: Sequence[str] | None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(prog=PROG, description=__doc__.split("\n\n")[0].replace("``", "`"))
    ap.add_argument("--players", type=int, default=10_000, help="viewers (default 10000)")
    ap.add_argument("--entities", type=int, default=100_000, help="moving entities (default 100000)")
    ap.add_argument("--shards", type=int, default=2,
                    help=f"Ray actors, one per region, 1 to {MAX_SHARDS} (default 2)")
    ap.add_argument("--ticks", type=int, default=20, help="server ticks to run after tick 0, where every player enters (default 20)")
    ap.add_argument("--world", type=float, default=4096.0, help="edge of the square world (default 4096)")
    ap.add_argument("--hysteresis", type=float, default=0.0,
                    help="leave margin m, 0 to 1: an entity leaves beyond r * (1 + m) (default 0)")
    ap.add_argument("--seed", type=int, default=1, help="the world's random seed, 0 or more (default 1)")
    ap.add_argument("--check", action="store_true", help="compare every tick with one InterestManager")
    ap.add_argument("--quiet", action="store_true", help="no per-tick lines, only the bar and the summary")
    args = ap.parse_args(argv)
    check_world(ap, args, 0)
    if args.seed < 0:
        ap.error(f"--seed must be 0 or more, got {args.seed}")
    if args.ticks < 1:
        ap.error(f"--ticks must be at least 1, got {args.ticks}")
    if not 1 <= args.shards <= MAX_SHARDS:
        ap.error(f"--shards must be from 1 to {MAX_SHARDS}, got {args.shards}")
    if not 0.0 <= args.hysteresis <= MAX_HYSTERESIS:  # nan fails too
        ap.error(f"--hysteresis must be from 0 to {MAX_HYSTERESIS:g}, got {args.hysteresis:g}")
    return args


def world(n: int, m: int, size: float, seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(centres (n, 3), radii (n,), players (m, 3))``: a ground plane with 16 towns."""
    rng = np.random.default_rng(seed)
    top = np.nextafter(size, 0.0)
    towns = rng.uniform(size * 0.1, size * 0.9, (16, 2))
    in_town = n // 10
    xy = np.concatenate([rng.uniform(0.0, size, (n - in_town, 2)),
                         towns[np.arange(in_town) % 16] + rng.normal(0.0, size / 40, (in_town, 2))])
    centres = np.column_stack([np.clip(xy, 0.0, top), rng.uniform(0.0, 2.0, n)])
    kind = rng.choice(3, n, p=[0.6, 0.3, 0.1])
    lo, hi = np.array([10.0, 25.0, 60.0])[kind], np.array([25.0, 60.0, 150.0])[kind]
    radii = lo + (hi - lo) * rng.random(n)
    half = m // 2
    pxy = np.concatenate([towns[np.arange(half) % 16] + rng.normal(0.0, size / 40, (half, 2)),
                          rng.uniform(0.0, size, (m - half, 2))])
    players = np.column_stack([np.clip(pxy, 0.0, top), np.full(m, 1.7)])
    return centres, radii, players


def bar(done: int, total: int, width: int = 30) -> str:
    filled = width * done // max(total, 1)
    return f"[{'#' * filled}{'.' * (width - filled)}] {done}/{total}"


def _token_auth_by_name() -> None:
    """Token authentication for the local cluster ``ray.init`` starts, as Ray (2.50 on) does by default,
    asked for by name: the same cluster without the warning Ray prints when ``RAY_AUTH_MODE`` is unset
    (``RAY_AUTH_MODE=disabled`` still opts out).  Only before Ray's first import, which reads the mode,
    and where no cluster's address is given."""
    if "ray" not in sys.modules and "RAY_ADDRESS" not in os.environ:
        os.environ.setdefault("RAY_AUTH_MODE", "token")


def main(argv: Sequence[str] | None = None, out: TextIO | None = None, err: TextIO | None = None) -> int:
    args = parse(argv)
    out = out or sys.stdout
    err = err or sys.stderr
    with terminate_as_ctrl_c() as termination:
        status = _serve(args, out, err, termination)
    if termination.came:  # SIGTERM took Ctrl-C's way out: said as what it was
        print(f"{PROG}: error: terminated", file=err)
        return 143
    if status == 130:
        print(f"{PROG}: error: interrupted", file=err)
    return status


def _serve(args: argparse.Namespace, out: TextIO, err: TextIO, termination: Termination) -> int:
    """:func:`main`'s work: Ray started where none runs, :func:`run`, Ray stopped; 130 where a Ctrl-C (or
    a SIGTERM, which takes its way) cut it short, 1 with the line printed where Ray failed, else 0.
    A SIGTERM while a step holds Ctrl-C is acted on after it even where the program ignores SIGINT."""
    ray: Any = None
    started_ray = False
    interrupted = False
    failed: str | None = None
    try:
        _token_auth_by_name()
        try:
            import ray  # after the arguments: --help answers at once; within the try: Ctrl-C in its second
        except ImportError:  # the optional extra not installed: one line, not a traceback
            print(f'{PROG}: error: the sharded server needs Ray: pip install -e ".[server]"', file=err)
            return 1
        # The library's import (numba's C extensions) held too: a Ctrl-C inside an extension's import became
        # its ImportError ("numba._devicearray failed to import"), a traceback instead of this one line
        if ctrl_c_held(_load_library)[1] or termination.came:
            raise KeyboardInterrupt
        started_ray = not ray.is_initialized()
        # Ray's own INFO lines (the local instance it started) left out; a Ctrl-C while Ray starts its
        # processes waits until they run, so that the shutdown below stops them all
        if started_ray and ctrl_c_held(lambda: _init_keeping_sigterm(ray, termination))[1] or termination.came:
            raise KeyboardInterrupt
        termination.claim()  # ray.init's own SIGTERM handler printed a C++ stack dump and skipped the shutdown
        run(args, out, err)
    except RuntimeError as error:  # Ray's start or the shard actors' (another cluster joined, say): one line
        failed = " ".join(str(error).split())
    except KeyboardInterrupt:  # Ctrl-C: one line, and Ray's processes stopped below
        interrupted = True
        if getattr(err, "isatty", lambda: False)():  # the bar's line ended first: the message on its own
            print(file=err)
    finally:
        # A Ctrl-C while Ray's processes stop waits until they have (a second one must not leave them
        # running), and is still the program's answer: one that came after the summary exited 0 in silence.
        if started_ray and ctrl_c_held(ray.shutdown)[1]:
            interrupted = True
    if interrupted:
        return 130
    if failed is not None:
        print(f"{PROG}: error: {failed}", file=err)
        return 1
    return 0


def _init_keeping_sigterm(ray: Any, termination: Termination) -> None:
    """``ray.init`` with SIGTERM left to ``termination`` while it runs: Ray puts in a handler of its own
    at the start of ``init`` (``sys.exit(15)`` from wherever the start was, its processes half made:
    status 15 and Ray's agents left running), through ``ray._private.utils.set_sigterm_handler``, which
    installs ``termination``'s here instead.  Where Ray has no such function, ``init`` runs as it is."""
    utils: Any = getattr(getattr(ray, "_private", None), "utils", None)
    setter = getattr(utils, "set_sigterm_handler", None)
    if setter is not None:
        utils.set_sigterm_handler = lambda handler: termination.claim()
    try:
        ray.init(include_dashboard=False, log_to_driver=False, logging_level=logging.WARNING)
    except Exception:
        if not termination.came:
            raise
        # The SIGTERM reached Ray's own processes too (a stop sent to the process group): their start
        # failed for it ("Failed to connect to GCS"), a traceback and status 1; it is the termination
    finally:
        if setter is not None:
            utils.set_sigterm_handler = setter


def _load_library() -> None:
    """Import what :func:`run` uses (``culling``, numba, the service), for :func:`main` to hold Ctrl-C over."""
    import culling  # noqa: F401
    import server.sharded  # noqa: F401


def run(args: argparse.Namespace, out: TextIO, err: TextIO) -> None:
    """The demo's ticks on a running Ray: the world, the service, ``--ticks`` ticks and the summary."""
    import culling
    from culling import InterestManager
    from server.sharded import ShardedInterest

    if not culling.kernels_cached(KERNELS):  # a cold first run: the compile shown, not seconds of silence
        culling.warm_up(culling.progress_bar(err), groups=KERNELS)

    # Both on a terminal: the bar redrawn in place below the figures.  The figures piped (``| tee log``)
    # while the bar is on the terminal: each line of the bar ends, or the pipe's lines ran into it.
    live = all(getattr(stream, "isatty", lambda: False)() for stream in (err, out))
    centres, radii, players = world(args.entities, args.players, args.world, args.seed)
    rng = np.random.default_rng(args.seed + 1)
    top = np.nextafter(args.world, 0.0)
    t0 = time.perf_counter()
    service = ShardedInterest(args.world, shards=args.shards, hysteresis=args.hysteresis)
    try:
        handles = service.insert_many(centres, radii)
        check = InterestManager(args.world, hysteresis=args.hysteresis) if args.check else None
        if check is not None:
            check.insert_many(centres, radii)
        ids = np.arange(args.players, dtype=np.int64)
        shards = f"{args.shards} shard" + ("s" if args.shards != 1 else "")
        print(f"{args.entities:,} entities, {args.players:,} players, {shards} "
              f"({service.regions.cells_per_axis}x{service.regions.cells_per_axis} cells); "
              f"ghost fraction {service.ghost_fraction():.3f}; set up in {time.perf_counter() - t0:.2f} s", file=out)
        times = []
        for tick in range(args.ticks + 1):
            if tick:
                moved = handles[rng.random(handles.size) < MOVING_SHARE]
                step = rng.normal(0.0, STEP, (moved.size, 3))
                step[:, 2] = 0.0
                centres[moved] = np.clip(centres[moved] + step, 0.0, top)
                pstep = rng.normal(0.0, STEP, players.shape)
                pstep[:, 2] = 0.0
                players = np.clip(players + pstep, 0.0, top)
            t1 = time.perf_counter()
            if tick:
                service.update_many(moved, centres[moved])
            events = service.tick(ids, players)
            dt = time.perf_counter() - t1
            if tick:
                times.append(dt)
            if check is not None:
                if tick:
                    check.update_many(moved, centres[moved])
                expected = check.tick(ids, players)
                for field in ("entered_offsets", "entered", "left_offsets", "left"):
                    if not np.array_equal(getattr(events, field), getattr(expected, field)):
                        raise AssertionError(f"tick {tick}: the shards' {field} differs from InterestManager's")
            if not args.quiet:
                if live:  # the bar's line cleared first: the tick's line takes its place, the bar comes back below
                    err.write("\r\x1b[K")
                    err.flush()
                shares = "/".join(f"{int(v)}" for v in service.last_tick["viewers"])
                actor = "/".join(f"{1e3 * s:.1f}" for s in service.last_tick["seconds"])
                print(f"tick {tick:4d}: {1e3 * dt:8.1f} ms, {events.entered.size:7,} entered, "
                      f"{events.left.size:7,} left; viewers per shard {shares}, shard ms {actor}"
                      + (" (everyone enters)" if tick == 0 else ""), file=out, flush=True)
            # On a terminal the bar is redrawn in place; elsewhere (a log, a pipe shared with the figures)
            # each state of it is a line of its own, never run into the next tick's line.
            print(f"\r\x1b[K{bar(tick, args.ticks)}" if live else bar(tick, args.ticks), end="" if live else "\n",
                  file=err, flush=True)
        if live:
            print(file=err)
        median = float(np.median(times))
        print(f"{shards}: median tick {1e3 * median:.1f} ms, {1.0 / median:.1f} ticks/s; "
              f"ghost fraction {service.ghost_fraction():.3f}; {service.restarts} actor restarts"
              + ("; every tick identical to InterestManager" if check is not None else ""), file=out)
    finally:
        service.close()


if __name__ == "__main__":
    sys.exit(main())
