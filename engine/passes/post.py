"""Post: sky behind the scene, exposure and ACES-fitted tone mapping to the output format.

Tone curve: Krzysztof Narkowicz, "ACES Filmic Tone Mapping Curve" (2016), a fit of the ACES
reference rendering transform. Output is linear; the graph's ``-srgb`` output encodes it.
"""

from __future__ import annotations

import wgpu

from engine.graph import OUTPUT, RenderPass
from engine.shader_registry import shader_pipeline

HDR_FORMAT = "rgba16float"


class PostPipeline:
    """Fullscreen-triangle pipeline reading the HDR colour and the depth (sky mask)."""

    def __init__(self, device: wgpu.GPUDevice, output_format: str):
        self.device = device
        self.shader = shader_pipeline(device, "post.wgsl", lambda m: self._make(m, output_format))

    def _make(self, m, output_format: str) -> wgpu.GPURenderPipeline:
        return self.device.create_render_pipeline(
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

    @property
    def pipeline(self):  # the current one: hot reload replaces it (engine/shader_registry.py)
        return self.shader.get()


class PostPass(RenderPass):
    """``Post``: sky behind the scene, exposure and tone map from ``frame.hdr`` to the output."""

    reads = ("frame.hdr", "frame.depth")
    writes = (OUTPUT,)

    def __init__(self, frame):
        super().__init__("Post")
        self.frame = frame
        self.shader = PostPipeline(frame.device, frame.graph.output_format).shader
        self._bound = None
        self.shader.on_reload(lambda: self._bound and self.bind(*self._bound))

    def enabled_by(self, settings) -> bool:
        return settings.post

    @property
    def pipeline(self):  # the current one: hot reload replaces it (engine/shader_registry.py)
        return self.shader.get()

    def bind(self, view_uniform, hdr_view, depth_view) -> None:
        """(Re)bind after the HDR and depth textures were created or resized."""
        self._bound = (view_uniform, hdr_view, depth_view)
        self.group = self.frame.device.create_bind_group(
            label="post",
            layout=self.pipeline.get_bind_group_layout(0),
            entries=[
                {"binding": 0, "resource": {"buffer": view_uniform}},
                {"binding": 1, "resource": hdr_view},
                {"binding": 2, "resource": depth_view},
            ],
        )

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
        rpass.set_bind_group(0, self.group)
        rpass.draw(3)
