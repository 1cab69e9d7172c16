"""The command line: ``python -m benchmarks [--quick] [--out DIR] [--only NAME]``."""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path

from benchmarks.command import require
from benchmarks.plots import write_plots
from benchmarks.report import Results, to_text, write_markdown
from benchmarks.suite import PRESETS, SECTION_NAMES, SECTION_TABLES, Structures, run_suite
from engine.files import folder_argument, unwritable_folder

CHECKOUT = Path(__file__).resolve().parent.parent
DOCS = CHECKOUT / "docs"
"""The checkout's docs folder, found from this file (not the working directory)."""


def in_checkout() -> bool:
    """True when ``benchmarks`` runs from a source checkout (next to ``culling`` and ``pyproject.toml``)."""
    return (CHECKOUT / "pyproject.toml").is_file() and (CHECKOUT / "culling").is_dir()


def run(
    preset: str = "full",
    out: Path | None = None,
    only: Sequence[str] | None = None,
    structs: Structures | None = None,
    verbose: bool = True,
    clock: str = "cpu",
) -> Results:
    """Run a preset; print the tables; write PERFORMANCE.md and plots to ``out``.

    ``out`` None writes nothing.  Raises ``AgreementError`` when methods disagree.
    """
    log = (lambda s: print(s, file=sys.stderr, flush=True)) if verbose else (lambda s: None)
    res = run_suite(PRESETS[preset], only, structs, log, clock)
    if verbose:
        print(to_text(res))
    if out is not None:
        log("wrote " + ", ".join(str(p) for p in write_report(res, out)))
    return res


def write_report(res: Results, out: Path) -> list[Path]:
    """Write PERFORMANCE.md and its plots into ``out``: all of them, or (interrupted) none.

    Each is written into a new folder inside ``out`` first, then moved in, the report last: a Ctrl-C
    while the plots were written left a report naming plots that were missing, or an earlier run's.
    """
    out.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=".writing-", dir=out))
    try:
        plots = write_plots(res, staging)
        report = write_markdown(res, staging)
        for path in [*plots, report]:
            os.replace(path, out / path.name)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return [out / path.name for path in (report, *plots)]


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point; returns the exit status (1 when a target fails under --strict)."""
    ap = argparse.ArgumentParser(
        prog="python -m benchmarks",
        description="Benchmark culling against NumPy brute force, cKDTree and rtree. "
        "The full run rewrites docs/PERFORMANCE.md and docs/*.png; --quick and --only "
        "write files only when --out is given.",
        epilog="sections (for --only), and their tables: "
        + "; ".join(f"{name}: {what}" for name, what in SECTION_TABLES.items()) + ".",
    )
    ap.add_argument("--quick", action="store_true",
                    help="small sizes; about a minute on 2 cores once the kernels are compiled")
    ap.add_argument("--preset", choices=sorted(PRESETS), help="sizes by name (overrides --quick)")
    ap.add_argument("--out", type=folder_argument, help="folder for PERFORMANCE.md and the plots")
    ap.add_argument("--only", action="append", choices=SECTION_NAMES, metavar="SECTION",
                    help=f"run only this benchmark (repeatable): {', '.join(SECTION_NAMES)}")
    ap.add_argument("--clock", choices=("cpu", "wall"), default="cpu",
                    help="time by the thread's CPU time (default; robust on a shared machine) or wall time")
    ap.add_argument("--strict", action="store_true", help="exit with status 1 when a target fails")
    args = ap.parse_args(argv)
    preset = args.preset or ("quick" if args.quick else "full")
    out = args.out
    partial = preset != "full" or bool(args.only)
    if out is None and not partial:
        if not in_checkout():
            ap.error(f"{CHECKOUT} is not a source checkout: give --out DIR for the report and plots")
        out = DOCS
    elif out is not None and partial and out.resolve() == DOCS.resolve():
        ap.error(f"--out {args.out}: a {'run of --only ' + ', '.join(args.only) if args.only else preset + ' run'} "
                 f"would replace the full report there (docs/PERFORMANCE.md and its plots): write it to another folder")
    if out is not None and (problem := unwritable_folder(out)):
        ap.error(problem)  # before the run, not after its minutes
    require(ap, ["scipy", "rtree"] + (["matplotlib"] if out is not None else []), "bench")  # the peers, the plots
    only = list(dict.fromkeys(args.only)) if args.only else None  # a section named twice runs once
    res = run(preset, out, only, clock=args.clock)
    if args.strict and any(not t.passed for t in res.targets):
        return 1
    return 0
