"""``python -m server.scale``: the figures docs/SERVER.md models K = 8-64 actors from, measured in one process.

No Ray: for each shard count K it splits the demo's world
(:func:`server.demo.world`) into regions (:class:`server.regions.Regions`),
counts the ghosts, and times what each actor would do (one ``query_many``
over the entities it holds, for the viewers routed to it; ``update_many`` of
its share of the moving entities) in a tree of its own, one region after
another, keeping the slowest region; then the coordinator's part (routing
the viewers, placing the moved entities, one ``InterestSets.advance`` of
all the rows) and the bytes a tick moves between the coordinator and the
actors.  A tick on K machines is modelled as coordinator + slowest actor +
bytes / bandwidth.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from culling import InterestSets, ViewDistanceTree
from server.demo import MOVING_SHARE, check_world, world
from server.regions import MAX_SHARDS, Regions

#: Bytes a second between the coordinator and an actor on another machine (10 Gb/s Ethernet, about 80% used).
BANDWIDTH = 1.0e9


def _best(fn: Callable[[], Any], repeats: int) -> float:
    """The median wall time of ``fn()`` over ``repeats`` calls after one untimed call."""
    fn()
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return float(np.median(times))


def measure(n: int, m: int, size: float, shard_counts: Sequence[int], repeats: int = 3,
            regions_timed: int = 4) -> list[dict[str, float]]:
    """One row per shard count: ghost fraction, the slowest region's actor time, the coordinator's time, bytes."""
    centres, radii, players = world(n, m, size, seed=1)
    rng = np.random.default_rng(2)
    moving = rng.random(n) < MOVING_SHARE
    step = rng.normal(0.0, 1.5, (n, 3))
    step[:, 2] = 0.0
    moved_centres = np.clip(centres + step, 0.0, np.nextafter(size, 0.0))
    whole = ViewDistanceTree(size)
    whole.insert_many(centres, radii)
    handles, counts = whole.query_many(players, exact=True)
    ids = np.arange(m, dtype=np.int64)
    rows = []
    for k_count in shard_counts:
        regions = Regions(size, (0.0, 0.0, 0.0), 3, k_count)
        where = regions.touched(centres, radii)
        region = regions.region_of(players)
        held = where.sum(axis=0)
        viewers = np.bincount(region, minlength=k_count)
        # The regions most loaded (by viewers, then by entities) are timed: the slowest sets the tick.
        order = np.unique(np.concatenate([np.argsort(-viewers)[:regions_timed // 2],
                                          np.argsort(-held)[:regions_timed - regions_timed // 2]]))
        actor = 0.0
        for k in order.tolist():
            mine = np.flatnonzero(where[:, k])
            tree = ViewDistanceTree(size)
            local = tree.insert_many(centres[mine], radii[mine])
            points = np.ascontiguousarray(players[region == k])
            movers = local[moving[mine]]
            there = moved_centres[mine][moving[mine]]
            back = centres[mine][moving[mine]]
            t_query = _best(lambda: tree.query_many(points, exact=True), repeats) if points.size else 0.0
            flip = [there, back]

            def move(tree: ViewDistanceTree = tree, movers: np.ndarray = movers,
                     flip: list[np.ndarray] = flip) -> None:
                tree.update_many(movers, flip[0])
                flip.reverse()

            t_move = _best(move, repeats) if movers.size else 0.0
            actor = max(actor, t_query + t_move)
        # The coordinator: route viewers, place the moved entities, diff every row.
        sets = InterestSets()
        sets.advance(ids, handles, counts)
        t_route = _best(lambda: regions.region_of(players), repeats)
        t_place = _best(lambda: regions.touched(moved_centres[moving], radii[moving]), repeats)
        t_diff = _best(lambda: sets.advance(ids, handles, counts), repeats)
        ghosts = float(where.sum() - n) / n
        moved = int(moving.sum())
        bytes_in = m * 3 * 8 + moved * (1.0 + ghosts) * (8 + 3 * 8)
        bytes_out = handles.size * 8 + m * 8
        coordinator = t_route + t_place + t_diff
        rows.append({"shards": k_count, "ghosts": ghosts, "max_viewers": float(viewers.max()),
                     "max_entities": float(held.max()), "actor": actor, "coordinator": coordinator,
                     "diff": t_diff, "bytes": bytes_in + bytes_out,
                     "model": coordinator + actor + (bytes_in + bytes_out) / BANDWIDTH})
    return rows


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m server.scale", description=__doc__.split("\n\n")[0].replace("``", "`"))
    ap.add_argument("--players", type=int, default=10_000, help="viewers (default 10000)")
    ap.add_argument("--entities", type=int, default=100_000, help="entities (default 100000)")
    ap.add_argument("--world", type=float, default=4096.0, help="edge of the square world (default 4096)")
    ap.add_argument("--shards", type=int, nargs="+", default=[1, 2, 8, 16, 32, 64], metavar="K",
                    help=f"the region counts to model, each 1 to {MAX_SHARDS} (default 1 2 8 16 32 64)")
    args = ap.parse_args(argv)
    check_world(ap, args, 1)
    if any(not 1 <= k <= MAX_SHARDS for k in args.shards):
        ap.error(f"--shards: each must be from 1 to {MAX_SHARDS}, got {' '.join(map(str, args.shards))}")
    rows = measure(args.entities, args.players, args.world, args.shards)
    print("| K | ghost fraction | most viewers in a region | most entities in a region | slowest actor | "
          "coordinator (diff) | bytes / tick | modelled tick |")
    print("|---|---|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['shards']} | {r['ghosts']:.3f} | {r['max_viewers']:,.0f} | {r['max_entities']:,.0f} | "
              f"{1e3 * r['actor']:.1f} ms | {1e3 * r['coordinator']:.1f} ms ({1e3 * r['diff']:.1f}) | "
              f"{r['bytes'] / 1e6:.1f} MB | {1e3 * r['model']:.1f} ms |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
