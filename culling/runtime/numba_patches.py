"""Patches to numba's compiler that make it compile the library's kernels faster, and nothing else different.

A cold compile of every kernel is most of a first run from a checkout
(issue 37).  numba spends much of it on work it throws away: it reads an
inlined helper's bytecode into IR again at every call site, deep-copies that
IR twice per site (block by block, the helper's whole scope with each
block), builds a dict of some fifty compiler flags through properties about
240,000 times to key its overload lookups (and hashes and compares them
through it), lists each IR statement's variables through an ``isinstance``
chain per attribute millions of times, computes every block's live variables
after each pass for object-mode lowering alone, computes where every
variable dies (to write ``del`` statements into the IR and strip them again)
for rewrites after typing that find nothing to rewrite in any kernel, types the same call of an
operator or a NumPy function with the same argument types again at every
call site, compiles a C callback wrapper
for every ``@overload`` implementation that nothing can call, searches a
ufunc's loops again for every operator it types, asks LLVM for the host
CPU's name at every cache key, has LLVM parse a module to size a type each
time it lowers an allocation of it, writes a temporary file into a cache
folder to see that it is writable for every kernel kept there, imports
``numpy.ma`` (20-30 ms) the first time it types an array to see that it is
not a masked one, broadcasts an event around every call into
LLVM while it loads a cached kernel (for a timing it then throws away),
and copies the whole LLVM
module of every kernel a kernel calls into the caller to optimise and
compile it again there, runs LLVM's function passes over each kernel's
CPython wrapper twice, and a cheap round of module passes over each kernel
before the full round that does the same and more, and extracts every member of each value whose
references it counts (an array's shape and strides, each array of a tuple) to find the few that
hold one, and rewrites every block of a function once for each variable its SSA pass renames.  Each patch here does the same work once (or skips what is thrown away); the LLVM
IR of every kernel is unchanged but for symbol names (and the form of the
wrappers' code; without the cheap round, four walks have one to three
instructions fewer)
(tests/culling/runtime/test_inlining.py), except that a called library
kernel too large for LLVM to inline is declared in its caller, not copied
(tests/culling/runtime/test_callees_by_symbol.py): the same machine code,
reached by a call as before.  Together with the front end read once the
first patches took a cold compile of every kernel from about 67 to about
50 CPU s (docs/PERFORMANCE.md, "Measured design choices").

They reach into numba's internals, so each checks that the numba it finds
has what it replaces, and leaves a numba without it as it is.  The two
inliner patches touch only the library's own helpers (:data:`INLINED`), and
the linking by symbol only the library's kernels called from its kernels, the
single round of function passes only the library's kernels' CPython wrappers; the
flag values, the IR's variable lists, the overloads' wrappers and the ufunc loops
are process-wide, as
numba's own behaviour is: ``CULLING_NUMBA_PATCHES=0`` in the environment turns every
patch off (the kernels then compile as numba compiles them, slower).
"""

from __future__ import annotations

import collections
import contextlib
import copy
import importlib
import os
import sys
import threading
from collections.abc import Callable, Iterator
from typing import Any

__all__ = ["CALLEES_BY_SYMBOL", "INLINED", "KERNEL_FUNCTIONS", "OLDEST_NUMBA", "PATCHES_ENV", "apply", "callees_by_symbol",
           "linked_by_symbol", "loading_kernel", "locations_shared", "numba_version", "with_callees_loaded"]

#: ``CULLING_NUMBA_PATCHES=0``: numba is left exactly as it is.
PATCHES_ENV = "CULLING_NUMBA_PATCHES"

#: The oldest numba the patches were written and tested against (pyproject.toml requires it too).  Below
#: it numba is left as it is: numba 0.59 to 0.62 have the names the per-patch checks look for, with other
#: shapes behind them (``_reload_init``, the module pass manager's return), and every compile failed.
OLDEST_NUMBA = (0, 63)


def numba_version() -> tuple[int, int]:
    """The installed numba's (major, minor)."""
    import numba

    major, minor = numba.__version__.split(".")[:2]
    return int(major), int("".join(ch for ch in minor if ch.isdigit()) or 0)


def apply() -> None:
    """Patch numba (once per process; a second call does nothing), unless :data:`PATCHES_ENV` is ``0`` or
    numba is older than :data:`OLDEST_NUMBA`."""
    if os.environ.get(PATCHES_ENV, "1").strip() == "0" or numba_version() < OLDEST_NUMBA:
        return
    _front_end_once()
    _quick_flag_values()
    _quick_list_vars()
    _lifetimes_on_demand()
    _rewrites_where_one_can_match()
    _call_types_once()
    _overloads_without_cfunc()
    _callees_by_symbol()
    _ufunc_loops_once()
    _wrappers_optimised_once()
    _one_round_of_module_passes()
    _host_cpu_name_once()
    _llvm_lock_events_outside_loads()
    _type_sizes_once()
    _cache_folders_probed_once()
    _arrays_typed_without_numpy_ma()
    _references_counted_where_held()
    _ssa_per_variable_where_it_is()


#: The Python functions of the library's inlined helpers (``jit.inline_kernel`` adds each).
INLINED: set[Callable[..., Any]] = set()

#: The Python functions of the library's kernels (``jit.kernel`` adds each).
KERNEL_FUNCTIONS: set[Callable[..., Any]] = set()


def _unpatched(module: str, owner: str | None, name: str, mark: str) -> tuple[Any, Any] | None:
    """numba's ``module.owner`` (the module itself where ``owner`` is None) and its attribute ``name``, where this
    numba has both and the patch marked ``mark`` is not in place yet; else None, and the patch is skipped."""
    try:
        holder: Any = importlib.import_module(module)
    except ImportError:
        return None
    if owner is not None:
        holder = getattr(holder, owner, None)
    real = getattr(holder, name, None)
    if real is None or getattr(real, mark, False):
        return None
    return holder, real


def _patch(holder: Any, name: str, replacement: Any, mark: str) -> None:
    """Put ``replacement`` in place of numba's ``holder.name``, marked ``mark`` so that a second :func:`apply`
    leaves it as it is."""
    setattr(replacement, mark, True)
    setattr(holder, name, replacement)


def _front_end_once() -> None:
    """Make numba read each :func:`inline_kernel` helper's bytecode into its IR once per process, not at
    every call site it is inlined into.

    numba inlines an ``inline="always"`` function by running its whole
    untyped front end (bytecode analysis, IR, rewrites, and the inlining of
    the helpers it calls in turn) again for every call site, and then
    copying the result; a helper called from many kernels, or from a helper
    that is itself inlined at many sites, was read dozens of times (292 reads
    of 82 helpers in a full warm-up).  Here the IR made at the first site is
    kept, and every site gets a copy of it with a new identity (the names of
    the inlined variables stay distinct, as before); numba's inliner copies
    it again before it changes anything.  Only the library's own helpers,
    compiled without ``locals``, are kept: a user's numba code is inlined as
    numba does it.  Reaches into numba's ``InlineWorker``; a numba without it
    is left as it is.
    """
    found = _unpatched("numba.core.inline_closurecall", "InlineWorker", "run_untyped_passes", "culling_once")
    if found is None:
        return
    worker, read = found
    made: dict[tuple[Any, ...], Any] = {}

    def run_untyped_passes(self: Any, func: Any, enable_ssa: bool = False) -> Any:
        if func not in INLINED or getattr(self, "locals", None):
            return read(self, func, enable_ssa)
        key = (func, bool(enable_ssa), getattr(self, "_compiler_pipeline", None))
        ir = made.get(key)  # numba compiles under its compiler lock: one thread at a time here
        if ir is None:
            ir = made[key] = read(self, func, enable_ssa)
        else:
            self.flags.enable_ssa = enable_ssa  # what numba's front end sets on the caller's flags
        copy = ir.copy()
        copy.func_id = ir.func_id.derive()
        copy._definitions = {name: list(values) for name, values in ir._definitions.items()}
        return copy

    _patch(worker, "run_untyped_passes", run_untyped_passes, "culling_once")
    _copy_once(worker)


@contextlib.contextmanager
def locations_shared() -> Iterator[None]:
    """``copy.deepcopy`` hands numba's source locations (``ir.Loc``) over as they are, not copied: values
    nothing changes once made (a new line makes a new one), and about a quarter of what a helper's copy
    at each call site took (0.97 -> 0.73 CPU s of a cold compile's inlining).  Only while ``with`` runs."""
    from numba.core import ir

    dispatch: dict[Any, Any] = getattr(copy, "_deepcopy_dispatch")  # noqa: B009 - the module's private table
    had = dispatch.get(ir.Loc)
    dispatch[ir.Loc] = _as_it_is
    try:
        yield
    finally:
        if had is None:
            dispatch.pop(ir.Loc, None)
        else:
            dispatch[ir.Loc] = had


def _as_it_is(value: Any, memo: Any) -> Any:
    return value


def _copy_once(worker: Any) -> None:
    """Make numba's inliner copy a library helper's IR once per call site, as one whole, not twice block by block.

    numba's ``InlineWorker.inline_ir`` deep-copies the callee's IR twice at
    every site (the second copy, "an unmutated copy to return", is dropped by
    both of numba's callers), and copies each block with its own memo, so the
    helper's scope (every variable of the helper, with its location) is
    copied again for every block: a helper of a hundred blocks copied its
    scope two hundred times at each of its sites.  Those copies were most of
    the untyped inliner's time, about a fifth of a cold compile.  Here a
    library helper's IR (:data:`INLINED`, on the untyped path that
    :func:`_front_end_once` feeds) is copied once, all its blocks with one
    memo, so the copy's blocks share one scope as the helper's IR does; the
    rest is numba's ``inline_ir`` step for step, and it returns the helper's
    IR it was given as the unmutated one.  Any other inlining (a user's
    function, numba's typed overload inlining) is numba's own.  Reaches into
    numba's ``inline_closurecall``; a numba whose ``inline_ir`` is not the one
    this copies (no ``copy_ir`` in it) is left as it is.
    """
    import copy as _copymod

    icc: Any = importlib.import_module("numba.core.inline_closurecall")

    numba_inline_ir: Any = getattr(worker, "inline_ir", None)
    needed = ("add_offset_to_labels", "simplify_CFG", "ir_utils", "_get_all_scopes", "_created_inlined_var_name",
              "replace_vars", "_get_callee_args", "_replace_args_with", "next_label", "find_topo_order",
              "_replace_returns", "_add_definitions", "ir")
    if (numba_inline_ir is None or getattr(numba_inline_ir, "culling_once", False)
            or "copy_ir" not in getattr(getattr(numba_inline_ir, "__code__", None), "co_varnames", ())
            or not all(hasattr(icc, name) for name in needed)):
        return

    def inline_ir(self: Any, caller_ir: Any, block: Any, i: int, callee_ir: Any, callee_freevars: Any,
                  arg_typs: Any = None) -> Any:
        if (getattr(callee_ir.func_id, "func", None) not in INLINED or arg_typs is not None
                or getattr(self, "_permit_update_type_and_call_maps", True)):
            return numba_inline_ir(self, caller_ir, block, i, callee_ir, callee_freevars, arg_typs)
        template = callee_ir
        memo: dict[int, Any] = {}
        callee_ir = template.copy()
        with locations_shared():
            callee_ir.blocks = {label: _copymod.deepcopy(b, memo) for label, b in template.blocks.items()}
        if self.validator is not None:
            self.validator(callee_ir)
        scope = block.scope
        instr = block.body[i]
        call_expr = instr.value
        # 1. relabel the helper's blocks after the caller's
        max_label = max(icc.ir_utils._the_max_label.next(), max(caller_ir.blocks.keys()))
        callee_blocks = icc.simplify_CFG(icc.add_offset_to_labels(callee_ir.blocks, max_label + 1))
        callee_ir.blocks = callee_blocks
        min_label, max_label = min(callee_blocks.keys()), max(callee_blocks.keys())
        icc.ir_utils._the_max_label.update(max_label)
        # 2. rename the helper's variables into new variables of the caller
        callee_scopes = icc._get_all_scopes(callee_blocks)
        assert len(callee_scopes) == 1  # noqa: S101 - numba's own check, kept as it is
        callee_scope = callee_scopes[0]
        var_dict = {}
        for var in tuple(callee_scope.localvars._con.values()):
            if var.name not in callee_freevars:
                inlined_name = icc._created_inlined_var_name(callee_ir.func_id.unique_name, var.name)
                new_var = scope.redefine(inlined_name, loc=var.loc)
                callee_scope.redefine(inlined_name, loc=var.loc)
                var_dict[var.name] = new_var
        icc.replace_vars(callee_blocks, var_dict)
        # 3. the formal parameters become the call's arguments
        args = icc._get_callee_args(call_expr, callee_ir.func_id.func, block.body[i].loc, caller_ir)
        icc._replace_args_with(callee_blocks, args)
        # 5. split the caller's block at the call
        new_blocks = []
        new_block = icc.ir.Block(scope, block.loc)
        new_block.body = block.body[i + 1:]
        new_label = icc.next_label()
        caller_ir.blocks[new_label] = new_block
        new_blocks.append((new_label, new_block))
        block.body = block.body[:i]
        block.body.append(icc.ir.Jump(min_label, instr.loc))
        # 6. each return becomes an assignment to the call's target
        topo_order = icc.find_topo_order(callee_blocks)
        icc._replace_returns(callee_blocks, instr.target, new_label)
        if instr.target.name in caller_ir._definitions and call_expr in caller_ir._definitions[instr.target.name]:
            caller_ir._definitions[instr.target.name].remove(call_expr)
        # 7. the helper's blocks join the caller's, with their definitions
        for label in topo_order:
            added = callee_blocks[label]
            added.scope = scope
            icc._add_definitions(caller_ir, added)
            caller_ir.blocks[label] = added
            new_blocks.append((label, added))
        return template, callee_blocks, var_dict, new_blocks

    inline_ir.culling_once = True  # type: ignore[attr-defined]
    inline_ir.numba_inline_ir = numba_inline_ir  # type: ignore[attr-defined]
    worker.inline_ir = inline_ir




def _quick_flag_values() -> None:
    """Make numba's compiler flags (``TargetConfig.values``) read their values without a property call each.

    numba keys its cache of every overload's implementation by the compiler
    flags in force, so each call it types hashes the flags (and compares them
    on a hit): ``values()`` builds a dict of some fifty options through their
    properties, about 240,000 times in a full warm-up.  Here it reads the
    same values (the option set, else its default) straight from the flags'
    own dict: the same dict, built in a fraction of the time.  Their hash
    (numba's is that of the sorted option names, the same for all flags of a
    class) is kept per class, and two flags that set the same options alike
    are equal without building either dict (any other pair is compared as
    numba compares it): 0.5 CPU s of a cold compile of every kernel.  Only a
    class whose options are all numba's generated properties is read so; any
    other keeps numba's methods.  Reaches into numba's ``targetconfig``; a
    numba without it is left as it is.
    """
    found = _unpatched("numba.core.targetconfig", "TargetConfig", "values", "culling_quick")
    if found is None:
        return
    config, real = found
    plain: dict[type, tuple[tuple[str, Any], ...] | None] = {}

    def defaults(cls: type) -> tuple[tuple[str, Any], ...] | None:
        found = plain.get(cls, False)
        if found is not False:
            return found  # type: ignore[return-value]
        pairs: tuple[tuple[str, Any], ...] | None = None
        try:
            options = cls.options  # type: ignore[attr-defined]
            getters = [getattr(getattr(cls, name, None), "fget", None) for name in options]
            if all(getattr(g, "__qualname__", "").endswith("make_prop.<locals>.getter") for g in getters):
                pairs = tuple((name, option.default) for name, option in options.items())
        except Exception:  # noqa: BLE001 - an unexpected option class: numba's values()
            pairs = None
        plain[cls] = pairs
        return pairs

    def values(self: Any) -> dict[str, Any]:
        pairs = defaults(type(self))
        if pairs is None:
            return dict(real(self))
        own = self._values
        return {name: own.get(name, default) for name, default in pairs}

    _patch(config, "values", values, "culling_quick")
    real_hash, real_eq = config.__hash__, config.__eq__
    hashes: dict[type, int] = {}

    def __hash__(self: Any) -> int:  # numba's: the hash of the sorted option names (a dict sorts as its keys)
        cls = type(self)
        found = hashes.get(cls)
        if found is None:
            pairs = defaults(cls)
            if pairs is None:
                return int(real_hash(self))
            found = hashes[cls] = hash(tuple(sorted(name for name, _ in pairs)))
        return found

    def __eq__(self: Any, other: Any) -> Any:  # flags that set the same options alike hold the same values
        if type(other) is type(self) and defaults(type(self)) is not None and self._values == other._values:
            return True
        return real_eq(self, other)

    __hash__.culling_quick = True  # type: ignore[attr-defined]
    config.__hash__ = __hash__
    config.__eq__ = __eq__




def _overloads_without_cfunc() -> None:
    """Compile numba's ``@overload`` implementations (``np.empty``, ``max``, ...) without a C callback wrapper.

    numba compiles the implementation of each overloaded function a kernel
    calls as a function of its own, without a CPython wrapper (it is only
    called from compiled code) but with a C callback (``cfunc``) wrapper,
    which nothing can reach: lowered, optimised and compiled to machine code
    for every implementation (91 in a full warm-up), then dropped from every
    kernel it is linked into.  Here they are compiled without it, as
    ``no_cfunc_wrapper=True`` in the overload's own jit options would; an
    overload whose options say otherwise keeps them.  Reaches into numba's
    overload templates; a numba without them is left as it is.
    """
    found = _unpatched("numba.core.typing.templates", "_OverloadFunctionTemplate", "_get_jit_decorator",
                       "culling_no_cfunc")
    if found is None:
        return
    template, real = found

    def get_jit_decorator(self: Any) -> Any:
        jitter = real(self)

        def without_cfunc(*args: Any, **options: Any) -> Any:
            options.setdefault("no_cfunc_wrapper", True)
            return jitter(*args, **options)

        return without_cfunc

    _patch(template, "_get_jit_decorator", get_jit_decorator, "culling_no_cfunc")




#: The stamp's mark of a kernel compiled with its called kernels linked by symbol
#: (:func:`callees_by_symbol`): a process without the patch compiles it again instead of loading it.
CALLEES_BY_SYMBOL = "callees-by-symbol"

#: The serialised library kind of such a kernel (numba's is ``"object"``): numba without the patch refuses it.
_KIND = "culling-object"

_STATE: dict[str, bool] = {"on": False}
_LOCAL = threading.local()


def callees_by_symbol() -> bool:
    """Whether this process links the library's called kernels by symbol (:func:`_callees_by_symbol` applied)."""
    return _STATE["on"]


def linked_by_symbol(dispatcher: Any) -> Any:
    """Make ``dispatcher`` (a library kernel) linked by symbol into the library kernels that call it, and link
    the library kernels it calls by symbol into its own code (:func:`_callees_by_symbol`); as it is when the
    patch is off.  Its compile sets a per-thread mark that the code library's ``finalize`` reads, and each of
    its compiled (or loaded) signatures tags its code library with where a fresh process finds it again."""
    if not _STATE["on"]:
        return dispatcher
    compile_, add = dispatcher.compile, dispatcher.add_overload
    py_func = dispatcher.py_func

    def compile(sig: Any) -> Any:
        _LOCAL.depth = getattr(_LOCAL, "depth", 0) + 1
        try:
            return compile_(sig)
        finally:
            _LOCAL.depth -= 1

    def add_overload(cres: Any) -> None:
        add(cres)
        if _findable(py_func.__module__, py_func.__qualname__) is dispatcher and not cres.objectmode:
            cres.library.culling_callee = (py_func.__module__, py_func.__qualname__, tuple(cres.signature.args),
                                           cres.fndesc.mangled_name)

    dispatcher.compile = compile
    dispatcher.add_overload = add_overload
    return dispatcher


def _findable(module: str, qualname: str) -> Any:
    """The object ``module.qualname`` names, or None."""
    if "<" in qualname:
        return None
    try:
        found: Any = importlib.import_module(module)
        for part in qualname.split("."):
            found = getattr(found, part)
    except (ImportError, AttributeError):
        return None
    return found


#: A called kernel of at most this many LLVM instructions is linked in as numba links it, so that LLVM
#: may inline it as before: of the called kernels, it inlined the five of 23 to 158 instructions
#: (``bands._cells_of``, ``containment.reach_of``, ``cells.multiply_up``, ``cells.face_sign``,
#: ``pool.release``) and kept every one of 196 or more a call.
INLINABLE = 160


def _inlinable(library: Any, symbol: str) -> bool:
    """Whether the called kernel ``symbol`` of ``library`` is small enough for LLVM to inline (:data:`INLINABLE`)."""
    small = getattr(library, "culling_inlinable", None)
    if small is None:
        count = 0
        try:
            for block in library._get_module_for_linking().get_function(symbol).blocks:
                count += sum(1 for _ in block.instructions)
                if count > INLINABLE:
                    break
        except (NameError, AttributeError):
            count = INLINABLE + 1
        small = library.culling_inlinable = count <= INLINABLE
    return bool(small)


def _load_callees(codegen: Any, callees: tuple[tuple[Any, ...], ...]) -> dict[tuple[Any, ...], Any]:
    """Load (or compile) every kernel in ``callees`` into this process, and make each symbol a loaded caller
    names resolve to it: the kernel's own code, or, where the kernel has another name in this process (it was
    compiled here, not loaded), that name's address added as the caller's symbol."""
    import llvmlite.binding as ll

    engine = codegen._engine
    loaded = {}
    for record in callees:
        module, qualname, args, symbol = record
        dispatcher = _findable(module, qualname)
        if dispatcher is None:
            raise RuntimeError(f"culling: the kernel {module}.{qualname} that a cached kernel calls is gone")
        dispatcher.compile(tuple(args))
        cres = dispatcher.overloads[tuple(args)]
        name = cres.fndesc.mangled_name
        if name != symbol and not engine.is_symbol_defined(symbol):
            ll.add_symbol(symbol, cres.library.get_pointer_to_function(name))
        loaded[record] = cres.library
    return loaded


def with_callees_loaded(codegen: Any, state: Any) -> tuple[Any, dict[tuple[Any, ...], Any] | None]:
    """A kernel's serialized code library as numba's own ``"object"`` state, the kernels it calls by symbol
    loaded (or compiled) first, and those callees' libraries (None for numba's own kinds of state)."""
    name, kind, data = state
    if kind != _KIND:
        return state, None
    object_code, bitcode, records = data
    return (name, "object", (object_code, bitcode)), _load_callees(codegen, records)


def _callees_by_symbol() -> None:
    """Link a library kernel's called kernels into its code by symbol, not by copying their LLVM IR into it.

    numba links the whole LLVM module of every kernel a kernel calls (and
    everything linked into that, in turn) into the caller's module, marked
    ``linkonce_odr``, and then optimises and compiles all of it again as the
    caller's: the kernels' modules held 12.6M characters of their callees' IR
    against 6.8M of their own.  Here a library kernel's call of another library
    kernel (both made by ``culling.runtime.jit.kernel``, :func:`linked_by_symbol`)
    leaves the callee declared in the caller's module; the JIT resolves the
    symbol to the callee's machine code, which is in the process already (a
    callee is compiled or loaded before its caller is lowered).  A callee small
    enough for LLVM to inline (:data:`INLINABLE`) is linked in as before, and
    inlined as before; the others were calls before and stay calls.  A caller
    kept on disk (numba's cache, the shipped kernels) records its callees (module,
    name, signature and symbol) beside its object code, and loading it loads
    (or compiles) them first; where a callee compiled in this process has
    another symbol (numba's names carry a per-process number), the caller's
    symbol is added with the callee's address.  Such an entry's stamp carries
    :data:`CALLEES_BY_SYMBOL`, and its kind is not numba's, so a numba without
    this patch compiles the kernel again rather than loading it.  A user's own
    functions, and a library kernel called from them, are linked as numba links
    them.  Reaches into numba's ``CPUCodeLibrary``; a numba without
    ``finalize``, ``_linking_libraries``, ``serialize_using_object_code`` or
    ``_unserialize`` is left as it is.
    """
    try:
        from numba.core.codegen import CPUCodeLibrary
    except ImportError:
        return
    finalize: Any = getattr(CPUCodeLibrary, "finalize", None)
    serialize: Any = getattr(CPUCodeLibrary, "serialize_using_object_code", None)
    unserialize: Any = getattr(CPUCodeLibrary, "_unserialize", None)
    if (finalize is None or serialize is None or unserialize is None
            or "_linking_libraries" not in getattr(getattr(CPUCodeLibrary.__init__, "__code__", None), "co_names", ())):
        return
    if getattr(finalize, "culling_by_symbol", False):
        _STATE["on"] = True
        return

    def by_symbol(self: Any) -> None:
        callees: dict[Any, Any] = {}  # record -> the callee's code library
        ours = getattr(_LOCAL, "depth", 0) > 0  # a library kernel's own code (not a user's function)
        linked = []
        for library in self._linking_libraries:
            record = getattr(library, "culling_callee", None)
            if not ours or record is None or _inlinable(library, record[3]):
                linked.append(library)
                callees.update(getattr(library, "culling_callees", {}))  # what the linked code calls, this code calls
            else:
                self._reload_init.update(library._reload_init)
                callees[record] = library
        if ours:
            self.culling_callees = callees
        else:  # a user's function: every kernel its linked code calls by symbol is linked in too, as numba links
            seen = set(linked)
            pending = list(callees.values())
            while pending:
                library = pending.pop()
                if library not in seen:
                    seen.add(library)
                    linked.append(library)
                    pending.extend(getattr(library, "culling_callees", {}).values())
        self._linking_libraries = linked
        finalize(self)

    def serialize_by_symbol(self: Any) -> Any:
        state = serialize(self)
        callees = getattr(self, "culling_callees", None)
        if not callees:
            return state
        name, _kind, (object_code, bitcode) = state
        return (name, _KIND, (object_code, bitcode, tuple(callees)))

    real_unserialize = unserialize.__func__

    def unserialize_by_symbol(cls: Any, codegen: Any, state: Any) -> Any:
        state, callees = with_callees_loaded(codegen, state)
        library = real_unserialize(cls, codegen, state)
        if callees is not None:
            library.culling_callees = callees
        return library

    by_symbol.culling_by_symbol = True  # type: ignore[attr-defined]
    CPUCodeLibrary.finalize = by_symbol  # type: ignore[method-assign]
    CPUCodeLibrary.serialize_using_object_code = serialize_by_symbol  # type: ignore[method-assign]
    CPUCodeLibrary._unserialize = classmethod(unserialize_by_symbol)  # type: ignore[method-assign,assignment]
    _STATE["on"] = True



def _ufunc_loops_once() -> None:
    """Make numba's typing look up a ufunc's loop for the same operand types once per process.

    numba types every ufunc call and every arithmetic operator on arrays by
    searching the ufunc's loops for one its operands cast to
    (``ufunc_find_matching_loop``: 18,750 searches for 144 different ufuncs and
    types in the tree's warm-up alone, 0.30 CPU s of it against 0.01 once
    each); the answer depends on the ufunc and the types only, so here each
    ufunc and tuple of types is searched once and the found loop (a tuple that
    numba's typing only reads) handed out again.  Process-wide, as numba's own
    typing caches are.  Reaches into numba's ``npydecl``; a numba without it
    is left as it is.
    """
    target = _unpatched("numba.core.typing.npydecl", None, "ufunc_find_matching_loop", "culling_once")
    if target is None:
        return
    npydecl, real = target
    found: dict[tuple[Any, ...], Any] = {}

    def ufunc_find_matching_loop(ufunc: Any, arg_types: Any) -> Any:
        key = (ufunc, *arg_types)
        try:
            return found[key]
        except KeyError:
            loop = found[key] = real(ufunc, arg_types)
            return loop
        except TypeError:  # an unhashable type: numba's search
            return real(ufunc, arg_types)

    _patch(npydecl, "ufunc_find_matching_loop", ufunc_find_matching_loop, "culling_once")


#: The start of the LLVM name of a library kernel's CPython wrapper (numba mangles it as ``cpython.culling. ...``).
_OWN_WRAPPER = "_ZN7cpython7culling"


def _wrapper_module(ll_module: Any) -> bool:
    """Whether ``ll_module`` defines a library kernel's CPython wrapper."""
    return any(not function.is_declaration and function.name.startswith(_OWN_WRAPPER)
               for function in ll_module.functions)


def _wrappers_optimised_once() -> None:
    """Let LLVM optimise a library kernel's CPython wrapper once, in the kernel's module passes, not first on its own too.

    numba runs LLVM's whole O3 function pipeline over every function of each
    module it lowers, links the modules into the kernel's final module, and
    runs the O3 module pipeline over that, which runs the same function
    simplification again over everything.  A kernel's CPython wrapper (the
    unboxing of its arguments and the call, a module of its own per kernel)
    skips the first round here, while a library kernel compiles: the 49
    kernels of a tree's first frame then have the same final LLVM IR for their
    bodies, but for metadata numbers (their wrappers' code differs in form,
    not in what it does; the exact query, ``query_many`` and the moving frame
    ran as fast).  Every other module keeps numba's two rounds: a kernel's body
    (where leaving the first round out gave different code, and a moving
    frame some 8 % slower), numba's ``@overload`` implementations, a user's
    function.  Reaches into numba's ``CPUCodeLibrary._optimize_functions``; a
    numba without it is left as it is.
    """
    found = _unpatched("numba.core.codegen", "CPUCodeLibrary", "_optimize_functions", "culling_once")
    if found is None:
        return
    library_class, real = found

    def optimize_functions(self: Any, ll_module: Any) -> None:
        if getattr(_LOCAL, "depth", 0) > 0 and _wrapper_module(ll_module):
            ll_module.data_layout = self._codegen._data_layout  # what numba's round sets first
            return
        real(self, ll_module)

    optimize_functions.numba_optimize_functions = real  # type: ignore[attr-defined]
    _patch(library_class, "_optimize_functions", optimize_functions, "culling_once")


def _one_round_of_module_passes() -> None:
    """Let LLVM optimise a library kernel's linked module with the full O3 module passes alone.

    numba runs a "cheap" round over a kernel's linked module first (O0 with
    loop rotation, instcombine and jump threading, and its reference-count
    pruning) "to get as many refops into the same function as possible via
    inlining" before the pruning, then the full O3 round, which ends with the
    same pruning.  A library kernel's callees are linked by symbol or are
    small (:func:`_callees_by_symbol`), and O3 inlines what the cheap round
    would: without that round (0.45 CPU s over a cold compile of every
    kernel) every kernel body's machine code is the same but for the walks
    (``tree.walk``'s three and ``cells.window``: one to three instructions
    fewer) and the form of the CPython wrappers (all 83 kernels compared),
    and the walks ran as fast (the exact query 8.32 against 8.40 us,
    ``query_many`` of 2,000 points 4.77 against 4.68 ms, seven alternated
    processes each, neither side ahead in most).  Only while a library kernel compiles (anything it
    compiles on the way included); a user's function keeps both rounds.
    Reaches into numba's ``CPUCodeLibrary._optimize_final_module``; a numba
    without it, or whose round is not numba 0.68's, is left as it is.
    """
    found = _unpatched("numba.core.codegen", "CPUCodeLibrary", "_optimize_final_module", "culling_once")
    if found is None:
        return
    library_class, real = found
    codegen: Any = importlib.import_module("numba.core.codegen")
    names = set(getattr(getattr(real, "__code__", None), "co_names", ()))
    if not {"_module_pass_manager", "remove_redundant_nrt_refct", "LLVM_REFPRUNE_PASS"} <= names:
        return
    config: Any = importlib.import_module("numba.core.config")

    def optimize_final_module(self: Any) -> None:
        if getattr(_LOCAL, "depth", 0) == 0:
            real(self)
            return
        if not config.LLVM_REFPRUNE_PASS:  # numba prunes here when its pass is off
            self._final_module = codegen.remove_redundant_nrt_refct(self._final_module)
        full, builder = self._codegen._module_pass_manager()
        with self._recorded_timings.record("Module passes (full optimization)", builder):
            full.run(self._final_module, builder)

    optimize_final_module.numba_optimize_final_module = real  # type: ignore[attr-defined]
    _patch(library_class, "_optimize_final_module", optimize_final_module, "culling_once")


def _quick_list_vars() -> None:
    """Make numba list an IR statement's variables without an ``isinstance`` chain per attribute.

    numba's analyses (use-defs, liveness, the SSA passes, the inliner) ask
    every statement for its variables again and again, and ``Inst._rec_list_vars``
    answers by walking the statement's attributes recursively, testing each
    value against ``Var``, ``Inst``, list, tuple and dict in turn: 4.6 million
    calls in a cold compile of every kernel.  Here the common kinds (a variable, a
    location, a string, a number, a list, a tuple, a dict) are told by their
    exact type, and anything else goes through numba's tests in numba's order:
    the same variables in the same order; that compile took 4.5 CPU s less
    (about 49 -> 44.5).  Process-wide, as numba's own behaviour is.  Reaches
    into numba's ``ir``; a numba without it is left as it is.
    """
    found = _unpatched("numba.core.ir", "Inst", "_rec_list_vars", "culling_quick")
    if found is None:
        return
    inst, real = found
    ir: Any = importlib.import_module("numba.core.ir")
    var, base, loc = ir.Var, ir.Inst, getattr(ir, "Loc", None)
    leaves = frozenset(t for t in (loc, str, int, float, bool, type(None)) if t is not None)

    def collect(value: Any, found: list[Any]) -> None:
        kind = type(value)
        if kind is var:
            found.append(value)
            return
        if kind is dict:
            items: Any = value.values()
        elif kind is list or kind is tuple:
            items = value
        elif kind in leaves:
            return
        elif isinstance(value, var):  # numba's order of tests, for any other kind
            found.append(value)
            return
        elif isinstance(value, base):
            found.extend(value.list_vars())
            return
        elif isinstance(value, (list, tuple)):
            items = value
        elif isinstance(value, dict):
            items = value.values()
        else:
            return
        for item in items:
            if type(item) is var:
                found.append(item)
            elif type(item) not in leaves:
                collect(item, found)

    def _rec_list_vars(self: Any, val: Any) -> list[Any]:
        found: list[Any] = []
        collect(val, found)
        return found

    _rec_list_vars.numba_rec_list_vars = real  # type: ignore[attr-defined]
    _patch(inst, "_rec_list_vars", _rec_list_vars, "culling_quick")


def _lifetimes_on_demand() -> None:
    """Make numba's IR post-processing leave a library kernel's variable lifetimes to be computed when asked.

    numba post-processes a function's IR after every pass that changes it (and
    inside a dozen passes): it rebuilds the control flow graph and the
    variables' lifetimes, which its ``VariableLifetime`` computes on demand,
    and then demands them all to compute every block's live variables at entry
    (``block_entry_vars``: liveness to a fix point, then where each variable
    dies), which only object-mode lowering and generators read.  Here a
    library kernel's post-processing (or its inlined helpers') leaves the entry
    variables out, so the lifetimes are computed only where a pass asks for
    them, from the same blocks: the tree's warm-up computed its liveness 650
    times instead of 1,135 (0.36 against 1.08 CPU s), and a cold compile of
    every kernel took 41.3 against 42.4 CPU s.  A library kernel is
    never a generator, never object mode, and uses neither ``literal_unroll``
    nor ``objmode`` (the passes that read lifetimes computed before a later
    change; tests/culling/runtime/test_inlining.py checks the sources), so
    every pass reads what it read before.  Any other function is
    post-processed as numba does it.  Reaches into numba's ``postproc``; a
    numba whose ``PostProcessor.run`` does not do those steps is left as it is.
    """
    found = _unpatched("numba.core.postproc", "PostProcessor", "run", "culling_on_demand")
    if found is None:
        return
    processor, real = found
    postproc: Any = importlib.import_module("numba.core.postproc")
    transforms: Any = importlib.import_module("numba.core.transforms")
    names = set(getattr(getattr(real, "__code__", None), "co_names", ()))
    if (not {"canonicalize_cfg", "VariableLifetime", "compute_live_variables", "block_entry_vars",
             "_insert_var_dels"} <= names or not hasattr(transforms, "canonicalize_cfg")
            or not hasattr(postproc, "VariableLifetime")):
        return

    def run(self: Any, emit_dels: bool = False, extend_lifetimes: bool = False) -> None:
        func_ir = self.func_ir
        func = getattr(func_ir.func_id, "func", None)
        if func_ir.is_generator or (func not in KERNEL_FUNCTIONS and func not in INLINED):
            real(self, emit_dels, extend_lifetimes)
            return
        func_ir.blocks = transforms.canonicalize_cfg(func_ir.blocks)
        func_ir.variable_lifetime = postproc.VariableLifetime(func_ir.blocks)
        func_ir.generator_info = None
        if emit_dels:
            self._insert_var_dels(extend_lifetimes=extend_lifetimes)

    run.numba_run = real  # type: ignore[attr-defined]
    _patch(processor, "run", run, "culling_on_demand")


def _rewrites_where_one_can_match() -> None:
    """Run numba's rewrites after typing over a library kernel only where one of them can match.

    numba's ``NopythonRewrites`` pass writes a ``del`` statement after each
    variable's last use into the whole IR (liveness to a fix point, then every
    block's dead variables), runs the rewrites registered for after typing
    (array expressions into one loop, ``np.array`` of a constant list into
    stores, string-literal item access into static access), strips the
    ``del`` statements and post-processes the IR again: 0.8 CPU s of a cold
    compile of every kernel, for rewrites that match in none of the kernels.
    Here the pass first asks each rewrite whether it can match: the array
    expressions and the string-literal item access by their own ``match`` on
    every block (neither reads ``del`` statements), the constant list by
    looking for the ``build_list`` its match needs.  Where none can, the pass
    changes nothing (the IR stays as typed), which is what the rewrites would
    have left; else it runs as numba runs it.  82 of the 83 kernels skip it
    (the pass took 0.08 CPU s instead of 0.80), and every kernel's final LLVM
    IR is the same, but for unique names and metadata numbers (compared for
    all; with numba's cheap round of module passes still run, the dense grid's
    ``_visits`` had seven reference increments in a row in another order; a
    test compares the settle's, and a kernel with an array expression is
    still rewritten).  Only a library kernel
    (:data:`KERNEL_FUNCTIONS`), and only with numba's own four rewrites
    registered; anything else is rewritten as numba does it.  Reaches into
    numba's ``NopythonRewrites`` and its rewrite registry; a numba without
    them is left as it is.
    """
    found = _unpatched("numba.core.typed_passes", "NopythonRewrites", "run_pass", "culling_once")
    if found is None:
        return
    rewrites_pass, real = found
    ir: Any = importlib.import_module("numba.core.ir")
    registry = getattr(importlib.import_module("numba.core.rewrites.registry"), "rewrite_registry", None)
    static_getitem: Any = importlib.import_module("numba.core.rewrites.static_getitem")
    array_exprs: Any = importlib.import_module("numba.np.ufunc.array_exprs")
    closures: Any = importlib.import_module("numba.core.inline_closurecall")
    matched_alone: tuple[Any, ...] = tuple(getattr(module, name, None) for module, name in (
        (static_getitem, "RewriteStringLiteralGetitems"), (static_getitem, "RewriteStringLiteralSetitems"),
        (array_exprs, "RewriteArrayExprs")))
    constant_lists = getattr(closures, "RewriteArrayOfConsts", None)
    if registry is None or constant_lists is None or None in matched_alone:
        return
    known = {*matched_alone, constant_lists}

    def may_rewrite(state: Any) -> bool:
        registered = registry.rewrites.get("after-inference", ())
        if not set(registered) <= known:  # a rewrite someone else registered: numba's pass decides
            return True
        func_ir, typemap, calltypes = state.func_ir, state.typemap, state.calltypes
        rewrites = [rewrite(state) for rewrite in matched_alone if rewrite in registered]
        for block in func_ir.blocks.values():
            if any(isinstance(stmt, ir.Assign) and isinstance(stmt.value, ir.Expr) and stmt.value.op == "build_list"
                   for stmt in block.body):
                return True  # np.array of a constant list: RewriteArrayOfConsts reads the del statements
            if any(rewrite.match(func_ir, block, typemap, calltypes) for rewrite in rewrites):
                return True
        return False

    def run_pass(self: Any, state: Any) -> bool:
        if getattr(state.func_id, "func", None) in KERNEL_FUNCTIONS and not may_rewrite(state):
            return False  # nothing to rewrite: the IR is left as typed
        return bool(real(self, state))

    run_pass.numba_run_pass = real  # type: ignore[attr-defined]
    _patch(rewrites_pass, "run_pass", run_pass, "culling_once")


def _call_types_once() -> None:
    """Make numba type a call of a function (an operator, a builtin, a NumPy function) once per argument types
    in a library kernel's compile, not at every call site.

    numba types each call by trying the function's templates in order of
    target specificity, each with and without literal arguments: 25,000
    calls in a cold compile of every kernel, 700 of them different.  Here,
    while a library kernel compiles (the per-thread mark of
    :func:`linked_by_symbol`), each answer is kept, keyed by the function
    type, the typing context and target, the argument types and the compiler
    flags in force, and a call that finds it gets the same signature and puts
    back the implementation key the typing left, as a typing would.  A failed
    typing is not kept (the caller's next try types again).  Every kernel's
    final LLVM IR is the same either way (82 compared, but for unique names;
    tests compare two), and a cold compile of every kernel took 37.7 against
    40.7 CPU s (medians, three alternated rounds).  Only a plain
    ``types.Function`` is kept: a call of a kernel or a method types as numba
    types it, and so does a user's function.  Reaches into numba's function
    types; a numba without them is left as it is.
    """
    found = _unpatched("numba.core.types.functions", "BaseFunction", "get_call_type", "culling_once")
    if found is None:
        return
    base, real = found
    functions: Any = importlib.import_module("numba.core.types.functions")
    targetconfig: Any = importlib.import_module("numba.core.targetconfig")
    target_extension: Any = importlib.import_module("numba.core.target_extension")
    plain = getattr(functions, "Function", None)
    stack = getattr(targetconfig, "ConfigStack", None)
    local_target = getattr(target_extension, "get_local_target", None)
    if plain is None or stack is None or local_target is None:
        return
    typed: dict[tuple[Any, ...], tuple[Any, Any]] = {}

    def option(value: Any) -> Any:
        flags = getattr(value, "flags", None)  # numba's fastmath option: a set inside
        return ("flags", frozenset(flags)) if isinstance(flags, (set, frozenset)) else value

    def get_call_type(self: Any, context: Any, args: Any, kws: Any) -> Any:
        if type(self) is not plain or getattr(_LOCAL, "depth", 0) == 0:
            return real(self, context, args, kws)
        flags = stack.top_or_none()
        try:
            key = (self, id(context), local_target(context), tuple(args), tuple(kws.items()) if kws else (),
                   None if flags is None else frozenset((k, option(v)) for k, v in flags._values.items()),
                   id(self.templates), len(self.templates))
            found = typed.get(key)
        except TypeError:  # an argument or a flag that cannot be a key: typed as numba types it
            return real(self, context, args, kws)
        if found is not None:
            signature, impl_key = found
            self._impl_keys[signature.args] = impl_key  # what the typing leaves for the lowering
            return signature
        signature = real(self, context, args, kws)
        typed[key] = (signature, self._impl_keys[signature.args])
        return signature

    get_call_type.numba_get_call_type = real  # type: ignore[attr-defined]
    get_call_type.kept = typed  # type: ignore[attr-defined]
    _patch(base, "get_call_type", get_call_type, "culling_once")


def _host_cpu_name_once() -> None:
    """Make numba ask LLVM for the host CPU's name once per process, not at every cache key.

    numba's cache keys a kernel by its code generator's ``magic_tuple()``,
    which asks LLVM for the host CPU's name each time (about 0.1 ms a call
    here), and a kernel's load computes two keys (its own cache's, the
    shipped kernels'): 65 calls, 6 ms, of a warm first frame's 32 kernel
    loads.  The host does not change while the process runs; ``NUMBA_CPU_NAME``
    (numba's ``config.CPU_NAME``) still decides where it is set.  Reaches
    into numba's ``CPUCodegen``; a numba without it is left as it is.
    """
    target = _unpatched("numba.core.codegen", "CPUCodegen", "_get_host_cpu_name", "culling_once")
    if target is None:
        return
    codegen_class, real = target
    config: Any = importlib.import_module("numba.core.config")
    host: list[str] = []

    def _get_host_cpu_name(self: Any) -> Any:
        if config.CPU_NAME is not None:
            return real(self)
        if not host:
            host.append(real(self))
        return host[0]

    _patch(codegen_class, "_get_host_cpu_name", _get_host_cpu_name, "culling_once")


def _type_sizes_once() -> None:
    """Make numba size each LLVM type once per code generator's context, not at every allocation it lowers.

    ``BaseContext.get_abi_sizeof`` asks llvmlite, which prints a module holding
    a global of the type and has LLVM parse it to find the type's size: 4,219
    times in a cold compile of every kernel, for 42 different types, 0.36 CPU
    s.  A type's size is a function of its text and the context's data layout,
    so it is kept per context and per type text; a type naming an identified
    struct (``%"name"``, whose body its text does not show) is sized as numba
    sizes it.  Process-wide, as numba's own behaviour is.  Reaches into
    numba's ``BaseContext``; a numba without it is left as it is.
    """
    target = _unpatched("numba.core.base", "BaseContext", "get_abi_sizeof", "culling_once")
    if target is None:
        return
    context_class, real = target

    def get_abi_sizeof(self: Any, ty: Any) -> Any:
        text = str(ty)
        if "%" in text:
            return real(self, ty)
        sizes = self.__dict__.get("_culling_abi_sizes")
        if sizes is None:
            sizes = self.__dict__.setdefault("_culling_abi_sizes", {})
        size = sizes.get(text)
        if size is None:
            size = sizes[text] = real(self, ty)
        return size

    _patch(context_class, "get_abi_sizeof", get_abi_sizeof, "culling_once")


def _cache_folders_probed_once() -> None:
    """Make numba probe a cache folder for writing once per process, not once per cached function in it.

    Each cached dispatcher's cache, made at ``import culling``, asks its
    locator to ensure the cache folder: numba creates the folder and writes
    and deletes a temporary file there to see that it can.  The library's 88
    cached kernels live in five folders, so 88 probes took 4 ms of every
    ``import culling``.  A folder that passed keeps passing for this process;
    later calls still create it again if it has gone (``os.makedirs``), and a
    folder that failed is probed again next time.  Process-wide, as numba's own
    behaviour is.  Reaches into numba's ``_CacheLocator``; a numba without it is
    left as it is.
    """
    target = _unpatched("numba.core.caching", "_CacheLocator", "ensure_cache_path", "culling_once")
    if target is None:
        return
    locator_class, real = target
    writable: set[str] = set()

    def ensure_cache_path(self: Any) -> None:
        path = self.get_cache_path()
        if path in writable:
            os.makedirs(path, exist_ok=True)
            return
        real(self)
        writable.add(path)

    _patch(locator_class, "ensure_cache_path", ensure_cache_path, "culling_once")


def _arrays_typed_without_numpy_ma() -> None:
    """Make numba type an array without importing ``numpy.ma`` when nothing has imported it.

    numba's ``typeof`` of an ndarray first refuses a masked array with
    ``isinstance(val, np.ma.MaskedArray)``, and ``np.ma`` imports NumPy's
    masked arrays on first use: 20-30 ms of a program's first kernel call
    with a tuple of arrays (every call the C dispatcher cannot type itself),
    about a tenth of a warm first frame.  No masked array can exist while
    ``numpy.ma`` is not imported, so the check reads the class only where the
    module is there, and is otherwise numba's ``_typeof_ndarray`` line for
    line.  Process-wide, as numba's own behaviour is.  Reaches into numba's
    ``typeof`` registry; a numba whose ``_typeof_ndarray`` is not there is left
    as it is.
    """
    typeof_module = _unpatched("numba.core.typing.typeof", None, "_typeof_ndarray", "culling_once")
    if typeof_module is None:
        return
    module, real = typeof_module
    import numpy as np

    def _typeof_ndarray(val: Any, c: Any) -> Any:
        masked = getattr(sys.modules.get("numpy.ma"), "MaskedArray", None)
        if masked is not None and isinstance(val, masked):
            raise module.errors.NumbaTypeError("Unsupported array type: numpy.ma.MaskedArray.")
        try:
            dtype = module.numpy_support.from_dtype(val.dtype)
        except module.errors.NumbaNotImplementedError:
            raise module.errors.NumbaValueError(f"Unsupported array dtype: {val.dtype}") from None
        layout = module.numpy_support.map_layout(val)
        readonly = not val.flags.writeable
        return module.types.Array(dtype, val.ndim, layout, readonly=readonly)

    _typeof_ndarray.numba_typeof_ndarray = real  # type: ignore[attr-defined]
    module.typeof_impl.register(np.ndarray)(_typeof_ndarray)
    _patch(module, "_typeof_ndarray", _typeof_ndarray, "culling_once")


def _references_counted_where_held() -> None:
    """Make numba's reference counting extract only the members of a value that can hold a reference.

    To incref or decref a value, numba lists its meminfos (``NRTContext.get_meminfos``): it extracts
    every member of the value into the IR, and every member of those, and keeps the meminfo pointers.
    An array's parent, sizes, data pointer, shape and strides, and the same of every array in a tuple
    of arrays (the library passes its structures as such tuples), are extracted at every incref and
    decref and thrown away again: in a cold compile of every kernel, 72,475 members that hold no
    reference against 13,571 that do, each lowered, written as IR text, parsed by LLVM and deleted
    by its first pass.  Whether a member's type holds a meminfo anywhere within it is a property of
    the type, kept per type, so those members are skipped: the meminfos found are the same, in the
    same order, and every kernel's machine code is the same (all 1,145 functions of a cold warm-up
    compared); about 1.7 of 31 CPU s (docs/PERFORMANCE.md, "Measured design choices").
    Process-wide, as numba's own behaviour is.  Reaches into numba's ``NRTContext``; a numba without
    it is left as it is.
    """
    target = _unpatched("numba.core.runtime.context", "NRTContext", "get_meminfos", "culling_held")
    if target is None:
        return
    context_class, real = target
    holds: dict[Any, bool] = {}

    def held(models: Any, ty: Any) -> bool:
        """Whether a value of type ``ty`` holds a meminfo, itself or in a member (at any depth)."""
        known = holds.get(ty)
        if known is None:
            holds[ty] = True  # while its members are asked (numba compiles under one lock): a cycle holds one
            try:
                model = models[ty]
                known = bool(model.has_nrt_meminfo() or any(held(models, inner) for inner, _ in model.traverse(None)))
            except Exception:  # a model whose members cannot be listed without IR: counted as numba counts it
                known = True
            holds[ty] = known
        return known

    def get_meminfos(self: Any, builder: Any, ty: Any, val: Any) -> list[tuple[Any, Any]]:
        models = self._context.data_model_manager
        model = models[ty]
        meminfos = []
        if model.has_nrt_meminfo():
            meminfos.append((ty, model.get_nrt_meminfo(builder, val)))
        for inner, getter in model.traverse(builder):
            if held(models, inner):
                meminfos.extend(self.get_meminfos(builder, inner, getter(val)))
        return meminfos

    get_meminfos.numba_get_meminfos = real  # type: ignore[attr-defined]
    get_meminfos.holds = holds  # type: ignore[attr-defined]
    _patch(context_class, "get_meminfos", get_meminfos, "culling_held")


def _ssa_per_variable_where_it_is() -> None:
    """Make numba's SSA reconstruction rewrite, for each variable it renames, only the blocks that name it.

    ``numba.core.ssa._run_ssa`` takes the variables assigned more than once one at a time, and for each
    runs two rewrites over every statement of every block (fresh names for its assignments, then each use
    tied to its reaching definition, with phi nodes where paths meet): 1.3M statement visits in a cold
    compile of every kernel, nearly all of them in blocks where the variable does not appear and which
    the rewrite copies unchanged.  Here each block's variables are listed once, and a variable's two
    rewrites visit only the blocks that name it, in numba's order, with numba's own handlers: the same
    fresh names, definitions and phi nodes (a phi goes into a new block object, as numba's rewrite makes
    every block anew; the result's blocks are all new objects, as numba's).  Every kernel's final LLVM
    IR is the same (tests/culling/runtime/test_inlining.py).  Process-wide, as numba's own behaviour is.
    Reaches into ``numba.core.ssa``; a numba without what it uses is left as it is.
    """
    target = _unpatched("numba.core.ssa", None, "_run_ssa", "culling_once")
    if target is None:
        return
    ssa, real = target
    if not all(hasattr(ssa, name) for name in ("_iterated_domfronts", "_find_defs_violators", "_CacheListVars",
                                               "_FreshVarHandler", "_FixSSAVars", "_run_block_rewrite",
                                               "_compute_phi_locations", "compute_cfg_from_blocks")):
        return
    from numba.core import errors, ir

    def rewritten(blocks: dict[Any, Any], labels: list[Any], states: dict[str, Any], handler: Any) -> dict[Any, Any]:
        """``blocks`` with those at ``labels`` (in ``blocks``' order) rewritten by ``handler``, the others kept."""
        states["scope"] = next(iter(blocks.values())).scope  # numba's: the first block's
        done = ssa._run_block_rewrite({label: blocks[label] for label in labels}, states, handler)
        return {label: done.get(label, block) for label, block in blocks.items()}

    def _run_ssa(blocks: dict[Any, Any]) -> dict[Any, Any]:
        if not blocks:
            return {}
        cfg = ssa.compute_cfg_from_blocks(blocks)
        df_plus = ssa._iterated_domfronts(cfg)
        violators = ssa._find_defs_violators(blocks, cfg)
        cache_list_vars = ssa._CacheListVars()
        originals = {label: block for label, block in blocks.items()}
        named = {label: {var.name for stmt in block.body for var in stmt.list_vars()}
                 for label, block in blocks.items()} if violators else {}
        block_class: Any = ir.Block
        for varname in violators:
            labels = [label for label in blocks if varname in named[label]]
            defmap: collections.defaultdict[Any, list[Any]] = collections.defaultdict(list)
            phimap: collections.defaultdict[Any, list[Any]] = collections.defaultdict(list)
            states: dict[str, Any] = {"varname": varname, "defmap": defmap}
            blocks = rewritten(blocks, labels, states, ssa._FreshVarHandler())
            states = {"varname": varname, "defmap": defmap, "phimap": phimap, "cfg": cfg,
                      "phi_locations": ssa._compute_phi_locations(df_plus, defmap)}
            blocks = rewritten(blocks, labels, states, ssa._FixSSAVars(cache_list_vars))
            for label, phis in phimap.items():  # numba prepends them to the block its rewrite made
                block = blocks[label]
                fresh = block_class(scope=block.scope, loc=block.loc)
                fresh.body = phis + block.body
                blocks[label] = fresh
        for label, block in blocks.items():  # every block a new object, as numba's rewrites leave them
            if block is originals[label]:
                fresh = block_class(scope=block.scope, loc=block.loc)
                fresh.body = list(block.body)
                blocks[label] = fresh
        if ssa.compute_cfg_from_blocks(blocks) != cfg:
            raise errors.CompilerError("CFG mutated in SSA pass")
        return blocks

    _run_ssa.numba_run_ssa = real  # type: ignore[attr-defined]
    _patch(ssa, "_run_ssa", _run_ssa, "culling_once")


#: Per thread: how many loads of a library kernel from a cache are under way (:func:`loading_kernel`).
_LOADING = threading.local()


@contextlib.contextmanager
def loading_kernel() -> Iterator[None]:
    """``with loading_kernel():`` around a load of a library kernel from a cache: while it runs, this
    thread's calls into LLVM send no ``numba:llvm_lock`` events (:func:`_llvm_lock_events_outside_loads`)."""
    _LOADING.depth = getattr(_LOADING, "depth", 0) + 1
    try:
        yield
    finally:
        _LOADING.depth -= 1


def _llvm_lock_events_outside_loads() -> None:
    """numba's ``numba:llvm_lock`` events sent for every call into LLVM but those of a library kernel's load.

    numba has llvmlite call it back on every acquire and release of LLVM's lock
    (every call into LLVM) to broadcast a ``numba:llvm_lock`` event, which the
    timers ``Dispatcher.compile`` installs add up into a compile's metadata.  A
    kernel loaded from a cache has no such metadata, so numba throws that sum
    away; a warm first frame's 40 loads make about 1,600 calls into LLVM, and
    their events were 7 ms of its 100 ms of first calls (alternated processes).
    While a thread loads a library kernel (:class:`loading_kernel`) its calls
    send none; every other call into LLVM, a compile's included, sends them as
    before, to numba's timers and to any listener of the program's.  Reaches
    into llvmlite's lock (its list of callbacks); a numba or llvmlite without
    them is left as it is.
    """
    try:
        ffi: Any = importlib.import_module("llvmlite.binding.ffi")
        importlib.import_module("numba.core.base")  # registers numba's callbacks, once per process
    except ImportError:
        return
    callbacks = getattr(getattr(getattr(ffi, "lib", None), "_lock", None), "_cblist", None)
    if not isinstance(callbacks, list):
        return
    numbas = [(acquired, released) for acquired, released in callbacks
              if getattr(acquired, "__module__", "") == "numba.core.base"
              and getattr(acquired, "__qualname__", "").endswith("_initialize_llvm_lock_event.<locals>.enter_fn")]
    if len(numbas) != 1:
        return  # patched already (ours are in the list instead), or a numba that sends these events otherwise
    acquired, released = numbas[0]

    def enter_fn() -> None:
        if not getattr(_LOADING, "depth", 0):
            acquired()

    def exit_fn() -> None:
        if not getattr(_LOADING, "depth", 0):
            released()

    enter_fn.culling_outside_loads = True  # type: ignore[attr-defined]
    ffi.unregister_lock_callback(acquired, released)
    ffi.register_lock_callback(enter_fn, exit_fn)
