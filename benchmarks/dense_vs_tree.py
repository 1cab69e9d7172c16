"""The tree against the dense grid on uniform worlds, operation by operation: ``python -m benchmarks.dense_vs_tree
[--dim D] [--objects N] [--rounds R]``; with ``--crowd``, ``overlapping_pairs`` of a crowd far smaller than the
grid's ``min_radius`` (5k, 10k, ... up to N objects of radius 1e-4 in a 2-unit cube of a 64-unit world,
``min_radius`` 2: every object in one of a few finest cells).

A bounded world of 4096 filled uniformly (3-D: view distances 8 to 64; 2-D, an RTS map: 8 to 32; the grid's
``min_radius`` 8), both structures built and used in turn in one process, round after round, so the
machine's load falls on both alike: the batch mutations per object (``insert_many``, ``update_many`` with
small moves and with every object moved anywhere, ``remove_many``), the single ones per call, an exact
``query`` and ``query_many`` per point (2,000 random points), and ``nbytes()`` per object.  Wall clock,
medians of the rounds; docs/DENSE.md quotes its figures.
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable

import numpy as np

from engine.arguments import whole_number

#: The world's edge, and each dimension's largest view distance (the smallest is :data:`MIN_RADIUS`).
SIZE = 4096.0
LARGEST = {1: 32.0, 2: 32.0, 3: 64.0}
MIN_RADIUS = 8.0


def compare(dim: int, n: int, rounds: int, seed: int = 1) -> dict[str, dict[str, float]]:
    """``{operation: {"tree": median, "grid": median}}``: seconds per object or call, bytes per object."""
    import culling

    top = np.nextafter(SIZE, 0.0)
    rng = np.random.default_rng(seed)
    centres, radii = rng.uniform(0.0, SIZE, (n, dim)), rng.uniform(MIN_RADIUS, LARGEST[dim], n)
    points = rng.uniform(0.0, SIZE, (2000, dim))
    make: dict[str, Callable[[], culling.ViewDistanceTree | culling.DenseViewDistanceGrid]] = {
        "tree": lambda: culling.ViewDistanceTree(size=SIZE, dim=dim),
        "grid": lambda: culling.DenseViewDistanceGrid(size=SIZE, dim=dim, min_radius=MIN_RADIUS)}
    found: dict[str, dict[str, list[float]]] = {}

    def timed(kind: str, operation: str, per: int, call: Callable[[], object]) -> object:
        start = time.perf_counter()
        result = call()
        found.setdefault(operation, {}).setdefault(kind, []).append((time.perf_counter() - start) / per)
        return result

    for turn in range(rounds):
        for kind in ("tree", "grid") if turn % 2 else ("grid", "tree"):
            s = make[kind]()
            handles = timed(kind, "insert_many, per object", n, lambda: s.insert_many(centres, radii))
            moved = centres.copy()
            for _ in range(3):
                moved = np.clip(moved + rng.normal(0.0, 0.5, moved.shape), 0.0, top)
                timed(kind, "update_many, small moves, per object", n, lambda: s.update_many(handles, moved))
            anywhere = rng.uniform(0.0, SIZE, (n, dim))
            timed(kind, "update_many, moved anywhere, per object", n, lambda: s.update_many(handles, anywhere))
            spots = [tuple(map(float, c)) for c in rng.uniform(0.0, SIZE, (500, dim))]
            new = timed(kind, "insert()", len(spots), lambda: [s.insert(c, 10.0) for c in spots])
            timed(kind, "update() to another cell", len(spots),
                  lambda: [s.update(h, c, 10.0) for h, c in zip(new, spots[::-1])])
            timed(kind, "remove()", len(spots), lambda: [s.remove(h) for h in new])
            timed(kind, "query, exact, per call", 300, lambda: [s.query(p, exact=True) for p in points[:300]])
            timed(kind, "query_many, exact, per point", len(points), lambda: s.query_many(points, exact=True))
            found.setdefault("memory per object (bytes)", {}).setdefault(kind, []).append(s.nbytes() / n)
            timed(kind, "remove_many, per object", n // 2, lambda: s.remove_many(handles[: n // 2]))
    return {op: {kind: statistics.median(v) for kind, v in by.items()} for op, by in found.items()}


def crowd(dim: int, largest: int, rounds: int, seed: int = 1) -> list[tuple[int, float, float]]:
    """``(objects, tree seconds, grid seconds)`` of one ``overlapping_pairs`` call (medians of ``rounds``
    calls, the two structures in turn) for crowds of 5k, then twice as many each step, up to ``largest``."""
    import culling

    rng = np.random.default_rng(seed)
    rows = []
    n = min(5000, largest)
    while n <= largest:
        centres, radii = 10.0 + 2.0 * rng.random((n, dim)), np.full(n, 1e-4)
        built = {"tree": culling.ViewDistanceTree(64.0, dim=dim),
                 "grid": culling.DenseViewDistanceGrid(64.0, dim=dim, min_radius=2.0)}
        times: dict[str, list[float]] = {"tree": [], "grid": []}
        for s in built.values():
            s.insert_many(centres, radii)
            s.overlapping_pairs()                                   # the kernels ready, the plan made
        for turn in range(rounds):
            for kind in ("tree", "grid") if turn % 2 else ("grid", "tree"):
                start = time.perf_counter()
                built[kind].overlapping_pairs()
                times[kind].append(time.perf_counter() - start)
        rows.append((n, statistics.median(times["tree"]), statistics.median(times["grid"])))
        n *= 2
    return rows


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m benchmarks.dense_vs_tree", description="The tree against the dense grid on uniform worlds, operation by operation.")
    ap.add_argument("--dim", type=int, default=3, choices=(1, 2, 3), help="dimensions (default 3)")
    ap.add_argument("--objects", type=whole_number(), default=None,
                    help="objects (default 200,000, with --crowd 40,000; at least 1,000)")
    ap.add_argument("--rounds", type=int, default=5, help="rounds of both structures (default 5)")
    ap.add_argument("--crowd", action="store_true",
                    help="overlapping_pairs of a crowd far below the grid's min_radius instead (up to --objects, "
                         "default 40,000)")
    args = ap.parse_args(argv)
    if args.objects is None:
        args.objects = 40_000 if args.crowd else 200_000
    if args.objects < 1000 or args.rounds < 1:
        ap.error("--objects must be at least 1,000 and --rounds at least 1")
    if args.crowd:
        print(f"dim {args.dim}: overlapping_pairs of a crowd of radius 1e-4 in a 2-unit cube, world 64, grid "
              f"min_radius 2 (medians of {args.rounds} calls, tree and grid in turn; wall clock)")
        for n, tree, grid in crowd(args.dim, args.objects, args.rounds):
            print(f"{n:>8,} objects   tree {tree * 1e3:8.2f} ms   grid {grid * 1e3:8.2f} ms   grid / tree {grid / tree:5.2f}")
        return 0
    print(f"dim {args.dim}, {args.objects:,} objects in a world of {SIZE:g} (medians of {args.rounds} rounds, "
          "tree and grid in turn; wall clock)")
    for operation, by in compare(args.dim, args.objects, args.rounds).items():
        tree, grid = by["tree"], by["grid"]
        show = (lambda v: f"{v:.0f} B") if "bytes" in operation else \
            (lambda v: f"{v * 1e9:.0f} ns" if v < 1e-6 else f"{v * 1e6:.2f} us")
        print(f"{operation:42s} tree {show(tree):>10s}  grid {show(grid):>10s}  grid / tree {grid / tree:5.2f}")
    return 0


if __name__ == "__main__":
    from benchmarks.command import exit_with

    exit_with(main, "python -m benchmarks.dense_vs_tree")
