"""The lattice's kernels: the home function, the cell function and the window of cells a point visits.

Every structure and every test uses these (the structures from their kernels;
tests call them from Python as they call any function):

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
- :func:`home`: a sphere's level and cell per axis, of its centre placed
  exactly (:func:`placed_u`: the cell of the exact ``(c - origin) / size``),
  inlined into every kernel that places objects (the tree's batch grouping,
  ``update_many``'s settling pass, the single-object kernel
  ``culling.tree.tree._home_one``).  The dense grid numbers the same cells from 0 within its
  world (:mod:`culling.grid.geometry`).

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

from culling.core.floats import EXACT_HUGE, EXACT_TINY, exact_sign, two_product
from culling.core.lattice import ANCHOR, MAX_DEPTH, MAX_GROWTH, TOO_LARGE
from culling.runtime.jit import inline_kernel, kernel

__all__ = ["PLACE_BITS", "axis_window", "cell_of", "cell_scaled", "exact_axis_window", "face_sign",
           "grown_half", "half_reach", "half_reach_by", "home", "level_factor", "level_of", "multiply_up",
           "placed_columns", "placed_u", "point_slop", "round_down_add", "round_down_sub", "round_up_add", "scaled_window", "visit_window",
           "window", "window_exactly", "window_slack"]

#: Root-relative coordinates are clamped to one unit outside the largest
#: world (the level ``-MAX_GROWTH`` cell), where no node can ever be.
_U_LOW = -float(ANCHOR) - 1.0
_U_HIGH = float((1 << MAX_GROWTH) - ANCHOR) + 1.0


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
    """The smallest float ``>= a * b`` (exact real product), for ``a, b >= 0``.

    Dekker's TwoProduct gives the rounding error of ``a * b`` exactly when
    nothing overflows or underflows; outside that range the product is
    stepped up one ulp unconditionally, which is still an upper bound.
    """
    r = a * b
    if r == math.inf or r == 0.0:
        return r if a == 0.0 or b == 0.0 or r == math.inf else float(np.nextafter(0.0, math.inf))
    if r < EXACT_TINY or a > EXACT_HUGE or b > EXACT_HUGE:
        return float(np.nextafter(r, math.inf))
    _, error = two_product(a, b)  # Dekker: a * b == r + error
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
    its :func:`cell_of` per axis, for the root-relative centre ``(centre - origin) / size``
    placed exactly (:func:`placed_u`)."""
    level = level_of(radii[i], size)
    keys[g, 0] = level
    for axis in range(centres.shape[1]):
        keys[g, axis + 1] = cell_of(placed_u(centres[i, axis], origin[axis], size), level)


@inline_kernel
def axis_window(x: float, o: float, half: float, size: float, level: int, factor: float) -> tuple[int, int]:
    """First and last cell on one axis: the cells of the largest floats ``<= x - half`` and ``<= x + half``.

    ``o`` is the origin's coordinate on that axis, ``half = half_reach(size, level, scale)``
    and ``factor = level_factor(level)``: both once per level.  Scalars only, so
    the walk's per-level loop over the axes compiles to straight-line code.
    """
    return (cell_scaled((round_down_sub(x, half) - o) / size, level, factor),
            cell_scaled((round_down_add(x, half) - o) / size, level, factor))


@inline_kernel
def visit_window(x: float, o: float, half: float, s: float, size: float, level: int, factor: float,
                 grow: float = 0.0) -> tuple[int, int]:
    """First and last cell one axis visits on ``level``: the cells whose box, grown by ``s * W / 2``
    (plus ``grow``), holds ``x``, exactly, as :func:`exact_axis_window` decides from
    :func:`axis_window`'s estimate.

    Where floats alone decide, that is where the walk almost always is, the
    answer comes without either: the window's ends are ``floor(t) + (ANCHOR << L)``
    of the exact ``t = (x - o -+ (s*W/2 + grow)) / W``, and a float ``t`` whose
    distance to the nearest integer exceeds its error bound has that floor.
    The bound is 16 roundings of the largest magnitude involved, four times
    the five roundings there are, plus slack for subnormal steps.  Grown levels,
    huge scales and coordinates beyond the world's clamp take the exact path.
    """
    if level >= 0:
        unit = size * (1.0 / factor)  # W, exact while normal (checked below)
        reach = s * (0.5 * unit) + grow
        d = x - o
        t_lo = (d - reach) / unit
        t_hi = (d + reach) / unit
        if (EXACT_TINY <= 0.5 * unit <= EXACT_HUGE and abs(t_lo) < _T_LIMIT and abs(t_hi) < _T_LIMIT
                and _U_LOW < (t_lo - 1.0) / factor and (t_hi + 1.0) / factor < _U_HIGH):
            bound = (abs(x) * 2.0 ** -49 + abs(o) * 2.0 ** -49 + reach * 2.0 ** -49) / unit + 2.0 ** -50  # scaled first: no overflow
            f_lo, f_hi = math.floor(t_lo), math.floor(t_hi)
            if (t_lo - f_lo > bound and f_lo + 1.0 - t_lo > bound
                    and t_hi - f_hi > bound and f_hi + 1.0 - t_hi > bound):
                base = ANCHOR << level
                return f_lo + base, f_hi + base
    return window_exactly(x, o, half, s, size, level, factor, grow)


@kernel
def window_exactly(x: float, o: float, half: float, s: float, size: float, level: int, factor: float,
                   grow: float) -> tuple[int, int]:
    """:func:`visit_window`'s exact path: :func:`axis_window`'s estimate, then :func:`exact_axis_window`.

    A called kernel, not inlined: the walks take this path only where the
    floats cannot decide, and inlined it was compiled again into each of the
    four walks that visit windows (some 200 IR statements each); its arguments
    are floats and integers, so a call costs nothing but the call.
    """
    first, last = axis_window(x, o, half, size, level, factor)
    return exact_axis_window(x, o, s, size, level, first, last, grow)


@inline_kernel
def point_slop(x: float, o: float, size: float) -> float:
    """:func:`scaled_window`'s ``slop`` of a coordinate ``x`` (origin ``o``, root width ``size``):
    ``(|x| + |o|) * 2**-49 / size``, each term scaled before the sum, so that it stays finite past the
    largest float.  The batch walks compute it once per point and axis."""
    return (abs(x) * 2.0 ** -49 + abs(o) * 2.0 ** -49) / size


@inline_kernel
def window_slack(half_scale: float) -> float:
    """:func:`scaled_window`'s ``slack`` for a view-distance scale ``2 * half_scale``: the rounding of
    ``t`` itself and the subnormal steps, ``half_scale * 2**-49 + 2**-50``."""
    return half_scale * 2.0 ** -49 + 2.0 ** -50


@inline_kernel
def scaled_window(u: float, slop: float, half_scale: float, slack: float, factor: float, inverse: float,
                  base: int) -> tuple[int, int]:
    """:func:`visit_window`'s float path (``grow == 0``) from the root-relative ``u = (x - o) / size``, for a
    batch walk that computes ``u`` once per point and axis: ``(1, 0)`` where the floats cannot decide.

    On level ``L >= 0`` (``factor = 2**L``, ``inverse = 2**-L``, ``base = ANCHOR << L``) the
    window's ends are the floors of ``t = u * 2**L -+ s / 2`` (``half_scale = s / 2``, exact), the
    same exact quantities as :func:`visit_window`'s ``(x - o -+ s*W/2) / W``, with no division per
    level.  ``t`` is off by at most ``2**-52 (|x| + |o|) / W`` (the difference and the quotient)
    plus a rounding of ``t`` itself, under half of :func:`visit_window`'s bound, which is used here
    unchanged: ``slop * factor + slack`` with ``slop`` from :func:`point_slop` and ``slack`` from
    :func:`window_slack`.  So where it answers, it answers the exact window, as
    :func:`visit_window` does; the caller checks that ``0.5 * W`` is a normal float in the exact
    range and that ``s / 2`` is exact (per level and call), and falls back to :func:`visit_window`
    on ``(1, 0)``.
    """
    scaled = u * factor
    t_lo = scaled - half_scale
    t_hi = scaled + half_scale
    if (abs(t_lo) < _T_LIMIT and abs(t_hi) < _T_LIMIT and _U_LOW < (t_lo - 1.0) * inverse
            and (t_hi + 1.0) * inverse < _U_HIGH):
        bound = slop * factor + slack
        f_lo, f_hi = math.floor(t_lo), math.floor(t_hi)
        if (t_lo - f_lo > bound and f_lo + 1.0 - t_lo > bound
                and t_hi - f_hi > bound and f_hi + 1.0 - t_hi > bound):
            return int(f_lo) + base, int(f_hi) + base
    return 1, 0


@kernel
def window(p: np.ndarray, scale: float, origin: np.ndarray, size: float, level: int,
           lo: np.ndarray, hi: np.ndarray, grow: float = 0.0) -> None:
    """Write the first and last cell, per axis, that ``p`` visits on ``level`` into ``lo`` and ``hi``.

    The float estimate (:func:`axis_window`: the cells of the largest floats
    ``<= p - half`` and ``<= p + half``, ``half >= scale * W / 2``), its ends
    then decided exactly (:func:`exact_axis_window`): the cells whose box
    grown by ``scale * W / 2`` holds ``p``.  ``grow``: a probe sphere's radius,
    added to the margin (:func:`grown_half`).
    """
    half = grown_half(half_reach(size, level, scale), grow)
    factor = level_factor(level)
    for axis in range(p.shape[0]):
        lo[axis], hi[axis] = visit_window(p[axis], origin[axis], half, scale, size, level, factor, grow)


# ----------------------------------------------------------------------
# Exact decisions: where a cell's face lies within rounding of a coordinate

#: Finest lattice resolution in root-relative units: ``2**-PLACE_BITS`` is the
#: cell edge of level ``MAX_DEPTH``; placing a centre exactly on that level
#: places it exactly on every coarser one (cells nest).
PLACE_BITS = MAX_DEPTH

_PLACE_FACTOR = float(1 << PLACE_BITS)
_PLACE_STEP = 1.0 / _PLACE_FACTOR


#: Window coordinates (in cells) below which a float's floor and fraction are exact with room to spare.
_T_LIMIT = 2.0 ** 45


@inline_kernel
def _exact_product(r: float) -> bool:
    """Whether Dekker's product whose rounded result is ``r`` is exact: 0, or ``|r|`` in
    ``[2**-960, 2**995]`` (no underflow of the error term, no overflow in the split)."""
    magnitude = abs(r)
    return magnitude == 0.0 or EXACT_TINY <= magnitude <= EXACT_HUGE


@kernel
def _face_sign_exact(x: float, o: float, n: float, unit: float, s: float, half: float, grow: float = 0.0) -> int:
    """:func:`face_sign`'s rare path: the exact sign, or 2 when a product leaves the exact range."""
    if not (abs(x) <= EXACT_HUGE and abs(o) <= EXACT_HUGE and abs(n) <= EXACT_HUGE and abs(unit) <= EXACT_HUGE and grow <= EXACT_HUGE):
        return 2
    terms = np.empty(7)
    terms[6] = grow if half >= 0.0 else -grow
    terms[0] = x
    terms[1] = -o
    ph, pl = two_product(n, unit)
    terms[2] = -ph
    terms[3] = -pl
    if s == 1.0:
        terms[4] = half
        terms[5] = 0.0
    else:
        sh, sl = two_product(s, abs(half))
        terms[4] = sh if half >= 0.0 else -sh
        terms[5] = sl if half >= 0.0 else -sl
        if not (_exact_product(sh) and s <= EXACT_HUGE):
            return 2
    if not _exact_product(ph):
        return 2
    return exact_sign(terms)


@kernel
def face_sign(x: float, o: float, n: float, unit: float, s: float, half: float, grow: float = 0.0) -> int:
    """The sign (-1, 0, 1) of the real ``(x - o) - n * unit + s * half (+ or -) grow``; 2 when it cannot be told.

    ``grow`` (a probe sphere's radius, >= 0) widens the margin ``s * half`` on
    its side: added when ``half >= 0``, subtracted otherwise.

    ``n`` is an integer-valued float (a cell face's index), ``unit`` and
    ``half`` exact floats (a cell edge, a signed half edge), ``s > 0``.  A
    float evaluation with an error bound decides almost every call; only
    within rounding of zero does the exact expansion (TwoSum, Dekker's
    product) run.  2 (undecided) only where a product leaves the range in
    which Dekker's product is exact (beyond ``2**995``, or a nonzero product
    below ``2**-960``: a tiny scale, a huge one); callers then stay conservative.
    """
    product = n * unit
    reach = s * half
    r = ((x - o) - product) + reach
    if grow != 0.0:
        r += grow if half >= 0.0 else -grow
    # Each term scaled before the sum (exact: the same bound, but |x| + |o| past the largest float stays finite)
    bound = (abs(x) * 2.0 ** -50 + abs(o) * 2.0 ** -50 + abs(product) * 2.0 ** -50 + abs(reach) * 2.0 ** -50
             + grow * 2.0 ** -50) + 1e-300  # + subnormal rounding
    # A sum that overflowed (inf, or NaN) decides nothing: ``x - o`` past the largest float with a probe
    # radius near it, ``M - (-5e299) - M``, read as +inf, moved a window's end past the cells it holds.
    if bound < r < math.inf:
        return 1
    if -math.inf < r < -bound:
        return -1
    return _face_sign_exact(x, o, n, unit, s, half, grow)


@kernel
def placed_u(c: float, o: float, size: float) -> float:
    """Root-relative coordinate of a centre for placement: ``fl(fl(c - o) / size)``, corrected so
    that its cell on every level is the cell of the exact ``(c - o) / size``.

    Cells nest, so it suffices that the finest lattice cell (``2**-PLACE_BITS``)
    is exact: when the float quotient lies within its error bound of such a
    face, :func:`face_sign` decides on which side the exact value lies, and
    the result moves to the last float below the face or onto it.  Outside
    the largest world, and where the exact test cannot run, the float
    quotient is returned unchanged.
    """
    u = (c - o) / size
    if not abs(u) < 2.0 ** 25:  # beyond every world (or NaN): placement rejects it
        return u
    scaled = u * _PLACE_FACTOR  # exact: a power of two
    j = math.floor(scaled)
    bound = (abs(scaled) + 1.0) * 2.0 ** -50
    frac = scaled - j
    if bound < frac < 1.0 - bound:
        return u
    edge = size * _PLACE_STEP  # the finest cell's edge, exact in the normal range
    if edge * _PLACE_FACTOR != size:
        return u
    if face_sign(c, o, float(j), edge, 1.0, 0.0, 0.0) == -1:  # all floats: one compiled signature
        return float(np.nextafter(j * _PLACE_STEP, -math.inf))  # below face j: cell j - 1
    above = face_sign(c, o, j + 1.0, edge, 1.0, 0.0, 0.0)
    if above == 0 or above == 1:
        return (j + 1.0) * _PLACE_STEP  # at or above face j + 1: cell j + 1
    return u


@kernel
def placed_columns(points: np.ndarray, origin: np.ndarray, size: float) -> np.ndarray:
    """:func:`placed_u` of every coordinate of ``points`` (float64 (n, dim)), as columns: (dim, n)."""
    n, dim = points.shape
    u = np.empty((dim, n))
    for i in range(n):
        for axis in range(dim):
            u[axis, i] = placed_u(points[i, axis], origin[axis], size)
    return u


@kernel
def searched_window(x: float, o: float, s: float, unit: float, step: float, base: float, half: float,
                    grow: float, low: int, high: int) -> tuple[int, int]:
    """:func:`exact_axis_window` where its estimate cannot be trusted: the first and last cell of
    ``low .. high`` whose grown box holds ``x``, each end found by bisection on :func:`face_sign`
    (about 50 exact tests an end).  Empty (``first > last``) when ``x`` is beyond every such box.

    The test is monotone in the cell; a sign that cannot be told (a product beyond ``2**995``)
    counts as holding, which can only move an end outwards: a superset, never a cell missed.
    """
    # first: the smallest k with x < hi_k + s*W/2 + grow, hi_k the face (k + 1) * step - base.
    a, b = low, high + 1
    while a < b:
        k = (a + b) // 2
        sign = face_sign(x, o, (k + 1) * step - base, unit, s, -half, grow)
        if sign == -1 or sign == 2:
            b = k
        else:
            a = k + 1
    first = a
    # last: the largest k with lo_k - s*W/2 - grow <= x, lo_k the face k * step - base.
    a, b = low - 1, high
    while a < b:
        k = (a + b + 1) // 2
        if face_sign(x, o, k * step - base, unit, s, half, grow) != -1:
            a = k
        else:
            b = k - 1
    return first, a


@kernel
def exact_axis_window(x: float, o: float, s: float, size: float, level: int, first: int,
                      last: int, grow: float = 0.0) -> tuple[int, int]:
    """The cells ``k`` of one axis on ``level`` whose box, grown by ``s * W / 2`` (plus ``grow``, a probe
    sphere's radius), holds ``x``, exactly.

    ``lo_k - s*W/2 <= x < hi_k + s*W/2`` in real arithmetic (``lo_k``, ``hi_k``
    the cell's exact faces ``origin + index * W``); ``first .. last`` is the
    float window's estimate (:func:`axis_window`), which may be off by a cell
    at either end where ``x - origin`` rounds.  Each end moves at most two
    cells; a decision the exact test cannot make keeps the cell (conservative).
    Where one ulp of the coordinates spans cells (an origin of ``1e12`` with
    cells of ``2**-15``, a point at ``-1e100``) the estimate can be off by more
    than two cells: both ends are then found by bisection on the same exact
    test (:func:`searched_window`), so a point beyond the largest world's
    grown box gets an empty window.
    With centres placed exactly (:func:`placed_u`) a sphere of scaled radius
    below ``s * W / 2`` containing ``x`` lies in such a cell, and for ``s <= 1``
    there are at most two.
    """
    if level >= 0:
        unit = size * math.ldexp(1.0, -level)
        base = float(ANCHOR << level)  # face of cell k: (k - base) * unit
        step = 1.0
    else:
        unit = size
        base = float(ANCHOR)  # face of cell k: (k * 2**-level - base) * size
        step = float(1 << -level)
    half = 0.5 * unit * step  # W / 2
    if not (EXACT_TINY <= half <= EXACT_HUGE) or 2.0 * half != unit * step:  # W or W/2 beyond the exact range:
        # the estimate cannot be checked, and it can be a cell off (a tiny ``x - o`` divided by a huge ``size``
        # underflows to 0: a point just below a face lands in the cell above it), so a cell is kept each way
        return first - 1, last + 1
    # The estimate's error, in cells: a few roundings of the largest magnitude in it.  Where that
    # reaches a cell (an ulp of the coordinates spans cells) two moves cannot correct it: widen instead.
    error = (abs(x) * 2.0 ** -49 + abs(o) * 2.0 ** -49 + s * half * 2.0 ** -49 + grow * 2.0 ** -49) / (2.0 * half)
    if error >= 0.5:
        factor = level_factor(level)
        low = cell_scaled(_U_LOW, level, factor)
        high = cell_scaled(_U_HIGH, level, factor)
        return searched_window(x, o, s, unit, step, base, half, grow, low, high)
    # first: the smallest k with x < hi_k + s*W/2, i.e. face_sign(x, o, hi index, unit, s, -half) == -1.
    for _ in range(2):
        sign = face_sign(x, o, first * step - base, unit, s, -half, grow)
        if sign == -1 or sign == 2:  # cell first - 1 holds x too (or it cannot be told)
            first -= 1
        else:
            break
    for _ in range(2):
        sign = face_sign(x, o, (first + 1) * step - base, unit, s, -half, grow)
        if first < last and (sign == 0 or sign == 1):  # cell first does not hold x
            first += 1
        else:
            break
    # last: the largest k with lo_k - s*W/2 <= x, i.e. face_sign(x, o, lo index, unit, s, half) >= 0.
    for _ in range(2):
        if face_sign(x, o, (last + 1) * step - base, unit, s, half, grow) != -1:  # cell last + 1 holds x too
            last += 1
        else:
            break
    for _ in range(2):
        if last > first and face_sign(x, o, last * step - base, unit, s, half, grow) == -1:
            last -= 1
        else:
            break
    return first, last
