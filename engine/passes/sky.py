"""``Sky``: the sky model (shaders/sky.wgsl, ``sky_color`` of frame_common.wgsl) drawn into
the HDR target where the main passes drew nothing, before the post chain reads it; and the
sky's motion vectors into ``frame.motion`` while a pass reads them."""

from __future__ import annotations

import wgpu

from engine.graph import RenderPass
from engine.passes.bundles import BundleCache
from engine.passes.resources import DEPTH, DEPTH_FORMAT, FRAME_TARGETS, HDR, HDR_FORMAT, MOTION
from engine.shader_registry import shader_pipeline


class SkyPass(RenderPass):
    """``Sky``: a fullscreen triangle at depth 0 tested ``equal`` against ``frame.depth``
    (read-only): writes ``frame.hdr`` (and ``frame.motion`` while wanted) only where the
    depth is still the clear value."""

    on_demand = (MOTION,)

    def __init__(self, res, name: str = "Sky"):
        super().__init__(name)
        self.res = res
        self.bundles = BundleCache(res.device, name, depth_read_only=True)
        self._variants: dict[bool, tuple] = {}  # motion -> (shader handle, [bind group])
        self._variant(False)  # compiled now: a broken sky.wgsl fails at start-up

    def _motion(self) -> bool:
        return self.res.graph.wanted(MOTION)

    @property
    def reads(self) -> tuple[str, ...]:
        return (HDR, DEPTH, MOTION) if self._motion() else (HDR, DEPTH)

    @property
    def writes(self) -> tuple[str, ...]:
        return (HDR, MOTION) if self._motion() else (HDR,)

    def _variant(self, motion: bool):
        """``(pipeline, bind group)`` of the variant, built on first use; a hot reload
        replaces both (``auto`` layout: a new group)."""
        if motion not in self._variants:
            shader = shader_pipeline(
                self.res.device,
                "sky.wgsl",
                lambda m: self._make(m, motion),
                defines={"OUT_MOTION": 1} if motion else None,
            )
            group = [None]
            shader.on_reload(lambda: group.__setitem__(0, self._bind(shader.get())))
            group[0] = self._bind(shader.get())
            self._variants[motion] = (shader, group)
        shader, group = self._variants[motion]
        return shader.get(), group[0]

    @property
    def shader(self):
        """The variant without motion (what tools list; each variant reloads itself)."""
        return self._variants.get(False, self._variants.get(True, (None,)))[0]

    def _make(self, m, motion: bool):
        targets = [{"format": HDR_FORMAT}]
        if motion:
            targets.append({"format": FRAME_TARGETS[MOTION][0]})
        return self.res.device.create_render_pipeline(
            label=self.name,
            layout="auto",
            vertex={"module": m, "entry_point": "vs_sky"},
            primitive={"topology": "triangle-list"},
            depth_stencil={
                "format": DEPTH_FORMAT,
                "depth_write_enabled": False,
                "depth_compare": "equal",  # reverse-Z cleared to 0: nothing drawn there
            },
            fragment={"module": m, "entry_point": "fs_sky", "targets": targets},
        )

    def _bind(self, pipeline) -> wgpu.GPUBindGroup:
        return self.res.device.create_bind_group(
            layout=pipeline.get_bind_group_layout(0),
            entries=[{"binding": 0, "resource": {"buffer": self.res.view_uniform}}],
        )

    def enabled_by(self, settings) -> bool:
        return settings.post

    def targets(self, ctx) -> dict:
        g = self.res.graph
        color = [{"view": g.view(HDR), "load_op": "load", "store_op": "store"}]
        if self._motion():
            color.append({"view": g.view(MOTION), "load_op": "load", "store_op": "store"})
        return {
            "color_attachments": color,
            "depth_stencil_attachment": {"view": g.view(DEPTH), "depth_read_only": True},
        }

    def record(self, ctx, rpass: wgpu.GPURenderPassEncoder) -> None:
        motion = self._motion()
        pipe, group = self._variant(motion)  # a reload replaces both: a new bundle

        def commands(enc) -> None:
            enc.set_pipeline(pipe)
            enc.set_bind_group(0, group)
            enc.draw(3)

        formats = (HDR_FORMAT, FRAME_TARGETS[MOTION][0]) if motion else (HDR_FORMAT,)
        self.bundles.record(
            rpass, (pipe, group), commands, color_formats=formats, depth_format=DEPTH_FORMAT
        )
