"""s14: Flame chart viewer: a Chrome trace, Lantern --trace or --telemetry file drawn by the GPU.

    python -m samples.s14 FILE                   # a trace; without FILE a synthetic one
    python -m samples.s14 FILE --capture out.png --range 10:60 --search Main --select HiZ
    python -m samples.s14 --capture out.png --mark 20:30 --cursor 250,60  # range, hover

Every span lives in GPU buffers; a compute pass selects what is in view each frame (the
longest span per pixel column where spans are narrower than a pixel; zoomed out it reads
level-of-detail summaries built at load instead of every span) and one instanced draw shows
it, so panning 10 million spans costs the CPU what panning 1000 does.

Window: mouse wheel zooms around the cursor, drag pans, double-click zooms to a span, click
selects (every span of that name outlined; the side panel shows its details: name, category,
args, duration, self and thread time; and the statistics of its name in its lane: count,
mean, median, p95, max, total, mean self time), shift-drag selects a time range (its
statistics in the side panel). A time ruler above the chart labels ticks in the trace's
displayTimeUnit (a larger unit where that needs more than 6 digits; the header uses the
ruler's unit), never overlapping. Keys: W/S zoom in/out, A/D or Left/Right pan, Up/Down
scroll the lanes, Home shows everything, / types a search (Enter ends it, Backspace
deletes, an empty search clears it; the match count shows), N / P select the next /
previous match, a click on a lane's label collapses or expands it, PageUp / PageDown move
the lane under the cursor, Esc quits. Lanes are as tall as the deepest span in view; an
idle window draws nothing until an event (input, a resize, a console or portal command).
"""

from __future__ import annotations

import argparse
import logging
import math
import re
import time
from pathlib import Path

import numpy as np
import orjson

from engine.app import Sample, main
from engine.devtools.traces.synthetic import synthetic_table
from engine.devtools.traces.traceload import SpanTable, TraceError, event_at, load_trace
from engine.flamechart.chart import FlameChart
from engine.flamechart.extras import ChartExtras
from engine.flamechart.rows import RowIndex
from engine.flamechart.ruler import label_boxes, tick_label
from engine.flamechart.select import NONE
from engine.flamechart.spans import NAME_MATCH, printable
from engine.flamechart.view import (
    FlameView,
    fmt_ns,
    name_stats,
    next_match,
    range_stats,
    search_matches,
    self_times,
)
from engine.graph import OUTPUT, RenderPass
from engine.hud.debug_overlay import DebugOverlayPass, auto_hud_scale, grid_for
from engine.hud.grid import MAX_COLS, MAX_ROWS, DebugOverlay
from engine.options import OptionError, int_type, option_set

log = logging.getLogger("lantern")
BG = (0.015, 0.016, 0.022, 1.0)
PANEL = (22, 24, 32, 255)
HEAD = (120, 200, 255)
TEXT = (225, 225, 225)
DIM = (140, 140, 150)
TIP = (40, 44, 58, 255)
BAND = (90, 150, 255, 50)
PANEL_COLS = 36
SYNTHETIC_SPANS = 200_000  # --spans: the synthetic trace drawn without FILE
# glfw key codes (glfw is not imported in captures)
KEY_SLASH, KEY_ENTER, KEY_BACKSPACE, KEY_HOME = 47, 257, 259, 268
KEY_RIGHT, KEY_LEFT, KEY_DOWN, KEY_UP = 262, 263, 264, 265
KEY_A, KEY_D, KEY_S, KEY_W, KEY_N, KEY_P = 65, 68, 83, 87, 78, 80
KEY_LEFT_SHIFT = 340
KEY_PAGE_UP, KEY_PAGE_DOWN = 266, 267
IDLE_FRAMES = 4  # unchanged frames (a pick result landing) before the window goes idle
ZOOM_PER_S, PAN_PX_PER_S, WHEEL_STEP = 4.0, 900.0, 1.25
DOUBLE_CLICK_S, CLICK_PX = 0.35, 3.0


def trace_arg(text: str) -> SpanTable:
    """argparse ``type=``: load the file now, so a bad one is a one-line exit 2."""
    try:
        return load_trace(text)
    except TraceError as e:
        raise argparse.ArgumentTypeError(str(e)) from None


def range_arg(text: str) -> tuple[float, float]:
    m = re.fullmatch(r"\s*([-+0-9.eE]+)\s*:\s*([-+0-9.eE]+)\s*", text)
    try:
        a, b = (float(m.group(1)), float(m.group(2))) if m else (math.nan, math.nan)
    except ValueError:
        a = b = math.nan
    if not (math.isfinite(a) and math.isfinite(b) and b > a):
        raise argparse.ArgumentTypeError(
            f"expected START_MS:END_MS with END_MS > START_MS (ms since the trace's first "
            f"span), got {text!r}"
        )
    return a, b


def cursor_arg(text: str) -> tuple[float, float]:
    m = re.fullmatch(r"\s*([0-9.]+)\s*,\s*([0-9.]+)\s*", text)
    if not m:
        raise argparse.ArgumentTypeError(f"expected X,Y in output pixels, got {text!r}")
    return float(m.group(1)), float(m.group(2))


class FlameViewer(Sample):
    name = "s14"
    category = "tools"
    description = __doc__.splitlines()[0].split(":", 1)[1].strip()
    example_args = ("--spans", "20000")

    @classmethod
    def check_options(cls, args) -> None:
        """Options that need another, before any GPU work (one line, exit 2)."""
        super().check_options(args)
        if args.next is not None and not args.search:
            raise OptionError("argument --next: it needs --search TEXT (the matches it counts)")
        if args.file is not None and option_set(args, "spans", SYNTHETIC_SPANS):
            raise OptionError("argument --spans: it sizes the synthetic trace drawn without "
                              "FILE; drop it")  # fmt: skip
        cursor, size = args.cursor, getattr(args, "size", None)
        if (
            cursor is not None
            and args.capture
            and size
            and not (cursor[0] < size[0] and cursor[1] < size[1])
        ):  # (a window's size may change: checked in captures only)
            raise OptionError(f"argument --cursor: {cursor[0]:g},{cursor[1]:g} is outside the "
                              f"{size[0]}x{size[1]} output")  # fmt: skip
        t = args.file
        asked = [(flag, r) for flag, r in (("--range", args.range), ("--mark", args.mark)) if r]
        if asked and t is not None and len(t):  # (one pass over the spans, for both)
            end = float((t.start_ns + t.dur_ns).max()) / 1e6
            for flag, r in asked:
                if r[1] <= 0 or r[0] >= end:
                    raise OptionError(f"argument {flag}: {r[0]:g}:{r[1]:g} ms lies outside the "
                                      f"trace (0..{end:.6g} ms since its first span)")  # fmt: skip
        if args.select is not None:
            names = args.file.names if args.file is not None else None
            if names is not None and args.select not in names:
                raise OptionError(f"argument --select: no span is named {args.select!r}")

    @classmethod
    def inputs(cls, args) -> list[tuple[str, str]]:
        source = getattr(args.file, "source", "")  # the parsed table's file
        return [("FILE", source)] if source else []

    @classmethod
    def add_arguments(cls, parser) -> None:
        g = parser.add_argument_group("s14 options")
        g.add_argument(
            "file",
            nargs="?",
            type=trace_arg,
            metavar="FILE",
            help="Chrome Trace Event JSON, Lantern --trace JSON or --telemetry JSONL",
        )
        g.add_argument(
            "--spans",
            type=int_type(1, 20_000_000),
            default=SYNTHETIC_SPANS,
            metavar="N",
            help=f"without FILE: a synthetic trace of about N spans (default {SYNTHETIC_SPANS})",
        )
        g.add_argument(
            "--range",
            type=range_arg,
            metavar="START_MS:END_MS",
            help="initial time range, ms since the first span",
        )
        g.add_argument(
            "--search",
            default="",
            metavar="TEXT",
            help="dim spans whose name does not contain TEXT (case-insensitive)",
        )
        g.add_argument(
            "--select",
            default=None,
            metavar="NAME",
            help="select the longest span named NAME (statistics in the side panel)",
        )
        g.add_argument(
            "--mark",
            type=range_arg,
            metavar="START_MS:END_MS",
            help="a frame-range selection, as shift-drag makes (statistics in the side panel)",
        )
        g.add_argument(
            "--next",
            type=int_type(0, 1_000_000),
            default=None,
            metavar="K",
            help="with --search: select the K-th match in time order (0: the earliest; "
            "past the last it wraps around, as N does)",
        )
        g.add_argument(
            "--cursor",
            type=cursor_arg,
            metavar="X,Y",
            help="a fixed cursor position in output pixels (hover in captures)",
        )

    def __init__(self, app):
        super().__init__(app)
        a = app.args
        self.table = a.file if a.file is not None else synthetic_table(a.spans, lanes=2)
        self.title = Path(self.table.source).name if a.file is not None else "synthetic"
        t = self.table
        self.select_id = t.names.index(a.select) if a.select in t.names else None

    # -- setup ----------------------------------------------------------------------------------
    def build(self, graph):
        if self.app.args.select is not None and self.select_id is None:  # (a synthetic trace)
            raise OptionError(f"argument --select: no span is named {self.app.args.select!r}")
        t, a = self.table, self.app.args
        self.scale = _scale(a.hud_scale, graph.size)
        cell = 8 * self.scale
        self.self_ns = self_times(t.start_ns, t.dur_ns, t.lane, t.depth)
        self.rows = RowIndex(t)
        self._depth_key = self._idle_key = None
        self._idle = 0
        self.view = FlameView(t.lane_depths(), 0, int(t.end_ns.max()), (1, 1), row_px=2 * cell)
        self.view.ruler_px = 2 * cell
        self.view.display_unit = t.display_unit
        # passes "Viewer.*": the HUD's live flame chart owns "Flame.*" in the same graph
        self.chart = FlameChart(
            graph.device, graph.output_format, self.view, name="Viewer", glyph_px=self.scale
        )
        self.chart.store.upload(t)
        self.chart.extras = ChartExtras(graph.device, graph.output_format, t)
        self.overlay = DebugOverlay()
        self.text = DebugOverlayPass(
            graph.device, self.overlay, graph.output_format, name="Viewer.Text"
        )
        clear = RenderPass("Clear", lambda ctx, rp: None, targets=self._clear, writes=(OUTPUT,))
        graph.add(clear)
        self.chart.add_passes(graph)
        graph.add(self.text)
        self.size = None
        self._layout(graph.size)
        if a.range is not None:
            self.view.show(a.range[0] * 1e6, a.range[1] * 1e6)
        if self.select_id is not None:
            idx = np.flatnonzero(t.name_id == self.select_id)
            self._select(int(idx[np.argmax(t.dur_ns[idx])]))
        self._set_search(a.search)
        if a.search and not len(self.matches):  # the picture would not say why nothing is lit
            log.warning("--search %r: no span name contains it", a.search)
        if a.next is not None and len(self.matches):
            self._show_match(int(self.matches[a.next % len(self.matches)]))
        self.typing = False
        self.drag = None  # (x, y, shift) of the press
        self.last_cursor = None
        self.last_click = (-1.0, 0.0, 0.0)
        self.range_stats = None
        if a.mark is not None:
            self._mark(a.mark[0] * 1e6, a.mark[1] * 1e6)

    def _mark(self, t0: float, t1: float) -> None:
        t = self.table
        self.view.range_ns = (min(t0, t1), max(t0, t1))
        self.range_stats = range_stats(
            t.start_ns, t.dur_ns, t.name_id, *self.view.range_ns, depth=t.depth
        )

    def _clear(self, ctx):
        return {
            "color_attachments": [
                {"view": ctx.output, "load_op": "clear", "clear_value": BG, "store_op": "store"}
            ]
        }

    def _layout(self, size) -> None:
        if size == self.size:
            return
        self.size = tuple(size)
        self.scale = _scale(self.app.args.hud_scale, size)
        cell = 8 * self.scale
        self.chart.glyph_px = self.scale
        self.view.row_px = self.view.ruler_px = 2 * cell
        self.view.label_px = cell
        cols, rows = grid_for(size, self.scale)
        self.overlay.resize(cols, rows)
        self.text.set_scale(self.scale)
        self.text.target_size = self.size
        panel = min(PANEL_COLS, cols // 3)  # small windows keep two thirds for the chart
        chart_w = max(cell, size[0] - panel * cell)
        self.view.resize((chart_w, max(cell, size[1] - 4 * cell)), origin=(0, 4 * cell))
        self.view.reset()

    # -- state changes ------------------------------------------------------------------------
    def _set_search(self, text: str) -> None:
        self.view.search = text
        t = self.table
        self.matches = search_matches(t.names, t.name_id, text)  # in time order
        if text:
            low = text.lower()
            flags = np.array([NAME_MATCH if low in n.lower() else 0 for n in t.names], np.uint32)
            self.chart.store.set_name_flags(flags)

    def _search_step(self, step: int) -> None:
        """Select the next (``step`` 1) or previous (-1) match in time order after the
        selected span (none selected: the first in view), and bring it into view."""
        m, v, t = self.matches, self.view, self.table
        if not len(m):
            return
        self._show_match(next_match(m, t.start_ns, v.selected, (v.time_at(0),
                                    v.time_at(v.width)), step))  # fmt: skip

    def _show_match(self, span: int) -> None:
        v, t = self.view, self.table
        self._select(span)
        s, d = float(t.start_ns[span]), float(t.dur_ns[span])
        if d > 0.8 * v.width * v.ns_per_px or s < v.time_at(0) or s + d > v.time_at(v.width):
            v.zoom_to_span(s, max(d, v.width * v.ns_per_px * 0.25))

    def _select(self, span: int) -> None:
        v, t = self.view, self.table
        if span == NONE:
            v.selected = v.selected_name = NONE
            self.stats = self.event = None
            return
        v.selected, v.selected_name = span, int(t.name_id[span])
        self.stats = name_stats(
            t.dur_ns, t.name_id, v.selected_name, t.names[v.selected_name],
            lane=t.lane, lane_id=int(t.lane[span]), self_ns=self.self_ns,
        )  # fmt: skip
        self.event = event_at(t, span)

    # -- input ----------------------------------------------------------------------------------
    def on_key(self, key: int) -> None:
        v = self.view
        if self.typing:
            if key == KEY_ENTER:
                self.typing = False
            elif key == KEY_BACKSPACE:
                self._set_search(v.search[:-1])
            return
        if key == KEY_HOME:
            v.reset()
        elif key in (KEY_N, KEY_P):
            self._search_step(1 if key == KEY_N else -1)
        elif key in (KEY_PAGE_UP, KEY_PAGE_DOWN):  # move the lane under the cursor
            lane = self._lane_under_cursor()
            if lane is not None:
                v.move_lane(lane, -1 if key == KEY_PAGE_UP else 1)
        elif key == KEY_SLASH:
            self.typing, self._skip_slash = True, True
            self._set_search("")

    def _keys_held(self, win, dt: float) -> None:
        if self.typing:
            return
        v, w = self.view, self.view.width
        down = win.key_down
        if down(KEY_W) or down(KEY_S):
            v.zoom(ZOOM_PER_S ** (dt if down(KEY_W) else -dt), w / 2)
        pan = (down(KEY_A) or down(KEY_LEFT)) - (down(KEY_D) or down(KEY_RIGHT))
        if pan:
            v.pan(pan * PAN_PX_PER_S * dt)
        rows = down(KEY_DOWN) - down(KEY_UP)
        if rows:
            v.scroll(rows * v.row_px)

    def _mouse(self, win) -> None:
        v = self.view
        inp = win.take_input()
        x, y = win.cursor_pos()
        ox, oy = v.origin
        inside = ox <= x < ox + v.width and oy <= y < oy + v.size[1]
        v.cursor = (x, y) if inside else (-1e9, -1e9)
        if inp.scroll and inside:
            v.zoom(WHEEL_STEP**inp.scroll, x - ox)
        if self.typing:
            for ch in inp.chars:
                if self._skip_slash and ch == "/":
                    self._skip_slash = False
                    continue
                self._set_search(v.search + ch)
        if self.drag is not None and not self.drag[2] and self.last_cursor is not None:
            v.pan(x - self.last_cursor[0])
        self.last_cursor = (x, y)
        for button, pressed, mods, bx, by in inp.buttons:
            if button != 0:
                continue
            if pressed:
                self.drag = (bx, by, bool(mods & 1))
            elif self.drag is not None:
                self._release(bx, by)

    def _release(self, x: float, y: float) -> None:
        v = self.view
        x0, y0, shift = self.drag
        self.drag = None
        ox = v.origin[0]
        if shift:
            self._mark(v.time_at(x0 - ox), v.time_at(x - ox))
            return
        if abs(x - x0) > CLICK_PX or abs(y - y0) > CLICK_PX:
            return  # a drag (already panned)
        lane = v.lane_at(y - v.origin[1])
        if lane is not None:  # a click on a lane's label row: collapse or expand it
            v.toggle_lane(lane)
            return
        now = time.perf_counter()
        lt, lx, ly = self.last_click
        span = self.chart.picked
        if now - lt < DOUBLE_CLICK_S and abs(x - lx) <= CLICK_PX and span != NONE:
            v.zoom_to_span(float(self.table.start_ns[span]), float(self.table.dur_ns[span]))
        self._select(span)
        self.last_click = (now, x, y)

    def _lane_under_cursor(self) -> int | None:
        """The lane whose rows are under the cursor, or None."""
        v = self.view
        if v.cursor[0] < -1e8:
            return None
        row = (v.cursor[1] - v.origin[1] + v.scroll_px) // v.row_px
        heads = v.header_rows()
        above = np.flatnonzero(heads <= row)
        return int(above[np.argmax(heads[above])]) if len(above) else None

    def _fit_lanes(self) -> None:
        """Lanes as tall as the deepest span in view (recomputed when the range moved)."""
        v = self.view
        key = (v.start_ns, v.ns_per_px, v.width)
        if key != self._depth_key:
            self._depth_key = key
            v.set_lane_depths(self.rows.depths_in(v.time_at(0), v.time_at(v.width)))
            v.scroll(0)

    def _state_key(self, win) -> tuple:
        """Everything the picture depends on that can change without new data."""
        v = self.view
        return (v.start_ns, v.ns_per_px, v.scroll_px, win.cursor_pos(), v.hover, v.selected,
                v.search, self.typing, v.range_ns, self.drag, self.chart.picked, self.size,
                tuple(v.order), frozenset(v.collapsed))  # fmt: skip

    def idle(self) -> bool:
        """The picture did not change for ``IDLE_FRAMES`` frames and nothing is pending (no
        input queued, the cursor where it was, no pick result landed): the window loop
        waits for events instead of drawing it again."""
        win = self.app.window
        if win is None or self._idle < IDLE_FRAMES:
            return False
        inp = win.input
        if inp.buttons or inp.scroll or inp.chars:
            return False
        self.chart.poll()  # a pick that came back since is a change (the hover)
        return self._state_key(win) == self._idle_key

    # -- per frame ----------------------------------------------------------------------------
    def update(self, ctx):
        self._layout(ctx.size)
        self._fit_lanes()
        win, v = self.app.window, self.view
        if win is not None:
            dt = 1 / 60 if getattr(self, "_t", None) is None else ctx.time - self._t
            self._t = ctx.time
            self._mouse(win)
            self._keys_held(win, min(max(dt, 0.0), 0.1))
        elif self.app.args.cursor is not None:
            v.cursor = self.app.args.cursor
        self.chart.poll()
        v.hover = self.chart.picked if v.cursor[0] > -1e8 else NONE
        self._text()
        if win is not None:  # unchanged frames in a row (``idle``)
            key = self._state_key(win)
            self._idle = self._idle + 1 if key == self._idle_key else 0
            self._idle_key = key

    def _text(self) -> None:
        ov, v, t = self.overlay, self.view, self.table
        cell = 8 * self.scale
        ov.clear()
        ov.fill(0, 0, ov.cols, 2, PANEL)
        a, b = v.time_at(0), v.time_at(v.width)
        unit = v.ruler()[1]  # the ruler's: header and ruler agree
        left = tick_label(a, v.ns_per_px, unit).removesuffix(f" {unit}")  # to the pixel
        span = f"{left} .. {tick_label(b, v.ns_per_px, unit)}"
        status = f"{self.title}  {len(t):,} spans  {span} ({fmt_ns(b - a)})"
        ov.text(1, 0, status, TEXT)
        search = v.search + ("_" if self.typing else "")
        count = f"  ({len(self.matches):,} spans; N / P next, previous)" if v.search else ""
        ov.text(
            1,
            1,
            f"search: {search}{count}"
            if (search or self.typing)
            else "/ search  wheel zoom  drag pan  shift-drag range  Home all",
            HEAD if search else DIM,
        )
        self._ruler(ov, cell)
        top = v.origin[1] // cell
        labels = list(t.lanes)
        for c in t.counters:  # the scale of the step chart below the label
            labels[c.lane] += f"  (max {float(c.value.max()):,.6g})"
        for lane, (label, r) in enumerate(zip(labels, v.header_rows(), strict=True)):
            row = top + (int(r) * v.row_px - v.scroll_px) // cell
            if top <= row < ov.rows:
                mark = "+" if lane in v.collapsed else "-"
                ov.text(1, row, printable(f"{mark} {label}"), HEAD)
        if v.range_ns is not None:
            c0 = max(0, int(v.x_of(v.range_ns[0]) // cell))
            c1 = min(v.width // cell, int(math.ceil(v.x_of(v.range_ns[1]) / cell)))
            if c1 > c0:
                ov.fill(c0, top, c1 - c0, ov.rows - top, BAND, glyphs=False)
        self._panel(ov, v.width // cell)
        self._tooltip(ov, cell)

    def _ruler(self, ov, cell: int) -> None:
        """Tick labels in the ruler band's top row, just right of each major tick."""
        v = self.view
        tk, unit = v.ruler()
        row = v.origin[1] // cell - 2
        for x0, _, label, _ in label_boxes(tk, v.width, unit, cell):
            ov.text(int(x0 // cell), row, label, DIM)

    def _panel(self, ov, col: int) -> None:
        ov.fill(col, 2, ov.cols - col, ov.rows - 2, PANEL)
        x, y = col + 1, 3
        s = getattr(self, "stats", None)
        if s is not None:
            y = self._details(ov, x, y)
        w = ov.cols - x - 1
        if s is not None:
            t = self.table
            ov.text(x, y, _fit(f"ALL {s.name}", w), HEAD)
            ov.text(x, y + 1, _fit(f"in {t.lanes[t.lane[self.view.selected]]}", w), DIM)
            rows = (
                ("count", f"{s.count:,}"),
                ("mean", fmt_ns(s.mean)),
                ("median", fmt_ns(s.median)),
                ("p95", fmt_ns(s.p95)),
                ("max", fmt_ns(s.max)),
                ("total", fmt_ns(s.total)),
                ("self avg", fmt_ns(s.self_mean)),
            )
            for i, (k, val) in enumerate(rows):
                ov.text(x, y + 2 + i, f"{k:<9}{val:>13}", TEXT)
            y += 10
        r = self.range_stats
        if r is not None:
            ov.text(x, y, "RANGE", HEAD)
            ov.text(x, y + 1, f"{r.t0 / 1e6:.3f} .. {r.t1 / 1e6:.3f} ms", TEXT)
            ov.text(x, y + 2, f"length  {fmt_ns(r.t1 - r.t0):>14}", TEXT)
            ov.text(x, y + 3, f"spans   {r.spans:>14,}", TEXT)
            mean = fmt_ns(r.root_mean) if r.roots else "-"
            ov.text(x, y + 4, f"roots   {r.roots:>6,} mean {mean:>9}", TEXT)  # depth 0, all lanes
            ov.text(x, y + 5, "most time:", DIM)
            for i, (nid, n, tot) in enumerate(r.top):
                ov.text(
                    x, y + 6 + i, f"{self.table.names[nid][:14]:<14}{n:>6}{fmt_ns(tot):>12}", TEXT
                )
        if s is None and r is None:
            ov.text(x, y, "click a span: its name's", DIM)
            ov.text(x, y + 1, "statistics show here", DIM)

    def _details(self, ov, x: int, y: int) -> int:
        """The selected span: name, category, duration, self and thread time, args."""
        t, span = self.table, self.view.selected
        e = getattr(self, "event", None) or {}
        w = ov.cols - x - 1
        ov.text(x, y, "SELECTED", HEAD)
        ov.text(x, y + 1, _fit(printable(t.names[t.name_id[span]]), w), TEXT)
        rows = [("category", printable(str(e.get("cat", "-"))))]
        rows.append(("duration", fmt_ns(float(t.dur_ns[span]))))
        rows.append(("self", fmt_ns(float(self.self_ns[span]))))
        tdur = e.get("tdur")
        if isinstance(tdur, int | float) and not isinstance(tdur, bool):
            rows.append(("thread", fmt_ns(tdur * 1000.0)))
        rows.append(("start", f"{t.start_ns[span] / 1e6:.6f} ms"))
        args = e.get("args") if isinstance(e.get("args"), dict) else {}
        for i, (k, val) in enumerate(rows):
            ov.text(x, y + 2 + i, f"{k:<9}{val:>13}"[:w], TEXT)
        y += 2 + len(rows)
        if args:
            ov.text(x, y, "args", DIM)
            for i, (k, val) in enumerate(list(args.items())[:6]):
                ov.text(x, y + 1 + i, _fit(printable(f"{k}: {_compact(val)}"), w), TEXT)
            y += 1 + min(len(args), 6)
        return y + 1

    def _tooltip(self, ov, cell: int) -> None:
        v, t = self.view, self.table
        span = v.hover
        if span == NONE or span >= len(t):
            return
        lines = [
            _fit(printable(t.names[t.name_id[span]]), 40),
            f"duration {fmt_ns(float(t.dur_ns[span]))}",
            f"start    {t.start_ns[span] / 1e6:.6f} ms",
            f"depth    {int(t.depth[span])}  {_fit(t.lanes[t.lane[span]], 28)}",
        ]
        if t.dur_ns[span] / v.ns_per_px < 1:
            lines.append("(longest in its pixel column)")
        w = max(len(s) for s in lines) + 2
        c = min(int(v.cursor[0]) // cell + 2, ov.cols - w)
        r = min(int(v.cursor[1]) // cell + 2, ov.rows - len(lines))
        ov.fill(c, r, w, len(lines), TIP)
        for i, s in enumerate(lines):
            ov.text(c + 1, r + i, s, TEXT if i else HEAD)


def _scale(forced: int | None, size) -> int:
    """HUD scale: the automatic one, raised until the text grid covers the window (its
    ceiling is MAX_COLS x MAX_ROWS cells), so labels and panels show at every size."""
    auto = forced or auto_hud_scale(size)
    return max(auto, math.ceil(size[1] / (8 * MAX_ROWS)), math.ceil(size[0] / (8 * MAX_COLS)))


def _fit(text: str, width: int) -> str:
    """``text`` in ``width`` cells: cut with ``..`` at the end when longer (the font has
    no ellipsis), so a cut name never reads as a whole one."""
    return text if len(text) <= width else text[: max(width - 2, 0)] + ".."[: max(width, 0)]


def _compact(v) -> str:
    return v if isinstance(v, str) else orjson.dumps(v).decode()


if __name__ == "__main__":
    main(FlameViewer)
