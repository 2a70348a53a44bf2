"""Per-draw GPU timing (``--gpu-profile draws``): nothing extra when off, known relative costs
ranked and summed against their pass on a real device, pipeline statistics per draw against
hand-derived counts, and the same numbers in the report, the JSONL and the trace."""

from __future__ import annotations

import statistics
import subprocess
import sys
from types import SimpleNamespace

import numpy as np
import orjson
import pytest
import wgpu

from engine.devtools.known_draws import COSTS, known_draws_pass
from engine.gpu import DRAW_PROFILE_FEATURES, create_gpu
from engine.graph import RenderGraph, RenderPass
from engine.profiling import FrameProfiler
from engine.profiling.draws import INSIDE_FEATURE, DrawProfiler, TimedPass, draw_label
from engine.telemetry import NameTable, encode_record
from engine.tools.export.report import IMPLAUSIBLE, draws_report
from engine.tools.export.trace import build_trace, frame_of
from tests.profiling_support import Rig, wait_idle
from tests.test_trace import _assert_nested

W = H = 48


def _draws_pass(device, iterations: int) -> RenderPass:
    """One render pass of three fullscreen triangles whose fragment loop runs
    ``iterations * COSTS[k]`` times (engine/devtools/known_draws.py)."""
    return known_draws_pass(device, (W, H), iterations)


def _gpu(disable=()):
    g = create_gpu(extra_features=DRAW_PROFILE_FEATURES, disable=disable)
    if "timestamp-query" not in g.features:
        pytest.skip(f"{g.summary} has no timestamp-query")
    return g


def _run(gpu, iterations: int, frames: int = 5):
    graph = RenderGraph(gpu.device, output_format="rgba8unorm", size=(W, H))
    graph.add(_draws_pass(gpu.device, iterations))
    rig = Rig(gpu, graph, FrameProfiler(gpu, cpu=False, batch=1, draws=True))
    rig.run(frames, idle=True)
    return rig, [r for r in rig.drain() if r.draw_passes() and r.gpu]


def _median(records, fn):
    return statistics.median(fn(r) for r in records)


def test_off_means_no_extra_query_set_timestamp_or_proxy(monkeypatch):
    """Counts query sets and encoder/pass timestamps: the profiler without draws creates
    what it always did and writes no timestamp inside a pass; with draws it does (so the
    counting can fail)."""
    from wgpu.backends.wgpu_native import extras

    gpu = _gpu()
    dev = gpu.device
    counts = {"query_sets": 0, "write_timestamp": 0}
    real_qs, real_wt = type(dev).create_query_set, extras.write_timestamp

    def counting_qs(self, **kw):
        counts["query_sets"] += 1
        return real_qs(self, **kw)

    def counting_wt(encoder, *a):
        counts["write_timestamp"] += 1
        return real_wt(encoder, *a)

    monkeypatch.setattr(type(dev), "create_query_set", counting_qs)
    monkeypatch.setattr(extras, "write_timestamp", counting_wt)
    seen = []
    p = _draws_pass(dev, 1)
    inner = p.record
    p.record = lambda ctx, rpass: (seen.append(type(rpass)), inner(ctx, rpass))
    graph = RenderGraph(dev, output_format="rgba8unorm", size=(W, H))
    graph.add(p)
    rig = Rig(gpu, graph, FrameProfiler(gpu, cpu=False, batch=1))
    rig.run(3)
    records = rig.drain()
    # the pass pools: 3 slots x batch 1, and 2 for frames waiting for their (delayed) resolve
    assert counts == {"query_sets": 3 + 2, "write_timestamp": 0}
    assert len(seen) == 3 and all(issubclass(t, wgpu.GPURenderPassEncoder) for t in seen)
    assert all(r.draw_passes() == () for r in records)
    assert "GPU draws" not in rig.report()

    before = counts["query_sets"]
    graph.profiler = FrameProfiler(gpu, cpu=False, batch=1, draws=True)
    rig.run(5)
    graph.profiler.drain()
    assert counts["query_sets"] - before == 3 + 2 + 3  # the pass pools + the draw pools
    inside = INSIDE_FEATURE in gpu.features
    # 2 per draw per frame, and as many again in the pass's empty (overhead) pass on the
    # frames that measure it: the first two, then every 4th (frames 0, 1, 4 of 5)
    assert graph.profiler.draws.overhead_every == 4
    assert counts["write_timestamp"] == ((5 + 3) * 2 * len(COSTS) if inside else 0)
    assert seen[3:] == [TimedPass] * 5


@pytest.mark.parametrize("inside", [True, False], ids=["inside+split", "split only"])
def test_known_costs_rank_and_sum_to_the_pass(inside, tmp_path):
    gpu = _gpu(disable=() if inside else (INSIDE_FEATURE,))
    if inside and INSIDE_FEATURE not in gpu.features:
        pytest.skip(f"{gpu.summary} has no {INSIDE_FEATURE}")
    # Timing *ratios* (ranks, sums against the pass) are the benchmark's (tools/bench.py
    # profiler, "per-draw known costs"): a preempted CPU on a loaded machine stretches
    # whichever lavapipe draw it hits. Here only what load cannot change: the order the
    # GPU wrote the timestamps in, and that every reading is a number or flagged.
    rig, records = _run(gpu, iterations=200)
    assert len(records) >= 3
    records = records[-3:]
    labels = [d.label for d in records[-1].draw_passes()[0].draws]
    assert labels == [f"x{c}" for c in COSTS]
    for r in records:
        p, scope = r.draw_passes()[0], r.gpu[0]
        if inside:  # nested in the pass, in recording order
            stamps = [scope.begin_ns] + [t for d in p.draws for t in (d.begin_ns, d.end_ns)]
            assert stamps + [scope.end_ns] == sorted(stamps + [scope.end_ns]), stamps
            assert all(d.method == "inside" for d in p.draws)
        else:
            assert all(d.begin_ns is None and d.method == "split" for d in p.draws)
        for d in p.draws:  # replayed (this frame or kept), a cost or flagged
            assert d.split_ns is not None and d.repeats >= 1 and d.split_frame <= r.frame_index
            assert d.split_ns >= 0 or d.implausible or d.below_noise  # never a bare negative
            assert not (d.implausible and d.below_noise)
    # Pipeline statistics per draw: 3 vertices, every pixel shaded at least once.
    last = records[-1].draw_passes()[0]
    if "pipeline-statistics-query" in gpu.features:
        assert [d.vertex for d in last.draws] == [3, 3, 3]
        assert all(d.fragment >= W * H for d in last.draws)
        assert last.total("fragment") == sum(d.fragment for d in last.draws)
    _check_views(rig, records[-1], inside)


def _check_views(rig, rec, inside: bool) -> None:
    """The report, the JSONL message and the trace show the record's numbers."""
    p = rec.draw_passes()[0]
    report = draws_report(rig.telemetry.history, rig.telemetry.session.profiling.draws)
    pass_ns = rec.gpu[0].end_ns - rec.gpu[0].begin_ns
    for d in p.draws:
        row = next(line for line in report.splitlines() if line.strip().startswith(d.label))
        if inside and not d.below_resolution:
            assert f"{d.inside_ns / 1e6:.4f}" in row
        split = f"{d.split_ns / 1e6:.4f} x{d.repeats}"
        split = IMPLAUSIBLE if d.implausible else "<noise" if d.below_noise else split
        assert split in row
    if inside:
        pct = 100 * p.inside_sum_ns() / pass_ns
        assert f"= {pct:.1f}% of the pass ({pct - 100:+.1f}%)" in report
    way, sum_ns = ("inside", p.inside_sum_ns()) if inside else ("split", p.split_sum_ns())
    z = (sum_ns or 0) + p.overhead_ns
    delta = 100 * (z - pass_ns) / pass_ns
    want = (
        f"draws {way} {(sum_ns or 0) / 1e6:.4f} ms + pass overhead {p.overhead_ns / 1e6:.4f} ms"
        f" = {z / 1e6:.4f} ms vs pass {pass_ns / 1e6:.4f} ms (Δ {delta:+.1f}%)"
    )
    assert sum_ns is None or want in report
    table = NameTable()
    new, msg = encode_record(rec, table)
    msg = orjson.loads(orjson.dumps(msg))
    (name_id, kind, baseline, draws, overhead, unreliable), *_ = msg["draws"]
    assert table.ids["Draws"] == name_id and kind == "render" and baseline == p.baseline_ns
    assert overhead == pytest.approx(p.overhead_ns, abs=1e-3) and overhead >= 0
    assert unreliable == p.unreliable
    for wire, d in zip(draws, p.draws, strict=True):
        assert wire[0] == table.ids[d.label]
        assert wire[1:3] == [d.begin_ns, d.end_ns]
        assert wire[3] == pytest.approx(d.split_ns, abs=1e-3) and wire[4] == d.repeats
        assert wire[6:10] == [d.vertex, d.clipper, d.fragment, d.compute]
        assert wire[10:] == [d.implausible]
    trace = build_trace(rig.telemetry, calibration=(0, 1))
    spans = [e for e in trace["traceEvents"] if e["ph"] == "X" and e["pid"] == 2]
    _assert_nested(trace["traceEvents"])
    labels = {f"x{c}" for c in COSTS}  # a draw span carries its own label, nested by time
    draw_spans = [e for e in spans if e["name"] in labels]
    if inside:
        mine = [e for e in draw_spans if frame_of(e) == rec.frame_index]
        assert [e["name"] for e in mine] == [f"x{c}" for c in COSTS]
        for e, d in zip(mine, p.draws, strict=True):
            assert round(e["dur"] * 1e3) == d.inside_ns
        pass_span = next(
            e for e in spans if e["name"] == "Draws" and frame_of(e) == rec.frame_index
        )
        assert all(e["tid"] == pass_span["tid"] for e in mine)  # nested on the same track
    else:
        assert draw_spans == []


def test_resolution_and_repeats():
    """The timestamp tick is the gcd of the spans; repetitions follow the last reading."""
    gpu = _gpu()
    dp = DrawProfiler(gpu, target_ns=10_000, max_repeats=16, budget_ns=100_000)
    dp._learn_resolution([96, 160, 64 * 5])
    assert dp.resolution_ns == 32
    dp._learn_resolution([96, 33])
    assert dp.resolution_ns == 1
    assert dp._next_repeats(5_000.0, 10.0) == 2  # 10 us / 5 us
    assert dp._next_repeats(100.0, 10.0) == 16  # capped by max_repeats
    assert dp._next_repeats(100.0, 20_000.0) == 5  # 100 us of empty passes at most
    assert dp._next_repeats(-50.0, 10.0) == 16  # a negative reading is not a size


def test_cli_draws_report_and_jsonl(tmp_path):
    out = tmp_path / "t.jsonl"
    png = str(tmp_path / "x.png")
    cmd = [sys.executable, "-m", "samples.s01", "--gpu-profile", "draws", "--capture", png,
           "--frames", "4", "--size", "64x48", "--telemetry", str(out)]  # fmt: skip
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert "GPU draws, frame" in r.stdout and "ns/fragment" in r.stdout
    lines = [orjson.loads(line) for line in out.read_bytes().splitlines()]
    frames = [m for m in lines if m["type"] == "frame"]
    assert frames and all(m["draws"] for m in frames)
    bad = subprocess.run(
        [sys.executable, "-m", "samples.s01", "--gpu-profile", "draw"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert bad.returncode == 2 and "Traceback" not in bad.stderr
    assert "--gpu-profile: invalid choice: 'draw'" in bad.stderr.strip()


def test_standard_frame_names_each_batch(gpu):
    """GpuScene splits its multi-draw into one labelled draw per (mesh, LOD) batch when the
    pass encoder times draws."""
    from engine.frame import StandardFrame
    from engine.scene.procedural import city
    from engine.surfaces import OffscreenTarget

    g = _gpu()
    scene, path = city(300, seed=1)
    target = OffscreenTarget(g.device, (64, 48))
    graph = RenderGraph(g.device, output_format=target.format, size=(64, 48))
    frame = StandardFrame(g, graph, scene)
    rig = Rig(g, graph, FrameProfiler(g, cpu=False, batch=1, draws=True))
    for i in range(3):
        rig.loop.frame(target.view, i / 60, lambda ctx: frame.update(ctx, path.at(4.0)))
        wait_idle(g.device)
    rec = next(r for r in reversed(rig.drain()) if r.draw_passes())
    by_pass = {p.name: p for p in rec.draw_passes()}
    # batches are (mesh, LOD, pipeline class): each pipeline's batches together, so a pass
    # draws a subset in batch order (Shadow: no BLEND; Main: no BLEND)
    labels = frame.gs.batch_labels
    meshes = {m.name for m in scene.meshes}
    assert all(label.split(" LOD")[0] in meshes for label in labels)
    assert len(set(labels)) == len(labels)
    not_blend = [lb for lb, b in zip(labels, frame.gs.batches, strict=True) if b.pipeline_class < 4]
    for name in ("Shadow.C0", "Main.Late"):
        assert [d.label for d in by_pass[name].draws] == not_blend
    # Main.Early: the depth prepass's draws of the same batches, then the shading draws
    early = [d.label for d in by_pass["Main.Early"].draws]
    assert early == [f"depth {lb}" for lb in not_blend] + not_blend
    assert [d.label for d in by_pass["HiZ"].draws][0] == "HiZ#0"
    # every instance drawn early or late went through exactly one batch's vertex shader
    if "pipeline-statistics-query" in g.features:
        assert by_pass["Post"].draws[0].vertex == 3


def _fake_draw_frame(index: int):
    """FrameTimings of two passes, ``Main`` (render, 5 draws of known ms, wobbling by frame)
    and ``Cull`` (compute, one unlabelled dispatch), with their draws."""
    from engine.profiling.draws import Draw, PassDraws
    from engine.telemetry import FrameTimings, Scope

    f = 1.0 + 0.1 * ((index * 3) % 5 - 2) / 2
    ms = [0.2 * f, 1.5 * f, 0.05, 0.9 * f, 0.4]
    t, draws = 10_000, []
    for k, m in enumerate(ms):
        draws.append(Draw(f"d{k}", t, t + round(m * 1e6), None, 0, False, 3, 1, 1000 * (k + 1)))
        t += round(m * 1e6)
    main = Scope("Main", 10_000, t + 5_000)
    cull = Scope("Cull", t + 6_000, t + 106_000)
    cull_draw = Draw("Cull#0", t + 6_100, t + 105_900, None, 0, False, 0, 0, 0, 64)
    passes = (PassDraws("Main", "render", tuple(draws)), PassDraws("Cull", "compute", (cull_draw,)))
    cpu = [Scope("Main", 0, 30_000), Scope("Cull", 30_000, 40_000)]
    return FrameTimings(index, gpu=[main, cull], cpu=cpu, draws=passes), ms


def test_perf_table_expands_a_pass_into_its_draws():
    from engine.hud.grid import DebugOverlay
    from engine.telemetry import Telemetry
    from engine.tools.perf.panel import FORM_WIDTHS, PerfOverlay

    prof = {"gpu": True, "cpu": True, "gpu_available": True, "draws": {"inside": True}}
    tel = Telemetry({"profiling": prof})
    frames = [_fake_draw_frame(i) for i in range(70)]
    for i, (ft, _) in enumerate(frames):
        tel.publish(i, t_ns=i * 16_000_000, wall_ms=16.0, timings=ft)
    perf = PerfOverlay(max_draws=3)
    perf.refresh(tel, ["Main", "Cull"])
    window = frames[-60:]
    mean = [np.mean([m[k] for _, m in window]) for k in range(5)]
    main_ms = np.mean([(ft.gpu[0].end_ns - ft.gpu[0].begin_ns) / 1e6 for ft, _ in window])
    top = sorted(range(5), key=lambda k: -mean[k])[:3]  # d1, d3, d4
    names = [r.name.strip() for r in perf.rows]
    assert names == ["Main", *[f"d{k}" for k in top], "+2 more", "ns/frag", "Cull"]
    for r, k in zip(perf.rows[1:4], top, strict=True):
        assert r.child and r.gpu_ms == pytest.approx(mean[k]) and r.cpu_ms is None
    assert perf.rows[4].gpu_ms == pytest.approx(mean[0] + mean[2])
    frags = sum(1000 * (k + 1) for k in range(5))
    assert perf.rows[5].gpu_ms == pytest.approx(main_ms * 1e6 / frags)
    # the totals count passes only, never their draws twice
    cull_ms = 0.1
    assert perf.totals.gpu_ms == pytest.approx(main_ms + cull_ms)
    ov = DebugOverlay(60, 20)
    perf.draw(ov, 0, 0)
    line = "".join(ov.glyph_at(c, 2) or " " for c in range(60))
    assert line.split()[:2] == [f"d{top[0]}", f"{mean[top[0]]:.3f}"]  # no CPU column
    assert line.startswith("   d")  # indented under its pass
    note = "".join(ov.glyph_at(c, 1 + len(perf.rows) + 2) or " " for c in range(60))
    assert note.strip() == "draws timed inside passes, mean of 60"  # where they come from
    # forms 3-5: the same widths without the draw rows, for when the table does not fit
    sizes = perf.sizes()
    assert len(sizes) == 6 and [w for w, _ in sizes] == [*FORM_WIDTHS, *FORM_WIDTHS]
    assert sizes[0][1] - sizes[3][1] == 5
    ov2 = DebugOverlay(60, 20)
    perf.draw(ov2, 0, 0, form=3)
    assert "".join(ov2.glyph_at(c, 2) or " " for c in range(60)).split()[0] == "Cull"


def test_dispatches_timed_inside_a_compute_pass():
    """Two dispatches of known relative cost (3:1 iterations of s02's loop) in one compute
    pass, on a device of its own that has run no render pass (lavapipe's compute timestamps
    stop waiting for dispatches once one has)."""
    from engine.graph import ComputePass
    from samples.s02_custom_pass import (
        create_work_pipelines,
        work_bind_groups,
        work_dispatch,
        work_params,
    )
    from tests.profiling_support import iterations_for

    gpu = _gpu()
    if INSIDE_FEATURE not in gpu.features:
        pytest.skip(f"{gpu.summary} has no {INSIDE_FEATURE}")
    dev, grid = gpu.device, 64
    k = iterations_for(gpu, 1.0, grid)
    pipeline = create_work_pipelines(dev, "rgba8unorm")[0]
    groups = []
    for label, it in (("w3", 3 * k), ("w1", k)):
        params = dev.create_buffer_with_data(
            data=work_params(it, grid, 0.0), usage=wgpu.BufferUsage.UNIFORM
        )
        cells = dev.create_buffer(size=4 * grid * grid, usage=wgpu.BufferUsage.STORAGE)
        groups.append((label, work_bind_groups(dev, pipeline, None, params, cells)[0]))
    n = work_dispatch(grid)

    def record(ctx, cpass):
        cpass.set_pipeline(pipeline)
        for label, group in groups:
            cpass.set_bind_group(0, group)
            draw_label(cpass, label)
            cpass.dispatch_workgroups(n, n)

    graph = RenderGraph(dev, output_format="rgba8unorm", size=(8, 8))
    graph.add(ComputePass("Work", record=record))
    rig = Rig(gpu, graph, FrameProfiler(gpu, cpu=False, batch=1, draws=True))
    rig.run(7, idle=True)
    records = [r for r in rig.drain() if r.draw_passes() and r.gpu][-5:]
    # The 3:1 ratio and the sums against the pass are the benchmark's (a loaded CPU
    # stretches whichever dispatch it preempts); here: nested in the pass, in order, and the
    # empty-pass overhead a reading of the pass's time outside its dispatches.
    for r in records:
        p, scope = r.draw_passes()[0], r.gpu[0]
        stamps = [scope.begin_ns] + [t for d in p.draws for t in (d.begin_ns, d.end_ns)]
        assert stamps + [scope.end_ns] == sorted(stamps + [scope.end_ns]), stamps
        assert p.overhead_ns is None or p.overhead_ns >= 0
    last = records[-1].draw_passes()[0]
    assert [d.label for d in last.draws] == ["w3", "w1"]
    assert all(d.split_ns is None and d.repeats == 0 for d in last.draws)  # never replayed
    if "pipeline-statistics-query" in gpu.features:
        assert [d.compute for d in last.draws] == [grid * grid] * 2
        assert last.total("fragment") == 0


def test_a_span_under_two_ticks_reads_below_resolution():
    """Decoding: with a 32 ns tick, a 1-tick draw is flagged (the report prints '<res', not
    a number) and a 10-tick draw is not."""
    from engine.profiling.draws import _DrawRec, _FrameRec, _PassRec
    from engine.telemetry import FrameTimings, Scope, Telemetry

    gpu = _gpu()
    dp = DrawProfiler(gpu, capacity=8)
    draws = [_DrawRec("tiny", 0, 0, None), _DrawRec("big", 1, 2, None)]
    dp._waiting[7] = _FrameRec(7, 0, [_PassRec("P", "render", None, draws=draws)], ts_used=4)
    ts = np.zeros(dp._ts_cap, np.uint64)
    ts[:4] = [32_000, 32_032, 64_000, 64_320]
    _, (p,) = dp._decode(7, ts.tobytes())
    assert dp.resolution_ns == 32
    assert [(d.inside_ns, d.below_resolution) for d in p.draws] == [(32, True), (320, False)]
    tel = Telemetry({"profiling": {"draws": {"inside": True, "split": False, "stats": False}}})
    tel.publish(7, t_ns=0, wall_ms=None, timings=FrameTimings(7, [Scope("P", 0, 400)], draws=(p,)))
    report = draws_report(tel.history, tel.session.profiling.draws)
    rows = {line.split()[0]: line.split()[1:] for line in report.splitlines()[3:]}
    assert rows["tiny"][0] == "<res" and rows["big"][0] == "0.0003"
    assert rows["tiny"][2:] == ["n/a"] * 4  # no pipeline statistics: n/a, never 0


def test_live_flame_puts_draws_under_their_pass(device):
    """The flame HUD mode: a record's inside-timed draws at depth 2 of the GPU lane, at their
    own times (shifted like the passes); replayed-only draws have no place there."""
    from engine.telemetry import Telemetry
    from engine.tools.flame.tool import ORIGIN_MARGIN_NS, FlamePanel
    from tests.tool_fakes import make_ctx

    tel = Telemetry({"gpu_clock_offset_ns": 1_000})
    graph = RenderGraph(device, output_format="rgba8unorm-srgb", size=(64, 48))
    panel = FlamePanel(SimpleNamespace(ctx=make_ctx(graph=graph, telemetry=tel)))
    panel.activate(True)  # the HUD's mode is flame
    live = panel.live
    ft, ms = _fake_draw_frame(0)
    t0 = 5_000_000_000
    tel.publish(0, t_ns=t0, wall_ms=None, timings=ft)
    c = live.columns
    deep = c.depth[: c.n] == 2
    assert [live.names[i] for i in c.name[: c.n][deep]] == [*(f"d{k}" for k in range(5)), "Cull#0"]
    origin = t0 - ORIGIN_MARGIN_NS
    draws = [d for p in ft.draws for d in p.draws]
    assert c.start[: c.n][deep].tolist() == [d.begin_ns + 1_000 - origin for d in draws]
    assert c.dur[: c.n][deep].tolist() == [d.end_ns - d.begin_ns for d in draws]
    assert set(c.lane[: c.n][deep].tolist()) == {1}
    live.close()


TINY = """
@vertex fn vs(@builtin(vertex_index) i: u32) -> @builtin(position) vec4f {
    let q = vec2f(f32((i << 1u) & 2u), f32(i & 2u));
    return vec4f(q * 0.01 - 1.0, 0.0, 1.0);
}
@fragment fn fs() -> @location(0) vec4f { return vec4f(1.0); }
"""
BIG = 1024  # the cleared target's side: a clear here costs ~0.4 ms on lavapipe


def _tiny_pass(device, name: str, view, load_op: str) -> RenderPass:
    """One render pass on ``view`` with ``load_op`` and a single draw of one tiny triangle
    (a few pixels in a corner): nearly all of a clearing pass's time is its clear."""
    m = device.create_shader_module(code=TINY)
    pipe = device.create_render_pipeline(
        layout="auto",
        vertex={"module": m, "entry_point": "vs"},
        fragment={"module": m, "entry_point": "fs", "targets": [{"format": "rgba8unorm"}]},
    )

    def targets(ctx):
        color = {"view": view, "load_op": load_op, "store_op": "store", "clear_value": (0.2,) * 4}
        return {"color_attachments": [color]}

    def record(ctx, rpass):
        rpass.set_pipeline(pipe)
        draw_label(rpass, "tiny")
        rpass.draw(3)

    return RenderPass(name, record=record, targets=targets)


@pytest.mark.parametrize("mode", ["encoder", "pass"])
def test_pass_overhead_accounts_for_a_big_clear(mode):
    """A pass that clears a 1024x1024 target and draws one tiny triangle: its draw's reading
    is a small part of the pass, the draw plus the measured pass overhead (an empty pass
    with the same clear, timed alike) is close to the pass; a pass that loads the same
    target instead has a far smaller overhead (the ops are copied, not assumed)."""
    disable = () if mode == "encoder" else ("timestamp-query-inside-encoders",)
    gpu = _gpu(disable=disable)
    if INSIDE_FEATURE not in gpu.features:
        pytest.skip(f"{gpu.summary} has no {INSIDE_FEATURE}")
    dev = gpu.device
    tex = dev.create_texture(
        size=(BIG, BIG, 1), format="rgba8unorm", usage=wgpu.TextureUsage.RENDER_ATTACHMENT
    )
    view = tex.create_view()
    graph = RenderGraph(dev, output_format="rgba8unorm", size=(64, 64))
    graph.add(_tiny_pass(dev, "Clear", view, "clear"))
    graph.add(_tiny_pass(dev, "Load", view, "load"))
    # a window of 3 readings, so that the 8 records' medians come from different frames
    opts = {"overhead_every": 1, "overhead_window": 3, "replay": False}
    prof = FrameProfiler(gpu, cpu=False, batch=1, draws=True, draw_options=opts)
    assert prof.gpu.mode == mode and prof.draws.encoder_timestamps == (mode == "encoder")
    rig = Rig(gpu, graph, prof)
    rig.run(12, idle=True)
    records = [r for r in rig.drain() if r.draw_passes() and r.gpu][-8:]
    assert len(records) == 8

    def ratio(r, k, fn):
        return fn(r.draw_passes()[k]) / (r.gpu[k].end_ns - r.gpu[k].begin_ns)

    alone = _median(records, lambda r: ratio(r, 0, lambda p: p.inside_sum_ns()))
    both = _median(records, lambda r: ratio(r, 0, lambda p: p.accounted_ns()))
    assert alone < 0.3, alone  # the draw alone leaves most of the pass unexplained
    # lavapipe reads 0.64-1.16 here, 0.28-2.0 with another process preempting the pass
    # (the overhead is measured in other frames): the level is the benchmark's (the H200
    # reads 0.99-1.00); what load cannot change is that the overhead adds several times
    # the draw's own reading
    assert both < 3.0 and both > 4 * alone, (alone, both)
    # preemption only adds time, and a loading pass is cheap enough for another process's
    # slice to double it (CI read 1.9x from one record): compare the least-disturbed readings
    clear_ovh = min(r.draw_passes()[0].overhead_ns for r in records)
    load_ovh = min(r.draw_passes()[1].overhead_ns for r in records)
    # 3-9x measured here beside two CPU-bound jobs; a copied-wrong op would read about 1x
    assert clear_ovh > 1.5 * load_ovh, (clear_ovh, load_ovh)
    report = rig.report()
    assert "Clear (render)" in report and "+ pass overhead " in report


def test_overhead_reading_and_its_median():
    """Decoding, by hand: an empty pass spanning 1000 ns with two inside pairs of 30 and 50
    ns reads 920 ns; the first reading of a pass is dropped (warm-up), later ones go into a
    window whose median is the pass's ``overhead_ns``; the empty pass's targets are scratch
    views of the same format and size with the real pass's ops."""
    from engine.profiling.draws import _DrawRec, _FrameRec, _PassRec, _signature

    gpu = _gpu()
    dp = DrawProfiler(gpu, capacity=8, overhead_window=3)
    got = []
    for frame, span in enumerate((5_000, 1_000, 1_400, 1_100, 9_000)):
        draws = [_DrawRec("a", 0, 0, None), _DrawRec("b", 1, 2, None)]
        p = _PassRec("P", "render", None, draws=draws, overhead_ts=4, overhead_pairs=2)
        dp._waiting[frame] = _FrameRec(frame, 0, [p], ts_used=10)
        ts = np.zeros(dp._ts_cap, np.uint64)
        ts[:4] = [100, 200, 300, 400]  # the draws (inside)
        ts[4:10] = [1_000, 1_000 + span, 1_010, 1_040, 1_100, 1_150]  # empty pass + 2 pairs
        _, (pd,) = dp._decode(frame, ts.tobytes())
        got.append(pd.overhead_ns)
        assert pd.inside_sum_ns() == 200
    # readings: (dropped), 920, 1320, 1020, 8920 -> medians of the last 3
    assert got == [None, 920.0, 1120.0, 1020.0, 1320.0]
    assert pd.accounted_ns() == 200 + 1320.0
    # an unwritten timestamp (0) leaves the window as it was
    p = _PassRec("P", "render", None, draws=[], overhead_ts=0, overhead_pairs=0)
    dp._waiting[9] = _FrameRec(9, 0, [p], ts_used=2)
    _, (pd,) = dp._decode(9, np.zeros(dp._ts_cap, np.uint64).tobytes())
    assert pd.overhead_ns == 1320.0
    # other attachments or ops (a resize): a new window, its first reading dropped again
    for frame, want in ((10, None), (11, 700.0)):
        p = _PassRec("P", "render", None, draws=[], overhead_ts=0, overhead_sig=("resized",))
        dp._waiting[frame] = _FrameRec(frame, 0, [p], ts_used=2)
        ts = np.zeros(dp._ts_cap, np.uint64)
        ts[:2] = [5_000, 5_700]
        assert dp._decode(frame, ts.tobytes())[1][0].overhead_ns == want

    tex = gpu.device.create_texture(
        size=(40, 24, 1), format="rgba16float", usage=wgpu.TextureUsage.RENDER_ATTACHMENT
    )
    real = {"view": tex.create_view(), "load_op": "load", "store_op": "discard"}
    p = _PassRec("Q", "render", {"color_attachments": [real]})
    (c,) = dp._overhead_targets(p)["color_attachments"]
    assert c["view"] is not real["view"]
    assert (c["view"].texture.format, c["view"].size) == ("rgba16float", (40, 24, 1))
    assert (c["load_op"], c["store_op"]) == ("load", "discard")
    sig = _signature({"color_attachments": [c]})
    ops = (("load_op", "'load'"), ("store_op", "'discard'"))
    assert sig == ((((40, 24, 1), "rgba16float", 1, False, ops),), None)
    assert _signature({"color_attachments": [{**c, "load_op": "clear"}]}) != sig


def _one_draw_frame(dp, frame: int, baseline: int, replay: int, inside: bool = False):
    """Decode a frame of pass P with draw "a": an inside pair (optional), an empty-pass
    baseline and a replay of one repetition, with the given spans (ns)."""
    from engine.profiling.draws import _DrawRec, _FrameRec, _PassRec

    d = _DrawRec("a", 0, 0 if inside else None, None, replay_ts=4, repeats=1)
    p = _PassRec("P", "render", None, draws=[d], baselines={1: 2})
    dp._waiting[frame] = _FrameRec(frame, 0, [p], ts_used=6)
    ts = np.zeros(dp._ts_cap, np.uint64)
    ts[:6] = [1_000, 1_000 + 400_000, 10_000, 10_000 + baseline, 50_000, 50_000 + replay]
    return dp._decode(frame, ts.tobytes())[1][0]


def test_a_stray_baseline_moves_nothing():
    """Five frames of a 100 us empty pass, then one 20x as long: the split reading stays
    (600 - 100) us; subtracting that one reading alone would read -1.4 ms."""
    dp = DrawProfiler(_gpu(), capacity=8)
    for f in range(5):
        p = _one_draw_frame(dp, f, 100_000, 600_000)
    assert p.draws[0].split_ns == 500_000
    p = _one_draw_frame(dp, 5, 2_000_000, 600_000)
    (d,) = p.draws
    assert d.split_ns == 500_000 and d.implausible is None and d.split_frame == 5
    assert p.baseline_ns == 100_000
    # and a stray replay (one 20x reading among the draw's kept ones) moves nothing either
    p = _one_draw_frame(dp, 6, 100_000, 10_000_000)
    assert p.draws[0].split_ns == 500_000


def test_a_reading_that_cannot_be_true_is_never_a_number():
    """A first frame whose baseline is longer than the replay: a negative split is
    flagged, left out of the sums, and every view says n/a (implausible)."""
    from engine.profiling.draws import Draw, PassDraws
    from engine.telemetry import FrameTimings, Scope, Telemetry
    from engine.tools.export.report import pass_summary

    dp = DrawProfiler(_gpu(), capacity=8)
    p = _one_draw_frame(dp, 0, 2_000_000, 600_000)
    (d,) = p.draws
    assert d.split_ns == -1_400_000 and "negative split" in d.implausible
    assert d.ns is None and p.split_sum_ns() is None
    p = p._replace(draws=(d._replace(fragment=1000),))
    tel = Telemetry({"profiling": {"draws": {"inside": False, "split": True, "stats": True}}})
    tel.publish(
        0, t_ns=0, wall_ms=None, timings=FrameTimings(0, [Scope("P", 0, 500_000)], draws=(p,))
    )
    report = draws_report(tel.history, tel.session.profiling.draws)
    row = next(line for line in report.splitlines() if line.strip().startswith("a "))
    assert IMPLAUSIBLE in row and "-1.4000" not in report and "-1400" not in report
    assert row.split()[-1] == "n/a"  # ns/fragment: no number from a false reading
    assert f"split {IMPLAUSIBLE}" in pass_summary(p, Scope("P", 0, 500_000))
    # split/inside far from 1 (-18.52 on wgpu's OpenGL backend): not printed as a ratio
    draws = (Draw("x", 0, 100_000, -1_852_000.0, 1, False), Draw("y", 0, 100_000, 10.0, 1, False))
    text = pass_summary(PassDraws("Q", "render", draws), Scope("Q", 0, 300_000))
    assert "split/inside" not in text or f"split/inside {IMPLAUSIBLE}" in text
    odd = (Draw("x", 0, 100_000, 1_000_000.0, 1, False),)  # split 10x inside: not the draws
    text = pass_summary(PassDraws("Q", "render", odd), Scope("Q", 0, 300_000))
    assert f"(split/inside {IMPLAUSIBLE})" in text and "10.00" not in text
    fine = (Draw("x", 0, 100_000, 130_000.0, 1, False),)
    assert "(split/inside 1.30)" in pass_summary(PassDraws("Q", "render", fine), None)


def test_opengl_backend_marks_the_figures_unreliable():
    from types import SimpleNamespace

    from engine.tools.export.report import pass_summary

    real = _gpu()
    gl = SimpleNamespace(features=real.features, device=real.device,
                         summary="llvmpipe (LLVM 15.0.6, 256 bits) (CPU) via OpenGL")  # fmt: skip
    p = _one_draw_frame(DrawProfiler(gl, capacity=8), 0, 100_000, 600_000, inside=True)
    assert p.unreliable.startswith("wgpu's OpenGL backend")
    assert "figures unreliable: wgpu's OpenGL backend" in pass_summary(p, None)
    table = NameTable()
    from engine.telemetry import FrameTimings, Scope, Telemetry

    tel = Telemetry({})
    tel.publish(0, t_ns=0, wall_ms=None, timings=FrameTimings(0, [Scope("P", 0, 9)], draws=(p,)))
    _, msg = encode_record(tel.history[-1], table)
    assert msg["draws"][0][-1] == p.unreliable
    vk = _one_draw_frame(DrawProfiler(real, capacity=8), 0, 100_000, 600_000, inside=True)
    assert vk.unreliable is None


def test_replays_are_spread_over_frames_and_kept_per_draw():
    """Eight draws, three replayed a frame round-robin: each frame replays three new ones,
    and every draw keeps its last reading (tagged with the frame it came from)."""
    gpu = _gpu()
    dev = gpu.device
    graph = RenderGraph(dev, output_format="rgba8unorm", size=(W, H))
    pass_ = _draws_pass(dev, 20)
    inner = pass_.record

    def record(ctx, rpass):  # the three-draw pass, then five more draws
        inner(ctx, rpass)
        for k in range(5):
            draw_label(rpass, f"more{k}")
            rpass.draw(3, 1, 0, 1)

    pass_.record = record
    graph.add(pass_)
    prof = FrameProfiler(gpu, cpu=False, batch=1, draws=True,
                         draw_options={"replays_per_frame": 3})  # fmt: skip
    rig = Rig(gpu, graph, prof)
    rig.run(6, idle=True)
    records = sorted((r for r in rig.drain() if r.draw_passes()), key=lambda r: r.frame_index)
    assert len(records) >= 4
    for r in records:
        fresh = [d.label for d in r.draw_passes()[0].draws if d.split_frame == r.frame_index]
        assert len(fresh) == 3, (r.frame_index, fresh)
    first = records[0].frame_index
    seen = [
        {d.label for d in r.draw_passes()[0].draws if d.split_frame == r.frame_index}
        for r in records
    ]
    assert seen[0] | seen[1] | seen[2] == {f"x{c}" for c in COSTS} | {f"more{k}" for k in range(5)}
    late = records[3].draw_passes()[0].draws
    assert all(d.split_ns is not None and first <= d.split_frame for d in late)


def test_a_split_within_the_baseline_noise_reads_below_noise():
    """Baselines jittering 95-105 us: a draw reading +0.5 us or -4 us is noise (``<noise``,
    not a number, not implausible); -1.4 ms is beyond any noise: implausible."""
    from engine.tools.export.report import _draw_time

    jitter = [95_000, 105_000, 100_000, 97_000, 103_000]
    for replay, noise, bad in [(100_500, True, False), (96_000, True, False),
                               (300_000, False, False)]:  # fmt: skip
        dp = DrawProfiler(_gpu(), capacity=8)
        for f, b in enumerate(jitter):
            p = _one_draw_frame(dp, f, b, replay + (b - 100_000))
        (d,) = p.draws
        assert d.below_noise == noise and (d.implausible is not None) == bad, (replay, d)
        assert (_draw_time(d, False) == "<noise") == noise
    dp = DrawProfiler(_gpu(), capacity=8)
    for f, b in enumerate(jitter):
        _one_draw_frame(dp, f, b, b + 200_000)
    for f in range(5, 10):  # five frames whose replays read far below any baseline
        p = _one_draw_frame(dp, f, 100_000, 10_000)
    assert p.draws[0].implausible and not p.draws[0].below_noise


def test_cli_on_the_opengl_backend_says_the_figures_are_unreliable(tmp_path):
    """wgpu's OpenGL backend (llvmpipe advertises timestamp-query-inside-passes there): the
    report says so beside every pass's figures."""
    import os

    env = {**os.environ, "WGPU_BACKEND_TYPE": "OpenGL", "XDG_RUNTIME_DIR": str(tmp_path)}
    cmd = [sys.executable, "-m", "samples.s01", "--gpu-profile", "draws", "--capture",
           str(tmp_path / "x.png"), "--frames", "6", "--size", "64x48"]  # fmt: skip
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=120, env=env)
    if r.returncode != 0 or "via OpenGL" not in r.stdout:
        pytest.skip(f"no OpenGL adapter here: {(r.stderr or r.stdout).strip()[-200:]}")
    summaries = [line for line in r.stdout.splitlines() if line.startswith("  Main (render)")]
    assert summaries and all("figures unreliable: wgpu's OpenGL backend" in x for x in summaries)
