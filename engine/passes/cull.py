"""The cull passes of the standard frame (shaders/cull.wgsl): ``Cull.Reset`` (transfer),
``Shadow.Cull`` (every shadow cascade in one dispatch), ``Cull.Early`` and ``Cull.Late``
(compute), and the state they share (``CullResources``).

Two-phase occlusion culling after zeux/niagara (Arseny Kapoulkine, "niagara" renderer,
2020); the numpy specification of every decision is ``engine.culling.reference``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import wgpu

from engine.culling.counters import COUNTER_WORDS
from engine.culling.cull import (
    CULL_UNIFORM_SIZE,
    cull_bind_group,
    cull_bind_group_layout,
    workgroups,
)
from engine.graph import ComputePass, TransferPass
from engine.passes.resources import ARGS, COUNTERS, INSTANCES, PYRAMID, REMAP, VISIBILITY
from engine.shader_registry import shader_pipeline

if TYPE_CHECKING:
    from engine.passes.resources import FrameResources
    from engine.settings import FrameSettings

_ENTRY = {"Shadow.Cull": "cull_shadow", "Cull.Early": "cull_early", "Cull.Late": "cull_late"}


class CullResources:
    """The cull's uniform, counters (the eight, then each shadow cascade's block) and bind
    group layout, and ``reset``: the next ``Cull.Reset`` makes the cull ignore last frame's
    visibility (first frame, resize, knob change, freeze).

    Args:
        device: the ``wgpu.GPUDevice``; ``gs``: the ``GpuScene`` bound to the cull.
    """

    def __init__(self, device: wgpu.GPUDevice, gs):
        self.device, self.gs = device, gs
        self.workgroups = workgroups(gs.count)
        self.counters = device.create_buffer(
            label="cull counters",
            size=COUNTER_WORDS * 4,
            usage=wgpu.BufferUsage.STORAGE | wgpu.BufferUsage.COPY_SRC | wgpu.BufferUsage.COPY_DST,
        )
        self.uniform = device.create_buffer(
            label="cull",
            size=CULL_UNIFORM_SIZE,
            usage=wgpu.BufferUsage.UNIFORM | wgpu.BufferUsage.COPY_DST,
        )
        self.layout = cull_bind_group_layout(device)
        self.reset = True
        self._group: tuple | None = None  # (pyramid view, args buffer, bind group)

    def group(self, pyramid_view) -> wgpu.GPUBindGroup:
        """The bind group over the pyramid's current view and the scene's current regions
        (rebuilt when either was recreated: a resize, a cascade count)."""
        g = self._group
        if g is None or g[0] is not pyramid_view or g[1] is not self.gs.args:
            group = cull_bind_group(
                self.device, self.layout, self.uniform, self.gs, self.counters, pyramid_view
            )
            self._group = (pyramid_view, self.gs.args, group)
        return self._group[2]


class CullResetPass(TransferPass):
    """``Cull.Reset``: copy last frame's counters into the readback rings (the eight, and
    the block of each cascade that frame had) before clearing them, restore the indirect
    arguments from their template, clear the counters; moved instances' transforms into
    place, their old ones kept as the previous (``GpuScene.record_moves``)."""

    writes = (ARGS, COUNTERS, INSTANCES)

    def __init__(self, res: FrameResources, name: str = "Cull.Reset"):
        super().__init__(name)
        self.res = res
        self._last_recorded: int | None = None
        self._last_cascades = 0  # cascades the last recorded frame culled

    def enabled_by(self, settings: FrameSettings) -> bool:
        return True

    def record(self, ctx, encoder) -> None:
        r = self.res
        if self._last_recorded is not None:
            r.stats.record_copy(encoder, r.cull.counters, self._last_recorded)
            for c in r.cascade_stats[: self._last_cascades]:
                if c.active:
                    c.record_copy(encoder, r.cull.counters, self._last_recorded)
        self._last_recorded = ctx.frame_index
        s = r.settings
        self._last_cascades = s.cascades if s.shadows else 0
        r.gs.record_moves(encoder)
        r.gs.reset_args(encoder)
        encoder.clear_buffer(r.cull.counters)
        r.cull.reset = False  # the uniform written for this frame carried FLAG_RESET


class CullPass(ComputePass):
    """One cull phase: ``Shadow.Cull`` (casters vs each shadow cascade's volume extended
    toward the sun: one thread per instance and cascade, cascade ``c`` into region ``2 + c``
    and its own counter block), ``Cull.Early`` (last frame's visible set, frustum only) or
    ``Cull.Late`` (everything: frustum, sub-pixel, Hi-Z; newly visible queued). One thread per
    instance.

    Args:
        res: the frame's ``FrameResources`` (``cull``, ``pyramid``, ``settings``).
        name: ``"Shadow.Cull"``, ``"Cull.Early"`` or ``"Cull.Late"``.
    """

    def __init__(self, res: FrameResources, name: str):
        super().__init__(name)
        self.res = res
        self.entry = _ENTRY[name]
        d, c = res.device, res.cull
        layout = d.create_pipeline_layout(bind_group_layouts=[c.layout])
        self.shader = shader_pipeline(
            d,
            "cull.wgsl",
            lambda m: d.create_compute_pipeline(
                label=name, layout=layout, compute={"module": m, "entry_point": self.entry}
            ),
        )  # its own module: hot reload rebuilds it

    @property
    def pipeline(self):  # the current one: hot reload replaces it (engine/shader_registry.py)
        return self.shader.get()

    def enabled_by(self, settings: FrameSettings) -> bool:
        if self.name == "Shadow.Cull":
            return settings.shadows
        if self.name == "Cull.Early":
            return settings.cull and settings.occlusion
        return True

    @property
    def reads(self) -> tuple[str, ...]:
        s = self.res.settings
        if self.name == "Cull.Late" and s.cull and s.occlusion:
            return (INSTANCES, VISIBILITY, ARGS, PYRAMID)
        return (INSTANCES, VISIBILITY, ARGS)

    @property
    def writes(self) -> tuple[str, ...]:
        if self.name == "Cull.Late":
            return (ARGS, REMAP, COUNTERS, VISIBILITY)
        return (ARGS, REMAP, COUNTERS)

    def record(self, ctx, cpass) -> None:
        r = self.res
        cpass.set_pipeline(self.pipeline)
        cpass.set_bind_group(0, r.cull.group(r.cull_pyramid()))
        rows = r.settings.cascades if self.entry == "cull_shadow" else 1
        cpass.dispatch_workgroups(r.cull.workgroups, rows, 1)
