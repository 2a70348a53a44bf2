"""The HUD's cull panel: the eight GPU cull counters and a pie of the classification."""

from __future__ import annotations

from engine.culling.counters import COUNTER_NAMES
from engine.debug.perf import DIM, HEADER, PANEL_BG, TEXT
from engine.overlay.grid import DebugOverlay
from engine.overlay.panel import HudData, Panel

# cull classification: frustum, small, occluded, visible
CULL_CLASSES = ("frustum_culled", "small_culled", "occluded", "visible")
CULL_COLORS = ((230, 90, 80), (240, 190, 60), (150, 110, 230), (90, 200, 110))


class CullPanel(Panel):
    """The eight cull counters with percentages of ``tested`` and (full form) a pie of the
    classification (frustum / small / occluded / visible). Left out while the telemetry has
    never carried cull counters (a sample that does not cull)."""

    key, modes = "cull", ("cull",)
    W, COMPACT_W, H = 48, 38, 11

    def __init__(self, ctx=None):
        """No state: it draws ``HudData.cull``."""

    def has_content(self, data: HudData) -> bool:
        return data.cull_seen

    def empty_line(self, data: HudData) -> str:
        return "CULL: no cull counters in this run"

    def sizes(self, data: HudData) -> tuple[tuple[int, int], ...]:
        return (self.W, self.H), (self.COMPACT_W, self.H)

    def draw(self, ov: DebugOverlay, col: int, row: int, form: int, data: HudData) -> None:
        w = self.W if form == 0 else self.COMPACT_W
        counts = data.cull
        ov.fill(col, row, w, self.H, PANEL_BG)
        x = col + 1
        if counts is None:
            ov.text(x, row, "CULL", HEADER)
            ov.text(x, row + 1, "no cull data yet", DIM)
            return
        ov.text(x, row, f"CULL frame {counts.frame_index}", HEADER)
        tested = counts.values[0]
        for i, name in enumerate(COUNTER_NAMES):
            v = counts.values[i]
            pct = f"{100.0 * v / tested:6.1f}%" if tested else "    n/a"
            y = row + 1 + i
            if name in CULL_CLASSES:
                ov.fill(x, y, 1, 1, CULL_COLORS[CULL_CLASSES.index(name)])
            ov.text(x + 2, y, f"{name:<15}{v:>10} {pct}", TEXT)
        if form == 0:
            vals = [counts.values[COUNTER_NAMES.index(n)] for n in CULL_CLASSES]
            ov.pie(col + w - 6, row + 5.5, 4.5, vals, CULL_COLORS)
