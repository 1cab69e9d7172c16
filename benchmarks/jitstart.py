"""What the compiled kernels cost at start-up: a cold and a warm first query.

``python -m benchmarks.jitstart [--shipped | --compile [--workers W] [--groups G]]``
prints the first frame's steps cold (an empty cache, every kernel compiled)
and warm, or, with ``--shipped``, cold with the kernels this checkout ships;
``--compile`` times the compile of every kernel (:func:`compile_cost`).

Each measurement is a fresh Python process (the checkout on its path) that
runs a program's whole first frame: imports numba, then ``culling``, sets numba
up (what its first compile or cache load of any function does, timed apart), builds a tree of
20,000 objects, runs the first exact query, ``query_many`` of 2,000 points,
``update_many`` and ``remove_many``, then builds a dense grid and queries it.
Each step is timed on its own: cold, that is the compile of the kernels it
is the first to call (its kernel group).  ``NUMBA_CACHE_DIR`` points at a new empty folder
for the cold start (nothing compiled on disk: numba compiles every kernel);
the warm start runs again with that folder, now filled by the cold run, as a
second launch of a program would.  Python writes and reads its bytecode cache
(``__pycache__``) as it does for any program: without it each start would
compile culling's sources to bytecode again, about 0.2 s that no installed
package pays.
"""

from __future__ import annotations

import compileall
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

PROBE = r"""
import json, time
t0 = time.perf_counter()
import numpy as np
t1 = time.perf_counter()
c1 = time.process_time()
import numba
steps = {"import_numba": time.perf_counter() - t1}
cpu = {"import_numba": time.process_time() - c1}
t, c = time.perf_counter(), time.process_time()
import culling
steps["import"] = time.perf_counter() - t
cpu["import"] = time.process_time() - c
rng = np.random.default_rng(0)
c = rng.uniform(0.0, 1000.0, (20000, 3))
r = rng.uniform(1.0, 60.0, 20000)


def step(name, fn):
    t, c = time.perf_counter(), time.process_time()
    out = fn()
    steps[name] = time.perf_counter() - t
    cpu[name] = time.process_time() - c
    return out


def numba_setup():
    # numba's own set-up, which its first compile or cache load of any function does, timed apart
    # from the library's kernels: what the library's cache loads need of it (numba's runtime), or,
    # where the library has no such step, all of it (its registries, as a compile needs them).
    from numba.core.registry import cpu_target
    try:
        from culling.runtime.jit import KERNELS
        from culling.runtime.loads import set_up_for_loads
    except ImportError:  # a library without it: numba's whole set-up, as its own cache load runs it
        cpu_target.target_context.refresh()
    else:  # as the first kernel load does it (numba's runtime kept in that kernel's cache folder)
        set_up_for_loads(cpu_target.target_context, getattr(getattr(KERNELS[0], "_cache", None), "_cache_path", None))


step("numba_setup", numba_setup)
tree = culling.ViewDistanceTree(size=1024.0, dim=3)
h = step("build", lambda: tree.insert_many(c, r))
first = step("first_query", lambda: tree.query(c[0], exact=True))
step("query_many", lambda: tree.query_many(c[:2000], exact=True))
step("update_many", lambda: tree.update_many(h, c + 0.5, r))
step("remove_many", lambda: tree.remove_many(h[:10]))
grid = culling.DenseViewDistanceGrid(size=1024.0, dim=3, min_radius=1.0)
step("grid_build", lambda: grid.insert_many(c, r))
step("grid_query", lambda: grid.query(c[0], exact=True))
steps["total"] = time.perf_counter() - t1
cpu["total"] = time.process_time() - c1
print(json.dumps({"numpy": t1 - t0, **steps, "rest": steps["total"] - steps["import_numba"] - steps["import"]
                  - steps["numba_setup"] - steps["build"] - steps["first_query"], "cpu": cpu,
                  "numba": numba.__version__, "answer": len(first)}))
"""

GROUPS = ("import_numba", "import", "numba_setup", "build", "first_query", "query_many", "update_many", "remove_many", "grid_build",
          "grid_query")
"""The probe's steps in order: numba's own fixed costs (its import, and its set-up, which the first
compile or cache load of any function pays), then the library's steps, each the first call of its
kernels (its "kernel group")."""

#: numba's fixed costs: every process that uses numba pays them, whatever it compiles.
NUMBA_FIXED = ("import_numba", "numba_setup")

PARTS = ("import_numba", "import", "numba_setup", "build", "first_query", "rest", "total")


def measure(cache_dir: Path | None, timeout: float = 300.0, site: Path = ROOT, shipped: bool = False) -> dict:
    """One fresh process with ``NUMBA_CACHE_DIR=cache_dir``: seconds per step (see ``PROBE``).

    ``cache_dir`` None keeps the environment's cache (numba's default: next
    to the sources), which this benchmark process has already filled.
    ``site``: the folder ``culling`` is imported from (the checkout's root).
    ``shipped``: load the kernels ``site`` ships (``culling/_compiled``) where the cache has none;
    False compiles them (``CULLING_SHIPPED_KERNELS=0``).
    Raises ``RuntimeError`` with the child's error output if it fails.
    """
    env = dict(os.environ, PYTHONPATH=str(site), CULLING_SHIPPED_KERNELS="1" if shipped else "0")
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    if cache_dir is not None:
        env["NUMBA_CACHE_DIR"] = str(cache_dir)
    proc = subprocess.run([sys.executable, "-c", PROBE], cwd=site, env=env, capture_output=True, text=True,
                          timeout=timeout)
    if proc.returncode != 0:
        raise RuntimeError(f"JIT start-up probe failed:\n{proc.stderr[-2000:]}")
    return dict(json.loads(proc.stdout.strip().splitlines()[-1]))


def cold_and_warm(warm_runs: int = 3, cold: bool = True) -> tuple[dict | None, list[dict]]:
    """A cold start in a new empty cache folder, then ``warm_runs`` warm starts reusing it.

    With ``cold`` False only the warm starts run, on the environment's own cache.
    """
    if not cold:  # the kernels pip install -e shipped, or the environment's cache (filled by the first run)
        measure(None, shipped=True)
        return None, [measure(None, shipped=True) for _ in range(warm_runs)]
    with tempfile.TemporaryDirectory(prefix="culling-numba-cache-") as tmp:
        first = measure(Path(tmp))
        warm = [measure(Path(tmp)) for _ in range(warm_runs)]
    return first, warm


def shipped_cold(timeout: float = 600.0) -> dict:
    """A cold start as an installed wheel has it: a copy of the package whose kernels are shipped
    compiled (``python -m culling ship-kernels``, as the wheel's build runs it; not timed) and its
    bytecode compiled (as pip does), and an empty ``NUMBA_CACHE_DIR``: :func:`measure`'s steps."""
    with tempfile.TemporaryDirectory(prefix="culling-shipped-") as tmp:
        site = Path(tmp) / "site"
        shutil.copytree(ROOT / "culling", site / "culling", ignore=shutil.ignore_patterns("__pycache__", "_compiled"))
        env = dict(os.environ, PYTHONPATH=str(site))
        proc = subprocess.run([sys.executable, "-m", "culling", "ship-kernels"], cwd=site, env=env,
                              capture_output=True, text=True, timeout=timeout)
        if proc.returncode != 0:
            raise RuntimeError(f"shipping the kernels failed:\n{proc.stderr[-2000:]}")
        compileall.compile_dir(site, quiet=1)  # Python's bytecode, as pip writes it when it installs a wheel
        cache = Path(tmp) / "cache"
        cache.mkdir()
        return measure(cache, site=site, shipped=True)


def checkout_shipped_cold() -> dict | None:
    """A cold start from this checkout as ``pip install -e .`` leaves it (its kernels shipped into
    ``culling/_compiled`` for this machine's CPU) with an empty ``NUMBA_CACHE_DIR``: :func:`measure`'s steps;
    None when the checkout ships none (installed without ``pip install -e``, or ``CULLING_SHIP_KERNELS=0``)."""
    if not (ROOT / "culling" / "_compiled").is_dir():
        return None
    with tempfile.TemporaryDirectory(prefix="culling-numba-cache-") as tmp:
        return measure(Path(tmp), shipped=True)


def compile_cost(groups: str | None = None, workers: int = 1, timeout: float = 900.0) -> dict:
    """``python -m culling warm-up`` (``--groups``, ``--workers``) in a new empty cache, nothing shipped:
    the compile itself.  Returns its wall seconds and the CPU seconds of it and its worker processes."""
    import resource
    import time

    with tempfile.TemporaryDirectory(prefix="culling-compile-") as tmp:
        env = dict(os.environ, PYTHONPATH=str(ROOT), NUMBA_CACHE_DIR=tmp, CULLING_SHIPPED_KERNELS="0")
        command = [sys.executable, "-m", "culling", "warm-up", "--workers", str(workers)]
        if groups is not None:
            command += ["--groups", groups]
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        start = time.perf_counter()
        proc = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=timeout)
        wall = time.perf_counter() - start
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        if proc.returncode != 0:
            raise RuntimeError(f"warm-up failed:\n{proc.stderr[-2000:]}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return {"wall": wall, "cpu": cpu}


def main(argv: list[str] | None = None) -> int:
    import argparse

    ap = argparse.ArgumentParser(prog="python -m benchmarks.jitstart",
                                 description="The first frame's start-up, step by step, in fresh processes; or the "
                                             "compile of every kernel.")
    how = ap.add_mutually_exclusive_group()
    how.add_argument("--shipped", action="store_true",
                     help="cold with the kernels this checkout ships (pip install -e . shipped them), not compiled")
    how.add_argument("--compile", action="store_true",
                     help="the compile of every kernel (python -m culling warm-up) on an empty cache: wall and CPU s")
    ap.add_argument("--warm", type=int, default=None,
                    help="warm starts after the cold one (default 3; not with --shipped or --compile)")
    ap.add_argument("--workers", type=int, default=1, help="with --compile: warm-up workers (default 1)")
    ap.add_argument("--groups", help="with --compile: the kernel groups, comma-separated (default all)")
    args = ap.parse_args(argv)
    if (args.warm is not None and args.warm < 0) or args.workers < 1:
        ap.error("--warm must be at least 0 and --workers at least 1")
    if args.warm is not None and (args.shipped or args.compile):
        ap.error("--warm goes with neither --shipped nor --compile (they time no warm start)")
    if (args.groups is not None or args.workers != 1) and not args.compile:
        ap.error("--workers and --groups go with --compile")
    if args.compile:
        cost = compile_cost(args.groups, args.workers)
        print(f"compile of {args.groups or 'every kernel group'}, {args.workers} worker(s), empty cache: "
              f"{cost['wall']:.1f} s wall, {cost['cpu']:.1f} s CPU")
        return 0
    if args.shipped:
        runs = {"cold, shipped kernels": checkout_shipped_cold()}
        if runs["cold, shipped kernels"] is None:
            ap.error("this checkout ships no kernels: run `python -m culling ship-kernels --native` (or pip install -e .)")
    else:
        cold, warm = cold_and_warm(3 if args.warm is None else args.warm)
        runs = {"cold (compiles)": cold, **{f"warm {k + 1}": w for k, w in enumerate(warm)}}
    print(f"{'seconds (wall)':24s}" + "".join(f"{step:>13s}" for step in (*GROUPS, "total")))
    for name, run in runs.items():
        if run is not None:
            print(f"{name:24s}" + "".join(f"{run[step]:13.3f}" for step in (*GROUPS, "total")))
    return 0


if __name__ == "__main__":
    from benchmarks.command import exit_with

    exit_with(main, "python -m benchmarks.jitstart")
