"""The render graph: passes in declaration order, graph-owned resources, automatic timing.

A pass is one of three kinds:

* ``RenderPass`` — the graph begins the wgpu render pass from ``targets(ctx)`` (a dict of
  ``color_attachments`` / ``depth_stencil_attachment``) and hands the pass encoder to
  ``record(ctx, rpass)``.
* ``ComputePass`` — the graph begins the compute pass; ``record(ctx, cpass)``.
* ``TransferPass`` — copies and clears on the command encoder; ``record(ctx, encoder)``,
  wrapped in a debug group of the pass's name.

Because the graph begins every pass itself, it can put the profiler's ``timestamp_writes``
on the pass descriptor and bracket the recording with a CPU scope: a pass added by anyone
is timed without asking. ``graph.profiler`` is ``None`` by default and then costs one
``is None`` test per pass: no query set exists and no timestamp is written.

The profiler sink protocol (implemented by ``engine.profiling.FrameProfiler``)::

    begin_frame(frame_index, encoder)
    begin_pass(name, kind, encoder) -> timestamp_writes dict or None
    end_pass(name, kind, encoder)
    end_frame(encoder)           # resolve queries into this frame's pool
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, ClassVar

import wgpu

RENDER, COMPUTE, TRANSFER = "render", "compute", "transfer"


@dataclass(eq=False)
class Pass:
    """A named step of the frame. ``name`` is what every table, trace and capture shows."""

    name: str
    record: Callable[..., None]
    kind: ClassVar[str] = ""
    enabled: bool = True


@dataclass(eq=False)
class RenderPass(Pass):
    targets: Callable[[FrameContext], dict] = field(default=lambda ctx: {})
    kind: ClassVar[str] = RENDER


@dataclass(eq=False)
class ComputePass(Pass):
    kind: ClassVar[str] = COMPUTE


@dataclass(eq=False)
class TransferPass(Pass):
    kind: ClassVar[str] = TRANSFER


@dataclass
class TextureDesc:
    format: str
    usage: int
    scale: float = 1.0  # relative to the output size, when ``size`` is None
    size: tuple[int, int] | None = None  # absolute size in pixels
    mip_level_count: int | Callable[[int, int], int] = 1


@dataclass
class FrameContext:
    """What a pass sees while it records one frame.

    Attributes:
        device: the ``wgpu.GPUDevice``.
        graph: the graph (``graph.texture(name)``, ``graph.buffer(name)``).
        frame_index: 0-based index of the frame being recorded.
        time: seconds of simulated time for this frame.
        size: output size ``(width, height)`` in pixels.
        output: the imported output texture view (window surface or capture target).
    """

    device: wgpu.GPUDevice
    graph: RenderGraph
    frame_index: int
    time: float
    size: tuple[int, int]
    output: Any


class RenderGraph:
    """Passes run in declaration order, with graph-owned textures and buffers.

    Args:
        device: the device every resource is created on.
        output_format: format of the imported output texture (e.g. ``"rgba8unorm-srgb"``).
        size: output size ``(width, height)`` in pixels.

    Raises:
        ValueError: from ``add`` for an empty or duplicate pass name.
    """

    def __init__(self, device: wgpu.GPUDevice, *, output_format: str, size: tuple[int, int]):
        self.device = device
        self.output_format = output_format
        self.size = size
        self.passes: list[Pass] = []
        self.profiler = None  # optional sink; see module docstring
        self._texture_descs: dict[str, TextureDesc] = {}
        self._textures: dict[str, wgpu.GPUTexture] = {}
        self._views: dict[str, wgpu.GPUTextureView] = {}
        self._buffers: dict[str, wgpu.GPUBuffer] = {}
        self._resize_callbacks: list[Callable[[tuple[int, int]], None]] = []
        self.generation = 0  # bumped whenever size-dependent textures are recreated

    # -- passes ---------------------------------------------------------------------------
    def add(self, p: Pass) -> Pass:
        if not isinstance(p.name, str) or not p.name.strip():
            raise ValueError(f"render graph pass name must be a non-empty string, got {p.name!r}")
        if any(q.name == p.name for q in self.passes):
            raise ValueError(f"render graph already has a pass named {p.name!r}")
        self.passes.append(p)
        return p

    def pass_names(self) -> list[str]:
        return [p.name for p in self.passes if p.enabled]

    # -- resources ------------------------------------------------------------------------
    def create_texture(self, name: str, desc: TextureDesc) -> wgpu.GPUTexture:
        """Declare a graph-owned texture; relative ones are recreated on ``resize``."""
        self._texture_descs[name] = desc
        self._make_texture(name)
        return self._textures[name]

    def _make_texture(self, name: str) -> None:
        d = self._texture_descs[name]
        w, h = d.size or (
            max(1, math.floor(self.size[0] * d.scale)),
            max(1, math.floor(self.size[1] * d.scale)),
        )
        mips = d.mip_level_count(w, h) if callable(d.mip_level_count) else d.mip_level_count
        old = self._textures.get(name)
        if old is not None:
            old.destroy()
        tex = self.device.create_texture(
            label=name, size=(w, h, 1), format=d.format, usage=d.usage, mip_level_count=mips
        )
        self._textures[name] = tex
        self._views[name] = tex.create_view(label=name)

    def create_buffer(self, name: str, *, size: int, usage: int) -> wgpu.GPUBuffer:
        """Declare (or replace) a graph-owned buffer of ``size`` bytes."""
        old = self._buffers.get(name)
        if old is not None:
            old.destroy()
        buf = self.device.create_buffer(label=name, size=max(4, size), usage=usage)
        self._buffers[name] = buf
        return buf

    def texture(self, name: str) -> wgpu.GPUTexture:
        return self._textures[name]

    def view(self, name: str) -> wgpu.GPUTextureView:
        return self._views[name]

    def buffer(self, name: str) -> wgpu.GPUBuffer:
        return self._buffers[name]

    def on_resize(self, callback: Callable[[tuple[int, int]], None]) -> None:
        """Call ``callback(size)`` after size-relative textures were recreated."""
        self._resize_callbacks.append(callback)

    def resize(self, size: tuple[int, int]) -> None:
        """Recreate every size-relative texture for a new output size in pixels."""
        if tuple(size) == tuple(self.size):
            return
        self.size = tuple(size)
        for name, d in self._texture_descs.items():
            if d.size is None:
                self._make_texture(name)
        self.generation += 1
        for cb in self._resize_callbacks:
            cb(self.size)

    # -- execution ------------------------------------------------------------------------
    def execute(self, encoder: wgpu.GPUCommandEncoder, ctx: FrameContext) -> None:
        """Record every enabled pass into ``encoder``, in declaration order."""
        prof = self.profiler
        if prof is None:
            for p in self.passes:
                if p.enabled:
                    _encode(p, encoder, ctx, None)
            return
        prof.begin_frame(ctx.frame_index, encoder)
        for p in self.passes:
            if p.enabled:
                tw = prof.begin_pass(p.name, p.kind, encoder)
                _encode(p, encoder, ctx, tw)
                prof.end_pass(p.name, p.kind, encoder)
        prof.end_frame(encoder)


def _encode(p: Pass, encoder, ctx: FrameContext, timestamp_writes) -> None:
    if p.kind == RENDER:
        rpass = encoder.begin_render_pass(
            label=p.name, timestamp_writes=timestamp_writes, **p.targets(ctx)
        )
        p.record(ctx, rpass)
        rpass.end()
    elif p.kind == COMPUTE:
        cpass = encoder.begin_compute_pass(label=p.name, timestamp_writes=timestamp_writes)
        p.record(ctx, cpass)
        cpass.end()
    else:
        encoder.push_debug_group(p.name)
        p.record(ctx, encoder)
        encoder.pop_debug_group()
