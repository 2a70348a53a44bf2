"""The HUD's cull panel: the eight GPU cull counters and a pie of the classification."""

from __future__ import annotations

from engine.culling.counters import COUNTER_NAMES
from engine.hud.grid import DebugOverlay
from engine.hud.palette import CULL_CLASSES, CULL_COLORS, DIM, HEADER, PANEL_BG, TEXT
from engine.hud.panel import HudData, Panel


class CullPanel(Panel):
    """The eight cull counters with percentages of ``tested`` and (full form) a pie of the
    classification (frustum / small / occluded / visible). Left out while the telemetry has
    never carried cull counters (a sample that does not cull)."""

    key, modes = "cull", ("cull",)
    W, COMPACT_W, H = 48, 38, 11

    def __init__(self, tool=None):
        """No state: it draws ``HudData.cull``."""

    def has_content(self, data: HudData) -> bool:
        return data.cull_seen

    def empty_line(self, data: HudData) -> str:
        if "cull" in data.channels:  # read back a few frames late, never waited for
            return "CULL: counters on their way (read back a few frames late)"
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


class CountersPanel(Panel):
    """Every counter block besides the culler's (``engine.counters``: a technique's lights,
    cascades, particles), each its name and frame, then one row per counter under its WGSL
    name. Left out while the run has no such block."""

    key, modes = "counters", ("cull",)
    W = 40

    def __init__(self, tool=None):
        self._blocks: tuple = ()

    def _others(self, data: HudData) -> tuple:
        return tuple(c for c in data.counters if c.block != "cull")

    def tick(self, data: HudData) -> bool:
        now = tuple((c.block, c.frame_index) for c in self._others(data))
        changed, self._blocks = now != self._blocks, now
        return changed

    def has_content(self, data: HudData) -> bool:
        return bool(self._others(data))

    def sizes(self, data: HudData) -> tuple[tuple[int, int], ...]:
        return ((self.W, sum(1 + len(c.names) for c in self._others(data))),)

    def draw(self, ov: DebugOverlay, col: int, row: int, form: int, data: HudData) -> None:
        ov.fill(col, row, self.W, self.sizes(data)[0][1], PANEL_BG)
        y = row
        for c in self._others(data):
            ov.text(col + 1, y, f"{c.block.upper()} frame {c.frame_index}"[: self.W - 2], HEADER)
            for i, (name, v) in enumerate(zip(c.names, c.values, strict=True), 1):
                ov.text(col + 2, y + i, f"{name[:24]:<24}{v:>12}", TEXT)
            y += 1 + len(c.names)
