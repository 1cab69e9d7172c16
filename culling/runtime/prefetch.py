"""Software prefetch: a kernel asks for a row's cache line some items before it reads the row.

The moving frame's kernels follow chains of rows at random places, one
object or node after another: a mover's handle gives its node, the node its
block in the pool, the block its last row; an emptied node its parent.  Each
step waits for the one before it to come from memory, and the core's
out-of-order window overlaps only the few items that fit in it.  Fetching the
rows item ``k + AHEAD`` will need while item ``k`` works turns those chains
into fetches in flight at the same time (a chain of two random reads per item
over 160 MB: 16.3 ms without, 7.9 ms with prefetching 32 items ahead).

A prefetch is a hint: it never faults, whatever the address (the kernels
still keep the index within the array), and changes no value.  With numba's
JIT disabled (``NUMBA_DISABLE_JIT=1``, the kernels run as Python) both are
functions that do nothing.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, cast

import numpy as np
from llvmlite import ir
from numba.core import cgutils, types
from numba.extending import intrinsic

from culling.runtime.jit import JIT_DISABLED

__all__ = ["AHEAD", "prefetch", "prefetch_at"]

#: How many items ahead the kernels fetch: enough to cover a memory access (about 100 ns) with the
#: work of the items between (tens of ns each), few enough that the lines stay in the cache.
AHEAD = 16


def _hint(context: Any, builder: Any, array_type: Any, array: Any, indices: list[Any],
          index_types: tuple[Any, ...]) -> Any:
    """Emit ``llvm.prefetch`` (read, keep in every cache level) of the address of ``array[indices]``."""
    ary = context.make_array(array_type)(context, builder, array)
    at = [context.cast(builder, i, t, types.intp) for i, t in zip(indices, index_types)]
    pointer = cgutils.get_item_pointer(  # type: ignore[no-untyped-call]
        context, builder, array_type, ary, at, wraparound=False, boundscheck=False)
    byte = ir.IntType(8).as_pointer()
    word = ir.IntType(32)
    hint = builder.module.declare_intrinsic("llvm.prefetch", [byte], ir.FunctionType(ir.VoidType(),
                                                                                    [byte, word, word, word]))
    builder.call(hint, [builder.bitcast(pointer, byte), word(0), word(3), word(1)])
    return context.get_dummy_value()


@intrinsic
def _prefetch(typingctx: Any, array: Any, index: Any) -> Any:
    """``prefetch(array, i)`` in a kernel: start fetching ``array[i]`` (a 1-D array) into the cache."""
    if not (isinstance(array, types.Array) and array.ndim == 1 and isinstance(index, types.Integer)):
        return None

    def codegen(context: Any, builder: Any, signature: Any, args: Any) -> Any:
        return _hint(context, builder, signature.args[0], args[0], [args[1]], signature.args[1:])

    return types.void(array, index), codegen


@intrinsic
def _prefetch_at(typingctx: Any, array: Any, row: Any, column: Any) -> Any:
    """``prefetch_at(array, i, j)`` in a kernel: start fetching ``array[i, j]`` (a 2-D array) into the cache."""
    if not (isinstance(array, types.Array) and array.ndim == 2 and isinstance(row, types.Integer)
            and isinstance(column, types.Integer)):
        return None

    def codegen(context: Any, builder: Any, signature: Any, args: Any) -> Any:
        return _hint(context, builder, signature.args[0], args[0], [args[1], args[2]], signature.args[1:])

    return types.void(array, row, column), codegen


def _nothing(array: np.ndarray, *index: int) -> None:
    """A hint in Python (numba's JIT disabled): nothing to do."""


#: ``prefetch(array, i)`` in a kernel: start fetching ``array[i]`` (a 1-D array) into the cache.
prefetch = cast("Callable[[np.ndarray, int], None]", _nothing if JIT_DISABLED else _prefetch)
#: ``prefetch_at(array, i, j)`` in a kernel: start fetching ``array[i, j]`` (a 2-D array) into the cache.
prefetch_at = cast("Callable[[np.ndarray, int, int], None]", _nothing if JIT_DISABLED else _prefetch_at)
