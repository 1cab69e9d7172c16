"""The lattice's definitions in exact arithmetic, the truth the compiled cell and window kernels are tested against.

Written from the definitions (docs/DESIGN.md, "The lattice and its cell
function" and "The walk and its window") with ``fractions.Fraction``, not
from the kernels' float tricks: the cell of ``u`` on level ``L`` is
``floor(u * 2**L) + (ANCHOR << L)`` (``(floor(u) + ANCHOR) >> -L`` on grown
levels) for ``u`` clamped to just outside the largest world; the window
visits the cells of the largest floats at or below ``p - half`` and ``p + half``.
"""

from __future__ import annotations

import math
from fractions import Fraction

from culling.core import cells
from culling.core.lattice import ANCHOR, MAX_GROWTH, Lattice

__all__ = ["CLAMP_HI", "CLAMP_LO", "cell", "largest_float_at_most", "placed_cell", "window_cells"]

#: Root-relative coordinates are clamped to one unit outside the largest world.
CLAMP_LO = -float(ANCHOR) - 1.0
CLAMP_HI = float((1 << MAX_GROWTH) - ANCHOR) + 1.0


def cell(u: float, level: int) -> int:
    """The lattice cell of root-relative ``u`` on ``level``, exactly."""
    x = Fraction(min(max(u, CLAMP_LO), CLAMP_HI))
    if level >= 0:
        return math.floor(x * 2 ** level) + (ANCHOR << level)
    return (math.floor(x) + ANCHOR) >> -level


def placed_cell(x: float, origin: float, size: float, level: int) -> int:
    """The cell of a centre ``x`` as the structures place it (:func:`culling.core.cells.placed_u`):
    the cell of the exact ``(x - origin) / size`` wherever its float quotient lies within ``2**25``
    (every world), else the float quotient's."""
    u = (x - origin) / size
    if not abs(u) < 2.0 ** 25:
        return cell(u, level)
    exact = min(max((Fraction(x) - Fraction(origin)) / Fraction(size), Fraction(CLAMP_LO)), Fraction(CLAMP_HI))
    if level >= 0:
        return math.floor(exact * 2 ** level) + (ANCHOR << level)
    return (math.floor(exact) + ANCHOR) >> -level


def largest_float_at_most(value: Fraction | float) -> float:
    """The largest float64 ``<= value``; ``-inf`` or ``inf`` where rounding to nearest overflows
    (the kernels' convention: any bound beyond the floats is as good as infinity)."""
    if isinstance(value, float):
        return value
    try:
        x = float(value)  # rounds to nearest
    except OverflowError:
        return math.inf if value > 0 else -math.inf
    if Fraction(x) > value:
        x = math.nextafter(x, -math.inf)
    return x


def window_cells(p: float, origin: float, size: float, level: int, half: float) -> tuple[int, int]:
    """First and last cell one axis of a query at ``p`` visits on ``level``, for the half reach ``half``."""
    if half == math.inf:
        lo, hi = -math.inf, math.inf
    else:
        lo = largest_float_at_most(Fraction(p) - Fraction(half))
        hi = largest_float_at_most(Fraction(p) + Fraction(half))
    return cell((lo - origin) / size, level), cell((hi - origin) / size, level)


def decidable(lat: Lattice, level: int, scale: float) -> bool:
    """Whether the walk decides this level's window exactly: ``scale * W / 2`` is a product Dekker's
    method makes exact (:func:`culling.core.cells.face_sign`; a tiny or huge scale is not)."""
    half = lat.size * 2.0 ** (-level - 1)
    reach = scale * half
    return scale == 1.0 or 2.0 ** -960 <= reach <= 2.0 ** 995


def visit_window(lat: Lattice, p: list[float], level: int, scale: float) -> list[tuple[int, int]]:
    """Per axis, the first and last cell a query at ``p`` visits on ``level`` (the readable definition).

    Exact: the cells ``k`` with ``lo_k - s*W/2 <= x < hi_k + s*W/2`` in rationals, ``lo_k`` the
    lattice face ``origin + (k - ANCHOR * 2**level) * W``.  Where the walk cannot decide
    (:func:`decidable`), the float window of the exact definitions (``lattice_reference``),
    widened by two cells.
    """
    out = []
    if not decidable(lat, level, scale):
        half = cells.half_reach(lat.size, level, scale)
        for axis, x in enumerate(p):
            first, last = window_cells(x, lat.origin_list[axis], lat.size, level, half)
            out.append((first - 2, last + 2))
        return out
    edge = Fraction(lat.size) * Fraction(2) ** -level
    reach = Fraction(scale) * edge / 2
    shift = Fraction(ANCHOR) * Fraction(2) ** level
    for axis, x in enumerate(p):
        t = (Fraction(x) - Fraction(lat.origin_list[axis])) / edge + shift
        out.append((math.floor(t - reach / edge), math.floor(t + reach / edge)))
    return out
