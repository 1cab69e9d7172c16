"""Profiles of the tree's hot paths: ``python -m benchmarks.profiling [CASE ...]``.

Each case builds its workload untimed, then runs the hot path under
pyinstrument (a call tree) and line_profiler (time per line of the tree's
methods).  Both come with the ``profile`` extra (``.venv/bin/pip install -e
".[profile]"``); without them the command says so in one line; the reports go to the terminal and, with ``--out``, to text
files.  Cases: query (exact query, forest 1M), query_many, insert_many
(forest 1M), update_many (100k moving), single (in-node update() and
remove() at 1M), colocated (100k insert(), query, remove()).

Python profilers see a compiled kernel as one call; ``phases`` times the
exact query's steps instead (the walk, the member test, the Python wrapper),
by running the same kernels stopped after each.

Linux ``perf`` sees inside the kernels, but only as addresses: with
``--perf`` each case runs once to load its kernels, :func:`write_perf_map`
names every loaded kernel's machine code in ``/tmp/perf-<pid>.map`` (the file
``perf report`` reads for code a JIT made), and the case runs again, without
the Python profilers::

    perf record -F 2000 -o perf.data -- python -m benchmarks.profiling --perf query_many --repeat 50
    perf report -i perf.data --no-children --sort sym
"""

from __future__ import annotations

import argparse
import io
import os
import re
from collections.abc import Callable
from pathlib import Path

import numpy as np

from benchmarks.command import require
from benchmarks.workloads import Workload, colocated, forest, moving, moving_steps
from engine.arguments import whole_number
from engine.files import unwritable_folder

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

    return ["query"], run


def case_query_many(n: int, scale: int) -> tuple[list[str], Callable[[], object]]:
    wl = forest(n, 64)
    tree, _ = _tree(wl)

    def run():
        for _ in range(3 * scale):
            tree.query_many(wl.path, exact=True)

    return ["query_many"], run


def case_insert_many(n: int, scale: int) -> tuple[list[str], Callable[[], object]]:
    wl = forest(n, 8)

    def run():
        for _ in range(scale):
            _tree(wl)

    return ["insert_many", "_fit_many", "_prepare_links", "_place", "BlockPool.make_room"], run


def case_update_many(n: int, scale: int) -> tuple[list[str], Callable[[], object]]:
    wl = moving(n, 8)
    tree, handles = _tree(wl)
    frames = moving_steps(wl, 5 * scale)

    def run():
        for c in frames:
            tree.update_many(handles, c, wl.radii)

    return ["update_many", "_live_unique", "_prepare_links", "_fit_many", "NodeTable.at_many", "BlockPool.make_room",
            "_place", "_prune", "NodeTable.prune", "BlockPool.release_many"], run


def case_single(n: int, scale: int) -> tuple[list[str], Callable[[], object]]:
    wl = forest(n, 8)
    tree, handles = _tree(wl)
    rng = np.random.default_rng(1)
    pick = rng.choice(n, min(n, 20_000 * scale), replace=False)
    centres, radii = wl.centres[pick] + 1e-7, wl.radii[pick]
    live = [handles[pick]]

    def run():
        args = list(zip(live[0].tolist(), centres, radii.tolist()))
        for a in args:
            tree.update(*a)
        for h in live[0].tolist():
            tree.remove(h)
        live[0] = tree.insert_many(centres, radii)  # for the next run

    return ["update", "remove", "_home", "_live", "_unlink", "_append", "_prune", "_after_removal", "_shrink_root"], run


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

    return ["insert", "remove", "_append", "_room_at", "_unlink", "_prune", "_after_removal", "_shrink_root", "_home"], run


CASES = {
    "query": (case_query, 1_000_000),
    "query_many": (case_query_many, 1_000_000),
    "insert_many": (case_insert_many, 1_000_000),
    "update_many": (case_update_many, 100_000),
    "single": (case_single, 1_000_000),
    "colocated": (case_colocated, 100_000),
}


def query_phases(n: int = 1_000_000, repeats: int = 3) -> str:
    """The exact query's time, step by step, on the forest (medians over its camera path)."""
    import time

    import numba

    from culling.core import containment, members, tiles
    from culling.core.structs import Pool, Query, World, nodes_of
    from culling.tree import walk as treewalk

    wl = forest(n, 64)
    tree, _ = _tree(wl)
    nodes, pool = tree._nodes, tree._pool

    @numba.njit
    def stopped_after(p, stop, world_fields, nodes_fields, pool_fields):
        nodes, pool, q = nodes_of(nodes_fields), Pool(*pool_fields), Query(1.0, True, False, False)
        start, count, box = nodes.start, nodes.members, pool.tile_box
        visited, _ = treewalk.walk(p, 1.0, World(*world_fields), nodes, 0.0)
        if stop == 0:
            return 0, 0, 0
        total = members.candidates(visited, count)
        out = np.empty(total, dtype=np.int64)
        scratch = (np.empty(containment.TILE), np.empty(total, dtype=np.uint8),
                   np.empty((total >> tiles.TILE_SHIFT) + 2, dtype=np.uint8))
        sure, tested, nothing = 0, 0, np.empty(0, dtype=np.int64)
        for node in visited:
            first, last = start[node], start[node] + count[node]
            s, _ = members.keep_rows(pool, (first, last), p, q, scratch, out, sure, nothing, 0)
            sure += s
            if stop == 4 and first < last:  # counting only, untimed
                near = scratch[2]
                n = tiles.flag_tiles(first, last, p, 1.0, box, True, near)
                for i in range(n):
                    if near[i]:
                        lo, hi = tiles.near_range(first, last, i, i + 1, box)
                        tested += hi - lo
        return total, tested, sure

    args = (tree._world(), nodes.arrays(), pool.arrays())
    fns = [(lambda p, s=stop: stopped_after(p, s, *args)) for stop in (0, 1)] + [lambda p: tree.query(p, exact=True)]
    for fn in fns:
        fn(wl.path[0])
    times = np.empty((3, repeats, len(wl.path)))
    for rep in range(repeats):  # the three alternated point by point (in turn), so the machine's drift hits them alike
        for i, p in enumerate(wl.path):
            for k in range(3):
                stop = (k + rep + i) % 3
                t0 = time.perf_counter()
                fns[stop](p)
                times[stop, rep, i] = time.perf_counter() - t0
    steps = [float(np.median(times[stop])) * 1e6 for stop in range(3)]
    # each step's cost: the median of its differences point by point (the steps are separate calls, and
    # the member test's stand-in is not the query's own loop: a step near nothing can read below zero)
    extra = [float(np.median(times[stop] - times[stop - 1])) * 1e6 for stop in (1, 2)]
    counts = np.median(np.array([stopped_after(p, 4, *args) for p in wl.path]), axis=0)
    return "\n".join([
        f"### exact query step by step, forest {n:,} (median us over {len(wl.path)} points x {repeats})",
        f"walk (and the kernel call)         {steps[0]:7.1f} us",
        f"member test (keep_rows per run)    {_step(extra[0])}",
        f"Python wrapper (checks, decide)    {_step(extra[1])}",
        f"total, tree.query(p, exact=True)   {steps[2]:7.1f} us",
        f"candidates {counts[0]:,.0f}, rows tested (near tiles) {counts[1]:,.0f}, answers {counts[2]:,.0f}",
    ])


def _step(us: float) -> str:
    """A step's cost for :func:`query_phases`: ``'   12.3 us'``, or below the noise where it reads under 0.05 us."""
    return f"{us:7.1f} us" if us >= 0.05 else "    < 0.1 us (below the noise: the steps are timed apart)"


def _readable(symbol: str) -> str:
    """A kernel's symbol as its Python name: numba mangles ``culling.core.members.keep_rows`` as
    ``_ZN7culling4core7members9keep_rowsB3v12B...`` (Itanium-style name parts, then its ABI tags)."""
    if not symbol.startswith("_ZN"):
        return symbol
    parts, at = [], 3
    while digits := re.match(r"\d+", symbol[at:]):
        at += len(digits.group())
        parts.append(symbol[at:at + int(digits.group())])
        at += int(digits.group())
    return ".".join(parts) or symbol


def write_perf_map(path: Path | None = None) -> Path:
    """Name the machine code of every kernel this process has compiled or loaded, for ``perf report``.

    Each line of a perf map is ``START SIZE NAME`` (hex); a kernel's size is
    taken as the distance to the next symbol's address (numba's JIT engine knows
    addresses, not sizes).  Kernels loaded after the call are not named.
    Default path: ``/tmp/perf-<pid>.map``, where perf looks.
    """
    from numba.core.registry import cpu_target

    engine = cpu_target.target_context.codegen()._engine
    named: dict[int, str] = {}  # an address named once (the first name in order, if two alias it)
    for name in sorted(engine._defined_symbols):
        if address := engine.get_function_address(name):
            named.setdefault(address, name)
    starts = sorted(named.items())
    path = path or Path(f"/tmp/perf-{os.getpid()}.map")
    with path.open("w") as out:
        for (address, name), (following, _) in zip(starts, starts[1:] + [(starts[-1][0] + 4096, "")]):
            out.write(f"{address:x} {min(following - address, 1 << 20):x} {_readable(name)}\n")
    return path


def perf_case(name: str, n: int | None = None, repeat: int = 10) -> str:
    """Run one case once (its kernels load), write the perf map, then run it ``repeat`` times more for
    ``perf record`` (so that the case, not the workload's set-up, fills the profile)."""
    make, default_n = CASES[name]
    _, run = make(n or default_n, 1)
    run()
    path = write_perf_map()
    for _ in range(repeat):
        run()
    return f"### {name} (n={n or default_n}, run {repeat} times): kernels named in {path} for perf report"


def profiled_functions(names: list[str]) -> list[Callable[..., object]]:
    """The functions line_profiler times for a case: ``name`` a method of the tree (or of a class it
    inherits), ``BlockPool.name`` or ``NodeTable.name``, unwrapped (the public methods' lock
    wrappers would take every line's time).  A name nothing has raises ``AttributeError``: a
    renamed method is not skipped in silence."""
    import inspect

    from culling import ViewDistanceTree
    from culling.tree.nodes import NodeTable
    from culling.tree.pool import BlockPool

    classes: dict[str, type] = {"BlockPool": BlockPool, "NodeTable": NodeTable}
    found = []
    for name in names:
        owner, _, attr = name.rpartition(".")
        cls = classes[owner] if owner else ViewDistanceTree
        if not hasattr(cls, attr):
            raise AttributeError(f"benchmarks.profiling: {cls.__name__} has no {attr} (renamed? fix the case's list)")
        found.append(inspect.unwrap(getattr(cls, attr)))
    return found


def profile_case(name: str, n: int | None = None, lines: bool = True, scale: int = 1) -> str:
    """Run one case under pyinstrument, then line_profiler; return both reports."""
    from pyinstrument import Profiler

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

        lp = LineProfiler(*profiled_functions(funcs))
        lp.runcall(run)
        buf = io.StringIO()
        lp.print_stats(stream=buf, output_unit=1e-6, stripzeros=True)
        parts.append(buf.getvalue())
    return "\n".join(parts)


#: The fewest objects a case profiles (``--n``): a few of them would profile the calls' overheads.
MIN_OBJECTS = 1_000


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m benchmarks.profiling", description=__doc__.splitlines()[0].replace("``", ""))
    ap.add_argument("cases", nargs="*", help=f"cases to profile, of {', '.join(CASES)}, phases (all by default)")
    ap.add_argument("--n", type=whole_number(), help=f"objects (default per case; at least {MIN_OBJECTS:,})")
    ap.add_argument("--no-lines", action="store_true", help="skip line_profiler")
    ap.add_argument("--out", type=Path, help="folder for one report file per case")
    ap.add_argument("--perf", action="store_true",
                    help="no Python profilers: run each case for `perf record`, its kernels named in /tmp/perf-<pid>.map")
    ap.add_argument("--repeat", type=whole_number(), default=10, help="with --perf: runs of each case after the map (default 10)")
    args = ap.parse_args(argv)
    unknown = set(args.cases) - set(CASES) - {"phases"}
    if unknown:
        ap.error(f"unknown case(s) {sorted(unknown)}; choose from {', '.join(CASES)}, phases")
    if args.n is not None and args.n < MIN_OBJECTS:
        ap.error(f"--n must be at least {MIN_OBJECTS:,} objects, got {args.n}")
    if args.repeat < 1:
        ap.error(f"--repeat must be at least 1, got {args.repeat}")
    if args.perf and "phases" in args.cases:
        ap.error("--perf runs the cases for perf record; phases times the exact query's steps itself: "
                 "run it without --perf")
    if args.perf and args.out:
        ap.error("--perf writes no report (perf record writes perf.data): drop --out")
    if args.out is not None and (problem := unwritable_folder(args.out)):
        ap.error(problem)  # before the profiles, not after their minutes
    if args.perf:
        for name in [c for c in args.cases or CASES if c != "phases"]:
            print(perf_case(name, args.n, args.repeat))
        return 0
    if any(name != "phases" for name in args.cases or CASES):
        require(ap, ["pyinstrument"] + ([] if args.no_lines else ["line_profiler"]), "profile")
    for name in args.cases or [*CASES, "phases"]:
        text = query_phases(args.n or 1_000_000) if name == "phases" else profile_case(name, args.n, not args.no_lines)
        print(text)
        if args.out:
            args.out.mkdir(parents=True, exist_ok=True)
            (args.out / f"profile_{name}.txt").write_text(text)
    return 0


if __name__ == "__main__":
    from benchmarks.command import exit_with

    exit_with(main, "python -m benchmarks.profiling")
