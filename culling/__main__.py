"""``python -m culling warm-up``: compile every kernel now, with a progress bar on stderr.

For container images, CI and installers: run it once after installing (with
the ``NUMBA_CACHE_DIR`` the program will use), and the program's first run
loads the kernels instead of compiling them.
"""

from __future__ import annotations

import argparse
import atexit
import contextlib
import os
import signal
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import NoReturn

from culling.runtime.jit import NATIVE_MARK, SHIPPED_DIR, cache_writable, shipped_loaded
from culling.warmup import (
    COMPILING,
    KERNEL_GROUPS,
    LOADING,
    REPORT_PREFIX,
    kernels_cached,
    progress_bar,
    warm_up,
    worker_warm_up,
)

__all__ = ["exit_without_teardown", "main"]

def main(argv: Sequence[str] | None = None) -> int:
    """Entry point; returns the exit status."""
    parser = argparse.ArgumentParser(prog="python -m culling", description="Tools for the culling library.")
    sub = parser.add_subparsers(dest="command", required=True)
    warm = sub.add_parser("warm-up", help="compile every kernel now (into the numba cache), or load those a wheel "
                                          "ships, with a progress bar")
    warm.add_argument("--groups", default=None, metavar="G[,G...]",
                      help=f"only these kernel groups ({', '.join(KERNEL_GROUPS)}; default all)")
    warm.add_argument("--workers", type=int, default=None,
                      help="worker processes for a cold compile (default: one per core, at most one per group)")
    warm.add_argument("--report", action="store_true", help=argparse.SUPPRESS)  # a worker's: steps on stdout
    warm.add_argument("--beside", default="", help=argparse.SUPPRESS)  # a worker's: the groups its partners compile
    ship = sub.add_parser("ship-kernels", help="compile every kernel for the architecture's baseline CPU into "
                                               "FOLDER, for a wheel to ship (culling.shipped)")
    ship.add_argument("folder", nargs="?", default=None,
                      help="default: the package's _compiled folder (for an installed package: in site-packages)")
    ship.add_argument("--native", action="store_true",
                      help="for this machine's own CPU (a checkout's kernels: pip install -e .), not the portable one")
    args = parser.parse_args(argv)
    if args.command == "ship-kernels":
        from culling.shipped import native_kernels_current, ship_kernels

        if args.folder is not None and not args.folder.strip():  # "" was the package's own folder, silently
            ship.error("FOLDER must name a folder, got an empty string (leave it out for the package's own)")
        folder = SHIPPED_DIR if args.folder is None else args.folder
        problem = _unwritable(Path(folder))
        if problem:
            ship.error(f"cannot write the kernels into {folder}: {problem}")
        if args.native and (current := native_kernels_current(folder)):
            print(f"{current} kernels in {folder} are current for these sources and this CPU: nothing to compile",
                  file=sys.stderr)
            return 0
        cpu = "this machine's CPU" if args.native else "the portable CPU"
        print(f"compiling kernels for {cpu} into {folder} ...", file=sys.stderr, flush=True)
        start = time.perf_counter()
        count = ship_kernels(folder, native=args.native)
        print(f"{count} kernels shipped in {time.perf_counter() - start:.1f} s", file=sys.stderr)
        return 0
    groups = None if args.groups is None else [g.strip() for g in args.groups.split(",") if g.strip()]
    if groups is not None and (not groups or any(g not in KERNEL_GROUPS for g in groups)):
        warm.error(f"--groups: choose one or more of {', '.join(KERNEL_GROUPS)}, got {args.groups!r}")
    if args.workers is not None and args.workers < 1:
        warm.error(f"--workers must be at least 1, got {args.workers}")
    if args.report:  # a worker of another warm-up: one line per finished step on stdout, nothing else
        def report(done: int, total: int, name: str) -> None:
            print(f"{REPORT_PREFIX}{name}", flush=True)

        beside = [g.strip() for g in args.beside.split(",") if g.strip() in KERNEL_GROUPS]
        worker_warm_up(report, groups or list(KERNEL_GROUPS), beside)
        return 0
    cached = kernels_cached(groups)  # cached or shipped: nothing to compile
    print(f"{LOADING} ..." if cached else f"{COMPILING}, or loading them from the numba cache ...",
          file=sys.stderr, flush=True)
    show = progress_bar(sys.stderr, LOADING if cached else COMPILING)
    seconds = warm_up(show, groups=groups, workers=args.workers)
    if shipped_loaded():
        how = ("`pip install -e .` compiled them for this machine" if (SHIPPED_DIR / NATIVE_MARK).exists()
               else "the wheel shipped them compiled")
        where = f"{shipped_loaded()} loaded as {how}"
    elif cache_writable():
        where = "kept in the numba cache"
    else:  # a build step that cached nothing has not done its job: the image's first run compiles again
        print(f"kernels ready in {seconds:.1f} s, but compiled in memory only: no numba cache folder can be "
              f"written (set NUMBA_CACHE_DIR to one), so the next process compiles them again", file=sys.stderr)
        return 1
    print(f"kernels ready in {seconds:.1f} s, {where}", file=sys.stderr)
    return 0


def _unwritable(folder: Path) -> str | None:
    """Why ``ship-kernels`` could not write into ``folder`` (made if missing), or None: tried before a
    minute of compiling, so a bad folder is one line, not a traceback at the end."""
    if folder.exists() and not folder.is_dir():
        return "it is a file, not a folder"
    try:
        folder.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryFile(dir=folder):
            pass
    except OSError as error:
        return error.strerror or str(error)
    return None


def exit_without_teardown(status: int) -> NoReturn:
    """End the process with ``status`` as ``sys.exit`` would, but without Python's teardown of its modules.

    After a cold warm-up that teardown frees numba's and LLVM's objects for every kernel compiled: about
    2 CPU s, a fifteenth of the compile, paid again by each of the warm-up's worker processes and by the
    wheel's build, for nothing (each kernel's cache files are written and closed when it is saved).  The
    exit functions (``atexit``) still run and the standard streams are flushed.
    """
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
    os._exit(status)


def _terminate_as_ctrl_c(terminated: list[int]) -> None:
    """A SIGTERM (``docker stop``, a service manager) taken as a Ctrl-C: the same SIGINT, so a compile
    still runs whole and the workers are stopped and their folder removed, where the default action
    ended this process alone and left its workers compiling.  Noted in ``terminated``.  Where SIGINT is
    ignored, the handler raises the ``KeyboardInterrupt`` itself; where SIGTERM is already handled or
    ignored, nothing changes."""
    if signal.getsignal(signal.SIGTERM) is not signal.SIG_DFL:
        return
    ignored = signal.getsignal(signal.SIGINT) is signal.SIG_IGN

    def on_sigterm(signum: int, frame: object) -> None:
        terminated.append(signum)
        if ignored:
            raise KeyboardInterrupt
        signal.raise_signal(signal.SIGINT)

    signal.signal(signal.SIGTERM, on_sigterm)


def _main_interrupted() -> int:
    """:func:`main`, a Ctrl-C said in one line (status 130, as a shell gives it), a SIGTERM likewise
    (status 143): a compile's traceback through the workers' queue said nothing more.  The workers,
    stopped with it, write to no terminal."""
    terminated: list[int] = []
    _terminate_as_ctrl_c(terminated)
    try:
        return main()
    except KeyboardInterrupt:
        if terminated:
            print("python -m culling: error: terminated", file=sys.stderr)
            return 128 + signal.SIGTERM
        print("python -m culling: error: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    exit_without_teardown(_main_interrupted())  # a usage error (argparse) or an exception ends the usual way
