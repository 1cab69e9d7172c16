"""Floats at their limits: the float filter's one step and its constants, and the exact float helpers.

Every containment and meeting test (a point in a sphere, a probe meeting a
sphere, two spheres meeting) first runs the **float filter**: a distance (squared
for spheres, the largest axis for cubes) against a bound with a relative margin
of :data:`FILTER_EPS` on each side (:func:`compare`).  Surely inside below the
lower margin, surely outside above the upper one; in between, or where a square
may have left the float range (:data:`SAFE_LO`, :data:`SAFE_HI`,
:data:`TINY_REACH`, :data:`TINY_LIMIT`), exact arithmetic decides.

The exact helpers say when a float operation was exact, or hold a sum
exactly: TwoSum (:func:`two_sum`), Dekker's TwoProduct with Veltkamp's split
(:func:`two_product`) and Shewchuk's grow-expansion (:func:`exact_sign`).
They are exact while magnitudes stay within ``[EXACT_TINY, EXACT_HUGE]``
(no overflow in the split, no underflow of the error term).

>>> two_sum(1.0, 2.0 ** -60)
(1.0, 8.673617379884035e-19)
>>> sum_is_exact(0.5, 0.25), product_is_exact(0.1, 3.0)
(True, False)
"""

from __future__ import annotations

import math

import numpy as np

from culling.runtime.jit import inline_kernel, kernel

__all__ = ["ABOVE", "BELOW", "EXACT_HUGE", "EXACT_TINY", "FILTER_EPS", "SAFE_HI", "SAFE_LO", "TINY_LIMIT", "TINY_REACH",
           "compare", "exact_sign", "product_is_exact", "square_is_exact", "sum_is_exact", "two_product", "two_sum"]

#: Relative error bound of the float filter: a squared distance (three
#: roundings per axis, two for the sum) and a squared reach (two or three) are
#: each within ``6 * 2**-53`` of the truth; ``2**-48`` leaves a wide margin.
FILTER_EPS = 2.0 ** -48
BELOW = 1.0 - FILTER_EPS
ABOVE = 1.0 + FILTER_EPS

#: Squared distances outside ``[SAFE_LO, SAFE_HI]`` may have lost bits to
#: underflow or be near overflow: they go to exact arithmetic.
SAFE_LO = 2.0 ** -960
SAFE_HI = 2.0 ** 1020

#: A squared bound below this may have lost bits to underflow.  A squared
#: distance below ``SAFE_LO`` is then within ``2 * SAFE_LO`` of the truth (each
#: square's error is at most a subnormal's ulp), so against a squared reach of
#: ``TINY_REACH`` or more it is surely inside.
TINY_REACH = 4.0 * SAFE_LO

#: A cube's limit (radius times scale, plus a probe's radius) below this may have lost bits to underflow.
TINY_LIMIT = 2.0 ** -1000

#: Magnitudes within which Dekker's product and TwoSum are exact: no
#: overflow in the split, no underflow of the product's error term.
EXACT_HUGE = 2.0 ** 995
EXACT_TINY = 2.0 ** -960

_SPLIT = 134217729.0  # 2**27 + 1: Veltkamp's split of a float into two 26-bit halves


@inline_kernel
def compare(d: float, bound: float) -> tuple[bool, bool]:
    """The float filter's step: ``(inside, near)`` of a distance ``d`` against ``bound``.

    ``inside``: below the bound by more than :data:`FILTER_EPS` (surely
    inside); ``near``: not surely outside (at most :data:`FILTER_EPS` above).
    ``near and not inside`` is unsure: exact arithmetic decides.
    """
    return d < bound * BELOW, d <= bound * ABOVE


@inline_kernel
def two_sum(a: float, b: float) -> tuple[float, float]:
    """TwoSum: ``(s, e)`` with ``s = fl(a + b)`` and ``a + b == s + e`` exactly (no overflow)."""
    s = a + b
    bb = s - a
    return s, (a - (s - bb)) + (b - bb)


@inline_kernel
def two_product(a: float, b: float) -> tuple[float, float]:
    """Dekker's TwoProduct: ``(r, e)`` with ``r = fl(a * b)`` and ``a * b == r + e`` exactly, for
    magnitudes within ``[EXACT_TINY, EXACT_HUGE]``."""
    r = a * b
    c = _SPLIT * a
    a_hi = c - (c - a)
    a_lo = a - a_hi
    c = _SPLIT * b
    b_hi = c - (c - b)
    b_lo = b - b_hi
    return r, ((a_hi * b_hi - r) + a_hi * b_lo + a_lo * b_hi) + a_lo * b_lo


@inline_kernel
def sum_is_exact(a: float, b: float) -> bool:
    """Whether ``a + b`` is exact in floats (TwoSum's error is zero, the sum finite)."""
    s, error = two_sum(a, b)
    return error == 0.0 and abs(s) != math.inf


@inline_kernel
def product_is_exact(a: float, b: float) -> bool:
    """Whether ``a * b`` is exact in floats: Dekker's error is zero, nothing under- or overflowed."""
    r = a * b
    if r == 0.0:
        return a == 0.0 or b == 0.0
    if not (SAFE_LO <= abs(r) <= SAFE_HI) or abs(a) > EXACT_HUGE or abs(b) > EXACT_HUGE:
        return False
    return two_product(a, b)[1] == 0.0


@inline_kernel
def square_is_exact(x: float) -> bool:
    """Whether ``x * x`` is exact in floats."""
    return product_is_exact(x, x)


@kernel
def exact_sign(terms: np.ndarray) -> int:
    """The sign (-1, 0, 1) of the exact real sum of ``terms`` (finite floats, float64 (k,)).

    Shewchuk's grow-expansion: every term is added to a nonoverlapping
    expansion with TwoSum, so the sum is held exactly; its sign is the sign of
    its largest nonzero component.  Exact as long as no partial sum
    overflows (callers keep magnitudes below :data:`EXACT_HUGE`).  The rare
    path of the exact decisions; it allocates one small array.
    """
    expansion = np.empty(terms.shape[0] + 1)
    m = 0
    for t in terms:
        q = t
        k = 0
        for i in range(m):
            q, error = two_sum(q, expansion[i])
            if error != 0.0:
                expansion[k] = error
                k += 1
        expansion[k] = q
        m = k + 1
    for i in range(m - 1, -1, -1):
        if expansion[i] > 0.0:
            return 1
        if expansion[i] < 0.0:
            return -1
    return 0
