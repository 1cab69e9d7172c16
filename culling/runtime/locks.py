"""One structure, many threads: a readers-writer lock that the tree and the grid take per call.

Any number of threads may query one structure at once (queries only read
it, and their kernels release the GIL); a mutation waits until the queries
running have finished, runs alone, and queries that arrive meanwhile wait
for it (a waiting writer closes the door to new readers, so a stream of
queries never starves a mutation).  The queries a mutation's end finds
waiting go in before the next mutation, that thread's own next call
included, so a thread that mutates back to back never starves a query (nor
a fork) either: the phases take turns.  So a query sees the structure
before a mutation or after it, never half-way: no wrong answer, no ``-1``
handle, no corruption, however the user's threads interleave.

The cost is about 0.2 us per call (a dict store and pop while no writer is
about, next to an exact query's ten or more).  Ctrl-C cannot leave a reader
registered: a reader registers under a token of its own inside the ``try``
whose ``finally`` removes that token (:func:`reading`), and CPython runs a
signal handler only on entering a Python function, after a call returns or
at a backward jump, never between the ``finally``'s start and the C call
that removes the token.  A writer holds SIGINT throughout
(:func:`culling.runtime.interrupts.hold_interrupts`).

The lock is not reentrant: public methods take it, and the structures'
internals never call a public method that takes it.  A thread that comes
back into a structure it is inside (a finalizer or a weak reference's
callback run by the garbage collector in the middle of a call) gets a
``RuntimeError`` where it would wait for itself for ever, except that a
query inside a query always goes in.  A ``fork`` waits until no mutation
runs (:func:`_before_fork`; one mutation at most, as a query does), so
the child never gets a half-changed structure, and the child's locks are
new and free (the threads that may have held them do not exist there); a
pickled or copied structure gets a lock of its own.

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

from culling.runtime.interrupts import (
    arm_after_fork,
    hold_interrupts,
    release_interrupts,
    release_interrupts_after_fork,
    unmask_interrupt,
)

__all__ = ["Guarded", "ReadWriteLock", "reading", "writing"]

P = ParamSpec("P")
R = TypeVar("R")

_get_ident = threading.get_ident

#: How long a waiting writer sleeps before it looks again without being woken: a reader that a Ctrl-C
#: stops between leaving and waking the writer (a window of a few bytecodes) costs it this, not a hang.
_LOST_WAKE_S = 0.05


class ReadWriteLock:
    """Many readers or one writer; a waiting writer goes before readers that arrive after it, and the
    readers waiting when a writer finishes go before the next writer (phase-fair: neither side starves).

    A reader that finds the door open costs a dict store, a pop and two
    attribute reads (about 0.2 us a call, against 0.7 us for two mutex
    round trips): it enters ``running`` under a token of its own (a dict
    store, one step under the GIL) and then looks whether a writer has
    closed the door; if one has, it steps back out and queues on the
    mutex's condition.  A writer closes the door first and then waits until
    ``running`` is empty.  Under the GIL the four steps happen in some
    order, and in every order either the writer sees the reader or the
    reader sees the closed door (then it leaves, or, if it got in first,
    wakes the writer on its way out).  numba, and so this library, runs
    only on CPython builds with the GIL.  ``writes`` counts the writers
    that have finished, for ever (a fork's child goes on counting): what a
    reader cached from the structure is current while it is unchanged.

    ``running`` maps each reader's token to its thread's id, and ``_writer``
    is the writing thread's id: so a thread that comes back in from a
    finalizer is recognised instead of waiting for itself.
    """

    __slots__ = ("__weakref__", "_admitted", "_changed", "_closed", "_mutex", "_queued", "_waiting", "_writer",
                 "_writing", "running", "writes")

    running: dict[object, int]
    _queued: int
    _admitted: int
    _waiting: int
    _writing: bool
    _writer: int | None
    _closed: bool
    writes: int

    def __init__(self) -> None:
        self.writes = 0
        self._reset()
        with _LOCKS_GUARD[0]:
            _LOCKS.add(self)

    def enter_read(self, token: object) -> None:
        """Register ``token`` as a reader, once no writer runs or waits.

        Call it inside the ``try`` whose ``finally`` calls :meth:`release_read`
        with the same token (as :func:`reading` does): an exception anywhere
        in here leaves the token registered or not, and the release removes it
        if it is.
        """
        running = self.running
        running[token] = _get_ident()
        if self._closed:  # a writer runs or waits: step back out and queue behind it
            self._queue(token)

    def _queue(self, token: object) -> None:
        running = self.running
        me = running.pop(token)
        if self._writer == me:
            raise RuntimeError(_COMING_BACK)
        if me in running.values():  # a query inside a query of this thread (a finalizer): it goes in,
            running[token] = me     # as the writer waits for the outer one anyway
            return
        held = hold_interrupts()  # threading.Condition.wait lets go of the mutex before its try: a Ctrl-C
        try:                      # there left it released and our with-block released it again
            with self._mutex:
                self._changed.notify_all()  # a writer may wait for this reader, which has stepped out
                self._wait_turn(self._open, token, me)
        finally:
            release_interrupts(held)  # raised here (one mutation later at most), registered or not

    def _wait_turn(self, ready: Callable[[], bool], token: object = None, me: int = 0) -> None:
        """Queue (holding the mutex) until ``ready()`` or until the writer running now has finished, and
        register ``token`` as a reader (if given).  The waiters a writer's release finds queued go in
        before the next writer (:meth:`release_write` counts them in ``_admitted``), even that thread's
        next mutation: a thread that mutates back to back starves no query and no fork."""
        turn = self.writes
        self._queued += 1
        try:
            self._changed.wait_for(lambda: ready() or self.writes != turn)
            if token is not None:
                self.running[token] = me
        finally:  # inline, no call before the counts are right (a Ctrl-C comes at a call or an entry)
            self._queued -= 1
            if self.writes != turn:  # let through by a release: the next writer no longer waits for it
                self._admitted -= 1
                if not self._admitted and self._waiting:
                    self._changed.notify_all()

    def acquire_read(self) -> object:
        """Register a new reader and return its token, for :meth:`release_read`.

        Between this call's return and the caller's ``try`` a Ctrl-C would
        leave it registered: the public methods call :meth:`enter_read`
        inside their ``try`` instead.
        """
        token = object()
        self.enter_read(token)
        return token

    def release_read(self, token: object) -> None:
        """Remove ``token``'s reader, if it is registered (:meth:`enter_read` may have been interrupted)."""
        if self.running.pop(token, None) is not None and self._closed:
            self.wake()

    def wake(self) -> None:
        """Wake the writer that may wait for the reader that just left."""
        with self._mutex:
            self._changed.notify_all()

    def acquire_write(self) -> None:
        if _FORKING:  # a fork waits for the mutations running: this one starts after it
            _wait_for_forks()
        me = _get_ident()
        with self._mutex:
            if self._writer == me or me in self.running.values():
                raise RuntimeError(_COMING_BACK)
            self._closed = True  # first: a reader arriving from now on queues
            if self._writing or self.running or self._admitted:  # else nobody runs: in at once, the common case
                self._waiting += 1
                try:
                    while not self._changed.wait_for(self._free, _LOST_WAKE_S):
                        pass
                except BaseException:  # interrupted while waiting: readers held back by this writer may go in
                    self._waiting -= 1
                    self._closed = self._writing or self._waiting > 0
                    self._changed.notify_all()
                    raise
                self._waiting -= 1
            self._writing = True
            self._writer = me

    def release_write(self) -> None:
        with self._mutex:
            self._writing = False
            self._writer = None
            self._closed = self._waiting > 0
            self.writes += 1
            self._admitted = self._queued  # they go in before the next writer, even this thread's next call
            if self._waiting or self._queued:  # nobody to wake, most of the time: no notify (about 0.5 us)
                self._changed.notify_all()

    def _open(self) -> bool:
        """A reader may go in: no writer runs or waits."""
        return not self._closed

    def _free(self) -> bool:
        """A writer may go in: nobody runs, and every waiter the last writer let through has gone in."""
        return not (self._writing or self.running or self._admitted)

    @property
    def readers(self) -> int:
        """How many readers hold the lock now."""
        return len(self.running)

    @contextmanager
    def reading(self) -> Iterator[None]:
        token = object()
        try:
            self.enter_read(token)
            yield
        finally:  # inline, as in reading(): a call would be a place for a Ctrl-C before the release
            if self.running.pop(token, None) is not None and self._closed:
                self.wake()

    @contextmanager
    def writing(self) -> Iterator[None]:
        self.acquire_write()
        try:
            yield
        finally:
            self.release_write()

    def _reset(self) -> None:
        """Free and new, keeping ``writes`` (what readers cached is keyed by it)."""
        self._mutex = threading.Lock()
        self._changed = threading.Condition(self._mutex)
        self.running = {}       # reader's token -> its thread's id
        self._queued = 0        # readers (and a fork) waiting for a writer to finish
        self._admitted = 0      # of those, the ones the last writer let through that have not gone in yet
        self._waiting = 0       # writers waiting
        self._writing = False   # a writer running
        self._writer = None     # its thread's id
        self._closed = False    # a writer runs or waits: readers queue


_COMING_BACK = ("this thread is already inside a call of this structure (a finalizer, __del__ or weak-reference "
                "callback that the garbage collector ran in the middle of it?): the call would wait for itself "
                "for ever; make the change after the call returns")

_LOCKS: weakref.WeakSet[ReadWriteLock] = weakref.WeakSet()

#: Held while a lock joins ``_LOCKS`` or the set is read: a WeakSet read while another thread adds to it
#: raises "Set changed size during iteration" (47 of 2,000 reads in a probe), which in a fork's hook
#: would fork without waiting for the mutations running.
_LOCKS_GUARD = [threading.RLock()]  # reentrant: a finalizer the collector runs inside may make a lock


def _all_locks() -> list[ReadWriteLock]:
    with _LOCKS_GUARD[0]:
        return list(_LOCKS)

#: The locks whose mutexes :func:`_before_fork` holds across a fork.
_HELD_FOR_FORK: list[ReadWriteLock] = []


def _no_mutation_elsewhere(lock: ReadWriteLock, me: int) -> bool:
    return not lock._writing or lock._writer == me


def _before_fork() -> None:
    """Wait until no other thread is inside a mutation, and hold every lock's mutex (no mutation can
    start) until the fork is done: the child gets every structure whole.

    It never waits holding a mutex while another thread might need it to finish: on finding a mutation,
    it lets go of every other mutex and waits for that one (its condition releases its own).  Meanwhile
    no new mutation starts (:func:`_wait_for_forks`), so the wait ends even while threads mutate back
    to back.  A mutation of the forking thread itself (a fork from a finalizer) is not waited for.
    Ctrl-C is held from here to the end of :func:`_after_fork_in_parent`, so the hooks between run
    whole too, and raised where ``os.fork`` returns in the parent, or just after
    (:mod:`culling.runtime.interrupts`' ``arm_after_fork``, ``release_interrupts_after_fork``): CPython
    prints and drops an exception raised in a fork hook, and forks anyway, mid-mutation.  One that lands
    at this hook's first step, before it holds, does that: the child then refuses the structures another
    thread was changing (:class:`_TornInChild`).
    """
    me = _get_ident()
    fork = _Fork(hold_interrupts())  # given back by _after_fork_in_parent: the other hooks run whole too
    try:
        with _FORK_DONE[0]:
            _FORKING[me] = fork
    except BaseException:
        release_interrupts_after_fork(fork.handler, armed=False)
        raise
    try:
        while True:
            busy = None
            for lock in _all_locks():
                lock._mutex.acquire()
                _HELD_FOR_FORK.append(lock)
                if not _no_mutation_elsewhere(lock, me):
                    busy = lock
                    break
            if busy is None:
                return
            _release_held(keep=busy)
            try:
                busy._wait_turn(functools.partial(_no_mutation_elsewhere, busy, me))
            finally:
                busy._mutex.release()
    except BaseException:
        _release_held()
        raise
    finally:
        fork.armed = fork.handler is not None and arm_after_fork()


def _wait_for_forks() -> None:
    """A mutation about to start while a fork waits for the ones running waits for the fork, unless
    its thread is inside a mutation already (``InterestManager`` moves its tree inside its own): each
    lock's turn would otherwise come while another's mutation ran, for as long as threads mutated
    back to back (hundreds of calls in a probe)."""
    me = _get_ident()
    if any(lock._writer == me for lock in _all_locks()):
        return
    done = _FORK_DONE[0]
    with done:
        done.wait_for(lambda: not _FORKING)


def _release_held(keep: ReadWriteLock | None = None) -> None:
    for lock in _HELD_FOR_FORK:
        if lock is not keep:
            lock._mutex.release()
    _HELD_FOR_FORK.clear()


def _after_fork_in_parent() -> None:
    fork = None
    try:
        _release_held()
        done = _FORK_DONE[0]
        with done:
            fork = _FORKING.pop(_get_ident(), None)
            done.notify_all()
    finally:
        if fork is not None:
            release_interrupts_after_fork(fork.handler, fork.armed)


def _after_fork_in_child() -> None:
    """Free every lock: only the forking thread lives on, and it held none (fork is not called from inside a
    structure's method)."""
    _HELD_FOR_FORK.clear()
    _FORKING.clear()
    _FORK_DONE[0] = threading.Condition()
    _LOCKS_GUARD[0] = threading.RLock()
    me = _get_ident()
    for lock in _all_locks():
        torn = lock._writing and lock._writer != me  # the fork's wait did not run (a Ctrl-C at its hook's entry)
        lock._reset()
        if torn:
            lock.running = _TornInChild()


class _Fork:
    """A fork under way: the Ctrl-C handler its hooks hold, and whether a Ctrl-C is set to be raised
    where ``os.fork`` returns (:func:`~culling.runtime.interrupts.arm_after_fork`)."""

    __slots__ = ("armed", "handler")

    def __init__(self, handler: Any) -> None:
        self.handler, self.armed = handler, False


#: The threads inside a fork's hooks: no mutation starts while there is one (:func:`_wait_for_forks`).
_FORKING: dict[int, _Fork] = {}


class _TornInChild(dict):  # type: ignore[type-arg]
    """A fork's child's ``running`` for a structure another thread was changing at the fork: the fork did
    not wait (a Ctrl-C at the very start of its hook, which CPython prints, drops, and forks anyway), so
    the structure may be half-changed.  Every call of it raises instead of answering from it."""

    def __setitem__(self, key: object, value: object) -> None:
        raise RuntimeError(_TORN)

    def values(self) -> Any:
        raise RuntimeError(_TORN)


_TORN = ("this structure was being changed by another thread when the process forked, and the fork could "
         "not wait for the change to finish (interrupted): in this child it may be half-changed, so it is "
         "not used; fork again, or rebuild it here")

#: Notified when a fork is done (a new one in a fork's child).
_FORK_DONE = [threading.Condition()]

os.register_at_fork(before=_before_fork, after_in_parent=_after_fork_in_parent, after_in_child=_after_fork_in_child)


class Guarded(Protocol):
    """A structure whose public methods take ``self._rw``."""

    _rw: ReadWriteLock


G = TypeVar("G", bound=Guarded)


def reading(method: Callable[Concatenate[G, P], R]) -> Callable[Concatenate[G, P], R]:
    """Run ``method`` holding its structure's lock as a reader (queries, look-ups).

    The reader registers inside the ``try`` and its ``finally`` removes it
    with one C call before anything else, so a Ctrl-C anywhere cannot leave
    it registered (see the module's docstring; a Ctrl-C between that removal
    and the waking of a waiting writer costs the writer ``_LOST_WAKE_S``).

    A query runs whole, as a mutation does: a Ctrl-C meanwhile is raised when it has finished
    (:func:`culling.runtime.interrupts.hold_interrupts`, 0.5 us a call).  numba boxes a kernel's
    arrays through a Python function, and a Ctrl-C that landed there while an interest query boxed
    the six arrays of :func:`culling.tree.inverted.grid_viewers` killed the process (SIGSEGV, 2 of
    10 Ctrl-Cs sent to a loop of 1M-point ``query_many`` calls); most others came back as a
    ``SystemError``.  Both wrappers are every public method's way in and out, so they also give
    back a Ctrl-C that numba reported as ``SystemError`` where nothing held it (off the main thread
    it is not delivered there anyway; :func:`culling.runtime.interrupts.unmask_interrupt`).
    """
    def read(self: G, /, *args: P.args, **kwargs: P.kwargs) -> R:
        held = hold_interrupts()
        lock = self._rw
        token = object()
        try:
            try:
                lock.enter_read(token)
                return method(self, *args, **kwargs)
            except SystemError as exc:
                unmask_interrupt(exc)
                raise
            finally:
                if lock.running.pop(token, None) is not None and lock._closed:
                    lock.wake()
        finally:
            release_interrupts(held)
    functools.update_wrapper(read, method)
    return read


def writing(method: Callable[Concatenate[G, P], R]) -> Callable[Concatenate[G, P], R]:
    """Run ``method`` holding its structure's lock as the writer (mutations), whole: a Ctrl-C meanwhile
    is raised when it has finished (:func:`culling.runtime.interrupts.hold_interrupts`, 0.5 us a call)."""
    def write(self: G, /, *args: P.args, **kwargs: P.kwargs) -> R:
        held = hold_interrupts()
        lock = self._rw
        try:
            lock.acquire_write()
            try:
                return method(self, *args, **kwargs)
            except SystemError as exc:
                unmask_interrupt(exc)
                raise
            finally:
                lock.release_write()
        finally:
            release_interrupts(held)
    functools.update_wrapper(write, method)
    return write


def state_without_lock(obj: Any) -> dict[str, Any]:
    """``obj.__dict__`` without its lock, for ``__getstate__`` (pickle, copy and deepcopy)."""
    state = dict(obj.__dict__)
    state.pop("_rw", None)
    return state
