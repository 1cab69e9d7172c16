"""Ctrl-C put aside while a step runs whole: the coordinator and its shards never disagree.

Python raises ``KeyboardInterrupt`` between any two steps of its bytecode.
``ShardedInterest.update_many`` changes the coordinator's tree, then its map
of which shard holds what, then sends each shard its share: an interrupt
between two of those leaves a service whose shards answer from another
world than the coordinator's, for good, in a program that catches the
interrupt (a server's console, a notebook).  :func:`runs_whole` holds a
SIGINT that arrives meanwhile and hands it to the program's handler at the
end; :func:`ctrl_c_held` tells its caller whether one came instead.  Only
the main thread receives signals, so elsewhere both just run the step.
:func:`terminate_as_ctrl_c` makes SIGTERM (``kill``, ``timeout``, a service
manager's stop) take the same way out as Ctrl-C.
"""

from __future__ import annotations

import contextlib
import functools
import signal
import threading
from collections.abc import Callable, Iterator
from typing import Any, ParamSpec, TypeVar

__all__ = ["Termination", "ctrl_c_held", "runs_whole", "terminate_as_ctrl_c"]

T = TypeVar("T")
P = ParamSpec("P")


def ctrl_c_held(call: Callable[[], T]) -> tuple[T, bool]:
    """``call()`` with SIGINT put aside until it returns: ``(its result, whether a SIGINT came that the
    program would have acted on)``.

    Nothing is held off the main thread, or where the handler was not installed from Python
    (``signal.getsignal`` gives None: it could not be put back).  A SIGINT the program ignores
    (``SIG_IGN``: a job started with ``&`` from a script, ``nohup``) is not reported, as
    :func:`runs_whole` does not deliver it.
    """
    came: list[int] = []
    previous = _hold(came)
    try:
        result = call()
    finally:
        if previous is not None:
            signal.signal(signal.SIGINT, previous)
    return result, bool(came) and previous != signal.SIG_IGN


def runs_whole(method: Callable[P, T]) -> Callable[P, T]:
    """``method`` with SIGINT held from its start to its end, then handed to the program's handler
    (Python's default raises ``KeyboardInterrupt`` there, after the step is whole)."""
    @functools.wraps(method)
    def run(*args: P.args, **kwargs: P.kwargs) -> T:
        came: list[int] = []
        previous = _hold(came)
        try:
            return method(*args, **kwargs)
        finally:
            if previous is not None:
                signal.signal(signal.SIGINT, previous)
                if came:
                    _deliver(previous)
    return run


def _hold(came: list[int]) -> Any:
    """Put SIGINTs into ``came`` from now; return the handler to put back (None: nothing held)."""
    if threading.current_thread() is not threading.main_thread():
        return None
    previous = signal.getsignal(signal.SIGINT)
    if previous is None:  # installed from C: signal() could not put it back
        return None
    signal.signal(signal.SIGINT, lambda number, frame: came.append(number))
    return previous


def _deliver(handler: Any) -> None:
    """What a SIGINT does under ``handler``: call it, end the process (``SIG_DFL``) or nothing (``SIG_IGN``)."""
    if callable(handler):
        handler(signal.SIGINT, None)
    elif handler == signal.SIG_DFL:
        signal.raise_signal(signal.SIGINT)


class Termination:
    """What :func:`terminate_as_ctrl_c` yields: whether a SIGTERM came, and :meth:`claim` to take the
    signal back from a library that installed its own handler meanwhile."""

    def __init__(self) -> None:
        self.came = False

    def handle(self, number: int, frame: Any) -> None:
        """SIGTERM: a SIGINT to this process, so that whatever holds Ctrl-C holds it too; where SIGINT is
        ignored or not Python's to handle, the ``KeyboardInterrupt`` raised here instead."""
        self.came = True
        if callable(signal.getsignal(signal.SIGINT)):
            signal.raise_signal(signal.SIGINT)
        else:
            raise KeyboardInterrupt

    def claim(self) -> None:
        """Install :meth:`handle` for SIGTERM again (Ray's ``init`` puts a handler of its own there, which
        prints a C++ stack and ends the process without its clean-up).  Main thread only."""
        if threading.current_thread() is threading.main_thread():
            signal.signal(signal.SIGTERM, self.handle)


@contextlib.contextmanager
def terminate_as_ctrl_c() -> Iterator[Termination]:
    """SIGTERM handled as a Ctrl-C while the block runs (held where :func:`ctrl_c_held` holds one, then
    ``KeyboardInterrupt``), and the handler before put back at its end; ``.came`` says whether one came.
    Off the main thread nothing changes."""
    termination = Termination()
    if threading.current_thread() is not threading.main_thread():
        yield termination
        return
    previous = signal.getsignal(signal.SIGTERM)
    termination.claim()
    try:
        yield termination
    finally:
        signal.signal(signal.SIGTERM, signal.SIG_DFL if previous is None else previous)
