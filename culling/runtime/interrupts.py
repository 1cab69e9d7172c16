"""Ctrl-C: a mutation, a query or a compile runs whole, and the ``KeyboardInterrupt`` comes at its end.

Python raises ``KeyboardInterrupt`` on the main thread between any two steps
of its bytecode.  A mutation is several kernel calls with Python between
them, so an interrupt there would leave a tree half-changed (a node
emptied but not yet pruned, a count one off), which a program that catches
the interrupt (a notebook, a REPL, a game's console) would then query.
:func:`hold_interrupts` and :func:`release_interrupts` put a SIGINT that
arrives during a mutation aside and hand it to the program's own handler
once the mutation has finished; :mod:`culling.runtime.locks` wraps every
mutation and every query in them (a query's kernels box their arrays through a Python
function, where an interrupt could crash the process), :func:`runs_whole` the wrappers' own changes and the
kernels' compiles (:mod:`culling.runtime.jit`: llvmlite is not safe to
interrupt), and a fork's wait for another thread's mutation, whose
interrupt is raised where ``os.fork`` returns (:func:`release_interrupts_after_fork`).
On a thread other than the main one there is nothing to hold: Python runs
signal handlers on the main thread only.

numba reports a Ctrl-C that lands while it boxes a kernel's result as a
``SystemError`` (:func:`masked_interrupt`); the public methods give the
``KeyboardInterrupt`` back (:func:`unmask_interrupt`).

>>> token = hold_interrupts()
>>> release_interrupts(token)
"""

from __future__ import annotations

import _thread
import functools
import operator
import os as _os
import signal
import sys
import threading
from collections.abc import Callable
from types import FrameType
from typing import Any, ParamSpec, TypeVar

#: ``signal``'s C module: its ``signal()`` without the enum conversions costs 0.2 us a call against
#: 2.3 us (a mutation swaps the handler twice).
_signals: Any = sys.modules.get("_signal", signal)

__all__ = ["arm_after_fork", "hold_interrupts", "masked_interrupt", "release_interrupts", "release_interrupts_after_fork",
           "runs_whole", "unmask_interrupt"]

T = TypeVar("T")
P = ParamSpec("P")

_SIGINT = int(signal.SIGINT)

#: SIGINTs that arrived while a mutation held them (the frames they interrupted); ``list.append`` is atomic.
_held: list[FrameType | None] = []

#: The program's handler while :func:`_hold` stands in for it (None: nothing held): a fork's child, whose
#: holding thread is gone, gets it back (:func:`_after_fork_in_child`).
_program_handler: list[Any] = [None]


def _hold(signum: int, frame: FrameType | None) -> None:
    """The SIGINT handler while a mutation runs: put the signal aside."""
    _held.append(frame)


def hold_interrupts() -> Any:
    """Put SIGINTs aside until :func:`release_interrupts` (give it what this returns).

    Returns the program's handler, or None where there is nothing to hold:
    not the main thread, a mutation inside another already holding them, or
    no Python handler (``SIG_IGN``, ``SIG_DFL``: no exception can come; or one
    not installed from Python, as at interpreter exit, where a finalizer may mutate).
    About 0.5 us for the pair.
    """
    if threading.current_thread() is not threading.main_thread():  # asked each time: a fork's child has its own
        return None
    handler = _signals.getsignal(_SIGINT)
    if handler is _hold or not callable(handler):  # held already, SIG_IGN/SIG_DFL, or None: not set from Python
        return None  # (None at interpreter exit or in an embedding: signal() could not put it back)
    _program_handler[0] = handler
    _signals.signal(_SIGINT, _hold)
    return handler


def release_interrupts(handler: Any) -> None:
    """Give SIGINT back to ``handler`` (what :func:`hold_interrupts` returned) and run it for a
    signal that arrived meanwhile: Python's default handler raises ``KeyboardInterrupt`` here."""
    if handler is None:
        return
    try:
        _signals.signal(_SIGINT, handler)
    finally:  # a second SIGINT just after the swap raises out of it: that interrupt is the held one's too
        _program_handler[0] = None
        frame = _held[-1] if _held else None
        _held.clear()
    if frame is not None:
        handler(_SIGINT, frame)


def arm_after_fork() -> bool:
    """In a fork's ``before`` hook, holding SIGINT (:func:`hold_interrupts`): if one has arrived, have it
    raised where ``os.fork`` returns in the parent, and return True.

    Raised in a hook, CPython would print it, drop it and fork anyway; and a Python frame that sets the
    interrupt (``_thread.interrupt_main``) gets it itself, as would any Python hook that runs after it
    (another library's, whose own work it would cut short).  So this registers two ``after_in_parent``
    hooks, after every hook registered so far (they run in that order), that are C all the way:
    ``list.sort`` calls its key on each item, and ``list.clear`` empties the list.  They set the
    interrupt once; at later forks they do nothing (two small hooks per fork interrupted so).
    """
    if not _held:
        return False
    _held.clear()
    pending: list[Callable[[], None]] = [_thread.interrupt_main]
    _os.register_at_fork(after_in_parent=functools.partial(pending.sort, key=operator.call))  # type: ignore[arg-type]
    _os.register_at_fork(after_in_parent=pending.clear)
    return True


def release_interrupts_after_fork(handler: Any, armed: bool) -> None:
    """:func:`release_interrupts` for a fork's ``after_in_parent`` hook: give SIGINT back to ``handler``.

    One that arrived after :func:`arm_after_fork` ran (``armed`` False: none before it) is sent again
    from a thread of its own, so not inside this hook: the main thread gets it as soon as it next lets
    another thread run, just after ``os.fork`` returns (a real signal: a wait it is in ends).
    """
    if handler is None:
        return
    swapped = False
    try:
        _signals.signal(_SIGINT, handler)
        swapped = True
    finally:  # a SIGINT just after the swap raises out of it, and CPython drops what a hook raises: send it again
        _program_handler[0] = None
        again = (bool(_held) and not armed) or not swapped
        _held.clear()
        main = threading.main_thread().ident  # this thread's (the hook runs on the main one): never None
        if again and main is not None:
            _thread.start_new_thread(signal.pthread_kill, (main, _SIGINT))


def _after_fork_in_child() -> None:
    """The child of a fork made while a mutation on another thread held SIGINT: that thread is gone and
    would never give the program's handler back (the child could not be interrupted)."""
    handler = _program_handler[0]
    _held.clear()
    if handler is not None and threading.current_thread() is threading.main_thread():
        _program_handler[0] = None
        if _signals.getsignal(_SIGINT) is _hold:
            _signals.signal(_SIGINT, handler)


_os.register_at_fork(after_in_child=_after_fork_in_child)


def runs_whole(method: Callable[P, T]) -> Callable[P, T]:
    """``method`` with SIGINT held (:func:`hold_interrupts`) from its start to its end: for a wrapper
    (``CollisionCandidates``, the trackers) whose own state changes around a structure's mutation,
    so that a Ctrl-C between the two cannot leave them disagreeing."""
    def run(*args: P.args, **kwargs: P.kwargs) -> T:
        held = hold_interrupts()
        try:
            return method(*args, **kwargs)
        finally:
            release_interrupts(held)
    functools.update_wrapper(run, method)
    return run


def masked_interrupt(exc: BaseException) -> KeyboardInterrupt | None:
    """The ``KeyboardInterrupt`` that numba reported as ``exc``, or None if ``exc`` is something else.

    numba boxes an array that a kernel returns by calling a Python function
    (``numba.core.serialize._numba_unpickle``).  A Ctrl-C that lands there
    leaves a pending ``KeyboardInterrupt`` while the call still returns its
    result, and CPython reports ``SystemError: CPUDispatcher(...) returned a
    result with an exception set``, caused by the interrupt: here seven
    Ctrl-Cs of eight that hit a query loop.  One that lands inside
    ``_numba_unpickle``'s own call is reported twice over (a ``SystemError``
    caused by one caused by the interrupt).
    """
    if not isinstance(exc, SystemError):
        return None
    cause = exc.__cause__
    while isinstance(cause, SystemError):
        cause = cause.__cause__
    return cause if isinstance(cause, KeyboardInterrupt) else None


def unmask_interrupt(exc: SystemError) -> None:
    """Raise the ``KeyboardInterrupt`` behind ``exc`` (:func:`masked_interrupt`), if there is one:
    a user who presses Ctrl-C gets the interrupt they pressed."""
    interrupt = masked_interrupt(exc)
    if interrupt is not None:
        raise interrupt from None
