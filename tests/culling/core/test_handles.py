"""The handle bookkeeping both structures share (culling.core.handles.HandleStack), and the
accessors the base class gives them."""

import numpy as np
import pytest

import culling
from culling.core.handles import HandleStack


def test_handles_are_issued_in_order_and_reused_most_recent_first():
    ids = HandleStack()
    assert ids.peek(3).tolist() == [0, 1, 2]
    ids.take(3)
    ids.make_room(2)
    ids.release(np.array([0, 2]))
    assert ids.end_after(3) == 4  # two reused, one new
    assert ids.peek(3).tolist() == [2, 0, 3]
    ids.take(3)
    assert len(ids) == 0 and ids.issued == 4
    ids.check(np.ones(4, dtype=bool))


def test_peek_hands_out_nothing():
    ids = HandleStack()
    ids.take(2)
    ids.make_room(1)
    ids.release(1)
    ids.peek(5)
    assert ids.issued == 2 and ids.free.tolist() == [1]


def test_trim_forgets_the_free_handles_above_the_end():
    ids = HandleStack()
    ids.take(10)
    ids.make_room(3)
    ids.release(np.array([9, 2, 7]))
    ids.trim(7)
    assert ids.issued == 7 and ids.free.tolist() == [2]


def test_a_structure_never_issued_a_stack_keeps_none():
    tree = culling.ViewDistanceTree(size=8.0, dim=2)
    tree.insert_many(np.full((100, 2), 1.0), np.ones(100))
    assert tree._ids.nbytes == 0


@pytest.mark.parametrize("cls", [culling.ViewDistanceTree, culling.DenseViewDistanceGrid])
def test_accessors_read_back_what_was_stored(cls):
    s = cls(size=16.0, dim=3)
    centres = np.array([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0], [7.0, 8.0, 9.0]])
    h = s.insert_many(centres, np.array([0.5, 1.0, 1.5]))
    s.remove(int(h[1]))
    assert s.handles().tolist() == [0, 2]
    assert int(h[1]) not in s and int(h[0]) in s and "a" not in s
    assert s.centre(int(h[2])).tolist() == [7.0, 8.0, 9.0] and s.radius(int(h[0])) == 0.5
    assert s.centres_of([2, 0]).tolist() == [[7.0, 8.0, 9.0], [1.0, 2.0, 3.0]]
    assert s.radii_of(np.array([2, 0])).tolist() == [1.5, 0.5]
    with pytest.raises(KeyError, match="not in the"):
        s.centre(int(h[1]))
    with pytest.raises(TypeError):
        s.radius(1.5)
    assert s.insert([1.0, 1.0, 1.0], 0.1) == int(h[1])  # the freed handle again
