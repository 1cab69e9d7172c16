"""The collision frame, part by part, as the benchmark runs it: ``python -m benchmarks.frameparts``.

The collision section times ``update_many`` + ``overlapping_pairs`` on a
moving swarm between its peers' frames (:mod:`benchmarks.broadphase`), and
that matters: the same frame takes half again as long after the peers (or
any 15 ms gap) as back to back, because its memory and the other core have
gone cold.  A profile of the frame alone would point at the wrong parts.
This tool runs the frames the same way and times each part of the tree's
frame inside them (a part that runs on the library's threads is summed over
them: marked ``cpu``).  Parts come and go as the code changes; a name that
no longer exists is skipped.

``--ab module.NAME A B`` compares two values of a module constant read at
call time (a threshold such as ``culling.tree.batch.PARALLEL_SETTLE_MIN``)
frame by frame in one process: on a machine whose speed drifts by a fifth
within minutes, alternating frames is the only fair comparison.  It gives the
process's CPU time a frame beside the wall time: on a machine other programs
share, the wall time of a frame on two threads waits for a core, and only
the CPU time compares the work.  (A constant that a kernel compiles in, or a
module's code, cannot be alternated this way: alternate processes of the two
commits instead.  Swapping two loaded copies of a module in one process was
tried and misleads: the two copies of identical code read 2.5 ms apart on the
100k frame, the structure's kept bands being made by one copy and used by both.)

``--versus DIR`` does that: processes of this checkout (A) and of the
checkout ``DIR`` (B) alternated, A B then B A, ``--rounds`` of each, each
running this tool with the other options given; it prints every line's
median for A and B and each process's figure.  Each process imports the
library and the benchmarks from its own checkout (``PYTHONPATH``; numba's
cache keeps the two checkouts' kernels apart, by their source paths).
"""

from __future__ import annotations

import argparse
import collections
import functools
import gc
import importlib
import os
import re
import statistics
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

try:
    import resource
except ImportError:  # not on Windows
    resource = None  # type: ignore[assignment]

from benchmarks.batch_sections import _world
from benchmarks.broadphase import TreePairs, peers_of
from benchmarks.command import require
from benchmarks.workloads import swarm_frames
from engine.arguments import whole_number

#: ``(module, attribute, label)``: the parts timed, each call's parts indented below it; a method is
#: ``"Class.method"``.
PARTS = [
    ("culling.tree.tree", "ViewDistanceTree.update_many", "update_many"),
    ("culling.tree.batch", "check_handles", "  validation (compiled)"),
    ("culling.tree.batch", "settle", "  settle"),
    ("culling.tree.batch", "group", "  group movers"),
    ("culling.tree.nodes", "NodeTable.at_many", "  movers' homes"),
    ("culling.tree.nodes", "_deepest", "    searches (cpu)"),
    ("culling.tree.nodes", "_descend", "    creation"),
    ("culling.tree.pool", "BlockPool.make_room", "  room"),
    ("culling.tree.batch", "unlink", "  unlink"),
    ("culling.tree.batch", "place", "  place"),
    ("culling.tree.nodes", "NodeTable.prune", "  prune"),
    ("culling.tree.tree", "ViewDistanceTree._fit_many", "  fit the root"),
    ("culling.tree.pool", "BlockPool.refresh", "  refresh tiles"),
    ("culling.tree.tree", "ViewDistanceTree.overlapping_pairs", "overlapping_pairs"),
    ("culling.pairs.bands", "build", "  bucket grid"),
    ("culling.pairs.bands", "plan_of", "    new bands (when made)"),
    ("culling.pairs.bands", "_bucketed", "    bucket and count"),
    ("culling.pairs.bands", "sources", "    copy: each row's source (cpu)"),
    ("culling.pairs.bands", "gather", "    copy (cpu)"),
    ("culling.pairs.bands", "noted_cells", "  within bands: runs noted (cpu)"),
    ("culling.pairs.bands", "noted_rows", "  across bands: runs noted (cpu)"),
    ("culling.pairs.bands", "written", "  their pairs written"),
    ("culling.pairs.bands", "_closed_up", "    the parts moved up"),
    ("culling.pairs.join", "_settled", "  exact settling"),
]


def _faults() -> float:
    """The process's minor page faults so far, every thread's (0 where there is no ``resource``)."""
    return float(resource.getrusage(resource.RUSAGE_SELF).ru_minflt) if resource is not None else 0.0


def _timed(parts: list[tuple[str, str, str]], spent: dict[str, float],
           clock: Callable[[], float] = time.perf_counter) -> list[tuple[Any, str, Any]]:
    """Wrap each existing part so its calls add to ``spent[label]`` (the difference of ``clock``); returns
    what to put back.  Under the wall clock a part labelled ``(cpu)``, which runs in chunks on the
    library's threads, counts each chunk's own thread's CPU (``time.thread_time``): summed, its CPU on
    every thread, where the chunks' wall intervals would also count the time a busy machine took
    its thread away.  The sums are taken under a lock (the chunks end on several threads at once)."""
    undo = []
    summing = threading.Lock()
    for module_name, attribute, label in parts:
        owner: Any = importlib.import_module(module_name)
        *path, name = attribute.split(".")
        for step in path:
            owner = getattr(owner, step, None)
        if owner is None or not hasattr(owner, name):
            continue
        original = getattr(owner, name)
        part_clock = time.thread_time if clock is time.perf_counter and "(cpu)" in label else clock

        def wrapper(*args: Any, _fn: Callable[..., Any] = original, _label: str = label,
                    _clock: Callable[[], float] = part_clock, **kwargs: Any) -> Any:
            start = _clock()
            try:
                return _fn(*args, **kwargs)
            finally:
                took = _clock() - start
                with summing:
                    spent[_label] += took

        functools.update_wrapper(wrapper, original)
        setattr(owner, name, wrapper)
        undo.append((owner, name, original))
    return undo


def frames_of(workload: str, n: int, frames: int) -> tuple[np.ndarray, list[np.ndarray]]:
    """The radii and the centres per frame of a workload: ``swarm`` (the collision section's),
    ``heavy`` (its heavy tail), ``mixed10`` or ``mixed100`` (mixed radii 10:1, 100:1)."""
    from benchmarks.broadphase import heavy_frames, mixed_frames

    if workload == "heavy":
        return heavy_frames(n, frames)
    if workload.startswith("mixed"):
        return mixed_frames(n, frames, float(workload[len("mixed"):]))
    return swarm_frames(n, frames)


def _set_up(workload: str, n: int, frames: int, alone: bool) -> tuple[list[Any], list[np.ndarray]]:
    """The tree's method and (unless ``alone``) the workload's peers, each set up on the first frame and
    run on the second as the collision sections do (the tree's root sized as there); returns them and the
    ``frames`` frames to time."""
    import culling

    radii, steps = frames_of(workload, n, frames + 2)
    size = _world(n, 0.0 if workload == "swarm" else 2.0 * float(radii.max()))
    methods: list[Any] = [TreePairs(lambda size, origin: culling.ViewDistanceTree(size=size, origin=origin, dim=3))]
    if not alone:
        methods += peers_of(workload)
    for method in methods:
        method.setup(radii, steps[0], size)
        method.frame(steps[1])
    return methods, steps[2:]


def parts(n: int, frames: int, alone: bool = False, clock: Callable[[], float] = time.perf_counter,
          workload: str = "swarm") -> tuple[dict[str, float], dict[str, float]]:
    """Median frame per method and median time per part of the tree's frame (seconds, or what ``clock``
    counts), ``frames`` frames of ``n`` moving creatures, the methods interleaved as the collision
    section runs them."""
    methods, steps = _set_up(workload, n, frames, alone)
    spent: dict[str, float] = collections.defaultdict(float)
    per_part: dict[str, list[float]] = collections.defaultdict(list)
    times: dict[str, list[float]] = {m.name: [] for m in methods}
    undo = _timed(PARTS, spent, clock)
    was = gc.isenabled()
    gc.disable()
    try:
        for f, centres in enumerate(steps):
            for k in range(len(methods)):
                method = methods[(k + f) % len(methods)]
                spent.clear()
                start = clock()
                method.frame(centres)
                times[method.name].append(clock() - start)
                if method is methods[0]:
                    for label, seconds in spent.items():
                        per_part[label].append(seconds)
    finally:
        if was:
            gc.enable()
        for owner, name, original in reversed(undo):
            setattr(owner, name, original)
    frame = {name: float(np.median(v)) for name, v in times.items()}
    order = [label for _, _, label in PARTS if label in per_part]
    return frame, {label: float(np.median(per_part[label])) for label in order}


def ab(n: int, frames: int, target: str, values: tuple[Any, Any], workload: str = "swarm",
       alone: bool = False) -> dict[Any, float]:
    """Median tree frame (seconds) with the module constant ``target`` at each of ``values``, alternated
    frame by frame, each frame after its workload's peers' (``workload`` as :func:`frames_of`; ``alone``:
    the tree's frames back to back)."""
    return {value: wall for value, (wall, _) in ab_times(n, frames, target, values, workload, alone).items()}


def constant(target: str) -> tuple[Any, str]:
    """The module and name of ``target`` (``module.NAME``), a constant of a literal type (a number, a
    string, a bool or None) that a module defines; ``ValueError`` saying what is wrong otherwise."""
    module_name, _, name = target.rpartition(".")
    if not module_name:
        raise ValueError(f"{target!r} is not MODULE.NAME (say culling.tree.batch.PARALLEL_SETTLE_MIN)")
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise ValueError(f"cannot import {module_name} ({exc})") from exc
    if not hasattr(module, name):
        raise ValueError(f"{module_name} has no {name}")
    value = getattr(module, name)
    if value is not None and not isinstance(value, (bool, int, float, str)):
        raise ValueError(f"{target} is a {type(value).__name__}, not a constant: --ab alternates numbers, "
                         f"strings, bools or None")
    return module, name


def ab_times(n: int, frames: int, target: str, values: tuple[Any, Any],
             workload: str = "swarm", alone: bool = False) -> dict[Any, tuple[float, float]]:
    """:func:`ab` with the CPU time too: ``{value: (median wall, median process CPU)}`` of the tree's frame
    (seconds; the CPU summed over every thread of the process)."""
    module, name = constant(target)
    before = getattr(module, name)
    (tree, *peers), steps = _set_up(workload, n, frames, alone)
    times: list[list[float]] = [[], []]
    cpu: list[list[float]] = [[], []]
    was = gc.isenabled()
    gc.disable()
    try:
        for f, centres in enumerate(steps):
            for peer in peers:
                peer.frame(centres)
            setattr(module, name, values[f % 2])
            start, spent = time.perf_counter(), time.process_time()
            tree.frame(centres)
            cpu[f % 2].append(time.process_time() - spent)
            times[f % 2].append(time.perf_counter() - start)
    finally:
        setattr(module, name, before)
        if was:
            gc.enable()
    return {values[k]: (float(np.median(times[k])), float(np.median(cpu[k]))) for k in range(2)}


#: A line this tool prints: its label, its figure and the unit.
_LINE = re.compile(r"^(?P<label>.+?)\s+(?P<value>-?[\d.]+) (?P<unit>ms|faults)\b")


def figures(output: str) -> dict[str, float]:
    """The figures of this tool's printed ``output``, by label (its indentation kept)."""
    found = {}
    for line in output.splitlines():
        match = _LINE.match(line)
        if match:
            found[match.group("label").rstrip()] = float(match.group("value"))
    return found


def versus(other: str, rounds: int, argv: list[str],
           run: Callable[[Path, list[str]], str] | None = None) -> dict[str, tuple[list[float], list[float]]]:
    """Processes of this checkout (A) and of the checkout ``other`` (B) alternated, A B then B A,
    ``rounds`` each, each running this tool with ``argv``: ``{label: (A's figures, B's figures)}`` in
    the order the processes ran.  ``run(root, argv)`` runs one process and returns what it printed (by
    default a Python subprocess with the checkout ``root`` first on its path, run from it)."""
    here = Path(__file__).resolve().parent.parent
    roots = (here, Path(other).resolve())
    if not (roots[1] / "culling").is_dir():
        raise SystemExit(f"{other} is not a checkout of this project (no culling/ in it)")

    def process(root: Path, args: list[str]) -> str:
        env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(root), os.environ.get("PYTHONPATH", "")]).rstrip(os.pathsep))
        code = ("import sys, culling; root = sys.argv[1]; "
                "assert culling.__file__.startswith(root), f'culling from {culling.__file__}, not {root}'; "
                "from benchmarks.frameparts import main; raise SystemExit(main(sys.argv[2:]))")
        done = subprocess.run([sys.executable, "-c", code, str(root), *args], cwd=root, env=env,
                              capture_output=True, text=True, check=False)
        if done.returncode:
            raise SystemExit(f"the run in {root} failed:\n{done.stderr[-3000:]}")
        return done.stdout

    run = run or process
    found: dict[str, tuple[list[float], list[float]]] = {}
    for r in range(rounds):
        for side in ((0, 1) if r % 2 == 0 else (1, 0)):
            for label, value in figures(run(roots[side], argv)).items():
                found.setdefault(label, ([], []))[side].append(value)
    return found


def _without(argv: list[str], options: dict[str, int]) -> list[str]:
    """``argv`` less the ``options`` (name: values taken), in either ``--name value`` or ``--name=value`` form."""
    kept, skip = [], 0
    for token in argv:
        if skip:
            skip -= 1
            continue
        name = token.split("=", 1)[0]
        if name in options:
            skip = 0 if "=" in token else options[name]
            continue
        kept.append(token)
    return kept


#: What the tool's figures count, by its clock option: the heading of the parts and the unit.
_CLOCKS = {
    "wall": (time.perf_counter, "ms", 1e3, "wall clock; a part marked cpu: its CPU summed over the library's threads"),
    "cpu": (time.thread_time, "ms", 1e3, "the calling thread's CPU"),
    "process": (time.process_time, "ms", 1e3, "the process's CPU, every thread's"),
    "faults": (_faults, "faults", 1.0, "the process's minor page faults"),
}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m benchmarks.frameparts", description=__doc__.splitlines()[0].replace("``", ""))
    ap.add_argument("--n", type=whole_number(), default=10_000, help="moving creatures (default 10,000; at least 2)")
    ap.add_argument("--frames", type=whole_number(), default=200, help="frames timed (default 200; with --ab at least 2)")
    ap.add_argument("--alone", action="store_true", help="the tree's frames back to back, without the peers")
    clocks = ap.add_mutually_exclusive_group()
    clocks.add_argument("--cpu", action="store_true",
                        help="time the calling thread's CPU (with CULLING_THREADS=1 the whole frame's work) rather "
                             "than the wall clock")
    clocks.add_argument("--process", action="store_true",
                        help="time the process's CPU, every thread's: the frame's figure is its work on all threads; "
                             "a part run in chunks on several threads counts the other threads' work during each "
                             "chunk too")
    clocks.add_argument("--faults", action="store_true",
                        help="count the process's minor page faults per part rather than time")
    ap.add_argument("--workload", choices=("swarm", "heavy", "mixed10", "mixed100"), default="swarm",
                    help="the swarm (default), its heavy tail, or mixed radii 10:1 / 100:1")
    ap.add_argument("--ab", nargs=3, metavar=("MODULE.NAME", "A", "B"),
                    help="alternate a module constant between two values (Python literals); prints the wall "
                         "time and the process's CPU a frame (not with --cpu, --process or --faults)")
    ap.add_argument("--versus", metavar="DIR",
                    help="alternate processes of this checkout (A) and of the checkout DIR (B), each running "
                         "this tool with the other options")
    ap.add_argument("--rounds", type=whole_number(), default=3, help="with --versus: processes of each checkout (default 3)")
    argv = sys.argv[1:] if argv is None else argv
    args = ap.parse_args(argv)
    if args.n < 2:
        ap.error(f"--n must be at least 2 creatures, got {args.n}")
    if args.frames < (2 if args.ab else 1):
        ap.error(f"--frames must be at least {2 if args.ab else 1}{' with --ab (a frame for each value)' if args.ab else ''}, "
                 f"got {args.frames}")
    if args.rounds < 1:
        ap.error(f"--rounds must be at least 1, got {args.rounds}")
    if not args.alone:
        require(ap, ["scipy"], "bench")  # the peers
    clock_name = "faults" if args.faults else "process" if args.process else "cpu" if args.cpu else "wall"
    clock, unit, scale, counted = _CLOCKS[clock_name]
    values: tuple[Any, Any] = (None, None)
    if args.ab:
        import ast

        if clock_name != "wall":
            ap.error(f"--ab prints the wall time and the process's CPU a frame: drop --{clock_name}")
        try:
            constant(args.ab[0])
        except ValueError as exc:
            ap.error(f"--ab {args.ab[0]}: {exc}")
        literals = []
        for text in args.ab[1:]:
            try:
                literals.append(ast.literal_eval(text))
            except (ValueError, SyntaxError):
                ap.error(f"--ab: the values must be Python literals (8000, 2.5, True, 'text'), got {text!r}")
        values = (literals[0], literals[1])
        if values[0] == values[1]:
            ap.error(f"--ab: the two values are the same ({values[0]!r})")
    if args.versus:
        found = versus(args.versus, args.rounds, _without(argv, {"--versus": 1, "--rounds": 1}))
        print(f"medians of {args.rounds} process{'es' if args.rounds > 1 else ''} each, A: this checkout, "
              f"B: {args.versus} ({unit})")
        for label, (a, b) in found.items():
            if a and b:
                print(f"{label:44s} A {statistics.median(a):9.3f}  B {statistics.median(b):9.3f} {unit}   "
                      f"A: {' '.join(f'{x:.3f}' for x in a)}  B: {' '.join(f'{x:.3f}' for x in b)}")
        if not found:
            raise SystemExit("--versus: the processes printed no figures")
        return 0
    if args.ab:
        target = args.ab[0]
        result = ab_times(args.n, args.frames, target, values, args.workload, args.alone)
        width = max(44, len(target) + 32)
        for k, (value, (seconds, cpu)) in enumerate(result.items()):
            timed = (args.frames + 1 - k) // 2  # the first value's frames are the even ones
            print(f"{f'{target} = {value!r}':{width}s} {seconds * 1e3:9.3f} ms a frame (median of {timed})")
            print(f"{f'{target} = {value!r}, process CPU':{width}s} {cpu * 1e3:9.3f} ms a frame (median of {timed})")
        return 0
    frame, spent = parts(args.n, args.frames, args.alone, clock, args.workload)
    for name, seconds in frame.items():
        print(f"{name:44s} {seconds * scale:9.3f} {unit} a frame (median of {args.frames})")
    print(f"the tree's frame, part by part (medians; {counted}):")
    for label, seconds in spent.items():
        print(f"  {label:42s} {seconds * scale:9.3f} {unit}")
    return 0


if __name__ == "__main__":
    from benchmarks.command import exit_with

    exit_with(main, "python -m benchmarks.frameparts")
