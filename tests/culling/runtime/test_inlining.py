"""The inlined helpers' front end is read once per process (culling.runtime.numba_patches._front_end_once), and
each site copies the helper's IR once (culling.runtime.numba_patches._copy_once).

numba reads an ``inline="always"`` helper's bytecode into IR again at every call site; the library
keeps the first reading of each of its own helpers and hands every site a copy.  The copies must
keep each site's variables apart (a helper inlined twice into one kernel, and inside another
inlined helper), and a function that is not one of the library's helpers is read as numba reads it.
numba's inliner then deep-copies the IR twice per site, block by block; the library's helpers are
copied once, as one whole (one scope for all the copy's blocks).  numba's compiler flags are read
without a property call per option (culling.runtime.numba_patches._quick_flag_values), to the same values, and
numba's @overload implementations are compiled without a cfunc wrapper (culling.runtime.numba_patches._overloads_without_cfunc);
a ufunc's loop is looked up once per ufunc and types (culling.runtime.numba_patches._ufunc_loops_once), to numba's
own answer.  A library kernel's CPython wrapper skips numba's first, function-by-function round of LLVM passes
(culling.runtime.numba_patches._wrappers_optimised_once), to the same final code; anything else keeps it.
"""

from __future__ import annotations

import collections
import itertools
from typing import Any

import numba
import pytest
from numba.core import bytecode, untyped_passes

from culling.runtime import jit, numba_patches

pytestmark = pytest.mark.skipif(jit.JIT_DISABLED, reason="NUMBA_DISABLE_JIT=1: nothing is compiled")


def _settle_typed() -> tuple[Any, Any]:
    """The settle's kernel (inlined helpers, loops, early exits, called kernels) and its signature, typed by a
    small tree's ``update_many``."""
    import numpy as np

    import culling
    from culling.tree import batch

    tree = culling.ViewDistanceTree(size=64.0, dim=3)
    handles = tree.insert_many(np.array([[1.0, 2.0, 3.0], [5.0, 5.0, 5.0]]), np.array([1.0, 2.0]))
    tree.update_many(handles, np.array([[1.5, 2.0, 3.0], [30.0, 5.0, 5.0]]))
    return batch._settle_part, batch._settle_part.signatures[0]


#: The function ids the fresh compiles draw: past any a process compiling kernels for a cache reaches.
_FRESH_IDS = itertools.count(1 << 40)


def _compiled_afresh(kernel: Any, signature: Any, in_kernel_compile: bool = False) -> Any:
    """``kernel``'s Python function compiled again with the library's options for ``signature`` (as while a
    library kernel compiles, where ``in_kernel_compile``): its compile result.

    A kernel loaded from a cache keeps the id its compiling process gave it, and numba gives functions of one
    name, signature and id one environment (the constants the CPython wrapper reads, such as the dtypes of the
    arrays it returns): a fresh copy that drew the loaded kernel's id would add its constants after the
    loaded one's and read them at other places.  Its ids therefore come from a range of their own."""
    options = {k: v for k, v in kernel.targetoptions.items() if k != "nopython"}
    fresh = numba.njit(**options)(kernel.py_func)
    numba_patches._LOCAL.depth = 1 if in_kernel_compile else 0
    ids = bytecode.FunctionIdentity._unique_ids
    bytecode.FunctionIdentity._unique_ids = _FRESH_IDS
    try:
        fresh.compile(signature)
    finally:
        bytecode.FunctionIdentity._unique_ids = ids
        numba_patches._LOCAL.depth = 0
    return fresh.overloads[signature]


def test_a_fresh_copy_never_shares_the_environment_of_the_kernel_it_copies(monkeypatch):
    """Even where numba's next function id is the one the settle's kernel was compiled with (a kernel loaded from
    a cache keeps its compiling process's id), the fresh copy gets an environment of its own: the comparisons
    below would otherwise read its constants at other places, now and then, in a long test run."""
    import re

    kernel, signature = _settle_typed()
    kept = kernel.overloads[signature]
    kept_id = int(re.findall(r"B\d+v(\d+)B", kept.fndesc.env_name)[0])
    monkeypatch.setattr(bytecode.FunctionIdentity, "_unique_ids", itertools.count(kept_id))
    fresh = _compiled_afresh(kernel, signature)
    assert fresh.environment is not kept.environment
    assert len(fresh.environment.consts) == len(kept.environment.consts)


def _reads(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The names of the functions whose bytecode numba reads from now on (its first untyped pass)."""
    seen: list[str] = []
    real = untyped_passes.ExtractByteCode.run_pass

    def run_pass(self, state):  # noqa: ANN001, ANN202 - numba's pass signature
        seen.append(state.func_id.func_qualname)
        return real(self, state)

    monkeypatch.setattr(untyped_passes.ExtractByteCode, "run_pass", run_pass)
    return seen


def _scaled_py(x, k):
    y = x * k
    return y + 1.0


_scaled = numba.njit(inline="always")(_scaled_py)


def _twice_py(x):
    a = _scaled(x, 2.0)
    b = _scaled(a, 3.0)
    return a + b


_twice = numba.njit(inline="always")(_twice_py)


def _kernel_py(x):
    return _twice(x) - _scaled(x, 5.0) + _twice(x + 1.0)   # _scaled inlined at 5 sites in all


def expected(x: float) -> float:
    def twice(v: float) -> float:
        a = v * 2.0 + 1.0
        return a + (a * 3.0 + 1.0)

    return twice(x) - (x * 5.0 + 1.0) + twice(x + 1.0)


def test_the_patch_is_in_place():
    from numba.core.inline_closurecall import InlineWorker

    assert getattr(InlineWorker.run_untyped_passes, "culling_once", False)


def test_a_library_helper_inlined_at_many_sites_is_read_once_and_each_site_keeps_its_variables(monkeypatch):
    reads = _reads(monkeypatch)
    numba_patches.INLINED.update((_scaled_py, _twice_py))
    try:
        kernel = numba.njit(_kernel_py)  # a new dispatcher: compiled here
        for x in (0.5, -3.0, 7.25):
            assert kernel(x) == expected(x)
    finally:
        numba_patches.INLINED.difference_update((_scaled_py, _twice_py))
    assert reads.count("_twice_py") == 1, reads
    assert reads.count("_scaled_py") == 1, reads   # read once, though inlined at 5 sites


def test_a_function_that_is_not_the_librarys_is_read_at_every_site_as_numba_does(monkeypatch):
    reads = _reads(monkeypatch)
    kernel = numba.njit(_kernel_py)
    assert kernel(1.5) == expected(1.5)
    assert reads.count("_twice_py") == 2, reads
    assert reads.count("_scaled_py") == 5, reads


def _branchy_py(x, k):
    # several blocks and a loop: the copy's blocks must keep sharing one scope
    total = 0.0
    for i in range(k):
        if x > i:
            total += x - i
        else:
            total -= 1.0
    return total


_branchy = numba.njit(inline="always")(_branchy_py)


def _branchy_twice_py(x):
    return _branchy(x, 3) * 10.0 + _branchy(x + 0.5, 2)


def _branchy_expected(x: float, k: int) -> float:
    total = 0.0
    for i in range(k):
        total += x - i if x > i else -1.0
    return total


def test_a_library_helper_of_many_blocks_is_copied_once_per_site(monkeypatch):
    import copy

    from numba.core import ir
    from numba.core.inline_closurecall import InlineWorker

    assert getattr(InlineWorker.inline_ir, "culling_once", False)
    real_deepcopy = copy.deepcopy
    block_copies: list[object] = []  # each block copy's memo, held: its id is then not reused by a later one

    def deepcopy(x, memo=None, _nil=[]):  # noqa: ANN001, ANN202, B006 - copy.deepcopy's signature
        if isinstance(x, ir.Block):
            block_copies.append(memo)
        return real_deepcopy(x, memo, _nil)

    sites: list[int] = []
    ours = InlineWorker.inline_ir

    def inline_ir(self, caller_ir, block, i, callee_ir, *args, **kwargs):  # noqa: ANN001, ANN202 - numba's
        sites.append(len(callee_ir.blocks))
        return ours(self, caller_ir, block, i, callee_ir, *args, **kwargs)

    monkeypatch.setattr(copy, "deepcopy", deepcopy)
    monkeypatch.setattr(InlineWorker, "inline_ir", inline_ir)
    numba_patches.INLINED.add(_branchy_py)
    try:
        kernel = numba.njit(_branchy_twice_py)
        for x in (-1.0, 0.25, 1.5, 4.0):
            assert kernel(x) == _branchy_expected(x, 3) * 10.0 + _branchy_expected(x + 0.5, 2)
    finally:
        numba_patches.INLINED.discard(_branchy_py)
    assert len(sites) == 2 and sites[0] > 3, sites   # two sites of a helper of several blocks
    assert len(block_copies) == sum(sites), (block_copies, sites)   # each block copied once per site
    assert len({id(memo) for memo in block_copies}) == 2   # with one memo per site: one copy of the helper's scope


def test_the_flags_read_quickly_hold_what_numbas_properties_hold():
    from numba.core.compiler import Flags
    from numba.core.targetconfig import TargetConfig

    assert getattr(TargetConfig.values, "culling_quick", False)
    flags = Flags()
    flags.nrt = True
    flags.error_model = "numpy"
    assert flags.values() == {name: getattr(flags, name) for name in flags.options}
    same = Flags()
    same.nrt = True
    same.error_model = "numpy"
    assert same == flags and hash(same) == hash(flags)
    same.release_gil = True
    assert same != flags


def test_the_flags_hash_and_compare_as_numbas_own_methods_do():
    """The flags' ``__hash__`` (kept per class) and ``__eq__`` (set options compared first) answer what numba's do."""
    from numba.core.compiler import Flags
    from numba.core.targetconfig import TargetConfig

    assert getattr(TargetConfig.__hash__, "culling_quick", False)

    def numbas_hash(flags: Flags) -> int:
        return hash(tuple(sorted({k: getattr(flags, k) for k in flags.options})))

    def numbas_eq(a: Flags, b: Flags) -> bool:
        return {k: getattr(a, k) for k in a.options} == {k: getattr(b, k) for k in b.options}

    plain, nrt, numpy_errors, default_set = Flags(), Flags(), Flags(), Flags()
    nrt.nrt = True
    numpy_errors.nrt = True
    numpy_errors.error_model = "numpy"
    default_set.nrt = Flags.options["nrt"].default  # set to its default: equal to the unset one
    every = [plain, nrt, numpy_errors, default_set]
    for a in every:
        assert hash(a) == numbas_hash(a)
        for b in every:
            assert (a == b) == numbas_eq(a, b) and (a != b) == (not numbas_eq(a, b))
    assert default_set == plain and nrt != plain and (plain == object()) is False


def test_the_variables_of_every_statement_are_numbas_list_in_numbas_order():
    """``Inst._rec_list_vars`` told by exact type lists what numba's ``isinstance`` chain lists, in its order: every
    statement and expression of the front-end IR of a few of the library's kernels, and values of other kinds."""
    import operator

    from numba.core import ir
    from numba.core.compiler import run_frontend

    from culling.pairs import bands
    from culling.tree import batch, walk

    quick = ir.Inst._rec_list_vars
    assert getattr(quick, "culling_quick", False)
    numbas = quick.numba_rec_list_vars
    seen = 0
    for kernel in (batch._settle_part, bands._sphere_cells, walk.walk, batch.check_handles):
        func_ir = run_frontend(kernel.py_func)
        for block in func_ir.blocks.values():
            for stmt in block.body:
                values = [stmt.__dict__] + [v._kws for v in stmt.__dict__.values() if isinstance(v, ir.Expr)]
                for value in values:
                    assert quick(stmt, value) == numbas(stmt, value)
                    seen += 1
    assert seen > 500
    scope, loc = ir.Scope(None, ir.Loc("f", 1)), ir.Loc("f", 1)
    a, b = ir.Var(scope, "a", loc), ir.Var(scope, "b", loc)

    class Listed(list):  # a subclass: numba's isinstance tests, not the exact types
        pass

    expr = ir.Expr.binop(operator.add, a, b, loc)
    odd = [a, (b, [a, {"x": b, "y": 3}]), Listed([b, a]), {"k": (a,)}, ir.Const(1, loc), loc, "s", 2.5, None, expr,
           ir.Assign(expr, b, loc)]
    stmt = ir.Assign(a, b, loc)
    assert quick(stmt, odd) == numbas(stmt, odd) == [a, b, a, b, b, a, a, a, b, a, b, b]


def test_an_overload_implementation_is_compiled_without_a_cfunc_wrapper():
    import numpy as np
    from numba.core.typing.templates import _OverloadFunctionTemplate

    assert getattr(_OverloadFunctionTemplate._get_jit_decorator, "culling_no_cfunc", False)

    @numba.njit
    def filled(n):  # np.empty and max: two of numba's @overload implementations
        out = np.empty(n)
        for i in range(n):
            out[i] = max(i, 2)
        return out

    assert filled(4).tolist() == [2.0, 2.0, 2.0, 3.0]
    impls = [d for t in _OverloadFunctionTemplate.__subclasses__() for d, _ in getattr(t, "_impl_cache", {}).values()
             if d is not None]
    assert impls and all(d.targetoptions.get("no_cfunc_wrapper") for d in impls)


def test_the_patches_can_be_turned_off():
    """``CULLING_NUMBA_PATCHES=0``: numba is left exactly as it is, and the library still answers."""
    import subprocess
    import sys

    script = ("import culling\n"
              "from numba.core.inline_closurecall import InlineWorker\n"
              "from numba.core.targetconfig import TargetConfig\n"
              "from numba.core.codegen import CPUCodeLibrary\n"
              "from numba.core.typing import npydecl\n"
              "from numba.core.codegen import CPUCodeLibrary as L, CPUCodegen\n"
              "patched = [getattr(InlineWorker.run_untyped_passes, 'culling_once', False),\n"
              "           getattr(InlineWorker.inline_ir, 'culling_once', False),\n"
              "           getattr(TargetConfig.values, 'culling_quick', False),\n"
              "           getattr(TargetConfig.__hash__, 'culling_quick', False),\n"
              "           getattr(__import__('numba.core.ir').core.ir.Inst._rec_list_vars, 'culling_quick', False),\n"
              "           getattr(__import__('numba.core.postproc').core.postproc.PostProcessor.run, 'culling_on_demand',\n"
              "                   False),\n"
              "           getattr(__import__('numba.core.types').core.types.functions.BaseFunction.get_call_type,\n"
              "                   'culling_once', False),\n"
              "           getattr(CPUCodeLibrary.finalize, 'culling_by_symbol', False),\n"
              "           getattr(npydecl.ufunc_find_matching_loop, 'culling_once', False),\n"
              "           getattr(L._optimize_functions, 'culling_once', False),\n"
              "           getattr(CPUCodegen._get_host_cpu_name, 'culling_once', False),\n"
              "           any(getattr(entered, 'culling_outside_loads', False) for entered, _ in\n"
              "               __import__('llvmlite.binding.ffi').binding.ffi.lib._lock._cblist),\n"
              "           getattr(__import__('numba.core.base').core.base.BaseContext.get_abi_sizeof, 'culling_once',\n"
              "                   False),\n"
              "           getattr(__import__('numba.core.caching').core.caching._CacheLocator.ensure_cache_path,\n"
              "                   'culling_once', False),\n"
              "           getattr(__import__('numba.core.typing.typeof').core.typing.typeof._typeof_ndarray,\n"
              "                   'culling_once', False),\n"
              "           getattr(__import__('numba.core.typed_passes').core.typed_passes.NopythonRewrites.run_pass,\n"
              "                   'culling_once', False),\n"
              "           getattr(L._optimize_final_module, 'culling_once', False),\n"
              "           getattr(__import__('numba.core.runtime.context').core.runtime.context.NRTContext.get_meminfos,\n"
              "                   'culling_held', False),\n"
              "           getattr(__import__('numba.core.ssa').core.ssa._run_ssa, 'culling_once', False)]\n"
              "print(patched)\n")
    env = {**__import__("os").environ, numba_patches.PATCHES_ENV: "0"}
    off = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=300)
    assert off.returncode == 0, off.stderr
    assert off.stdout.strip() == "[" + ", ".join(["False"] * 19) + "]"
    env[numba_patches.PATCHES_ENV] = "1"
    on = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=300)
    assert on.returncode == 0, on.stderr
    assert on.stdout.strip() == "[" + ", ".join(["True"] * 19) + "]"


def test_type_sizes_are_kept_per_context_and_equal_llvms():
    """A type's ABI size is LLVM's, asked once per context and type text; an identified struct is asked each time."""
    from llvmlite import ir
    from numba.core import base
    from numba.core.registry import cpu_target

    assert getattr(base.BaseContext.get_abi_sizeof, "culling_once", False)
    context = cpu_target.target_context
    kinds = [ir.IntType(8), ir.IntType(64), ir.DoubleType(), ir.IntType(8).as_pointer(),
             ir.LiteralStructType([ir.IntType(8), ir.IntType(64), ir.DoubleType()]),
             ir.ArrayType(ir.IntType(16), 7), ir.LiteralStructType([ir.ArrayType(ir.IntType(32), 3), ir.IntType(1)])]
    for ty in kinds:
        expected = ty.get_abi_size(context.target_data)
        assert context.get_abi_sizeof(ty) == expected
        assert context.get_abi_sizeof(ty) == expected  # the kept answer
        assert context.__dict__["_culling_abi_sizes"][str(ty)] == expected
    named = ir.global_context.get_identified_type("culling_test_sized")
    named.set_body(ir.IntType(64), ir.IntType(32))
    assert context.get_abi_sizeof(named) == named.get_abi_size(context.target_data) == 16
    assert str(named) not in context.__dict__["_culling_abi_sizes"]


def test_a_cache_folder_is_probed_for_writing_once_and_made_again_when_gone(tmp_path, monkeypatch):
    """numba's writability probe (a temporary file) runs once per folder; a folder removed later is made again,
    and a folder that failed its probe is probed again."""
    import os
    import tempfile

    from numba.core import caching

    assert getattr(caching._CacheLocator.ensure_cache_path, "culling_once", False)
    probes: list[str] = []
    real = tempfile.TemporaryFile

    def counted(*args, **kwargs):
        probes.append(kwargs.get("dir"))
        return real(*args, **kwargs)

    monkeypatch.setattr(tempfile, "TemporaryFile", counted)

    class Locator(caching._CacheLocator):
        def __init__(self, path):
            self._path = path

        def get_cache_path(self):
            return self._path

        def get_source_stamp(self):
            return 0

        def get_disambiguator(self):
            return ""

        @classmethod
        def from_function(cls, py_func, py_file):
            return None

    folder = str(tmp_path / "kernels")
    for _ in range(5):
        Locator(folder).ensure_cache_path()
    assert probes == [folder]
    os.rmdir(folder)
    Locator(folder).ensure_cache_path()
    assert os.path.isdir(folder) and probes == [folder]
    blocked = tmp_path / "a file, not a folder"
    blocked.write_text("")
    for _ in range(2):
        with pytest.raises(OSError):
            Locator(str(blocked / "kernels")).ensure_cache_path()


def test_arrays_are_typed_as_numba_types_them_and_masked_ones_still_refused():
    """numba's ``typeof`` of an ndarray, with the masked-array check read only where ``numpy.ma`` is imported:
    the same types for every layout, dtype and flag, and a masked array refused as numba refuses it."""
    import numpy as np
    from numba.core import errors
    from numba.core.typing import typeof

    patched = typeof.typeof_impl.dispatch(np.ndarray)
    assert getattr(patched, "culling_once", False) and patched is typeof._typeof_ndarray
    numbas = patched.numba_typeof_ndarray
    base = np.arange(24, dtype=np.float64).reshape(4, 6)
    frozen = base.copy()
    frozen.setflags(write=False)
    arrays = [base, base.T, base[:, ::2], base[0], np.zeros(0, dtype=np.int32), np.zeros((2, 0, 3), dtype=np.uint8),
              frozen, np.broadcast_to(np.arange(3.0), (4, 3)), np.array(5.0), np.ones(3, dtype=np.complex64),
              np.ones(3, dtype=np.bool_), np.ones(2, dtype=[("a", np.int64), ("b", np.float32)]), np.array(["text"]),
              np.empty(2, dtype=object), np.zeros(2, dtype="datetime64[s]")]
    for array in arrays:
        assert patched(array, None) == numbas(array, None)
        assert typeof.typeof(array) == numbas(array, None)
    with pytest.raises(errors.NumbaValueError):
        patched(np.zeros(2, dtype="V3"), None)
    import numpy.ma

    with pytest.raises(errors.NumbaTypeError, match="MaskedArray"):
        typeof.typeof(numpy.ma.masked_array([1.0, 2.0], mask=[False, True]))


def test_a_kernel_called_with_arrays_leaves_numpy_ma_unimported():
    """A first frame (a build, a query) in a fresh process never imports NumPy's masked arrays."""
    import subprocess
    import sys

    script = ("import sys, numpy as np, culling\n"
              "tree = culling.ViewDistanceTree(100.0)\n"
              "tree.insert_many(np.random.default_rng(0).uniform(0, 100, (50, 3)), np.ones(50))\n"
              "tree.query_many(np.zeros((3, 3)), exact=True)\n"
              "print('numpy.ma' in sys.modules)\n")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "False"


def test_llvm_lock_events_are_sent_for_every_call_into_llvm_but_a_kernel_loads():
    """numba's ``numba:llvm_lock`` events reach a listener for every call into LLVM, as numba sends them,
    except the calls of a thread loading a library kernel (``loading_kernel``), and only that thread's."""
    import threading

    import llvmlite.binding as ll
    from numba.core import event

    with event.install_recorder("numba:llvm_lock") as outside:
        ll.get_process_triple()
    starts = [e.is_start for _, e in outside.buffer]
    assert starts and starts == [True, False] * (len(starts) // 2)  # a start and an end per call, as numba sends
    with event.install_recorder("numba:llvm_lock") as inside, numba_patches.loading_kernel():
        ll.get_process_triple()
        other = threading.Thread(target=ll.get_process_triple)  # another thread's calls, during the load
        other.start()
        other.join()
    assert [e.is_start for _, e in inside.buffer] == starts  # the other thread's alone
    with event.install_recorder("numba:llvm_lock") as after:
        ll.get_process_triple()
    assert [e.is_start for _, e in after.buffer] == starts


def test_the_host_cpu_name_is_asked_once_and_is_llvms_or_numbas_setting(monkeypatch):
    import llvmlite.binding as ll
    from numba.core import config
    from numba.core.codegen import CPUCodegen
    from numba.core.registry import cpu_target

    once = CPUCodegen._get_host_cpu_name
    assert getattr(once, "culling_once", False)
    codegen = cpu_target.target_context.codegen()
    assert codegen._get_host_cpu_name() == ll.get_host_cpu_name()
    asked = []
    monkeypatch.setattr(ll, "get_host_cpu_name", lambda: asked.append(1) or "asked")
    assert codegen._get_host_cpu_name() == codegen._get_host_cpu_name() != "asked" and not asked
    monkeypatch.setattr(config, "CPU_NAME", "generic")  # NUMBA_CPU_NAME still decides
    assert codegen._get_host_cpu_name() == "generic"


def test_a_ufuncs_loop_is_found_once_for_the_same_types_and_is_numbas():
    import numpy as np
    from numba.core import types
    from numba.core.typing import npydecl
    from numba.np import numpy_support

    memo = npydecl.ufunc_find_matching_loop
    assert getattr(memo, "culling_once", False)
    for ufunc, args in ((np.add, [types.float64, types.int64]), (np.sqrt, [types.int32]),
                        (np.floor, [types.float32]), (np.bitwise_and, [types.int64, types.uint8])):
        first = memo(ufunc, args)
        assert first == numpy_support.ufunc_find_matching_loop(ufunc, args)
        assert memo(ufunc, list(args)) is first


def test_a_kernels_wrapper_skips_the_function_passes_and_any_other_module_keeps_them(monkeypatch):
    """While a library kernel compiles, a module defining its CPython wrapper is not run through numba's function
    passes; any other module (the kernel's body, numba's overloads, a user's function) is, as it is outside a
    kernel's compile."""
    import llvmlite.binding as ll
    from numba.core.codegen import CPUCodeLibrary
    from numba.core.registry import cpu_target

    assert getattr(CPUCodeLibrary._optimize_functions, "culling_once", False)
    codegen = cpu_target.target_context.codegen()
    runs: list[str] = []
    real = type(codegen)._function_pass_manager

    def counted(self, **kwargs):  # noqa: ANN001, ANN003, ANN202 - numba's signature
        fpm, pb = real(self, **kwargs)

        class Counted:
            def run(self, function, builder):  # noqa: ANN001, ANN202
                runs.append(function.name)
                return fpm.run(function, builder)

        return Counted(), pb

    monkeypatch.setattr(type(codegen), "_function_pass_manager", counted)

    def optimised(name: str, in_kernel: bool) -> list[str]:
        module = ll.parse_assembly(f"define i64 @\"{name}\"(i64 %x) {{\n  %y = add i64 %x, 1\n  ret i64 %y\n}}\n")
        library = codegen.create_library("probe")
        runs.clear()
        numba_patches._LOCAL.depth = 1 if in_kernel else 0
        try:
            library._optimize_functions(module)
        finally:
            numba_patches._LOCAL.depth = 0
        assert module.data_layout == codegen._data_layout
        return list(runs)

    kernel, wrapper = "_ZN7culling4tree4walk5probeB2v1Exx", "_ZN7cpython7culling4tree4walk5probeB2v1Exx"
    assert optimised(wrapper, True) == []
    assert optimised(wrapper, False) == [wrapper]   # outside a kernel's compile
    assert optimised(kernel, True) == [kernel]   # the kernel's body: numba's round
    assert optimised("_ZN5numba2np8arrayobj5emptyExx", True) == ["_ZN5numba2np8arrayobj5emptyExx"]
    assert optimised("_ZN7cpython8__main__4userExx", True) == ["_ZN7cpython8__main__4userExx"]


def test_a_kernels_body_is_the_same_with_its_wrapper_optimised_once(monkeypatch):
    """The final LLVM IR of a library kernel's body (the tree's exact query, compiled afresh here from its
    Python function with the library's options, inside a kernel's compile) is the same, but for metadata
    numbers, with its wrapper's first round of passes and without it (in one process: the called kernels
    are the loaded ones, linked by symbol, so only the query's own body compiles, twice)."""
    import re

    import numpy as np
    from numba.core.codegen import CPUCodeLibrary

    import culling
    from culling.tree import walk

    tree = culling.ViewDistanceTree(size=64.0, dim=2)
    tree.insert_many(np.array([[1.0, 2.0], [5.0, 5.0]]), np.array([1.0, 2.0]))
    tree.query(np.array([1.0, 2.0]), exact=True)  # the library's own query typed: its signature
    signature = walk.query.signatures[0]
    once = CPUCodeLibrary._optimize_functions
    assert getattr(once, "culling_once", False)

    def body(optimize_functions) -> tuple[str, ...]:  # noqa: ANN001 - numba's method
        monkeypatch.setattr(CPUCodeLibrary, "_optimize_functions", optimize_functions)
        compiled = _compiled_afresh(walk.query, signature, in_kernel_compile=True)
        text = re.sub(r"B\d+v\d+B\d+[A-Za-z0-9_]+", "B", compiled.library.get_llvm_str())
        found = [re.search(rf"^define [^@]*@{name}B.*?^}}", text, re.S | re.M)
                 for name in ("_ZN7culling4tree4walk5query", "_ZN7cpython7culling4tree4walk5query")]
        assert all(found)
        return tuple(re.sub(r"!\d+", "!N", f.group(0)) for f in found if f is not None)

    (skipped, its_wrapper), (numbas, numbas_wrapper) = body(once), body(once.numba_optimize_functions)
    assert skipped.startswith("define") and skipped == numbas
    assert its_wrapper != numbas_wrapper  # the wrapper's own round was left out in the first compile only



def test_a_kernels_body_is_the_same_with_one_round_of_module_passes(monkeypatch):
    """The settle's kernel body (loops, inlined helpers, called kernels linked by symbol), compiled afresh inside
    a kernel's compile, has the same final LLVM IR, but for names and metadata numbers, with the full module
    passes alone as with numba's cheap round before them; a user's function keeps numba's two rounds."""
    import re

    from numba.core.codegen import CPUCodeLibrary

    one_round = CPUCodeLibrary._optimize_final_module
    assert getattr(one_round, "culling_once", False)
    kernel, signature = _settle_typed()
    rounds: list[str] = []

    def counted(optimize):  # noqa: ANN001, ANN202 - numba's method
        def optimize_final_module(self):  # noqa: ANN001, ANN202
            rounds.append(self.name)
            return optimize(self)
        return optimize_final_module

    def body(optimize) -> str:  # noqa: ANN001 - numba's method
        monkeypatch.setattr(CPUCodeLibrary, "_optimize_final_module", optimize)
        text = _final_ir(_compiled_afresh(kernel, signature, in_kernel_compile=True).library.get_llvm_str())
        found = re.search(r"^define [^@]*@_ZN7culling4tree5batch12_settle_partB.*?^}", text, re.S | re.M)
        assert found is not None
        return found.group(0)

    assert body(one_round) == body(counted(one_round.numba_optimize_final_module))
    assert rounds  # numba's method ran for the second compile

    from numba.core.codegen import CPUCodegen

    costs: list[str] = []
    pass_manager = CPUCodegen._module_pass_manager

    def recorded(self, **kwargs):  # noqa: ANN001, ANN003, ANN202 - numba's method
        costs.append(kwargs.get("cost") or "full")
        return pass_manager(self, **kwargs)

    monkeypatch.setattr(CPUCodeLibrary, "_optimize_final_module", one_round)
    monkeypatch.setattr(CPUCodegen, "_module_pass_manager", recorded)
    body(one_round)
    assert "full" in costs and "cheap" not in costs  # a library kernel: the full round alone
    costs.clear()

    def users(x: float) -> float:
        return x * 2.0 + 1.0

    assert numba.njit(users)(2.0) == 5.0
    assert "cheap" in costs and "full" in costs  # a user's function: numba's two rounds

def _final_ir(text: str) -> str:
    """A kernel's final LLVM IR with what differs between two compiles of the same code made alike: numba's unique
    names (and the lengths of the strings holding them), metadata numbers, and the names of local values and
    labels (numba's hold counters), numbered in order of appearance within each function."""
    import re

    text = re.sub(r"B\d+v\d+B\d+[A-Za-z0-9_]+", "B", text)
    text = re.sub(r"\[\d+ x i8\]", "[N x i8]", text)
    text = re.sub(r"!\d+", "!N", text)
    text = re.sub(r"\s*; preds = .*$", "", text, flags=re.M)  # aligned to the labels' lengths
    text = re.sub(r"^([-A-Za-z$._0-9]+):", r"%\1:", text, flags=re.M)  # a block's label, as its uses name it
    functions = re.split(r"^(?=define )", text, flags=re.M)  # a local name means something within its function only

    def numbered(part: str) -> str:
        local: dict[str, str] = {}
        return re.sub(r"%[-A-Za-z$._0-9]+", lambda m: local.setdefault(m.group(0), f"%v{len(local)}"), part)

    return "".join(numbered(part) for part in functions)


def test_a_kernels_ir_is_the_same_with_its_lifetimes_computed_on_demand(monkeypatch):
    """A library kernel's IR post-processed without the blocks' entry variables (the lifetimes computed only
    where a pass asks) lowers to the same final LLVM IR, but for unique names and metadata numbers, as numba's
    own post-processing gives: the settle's kernel (inlined helpers, loops, early exits), compiled afresh from
    its Python function with the library's options, once each way."""

    from numba.core import postproc

    on_demand = postproc.PostProcessor.run
    assert getattr(on_demand, "culling_on_demand", False)
    kernel, signature = _settle_typed()
    runs: list[str] = []

    def counted(run):  # noqa: ANN001, ANN202 - numba's method
        def post_process(self, *args, **kwargs):  # noqa: ANN001, ANN002, ANN003, ANN202
            runs.append(getattr(self.func_ir.func_id, "func_qualname", ""))
            return run(self, *args, **kwargs)
        return post_process

    def compiled(run) -> str:  # noqa: ANN001 - numba's method
        monkeypatch.setattr(postproc.PostProcessor, "run", counted(run))
        return _final_ir(_compiled_afresh(kernel, signature).library.get_llvm_str())

    ours, numbas = compiled(on_demand), compiled(on_demand.numba_run)
    assert "_settle_part" in ours and ours == numbas
    assert runs.count("_settle_part") >= 10  # post-processed many times, each way


def test_no_kernel_source_uses_what_reads_lifetimes_a_later_pass_changed():
    """The lifetimes patch holds while the library's kernels use neither ``literal_unroll`` nor ``objmode``
    (their passes read lifetimes computed before a later change) and none is a generator."""
    import inspect
    from pathlib import Path

    import culling
    from culling.runtime.numba_patches import INLINED, KERNEL_FUNCTIONS

    sources = Path(culling.__file__).parent
    for path in sources.rglob("*.py"):
        text = path.read_text()
        assert "literal_unroll" not in text or path.name == "numba_patches.py", path
        assert "objmode" not in text or path.name == "numba_patches.py", path
    assert len(KERNEL_FUNCTIONS) > 50 and len(INLINED) > 50
    assert not any(inspect.isgeneratorfunction(f) for f in KERNEL_FUNCTIONS | INLINED)


def test_a_kernels_ir_is_the_same_with_its_call_types_kept(monkeypatch):
    """Calls typed once per argument types and flags in a library kernel's compile: the settle's kernel (NRT on)
    and ``keep_rows`` (NRT off: other flags, so other keys) compiled afresh with the kept types (filled by
    compiling them once before) give the same final LLVM IR, but for unique names and metadata numbers, as
    typed every time by numba; and a function that is not a kernel's types as numba types it."""

    import numpy as np
    from numba.core.types import functions

    import culling
    from culling.core import members
    from culling.tree import batch

    kept = functions.BaseFunction.get_call_type
    assert getattr(kept, "culling_once", False)
    _settle_typed()
    tree = culling.ViewDistanceTree(size=64.0, dim=3)
    tree.insert_many(np.array([[1.0, 2.0, 3.0], [5.0, 5.0, 5.0]]), np.array([1.0, 2.0]))
    tree.query_many(np.array([[1.0, 2.0, 3.0], [5.0, 5.0, 4.0]]), exact=True)  # its member passes: keep_rows
    typings: list[int] = []

    def counted(get_call_type):  # noqa: ANN001, ANN202 - numba's method
        def typing(self, context, args, kws):  # noqa: ANN001, ANN202
            typings.append(1)
            return get_call_type(self, context, args, kws)
        return typing

    def compiled(kernel, get_call_type) -> str:  # noqa: ANN001
        monkeypatch.setattr(functions.BaseFunction, "get_call_type", counted(get_call_type))
        result = _compiled_afresh(kernel, kernel.signatures[0], in_kernel_compile=True)
        return _final_ir(result.library.get_llvm_str())

    for kernel in (batch._settle_part, members.keep_rows):
        compiled(kernel, kept)  # the kept answers filled
        ours, numbas = compiled(kernel, kept), compiled(kernel, kept.numba_get_call_type)
        assert kernel.py_func.__name__ in ours and ours == numbas
    assert len(typings) > 1000

    monkeypatch.setattr(functions.BaseFunction, "get_call_type", counted(kept))
    before = len(typings)

    def users(x: float) -> float:  # a user's function: outside a kernel's compile, typed every time
        return x * 2.0 + 1.0

    answers = len(kept.kept)
    assert numba.njit(users)(2.0) == 5.0 and numba.njit(users)(3.0) == 7.0
    assert len(typings) - before >= 4 and len(kept.kept) == answers  # typed, none of it kept


def test_the_meminfos_found_where_held_are_numbas_in_numbas_order():
    """Reference counting that skips the members holding no reference finds the same meminfos, of the same
    types, in the same order, as numba's own walk over every member: arrays, tuples of arrays and of
    numbers, nested and homogeneous tuples, optional arrays, records and numbers."""
    from llvmlite import ir
    from numba.core import types
    from numba.core.registry import cpu_target
    from numba.core.runtime import context

    patched = context.NRTContext.get_meminfos
    assert getattr(patched, "culling_held", False)
    # A copy: numba caches ``nrt`` on the context it is read from, and the compiles' contexts are copies of
    # the top-level one (reading it there would leave NRT off in every later compile).
    target = cpu_target.target_context.subtarget(enable_nrt=True)
    array = types.float64[:, ::1]
    record = types.Record.make_c_struct([("x", types.float64), ("n", types.int64)])
    pair = collections.namedtuple("pair", "first second")
    cases = [array, types.int64, types.Tuple((array, types.int64, types.boolean)),
             types.Tuple((types.Tuple((array, types.float64)), types.UniTuple(types.int64[:], 3))),
             types.UniTuple(types.float64, 4), types.Optional(array), types.NamedUniTuple(array, 2, pair),
             types.Tuple((types.UniTuple(types.intp, 3), types.float64)), record, types.Tuple((record, array))]
    for ty in cases:
        found = []
        for get_meminfos in (patched, patched.numba_get_meminfos):
            module = ir.Module()
            value_type = target.get_value_type(ty)
            function = ir.Function(module, ir.FunctionType(ir.VoidType(), [value_type]), "f")
            builder = ir.IRBuilder(function.append_basic_block())
            meminfos = get_meminfos(target.nrt, builder, ty, function.args[0])
            found.append([(kind, str(mi.type)) for kind, mi in meminfos])
        assert found[0] == found[1], ty
    assert patched.holds[types.UniTuple(types.intp, 3)] is False and patched.holds[array] is True


def test_a_kernels_ir_is_the_same_with_references_counted_where_held(monkeypatch):
    """The settle's kernel (NRT on: it increfs and decrefs tuples of arrays) compiled afresh with the reference
    counting that skips the members holding no reference gives the same final LLVM IR, but for unique names
    and metadata numbers, as numba's own; the skipped members never reach LLVM (fewer extractions lowered)."""
    from llvmlite.ir import builder as ir_builder
    from numba.core.runtime import context

    held = context.NRTContext.get_meminfos
    kernel, signature = _settle_typed()
    extractions: list[int] = []

    def compiled(get_meminfos) -> str:  # noqa: ANN001 - numba's method
        monkeypatch.setattr(context.NRTContext, "get_meminfos", get_meminfos)
        real = ir_builder.IRBuilder.extract_value
        count = [0]

        def counted(self, *args, **kwargs):  # noqa: ANN001, ANN002, ANN003, ANN202 - llvmlite's method
            count[0] += 1
            return real(self, *args, **kwargs)

        monkeypatch.setattr(ir_builder.IRBuilder, "extract_value", counted)
        try:
            return _final_ir(_compiled_afresh(kernel, signature).library.get_llvm_str())
        finally:
            monkeypatch.setattr(ir_builder.IRBuilder, "extract_value", real)
            extractions.append(count[0])

    ours, numbas = compiled(held), compiled(held.numba_get_meminfos)
    assert "_settle_part" in ours and ours == numbas
    assert extractions[0] < extractions[1] / 2


def _ssa_dump(blocks: dict) -> str:  # noqa: ANN001
    import io

    from numba.core import ir

    out = io.StringIO()
    for label, block in sorted(blocks.items()):
        assert isinstance(block, ir.Block)
        print(f"label {label}:", file=out)
        block.dump(file=out)
    return out.getvalue()


def test_ssa_rewritten_where_each_variable_is_gives_numbas_ir():
    """SSA reconstruction that rewrites, for each variable assigned more than once, only the blocks naming it
    gives numba's IR statement for statement (the same fresh names, phi nodes and their incoming values) on
    kernels with loops, early exits and branches, and every block of the result is a new object, as numba's."""
    import copy

    from numba.core import compiler, ssa

    from culling.core import members
    from culling.tree import batch, walk

    ours = ssa._run_ssa
    assert getattr(ours, "culling_once", False)
    for kernel in (batch._settle_part, walk._group_visits_from, members.answer, _branchy_py):
        func = getattr(kernel, "py_func", kernel)
        func_ir = compiler.run_frontend(func)
        mine, theirs = copy.deepcopy(func_ir.blocks), copy.deepcopy(func_ir.blocks)
        originals = set(map(id, mine.values()))
        got, expected = ours(mine), ours.numba_run_ssa(theirs)
        assert list(got) == list(expected)
        assert _ssa_dump(got) == _ssa_dump(expected), func.__name__
        assert not originals & set(map(id, got.values()))
        assert "phi" in _ssa_dump(got) or func is _branchy_py


def test_a_kernels_ir_is_the_same_with_ssa_rewritten_where_each_variable_is(monkeypatch):
    """The settle's kernel compiled afresh with the SSA patch (its inlined helpers' IR too) gives the same
    final LLVM IR as with numba's own reconstruction, and the patch visits fewer statements."""
    from numba.core import ssa

    ours = ssa._run_ssa
    kernel, signature = _settle_typed()
    visits: list[int] = []

    def compiled(run_ssa) -> str:  # noqa: ANN001 - numba's function
        monkeypatch.setattr(ssa, "_run_ssa", run_ssa)
        real = ssa._run_ssa_block_pass
        count = [0]

        def counted(states, blk, handler):  # noqa: ANN001, ANN202 - numba's function
            count[0] += len(blk.body)
            return real(states, blk, handler)

        monkeypatch.setattr(ssa, "_run_ssa_block_pass", counted)
        try:
            return _final_ir(_compiled_afresh(kernel, signature).library.get_llvm_str())
        finally:
            monkeypatch.setattr(ssa, "_run_ssa_block_pass", real)
            visits.append(count[0])

    mine, numbas = compiled(ours), compiled(ours.numba_run_ssa)
    assert "_settle_part" in mine and mine == numbas
    assert visits[0] < visits[1] / 2


def test_a_helpers_copy_shares_its_source_locations_and_the_ir_is_the_same(monkeypatch):
    """The copy of a library helper at each call site hands numba's source locations over as they are
    (values nothing changes); ``copy.deepcopy`` copies them again outside it; and the settle's kernel compiled
    afresh gives the same final LLVM IR as with every location deep-copied."""
    import contextlib
    import copy

    from numba.core import ir

    loc = ir.Loc("f.py", 3, 4)
    with numba_patches.locations_shared():
        assert copy.deepcopy(loc) is loc and copy.deepcopy([loc])[0] is loc
    assert copy.deepcopy(loc) is not loc and copy.deepcopy(loc) == loc
    kernel, signature = _settle_typed()

    def compiled(shared) -> str:  # noqa: ANN001
        monkeypatch.setattr(numba_patches, "locations_shared", shared)
        return _final_ir(_compiled_afresh(kernel, signature).library.get_llvm_str())

    ours, copied = compiled(numba_patches.locations_shared), compiled(contextlib.nullcontext)
    assert "_settle_part" in ours and ours == copied


def _array_expression_py(a, b):
    return a + b * 2.0


def _rewrites_counted(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The functions numba's rewrites after typing run on (its registry's ``apply``, which only its pass calls)."""
    from numba.core.rewrites import registry

    runs: list[str] = []
    apply = registry.RewriteRegistry.apply

    def counted(self, kind, state):  # noqa: ANN001, ANN202 - numba's method
        if kind == "after-inference":
            runs.append(state.func_id.func_qualname)
        return apply(self, kind, state)

    monkeypatch.setattr(registry.RewriteRegistry, "apply", counted)
    return runs


def test_a_kernel_with_nothing_to_rewrite_skips_the_rewrites_and_its_ir_is_the_same(monkeypatch):
    """numba's rewrites after typing (array expressions, ``np.array`` of a constant list, string-literal item
    access) match in no library kernel: the settle's kernel skips the pass (numba's rewrites never run for it)
    and lowers to the same final LLVM IR, but for unique names and metadata numbers, as with numba's pass."""
    from numba.core import typed_passes

    ours = typed_passes.NopythonRewrites.run_pass
    assert getattr(ours, "culling_once", False)
    kernel, signature = _settle_typed()
    runs = _rewrites_counted(monkeypatch)

    def compiled(run_pass) -> str:  # noqa: ANN001 - numba's method
        monkeypatch.setattr(typed_passes.NopythonRewrites, "run_pass", run_pass)
        return _final_ir(_compiled_afresh(kernel, signature).library.get_llvm_str())

    skipped = compiled(ours)
    assert "_settle_part" not in runs  # numba's rewrites never ran for the kernel
    assert "_settle_part" in skipped and skipped == compiled(ours.numba_run_pass)
    assert "_settle_part" in runs


def test_a_kernel_with_an_array_expression_is_still_rewritten(monkeypatch):
    """A library kernel with something to rewrite (``a + b * 2.0`` on arrays: one loop, not two temporaries)
    goes through numba's rewrites, and a user's function always does."""
    import numpy as np

    runs = _rewrites_counted(monkeypatch)
    a, b = np.arange(4.0), np.ones(4)
    monkeypatch.setattr(numba_patches, "KERNEL_FUNCTIONS", {*numba_patches.KERNEL_FUNCTIONS, _array_expression_py})
    kernel_like = numba.njit(_array_expression_py)
    assert np.array_equal(kernel_like(a, b), a + 2.0)
    assert runs[0] == "_array_expression_py"  # then the loop it made, numba's function
    assert "__numba_array_expr" in kernel_like.inspect_llvm(kernel_like.signatures[0])  # the rewrite's one loop

    def users(x: float) -> float:
        return x * 2.0 + 1.0

    assert numba.njit(users)(2.0) == 5.0
    assert runs[-1].endswith("<locals>.users")
