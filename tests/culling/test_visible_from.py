"""``visible_from(handle, point, scale)``: one object's exact answer, the one ``query(point, exact=True)`` gives.

A debug view asks it of one object that pops in late.  Checked against the structures' own exact
queries and against ``Fraction`` at exact reaches (Pythagorean triples scaled by powers of two, and one
ulp either side), 1-3-D, spheres and cubes, tree and dense grid.
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest
from brute_force import KINDS
from hypothesis import given, settings
from hypothesis import strategies as st


def _truth(centre, point, radius: float, scale: float, shape: str) -> bool:
    offsets = [abs(Fraction(c) - Fraction(p)) for c, p in zip(centre, point)]
    reach = Fraction(radius) * Fraction(scale)
    return max(offsets) <= reach if shape == "cube" else sum(o * o for o in offsets) <= reach * reach


@pytest.mark.parametrize("kind", KINDS, ids=str)
@pytest.mark.parametrize("shape", ["sphere", "cube"])
@pytest.mark.parametrize("dim", [1, 2, 3])
def test_at_exact_reaches_and_an_ulp_either_side_it_is_the_exact_query(kind, shape, dim):
    structure = kind.make(size=64.0, origin=(-32.0,) * dim, dim=dim, shape=shape)
    centre = np.array([1.25, -3.5, 0.75][:dim])
    radius = 5.0
    h = int(structure.insert(centre, radius))
    for scale in (1.0, 0.5, 1.25 ** -3, 3.0):
        reach = radius * scale
        # Euclidean length 1 (a 3-4-5 triangle), and largest-axis length 1 too: exact reaches for both metrics
        offsets = [np.array([0.6, 0.8, 0.0][:dim]), np.array([1.0, 0.0, 0.0][:dim])]
        for unit in offsets:
            edge = centre + unit * reach
            for point in (edge, np.nextafter(edge, centre), np.nextafter(edge, edge + unit)):
                expected = _truth(centre, point, radius, scale, shape)
                assert structure.visible_from(h, point, scale) == expected, (point, scale)
                assert (h in structure.query(point, exact=True, scale=scale).tolist()) == expected


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 2**32 - 1), st.sampled_from(KINDS), st.sampled_from(["sphere", "cube"]), st.integers(1, 3),
       st.sampled_from([1.0, 0.3, 2.0, 1e-3]))
def test_every_object_answers_as_the_exact_query_does(seed, kind, shape, dim, scale):
    rng = np.random.default_rng(seed)
    structure = kind.make(size=64.0, origin=(0.0,) * dim, dim=dim, shape=shape)
    centres = rng.uniform(0.0, 64.0, (40, dim))
    handles = structure.insert_many(centres, rng.uniform(0.0, 20.0, 40))
    for point in rng.uniform(-8.0, 72.0, (6, dim)):
        seen = set(structure.query(point, exact=True, scale=scale).tolist())
        assert {int(h) for h in handles if structure.visible_from(int(h), point, scale)} == seen


@settings(max_examples=30, deadline=None)
@given(st.integers(0, 2**32 - 1), st.sampled_from(["sphere", "cube"]), st.integers(1, 3), st.sampled_from([1.0, 0.3, 2.0]))
def test_the_reference_index_answers_as_its_exact_query_and_the_tree(seed, shape, dim, scale):
    """``BruteForceIndex`` (the demo's --brute-force) has it too: its caller's handles, found by a scan."""
    from culling import BruteForceIndex, ViewDistanceTree

    rng = np.random.default_rng(seed)
    centres, radii = rng.uniform(0.0, 64.0, (30, dim)), rng.uniform(0.0, 20.0, 30)
    handles = rng.permutation(1000)[:30]
    index = BruteForceIndex(centres, radii, shape=shape, handles=handles)
    tree = ViewDistanceTree(64.0, dim=dim, shape=shape)
    in_tree = tree.insert_many(centres, radii)
    for point in rng.uniform(-8.0, 72.0, (5, dim)):
        seen = set(index.query(point, exact=True, scale=scale).tolist())
        answers = [index.visible_from(int(h), point, scale) for h in handles]
        assert {int(h) for h, yes in zip(handles, answers) if yes} == seen
        assert answers == [tree.visible_from(int(h), point, scale) for h in in_tree]
    with pytest.raises(KeyError):
        index.visible_from(1000, centres[0])
    with pytest.raises(TypeError):
        index.visible_from(1.5, centres[0])


@pytest.mark.parametrize("kind", KINDS, ids=str)
def test_bad_input_is_a_clear_error(kind):
    structure = kind.make(size=16.0, dim=2)
    h = int(structure.insert((1.0, 1.0), 1.0))
    with pytest.raises(KeyError):
        structure.visible_from(h + 1, (1.0, 1.0))
    with pytest.raises(TypeError):
        structure.visible_from(1.5, (1.0, 1.0))
    with pytest.raises(ValueError):
        structure.visible_from(h, (1.0, 1.0, 1.0))
    with pytest.raises(ValueError):
        structure.visible_from(h, (1.0, float("nan")))
    with pytest.raises(ValueError):
        structure.visible_from(h, (1.0, 1.0), scale=0.0)
    structure.remove(h)
    with pytest.raises(KeyError):
        structure.visible_from(h, (1.0, 1.0))
