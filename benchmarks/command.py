"""What every benchmark tool's command line shares: the optional packages it needs, asked for by name
before a run starts, and a Ctrl-C said in one line.

Installed with the project's demo extra only, a tool that needed SciPy stopped
in its first section with a ``ModuleNotFoundError`` traceback; it now says in
one line which extra to install.  A Ctrl-C stopped a run with a traceback
through whatever it was timing; it now ends with one line and status 130, as
a shell reports an interrupted command.
"""

from __future__ import annotations

import argparse
import importlib.util
import sys
from collections.abc import Callable
from typing import NoReturn

__all__ = ["exit_with", "require"]


def require(ap: argparse.ArgumentParser, modules: list[str], extra: str) -> None:
    """Exit through ``ap`` with one line (status 1) if any of ``modules`` is not installed, naming the
    project's ``extra`` that brings them."""
    missing = [name for name in modules if importlib.util.find_spec(name) is None]
    if missing:
        ap.exit(1, f"{ap.prog}: needs {', '.join(missing[:-1])}{' and ' if len(missing) > 1 else ''}{missing[-1]}: "
                   f"pip install -e \".[{extra}]\" (the {extra} extra)\n")


def exit_with(main: Callable[[], int | None], prog: str) -> NoReturn:
    """Run a tool's ``main`` and exit with its status; a Ctrl-C ends it with ``PROG: error: interrupted``
    and status 130."""
    try:
        status = main()
    except KeyboardInterrupt:
        print(f"{prog}: error: interrupted", file=sys.stderr, flush=True)
        status = 130
    sys.exit(status)
