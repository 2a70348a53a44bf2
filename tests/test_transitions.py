"""Transitions billed to passes (encoder timestamps): measured on a sparse subset of frames
as median encoder span - median pass-descriptor span, shown per pass by the report, the
telemetry JSONL and the HUD, while the passes' own figures still add up to the frame."""

from __future__ import annotations

import numpy as np
import pytest

from engine.graph import TransferPass
from engine.profiling import FrameProfiler
from engine.profiling.gpu import GpuProfiler, _Recording
from engine.telemetry import FrameTimings, NameTable, Scope, Telemetry, encode_record
from engine.tools.export.report import timeline
from tests.profiling_support import Rig, compute_graph, work_pass


def _encoder_gpu(gpu):
    if not gpu.has_encoder_timestamps:
        pytest.skip(f"{gpu.summary} has no timestamp-query-inside-encoders")
    return gpu


def _sampled_frame(prof: GpuProfiler, frame: int, spans: dict[str, tuple[int, int]]):
    """Decode a sampled frame whose passes read (encoder span, descriptor span) ns."""
    names = list(spans)
    rec = _Recording(frame, 0, names=names, resolved=True, sampled=True)
    rec.pass_slots = list(range(len(names)))
    data = np.zeros(4 * prof.capacity, np.uint64)
    t = 1_000_000
    for i, (enc, own) in enumerate(spans.values()):
        data[2 * i : 2 * i + 2] = [t, t + enc]
        data[2 * prof.capacity + 2 * i : 2 * prof.capacity + 2 * i + 2] = [t + enc - own, t + enc]
        t += enc + 10
    prof._waiting[frame] = rec
    return prof._decode(frame, data.tobytes())


def test_transition_is_the_difference_of_medians(gpu):
    prof = GpuProfiler(_encoder_gpu(gpu), mode="encoder", transition_window=5)
    enc = [66_000, 70_000, 68_000, 300_000, 67_000]  # one stray frame
    own = [36_000, 35_000, 36_500, 36_000, 250_000]
    for k, (e, o) in enumerate(zip(enc, own, strict=True)):
        g = _sampled_frame(prof, k, {"HiZ": (e, o), "Post": (20_000, 19_000)})
    assert g.transitions["HiZ"] == np.median(enc) - np.median(own) == 68_000 - 36_000
    assert g.transitions["Post"] == 1_000
    # the pass keeps its encoder span: the frame still adds up
    assert [s.end_ns - s.begin_ns for s in g.scopes] == [67_000, 20_000]
    # a window keeps the last transition_window frames
    for k in range(5, 10):
        g = _sampled_frame(prof, k, {"HiZ": (50_000, 40_000)})
    assert g.transitions["HiZ"] == 10_000


def test_sparse_frames_time_passes_both_ways_on_the_device(gpu):
    """Every 2nd frame samples; render and compute passes get an estimate, transfer passes
    none; each estimate is >= 0 (on every sampled frame the descriptor span lies inside the
    encoder span, so the median of one cannot pass the median of the other)."""
    gpu = _encoder_gpu(gpu)
    graph = compute_graph(
        gpu.device, [work_pass(gpu.device, "A", 20), work_pass(gpu.device, "B", 40)]
    )
    graph.add(TransferPass("Clear", record=lambda ctx, enc: None))
    prof = FrameProfiler(gpu, cpu=False, batch=1, timestamps="encoder")
    prof.gpu.transition_every = 2
    rig = Rig(gpu, graph, prof)
    rig.run(8, idle=True)
    records = [r for r in rig.drain() if r.gpu]
    last = records[-1]
    assert set(last.transitions) == {"A", "B"} and "Clear" not in last.transitions
    assert all(v >= 0 for v in last.transitions.values()), last.transitions
    assert rig.telemetry.session.profiling.transitions == {"every": 2, "window": 9}
    assert [s.name for s in last.gpu] == ["A", "B", "Clear"]  # still every pass, encoder spans
    report = rig.report()
    # a figure, or n/a where the two medians cannot give one (lavapipe under load)
    assert " ms transition" in report or "transition n/a (implausible)" in report
    assert "median encoder span - median pass-descriptor span" in report
    # Pass-descriptor mode: no transition is billed, none measured.
    plain = FrameProfiler(gpu, cpu=False, batch=1, timestamps="pass")
    assert plain.gpu.transition_every == 0 and plain.session_info(graph).transitions is None


def test_report_jsonl_and_hud_show_the_transition():
    from engine.tools.perf.panel import TRANSITION, PerfOverlay

    hiz = Scope("HiZ", 1_000_000, 1_066_000)
    post = Scope("Post", 1_070_000, 1_170_000)
    t = {"HiZ": 30_000.0}
    text = timeline("GPU", 7, [hiz, post], transitions=t)
    row = next(line for line in text.splitlines() if "HiZ" in line)
    assert row.endswith("0.066 ms   39.8%  = 0.036 ms + 0.030 ms transition")
    assert "transition" not in next(line for line in text.splitlines() if "Post" in line)
    prof = {
        "gpu": True,
        "cpu": False,
        "gpu_available": True,
        "transitions": {"every": 16, "window": 9},
    }
    tel = Telemetry({"profiling": prof})
    for i in range(3):
        tel.publish(i, t_ns=i, wall_ms=None, timings=FrameTimings(i, [hiz, post], transitions=t))
    rec = tel.history[-1]
    table = NameTable()
    _, msg = encode_record(rec, table)
    assert msg["transitions"] == [[table.ids["HiZ"], 30_000.0]]
    perf = PerfOverlay()
    perf.refresh(tel, ["HiZ", "Post"])
    assert [r.name for r in perf.rows] == ["HiZ", TRANSITION, "Post"]
    assert perf.rows[0].gpu_ms == pytest.approx(0.066) and perf.rows[1].gpu_ms == pytest.approx(
        0.03
    )
    assert perf.rows[1].child and perf.totals.gpu_ms == pytest.approx(0.166)  # not counted twice
    _, plain = encode_record(
        Telemetry({}).publish(0, t_ns=0, wall_ms=None, timings=FrameTimings(0, [hiz])), NameTable()
    )
    assert plain["transitions"] is None


def test_a_transition_that_cannot_be_part_of_its_pass_is_not_a_number():
    """lavapipe, whose compute timestamps stop waiting once a device has rendered, reads a
    2.4 ms transition before a 0.165 ms pass: never printed as a split of that pass."""
    from engine.tools.perf.panel import TRANSITION, PerfOverlay

    cull = Scope("Cull.Early", 0, 165_000)
    for t in (2_408_000.0, -5_000.0):
        text = timeline("GPU", 1, [cull], transitions={"Cull.Early": t})
        assert "(transition n/a (implausible))" in text and "-2.243" not in text
        tel = Telemetry({"profiling": {"gpu": True, "cpu": False, "gpu_available": True}})
        tel.publish(0, t_ns=0, wall_ms=None,
                    timings=FrameTimings(0, [cull], transitions={"Cull.Early": t}))  # fmt: skip
        perf = PerfOverlay()
        perf.refresh(tel, ["Cull.Early"])
        assert perf.rows[1].name == TRANSITION and perf.rows[1].gpu_ms is None
