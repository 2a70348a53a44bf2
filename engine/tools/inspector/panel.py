"""The HUD's inspect panel: the resource viewer's figures and histogram
(``engine.tools.inspector.tool``)."""

from __future__ import annotations

from engine.hud.grid import DebugOverlay
from engine.hud.palette import BAR_BG, DIM, HEADER, PANEL_BG, TEXT
from engine.hud.panel import HudData, Panel
from engine.tools.inspector.passes import at_ceiling, format_stats

W, HIST_ROWS = 44, 5
BAR = (120, 200, 255, 255)


class InspectPanel(Panel):
    """What is inspected, min / max / mean / NaN / Inf and a 32-column histogram (two bins
    a column, heights relative to the fullest column) with its range under it."""

    key, modes = "inspect", ("inspect",)
    H = 6 + HIST_ROWS

    def __init__(self, tool=None):
        self.tool = tool
        self._frame: int | None = -1

    def _tool(self):
        return self.tool

    def tick(self, data: HudData) -> bool:
        tool = self._tool()
        s = None if tool is None else tool.latest()
        frame = None if s is None else s.frame_index
        changed, self._frame = frame != self._frame, frame
        return changed

    def has_content(self, data: HudData) -> bool:
        tool = self._tool()
        return tool is not None and tool.selection is not None

    def empty_line(self, data: HudData) -> str:
        return "INSPECT: nothing inspected ('inspect NAME')"

    def sizes(self, data: HudData) -> tuple[tuple[int, int], ...]:
        return ((W, self.H),)

    def draw(self, ov: DebugOverlay, col: int, row: int, form: int, data: HudData) -> None:
        tool = self._tool()
        ov.fill(col, row, W, self.H, PANEL_BG)
        ref, mip, layer, channel, _ = tool.selection
        ov.text(
            col + 1,
            row,
            f"INSPECT {ref} mip {mip} layer {layer} ch {'rgba'[channel]}"[: W - 2],
            HEADER,
        )
        s = tool.latest()
        if s is None:
            ov.text(col + 1, row + 1, "waiting for the readback", DIM)
            return
        ceiling = tool.ceiling()
        parts = format_stats(s, probe=False, ceiling=ceiling).split("; ")
        ov.text(col + 1, row + 1, parts[0][: W - 2], TEXT)
        if len(parts) > 1:
            ov.text(col + 1, row + 2, parts[1][: W - 2], TEXT)
        for i, line in enumerate(_probe_lines(s, ceiling)):
            ov.text(col + 1, row + 3 + i, line, DIM)
        cols = s.bins.reshape(32, 2).sum(axis=1)
        top = max(int(cols.max()), 1)
        y0 = row + 5
        ov.fill(col + 1, y0, 32, HIST_ROWS, BAR_BG, glyphs=False)
        for i, n in enumerate(cols.tolist()):
            h = round(HIST_ROWS * n / top)
            if h:
                ov.fill(col + 1 + i, y0 + HIST_ROWS - h, 1, h, BAR, glyphs=False)
        top = at_ceiling(s.hist_hi, ceiling, 4)
        ov.text(col + 1, y0 + HIST_ROWS, f"{s.hist_lo:.4g} .. {top}"[: W - 2], DIM)


def _probe_lines(s, ceiling: float | None = None) -> list[str]:
    """The probed texel on two rows, ``at (x, y) of frame N`` then its channels with as
    many significant digits (6, 4, 3) as the panel's width holds (``>=C`` at ``ceiling``);
    without a probe, the frame only."""
    if s.probe is None:
        return [f"frame {s.frame_index}"]
    x, y, values = s.probe
    for digits in (6, 4, 3):
        line = " ".join(at_ceiling(v, ceiling, digits) for v in values)
        if len(line) <= W - 2:
            break
    return [f"at ({x}, {y}) of frame {s.frame_index}"[: W - 2], line[: W - 2]]
