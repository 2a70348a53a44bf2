"""Hot reload: latency from saving a shader to the new pipeline drawing, and what watching
costs a frame when nothing changes.

    python tools/bench.py reload [--quick]

s02 (a compute and a render pipeline from one module, 320x180, grid 64) runs frame after
frame on a temporary copy of its shader with the watcher on, as a window run would. Each
trial saves the file (a constant changed, so the code always differs), then keeps rendering:
the latency ends when the first frame recorded with the new pipelines has been submitted
and the GPU finished it. It splits into the watcher's delay (the save to the event reaching
the frame thread's queue: ``STEP_MS`` of quiet is part of it), the wait for the frame in
flight, and the rebuild itself (module, pipelines, bind groups). Idle cost: the per-frame
hook with nothing queued, ``PipelineHandle.get`` against a plain attribute read, and the
CPU the watcher thread uses per second of idling.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import tempfile
import time
import timeit
from pathlib import Path
from types import SimpleNamespace

from engine.commands import CommandRegistry
from engine.graph import RenderGraph
from engine.loop import FrameLoop
from engine.shader_registry import ShaderRegistry, set_shader_registry
from engine.shaders import SHADER_DIR
from engine.surfaces import OffscreenTarget
from engine.tool import ToolContext
from engine.tools.reload.watch import STEP_MS, HotReload
from samples.s02_custom_pass import CustomPass

SIZE = (320, 180)
MARK = "vec3<f32>(0.02, 0.02, 0.04)"


def run(gpu, args) -> None:
    folder = Path(tempfile.mkdtemp(prefix="lantern-reload-"))
    shutil.copy(SHADER_DIR / "s02_work.wgsl", folder / "s02_work.wgsl")
    file = folder / "s02_work.wgsl"
    registry = ShaderRegistry(gpu.device, root=folder)
    previous = set_shader_registry(gpu.device, registry)
    try:
        target = OffscreenTarget(gpu.device, SIZE)
        graph = RenderGraph(gpu.device, output_format=target.format, size=SIZE)
        sample = CustomPass(SimpleNamespace(args=argparse.Namespace(grid=64, work=64), gpu=gpu))
        sample.build(graph)
        loop = FrameLoop(gpu, graph)
        ctx = ToolContext(gpu, graph, loop.telemetry, CommandRegistry(), loop)
        tool = ctx.install(HotReload(registry, enabled=True))
        tool.wait_ready()
        frame = _framer(loop, sample, target)
        for _ in range(10):
            frame()
        _latency(target, tool, sample, file, frame, 5 if args.quick else 20)
        _idle(tool, sample, frame, 1.0 if args.quick else 3.0)
        ctx.close_all()
    finally:
        set_shader_registry(gpu.device, previous)
        shutil.rmtree(folder, ignore_errors=True)


def _framer(loop, sample, target):
    """One frame, then a wait for the GPU (one frame in flight, as vsync keeps a window
    run; without it lavapipe queues frames and the latency measures the queue)."""
    import wgpu

    u = wgpu.BufferUsage
    fence = loop.gpu.device.create_buffer(size=16, usage=u.COPY_SRC | u.COPY_DST)

    def frame():
        loop.frame(target.view, loop.index / 60, sample.update)
        loop.gpu.device.queue.read_buffer(fence)

    return frame


def _latency(target, tool, sample, file, frame, trials: int) -> None:
    text = file.read_text()
    total, watcher, rebuild, frames = [], [], [], []
    for i in range(trials):
        version = sample.passes.shader.version
        t0 = time.perf_counter()
        file.write_text(text.replace(MARK, f"vec3<f32>(0.02, 0.02, {0.04 + 1e-4 * (i + 1):.4f})"))
        n = 0
        while sample.passes.shader.version == version:
            frame()
            n += 1
            if time.perf_counter() - t0 > 10:
                raise RuntimeError("no reload within 10 s: is the watcher running?")
        frame()  # the first frame drawn with the new pipelines
        target.read_rgba()  # waits for that frame on the GPU
        total.append((time.perf_counter() - t0) * 1e3)
        watcher.append((tool.last_event_s - t0) * 1e3)
        rebuild.append(sample.passes.shader.build_ms)
        frames.append(n)
    med = statistics.median
    print(
        f"reload latency, save -> new pipeline drawn (GPU done), s02 {SIZE[0]}x{SIZE[1]}, "
        f"{trials} trials: median {med(total):.1f} ms (min {min(total):.1f}, "
        f"max {max(total):.1f})"
    )
    print(
        f"  watcher delay {med(watcher):.1f} ms (includes {STEP_MS} ms of quiet), rebuild "
        f"{med(rebuild):.1f} ms (2 pipelines + bind groups), {med(frames):.0f} frame(s) "
        "rendered meanwhile"
    )


def _idle(tool, sample, frame, seconds: float) -> None:
    n = 200_000
    hook = timeit.timeit(tool.between_frames, number=n) / n * 1e9
    get = timeit.timeit(sample.passes.shader.get, number=n) / n * 1e9
    attr = timeit.timeit(lambda: sample.passes.shader.source, number=n) / n * 1e9
    print(f"idle per frame: between-frames hook {hook:.0f} ns; handle.get() {get:.0f} ns "
          f"(a plain attribute read through a lambda: {attr:.0f} ns)")  # fmt: skip
    on = _idle_cpu(seconds)  # the process idles: the watcher thread runs (and wgpu's own)
    tool.stop()
    off = _idle_cpu(seconds)
    tool.start()
    extra = max(0.0, on - off)
    print(f"idle watcher thread: {extra:.0f} us CPU per second over an idle process "
          f"({on:.0f} with it, {off:.0f} without; {extra / 60:.1f} us per frame at 60 FPS, "
          "on another thread)")  # fmt: skip


def _idle_cpu(seconds: float) -> float:
    """Process CPU microseconds per wall second while this thread sleeps."""
    cpu0, t0 = time.process_time(), time.perf_counter()
    time.sleep(seconds)
    return (time.process_time() - cpu0) / (time.perf_counter() - t0) * 1e6
