"""``Post.TAA``: temporal anti-aliasing (shaders/post_taa.wgsl) over a graph history pair.

The standard frame renders with the projection offset by ``jitter(frame_index)`` (a Halton
(2, 3) sequence of ``JITTER_SAMPLES`` sub-pixel offsets); this pass reprojects last frame's
resolved image (``post.taa@prev``) along the frame's motion vectors (``frame.motion``: the
camera's and the moving instances'), clamps it to the current 3x3
neighbourhood and blends ``CURRENT_WEIGHT`` of the new frame in. It takes the current frame
alone on a reset: the first frame, a resize (the graph clears the history), a knob change
or a camera cut (``FrameResources.camera_cut``).
"""

from __future__ import annotations

import numpy as np
import wgpu

from engine.graph import ComputePass, TextureDesc
from engine.passes.resources import DEPTH, HDR, HDR_FORMAT, MOTION, TAA, BindGroupCache
from engine.shader_registry import shader_pipeline

JITTER_SAMPLES = 16
CURRENT_WEIGHT = 0.1  # of the new frame in the blend (0.9 of the clamped history)


def halton(index: int, base: int) -> float:
    """The radical inverse of ``index`` (>= 1) in ``base``: a number in (0, 1)."""
    f, r = 1.0, 0.0
    while index > 0:
        f /= base
        r += f * (index % base)
        index //= base
    return r


#: Sub-pixel offsets in pixels (x right, y down), each component in (-0.5, 0.5).
JITTER = tuple((halton(i, 2) - 0.5, halton(i, 3) - 0.5) for i in range(1, JITTER_SAMPLES + 1))


def jitter_matrix(jitter: tuple[float, float], size: tuple[int, int]) -> np.ndarray:
    """``(4, 4)`` float64 clip-space translation that moves the image by ``jitter`` pixels
    (x right, y down) on a ``size`` ``(W, H)`` target: ``J @ proj`` is the jittered
    projection."""
    j = np.identity(4)
    j[0, 3] = 2.0 * jitter[0] / size[0]
    j[1, 3] = -2.0 * jitter[1] / size[1]
    return j


def jittered_projection(proj: np.ndarray, jitter: tuple[float, float], size) -> np.ndarray:
    """``jitter_matrix(jitter, size) @ proj`` as float64, by adding multiples of the w row
    (two row operations instead of a matrix product); ``proj`` itself when ``jitter`` is 0."""
    if jitter == (0.0, 0.0):
        return proj
    p = np.array(proj, np.float64)
    p[0] += (2.0 * jitter[0] / size[0]) * p[3]
    p[1] += (-2.0 * jitter[1] / size[1]) * p[3]
    return p


class TaaPass(ComputePass):
    """``Post.TAA``: ``frame.hdr`` + ``frame.depth`` + ``frame.motion`` + ``post.taa@prev``
    -> ``post.taa``."""

    reads = (HDR, DEPTH, MOTION, TAA + "@prev")
    writes = (TAA,)

    def __init__(self, res, name: str = "Post.TAA"):
        super().__init__(name)
        self.res = res
        d, g = res.device, res.graph
        tex = wgpu.TextureUsage
        usage = tex.STORAGE_BINDING | tex.TEXTURE_BINDING | tex.COPY_SRC
        g.create_texture(TAA, TextureDesc(HDR_FORMAT, usage), history=True)
        self.shader = shader_pipeline(
            d,
            "post_taa.wgsl",
            lambda m: d.create_compute_pipeline(
                label=name, layout="auto", compute={"module": m, "entry_point": "resolve"}
            ),
        )
        self.shader.on_reload(lambda: self._groups.clear())  # "auto" layout: new groups
        self.uniform = d.create_buffer(
            label=name, size=16, usage=wgpu.BufferUsage.UNIFORM | wgpu.BufferUsage.COPY_DST
        )
        self.sampler = d.create_sampler(label="taa", mag_filter="linear", min_filter="linear")
        self._groups = BindGroupCache()
        self._data = np.zeros(4, np.float32)
        self.reset_frames = 0  # frames that took the current frame alone (tests, HUD)

    @property
    def pipeline(self):  # the current one: hot reload replaces it (engine/shader_registry.py)
        return self.shader.get()

    def enabled_by(self, settings) -> bool:
        return settings.post and settings.taa

    def _group(self):
        g = self.res.graph
        key = g.resource_key()

        def build() -> wgpu.GPUBindGroup:
            return self.res.device.create_bind_group(
                layout=self.pipeline.get_bind_group_layout(0),
                entries=[
                    {"binding": 0, "resource": {"buffer": self.uniform}},
                    {"binding": 1, "resource": g.view(HDR)},
                    {"binding": 2, "resource": g.view(DEPTH)},
                    {"binding": 3, "resource": g.view(TAA + "@prev")},
                    {"binding": 4, "resource": self.sampler},
                    {"binding": 5, "resource": g.view(TAA)},
                    {"binding": 6, "resource": g.view(MOTION)},
                ],
            )

        return self._groups.get(key, build)

    def record(self, ctx, cpass) -> None:
        r = self.res
        reset = r.camera_cut or r.graph.history_fresh(TAA) or r.prev_view_proj is None
        self.reset_frames += reset
        u = self._data
        u[0] = 1.0 if reset else CURRENT_WEIGHT
        r.device.queue.write_buffer(self.uniform, 0, u.tobytes())
        w, h = r.graph.size
        cpass.set_pipeline(self.pipeline)
        cpass.set_bind_group(0, self._group())
        cpass.dispatch_workgroups((w + 7) // 8, (h + 7) // 8, 1)
