"""Whether a window can open here: the display the environment names, reached before a toolkit tries.

A toolkit handed a display that is set but gone (an X server that stopped, a
Wayland socket left behind) fails in its own way: GLFW aborts the process on
an assertion, Panda3D raises a bare ``Exception``.  :func:`display_problem`
asks the display itself first, so a program can say in one line what is
wrong and how to render offscreen instead.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import socket
import sys

__all__ = ["display_problem"]


def display_problem() -> str | None:
    """Why no window can open, in words, or None where one may (or where this cannot tell).

    On Linux and the BSDs: no ``DISPLAY`` or ``WAYLAND_DISPLAY`` set, or none
    of those set answering (an X connection opened and closed at once through
    Xlib; a connection to the Wayland socket).  Elsewhere, None.
    """
    if not sys.platform.startswith(("linux", "freebsd", "openbsd")):
        return None
    x11, wayland = os.environ.get("DISPLAY"), os.environ.get("WAYLAND_DISPLAY")
    if not x11 and not wayland:
        return "no display (DISPLAY and WAYLAND_DISPLAY are unset)"
    if (x11 and _x11_answers(x11) is not False) or (wayland and _wayland_answers(wayland)):
        return None
    named = " or ".join(repr(d) for d in (x11, wayland) if d)
    return f"the display {named} cannot be reached"


def _x11_answers(display: str) -> bool | None:
    """Whether Xlib opens ``display`` (None: no Xlib here to ask)."""
    name = ctypes.util.find_library("X11")
    if name is None:
        return None
    try:
        xlib = ctypes.CDLL(name)
    except OSError:
        return None
    xlib.XOpenDisplay.restype = ctypes.c_void_p
    xlib.XOpenDisplay.argtypes = [ctypes.c_char_p]
    xlib.XCloseDisplay.argtypes = [ctypes.c_void_p]
    connection = xlib.XOpenDisplay(display.encode())
    if not connection:
        return False
    xlib.XCloseDisplay(connection)
    return True


def _wayland_answers(display: str) -> bool:
    """Whether the Wayland socket ``display`` (a name in ``XDG_RUNTIME_DIR``, or a path) accepts a connection."""
    path = display if os.path.isabs(display) else os.path.join(os.environ.get("XDG_RUNTIME_DIR", ""), display)
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        try:
            sock.connect(path)
        except OSError:
            return False
    return True
