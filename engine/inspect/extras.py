"""Counter tracks and flow arrows over the flame chart: line segments built on the CPU for
what is in view, drawn as ONE instanced draw of antialiased segments
(``shaders/flame_draw.wgsl`` ``vs_seg``/``fs_seg``).

Counters (``SpanTable.counters``) are step charts: a value holds until the next sample.
Where a lane has more samples in view than pixel columns, each column gets one vertical
segment from its minimum to its maximum (and the value entering it), so the cost is bounded
by the width, not the sample count. Flows (``SpanTable.flows``) are arrows from the middle of
the row each end binds to, with a head at the far end: all in view while they are sparse (at
most one per ``SPARSE_PX`` of width), and those of the selected span always, drawn on top in
the selection's yellow (a selection highlights its flows, it never hides the others).

Segments are recomputed only when the view changes (a key of every parameter that moves
them), so an idle chart re-uploads nothing.
"""

from __future__ import annotations

import numpy as np
import wgpu

from engine.inspect.draw import OVER_BLEND
from engine.inspect.select import NONE, ViewParams
from engine.inspect.spans import name_colors
from engine.inspect.traceload import COUNTER_ROWS, SpanTable
from engine.shader_registry import shader_pipeline

SEG_FLOATS = 8  # x0, y0, x1, y1 (chart px), half width (px), rgba8 (bits), pad, pad
MAX_SEGMENTS = 1 << 18
MAX_FLOWS = 20_000
FLOW_RGBA = 0xE6F0F0F0  # light grey, alpha 0.9
FLOW_SELECTED_RGBA = 0xFF1AFFFF  # the selected span's flows: the selection rim's yellow
HEAD_PX = 6.0
SPARSE_PX = 12  # without a selection, flows are drawn while at most one per 12 px is in view


def _rgba_bits(c: np.ndarray) -> np.ndarray:
    return np.asarray(c, np.uint32).view(np.float32)


def counter_segments(table: SpanTable, p: ViewParams) -> np.ndarray:
    """``float32 (k, SEG_FLOATS)`` step-chart segments of every counter lane in view."""
    out = []
    ns_per_px = 1.0 / p.px_per_ns
    t_end = p.start_ns + p.width * ns_per_px
    colors = name_colors([c.name for c in table.counters])
    for c, rgba in zip(table.counters, colors, strict=True):
        top = _row_top(p, c.lane, 0)
        h = COUNTER_ROWS * p.row_px - 3
        if top is None or top + h < 0 or top > p.height or not len(c.t_ns):
            continue
        lo, hi = float(min(c.value.min(), 0.0)), float(c.value.max())
        scale = h / (hi - lo) if hi > lo else 0.0
        i0 = max(int(np.searchsorted(c.t_ns, p.start_ns, side="right")) - 1, 0)
        i1 = int(np.searchsorted(c.t_ns, t_end, side="right"))
        t = c.t_ns[i0:i1].astype(np.float64)
        y = top + 1 + h - (c.value[i0:i1] - lo) * scale
        x = np.clip((t - p.start_ns) * p.px_per_ns, -1.0, p.width + 1.0)
        out.append(_steps(x, y, p.width, rgba) if len(x) <= 2 * p.width else
                   _columns(x, y, p.width, rgba))  # fmt: skip
    return np.concatenate(out) if out else np.zeros((0, SEG_FLOATS), np.float32)


def _seg(x0, y0, x1, y1, half, rgba) -> np.ndarray:
    s = np.zeros((len(x0), SEG_FLOATS), np.float32)
    s[:, 0], s[:, 1], s[:, 2], s[:, 3], s[:, 4] = x0, y0, x1, y1, half
    s[:, 5] = _rgba_bits(np.broadcast_to(np.uint32(rgba), (len(x0),)))
    return s


def _steps(x: np.ndarray, y: np.ndarray, width: float, rgba) -> np.ndarray:
    """Horizontal runs (each value to the next sample, the last to the right edge) and the
    vertical risers between them."""
    xn = np.r_[x[1:], width + 1.0]
    flat = _seg(x, y, xn, y, 0.75, rgba)
    rise = _seg(x[1:], y[:-1], x[1:], y[1:], 0.75, rgba)
    return np.concatenate([flat, rise])


def _columns(x: np.ndarray, y: np.ndarray, width: float, rgba) -> np.ndarray:
    """One vertical min..max segment per pixel column holding samples (denser than px)."""
    col = np.floor(np.clip(x, 0, width - 1)).astype(np.int64)
    starts = np.flatnonzero(np.r_[True, col[1:] != col[:-1]])
    ymin = np.minimum.reduceat(y, starts)
    ymax = np.maximum.reduceat(y, starts)
    prev = np.r_[y[0], y[starts[1:] - 1]]  # the value entering the column
    ymin, ymax = np.minimum(ymin, prev), np.maximum(ymax, prev)
    cx = col[starts] + 0.5
    return _seg(cx, ymin - 0.5, cx, ymax + 0.5, 0.5, rgba)


def _row_top(p: ViewParams, lane, depth) -> float | None:
    if lane >= len(p.lane_rows) or p.lane_rows[lane] < 0:
        return None
    return float((p.lane_rows[lane] + depth) * p.row_px - p.scroll_px)


def flow_segments(table: SpanTable, p: ViewParams) -> np.ndarray:
    """``float32 (k, SEG_FLOATS)``: each flow in view as a shaft, then the heads' two strokes
    (``3 * flows`` rows); the selected span's flows last, in ``FLOW_SELECTED_RGBA``."""
    f = table.flows
    if f is None or not len(f):
        return np.zeros((0, SEG_FLOATS), np.float32)
    rows = np.asarray(p.lane_rows, np.int64)
    ok = (f.lane0 < len(rows)) & (f.lane1 < len(rows))
    l0, l1 = np.minimum(f.lane0, len(rows) - 1), np.minimum(f.lane1, len(rows) - 1)
    ok &= (rows[l0] >= 0) & (rows[l1] >= 0)
    x0 = (f.t0 - p.start_ns) * p.px_per_ns
    x1 = (f.t1 - p.start_ns) * p.px_per_ns
    y0 = (rows[l0] + f.depth0 + 0.5) * p.row_px - p.scroll_px
    y1 = (rows[l1] + f.depth1 + 0.5) * p.row_px - p.scroll_px
    ok &= (np.maximum(x0, x1) >= 0) & (np.minimum(x0, x1) < p.width)
    ok &= (np.maximum(y0, y1) >= 0) & (np.minimum(y0, y1) < p.height)
    touch = np.zeros(len(f), bool)
    if p.selected != NONE and p.selected < len(table):
        touch = ok & _touches(table, f, p.selected)
    if ok.sum() > p.width / SPARSE_PX:
        ok = touch  # a thicket: the selected span's flows only (as Perfetto does)
    # the selected span's flows last: drawn over the others
    k = np.r_[np.flatnonzero(ok & ~touch), np.flatnonzero(touch)][-MAX_FLOWS:]
    x0, y0, x1, y1 = x0[k], y0[k], x1[k], y1[k]
    rgba = np.where(touch[k], np.uint32(FLOW_SELECTED_RGBA), np.uint32(FLOW_RGBA))
    half = np.where(touch[k], 1.0, 0.6)
    d = np.hypot(x1 - x0, y1 - y0)
    d = np.where(d > 0, d, 1.0)
    ux, uy = (x1 - x0) / d, (y1 - y0) / d
    heads = []
    for side in (1.0, -1.0):  # two strokes 30 degrees off the shaft
        hx = x1 - HEAD_PX * (ux * 0.866 - side * uy * 0.5)
        hy = y1 - HEAD_PX * (uy * 0.866 + side * ux * 0.5)
        heads.append(_seg(hx, hy, x1, y1, half + 0.15, rgba))
    return np.concatenate([_seg(x0, y0, x1, y1, half, rgba), *heads])


def _touches(table: SpanTable, f, span: int) -> np.ndarray:
    """Flows with an end bound to ``span`` (its lane and depth, inside its time)."""
    lane, depth = int(table.lane[span]), int(table.depth[span])
    t0 = int(table.start_ns[span])
    t1 = t0 + max(int(table.dur_ns[span]), 1)
    a = (f.lane0 == lane) & (f.depth0 == depth) & (f.t0 >= t0) & (f.t0 < t1)
    b = (f.lane1 == lane) & (f.depth1 == depth) & (f.t1 >= t0) & (f.t1 < t1)
    return a | b


class ChartExtras:
    """The segment buffer and pipeline of one chart's counters and flows.

    Args:
        device: the ``wgpu.GPUDevice``; ``fmt``: the colour format; ``table``: the data.
    """

    def __init__(self, device: wgpu.GPUDevice, fmt: str, table: SpanTable):
        self.device, self.table = device, table
        self.enabled = bool(table.counters) or table.flows is not None
        self.count = 0
        self._key = None
        self.buffer = None
        self.bind_group = None
        if not self.enabled:
            return
        v, f = wgpu.ShaderStage.VERTEX, wgpu.ShaderStage.FRAGMENT
        self.layout = device.create_bind_group_layout(
            label="Flame.Extras",
            entries=[
                {"binding": 0, "visibility": v | f, "buffer": {"type": "uniform"}},
                {"binding": 1, "visibility": v, "buffer": {"type": "read-only-storage"}},
            ],
        )
        layout = device.create_pipeline_layout(bind_group_layouts=[self.layout])
        self.shader = shader_pipeline(
            device,
            "flame_segments.wgsl",
            lambda m: device.create_render_pipeline(
                label="Flame.Extras",
                layout=layout,
                vertex={"module": m, "entry_point": "vs_seg"},
                primitive={"topology": "triangle-list"},
                fragment={
                    "module": m,
                    "entry_point": "fs_seg",
                    "targets": [{"format": fmt, "blend": OVER_BLEND}],
                },
            ),
        )  # explicit layout: the bind group survives a reload

    @property
    def pipeline(self):  # the current one: hot reload replaces it (engine/shader_registry.py)
        return self.shader.get()

    def prepare(self, p: ViewParams, uniform: wgpu.GPUBuffer) -> None:
        """Rebuild and upload the segments when the view moved (else nothing)."""
        if not self.enabled:
            return
        key = (p.start_ns, p.px_per_ns, p.width, p.height, p.row_px, p.scroll_px,
               p.lane_rows.tobytes(), p.selected, id(uniform))  # fmt: skip
        if key == self._key:
            return
        self._key = key
        segs = np.concatenate([counter_segments(self.table, p), flow_segments(self.table, p)])
        segs = segs[:MAX_SEGMENTS]
        self.count = len(segs)
        size = max(64, segs.nbytes)
        if self.buffer is None or self.buffer.size < size:
            u = wgpu.BufferUsage
            self.buffer = self.device.create_buffer(
                label="flame segments", size=max(size, 2 * (self.buffer.size if self.buffer
                                                           else 0)), usage=u.STORAGE | u.COPY_DST
            )  # fmt: skip
            self.bind_group = None
        if self.bind_group is None:
            self.bind_group = self.device.create_bind_group(
                label="Flame.Extras",
                layout=self.layout,
                entries=[{"binding": 0, "resource": {"buffer": uniform}},
                         {"binding": 1, "resource": {"buffer": self.buffer}}],
            )  # fmt: skip
        if self.count:
            self.device.queue.write_buffer(self.buffer, 0, segs.tobytes())

    def record(self, rpass) -> None:
        if self.enabled and self.count:
            rpass.set_pipeline(self.pipeline)
            rpass.set_bind_group(0, self.bind_group)
            rpass.draw(6, self.count)
