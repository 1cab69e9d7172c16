"""A library kernel's called kernels are linked into it by symbol (culling.runtime.numba_patches._callees_by_symbol).

numba copies the whole LLVM module of every kernel a kernel calls into the caller's and compiles it again
there; the library's kernels instead declare their library callees and the JIT resolves the symbol to the
callee's machine code.  A kernel kept on disk records its callees and loads them first when it is loaded
in a fresh process, whether the callee is loaded too or compiled again (another symbol name), and a process
without the patch compiles it again rather than loading it.  A user's own numba function is linked as numba
links it.  Each cache test runs small programs in fresh processes with a numba cache of their own.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numba
import numpy as np
import pytest

from culling.runtime import jit, numba_patches

pytestmark = pytest.mark.skipif(jit.JIT_DISABLED or not numba_patches.callees_by_symbol(),
                                reason="nothing is compiled, or this numba is not patched")

#: A module of two library kernels, one calling the other (a file outside the package, as a test's kernel).
KERNELS = '''
import os

import numba

from culling.runtime import numba_patches
from culling.runtime.jit import kernel

# inner is small enough for LLVM to inline: linked by symbol only when the threshold says so
numba_patches.INLINABLE = int(os.environ.get("INLINABLE", "0"))


@kernel
def inner(a, i):
    return a[i] * 2.0 + 1.0


@kernel
def outer(a):
    s = 0.0
    for i in range(a.shape[0]):
        s += inner(a, i)
    return s


@numba.njit(cache=True)
def user(a):  # a user's function: outer linked in as numba links it, and with it what outer calls by symbol
    return outer(a) + 1.0
'''

#: Runs ``outer`` and prints its answer, which of the two compiled, and the callees its code records.
RUN = '''
import json, warnings
warnings.simplefilter("error")
import numpy as np
import twokernels as k
answer = k.outer(np.arange(5.0))
assert k.user(np.arange(5.0)) == answer + 1.0
lib = k.outer.overloads[next(iter(k.outer.overloads))].library
user = k.user.overloads[next(iter(k.user.overloads))].library
assert not getattr(user, "culling_callees", None)  # a user's function: everything linked in, as numba does
print(json.dumps({"answer": answer, "compiled": [f.__name__ for f in (k.inner, k.outer) if sum(f.stats.cache_misses.values())],
                  "callees": [c[1] for c in getattr(lib, "culling_callees", ())]}))
'''


def _run(tmp_path: Path, **env: str) -> dict:
    full = dict(os.environ, PYTHONPATH=os.pathsep.join([str(tmp_path / "src"), str(Path(jit.__file__).parents[2])]),
                NUMBA_CACHE_DIR=str(tmp_path / "cache"), CULLING_SHIPPED_KERNELS="0", **env)
    proc = subprocess.run([sys.executable, "-c", RUN], env=full, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return dict(json.loads(proc.stdout.strip().splitlines()[-1]))


@pytest.fixture
def two_kernels(tmp_path: Path) -> Path:
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "twokernels.py").write_text(KERNELS)
    return tmp_path


ANSWER = float(sum(2.0 * i + 1.0 for i in range(5)))


def test_the_patch_is_in_place():
    from numba.core.codegen import CPUCodeLibrary

    assert getattr(CPUCodeLibrary.finalize, "culling_by_symbol", False)


def test_a_called_kernel_is_declared_in_its_caller_and_both_load_from_the_cache_in_a_fresh_process(two_kernels):
    first = _run(two_kernels)
    assert first == {"answer": ANSWER, "compiled": ["inner", "outer"], "callees": ["inner"]}
    assert _run(two_kernels) == {"answer": ANSWER, "compiled": [], "callees": ["inner"]}


def test_a_caller_loaded_from_the_cache_finds_a_callee_compiled_again_under_another_name(two_kernels):
    _run(two_kernels)
    for path in (two_kernels / "cache").rglob("twokernels.inner-*"):
        path.unlink()
    assert _run(two_kernels) == {"answer": ANSWER, "compiled": ["inner"], "callees": ["inner"]}
    assert _run(two_kernels) == {"answer": ANSWER, "compiled": [], "callees": ["inner"]}


def test_without_the_patches_such_a_cache_entry_is_compiled_again_without_a_warning(two_kernels):
    _run(two_kernels)
    assert _run(two_kernels, CULLING_NUMBA_PATCHES="0") == {"answer": ANSWER, "compiled": ["inner", "outer"],
                                                            "callees": []}
    assert _run(two_kernels) == {"answer": ANSWER, "compiled": ["inner", "outer"], "callees": ["inner"]}


def test_a_callee_small_enough_to_inline_is_linked_in_as_numba_links_it(two_kernels):
    assert _run(two_kernels, INLINABLE=str(numba_patches.INLINABLE)) == {
        "answer": ANSWER, "compiled": ["inner", "outer"], "callees": []}


def test_the_callees_are_only_declared_in_the_callers_code():
    import culling
    from culling.tree import walk

    tree = culling.ViewDistanceTree(size=64.0, dim=3)
    tree.insert_many(np.array([[1.0, 1.0, 1.0]]), np.array([5.0]))
    tree.query((1.0, 1.0, 1.0), exact=True)
    library = next(iter(walk.query.overloads.values())).library
    assert {c[1] for c in library.culling_callees} >= {"walk", "answer"}
    module = library._get_module_for_linking()  # its own code (loaded from the cache or compiled here)
    own = {f.name for f in module.functions if not f.is_declaration}
    declared = {f.name for f in module.functions if f.is_declaration}
    for _module, _name, _args, symbol in library.culling_callees:
        assert symbol not in own
        assert symbol in declared


def _user_inner(a, i):
    return a[i] + 1.0


_user_inner = jit.kernel(_user_inner)  # a library kernel (findable by its module and name), not warmed up
jit.KERNELS.remove(_user_inner)


def test_a_users_function_calling_a_library_kernel_links_it_as_numba_does():
    inner = _user_inner

    @numba.njit
    def user(a):
        return inner(a, 1) + inner(a, 2)

    assert user(np.arange(4.0)) == 5.0
    library = next(iter(user.overloads.values())).library
    assert not getattr(library, "culling_callees", ())
    declared = {f.name for f in library._final_module.functions if f.is_declaration}
    assert next(iter(inner.overloads.values())).fndesc.mangled_name not in declared  # linked in (and inlined)
