"""The kernels' own stable sort (culling.core.sorting) against NumPy's.

Lengths around the insertion cut and the merge widths, many equal keys (the
ties a stable order keeps in place), sorted, reversed and organ-pipe input.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from culling.core.sorting import INSERTION_BELOW, stable_order

LENGTHS = [0, 1, 2, INSERTION_BELOW - 1, INSERTION_BELOW, INSERTION_BELOW + 1, 2 * INSERTION_BELOW + 3, 257, 4099]


def _keys(rng: np.random.Generator, n: int, kind: str, dtype: type = np.int64) -> np.ndarray:
    if kind == "few values":
        return rng.integers(0, 3, n).astype(dtype)
    if kind == "ascending":
        return np.arange(n, dtype=dtype)
    if kind == "descending":
        return np.arange(n, dtype=dtype)[::-1].copy()
    if kind == "organ pipe":
        return np.concatenate([np.arange(n // 2), np.arange(n - n // 2)[::-1]]).astype(dtype)
    return rng.integers(-(2 ** 31), 2 ** 31 - 1, n).astype(dtype)


@pytest.mark.parametrize("n", LENGTHS)
@pytest.mark.parametrize("kind", ["random", "few values", "ascending", "descending", "organ pipe"])
def test_stable_order_is_numpys_stable_argsort(n: int, kind: str) -> None:
    keys = _keys(np.random.default_rng(n), n, kind, np.int64)
    order = stable_order(keys)
    assert order.dtype == np.int64
    np.testing.assert_array_equal(order, np.argsort(keys, kind="stable"))


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(-5, 5), max_size=300))
def test_stable_order_on_any_small_keys(keys: list[int]) -> None:
    array = np.array(keys, dtype=np.int64)
    np.testing.assert_array_equal(stable_order(array), np.argsort(array, kind="stable"))
