"""Profiles of the tree's hot paths: ``python -m benchmarks.profiling [CASE ...]``.

Each case builds its workload untimed, then runs the hot path under
pyinstrument (a call tree) and line_profiler (time per line of the tree's
methods).  Both are optional dev tools from PyPI (``pip install pyinstrument
line_profiler``); the reports go to the terminal and, with ``--out``, to text
files.  Cases: query (exact query, forest 1M), query_many, insert_many
(forest 1M), update_many (100k moving), single (in-node update() and
remove() at 1M), colocated (100k insert(), query, remove()).
"""

from __future__ import annotations

import argparse
import io
import sys
from collections.abc import Callable
from pathlib import Path

import numpy as np

from benchmarks.workloads import Workload, colocated, forest, moving, moving_steps

Case = Callable[[Workload, object], Callable[[], object]]


def _tree(wl: Workload, fill: bool = True):
    from culling import ViewDistanceTree

    tree = ViewDistanceTree(size=wl.root_size, origin=wl.root_origin, dim=3)
    handles = tree.insert_many(wl.centres, wl.radii) if fill else np.empty(0, dtype=np.int64)
    return tree, handles


def case_query(n: int, scale: int) -> tuple[list[str], Callable[[], object]]:
    wl = forest(n, 64)
    tree, _ = _tree(wl)
    path = wl.path

    def run():
        for _ in range(20 * scale):
            for p in path:
                tree.query(p, exact=True)

    return ["query", "_visit", "_collect", "_runs", "_inside"], run


def case_query_many(n: int, scale: int) -> tuple[list[str], Callable[[], object]]:
    wl = forest(n, 64)
    tree, _ = _tree(wl)

    def run():
        for _ in range(3 * scale):
            tree.query_many(wl.path, exact=True)

    return ["query_many", "_visit"], run


def case_insert_many(n: int, scale: int) -> tuple[list[str], Callable[[], object]]:
    wl = forest(n, 8)

    def run():
        for _ in range(scale):
            _tree(wl)

    return ["insert_many", "_fit_many", "_link_many", "_make_room"], run


def case_update_many(n: int, scale: int) -> tuple[list[str], Callable[[], object]]:
    wl = moving(n, 8)
    tree, handles = _tree(wl)
    frames = moving_steps(wl, 5 * scale)

    def run():
        for c in frames:
            tree.update_many(handles, c, wl.radii)

    return ["update_many", "_fit_many", "_unlink_many", "_link_many", "_cleanup_many", "_live_many"], run


def case_single(n: int, scale: int) -> tuple[list[str], Callable[[], object]]:
    wl = forest(n, 8)
    tree, handles = _tree(wl)
    rng = np.random.default_rng(1)
    pick = rng.choice(n, 20_000 * scale, replace=False)
    centres, radii = wl.centres[pick] + 1e-7, wl.radii[pick]
    live = [handles[pick]]

    def run():
        args = list(zip(live[0].tolist(), centres, radii.tolist()))
        for a in args:
            tree.update(*a)
        for h in live[0].tolist():
            tree.remove(h)
        live[0] = tree.insert_many(centres, radii)  # for the next run

    return ["update", "remove", "_point", "_home", "_live", "_unlink", "_cleanup", "_shrink_root"], run


def case_colocated(n: int, scale: int) -> tuple[list[str], Callable[[], object]]:
    wl = colocated(n)
    rows = [(wl.centres[i], float(wl.radii[i])) for i in range(n)]

    def run():
        tree, _ = _tree(wl, fill=False)
        hs = [tree.insert(c, r) for c, r in rows]
        for p in wl.path:
            tree.query(p, exact=True)
        for h in hs:
            tree.remove(h)

    return ["insert", "remove", "_append", "_move_block", "_unlink", "_cleanup", "_shrink_root", "_home"], run


CASES = {
    "query": (case_query, 1_000_000),
    "query_many": (case_query_many, 1_000_000),
    "insert_many": (case_insert_many, 1_000_000),
    "update_many": (case_update_many, 100_000),
    "single": (case_single, 1_000_000),
    "colocated": (case_colocated, 100_000),
}


def profile_case(name: str, n: int | None = None, lines: bool = True, scale: int = 1) -> str:
    """Run one case under pyinstrument, then line_profiler; return both reports."""
    from pyinstrument import Profiler

    from culling import ViewDistanceTree

    make, default_n = CASES[name]
    funcs, run = make(n or default_n, scale)
    run()  # warm-up
    prof = Profiler(interval=0.0002)
    prof.start()
    run()
    prof.stop()
    parts = [f"### {name} (n={n or default_n})", prof.output_text(unicode=False, color=False, show_all=False)]
    if lines:
        from line_profiler import LineProfiler

        lp = LineProfiler(*(getattr(ViewDistanceTree, f) for f in funcs if hasattr(ViewDistanceTree, f)))
        lp.runcall(run)
        buf = io.StringIO()
        lp.print_stats(stream=buf, output_unit=1e-6, stripzeros=True)
        parts.append(buf.getvalue())
    return "\n".join(parts)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m benchmarks.profiling", description=__doc__.splitlines()[0])
    ap.add_argument("cases", nargs="*", help=f"cases to profile, of {', '.join(CASES)} (all by default)")
    ap.add_argument("--n", type=int, help="objects (default per case)")
    ap.add_argument("--no-lines", action="store_true", help="skip line_profiler")
    ap.add_argument("--out", type=Path, help="folder for one report file per case")
    args = ap.parse_args(argv)
    unknown = set(args.cases) - set(CASES)
    if unknown:
        ap.error(f"unknown case(s) {sorted(unknown)}; choose from {', '.join(CASES)}")
    for name in args.cases or CASES:
        text = profile_case(name, args.n, not args.no_lines)
        print(text)
        if args.out:
            args.out.mkdir(parents=True, exist_ok=True)
            (args.out / f"profile_{name}.txt").write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
