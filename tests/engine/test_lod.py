"""Levels of detail: the chains, the per-instance choice, the cross-fade records.

The pictures (LOD against full detail) are in ``test_lod_frames.py``; these
are the pure parts, without GL.
"""

import numpy as np
import pytest

from engine.lod import (
    LOD_CHAINS,
    MAX_LEVELS,
    LodChain,
    LodSelector,
    choose_levels,
    group_triangles,
    level_fractions,
    lod_chain,
    lod_instances,
    start_table,
)
from engine.meshes import get_mesh
from engine.records import CROSSFADE_BAND, FADE_FRACTION, INSTANCE_FLOATS
from scenes import SCENES, build_scene


def _ign(x, y):
    """The fragment shader's dither threshold (interleaved gradient noise), in float32 as a GPU computes it."""
    f = np.float32
    inner = np.mod(f(x) * f(0.06711056) + f(y) * f(0.00583715), f(1.0))
    return np.mod(f(52.9829189) * inner, f(1.0))


_XS, _YS = np.meshgrid(np.arange(64), np.arange(64))
THRESHOLDS = _ign(_XS, _YS).ravel().astype(np.float64)


def test_every_scene_kind_has_at_least_two_levels_with_fewer_triangles():
    for name in SCENES:
        for kind in build_scene(name, 50, seed=1).kinds:
            chain = lod_chain(kind.mesh)
            assert chain.levels >= 2, kind
            tris = chain.triangles()
            assert all(a > b for a, b in zip(tris, tris[1:])), (kind.mesh, tris)


def test_cards_are_flat_and_lit_from_the_viewer_side():
    """Cards lie in the xy plane (the renderer turns +z to the camera); their normals face
    +z, or lean from it (foliage lit like the volume it stands for) but never away."""
    for chain in LOD_CHAINS.values():
        for mesh, card in zip(chain.meshes, chain.billboard):
            if card:
                v = get_mesh(mesh).vertices
                assert np.all(v[:, 2] == 0.0) and np.all(v[:, 5] >= 0.0) and np.any(v[:, 5] > 0.3), mesh


def test_chains_leave_room_for_the_bands_and_the_far_fade():
    for chain in LOD_CHAINS.values():
        s = np.array(chain.starts)
        assert np.all(np.diff(s) >= CROSSFADE_BAND)
        assert s[-1] + CROSSFADE_BAND / 2 <= 1.0 - FADE_FRACTION


@pytest.mark.parametrize("meshes, starts, cards, match", [
    (("bush", "bush_low"), (0.9,), (False, False), "must increase"),
    (("bush", "bush_low", "bush_far"), (0.3, 0.31), (False,) * 3, "must increase"),
    (("bush", "bush_low"), (0.01,), (False, False), "must increase"),
    (("bush", "bush_low"), (), (False, False), "need 1 starts"),
    (("bush",) * 4, (0.1, 0.2, 0.3), (False,) * 4, "1..3 levels"),
])
def test_bad_chains(meshes, starts, cards, match):
    with pytest.raises(ValueError, match=match):
        LodChain(meshes, starts, cards)


def test_unknown_mesh():
    with pytest.raises(KeyError, match="unknown mesh 'teapot'"):
        lod_chain("teapot")
    with pytest.raises(KeyError, match="teapot"):
        LodChain(("bush", "teapot"), (0.3,), (False, False))


def test_hard_switch_without_band():
    starts = np.array([0.2, 0.45])
    f = np.array([0.0, 0.1999, 0.2, 0.44, 0.45, 0.99])
    level, blend = choose_levels(f, starts, band=0.0)
    assert level.tolist() == [0, 0, 1, 1, 2, 2]
    assert not blend.any()


def test_level_plus_blend_is_continuous_and_monotone():
    """Across each band the next level's share rises from 0 to 1: no jump (no pop)."""
    table = start_table(["cone_tree", "rock", "cube"])
    f = np.linspace(0.0, 1.0, 20_001)
    for row in table:
        level, blend = choose_levels(f, row)
        w = level + blend
        assert np.all(np.diff(w) >= 0.0)
        assert np.max(np.diff(w)) < 2.0 * (f[1] - f[0]) / CROSSFADE_BAND
        assert level.max() == np.isfinite(row).sum()
        inside = blend > 0
        assert 0.04 < inside.mean() < 0.13               # one or two bands of 6 %


def test_per_instance_rows_and_padding():
    table = start_table(["cone_tree", "rock"])            # rock has one start: inf pads
    assert table.shape == (2, MAX_LEVELS - 1) and np.isinf(table[1, 1])
    kind = np.array([0, 0, 1, 1])
    level, _ = choose_levels(np.array([0.5, 0.1, 0.5, 0.95]), table[kind], band=0.0)
    assert level.tolist() == [2, 0, 1, 1]


def test_fractions_guard_zero_view_distance():
    assert level_fractions(np.array([0.0, 5.0]), np.array([0.0, 10.0])).tolist() == [0.0, 0.5]


def _records(m, rng):
    rec = rng.random((m, INSTANCE_FLOATS)).astype(np.float32)
    rec[:, 6] = 1.0
    rec[:, 0] = np.arange(m)                # identifies the instance
    return rec


def test_cross_fading_instances_are_drawn_twice_with_complementary_fades(rng):
    m = 2000
    kind = np.sort(rng.integers(0, 3, m))
    table = start_table(["cone_tree", "bush", "cube"])
    f = rng.random(m)
    level, blend = choose_levels(f, table[kind])
    rec = _records(m, rng)
    rows, starts = lod_instances(rec, kind, level, blend, 3)
    fading = blend > 0
    assert rows.shape == (m + fading.sum(), INSTANCE_FLOATS)
    assert starts.shape == (3 * MAX_LEVELS + 1,) and starts[0] == 0 and starts[-1] == rows.shape[0]
    assert np.all(np.diff(starts) >= 0)
    group_of_row = np.repeat(np.arange(3 * MAX_LEVELS), np.diff(starts))
    ident = rows[:, 0].astype(np.int64)
    # Every instance appears once solid, or twice: outgoing (1 + s) at its level, incoming (s) at the next.
    for i in (np.flatnonzero(fading)[:50].tolist() + np.flatnonzero(~fading)[:50].tolist()):
        mine = np.flatnonzero(ident == i)
        g = kind[i] * MAX_LEVELS + level[i]
        if fading[i]:
            got = sorted(zip(group_of_row[mine].tolist(), rows[mine, 6].tolist()))
            assert got == [(g, pytest.approx(1.0 + blend[i])), (g + 1, pytest.approx(blend[i]))]
        else:
            assert group_of_row[mine].tolist() == [g] and rows[mine, 6].tolist() == [1.0]
    # Rows keep the instance's other columns.
    assert np.array_equal(rows[:, [0, 1, 2, 3, 4, 5, 7]], rec[ident][:, [0, 1, 2, 3, 4, 5, 7]])


@pytest.mark.parametrize("s", [0.01, 0.2, 0.5, 0.77, 0.99])
def test_the_two_dither_halves_cover_each_pixel_once(s):
    """The fragment shader's rule on the thresholds of a 64x64 patch of its dither."""
    incoming = ~(s < THRESHOLDS)                    # fade s
    outgoing = ~(THRESHOLDS < (1.0 + s) - 1.0)      # fade 1 + s
    assert np.all(incoming ^ outgoing)
    assert incoming.sum() == pytest.approx(s * THRESHOLDS.size, abs=0.02 * THRESHOLDS.size)


def test_no_lod_means_level_zero_and_plain_records(rng):
    rec = _records(10, rng)
    kind = np.zeros(10, dtype=np.int64)
    rows, starts = lod_instances(rec, kind, np.zeros(10, np.int64), np.zeros(10), 1)
    assert np.array_equal(rows, rec) and starts.tolist() == [0, 10, 10, 10]


def test_group_triangles():
    t = group_triangles(["cone_tree", "rock"])
    assert t.tolist() == [38, 12, 3, 20, 8, 0]


def test_selector_counts_levels_and_triangles(rng):
    sel = LodSelector(["cone_tree", "rock"])
    rec = _records(6, rng)
    kind = np.array([0, 0, 0, 1, 1, 1])
    view = np.full(6, 100.0)
    frame = sel.select(rec, kind, np.array([1.0, 30.0, 90.0, 1.0, 50.0, 90.0]), view, band=0.0)
    assert frame.level_counts.tolist() == [2, 3, 1]
    assert frame.triangles == 38 + 12 + 3 + 20 + 8 + 8
    assert frame.draw_calls == 5
    full = sel.select(rec, kind, lod=False)
    assert full.level_counts.tolist() == [6, 0, 0] and full.triangles == 3 * 38 + 3 * 20
    fading = sel.select(rec, kind, np.array([20.0] * 6), view)        # on the tree's first switch
    assert fading.instances.shape[0] == 9 and fading.level_counts.tolist() == [6, 3, 0]
    with pytest.raises(ValueError, match="distances"):
        sel.select(rec, kind)


def test_the_dither_has_no_coarse_grid():
    """The threshold pattern is fine-grained: a 2x2 block already spans a wide range of
    thresholds, and no 4x4 period repeats (the old ordered dither's visible grid)."""
    t = _ign(_XS, _YS).astype(np.float64)
    blocks = t.reshape(32, 2, 32, 2).transpose(0, 2, 1, 3).reshape(32, 32, 4)
    assert np.median(blocks.max(axis=2) - blocks.min(axis=2)) > 0.4
    assert not np.allclose(t[:4, :4], t[4:8, 4:8])
    assert abs(t.mean() - 0.5) < 0.02                           # a fade f keeps about f of the pixels
