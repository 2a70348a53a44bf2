"""The cull passes of the standard frame (shaders/cull.wgsl): ``Cull.Reset`` (transfer),
``Shadow.Cull``, ``Cull.Early`` and ``Cull.Late`` (compute).

Two-phase occlusion culling after zeux/niagara (Arseny Kapoulkine, "niagara" renderer,
2020); the numpy specification of every decision is ``engine.culling.reference``. Shared
state (scene buffers, counters, the cull uniform and bind group) lives on the
``engine.frame.StandardFrame`` each pass is given.
"""

from __future__ import annotations

from engine.graph import ComputePass, TransferPass
from engine.settings import FrameSettings
from engine.shader_registry import shader_pipeline

# Graph resource names (declared reads/writes; the graph checks the order).
INSTANCES = "scene.instances"  # transforms, bounds, mesh ids: CPU uploads (imported)
VISIBILITY = "cull.visibility"  # per-instance state kept from the last frame (imported)
ARGS = "cull.args"  # indirect draw arguments, per region and batch
REMAP = "cull.remap"  # instance remap lists the draws read
COUNTERS = "cull.counters"  # the eight atomic counters
PYRAMID = "hiz.pyramid"

_ENTRY = {"Shadow.Cull": "cull_shadow", "Cull.Early": "cull_early", "Cull.Late": "cull_late"}


class CullResetPass(TransferPass):
    """``Cull.Reset``: copy last frame's counters into the readback ring (before clearing
    them), restore the indirect arguments from their template, clear the counters."""

    writes = (ARGS, COUNTERS)

    def __init__(self, frame):
        super().__init__("Cull.Reset")
        self.frame = frame
        self._last_recorded: int | None = None

    def enabled_by(self, settings: FrameSettings) -> bool:
        return True

    def record(self, ctx, encoder) -> None:
        f = self.frame
        if self._last_recorded is not None:
            f.stats.record_copy(encoder, f.counters, self._last_recorded)
        self._last_recorded = ctx.frame_index
        f.gs.reset_args(encoder)
        encoder.clear_buffer(f.counters)
        f.reset_recorded()


class CullPass(ComputePass):
    """One cull phase: ``Shadow.Cull`` (casters vs the sun's volume extended toward the sun),
    ``Cull.Early`` (last frame's visible set, frustum only) or ``Cull.Late`` (everything:
    frustum, sub-pixel, Hi-Z; newly visible queued). One thread per instance.

    Args:
        frame: the ``StandardFrame`` (``device``, ``cull_layout``, ``cull_group``,
            ``workgroups``).
        name: ``"Shadow.Cull"``, ``"Cull.Early"`` or ``"Cull.Late"``.
    """

    def __init__(self, frame, name: str):
        super().__init__(name)
        self.frame = frame
        self.entry = _ENTRY[name]
        d = frame.device
        layout = d.create_pipeline_layout(bind_group_layouts=[frame.cull_layout])
        self.shader = shader_pipeline(
            d,
            "cull.wgsl",
            lambda m: d.create_compute_pipeline(
                label=name, layout=layout, compute={"module": m, "entry_point": self.entry}
            ),
        )  # its own module (not frame.cull_module): hot reload rebuilds it

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
        s = self.frame.settings
        if self.name == "Cull.Late" and s.cull and s.occlusion:
            return (INSTANCES, VISIBILITY, ARGS, PYRAMID)
        return (INSTANCES, VISIBILITY, ARGS)

    @property
    def writes(self) -> tuple[str, ...]:
        if self.name == "Cull.Late":
            return (ARGS, REMAP, COUNTERS, VISIBILITY)
        return (ARGS, REMAP, COUNTERS)

    def record(self, ctx, cpass) -> None:
        cpass.set_pipeline(self.pipeline)
        cpass.set_bind_group(0, self.frame.cull_group)
        cpass.dispatch_workgroups(self.frame.workgroups, 1, 1)
