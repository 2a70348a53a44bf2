"""The frozen culling frustum drawn as lines (issue 9.7): pipeline, corners, pixels."""

from __future__ import annotations

import math
import re

import numpy as np
import pytest

from engine.passes.frustum_lines import EDGES, UNIFORM_SIZE, FrustumLines, frustum_corners
from engine.scene.camera import Camera
from engine.shaders import SHADER_DIR

FROZEN = Camera(np.array([0.0, 2.0, 10.0]), np.array([0.0, 2.0, 0.0]), 60.0, 0.5)


def _hand_corners(cam: Camera, aspect: float, distance: float) -> np.ndarray:
    """Corners by trigonometry: the camera looks down -Z from ``cam.eye`` (x right, y up)."""
    th = math.tan(math.radians(cam.fov_y_deg) / 2)
    out = []
    for k in range(8):
        d = distance if k >> 2 else cam.near
        x = (2 * (k & 1) - 1) * th * aspect * d
        y = (2 * ((k >> 1) & 1) - 1) * th * d
        out.append(cam.eye + np.array([x, y, -d]))
    return np.array(out)


def test_corners_match_trigonometry():
    aspect = 2.0
    inv = np.linalg.inv((FROZEN.proj(aspect) @ FROZEN.view()).astype(np.float64))
    got = frustum_corners(inv, 1e-3)  # reverse-Z: view depth = near / 1e-3 = 500
    np.testing.assert_allclose(got, _hand_corners(FROZEN, aspect, 500.0), rtol=1e-4, atol=1e-3)
    assert sorted(map(sorted, EDGES)) == sorted(
        [a, b] for a in range(8) for b in range(a + 1, 8) if bin(a ^ b).count("1") == 1
    )  # the 12 edges of a box: corners differing in one bit


def test_pipelines_build_and_uniform_layout(gpu):
    for color, depth in (("rgba16float", "depth32float"), ("rgba8unorm-srgb", None)):
        lines = FrustumLines(gpu.device, color, depth)
        assert lines.pipeline is not None and lines.uniform.size == UNIFORM_SIZE
    assert UNIFORM_SIZE % 16 == 0
    text = (SHADER_DIR / "frustum_lines.wgsl").read_text()
    assert re.search(r"mat4x4f,.*\n.*array<vec4f, 8>,.*\n.*vec4f,", text)  # 64 + 128 + 16
    with pytest.raises(ValueError, match="far_depth"):
        FrustumLines(gpu.device, "rgba16float", None, far_depth=0.0)


def test_frozen_capture_shows_lines_on_the_projected_edges(gpu, tmp_path):
    from PIL import Image

    from tests.frame_harness import Harness, random_scene

    size = (160, 120)
    aspect = size[0] / size[1]
    from engine.settings import FrameSettings

    # no TAA: its jitter would change pixels between the two captures besides the lines
    h = Harness(gpu, random_scene(60, seed=7), size=size, settings=FrameSettings(taa=False))
    h.render(FROZEN, 2)
    h.frame.freeze_culling(True)
    above = Camera(np.array([25.0, 40.0, 30.0]), np.array([0.0, 0.0, -5.0]), 60.0, 0.1)
    images = []
    for show in (False, True):
        h.frame.show_frustum = show
        h.render(above, 2)
        images.append(h.target.read_rgba()[:, :, :3].astype(int))
    Image.fromarray(images[1].astype(np.uint8)).save(tmp_path / "frozen_frustum.png")
    changed = np.abs(images[1] - images[0]).sum(axis=2) > 30
    assert changed.sum() > 100
    # the lines are amber: red well above blue where they are drawn
    r, b = images[1][..., 0], images[1][..., 2]
    assert (r[changed] - b[changed] > 60).mean() > 0.9

    # hand-derived expectation: the frozen frustum's edges projected by the render camera
    vp = (above.proj(aspect) @ above.view()).astype(np.float64)
    corners = _hand_corners(FROZEN, aspect, FROZEN.near / 1e-3)
    near_edge = np.zeros(size[::-1], bool)  # pixels within 2 px of a projected edge
    samples = hits = 0
    yy, xx = np.mgrid[0 : size[1], 0 : size[0]]
    for a, b_ in EDGES:
        for t in np.linspace(0, 1, 400):
            p = vp @ np.append(corners[a] + t * (corners[b_] - corners[a]), 1.0)
            if p[3] <= above.near:
                continue
            px = ((p[0] / p[3] + 1) / 2 * size[0], (1 - p[1] / p[3]) / 2 * size[1])
            if not (-2 <= px[0] < size[0] + 2 and -2 <= px[1] < size[1] + 2):
                continue
            near_edge |= (np.abs(xx + 0.5 - px[0]) <= 2) & (np.abs(yy + 0.5 - px[1]) <= 2)
            if not (1 <= px[0] < size[0] - 1 and 1 <= px[1] < size[1] - 1):
                continue
            i, j = int(px[1]), int(px[0])
            samples += 1
            hits += bool(changed[i - 1 : i + 2, j - 1 : j + 2].any())
    assert samples > 200
    assert hits / samples > 0.6, (hits, samples)  # the rest hidden behind boxes and walls
    stray = np.argwhere(changed & ~near_edge)
    assert not len(stray), f"line pixels away from every projected edge: {stray[:20].tolist()}"
