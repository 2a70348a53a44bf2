"""Render bundles of the standard frame (engine/passes/bundles.py): recorded once, replayed
every frame, and never stale: after a resize, a knob change or a hot reload the picture is
the one a frame built from scratch with the same state draws."""

from __future__ import annotations

import shutil
from dataclasses import replace

import numpy as np
import pytest
from frame_harness import Harness, random_scene

from engine.scene.camera import Camera
from engine.settings import FrameSettings
from engine.shader_registry import ShaderRegistry, set_shader_registry
from engine.shaders import SHADER_DIR

SIZE, OTHER = (64, 48), (80, 40)
CAM = Camera(np.array([6.0, 7.0, 16.0]), np.array([0.0, 1.0, 0.0]), 60.0, 0.1)
BASE = FrameSettings(exposure=1.5, shadow_size=512)  # fixed exposure: no adaptation state
BUNDLED = ("Shadow.C0", "Main.Early", "Main.Late", "Sky", "Post")


def _harness(gpu, settings: FrameSettings, size=SIZE) -> Harness:
    h = Harness(gpu, random_scene(30, 3), size=size, settings=settings)
    h.frame.jitter_sequence = ((0.25, -0.25),)  # one offset: frame indices do not matter
    return h


def _picture(h: Harness, frames: int = 3) -> np.ndarray:
    h.render(CAM, frames)
    return h.target.read_rgba()[..., :3].astype(np.int16)


def _builds(h: Harness) -> dict[str, int]:
    return {n: h.graph.pass_named(n).bundles.builds for n in BUNDLED}


@pytest.mark.parametrize(
    "change",
    [
        {"size": OTHER},  # every size-relative target recreated: Post's group, its bundle
        {"shadow_size": 1024},  # a new shadow map: the main passes' group 2, their bundles
        {"taa": False},  # Post reads frame.hdr instead of post.taa: another group
        {"bloom": False},
    ],
    ids=lambda c: next(iter(c)),
)
def test_after_a_change_the_picture_matches_a_frame_built_with_it(gpu, change):
    """A frame that rendered, then changed, draws what a fresh frame with the final state
    draws (within the TAA history's rounding), and the change is visible: a bundle that
    kept a stale bind group or pipeline would draw the old picture or fail validation."""
    size = change.get("size", SIZE)
    knobs = {k: v for k, v in change.items() if k != "size"}
    final = replace(BASE, **knobs)
    h = _harness(gpu, BASE)
    before = _picture(h)
    if "size" in change:
        h.resize(size)
    else:
        h.frame.configure(final)
        h.graph.reset_history()  # TAA would blend the old picture in: compare the new alone
    after = _picture(h)
    fresh = _picture(_harness(gpu, final, size))
    assert np.abs(after - fresh).max() <= 2
    if after.shape == before.shape:
        assert np.abs(after - before).max() > 8  # the change shows: the test can fail


def test_steady_frames_replay_their_bundles_and_a_resize_rebuilds_post(gpu):
    """Once both history parities were seen no bundle is recorded again; a resize gives
    ``Post`` new bind groups (new targets), so new bundles, and leaves the rest (which
    bind no size-relative resource) alone."""
    h = _harness(gpu, BASE)
    h.render(CAM, 3)
    warm = _builds(h)
    assert warm == {"Shadow.C0": 1, "Main.Early": 1, "Main.Late": 1, "Sky": 1, "Post": 2}
    h.render(CAM, 6)
    assert _builds(h) == warm
    h.resize(OTHER)
    h.render(CAM, 4)
    assert _builds(h) == {**warm, "Post": warm["Post"] + 2}


def test_per_draw_timing_records_into_the_pass_not_a_bundle(gpu):
    """``--gpu-profile draws`` times each draw with timestamps between them, which a bundle
    hides: the passes then record their commands directly (no bundle is made)."""
    from engine.profiling import FrameProfiler

    if not gpu.has_timestamps:
        pytest.skip("needs timestamp queries")
    h = _harness(gpu, BASE)
    h.graph.profiler = FrameProfiler(gpu, gpu=True, cpu=True, draws=True)
    h.render(CAM, 3)
    assert set(_builds(h).values()) == {0}
    h.graph.profiler = None
    h.render(CAM, 1)
    assert _builds(h)["Post"] == 1


TONE_MAP = "return vec4f(aces_fitted(color * e), 1.0);"
SHADE = "out.color = vec4f(lit.direct + lit.ambient, 1.0);"


@pytest.mark.parametrize(
    "file,old,new,where",
    [
        ("post.wgsl", TONE_MAP, "return vec4f(1.0, 0.0, 0.0, 1.0);", "all"),
        ("mesh.wgsl", SHADE, "out.color = vec4f(0.0, 40.0, 0.0, 1.0);", "geometry"),
    ],
    ids=["post", "mesh"],
)
def test_a_hot_reload_replaces_the_bundled_pipeline(gpu, tmp_path, file, old, new, where):
    """After a reload of a bundled pass's shader the frame draws with the new pipeline:
    the bundle is keyed on the pipeline, so the old one is never replayed."""
    shutil.copytree(SHADER_DIR, tmp_path / "shaders")
    registry = ShaderRegistry(gpu.device, root=tmp_path / "shaders")
    previous = set_shader_registry(gpu.device, registry)
    try:
        h = _harness(gpu, replace(BASE, taa=False, bloom=False))
        before = _picture(h, 2)
        path = tmp_path / "shaders" / file
        code = path.read_text()
        assert old in code
        path.write_text(code.replace(old, new))
        for handle in registry.handles:
            if handle.name == file:
                assert handle.rebuild() is None
        after = _picture(h, 2)
    finally:
        set_shader_registry(gpu.device, previous)
    if where == "all":  # the tone map now writes pure red everywhere
        assert (after == (255, 0, 0)).all()
    else:  # the geometry is bright green now, the sky is unchanged
        moved = np.abs(after - before).max(axis=2) > 8
        assert moved.mean() > 0.05 and (after[moved][:, 1] > after[moved][:, 0]).all()
        assert (moved != moved.all()).any()  # not every pixel: the sky stayed


def test_the_profiler_times_every_bundled_pass(gpu):
    """With ``--gpu-profile`` (no per-draw timing) the passes replay bundles and each still
    gets its own GPU and CPU scope, in declaration order: the graph times the pass around
    the bundle it executes."""
    from engine.profiling import FrameProfiler

    if not gpu.has_timestamps:
        pytest.skip("needs timestamp queries")
    h = _harness(gpu, BASE)
    h.graph.profiler = FrameProfiler(gpu, gpu=True, cpu=True)
    h.render(CAM, 4)
    h.loop.drain()
    assert _builds(h)["Post"] == 2  # bundles in use
    rec = next(r for r in reversed(h.loop.telemetry.history) if r.gpu)
    gpu_names = [s.name for s in rec.gpu]
    assert [n for n in gpu_names if n in BUNDLED] == list(BUNDLED)
    assert all(s.duration_ms > 0 for s in rec.gpu if s.name in BUNDLED)
    assert set(BUNDLED) <= {s.name for s in rec.cpu}
