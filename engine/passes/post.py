"""Post: sky behind the scene, exposure and ACES-fitted tone mapping to the output format.

Tone curve: Krzysztof Narkowicz, "ACES Filmic Tone Mapping Curve" (2016), a fit of the ACES
reference rendering transform. Output is linear; the graph's ``-srgb`` output encodes it.
"""

from __future__ import annotations

import wgpu

from engine.graph import RenderPass
from engine.passes.resources import DEPTH, HDR, HDR_FORMAT, OUTPUT
from engine.shaders import shader_module

__all__ = ["HDR_FORMAT", "PostPass", "PostPipeline"]


class PostPipeline:
    """Fullscreen-triangle pipeline reading the HDR colour and the depth (sky mask)."""

    def __init__(self, device: wgpu.GPUDevice, output_format: str):
        self.device = device
        m = shader_module(device, "post.wgsl")
        self.pipeline = device.create_render_pipeline(
            label="post",
            layout="auto",
            vertex={"module": m, "entry_point": "vs_fullscreen"},
            primitive={"topology": "triangle-list"},
            fragment={
                "module": m,
                "entry_point": "fs_post",
                "targets": [{"format": output_format}],
            },
        )


class PostPass(RenderPass):
    """``Post``: sky behind the scene, exposure and tone map from ``frame.hdr`` to the output."""

    reads = (HDR, DEPTH)
    writes = (OUTPUT,)

    def __init__(self, res, name: str = "Post"):
        super().__init__(name)
        self.res = res
        self.pipeline = PostPipeline(res.device, res.graph.output_format).pipeline
        self._group: tuple | None = None  # (graph generation, bind group)

    def enabled_by(self, settings) -> bool:
        return settings.post

    def group(self) -> wgpu.GPUBindGroup:
        """The bind group over this size's HDR and depth (rebuilt after a resize)."""
        g = self.res.graph
        if self._group is None or self._group[0] != g.generation:
            group = self.res.device.create_bind_group(
                label="post",
                layout=self.pipeline.get_bind_group_layout(0),
                entries=[
                    {"binding": 0, "resource": {"buffer": self.res.view_uniform}},
                    {"binding": 1, "resource": g.view(HDR)},
                    {"binding": 2, "resource": g.view(DEPTH)},
                ],
            )
            self._group = (g.generation, group)
        return self._group[1]

    def targets(self, ctx) -> dict:
        return {
            "color_attachments": [
                {
                    "view": ctx.output,
                    "load_op": "clear",
                    "clear_value": (0, 0, 0, 1),
                    "store_op": "store",
                }
            ]
        }

    def record(self, ctx, rpass) -> None:
        rpass.set_pipeline(self.pipeline)
        rpass.set_bind_group(0, self.group())
        rpass.draw(3)
