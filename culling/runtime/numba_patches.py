"""Patches to numba's compiler that make it compile the library's kernels faster, and nothing else different.

A cold compile of every kernel is most of a first run from a checkout
(issue 37).  numba spends much of it on work it throws away: it reads an
inlined helper's bytecode into IR again at every call site, deep-copies that
IR twice per site (block by block, the helper's whole scope with each
block), builds a dict of some fifty compiler flags through properties about
240,000 times to key its overload lookups, and compiles a C callback wrapper
for every ``@overload`` implementation that nothing can call.  Each patch
here does the same work once; the LLVM IR of every kernel is unchanged but
for symbol names (tests/culling/runtime/test_inlining.py), so the machine
code and its speed are too.  Together with the front end read once they
took a cold compile of every kernel from about 67 to about 50 CPU s
(docs/PERFORMANCE.md, "Measured design choices").

They reach into numba's internals, so each checks that the numba it finds
has what it replaces, and leaves a numba without it as it is.  The two
inliner patches touch only the library's own helpers (:data:`INLINED`); the
flag values and the overloads' wrappers are process-wide, as numba's own
behaviour is: ``CULLING_NUMBA_PATCHES=0`` in the environment turns every
patch off (the kernels then compile as numba compiles them, slower).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

__all__ = ["INLINED", "PATCHES_ENV", "apply"]

#: ``CULLING_NUMBA_PATCHES=0``: numba is left exactly as it is.
PATCHES_ENV = "CULLING_NUMBA_PATCHES"


def apply() -> None:
    """Patch numba (once per process; a second call does nothing), unless :data:`PATCHES_ENV` is ``0``."""
    if os.environ.get(PATCHES_ENV, "1").strip() == "0":
        return
    _front_end_once()
    _quick_flag_values()
    _overloads_without_cfunc()


#: The Python functions of the library's inlined helpers (``jit.inline_kernel`` adds each).
INLINED: set[Callable[..., Any]] = set()


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
    try:
        from numba.core.inline_closurecall import InlineWorker
    except ImportError:
        return
    read: Any = getattr(InlineWorker, "run_untyped_passes", None)
    if read is None or getattr(read, "culling_once", False):
        return
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

    run_untyped_passes.culling_once = True  # type: ignore[attr-defined]
    InlineWorker.run_untyped_passes = run_untyped_passes  # type: ignore[method-assign]
    _copy_once(InlineWorker)


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
    import importlib

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
    own dict: the same dict, built in a fraction of the time.  Only a class
    whose options are all numba's generated properties is read so; any other
    keeps numba's ``values``.  Reaches into numba's ``targetconfig``; a numba
    without it is left as it is.
    """
    try:
        from numba.core.targetconfig import TargetConfig
    except ImportError:
        return
    real: Any = getattr(TargetConfig, "values", None)
    if real is None or getattr(real, "culling_quick", False):
        return
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

    values.culling_quick = True  # type: ignore[attr-defined]
    TargetConfig.values = values  # type: ignore[method-assign]




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
    try:
        from numba.core.typing.templates import _OverloadFunctionTemplate
    except ImportError:
        return
    real: Any = getattr(_OverloadFunctionTemplate, "_get_jit_decorator", None)
    if real is None or getattr(real, "culling_no_cfunc", False):
        return

    def get_jit_decorator(self: Any) -> Any:
        jitter = real(self)

        def without_cfunc(*args: Any, **options: Any) -> Any:
            options.setdefault("no_cfunc_wrapper", True)
            return jitter(*args, **options)

        return without_cfunc

    get_jit_decorator.culling_no_cfunc = True  # type: ignore[attr-defined]
    _OverloadFunctionTemplate._get_jit_decorator = get_jit_decorator  # type: ignore[method-assign]
