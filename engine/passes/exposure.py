"""Auto-exposure: ``Post.Luminance`` (a GPU histogram of log2 luminance,
shaders/post_luminance.wgsl) and ``Post.Exposure`` (the exposure adapted from last frame's
value, a graph history buffer, shaders/post_exposure.wgsl). Nothing is read back: ``Post``
reads the exposure from the GPU buffer.

The numpy twins (``histogram_reference``, ``exposure_target``) specify both.
"""

from __future__ import annotations

import math
import struct

import numpy as np
import wgpu

from engine.graph import ComputePass
from engine.passes.resources import EXPOSURE, HDR, HISTOGRAM, BindGroupCache
from engine.shader_registry import shader_pipeline

BINS = 64
MIN_LOG2 = -10.0  # bin 0: luminance below 2^-10 (cd/m^2-free: linear scene units)
LOG2_RANGE = 16.0  # bins 1..63 cover [2^-10, 2^6)
KEY = 0.18  # middle grey: the mean log luminance is exposed to this
ADAPT_SPEED = 1.5  # 1/s: EV distance to the target shrinks by exp(-1.5 dt)
EV_RANGE = (-8.0, 8.0)  # exposure clamp, log2 of the multiplier
EXPOSURE_DTYPE = np.dtype(
    [("exposure", "<f4"), ("goal", "<f4"), ("mean_log2", "<f4"), ("counted", "<f4")]
)
_PARAMS = struct.Struct("<8f")  # the shader's Params: dt, speed, key, fresh, EV range, pad
_RGB_TO_Y = np.array([0.2126, 0.7152, 0.0722], np.float32)  # Rec. 709 luminance


def histogram_reference(rgb: np.ndarray) -> np.ndarray:
    """``(BINS,)`` int64 counts of ``rgb`` ``(..., 3)`` float pixels, as the shader bins
    them: bin 0 below ``2**MIN_LOG2`` (or NaN), bins 1..63 evenly in log2 luminance."""
    lum = (np.asarray(rgb, np.float32)[..., :3] @ _RGB_TO_Y).ravel()
    bins = np.zeros(lum.shape, np.int64)
    ok = lum >= np.float32(2.0**MIN_LOG2)
    t = (np.log2(lum[ok]) - np.float32(MIN_LOG2)) / np.float32(LOG2_RANGE)
    bins[ok] = 1 + np.minimum((t * np.float32(BINS - 1)).astype(np.int64), BINS - 2)
    return np.bincount(bins, minlength=BINS)


def exposure_target(rgb: np.ndarray) -> float:
    """The exposure multiplier auto-exposure aims at for ``rgb`` ``(..., 3)``: ``KEY`` over
    the geometric mean luminance of the pixels above bin 0 (exact, not binned), clamped to
    ``EV_RANGE``; ``1.0``-stop-accurate to within half a bin of the GPU (0.13 EV)."""
    lum = (np.asarray(rgb, np.float64)[..., :3] @ _RGB_TO_Y.astype(np.float64)).ravel()
    lum = lum[lum >= 2.0**MIN_LOG2]
    mean = float(np.log2(lum).mean()) if len(lum) else math.log2(KEY)
    return 2.0 ** float(np.clip(math.log2(KEY) - mean, *EV_RANGE))


class LuminancePass(ComputePass):
    """``Post.Luminance``: clears the histogram, then counts every HDR pixel into it
    (16x16 threads per workgroup; per-workgroup counts, one atomic per bin per workgroup)."""

    reads = (HDR,)
    writes = (HISTOGRAM,)

    def __init__(self, res, name: str = "Post.Luminance"):
        super().__init__(name)
        self.res = res
        d = res.device
        usage = wgpu.BufferUsage.STORAGE | wgpu.BufferUsage.COPY_SRC
        res.graph.create_buffer(HISTOGRAM, size=BINS * 4, usage=usage)
        self.shader = shader_pipeline(
            d,
            "post_luminance.wgsl",
            lambda m: tuple(
                d.create_compute_pipeline(
                    label=f"{name} {e}", layout="auto", compute={"module": m, "entry_point": e}
                )
                for e in ("clear_bins", "histogram_bins")
            ),
        )
        self.shader.on_reload(self._unbind)  # "auto" layouts: new pipelines, new groups
        self._groups: tuple | None = None

    @property
    def clear(self):  # the current pipelines: hot reload replaces them
        return self.shader.get()[0]

    @property
    def count(self):
        return self.shader.get()[1]

    def _unbind(self) -> None:
        self._groups = None

    def enabled_by(self, settings) -> bool:
        return settings.post and settings.auto_exposure

    def _bind(self):
        g, d = self.res.graph, self.res.device
        if self._groups is None or self._groups[0] != g.generation:
            buf = {"buffer": g.buffer(HISTOGRAM)}
            clear = d.create_bind_group(
                layout=self.clear.get_bind_group_layout(0),
                entries=[{"binding": 1, "resource": buf}],
            )
            count = d.create_bind_group(
                layout=self.count.get_bind_group_layout(0),
                entries=[{"binding": 0, "resource": g.view(HDR)}, {"binding": 1, "resource": buf}],
            )
            self._groups = (g.generation, clear, count)
        return self._groups[1:]

    def record(self, ctx, cpass) -> None:
        clear, count = self._bind()
        w, h = self.res.graph.size
        cpass.set_pipeline(self.clear)
        cpass.set_bind_group(0, clear)
        cpass.dispatch_workgroups(1, 1, 1)
        cpass.set_pipeline(self.count)
        cpass.set_bind_group(0, count)
        cpass.dispatch_workgroups((w + 15) // 16, (h + 15) // 16, 1)


class ExposurePass(ComputePass):
    """``Post.Exposure``: the exposure for this frame from the histogram and last frame's
    exposure (``post.exposure@prev``), written to ``post.exposure`` (``EXPOSURE_DTYPE``)."""

    reads = (HISTOGRAM, EXPOSURE + "@prev")
    writes = (EXPOSURE,)

    def __init__(self, res, name: str = "Post.Exposure"):
        super().__init__(name)
        self.res = res
        d = res.device
        usage = wgpu.BufferUsage.STORAGE | wgpu.BufferUsage.COPY_SRC
        res.graph.create_buffer(EXPOSURE, size=EXPOSURE_DTYPE.itemsize, usage=usage, history=True)
        self.params = d.create_buffer(
            label=f"{name} params",
            size=32,
            usage=wgpu.BufferUsage.UNIFORM | wgpu.BufferUsage.COPY_DST,
        )
        self.shader = shader_pipeline(
            d,
            "post_exposure.wgsl",
            lambda m: d.create_compute_pipeline(
                label=name, layout="auto", compute={"module": m, "entry_point": "adapt"}
            ),
        )
        self.shader.on_reload(lambda: self._groups.clear())  # "auto" layout: new groups
        self._groups = BindGroupCache()
        self._last_time: float | None = None

    @property
    def pipeline(self):  # the current one: hot reload replaces it (engine/shader_registry.py)
        return self.shader.get()

    def enabled_by(self, settings) -> bool:
        return settings.post and settings.auto_exposure

    def _group(self):
        g = self.res.graph
        key = g.resource_key()

        def build() -> wgpu.GPUBindGroup:
            return self.res.device.create_bind_group(
                layout=self.pipeline.get_bind_group_layout(0),
                entries=[
                    {"binding": 0, "resource": {"buffer": self.params}},
                    {"binding": 1, "resource": {"buffer": g.buffer(HISTOGRAM)}},
                    {"binding": 2, "resource": {"buffer": g.buffer(EXPOSURE + "@prev")}},
                    {"binding": 3, "resource": {"buffer": g.buffer(EXPOSURE)}},
                ],
            )

        return self._groups.get(key, build)

    def record(self, ctx, cpass) -> None:
        last, self._last_time = self._last_time, ctx.time
        dt = 0.0 if last is None else min(max(ctx.time - last, 0.0), 1.0)
        fresh = 1.0 if self.res.graph.history_fresh(EXPOSURE) else 0.0
        p = _PARAMS.pack(dt, ADAPT_SPEED, KEY, fresh, *EV_RANGE, 0.0, 0.0)
        self.res.device.queue.write_buffer(self.params, 0, p)
        cpass.set_pipeline(self.pipeline)
        cpass.set_bind_group(0, self._group())
        cpass.dispatch_workgroups(1, 1, 1)
