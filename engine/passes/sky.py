"""``Sky``: the sky model (shaders/sky.wgsl, ``sky_color`` of frame_common.wgsl) drawn into
the HDR target where the main passes drew nothing, before the post chain reads it."""

from __future__ import annotations

import wgpu

from engine.graph import RenderPass
from engine.passes.bundles import BundleCache
from engine.passes.resources import DEPTH, DEPTH_FORMAT, HDR, HDR_FORMAT
from engine.shader_registry import shader_pipeline


class SkyPass(RenderPass):
    """``Sky``: a fullscreen triangle at depth 0 tested ``equal`` against ``frame.depth``
    (read-only): writes ``frame.hdr`` only where the depth is still the clear value."""

    reads = (HDR, DEPTH)
    writes = (HDR,)

    def __init__(self, res, name: str = "Sky"):
        super().__init__(name)
        self.res = res
        d = res.device
        self.bundles = BundleCache(d, name, depth_read_only=True)
        self.shader = shader_pipeline(d, "sky.wgsl", lambda m: self._make(m, name))
        self.shader.on_reload(self._bind)  # "auto" layout: a new group
        self._bind()

    def _make(self, m, name: str):
        return self.res.device.create_render_pipeline(
            label=name,
            layout="auto",
            vertex={"module": m, "entry_point": "vs_sky"},
            primitive={"topology": "triangle-list"},
            depth_stencil={
                "format": DEPTH_FORMAT,
                "depth_write_enabled": False,
                "depth_compare": "equal",  # reverse-Z cleared to 0: nothing drawn there
            },
            fragment={"module": m, "entry_point": "fs_sky", "targets": [{"format": HDR_FORMAT}]},
        )

    @property
    def pipeline(self):  # the current one: hot reload replaces it (engine/shader_registry.py)
        return self.shader.get()

    def _bind(self) -> None:
        self.group = self.res.device.create_bind_group(
            layout=self.pipeline.get_bind_group_layout(0),
            entries=[{"binding": 0, "resource": {"buffer": self.res.view_uniform}}],
        )

    def enabled_by(self, settings) -> bool:
        return settings.post

    def targets(self, ctx) -> dict:
        g = self.res.graph
        return {
            "color_attachments": [{"view": g.view(HDR), "load_op": "load", "store_op": "store"}],
            "depth_stencil_attachment": {"view": g.view(DEPTH), "depth_read_only": True},
        }

    def record(self, ctx, rpass: wgpu.GPURenderPassEncoder) -> None:
        pipe, group = self.pipeline, self.group  # a reload replaces both: a new bundle

        def commands(enc) -> None:
            enc.set_pipeline(pipe)
            enc.set_bind_group(0, group)
            enc.draw(3)

        self.bundles.record(
            rpass, (pipe, group), commands, color_formats=(HDR_FORMAT,), depth_format=DEPTH_FORMAT
        )
