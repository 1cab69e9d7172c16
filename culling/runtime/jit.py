"""How the library compiles its hot loops: numba, serial and ``nogil``, cached on disk, one signature each.

Every kernel is compiled lazily on its first call and cached on disk
(``cache=True``), so ``import culling`` compiles nothing and a second process
loads the machine code instead of compiling it again
(:func:`culling.warm_up` compiles them all ahead of use).  When the package
directory is not writable (an installed wheel), numba keeps the cache in a
per-user directory instead (``NUMBA_CACHE_DIR`` overrides both); when no
directory at all can be written (a read-only container, a service user
without a home), the kernels are compiled in memory, in every process, and
one ``RuntimeWarning`` says so.  A built wheel ships its kernels compiled
(:mod:`culling.shipped`): where numba's cache has no entry, or none can be
written, they are loaded instead of compiled.

numba keys a kernel's cached machine code by its own source file only, but
a kernel's code holds the kernels it calls from other files: after an edit
of ``core/members.py``, the tree's query would load its old copy of
``keep_rows`` from the cache, silently.  So every kernel's cache entry is
stamped with its own fingerprint (:mod:`culling.runtime.fingerprint`): a hash
of the source files its code depends on, followed through the kernels,
structs and constants it names.  An edit recompiles the kernels it can
change and no other (the stamp is by content, not by the files' times, so a
``git checkout`` back and forth recompiles nothing either).

A cache entry that cannot be read (a truncated or garbled file) or written
(a full disk) costs a compile in memory and one ``RuntimeWarning`` naming the
cache folder, never an exception: a broken index is replaced by the next save.

Every kernel is serial and releases the GIL (``nogil``): the batch calls run
their chunks on the library's own threads (:mod:`culling.runtime.threads`), and
nothing is compiled with ``parallel=True``, so numba's threading layer
(OpenMP, TBB or workqueue) is never loaded into the user's process.

Callers pass float64 and int64 C-contiguous arrays and Python scalars only,
so each kernel has one signature for all dimensions and shapes: the cold
compile is bounded by the number of kernels, not by the ways of calling them.
``error_model="numpy"`` lets float division give inf/NaN as NumPy does
instead of raising (and keeps the check out of the loops).
"""

from __future__ import annotations

import functools
import gc
import importlib
import os
import pickle
import sys
import threading
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar, cast, overload

import numba
import numpy as np
from numba.core import types as _types
from numba.core.compiler_lock import global_compiler_lock

from culling.runtime.compile_options import INLINED_OPTIONS, KERNEL_OPTIONS, NO_REFCOUNT_OPTIONS
from culling.runtime.fingerprint import kernel_fingerprint, resolved_path
from culling.runtime.interrupts import runs_whole
from culling.runtime.loads import loader
from culling.runtime.numba_patches import (
    CALLEES_BY_SYMBOL,
    INLINED,
    KERNEL_FUNCTIONS,
    callees_by_symbol,
    linked_by_symbol,
)
from culling.runtime.numba_patches import apply as patch_numba

F = TypeVar("F", bound=Callable[..., Any])

__all__ = ["JIT_DISABLED", "KERNELS", "NATIVE_MARK", "PORTABLE_CPU", "SHIPPED_DIR", "SHIPPED_ENV", "SHIPPED_LABEL", "cache_writable",
           "inline_kernel", "kernel", "shipped_loaded"]

#: Every kernel :func:`kernel` made (and every :func:`inline_kernel` that Python
#: calls too), in the order of definition (for :func:`culling.warm_up`'s tests:
#: each must be compiled after it).
KERNELS: list[Any] = []

_cache_ok: bool | None = None


#: The cache troubles already warned about ("read", "write"): one warning each per process.
_WARNED: set[str] = set()


def _warn_cache(kind: str, folder: str, exc: BaseException) -> None:
    if kind in _WARNED:
        return
    _WARNED.add(kind)
    if kind == "read":
        what = ("cannot be read (a damaged cache file), so the kernels it should hold are compiled again "
                "(and saved again where the folder can be written)")
        advice = "nothing to do unless it comes back; then delete the folder"
    else:
        what = "cannot be written, so kernels compiled now are kept in memory only"
        advice = "set NUMBA_CACHE_DIR to a writable folder"
    warnings.warn(f"culling: the numba cache in {folder} {what} ({type(exc).__name__}: {exc}); {advice}",
                  RuntimeWarning, stacklevel=4)


def _fingerprinted(cache: Any, py_func: Callable[..., Any], label: str,
                   load: Callable[[Any, Any], Any] | None = None) -> Any:
    """Stamp ``cache``'s entries with ``(label, kernel_fingerprint(py_func))`` instead of the kernel file's time,
    and make a damaged or unwritable cache compile instead of raising; ``load``: how an entry loads (default
    :func:`culling.runtime.loads.loader`'s).

    The fingerprint is computed on the cache's first use (when every module the
    kernel names is imported), not when the kernel is defined (once per kernel
    and process: :func:`~culling.runtime.fingerprint.kernel_fingerprint` keeps it).  Reaches into
    numba's cache object (``_cache_file._source_stamp``, ``_load_index``).
    """
    cache_file = cache._cache_file
    folder = str(getattr(cache, "_cache_path", "?"))
    stamped = False

    def ensure_stamp() -> None:
        nonlocal stamped
        if not stamped:
            mark = f"+{CALLEES_BY_SYMBOL}" if callees_by_symbol() else ""
            cache_file._source_stamp = (label, kernel_fingerprint(py_func) + mark)
            stamped = True

    read_index = cache_file._load_index

    def load_index() -> Any:
        ensure_stamp()
        try:
            return read_index()
        except Exception as exc:  # noqa: BLE001 - a garbled index: as if empty (the next save replaces it)
            _warn_cache("read", folder, exc)
            return {}

    load, save = load or loader(cache), cache.save_overload

    def load_overload(sig: Any, target_context: Any) -> Any:
        ensure_stamp()
        try:
            return load(sig, target_context)
        except Exception as exc:  # noqa: BLE001 - a truncated or garbled data file: compile instead
            _warn_cache("read", folder, exc)
            return None

    def save_overload(sig: Any, data: Any) -> None:
        ensure_stamp()
        try:
            save(sig, _without_type_annotation(data))
        except Exception as exc:  # noqa: BLE001 - a full disk, a folder gone: the kernel stays in memory
            _warn_cache("write", folder, exc)

    cache_file._load_index = load_index
    cache.load_overload = load_overload
    cache.save_overload = save_overload
    cache.ensure_stamp = ensure_stamp
    return cache


#: What a kernel loaded from a cache shows for ``inspect_types()`` (:func:`_without_type_annotation`).
TYPES_NOT_KEPT = ("culling keeps no type annotation in a kernel's cache entry: to see its types, compile it afresh "
                  "(an empty NUMBA_CACHE_DIR and CULLING_SHIPPED_KERNELS=0) and call inspect_types() then")


def _without_type_annotation(compiled: Any) -> Any:
    """``compiled`` (numba's ``CompileResult``) to keep on disk, with :data:`TYPES_NOT_KEPT` in place of its type
    annotation.

    numba writes a kernel's whole annotated source (each IR statement with its
    types, for ``inspect_types()``) into its cache entry: 1.9 of the 6.3 MB of
    the shipped kernels, formatted at 0.3 CPU s over a cold compile of every
    kernel, and read again at every load.  The kernel compiled in this process
    keeps its annotation; one loaded from a cache shows the note.
    """
    replace = getattr(compiled, "_replace", None)
    if replace is None or not hasattr(compiled, "type_annotation"):
        return compiled
    return replace(type_annotation=TYPES_NOT_KEPT)


def _stamp_with_sources(compiled: Any) -> Any:
    """Give ``compiled``'s disk cache the per-kernel source stamp (:func:`_fingerprinted`). A numba without
    these internals keeps its own per-file stamp."""
    cache: Any = getattr(compiled, "_cache", None)
    if hasattr(getattr(cache, "_cache_file", None), "_source_stamp"):
        _fingerprinted(cache, compiled.py_func, "source")
    return compiled


#: Where a built wheel keeps the kernels compiled for it (:mod:`culling.shipped`), and the switch
#: that ignores them (``CULLING_SHIPPED_KERNELS=0``: compile as if they were not there).
SHIPPED_DIR = Path(__file__).resolve().parents[1] / "_compiled"
SHIPPED_ENV = "CULLING_SHIPPED_KERNELS"

#: The label of a shipped index's stamp (``("shipped", fingerprint)``; a local cache's is ``"source"``):
#: valid wherever the kernel's sources are those it was compiled from.
SHIPPED_LABEL = "shipped"

#: The CPU the shipped kernels are compiled for: the architecture's baseline, which every
#: machine of the architecture runs (``NUMBA_CPU_NAME=generic``).
PORTABLE_CPU = "generic"

#: A file in :data:`SHIPPED_DIR` whose presence says its kernels were compiled for this machine's own CPU
#: (``pip install -e .``: a checkout's kernels run where they were built), not the portable one: they are
#: keyed as numba keys its own cache (the CPU's name and features), so another CPU compiles instead.
NATIVE_MARK = "NATIVE"


def _shipped_native() -> bool:
    return (SHIPPED_DIR / NATIVE_MARK).is_file()


#: The kernels this process loaded from the shipped ones (their names; ``list.append`` is atomic).
_SHIPPED_LOADED: list[str] = []


def shipped_loaded() -> int:
    """How many kernels this process has loaded from the ones the wheel ships."""
    return len(_SHIPPED_LOADED)


def _shipped_enabled() -> bool:
    """Whether the shipped kernels are used: they are there and ``CULLING_SHIPPED_KERNELS`` is 1 or unset
    (0 ignores them).  Read as the kernels are defined, on import, where any other value is refused."""
    setting = os.environ.get(SHIPPED_ENV, "").strip() or "1"
    if setting not in ("0", "1"):
        raise ValueError(f"{SHIPPED_ENV} must be 0 (ignore the shipped kernels) or 1, got {setting!r}")
    return setting == "1" and SHIPPED_DIR.is_dir()


def shipped_misfit(folder: Path | None = None) -> str | None:
    """Why the kernels shipped in ``folder`` (:data:`SHIPPED_DIR`) cannot load in this process, or None (they
    fit, or none are shipped): their numba version (the first thing each index file holds) or their Python
    version (in each index file's name, ``...py311.nbi``) is not this process's."""
    folder = SHIPPED_DIR if folder is None else folder
    index = next(folder.glob("*/*.nbi"), None)
    if index is None:
        return None
    try:
        with open(index, "rb") as f:
            built_numba = str(pickle.load(f))
    except Exception:  # an unreadable index: numba finds out and compiles, as for any damaged entry
        return None
    built_python = index.name.rsplit(".", 2)[-2]
    here_python = f"py{sys.version_info.major}{sys.version_info.minor}"
    if built_numba == numba.__version__ and built_python == here_python:
        return None
    return (f"the kernels shipped in {folder} were compiled by numba {built_numba} for {built_python}; this is "
            f"numba {numba.__version__} on {here_python}")


def _warn_where_shipped_cannot_load() -> None:
    """One warning on import where kernels are shipped but cannot load here (another numba or Python): the
    program then compiles each kernel on first use (half a minute of CPU or more in all) and would
    otherwise not say why."""
    why = shipped_misfit() if _shipped_enabled() else None
    if why is not None:
        warnings.warn(f"culling: {why}, so each kernel compiles on its first use (run `python -m culling warm-up` "
                      f"to compile them all ahead; {SHIPPED_ENV}=0 ignores the shipped ones and this warning)",
                      RuntimeWarning, stacklevel=1)


class _PortableCodegen:
    """What numba's cache key reads of a codegen, for the portable CPU: ``magic_tuple()``."""

    def __init__(self, codegen: Any) -> None:
        self._triple = codegen.magic_tuple()[0]

    def magic_tuple(self) -> tuple[str, str, str]:
        return (self._triple, PORTABLE_CPU, "")


def _shipped_cache(py_func: Callable[..., Any]) -> Any:
    """numba's cache object for ``py_func``'s shipped kernel (``_compiled/<folder>``), read-only.

    Made without numba's locator (which wants a writable folder): the index
    file, its name and the key are numba's, the key with the portable CPU
    (:class:`_PortableCodegen`) and the stamp ``(SHIPPED_LABEL, fingerprint)``.  It loads
    a shipped kernel (counted by :func:`shipped_loaded`), saves nothing, and
    an unreadable shipped file loads nothing (the kernel then compiles).
    """
    from numba.core.caching import CompileResultCacheImpl, FunctionCache, IndexDataCacheFile

    code = py_func.__code__
    source = resolved_path(code.co_filename)
    base = (f"{source.stem}.{py_func.__qualname__}-{code.co_firstlineno}"
            f".py{sys.version_info[0]}{sys.version_info[1]}{getattr(sys, 'abiflags', '')}")
    cache: Any = FunctionCache.__new__(FunctionCache)
    cache._name = repr(py_func)
    cache._py_func = py_func
    cache._impl = CompileResultCacheImpl.__new__(CompileResultCacheImpl)  # its rebuild() reads nothing else
    cache._cache_path = str(SHIPPED_DIR / source.parent.relative_to(SHIPPED_DIR.parent))
    cache._cache_file = IndexDataCacheFile(cache._cache_path, base, None)  # type: ignore[no-untyped-call]
    cache._enabled = True
    index_key, load = cache._index_key, loader(cache, keeps_runtime=False)  # the shipped folder: read only

    def load_overload(sig: Any, target_context: Any) -> Any:
        try:
            found = load(sig, target_context)
        except (OSError, EOFError, ValueError):  # an unreadable shipped file: compile instead
            return None
        if found is not None:
            _SHIPPED_LOADED.append(py_func.__qualname__)
        return found

    if not _shipped_native():
        cache._index_key = lambda sig, codegen: index_key(sig, _PortableCodegen(codegen))
    cache.save_overload = lambda sig, data: None
    cache.flush = lambda: None
    return _fingerprinted(cache, py_func, SHIPPED_LABEL, load_overload)


def _with_shipped(compiled: Any) -> Any:
    """Let ``compiled`` load a kernel the wheel ships (:data:`SHIPPED_DIR`) where its own cache has none.

    A kernel compiled for the portable CPU runs on every machine of the
    architecture; it is taken only when the shipped index's stamp holds the
    kernel's fingerprint of these sources, numba's version is the one that
    compiled it (numba checks) and the key (signature, bytecode, triple)
    matches.  Anything else compiles as usual.  The shipped cache object is
    made on the first miss of the kernel's own cache (a warm start that finds
    its kernels in its own cache makes none: 5 to 8 ms of ``import culling``
    for all of them).  Reaches into numba's cache object; a numba without it
    compiles as usual.
    """
    own: Any = getattr(compiled, "_cache", None)
    if own is None or not hasattr(own, "load_overload"):
        return compiled
    if not resolved_path(compiled.py_func.__code__.co_filename).is_relative_to(SHIPPED_DIR.parent):
        return compiled  # a kernel made outside the package (a test's): nothing of it is shipped
    load_own = own.load_overload
    shipped: list[Any] = []  # made on the first miss of the kernel's own cache, if ever

    def shipped_cache() -> Any:
        if not shipped:
            shipped.append(_shipped_cache(compiled.py_func))
        return shipped[0]

    def load_overload(sig: Any, target_context: Any) -> Any:
        found = load_own(sig, target_context)
        return shipped_cache().load_overload(sig, target_context) if found is None else found

    own.load_overload = load_overload
    compiled.shipped_index = lambda: shipped_cache()._cache_file  # for culling.kernels_cached()
    return compiled


def _shipped_only(compiled: Any) -> Any:
    """Give ``compiled`` (a kernel without a disk cache: no folder can be written) the shipped kernels'
    cache (:func:`_shipped_cache`), so a read-only install compiles only what the wheel does not ship."""
    compiled._cache = cache = _shipped_cache(compiled.py_func)
    compiled.shipped_index = lambda: cache._cache_file  # for culling.kernels_cached()
    return compiled


def _blas_probe_without_scipy_import() -> None:
    """Import numba's ``arraymath`` with its BLAS probe answered without importing SciPy.

    numba imports ``numba.np.arraymath`` when it first compiles, or loads a
    kernel holding that module's code, and the module sets ``_HAVE_BLAS`` by importing
    ``scipy.linalg.cython_blas``: all of ``scipy.linalg`` (with ``numpy.f2py``
    behind SciPy's array API layer), 0.12 s of a warm start's 0.45 s here,
    although no kernel of culling uses BLAS.  During that import the probe
    asks only whether SciPy is installed (``find_spec``, nothing imported); the
    real check (SciPy importable, its integer width) is numba's own
    ``ensure_blas``, which its linear algebra still calls when a program of
    the user's compiles ``np.dot`` and the like.  Reaches into numba; a numba
    without these names, or one that imported the module already, is left as it is.
    """
    import importlib.util

    if "numba.np.arraymath" in sys.modules:
        return
    try:
        linalg: Any = importlib.import_module("numba.np.linalg")
    except ImportError:
        return
    real = getattr(linalg, "ensure_blas", None)
    if real is None:
        return

    def scipy_installed() -> None:
        if importlib.util.find_spec("scipy") is None:
            raise ImportError("scipy 0.16+ is required for linear algebra")

    linalg.ensure_blas = scipy_installed
    try:
        importlib.import_module("numba.np.arraymath")
    finally:
        linalg.ensure_blas = real


def _blas_probe_at_first_compile() -> None:
    """Run :func:`_blas_probe_without_scipy_import` when numba first loads its compile registries, not at import.

    numba imports ``arraymath`` (and so probes BLAS) with the registries a
    compile needs (``CPUContext.load_additional_registries``), or when it
    loads a cached kernel built with ``arraymath``'s code (the kernel's
    environment names its module: ``environment._rebuild_env``); the probe
    runs before either.  No kernel of the library holds ``arraymath``'s code
    (its few uses are loops), so a warm start, which only loads kernels,
    never imports the module: 18 ms less CPU in a warm first frame.  A numba
    without these names gets the probe now, as before.
    """
    cpu: Any = importlib.import_module("numba.core.cpu")
    environment: Any = importlib.import_module("numba.core.environment")
    context = getattr(cpu, "CPUContext", None)
    load = getattr(context, "load_additional_registries", None)
    rebuild = getattr(environment, "_rebuild_env", None)
    if load is None or rebuild is None:
        _blas_probe_without_scipy_import()
        return
    if getattr(load, "culling_blas_probe", False):
        return

    def load_additional_registries(self: Any) -> Any:
        _blas_probe_without_scipy_import()
        return load(self)

    @functools.wraps(rebuild)  # numba's name and module: pickled by reference as numba's own
    def _rebuild_env(modname: str, *args: Any) -> Any:  # what a cached kernel's pickle calls
        if modname == "numba.np.arraymath":
            _blas_probe_without_scipy_import()
        return rebuild(modname, *args)

    load_additional_registries.culling_blas_probe = True  # type: ignore[attr-defined]
    context.load_additional_registries = load_additional_registries  # type: ignore[union-attr]
    environment._rebuild_env = _rebuild_env


if not getattr(numba.config, "DISABLE_JIT", False):
    _blas_probe_at_first_compile()

_unliteral: Callable[[Any], Any] = _types.unliteral


#: Compiles under way in this process (:func:`_without_collector`), and whether the collector was on
#: before the first of them.  Guarded by ``_COLLECTOR_LOCK``.
_collector_pauses = 0
_collector_was_on = False
_COLLECTOR_LOCK = threading.Lock()


def _without_collector(compile_: Callable[..., Any]) -> Callable[..., Any]:
    """``compile_`` with Python's cyclic garbage collector paused until it returns.

    numba builds large graphs of objects as it compiles (IR, types, LLVM
    wrappers, the functions it keeps), and each of the collector's full passes
    walks every object the process holds: compiling every kernel on an empty
    cache in one process ran 29 of them, a quarter of its CPU time.  Paused,
    a compile's garbage waits until it ends; the collector then runs as its
    thresholds say.  The pause is the process's (the collector is), re-entrant
    (a kernel's compile compiles its callees) and shared by threads (the first
    compile to start pauses it, the last to end resumes it); a program that
    turned the collector off keeps it off.
    """
    def run(*args: Any, **kwargs: Any) -> Any:
        global _collector_pauses, _collector_was_on
        with _COLLECTOR_LOCK:
            if _collector_pauses == 0:
                _collector_was_on = gc.isenabled()
                gc.disable()
            _collector_pauses += 1
        try:
            return compile_(*args, **kwargs)
        finally:
            with _COLLECTOR_LOCK:
                _collector_pauses -= 1
                if _collector_pauses == 0 and _collector_was_on:
                    gc.enable()

    functools.update_wrapper(run, compile_)
    return run


#: numba's global compiler lock (it compiles and loads kernels holding it; untyped in numba).
_COMPILER_LOCK: Any = global_compiler_lock

#: Whether this process's fork holds numba's compiler lock (:func:`_hold_compiler_for_fork`); one entry
#: while it does (two threads forking at once take the lock in turn).
_COMPILER_HELD_FOR_FORK: list[bool] = []


def _hold_compiler_for_fork() -> None:
    """Before a fork: wait for a compile or a cache load under way on another thread, and hold numba's
    global compiler lock through the fork.  A child forked while another thread held it inherited it
    locked, with no thread to release it: its first kernel to compile or load waited forever (a fork
    pool started in a program's first frames, while a kernel loaded; seconds of exposure on a cold
    cache).  Registered before :mod:`culling.runtime.locks` registers its own, so it runs after that
    hook has waited for running mutations (one of which may be compiling) and held SIGINT."""
    _COMPILER_LOCK.acquire()
    _COMPILER_HELD_FOR_FORK.append(True)


def _release_compiler_after_fork() -> None:
    if _COMPILER_HELD_FOR_FORK:
        _COMPILER_HELD_FOR_FORK.pop()
        _COMPILER_LOCK.release()


def _after_fork_in_child() -> None:
    """The child has only the forking thread, which compiles nothing now: numba's compiler lock given
    back, the collector as it was before a pause a parent's thread held, and new locks (this module's:
    the collector's, the inline helpers')."""
    global _collector_pauses, _COLLECTOR_LOCK, _HELPERS_LOCK
    _release_compiler_after_fork()
    if _collector_pauses and _collector_was_on:
        gc.enable()
    _collector_pauses = 0
    _COLLECTOR_LOCK = threading.Lock()
    _HELPERS_LOCK = threading.Lock()


os.register_at_fork(before=_hold_compiler_for_fork, after_in_parent=_release_compiler_after_fork,
                    after_in_child=_after_fork_in_child)


def _compiles_whole(dispatcher: Any) -> Any:
    """Make ``dispatcher`` compile (or load from a cache) with SIGINT held (:func:`culling.runtime.interrupts.runs_whole`)
    and the garbage collector paused (:func:`_without_collector`).

    llvmlite frees an LLVM object in ``close()`` and then marks it closed; a
    Ctrl-C that lands between the two leaves the object to be freed again by
    its finaliser, and the process aborts (``free(): double free detected``,
    seen here when Ctrl-C hit a first query).  Held, the interrupt comes when
    the kernel (and the kernels it calls) are compiled.  0.5 us a kernel, once.
    """
    dispatcher.compile = runs_whole(_without_collector(dispatcher.compile))
    return dispatcher


def _compile(fn: Callable[..., Any], cached: bool = True, **options: Any) -> Any:
    """``numba.njit`` with the cache when some cache directory can be written, in memory otherwise
    (or when not ``cached``); compiled with Ctrl-C held (:func:`_compiles_whole`)."""
    return _compiles_whole(_njit(fn, cached, **options))


def _njit(fn: Callable[..., Any], cached: bool, **options: Any) -> Any:
    global _cache_ok
    if cached and _cache_ok is not False:
        try:
            compiled = _stamp_with_sources(numba.njit(cache=True, **KERNEL_OPTIONS, **options)(fn))
            _cache_ok = True
            return _with_shipped(compiled) if _shipped_enabled() else compiled
        except RuntimeError as exc:  # numba: "cannot cache function ...: no locator available"
            if "cannot cache" not in str(exc):
                raise
            _cache_ok = False
            what = ("the kernels the wheel ships are loaded and any other is compiled in memory, in every "
                    "process, on first use" if _shipped_enabled()
                    else "every process compiles its kernels in memory on first use")
            warnings.warn("culling: no numba cache directory can be written (the package folder, the user's "
                          f"cache folder and NUMBA_CACHE_DIR are read-only or missing), so {what}; set "
                          "NUMBA_CACHE_DIR to a writable folder to keep them", RuntimeWarning, stacklevel=2)
    compiled = numba.njit(cache=False, **KERNEL_OPTIONS, **options)(fn)
    return _shipped_only(compiled) if cached and _shipped_enabled() else compiled


def _one_signature(dispatcher: Any) -> Any:
    """Make a kernel called from other kernels compile for plain types, not once per literal.

    numba types a constant argument (``0``, ``True``) as a literal, and a
    kernel called from other kernels with ``at=0`` in one place and a
    variable in another would compile twice (three times for three
    patterns).  Typed as plain ``int64`` and ``bool``, one compile serves
    every call site; the callers' constants are converted at the call.
    """
    resolve = dispatcher.get_call_template

    def get_call_template(args: tuple[Any, ...], kws: dict[str, Any]) -> Any:
        return resolve(tuple(_unliteral(a) for a in args), {k: _unliteral(v) for k, v in kws.items()})

    dispatcher.get_call_template = get_call_template
    return dispatcher


if not getattr(numba.config, "DISABLE_JIT", False):
    patch_numba()  # numba compiles the library's kernels faster (the module says how and how to opt out)


def cache_writable() -> bool:
    """Whether compiled kernels are kept on disk (False: compiled in memory in every process)."""
    return _cache_ok is not False


#: ``NUMBA_DISABLE_JIT=1``: kernels run as plain Python (numba's debugging switch).
JIT_DISABLED = bool(getattr(numba.config, "DISABLE_JIT", False))

if not JIT_DISABLED:
    _warn_where_shipped_cannot_load()


def _interpreted(fn: F) -> F:
    """``fn`` as plain Python, for ``NUMBA_DISABLE_JIT=1`` (debugging): NumPy's scalar integers warn
    where a compiled kernel wraps around silently (the hashes' multiplications), so the warnings
    a compiled kernel cannot give are off while it runs."""

    @functools.wraps(fn)
    def run(*args: Any) -> Any:
        with np.errstate(over="ignore", under="ignore"):
            return fn(*args)

    return cast(F, run)


@overload
def kernel(fn: F) -> F: ...


@overload
def kernel(*, refcounts: bool) -> Callable[[F], F]: ...


def kernel(fn: F | None = None, *, refcounts: bool = True) -> F | Callable[[F], F]:
    """A serial kernel.  ``nogil`` so that callers may run queries from threads.

    ``refcounts=False``: a kernel that allocates nothing and keeps no
    reference, called per visit from other kernels (``members.keep_rows``),
    compiled without numba's reference counting.  Its callers lend it their
    arrays for the call, and it spends no atomic increment and decrement per
    array argument: about 40 ns a call with eight arrays, as much as an
    inlined copy saves, without compiling the body again in every caller.
    numba refuses to compile such a kernel if it allocates.
    """
    def make(f: F) -> F:
        if JIT_DISABLED:
            return _interpreted(f)
        options = {} if refcounts else NO_REFCOUNT_OPTIONS
        compiled = _one_signature(_compiles_whole(linked_by_symbol(_njit(f, True, **options))))
        KERNELS.append(compiled)
        KERNEL_FUNCTIONS.add(f)  # its IR's post-processing leaves the lifetimes to be computed when asked
        return cast(F, compiled)

    return make if fn is None else make(fn)


@overload
def inline_kernel(fn: F) -> F: ...


@overload
def inline_kernel(*, from_python: bool) -> Callable[[F], F]: ...


def inline_kernel(fn: F | None = None, *, from_python: bool = False) -> F | Callable[[F], F]:
    """A small kernel called per object from other kernels: inlined into them
    (numba IR inlining), so no call.  numba's pruning usually removes the
    reference counting of its array arguments too, but not always: a helper
    taking four arrays with a loop that returned from inside it kept an
    atomic increment and decrement per array and call (settle's fast cell
    test: 35 ns an object, against 10 ns written in the caller's loop).  A
    helper on a hot path takes floats, or leaves its loop to the caller.

    Only its callers are compiled (with its code in them), so it is not
    cached on disk, and its numba dispatcher is made only when something
    asks for one (:class:`InlineHelper`), unless ``from_python``: the
    library's Python code calls it too, and that compile is kept in the cache.
    """
    def make(f: F) -> F:
        if JIT_DISABLED:
            return _interpreted(f)
        INLINED.add(f)  # its IR is read once per process, copied once per site
        if not from_python:
            return cast(F, InlineHelper(f))
        compiled = _compile(f, cached=True, **INLINED_OPTIONS)
        KERNELS.append(compiled)  # compiled for Python's calls too: warm_up covers it
        return cast(F, compiled)

    return make if fn is None else make(fn)


class InlineHelper:
    """An :func:`inline_kernel` as its callers' compiles see it, its numba dispatcher made on first need.

    numba inlines a call whose callee has ``targetoptions["inline"] == "always"`` by
    reading the callee's ``py_func``; its type inference then still types the callee's
    name (:attr:`_numba_type_`), so a compile makes the dispatcher, but a warm start,
    which loads its kernels and compiles nothing, never does.  Making the library's 90
    helpers' dispatchers at ``import culling`` took about 9 ms of it (78 -> 69 ms here),
    and 3,600 objects the collector walks.  Anything a dispatcher has (a call from
    Python, ``signatures``, ``inspect_types``) makes it, once, and is the dispatcher's.
    """

    def __init__(self, py_func: Callable[..., Any]) -> None:
        self.py_func = py_func
        self.targetoptions = {**KERNEL_OPTIONS, **INLINED_OPTIONS, "nopython": True}
        self._made: Any = None
        functools.update_wrapper(self, py_func)

    def dispatcher(self) -> Any:
        """The numba dispatcher (made on the first call, compiled in memory as its callers need it)."""
        made = self._made
        if made is None:
            with _HELPERS_LOCK:
                made = self._made
                if made is None:
                    made = self._made = _compile(self.py_func, cached=False, **INLINED_OPTIONS)
        return made

    @property
    def _numba_type_(self) -> Any:  # numba's typeof of an object that names its own type
        return _types.Dispatcher(self.dispatcher())

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.dispatcher()(*args, **kwargs)

    def __getattr__(self, name: str) -> Any:  # only names this object lacks: the dispatcher's
        if name not in _dispatcher_names():  # numba's passes probe names (``name``, ``_name``) on any callee
            raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")
        return getattr(self.dispatcher(), name)

    def __repr__(self) -> str:
        return f"InlineHelper({self.py_func.__module__}.{self.py_func.__qualname__})"


#: Held while an :class:`InlineHelper` makes its dispatcher (a new one in a forked child: :func:`_after_fork_in_child`).
_HELPERS_LOCK = threading.Lock()


@functools.cache
def _dispatcher_names() -> frozenset[str]:
    """The names a numba dispatcher answers (its class's and its own), found once on a dispatcher of nothing."""
    return frozenset(dir(numba.njit(lambda: None)))
