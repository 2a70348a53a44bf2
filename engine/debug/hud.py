"""The in-game HUD: perf table, cull panel and GPU timeline drawn by the ``DebugOverlay`` pass.

``install_hud(app)`` adds the ``DebugOverlay`` render pass LAST to ``app.graph`` (it loads the
finished frame and draws over it, and the graph times it like any pass) and returns the ``Hud``
whose ``update(ctx)`` the run loop calls every frame before recording. Modes (``--overlay``,
F1 cycles): ``off`` (pass disabled), ``perf``, ``cull``, ``timeline``, ``all``.

Data source: ``app.telemetry`` (``engine.telemetry``) and nothing else: the newest record's
stats and cull counters, the records' GPU scopes for the timeline, the session's profiling
state.
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Callable

import numpy as np

from ..cli import OVERLAY_MODES
from ..culling.counters import COUNTER_NAMES, CullCounts
from .overlay import DebugOverlay
from .overlay_pass import DebugOverlayPass, auto_hud_scale, grid_for
from .perf import DIM, HEADER, PANEL_BG, TEXT, PerfOverlay

log = logging.getLogger("lantern")

TIMELINE_FRAMES = 120
# one colour per pass in the timeline (cycled), readable on dark backgrounds
PALETTE = (
    (86, 180, 233),
    (230, 159, 0),
    (0, 158, 115),
    (240, 228, 66),
    (204, 121, 167),
    (213, 94, 0),
    (0, 114, 178),
    (170, 170, 170),
    (150, 220, 90),
    (255, 130, 130),
)
# cull classification: frustum, small, occluded, visible
CULL_CLASSES = ("frustum_culled", "small_culled", "occluded", "visible")
CULL_COLORS = ((230, 90, 80), (240, 190, 60), (150, 110, 230), (90, 200, 110))


class CullPanel:
    """The eight cull counters with percentages of ``tested`` and a pie of the classification
    (frustum / small / occluded / visible)."""

    W, H = 48, 11

    def size(self) -> tuple[int, int]:
        return self.W, self.H

    def draw(self, ov: DebugOverlay, col: int, row: int, counts: CullCounts | None):
        ov.fill(col, row, self.W, self.H, PANEL_BG)
        x = col + 1
        if counts is None:
            ov.text(x, row, "CULL", HEADER)
            ov.text(x, row + 1, "no cull data", DIM)
            return self.size()
        ov.text(x, row, f"CULL frame {counts.frame_index}", HEADER)
        tested = counts.values[0]
        for i, name in enumerate(COUNTER_NAMES):
            v = counts.values[i]
            pct = f"{100.0 * v / tested:6.1f}%" if tested else "    n/a"
            y = row + 1 + i
            if name in CULL_CLASSES:
                ov.fill(x, y, 1, 1, CULL_COLORS[CULL_CLASSES.index(name)])
            ov.text(x + 2, y, f"{name:<15}{v:>10} {pct}", TEXT)
        vals = [counts.values[COUNTER_NAMES.index(n)] for n in CULL_CLASSES]
        ov.pie(col + self.W - 6, row + 5.5, 4.5, vals, CULL_COLORS)
        return self.size()


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


class TimelinePanel:
    """GPU ms per pass over the last ``TIMELINE_FRAMES`` frames as a stacked column chart, with
    a colour legend and the scale (ms at the top of the chart)."""

    W, CHART_H = 64, 8

    def __init__(self):
        self.vmax = 1.0
        self.handle: int | None = None
        self.history = GpuHistory()

    def size(self, names: list[str]) -> tuple[int, int]:
        return self.W, 2 + self.CHART_H + self._legend_rows(names)

    def _legend_rows(self, names: list[str]) -> int:
        return max(1, math.ceil(len(names) / 3))

    def draw(self, ov: DebugOverlay, col: int, row: int, gpu_available: bool, names: list[str]):
        w, h = self.size(names)
        ov.fill(col, row, w, h, PANEL_BG)
        vals = self.history.values(names)
        self.vmax = _nice_ceiling(float(vals.sum(axis=1).max()))
        title = f"GPU TIMELINE {TIMELINE_FRAMES} frames"
        ov.text(col + 1, row, title, HEADER)
        if not gpu_available:
            ov.text(col + 2 + len(title), row, "GPU n/a", DIM)
        ov.text(col + w - 12, row, f"{self.vmax:7.2f} ms", TEXT)
        colors = [PALETTE[i % len(PALETTE)] for i in range(vals.shape[1])]
        top = row + 1
        ov.line(col + 1, top, col + w - 1, top, (90, 90, 100), width=1.0)
        self.handle = ov.stacked_chart(col + 1, top, w - 2, self.CHART_H, vals, colors, self.vmax)
        for i, name in enumerate(names):
            y, x = top + self.CHART_H + 1 + i // 3, col + 1 + (i % 3) * 21
            ov.fill(x, y, 1, 1, colors[i])
            ov.text(x + 2, y, name[:18], TEXT)
        return w, h

    def update(self, ov: DebugOverlay, names: list[str]) -> None:
        """Per-frame: new columns into the existing chart (no layout work)."""
        if self.handle is not None:
            ov.update_chart(self.handle, self.history.values(names))


def _nice_ceiling(v: float) -> float:
    """Smallest of 1, 1.5, 2, 3, 5, 7.5 x 10^k that is >= v (at least 0.01)."""
    v = max(v, 0.01)
    k = math.floor(math.log10(v))
    for m in (1, 1.5, 2, 3, 5, 7.5, 10):
        if m * 10.0**k >= v * (1 - 1e-9):
            return m * 10.0**k
    return 10.0 ** (k + 1)


class Hud:
    """Builds the panels of the current mode into the overlay grid each frame.

    Args:
        app: the running ``App`` (``graph``, ``args``, ``telemetry``).
        overlay, overlay_pass: the grid and the pass that draws it.
        render_pass: the graph's ``DebugOverlay`` pass (enabled unless the mode is ``off``).
        mode: one of ``OVERLAY_MODES``.
        clock: seconds for the frame time, FPS and the refresh rate; wall clock by default
            (a capture's simulated ``ctx.time`` would claim 60 FPS whatever the real rate).
            ``None`` uses ``ctx.time`` (deterministic: tests and reference images).
    """

    def __init__(
        self,
        app,
        overlay,
        overlay_pass,
        render_pass,
        mode: str = "off",
        clock: Callable[[], float] | None = time.perf_counter,
    ):
        self.app = app
        self.clock = clock
        self.overlay = overlay
        self.overlay_pass = overlay_pass
        self.render_pass = render_pass
        self.perf = PerfOverlay()
        self.cull = CullPanel()
        self.timeline = TimelinePanel()
        self.size: tuple[int, int] | None = None
        self._layout_due = True
        self.mode = "off"
        self.set_mode(mode)

    def set_mode(self, mode: str) -> None:
        """Switch mode; raises ValueError for a name not in ``OVERLAY_MODES``."""
        if mode not in OVERLAY_MODES:
            raise ValueError(f"overlay mode {mode!r} is not one of {', '.join(OVERLAY_MODES)}")
        self.mode = mode
        self.render_pass.enabled = mode != "off"
        self._layout_due = True

    def resize(self, size: tuple[int, int]) -> None:
        """Pick the HUD scale (``--hud-scale`` or from the size) and the grid for ``size``."""
        forced = getattr(self.app.args, "hud_scale", None)
        scale = forced or auto_hud_scale(size)
        cols, rows = grid_for(size, scale)
        self.overlay_pass.set_scale(scale)
        self.overlay_pass.target_size = tuple(size)
        self.overlay.resize(cols, rows)
        self.size = tuple(size)
        self._layout_due = True

    def update(self, ctx) -> None:
        """Per frame, before recording: ingest timings and (re)build the mode's panels."""
        if self.size != tuple(ctx.size):
            self.resize(ctx.size)
        names = self.app.graph.pass_names()
        now = ctx.time if self.clock is None else self.clock()
        telemetry = self.app.telemetry
        self.timeline.history.ingest(telemetry.history)
        refreshed = self.perf.tick(telemetry, names, now)
        if self.mode == "off":
            return
        if refreshed or self._layout_due:  # cull counters also refresh at the readable rate
            self._layout_due = False
            self._build(names, self._cull_counts())
        elif self.mode in ("timeline", "all"):
            self.timeline.update(self.overlay, names)

    def _cull_counts(self) -> CullCounts | None:
        latest = self.app.telemetry.latest
        return None if latest is None else latest.cull

    def _build(self, names: list[str], counts: CullCounts | None) -> None:
        ov = self.overlay
        ov.clear()
        self.timeline.handle = None
        panels = {
            "perf": (self.perf.size(), lambda c, r: self.perf.draw(ov, c, r)),
            "cull": (self.cull.size(), lambda c, r: self.cull.draw(ov, c, r, counts)),
            "timeline": (
                self.timeline.size(names),
                lambda c, r: self.timeline.draw(ov, c, r, self.perf.gpu_available, names),
            ),
        }
        order = ("perf", "cull", "timeline") if self.mode == "all" else (self.mode,)
        col, row, widest = 1, 1, 0
        for key in order:
            (w, h), draw = panels[key]
            if row > 1 and row + h > ov.rows:  # next column
                col, row, widest = col + widest + 1, 1, 0
            draw(col, row)
            row, widest = row + h + 1, max(widest, w)
        label = f"HUD {self.mode} [F1]"
        ov.text(ov.cols - len(label) - 1, 0, label, HEADER, PANEL_BG)


def install_hud(app, *, clock: Callable[[], float] | None = time.perf_counter) -> Hud:
    """Create the overlay, its pass and the ``Hud``; add the ``DebugOverlay`` render pass LAST
    to ``app.graph`` (load the output, draw over it). Mode from ``app.overlay_mode`` /
    ``app.args.overlay``; grid and scale from the graph size (``--hud-scale`` overrides)."""
    graph = app.graph
    overlay = DebugOverlay()
    opass = DebugOverlayPass(graph.device, overlay, graph.output_format)
    rpass = graph.add(opass)
    mode = getattr(app, "overlay_mode", None) or getattr(app.args, "overlay", None) or "off"
    hud = Hud(app, overlay, opass, rpass, mode, clock)
    hud.resize(graph.size)
    graph.on_resize(hud.resize)
    return hud
