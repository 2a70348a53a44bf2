"""Cull benchmark: CPU time to record a frame vs instance count, and GPU time of the cull
passes, the depth pyramid and the whole frame at 1920x1080 (printed figures, no pass/fail).

Goals (H200): record(1M) <= 1.2 x record(1k); Cull.Early + Cull.Late <= 0.1 ms; HiZ <= 0.05 ms.
"""

from __future__ import annotations

import statistics
import time

SIZE = (1920, 1080)


def _setup(gpu, n: int, profile: bool):
    from engine.frame import StandardFrame
    from engine.graph import RenderGraph
    from engine.scene.procedural import city
    from engine.surfaces import OffscreenTarget

    scene, path = city(n, seed=0)
    target = OffscreenTarget(gpu.device, SIZE)
    graph = RenderGraph(gpu.device, output_format=target.format, size=SIZE)
    frame = StandardFrame(gpu, graph, scene)
    prof = None
    if profile:
        from engine.profiling import FrameProfiler

        prof = graph.profiler = FrameProfiler(gpu, gpu=True, cpu=False)
    return frame, graph, target, path, prof


def _frames(gpu, frame, graph, target, path, prof, count: int) -> list[float]:
    """Render ``count`` frames; return the CPU ms of update + record + finish of each."""
    from engine.graph import FrameContext

    times = []
    for i in range(count):
        t0 = time.perf_counter()
        ctx = FrameContext(gpu.device, graph, i, 4.0 + i / 60, graph.size, target.view)
        frame.update(ctx, path.at(ctx.time))
        enc = gpu.device.create_command_encoder()
        graph.execute(enc, ctx)
        cb = enc.finish()
        times.append((time.perf_counter() - t0) * 1e3)
        gpu.queue.submit([cb])
        if prof is not None:
            prof.after_submit()
        gpu.queue.read_buffer(frame.counters)  # benchmark only: keep the software GPU in step
    return times


def run(gpu, args) -> None:
    quick = getattr(args, "quick", False)
    counts = (1_000, 100_000) if quick else (1_000, 100_000, 1_000_000)
    frames = 6 if quick else 20
    base = None
    for n in counts:
        setup = _setup(gpu, n, profile=False)
        t = _frames(gpu, *setup, frames)[2:]
        med = statistics.median(t)
        base = base or med
        print(f"record frame  N={n:>9,}: {med:7.3f} ms CPU (median of {len(t)}), "
              f"{med / base:4.2f}x of N={counts[0]:,}", flush=True)  # fmt: skip
    n = counts[-1]
    frame, graph, target, path, prof = _setup(gpu, n, profile=True)
    _frames(gpu, frame, graph, target, path, prof, frames)
    prof.drain()
    hist = [t for t in prof.history if t.gpu][2:]
    if not hist:
        print("GPU timings: n/a (no timestamp-query)")
        return
    per = {}
    for t in hist:
        for s in t.gpu:
            per.setdefault(s.name, []).append(s.duration_ms)
        per.setdefault("frame", []).append((t.gpu[-1].end_ns - t.gpu[0].begin_ns) / 1e6)
    med = {k: statistics.median(v) for k, v in per.items()}
    both = med.get("Cull.Early", 0.0) + med.get("Cull.Late", 0.0)
    print(f"GPU at N={n:,}, {SIZE[0]}x{SIZE[1]} (median of {len(hist)} frames):")
    for name in ("Shadow.Cull", "Cull.Early", "Cull.Late", "HiZ", "Shadow", "Main.Early",
                 "Main.Late", "Post"):  # fmt: skip
        if name in med:
            print(f"  {name:<12} {med[name]:8.3f} ms")
    print(f"  cull phases  {both:8.3f} ms (goal <= 0.1 on H200)")
    print(f"  pyramid      {med.get('HiZ', 0.0):8.3f} ms (goal <= 0.05 on H200)")
    print(f"  frame        {med['frame']:8.3f} ms (first pass begin to last pass end)")
    c = frame.stats.drain()
    if c is not None:
        print(f"  {c.report()}")
