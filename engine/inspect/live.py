"""HUD mode ``flame``: the last few seconds of the running sample as a flame chart over the
frame, fed by ``engine.telemetry`` (one ``FrameRecord`` per finished frame).

``FlamePanel`` is the HUD panel that holds a ``LiveFlame``: it adds the chart's passes to the
graph (disabled until the HUD's mode is ``flame``). While on, it is
subscribed to the telemetry (while off it costs nothing); per record it
appends the frame's CPU scopes (lane "CPU main thread") and GPU scopes (lane "GPU queue",
shifted onto the CPU clock by ``telemetry.session.gpu_clock_offset_ns``, an estimate the
lane label says so; left out while the session has none) to the GPU span store: one
``write_buffer`` of a few dozen spans. Each frame is a depth-0 span ("CPU frame", "GPU
frame") with its scopes at depth 1 and, with ``--gpu-profile draws``, each pass's draws
(timed inside the pass) at depth 2 under it.
"""

from __future__ import annotations

import numpy as np

from engine.inspect.chart import FlameChart
from engine.inspect.traceload import CPU_LANE, GPU_LANE
from engine.inspect.view import FlameView
from engine.overlay.debug_overlay import DebugOverlayPass, auto_hud_scale, grid_for
from engine.overlay.grid import DebugOverlay
from engine.overlay.panel import HudData, Panel

WINDOW_S = 2.0
ORIGIN_MARGIN_NS = 1_000_000_000  # GPU spans shifted by the offset may start before frame 0
MAX_SPANS = 1 << 20  # then the older half is dropped (one re-upload)
LABEL = (235, 235, 235)
DIM_LABEL = (150, 150, 160)


class _Columns:
    """Growable numpy mirror of the store (hover text and statistics read it)."""

    def __init__(self):
        self.n = 0
        self.start = np.zeros(1024, np.int64)
        self.dur = np.zeros(1024, np.int64)
        self.lane = np.zeros(1024, np.uint32)
        self.depth = np.zeros(1024, np.uint32)
        self.name = np.zeros(1024, np.uint32)

    def append(self, start, dur, lane, depth, name) -> None:
        k = len(start)
        if self.n + k > len(self.start):
            cap = 1 << (self.n + k - 1).bit_length()
            for a in ("start", "dur", "lane", "depth", "name"):
                old = getattr(self, a)
                new = np.zeros(cap, old.dtype)
                new[: self.n] = old[: self.n]
                setattr(self, a, new)
        sl = slice(self.n, self.n + k)
        self.start[sl], self.dur[sl], self.lane[sl] = start, dur, lane
        self.depth[sl], self.name[sl] = depth, name
        self.n += k

    def drop_front(self, k: int) -> None:
        for a in ("start", "dur", "lane", "depth", "name"):
            arr = getattr(self, a)
            arr[: self.n - k] = arr[k : self.n]
        self.n -= k


class LiveFlame:
    """The live flame chart.

    Args:
        device, fmt: the GPU device and the output format.
        telemetry: the ``engine.telemetry.Telemetry`` to follow.
        size: output size, px. ``window_s``: seconds shown.
        hud_scale: text scale (default from the size).

    Attributes:
        chart: the ``FlameChart`` (store, passes). ``columns``: the CPU mirror.
        names: scope names in store order. ``frames``: records appended.
    """

    def __init__(self, device, fmt: str, telemetry, size, *, window_s=WINDOW_S, hud_scale=None):
        self.telemetry = telemetry
        self.window_ns = int(window_s * 1e9)
        self.hud_scale = hud_scale
        self.names: list[str] = ["CPU frame", "GPU frame"]
        self._ids = {n: i for i, n in enumerate(self.names)}
        self._names_dirty = True
        self.columns = _Columns()
        self.origin_ns: int | None = None
        self.latest_ns = 0
        self.frames = 0
        self.has_gpu = False
        self.lane_depths = np.array([2, 2])  # rows per lane: grows if a record nests deeper
        self.view = FlameView(np.array([1, 1]), 0, self.window_ns, (1, 1), row_px=16)
        self.chart = FlameChart(device, fmt, self.view, name="Flame", panel=True, readback=False)
        self.overlay = DebugOverlay()
        self.text = DebugOverlayPass(device, self.overlay, fmt, name="Flame.Text")
        self.text_pass = None
        self.size = None
        self._layout_key = None
        self.resize(size)
        self.enabled = False
        self.last_seq = -1
        self._unsubscribe = None

    # -- data: called on the frame thread once per finished frame ----------------------------
    def _id(self, name: str) -> int:
        i = self._ids.get(name)
        if i is None:
            i = self._ids[name] = len(self.names)
            self.names.append(name)
            self._names_dirty = True
        return i

    def on_record(self, record) -> None:
        """Append one record's scopes (cheap: a few dozen spans, one buffer write)."""
        if record.seq <= self.last_seq:
            return
        self.last_seq = record.seq
        rows: list[tuple[int, int, int, int, int]] = []  # start, dur, lane, depth, name
        if self.origin_ns is None:
            self.origin_ns = record.t_ns - ORIGIN_MARGIN_NS
        offset = self.telemetry.session.gpu_clock_offset_ns
        self._frame(rows, record.cpu, 0, 0)
        if record.gpu and isinstance(offset, int):
            self._frame(rows, record.gpu, 1, offset)
            self._draws(rows, record.gpu, offset)
            self.has_gpu = True
        if not rows:
            return
        if self._names_dirty:
            self.chart.store.set_names(self.names)
            self._names_dirty = False
        if self.columns.n + len(rows) > MAX_SPANS:
            self._drop_oldest_half()
        a = np.array(rows, np.int64)
        self.columns.append(a[:, 0], a[:, 1], a[:, 2], a[:, 3], a[:, 4])
        self.chart.store.append(a[:, 0], a[:, 1], a[:, 2], a[:, 3], a[:, 4])
        self.latest_ns = max(self.latest_ns, int((a[:, 0] + a[:, 1]).max()))
        np.maximum.at(self.lane_depths, a[:, 2], a[:, 3] + 1)  # e.g. a pass's draws later
        self.frames += 1

    def _frame(self, rows: list, scopes, lane: int, shift: int) -> None:
        ok = [s for s in scopes or () if s.end_ns >= s.begin_ns]
        if not ok:
            return
        o = self.origin_ns - shift
        b = min(s.begin_ns for s in ok) - o
        e = max(s.end_ns for s in ok) - o
        rows.append((b, e - b, lane, 0, lane))  # name 0 "CPU frame", 1 "GPU frame"
        rows += [(s.begin_ns - o, s.end_ns - s.begin_ns, lane, 1, self._id(s.name)) for s in ok]

    def _draws(self, rows: list, gpu, shift: int) -> None:
        """``--gpu-profile draws``: each pass's nested scopes timed inside it, at depth 2."""
        o = self.origin_ns - shift
        for s in gpu:
            rows += [
                (c.begin_ns - o, c.end_ns - c.begin_ns, 1, 2, self._id(c.name))
                for c in s.children
                if c.begin_ns is not None
            ]

    def _drop_oldest_half(self) -> None:
        c = self.columns
        c.drop_front(c.n // 2)
        store = self.chart.store
        store.clear()
        store.append(c.start[: c.n], c.dur[: c.n], c.lane[: c.n], c.depth[: c.n], c.name[: c.n])

    # -- per frame ---------------------------------------------------------------------------
    def resize(self, size) -> None:
        """Chart over the lower 40% of the output (more if the lanes' rows need it); text
        grid at the HUD scale. Re-laid out when the size or the lanes' depths change."""
        size = (int(size[0]), int(size[1]))
        key = (size, tuple(self.lane_depths.tolist()))
        if key == self._layout_key:
            return
        self._layout_key = key
        self.size = size
        scale = self.hud_scale or auto_hud_scale(size)
        cell = 8 * scale
        self.view.row_px = 2 * cell
        self.chart.glyph_px = scale
        # 40% of the height, and at least the 6 rows of the two lanes (header + 2 depths)
        need = int(np.sum(1 + self.lane_depths)) * self.view.row_px  # both lanes' rows
        rows_px = min(max(need, int(size[1] * 0.4)) // cell * cell, size[1])
        top = max(0, (size[1] - rows_px) // cell * cell)
        self.view.resize((size[0], size[1] - top), origin=(0, top))
        self.overlay.resize(*grid_for(size, scale))
        self.text.set_scale(scale)
        self.text.target_size = size
        self._scale = scale

    def update(self, ctx) -> None:
        """Follow the newest data: the last ``window_s`` seconds across the width. Does
        nothing while disabled (call it every frame)."""
        if not self.enabled:
            return
        self.resize(ctx.size)
        end = self.latest_ns
        self.view.set_lane_depths(self.lane_depths)
        self.view.set_data_range(end - self.window_ns, end)
        self.view.show(end - self.window_ns, end)
        self._labels()

    def _labels(self) -> None:
        ov, v = self.overlay, self.view
        cell = 8 * self._scale
        ov.clear()
        top = v.origin[1] // cell
        rows = v.lane_rows() - 1
        gpu = GPU_LANE if self.has_gpu else "GPU queue (no clock offset yet)"
        for r, label in zip(rows.tolist(), (CPU_LANE, gpu), strict=True):
            ov.text(1, top + r * v.row_px // cell, label, LABEL)
        title = f"last {self.window_ns / 1e9:g} s"
        ov.text(ov.cols - len(title) - 1, top, title, DIM_LABEL)

    def add_passes(self, graph) -> None:
        self.chart.add_passes(graph)
        self.text_pass = graph.add(self.text)

    def set_enabled(self, on: bool) -> None:
        """Show or hide. Off costs nothing per frame: the passes are disabled and the view
        is not subscribed; on, it first takes the records still in ``telemetry.history``
        (the last 300 frames), so the chart is full at once."""
        on = bool(on)
        self.chart.set_enabled(on)
        if self.text_pass is not None:
            self.text_pass.enabled = on
        if on and self._unsubscribe is None:
            for record in list(self.telemetry.history):
                self.on_record(record)
            self._unsubscribe = self.telemetry.subscribe(self.on_record)
        elif not on and self._unsubscribe is not None:
            self._unsubscribe()
            self._unsubscribe = None
        self.enabled = on

    def close(self) -> None:
        self.set_enabled(False)


class FlamePanel(Panel):
    """HUD mode ``flame``: the ``LiveFlame`` chart as a HUD panel that draws itself under the
    HUD text. Built when the HUD installs, it adds its passes (``Flame.Select``, ``Flame``,
    ``Flame.Text``) to the graph before the HUD's own, disabled until the mode shows it;
    hidden, it costs nothing per frame (no pass, no subscription)."""

    key, modes, in_all, underlay = "flame", ("flame",), False, True

    def __init__(self, ctx):
        g = ctx.graph
        scale = ctx.option("hud_scale")
        self.live = LiveFlame(g.device, g.output_format, ctx.telemetry, g.size, hud_scale=scale)
        self.live.add_passes(g)
        self.live.set_enabled(False)

    def activate(self, on: bool) -> None:
        self.live.set_enabled(on)

    def tick(self, data: HudData) -> bool:
        self.live.update(data)
        return False

    def close(self) -> None:
        self.live.close()
