"""Whole numbers on the command line as a person writes them, for the demo and the benchmark tools (the
engine examples print their counts as ``int`` reads them: a copy of one needs no more of ``engine/``).

Their help prints counts as ``200,000``; Python's ``int`` takes ``200000`` and ``200_000`` but refuses
``200,000``, so a count copied back from the help was an error.  :func:`whole_number` takes all three.
"""

from __future__ import annotations

import argparse
import re
from collections.abc import Callable

__all__ = ["whole_number"]

#: ``20000``, ``20_000`` (as Python writes it) or ``20,000`` (groups of three); ``1,0,0`` is a typo, not a hundred.
_WHOLE = re.compile(r"[+-]?(\d+(_\d+)*|\d{1,3}(,\d{3})+)")


def whole_number(least: int | None = None) -> Callable[[str], int]:
    """An argparse ``type``: a whole number written as a person would, of at least ``least`` (None: any).

    >>> count = whole_number(1)
    >>> count("200,000"), count("200_000"), count(" 7 ")
    (200000, 200000, 7)
    >>> count("1,0,0")
    Traceback (most recent call last):
    argparse.ArgumentTypeError: expected a whole number, got '1,0,0'
    >>> count("0")
    Traceback (most recent call last):
    argparse.ArgumentTypeError: must be >= 1, got 0
    """
    def parse(text: str) -> int:
        if not _WHOLE.fullmatch(text.strip()):
            raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}")
        value = int(text.strip().replace(",", ""))
        if least is not None and value < least:
            raise argparse.ArgumentTypeError(f"must be >= {least}, got {value}")
        return value

    return parse
