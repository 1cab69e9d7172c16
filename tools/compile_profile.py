"""Where a cold warm-up's compile time goes: CPU seconds per kernel and per compiler phase.

Run in a new empty numba cache with nothing shipped::

    NUMBA_CACHE_DIR=$(mktemp -d) CULLING_SHIPPED_KERNELS=0 python tools/compile_profile.py [--groups tree,pairs]

Every timed region (numba's compile of a dispatcher, each compiler pass, the
LLVM steps of a code library) is charged its *own* thread CPU time, without the
regions nested in it (a callee compiled during its caller's type inference is
charged to the callee).  Prints a table per kernel and a table per phase.
"""

from __future__ import annotations

import argparse
import collections
import json
import sys
import time
from typing import Any

_STACK: list[list[Any]] = []  # [label, kernel, start, child seconds]
SELF: collections.Counter[tuple[str, str]] = collections.Counter()
COUNT: collections.Counter[tuple[str, str]] = collections.Counter()


def _kernel() -> str:
    for frame in reversed(_STACK):
        if frame[1]:
            return str(frame[1])
    return "(outside)"


def _enter(label: str, kernel: str = "") -> None:
    _STACK.append([label, kernel, time.thread_time(), 0.0])


def _leave() -> None:
    label, kernel, start, children = _STACK.pop()
    spent = time.thread_time() - start
    owner = kernel or _kernel()
    SELF[(owner, label)] += spent - children
    COUNT[(owner, label)] += 1
    if _STACK:
        _STACK[-1][3] += spent


def _wrap(owner: Any, name: str, label: str) -> None:
    real = getattr(owner, name)

    def timed(*args: Any, **kwargs: Any) -> Any:
        _enter(label)
        try:
            return real(*args, **kwargs)
        finally:
            _leave()

    setattr(owner, name, timed)


def install() -> None:
    from numba.core import caching, codegen, event

    class Listener(event.Listener):
        def __init__(self, kind: str) -> None:
            self.kind = kind

        def on_start(self, ev: Any) -> None:
            data = ev.data or {}
            if self.kind == "numba:compile":
                d = data.get("dispatcher")
                name = getattr(getattr(d, "py_func", None), "__module__", "?") + "." + \
                    getattr(getattr(d, "py_func", None), "__qualname__", "?")
                _enter("compile (rest)", name)
            else:
                _enter("pass " + str(data.get("name")).split(" [")[0])

        def on_end(self, ev: Any) -> None:
            _leave()

    event.register("numba:compile", Listener("numba:compile"))
    event.register("numba:run_pass", Listener("numba:run_pass"))
    lib = codegen.CPUCodeLibrary
    _wrap(lib, "_optimize_functions", "llvm function passes")
    _wrap(lib, "_optimize_final_module", "llvm module passes (O3)")
    _wrap(codegen.JITCodeLibrary, "_finalize_specific", "llvm codegen (machine code)")
    _wrap(lib, "add_linking_library", "llvm finalize callee")
    _wrap(codegen, "remove_redundant_nrt_refct", "llvm refprune")
    _wrap(lib, "serialize_using_object_code", "cache serialise")
    _wrap(caching.Cache, "save_overload", "cache save")
    _wrap(caching.Cache, "load_overload", "cache load")
    from numba.core.inline_closurecall import InlineWorker
    _wrap(InlineWorker, "run_untyped_passes", "inline: untyped front end")
    from numba.core import cpu
    _wrap(cpu.CPUContext, "create_cpython_wrapper", "cpython wrapper")
    _wrap(cpu.CPUContext, "create_cfunc_wrapper", "cfunc wrapper")


def main() -> None:
    parser = argparse.ArgumentParser(prog="tools/compile_profile.py", description=__doc__.splitlines()[0])
    parser.add_argument("--groups", default=None, metavar="G[,G...]",
                        help="only these kernel groups, comma-separated (default: all; see python -m culling warm-up --help)")
    parser.add_argument("--json", default=None, help="write the raw table here")
    parser.add_argument("--top", type=int, default=40, help="kernels listed, the costliest first (default 40)")
    args = parser.parse_args()
    t0 = time.process_time()
    import culling  # its numba patches first: the timers wrap what runs

    groups = args.groups.split(",") if args.groups else None
    if unknown := [group for group in groups or () if group not in culling.KERNEL_GROUPS]:
        parser.error(f"unknown kernel group {unknown[0]!r}; the groups are {', '.join(culling.KERNEL_GROUPS)}")
    install()
    culling.warm_up(groups=groups, workers=1)
    total = time.process_time() - t0
    by_kernel: collections.Counter[str] = collections.Counter()
    by_phase: collections.Counter[str] = collections.Counter()
    for (kernel, label), secs in SELF.items():
        by_kernel[kernel] += secs
        by_phase[label] += secs
    print(f"process CPU {total:.1f} s; timed {sum(SELF.values()):.1f} s")
    print("\nper phase:")
    for label, secs in by_phase.most_common():
        print(f"  {secs:7.2f}  {label}")
    print(f"\nper kernel (top {args.top}):")
    for kernel, secs in by_kernel.most_common(args.top):
        parts = sorted(((s, phase) for (k, phase), s in SELF.items() if k == kernel), reverse=True)[:4]
        print(f"  {secs:6.2f}  {kernel}  [" + ", ".join(f"{phase} {s:.2f}" for s, phase in parts) + "]")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"total": total, "self": [[k, p, s, COUNT[(k, p)]] for (k, p), s in SELF.items()]}, f)
    sys.stdout.flush()


if __name__ == "__main__":
    main()
