"""The prefetch hints: compiled into kernels, they change no value and reject what they cannot fetch."""

import numba
import numpy as np
import pytest

from culling.runtime.prefetch import AHEAD, prefetch, prefetch_at


@numba.njit(cache=False)
def _sum_with_hints(values: np.ndarray, table: np.ndarray, order: np.ndarray) -> float:
    total = 0.0
    for k in range(order.shape[0]):
        if k + AHEAD < order.shape[0]:
            prefetch(values, order[k + AHEAD])
            prefetch_at(table, 1, order[k + AHEAD])
        total += values[order[k]] + table[1, order[k]]
    return total


def test_hints_change_no_value() -> None:
    rng = np.random.default_rng(1)
    values = rng.random(10_000)
    table = rng.random((3, 10_000))
    order = rng.integers(0, 10_000, 5_000)
    expected = float(values[order].sum() + table[1, order].sum())
    assert _sum_with_hints(values, table, order) == pytest.approx(expected, rel=1e-12)
    assert _sum_with_hints(values, table, order[:AHEAD // 2]) == pytest.approx(
        float(values[order[:AHEAD // 2]].sum() + table[1, order[:AHEAD // 2]].sum()), rel=1e-12)


def test_a_hint_needs_an_array_and_integer_indices() -> None:
    @numba.njit(cache=False)
    def wrong_rank(table: np.ndarray) -> None:
        prefetch(table, 0)  # a 2-D array takes prefetch_at

    @numba.njit(cache=False)
    def float_index(values: np.ndarray) -> None:
        prefetch(values, 1.5)

    with pytest.raises(numba.TypingError):
        wrong_rank(np.zeros((2, 2)))
    with pytest.raises(numba.TypingError):
        float_index(np.zeros(4))
