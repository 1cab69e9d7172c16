"""DenseViewDistanceGrid: the fixed-world, dense-array variant of the tree.

Brute-force comparison (seeded and hypothesis), the fixed world and
``min_radius``, bad input leaving the grid unchanged, the O(1) claims as
counts of touched entries, query windows, and agreement with
ViewDistanceTree on the same data.  ``check_invariants()`` runs after every
mutation.  The shared state machine (test_structure_stateful.py) drives the grid
through the public contract as well.
"""

from __future__ import annotations

import math
import re
from fractions import Fraction

import numpy as np
import pytest
from brute_force import BruteForce, check_contents, check_query, check_query_many, sorted_handles
from hypothesis import given
from hypothesis import strategies as st

import culling.grid.grid as dense_module
from culling.grid.grid import DEFAULT_FINEST_CELLS, MAX_FINEST_CELLS, DenseViewDistanceGrid
from culling.tree.tree import ViewDistanceTree

SHAPES = ("sphere", "cube")


# -- helpers -------------------------------------------------------------------

def snapshot(grid: DenseViewDistanceGrid) -> dict:
    """Every piece of the grid's state, copied (pool and rows up to the used end)."""
    c = grid._cells
    return {
        "level": grid._level[: grid._next_handle].copy(),
        "free": grid._ids.free.copy(),
        "scalars": (len(grid._ids), grid._next_handle, grid._count, c.top, c.members, c.nonempty),
        "level_count": grid._level_count.copy(),
        "start": c.start.copy(), "count": c.count.copy(), "capacity": c.capacity.copy(),
        "handles": c.handles[: c.top].copy(), "columns": c.columns[:, : c.top].copy(),
        "cell": c.cell[: grid._next_handle].copy(), "slot": c.slot[: grid._next_handle].copy(),
    }


def changed(before: dict, after: dict) -> dict:
    """How many entries of each part differ (a different length counts as all)."""
    out = {}
    for key, a in before.items():
        b = after[key]
        if key == "scalars":
            out[key] = sum(x != y for x, y in zip(a, b))
        elif a.shape != b.shape:
            out[key] = max(a.size, b.size)
        else:
            out[key] = int(np.count_nonzero(a != b))
    return out


def assert_unchanged(before: dict, after: dict) -> None:
    diff = {k: v for k, v in changed(before, after).items() if v}
    assert not diff, f"a failing call changed the grid: {diff}"


def filled(dim=3, shape="sphere", n=200, seed=0, size=64.0, origin=None, min_radius=0.5):
    """A grid and its model with ``n`` random spheres of all levels."""
    rng = np.random.default_rng(seed)
    origin = np.zeros(dim) if origin is None else np.asarray(origin, dtype=float)
    grid = DenseViewDistanceGrid(size, origin=origin, dim=dim, shape=shape, min_radius=min_radius)
    model = BruteForce(dim, shape)
    centres = origin + rng.uniform(0, size, (n, dim))
    radii = np.exp(rng.uniform(np.log(min_radius / 4), np.log(size / 2), n))
    radii = np.minimum(radii, np.nextafter(size / 2, 0))
    for h, c, r in zip(grid.insert_many(centres, radii).tolist(), centres, radii):
        model.insert(h, c, r)
    grid.check_invariants()
    return grid, model, rng


# -- construction, min_radius and the fixed world ----------------------------

@pytest.mark.parametrize("dim", [1, 2, 3])
def test_default_min_radius_gives_about_default_finest_cells(dim):
    grid = DenseViewDistanceGrid(1024.0, dim=dim)
    level = 18 // dim
    assert grid.finest_level == level
    assert grid.min_radius == 1024.0 / 2 ** (level + 2)
    assert grid.cell_count == sum(2 ** (L * dim) for L in range(level + 1))
    assert 2 ** (level * dim) <= DEFAULT_FINEST_CELLS
    assert grid._cells.start.nbytes + grid._cells.count.nbytes + grid._cells.capacity.nbytes == 12 * grid.cell_count
    assert len(grid) == 0 and grid.node_count == 0 and grid.query(np.zeros(dim)).tolist() == []


@pytest.mark.parametrize("min_radius, level", [
    (7.99, 0), (4.0, 0), (3.99, 1), (2.0, 1), (1.99, 2), (1.0, 2), (0.25, 4), (0.2499, 5), (1e-3, 12),
])
def test_min_radius_picks_the_level_holding_it(min_radius, level):
    # size 16: level L holds radii in [16/2**(L+2), 16/2**(L+1))
    grid = DenseViewDistanceGrid(16.0, dim=1, min_radius=min_radius)
    assert grid.finest_level == level
    assert grid.min_radius == min_radius


@pytest.mark.parametrize("bad", [0.0, -1.0, float("nan"), float("inf"), "1", True, None.__class__, 8.0, 100.0])
def test_bad_min_radius_is_a_value_error(bad):
    with pytest.raises(ValueError, match="min_radius"):
        DenseViewDistanceGrid(16.0, dim=2, min_radius=bad)


@pytest.mark.parametrize("dim, finest", [(1, 24), (2, 12), (3, 8)])
def test_min_radius_memory_bound(dim, finest):
    size = 1.0
    ok = DenseViewDistanceGrid(size, dim=dim, min_radius=size / 2 ** (finest + 2))  # exactly 2**24 finest cells
    assert ok.finest_level == finest and 2 ** (finest * dim) == MAX_FINEST_CELLS
    with pytest.raises(ValueError, match=r"MAX_FINEST_CELLS.*min_radius >= "):
        DenseViewDistanceGrid(size, dim=dim, min_radius=np.nextafter(size / 2 ** (finest + 2), 0))


def test_cells_too_fine_for_float64_at_the_origin_name_a_min_radius_that_fits():
    """The refusal names the smallest min_radius that fits, in full (a value rounded by ``:g`` was itself
    refused), and that value is accepted; the default min_radius can be refused too (an origin of 1e15)."""
    for origin, min_radius in (((1e12,), 2.0 ** -15), ((1e15, 0.0), None), ((1e15, 0.0, 0.0), None)):
        with pytest.raises(ValueError, match="too small for float64") as refused:
            DenseViewDistanceGrid(3.0, origin=origin, dim=len(origin), min_radius=min_radius)
        named = float(re.search(r"use min_radius >= (\S+) ", str(refused.value)).group(1))
        grid = DenseViewDistanceGrid(3.0, origin=origin, dim=len(origin), min_radius=named)
        assert grid.min_radius == named
    with pytest.raises(ValueError, match="move the origin nearer 0 or use the tree"):
        DenseViewDistanceGrid(1e-6, origin=(1e15,), dim=1)


@pytest.mark.parametrize("dim", [1, 2, 3])
def test_the_memory_bounds_message_names_a_min_radius_that_is_accepted(dim):
    """``:g`` rounded 2**-10 down to 0.000976562, below the bound, so the value it named was refused."""
    with pytest.raises(ValueError, match="MAX_FINEST_CELLS") as refused:
        DenseViewDistanceGrid(1.0, dim=dim, min_radius=1e-12)
    named = float(re.search(r"use min_radius >= (\S+) ", str(refused.value)).group(1))
    assert DenseViewDistanceGrid(1.0, dim=dim, min_radius=named).min_radius == named


@pytest.mark.parametrize("dim", [1, 2, 3])
def test_the_memory_bounds_message_in_a_world_narrow_for_its_origin_names_a_value_that_fits_both(dim):
    """Near 1e15 the cells the memory bound allows are narrower than float64 can place: the refusal named
    that bound, which was then refused as too fine for the origin; it now names the coarser of the two."""
    origin = np.full(dim, 1e15)
    with pytest.raises(ValueError, match="MAX_FINEST_CELLS") as refused:
        DenseViewDistanceGrid(1024.0, origin=origin, dim=dim, min_radius=1e-300)
    named = float(re.search(r"use min_radius >= (\S+) ", str(refused.value)).group(1))
    assert DenseViewDistanceGrid(1024.0, origin=origin, dim=dim, min_radius=named).min_radius == named


def test_repr_gives_min_radius_in_full():
    grid = DenseViewDistanceGrid(1 / 3, origin=(0.1,), dim=1, min_radius=1 / 3000)
    assert f"min_radius={1 / 3000!r}," in repr(grid)


@pytest.mark.parametrize("kwargs", [
    {"size": 0.0}, {"size": -1.0}, {"size": float("nan")}, {"size": float("inf")}, {"size": "8"},
    {"dim": 0}, {"dim": 4}, {"dim": 2.0}, {"shape": "box"}, {"origin": (0.0, 0.0)},
    {"origin": (float("nan"), 0.0, 0.0)}, {"origin": (1.7e308, 0.0, 0.0), "size": 1e308},
])
def test_bad_constructor_arguments(kwargs):
    args = {"size": 8.0, "dim": 3, **kwargs}
    with pytest.raises(ValueError):
        DenseViewDistanceGrid(args.pop("size"), **args)


@pytest.mark.parametrize("dim", [1, 2, 3])
def test_fixed_world_rejects_centres_outside_and_large_radii(dim):
    origin = np.full(dim, -3.0)
    grid = DenseViewDistanceGrid(8.0, origin=origin, dim=dim, min_radius=0.1)
    h = grid.insert(np.zeros(dim), 1.0)
    top = origin + 8.0
    # the world is half-open: the low corner and the largest float below the top are inside
    inside = [origin, np.nextafter(top, -np.inf)]
    hs = grid.insert_many(np.array(inside), [0.0, np.nextafter(4.0, 0)])
    grid.check_invariants()
    before = snapshot(grid)
    for axis in range(dim):
        for bad in (np.nextafter(origin[axis], -np.inf), top[axis], 1e300):
            centre = np.zeros(dim)
            centre[axis] = bad
            with pytest.raises(ValueError, match=r"^centre must lie .* does not grow\); got \["):
                grid.insert(centre, 1.0)
            with pytest.raises(ValueError, match=r"^centres must lie .* does not grow\); centres\[1\] is \["):
                grid.insert_many(np.array([np.zeros(dim), centre]), [1.0, 1.0])
            with pytest.raises(ValueError, match=r"^centre must lie .* does not grow\); got \["):
                grid.update(h, centre, 1.0)
            with pytest.raises(ValueError, match="does not grow"):
                grid.update_many(np.array([h, hs[0]]), np.array([np.zeros(dim), centre]), [1.0, 1.0])
    for radius in (4.0, 5.0, 1e300):
        with pytest.raises(ValueError, match=r"^radius must be below size/2 .*; got "):
            grid.insert(np.zeros(dim), radius)
        with pytest.raises(ValueError, match=r"^radii must be below size/2 .*; radii\[1\] is "):
            grid.insert_many(np.zeros((2, dim)), [1.0, radius])
        with pytest.raises(ValueError, match=r"^radius must be below size/2 .*; got "):
            grid.update(h, np.zeros(dim), radius)
        with pytest.raises(ValueError, match="below size/2"):
            grid.update_many([h], np.zeros((1, dim)), [radius])
    assert_unchanged(before, snapshot(grid))
    grid.check_invariants()


@pytest.mark.parametrize("size, origin, centre", [
    (1e300, -5e299, 4.9999999999999995e299), (1e300, 0.1, 1e300), (2.0 ** 995, 0.1, 2.0 ** 995),
    (1e-300, -1e-300, -5e-324), (1e-300, -7e-301, 3e-301)])
def test_a_centre_within_rounding_of_the_top_face_of_a_huge_or_tiny_world_is_inside(size, origin, centre):
    """Beyond the face tests' range (a world past ``2**995`` or below ``2**-960``) the placed coordinate of
    a centre just inside the top face reads 1.0: the world's bound is then decided in exact arithmetic, so
    such a centre is stored (in the top cell) and the first float at the top is still refused."""
    inside = Fraction(origin) <= Fraction(centre) < Fraction(origin) + Fraction(size)
    assert inside
    for dim in (1, 2):
        grid = DenseViewDistanceGrid(size, origin=np.full(dim, origin), dim=dim)
        point = np.full(dim, centre)
        h = grid.insert(point, 0.0)
        assert grid.query(point, exact=True).tolist() == [h]
        grid.update(h, point, 0.0)
        more = grid.insert_many(np.array([point, point]), [0.0, 0.0])
        grid.update_many(more, np.array([point, point]))
        grid.check_invariants()
        top = float(Fraction(origin) + Fraction(size))  # the nearest float to the top face
        if Fraction(top) >= Fraction(origin) + Fraction(size):
            with pytest.raises(ValueError, match="must lie in the grid's world"):
                grid.insert(np.full(dim, top), 0.0)
        grid.check_invariants()
        assert len(grid) == 3


# -- placement -------------------------------------------------------------------

def test_level_follows_the_radius_rule_at_its_boundaries():
    grid = DenseViewDistanceGrid(16.0, dim=2, min_radius=0.25)  # levels 0..4, W = 16, 8, 4, 2, 1
    cases = [  # (radius, level): cells of edge W hold [W/4, W/2)
        (np.nextafter(8.0, 0), 0), (4.0, 0), (np.nextafter(4.0, 0), 1), (2.0, 1), (np.nextafter(2.0, 0), 2),
        (1.0, 2), (np.nextafter(1.0, 0), 3), (0.5, 3), (0.25, 4), (np.nextafter(0.25, 0), 4), (0.1, 4),
        (1e-300, 4), (0.0, 4), (-0.0, 4),
    ]
    for radius, level in cases:
        h = grid.insert((1.0, 1.0), radius)
        assert grid._level[h] == level, (radius, grid._level[h], level)
        assert grid.radius(h) == radius and math.copysign(1.0, grid.radius(h)) == 1.0  # -0.0 stored as 0.0
    grid.check_invariants()
    assert grid.level_counts.tolist() == [2, 2, 2, 2, 6]


def test_cell_is_floor_of_centre_over_edge_with_half_open_boxes():
    grid = DenseViewDistanceGrid(8.0, dim=2, min_radius=0.5)  # level 2: W = 2, radii in [0.5, 1)
    for centre, cell in [((0.0, 0.0), (0, 0)), ((1.999, 0.0), (0, 0)), ((2.0, 0.0), (1, 0)),
                         ((5.0, 7.999), (2, 3)), ((6.0, 2.0), (3, 1))]:
        h = grid.insert(centre, 0.5)
        level = int(grid._level[h])
        flat = int(grid._cells.cell[h]) - int(grid._geo.offsets[level])
        assert level == 2 and divmod(flat, 4) == cell, (centre, divmod(flat, 4))
    grid.check_invariants()


@pytest.mark.parametrize("shape", SHAPES)
def test_radii_below_min_radius_live_on_the_finest_level_and_stay_exact(shape):
    grid = DenseViewDistanceGrid(32.0, dim=3, shape=shape, min_radius=1.0)
    model = BruteForce(3, shape)
    finest = grid.finest_level
    for i, radius in enumerate([0.0, 1e-300, 1e-9, 0.1, 0.5, np.nextafter(1.0, 0)]):
        centre = np.array([3.0 + 4 * i, 17.25, 9.5])
        h = grid.insert(centre, radius)
        model.insert(h, centre, radius)
        assert grid._level[h] == finest
        assert grid.query(centre, exact=True).tolist() == [h]
        for axis in range(3):
            surface = centre.copy()
            surface[axis] += radius
            check_query(grid, model, surface)
            check_query(grid, model, centre + 0.3 * radius, scale=2.5)
    grid.check_invariants()
    assert grid.level_counts.tolist() == [0] * finest + [6]


@pytest.mark.parametrize("shape", SHAPES)
def test_radius_zero_is_found_only_at_its_centre(shape):
    grid = DenseViewDistanceGrid(8.0, dim=2, shape=shape, min_radius=0.5)
    h = grid.insert((3.0, 5.0), 0.0)
    assert grid.query((3.0, 5.0), exact=True).tolist() == [h]
    assert grid.query((3.0, 5.0), exact=True, scale=100.0).tolist() == [h]
    for point in [(3.0 + 1e-9, 5.0), (3.0, np.nextafter(5.0, 0)), (3.1, 5.1)]:
        assert grid.query(point, exact=True).tolist() == []
        assert h in grid.query(point).tolist()  # still a candidate: it lives in the visited cell


# -- bad input leaves the grid unchanged -----------------------------------------

def _bad_calls(grid, live, removed):
    dim = grid.dim
    ok = np.zeros(dim)
    nan = np.full(dim, np.nan)
    two = np.zeros((2, dim))
    return [
        (ValueError, lambda: grid.insert(nan, 1.0)),
        (ValueError, lambda: grid.insert(np.full(dim, np.inf), 1.0)),
        (ValueError, lambda: grid.insert(np.zeros(dim + 1), 1.0)),
        (ValueError, lambda: grid.insert(two, 1.0)),
        (TypeError, lambda: grid.insert(["a"] * dim, 1.0)),
        (ValueError, lambda: grid.insert(ok, -1.0)),
        (ValueError, lambda: grid.insert(ok, np.nan)),
        (ValueError, lambda: grid.insert(ok, [1.0, 2.0])),
        (TypeError, lambda: grid.insert(ok, "x")),
        (ValueError, lambda: grid.insert_many(np.vstack([ok, nan]), [1.0, 1.0])),
        (ValueError, lambda: grid.insert_many(two, [1.0, -1.0])),
        (ValueError, lambda: grid.insert_many(two, [1.0, 1.0, 1.0])),
        (ValueError, lambda: grid.insert_many(np.zeros((2, dim + 1)), [1.0, 1.0])),
        (KeyError, lambda: grid.update(10 ** 9, ok, 1.0)),
        (KeyError, lambda: grid.update(-1, ok, 1.0)),
        (KeyError, lambda: grid.update(removed, ok, 1.0)),
        (TypeError, lambda: grid.update(1.0, ok, 1.0)),
        (TypeError, lambda: grid.update(True, ok, 1.0)),
        (ValueError, lambda: grid.update(live[0], nan, 1.0)),
        (ValueError, lambda: grid.update(live[0], ok, -2.0)),
        (ValueError, lambda: grid.update_many([live[0], live[0]], two, [1.0, 1.0])),
        (KeyError, lambda: grid.update_many([live[0], removed], two, [1.0, 1.0])),
        (KeyError, lambda: grid.update_many([live[0], -3], two, [1.0, 1.0])),
        (TypeError, lambda: grid.update_many([0.0, 1.0], two, [1.0, 1.0])),
        (ValueError, lambda: grid.update_many(live[:2], np.zeros((3, dim)), [1.0] * 3)),
        (ValueError, lambda: grid.update_many(live[:2], np.vstack([ok, nan]), [1.0, 1.0])),
        (ValueError, lambda: grid.update_many(live[:2], two, [1.0, np.inf])),
        (KeyError, lambda: grid.remove(removed)),
        (KeyError, lambda: grid.remove(10 ** 9)),
        (KeyError, lambda: grid.remove(np.int64(-1))),
        (TypeError, lambda: grid.remove("0")),
        (ValueError, lambda: grid.remove_many([live[1], live[1]])),
        (KeyError, lambda: grid.remove_many([live[1], removed])),
        (KeyError, lambda: grid.remove_many(np.array([live[1], 2 ** 40]))),
        (TypeError, lambda: grid.remove_many([1.5])),
        (ValueError, lambda: grid.query(nan)),
        (ValueError, lambda: grid.query(two)),
        (ValueError, lambda: grid.query(ok, scale=0.0)),
        (ValueError, lambda: grid.query(ok, scale=-1.0)),
        (ValueError, lambda: grid.query(ok, scale=np.inf)),
        (TypeError, lambda: grid.query(ok, scale="2")),
        (ValueError, lambda: grid.query_many(np.vstack([ok, nan]))),
        (ValueError, lambda: grid.trace(nan)),
    ]


@pytest.mark.parametrize("dim", [1, 3])
def test_bad_input_raises_and_leaves_the_grid_unchanged(dim):
    grid, model, _ = filled(dim=dim, n=50)
    live = grid.handles()
    removed = int(live[-1])
    grid.remove(removed)
    live = live[:-1].tolist()
    for error, call in _bad_calls(grid, live, removed):
        before = snapshot(grid)
        with pytest.raises(error):
            call()
        assert_unchanged(before, snapshot(grid))
    grid.check_invariants()


def test_membership_and_handles():
    grid = DenseViewDistanceGrid(8.0, dim=2, min_radius=0.5)
    a, b, c = (grid.insert((1.0, 1.0), 0.5) for _ in range(3))
    assert (a, b, c) == (0, 1, 2) and all(type(h) is int for h in (a, b, c))
    for h in (a, np.int32(b), np.uint8(c)):
        assert h in grid
    for absent in (-1, 3, 10 ** 30, 1.0, "0", None, True):
        assert absent not in grid
    grid.remove(b)
    assert b not in grid
    assert grid.insert((2.0, 2.0), 1.0) == b  # a removed handle is handed out again
    grid.remove_many([a, c])
    hs = grid.insert_many(np.ones((3, 2)), [0.5, 0.5, 0.5])
    assert hs.dtype == np.int64 and sorted(hs.tolist()) == [0, 2, 3]
    grid.check_invariants()


def test_returned_arrays_belong_to_the_caller():
    grid, model, _ = filled(dim=2, n=100)
    point = np.array([32.0, 32.0])
    got = grid.query(point)
    expected = got.copy()
    got[:] = -7
    np.testing.assert_array_equal(grid.query(point), expected)
    h = int(grid.handles()[0])
    c = grid.centre(h)
    c[:] = 1e9
    assert (grid.centre(h) != 1e9).all()
    cs, rs = grid.centres_of([h]), grid.radii_of([h])
    cs[:] = 0.0
    rs[:] = 0.0
    assert grid.radius(h) == model.objects[h][1]
    np.testing.assert_array_equal(grid.centre(h), model.objects[h][0])
    grid.check_invariants()


def test_dim1_scalars_flat_centres_and_input_types():
    grid = DenseViewDistanceGrid(16.0, dim=1, min_radius=0.5)
    a = grid.insert(3.0, 1.0)
    b = grid.insert(np.float32(5.0), np.float32(2.0))
    hs = grid.insert_many([1.0, 2.0], (0.5, 0.5))
    hs2 = grid.insert_many(np.array([[7.0], [9.0]], dtype=np.float32), np.array([1, 2]))
    assert grid.query(2.9, exact=True).tolist() == [a]
    assert sorted(grid.query([5.0], exact=True).tolist()) == [b]
    handles, counts = grid.query_many([1.0, 9.0], exact=True)
    assert counts.tolist() == [1, 1] and handles.tolist() == [hs[0], hs2[1]]
    with pytest.raises(ValueError, match="query_many"):
        grid.query([[1.0], [2.0]])
    grid.update_many(hs, [[4.0], [6.0]], [1, 1])
    grid.update(a, 8, 3)
    assert grid.centre(a).tolist() == [8.0] and grid.radius(a) == 3.0
    grid.check_invariants()


def test_empty_batches_and_empty_grid():
    grid = DenseViewDistanceGrid(8.0, dim=3, min_radius=0.5)
    assert grid.insert_many(np.empty((0, 3)), []).tolist() == []
    grid.update_many([], np.empty((0, 3)), [])
    grid.remove_many([])
    handles, counts = grid.query_many(np.empty((0, 3)), exact=True)
    assert handles.dtype == np.int64 and handles.size == 0 and counts.shape == (0,)
    handles, counts = grid.query_many([[1.0, 2.0, 3.0]])
    assert handles.size == 0 and counts.tolist() == [0]
    trace = grid.trace((1.0, 1.0, 1.0))
    assert trace.levels == [] and trace.candidates.size == 0
    grid.check_invariants()


# -- against brute force -----------------------------------------------------------

def _random_point(rng, model, origin, size, dim):
    """Anywhere in (and a little around) the world, or near an object: centre or surface."""
    if model.objects and rng.random() < 0.5:
        h = rng.choice(list(model.objects))
        c, r = model.objects[h]
        kind = rng.integers(3)
        if kind == 0:
            return c.copy()
        direction = np.zeros(dim)
        direction[rng.integers(dim)] = rng.choice([-1.0, 1.0])
        if kind == 2:
            direction = rng.normal(size=dim)
            direction /= np.linalg.norm(direction)
        return c + r * direction * rng.choice([1.0, 0.999999, 1.000001])
    return origin + rng.uniform(-0.25, 1.25, dim) * size


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("dim, size, origin", [
    (1, 64.0, (0.0,)),
    (2, 1000.0, (-317.3, 12.125)),        # not binary fractions: rounding at every box edge
    (3, 64.0, (-32.0, -32.0, -32.0)),
])
def test_random_operations_against_brute_force(dim, size, origin, shape):
    origin = np.array(origin)
    grid, model, rng = filled(dim, shape, n=60, seed=dim, size=size, origin=origin, min_radius=size / 200)

    def centre():
        return origin + rng.uniform(0.0, 1.0, dim) * size

    def radius():
        return float(min(np.exp(rng.uniform(np.log(size / 1000), np.log(size / 2))), np.nextafter(size / 2, 0)))

    for step in range(120):
        op = rng.integers(6)
        live = list(model.objects)
        if op == 0 or not live:
            h = grid.insert(centre(), r := radius())
            model.insert(h, grid.centre(h), r)
        elif op == 1:
            n = int(rng.integers(0, 12))
            cs, rs = np.array([centre() for _ in range(n)]).reshape(n, dim), np.array([radius() for _ in range(n)])
            for h, c, r in zip(grid.insert_many(cs, rs).tolist(), cs, rs):
                model.insert(h, c, r)
        elif op == 2:
            h = int(rng.choice(live))
            c, r = model.objects[h]
            small = np.clip(c + rng.normal(0, size / 500, dim), origin, np.nextafter(origin + size, -np.inf))
            c, r = (small, r) if rng.random() < 0.5 else (centre(), radius())
            grid.update(h, c, r)
            model.update(h, c, r)
        elif op == 3:
            hs = rng.choice(live, size=min(len(live), int(rng.integers(0, 15))), replace=False)
            cs, rs = np.array([centre() for _ in hs]).reshape(len(hs), dim), np.array([radius() for _ in hs])
            grid.update_many(hs, cs, rs)
            for h, c, r in zip(hs.tolist(), cs, rs):
                model.update(h, c, r)
        elif op == 4:
            h = int(rng.choice(live))
            grid.remove(h)
            model.remove(h)
        else:
            hs = rng.choice(live, size=min(len(live), int(rng.integers(0, 10))), replace=False)
            grid.remove_many(hs)
            for h in hs.tolist():
                model.remove(h)
        check_contents(grid, model)
        for _ in range(2):
            point = _random_point(rng, model, origin, size, dim)
            for scale in (0.5, 1.0, 2.5):
                check_query(grid, model, point, scale)
        if step % 10 == 0:
            points = np.array([_random_point(rng, model, origin, size, dim) for _ in range(8)])
            check_query_many(grid, model, points, float(rng.choice([0.3, 1.0, 4.0])))


@st.composite
def worlds(draw):
    dim = draw(st.integers(1, 3))
    shape = draw(st.sampled_from(SHAPES))
    size = draw(st.sampled_from([1.0, 16.0, 1000.0, 0.3]))
    # origins within 20 world sizes: the shared trace check compares box edges with rtol 1e-12
    origin = [size * x for x in draw(st.lists(st.floats(-20.0, 20.0), min_size=dim, max_size=dim))]
    coordinate = st.floats(0.0, 1.0, exclude_max=True, allow_nan=False)
    n = draw(st.integers(0, 25))
    centres = np.array([[o + size * draw(coordinate) for o in origin] for _ in range(n)]).reshape(n, dim)
    top = np.array(origin) + size
    with np.errstate(under="ignore"):  # the top may be 0: the float below it is subnormal
        centres = np.minimum(centres, np.nextafter(top, -np.inf))
    radius = st.one_of(st.sampled_from([0.0, size / 4, size / 8, size / 64]),
                       st.floats(0.0, size / 2, exclude_max=True, allow_nan=False))
    radii = np.array([draw(radius) for _ in range(n)])
    return dim, shape, size, np.array(origin), centres, radii


@given(world=worlds(), data=st.data())
def test_hypothesis_queries_match_brute_force(world, data):
    dim, shape, size, origin, centres, radii = world
    grid = DenseViewDistanceGrid(size, origin=origin, dim=dim, shape=shape, min_radius=size / 100)
    model = BruteForce(dim, shape)
    for h, c, r in zip(grid.insert_many(centres, radii).tolist(), centres, radii):
        model.insert(h, c, r)
    grid.check_invariants()
    points = []
    for _ in range(3):
        if len(centres) and data.draw(st.booleans(), label="near an object"):
            i = data.draw(st.integers(0, len(centres) - 1), label="object")
            axis = data.draw(st.integers(0, dim - 1), label="axis")
            point = centres[i].copy()
            point[axis] += data.draw(st.sampled_from([-1.0, 1.0, 0.0]), label="sign") * radii[i]
        else:
            fractions = data.draw(st.lists(st.floats(-1.0, 2.0), min_size=dim, max_size=dim), label="point")
            with np.errstate(under="ignore"):
                point = origin + size * np.array(fractions)
        scale = data.draw(st.sampled_from([0.25, 1.0, 3.0]), label="scale")
        check_query(grid, model, point, scale)
        points.append(point)
    check_query_many(grid, model, np.array(points), 1.0)


# -- the O(1) claims, as counts of touched entries -------------------------------------

def test_move_within_a_cell_changes_nothing_else():
    grid, model, rng = filled(dim=3, n=300)
    for h in grid.handles()[:40].tolist():
        level = int(grid._level[h])
        w = float(grid._geo.cell_size[level])
        lo, _ = grid._geo.bounds(level, grid._geo.coords(grid._cells.cell[[h]].astype(np.int64), np.array([level])))
        new_centre = lo[0] + rng.uniform(0.01, 0.99, 3) * w
        new_radius = grid.radius(h) if level == grid.finest_level else w * rng.uniform(0.25, 0.4999)
        before = snapshot(grid)
        grid.update(h, new_centre, new_radius)
        diff = {k: v for k, v in changed(before, snapshot(grid)).items() if v}
        # that object's pool row only
        assert set(diff) <= {"columns"} and diff.get("columns", 0) <= grid._cells.columns.shape[0], diff
        np.testing.assert_array_equal(grid.centre(h), new_centre)
    grid.check_invariants()
    # the batch form: every object stays, so no cell, slot or pool entry moves
    hs = grid.handles()
    before = snapshot(grid)
    grid.update_many(hs, grid.centres_of(hs), grid.radii_of(hs))
    assert not {k: v for k, v in changed(before, snapshot(grid)).items() if v}


def test_single_insert_and_remove_touch_a_constant_number_of_entries():
    grid = DenseViewDistanceGrid(64.0, dim=3, min_radius=0.5)
    rng = np.random.default_rng(5)
    hs = grid.insert_many(np.tile([[10.0, 20.0, 30.0]], (37, 1)), np.full(37, 0.2))  # 37 in one cell
    grid.insert_many(rng.uniform(0, 64, (500, 3)), rng.uniform(0.1, 20, 500))
    grid.insert((10.2, 20.2, 30.2), 0.2)  # the block doubles (a repack cuts blocks to their members)
    before = snapshot(grid)
    h = grid.insert((10.5, 20.5, 30.5), 0.2)  # same cell: room in its block
    diff = changed(before, snapshot(grid))
    assert diff["handles"] <= 1 and diff["columns"] <= 5 and diff["count"] == 1 and diff["start"] == diff["capacity"] == 0
    before = snapshot(grid)
    grid.remove(hs[3])  # the cell's last member moves into its slot
    diff = changed(before, snapshot(grid))
    assert diff["handles"] <= 1 and diff["columns"] <= 5 and diff["count"] == 1 and diff["slot"] <= 1
    assert diff["cell"] == 1 and diff["level"] == 1 and diff["capacity"] == diff["start"] == 0
    grid.remove(h)
    grid.check_invariants()


@pytest.mark.parametrize("dim", [1, 2, 3])
def test_query_visits_at_most_two_cells_per_axis_and_level(dim):
    grid, model, rng = filled(dim=dim, n=400, min_radius=0.1)
    for _ in range(100):
        point = rng.uniform(-10, 74, dim)
        for scale, per_axis in ((0.3, 2), (1.0, 2), (2.0, 3), (3.5, 5)):
            trace = grid.trace(point, scale=scale)
            assert len(trace.levels) <= grid.finest_level + 1
            assert all(level.nodes <= per_axis ** dim for level in trace.levels)
            assert trace.levels[0].nodes == 1


def test_a_dense_cluster_far_away_is_never_looked_at():
    grid = DenseViewDistanceGrid(4096.0, dim=3, min_radius=8.0)
    rng = np.random.default_rng(11)
    forest = grid.insert_many(rng.uniform(0, 4096, (500, 3)), rng.uniform(8, 400, 500))
    point = np.array([3000.0, 3000.0, 100.0])
    before = grid.trace(point)
    cluster = grid.insert_many(rng.normal(500.0, 20.0, (20000, 3)), rng.uniform(8, 12, 20000))
    after = grid.trace(point)
    assert not set(after.candidates.tolist()) & set(cluster.tolist())
    assert [lv.nodes for lv in after.levels] == [lv.nodes for lv in before.levels]
    assert sorted_handles(after.candidates) == sorted_handles(before.candidates)
    assert set(before.candidates.tolist()) <= set(forest.tolist())


# -- trace ---------------------------------------------------------------------------

def test_trace_lists_every_level_down_to_the_deepest_occupied_one():
    grid = DenseViewDistanceGrid(16.0, dim=2, min_radius=0.25)  # levels 0..4
    h = grid.insert((5.0, 5.0), 0.6)  # level 3 (W = 2)
    trace = grid.trace((5.5, 5.0))
    assert [lv.depth for lv in trace.levels] == [0, 1, 2, 3]
    assert [lv.level for lv in trace.levels] == [0, 1, 2, 3]
    assert [lv.objects for lv in trace.levels] == [0, 0, 0, 1]
    assert [lv.node_size for lv in trace.levels] == [16.0, 8.0, 4.0, 2.0]
    assert trace.candidates.tolist() == [h]
    root = trace.levels[0]
    np.testing.assert_array_equal(root.bounds, [[[0.0, 0.0], [16.0, 16.0]]])
    np.testing.assert_array_equal(root.loose_bounds, root.bounds)
    level3 = trace.levels[3]
    np.testing.assert_array_equal(level3.loose_bounds[:, 0], level3.bounds[:, 0] - 1.0)
    np.testing.assert_array_equal(level3.loose_bounds[:, 1], level3.bounds[:, 1] + 1.0)
    # far outside the world only the root is visited
    far = grid.trace((1e6, -1e6))
    assert [lv.nodes for lv in far.levels] == [1] and far.candidates.size == 0
    # the query skips the empty levels but returns the same handles
    assert grid.query((5.5, 5.0)).tolist() == [h]


def robust_answer(model: BruteForce, point, scale: float) -> set[int]:
    """The exact answer without overflow or underflow: distances as ``m * |d / m|``, ``m = max |d|``."""
    handles, centres, radii = model.arrays()
    with np.errstate(over="ignore", under="ignore"):
        offsets = np.abs(np.asarray(point) - centres)
        largest = offsets.max(axis=1)
        if model.shape == "cube":
            distance = largest
        else:
            safe = np.where(largest > 0, largest, 1.0)
            distance = largest * np.sqrt(((offsets / safe[:, None]) ** 2).sum(axis=1))
        return set(handles[distance <= radii * scale].tolist())


def test_extreme_points_and_scales_raise_no_floating_point_error():
    grid, model, _ = filled(dim=3, n=100)
    for point in ([1e300, -1e300, 0.0], [1e-300, 5e-324, 0.0], [32.0, 32.0, 32.0]):
        for scale in (1e-300, 5e-324, 1e-3, 1.0, 1e3, 1e300, 1.7e308):
            expected = robust_answer(model, point, scale)
            for exact in (False, True):
                got = set(grid.query(point, exact=exact, scale=scale).tolist())
                assert got == expected if exact else got >= expected
                handles, counts = grid.query_many([point, point], exact=exact, scale=scale)
                assert counts.tolist() == [len(got)] * 2 and set(handles.tolist()) == got
            traced = grid.trace(point, scale=scale).candidates
            assert sorted(traced.tolist()) == sorted(grid.query(point, scale=scale).tolist())


# -- the two candidate paths agree, and the windows are the tree's -------------------------

@pytest.mark.parametrize("dim", [2, 3])
def test_large_scale_object_path_equals_cell_enumeration(dim, monkeypatch):
    grid, model, rng = filled(dim=dim, n=60, min_radius=0.2)
    points = rng.uniform(-5, 70, (20, dim))
    results = {}
    for limit in (0, 10 ** 12):  # by object / always enumerate cells
        monkeypatch.setattr(dense_module, "MAX_ENUMERATED_CELLS", limit)
        results[limit] = [grid.query_many(points, exact=e, scale=s) for e in (False, True) for s in (6.0, 40.0)]
    for (h0, c0), (h1, c1) in zip(results[0], results[10 ** 12]):
        np.testing.assert_array_equal(c0, c1)
        starts = np.concatenate([[0], np.cumsum(c0)])
        for i in range(len(points)):
            assert sorted(h0[starts[i]:starts[i + 1]]) == sorted(h1[starts[i]:starts[i + 1]])
    for p in points[:5]:
        check_query(grid, model, p, 40.0, trace=False)
    # a fine grid (2**18 finest cells) and a huge scale: every object is tested, no cell is enumerated one by one
    fine = DenseViewDistanceGrid(64.0, dim=dim)
    fine.insert_many(grid.centres_of(grid.handles()), grid.radii_of(grid.handles()))
    for p in points[:3]:
        assert sorted(fine.query(p, exact=True, scale=1e6).tolist()) == sorted(model.query(p, 1e6))
        assert fine.query(p, scale=1e6).size == len(fine)


def _strictly_within(x: float, reach: Fraction) -> tuple[float, float]:
    """The floats nearest ``x - reach`` and ``x + reach`` strictly between them (exact arithmetic)."""
    low, high = Fraction(x) - reach, Fraction(x) + reach
    a, b = float(low), float(high)
    while Fraction(a) <= low:
        a = math.nextafter(a, math.inf)
    while Fraction(b) >= high:
        b = math.nextafter(b, -math.inf)
    return a, b


@pytest.mark.parametrize("size, origin", [(16.0, (-8.0, -8.0, -8.0)), (1000.0, (-317.3, 0.1, 1e4 / 3)),
                                          (7.3, (1e6, -2048.0, 0.1))])
def test_windows_are_the_trees_windows_cut_to_the_world(size, origin):
    """The grid's compiled window (culling.grid.walk.cell_window) is the tree's exact window (the
    cells whose grown box holds the point, in rationals) shifted to the grid's cells and clamped to
    the world, empty exactly when no cell of the world holds the point in its grown box; and it holds
    the home cell of every world centre within reach, also a few ulps from a grown box's edge."""
    from lattice_reference import visit_window as _exact_window

    from culling.core.lattice import ANCHOR, Lattice
    from culling.core.structs import World
    from culling.grid import walk as gridwalk

    grid = DenseViewDistanceGrid(size, origin=origin, dim=3, min_radius=size / 300)
    geo, world, lat = grid._geo, World(grid.origin, grid.size, 0, 0), Lattice(size, np.array(origin))
    o, top_corner = np.array(origin), geo.hi
    rng = np.random.default_rng(3)
    points = []
    for level in range(1, geo.finest_level + 1):
        w = geo.cell_size[level]
        for scale in (0.5, 1.0, 2.5):
            k = rng.integers(-1, 2 ** level + 1, (4, 3)).astype(float)
            edge = o + k * w + rng.choice([-1, 1], (4, 3)) * (scale * w / 2)
            for ulps in (-2, -1, 0, 1, 2):
                points += [(p, scale) for p in edge + ulps * np.spacing(edge)]
    points += [(p, 1.0) for p in o + rng.uniform(-0.5, 1.5, (50, 3)) * size]
    lo, hi = np.empty(3, dtype=np.int64), np.empty(3, dtype=np.int64)
    for p, scale in points:
        for level in range(1, geo.finest_level + 1):
            top = 2 ** level - 1
            n = gridwalk.cell_window(p, scale, world, level, lo, hi)
            want, empty = [], False
            for first, last in _exact_window(lat, p.tolist(), level, scale):  # rationals: grown boxes holding p
                first, last = first - (ANCHOR << level), last - (ANCHOR << level)
                empty |= last < 0 or first > top
                want.append((min(max(first, 0), top), min(last, top)))
            if empty:
                assert n == 0, (p.tolist(), scale, level)
                continue
            assert list(zip(lo.tolist(), hi.tolist())) == want, (p.tolist(), scale, level)
            assert n == np.prod([b - a + 1 for a, b in want])
            # centres just within reach (the floats nearest p -+ s*W/2 strictly inside), placed as the grid does
            q = np.array([[*_strictly_within(x, scale * Fraction(geo.cell_size[level]) / 2), x]
                          for x in p.tolist()]).T
            q = q[((q >= o) & (q < top_corner)).all(axis=1)]
            if q.size:
                _, cells = geo.homes(q, np.full(len(q), geo.cell_size[level] / 4))
                coords = geo.coords(cells, np.full(len(q), level))
                assert ((coords >= lo) & (coords <= hi)).all(), (p.tolist(), scale, level)


# -- against the tree, and memory ---------------------------------------------------------------

@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("dim", [2, 3])
def test_same_exact_sets_as_the_tree(dim, shape):
    rng = np.random.default_rng(dim)
    size = 512.0
    centres = rng.uniform(0.0, size, (3000, dim))
    radii = np.exp(rng.uniform(np.log(0.5), np.log(255.0), 3000))
    grid = DenseViewDistanceGrid(size, dim=dim, shape=shape, min_radius=2.0)
    tree = ViewDistanceTree(size, dim=dim, shape=shape)
    np.testing.assert_array_equal(grid.insert_many(centres, radii), tree.insert_many(centres, radii))
    moved = rng.choice(3000, 500, replace=False)
    new = np.clip(centres[moved] + rng.normal(0, 5, (500, dim)), 0, np.nextafter(size, 0))
    grid.update_many(moved, new, radii[moved])
    tree.update_many(moved, new, radii[moved])
    gone = rng.choice(3000, 300, replace=False)
    grid.remove_many(gone)
    tree.remove_many(gone)
    grid.check_invariants()
    points = np.vstack([rng.uniform(-20, size + 20, (200, dim)), centres[:50]])
    for scale in (0.5, 1.0, 2.0):
        gh, gc = grid.query_many(points, exact=True, scale=scale)
        th, tc = tree.query_many(points, exact=True, scale=scale)
        np.testing.assert_array_equal(gc, tc)
        g0 = np.concatenate([[0], np.cumsum(gc)])
        for i in range(0, len(points), 7):
            assert sorted(gh[g0[i]:g0[i + 1]]) == sorted(th[g0[i]:g0[i + 1]])
            assert sorted_handles(grid.query(points[i], exact=True, scale=scale)) == \
                sorted_handles(tree.query(points[i], exact=True, scale=scale))


def test_pool_repacks_and_gives_memory_back():
    grid = DenseViewDistanceGrid(64.0, dim=2, min_radius=0.5)
    rng = np.random.default_rng(2)
    hs = grid.insert_many(np.full((5000, 2), 3.0), np.full(5000, 0.3))  # one crowded cell
    others = grid.insert_many(rng.uniform(0, 64, (3000, 2)), rng.uniform(0.2, 20, 3000))
    grid.check_invariants()
    big = grid._cells.handles.shape[0]
    grid.remove_many(hs[:4990])
    grid.remove_many(others[:2900])
    grid.check_invariants()
    assert grid._cells.handles.shape[0] < big / 10
    # objects hopping between cells one by one: blocks are given up and re-made, repacks stay correct
    mover = int(hs[-1])
    for i in range(400):
        grid.update(mover, ((i * 7.3) % 64, (i * 3.1) % 64), 0.3)
        if i % 50 == 0:
            grid.check_invariants()
    grid.check_invariants()
    assert len(grid) == 110 and grid.node_count == int((grid._cells.count > 0).sum())


def test_a_moving_crowd_does_not_repack_the_pool_frame_after_frame(monkeypatch):
    """Cut to their members by a repack, every block was full: each cell a mover entered moved its block
    to the pool's end, and a crowd that all moves a little repacked the whole pool (O(objects)) every
    frame or two.  A repack now leaves each block a quarter spare (at least one entry)."""
    from culling.grid import pool as cellpool

    repacks = []
    repack = cellpool.CellPool._repack
    monkeypatch.setattr(cellpool.CellPool, "_repack", lambda self, *a, **k: repacks.append(1) or repack(self, *a, **k))
    rng = np.random.default_rng(5)
    n, size = 20_000, 1024.0
    grid = DenseViewDistanceGrid(size, dim=2, min_radius=4.0)
    centres = rng.uniform(0, size, (n, 2))
    handles = grid.insert_many(centres, rng.uniform(4.0, 16.0, n))
    grid._cells._repack()                                     # as after a repack: every block has its room
    cells = grid._cells
    live = np.flatnonzero(cells.count > 0)
    assert np.array_equal(cells.capacity[live], cells.count[live] + np.maximum(1, cells.count[live] // 4))
    repacks.clear()
    for _ in range(20):                                       # every object moves a little, every frame
        centres = np.clip(centres + rng.normal(0.0, 0.5, centres.shape), 0.0, np.nextafter(size, 0.0))
        grid.update_many(handles, centres)
    grid.check_invariants()
    assert len(repacks) <= 2, len(repacks)                   # with blocks cut to their members: 20 and more


def test_nbytes_counts_cells_and_objects():
    grid = DenseViewDistanceGrid(256.0, dim=3, min_radius=4.0)
    empty = grid.nbytes()
    assert empty >= 12 * grid.cell_count
    rng = np.random.default_rng(0)
    grid.insert_many(rng.uniform(0, 256, (10000, 3)), rng.uniform(4, 100, 10000))
    per_object = (grid.nbytes() - empty) / 10000
    assert 4 + 8 * 4 <= per_object <= 200, per_object


def test_cell_pool_random_batches_with_frequent_repacks(monkeypatch):
    """The membership store alone: random single and batch links and unlinks, a pool that
    starts tiny, so blocks move and the pool repacks and shrinks all the time."""
    from culling.grid import pool as cellpool

    monkeypatch.setattr(cellpool, "MIN_POOL", 1)
    rng = np.random.default_rng(9)
    pool = cellpool.CellPool(n_cells=40, columns=2)
    pool.reserve_objects(500)
    where = {}  # handle -> (cell, row)
    for step in range(400):
        free = [h for h in range(500) if h not in where]
        op = rng.integers(4)
        if op == 0:
            hs = rng.choice(free, size=int(rng.integers(0, 30)), replace=False)
            cells = rng.integers(0, 8 if step % 3 else 40, hs.size)  # crowd a few cells at times
            rows = rng.normal(size=(2, hs.size))
            pool.link_many(hs, cells, rows)
            where.update({int(h): (int(c), tuple(r)) for h, c, r in zip(hs, cells, rows.T)})
        elif op == 1 and where:
            hs = rng.choice(list(where), size=min(len(where), int(rng.integers(0, 30))), replace=False)
            pool.unlink_many(hs)
            for h in hs.tolist():
                del where[h]
        elif op == 2:
            h, c, row = int(rng.choice(free)), int(rng.integers(0, 40)), tuple(rng.normal(size=2))
            pool.link(h, c, row)
            where[h] = (c, row)
        elif where:
            h = int(rng.choice(list(where)))
            pool.unlink(h)
            del where[h]
        alive = np.zeros(500, dtype=bool)
        alive[list(where)] = True
        pool.check(alive)
        members, rows, counts = pool.gather(np.arange(40))
        assert sorted(members.tolist()) == sorted(where)
        for h, row in zip(members.tolist(), rows.T):
            assert where[h][1] == tuple(row)
        assert counts.tolist() == [sum(c == cell for c, _ in where.values()) for cell in range(40)]


@pytest.mark.parametrize("kind", ["tree", "grid"])
def test_removals_give_the_per_handle_arrays_back_up_to_the_highest_live_handle(kind):
    """CONTRACT.md, Mutation: the per-handle arrays keep room up to the highest live handle.  The grid kept
    its arrays sized for every handle it had ever issued (100k inserted, 10 left: 1.7 MB of them)."""
    from culling import ViewDistanceTree

    rng = np.random.default_rng(4)
    make = (lambda: ViewDistanceTree(1024.0, dim=2)) if kind == "tree" else \
        (lambda: DenseViewDistanceGrid(1024.0, dim=2, min_radius=1.0))
    low_kept, high_kept = make(), make()
    centres, radii = rng.uniform(0, 1024, (100_000, 2)), rng.uniform(1, 8, 100_000)
    for structure, keep in ((low_kept, slice(0, 10)), (high_kept, slice(-10, None))):
        handles = structure.insert_many(centres, radii)
        alive = np.zeros(handles.size, dtype=bool)
        alive[keep] = True
        structure.remove_many(handles[~alive])
        structure.check_invariants()
        assert structure.handles().tolist() == handles[alive].tolist()
    state = lambda s: s._object_state().shape[0]  # noqa: E731 - one handle's entry in each per-handle array
    assert state(low_kept) <= 64 and state(high_kept) >= 100_000      # only as far as the highest live handle
    new = low_kept.insert_many(centres[:5], radii[:5])                 # handles are handed out again from 10 on
    assert sorted(new.tolist()) == list(range(10, 15)) and len(low_kept) == 15
    low_kept.check_invariants()


def test_the_invariant_checker_holds_a_subnormal_world_s_radii_to_its_exact_cell_edges():
    """A size of 11,469 ulps of 2**-1074: its cells' edges round, and the checker compared a radius of
    2,867 ulps with the rounded half edge (2,867, not 2,867.25) and failed a valid grid; and under
    ``np.seterr(all="raise")`` (the suite's, or a caller's) the constructor raised NumPy's underflow."""
    grid = DenseViewDistanceGrid(size=5.6664e-320, origin=[-2.833e-320], dim=1, shape="cube", min_radius=1.1e-322)
    h = grid.insert([-2.4768e-320], 1.4165e-320)
    grid.check_invariants()
    assert grid.query([-2.4768e-320], exact=True).tolist() == [h]


@pytest.mark.parametrize("dim", [1, 2, 3])
def test_a_radius_just_below_half_a_subnormal_size_is_accepted_everywhere_it_is_checked(dim):
    """``size = 1025`` ulps of ``2**-1074``: ``size / 2`` is 512.5 ulps and rounds to 512, so a radius of
    512 ulps is below it exactly and was refused by insert, insert_many, update, update_many and as
    ``min_radius``; 513 ulps is at or above it and still is."""
    ulp = 5e-324
    size, below, above = 1025 * ulp, 512 * ulp, 513 * ulp
    grid = DenseViewDistanceGrid(size, dim=dim, min_radius=64 * ulp)
    h = grid.insert(np.zeros(dim), below)
    many = grid.insert_many(np.zeros((2, dim)), [0.0, below])
    grid.update(h, np.zeros(dim), below)
    grid.update_many(many, np.zeros((2, dim)), [below, below])
    assert DenseViewDistanceGrid(size, dim=dim, min_radius=below).min_radius == below
    grid.check_invariants()
    assert sorted(grid.query(np.zeros(dim), exact=True).tolist()) == sorted([h, *many.tolist()])
    before = snapshot(grid)
    with pytest.raises(ValueError, match=r"^radius must be below size/2"):
        grid.insert(np.zeros(dim), above)
    with pytest.raises(ValueError, match=r"^radii must be below size/2"):
        grid.insert_many(np.zeros((2, dim)), [below, above])
    with pytest.raises(ValueError, match=r"^min_radius must be below size/2"):
        DenseViewDistanceGrid(size, dim=dim, min_radius=above)
    assert_unchanged(before, snapshot(grid))
