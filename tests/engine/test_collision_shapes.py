"""The camera's collision shapes: a column of spheres covers its mesh and hugs it."""

import numpy as np
import pytest

from engine.collision_shapes import COLUMN_BANDS, collision_spheres, sphere_column
from engine.meshes import MESHES, get_mesh


def _surface_points(name: str, per_edge: int = 24) -> np.ndarray:
    """Points spread over every triangle of the mesh (its corners, edges and inside), float64 (n, 3)."""
    tris = get_mesh(name).vertices[:, :3].astype(np.float64).reshape(-1, 3, 3)
    a, b = np.meshgrid(np.linspace(0, 1, per_edge + 1), np.linspace(0, 1, per_edge + 1))
    keep = a + b <= 1.0
    w = np.column_stack([1.0 - a[keep] - b[keep], a[keep], b[keep]])   # barycentric weights
    return np.einsum("kw,twc->tkc", w, tris).reshape(-1, 3)


def _outside(points: np.ndarray, column: np.ndarray) -> np.ndarray:
    """How far each point is outside the column's union of spheres (<= 0: inside one)."""
    centres = np.zeros((column.shape[0], 3))
    centres[:, 1] = column[:, 0]
    gaps = np.linalg.norm(points[:, None, :] - centres[None], axis=2) - column[None, :, 1]
    return gaps.min(axis=1)


@pytest.mark.parametrize("name", sorted(set(COLUMN_BANDS) | {"cone_tree", "rock", "house_walls"}))
@pytest.mark.parametrize("bands", [1, 3, 8])
def test_the_column_covers_every_point_of_the_mesh(name, bands):
    """Nothing of the mesh is outside the spheres, so the camera held off them never enters it."""
    column = sphere_column(get_mesh(name), bands)
    assert column.shape == (bands, 2)
    assert _outside(_surface_points(name), column).max() <= 1e-6


def test_the_towers_column_hugs_its_shaft_where_the_bounding_sphere_did_not():
    """The shaft is 0.17 wide (of the bounding radius): each band's sphere is at most a third of the
    bounding sphere, and some part of the column touches the mesh (it is not merely larger)."""
    column = sphere_column(MESHES["tower"], COLUMN_BANDS["tower"])
    assert column[:, 1].max() < 0.34
    assert _outside(_surface_points("tower"), column).max() > -0.05


def test_collision_spheres_keep_the_bounding_sphere_except_for_column_meshes():
    centres = np.array([[0.0, 10.0, 0.0], [5.0, 20.0, 5.0], [9.0, 30.0, 9.0]])
    scales = np.array([2.0, 40.0, 3.0])
    meshes = ["rock", "tower"]
    got_c, got_r = collision_spheres(centres, scales, meshes, np.array([0, 1, 0]))
    bands = COLUMN_BANDS["tower"]
    assert got_c.shape == (2 + bands, 3) and got_r.shape == (2 + bands,)
    column = sphere_column(get_mesh("tower"), bands)
    tower = np.isin(got_r, 40.0 * column[:, 1])
    assert tower.sum() == bands
    assert sorted(got_r[~tower].tolist()) == [2.0, 3.0]                  # the rocks' bounding spheres
    assert got_c[~tower].tolist() == [[0.0, 10.0, 0.0], [9.0, 30.0, 9.0]]
    assert np.allclose(got_c[tower][:, [0, 2]], [5.0, 5.0])
    assert np.allclose(np.sort(got_c[tower][:, 1]), np.sort(20.0 + 40.0 * column[:, 0]))
    empty_c, empty_r = collision_spheres(np.zeros((0, 3)), np.zeros(0), meshes, np.zeros(0, dtype=np.int64))
    assert empty_c.shape == (0, 3) and empty_r.shape == (0,)
    with pytest.raises(ValueError, match="at least 1"):
        sphere_column(get_mesh("tower"), 0)
