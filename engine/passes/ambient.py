"""``Ambient``: adds ``frame.ambient`` to the colour (shaders/ambient.wgsl).

The hook for a technique that changes the ambient (indirect) light, such as SSAO: while some
pass reads ``frame.ambient``, the Main passes write the ambient light there instead of into
the colour, the technique's passes (inserted before ``Ambient``) modulate it in place, and
this pass adds the result to the colour before ``Transparent`` blends over it. The graph
runs it exactly while ``frame.ambient`` is wanted (``Pass.serves``): without a reader, the
frame has neither the target nor this pass.
"""

from __future__ import annotations

import wgpu

from engine.graph import RenderPass
from engine.passes.resources import AMBIENT, BindGroupCache
from engine.passes.screen import ADD, fullscreen_pipeline
from engine.shader_registry import shader_pipeline


class AmbientPass(RenderPass):
    """``Ambient``: ``frame.ambient`` added to ``frame.hdr`` (the output without post)."""

    serves = AMBIENT

    def __init__(self, res, name: str = "Ambient"):
        super().__init__(name, enabled=False)
        self.res = res
        self._shaders: dict[str, object] = {}  # per colour format
        self._groups = BindGroupCache()
        self._handle(res.graph.texture_format(res.color_name()))  # compiled at start-up

    @property
    def reads(self) -> tuple[str, ...]:
        return (AMBIENT, self.res.color_name())

    @property
    def writes(self) -> tuple[str, ...]:
        return (self.res.color_name(),)

    def _handle(self, fmt: str):
        if fmt not in self._shaders:
            self._shaders[fmt] = h = shader_pipeline(
                self.res.device, "ambient.wgsl", lambda m: self._make(m, fmt)
            )
            h.on_reload(self._groups.clear)  # "auto" layout: a new group
        return self._shaders[fmt]

    def _make(self, m, fmt: str) -> wgpu.GPURenderPipeline:
        return fullscreen_pipeline(self.res.device, m, "fs_ambient", fmt, label=self.name,
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
                layout=pipe.get_bind_group_layout(0),
                entries=[{"binding": 1, "resource": g.view(AMBIENT)}],  # (auto: view unused)
            )

        rpass.set_pipeline(pipe)
        rpass.set_bind_group(0, self._groups.get((g.resource_key(), pipe), build))
        rpass.draw(3)
