"""The library's own threads: a small pool of Python threads that runs the batch calls' chunks.

Every kernel is serial and ``nogil`` (:mod:`culling.runtime.jit`); a batch call
(``query_many``, and the broad phase's probes and pairs) cuts its work into
chunks and hands them to :func:`run_chunks`, which runs them on a pool of
daemon threads fed by one ``queue.SimpleQueue`` while the calling thread
works on a chunk too.  No threading runtime (OpenMP, TBB, numba's workqueue) is ever loaded
into the user's process, so:

- any thread of the user's may call any query, from as many threads at once
  as it likes (each call waits only for its own chunks);
- ``fork`` is safe after any call: the child drops the parent's pool (its
  threads do not exist in the child) and starts its own on first use
  (``os.register_at_fork``);
- a chunk that itself calls :func:`run_chunks` (a kernel pass inside a pool
  thread) runs its pieces inline, so the pool never waits on itself.

The pool's size is :func:`thread_count`: the ``CULLING_THREADS`` environment
variable when set (checked on import, read at the first batch call), else the
cores this process may run on (:func:`usable_cores`);
:func:`set_thread_count` changes it at run time (1 runs every batch on the
calling thread).

>>> import numpy as np
>>> squares = np.empty(10, dtype=np.int64)
>>> def square(lo: int, hi: int) -> int:
...     squares[lo:hi] = np.arange(lo, hi) ** 2
...     return hi - lo
>>> sum(run_chunks(square, 10))
10
>>> squares.tolist()
[0, 1, 4, 9, 16, 25, 36, 49, 64, 81]
"""

from __future__ import annotations

import itertools
import numbers
import os
import queue
import threading
import warnings
from collections.abc import Callable
from typing import TYPE_CHECKING, TypeVar, cast

if TYPE_CHECKING:
    import numpy as np

__all__ = ["CHUNKS_PER_THREAD", "ENV_VAR", "MAX_THREADS", "chunk_bounds", "run_chunks", "set_thread_count", "thread_count",
           "usable_cores"]

T = TypeVar("T")

#: Environment variable that sets the pool's size (a positive integer).
ENV_VAR = "CULLING_THREADS"

#: The most threads a batch call may ask for.  A count beyond what any machine runs is refused where
#: it is given, at once; without the bound ``set_thread_count(2**70)`` was taken, and the next batch
#: call spent seconds starting threads until the system refused one.
MAX_THREADS = 4096

#: Chunks per thread a batch is cut into: a few per thread let a thread that
#: finishes early take another chunk (the work per point varies tenfold
#: between a town and open ground); more would only add dispatch (about
#: 10 us per chunk).  The interest benchmark's 2,000 x 1M tick is flat from
#: 4 to 16 on 2 to 16 cores.
CHUNKS_PER_THREAD = 4


class _Helper:
    """One pool thread's share of a batch: it runs ``work`` unless the caller claimed it first.

    The pool thread (starting it) and the caller (cancelling it) each append
    their name to ``claims`` (``list.append`` is atomic): whoever is first
    decides, so a helper that has not started when the caller has taken
    every chunk is never waited for.  ``done`` is a lock held until the work
    ends, and ``finished`` is set just before it is released.  A Ctrl-C can
    interrupt the caller anywhere in :meth:`cancel_or_wait`; the list and the
    flag keep what it had learned, so it is simply called again.
    """

    __slots__ = ("_claims", "_done", "_work", "error", "finished")

    def __init__(self, work: Callable[[], None]) -> None:
        self._claims: list[str] = []
        self._done = threading.Lock()
        self._done.acquire()
        self._work = work
        self.error: BaseException | None = None
        self.finished = False

    def run(self) -> None:
        """On a pool thread: the work, unless cancelled; an exception is kept for the caller."""
        claims = self._claims
        claims.append("helper")
        if claims[0] != "helper":
            return
        try:
            self._work()
        except BaseException as exc:  # raised again on the calling thread
            self.error = exc
        finally:
            self.finished = True
            self._done.release()

    def cancel_or_wait(self) -> None:
        """On the calling thread: cancel the work if it has not started, else wait for its end.
        Safe to call again after a Ctrl-C interrupted it."""
        claims = self._claims
        if "caller" not in claims:
            claims.append("caller")
        if claims[0] == "helper":
            while not self.finished:
                self._done.acquire()


class _Pool:
    """Daemon threads that run :class:`_Helper` jobs from one queue.

    ``concurrent.futures.ThreadPoolExecutor`` does the same job, but its
    ``submit`` costs 20 to 30 us here (locks, a future, a work item) against
    4 to 7 us for a put on ``queue.SimpleQueue``; a batch call submits once per
    helper thread, so that is most of a small batch's hand-off.
    """

    def __init__(self, workers: int, all_or_nothing: bool) -> None:
        """Start ``workers`` threads.  Where the system refuses one (out of memory for its stack, or a
        thread limit), ``all_or_nothing`` (a count the user chose) stops those started and raises
        ``RuntimeError``; otherwise (the default count) the pool keeps the threads it got, and says so once:
        a chunk no thread takes is run by the calling thread, so every batch call still answers."""
        self._jobs: queue.SimpleQueue[_Helper | None] = queue.SimpleQueue()
        self._workers = 0
        started: list[threading.Thread] = []
        try:
            for i in range(workers):
                thread = threading.Thread(target=self._serve, name=f"culling_{i}", daemon=True)
                thread.start()
                started.append(thread)
                self._workers += 1
        except RuntimeError as exc:  # the OS refused a thread
            if all_or_nothing:
                self.shutdown()
                for thread in started:  # gone before the error: a smaller count then finds the room they took
                    thread.join()
                raise RuntimeError(f"could not start the {workers} threads that set_thread_count or "
                                   f"{ENV_VAR} asks for ({exc}: out of memory or a thread limit); ask for "
                                   f"fewer") from exc
            warnings.warn(f"culling: the system started {self._workers} of the {workers} helper threads its "
                          f"batch calls use ({exc}: out of memory or a thread limit); they run on "
                          f"{self._workers + 1} threads", RuntimeWarning, stacklevel=2)
        except BaseException:  # a Ctrl-C: stop those started, keep nothing
            self.shutdown()
            raise

    def _serve(self) -> None:
        _inside.active = True  # a batch call inside a chunk runs its chunks inline
        while (job := self._jobs.get()) is not None:
            job.run()
            del job  # not kept alive while waiting: its closures may hold a call's large arrays

    def submit(self, job: _Helper) -> None:
        self._jobs.put(job)

    @property
    def workers(self) -> int:
        """The threads it runs (fewer than asked where the system refused some)."""
        return self._workers

    def shutdown(self) -> None:
        """Let the threads end once the jobs queued before this are done."""
        for _ in range(self._workers):
            self._jobs.put(None)


_lock = threading.Lock()
_pool: _Pool | None = None
_size: int | None = None
_chosen = False  # whether the size is the user's (set_thread_count, CULLING_THREADS), not the core count
_inside = threading.local()


def _env_set() -> bool:
    """Whether the user chose the count with ``CULLING_THREADS`` (not the core count's default)."""
    return bool(os.environ.get(ENV_VAR, "").strip())


def _from_env() -> int:
    text = os.environ.get(ENV_VAR, "").strip()
    if text:
        try:
            n = int(text)
        except ValueError:
            n = 0
        if 1 <= n <= MAX_THREADS:
            return n
        raise ValueError(f"{ENV_VAR} must be a positive integer of at most {MAX_THREADS:,}, got {text!r}")
    return usable_cores()


def usable_cores() -> int:
    """The cores this process may run on: its CPU affinity where the system has one (``taskset``, a
    container's cpuset), else ``os.cpu_count()``.  A server pinned to one core of a large machine ran
    ``query_many`` on as many threads as the machine has cores, all taking turns on that one core
    (200k objects, 20k points, ``taskset -c 0`` on 2 cores: 46-49 ms on 2 threads, 36 ms on 1)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):  # no affinity on this system (macOS, Windows)
        return os.cpu_count() or 1


# A CULLING_THREADS the pool cannot use is refused on import, where a program starts, rather than at its
# first batch call (in a game's first frame, a server's first tick).  The pool reads it again then.
_from_env()


def thread_count() -> int:
    """Threads a batch call runs on (the calling thread included): ``CULLING_THREADS``, else
    :func:`usable_cores`."""
    global _size, _chosen
    if _size is None:
        with _lock:
            if _size is None:
                _chosen = _env_set()
                _size = _from_env()
    return _size


def set_thread_count(n: int | np.integer | None) -> None:
    """Run batch calls on ``n`` threads (the caller's included); ``None`` goes back to the default.

    Takes effect at the next batch call; calls running now finish on the old pool.
    Raises ``ValueError`` unless ``n`` is a positive integer of at most :data:`MAX_THREADS` (any
    integer type, NumPy's too) or None.
    If the system cannot start that many threads, the next batch call raises ``RuntimeError`` and
    stops those it started (nothing leaks): a smaller count (or None) works again at once.  (With the
    default count, batch calls run on the threads the system did start, with one ``RuntimeWarning``.)
    """
    global _size, _pool, _chosen
    if n is not None:
        if isinstance(n, bool) or not isinstance(n, numbers.Integral) or not 1 <= n <= MAX_THREADS:
            raise ValueError(f"the thread count must be a positive integer of at most {MAX_THREADS:,} or None, "
                             f"got {n!r}")
        n = int(n)
    with _lock:
        old, _pool = _pool, None
        _size = n if n is not None else _from_env()
        _chosen = n is not None or _env_set()
    if old is not None:
        old.shutdown()


def _executor(workers: int) -> _Pool:
    global _pool
    pool = _pool
    if pool is None:
        with _lock:
            if _pool is None:
                _pool = _Pool(workers, all_or_nothing=_chosen)
            pool = _pool
    return pool


def _after_fork_in_child() -> None:
    """The child has only the forking thread: forget the parent's pool and lock."""
    global _pool, _lock
    _pool = None
    _lock = threading.Lock()


os.register_at_fork(after_in_child=_after_fork_in_child)


def chunk_bounds(n_items: int, n_chunks: int) -> list[int]:
    """``n_chunks + 1`` ascending bounds cutting ``range(n_items)`` into nearly equal runs."""
    n_chunks = max(1, min(n_chunks, n_items))
    return [n_items * c // n_chunks for c in range(n_chunks + 1)]


def run_chunks(fn: Callable[[int, int], T], n_items: int, min_items: int = 1,
               chunks: int | None = None) -> list[T]:
    """``[fn(lo, hi) for each chunk [lo, hi) of range(n_items)]``, the chunks run on the library's threads.

    Parameters
    ----------
    fn : callable ``(lo, hi) -> result``
        Works on items ``lo`` to ``hi - 1``; called once per chunk, from the
        pool's threads and from the calling thread.  It must write only
        where its own items go (the chunks run at the same time), and should
        spend its time in ``nogil`` kernels (otherwise the chunks take turns
        on the GIL).
    n_items : int
        Items to cut (0: ``fn`` is not called).
    min_items : int
        The fewest items worth a chunk of their own: fewer than
        ``2 * min_items`` items run as one chunk on the calling thread.
    chunks : int, optional
        How many chunks; ``CHUNKS_PER_THREAD`` per thread by default.

    Returns the chunks' results in order.  The calling thread and up to
    ``thread_count() - 1`` pool threads take the chunks in turn, so a chunk
    that takes long does not hold the others up.  An exception in a chunk
    is raised here, after every thread has stopped (none is left writing).
    Cost: the chunks' work spread over :func:`thread_count` threads, plus a
    few microseconds per chunk and about 20 us to wake the pool.
    """
    if n_items <= 0:
        return []
    threads = thread_count()
    if chunks is None:
        chunks = threads * CHUNKS_PER_THREAD
    chunks = min(chunks, n_items // max(1, min_items))
    if threads <= 1 or chunks <= 1 or getattr(_inside, "active", False):
        return [fn(0, n_items)]
    bounds = chunk_bounds(n_items, chunks)
    chunks = len(bounds) - 1
    results: list[T | None] = [None] * chunks
    taken = itertools.count()  # next() on it is atomic: each chunk is taken by one thread

    def work() -> None:
        for c in iter(taken.__next__, None):
            if c >= chunks:
                return
            results[c] = fn(bounds[c], bounds[c + 1])

    pool = _executor(threads - 1)
    helpers: list[_Helper] = []
    try:
        for _ in range(min(threads, chunks, pool.workers + 1) - 1):  # no more than it has threads to run them
            helper = _Helper(work)
            helpers.append(helper)  # first: a helper is waited for (or cancelled) once it may have been submitted
            pool.submit(helper)
        work()  # the calling thread takes chunks too, so a busy pool delays nothing
    finally:
        # Every chunk done, failed or not, before the caller's arrays are touched again: a helper left
        # running would write into them while the caller (a mutation rolling back, say) goes on.  So a
        # Ctrl-C meanwhile is raised only once every helper has stopped.  Written here, not in a
        # function: Python may raise a pending KeyboardInterrupt on entering one, before its ``try``.
        interrupted: KeyboardInterrupt | None = None
        while True:
            try:
                for helper in helpers:
                    helper.cancel_or_wait()
                break
            except KeyboardInterrupt as exc:
                interrupted = exc
        if interrupted is not None:
            raise interrupted
    for helper in helpers:
        if helper.error is not None:
            raise helper.error
    return cast("list[T]", results)
