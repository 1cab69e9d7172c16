"""The lattice's kernels: the home function, the cell function and the window of cells a point visits.

Every structure and every test uses these (Python calls them as it calls any
function: numba compiles a Python-callable version of each):

- :func:`level_of`: a sphere's home level, from its radius: the level whose
  nodes (edge ``W``) hold radii in ``[W/4, W/2)``, by the exponent of the
  float ``radius / size``.  A rounded quotient may name the coarser level for a
  radius an ulp below ``W/4``; never a level where the radius reaches ``W/2``
  (rounding is monotone and ``2**k`` is a float), which is what the walk needs.
- :func:`cell_of`: a root-relative coordinate ``u = fl(fl(x - origin) / size)``'s
  cell on a level: ``floor(u * 2**L) + (ANCHOR << L)`` on levels ``L >= 0``
  (the product is exact), ``(floor(u) + ANCHOR) >> -L`` on grown levels, so
  every cell is exactly its children's parent.  :func:`cell_scaled` is the
  same with ``2**L`` given (the walk computes it once per level).
- :func:`home` (one object of a batch, for other kernels) and :func:`homes`
  (a batch, for Python): a sphere's level and cell per axis.  The dense grid
  numbers the same cells from 0 within its world (:mod:`culling.grid.geometry`).

The window (the "conservative visit"): a sphere on level ``L`` has a radius
below ``W/2``, so a sphere of scale ``s`` containing ``p`` has, per axis,
``p - s*W/2 < c < p + s*W/2``, and as ``c`` is a float, ``q_lo <= c <= q_hi``
for the largest floats ``q_lo <= p - half`` and ``q_hi <= p + half``
(``half`` the smallest float ``>= s*W/2``; TwoSum and Dekker's product give
the rounding directions).  Centres are placed by the monotone
``f(x) = fl(fl(x - origin) / size)`` and the lattice's monotone cell
function, so the cells ``cell(f(q_lo)) .. cell(f(q_hi))`` hold every such
centre.  When nothing rounds this is the visit rule ``lo - s*W/2 <= p < hi +
s*W/2`` (docs/DESIGN.md, "The walk and its window"): at most 2 nodes per axis
for ``s <= 1``.  ``f(q)`` is clamped to
just outside the largest world before becoming an integer, so a huge scale
is a wide window over the existing nodes, never an overflow or a hang.

The float helpers (TwoSum, Dekker's product) live here once, as kernels;
tests check them against ``fractions.Fraction``.
"""

from __future__ import annotations

import math

import numpy as np

from culling.core.jit import inline_kernel, kernel
from culling.core.lattice import ANCHOR, MAX_DEPTH, MAX_GROWTH, TOO_LARGE

__all__ = ["axis_window", "cell_of", "cell_scaled", "half_reach", "half_reach_by", "home", "homes", "level_factor",
           "level_of", "multiply_up", "round_down_add", "round_down_sub", "window"]

#: Root-relative coordinates are clamped to one unit outside the largest
#: world (the level ``-MAX_GROWTH`` cell), where no node can ever be.
_U_LOW = -float(ANCHOR) - 1.0
_U_HIGH = float((1 << MAX_GROWTH) - ANCHOR) + 1.0

_SPLIT = 134217729.0  # 2**27 + 1: Veltkamp's split of a float into two 26-bit halves

@inline_kernel
def round_down_sub(a: float, b: float) -> float:
    """The largest float ``<= a - b`` (exact real difference); ``b >= 0``.

    Round to nearest, then TwoSum's exact error term says whether the
    rounded result lies above the true difference; only then step one ulp
    down.  An overflow gives ``-inf``, which is below everything.
    """
    r = a - b
    if r == -math.inf or b == math.inf:
        return -math.inf
    bb = r - a
    error = (a - (r - bb)) + (-b - bb)  # TwoSum: a - b == r + error exactly
    return np.nextafter(r, -math.inf) if error < 0.0 else r


@inline_kernel
def round_down_add(a: float, b: float) -> float:
    """The largest float ``<= a + b`` (exact real sum); ``b >= 0``.

    An overflow gives ``inf``: callers only need an upper bound of the
    centres below ``a + b``, and every finite float is below ``inf``.
    """
    r = a + b
    if r == math.inf or b == math.inf:
        return math.inf
    bb = r - a
    error = (a - (r - bb)) + (b - bb)  # TwoSum: a + b == r + error exactly
    return np.nextafter(r, -math.inf) if error < 0.0 else r


@kernel
def multiply_up(a: float, b: float) -> float:
    """The smallest float ``>= a * b`` (exact real product), for ``a, b >= 0``.

    Dekker's TwoProduct gives the rounding error of ``a * b`` exactly when
    nothing overflows or underflows; outside that range the product is
    stepped up one ulp unconditionally, which is still an upper bound.
    """
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
    """The smallest float ``>= scale * W / 2`` for nodes of ``level`` (``W = size * 2**-level``).

    ``size * 2**(-level-1)`` is exact unless it leaves the normal range (then
    it is rounded up one ulp); the product with ``scale`` is rounded up only
    when inexact (:func:`multiply_up`).  May be ``inf`` for a huge scale: the
    window is then the whole level.
    """
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

    An integer power converted, not ``ldexp`` (a library call, 5 ns: three
    per object in the batch kernels); the walk computes it once per level.
    """
    return float(1 << level) if level >= 0 else 1.0


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


@inline_kernel
def cell_of(u: float, level: int) -> int:
    """The lattice cell of root-relative ``u`` on ``level``: the cell function.

    ``u`` is clamped to just outside the largest world first: every integer
    stays below 2**49, and inf becomes a cell no node has.

    >>> cell_of(0.3, 1) - (ANCHOR << 1), cell_of(-0.5, -1) == (ANCHOR - 1) >> 1
    (0, True)
    """
    return cell_scaled(u, level, level_factor(level))


@inline_kernel
def level_of(radius: float, size: float) -> int:
    """A sphere's home level: the level whose nodes hold ``radius`` in ``[W/4, W/2)``.

    ``MAX_DEPTH`` for radii below the finest level's (0 included);
    ``TOO_LARGE`` (above every level a tree grows to) when ``radius / size``
    overflows.  Levels above ``-MAX_GROWTH`` are the caller's to reject.

    >>> level_of(1.0, 8.0), level_of(0.99, 8.0), level_of(0.0, 8.0) == MAX_DEPTH   # W = 4: [1, 2); W = 2
    (1, 2, True)
    """
    relative = radius / size
    if relative == 0.0:
        return MAX_DEPTH
    if relative == math.inf:
        return TOO_LARGE
    return min(-math.frexp(relative)[1] - 1, MAX_DEPTH)


@inline_kernel
def home(centres: np.ndarray, radii: np.ndarray, i: int, origin: np.ndarray, size: float, keys: np.ndarray,
         g: int) -> None:
    """Object ``i``'s home into ``keys[g]`` (int64, ``dim + 1`` long): its :func:`level_of`, then
    its :func:`cell_of` per axis, for the root-relative centre ``(centre - origin) / size``."""
    level = level_of(radii[i], size)
    keys[g, 0] = level
    for axis in range(centres.shape[1]):
        keys[g, axis + 1] = cell_of((centres[i, axis] - origin[axis]) / size, level)


@kernel
def homes(centres: np.ndarray, radii: np.ndarray, origin: np.ndarray, size: float) -> np.ndarray:
    """Every sphere's home: int64 (n, dim + 1), rows ``(level, cell...)`` (:func:`home`).  O(n).

    >>> key = homes(np.array([[3.0, 5.0]]), np.array([1.0]), np.zeros(2), 8.0)[0]   # level 1: W = 4
    >>> int(key[0]), (key[1:] - (ANCHOR << 1)).tolist()
    (1, [0, 1])
    """
    out = np.empty((centres.shape[0], centres.shape[1] + 1), dtype=np.int64)
    for i in range(centres.shape[0]):
        home(centres, radii, i, origin, size, out, i)
    return out


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
           lo: np.ndarray, hi: np.ndarray) -> None:
    """Write the first and last cell, per axis, that ``p`` visits on ``level`` into ``lo`` and ``hi``.

    The cells (:func:`cell_of`) of the largest floats
    ``<= p - half`` and ``<= p + half``, ``half >= scale * W / 2``.
    """
    half = half_reach(size, level, scale)
    factor = level_factor(level)
    for axis in range(p.shape[0]):
        lo[axis], hi[axis] = axis_window(p[axis], origin[axis], half, size, level, factor)
