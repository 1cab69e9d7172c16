"""The runtime the kernels run on: the JIT wrapper and its per-kernel cache
stamp, the library's worker threads, the structures' readers-writer lock,
Ctrl-C deferral and cache prefetch (docs/DESIGN.md, "Module map").

The lowest floor: nothing here imports another part of :mod:`culling`.
"""

from culling.runtime.threads import set_thread_count, thread_count

__all__ = ["set_thread_count", "thread_count"]
