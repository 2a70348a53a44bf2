"""The sun's shadow region follows what the camera sees, not the scene's outliers (issue 9.6)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from engine.frame import FrameSettings
from engine.passes.shadow import SHADOW_DISTANCE, caster_reach, fit_sun, shadow_region
from engine.scene.camera import Camera
from engine.scene.procedural import city
from engine.scene.scene import Scene
from tests.frame_harness import points_in_view

ASPECT = 16 / 9


def _with_outlier(scene: Scene, x: float = 1e5) -> Scene:
    """``scene`` plus one unit box (mesh 0) at (x, 0.5, 0)."""
    far = np.identity(4, np.float32)
    far[:3, 3] = (x, 0.5, 0.0)
    return Scene(
        scene.meshes,
        np.concatenate([scene.transforms, far[None]]),
        np.append(scene.mesh_ids, 0),
        np.concatenate([scene.colors, np.ones((1, 4), np.float32)]),
        sun_direction=scene.sun_direction,
    )


def _fit(scene: Scene, camera: Camera, distance: float = SHADOW_DISTANCE):
    """What StandardFrame does each frame."""
    vp = camera.proj(ASPECT) @ camera.view()
    center, radius = shadow_region(vp, distance, scene.extent)
    return fit_sun(scene.sun_direction, center, radius, scene.extent, 2048), center, radius


def _shadow_clip(fit, points: np.ndarray) -> np.ndarray:
    h = np.c_[points, np.ones(len(points))] @ fit.view_proj.astype(np.float64).T
    return h[:, :3] / h[:, 3:]


@pytest.fixture(scope="module")
def town():
    return city(3000, seed=0)


def test_caster_reach_by_hand():
    extent = (np.array([-10.0, 0.0, -10.0]), np.array([10.0, 10.0, 10.0]))
    assert caster_reach([0, 1, 0], [0, 0, 0], 1.0, extent) == pytest.approx(11.0)  # top + r
    s = np.array([1.0, 1.0, 0.0]) / math.sqrt(2)  # exits the grown top (y = 11) first
    assert caster_reach(s, [0, 0, 0], 1.0, extent) == pytest.approx(11 * math.sqrt(2))
    assert caster_reach([0, 1, 0], [0, 50, 0], 1.0, extent) == 0.0  # above everything
    far = (extent[0], np.array([1e5, 10.0, 10.0]))  # an outlier along x changes nothing
    assert caster_reach(s, [0, 0, 0], 1.0, far) == pytest.approx(11 * math.sqrt(2))


def test_region_ignores_an_outlier_and_covers_the_view(town):
    scene, path = town
    far = _with_outlier(scene)
    assert far.extent[1][0] > 9e4
    for t in (0.0, 7.0, 21.0):
        cam = path.at(t)
        fit, center, radius = _fit(far, cam)
        ref_fit, ref_center, ref_radius = _fit(scene, cam)
        assert radius == ref_radius and np.allclose(center, ref_center)
        assert fit.texel_world == ref_fit.texel_world < 0.2  # metres per shadow texel
        # every point the camera sees within the shadow distance, inside the city, is in the
        # shadow map's box (x, y in [-1, 1], reverse-Z depth in [0, 1])
        lo, hi = scene.extent
        pts = points_in_view(cam, cam.near, SHADOW_DISTANCE, 4000, seed=int(t))
        pts = pts[((pts >= lo) & (pts <= hi)).all(axis=1)]
        assert len(pts) > 500
        clip = _shadow_clip(fit, pts)
        assert (np.abs(clip[:, :2]) <= 1).all() and (clip[:, 2] >= 0).all()
        assert (clip[:, 2] <= 1).all()
        # the box's depth is the city's height toward the sun, not 1e5 m: the shader's
        # constant depth bias (2e-4) stays a few centimetres
        depth_range = 1.0 / np.linalg.norm(fit.view_proj[2, :3].astype(np.float64))
        assert depth_range < 1500.0
        # casters: the tallest building top above any seen point is inside too
        sun = np.asarray(scene.sun_direction, np.float64)
        tops = pts + sun * ((hi[1] - pts[:, 1]) / sun[1])[:, None]
        tops = tops[((tops >= lo) & (tops <= hi)).all(axis=1)]
        assert len(tops) and (_shadow_clip(fit, tops)[:, 2] <= 1).all()


def test_small_scene_in_view_is_shadowed_whole_and_still(town):
    scene, _ = town
    lo, hi = scene.extent
    center = (lo + hi) / 2
    small = (center - 5.0, center + 5.0)
    for eye in ([30.0, 20.0, 40.0], [-40.0, 10.0, 10.0]):  # two views of it: the same fit
        cam = Camera(center + np.array(eye), center)
        c, r = shadow_region(cam.proj(ASPECT) @ cam.view(), SHADOW_DISTANCE, small)
        assert np.allclose(c, center) and 5 * math.sqrt(3) <= r <= 5 * math.sqrt(3) * 1.091


def test_gpu_city_with_a_far_box_still_casts_shadows_in_view(gpu, town):
    from tests.frame_harness import Harness

    scene, path = town
    cam = path.at(3.0)

    def shadowed(sc: Scene) -> np.ndarray:
        h = Harness(gpu, sc, size=(160, 90), settings=FrameSettings(occlusion=False))
        h.render(cam, 2)
        lit = h.target.read_rgba()[:, :, :3].astype(int).sum(axis=2)
        h.frame.set_settings(shadows=False)
        h.render(cam, 2)
        unlit = h.target.read_rgba()[:, :, :3].astype(int).sum(axis=2)
        return unlit - lit > 40  # darker with the shadow map on: in shadow

    near_only, with_far = shadowed(scene), shadowed(_with_outlier(scene))
    assert near_only.sum() > 300, "the street view must show shadows for this to mean anything"
    # the far box is out of view: the same pixels are in shadow
    assert (near_only & with_far).sum() >= 0.95 * near_only.sum(), (near_only.sum(), with_far.sum())
