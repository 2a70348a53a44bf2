"""Shared pieces of the profiler tests: compute passes with known work, a frame rig."""

from __future__ import annotations

import numpy as np
import wgpu

from engine.graph import ComputePass, RenderGraph
from engine.loop import FrameLoop
from engine.telemetry import Telemetry
from engine.tools.export.report import shutdown_report
from samples.s02_custom_pass import WorkPasses, work_pipelines

_SHADERS: dict[int, object] = {}  # device -> s02's pipelines, compiled once per device


def work_pass(device, name: str, iterations: int, grid: int = 128) -> ComputePass:
    """A compute pass running s02's loop ``iterations`` times on each of ``grid**2`` cells:
    its GPU cost is proportional to ``iterations`` (no early exit)."""
    shader = _SHADERS.get(id(device))
    if shader is None:
        shader = _SHADERS[id(device)] = work_pipelines(device, "rgba8unorm")
    return WorkPasses(device, "rgba8unorm", grid, iterations=iterations, shader=shader).work(name)


def compute_graph(device, passes) -> RenderGraph:
    graph = RenderGraph(device, output_format="rgba8unorm", size=(64, 64))
    for p in passes:
        graph.add(p)
    return graph


def wait_idle(device) -> None:
    """Block until the queue is idle (test-side only: a tiny read_buffer waits for it)."""
    buf = device.create_buffer(size=4, usage=wgpu.BufferUsage.COPY_SRC)
    device.queue.read_buffer(buf)


class Rig:
    """A graph with a profiler driven by the one frame loop (``engine.loop.FrameLoop``), the
    way ``engine.app`` drives it; records land in ``telemetry``."""

    def __init__(self, gpu, graph: RenderGraph, prof, *, history: int = 300):
        self.gpu, self.graph, self.prof = gpu, graph, prof
        graph.profiler = prof
        self.loop = FrameLoop(gpu, graph, telemetry=Telemetry(history=history))
        self.telemetry = self.loop.telemetry
        if prof is not None:
            self.telemetry.update_session(profiling=prof.session_info(graph))

    def run(self, frames: int = 1, *, idle: bool = False) -> None:
        """Record and submit ``frames`` frames; ``idle`` waits for the queue after each."""
        for _ in range(frames):
            self.loop.frame(None, 0.0)
            if idle:
                wait_idle(self.gpu.device)

    def drain(self) -> list:
        """Shutdown: publish what is in flight; every record so far, oldest first."""
        self.loop.drain()
        return list(self.telemetry.history)

    def report(self) -> str:
        return shutdown_report(self.telemetry)


def measure_work_ms(gpu, iterations: int, grid: int = 256) -> float:
    """GPU milliseconds of one work pass, measured with a blocking read (test-side only)."""
    dev = gpu.device
    qs = dev.create_query_set(type="timestamp", count=2)
    resolved = dev.create_buffer(
        size=16, usage=wgpu.BufferUsage.QUERY_RESOLVE | wgpu.BufferUsage.COPY_SRC
    )
    p = work_pass(dev, "Calibrate", iterations, grid)
    encoder = dev.create_command_encoder()
    cpass = encoder.begin_compute_pass(
        timestamp_writes={
            "query_set": qs,
            "beginning_of_pass_write_index": 0,
            "end_of_pass_write_index": 1,
        }
    )
    p.record(None, cpass)
    cpass.end()
    encoder.resolve_query_set(qs, 0, 2, resolved, 0)
    dev.queue.submit([encoder.finish()])
    t = np.frombuffer(dev.queue.read_buffer(resolved), np.uint64).astype(np.int64)
    return (t[1] - t[0]) / 1e6


def iterations_for(gpu, target_ms: float, grid: int = 256, start: int = 200) -> int:
    """Iterations of the work loop that take at least about ``target_ms`` on this GPU, so
    timing tests mean the same on lavapipe and on a GPU a thousand times faster."""
    iterations = start
    for _ in range(4):
        ms = measure_work_ms(gpu, iterations, grid)
        if ms >= target_ms:
            break
        iterations = min(int(iterations * min(2 * target_ms / max(ms, 1e-3), 1000)), 10**7)
    return iterations
