"""GPU and CPU profiler on lavapipe: relative cost, ordering, frame tags, capacity, invalid
readings, non-blocking collect, devices without timestamps, and the timeline text."""

from __future__ import annotations

import re
import time

import numpy as np
import pytest
import wgpu

from engine.graph import ComputePass, TransferPass
from engine.profiling import FrameProfiler, GpuProfiler
from engine.profiling.gpu import _Recording
from engine.telemetry import Scope
from engine.tools.export.report import timeline
from tests.profiling_support import (
    Rig,
    compute_graph,
    iterations_for,
    work_pass,
)

# lavapipe timing is noisy both ways: contention adds time, and now and then an end-of-pass
# timestamp lands before the dispatch has finished (seen: one 4x reading at half its value).
# The ratio of the medians over 14 frames (each run on an otherwise idle queue) must land
# within +-20 % of 4.
RATIO_TOLERANCE = 0.20


@pytest.fixture(scope="module")
def timing_gpu():
    """A device on which no render pass ever runs: lavapipe's timestamps stop bracketing
    compute dispatches once a render pass has executed on a device (engine.profiling.gpu)."""
    from engine.gpu import create_gpu

    return create_gpu()


def _attach(gpu, graph, **kw) -> Rig:
    return Rig(gpu, graph, FrameProfiler(gpu, **kw))


def test_four_times_the_work_measures_four_times_the_time(timing_gpu):
    gpu, dev = timing_gpu, timing_gpu.device
    n = iterations_for(gpu, 5.0)  # >= 5 ms per 1x pass, so fixed costs do not skew the ratio
    graph = compute_graph(
        dev, [work_pass(dev, "Work1x", n, 256), work_pass(dev, "Work4x", 4 * n, 256)]
    )
    rig = _attach(gpu, graph)
    rig.run(15, idle=True)  # lavapipe shares 2 cores with Python: keep recording off them
    # frame 0 pays for shader JIT; a frame finding every pool in flight is not GPU-timed
    frames = [t for t in rig.drain() if t.frame_index > 0 and t.gpu is not None]
    assert len(frames) >= 5
    ones, fours = [], []
    for t in frames:
        one, four = t.gpu
        assert (one.name, four.name) == ("Work1x", "Work4x")
        ones.append(one.duration_ms)
        fours.append(four.duration_ms)
        # readings ascend in declaration order; attributed <= across
        assert one.begin_ns <= one.end_ns <= four.begin_ns <= four.end_ns
        across = four.end_ns - one.begin_ns
        assert (one.end_ns - one.begin_ns) + (four.end_ns - four.begin_ns) <= across
    # 4x the work reads clearly more than 2.5x and less than 6.5x the 1x pass: a loaded CPU
    # (lavapipe's threads preempted) stretches either reading, and lavapipe sometimes ends a
    # compute timestamp early; the exact ratio is the profiler benchmark's claim (H200: 4.0)
    ratio = float(np.median(fours) / np.median(ones))
    assert 2.5 < ratio < 6.5, f"ratio {ratio:.2f}: {ones} {fours}"
    # CPU scopes: Update, both passes' recording, Submit, in start order
    names = [s.name for s in frames[-1].cpu]
    assert names == ["Update", "Work1x", "Work4x", "Submit"]
    assert "in declaration order." in rig.report()


def test_result_is_tagged_with_the_frame_that_produced_it(gpu):
    dev = gpu.device
    passes = [work_pass(dev, n, 1, grid=8) for n in ("A", "B", "C")]
    graph = compute_graph(dev, passes)
    rig = _attach(gpu, graph)
    for f in range(10):
        for i, p in enumerate(passes):  # frame f runs the first (f % 3) + 1 passes
            p.enabled = i <= f % 3
        rig.run()
    got = rig.drain()
    assert [t.frame_index for t in got] == list(range(10))
    assert [t.seq for t in got] == list(range(10))
    # a frame that found every query pool in flight has no GPU scopes, and is counted
    assert sum(t.gpu is None for t in got) == rig.prof.gpu.skipped_frames
    for t in got:
        expected = ["A", "B", "C"][: t.frame_index % 3 + 1]
        assert t.gpu is None or [s.name for s in t.gpu] == expected, t
        assert [s.name for s in t.cpu] == ["Update", *expected, "Submit"]


def test_scopes_beyond_capacity_are_dropped_and_counted(gpu):
    dev = gpu.device
    graph = compute_graph(dev, [work_pass(dev, f"P{i}", 1, grid=8) for i in range(5)])
    rig = _attach(gpu, graph, capacity=2, cpu=False)
    rig.run(2)
    last = rig.drain()[-1]
    assert [s.name for s in last.gpu] == ["P0", "P1"]
    assert last.dropped == 3 and rig.prof.gpu.dropped == 6 and rig.telemetry.totals["dropped"] == 6
    assert "dropped: 3 scope(s) over capacity 2 in this frame, 6 in the run" in rig.report()


def test_zero_and_backwards_readings_are_invalid_not_clamped(gpu):
    prof = GpuProfiler(gpu, capacity=4)
    prof._waiting[7] = _Recording(7, 0, names=["ok", "zero", "backwards", "end0"])
    data = np.array([100, 250, 0, 300, 500, 400, 600, 0], np.uint64).tobytes()
    frame = prof._decode(7, data)
    assert frame.scopes == [Scope("ok", 100, 250)]
    assert frame.invalid == 3 and prof.invalid == 3


def test_transfer_pass_uses_encoder_timestamps(gpu):
    dev = gpu.device
    buf = dev.create_buffer(size=1 << 20, usage=wgpu.BufferUsage.COPY_DST)
    clear = TransferPass("Clear", record=lambda ctx, enc: enc.clear_buffer(buf))
    graph = compute_graph(dev, [clear, work_pass(dev, "Work", 1, grid=8)])
    rig = _attach(gpu, graph, cpu=False)
    assert rig.prof.gpu.mode == "encoder"  # "auto" with the feature: one native call a side
    rig.run()
    [t] = rig.drain()
    assert [s.name for s in t.gpu] == ["Clear", "Work"]
    assert t.gpu[0].end_ns <= t.gpu[1].begin_ns


def test_collect_returns_none_until_ready_and_never_blocks(timing_gpu):
    gpu, dev = timing_gpu, timing_gpu.device
    # >= 50 ms of GPU work (~0.3 s on lavapipe at the starting 3000 iterations)
    heavy = iterations_for(gpu, 50.0, start=3000)
    graph = compute_graph(dev, [work_pass(dev, "Heavy", heavy, grid=256)])
    rig = _attach(gpu, graph, cpu=False)
    t0 = time.perf_counter()
    rig.run()  # record, submit, then the loop's after_submit collects what finished
    rig.loop.poll()
    elapsed_ms = (time.perf_counter() - t0) * 1e3
    assert rig.telemetry.latest is None  # nothing published: the GPU is still busy
    assert elapsed_ms < 20.0, f"a frame took {elapsed_ms:.1f} ms: it waited for the GPU"
    deadline = time.perf_counter() + 30.0
    while (t := rig.telemetry.latest) is None and time.perf_counter() < deadline:
        time.sleep(0.01)  # the frame finishes on its own, without a blocking call
        rig.loop.poll()
    assert t is not None and t.frame_index == 0 and t.gpu[0].name == "Heavy"
    assert t.gpu[0].duration_ms > 20.0  # it really was heavy, so None above was meaningful


@pytest.fixture(scope="module")
def gpu_without_timestamps():
    from engine.gpu import create_gpu

    g = create_gpu(disable=("timestamp-query", "timestamp-query-inside-encoders"))
    assert not g.has_timestamps
    return g


def test_device_without_timestamps_reports_na(gpu_without_timestamps, monkeypatch):
    g = gpu_without_timestamps
    created = []
    real = type(g.device).create_query_set
    monkeypatch.setattr(
        type(g.device),
        "create_query_set",
        lambda self, **kw: created.append(kw) or real(self, **kw),
    )
    graph = compute_graph(g.device, [work_pass(g.device, "Work", 1, grid=8)])
    rig = _attach(g, graph)
    assert not rig.prof.gpu_available
    rig.run(3)
    records = rig.drain()
    assert created == []
    assert [t.frame_index for t in records] == [0, 1, 2]
    assert all(t.gpu is None and t.cpu for t in records)
    report = rig.report()
    assert report.startswith("GPU timings n/a: the device has no 'timestamp-query' feature")
    assert "CPU frame 2:" in report


def test_transfer_pass_untimed_without_encoder_timestamps(gpu_without_timestamps):
    from engine.gpu import create_gpu

    g = create_gpu(disable=("timestamp-query-inside-encoders",))
    buf = g.device.create_buffer(size=256, usage=wgpu.BufferUsage.COPY_DST)
    clear = TransferPass("Clear", record=lambda ctx, enc: enc.clear_buffer(buf))
    graph = compute_graph(g.device, [clear, ComputePass("Empty", record=lambda c, p: None)])
    rig = _attach(g, graph, cpu=False)
    assert rig.prof.gpu.mode == "pass"  # "auto" without encoder timestamps: descriptors
    rig.run()
    assert [s.name for s in rig.drain()[-1].gpu] == ["Empty"]
    assert rig.prof.gpu.untimed == 1
    assert "transfer passes not GPU-timed: no 'timestamp-query-inside-encoders' (Clear)" in (
        rig.report()
    )


def _ms(name, begin_ms, dur_ms):
    return Scope(name, round(begin_ms * 1e6), round((begin_ms + dur_ms) * 1e6))


def test_timeline_format_matches_the_documented_shape():
    scopes = [_ms("Cull.Early", 0.0, 0.5), _ms("Main.Early", 0.5, 1.777), _ms("Post", 2.327, 0.0)]
    text = timeline("GPU", 297, scopes)
    lines = text.splitlines()
    assert lines[0] == (
        "GPU frame 297: 2.327 ms across 3 pass(es), 2.277 ms attributed, in declaration order."
    )
    assert lines[1] == "   1. Main.Early                      1.777 ms   78.0%"
    row = re.compile(r"^ {0,3}\d+\. \S.{27} +\d+\.\d{3} ms +\d+\.\d%$")
    assert all(row.match(line) for line in lines[1:]), lines
    assert [line.split()[1] for line in lines[1:]] == ["Main.Early", "Cull.Early", "Post"]


def test_timeline_says_when_readings_do_not_ascend():
    scopes = [_ms("A", 5.0, 1.0), _ms("B", 1.0, 1.0)]
    first = timeline("GPU", 3, scopes).splitlines()[0]
    assert re.fullmatch(
        r"GPU frame 3: 5\.000 ms across 2 pass\(es\), 2\.000 ms attributed, "
        r"NOT in declaration order \(.+\)\.",
        first,
    )


# -- where the profiler's GPU work goes (issue 31 item 7) ------------------------------------


def _spy_resolves(monkeypatch, prof: GpuProfiler) -> list[tuple[int, str]]:
    """``(frame resolved, label of the encoder it was resolved in)`` per resolve."""
    seen, real = [], prof._resolve

    def spy(rec, encoder):
        seen.append((rec.frame_index, encoder._label))
        return real(rec, encoder)

    monkeypatch.setattr(prof, "_resolve", spy)
    return seen


def test_a_frame_is_resolved_by_the_encoder_two_frames_later(gpu, monkeypatch):
    """The resolve waits for its queries: recorded at the start of frame f + 2, the queries
    of frame f are long written. The last two frames are resolved at shutdown, in their own
    submissions; every frame still comes back, with its own passes, and every pool is free
    again."""
    dev = gpu.device
    graph = compute_graph(dev, [work_pass(dev, n, 1, grid=8) for n in ("A", "B")])
    rig = _attach(gpu, graph, cpu=False)
    prof = rig.prof.gpu
    assert prof.resolve_delay == 2
    seen = _spy_resolves(monkeypatch, prof)
    rig.run(6)
    assert seen == [(f, f"frame {f + 2}") for f in range(4)]
    got = rig.drain()
    assert seen[4:] == [(4, "timestamps resolve"), (5, "timestamps resolve")]
    assert [t.frame_index for t in got] == list(range(6))
    assert all([s.name for s in t.gpu] == ["A", "B"] for t in got)
    assert len(prof._free_pools) == len(prof._pools) and not prof._waiting


def test_an_abandoned_frame_frees_its_pool_and_hands_its_resolve_on(gpu, monkeypatch):
    """A frame recorded but never submitted (an exception in a pass): its own queries are
    forgotten, and the older frame its encoder resolved is resolved again by the next."""
    from engine.graph import FrameContext

    dev = gpu.device
    graph = compute_graph(dev, [work_pass(dev, "A", 1, grid=8)])
    rig = _attach(gpu, graph, cpu=False)
    prof = rig.prof.gpu
    seen = _spy_resolves(monkeypatch, prof)
    rig.run(3)
    lost = dev.create_command_encoder(label="lost")  # frame 3 as far as the encoder: never
    graph.execute(lost, FrameContext(dev, graph, 3, 0.0, graph.size, None))  # submitted
    rig.run(1)  # frame 3 again, recorded and submitted
    assert seen == [(0, "frame 2"), (1, "lost"), (1, "frame 3")]
    got = rig.drain()
    assert [t.frame_index for t in got] == [0, 1, 2, 3]
    assert all(t.gpu is not None and [s.name for s in t.gpu] == ["A"] for t in got)
    assert len(prof._free_pools) == len(prof._pools)


def test_encoder_timestamps_share_each_pass_boundary(gpu, monkeypatch):
    """N passes write N + 1 encoder timestamps; each pass begins where the previous ended,
    so the passes add up to the frame exactly. ``shared_boundaries=False`` writes a pair per
    pass (the layout before)."""
    from engine.profiling import gpu as gpu_profiling

    dev = gpu.device
    if not gpu.has_encoder_timestamps:
        pytest.skip(f"{gpu.summary} has no timestamp-query-inside-encoders")
    buf = dev.create_buffer(size=256, usage=wgpu.BufferUsage.COPY_DST)
    passes = [
        work_pass(dev, "A", 3, grid=8),
        TransferPass("Clear", record=lambda ctx, enc: enc.clear_buffer(buf)),
        work_pass(dev, "B", 1, grid=8),
    ]
    graph = compute_graph(dev, passes)
    written, real = [], gpu_profiling.write_timestamp
    monkeypatch.setattr(
        gpu_profiling, "write_timestamp", lambda e, qs, i: (written.append(i), real(e, qs, i))
    )
    for shared, per_frame in ((True, [0, 1, 2, 3]), (False, [0, 1, 2, 3, 4, 5])):
        written.clear()
        opts = {"shared_boundaries": shared, "transition_every": 0}
        rig = _attach(gpu, graph, cpu=False, timestamps="encoder", gpu_options=opts)
        rig.run(2)
        got = rig.drain()
        assert written == per_frame * 2
        for t in got:
            s = t.gpu
            assert [x.name for x in s] == ["A", "Clear", "B"]
            assert s[0].end_ns <= s[1].begin_ns and s[1].end_ns <= s[2].begin_ns
            if shared:
                assert s[0].end_ns == s[1].begin_ns and s[1].end_ns == s[2].begin_ns
