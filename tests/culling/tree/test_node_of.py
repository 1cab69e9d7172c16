"""``node_of``: the node an object is stored in, as the tree records it, grown levels included."""

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from culling import ViewDistanceTree


@settings(max_examples=40, deadline=None)
@given(dim=st.integers(1, 3), seed=st.integers(0, 2**32 - 1), spread=st.sampled_from([1.0, 10.0, 1000.0]))
def test_node_of_is_the_node_holding_the_object_and_the_one_its_centres_trace_visits(dim, seed, spread):
    rng = np.random.default_rng(seed)
    tree = ViewDistanceTree(size=16.0, origin=rng.uniform(-8, 8, dim), dim=dim)   # grows for most objects
    n = 40
    centres = rng.uniform(-spread, spread, (n, dim))
    radii = np.exp(rng.uniform(math.log(1e-3), math.log(spread), n))
    handles = tree.insert_many(centres, radii)
    depths, boxes = tree.node_boxes()
    known = {(int(d), b.tobytes()) for d, b in zip(depths, boxes)}
    for h, c, r in zip(handles.tolist(), centres, radii):
        depth, box = tree.node_of(h)
        assert box.shape == (2, dim) and (depth, box.tobytes()) in known       # a live node of the tree
        edge = box[1, 0] - box[0, 0]
        assert np.all(box[0] <= c) and np.all(c < box[1])                       # its centre's cell
        assert edge / 4 <= r < edge / 2 or (r < edge / 4 and depth == len(tree.trace(c).levels) - 1)
        visited = tree.trace(c).levels[depth].bounds                            # the query at its centre meets it
        assert any(np.array_equal(v, box) for v in visited)


def test_a_grown_roots_faces_are_where_the_contract_says():
    tree = ViewDistanceTree(size=1.0, origin=(3.0,), dim=1)
    for k in range(1, 7):
        tree.insert(3.5, 2.0 ** (k - 2))                                        # half the last root's edge: one level up
        assert tree.root_level == -k
        a = (4 ** math.ceil(k / 2) - 1) / 3
        lo, hi = tree.root_bounds
        assert (lo[0], hi[0]) == (3.0 - a, 3.0 - a + 2.0 ** k)


def test_node_of_an_unknown_handle_is_a_key_error_and_a_bool_a_type_error():
    tree = ViewDistanceTree(size=16.0, dim=2)
    h = tree.insert((1.0, 1.0), 1.0)
    tree.remove(h)
    for bad in (h, 7, -1, 2**70):
        with pytest.raises(KeyError):
            tree.node_of(bad)
    with pytest.raises(TypeError):
        tree.node_of(1.5)
