"""The flame chart's selection compute pass (shaders/flame_select.wgsl): what is in view,
the pixel-column level of detail, and picking, as one compute pass of six dispatches.

Per frame, whatever the span count, the CPU writes one 112-byte uniform and records the same
six kinds of dispatch (the span ones once per store chunk: ``SpanStore.chunk_spans`` spans
each, the adapter's binding limit): ``reset`` (clear the per-cell buffers and counters),
``classify`` (every span: in the time range, in a visible row of a shown lane; a span at
least one pixel wide is appended to the instance list at once, a narrower one bids
``atomicMax`` of ``(search match << 31) | bits(f32 duration)`` for its (row, pixel column)
cell), ``resolve`` (the bidders whose key won write ``atomicMin`` of their index: ties go to
the lowest index, so the choice is deterministic), ``compact`` (each won cell appends its
span as a one-pixel *collapsed* instance; per chunk, the cells whose winner it holds),
``finish`` (indirect draw and pick dispatch arguments), ``pick`` (indirect, over the drawn
instances: the lowest span index under the cursor).

So the output is bounded by rows x screen width (plus the spans wider than a pixel, which
never overlap in a well-nested row), never by the span count, and no span wider than a
pixel is dropped. A row is one depth of one lane; the cell grid covers only the visible
rows. The numpy specification is ``engine.inspect.reference``.

Zoomed out, the span dispatches read a level-of-detail level (``engine.inspect.lod``)
instead of the spans: the coarsest whose bucket is under a pixel (``level_for``), so what
is read follows the pixels x rows on screen, not the span count. The instances still name
real spans (a summary its longest), so picking and the details pane are unchanged.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import wgpu

from engine.shader_registry import shader_pipeline

WG = 256
MAX_WORKGROUPS = 65535
VIEW_BYTES = 128
INST_BYTES = 32
STATE_BYTES = 64
NONE = 0xFFFFFFFF
INST_COLLAPSED, INST_MATCH, INST_DIM = 1, 2, 4
MAX_BUCKET_PX = 0.999  # a level is read only while its bucket is under a pixel (f32 margin)
ENTRIES = ("reset", "classify", "resolve", "compact", "finish", "pick")


@dataclass
class ViewParams:
    """Everything the select and draw passes read from the view, per frame.

    Attributes:
        start_ns: time at the chart's left edge, ns since the store's origin (float).
        px_per_ns: horizontal scale (> 0).
        width, height: chart area in px; ``origin``: its top-left corner in the output, px.
        out_size: output texture size, px.
        row_px: height of one row (one depth of one lane), integer px.
        scroll_px: vertical scroll, integer px (>= 0).
        lane_rows: ``int32 (lanes,)``, first row of each lane's depth 0 (< 0: lane hidden).
        cursor: cursor in chart px (picking), or far outside.
        hover, selected: span indices highlighted (``NONE`` for none).
        selected_name: name id whose spans are outlined (``NONE`` for none).
        search_on: whether ``NAME_MATCH`` flags dim the rest.
        glyph_px: label glyph scale (8 x glyph_px px per character).
        tick_x0, tick_px, minors: the ruler's first major tick (chart px), spacing (px)
            and subdivisions (``engine.inspect.ruler.Ticks``); ``ruler_px``: height of its
            band above the chart (0: none).
    """

    start_ns: float
    px_per_ns: float
    width: int
    height: int
    lane_rows: np.ndarray
    row_px: int = 18
    scroll_px: int = 0
    origin: tuple[int, int] = (0, 0)
    out_size: tuple[int, int] = (0, 0)
    cursor: tuple[float, float] = (-1e9, -1e9)
    hover: int = NONE
    selected: int = NONE
    selected_name: int = NONE
    search_on: bool = False
    glyph_px: int = 1
    tick_x0: float = 0.0
    tick_px: float = 100.0
    minors: int = 5
    ruler_px: int = 0

    @property
    def cols(self) -> int:
        return max(1, math.ceil(self.width))

    @property
    def rows(self) -> int:
        return max(1, math.ceil(self.height / self.row_px) + 1)

    @property
    def first_row(self) -> int:
        return int(self.scroll_px) // int(self.row_px)

    def split_start(self) -> tuple[int, int, float]:
        """``(lo, hi, frac)``: the integer ns of ``start_ns`` as two u32 words (two's
        complement), and the fraction (f32 ns)."""
        s = math.floor(self.start_ns)
        return s & 0xFFFFFFFF, (s >> 32) & 0xFFFFFFFF, float(np.float32(self.start_ns - s))


def instance_capacity(params: ViewParams) -> int:
    """Instances the list holds: two per cell (a wide span starting there and a collapsed
    one) plus slack for rows that do not nest."""
    return 2 * params.cols * params.rows + 4096


def view_uniform(p: ViewParams, count: int, capacity: int) -> bytes:
    """Pack the WGSL ``View`` struct (128 bytes, shaders/flame_common.wgsl)."""
    lo, hi, frac = p.split_start()
    u = np.zeros(32, np.uint32)
    f = u.view(np.float32)
    i = u.view(np.int32)
    u[0], u[1] = lo, hi
    f[2], f[3] = frac, p.px_per_ns
    f[4:8] = (p.width, p.height, *p.origin)
    f[8], f[9] = p.row_px, p.scroll_px
    i[10] = p.first_row
    u[11:16] = (count, p.cols, p.rows, len(p.lane_rows), capacity)
    f[16:18] = p.cursor
    u[18:22] = (p.hover, p.selected, p.selected_name, int(p.search_on))
    f[22], f[23], f[24] = p.glyph_px, *p.out_size
    f[25], f[26], f[27] = p.tick_x0, p.tick_px, p.ruler_px
    u[28] = p.minors
    return u.tobytes()


def level_for(levels, p: ViewParams) -> int:
    """The level the selection reads for view ``p``: the coarsest of ``levels`` (``GpuLevel``
    s, finest first) whose bucket is narrower than a pixel (``MAX_BUCKET_PX``), so every span
    a pixel wide is in it as itself; 0 (the spans) when none is, or while a search is on (a
    match must win its pixel column, which a summary cannot know)."""
    if p.search_on:
        return 0
    best = 0
    for k, lv in enumerate(levels, 1):
        if lv.bucket_ns * p.px_per_ns <= MAX_BUCKET_PX:
            best = k
    return best


def span_grid(count: int) -> tuple[int, int]:
    """Workgroups ``(x, y)`` covering ``count`` spans, 256 per workgroup, x <= 65535."""
    g = max(1, -(-count // WG))
    x = min(g, MAX_WORKGROUPS)
    return x, -(-g // x)


class FlameSelect:
    """Pipelines and per-view buffers of the selection pass.

    Args:
        device: the ``wgpu.GPUDevice``.

    Attributes:
        uniform: the ``View`` uniform (shared with the draw).
        insts: the compacted instance list (``INST_BYTES`` each).
        state: 16 ``u32``: instances drawn (1), instances wanted (7), picked span (8);
            usage ``STORAGE | COPY_SRC`` (read back for hover and statistics).
        args: indirect arguments: draw (bytes 0..15), pick dispatch (16..27).
        lod: read level-of-detail levels when zoomed out (default True; False: always the
            spans, the exact selection). ``level``: the level read by the last ``prepare``
            (0: the spans); ``dispatched``: how many of its entries the span dispatches
            read (the blocks near the view, ``lod.RangeIndex``, when the source has one and
            ``ranges`` is True, the default; False: every entry, for comparisons).
    """

    def __init__(self, device: wgpu.GPUDevice):
        self.device = device
        c = wgpu.ShaderStage.COMPUTE
        ro, rw = {"type": "read-only-storage"}, {"type": "storage"}
        kinds = [{"type": "uniform"}, ro, ro, ro, rw, rw, rw, rw, {"type": "uniform"}]
        self.layout = device.create_bind_group_layout(
            label="Flame.Select",
            entries=[{"binding": b, "visibility": c, "buffer": k} for b, k in enumerate(kinds)],
        )
        self.args_layout = device.create_bind_group_layout(
            label="Flame.Select args",
            entries=[{"binding": 0, "visibility": c, "buffer": rw}],
        )
        layout = device.create_pipeline_layout(bind_group_layouts=[self.layout])
        with_args = device.create_pipeline_layout(
            bind_group_layouts=[self.layout, self.args_layout]
        )
        self.shader = shader_pipeline(
            device,
            "flame_select.wgsl",
            lambda m: {
                e: device.create_compute_pipeline(
                    label=f"Flame.{e}",
                    layout=with_args if e == "finish" else layout,
                    compute={"module": m, "entry_point": e},
                )
                for e in ENTRIES
            },
        )  # explicit layouts: the bind groups survive a reload
        u = wgpu.BufferUsage
        self.uniform = device.create_buffer(
            label="flame view", size=VIEW_BYTES, usage=u.UNIFORM | u.COPY_DST
        )
        self.state = device.create_buffer(
            label="flame state", size=STATE_BYTES, usage=u.STORAGE | u.COPY_SRC
        )
        self.args = device.create_buffer(
            label="flame indirect args", size=32, usage=u.STORAGE | u.INDIRECT
        )
        self.args_group = device.create_bind_group(
            label="Flame.Select args",
            layout=self.args_layout,
            entries=[{"binding": 0, "resource": {"buffer": self.args}}],
        )
        self.cells = self.cell_idx = self.insts = self.lane_buf = None
        # (first entry, entries, words per entry) per (level, chunk)
        self.chunk_uniforms: dict[tuple[int, int], wgpu.GPUBuffer] = {}
        self._chunk_vals: dict[tuple[int, int], tuple] = {}
        self._bind_cache: dict[int, list] = {}
        self.bind_groups: list = []
        self.lod = self.ranges = True
        self.level = self.dispatched = 0
        self._grids: list[tuple[int, int]] = []
        self.capacity = 0
        self._cells_n = 0
        self._lanes = None
        self._bind_key = None
        self.bind_group = None
        self.count = 0
        self._cell_groups = 1

    @property
    def pipelines(self) -> dict:  # the current ones: hot reload replaces them
        return self.shader.get()

    def _buf(self, label: str, size: int, usage: int) -> wgpu.GPUBuffer:
        return self.device.create_buffer(label=label, size=max(16, size), usage=usage)

    def prepare(self, store, p: ViewParams) -> None:
        """Write this frame's uniform (and lane rows when they changed); (re)allocate the
        per-view buffers when the chart's size grew."""
        u = wgpu.BufferUsage
        cells = p.cols * p.rows
        if cells > self._cells_n:
            self.cells = self._buf("flame cell keys", cells * 4, u.STORAGE)
            self.cell_idx = self._buf("flame cell spans", cells * 4, u.STORAGE)
            self._cells_n = cells
        cap = instance_capacity(p)
        if cap > self.capacity:
            self.insts = self._buf("flame instances", cap * INST_BYTES, u.STORAGE | u.COPY_SRC)
            self.capacity = cap
        lanes = np.ascontiguousarray(p.lane_rows, np.int32)
        if self._lanes is None or not np.array_equal(lanes, self._lanes):
            if self.lane_buf is None or self.lane_buf.size < max(16, lanes.nbytes):
                self.lane_buf = self._buf(
                    "flame lane rows", max(64, 2 * lanes.nbytes), u.STORAGE | u.COPY_DST
                )
            if len(lanes):
                self.device.queue.write_buffer(self.lane_buf, 0, lanes.tobytes())
            self._lanes = lanes.copy()
        self.level = level_for(store.levels, p) if self.lod else 0
        chunks, ranges, stride, index = store.source(self.level)
        lo, hi = 0, sum(n for _, n in ranges)
        if index is not None and self.ranges:  # the blocks near the view (sorted source)
            lo, hi = index.entry_range(p.start_ns, p.start_ns + p.width / p.px_per_ns,
                                       1.0 / p.px_per_ns)  # fmt: skip
        ranges = ranges or [(0, 0)]
        part = [(min(max(lo - b, 0), n), min(max(hi - b, 0), n)) for b, n in ranges]
        self.dispatched = sum(e - a for a, e in part)
        self.count = self.dispatched
        self.device.queue.write_buffer(self.uniform, 0, view_uniform(p, self.count, self.capacity))
        for k, (r, (a, e)) in enumerate(zip(ranges, part, strict=True)):
            at, vals = (self.level, k), (r[0], e, stride, a)
            if at not in self.chunk_uniforms:
                self.chunk_uniforms[at] = self._buf("flame chunk", 16, u.UNIFORM | u.COPY_DST)
            if self._chunk_vals.get(at) != vals:
                self.device.queue.write_buffer(
                    self.chunk_uniforms[at], 0, np.array(vals, np.uint32).tobytes()
                )
                self._chunk_vals[at] = vals
        key = (store.version, id(self.cells), id(self.insts), id(self.lane_buf))
        if key != self._bind_key:
            self._bind_cache = {}
            self._bind_key = key
        groups = self._bind_cache.get(self.level)
        if groups is None or len(groups) != len(ranges):
            groups = [
                self._bind_group(store, chunks[k], self.chunk_uniforms[(self.level, k)])
                for k in range(len(ranges))
            ]
            self._bind_cache[self.level] = groups
        active = [k for k, (a, e) in enumerate(part) if e > a]
        self.bind_groups = [groups[k] for k in active]
        self.bind_group = groups[0]
        self._grids = [span_grid(part[k][1] - part[k][0]) for k in active]
        self._cell_groups = max(1, -(-cells // WG))

    def _bind_group(self, store, chunk: wgpu.GPUBuffer, chunk_uniform: wgpu.GPUBuffer):
        bufs = [
            self.uniform, chunk, store.names, self.lane_buf,
            self.cells, self.cell_idx, self.insts, self.state, chunk_uniform,
        ]  # fmt: skip
        return self.device.create_bind_group(
            label="Flame.Select",
            layout=self.layout,
            entries=[{"binding": i, "resource": {"buffer": b}} for i, b in enumerate(bufs)],
        )

    def record(self, cpass: wgpu.GPUComputePassEncoder) -> None:
        """The dispatches (see the module docstring); ``prepare`` first. Each phase runs
        over every chunk before the next phase starts (a cell's winner may be in any)."""
        pl = self.pipelines
        cpass.set_bind_group(0, self.bind_group)
        cpass.set_pipeline(pl["reset"])
        cpass.dispatch_workgroups(self._cell_groups)
        phases = ("classify", "resolve", "compact") if self.bind_groups else ()
        for e in phases:
            cpass.set_pipeline(pl[e])
            for bg, grid in zip(self.bind_groups, self._grids, strict=True):
                cpass.set_bind_group(0, bg)
                cpass.dispatch_workgroups(*(grid if e != "compact" else (self._cell_groups,)))
        cpass.set_bind_group(0, self.bind_group)
        cpass.set_pipeline(pl["finish"])
        cpass.set_bind_group(1, self.args_group)
        cpass.dispatch_workgroups(1)
        cpass.set_pipeline(pl["pick"])
        cpass.dispatch_workgroups_indirect(self.args, 16)

    # -- inspection (tests, tools): blocking reads -------------------------------------------
    def read_state(self) -> np.ndarray:
        return np.frombuffer(self.device.queue.read_buffer(self.state), np.uint32).copy()

    def read_instances(self) -> np.ndarray:
        """The drawn instances as a structured array (blocking; tests and tools only)."""
        n = int(self.read_state()[1])
        if n == 0:
            return np.zeros(0, INST_DTYPE)
        raw = self.device.queue.read_buffer(self.insts, 0, n * INST_BYTES)
        return np.frombuffer(raw, INST_DTYPE).copy()


INST_DTYPE = np.dtype(
    [
        ("x0", "<f4"),
        ("w", "<f4"),
        ("y0", "<f4"),
        ("span", "<u4"),
        ("name", "<u4"),
        ("flags", "<u4"),
        ("lane_depth", "<u4"),
        ("pad", "<u4"),
    ]
)
