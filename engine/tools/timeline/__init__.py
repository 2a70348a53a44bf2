"""The timeline tool: the HUD's ``timeline`` mode, GPU ms per pass over the last frames as a
stacked column chart."""

from __future__ import annotations

from engine.tools.timeline.panel import TimelinePanel


class TimelineTool:
    name = "timeline"
    panels = (TimelinePanel,)

    def install(self, ctx) -> None:
        self.ctx = ctx

    def close(self) -> None:
        """Nothing to undo."""
