"""The ``lantern`` logger's last lines: a ``logging.Handler`` into a bounded deque, shown by
the HUD (``LogPanel``) and streamed to the portal page.

Repeated lines are collapsed into one entry with a count (drawn "x37"); warnings are yellow and
errors red. Every change bumps ``version`` and stamps the entry with it, so a reader asks for
``changes_since(version)`` and gets only new or re-counted entries.
"""

from __future__ import annotations

import logging
import threading
from collections import deque
from dataclasses import dataclass

from engine.debug.perf import DIM, PANEL_BG, TEXT
from engine.overlay.grid import DebugOverlay
from engine.overlay.panel import HudData, Panel

LINES = 200
ERROR = (255, 95, 85, 255)
WARNING = (250, 210, 70, 255)


@dataclass
class LogEntry:
    """One shown line. ``id``: stable, increasing; ``count``: times it was logged in a row;
    ``version``: the tail's version when it last changed; ``level``: ``logging`` level."""

    id: int
    level: int
    text: str
    count: int = 1
    version: int = 0

    def shown(self) -> str:
        return self.text if self.count == 1 else f"{self.text} x{self.count}"

    def as_json(self) -> dict:
        return {
            "id": self.id,
            "level": logging.getLevelName(self.level).lower(),
            "text": self.text,
            "count": self.count,
        }


class LogTail(logging.Handler):
    """Keeps the last ``lines`` log lines (multi-line messages keep their first line).

    Thread-safe: records may come from any thread; readers take ``snapshot()`` or
    ``changes_since(v)`` (copies under the tail's lock).
    """

    def __init__(self, lines: int = LINES, level: int = logging.INFO):
        super().__init__(level)
        self.entries: deque[LogEntry] = deque(maxlen=lines)
        self.version = 0
        self._next_id = 0
        self._mutex = threading.Lock()

    def emit(self, record: logging.LogRecord) -> None:
        try:
            text = record.getMessage().splitlines()[0] if record.msg else ""
        except Exception:  # a bad format string must not break logging
            text = str(record.msg)
        with self._mutex:
            self.version += 1
            last = self.entries[-1] if self.entries else None
            if last is not None and last.text == text and last.level == record.levelno:
                last.count += 1
                last.version = self.version
                return
            self.entries.append(LogEntry(self._next_id, record.levelno, text, 1, self.version))
            self._next_id += 1

    def snapshot(self) -> list[LogEntry]:
        """Copies of every entry, oldest first."""
        with self._mutex:
            return [LogEntry(e.id, e.level, e.text, e.count, e.version) for e in self.entries]

    def changes_since(self, version: int) -> tuple[int, list[LogEntry]]:
        """``(current_version, entries changed after version)``, oldest first. Entries are
        in version order (only the newest is ever re-counted), so this scans back only."""
        with self._mutex:
            out = []
            for e in reversed(self.entries):
                if e.version <= version:
                    break
                out.append(LogEntry(e.id, e.level, e.text, e.count, e.version))
            return self.version, out[::-1]


def install_log_tail(logger: logging.Logger | None = None, lines: int = LINES) -> LogTail:
    """The ``LogTail`` on ``logger`` (``lantern`` by default), added once per logger."""
    logger = logger or logging.getLogger("lantern")
    for h in logger.handlers:
        if isinstance(h, LogTail):
            return h
    tail = LogTail(lines)
    logger.addHandler(tail)
    return tail


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
    narrower. Reads the ``LogTail`` tool's tail; left out when that tool is not installed."""

    key, modes = "log", ("log",)

    def __init__(self, ctx):
        tool = ctx.find(LogTailTool)
        self.tail = None if tool is None else tool.tail

    def has_content(self, data: HudData) -> bool:
        return self.tail is not None

    def empty_line(self, data: HudData) -> str:
        return "LOG: no log tail in this run"

    def sizes(self, data: HudData) -> tuple[tuple[int, int], ...]:
        return (LogPanel.W, LogPanel.H), (48, LogPanel.H), (36, 6)

    def draw(self, ov: DebugOverlay, col: int, row: int, form: int, data: HudData) -> None:
        w, h = self.sizes(data)[form]
        LogPanel(self.tail).draw(ov, col, row, w, h)


class LogTailTool:
    """The tool that keeps the ``lantern`` logger's last lines (``tail``) for the HUD's log
    panel, the console and the portal; installed first, so start-up lines are in it."""

    name = "log-tail"

    def __init__(self, lines: int = LINES):
        self.lines = lines
        self.tail: LogTail | None = None

    def install(self, ctx) -> None:
        self.tail = install_log_tail(lines=self.lines)

    def close(self) -> None:
        logging.getLogger("lantern").removeHandler(self.tail)
