"""One structure, many threads: a readers-writer lock that the tree and the grid take per call.

Any number of threads may query one structure at once (queries only read
it, and their kernels release the GIL); a mutation waits until the queries
running have finished, runs alone, and queries that arrive meanwhile wait
for it (a waiting writer closes the door to new readers, so a stream of
queries never starves a mutation).  So a query sees the structure before a
mutation or after it, never half-way: no wrong answer, no ``-1`` handle, no
corruption, however the user's threads interleave.

The cost is two uncontended mutex round trips per call (well under a
microsecond, next to an exact query's ten or more).  The lock is not reentrant:
public methods take it, and the structures' internals never call a public
method that takes it.  After ``fork`` the child's locks are new and free
(the threads that may have held them do not exist there); a pickled or
copied structure gets a lock of its own.

>>> lock = ReadWriteLock()
>>> with lock.reading(), lock.reading():
...     pass
>>> with lock.writing():
...     pass
"""

from __future__ import annotations

import functools
import os
import threading
import weakref
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, Concatenate, ParamSpec, Protocol, TypeVar

__all__ = ["Guarded", "ReadWriteLock", "reading", "writing"]

P = ParamSpec("P")
R = TypeVar("R")


class ReadWriteLock:
    """Many readers or one writer; a waiting writer goes before readers that arrive after it.

    One mutex guards three counts; a reader that finds no writer running or
    waiting takes it twice per call (in and out), and only a contended call
    waits, on the mutex's condition.
    """

    __slots__ = ("__weakref__", "_changed", "_mutex", "_readers", "_waiting", "_writing")

    def __init__(self) -> None:
        self._reset()
        _LOCKS.add(self)

    def acquire_read(self) -> None:
        with self._mutex:
            if self._writing or self._waiting:
                self._changed.wait_for(self._open)
            self._readers += 1

    def release_read(self) -> None:
        with self._mutex:
            self._readers -= 1
            if not self._readers and self._waiting:
                self._changed.notify_all()

    def acquire_write(self) -> None:
        with self._mutex:
            self._waiting += 1
            try:
                self._changed.wait_for(self._free)
            except BaseException:  # interrupted while waiting: readers held back by this writer may go in
                self._waiting -= 1
                self._changed.notify_all()
                raise
            self._waiting -= 1
            self._writing = True

    def release_write(self) -> None:
        with self._mutex:
            self._writing = False
            self._changed.notify_all()

    def _open(self) -> bool:
        """A reader may go in: no writer runs or waits."""
        return not (self._writing or self._waiting)

    def _free(self) -> bool:
        """A writer may go in: nobody runs."""
        return not (self._writing or self._readers)

    @contextmanager
    def reading(self) -> Iterator[None]:
        self.acquire_read()
        try:
            yield
        finally:
            self.release_read()

    @contextmanager
    def writing(self) -> Iterator[None]:
        self.acquire_write()
        try:
            yield
        finally:
            self.release_write()

    def _reset(self) -> None:
        self._mutex = threading.Lock()
        self._changed = threading.Condition(self._mutex)
        self._readers = 0      # readers running
        self._waiting = 0      # writers waiting
        self._writing = False  # a writer running


_LOCKS: weakref.WeakSet[ReadWriteLock] = weakref.WeakSet()


def _after_fork_in_child() -> None:
    """Free every lock: only the forking thread lives on, and it held none (fork is not called from inside a
    structure's method)."""
    for lock in list(_LOCKS):
        lock._reset()


os.register_at_fork(after_in_child=_after_fork_in_child)


class Guarded(Protocol):
    """A structure whose public methods take ``self._rw``."""

    _rw: ReadWriteLock


G = TypeVar("G", bound=Guarded)


def reading(method: Callable[Concatenate[G, P], R]) -> Callable[Concatenate[G, P], R]:
    """Run ``method`` holding its structure's lock as a reader (queries, look-ups)."""
    def read(self: G, /, *args: P.args, **kwargs: P.kwargs) -> R:
        lock = self._rw
        lock.acquire_read()
        try:
            return method(self, *args, **kwargs)
        finally:
            lock.release_read()
    functools.update_wrapper(read, method)
    return read


def writing(method: Callable[Concatenate[G, P], R]) -> Callable[Concatenate[G, P], R]:
    """Run ``method`` holding its structure's lock as the writer (mutations)."""
    def write(self: G, /, *args: P.args, **kwargs: P.kwargs) -> R:
        lock = self._rw
        lock.acquire_write()
        try:
            return method(self, *args, **kwargs)
        finally:
            lock.release_write()
    functools.update_wrapper(write, method)
    return write


def state_without_lock(obj: Any) -> dict[str, Any]:
    """``obj.__dict__`` without its lock, for ``__getstate__`` (pickle, copy and deepcopy)."""
    state = dict(obj.__dict__)
    state.pop("_rw", None)
    return state
