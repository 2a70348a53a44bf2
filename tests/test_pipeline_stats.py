"""Pipeline statistics per pass on a real device, against counts derived by hand / numpy."""

from __future__ import annotations

import numpy as np
import pytest
import wgpu

from engine.profiling.pipeline_stats import FEATURE, PassStatistics, PipelineStatistics, fmt

W, H = 64, 32
SRC = """
@vertex fn vs_full(@builtin(vertex_index) i: u32) -> @builtin(position) vec4f {
    let q = vec2f(f32((i << 1u) & 2u), f32(i & 2u));
    return vec4f(q * 2.0 - 1.0, 0.0, 1.0);
}
// Triangle k = i / 3: right angle at (-0.75 + 0.6 k, -0.75), legs 0.5 along +x and +y (NDC).
@vertex fn vs_small(@builtin(vertex_index) i: u32) -> @builtin(position) vec4f {
    let k = f32(i / 3u);
    let j = i % 3u;
    let leg = vec2f(select(0.0, 0.5, j == 1u), select(0.0, 0.5, j == 2u));
    return vec4f(leg - 0.75 + vec2f(0.6 * k, 0.0), 0.0, 1.0);
}
@fragment fn fs() -> @location(0) vec4f { return vec4f(1.0); }
@group(0) @binding(0) var<storage, read_write> o: array<u32>;
@compute @workgroup_size(64) fn cs(@builtin(global_invocation_id) id: vec3u) { o[id.x] = id.x; }
"""


def small_triangle_coverage(k: int) -> np.ndarray:
    """(H, W) bool: pixel centres inside small triangle k (numpy, independent of the GPU).
    NDC -> pixels: x = (ndc + 1) / 2 * W, y = (1 - ndc) / 2 * H. No centre lies on an edge."""
    x0 = (-0.75 + 0.6 * k + 1) / 2 * W  # right-angle corner, left edge
    y0 = (1 + 0.75) / 2 * H  # bottom edge (pixels grow downwards)
    lx, ly = 0.5 / 2 * W, 0.5 / 2 * H  # leg lengths in pixels
    yc, xc = np.mgrid[0:H, 0:W] + 0.5
    return (xc > x0) & (yc < y0) & ((xc - x0) / lx + (y0 - yc) / ly < 1.0)


def blocks_touched(mask: np.ndarray, n: int) -> int:
    """Aligned n x n pixel blocks holding at least one covered pixel centre."""
    return int(mask.reshape(H // n, n, W // n, n).any(axis=(1, 3)).sum())


@pytest.fixture(scope="module")
def stats_gpu():
    from engine.gpu import create_gpu

    g = create_gpu(extra_features=(FEATURE,))
    if FEATURE not in g.features:
        pytest.skip(f"adapter {g.summary} has no {FEATURE}")
    return g


def _frame(d, stats, frame):
    m = d.create_shader_module(code=SRC)
    tex = d.create_texture(
        size=(W, H, 1), format="rgba8unorm", usage=wgpu.TextureUsage.RENDER_ATTACHMENT
    )

    def pipeline(vs):
        return d.create_render_pipeline(
            layout="auto",
            vertex={"module": m, "entry_point": vs},
            fragment={"module": m, "entry_point": "fs", "targets": [{"format": "rgba8unorm"}]},
        )

    cp = d.create_compute_pipeline(layout="auto", compute={"module": m, "entry_point": "cs"})
    buf = d.create_buffer(size=4 * 192, usage=wgpu.BufferUsage.STORAGE)
    bg = d.create_bind_group(
        layout=cp.get_bind_group_layout(0), entries=[{"binding": 0, "resource": {"buffer": buf}}]
    )
    e = d.create_command_encoder()
    for name, vs, n in (("Full", "vs_full", 3), ("Small", "vs_small", 6)):
        color = {"view": tex.create_view(), "load_op": "clear", "store_op": "store",
                 "clear_value": (0, 0, 0, 0)}  # fmt: skip
        p = e.begin_render_pass(color_attachments=[color])
        stats.begin(p, name)
        p.set_pipeline(pipeline(vs))
        p.draw(n)
        stats.end(p)
        p.end()
    c = e.begin_compute_pass()
    stats.begin(c, "Work")
    c.set_pipeline(cp)
    c.set_bind_group(0, bg)
    c.dispatch_workgroups(3)
    stats.end(c)
    c.end()
    stats.resolve(e)
    d.queue.submit([e.finish()])
    stats.submitted(frame)


def test_counts_per_pass_match_hand_derived_values(stats_gpu, capsys):
    d = stats_gpu.device
    stats = PipelineStatistics(d, capacity=8, slots=2)
    assert stats.available
    for frame in (7, 8):
        _frame(d, stats, frame)
    results = stats.collect() + stats.drain()
    assert [f for f, _ in results] == [7, 8]
    full, small, work = results[-1][1]
    assert [full.name, small.name, work.name] == ["Full", "Small", "Work"]
    # Non-indexed draws: no post-transform vertex reuse, one invocation per vertex drawn.
    assert (full.vertex_invocations, small.vertex_invocations) == (3, 6)
    # Two triangles entirely inside the viewport leave the clipper as two primitives.
    assert small.clipper_primitives_out == 2
    covered = [small_triangle_coverage(k) for k in (0, 1)]
    pixels = sum(int(c.sum()) for c in covered)
    assert pixels == 128  # two right triangles with 16 x 8 pixel legs
    # At least one invocation per covered pixel; helper invocations may be counted too
    # (Vulkan leaves it to the implementation). Lavapipe shades whole 4x4 blocks and counts
    # all 16 invocations of every block the triangle touches.
    assert small.fragment_invocations >= pixels
    if "llvmpipe" in stats_gpu.summary:
        blocks = sum(blocks_touched(c, 4) for c in covered)
        assert small.fragment_invocations == 16 * blocks
    # A fullscreen triangle shades every pixel at least once (clipping may split it, and
    # quads on the split edges are shaded once per piece).
    assert full.fragment_invocations >= W * H
    assert work.compute_invocations == 3 * 64
    assert (work.vertex_invocations, work.fragment_invocations) == (0, 0)
    assert full.compute_invocations == 0
    assert capsys.readouterr().out == ""  # wgpu's helper prints; we do not use it
    ns = small.ns_per_fragment(1000.0)
    assert ns == pytest.approx(1000.0 / small.fragment_invocations)


def test_sequential_scopes_inside_one_pass_count_each_draw(stats_gpu):
    """Per-draw statistics (for per-draw timing): scopes may follow each other in a pass."""
    d = stats_gpu.device
    stats = PipelineStatistics(d, capacity=4, slots=2)
    m = d.create_shader_module(code=SRC)
    pipe = d.create_render_pipeline(
        layout="auto",
        vertex={"module": m, "entry_point": "vs_small"},
        fragment={"module": m, "entry_point": "fs", "targets": [{"format": "rgba8unorm"}]},
    )
    tex = d.create_texture(
        size=(W, H, 1), format="rgba8unorm", usage=wgpu.TextureUsage.RENDER_ATTACHMENT
    )
    e = d.create_command_encoder()
    color = {"view": tex.create_view(), "load_op": "clear", "store_op": "store",
             "clear_value": (0, 0, 0, 0)}  # fmt: skip
    p = e.begin_render_pass(color_attachments=[color])
    p.set_pipeline(pipe)
    for name, first in (("tri0", 0), ("tri1", 3)):
        stats.begin(p, name)
        p.draw(3, 1, first)
        stats.end(p)
    p.end()
    stats.resolve(e)
    d.queue.submit([e.finish()])
    stats.submitted(0)
    (_, (t0, t1)), *_ = stats.drain()
    assert (t0.name, t1.name) == ("tri0", "tri1")
    assert (t0.vertex_invocations, t1.vertex_invocations) == (3, 3)
    assert (t0.clipper_primitives_out, t1.clipper_primitives_out) == (1, 1)
    for k, row in enumerate((t0, t1)):
        assert row.fragment_invocations >= int(small_triangle_coverage(k).sum())


def test_over_capacity_passes_are_dropped_and_counted(stats_gpu):
    d = stats_gpu.device
    stats = PipelineStatistics(d, capacity=2, slots=2)
    _frame(d, stats, 0)  # three passes, room for two
    assert stats.dropped == 1
    (frame, rows), *_ = stats.drain()
    assert [r.name for r in rows] == ["Full", "Small"]


def test_without_the_feature_everything_reads_na(device):
    assert FEATURE not in device.features  # the default device does not ask for it
    stats = PipelineStatistics(device)
    assert not stats.available
    e = device.create_command_encoder()
    p = e.begin_compute_pass()
    stats.begin(p, "Work")
    stats.end(p)
    p.end()
    stats.resolve(e)
    device.queue.submit([e.finish()])
    stats.submitted(0)
    assert stats.collect() == [] and stats.drain() == []
    (row,) = stats.unavailable(["Work"])
    assert row == PassStatistics("Work", None, None, None, None)
    assert fmt(row.fragment_invocations) == "n/a" and row.ns_per_fragment(5.0) is None
    assert fmt(1234567) == "1,234,567"
