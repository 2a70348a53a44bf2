"""Profiler overhead, measured in one run: CPU and GPU frame time with profiling on vs off.

Cases: the standard frame (``engine.frame.StandardFrame`` on the procedural city, as s13
builds it: 100,000 instances at 1920x1080, 2,000 at 320x180 with ``--quick``) is the
realistic case; s02-like graphs (2 passes, and 2 + 10 tiny passes) are the small-frame case
where a fixed cost shows most.

Arms, interleaved in blocks (off, on, gpu, cpu, enc, off, on, ...) to cancel drift:

* ``off``: no profiler (no query set, no timestamp, no CPU scope).
* ``on``: ``--gpu-profile --profile``: pass-descriptor timestamps and CPU scopes, collected
  after each submit and published as a telemetry record with its statistics (what the
  HUD reads).
* ``gpu``: ``--gpu-profile`` only; ``cpu``: ``--profile`` only (splits the CPU cost).
* ``enc``: GPU timestamps written on the encoder between passes instead of on the pass
  descriptors (``timestamps="encoder"``; needs ``timestamp-query-inside-encoders``): if
  descriptor timestamps serialised passes, ``gpu`` would cost more GPU time than ``enc``.
* ``draws``: ``--gpu-profile draws --profile``: ``on`` plus per-draw timing
  (``engine.profiling.draws``: timestamps between draws inside the passes where the adapter
  has ``timestamp-query-inside-passes``, every render draw replayed alone, pipeline
  statistics per draw). Its extra CPU per frame is printed against ``on`` and ``off``; its
  GPU frame includes the replays. For the standard frame the per-draw sums are compared
  with their pass's own time (the truth check of per-draw timing). The device is created
  with the features this arm uses (``engine.gpu.DRAW_PROFILE_FEATURES``) for every arm.

Each frame is submitted as three command buffers in one ``queue.submit``: a stopwatch begin
(an empty compute pass with a beginning-of-pass timestamp), the frame, a stopwatch end. The
stopwatch is identical in every arm and independent of the per-pass profiler, so "GPU frame"
means the same thing with profiling off. CPU frame = one ``FrameLoop.frame`` (update, record,
finish, submit, after_submit: readbacks, collection, the telemetry record),
``perf_counter_ns``; the stopwatch's own command buffers are built outside it. The queue is
drained between frames (bench side, untimed) so
frames do not overlap. Medians are the headline; means are printed too because readbacks are
batched (one map every ``batch`` frames), which a median alone would hide. Overheads are
printed per frame and per pass in microseconds. Goals: CPU <= 1.05x, GPU <= 1.01x.
"""

from __future__ import annotations

import os
import statistics
import time

import numpy as np
import wgpu

from engine.graph import ComputePass, RenderGraph
from engine.loop import FrameLoop
from engine.profiling import FrameProfiler
from engine.readback import ReadbackRing
from engine.telemetry import FrameTimings, Telemetry
from engine.tools.export.jsonl import JsonLinesWriter
from samples.s02_custom_pass import WorkPasses

FORMAT = "rgba8unorm"
ARMS = ("off", "on", "gpu", "cpu", "enc", "draws")


class Stopwatch:
    """Two timestamps bracketing a whole frame, in command buffers of their own."""

    def __init__(self, device):
        self.device = device
        self.qs = device.create_query_set(label="stopwatch", type="timestamp", count=2)
        usage = wgpu.BufferUsage.QUERY_RESOLVE | wgpu.BufferUsage.COPY_SRC
        self.resolve = device.create_buffer(label="stopwatch", size=16, usage=usage)
        self.ring = ReadbackRing(device, 16, slots=8, label="stopwatch")

    def begin(self):
        enc = self.device.create_command_encoder(label="stopwatch begin")
        tw = {"query_set": self.qs, "beginning_of_pass_write_index": 0}
        enc.begin_compute_pass(label="stopwatch begin", timestamp_writes=tw).end()
        return enc.finish()

    def end(self):
        enc = self.device.create_command_encoder(label="stopwatch end")
        tw = {"query_set": self.qs, "end_of_pass_write_index": 1}
        enc.begin_compute_pass(label="stopwatch end", timestamp_writes=tw).end()
        enc.resolve_query_set(self.qs, 0, 2, self.resolve, 0)
        self.ring.copy(enc, self.resolve)
        return enc.finish()


def _work_graph(device, size, *, iterations, grid, extra_passes):
    """s02-like content: Work (compute) + Show (render) + ``extra_passes`` tiny passes."""
    graph = RenderGraph(device, output_format=FORMAT, size=size)
    cells = graph.create_buffer("cells", size=4 * grid * grid, usage=wgpu.BufferUsage.STORAGE)
    s02 = WorkPasses(device, FORMAT, grid, iterations=iterations, cells=cells)
    graph.add(s02.work())
    for i in range(extra_passes):
        graph.add(
            ComputePass(f"Tiny{i}", record=s02.record_work if i == 0 else (lambda c, p: None))
        )
    graph.add(s02.show())
    return graph


class _Case:
    """A graph to time: ``update(ctx)`` runs before recording (the sample's Update)."""

    def __init__(self, name, graph, output, update=None):
        self.name, self.graph, self.output = name, graph, output
        self.update = update or (lambda ctx: None)


def _standard_case(gpu, n, size):
    from engine.frame import StandardFrame
    from engine.scene.procedural import city
    from engine.surfaces import OffscreenTarget

    scene, path = city(n, seed=0)
    target = OffscreenTarget(gpu.device, size)
    graph = RenderGraph(gpu.device, output_format=target.format, size=size)
    frame = StandardFrame(gpu, graph, scene)
    update = lambda ctx: frame.update(ctx, path.at(4.0 + ctx.time))  # noqa: E731
    name = f"standard frame, {n:,} instances, {size[0]}x{size[1]}"
    return _Case(name, graph, target.view, update)


def _sinks(gpu):
    sinks = {
        "off": None,
        "on": FrameProfiler(gpu, gpu=True, cpu=True),
        "gpu": FrameProfiler(gpu, gpu=True, cpu=False),
        "cpu": FrameProfiler(gpu, gpu=False, cpu=True),
    }
    if gpu.has_encoder_timestamps:
        sinks["enc"] = FrameProfiler(gpu, gpu=True, cpu=False, timestamps="encoder")
    sinks["draws"] = FrameProfiler(gpu, gpu=True, cpu=True, draws=True)
    return sinks


def _frame(loop, case, watch, index):
    """One frame through the one frame loop (``engine.loop.FrameLoop``: update, record,
    submit, after_submit with its collection and telemetry record); returns its CPU ns."""
    begin, end = watch.begin(), watch.end()  # stopwatch: same in every arm, untimed
    t0 = time.perf_counter_ns()
    loop.frame(case.output, index / 60, case.update, before=[begin], after=[end])
    t1 = time.perf_counter_ns()
    watch.ring.submitted(index)
    return t1 - t0


def _measure(gpu, case, *, frames_per_block, blocks):
    dev = gpu.device
    watch = Stopwatch(dev)
    sinks = _sinks(gpu)
    idle = dev.create_buffer(size=4, usage=wgpu.BufferUsage.COPY_SRC)
    cpu = {a: [] for a in sinks}
    gpu_ms = {a: [] for a in sinks}
    arm_of: dict[int, str] = {}
    index = 0

    def take(results):
        for f, data in results:
            if f in arm_of:
                b, e = np.frombuffer(data, np.uint64).tolist()
                gpu_ms[arm_of[f]].append((e - b) / 1e6)

    order = list(sinks)
    loop = FrameLoop(gpu, case.graph)
    for block in range(len(order) * (blocks + 1)):
        arm = order[block % len(order)]
        case.graph.profiler = sinks[arm]
        for _ in range(frames_per_block):
            ns = _frame(loop, case, watch, index)
            if block >= len(order):  # the first round warms up (shader JIT, first maps)
                cpu[arm].append(ns / 1e6)
                arm_of[index] = arm
            dev.queue.read_buffer(idle)  # bench side: drain the queue so frames do not overlap
            take(watch.ring.poll())
            index += 1
    take(watch.ring.drain(5.0))
    for arm in ("on", "draws"):  # publish what is in flight (per-draw records too)
        case.graph.profiler = sinks[arm]
        loop.drain()
    case.graph.profiler = None
    return cpu, gpu_ms, list(loop.telemetry.history)


def _row(label, off, on, passes, frame_pct=False):
    mo, mn = statistics.median(off), statistics.median(on)
    us = (mn - mo) * 1e3
    text = (
        f"  {label:<16} off {mo:8.3f} ms  on {mn:8.3f} ms  ratio {mn / mo:6.3f}x  "
        f"{us:+8.1f} us/frame {us / passes:+7.2f} us/pass"
    )
    return text + (f"  ({100 * us / 1e3 / mo:+.2f}% of the frame)" if frame_pct else "")


def _report(case, cpu, gms):
    graph = case.graph
    passes = len(graph.pass_names())
    print(f"[{case.name}] {passes} passes: {', '.join(graph.pass_names())}", flush=True)
    print(f"  {len(cpu['on'])} frames per arm")
    print(_row("CPU median", cpu["off"], cpu["on"], passes))
    mo, mn = statistics.mean(cpu["off"]), statistics.mean(cpu["on"])
    us = (mn - mo) * 1e3
    print(
        f"  {'CPU mean':<16} off {mo:8.3f} ms  on {mn:8.3f} ms  ratio {mn / mo:6.3f}x  "
        f"{us:+8.1f} us/frame {us / passes:+7.2f} us/pass"
    )
    print(_row("GPU median", gms["off"], gms["on"], passes, frame_pct=True))
    print("  split (vs off, medians):")
    for arm, what in (
        ("cpu", "--profile only (CPU scopes)"),
        ("gpu", "--gpu-profile only (pass timestamps)"),
        ("enc", "--gpu-profile, encoder timestamps"),
        ("draws", "--gpu-profile draws --profile"),
    ):
        if arm not in cpu:
            continue
        c = (statistics.median(cpu[arm]) - statistics.median(cpu["off"])) * 1e3
        g = (statistics.median(gms[arm]) - statistics.median(gms["off"])) * 1e3
        print(f"    {what:<38} CPU {c:+8.1f} us/frame   GPU {g:+8.1f} us/frame")
    c = (statistics.median(cpu["draws"]) - statistics.median(cpu["on"])) * 1e3
    m = (statistics.mean(cpu["draws"]) - statistics.mean(cpu["on"])) * 1e3
    print(f"  per-draw timing, extra CPU over 'on': median {c:+.1f} us/frame, mean {m:+.1f}")
    # The frame cost of --gpu-profile draws against --gpu-profile alone (goal <= 1.5x): the
    # split replays are spread over frames, a few draws each (engine.profiling.draws).
    # Frame time of a pipelined loop (CPU and GPU overlap) is the larger of the two.
    c_d, c_g = statistics.median(cpu["draws"]), statistics.median(cpu["gpu"])
    g_d, g_g = statistics.median(gms["draws"]), statistics.median(gms["gpu"])
    fr = max(c_d, g_d) / max(c_g, g_g)
    print(
        f"  --gpu-profile draws vs --gpu-profile: CPU {c_d:.3f} vs {c_g:.3f} ms ({c_d / c_g:.2f}x),"
        f" GPU {g_d:.3f} vs {g_g:.3f} ms ({g_d / g_g:.2f}x); frame time (the larger of CPU and "
        f"GPU) {fr:.3f}x ({'within' if fr <= 1.5 else 'OVER'} the 1.5x goal)"
    )


def run(gpu, args) -> None:
    """Print the overhead tables for the standard frame and the s02 graphs on ``gpu``."""
    from engine.gpu import DRAW_PROFILE_FEATURES, create_gpu

    if any(f in gpu.adapter.features and f not in gpu.features for f in DRAW_PROFILE_FEATURES):
        gpu = create_gpu(getattr(args, "adapter", None), extra_features=DRAW_PROFILE_FEATURES)
    print(f"adapter: {gpu.summary}; features {', '.join(sorted(gpu.features))}")
    if not gpu.has_timestamps:
        print("  GPU timings n/a: no 'timestamp-query' feature; nothing to measure")
        return
    quick = getattr(args, "quick", False)
    dev = gpu.device
    fpb, blocks = (4, 3) if quick else (20, 5)
    std_n, std_size = (2_000, (320, 180)) if quick else (100_000, (1920, 1080))
    size = (320, 180) if quick else (1280, 720)
    tex = dev.create_texture(
        size=(*size, 1), format=FORMAT, usage=wgpu.TextureUsage.RENDER_ATTACHMENT
    )
    output = tex.create_view()
    print(
        f"  arms {', '.join(a for a in ARMS if a != 'enc' or gpu.has_encoder_timestamps)}; "
        f"{fpb} frames per block, {blocks} blocks per arm, interleaved; queue drained "
        "between frames"
    )
    cases = [
        lambda: _standard_case(gpu, std_n, std_size),
        lambda: _Case(
            f"s02, {size[0]}x{size[1]}",
            _work_graph(dev, size, iterations=64, grid=256, extra_passes=0),
            output,
        ),
        lambda: _Case(
            f"s02 + 10 tiny passes, {size[0]}x{size[1]}",
            _work_graph(dev, size, iterations=64, grid=256, extra_passes=10),
            output,
        ),
    ]
    for i, make in enumerate(cases):
        case = make()
        cpu, gms, records = _measure(gpu, case, frames_per_block=fpb, blocks=blocks)
        _report(case, cpu, gms)
        if i == 0:
            _telemetry_cost(records)
            _draw_truth(records)
        _draw_recording_cpu(records)
    print("  goals: CPU <= 1.05x, GPU <= 1.01x (on vs off)")
    _known_draw_costs(quick)


def _known_draw_costs(quick: bool) -> None:
    """Per-draw known costs (the ratio claims tests/test_draws.py leaves to this benchmark,
    since a loaded CPU stretches whichever lavapipe draw it preempts): three fullscreen
    draws in one pass whose fragment loop runs 2:4:1 units; medians over the frames of the
    inside and split readings' ratios to the x1 draw, the inside sum / the pass and split
    sum / inside sum. Its own device: lavapipe's compute timestamps go wrong once a device
    has rendered, which the next benchmark's compute passes would inherit."""
    from engine.devtools.known_draws import known_draws_pass
    from engine.gpu import DRAW_PROFILE_FEATURES, create_gpu

    gpu = create_gpu(extra_features=DRAW_PROFILE_FEATURES)
    dev, size = gpu.device, (48, 48) if quick else (1920, 1080)
    units = 200 if quick else 4_000
    graph = RenderGraph(dev, output_format=FORMAT, size=size)
    graph.add(known_draws_pass(dev, size, units, FORMAT))
    graph.profiler = FrameProfiler(gpu, cpu=False, batch=1, draws=True)
    loop = FrameLoop(gpu, graph)
    idle = dev.create_buffer(size=4, usage=wgpu.BufferUsage.COPY_SRC)
    for _ in range(9 if quick else 30):
        loop.frame(None, 0.0)
        dev.queue.read_buffer(idle)
    loop.drain()
    recs = [r for r in loop.telemetry.history if r.draw_passes() and r.gpu][2:]
    if not recs:
        print("  per-draw known costs: no frame with draw timings came back")
        return
    print(f"  per-draw known costs 2:4:1 (true ratios to x1: 2, 4), {len(recs)} frames, medians:")
    for way in ("inside_ns", "split_ns"):
        vals = [[getattr(d, way) for d in r.draw_passes()[0].draws] for r in recs]
        if any(v is None for row in vals for v in row):
            print(f"    {way[:-3]:<7} n/a")
            continue
        med = [statistics.median(row[k] for row in vals) for k in range(3)]
        print(
            f"    {way[:-3]:<7} x2 {med[0] / med[2]:.3f}  x4 {med[1] / med[2]:.3f}  "
            f"(x1 {med[2] / 1e6:.4f} ms)"
        )
    p_ns = [r.gpu[0].end_ns - r.gpu[0].begin_ns for r in recs]
    ins = [r.draw_passes()[0].inside_sum_ns() for r in recs]
    spl = [r.draw_passes()[0].split_sum_ns() for r in recs]
    if None not in ins:
        a = statistics.median(i / p for i, p in zip(ins, p_ns, strict=True))
        print(f"    inside sum / pass {a:.3f} (goal 0.75-1.1)", end="")
        if None not in spl:
            b = statistics.median(s / i for s, i in zip(spl, ins, strict=True))
            print(f", split sum / inside sum {b:.3f} (0.6-1.6 on lavapipe)", end="")
        print()


def _draw_recording_cpu(records) -> None:
    """CPU of recording alone (pass scopes, plus the replays' scope), from the CPU scopes of
    the ``on`` and ``draws`` arms' records: per-draw timing's extra CPU without the submit
    (on a software GPU the submit's time follows the GPU work the replays add)."""
    skip = {"Update", "Submit", "Present"}
    per = {"on": [], "draws": []}
    for r in records:
        if r.cpu and r.gpu:
            arm = "draws" if r.draw_passes() else "on"
            per[arm].append(sum(s.end_ns - s.begin_ns for s in r.cpu if s.name not in skip))
    if per["on"] and per["draws"]:
        a, b = statistics.median(per["on"]) / 1e3, statistics.median(per["draws"]) / 1e3
        print(
            f"  recording CPU (pass scopes + 'Draw replay', medians): on {a:.1f} us, "
            f"draws {b:.1f} us: {b - a:+.1f} us/frame"
        )


def _draw_truth(records) -> None:
    """Per render/compute pass of the ``draws`` arm's frames (medians): the draws' inside
    sum / the pass's own time, (that sum + the pass's measured overhead) / the pass's time
    (goal: within 5% where draws overlap little), and split sum / inside sum (> 1: the
    draws overlapped)."""
    timed = [r for r in records if r.draw_passes() and r.gpu]
    if not timed:
        print("  per-draw truth: no frame with draw timings came back")
        return
    inside = "n/a" if timed[-1].draw_passes()[0].draws[0].begin_ns is None else "inside"
    print(f"  per-draw truth over {len(timed)} frames (medians; inside timing: {inside}):")
    names = [p.name for p in timed[-1].draw_passes()]
    for name in names:
        ratios, overlap, accounted, draws = [], [], [], 0
        for r in timed:
            p = next((q for q in r.draw_passes() if q.name == name), None)
            s = next((x for x in r.gpu if x.name == name), None)
            if p is None or s is None:
                continue
            draws = len(p.draws)
            ins, spl = p.inside_sum_ns(), p.split_sum_ns()
            if ins is not None and s.end_ns > s.begin_ns:
                ratios.append(ins / (s.end_ns - s.begin_ns))
                if p.overhead_ns is not None:
                    accounted.append((ins + p.overhead_ns) / (s.end_ns - s.begin_ns))
            if ins and spl is not None:
                overlap.append(spl / ins)
        a = f"{statistics.median(ratios):6.3f}" if ratios else "   n/a"
        b = f"{statistics.median(overlap):6.3f}" if overlap else "   n/a"
        c = f"{statistics.median(accounted):6.3f}" if accounted else "   n/a"
        print(
            f"    {name:<14} {draws:3d} draws  sum/pass {a}  (sum+overhead)/pass {c}  "
            f"split/inside {b}"
        )
    from engine.tools.export.report import pass_summary

    last = timed[-1]
    print(f"  per pass, frame {last.frame_index}:")
    scopes = {s.name: s for s in last.gpu}
    for p in last.draw_passes():
        print("    " + pass_summary(p, scopes.get(p.name)))


def _telemetry_cost(records) -> None:
    """CPU cost of the telemetry record and its statistics, replaying the standard frame's
    timings into a fresh ``Telemetry`` (part of the 'on' arm above; shown apart here)."""
    timed = [r for r in records if r.gpu and r.cpu]
    if not timed:
        return
    reps = max(1, 600 // len(timed))
    # the passes' own scopes only: the draws arm's nested draws would add their stats rows
    frames = [
        FrameTimings(
            r.frame_index,
            gpu=[s._replace(children=(), detail=None) for s in r.gpu],
            cpu=list(r.cpu),
        )
        for r in timed
    ]
    arms = {}
    for arm in ("publish", "publish + stats read", "publish + --telemetry JSONL"):
        tel = Telemetry()
        if arm.endswith("JSONL"):
            tel.subscribe(JsonLinesWriter(os.devnull, {}))
        ns = []
        for i in range(reps * len(frames)):
            ft = frames[i % len(frames)]
            t0 = time.perf_counter_ns()
            rec = tel.publish(i, t_ns=t0, wall_ms=16.7, timings=ft)
            if arm.endswith("read"):
                rec.stat(ft.gpu[0].name)
            ns.append(time.perf_counter_ns() - t0)
        arms[arm] = statistics.median(ns[len(frames) :]) / 1e3
    scopes = len(timed[-1].gpu) + len(timed[-1].cpu)
    print(f"  telemetry per frame ({scopes} scopes, medians; goal <= 50 us):")
    for arm, us in arms.items():
        print(f"    {arm:<30} {us:8.1f} us")
