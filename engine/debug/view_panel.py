"""The HUD's view panel: the legend of the debug view shown (``engine.tools.views``)."""

from __future__ import annotations

import textwrap

from engine.debug.perf import DIM, HEADER, PANEL_BG, TEXT
from engine.overlay.grid import DebugOverlay
from engine.overlay.panel import HudData, Panel

W = 44  # cells


class ViewPanel(Panel):
    """Which view is on and how to read it (its legend, wrapped), with the keys. Left out
    while no view is on."""

    key, modes = "view", ("view",)

    def __init__(self, ctx=None):
        self.ctx = ctx
        self._shown: str | None = None

    def _tool(self):
        from engine.tools.views import ViewTool

        return None if self.ctx is None else self.ctx.find(ViewTool)

    def _lines(self) -> list[str]:
        tool = self._tool()
        if tool is None or tool.current is None:
            return []
        return textwrap.wrap(tool.describe(), W - 2)

    def tick(self, data: HudData) -> bool:
        tool = self._tool()
        now = None if tool is None or tool.current is None else tool.describe()
        changed, self._shown = now != self._shown, now
        return changed

    def has_content(self, data: HudData) -> bool:
        return bool(self._lines())

    def empty_line(self, data: HudData) -> str:
        return "VIEW: none on ('view NAME' or F3)"

    def sizes(self, data: HudData) -> tuple[tuple[int, int], ...]:
        return ((W, len(self._lines()) + 2),)

    def draw(self, ov: DebugOverlay, col: int, row: int, form: int, data: HudData) -> None:
        lines = self._lines()
        ov.fill(col, row, W, len(lines) + 2, PANEL_BG)
        ov.text(col + 1, row, "VIEW [F3 next, 'view off']", HEADER)
        for i, line in enumerate(lines):
            ov.text(col + 1, row + 1 + i, line, TEXT)
        over = self._tool().current in ("culled", "wireframe")  # drawn over Post's picture
        how = "drawn over the normal picture" if over else "drawn in place of Post's tone map"
        ov.text(col + 1, row + 1 + len(lines), how, DIM)
