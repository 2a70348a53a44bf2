"""The log tool: the HUD's ``log`` mode, the ``lantern`` logger's newest lines coloured by level
(warnings yellow, errors red), read from the run's log tail (``engine.logtail``)."""

from __future__ import annotations

import logging

from engine.hud.grid import DebugOverlay
from engine.hud.palette import DIM, ERROR, PANEL_BG, TEXT, WARNING
from engine.hud.panel import HudData, Panel
from engine.logtail import LogTail


def level_color(level: int):
    if level >= logging.ERROR:
        return ERROR
    if level >= logging.WARNING:
        return WARNING
    return TEXT


class LogPanel:
    """The HUD's log panel: the newest lines that fit, newest at the bottom."""

    W, H = 72, 10

    def __init__(self, tail: LogTail):
        self.tail = tail

    def size(self) -> tuple[int, int]:
        return self.W, self.H

    def draw(self, ov: DebugOverlay, col: int, row: int, w: int = W, h: int = H) -> None:
        """Draw into the ``w x h``-cell box at ``(col, row)``: a title row, then the newest
        ``h - 1`` lines (cut to the width), coloured by level."""
        ov.fill(col, row, w, h, PANEL_BG)
        ov.text(col + 1, row, "Log", DIM)
        entries = self.tail.snapshot()[-(h - 1) :] if h > 1 else []
        for i, e in enumerate(entries):
            ov.text(col + 1, row + 1 + i, e.shown()[: w - 2], level_color(e.level))


class LogHudPanel(Panel):
    """The ``lantern`` logger's last lines (``LogPanel``) in the HUD; forms: full width, then
    narrower. Reads the run's log tail; left out when the run has none."""

    key, modes = "log", ("log",)

    def __init__(self, tool):
        self.tail = tool.ctx.log_tail

    def has_content(self, data: HudData) -> bool:
        return self.tail is not None

    def empty_line(self, data: HudData) -> str:
        return "LOG: no log tail in this run"

    def sizes(self, data: HudData) -> tuple[tuple[int, int], ...]:
        return (LogPanel.W, LogPanel.H), (48, LogPanel.H), (36, 6)

    def draw(self, ov: DebugOverlay, col: int, row: int, form: int, data: HudData) -> None:
        w, h = self.sizes(data)[form]
        LogPanel(self.tail).draw(ov, col, row, w, h)


class LogTool:
    """The HUD's log mode over the run's log tail (``ctx.log_tail``)."""

    name = "log"
    panels = (LogHudPanel,)

    def install(self, ctx) -> None:
        self.ctx = ctx

    def close(self) -> None:
        """Nothing to undo: the App removes the log tail at shutdown."""
