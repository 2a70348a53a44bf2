"""The post chain on lavapipe against numpy: luminance histogram, exposure adaptation, bloom
energy, TAA vs a 4x4-supersampled render, history resets; knobs on the CLI and console."""

from __future__ import annotations

import math

import numpy as np
import pytest

from engine.passes.exposure import (
    ADAPT_SPEED,
    EXPOSURE_DTYPE,
    exposure_target,
    histogram_reference,
)
from engine.scene.camera import Camera
from engine.settings import FrameSettings
from tests.frame_harness import Harness, random_scene

CAM = Camera(np.array([0.0, 4.0, 28.0]), np.array([0.0, 1.0, 0.0]), 60.0, 0.1)
BRIGHT_CAM = Camera(np.array([0.0, 0.5, 28.0]), np.array([0.0, 0.5, 0.0]), 60.0, 0.1)
DARK_CAM = Camera(np.array([0.0, 3.0, 2.5]), np.array([0.0, 3.0, 3.0]), 60.0, 0.1)  # a wall


@pytest.fixture(scope="module")
def scene():
    return random_scene(200, seed=4)


def exposure(h: Harness) -> np.ndarray:
    return np.frombuffer(
        h.device.queue.read_buffer(h.graph.buffer("post.exposure")), EXPOSURE_DTYPE
    )[0]


def test_luminance_histogram_equals_numpy_on_the_hdr_target(gpu, scene):
    h = Harness(gpu, scene, size=(96, 64), settings=FrameSettings(exposure="auto"))
    h.render(CAM, 2)
    hdr = h.texture("frame.hdr")[..., :3]
    got = np.frombuffer(h.device.queue.read_buffer(h.graph.buffer("post.histogram")), np.uint32)
    want = histogram_reference(hdr)
    assert got.sum() == 96 * 64 == want.sum()
    assert (want > 0).sum() >= 8, "the frame must spread over bins for this to mean anything"
    # log2 on the GPU may round a value on a bin edge the other way: at most a few pixels
    assert np.abs(got.astype(np.int64) - want).sum() <= 4, (got, want)


def test_exposure_snaps_then_adapts_to_the_numpy_target(gpu, scene):
    h = Harness(gpu, scene, size=(96, 64), settings=FrameSettings(exposure="auto", taa=False))
    dt = 0.1
    h.render(BRIGHT_CAM, 1, dt)  # fresh history: the target at once
    e0 = exposure(h)
    t0 = exposure_target(h.texture("frame.hdr")[..., :3])
    assert abs(math.log2(e0["exposure"]) - math.log2(t0)) < 0.15  # half a bin is 0.127 EV
    h.render(DARK_CAM, 1, dt)  # a darker view: one step of the adaptation law
    e1 = exposure(h)
    k = 1.0 - math.exp(-dt * ADAPT_SPEED)
    want = math.log2(e0["exposure"]) + (math.log2(e1["goal"]) - math.log2(e0["exposure"])) * k
    assert abs(math.log2(e1["exposure"]) - want) < 1e-4
    # the views' goals differ by over 1 EV (1.3 since the sky's SH ambient lights the wall)
    assert abs(math.log2(e1["goal"]) - math.log2(e0["goal"])) > 1.0, "views must differ"
    h.render(DARK_CAM, 40, dt)  # 4 s: the remaining distance shrinks to exp(-6) = 0.25 %
    t = exposure_target(h.texture("frame.hdr")[..., :3])
    assert abs(math.log2(exposure(h)["exposure"]) - math.log2(t)) < 0.15


def test_bloom_keeps_the_energy_of_its_input(gpu, scene):
    h = Harness(gpu, scene, size=(128, 96), settings=FrameSettings(taa=False))
    h.render(CAM, 1)
    hdr = h.texture("frame.hdr")[..., :3].astype(np.float64)
    bloom = h.texture("post.bloom")[..., :3].astype(np.float64)  # half size: 4 pixels each
    assert bloom.shape == (48, 64, 3)
    ratio = bloom.mean(axis=(0, 1)) / hdr.mean(axis=(0, 1))
    print(f"bloom energy ratio per channel {ratio}")
    assert np.all(np.abs(ratio - 1.0) < 0.02), ratio  # per channel, within 2 %
    # and it spreads light: the blurred image is smoother than a plain 2x2 average
    box = hdr.reshape(48, 2, 64, 2, 3).mean(axis=(1, 3))
    assert np.abs(np.diff(bloom, axis=1)).mean() < 0.5 * np.abs(np.diff(box, axis=1)).mean()


def test_taa_on_a_static_camera_is_closer_to_4x4_supersampling(gpu, scene):
    """TAA's accumulated image (linear HDR) vs the 4x4 box average of a render at 4x the
    size, beside the plain (unjittered, no TAA) render of the same view."""
    fine = dict(lod_base_px=1e-3, bloom=False)  # LOD 0 at every size
    w, h_ = 64, 40
    ss = Harness(gpu, scene, size=(4 * w, 4 * h_), settings=FrameSettings(taa=False, **fine))
    ss.render(CAM, 2)
    ref = ss.texture("frame.hdr")[..., :3].reshape(h_, 4, w, 4, 3).mean(axis=(1, 3))
    plain = Harness(gpu, scene, size=(w, h_), settings=FrameSettings(taa=False, **fine))
    plain.render(CAM, 2)
    no_taa = plain.texture("frame.hdr")[..., :3]
    taa = Harness(gpu, scene, size=(w, h_), settings=FrameSettings(taa=True, **fine))
    taa.render(CAM, 48)  # three cycles of the 16-sample jitter
    resolved = taa.texture("post.taa")[..., :3]
    err_taa = np.abs(resolved - ref).mean()
    err_plain = np.abs(no_taa - ref).mean()
    print(f"TAA mean abs error {err_taa:.4f} vs {err_plain:.4f} without")
    assert err_taa < 0.75 * err_plain, (err_taa, err_plain)


def test_taa_resets_on_first_frame_resize_and_camera_cut(gpu, scene):
    h = Harness(gpu, scene, size=(48, 32))
    taa = h.graph.pass_named("Post.TAA")
    h.render(CAM, 3)
    assert taa.reset_frames == 1  # the first frame only
    hdr = h.texture("frame.hdr")[..., :3]
    h.resize((40, 24))
    h.render(CAM, 1)
    assert taa.reset_frames == 2
    # a reset frame is the current frame alone: equal to the HDR target
    np.testing.assert_array_equal(h.texture("post.taa")[..., :3], h.texture("frame.hdr")[..., :3])
    h.render(CAM, 1)
    assert taa.reset_frames == 2
    assert not np.array_equal(h.texture("post.taa")[..., :3], h.texture("frame.hdr")[..., :3])
    far = Camera(CAM.eye + np.array([30.0, 0.0, 0.0]), CAM.target, CAM.fov_y_deg, CAM.near)
    h.render(far, 1)  # moved further than cut_distance in one frame
    assert taa.reset_frames == 3
    assert hdr.shape == (32, 48, 3)
