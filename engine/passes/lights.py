"""The local lights' passes (``engine.lights``):

``Lights.Reset`` (transfer)  last frame's counters into the readback ring, then the counters
                             and the cluster counts cleared
``Lights.Cluster`` (compute) every light assigned to the clusters its sphere touches, each
                             cluster's list sorted (shaders/light_cluster.wgsl)
``Lights.Deferred`` (render) the deferred path: each opaque pixel's cluster lights from the
                             G-buffer, added to the colour (shaders/light_deferred.wgsl)

The frame's knob ``light_path`` picks the path: ``forward`` (every light in every fragment,
no assignment), ``clustered`` (the Main passes and Transparent shade with their cluster's
list) or ``deferred`` (the Main passes write the G-buffer, ``Lights.Deferred`` lights it;
Transparent shades clustered). With no lights none of these passes runs and the shaders'
light loops run zero times.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import wgpu

from engine.graph import ComputePass, RenderPass, TransferPass
from engine.lights.gpu import CLUSTER_Y, CLUSTER_Z, CLUSTERS
from engine.passes.resources import (
    ALBEDO,
    DEPTH,
    LIGHT_COUNTERS,
    LIGHTS,
    NORMALS,
    BindGroupCache,
)
from engine.passes.resources import (
    CLUSTERS as CLUSTER_LISTS,
)
from engine.passes.screen import ADD, fullscreen_pipeline
from engine.shader_registry import compute_pipelines, shader_pipeline

if TYPE_CHECKING:
    from engine.passes.resources import FrameResources

_WG = 64
_USED = {"cs_assign": (0, 1, 2, 3, 4), "cs_finish": (2, 3, 4)}  # bindings each entry reads


def _lit(res) -> bool:
    return res.lights is not None and res.lights.count > 0


#: WebGPU's render-target pixel byte cost of the formats the Main passes may write.
_BYTE_COST = {"rgba16float": 8, "rg16float": 4, "rgba8unorm-srgb": 8, "rgba8unorm": 4,
              "bgra8unorm": 4, "bgra8unorm-srgb": 8}  # fmt: skip


def check_gbuffer(device, settings, color_format: str) -> None:
    """The deferred path's Main passes write the colour, ``frame.normals``, ``frame.albedo``
    and, with TAA, ``frame.motion``: check the device's colour-attachment limits hold them
    (``create_gpu`` asks for the adapter's).

    Raises:
        ValueError: one line naming the limit, what the G-buffer needs and what to do.
    """
    if settings.light_path != "deferred":
        return
    from engine.passes.resources import FRAME_TARGETS, MOTION

    names = [NORMALS, ALBEDO, *([MOTION] if settings.taa else [])]
    formats = [color_format, *(FRAME_TARGETS[n][0] for n in names)]
    count = device.limits.get("max-color-attachments", 8)
    per_sample = device.limits.get("max-color-attachment-bytes-per-sample", 32)
    need = sum(_BYTE_COST.get(f, 16) for f in formats)
    if len(formats) > count or need > per_sample:
        raise ValueError(
            f"light-path deferred: the G-buffer needs {len(formats)} colour attachments of "
            f"{need} bytes a pixel; this device allows {count} and {per_sample} bytes: use "
            "the clustered path (light-path clustered) or another adapter"
        )


def light_reads(res, *, blend: bool = False) -> tuple[str, ...]:
    """What a pass shading with the lights reads now: the lights, and the cluster lists
    unless the path is plain forward; nothing without lights or for the deferred path's
    Main passes (``blend``: the Transparent pass, clustered on the deferred path)."""
    if not _lit(res):
        return ()
    path = res.settings.light_path
    if path == "forward":
        return (LIGHTS,)
    if path == "deferred" and not blend:
        return ()
    return (LIGHTS, CLUSTER_LISTS)


class LightsResetPass(TransferPass):
    """``Lights.Reset``: copy last frame's ``lights`` counters to the readback ring (before
    they are cleared), clear them and the cluster counts."""

    writes = (CLUSTER_LISTS, LIGHT_COUNTERS)

    def __init__(self, res: FrameResources, name: str = "Lights.Reset"):
        super().__init__(name)
        self.res = res
        self._last: int | None = None

    def enabled_by(self, settings) -> bool:
        return _lit(self.res) and settings.light_path != "forward"

    def record(self, ctx, encoder) -> None:
        g = self.res.lights
        if self._last is not None and self._last == ctx.frame_index - 1:
            self.res.light_stats.record_copy(encoder, g.counters, self._last)
        encoder.clear_buffer(g.counters)
        encoder.clear_buffer(g.counts)
        self._last = ctx.frame_index


class LightClusterPass(ComputePass):
    """``Lights.Cluster``: ``cs_assign`` (one thread per light, depth slice and tile row)
    then ``cs_finish`` (one workgroup per cluster)."""

    reads = (LIGHTS, CLUSTER_LISTS, LIGHT_COUNTERS)
    writes = (CLUSTER_LISTS, LIGHT_COUNTERS)

    def __init__(self, res: FrameResources, name: str = "Lights.Cluster"):
        super().__init__(name)
        self.res = res
        d = res.device
        entries = ("cs_assign", "cs_finish")
        self.shader = shader_pipeline(
            d, "light_cluster.wgsl", lambda m: compute_pipelines(d, m, entries, label=name)
        )
        self._groups = BindGroupCache()
        self.shader.on_reload(self._groups.clear)  # "auto" layouts: new groups

    def enabled_by(self, settings) -> bool:
        return _lit(self.res) and settings.light_path != "forward"

    def _group(self, pipe, entry: str) -> wgpu.GPUBindGroup:
        g = self.res.lights
        buffers = (g.params, g.buffer, g.counts, g.lists, g.counters)

        def build():
            return self.res.device.create_bind_group(
                label=f"{self.name} {entry}",
                layout=pipe.get_bind_group_layout(0),
                entries=[{"binding": i, "resource": {"buffer": buffers[i]}} for i in _USED[entry]],
            )

        return self._groups.get((entry, pipe, g.buffer), build)

    def record(self, ctx, cpass) -> None:
        pipes = self.shader.get()
        n = self.res.lights.count
        # cs_assign: a thread per light, depth slice and tile row; cs_finish: a workgroup per
        # cluster
        for entry, groups in (
            ("cs_assign", (-(-n // _WG), CLUSTER_Z, CLUSTER_Y)),
            ("cs_finish", (CLUSTERS, 1, 1)),
        ):
            cpass.set_pipeline(pipes[entry])
            cpass.set_bind_group(0, self._group(pipes[entry], entry))
            cpass.dispatch_workgroups(*groups)


class DeferredLightsPass(RenderPass):
    """``Lights.Deferred``: the G-buffer's opaque pixels lit by their cluster's lights, added
    to the colour (the HDR target, or the output without post)."""

    def __init__(self, res: FrameResources, name: str = "Lights.Deferred"):
        super().__init__(name)
        self.res = res
        self._shaders: dict[str, object] = {}  # per colour format
        self._groups = BindGroupCache()
        tex = {"sample_type": "unfilterable-float"}
        f = wgpu.ShaderStage.FRAGMENT
        self.layout = res.device.create_bind_group_layout(
            label=name,
            entries=[
                {"binding": 0, "visibility": f, "buffer": {"type": "uniform"}},
                {"binding": 1, "visibility": f, "texture": {"sample_type": "depth"}},
                {"binding": 2, "visibility": f, "texture": tex},
                {"binding": 3, "visibility": f, "texture": tex},
            ],
        )
        self._handle(res.graph.texture_format(res.color_name()))  # compiled at start-up

    def enabled_by(self, settings) -> bool:
        return _lit(self.res) and settings.light_path == "deferred"

    @property
    def reads(self) -> tuple[str, ...]:
        return (DEPTH, NORMALS, ALBEDO, LIGHTS, CLUSTER_LISTS, self.res.color_name())

    @property
    def writes(self) -> tuple[str, ...]:
        return (self.res.color_name(),)

    def _handle(self, fmt: str):
        if fmt not in self._shaders:
            self._shaders[fmt] = shader_pipeline(
                self.res.device, "light_deferred.wgsl", lambda m: self._make(m, fmt)
            )
        return self._shaders[fmt]

    def _make(self, m, fmt: str) -> wgpu.GPURenderPipeline:
        d = self.res.device
        layouts = [self.layout, self.res.mesh.layout_lights]
        layout = d.create_pipeline_layout(bind_group_layouts=layouts)
        return fullscreen_pipeline(d, m, "fs_deferred", fmt, label=self.name, layout=layout,
                                   blend=ADD)  # fmt: skip

    def targets(self, ctx) -> dict:
        view, _ = self.res.color_target(ctx)
        return {"color_attachments": [{"view": view, "load_op": "load", "store_op": "store"}]}

    def record(self, ctx, rpass) -> None:
        r = self.res
        _, fmt = r.color_target(ctx)
        pipe = self._handle(fmt).get()
        g = r.graph

        def build() -> wgpu.GPUBindGroup:
            return r.device.create_bind_group(
                label=self.name,
                layout=self.layout,
                entries=[
                    {"binding": 0, "resource": {"buffer": r.view_uniform}},
                    {"binding": 1, "resource": g.view(DEPTH)},
                    {"binding": 2, "resource": g.view(NORMALS)},
                    {"binding": 3, "resource": g.view(ALBEDO)},
                ],
            )

        rpass.set_pipeline(pipe)
        rpass.set_bind_group(0, self._groups.get(g.resource_key(), build))
        rpass.set_bind_group(1, r.lights.group)
        rpass.draw(3)
