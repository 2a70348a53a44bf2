"""s02: your own compute and render passes, timed with no profiling code (try --work N).

The sample only adds a compute pass ("Work": a Julia set iterated ``--work`` times per cell
of a ``--grid`` x ``--grid`` storage buffer) and a render pass ("Show": paints that buffer
full-screen). Run with ``--gpu-profile --profile`` and both appear in the shutdown timeline,
the HUD and ``--trace``, because the render graph times every pass it begins.
"""

from __future__ import annotations

import numpy as np
import wgpu

from engine.app import Sample, main
from engine.cli import int_type
from engine.graph import OUTPUT, ComputePass, RenderPass
from engine.shader_registry import shader_pipeline

WORKGROUP = 8  # cs_work's @workgroup_size(8, 8)


def create_work_pipelines(device: wgpu.GPUDevice, output_format: str):
    """``(compute, render)`` pipelines of ``shaders/s02_work.wgsl`` (also used by tests and
    the profiler benchmark)."""
    return work_pipelines(device, output_format).get()


def work_pipelines(device: wgpu.GPUDevice, output_format: str):
    """A ``PipelineHandle`` of ``(compute, render)``: hot reload rebuilds it when
    ``s02_work.wgsl`` changes."""
    return shader_pipeline(
        device, "s02_work.wgsl", lambda m: _work_pipelines(device, m, output_format), label="s02"
    )


def _work_pipelines(device: wgpu.GPUDevice, module, output_format: str):
    compute = device.create_compute_pipeline(
        label="s02 work", layout="auto", compute={"module": module, "entry_point": "cs_work"}
    )
    render = device.create_render_pipeline(
        label="s02 show",
        layout="auto",
        vertex={"module": module, "entry_point": "vs_show"},
        primitive={"topology": "triangle-list"},
        fragment={
            "module": module,
            "entry_point": "fs_show",
            "targets": [{"format": output_format}],
        },
    )
    return compute, render


def work_params(iterations: int, grid: int, time: float) -> bytes:
    """The 16-byte ``Params`` uniform: iterations (u32), grid (u32), time (f32), pad."""
    return (
        np.array([iterations, grid], np.uint32).tobytes()
        + np.array([time, 0.0], np.float32).tobytes()
    )


def work_bind_groups(device, compute, render, params, cells):
    """``(work, show)`` bind groups over one ``params`` uniform and one ``cells`` storage
    buffer: for the Work compute pipeline and, unless ``render`` is None, the Show one."""

    def group(pipeline, cells_binding):
        return device.create_bind_group(
            layout=pipeline.get_bind_group_layout(0),
            entries=[
                {"binding": 0, "resource": {"buffer": params}},
                {"binding": cells_binding, "resource": {"buffer": cells}},
            ],
        )

    return group(compute, 1), (group(render, 2) if render is not None else None)


def work_dispatch(grid: int) -> int:
    """Workgroups per side of the Work dispatch for ``grid`` cells per side."""
    return -(-grid // WORKGROUP)


_grid_size = int_type(1, 4096, "cells per side")
_work = int_type(1, 1_000_000, "iterations")


class CustomPass(Sample):
    name = "s02"
    description = "Your own compute + render pass, timed with no profiling code (--work N)."

    @classmethod
    def add_arguments(cls, parser) -> None:
        g = parser.add_argument_group("s02 options")
        g.add_argument(
            "--work",
            type=_work,
            default=64,
            metavar="N",
            help="iterations per grid cell in the Work compute pass, 1..1,000,000 "
            "(default 64); its GPU time grows with N",
        )
        g.add_argument(
            "--grid",
            type=_grid_size,
            default=256,
            metavar="N",
            help="cells per side of the computed grid, 1..4096 (default 256)",
        )

    def build(self, graph):
        args = self.app.args
        device = self.app.gpu.device
        self.grid = args.grid
        self.shader = work_pipelines(device, graph.output_format)  # rebuilt by hot reload
        self.params = device.create_buffer(
            label="s02 params", size=16, usage=wgpu.BufferUsage.UNIFORM | wgpu.BufferUsage.COPY_DST
        )
        cells = graph.create_buffer(
            "s02 cells", size=4 * self.grid * self.grid, usage=wgpu.BufferUsage.STORAGE
        )

        def bind():  # the pipelines' "auto" layouts are their own: new pipelines, new groups
            compute, render = self.shader.get()
            self.work_group, self.show_group = work_bind_groups(
                device, compute, render, self.params, cells
            )

        bind()
        self.shader.on_reload(bind)
        graph.add(ComputePass("Work", record=self.record_work, writes=("s02 cells",)))
        graph.add(
            RenderPass(
                "Show",
                record=self.record_show,
                targets=self.targets,
                reads=("s02 cells",),
                writes=(OUTPUT,),
            )
        )

    def update(self, ctx):
        data = work_params(self.app.args.work, self.grid, ctx.time)
        ctx.device.queue.write_buffer(self.params, 0, data)

    def record_work(self, ctx, cpass):
        groups = work_dispatch(self.grid)
        cpass.set_pipeline(self.shader.get()[0])
        cpass.set_bind_group(0, self.work_group)
        cpass.dispatch_workgroups(groups, groups)

    def targets(self, ctx):
        return {
            "color_attachments": [
                {"view": ctx.output, "load_op": "clear", "store_op": "store"},
            ]
        }

    def record_show(self, ctx, rpass):
        rpass.set_pipeline(self.shader.get()[1])
        rpass.set_bind_group(0, self.show_group)
        rpass.draw(3)


if __name__ == "__main__":
    main(CustomPass)
