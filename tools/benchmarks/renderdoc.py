"""What wgpu's ``Debug`` instance flag costs (issue 27): the flag that lets RenderDoc show
Lantern's pass markers, draw groups and resource names.

    python tools/bench.py renderdoc [--quick]

Instance flags are per process, so every measurement runs in a process of its own, the two
arms taking turns (off, on, off, on, ...) so that a change of machine load weighs on both.
Each process builds the standard frame over a procedural city and prints:

* start-up: adapter, device and the standard frame (its pipelines) built, in ms;
* frame CPU: ``FrameLoop.frame`` (update, record, submit) in ms of the frame thread's CPU
  time (``time.thread_time``: a wait or another process's turn on the core does not count),
  median and quartiles, with a sync after each frame outside the measurement (a software
  GPU would fall behind); without profiling (the shipping mode) and with GPU pass timing
  (``--gpu-profile``).

The figures are printed, never judged; the README records the decision they support.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

SIZE = (320, 180)  # the GPU keeps up; what is measured is the CPU side of a frame


def run(gpu, args) -> None:
    quick = getattr(args, "quick", False)
    n, frames, rounds = (1_000, 40, 2) if quick else (10_000, 100, 8)
    results: dict[bool, list[dict]] = {False: [], True: []}
    for _ in range(rounds):
        for debug in (False, True):
            results[debug].append(_spawn(debug, n, frames, args.adapter))
    print(f"standard frame, city of {n:,} instances at {SIZE[0]}x{SIZE[1]}, "
          f"{rounds} processes per arm, {frames} frames each:")  # fmt: skip
    rows = {}
    for debug in (False, True):
        runs = results[debug]
        starts = [r["start_ms"] for r in runs]
        start = statistics.median(starts)
        plain = [t for r in runs for t in r["plain"]]
        prof = [t for r in runs for t in r["profiled"]]
        rows[debug] = (start, statistics.median(plain), statistics.median(prof))
        label = "Debug on " if debug else "Debug off"
        print(f"  {label}: start-up {start:7.1f} ms [{min(starts):.0f}..{max(starts):.0f}]; "
              f"frame CPU {rows[debug][1]:6.3f} ms {_quartiles(plain)} unprofiled, "
              f"{rows[debug][2]:6.3f} ms {_quartiles(prof)} with --gpu-profile")  # fmt: skip
        per = " ".join(f"{statistics.median(r['plain']):.3f}/{statistics.median(r['profiled']):.3f}"
                       for r in runs)  # fmt: skip
        print(f"    per process (unprofiled/profiled median ms): {per}")
    off, on = rows[False], rows[True]
    print(f"  Debug on - off: start-up {on[0] - off[0]:+7.1f} ms; frame CPU "
          f"{on[1] - off[1]:+6.3f} ms ({_pct(on[1], off[1])}) unprofiled, "
          f"{on[2] - off[2]:+6.3f} ms ({_pct(on[2], off[2])}) with --gpu-profile")  # fmt: skip


def _pct(a: float, b: float) -> str:
    return f"{(a - b) / b * 100:+.1f}%" if b > 0 else "n/a"


def _quartiles(values: list[float]) -> str:
    q = statistics.quantiles(values, n=4)
    return f"[{q[0]:.3f}..{q[2]:.3f}]"


def _spawn(debug: bool, n: int, frames: int, adapter: str | None) -> dict:
    """One measuring process (this file run as a script); its figures as a dict."""
    root = Path(__import__("engine").__file__).resolve().parents[1]
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(root), *sys.path]))
    cmd = [sys.executable, __file__, "on" if debug else "off", str(n), str(frames)]
    if adapter:
        cmd.append(adapter)
    out = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=900)
    if out.returncode != 0:
        raise RuntimeError(f"benchmark process failed: {out.stderr.strip()[-2000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def _measure(debug: bool, n: int, frames: int, adapter: str | None) -> dict:
    from engine.frame import StandardFrame
    from engine.gpu import create_gpu, instance_flags, set_instance_flags
    from engine.graph import RenderGraph
    from engine.loop import FrameLoop
    from engine.scene.procedural import city
    from engine.settings import FrameSettings
    from engine.surfaces import OffscreenTarget

    scene, path = city(n, seed=0)
    t0 = time.perf_counter()  # the scene is the same either way: not start-up here
    flags = [f for f in instance_flags() if f != "Debug"]
    set_instance_flags(*flags, *(["Debug"] if debug else []))
    gpu = create_gpu(adapter)
    target = OffscreenTarget(gpu.device, SIZE)
    graph = RenderGraph(gpu.device, output_format=target.format, size=SIZE)
    frame = StandardFrame(gpu, graph, scene, FrameSettings())
    loop = FrameLoop(gpu, graph)
    loop.frame(target.view, 0.0, lambda ctx: frame.update(ctx, path.at(ctx.time)))
    gpu.queue.read_buffer(frame.counters)  # the first frame built every lazy pipeline
    start_ms = (time.perf_counter() - t0) * 1e3
    plain = _frames(gpu, frame, target, path, loop, frames)
    from engine.profiling import FrameProfiler

    graph.profiler = FrameProfiler(gpu, gpu=True, cpu=False)
    profiled = _frames(gpu, frame, target, path, loop, frames)
    loop.drain()
    return {"start_ms": start_ms, "plain": plain, "profiled": profiled}


def _frames(gpu, frame, target, path, loop, count: int) -> list[float]:
    times = []
    for i in range(count + 3):
        t0 = time.thread_time()
        loop.frame(target.view, 1.0 + i / 60, lambda ctx: frame.update(ctx, path.at(ctx.time)))
        times.append((time.thread_time() - t0) * 1e3)
        gpu.queue.read_buffer(frame.counters)  # outside the measurement
    return times[3:]  # the first frames after a switch build pools and bind groups


if __name__ == "__main__":
    on, count, nframes = sys.argv[1] == "on", int(sys.argv[2]), int(sys.argv[3])
    os.environ.setdefault("XDG_RUNTIME_DIR", "/tmp")
    print(json.dumps(_measure(on, count, nframes, sys.argv[4] if len(sys.argv) > 4 else None)))
