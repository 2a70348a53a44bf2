"""Post-chain benchmark (issue 17): printed figures, no pass/fail.

1. GPU ms of ``Post.Luminance``, ``Post.Exposure``, ``Post.Bloom``, ``Post.TAA`` and ``Post`` at
   1920x1080, with a bare fullscreen alpha-blended triangle drawn in the same frames (a pass
   after ``Post``) as the raster baseline, so the ratios read on any GPU.
2. CPU us per frame of the graph's history and snapshot bookkeeping (a graph of two empty
   passes with and without a history pair and a snapshot).
3. CPU ms to record the standard frame with the whole post chain (``--exposure auto``, bloom,
   TAA) at 1k / 100k / 1M instances (a sync after each frame), ``StandardFrame.update`` alone,
   and the same frame recorded back to back (no wait before it).

Goals (H200): Luminance + Exposure <= 0.05 ms; Bloom <= 1.5x the blend; TAA <= 1.5x the blend;
bookkeeping <= 20 us; record(100k) <= 2.0 ms CPU; record(1M) <= 1.2x record(1k).
"""

from __future__ import annotations

import statistics
import time

import wgpu

SIZE = (1920, 1080)
POST = ("Post.Luminance", "Post.Exposure", "Post.Bloom", "Post.TAA", "Post")


def _setup(gpu, n: int, *, profile: bool, blend: bool = False):
    from engine.frame import StandardFrame
    from engine.graph import OUTPUT, RenderGraph, RenderPass
    from engine.loop import FrameLoop
    from engine.scene.procedural import city
    from engine.settings import FrameSettings
    from engine.surfaces import OffscreenTarget

    scene, path = city(n, seed=0)
    target = OffscreenTarget(gpu.device, SIZE)
    graph = RenderGraph(gpu.device, output_format=target.format, size=SIZE)
    frame = StandardFrame(gpu, graph, scene, FrameSettings(exposure="auto"))
    if blend:
        from benchmarks.hud import _fullscreen_blend

        def load(ctx):
            att = {"view": ctx.output, "load_op": "load", "store_op": "store"}
            return {"color_attachments": [att]}

        draw = _fullscreen_blend(gpu.device, target.format)
        graph.add(
            RenderPass(
                "Blend", lambda ctx, rp: draw(rp), targets=load, reads=(OUTPUT,), writes=(OUTPUT,)
            )
        )
    if profile:
        from engine.profiling import FrameProfiler

        graph.profiler = FrameProfiler(gpu, gpu=True, cpu=False)
    return frame, graph, target, path, FrameLoop(gpu, graph)


def _frames(gpu, frame, graph, target, path, loop, count: int, sync: bool) -> list[float]:
    times = []
    for i in range(count):
        t0 = time.perf_counter()
        loop.frame(target.view, 4.0 + i / 60, lambda ctx: frame.update(ctx, path.at(ctx.time)))
        times.append((time.perf_counter() - t0) * 1e3)
        if sync:  # a software GPU would fall ever further behind; a real one runs ahead
            gpu.queue.read_buffer(frame.counters)
    return times


def run(gpu, args) -> None:
    quick = getattr(args, "quick", False)
    frames = 8 if quick else 40
    _gpu_costs(gpu, frames)
    _bookkeeping(gpu, 200 if quick else 2000)
    # CPU medians need more frames than GPU ones: a few slow frames (a GC pass, a page of
    # new Python objects) move a median of 37 by a tenth of a millisecond
    _record(gpu, (1_000, 100_000) if quick else (1_000, 100_000, 1_000_000), 8 if quick else 300)


def _gpu_costs(gpu, frames: int) -> None:
    frame, graph, target, path, loop = _setup(gpu, 10_000, profile=True, blend=True)
    _frames(gpu, frame, graph, target, path, loop, frames, sync=False)
    loop.drain()
    hist = [t for t in loop.telemetry.history if t.gpu][3:]
    if not hist:
        print("GPU timings: n/a (no timestamp-query)")
        return
    per: dict[str, list[float]] = {}
    for t in hist:
        for s in t.gpu:
            per.setdefault(s.name, []).append(s.duration_ms)
    med = {k: statistics.median(v) for k, v in per.items()}
    blend = med.get("Blend", 0.0)
    print(f"GPU at {SIZE[0]}x{SIZE[1]}, median of {len(hist)} frames back to back:")
    print(f"  Blend (baseline)   {blend:8.3f} ms  bare fullscreen alpha-blended triangle")
    for name in POST:
        ratio = f"{med[name] / blend:5.2f}x blend" if blend > 0 else ""
        print(f"  {name:<18} {med.get(name, 0.0):8.3f} ms  {ratio}")
    lum = med.get("Post.Luminance", 0.0) + med.get("Post.Exposure", 0.0)
    print(f"  histogram + adaptation {lum:.3f} ms (goal <= 0.05 on H200); "
          f"bloom and TAA goal <= 1.5x blend")  # fmt: skip


def _bookkeeping(gpu, n: int) -> None:
    """execute() CPU of two empty passes: plain, with a history pair (the swap: bookkeeping),
    and with a snapshot read as well (bookkeeping plus the copy command it records, whose
    cost is wgpu-py's ``copy_texture_to_texture`` call: the snapshot's work, not the graph's).
    The three graphs and a bare copy call run interleaved, frame by frame; medians."""
    from engine.graph import FrameContext, RenderGraph, RenderPass, TextureDesc, TransferPass

    d = gpu.device

    def graph(history: bool, snapshot: bool):
        g = RenderGraph(d, output_format="rgba8unorm", size=SIZE)
        usage = wgpu.TextureUsage.RENDER_ATTACHMENT | wgpu.TextureUsage.TEXTURE_BINDING
        g.create_texture("t", TextureDesc("rgba16float", usage), history=history)

        def targets(ctx):
            att = {"view": ctx.graph.view("t"), "load_op": "load", "store_op": "store"}
            return {"color_attachments": [att]}

        g.add(RenderPass("W", lambda ctx, rp: None, targets=targets, writes=("t",)))
        reads = ("t@prev",) if history else ("t",)
        g.add(
            TransferPass("R", lambda ctx, enc: None, reads=reads + (("t@W",) if snapshot else ()))
        )
        return g

    tex = wgpu.TextureUsage
    usage = tex.COPY_SRC | tex.COPY_DST | tex.RENDER_ATTACHMENT
    a, b = (d.create_texture(size=(*SIZE, 1), format="rgba16float", usage=usage) for _ in "ab")
    written = {"view": a.create_view(), "load_op": "load", "store_op": "store"}

    def copy_call(enc, ctx) -> float:
        """The copy command alone, its source just rendered to (as the snapshot's is: the
        same layout transition is recorded with it)."""
        enc.begin_render_pass(color_attachments=[written]).end()
        t0 = time.perf_counter()
        enc.copy_texture_to_texture({"texture": a}, {"texture": b}, (*SIZE, 1))
        return time.perf_counter() - t0

    def timed(g):
        def run(enc, ctx) -> float:
            t0 = time.perf_counter()
            g.execute(enc, ctx)
            return time.perf_counter() - t0

        return run

    runs: dict = {}
    for arm in ((False, False), (True, False), (True, True)):
        g = graph(*arm)
        runs[arm] = (timed(g), FrameContext(d, g, 0, 0.0, SIZE, None))
    runs["copy"] = (copy_call, None)
    ts: dict = {k: [] for k in runs}
    encs = {k: d.create_command_encoder() for k in runs}
    for i in range(n):  # interleaved, so a change of machine load hits every arm alike
        for k, (run, ctx) in runs.items():
            if ctx is not None:
                ctx.frame_index = i
            ts[k].append(run(encs[k], ctx))
        if i % 50 == 49:
            d.queue.submit([e.finish() for e in encs.values()])
            encs = {k: d.create_command_encoder() for k in runs}
    out = {k: statistics.median(v[10:]) * 1e6 for k, v in ts.items()}
    plain, hist, snap = out[False, False], out[True, False], out[True, True]
    copy = out["copy"]
    print(f"graph bookkeeping: execute {plain:6.1f} us plain, {hist:6.1f} us with a history pair "
          f"({hist - plain:+5.1f} us: the swap), {snap:6.1f} us with a snapshot too "
          f"({snap - hist:+5.1f} us, of which the copy command itself {copy:5.1f} us); "
          f"bookkeeping {snap - plain - copy:5.1f} us per frame (goal <= 20)")  # fmt: skip


def _record(gpu, counts, frames: int, rounds: int = 6) -> None:
    """The record figures per instance count. The counts take turns, ``rounds`` rounds of
    ``frames / rounds`` frames each (the first frame after a switch left out), so a shared
    host whose load changes during the run weighs on every count alike; each line gives
    the median and, in brackets, the quartiles."""
    rigs = {n: _setup(gpu, n, profile=False) for n in counts}
    per = max(frames // rounds, 4)
    synced, ups, warm = ({n: [] for n in counts} for _ in range(3))
    for _ in range(rounds):
        for n, (frame, graph, target, path, loop) in rigs.items():
            synced[n] += _frames(gpu, frame, graph, target, path, loop, per + 1, sync=True)[1:]
            ups[n] += _updates(gpu, frame, graph, path, per)
            warm[n] += _back_to_back(gpu, frame, target, path, loop, per)
    base = statistics.median(synced[counts[0]])
    for n in counts:
        med = statistics.median(synced[n])
        print(f"record frame with post chain N={n:>9,}: {med:7.3f} ms CPU {_quartiles(synced[n])} "
              f"(median of {len(synced[n])}), {med / base:4.2f}x of N={counts[0]:,}; "
              f"update {statistics.median(ups[n]):.3f} ms; {statistics.median(warm[n]):.3f} ms "
              f"thread CPU back to back {_quartiles(warm[n])}", flush=True)  # fmt: skip


def _quartiles(values: list[float]) -> str:
    q = statistics.quantiles(values, n=4)
    return f"[{q[0]:.3f}..{q[2]:.3f}]"


def _updates(gpu, frame, graph, path, count: int) -> list[float]:
    """Wall ms of ``StandardFrame.update`` alone (no graph recorded between)."""
    out = []
    for i in range(count):
        ctx = _ctx(gpu, graph, i)
        cam = path.at(ctx.time)
        t0 = time.perf_counter()
        frame.update(ctx, cam)
        out.append((time.perf_counter() - t0) * 1e3)
    return out


def _back_to_back(gpu, frame, target, path, loop, frames: int, every: int = 4) -> list[float]:
    """Thread CPU ms of frames recorded right after another frame (a sync every ``every``
    frames; the frame after each sync is left out): what a game loop whose GPU runs ahead
    pays, without the wake-up after a wait that the figure above includes. On a software
    GPU its threads share the cores meanwhile: read it on a real GPU."""
    t = []
    for i in range(frames * every // (every - 1) + every):
        t0 = time.thread_time()  # CPU time: a submit that waits for the GPU does not count
        loop.frame(target.view, 9.0 + i / 60, lambda ctx: frame.update(ctx, path.at(ctx.time)))
        if i % every:
            t.append((time.thread_time() - t0) * 1e3)
        else:
            gpu.queue.read_buffer(frame.counters)
    return t


def _ctx(gpu, graph, i: int):
    from engine.graph import FrameContext

    return FrameContext(gpu.device, graph, i, 4.0 + i / 60, SIZE, None)
