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
from dataclasses import dataclass
from typing import Protocol

import numpy as np

from ..cli import OVERLAY_MODES
from ..culling.counters import COUNTER_NAMES, CullCounts
from ..passes.debug_overlay import DebugOverlayPass, auto_hud_scale, grid_for
from .layout import Layout, PanelSpec, plan
from .logtail import ERROR, LogPanel
from .overlay import DebugOverlay
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


@dataclass
class HudData:
    """What the panels draw from, gathered once per build from the telemetry.

    Attributes:
        names: the graph's enabled pass names, in execution order.
        cull: the newest cull counters, or None.
        cull_seen: whether the telemetry has ever carried cull counters.
        gpu_available: GPU timing is on and works on this adapter.
        gpu_seen: whether any record so far carried GPU scopes.
    """

    names: list[str]
    cull: CullCounts | None = None
    cull_seen: bool = False
    gpu_available: bool = False
    gpu_seen: bool = False


class Panel(Protocol):
    """A HUD panel: ``key`` names it in ``MODE_PANELS``; ``anchor`` is ``"top"`` (shelves
    under the mode tag) or ``"bottom"`` (see ``engine.debug.layout``)."""

    key: str
    anchor: str

    def has_content(self, data: HudData) -> bool:
        """False: leave the panel out (nothing to show in this run)."""

    def empty_line(self, data: HudData) -> str:
        """The one line shown instead when this panel is the mode's only one and is empty."""

    def sizes(self, data: HudData) -> tuple[tuple[int, int], ...]:
        """Its forms' sizes in cells ``(cols, rows)``, best first."""

    def draw(self, ov: DebugOverlay, col: int, row: int, form: int, data: HudData) -> None:
        """Write the panel in ``form`` with its top-left cell at ``(col, row)``."""


class PerfPanel:
    """The timing table (``PerfOverlay``) as a panel: always shown (without timings it says
    how to get them); forms: full, without SHARE bars, without the DELTA column."""

    key, anchor = "perf", "top"

    def __init__(self, perf: PerfOverlay):
        self.perf = perf

    def has_content(self, data: HudData) -> bool:
        return True

    def empty_line(self, data: HudData) -> str:
        return ""

    def sizes(self, data: HudData) -> tuple[tuple[int, int], ...]:
        return self.perf.sizes()

    def draw(self, ov: DebugOverlay, col: int, row: int, form: int, data: HudData) -> None:
        self.perf.draw(ov, col, row, form)


class CullPanel:
    """The eight cull counters with percentages of ``tested`` and (full form) a pie of the
    classification (frustum / small / occluded / visible). Left out while the telemetry has
    never carried cull counters (a sample that does not cull)."""

    key, anchor = "cull", "top"
    W, COMPACT_W, H = 48, 38, 11

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
    a colour legend and the scale (ms at the top of the chart). Forms: the legend in 3, 2 or 1
    columns (narrower, taller), then a 2-column legend under a half-height chart (shorter).
    Left out while no record has carried GPU scopes."""

    key, anchor = "timeline", "top"
    W, CHART_H = 64, 8
    # (legend columns, chart rows, least width) of each form, best first
    FORMS = ((3, CHART_H, W), (2, CHART_H, 30), (1, CHART_H, 26), (2, CHART_H // 2, 30))
    NAME_MAX = 18  # legend names are cut to this

    def __init__(self):
        self.vmax = 1.0
        self.handle: int | None = None
        self.history = GpuHistory()

    def has_content(self, data: HudData) -> bool:
        return data.gpu_seen

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


class LogHudPanel:
    """The ``lantern`` logger's last lines (``engine.debug.logtail.LogPanel``); forms: full
    width, then narrower."""

    key, anchor = "log", "top"

    def __init__(self, app):
        self.app = app

    def has_content(self, data: HudData) -> bool:
        return getattr(self.app, "log_tail", None) is not None

    def empty_line(self, data: HudData) -> str:
        return "LOG: no log tail in this run"

    def sizes(self, data: HudData) -> tuple[tuple[int, int], ...]:
        return (LogPanel.W, LogPanel.H), (48, LogPanel.H), (36, 6)

    def draw(self, ov: DebugOverlay, col: int, row: int, form: int, data: HudData) -> None:
        w, h = self.sizes(data)[form]
        LogPanel(self.app.log_tail).draw(ov, col, row, w, h)


class ConsolePanel:
    """The in-game console (``engine.debug.console.Console``), across the bottom while it is
    open, in every mode (``off`` too)."""

    key, anchor = "console", "bottom"
    H = 8

    def __init__(self, app):
        self.app = app

    def has_content(self, data: HudData) -> bool:
        console = getattr(self.app, "console", None)
        return console is not None and console.is_open

    def empty_line(self, data: HudData) -> str:
        return ""

    def sizes(self, data: HudData) -> tuple[tuple[int, int], ...]:
        return (0, self.H), (0, 4)  # width 0: the whole width

    width = 0  # cells: set from the layout's placement before ``draw`` (a stretched panel)

    def draw(self, ov: DebugOverlay, col: int, row: int, form: int, data: HudData) -> None:
        h = self.sizes(data)[form][1]
        self.app.console.draw(ov, col, row, self.width, h)


MODE_PANELS: dict[str, tuple[str, ...]] = {
    "off": (),
    "perf": ("perf",),
    "cull": ("cull",),
    "timeline": ("timeline",),
    "log": ("log",),
    "flame": (),  # the live flame chart (engine.inspect.live) draws itself; the HUD adds its tag
    "all": ("perf", "cull", "timeline", "log"),
}
HINT = "F1: HUD"
HINT_S = 3.0  # how long the off-mode hint shows


class Hud:
    """Lays out and draws the panels of the current mode into the overlay grid.

    Args:
        app: the running ``App`` (``graph``, ``args``, ``telemetry``; ``window`` is not None
            in a window run).
        overlay, overlay_pass: the grid and the pass that draws it.
        render_pass: the graph's ``DebugOverlay`` pass (enabled while something is drawn).
        mode: one of ``OVERLAY_MODES``.
        clock: seconds for the frame time, FPS, the refresh rate and the off-mode hint; wall
            clock by default (a capture's simulated ``ctx.time`` would claim 60 FPS whatever
            the real rate). ``None`` uses ``ctx.time`` (deterministic: tests, references).

    Layout (``engine.debug.layout``): the mode's panels (``MODE_PANELS``) that have something
    to show go side by side on shelves under the mode tag; a compact form, then a smaller HUD
    scale (unless ``--hud-scale`` fixes it), then a one-line notice per panel left out when
    they do not fit. ``keep_clear`` keeps a sample's own overlay free of the HUD.

    Off mode: the pass is disabled, except for ``HINT_S`` seconds at the start of a window
    run and after switching to ``off``, while a one-line hint says F1 brings the HUD back
    (captures, with no window, never show it unless the mode was switched).
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
        self.panels: dict[str, Panel] = {
            "perf": PerfPanel(self.perf),
            "cull": self.cull,
            "timeline": self.timeline,
            "log": LogHudPanel(app),
            "console": ConsolePanel(app),
        }
        self._console_version = -1
        self._console_open = False
        self.size: tuple[int, int] | None = None
        self.scales: tuple[int, ...] = (1,)
        self.keep_clear_box: tuple[int, int, int, int] | None = None
        self.layout: Layout | None = None
        self._layout_due = True
        self._cull_seen = False
        self._hint_due = getattr(app, "window", None) is not None  # start of a window run
        self._hint_until = -math.inf
        self._hint_drawn = False
        self.mode = "off"
        self.notice: str | None = None  # one line on the bottom row (set_notice)
        self.set_mode(mode, hint=False)

    def set_mode(self, mode: str, *, hint: bool = True) -> None:
        """Switch mode; switching to ``off`` shows the F1 hint for ``HINT_S`` seconds unless
        ``hint`` is False. Raises ValueError for a name not in ``OVERLAY_MODES``."""
        if mode not in OVERLAY_MODES:
            raise ValueError(f"overlay mode {mode!r} is not one of {', '.join(OVERLAY_MODES)}")
        self.mode = mode
        self.perf.expire()  # figures from now, not from before an off spell
        self.render_pass.enabled = mode != "off"
        flame = getattr(self.app, "flame", None)  # engine.inspect.live.LiveFlame
        if flame is not None:
            flame.set_mode(mode)
        self._hint_due = self._hint_due or (hint and mode == "off")
        self._hint_drawn = False
        self._layout_due = True

    def set_notice(self, text: str | None) -> None:
        """Show ``text`` (one line, red) on the HUD's bottom row in every mode, ``off``
        included, from the next frame on (e.g. a shader's compile error); None removes it."""
        self.notice = text
        self._layout_due = True
        if text is None and self.mode == "off":
            self.overlay.clear()
            self._hint_drawn = False
            self.render_pass.enabled = False

    def _draw_notice(self) -> None:
        ov = self.overlay
        text = self.notice[: ov.cols]
        ov.text(0, ov.rows - 1, text.ljust(min(ov.cols, len(self.notice))), ERROR, PANEL_BG)

    def keep_clear(self, box: tuple[int, int, int, int] | None) -> None:
        """Keep the HUD out of the pixel box ``(x0, y0, x1, y1)`` (a sample's own overlay,
        e.g. s03's gallery); None gives the whole output back. The HUD then uses the largest
        strip beside the box where its panels fit."""
        self.keep_clear_box = None if box is None else tuple(int(v) for v in box)
        self._layout_due = True

    def resize(self, size: tuple[int, int]) -> None:
        """Pick the HUD scales to try (``--hud-scale`` fixes one, else from the size down to
        1) and the grid for ``size``."""
        forced = getattr(self.app.args, "hud_scale", None)
        top = forced or auto_hud_scale(size)
        self.scales = (forced,) if forced else tuple(range(top, 0, -1))
        self._set_grid(top, grid_for(size, top))
        self.overlay_pass.target_size = tuple(size)
        self.size = tuple(size)
        self._layout_due = True
        self._hint_drawn = False  # a resize cleared the grid

    def _set_grid(self, scale: int, grid: tuple[int, int]) -> None:
        if self.overlay_pass.scale != scale or (self.overlay.cols, self.overlay.rows) != grid:
            self.overlay_pass.set_scale(scale)
            self.overlay.resize(*grid)

    def update(self, ctx) -> None:
        """Per frame, before recording: ingest timings and (re)build the mode's panels."""
        if self.size != tuple(ctx.size):
            self.resize(ctx.size)
        names = self.app.graph.pass_names()
        now = ctx.time if self.clock is None else self.clock()
        telemetry = self.app.telemetry
        self.timeline.history.ingest(telemetry.history)
        console = getattr(self.app, "console", None)
        if console is not None and console.version != self._console_version:
            self._console_version = console.version  # opened, closed, typed into: redraw
            self._layout_due = True
        console_open = console is not None and console.is_open
        closed, self._console_open = self._console_open and not console_open, console_open
        if self.mode == "off" and not console_open:
            if closed:  # the console just closed over an off HUD: nothing left to draw
                self.overlay.clear()
                self._hint_drawn = False
            if self.notice is not None:  # the notice alone over an off HUD
                if self._layout_due:
                    self._layout_due = False
                    self.overlay.clear()
                    self._draw_notice()
                self.render_pass.enabled = True
                return
            self._update_hint(now)
            return
        self.render_pass.enabled = True
        refreshed = self.perf.tick(telemetry, names, now)  # (off: no stats computed at all)
        if refreshed or self._layout_due:  # cull counters also refresh at the readable rate
            self._layout_due = False
            self._build(self._data(names))
        elif self.layout is not None and any(p.key == "timeline" for p in self.layout.placements):
            self.timeline.update(self.overlay, names)

    def _data(self, names: list[str]) -> HudData:
        latest = self.app.telemetry.latest
        cull = None if latest is None else latest.cull
        self._cull_seen = self._cull_seen or cull is not None
        return HudData(
            names,
            cull,
            self._cull_seen,
            self.perf.gpu_available,
            bool(self.timeline.history.names),
        )

    def _update_hint(self, now: float) -> None:
        """Off mode: show the hint until ``_hint_until``, then disable the pass."""
        if self._hint_due:
            self._hint_due = False
            self._hint_until = now + HINT_S
        show = now < self._hint_until
        if show and not self._hint_drawn:
            lay = plan([], self.size, self.scales[:1], len(HINT), self.keep_clear_box)
            self._set_grid(lay.scale, lay.grid)
            self.overlay.clear()
            if lay.tag is not None:
                self.overlay.text(*lay.tag, HINT, HEADER, PANEL_BG)
            self.layout = lay
        elif not show and self._hint_drawn:
            self.overlay.clear()
        self._hint_drawn = show
        self.render_pass.enabled = show

    def _build(self, data: HudData) -> None:
        keys = MODE_PANELS[self.mode]
        shown = [self.panels[k] for k in (*keys, "console") if self.panels[k].has_content(data)]
        specs = [PanelSpec(p.key, tuple(p.sizes(data)), p.anchor) for p in shown]
        tag = f"HUD {self.mode} [F1]" if self.mode != "off" else "console [`]"
        lay = plan(specs, self.size, self.scales, len(tag), self.keep_clear_box)
        self.layout = lay
        self._set_grid(lay.scale, lay.grid)
        ov = self.overlay
        ov.clear()
        self.timeline.handle = None
        for pl in lay.placements:
            self.panels[pl.key].width = pl.size[0]
            self.panels[pl.key].draw(ov, pl.col, pl.row, pl.form, data)
        c0, r0, c1, r1 = lay.region
        lines, tag_at = list(lay.notices), lay.tag
        if keys and not [p for p in shown if p.key in keys]:  # nothing to show: say so
            empty = [self.panels[k].empty_line(data) for k in keys]
            if r1 - r0 > len(empty):
                lines += [(c0 + 1, r0 + 1 + i, text) for i, text in enumerate(empty)]
            else:  # a one-row region: the line takes the tag's place
                lines, tag_at = [(c0, r0, "; ".join(empty))], None
        for col, row, text in lines:
            ov.text(col, row, text[: max(0, c1 - col)], TEXT, PANEL_BG)
        if tag_at is not None:
            ov.text(*tag_at, tag[: c1 - tag_at[0]], HEADER, PANEL_BG)
        if self.notice is not None:
            self._draw_notice()


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
