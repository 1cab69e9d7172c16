"""Loading a cached kernel (culling/runtime/loads.py): the same kernels as numba's own load, less its waste.

A kernel compiled in one process and loaded in the next; a caller compiled in a
process that loaded its callee (the callee's bitcode parsed on that first
link); the symbols read from the machine code are the ones numba lists from
the bitcode.  Counters are numba's own (``_cache_hits``, ``_cache_misses``).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numba
import pytest

from culling.runtime.jit import JIT_DISABLED
from culling.runtime.loads import defined_symbols

pytestmark = pytest.mark.skipif(JIT_DISABLED, reason="kernels run as Python")

ROOT = Path(__file__).resolve().parents[3]

#: Two kernels, ``outer`` calling ``inner`` (allocating: numba's runtime), in a module of their own.
MODULE = '''
import numpy as np
from culling.runtime.jit import kernel

@kernel
def inner(n):
    out = np.empty(n, dtype=np.int64)
    for i in range(n):
        out[i] = i * i
    return out

@kernel
def outer(n):
    return inner(n).sum() + 1
'''

#: Calls ``inner`` first (loaded, or compiled), then ``outer``; prints the answers and numba's counters.
PROGRAM = '''
import json
import two
import culling.runtime.loads as loads
from culling.runtime import numba_patches
from numba.core.runtime import rtsys
depths = []  # each load's depth of loading_kernel (numba's LLVM lock events quiet from 1 on)
rebuild = loads.rebuild
loads.rebuild = lambda *args: depths.append(getattr(numba_patches._LOADING, "depth", 0)) or rebuild(*args)
a = int(two.inner(5).sum())
b = int(two.outer(5))
print(json.dumps({"answers": [a, b], "runtime_loaded": "_get_module_for_linking" in vars(rtsys.library),
                  "hits": [sum(k._cache_hits.values()) for k in (two.inner, two.outer)],
                  "misses": [sum(k._cache_misses.values()) for k in (two.inner, two.outer)],
                  "parsed": two.inner.overloads[next(iter(two.inner.overloads))].library._shared_module is not None,
                  "quiet_loads": [d > 0 for d in depths]}))
'''


def _run(tmp_path: Path) -> dict[str, object]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("NUMBA_", "CULLING_"))}
    env.update(PYTHONPATH=os.pathsep.join([str(tmp_path), str(ROOT)]), NUMBA_CACHE_DIR=str(tmp_path / "cache"),
               CULLING_SHIPPED_KERNELS="0")
    proc = subprocess.run([sys.executable, "-c", PROGRAM], env=env, cwd=tmp_path, capture_output=True, text=True,
                          timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return dict(json.loads(proc.stdout.strip().splitlines()[-1]))


def test_a_kernel_loads_and_a_caller_compiled_after_its_callee_loaded_links_it(tmp_path):
    (tmp_path / "two.py").write_text(MODULE)
    cold = _run(tmp_path)
    assert cold["answers"] == [30, 31] and cold["misses"] == [1, 1] and not cold["runtime_loaded"]
    assert cold.pop("quiet_loads") == []
    assert len(list((tmp_path / "cache").rglob("numba-runtime-*.nbc"))) == 1  # numba's runtime, compiled once
    warm = _run(tmp_path)  # every kernel and numba's runtime loaded, no bitcode parsed
    assert warm.pop("quiet_loads") == [True, True]  # each load sent no LLVM lock events (numba_patches)
    assert warm == {"answers": [30, 31], "runtime_loaded": True, "hits": [1, 1], "misses": [0, 0], "parsed": False}
    for index in (tmp_path / "cache").rglob("*outer*.nbi"):  # the caller must compile, the callee loads
        index.unlink()
    relinked = _run(tmp_path)  # the compile links the loaded callee and runtime (their bitcode parsed then)
    assert relinked.pop("quiet_loads") == [True]
    assert relinked == {"answers": [30, 31], "runtime_loaded": True, "hits": [1, 0], "misses": [0, 1], "parsed": True}


def test_a_damaged_runtime_file_is_compiled_and_written_again(tmp_path):
    (tmp_path / "two.py").write_text(MODULE)
    _run(tmp_path)
    (runtime,) = (tmp_path / "cache").rglob("numba-runtime-*.nbc")
    runtime.write_bytes(runtime.read_bytes()[:100])
    assert _run(tmp_path)["answers"] == [30, 31]
    assert _run(tmp_path)["runtime_loaded"]


def test_the_symbols_read_from_the_machine_code_are_those_numba_lists_from_the_bitcode():
    import llvmlite.binding as ll

    @numba.njit(cache=False)
    def f(n):
        total = 0.0
        for i in range(n):
            total += i ** 0.5
        return total

    f(3)
    library = f.overloads[next(iter(f.overloads))].library
    _, kind, (object_code, bitcode) = library.serialize_using_object_code()
    found = defined_symbols(object_code)
    if found is None:
        pytest.skip("the machine code is not an ELF object here (numba's own load is used)")
    module = ll.parse_bitcode(bitcode)
    listed = {v.name for values in (module.functions, module.global_variables) for v in values if not v.is_declaration}
    assert found == listed


@pytest.mark.parametrize("data", [b"", b"\x7fELF", b"MZ" + bytes(100), b"\x7fELF\x01\x01" + bytes(100)])
def test_what_is_not_a_64_bit_elf_object_is_left_to_numba(data):
    assert defined_symbols(data) is None
