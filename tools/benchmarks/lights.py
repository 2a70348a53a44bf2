"""Local lights (issue 29): GPU time of the light assignment (``Lights.Cluster``) for 16,384
lights and of the passes that shade them, per light path (plain forward at ``FORWARD_MAX``
lights: it shades every light in every fragment); and the CPU cost of a frame at 1
vs 65,536 lights (printed figures, no pass/fail).

The procedural city at night (``CITY`` instances) with its street lights and lit windows
(``engine.scene.city_lights``), from a fixed street-level camera, at 1920x1080 (``--quick``:
320x180, 256 and 4,096 lights, fewer frames, for a software rasteriser).

CPU per frame is the frame thread's CPU time of the frame loop's update + record + submit
(the light set uploads only changed rows, so it should not grow with the count: the goal is
CPU(65,536) <= 1.1 x CPU(1)), both frames built first and then run in turns of ``FRAMES``
frames (``CPU_ROUNDS``); the benchmark waits for the GPU outside the timed span so a software
GPU keeps in step. GPU figures are medians over the frames after ``WARMUP``.
"""

from __future__ import annotations

import statistics
import time

SIZE, QUICK_SIZE = (1920, 1080), (320, 180)
CITY, QUICK_CITY = 20_000, 2_000
ASSIGN, QUICK_ASSIGN = 16_384, 256
CPU_COUNTS, QUICK_CPU_COUNTS = (1, 65_536), (1, 4_096)
FRAMES, QUICK_FRAMES = 30, 8
WARMUP = 3
CPU_ROUNDS = 3  # blocks of FRAMES frames per light count, taking turns
FORWARD_MAX = 256  # lights the forward path is timed with (it has no culling to measure)
PASSES = ("Lights.Reset", "Lights.Cluster", "Main.Early", "Main.Late", "Lights.Deferred",
          "Transparent")  # fmt: skip


def _setup(gpu, size, instances: int, lights: int, path: str, profile: bool):
    from engine.frame import StandardFrame
    from engine.graph import RenderGraph
    from engine.loop import FrameLoop
    from engine.scene.city_lights import add_city_lights
    from engine.scene.procedural import city
    from engine.settings import FrameSettings
    from engine.surfaces import OffscreenTarget

    scene, cam_path = city(instances, seed=0)
    add_city_lights(scene, lights, seed=0)
    target = OffscreenTarget(gpu.device, size)
    graph = RenderGraph(gpu.device, output_format=target.format, size=size)
    settings = FrameSettings(night=True, light_path=path)
    frame = StandardFrame(gpu, graph, scene, settings)
    if profile:
        from engine.profiling import FrameProfiler

        graph.profiler = FrameProfiler(gpu, gpu=True, cpu=False)
    return frame, target, cam_path.at(0.0), FrameLoop(gpu, graph)


def _frames(gpu, frame, target, camera, loop, count: int, start: int = 0) -> list[float]:
    """``count`` frames; the frame thread's CPU ms of each (update, record, submit: thread
    time, so neither a wait nor another process's turn on the core counts), the GPU waited
    for after the timed span."""
    times = []
    for i in range(start, start + count):
        t0 = time.thread_time()
        loop.frame(target.view, i / 60, lambda ctx: frame.update(ctx, camera))
        times.append((time.thread_time() - t0) * 1e3)
        gpu.queue.read_buffer(frame.res.lights.counters)  # benchmark only: keep in step
    return times


def run(gpu, args) -> None:
    quick = getattr(args, "quick", False)
    size = QUICK_SIZE if quick else SIZE
    instances = QUICK_CITY if quick else CITY
    n = QUICK_ASSIGN if quick else ASSIGN
    frames = QUICK_FRAMES if quick else FRAMES
    print(f"lights: the night city ({instances:,} instances) at {size[0]}x{size[1]}, "
          f"medians of {frames - WARMUP} frames")  # fmt: skip
    for path in ("clustered", "deferred", "forward"):
        # forward shades every light in every fragment: 16,384 lights take seconds a frame
        # even on an H200 (s05 --sweep stops it past 100 ms); it is timed at FORWARD_MAX
        count = min(n, FORWARD_MAX) if path == "forward" else n
        frame, target, camera, loop = _setup(gpu, size, instances, count, path, profile=True)
        _frames(gpu, frame, target, camera, loop, frames)
        loop.drain()
        hist = [t for t in loop.telemetry.history if t.gpu][WARMUP:]
        if not hist:
            print("  GPU timings: n/a (no timestamp-query)")
            return
        per: dict[str, list[float]] = {}
        for t in hist:
            for s in t.gpu:
                per.setdefault(s.name, []).append(s.duration_ms)
            per.setdefault("frame", []).append((t.gpu[-1].end_ns - t.gpu[0].begin_ns) / 1e6)
        med = {k: statistics.median(v) for k, v in per.items()}
        cells = "  ".join(f"{p} {med[p]:.3f}" for p in PASSES if p in med)
        print(f"  {path:<9} {count:,} lights: {cells}  frame {med['frame']:.3f} ms GPU")
        stats = frame.res.light_stats.latest
        if path == "clustered":
            print(f"    Lights.Cluster {med.get('Lights.Cluster', 0.0):.3f} ms for {n:,} lights "
                  "(goal <= 0.1 ms on the H200 at 16,384)")  # fmt: skip
            if stats is not None:
                print(f"    {stats.line()}")
    # both frames built first, then blocks of each in turn (ROUNDS): neither the order nor
    # the other frame's garbage favours one count
    counts = QUICK_CPU_COUNTS if quick else CPU_COUNTS
    rigs = {c: _setup(gpu, size, instances, c, "clustered", False) for c in counts}
    cpu: dict[int, list[float]] = {c: [] for c in counts}
    for r in range(CPU_ROUNDS):
        for c, rig in rigs.items():
            cpu[c] += _frames(gpu, *rig, frames, start=r * frames)[WARMUP:]
    (a, ta), (b, tb) = ((c, statistics.median(t)) for c, t in cpu.items())
    print(f"  CPU per frame (update + record + submit, clustered): {a:,} light(s) {ta:.3f} ms, "
          f"{b:,} lights {tb:.3f} ms = {tb / ta:.2f}x (goal <= 1.1x)")  # fmt: skip
