"""Shared pieces of the profiler tests: compute passes with known work, a frame driver."""

from __future__ import annotations

import wgpu

from engine.graph import ComputePass, FrameContext, RenderGraph
from samples.s02_custom_pass import WORKGROUP, create_work_pipelines, work_params

_PIPELINES: dict[int, wgpu.GPUComputePipeline] = {}


def work_pass(device, name: str, iterations: int, grid: int = 128) -> ComputePass:
    """A compute pass running s02's loop ``iterations`` times on each of ``grid**2`` cells:
    its GPU cost is proportional to ``iterations`` (no early exit)."""
    pipeline = _PIPELINES.get(id(device))
    if pipeline is None:
        pipeline = _PIPELINES[id(device)] = create_work_pipelines(device, "rgba8unorm")[0]
    params = device.create_buffer_with_data(
        data=work_params(iterations, grid, 0.0), usage=wgpu.BufferUsage.UNIFORM
    )
    cells = device.create_buffer(size=4 * grid * grid, usage=wgpu.BufferUsage.STORAGE)
    group = device.create_bind_group(
        layout=pipeline.get_bind_group_layout(0),
        entries=[
            {"binding": 0, "resource": {"buffer": params}},
            {"binding": 1, "resource": {"buffer": cells}},
        ],
    )
    n = -(-grid // WORKGROUP)

    def record(ctx, cpass):
        cpass.set_pipeline(pipeline)
        cpass.set_bind_group(0, group)
        cpass.dispatch_workgroups(n, n)

    return ComputePass(name, record=record)


def compute_graph(device, passes) -> RenderGraph:
    graph = RenderGraph(device, output_format="rgba8unorm", size=(64, 64))
    for p in passes:
        graph.add(p)
    return graph


def wait_idle(device) -> None:
    """Block until the queue is idle (test-side only: a tiny read_buffer waits for it)."""
    buf = device.create_buffer(size=4, usage=wgpu.BufferUsage.COPY_SRC)
    device.queue.read_buffer(buf)


def run_frame(gpu, graph: RenderGraph, prof, index: int) -> None:
    """One frame the way engine.app drives it: Update scope, graph, Submit scope."""
    if prof is not None:
        prof.cpu_begin("Update")
        prof.cpu_end()
    encoder = gpu.device.create_command_encoder()
    graph.execute(encoder, FrameContext(gpu.device, graph, index, 0.0, graph.size, None))
    if prof is not None:
        prof.cpu_begin("Submit")
    gpu.queue.submit([encoder.finish()])
    if prof is not None:
        prof.cpu_end()
        prof.after_submit()
