"""Point objects and exact-in-floats worlds: ``python -m benchmarks.point_objects [--n N]``.

Radius-0 objects (points) and integer worlds (a camera on a grid point,
whole radii) put every answer exactly on a surface, where the float filter
cannot decide.  The exact query settles them in floats when nothing rounds
(:func:`culling.core.containment.decide_in_floats`) instead of one rational
computation per object.  Each case prints the median of several exact
queries and its ratio to a query whose answers are off the surface.
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np

from engine.arguments import whole_number


def _median_ms(fn, repeats: int = 7) -> float:
    fn()  # warm-up (compiles)
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return 1e3 * statistics.median(times)


def run(n: int) -> list[tuple[str, float, float]]:
    """``(case, ms, reference ms)`` per case: point objects against radius-1 objects at the same
    point, and an integer grid with the camera on a grid point against one off it."""
    from culling import ViewDistanceTree

    p = np.array([10.0, 20.0, 30.0])
    times = {}
    for radius in (0.0, 1.0):
        tree = ViewDistanceTree(1024.0, dim=3)
        tree.insert_many(np.tile(p, (n, 1)), np.full(n, radius))
        times[radius] = _median_ms(lambda: tree.query(p, exact=True))
    rows = [(f"{n:,} point objects (radius 0) at the query point vs radius 1", times[0.0], times[1.0])]
    side = round(n ** (1 / 3))
    grid = np.stack(np.meshgrid(*[np.arange(side, dtype=np.float64)] * 3, indexing="ij"), -1).reshape(-1, 3)
    tree = ViewDistanceTree(1024.0, dim=3)
    tree.insert_many(grid, np.full(grid.shape[0], 2.0))
    camera = np.full(3, float(side // 2))
    on = _median_ms(lambda: tree.query(camera, exact=True))
    off = _median_ms(lambda: tree.query(camera + 0.3, exact=True))
    rows.append((f"integer grid {side}^3, radius 2: camera on a grid point vs off", on, off))
    return rows


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(prog="python -m benchmarks.point_objects", description=__doc__)
    ap.add_argument("--n", type=whole_number(), default=100_000, help="objects (default 100,000; at least 8)")
    args = ap.parse_args(argv)
    if args.n < 8:
        ap.error(f"--n must be at least 8 (a grid of 2 a side), got {args.n}")
    for case, ms, reference in run(args.n):
        print(f"{case:66s} {ms:10.3f} ms  vs {reference:8.3f} ms  x{ms / reference:7.2f}")


if __name__ == "__main__":
    from benchmarks.command import exit_with

    exit_with(main, "python -m benchmarks.point_objects")
