"""The lattice's kernels: the cell function and the window of cells a point visits on a level.

The window (the "conservative visit"; the readable reference functions are
:func:`culling.core.lattice.round_down_sub`, :func:`~culling.core.lattice.round_down_add`
and :func:`~culling.core.lattice.half_reach`): a sphere on level ``L`` has a radius
below ``W/2``, so a sphere of scale ``s`` containing ``p`` has, per axis,
``p - s*W/2 < c < p + s*W/2``, and as ``c`` is a float, ``q_lo <= c <= q_hi``
for the largest floats ``q_lo <= p - half`` and ``q_hi <= p + half``
(``half`` the smallest float ``>= s*W/2``; TwoSum and Dekker's product give
the rounding directions).  Centres are placed by the monotone
``f(x) = fl(fl(x - origin) / size)`` and the lattice's monotone cell
function, so the cells ``cell(f(q_lo)) .. cell(f(q_hi))`` hold every such
centre.  When nothing rounds this is DESIGN.md's ``lo - s*W/2 <= p < hi +
s*W/2``: at most 2 nodes per axis for ``s <= 1``.  ``f(q)`` is clamped to
just outside the largest world before becoming an integer, so a huge scale
is a wide window over the existing nodes, never an overflow or a hang.

These kernels are plain numba functions; Python code calls them too.
"""

from __future__ import annotations

import math

import numpy as np

from culling.core.jit import inline_kernel, kernel
from culling.core.lattice import ANCHOR, MAX_GROWTH

__all__ = ["axis_window", "cell_of", "cell_scaled", "grown_half", "half_reach", "half_reach_by", "level_factor",
           "multiply_up", "round_down_add", "round_down_sub", "round_up_add", "window"]

#: Root-relative coordinates are clamped to one unit outside the largest
#: world (the level ``-MAX_GROWTH`` cell), where no node can ever be.
_U_LOW = -float(ANCHOR) - 1.0
_U_HIGH = float((1 << MAX_GROWTH) - ANCHOR) + 1.0

_SPLIT = 134217729.0  # 2**27 + 1: Veltkamp's split of a float into two 26-bit halves

@inline_kernel
def round_down_sub(a: float, b: float) -> float:
    """The largest float ``<= a - b`` (exact); ``b >= 0``.  :func:`culling.core.lattice.round_down_sub`."""
    r = a - b
    if r == -math.inf or b == math.inf:
        return -math.inf
    bb = r - a
    error = (a - (r - bb)) + (-b - bb)  # TwoSum: a - b == r + error exactly
    return np.nextafter(r, -math.inf) if error < 0.0 else r


@inline_kernel
def round_down_add(a: float, b: float) -> float:
    """The largest float ``<= a + b`` (exact); ``b >= 0``.  :func:`culling.core.lattice.round_down_add`."""
    r = a + b
    if r == math.inf or b == math.inf:
        return math.inf
    bb = r - a
    error = (a - (r - bb)) + (b - bb)  # TwoSum: a + b == r + error exactly
    return np.nextafter(r, -math.inf) if error < 0.0 else r


@inline_kernel
def round_up_add(a: float, b: float) -> float:
    """The smallest float ``>= a + b`` (exact); ``a, b >= 0``.  TwoSum says whether ``fl(a + b)`` lies below."""
    r = a + b
    if r == math.inf:
        return math.inf
    bb = r - a
    error = (a - (r - bb)) + (b - bb)  # TwoSum: a + b == r + error exactly
    return np.nextafter(r, math.inf) if error > 0.0 else r


@inline_kernel
def grown_half(half: float, grow: float) -> float:
    """A window's half width grown by a probe's radius: the smallest float ``>= half + grow``.

    A probe sphere of radius ``rho`` meets a sphere of scaled radius below
    ``s*W/2`` only if their centres are closer than ``s*W/2 + rho`` on every
    axis, so the probe's window on a level is the point's window widened by
    ``rho`` at both ends: ``(2 + ceil(2 * rho / W))`` cells per axis at most
    for ``s <= 1``.  ``grow == 0`` leaves ``half`` as it is (the point query).
    """
    return half if grow == 0.0 else round_up_add(half, grow)


@kernel
def multiply_up(a: float, b: float) -> float:
    """The smallest float ``>= a * b`` (exact), ``a, b >= 0``.  :func:`culling.core.lattice.multiply_up`."""
    r = a * b
    if r == math.inf or r == 0.0:
        return r if a == 0.0 or b == 0.0 or r == math.inf else float(np.nextafter(0.0, math.inf))
    if r < 2.0 ** -960 or a > 2.0 ** 995 or b > 2.0 ** 995:
        return float(np.nextafter(r, math.inf))
    c = _SPLIT * a
    a_hi = c - (c - a)
    a_lo = a - a_hi
    c = _SPLIT * b
    b_hi = c - (c - b)
    b_lo = b - b_hi
    error = ((a_hi * b_hi - r) + a_hi * b_lo + a_lo * b_hi) + a_lo * b_lo  # Dekker: a * b == r + error
    return float(np.nextafter(r, math.inf)) if error > 0.0 else r


@inline_kernel
def half_reach(size: float, level: int, scale: float) -> float:
    """The smallest float ``>= scale * W / 2`` on ``level``.  :func:`culling.core.lattice.half_reach`."""
    half = math.ldexp(size, -level - 1)
    if half == math.inf or math.ldexp(half, level + 1) != size:
        half = np.nextafter(half, math.inf)
    return float(half) if scale == 1.0 else float(multiply_up(scale, half))


@inline_kernel
def half_reach_by(size: float, down: float, up: float, scale: float) -> float:
    """:func:`half_reach` with the level's powers of two given: ``down = 2**(-level-1)``, ``up = 2**(level+1)``.

    On the walk's levels (``-MAX_GROWTH .. MAX_DEPTH``) both are normal floats,
    so ``size * down`` and ``half * up`` are single correctly rounded products
    of the exact values, as ``ldexp`` gives them: the same result, without a
    library call per level.
    """
    half = size * down
    if half == math.inf or half * up != size:
        half = np.nextafter(half, math.inf)
    return float(half) if scale == 1.0 else float(multiply_up(scale, half))


@inline_kernel
def level_factor(level: int) -> float:
    """``2**level`` for ``level >= 0`` (exact: ``level <= MAX_DEPTH``), 1.0 for grown levels (unused there).

    Computed once per level, so that :func:`cell_scaled` multiplies instead of calling ``ldexp`` per axis.
    """
    return math.ldexp(1.0, level) if level >= 0 else 1.0


@inline_kernel
def cell_scaled(u: float, level: int, factor: float) -> int:
    """:func:`cell_of` with the level's ``factor = level_factor(level)`` given.

    After the clamp ``|u| < 2**25`` and ``level <= MAX_DEPTH``, so ``u * 2**level``
    neither overflows nor loses a bit (a subnormal ``u`` only moves up): the
    product is exactly ``ldexp(u, level)``, the lattice's scaling.
    """
    u = min(max(u, _U_LOW), _U_HIGH)
    if level >= 0:
        return int(math.floor(u * factor)) + (ANCHOR << level)
    return int((math.floor(u) + ANCHOR) >> -level)


@kernel
def cell_of(u: float, level: int) -> int:
    """The lattice cell (:meth:`culling.core.lattice.Lattice.cell`) of root-relative ``u`` on ``level``.

    ``u`` is clamped to just outside the largest world first: every integer
    stays below 2**49, and inf becomes a cell no node has.
    """
    return cell_scaled(u, level, level_factor(level))


@inline_kernel
def axis_window(x: float, o: float, half: float, size: float, level: int, factor: float) -> tuple[int, int]:
    """First and last cell on one axis: the cells of the largest floats ``<= x - half`` and ``<= x + half``.

    ``o`` is the origin's coordinate on that axis, ``half = half_reach(size, level, scale)``
    and ``factor = level_factor(level)``: both once per level.  Scalars only, so
    the walk's per-level loop over the axes compiles to straight-line code.
    """
    return (cell_scaled((round_down_sub(x, half) - o) / size, level, factor),
            cell_scaled((round_down_add(x, half) - o) / size, level, factor))


@kernel
def window(p: np.ndarray, scale: float, origin: np.ndarray, size: float, level: int,
           lo: np.ndarray, hi: np.ndarray, grow: float = 0.0) -> None:
    """Write the first and last cell, per axis, that ``p`` visits on ``level`` into ``lo`` and ``hi``.

    The cells (:meth:`culling.core.lattice.Lattice.cell`) of the largest floats
    ``<= p - half`` and ``<= p + half``, ``half >= scale * W / 2 + grow``
    (``grow``: a probe sphere's radius, :func:`grown_half`).
    """
    half = grown_half(half_reach(size, level, scale), grow)
    factor = level_factor(level)
    for axis in range(p.shape[0]):
        lo[axis], hi[axis] = axis_window(p[axis], origin[axis], half, size, level, factor)
