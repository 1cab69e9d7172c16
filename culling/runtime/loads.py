"""Loading a cached kernel: what numba does on a warm start, less what a load does not need.

A warm first frame loads some 25 kernels from numba's cache, and numba's
load of each spent most of its time on work whose result a loaded kernel
never uses (figures: CPU on the 2-core machine, a warm first frame of
``benchmarks/jitstart.py``):

- numba's whole compile set-up (``target_context.refresh()``: every typing
  and lowering registry imported and installed, about 45 ms), run before
  the first load, although a loaded kernel is neither typed nor lowered:
  :func:`set_up_for_loads` initialises only numba's runtime (NRT), which
  loaded machine code calls; a compile still runs the whole set-up first
  (numba's ``CompilerBase`` calls ``refresh()`` itself);
- the parse of the LLVM bitcode stored beside the machine code (the kernel
  again, in IR, for a kernel compiled later in the process that links it),
  only to list the symbols the machine code defines: about 60 ms for the
  first frame's kernels.  Here the list is read from the machine code's
  own symbol table (an ELF object: :func:`defined_symbols`, 2 ms for the
  whole cache) and the bitcode is parsed when a compile first links the
  kernel, if ever (:func:`rebuild`);
- numba compiles its runtime's LLVM module (NRT) in every process, about
  15 ms: its machine code is kept beside the first kernel a process loads
  (``numba-runtime-<key>.nbc``, keyed by numba's, llvmlite's and Python's
  versions and the CPU) and loaded as a kernel is (:func:`set_up_for_loads`).

Everything else is numba's own load: the same index, key, data file and
bookkeeping (numba's compile timers too, which ``Dispatcher.compile``
installs before it looks in the cache; looking in the cache before them
saved nothing measurable, but the LLVM lock events they add up, one pair
per call into LLVM, are not sent during a load:
:class:`culling.runtime.numba_patches.loading_kernel`).  Each step
checks that numba has the names it reaches into and leaves a numba without
them, or an object file that is not ELF (macOS, Windows), to numba's own
load.
"""

from __future__ import annotations

import struct
import weakref
from collections.abc import Callable
from typing import Any, cast

from culling.runtime.numba_patches import loading_kernel, with_callees_loaded

__all__ = ["defined_symbols", "loader", "rebuild", "set_up_for_loads"]


def set_up_for_loads(target_context: Any, folder: str | None = None) -> None:
    """What loading a cached kernel needs of numba's set-up: its runtime (NRT) initialised (once per process).

    numba compiles its runtime's LLVM module in every process (about 15 ms);
    with a cache ``folder`` its machine code is kept there (one file per
    numba, llvmlite, Python and CPU) and loaded as a kernel is
    (:func:`_unserialize`).  Anything amiss (no folder, an unreadable or
    unwritable file, a numba without these names) initialises it as numba does.
    """
    import importlib

    runtime: Any = importlib.import_module("numba.core.runtime")
    rtsys = runtime.rtsys
    if getattr(rtsys, "_init", False):
        return
    if folder is None or not _runtime_from(folder, rtsys, target_context):
        rtsys.initialize(target_context)


def _runtime_from(folder: str, rtsys: Any, target_context: Any) -> bool:
    """numba's ``rtsys.initialize(target_context)`` with its library's machine code loaded from ``folder`` (or
    compiled and written there); False, having changed nothing, where it cannot."""
    import hashlib
    import importlib
    import os
    import pickle
    import sys
    import tempfile

    import llvmlite
    import llvmlite.binding as ll
    import numba
    from numba.core import config
    from numba.core.compiler_lock import global_compiler_lock

    try:
        nrt: Any = importlib.import_module("numba.core.runtime._nrt_python")
        dynmod: Any = importlib.import_module("numba.core.runtime.nrtdynmod")
        codegen = target_context.codegen()
        key = repr((numba.__version__, llvmlite.__version__, sys.version, codegen.magic_tuple()))
    except Exception:  # noqa: BLE001 - a numba without these names: its own initialize
        return False
    if not (hasattr(rtsys, "_init") and hasattr(dynmod, "create_nrt_module") and hasattr(nrt, "c_helpers")):
        return False
    path = os.path.join(folder, f"numba-runtime-{hashlib.sha256(key.encode()).hexdigest()[:16]}.nbc")
    with global_compiler_lock:
        if rtsys._init:
            return True
        state = None
        try:
            with open(path, "rb") as f:
                stored_key, state = pickle.load(f)
            if stored_key != key:
                state = None
        except Exception:  # noqa: BLE001 - none yet, or unreadable: compile it
            state = None
        if getattr(config, "NRT_STATS", False):
            nrt.memsys_enable_stats()
        for name, address in nrt.c_helpers.items():
            ll.add_symbol(name if name.startswith("_") else "NRT_" + name, address)
        library = None
        if state is not None:
            try:
                library = _unserialize(codegen, state)
            except Exception:  # noqa: BLE001 - a damaged file: compile it (and write it again)
                library = None
        if library is None:
            ir_module, library = dynmod.create_nrt_module(target_context)
            library.enable_object_caching()
            library.add_ir_module(ir_module)
            library.finalize()
            try:
                data = pickle.dumps((key, library.serialize_using_object_code()), protocol=-1)
                os.makedirs(folder, exist_ok=True)
                fd, tmp = tempfile.mkstemp(dir=folder, prefix=".numba-runtime-")
                try:
                    with os.fdopen(fd, "wb") as f:
                        f.write(data)
                    os.replace(tmp, path)
                except BaseException:
                    os.unlink(tmp)
                    raise
            except Exception:  # noqa: BLE001 - a read-only or full folder: compiled in memory, as numba does
                pass
        rtsys._library = library
        rtsys._init = True
    return True


_SHT_SYMTAB = 2
_STT_SECTION, _STT_FILE = 3, 4


def defined_symbols(object_code: bytes) -> set[str] | None:
    """The names of the symbols an ELF64 little-endian relocatable object (numba's cached machine code on
    Linux x86-64 and AArch64) defines, as numba lists them from the kernel's LLVM module (every function
    and global that is not a declaration); None for anything else."""
    obj = memoryview(object_code).cast("B")
    if len(obj) < 64 or bytes(obj[:4]) != b"\x7fELF" or obj[4] != 2 or obj[5] != 1:
        return None
    (shoff,) = struct.unpack_from("<Q", obj, 0x28)
    shentsize, shnum = struct.unpack_from("<HH", obj, 0x3A)
    if shentsize != 64 or shnum == 0 or shoff + 64 * shnum > len(obj):
        return None
    sections = [struct.unpack_from("<IIQQQQIIQQ", obj, shoff + 64 * i) for i in range(shnum)]
    names: set[str] | None = None
    for section in sections:
        if section[1] != _SHT_SYMTAB:
            continue
        if section[6] >= shnum or section[4] + section[5] > len(obj):
            return None
        strtab = sections[section[6]]
        strings = bytes(obj[strtab[4]:strtab[4] + strtab[5]])
        names = names if names is not None else set()
        for st_name, st_info, _, st_shndx, _, _ in struct.iter_unpack("<IBBHQQ", obj[section[4]:section[4] + section[5]]):
            if st_shndx == 0 or st_name == 0 or (st_info & 0xF) in (_STT_SECTION, _STT_FILE):
                continue  # undefined, unnamed, a section's or the file's own symbol
            names.add(strings[st_name:strings.index(b"\0", st_name)].decode())
    return names


def _unserialize(codegen: Any, state: Any) -> Any:
    """numba's ``codegen.unserialize_library(state)`` for machine code (``"object"``), with the bitcode beside it
    parsed on first link instead of now (the defined symbols read from the object code); a kernel that calls
    others by symbol (:func:`culling.runtime.numba_patches.with_callees_loaded`) has them loaded first."""
    state, callees = with_callees_loaded(codegen, state)
    library = _unserialize_object(codegen, state)
    if callees is not None:
        library.culling_callees = callees
    return library


def _unserialize_object(codegen: Any, state: Any) -> Any:
    name, kind, data = state
    engine: Any = getattr(codegen, "_engine", None)
    symbols = defined_symbols(data[0]) if kind == "object" else None
    if symbols is None or not isinstance(getattr(engine, "_defined_symbols", None), set):
        return codegen.unserialize_library(state)
    object_code, bitcode = data
    library = codegen.create_library(name)
    if not all(hasattr(library, attr) for attr in ("enable_object_caching", "_set_compiled_object", "_shared_module",
                                                   "_finalize_final_module", "_get_module_for_linking")):
        return codegen.unserialize_library(state)
    library.enable_object_caching()
    library._set_compiled_object(object_code)
    library._get_module_for_linking = _parsed_on_first_link(weakref.ref(library), bitcode)
    library._finalize_final_module()
    engine._defined_symbols |= symbols
    return library


def _parsed_on_first_link(library: weakref.ref[Any], bitcode: bytes) -> Callable[[], Any]:
    def module_for_linking() -> Any:
        import llvmlite.binding as ll

        owner = library()
        if owner is None:
            raise ReferenceError("the library was freed")
        if owner._shared_module is None:
            owner._shared_module = ll.parse_bitcode(bitcode)
        return owner._shared_module

    return module_for_linking


def rebuild(cache: Any, target_context: Any, payload: Any) -> Any:
    """numba's ``CompileResult._rebuild`` of a cached payload, its library unserialized by :func:`_unserialize`."""
    from numba.core import compiler

    if not (isinstance(payload, tuple) and len(payload) == 9):
        return cache._impl.rebuild(target_context, payload)
    libdata, fndesc, env, signature, objectmode, lifted, typeann, reload_init, referenced_envs = payload
    for fn in reload_init or ():
        fn()
    library = _unserialize(target_context.codegen(), libdata)
    cfunc = target_context.get_executable(library, fndesc, env)
    make: Any = compiler.CompileResult
    result = make(target_context=target_context, typing_context=target_context.typing_context,
                           library=library, environment=env, entry_point=cfunc, fndesc=fndesc,
                           type_annotation=typeann, signature=signature, objectmode=objectmode, lifted=lifted,
                           typing_error=None, call_helper=None, metadata=None, reload_init=reload_init,
                           referenced_envs=referenced_envs)
    for referenced in referenced_envs:
        library.codegen.set_env(referenced.env_name, referenced)
    return result


def loader(cache: Any, keeps_runtime: bool = True) -> Callable[[Any, Any], Any]:
    """numba's ``cache.load_overload`` with only the set-up a load needs (:func:`set_up_for_loads`, numba's runtime
    kept in the cache's folder where ``keeps_runtime``) in place of numba's whole set-up, and the library rebuilt
    by :func:`rebuild`; a numba without these names keeps its own."""
    if not all(hasattr(cache, name) for name in ("_guard_against_spurious_io_errors", "_enabled", "_index_key",
                                                  "_cache_file", "_impl")):
        return cast(Callable[[Any, Any], Any], cache.load_overload)
    try:
        from numba.core.compiler import CompileResult
    except ImportError:
        return cast(Callable[[Any, Any], Any], cache.load_overload)
    if not hasattr(CompileResult, "_rebuild"):
        return cast(Callable[[Any, Any], Any], cache.load_overload)

    def load_overload(sig: Any, target_context: Any) -> Any:
        set_up_for_loads(target_context, getattr(cache, "_cache_path", None) if keeps_runtime else None)
        with loading_kernel(), cache._guard_against_spurious_io_errors():
            if not cache._enabled:
                return None
            data = cache._cache_file.load(cache._index_key(sig, target_context.codegen()))
            return None if data is None else rebuild(cache, target_context, data)
        return None  # the guard swallowed a spurious I/O error (numba's own rule)

    return load_overload
