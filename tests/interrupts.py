"""Ctrl-C in a child program, as a terminal sends it: shared by the tests of the demo, the examples and
the server's demo (each interrupts a run mid-way and expects one line and exit status 130)."""

from __future__ import annotations

import signal
import subprocess
import time
from collections.abc import Callable


def sigint_as_a_terminal_gives_it() -> None:
    """In the child (``preexec_fn``): SIGINT's default action, whatever this process inherited (a shell's
    background job ignores SIGINT, and Python then keeps ignoring it instead of raising KeyboardInterrupt)."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def interrupt_once(proc: subprocess.Popen[str], ready: Callable[[], bool], patience: float = 240.0,
                   signal_number: int = signal.SIGINT) -> str:
    """Wait until ``ready()`` (the run is under way; ``patience`` seconds at most, a bound for a stuck
    child, not a timing), send SIGINT (or ``signal_number``), and return the child's stderr once it has
    ended."""
    deadline = time.monotonic() + patience
    while time.monotonic() < deadline and proc.poll() is None and not ready():
        time.sleep(0.05)
    assert proc.poll() is None, proc.communicate()[1]  # still running when Ctrl-C comes
    proc.send_signal(signal_number)
    return proc.communicate(timeout=120)[1]
