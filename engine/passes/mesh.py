"""Pipelines that draw the scene's instances through the cull's indirect args and remap list.

Bind groups: 0 = view uniform + transforms + colours + remap (vertex/fragment), 1 = the
per-batch ``Draw`` uniform (dynamic offset; the remap base when ``indirect-first-instance`` is
missing), 2 = shadow map + comparison sampler (main colour pipeline only, so the Shadow pass
can render into the map without also binding it).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import wgpu

from engine.graph import RenderPass
from engine.passes.bundles import BundleCache
from engine.passes.resources import (
    DEPTH,
    DEPTH_FORMAT,
    DRAW_INPUTS,
    SHADOW_FORMAT,
    SHADOW_MAP,
    SKY_HORIZON,
)
from engine.scene.meshes import VERTEX_LAYOUT
from engine.shader_registry import shader_pipeline

if TYPE_CHECKING:
    from engine.passes.resources import FrameResources


_V, _F = wgpu.ShaderStage.VERTEX, wgpu.ShaderStage.FRAGMENT


class MeshPipelines:
    """Main (any colour format), shadow (depth only) and ID (``r32uint``) pipelines.

    Args:
        device: the ``wgpu.GPUDevice``.
    """

    def __init__(self, device: wgpu.GPUDevice):
        self.device = device
        self._main: dict[str, wgpu.GPURenderPipeline] = {}
        self._id: wgpu.GPURenderPipeline | None = None
        self._shadow: wgpu.GPURenderPipeline | None = None
        ro = {"type": "read-only-storage"}
        self.layout_view = device.create_bind_group_layout(
            label="mesh view",
            entries=[
                {"binding": 0, "visibility": _V | _F, "buffer": {"type": "uniform"}},
                {"binding": 1, "visibility": _V, "buffer": ro},
                {"binding": 2, "visibility": _V, "buffer": ro},
                {"binding": 3, "visibility": _V, "buffer": ro},
            ],
        )
        self.layout_draw = device.create_bind_group_layout(
            label="mesh draw",
            entries=[
                {
                    "binding": 0,
                    "visibility": _V,
                    "buffer": {
                        "type": "uniform",
                        "has_dynamic_offset": True,
                        "min_binding_size": 16,
                    },
                }
            ],
        )
        self.layout_shadow = device.create_bind_group_layout(
            label="mesh shadow map",
            entries=[
                {"binding": 0, "visibility": _F, "texture": {"sample_type": "depth"}},
                {"binding": 1, "visibility": _F, "sampler": {"type": "comparison"}},
            ],
        )
        self.shader = shader_pipeline(device, "mesh.wgsl", self._rebuild)
        self.sampler = device.create_sampler(
            label="shadow pcf",
            compare="greater-equal",  # reverse-Z: lit when the receiver is nearer the sun
            mag_filter="linear",
            min_filter="linear",
        )

    @property
    def module(self) -> wgpu.GPUShaderModule:
        return self.shader.get()

    def _rebuild(self, module: wgpu.GPUShaderModule) -> wgpu.GPUShaderModule:
        """Hot reload: every pipeline made so far again from ``module`` (explicit layouts:
        the bind groups stay); nothing is replaced unless all of them build."""
        made = [(k, self._main[k]) for k in self._main], self._shadow, self._id
        self._building = module
        try:
            main = {k: self._make_main(k) for k, _ in made[0]}
            shadow = None if made[1] is None else self._make_shadow()
            ids = None if made[2] is None else self._make_ids()
        finally:
            self._building = None
        self._main, self._shadow, self._id = main, shadow, ids
        return module

    def _pipeline(self, label, layouts, vs, fs, fmt, depth_format, cull_mode="back"):
        layout = self.device.create_pipeline_layout(bind_group_layouts=layouts)
        module = getattr(self, "_building", None) or self.module
        desc = {
            "label": label,
            "layout": layout,
            "vertex": {"module": module, "entry_point": vs, "buffers": [VERTEX_LAYOUT]},
            "primitive": {"topology": "triangle-list", "cull_mode": cull_mode},
            "depth_stencil": {
                "format": depth_format,
                "depth_write_enabled": True,
                "depth_compare": "greater",  # reverse-Z
            },
        }
        if fs is not None:
            desc["fragment"] = {
                "module": module,
                "entry_point": fs,
                "targets": [{"format": fmt}],
            }
        return self.device.create_render_pipeline(**desc)

    def main(self, color_format: str) -> wgpu.GPURenderPipeline:
        """Lit colour pipeline writing linear colour to ``color_format``, depth32float."""
        if color_format not in self._main:
            self._main[color_format] = self._make_main(color_format)
        return self._main[color_format]

    def _make_main(self, color_format: str) -> wgpu.GPURenderPipeline:
        layouts = [self.layout_view, self.layout_draw, self.layout_shadow]
        return self._pipeline(
            f"mesh main {color_format}", layouts, "vs_main", "fs_main", color_format, DEPTH_FORMAT
        )

    def shadow(self) -> wgpu.GPURenderPipeline:
        """Depth-only pipeline for the sun's shadow map (no face culling: thin casters)."""
        if self._shadow is None:
            self._shadow = self._make_shadow()
        return self._shadow

    def _make_shadow(self) -> wgpu.GPURenderPipeline:
        layouts = [self.layout_view, self.layout_draw]
        return self._pipeline(
            "mesh shadow", layouts, "vs_shadow", None, None, SHADOW_FORMAT, cull_mode="none"
        )

    def ids(self) -> wgpu.GPURenderPipeline:
        """Writes the scene row of each instance to an ``r32uint`` target (debug, tests)."""
        if self._id is None:
            self._id = self._make_ids()
        return self._id

    def _make_ids(self) -> wgpu.GPURenderPipeline:
        layouts = [self.layout_view, self.layout_draw]
        return self._pipeline("mesh ids", layouts, "vs_main", "fs_id", "r32uint", DEPTH_FORMAT)

    def view_group(self, view_uniform, gs) -> wgpu.GPUBindGroup:
        return self.device.create_bind_group(
            label="mesh view",
            layout=self.layout_view,
            entries=[
                {"binding": 0, "resource": {"buffer": view_uniform}},
                {"binding": 1, "resource": {"buffer": gs.transforms}},
                {"binding": 2, "resource": {"buffer": gs.colors}},
                {"binding": 3, "resource": {"buffer": gs.remap}},
            ],
        )

    def draw_group(self, gs) -> wgpu.GPUBindGroup:
        return self.device.create_bind_group(
            label="mesh draw",
            layout=self.layout_draw,
            entries=[{"binding": 0, "resource": {"buffer": gs.draw_uniform, "size": 16}}],
        )

    def shadow_group(self, shadow_view) -> wgpu.GPUBindGroup:
        return self.device.create_bind_group(
            label="mesh shadow map",
            layout=self.layout_shadow,
            entries=[
                {"binding": 0, "resource": shadow_view},
                {"binding": 1, "resource": self.sampler},
            ],
        )


# -- the standard frame's main passes --------------------------------------------------------
class MainPass(RenderPass):
    """``Main.Early`` (region 0: last frame's visible set; clears colour and depth) or
    ``Main.Late`` (region 1: the newly visible; loads them, or clears in one-phase mode).
    Lit colour into the HDR target (the output without post), reverse-Z ``depth32float``
    compared with ``greater``.

    Args:
        res: the frame's ``FrameResources``; ``name``: ``"Main.Early"`` or ``"Main.Late"``.
    """

    def __init__(self, res: FrameResources, name: str):
        super().__init__(name)
        self.res, self.early = res, name == "Main.Early"
        self.region = 0 if self.early else 1
        self.bundles = BundleCache(res.device, name)

    def enabled_by(self, settings) -> bool:
        return (settings.cull and settings.occlusion) if self.early else True

    def _clears(self) -> bool:
        s = self.res.settings
        return self.early or not (s.cull and s.occlusion)

    @property
    def reads(self) -> tuple[str, ...]:
        r = DRAW_INPUTS
        if self.res.settings.shadows:
            r += (SHADOW_MAP,)
        if not self._clears():
            r += (DEPTH, self.res.color_name())
        return r

    @property
    def writes(self) -> tuple[str, ...]:
        return (DEPTH, self.res.color_name())

    def targets(self, ctx) -> dict:
        op = "clear" if self._clears() else "load"
        view, _ = self.res.color_target(ctx)
        return {
            "color_attachments": [
                {
                    "view": view,
                    "clear_value": (*SKY_HORIZON, 1.0),
                    "load_op": op,
                    "store_op": "store",
                }
            ],
            "depth_stencil_attachment": {
                "view": self.res.graph.view(DEPTH),
                "depth_clear_value": 0.0,
                "depth_load_op": op,
                "depth_store_op": "store",
            },
        }

    def record(self, ctx, rpass) -> None:
        r = self.res
        _, fmt = r.color_target(ctx)
        pipe = r.mesh.main(fmt)  # hot reload replaces it: a new key, a new bundle

        def commands(enc) -> None:
            enc.set_pipeline(pipe)
            r.bind_geometry(enc)
            enc.set_bind_group(2, r.shadow.group)
            r.gs.draw(enc, self.region, 1, r.draw_group)

        key = (pipe, r.shadow.group, *r.geometry_key())
        self.bundles.record(rpass, key, commands, color_formats=(fmt,), depth_format=DEPTH_FORMAT)
        lines = None if self.early else r.frustum_lines(fmt)
        if lines is not None:  # F2: the frozen culling frustum, over the last main pass
            lines.record(ctx, rpass)
