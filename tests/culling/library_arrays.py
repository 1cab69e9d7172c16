"""Arrays as the library hands them to its kernels, for tests that call a kernel directly.

numba compiles a kernel once per argument types, and a read-only array is a type of its own: the
library passes its frozen arrays (a structure's origin, a diff's previous rows) read-only, and the
kernels it ships are compiled for those types.  A test that passes a writable copy makes numba compile
another signature in every fresh checkout (a second or so each) and tests that copy rather than the
machine code the library runs.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike

__all__ = ["read_only"]


def read_only(values: ArrayLike, dtype: type | None = None) -> np.ndarray:
    """A new C-contiguous array of ``values`` (as ``dtype``), not writeable."""
    array = np.array(values, dtype=dtype, order="C")
    array.flags.writeable = False
    return array
