"""The optional packages the benchmark tools need, asked for by name before a run starts.

Installed with the project's demo extra only, a tool that needed SciPy stopped
in its first section with a ``ModuleNotFoundError`` traceback; it now says in
one line which extra to install.
"""

from __future__ import annotations

import argparse
import importlib.util

__all__ = ["require"]


def require(ap: argparse.ArgumentParser, modules: list[str], extra: str) -> None:
    """Exit through ``ap`` with one line (status 1) if any of ``modules`` is not installed, naming the
    project's ``extra`` that brings them."""
    missing = [name for name in modules if importlib.util.find_spec(name) is None]
    if missing:
        ap.exit(1, f"{ap.prog}: needs {', '.join(missing[:-1])}{' and ' if len(missing) > 1 else ''}{missing[-1]}: "
                   f"pip install -e \".[{extra}]\" (the {extra} extra)\n")
