"""Cull benchmark: CPU time to record a frame vs instance count, and GPU time of the cull
passes, the depth pyramid and the whole frame at 1920x1080 (printed figures, no pass/fail).

Goals (H200): record(1M) <= 1.2 x record(1k); Cull.Early + Cull.Late <= 0.1 ms; HiZ <= 0.05 ms.
The pyramid is also timed alone (its own compute pass, same depth), single-pass vs one dispatch
per level, interleaved, so one run shows what the dispatch count costs.
"""

from __future__ import annotations

import statistics
import time

SIZE = (1920, 1080)


def _setup(gpu, n: int, profile: bool):
    from engine.frame import StandardFrame
    from engine.graph import RenderGraph
    from engine.loop import FrameLoop
    from engine.scene.procedural import city
    from engine.surfaces import OffscreenTarget

    scene, path = city(n, seed=0)
    target = OffscreenTarget(gpu.device, SIZE)
    graph = RenderGraph(gpu.device, output_format=target.format, size=SIZE)
    frame = StandardFrame(gpu, graph, scene)
    if profile:
        from engine.profiling import FrameProfiler

        graph.profiler = FrameProfiler(gpu, gpu=True, cpu=False)
    return frame, graph, target, path, FrameLoop(gpu, graph)


def _frames(gpu, frame, graph, target, path, loop, count: int) -> list[float]:
    """Render ``count`` frames through the frame loop; return the CPU ms of each (update,
    record, submit, collect)."""
    times = []
    for i in range(count):
        t0 = time.perf_counter()
        loop.frame(target.view, 4.0 + i / 60, lambda ctx: frame.update(ctx, path.at(ctx.time)))
        times.append((time.perf_counter() - t0) * 1e3)
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
    frame, graph, target, path, loop = _setup(gpu, n, profile=True)
    _frames(gpu, frame, graph, target, path, loop, frames)
    loop.drain()
    hist = [t for t in loop.telemetry.history if t.gpu][2:]
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
    for name in ("Shadow.Cull", "Cull.Early", "Cull.Late", "HiZ", "Shadow.C0", "Main.Early",
                 "Main.Late", "Post"):  # fmt: skip
        if name in med:
            print(f"  {name:<12} {med[name]:8.3f} ms")
    print(f"  cull phases  {both:8.3f} ms (goal <= 0.1 on H200)")
    p = frame.pyramid
    shape = f"{p.dispatches} dispatches for {p.levels} levels, level 0 {p.base[0]}x{p.base[1]}"
    print(f"  pyramid      {med.get('HiZ', 0.0):8.3f} ms (goal <= 0.05 on H200); {shape}")
    print(f"  frame        {med['frame']:8.3f} ms (first pass begin to last pass end)")
    c = loop.telemetry.latest.cull
    if c is not None:
        print(f"  {c.report()}")
    _pyramid_alone(gpu, graph, 12 if quick else 60)


def _pyramid_alone(gpu, graph, reps: int) -> None:
    """GPU ms of the pyramid build alone from the last frame's depth: single-pass vs per-level
    (each build in its own timestamped compute pass, the two interleaved; medians)."""
    import numpy as np
    import wgpu

    from engine.passes.hiz import DepthPyramid

    d = gpu.device
    builds = [DepthPyramid(d, SIZE, per_level=True), DepthPyramid(d, SIZE, per_level=False)]
    n = 2 * len(builds) * reps
    qs = d.create_query_set(type="timestamp", count=n)
    res = d.create_buffer(
        size=8 * n, usage=wgpu.BufferUsage.QUERY_RESOLVE | wgpu.BufferUsage.COPY_SRC
    )
    depth = graph.view("frame.depth")
    enc = d.create_command_encoder()
    q = 0
    for _ in range(reps):
        for b in builds:
            tw = {
                "query_set": qs,
                "beginning_of_pass_write_index": q,
                "end_of_pass_write_index": q + 1,
            }
            cp = enc.begin_compute_pass(timestamp_writes=tw)
            b.record(cp, depth)
            cp.end()
            q += 2
    enc.resolve_query_set(qs, 0, n, res, 0)
    d.queue.submit([enc.finish()])
    t = np.frombuffer(d.queue.read_buffer(res), np.uint64).reshape(reps, len(builds), 2)
    ms = np.median((t[..., 1] - t[..., 0]).astype(np.float64), axis=0) / 1e6
    print(f"  pyramid alone ({SIZE[0]}x{SIZE[1]}, median of {reps}, interleaved):")
    for b, m in zip(builds, ms, strict=True):
        kind = "per-level  " if b.per_level else "single-pass"
        print(f"    {kind} {m:8.3f} ms  {b.dispatches:2d} dispatches")
