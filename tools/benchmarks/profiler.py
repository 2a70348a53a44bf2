"""Profiler overhead, measured in one run: GPU and CPU frame time with profiling on vs off,
resolved to a fraction of a percent, and where the profiler's GPU time goes.

Cases: the standard frame (``engine.frame.StandardFrame`` on the procedural city, as s13
builds it: 100,000 instances at 1920x1080, 2,000 at 320x180 with ``--quick``) is the
realistic case; s02-like graphs (2 passes, and 2 + 10 tiny passes) are the small-frame case
where a fixed cost shows most.

**How a figure is measured.** Frames run back to back, at most ``IN_FLIGHT`` (2) submitted
and unfinished (a fence of 4 bytes copied after each frame, the same in every arm), the way
a presenting loop runs: the GPU never idles inside a block, so its clocks stay up (a queue
drained after each frame reads twice as slow on the H200) and a cost that only shows when
frames follow each other (a resolve that waits for its frame to finish) is in the figure.
An arm's block is ``warm`` untimed frames then ``frames`` timed ones; its GPU time is one
stopwatch (an empty compute pass's timestamps, in command buffers of its own, the same in
every arm) around the timed frames, divided by their count; its CPU time is each timed
``FrameLoop.frame`` (update, record, finish, submit, after_submit: readbacks, collection,
the telemetry record), ``perf_counter_ns``. The queue is drained between blocks (untimed).

**How 1% is resolved.** A round runs every arm's block once, in an order that alternates
between forward and backward (linear drift cancels within two rounds) and is rotated by one
arm every two rounds (each arm takes every place: with a fixed order ``off`` always ran first
or last, and the A/A ratio read 0.990 [0.985, 0.995] on the H200, a bias of its place, not
noise; rotated, 1.001 and 1.003 in two runs); each arm's figure per round is its ratio to
that round's ``off`` block. The headline is the median over the rounds with a 95% bootstrap
interval, and ``off2`` is a second ``off`` arm: its ratio (A/A) shows the
noise floor of the run, which must be well inside the 1% to be read (more rounds narrow it:
``LANTERN_PROFILER_ROUNDS``, default 40, 3 with ``--quick``). ``LANTERN_PROFILER_HEADLINE=1``
runs only what the headline needs, the standard frame's ``off``, ``off2`` and ``on`` arms, in
100 rounds of 96-frame blocks (the goal's verdict: on the H200 its A/A arm lies within
+-0.36%, where the full section's 40 rounds of 24 frames read +-0.7-1.1%: the noise is the GPU
clock's drift between blocks, which longer blocks average out). ``LANTERN_PROFILER_FRAMES``
sets the timed frames of a block (default 24, 96 for the headline run).

Arms (standard frame; the s02 cases run the first six and ``draws``):

* ``off``, ``off2``: no profiler (no query set, no timestamp, no CPU scope).
* ``on``: ``--gpu-profile --profile`` (the defaults: encoder timestamps shared at pass
  boundaries, resolved two frames later, transitions sampled every 16th frame).
* ``gpu``: ``--gpu-profile`` only; ``cpu``: ``--profile`` only.
* ``legacy``: ``--gpu-profile`` as it was before issue 31: a timestamp pair per pass,
  resolved at the end of its own frame (the same-run "before").
* ``end-resolve``: resolved at the frame's own end (else as ``gpu``); ``pairs``: a pair per
  pass (else as ``gpu``); ``no-trans``: no transition sampling; ``pass``: pass-descriptor
  timestamps instead of encoder ones; ``tail``: as many timestamps as ``gpu`` writes, all at
  the frame's end (none at a pass boundary), resolved and read back the same way.
* ``draws``: ``--gpu-profile draws --profile`` (per-draw timing; its extra CPU per frame is
  printed against ``on``; the per-draw sums against their pass's time: the truth check).

Differences of arms then say where ``gpu``'s time goes: ``no-trans - tail`` the timestamps'
place at pass boundaries, ``tail - off`` writing, resolving and copying them, ``end-resolve - gpu``
the resolve's place, ``pairs - gpu`` the shared boundaries, ``gpu - no-trans`` the transition
samples, ``pass - gpu`` descriptor against encoder timestamps, ``legacy - gpu`` this change.
The ``on`` arm's records give the transitions billed to each pass (the barrier before it,
inside an encoder-timed pass). Goals: GPU <= 1.01x, CPU <= 1.05x (on vs off).
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
from engine.profiling.gpu import GpuProfiler, write_timestamp
from engine.readback import map_read
from engine.telemetry import FrameTimings, Telemetry
from engine.tools.export.jsonl import JsonLinesWriter
from samples.s02_custom_pass import WorkPasses

FORMAT = "rgba8unorm"
IN_FLIGHT = 2  # frames submitted and unfinished, at most (a presenting loop's 2-3)
STANDARD_ARMS = (
    "off", "off2", "on", "gpu", "cpu", "legacy",
    "end-resolve", "pairs", "no-trans", "pass", "tail", "draws",
)  # fmt: skip
SMALL_ARMS = ("off", "off2", "on", "gpu", "cpu", "legacy", "draws")
HEADLINE_ARMS = ("off", "off2", "on")  # LANTERN_PROFILER_HEADLINE=1: the goal's arms alone
#: (label, arm, minus arm): where the gpu arm's time goes
BREAKDOWN = (
    ("timestamps at pass boundaries, not all at the frame's end", "no-trans", "tail"),
    ("writing, resolving and copying them (at the frame's end)", "tail", "off"),
    ("resolving at the frame's end, not two frames later", "end-resolve", "gpu"),
    ("a timestamp pair per pass, not shared boundaries", "pairs", "gpu"),
    ("transition samples (descriptor timestamps every 16th frame)", "gpu", "no-trans"),
    ("pass-descriptor timestamps, not encoder ones", "pass", "gpu"),
    ("the profiler before issue 31 (legacy) against now (gpu)", "legacy", "gpu"),
)


class Stopwatch:
    """Two timestamps bracketing a block of frames, in command buffers of their own."""

    def __init__(self, device):
        self.device = device
        self.qs = device.create_query_set(label="stopwatch", type="timestamp", count=2)
        usage = wgpu.BufferUsage.QUERY_RESOLVE | wgpu.BufferUsage.COPY_SRC
        self.resolve = device.create_buffer(label="stopwatch", size=16, usage=usage)

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
        return enc.finish()

    def read_ms(self) -> float:
        """The block's GPU milliseconds (waits for the queue: between blocks only)."""
        b, e = np.frombuffer(self.device.queue.read_buffer(self.resolve), np.uint64).tolist()
        return (e - b) / 1e6


class Fences:
    """At most ``IN_FLIGHT`` frames unfinished: each frame's last command buffer copies 4
    bytes into a mappable buffer, and before a frame the one of ``IN_FLIGHT`` frames ago is
    mapped (a wait for the GPU, outside every timed span, the same in every arm)."""

    def __init__(self, device):
        self.device = device
        self.src = device.create_buffer(size=4, usage=wgpu.BufferUsage.COPY_SRC)
        usage = wgpu.BufferUsage.MAP_READ | wgpu.BufferUsage.COPY_DST
        self.bufs = [device.create_buffer(size=4, usage=usage) for _ in range(IN_FLIGHT + 1)]
        self.used = [False] * len(self.bufs)

    def wait(self, index: int) -> None:
        k = index % len(self.bufs)
        if self.used[k]:
            map_read(self.bufs[k], 4).sync_wait()
            self.bufs[k].unmap()
            self.used[k] = False

    def signal(self, index: int):
        k = index % len(self.bufs)
        enc = self.device.create_command_encoder(label="fence")
        enc.copy_buffer_to_buffer(self.src, 0, self.bufs[k], 0, 4)
        self.used[k] = True
        return enc.finish()


class TailProfiler(GpuProfiler):
    """``tail``: as many timestamps as the real profiler writes (N + 1 for N passes), all at
    the end of the frame, none at a pass boundary; resolved and read back as the real one.
    Its readings mean nothing; its cost is what writing them costs away from the passes."""

    def begin_pass(self, name: str, kind: str, encoder) -> None:
        rec = self._rec
        if rec is not None:
            if len(rec.names) < self.capacity:
                rec.names.append(name)
            else:
                rec.dropped += 1

    def end_pass(self, name: str, kind: str, encoder) -> None:
        pass

    def end_frame(self, encoder) -> None:
        rec = self._rec
        if rec is not None and rec.names:
            rec.shared = True
            qs = self._pools[rec.pool][0]
            for i in range(rec.queries):
                write_timestamp(encoder, qs, i)
        super().end_frame(encoder)


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

    def __init__(self, name, graph, output, update=None, arms=SMALL_ARMS):
        self.name, self.graph, self.output = name, graph, output
        self.update = update or (lambda ctx: None)
        self.arms = arms


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
    arms = HEADLINE_ARMS if _headline_only() else STANDARD_ARMS
    return _Case(name, graph, target.view, update, arms)


def _headline_only() -> bool:
    return os.environ.get("LANTERN_PROFILER_HEADLINE", "") not in ("", "0")


def _sink(gpu, arm: str):
    """The profiler sink of one arm (None: no profiler)."""
    g = {"gpu": True, "cpu": False}
    if arm in ("off", "off2"):
        return None
    if arm == "on":
        return FrameProfiler(gpu, gpu=True, cpu=True)
    if arm == "cpu":
        return FrameProfiler(gpu, gpu=False, cpu=True)
    if arm == "draws":
        return FrameProfiler(gpu, gpu=True, cpu=True, draws=True)
    if arm == "pass":
        return FrameProfiler(gpu, **g, timestamps="pass")
    options = {
        "gpu": {},
        "legacy": {"resolve_delay": 0, "shared_boundaries": False},
        "end-resolve": {"resolve_delay": 0},
        "pairs": {"shared_boundaries": False},
        "no-trans": {"transition_every": 0},
        "tail": {},
    }[arm]
    sink = FrameProfiler(gpu, **g, gpu_options=options)
    if arm == "tail":
        sink.gpu = TailProfiler(gpu, mode=sink.gpu.mode, transition_every=0)
    return sink


def _measure(gpu, case, *, frames, warm, rounds):
    """Per arm: ``gpu`` ms per frame of each round's block, ``cpu`` ms of each timed frame
    (and the round it belongs to), and the telemetry records of the run."""
    dev = gpu.device
    watch, fences = Stopwatch(dev), Fences(dev)
    encoder_arms = ("tail", "pairs")  # meaningful only with encoder timestamps
    arms = [a for a in case.arms if a not in encoder_arms or gpu.has_encoder_timestamps]
    sinks = {a: _sink(gpu, a) for a in arms}
    gpu_ms = {a: [] for a in arms}
    cpu_ms = {a: [] for a in arms}
    loop = FrameLoop(gpu, case.graph)
    index = 0
    for r in range(rounds + 1):  # round 0 warms up (shader JIT, first maps): not kept
        # rotated by one every two rounds and alternating in direction: linear drift
        # cancels within two rounds, and each arm takes each place in the order (after a
        # drain, after another arm) equally often, so no arm pays a place's cost
        k = (r // 2) % len(arms)
        rotated = arms[k:] + arms[:k]
        order = rotated if r % 2 == 0 else rotated[::-1]
        for arm in order:
            case.graph.profiler = sinks[arm]
            cpu = []
            for k in range(warm + frames):
                fences.wait(index)
                before = [watch.begin()] if k == warm else []
                after = [fences.signal(index)] + ([watch.end()] if k == warm + frames - 1 else [])
                t0 = time.perf_counter_ns()
                # every arm of a round draws the same frames (the same camera times): the
                # rounds' ratios compare equal work, not different stretches of the path
                t = (r * (warm + frames) + k) / 60
                loop.frame(case.output, t, case.update, before=before, after=after)
                t1 = time.perf_counter_ns()
                if k >= warm:
                    cpu.append((t1 - t0) / 1e6)
                index += 1
            block = watch.read_ms()  # waits for the queue: the drain between blocks
            for k in range(len(fences.used)):
                fences.wait(k)
            if r > 0:
                gpu_ms[arm].append(block / frames)
                cpu_ms[arm].append(cpu)
    for arm in ("on", "draws"):  # publish what is in flight (per-draw records too)
        if arm in sinks:
            case.graph.profiler = sinks[arm]
            loop.drain()
    case.graph.profiler = None
    return gpu_ms, cpu_ms, list(loop.telemetry.history)


def _ci(values, stat=np.median, n: int = 2000, seed: int = 1) -> tuple[float, float, float]:
    """``(stat, low, high)``: ``stat`` of ``values`` and its 95% bootstrap interval."""
    v = np.asarray(values, np.float64)
    if len(v) < 2:
        x = float(stat(v)) if len(v) else float("nan")
        return x, x, x
    idx = np.random.default_rng(seed).integers(0, len(v), (n, len(v)))
    boot = stat(v[idx], axis=1)
    return float(stat(v)), float(np.percentile(boot, 2.5)), float(np.percentile(boot, 97.5))


def _report(case, gms, cms, records) -> None:
    graph = case.graph
    names = graph.pass_names()
    rounds = len(gms["off"])
    print(f"[{case.name}] {len(names)} passes: {', '.join(names)}", flush=True)
    frames = len(cms["off"][0]) if cms["off"] else 0
    print(
        f"  {rounds} rounds x {frames} timed frames per arm, arms alternating forward and "
        f"backward; frames back to back, <= {IN_FLIGHT} in flight"
    )
    off_g = np.array(gms["off"])
    off_c = np.array([statistics.mean(c) for c in cms["off"]])
    print("  GPU ms per frame, median over rounds (min .. max); ratio to off, median of the")
    print("  rounds' ratios [95% CI]; CPU: the same of each round's mean frame (a map every 8th")
    print("  frame included):")
    for arm in gms:
        g = np.array(gms[arm])
        c = np.array([statistics.mean(x) for x in cms[arm]])
        rg, lo, hi = _ci(g / off_g)
        rc, clo, chi = _ci(c / off_c)
        us = (np.median(g - off_g)) * 1e3
        print(
            f"    {arm:<12} GPU {np.median(g):8.3f} ({g.min():.3f} .. {g.max():.3f})  "
            f"{rg:7.4f}x [{lo:.4f}, {hi:.4f}] {us:+7.1f} us   "
            f"CPU {np.median(c):7.3f}  {rc:6.3f}x [{clo:.3f}, {chi:.3f}]"
        )
    _, lo, hi = _ci(np.array(gms["off2"]) / off_g)
    half = max(1 - lo, hi - 1) * 100
    print(
        f"  resolution: off2/off (nothing differs) lies within +-{half:.3f}% (95% CI); a "
        f"difference of 1% is {'resolved' if half < 0.5 else 'NOT resolved: more rounds'}"
    )
    g, lo, hi = _ci(np.array(gms["on"]) / off_g)
    if half >= 0.5:  # the A/A arm moves as much as the goal: no verdict either way
        verdict = "undecided: this run does not resolve 1% (more rounds)"
    else:
        verdict = "met" if hi <= 1.01 else ("not met" if lo > 1.01 else "undecided at this noise")
    print(f"  goal GPU on/off <= 1.01x: {g:.4f}x [{lo:.4f}, {hi:.4f}]: {verdict}")
    c, clo, chi = _ci(np.array([statistics.mean(x) for x in cms["on"]]) / off_c)
    print(f"  goal CPU on/off <= 1.05x: {c:.3f}x [{clo:.3f}, {chi:.3f}]")
    parts = [b for b in BREAKDOWN if b[1] in gms and b[2] in gms]
    if parts:
        print("  where the gpu arm's GPU time goes (differences of arms, us per frame, median")
        print("  of the rounds [95% CI]):")
        for label, a, b in parts:
            d, lo, hi = _ci((np.array(gms[a]) - np.array(gms[b])) * 1e3)
            print(f"    {label:<62} {a} - {b}: {d:+7.2f} [{lo:+.2f}, {hi:+.2f}]")
    _transitions(records, names)
    if "draws" in gms and "gpu" in gms:
        c_d, c_g = (
            np.median([np.median(x) for x in cms["draws"]]),
            np.median([np.median(x) for x in cms["gpu"]]),
        )
        g_d, g_g = np.median(gms["draws"]), np.median(gms["gpu"])
        fr = max(c_d, g_d) / max(c_g, g_g)
        print(
            f"  --gpu-profile draws vs --gpu-profile: CPU {c_d:.3f} vs {c_g:.3f} ms "
            f"({c_d / c_g:.2f}x), GPU {g_d:.3f} vs {g_g:.3f} ms ({g_d / g_g:.2f}x); frame time "
            f"(the larger of CPU and GPU) {fr:.3f}x ({'within' if fr <= 1.5 else 'OVER'} the "
            "1.5x goal)"
        )


def _transitions(records, names) -> None:
    """Transitions billed to each pass (encoder timestamps include the barrier before the
    pass), the newest estimate in the ``on`` arm's records, beside the pass's mean time."""
    timed = [r for r in records if r.gpu and r.transitions and not r.draw_passes()]
    if not timed:
        return
    last = timed[-1].transitions
    per = {n: [] for n in names}
    for r in timed:
        for sc in r.gpu:
            if sc.name in per:
                per[sc.name].append((sc.end_ns - sc.begin_ns) / 1e6)
    total = sum(v for v in last.values() if v > 0) / 1e3
    print(
        f"  transitions billed to passes (encoder span - descriptor span, newest estimate; "
        f"in the passes' own figures, not added by the profiler): {total:.1f} us a frame"
    )
    for name in names:
        if name in last and per[name]:
            print(
                f"    {name:<14} pass {statistics.mean(per[name]):8.4f} ms  transition "
                f"{last[name] / 1e3:+8.2f} us"
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
    # full: the standard frame 40 (+1 warm-up) rounds x 12 arms x (3 + 24) frames ~ 13.3k
    # frames (~75 s at the H200's ~5.5 ms a frame); the s02 cases 30 (+1) rounds x 7 arms x 27
    # frames each; LANTERN_PROFILER_ROUNDS sets the rounds (the s02 cases run 3/4 of them)
    # the headline run: 100 rounds of 96-frame blocks (A/A +-0.36% on the H200, 2.5 minutes)
    full = (100, 96) if _headline_only() else (40, 24)
    rounds = int(os.environ.get("LANTERN_PROFILER_ROUNDS", 3 if quick else full[0]))
    frames = int(os.environ.get("LANTERN_PROFILER_FRAMES", 4 if quick else full[1]))
    std = {"frames": frames, "warm": 1 if quick else 3, "rounds": rounds}
    small = {**std, "rounds": max(3, rounds * 3 // 4)}
    std_n, std_size = (2_000, (320, 180)) if quick else (100_000, (1920, 1080))
    size = (320, 180) if quick else (1280, 720)
    tex = dev.create_texture(
        size=(*size, 1), format=FORMAT, usage=wgpu.TextureUsage.RENDER_ATTACHMENT
    )
    output = tex.create_view()
    cases = [
        (lambda: _standard_case(gpu, std_n, std_size), std),
        (
            lambda: _Case(
                f"s02, {size[0]}x{size[1]}",
                _work_graph(dev, size, iterations=64, grid=256, extra_passes=0),
                output,
            ),
            small,
        ),
        (
            lambda: _Case(
                f"s02 + 10 tiny passes, {size[0]}x{size[1]}",
                _work_graph(dev, size, iterations=64, grid=256, extra_passes=10),
                output,
            ),
            small,
        ),
    ]
    if _headline_only():
        cases = cases[:1]
    t_all = time.perf_counter()
    for i, (make, plan) in enumerate(cases):
        t0 = time.perf_counter()
        case = make()
        gms, cms, records = _measure(gpu, case, **plan)
        _report(case, gms, cms, records)
        if i == 0:
            _telemetry_cost(records)
            _draw_truth(records)
        _draw_recording_cpu(records)
        print(f"  ({time.perf_counter() - t0:.0f} s for this case)", flush=True)
    if not _headline_only():
        _known_draw_costs(quick)
    print(f"  profiler section: {time.perf_counter() - t_all:.0f} s")


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
