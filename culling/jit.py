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

from typing import Any

import numba

__all__ = ["inline_kernel", "kernel", "parallel_kernel", "prange"]

#: A serial kernel.  ``nogil`` so that callers may run queries from threads.
kernel: Any = numba.njit(cache=True, nogil=True, error_model="numpy")

#: A small kernel called per object from other kernels: inlined into them
#: (numba IR inlining), so no call and no reference counting of its array
#: arguments per object (that alone costs ~30 ns on a 1M-object query).
inline_kernel: Any = numba.njit(cache=True, nogil=True, error_model="numpy", inline="always")

#: A kernel whose ``prange`` loops run on all cores (numba's thread pool).
parallel_kernel: Any = numba.njit(cache=True, nogil=True, error_model="numpy", parallel=True)

prange: Any = numba.prange
