"""How the structures' arrays grow: by a constant factor, so appends are amortised O(1)."""

from __future__ import annotations

import math
import mmap

import numpy as np

__all__ = ["ARRAY_GROWTH", "CACHE_LINE", "HANDLE_SHRINK_RATIO", "OUT_OF_MEMORY", "allocate", "grown", "untouched_zeros"]

#: Object and node arrays grow by this factor when full (amortised O(1) inserts).
ARRAY_GROWTH = 1.5

#: A structure's per-handle arrays are cut back after removals when longer than this many entries per
#: stored object (plus 64), as far as the highest live handle allows; a failed try waits until half the
#: objects are gone again, or until the handle that stopped it is gone (the tree's and the dense grid's:
#: ``culling.structure``'s ``_trim_handles``).
HANDLE_SHRINK_RATIO = 4

#: What a failed allocation raises: ``MemoryError``, and from some NumPy 2.4 calls, once the address space
#: is spent, ``SystemError("error return without exception set")``.  Caught only where the work is optional
#: (giving memory back after a removal that is done), never where an answer or a change depends on it.
OUT_OF_MEMORY = (MemoryError, SystemError)

#: Every array :func:`allocate` makes starts on a cache line of this many bytes.
CACHE_LINE = 64


def allocate(shape: tuple[int, ...], dtype: type | np.dtype, fill: int | float) -> np.ndarray:
    """A new array for a structure's storage, filled with ``fill``, starting on a cache line.

    Every array a structure keeps (node table, pool, per-handle arrays,
    tile summaries) is allocated here, before the structure changes: a batch
    call allocates first and commits after, so a ``MemoryError`` leaves the
    structure as it was.  The tests fail each call of this function in turn
    to check that.

    NumPy aligns its arrays to 16 bytes only, so a node's child links (eight
    int64 in 3-D, 64 bytes) spanned two cache lines, and every step of a
    walk or a mover's search fetched both; here they are one line.
    """
    dtype = np.dtype(dtype)
    size = math.prod(shape) * dtype.itemsize
    try:
        raw = np.empty(size + CACHE_LINE, dtype=np.uint8)
        skip = -raw.ctypes.data % CACHE_LINE
        array = raw[skip:skip + size].view(dtype).reshape(shape)
    except SystemError as exc:  # a failed allocation as some NumPy calls report it (OUT_OF_MEMORY)
        raise MemoryError(f"Unable to allocate {size:,} bytes ({exc})") from exc
    array.fill(fill)
    return array


def grown(array: np.ndarray, length: int, fill: int | float) -> np.ndarray:
    """A copy of ``array`` with at least ``length`` rows, new rows set to ``fill``."""
    capacity = max(length, int(array.shape[0] * ARRAY_GROWTH) + 8)
    bigger = allocate((capacity,) + array.shape[1:], array.dtype, fill)
    bigger[: array.shape[0]] = array
    return bigger


def untouched_zeros(length: int, dtype: type | np.dtype) -> np.ndarray:
    """A zero-filled array of ``length`` items whose memory the OS maps page by page, on first touch.

    For arrays of which a program touches a sparse few entries: the dense
    grid's per-cell columns, hundreds of MB for a large world of small
    objects.  NumPy asks the OS for transparent huge pages for every array of
    4 MB or more, so each cell touched first commits and zeroes 2 MB, and
    waits while the kernel compacts memory to find them: measured, a dense
    grid's first ``insert_many`` of 20k objects (231 MB of cells) took
    0.02 s or 0.13 to 0.54 s by that luck, and 0.02 s every time on 4 KB
    pages (and the process held 215 MB less).  An anonymous private
    ``mmap`` is zero-filled, mapped lazily and not advised to huge pages.
    Raises ``MemoryError`` when the OS refuses the address space.
    """
    itemsize = np.dtype(dtype).itemsize
    if length * itemsize == 0:
        return np.zeros(length, dtype=dtype)
    try:  # private: a forked child writes its own copy (the default, shared, would write the parent's)
        buffer = (mmap.mmap(-1, length * itemsize, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
                  if hasattr(mmap, "MAP_PRIVATE") else mmap.mmap(-1, length * itemsize))
    except OSError as exc:
        raise MemoryError(f"cannot map {length * itemsize} bytes for an array of {length} cells") from exc
    return np.frombuffer(buffer, dtype=dtype)
