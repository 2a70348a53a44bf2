"""The HUD's memory panel: GPU bytes per category against ``--gpu-budget``, the largest
objects and wgpu's object counts (``engine.tools.memory.tool``)."""

from __future__ import annotations

from engine.hud.grid import DebugOverlay
from engine.hud.palette import BAR_BG, DIM, HEADER, HOT, PANEL_BG, TEXT
from engine.hud.panel import HudData, Panel
from engine.tools.memory.table import CATEGORIES, mib, totals

W, TOP, CHART = 46, 5, 3  # cells; rows of the largest objects; rows of the counts chart
LINE = (255, 200, 60, 255)
BAR = (110, 220, 120, 255)


class MemoryPanel(Panel):
    """Total (a bar against the budget), bytes per category, the ``TOP`` largest rows and
    the object counts' change since the first sample; refreshed once a second."""

    key, modes = "memory", ("memory",)
    in_all = False  # a long table: its own mode

    def __init__(self, tool=None):
        self.tool = tool
        self._total: int | None = None

    def _tool(self):
        return self.tool

    def tick(self, data: HudData) -> bool:
        tool = self._tool()
        if tool is None:
            return False
        total = totals(tool.refresh())["total"]
        changed, self._total = total != self._total, total
        return changed

    def has_content(self, data: HudData) -> bool:
        return self._tool() is not None

    def empty_line(self, data: HudData) -> str:
        return "MEMORY: the memory tool is not installed"

    def _height(self, tool) -> int:
        cats = [c for c, v in totals(tool.rows).items() if v and c != "total"]
        return 3 + len(cats) + min(TOP, len(tool.rows)) + len(_count_lines(tool)) + CHART

    def sizes(self, data: HudData) -> tuple[tuple[int, int], ...]:
        return ((W, self._height(self._tool())),)

    def draw(self, ov: DebugOverlay, col: int, row: int, form: int, data: HudData) -> None:
        tool = self._tool()
        t = totals(tool.rows)
        ov.fill(col, row, W, self._height(tool), PANEL_BG)
        x = col + 1
        budget = tool.budget
        head = f"GPU MEMORY {mib(t['total'])}" + ("" if budget is None else f" / {mib(budget)}")
        over = budget is not None and t["total"] > budget
        ov.text(x, row, head, HOT if over else HEADER)
        frac = t["total"] / budget if budget else 0.0
        ov.bar(x, row + 1, W - 2, frac, HOT if over else BAR, BAR_BG)
        y = row + 2
        for c in CATEGORIES:
            if t[c]:
                ov.text(x, y, f"{c:<10}{mib(t[c]):>12}", TEXT)
                y += 1
        for r in tool.rows[:TOP]:
            ov.text(x, y, f"{r.name[:20]:<20} {r.size[:12]:<12} {mib(r.bytes):>10}"[: W - 2], DIM)
            y += 1
        for line in _count_lines(tool):
            ov.text(x, y, line, DIM)
            y += 1
        self._chart(ov, x, y, W - 2, CHART, [h[1].get("Texture", 0) for h in tool.history])

    def _chart(self, ov, x, y, w, h, values) -> None:
        """wgpu's live texture count over the samples kept: a leak is a rising line."""
        v = values[-w * 2 :]
        if len(v) < 2:
            return
        lo, hi = min(v), max(v)
        span = max(hi - lo, 1)
        pts = [(x + w * i / (len(v) - 1), y + h - h * (c - lo) / span) for i, c in enumerate(v)]
        for (x0, y0), (x1, y1) in zip(pts, pts[1:], strict=False):
            ov.line(x0, y0, x1, y1, LINE)
        label = f"tex {lo}-{hi}"  # right-aligned: 4- and 5-digit counts stay inside
        ov.text(x + max(w - len(label), 0), y, label, DIM)


def _count_lines(tool) -> list[str]:
    """The object counts' line, wrapped between counts where it is wider than the panel:
    the heading, then as many ``kind count+change`` as each row holds (none cut)."""
    if not tool.history:
        return ["wgpu objects: none sampled"]
    span, parts = tool.count_changes()
    lines = [f"objects, change over {span:.0f} s:"]
    for part in parts:
        if len(lines[-1]) + 1 + len(part) <= W - 2:
            lines[-1] += " " + part
        else:
            lines.append(part)
    return lines
