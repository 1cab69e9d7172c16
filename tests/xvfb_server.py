"""One way to start the virtual X server the window tests drive (imported by tests/demo and tests/examples)."""

from __future__ import annotations

import os
import subprocess


def start_xvfb(screen: str = "800x600x24") -> tuple[subprocess.Popen, str]:
    """An Xvfb server accepting connections on a display no other server holds: ``(process, ":N")``.

    ``-displayfd``: the server picks a free display and writes its number once it accepts connections,
    so nothing is guessed and no start-up time is allowed for.  ``-noreset``: it does not reset when its
    last client leaves; a reset writes the number to the pipe again, and a server whose pipe has no
    reader any more dies of SIGPIPE (the next client: "cannot connect to X display").
    """
    read_fd, write_fd = os.pipe()
    proc = subprocess.Popen(["Xvfb", "-displayfd", str(write_fd), "-screen", "0", screen, "-nolisten", "tcp",
                             "-noreset"], pass_fds=(write_fd,), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    os.close(write_fd)
    with os.fdopen(read_fd) as reported:
        number = reported.readline().strip()
    if not number.isdigit():
        proc.kill()
        proc.wait(10)
        raise RuntimeError(f"Xvfb did not report a display number (exit status {proc.poll()})")
    return proc, f":{number}"
