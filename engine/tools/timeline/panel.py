"""The HUD's GPU timeline: GPU ms per pass over the last frames as a stacked column chart."""

from __future__ import annotations

import math

import numpy as np

from engine.hud.grid import DebugOverlay
from engine.hud.palette import DIM, HEADER, PALETTE, PANEL_BG, TEXT
from engine.hud.panel import HudData, Panel

TIMELINE_FRAMES = 120


class GpuHistory:
    """GPU ms per pass of the last ``frames`` telemetry records, in a numpy ring fed with the
    records published since the last call (per-frame work follows the new records only).

    Attributes:
        names: pass names in first-seen order (column ``i`` of ``ring``).
    """

    def __init__(self, frames: int = TIMELINE_FRAMES, columns: int = 16):
        self.frames = frames
        self.names: list[str] = []
        self._col: dict[str, int] = {}
        self.ring = np.zeros((frames, columns), np.float32)
        self.count = 0
        self._seq = -1

    def _column(self, name: str) -> int:
        i = self._col.get(name)
        if i is None:
            i = self._col[name] = len(self.names)
            self.names.append(name)
            if i >= self.ring.shape[1]:  # grow before anyone indexes the new column
                pad = np.zeros((self.frames, self.ring.shape[1]), np.float32)
                self.ring = np.concatenate([self.ring, pad], axis=1)
        return i

    def ingest(self, history) -> None:
        new = []
        for rec in reversed(history):
            if rec.seq <= self._seq:
                break
            new.append(rec)
        for rec in reversed(new):
            cols = [(self._column(s.name), s.duration_ms) for s in rec.gpu or ()]
            row = self.ring[self.count % self.frames]
            row[:] = 0.0
            for c, ms in cols:
                row[c] = ms
            self.count += 1
            self._seq = rec.seq

    def values(self, names: list[str]) -> np.ndarray:
        """``(frames, len(names))`` GPU ms, oldest first, zero-padded on the left."""
        out = np.zeros((self.frames, max(1, len(names))), np.float32)
        n = min(self.count, self.frames)
        known = [(j, self._col[name]) for j, name in enumerate(names) if name in self._col]
        if known and n:  # one gather for all passes: this runs every frame
            js, cs = zip(*known, strict=True)
            idx = np.arange(self.count - n, self.count) % self.frames
            out[self.frames - n :, list(js)] = self.ring[idx][:, list(cs)]
        return out


class TimelinePanel(Panel):
    """GPU ms per pass over the last ``TIMELINE_FRAMES`` frames as a stacked column chart, with
    a colour legend and the scale (ms at the top of the chart). Forms: the legend in 3, 2 or 1
    columns (narrower, taller), then a 2-column legend under a half-height chart (shorter).
    Left out while no record has carried GPU scopes."""

    key, modes = "timeline", ("timeline",)
    W, CHART_H = 64, 8
    # (legend columns, chart rows, least width) of each form, best first
    FORMS = ((3, CHART_H, W), (2, CHART_H, 30), (1, CHART_H, 26), (2, CHART_H // 2, 30))
    NAME_MAX = 18  # legend names are cut to this

    def __init__(self, tool):
        self.telemetry = tool.ctx.telemetry
        self.vmax = 1.0
        self.handle: int | None = None
        self.history = GpuHistory()

    def activate(self, on: bool) -> None:
        self.handle = None
        if on:  # catch up on the records published while hidden (the history holds 300)
            self.history.ingest(self.telemetry.history)

    def tick(self, data: HudData) -> bool:
        self.history.ingest(self.telemetry.history)
        return False

    def has_content(self, data: HudData) -> bool:
        return data.gpu_seen or bool(self.history.names)

    def empty_line(self, data: HudData) -> str:
        if data.gpu_available:
            return "TIMELINE: no GPU timings yet"
        return "TIMELINE: no GPU timings (--gpu-profile, or: profile gpu on)"

    def sizes(self, data: HudData) -> tuple[tuple[int, int], ...]:
        names = data.names
        entry = 3 + min(self.NAME_MAX, max((len(n) for n in names), default=4))
        return tuple(
            (max(least, k * entry + 2), 2 + chart + max(1, math.ceil(len(names) / k)))
            for k, chart, least in self.FORMS  # a cell of margin either side of the legend
        )

    def draw(self, ov: DebugOverlay, col: int, row: int, form: int, data: HudData) -> None:
        names = data.names
        w, h = self.sizes(data)[form]
        k, chart, _ = self.FORMS[form]
        ov.fill(col, row, w, h, PANEL_BG)
        vals = self.history.values(names)
        self.vmax = _nice_ceiling(float(vals.sum(axis=1).max()))
        room = w - 13  # the scale takes the last 11 cells
        title = next(
            t
            for t in (f"GPU TIMELINE {TIMELINE_FRAMES} frames", "GPU TIMELINE", "GPU")
            if len(t) <= room or t == "GPU"
        )
        ov.text(col + 1, row, title, HEADER)
        if not data.gpu_available and len(title) + 8 <= room:
            ov.text(col + 2 + len(title), row, "GPU n/a", DIM)
        ov.text(col + w - 11, row, f"{self.vmax:7.2f} ms", TEXT)
        colors = [PALETTE[i % len(PALETTE)] for i in range(vals.shape[1])]
        top = row + 1
        ov.line(col + 1, top, col + w - 1, top, (90, 90, 100), width=1.0)
        self.handle = ov.stacked_chart(col + 1, top, w - 2, chart, vals, colors, self.vmax)
        step = (w - 2) // k
        for i, name in enumerate(names):
            y, x = top + chart + 1 + i // k, col + 1 + (i % k) * step
            ov.fill(x, y, 1, 1, colors[i])
            ov.text(x + 2, y, name[: min(self.NAME_MAX, step - 3)], TEXT)

    def update(self, ov: DebugOverlay, data: HudData) -> None:
        """Per-frame: new columns into the existing chart (no layout work)."""
        if self.handle is not None:
            ov.update_chart(self.handle, self.history.values(data.names))


def _nice_ceiling(v: float) -> float:
    """Smallest of 1, 1.5, 2, 3, 5, 7.5 x 10^k that is >= v (at least 0.01)."""
    v = max(v, 0.01)
    k = math.floor(math.log10(v))
    for m in (1, 1.5, 2, 3, 5, 7.5, 10):
        if m * 10.0**k >= v * (1 - 1e-9):
            return m * 10.0**k
    return 10.0 ** (k + 1)
