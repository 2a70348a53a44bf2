"""The cull tool: the HUD's ``cull`` mode, the GPU culler's eight counters and a pie of how
it classified the instances, and every other counter block (a technique's), from the
telemetry's newest counters."""

from __future__ import annotations

from engine.tools.cull.panel import CountersPanel, CullPanel


class CullTool:
    name = "cull"
    panels = (CullPanel, CountersPanel)

    def install(self, ctx) -> None:
        self.ctx = ctx

    def close(self) -> None:
        """Nothing to undo."""
