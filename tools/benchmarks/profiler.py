"""Profiler overhead, measured in one run: CPU and GPU frame time with profiling on vs off.

Arms alternate in blocks (off, on, off, on, ...) to cancel drift. Each frame is submitted as
three command buffers in one ``queue.submit``: a stopwatch begin (an empty compute pass with a
beginning-of-pass timestamp), the graph's frame, a stopwatch end. The stopwatch is identical
in both arms and independent of the per-pass profiler, so "GPU frame time" means the same
thing with profiling off. CPU frame time = recording + submit (+ ``after_submit`` when on),
measured with ``perf_counter_ns``. The queue is drained between frames (bench side) so frames
do not overlap. Figures are medians; ratios are on / off. Goals: CPU <= 1.05x, GPU <= 1.01x.
"""

from __future__ import annotations

import statistics
import time

import numpy as np
import wgpu

from engine.graph import ComputePass, FrameContext, RenderGraph, RenderPass
from engine.profiling import FrameProfiler
from engine.readback import ReadbackRing
from samples.s02_custom_pass import WORKGROUP, create_work_pipelines, work_params

FORMAT = "rgba8unorm"


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
    compute, render = create_work_pipelines(device, FORMAT)
    params = device.create_buffer_with_data(
        data=work_params(iterations, grid, 0.0), usage=wgpu.BufferUsage.UNIFORM
    )
    cells = graph.create_buffer("cells", size=4 * grid * grid, usage=wgpu.BufferUsage.STORAGE)
    wg = device.create_bind_group(
        layout=compute.get_bind_group_layout(0),
        entries=[
            {"binding": 0, "resource": {"buffer": params}},
            {"binding": 1, "resource": {"buffer": cells}},
        ],
    )
    sg = device.create_bind_group(
        layout=render.get_bind_group_layout(0),
        entries=[
            {"binding": 0, "resource": {"buffer": params}},
            {"binding": 2, "resource": {"buffer": cells}},
        ],
    )
    n = -(-grid // WORKGROUP)

    def work(ctx, cpass):
        cpass.set_pipeline(compute)
        cpass.set_bind_group(0, wg)
        cpass.dispatch_workgroups(n, n)

    def show(ctx, rpass):
        rpass.set_pipeline(render)
        rpass.set_bind_group(0, sg)
        rpass.draw(3)

    def targets(ctx):
        return {
            "color_attachments": [{"view": ctx.output, "load_op": "clear", "store_op": "store"}]
        }

    graph.add(ComputePass("Work", record=work))
    for i in range(extra_passes):
        graph.add(ComputePass(f"Tiny{i}", record=work if i == 0 else (lambda c, p: None)))
    graph.add(RenderPass("Show", record=show, targets=targets))
    return graph


def _measure(gpu, graph, output, *, frames_per_block, blocks):
    dev, q = gpu.device, gpu.queue
    watch = Stopwatch(dev)
    sink = FrameProfiler(gpu, gpu=True, cpu=True)
    idle = dev.create_buffer(size=4, usage=wgpu.BufferUsage.COPY_SRC)
    cpu = {False: [], True: []}
    gpu_ms = {False: [], True: []}
    arm_of: dict[int, bool] = {}
    index = 0
    for block in range(2 * blocks + 1):
        on = block % 2 == 1
        graph.profiler = sink if on else None
        for _ in range(frames_per_block):
            t0 = time.perf_counter_ns()
            if on:
                sink.cpu_begin("Update")
                sink.cpu_end()
            enc = dev.create_command_encoder()
            graph.execute(enc, FrameContext(dev, graph, index, 0.0, graph.size, output))
            cmd = enc.finish()
            if on:
                sink.cpu_begin("Submit")
            q.submit([watch.begin(), cmd, watch.end()])
            watch.ring.submitted(index)
            if on:
                sink.cpu_end()
                sink.after_submit()
                sink.collect()
            t1 = time.perf_counter_ns()
            if block > 0:  # block 0 warms up (shader JIT, first maps)
                cpu[on].append((t1 - t0) / 1e6)
                arm_of[index] = on
            q.read_buffer(idle)  # bench side: drain the queue so frames do not overlap
            for f, data in watch.ring.poll():
                if f in arm_of:
                    b, e = np.frombuffer(data, np.uint64).tolist()
                    gpu_ms[arm_of[f]].append((e - b) / 1e6)
            index += 1
    for f, data in watch.ring.drain(5.0):
        if f in arm_of:
            b, e = np.frombuffer(data, np.uint64).tolist()
            gpu_ms[arm_of[f]].append((e - b) / 1e6)
    graph.profiler = None
    sink.drain()
    return cpu, gpu_ms


def _line(label, off, on):
    mo, mn = statistics.median(off), statistics.median(on)
    return f"  {label:<22} off {mo:9.3f} ms   on {mn:9.3f} ms   ratio {mn / mo:6.3f}x"


def run(gpu, args) -> None:
    """Print the overhead table for a few graph shapes on ``gpu``."""
    print(f"adapter: {gpu.summary}")
    if not gpu.has_timestamps:
        print("  GPU timings n/a: no 'timestamp-query' feature; nothing to measure")
        return
    quick = getattr(args, "quick", False)
    dev = gpu.device
    size = (320, 180) if quick else (1280, 720)
    tex = dev.create_texture(
        size=(*size, 1), format=FORMAT, usage=wgpu.TextureUsage.RENDER_ATTACHMENT
    )
    output = tex.create_view()
    fpb, blocks = (5, 3) if quick else (20, 5)
    shapes = [
        ("s02 (2 passes)", dict(iterations=64, grid=256, extra_passes=0)),
        ("s02 + 10 passes", dict(iterations=64, grid=256, extra_passes=10)),
    ]
    try:
        from engine.frame import StandardFrame  # noqa: F401  (the standard frame, when merged)

        print("  standard frame: present but not wired into this benchmark yet")
    except ImportError:
        print("  standard frame: not available yet")
    print(f"  {fpb} frames per block, {blocks} blocks per arm, interleaved; medians")
    for name, kw in shapes:
        graph = _work_graph(dev, size, **kw)
        cpu, gms = _measure(gpu, graph, output, frames_per_block=fpb, blocks=blocks)
        print(f"[{name}] {len(graph.passes)} passes, {size[0]}x{size[1]}")
        print(_line("CPU frame (record+submit)", cpu[False], cpu[True]))
        print(_line("GPU frame (stopwatch)", gms[False], gms[True]))
    print("  goals: CPU <= 1.05x, GPU <= 1.01x")
