"""The options every kernel compiles with: the one file in every kernel's fingerprint.

A kernel's machine code depends on the numba options it was compiled with as
much as on its own source, so :mod:`culling.runtime.fingerprint` adds this
file to every kernel's hash: an edit here recompiles every kernel, on purpose.
They live apart from :mod:`culling.runtime.jit` (the cache, the shipped
kernels, Ctrl-C and the collector around a compile), whose edits change no
kernel's code and so recompile none.
"""

from __future__ import annotations

from typing import Any

__all__ = ["INLINED_OPTIONS", "KERNEL_OPTIONS", "NO_REFCOUNT_OPTIONS"]

#: Every kernel: releases the GIL (the batch calls run on the library's threads), NumPy's error model
#: (a division by zero gives inf or nan, not an exception: the kernels test their floats themselves),
#: and no C callback wrapper (no kernel is handed to C).
KERNEL_OPTIONS: dict[str, Any] = {"nogil": True, "error_model": "numpy", "no_cfunc_wrapper": True}

#: An inline kernel (``inline_kernel``): numba inlines its IR into every caller.
INLINED_OPTIONS: dict[str, Any] = {"inline": "always"}

#: A kernel made with ``kernel(refcounts=False)``: compiled without numba's reference counting.
NO_REFCOUNT_OPTIONS: dict[str, Any] = {"_nrt": False}
