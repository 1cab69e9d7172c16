"""How the library compiles its hot loops: numba, cached on disk, one signature each.

Every kernel is compiled lazily on its first call and cached on disk
(``cache=True``), so ``import culling`` compiles nothing and a second process
loads the machine code instead of compiling it again.  When the package
directory is not writable (an installed wheel), numba keeps the cache in a
per-user directory instead (``NUMBA_CACHE_DIR`` overrides both).

Callers pass float64 and int64 C-contiguous arrays and Python scalars only,
so each kernel has one signature for all dimensions and shapes: the cold
compile is bounded by the number of kernels, not by the ways of calling them.
``error_model="numpy"`` lets float division give inf/NaN as NumPy does
instead of raising (and keeps the check out of the loops).
"""

from __future__ import annotations

import functools
import os
import types
from collections.abc import Callable
from typing import Any, TypeVar, cast

import numba
import numpy as np

# Idle worker threads sleep instead of spinning (GNU OpenMP's default spins
# for a while after every threaded kernel): on a machine with as many busy
# threads as cores, the spinning starves the caller's next serial kernel and
# the rest of the frame.  A value the user set is kept.  This must happen
# before numba's OpenMP pool starts, that is before the first threaded call.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

F = TypeVar("F", bound=Callable[..., Any])

__all__ = ["inline_kernel", "kernel", "parallel_kernel", "prange"]

_SERIAL = numba.njit(cache=True, nogil=True, error_model="numpy")
_INLINE = numba.njit(cache=True, nogil=True, error_model="numpy", inline="always")
_PARALLEL = numba.njit(cache=True, nogil=True, error_model="numpy", parallel=True)


#: ``NUMBA_DISABLE_JIT=1``: kernels run as plain Python (numba's debugging switch).
_JIT_DISABLED = bool(getattr(numba.config, "DISABLE_JIT", False))


def _interpreted(fn: F) -> F:
    """``fn`` as plain Python, for ``NUMBA_DISABLE_JIT=1`` (debugging): NumPy's scalar integers warn
    where a compiled kernel wraps around silently (the hashes' multiplications), so the warnings
    a compiled kernel cannot give are off while it runs."""

    @functools.wraps(fn)
    def run(*args: Any) -> Any:
        with np.errstate(over="ignore", under="ignore"):
            return fn(*args)

    return cast(F, run)


def kernel(fn: F) -> F:
    """A serial kernel.  ``nogil`` so that callers may run queries from threads."""
    return _interpreted(fn) if _JIT_DISABLED else cast(F, _SERIAL(fn))


def inline_kernel(fn: F) -> F:
    """A small kernel called per object from other kernels: inlined into them
    (numba IR inlining), so no call and no reference counting of its array
    arguments per object."""
    return _interpreted(fn) if _JIT_DISABLED else cast(F, _INLINE(fn))


def parallel_kernel(fn: F) -> F:
    """A kernel whose ``prange`` loops run on all cores (numba's thread pool).

    Compiled from a twin of ``fn`` named ``<name>_parallel``: numba names a
    cache entry after the function (qualified name and first line) and its
    signature, not its options, so a serial ``kernel(fn)`` and this one would
    share one entry, and whichever compiled first would be loaded by both
    (a parallel kernel running serially, or the reverse).
    """
    twin = types.FunctionType(fn.__code__, fn.__globals__, fn.__name__ + "_parallel", fn.__defaults__,
                              fn.__closure__)
    twin.__qualname__ = fn.__qualname__ + "_parallel"
    twin.__doc__ = fn.__doc__
    twin.__module__ = fn.__module__
    twin.__annotations__ = fn.__annotations__
    return _interpreted(cast(F, twin)) if _JIT_DISABLED else cast(F, _PARALLEL(twin))


prange: Any = numba.prange
