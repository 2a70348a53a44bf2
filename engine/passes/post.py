"""Post: bloom, exposure and ACES-fitted tone mapping to the output.

Tone curve: Krzysztof Narkowicz, "ACES Filmic Tone Mapping Curve" (2016), a fit of the ACES
reference rendering transform. Output is linear; the graph's ``-srgb`` output encodes it.
"""

from __future__ import annotations

import numpy as np
import wgpu

from engine.graph import RenderPass
from engine.passes.bloom import BLOOM_STRENGTH
from engine.passes.bundles import BundleCache
from engine.passes.resources import (
    BLOOM,
    EXPOSURE,
    HDR,
    HDR_FORMAT,
    OUTPUT,
    TAA,
    BindGroupCache,
    clear_output,
)
from engine.passes.screen import fullscreen_pipeline
from engine.shader_registry import shader_pipeline

__all__ = ["HDR_FORMAT", "PostPass", "PostPipeline"]


class PostPipeline:
    """Fullscreen-triangle pipeline reading the colour, the bloom and the exposure."""

    def __init__(self, device: wgpu.GPUDevice, output_format: str):
        self.device = device
        self.shader = shader_pipeline(device, "post.wgsl", lambda m: self._make(m, output_format))

    def _make(self, m, output_format: str) -> wgpu.GPURenderPipeline:
        return fullscreen_pipeline(self.device, m, "fs_post", output_format, label="post")

    @property
    def pipeline(self):  # the current one: hot reload replaces it (engine/shader_registry.py)
        return self.shader.get()


class PostPass(RenderPass):
    """``Post``: bloom (``post.bloom``, with ``BLOOM_STRENGTH``),
    exposure (the knob, or ``post.exposure`` in auto) and tone map to the output. The colour
    is ``post.taa`` with TAA on, else ``frame.hdr``."""

    writes = (OUTPUT,)

    def __init__(self, res, name: str = "Post"):
        super().__init__(name)
        self.res = res
        d = res.device
        self.shader = PostPipeline(d, res.graph.output_format).shader
        self.shader.on_reload(lambda: self._groups.clear())  # "auto" layout: new groups
        self.sampler = d.create_sampler(label="post", mag_filter="linear", min_filter="linear")
        self.params = d.create_buffer(
            label="post params",
            size=16,
            usage=wgpu.BufferUsage.UNIFORM | wgpu.BufferUsage.COPY_DST,
        )
        self._params: tuple | None = None  # last written
        self._groups = BindGroupCache()
        self.bundles = BundleCache(d, name)

    def enabled_by(self, settings) -> bool:
        return settings.post

    @property
    def pipeline(self):  # the current one: hot reload replaces it (engine/shader_registry.py)
        return self.shader.get()

    @property
    def reads(self) -> tuple[str, ...]:
        s = self.res.settings
        r = (TAA if s.taa else HDR,)
        if s.bloom:
            r += (BLOOM,)
        if s.auto_exposure:
            r += (EXPOSURE,)
        return r

    def group(self) -> wgpu.GPUBindGroup:
        """The bind group over this frame's colour, depth, bloom and exposure (cached per
        size, history parity and TAA knob: never rebuilt in a steady state)."""
        g, taa = self.res.graph, self.res.settings.taa
        key = (g.resource_key(), taa)

        def build() -> wgpu.GPUBindGroup:
            return self.res.device.create_bind_group(
                label="post",
                layout=self.pipeline.get_bind_group_layout(0),
                entries=[
                    {"binding": 0, "resource": {"buffer": self.res.view_uniform}},
                    {"binding": 1, "resource": g.view(TAA if taa else HDR)},
                    {"binding": 3, "resource": g.view(BLOOM)},
                    {"binding": 4, "resource": self.sampler},
                    {"binding": 5, "resource": {"buffer": g.buffer(EXPOSURE)}},
                    {"binding": 6, "resource": {"buffer": self.params}},
                ],
            )

        return self._groups.get(key, build)

    def targets(self, ctx) -> dict:
        return clear_output(ctx)

    def record(self, ctx, rpass) -> None:
        s = self.res.settings
        params = (BLOOM_STRENGTH if s.bloom else 0.0, 1.0 if s.auto_exposure else 0.0)
        if params != self._params:  # written when a knob changes, not every frame
            self.res.device.queue.write_buffer(self.params, 0, np.array([*params, 0, 0], "f4"))
            self._params = params
        pipe, group = self.pipeline, self.group()  # one bundle per group (history parity)

        def commands(enc) -> None:
            enc.set_pipeline(pipe)
            enc.set_bind_group(0, group)
            enc.draw(3)

        fmt = self.res.graph.output_format
        self.bundles.record(rpass, (pipe, group), commands, color_formats=(fmt,))
