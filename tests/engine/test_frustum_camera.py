"""Camera matrices and the frustum filter against a brute-force per-sphere plane test."""

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from engine.camera import Camera
from engine.frustum import PLANE_NAMES, frustum_corners, frustum_planes, spheres_in_frustum


def brute_force_visible(view_projection, centre, radius) -> bool:
    """One sphere, plain Python: inside or touching all six clip planes."""
    m = [[float(v) for v in row] for row in view_projection]
    rows = [m[0], m[1], m[2], m[3]]
    planes = []
    for axis in range(3):
        planes.append([rows[3][k] + rows[axis][k] for k in range(4)])
        planes.append([rows[3][k] - rows[axis][k] for k in range(4)])
    for a, b, c, d in planes:
        norm = math.sqrt(a * a + b * b + c * c)
        signed = (a * centre[0] + b * centre[1] + c * centre[2] + d) / norm
        if signed < -radius:
            return False
    return True


def test_point_ahead_projects_to_screen_centre():
    cam = Camera(position=(10.0, 5.0, -3.0), yaw=30.0, pitch=10.0)
    p = cam.position + 50.0 * cam.forward()
    clip = cam.view_projection() @ np.append(p, 1.0)
    ndc = clip[:3] / clip[3]
    assert np.allclose(ndc[:2], 0.0, atol=1e-9)
    assert -1.0 < ndc[2] < 1.0


def test_yaw_zero_looks_down_minus_z_and_right_is_plus_x():
    cam = Camera(yaw=0.0)
    assert np.allclose(cam.forward(), [0.0, 0.0, -1.0])
    assert np.allclose(cam.right(), [1.0, 0.0, 0.0])


def test_every_heading_is_kept_in_one_range_however_it_is_given():
    """A heading given as -129 degrees reads 231 (as turning the camera there would), so a logged yaw never
    jumps between two ranges for the same direction."""
    cam = Camera(position=(0.0, 0.0, 0.0), yaw=-129.0)
    assert cam.yaw == 231.0
    turned = Camera(position=(0.0, 0.0, 0.0), yaw=0.0)
    turned.look(-129.0, 0.0)
    assert turned.yaw == cam.yaw and np.allclose(turned.forward(), cam.forward())
    assert Camera(yaw=720.0 + 90.0).yaw == 90.0


def test_camera_rejects_bad_values():
    with pytest.raises(ValueError, match="near < far"):
        Camera(near=10.0, far=1.0)
    with pytest.raises(ValueError, match="finite"):
        Camera(position=(0.0, np.nan, 0.0))


def test_planes_are_unit_and_point_inwards():
    cam = Camera(position=(0.0, 0.0, 0.0), yaw=0.0, near=1.0, far=100.0)
    planes = frustum_planes(cam.view_projection())
    assert planes.shape == (6, 4) and not planes.flags.writeable
    assert np.allclose(np.linalg.norm(planes[:, :3], axis=1), 1.0)
    inside = np.array([0.0, 0.0, -50.0])
    assert np.all(planes[:, :3] @ inside + planes[:, 3] > 0)
    near = dict(zip(PLANE_NAMES, planes))["near"]
    assert np.isclose(near[:3] @ [0, 0, -1.0] + near[3], 0.0, atol=1e-9)     # the near plane is at z = -1


@pytest.mark.parametrize("which", ["near", "far"])
def test_near_and_far_planes_straddle_and_miss(which):
    near, far, r = 2.0, 200.0, 1.0
    cam = Camera(position=(0.0, 0.0, 0.0), yaw=0.0, near=near, far=far)     # looks down -z
    vp = cam.view_projection()
    planes = frustum_planes(vp)
    # Depth along the view direction; "out" points away from the frustum across the plane.
    plane, out = (near, -1.0) if which == "near" else (far, 1.0)
    cases = {
        "centre_on_plane": (plane, True),
        "straddling": (plane + out * 0.5 * r, True),
        "just_touching": (plane + out * (r - 1e-6), True),
        "just_beyond": (plane + out * (r + 1e-6), False),
        "far_beyond": (plane + out * 3.0 * r, False),
        "inside": (plane - out * 0.5, True),
    }
    for name, (depth, expected) in cases.items():
        centre = np.array([0.0, 0.0, -depth])
        got = bool(spheres_in_frustum(planes, centre[None, :], [r])[0])
        assert got == expected, (which, name)
        assert brute_force_visible(vp, centre, r) == expected, (which, name)


def test_side_planes_straddling():
    cam = Camera(position=(0.0, 0.0, 0.0), yaw=0.0, fov_y=90.0, aspect=1.0, near=0.5, far=1000.0)
    planes = frustum_planes(cam.view_projection())
    # With 90 degrees both ways, the right plane is x = -z.  A sphere at (d + 0.5, 0, -d)
    # has its centre outside by 0.5 / sqrt(2) ~ 0.354.
    d = 100.0
    centre = np.array([[d + 0.5, 0.0, -d]])
    assert spheres_in_frustum(planes, centre, [0.36])[0]
    assert not spheres_in_frustum(planes, centre, [0.35])[0]


@given(
    seed=st.integers(0, 2**32 - 1),
    yaw=st.floats(0.0, 360.0), pitch=st.floats(-80.0, 80.0),
    fov=st.floats(20.0, 120.0), aspect=st.floats(0.3, 3.0),
    near=st.floats(0.05, 5.0), far_ratio=st.floats(2.0, 2000.0),
)
def test_frustum_filter_matches_brute_force(seed, yaw, pitch, fov, aspect, near, far_ratio):
    rng = np.random.default_rng(seed)
    cam = Camera(position=rng.uniform(-50, 50, 3), yaw=yaw, pitch=pitch, fov_y=fov, aspect=aspect,
                 near=near, far=near * far_ratio)
    vp = cam.view_projection()
    n = 200
    # Spheres around the frustum, many of them near its planes.
    corners = frustum_corners(vp)
    pick = rng.integers(0, 8, size=(n, 2))
    t = rng.random((n, 1))
    centres = corners[pick[:, 0]] * t + corners[pick[:, 1]] * (1 - t) + rng.normal(0, 2.0, (n, 3))
    radii = rng.exponential(1.0, n)
    radii[: n // 10] = 0.0
    got = spheres_in_frustum(frustum_planes(vp), centres, radii)
    expected = [brute_force_visible(vp, c, r) for c, r in zip(centres, radii)]
    # Spheres within rounding distance of a plane may go either way; none here should.
    assert got.tolist() == expected


def test_frustum_corners_invert_the_projection():
    cam = Camera(position=(1.0, 2.0, 3.0), yaw=45.0, pitch=-20.0, near=1.0, far=50.0)
    vp = cam.view_projection()
    corners = frustum_corners(vp)
    clip = np.c_[corners, np.ones(8)] @ vp.T
    ndc = clip[:, :3] / clip[:, 3:]
    assert np.allclose(np.abs(ndc), 1.0)
    dist = np.linalg.norm(corners - cam.position, axis=1)
    assert dist[:4].max() < dist[4:].min()          # bit 2: near corners first


def test_bad_matrix_is_rejected():
    with pytest.raises(ValueError, match=r"\(4, 4\)"):
        frustum_planes(np.eye(3))
    with pytest.raises(ValueError, match="radii"):
        spheres_in_frustum(frustum_planes(np.eye(4)), np.zeros((3, 3)), np.zeros(2))
