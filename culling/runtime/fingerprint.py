"""What a kernel's cached machine code depends on: the source files it inlines, hashed per kernel.

numba keys a kernel's cache entry by its own bytecode and its own file's
time stamp, but the machine code also holds every kernel it calls (numba
links or inlines them), the named tuples it builds and the constants it
reads from other modules.  After an edit of ``core/members.py`` the tree's
query would load its old copy of ``keep_rows`` from the cache, silently.
So each kernel's cache entry is stamped with :func:`kernel_fingerprint`: a
hash over the source files of the kernel and of everything of this package
it names, followed transitively (kernels, inline kernels, intrinsics,
structs, modules whose attributes it reads), plus the values of the plain
constants it reads (a constant imported from another module is frozen into
the code).  An edit recompiles only the kernels whose code it can change:
editing a pure-Python module (the trackers) recompiles nothing, editing the
broad phase leaves the tree's query and batch kernels loaded from the cache.

``culling/runtime/compile_options.py`` is part of every kernel's fingerprint:
it holds the options every kernel compiles with (``runtime/jit.py``, which
applies them, is not: its edits recompile nothing).

The walk reads a function's names from its bytecode (``co_names``, nested
code objects included) and looks them up in its module's globals: it is
conservative (a name that is only a local attribute, such as ``x.size``,
may pull in a module that has a ``size``), never optimistic for this
package's code, and reads each function once per process (kernels share
their helpers): 11 ms for all 88 kernels, 22 ms when every kernel walked
its helpers again (on each kernel's first cache use).

>>> from culling.core import cells
>>> sorted(p.name for p in dependencies(cells.home.py_func))[:3]
['cells.py', 'compile_options.py', 'floats.py']
"""

from __future__ import annotations

import hashlib
import sys
import types
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np

__all__ = ["PACKAGE", "dependencies", "kernel_fingerprint", "resolved_path"]

#: The package's name: only its own modules are followed (numba's and NumPy's versions are numba's to check).
PACKAGE = "culling"

_ROOT = Path(__file__).resolve().parents[1]
_OPTIONS = _ROOT / "runtime" / "compile_options.py"

#: Per source file: the hash of its bytes (a file is read once per process).
_FILE_DIGESTS: dict[Path, str] = {}

_Constant = int | float | bool | str | bytes | complex | None


def _ours(module_name: str | None) -> bool:
    return bool(module_name) and (module_name == PACKAGE or str(module_name).startswith(PACKAGE + "."))


def _names(code: types.CodeType) -> Iterator[str]:
    """Every global or attribute name a function's bytecode uses, nested functions included."""
    yield from code.co_names
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            yield from _names(const)


#: Per file name as Python has it (``co_filename``, ``__file__``): its resolved path (a resolve is a few
#: ``lstat`` calls, and a warm start's kernels name the same files hundreds of times).
_RESOLVED: dict[str, Path] = {}


def resolved_path(name: str) -> Path:
    """``Path(name).resolve()``, once per file name and process (the kernels' files are not moved while it runs)."""
    path = _RESOLVED.get(name)
    if path is None:
        path = _RESOLVED[name] = Path(name).resolve()
    return path


def _module_file(module_name: str) -> Path | None:
    module = sys.modules.get(module_name)
    path = getattr(module, "__file__", None)
    return resolved_path(path) if path else None


def _python_function(value: Any) -> Callable[..., Any] | None:
    """The Python function behind a kernel (a numba dispatcher's ``py_func``, an intrinsic's
    definition), or ``value`` itself when it is a plain function; None otherwise."""
    for attribute in ("py_func", "_defn"):
        inner = getattr(value, attribute, None)
        if isinstance(inner, types.FunctionType):
            return inner
    return value if isinstance(value, types.FunctionType) else None


def _plain_constant(value: Any) -> bool:
    """Numbers, strings and tuples of them, NumPy scalars and arrays: frozen into the code where a kernel reads them."""
    if isinstance(value, tuple):
        return all(_plain_constant(item) for item in value)
    return isinstance(value, _Constant | np.generic | np.ndarray) and not isinstance(value, type)


def _constant_text(value: Any) -> str:
    if isinstance(value, np.ndarray):
        return f"array({value.dtype.str},{value.shape},{hashlib.sha256(np.ascontiguousarray(value).tobytes()).hexdigest()})"
    return repr(value)


def dependencies(py_func: Callable[..., Any], constants: list[str] | None = None) -> set[Path]:
    """The source files of this package whose code ``py_func``'s compiled kernel may hold.

    Parameters
    ----------
    py_func : function
        A kernel's Python function (``dispatcher.py_func``).
    constants : list of str, optional
        Receives ``"module.name=repr"`` for every plain constant (numbers,
        strings, tuples of them) the walk met in a module of the package.

    Always includes ``runtime/compile_options.py`` (the compile options).  Cost: O(names
    the kernels use); each function's names are read once per process (:func:`_named_by`), so
    kernels that share helpers share that work.
    """
    files: set[Path] = {_OPTIONS}
    seen: set[int] = set()
    pending: list[Callable[..., Any]] = [py_func]
    while pending:
        function = pending.pop()
        if id(function) in seen:
            continue
        seen.add(id(function))
        named = _named_by(function)
        files |= named.files
        pending.extend(named.functions)
        if constants is not None:
            constants.extend(named.constants)
    return files


class _Named:
    """What one function's own code names (:func:`_named_by`): files, the package's functions it may call,
    and the plain constants it reads."""

    __slots__ = ("constants", "files", "functions")

    def __init__(self) -> None:
        self.files: set[Path] = set()
        self.functions: list[Callable[..., Any]] = []
        self.constants: list[str] = []


#: Per function: what its own code names (a warm first frame's 40 kernels share most of their helpers).
_NAMED: dict[Callable[..., Any], _Named] = {}


def _named_by(function: Callable[..., Any]) -> _Named:
    """What ``function``'s own bytecode names of this package, read once per process: the walk's step."""
    named = _NAMED.get(function)
    if named is not None:
        return named
    named = _Named()
    code = getattr(function, "__code__", None)
    if code is not None:
        named.files.add(resolved_path(code.co_filename))
        scope = getattr(function, "__globals__", {})
        names = set(_names(code))
        for name in sorted(names):
            if name not in scope:
                continue
            found = [scope[name]]
            if isinstance(found[0], types.ModuleType):  # `members.keep_rows`: the attributes it reads
                module = found[0]
                if not _ours(module.__name__):
                    continue
                path = _module_file(module.__name__)
                if path is not None:
                    named.files.add(path)
                found = [getattr(module, attribute) for attribute in sorted(names) if hasattr(module, attribute)]
                origin = module.__name__
            else:
                origin = str(scope.get("__name__", ""))
            for value in found:
                _follow(value, name, origin, named)
    _NAMED[function] = named
    return named


def _follow(value: Any, name: str, origin: str, named: _Named) -> None:
    """Record what one named value of this package adds to a function's :class:`_Named`."""
    inner = _python_function(value)
    if inner is not None:
        if _ours(inner.__module__):
            named.functions.append(inner)
        return
    if isinstance(value, types.ModuleType):
        return
    if _plain_constant(value):
        if _ours(origin):
            named.constants.append(f"{origin}.{name}={_constant_text(value)}")
        return
    home = getattr(value, "__module__", None)  # a class (a struct) or an object of one of ours
    if isinstance(home, str) and _ours(home):
        path = _module_file(home)
        if path is not None:
            named.files.add(path)


def _file_digest(path: Path) -> str:
    digest = _FILE_DIGESTS.get(path)
    if digest is None:
        try:
            digest = hashlib.sha256(path.read_bytes()).hexdigest()
        except OSError:  # a source that cannot be read: a stamp that matches nothing cached
            digest = "unreadable"
        _FILE_DIGESTS[path] = digest
    return digest


#: Per kernel function: its fingerprint, computed once per process (a kernel's own cache and the shipped
#: one both stamp with it; the files it hashes are read once per process anyway, :data:`_FILE_DIGESTS`).
_FINGERPRINTS: dict[Callable[..., Any], str] = {}


def kernel_fingerprint(py_func: Callable[..., Any]) -> str:
    """A hash of every source file (by its path inside the package, and its bytes) and constant that
    ``py_func``'s compiled kernel depends on (:func:`dependencies`); computed once per process."""
    found = _FINGERPRINTS.get(py_func)
    if found is None:
        found = _FINGERPRINTS[py_func] = _fingerprint_of(py_func)
    return found


def _fingerprint_of(py_func: Callable[..., Any]) -> str:
    constants: list[str] = []
    files = dependencies(py_func, constants)
    digest = hashlib.sha256()
    for path in sorted(files):
        try:
            label = path.relative_to(_ROOT).as_posix()
        except ValueError:  # a kernel defined outside the package (a test's): its own path
            label = path.as_posix()
        digest.update(label.encode())
        digest.update(_file_digest(path).encode())
    for constant in sorted(constants):
        digest.update(constant.encode())
    return digest.hexdigest()
