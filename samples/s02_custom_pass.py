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
from engine.graph import OUTPUT, ComputePass, RenderPass
from engine.options import int_type
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


class WorkPasses:
    """s02's two passes over one grid: ``work()``, the compute pass iterating the Julia set
    ``iterations`` times per cell of a ``grid`` x ``grid`` float32 buffer (its GPU cost is
    proportional to ``iterations``: no early exit), and ``show()``, the render pass painting
    that buffer full-screen. The one place they are built: the sample, the profiler tests
    and the profiler benchmark use it.

    Args:
        device, output_format: the device and the Show pass's target format.
        grid: cells per side. iterations: the loop count (``set_params`` changes it).
        cells: the ``grid * grid * 4``-byte storage buffer (e.g. graph-owned); a new one
            (``STORAGE | COPY_SRC``) when None.
        shader: a ``work_pipelines`` handle to share (a pipeline compile per test is slow
            on lavapipe); a new one when None. Hot reload rebinds the groups.
    """

    def __init__(self, device, output_format: str, grid: int, *, iterations: int = 64,
                 cells=None, shader=None):  # fmt: skip
        self.device, self.grid = device, grid
        self.shader = shader or work_pipelines(device, output_format)
        self.params = device.create_buffer(
            label="s02 params", size=16, usage=wgpu.BufferUsage.UNIFORM | wgpu.BufferUsage.COPY_DST
        )
        usage = wgpu.BufferUsage.STORAGE | wgpu.BufferUsage.COPY_SRC
        self.cells = cells or device.create_buffer(size=4 * grid * grid, usage=usage)
        self.set_params(iterations, 0.0)
        self._bind()
        self.shader.on_reload(self._bind)  # "auto" layouts: new pipelines, new groups

    def _bind(self) -> None:
        compute, render = self.shader.get()
        self.work_group, self.show_group = work_bind_groups(
            self.device, compute, render, self.params, self.cells
        )

    def set_params(self, iterations: int, time: float) -> None:
        """Loop count and animation time (s) of the next frames (one uniform write)."""
        self.device.queue.write_buffer(self.params, 0, work_params(iterations, self.grid, time))

    def record_work(self, ctx, cpass) -> None:
        n = work_dispatch(self.grid)
        cpass.set_pipeline(self.shader.get()[0])
        cpass.set_bind_group(0, self.work_group)
        cpass.dispatch_workgroups(n, n)

    def record_show(self, ctx, rpass) -> None:
        rpass.set_pipeline(self.shader.get()[1])
        rpass.set_bind_group(0, self.show_group)
        rpass.draw(3)

    def work(self, name: str = "Work", **kw) -> ComputePass:
        """The compute pass (``kw``: ``reads``/``writes`` for the graph)."""
        return ComputePass(name, record=self.record_work, **kw)

    def show(self, name: str = "Show", **kw) -> RenderPass:
        """The render pass, clearing ``ctx.output`` and painting the cells."""
        return RenderPass(name, record=self.record_show, targets=_clear_output, **kw)


def _clear_output(ctx) -> dict:
    return {"color_attachments": [{"view": ctx.output, "load_op": "clear", "store_op": "store"}]}


_grid_size = int_type(1, 4096, "cells per side")
_work = int_type(1, 1_000_000, "iterations")


class CustomPass(Sample):
    name = "s02"
    category = "basics"
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
        cells = graph.create_buffer(
            "s02 cells", size=4 * args.grid * args.grid, usage=wgpu.BufferUsage.STORAGE
        )
        self.passes = WorkPasses(
            self.app.gpu.device, graph.output_format, args.grid, iterations=args.work, cells=cells
        )
        graph.add(self.passes.work(writes=("s02 cells",)))
        graph.add(self.passes.show(reads=("s02 cells",), writes=(OUTPUT,)))

    def update(self, ctx):
        self.passes.set_params(self.app.args.work, ctx.time)


if __name__ == "__main__":
    main(CustomPass)
