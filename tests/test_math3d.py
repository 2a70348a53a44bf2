"""The per-frame small-matrix math on plain floats (engine/math3d.py, the shadow fit's
frustum planes) against numpy written out independently here."""

from __future__ import annotations

import numpy as np
import pytest

from engine.math3d import inverse4, look_at, perspective_reverse_z
from engine.passes.shadow import frustum_planes


def _look_at_numpy(eye, target, up=(0.0, 1.0, 0.0)) -> np.ndarray:
    """The textbook construction: rows side, up, -forward; translation -R @ eye."""
    eye, target, up = (np.asarray(v, np.float64) for v in (eye, target, up))
    f = (target - eye) / np.linalg.norm(target - eye)
    if abs(f @ up) > 0.999:
        up = np.array([0.0, 0.0, 1.0])
    s = np.cross(f, up)
    s /= np.linalg.norm(s)
    u = np.cross(s, f)
    m = np.identity(4)
    m[:3, :3] = np.stack([s, u, -f])
    m[:3, 3] = -m[:3, :3] @ eye
    return m


def test_look_at_matches_the_numpy_construction_and_maps_the_target_down_minus_z():
    rng = np.random.default_rng(0)
    cases = [((0, 5, 0), (0, 0, 0)), ((0, -5, 0), (0, 3, 0))]  # straight down / up: other up
    cases += [(rng.normal(size=3) * 40, rng.normal(size=3) * 40) for _ in range(500)]
    for eye, target in cases:
        v = look_at(eye, target)
        assert v.dtype == np.float32 and v.shape == (4, 4)
        ref = _look_at_numpy(eye, target)
        np.testing.assert_allclose(
            v, ref.astype(np.float32), rtol=0, atol=1e-5 * max(1, np.abs(ref).max())
        )
        dist = np.linalg.norm(np.subtract(target, eye))
        got = v.astype(np.float64) @ [*target, 1.0]
        np.testing.assert_allclose(got[:3], [0, 0, -dist], atol=1e-4 * max(1.0, dist))
        np.testing.assert_allclose(v[:3, :3] @ v[:3, :3].T, np.identity(3), atol=1e-6)


def test_inverse4_agrees_with_numpy_and_refuses_a_singular_matrix():
    rng = np.random.default_rng(1)
    for _ in range(2000):
        m = rng.normal(size=(4, 4)) + 4 * np.identity(4)  # well conditioned
        got = np.array(inverse4(m))
        np.testing.assert_allclose(got, np.linalg.inv(m), rtol=0, atol=1e-12)
    vp = perspective_reverse_z(60.0, 16 / 9, 0.1) @ look_at((3, 2, 9), (0, 1, 0))
    np.testing.assert_allclose(np.array(inverse4(vp)) @ vp, np.identity(4), atol=1e-9)
    singular = np.ones((4, 4))
    with pytest.raises(np.linalg.LinAlgError, match="singular"):
        inverse4(singular)
    with pytest.raises(np.linalg.LinAlgError):
        inverse4(np.full((4, 4), np.nan))


def test_frustum_planes_hold_the_inside_and_are_unit():
    """Gribb & Hartmann planes of a reverse-Z camera: points built from the camera's own
    field of view are inside (distance >= 0), points beyond each side are outside."""
    eye, target, fov, aspect, near = np.array([2.0, 3.0, 8.0]), np.zeros(3), 60.0, 1.5, 0.1
    vp = perspective_reverse_z(fov, aspect, near) @ look_at(eye, target)
    p = frustum_planes(vp).astype(np.float64)
    assert p.shape == (5, 4)
    np.testing.assert_allclose(np.linalg.norm(p[:, :3], axis=1), 1.0, atol=1e-6)
    f = (target - eye) / np.linalg.norm(target - eye)
    s = np.cross(f, [0, 1, 0])
    s /= np.linalg.norm(s)
    u = np.cross(s, f)
    th = np.tan(np.radians(fov) / 2)
    for d in (0.2, 5.0, 500.0):
        for x, y in ((0, 0), (0.99, 0.99), (-0.99, 0.5), (0.3, -0.99)):
            q = eye + d * f + x * th * aspect * d * s + y * th * d * u
            assert (p[:, :3] @ q + p[:, 3] >= -1e-4 * d).all()
        for k, (x, y) in enumerate(((-1.05, 0), (1.05, 0), (0, -1.05), (0, 1.05))):
            q = eye + d * f + x * th * aspect * d * s + y * th * d * u
            assert p[k, :3] @ q + p[k, 3] < 0  # left, right, bottom, top in that order
    assert p[4, :3] @ (eye + 0.05 * f) + p[4, 3] < 0  # in front of the near plane: outside
    assert frustum_planes(vp, near=False).shape == (4, 4)
    assert np.isnan(frustum_planes(vp, far=True)[5]).all()  # infinite far: no plane there


@pytest.mark.parametrize(
    "eye, target, up",
    [((1, 2, 3), (1, 2, 3), (0, 1, 0)), ((np.nan, 0, 0), (0, 0, -1), (0, 1, 0)),
     ((0, 0, 0), (0, 0, -1), (0, 0, 0)), ((0, 0, 0), (0, 0, -1), (0, 0, 1))],
)  # fmt: skip
def test_look_at_refuses_a_degenerate_camera_in_one_line(eye, target, up):
    with pytest.raises(ValueError, match="look_at") as e:
        look_at(eye, target, up)
    assert "\n" not in str(e.value)
