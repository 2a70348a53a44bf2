"""Flame chart benchmark (engine/inspect): figures, never pass/fail.

1. Parse: a generated Chrome Trace Event JSON file, the same gzipped, a Lantern
   --telemetry JSONL and a Chrome file of nested B/E pairs (the streaming loader):
   seconds, spans per second (wall and CPU time: on a shared machine the CPU time is the
   steadier figure); peak Python memory per span and per file byte (tracemalloc, a
   separate run); bytes per span kept.
   Flows: a trace of ``LANTERN_FLAME_FLOWS`` flows (default 100k; 10k with ``--quick``)
   from CPU passes to GPU passes and between frames, loaded with and without its flow
   events: the difference is what binding the flows to their spans costs.
2. Load: 1M and 10M synthetic spans as a columnar table (generation and sort) and the
   upload to the GPU: seconds, table bytes per span, peak memory (tracemalloc).
   Then the level-of-detail levels (engine/flamechart/lod.py): build time, peak memory,
   each level's bucket and entries, GPU bytes per span they add.
3. GPU: the ``Flame.Select`` compute pass and the ``Flame`` draw at 2560x1440 while the view
   pans and zooms from everything to 1/1000 of it and back (timestamp queries on both
   passes), p50/p99 per zoom band, three times over the same camera path: ``lod`` (the
   default: the level-of-detail levels zoomed out, only the blocks near the view),
   ``spans`` (the spans, only the blocks near the view) and ``every`` (every span, each
   frame: the selection before levels and ranges), with the levels each band read and the
   entries read per span; frame-to-frame wall time with at most 3 frames in flight
   (p50/p99). Goal (H200): select + draw <= 1 ms at every zoom for 10M spans, <= 2 ms for
   100M; p99 frame <= 16.7 ms.
4. CPU per frame (uniform write, recording the passes, finish) at 1k vs 10M spans,
   interleaved frame by frame, the GPU idle meanwhile (lavapipe runs it on the same cores):
   must not depend on the span count.

5. Load from a file: a generated Chrome JSON of ``LANTERN_FLAME_FILE_SPANS`` events
   (default 10M; written in chunks), loaded by ``load_trace``: seconds, spans/s, peak RSS
   growth over the file size.

``--quick`` (lavapipe): 100k and 1M spans, 640x360, fewer frames, a 20k-span JSON file, no
file load. ``LANTERN_FLAME_SPANS`` (comma-separated, e.g. ``10000000,100000000``) sets the
GPU table sizes (100M: the 10M table tiled in time); ``LANTERN_FLAME_PARTS`` (any of
``parse,flows,load,gpu,cpu,file``) picks parts.
"""

from __future__ import annotations

import gc
import gzip
import math
import tempfile
import time
import tracemalloc
from pathlib import Path

import numpy as np
import orjson
import wgpu

from engine.devtools.traces.synthetic import synthetic_table
from engine.devtools.traces.traceload import SpanTable, load_trace
from engine.flamechart.chart import FlameChart
from engine.flamechart.lod import LOD_BYTES, build_levels
from engine.flamechart.view import FlameView
from engine.graph import FrameContext, RenderGraph
from engine.surfaces import OffscreenTarget

FMT = "rgba8unorm-srgb"


def _pct(a, q) -> float:
    return float(np.percentile(np.asarray(a, np.float64), q)) if len(a) else math.nan


def _timed(fn, *a, **kw):
    """``(seconds, result)`` of one call (no tracemalloc: it slows allocation-heavy code)."""
    gc.collect()
    t0 = time.perf_counter()
    out = fn(*a, **kw)
    return time.perf_counter() - t0, out


def _peak(fn, *a, **kw):
    """``(peak bytes allocated by Python and numpy during the call, result)``."""
    gc.collect()
    tracemalloc.start()
    out = fn(*a, **kw)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return peak, out


def write_chrome_json(path: Path, n: int) -> int:
    """A Chrome trace of about ``n`` X events (from the synthetic table); returns the count."""
    t = synthetic_table(n, lanes=2, seed=5)
    ev = [
        {"ph": "M", "name": "thread_name", "pid": 1, "tid": i, "args": {"name": f"t{i}"}}
        for i in range(2)
    ]
    ts = (t.start_ns / 1e3).tolist()
    dur = (t.dur_ns / 1e3).tolist()
    for k in range(len(t)):
        ev.append(
            {
                "ph": "X",
                "name": t.names[t.name_id[k]],
                "pid": 1,
                "tid": int(t.lane[k]),
                "ts": ts[k],
                "dur": dur[k],
            }
        )
    path.write_bytes(orjson.dumps({"traceEvents": ev}))
    return len(t)


def write_chrome_be(path: Path, n: int) -> int:
    """A Chrome trace of about ``n`` spans as most tracers other than Chrome's write them:
    frames of nested ``B``/``E`` pairs carrying ``cat`` and ``args``, one ``X`` in five."""
    ev = []
    for f in range(max(1, n // 5)):
        t = f * 50
        ev.append({"ph": "B", "name": "Frame", "cat": "frame", "pid": 1, "tid": 1, "ts": t,
                   "args": {"n": f}})  # fmt: skip
        for k in range(3):
            ev.append({"ph": "B", "name": f"Pass{k}", "cat": "gpu", "pid": 1, "tid": 1,
                       "ts": t + k * 10 + 1})  # fmt: skip
            ev.append({"ph": "E", "pid": 1, "tid": 1, "ts": t + k * 10 + 9})
        ev.append({"ph": "X", "name": "Upload", "cat": "io", "pid": 1, "tid": 2, "ts": t + 2,
                   "dur": 5, "args": {"bytes": 1024}})  # fmt: skip
        ev.append({"ph": "E", "pid": 1, "tid": 1, "ts": t + 40})
    path.write_bytes(orjson.dumps({"traceEvents": ev}))
    return max(1, n // 5) * 5


def write_jsonl(path: Path, n: int) -> int:
    """A Lantern --telemetry JSONL of about ``n`` scopes (frames of 8 CPU + 8 GPU scopes)."""
    names = [f"Pass{i}" for i in range(8)]
    lines = [
        {"type": "session", "gpu_clock_offset_ns": 1000},
        {"type": "names", "names": names},
    ]
    frames = max(1, n // 18)
    for f in range(frames):
        t0 = f * 16_000_000
        cpu = [[i, t0 + i * 100_000, t0 + i * 100_000 + 90_000] for i in range(8)]
        gpu = [[i, t0 + i * 200_000, t0 + i * 200_000 + 150_000] for i in range(8)]
        lines.append({"type": "frame", "frame": f, "cpu": cpu, "gpu": gpu})
    path.write_bytes(b"\n".join(orjson.dumps(x) for x in lines) + b"\n")
    return frames * 18


def bench_parse(n: int) -> None:
    """Parse rate and memory of Chrome JSON, the same gzipped, and Lantern JSONL."""
    with tempfile.TemporaryDirectory() as d:
        js, gz, jl = Path(d) / "trace.json", Path(d) / "trace.json.gz", Path(d) / "tel.jsonl"
        be = Path(d) / "be.json"
        count = write_chrome_json(js, n)
        gz.write_bytes(gzip.compress(js.read_bytes(), 6))
        write_jsonl(jl, n)
        write_chrome_be(be, n)
        files = (("Chrome JSON", js), ("Chrome JSON.gz", gz), ("Lantern JSONL", jl),
                 ("Chrome JSON B/E", be))  # fmt: skip
        for what, path in files:
            mb = path.stat().st_size / 1e6
            c0 = time.process_time()
            dt, table = _timed(load_trace, path)
            cpu = time.process_time() - c0
            peak, _ = _peak(load_trace, path)
            count = len(table)
            kept = sum(
                c.nbytes
                for c in (
                    table.start_ns,
                    table.dur_ns,
                    table.lane,
                    table.depth,
                    table.name_id,
                    table.event,
                )  # fmt: skip
            )
            print(
                f"parse  {what} {count:,} spans ({mb:.1f} MB): {dt:.2f} s, "
                f"{count / dt / 1e6:.2f} M spans/s (CPU time {cpu:.2f} s: "
                f"{count / cpu / 1e6:.2f} M/s), peak {peak / count:.0f} B/span "
                f"({peak / 1e6:.0f} MB, {peak / (path.stat().st_size):.2f}x the file), kept "
                f"{kept / count:.0f} B/span"
            )


def write_chrome_flows(path: Path, frames: int, flows: bool = True) -> tuple[int, int]:
    """Frames as Lantern's ``--trace`` writes them, all inside one ``Session`` span on tid 1:
    a CPU ``Frame`` of 8 passes (tid 1), the GPU ``Frame`` of the same passes later (tid 2),
    a flow from each CPU pass to its GPU pass (``s`` inside one, ``f`` with ``bp: "e"``
    inside the other) and one from each frame's end to the next frame's first pass (an ``s``
    between frames: only ``Session``, begun every span earlier, encloses it; an ``f``
    without ``bp``: bound to the next span to begin). ``flows=False``: the same spans, no
    flow events. Returns ``(spans, flows)``."""
    ev = [{"ph": "B", "name": "Session", "pid": 1, "tid": 1, "ts": 0}]
    n_flows = 0
    for f in range(frames):
        t = 10 + f * 200
        ev.append({"ph": "X", "name": "Frame", "pid": 1, "tid": 1, "ts": t, "dur": 90})
        ev.append({"ph": "X", "name": "Frame", "pid": 1, "tid": 2, "ts": t + 100, "dur": 90})
        for k in range(8):
            a, b = t + 1 + k * 11, t + 101 + k * 11
            ev.append({"ph": "X", "name": f"Pass{k}", "pid": 1, "tid": 1, "ts": a, "dur": 10})
            ev.append({"ph": "X", "name": f"Pass{k}", "pid": 1, "tid": 2, "ts": b, "dur": 10})
            if flows:
                ident = f * 9 + k
                ev.append({"ph": "s", "name": "gpu", "cat": "pass", "id": ident, "pid": 1,
                           "tid": 1, "ts": a + 5})  # fmt: skip
                ev.append({"ph": "f", "bp": "e", "name": "gpu", "cat": "pass", "id": ident,
                           "pid": 1, "tid": 2, "ts": b + 5})  # fmt: skip
                n_flows += 1
        if flows and f + 1 < frames:
            ident = f * 9 + 8
            ev.append({"ph": "s", "name": "next", "cat": "frame", "id": ident, "pid": 1,
                       "tid": 1, "ts": t + 95})  # fmt: skip
            ev.append({"ph": "f", "name": "next", "cat": "frame", "id": ident, "pid": 1,
                       "tid": 1, "ts": t + 199})  # fmt: skip
            n_flows += 1
    ev.append({"ph": "E", "pid": 1, "tid": 1, "ts": frames * 200 + 10})
    path.write_bytes(orjson.dumps({"traceEvents": ev}))
    return 1 + frames * 18, n_flows


def bench_flows(n: int) -> None:
    """Load time of a trace with ``n`` flows over the spans of ``write_chrome_flows``, and
    of the same spans without the flow events: the difference is the flows' cost."""
    frames = max(2, round(n / 9))
    with tempfile.TemporaryDirectory() as d:
        with_f, without = Path(d) / "flows.json", Path(d) / "spans.json"
        spans, flows = write_chrome_flows(with_f, frames)
        write_chrome_flows(without, frames, flows=False)
        times = {}
        for what, path in (("with", with_f), ("without", without)):
            c0 = time.process_time()
            dt, table = _timed(load_trace, path)
            times[what] = (dt, time.process_time() - c0, table)
        (dt, cpu, table), (dt0, cpu0, _) = times["with"], times["without"]
        drawn = len(table.flows) if table.flows is not None else 0
        print(
            f"flows  {flows:,} flows over {spans:,} spans: load {dt:.2f} s with them, "
            f"{dt0:.2f} s without (CPU time {cpu:.2f} / {cpu0:.2f} s): +{dt - dt0:.2f} s wall, "
            f"+{cpu - cpu0:.2f} s CPU ({(cpu - cpu0) / max(flows, 1) * 1e6:.1f} us/flow); "
            f"{drawn:,} arrows; notes: {'; '.join(table.notes) or 'none'}"
        )


def write_chrome_json_chunked(path: Path, n: int) -> int:
    """Like ``write_chrome_json`` for any ``n``: events written 200k at a time."""
    t = synthetic_table(n, lanes=2, seed=5)
    names = [orjson.dumps(x) for x in t.names]
    with open(path, "wb") as f:
        f.write(b'{"traceEvents":[')
        for a in range(0, len(t), 200_000):
            b = min(a + 200_000, len(t))
            ts, dur = (t.start_ns[a:b] / 1e3).tolist(), (t.dur_ns[a:b] / 1e3).tolist()
            lane, nid = t.lane[a:b].tolist(), t.name_id[a:b].tolist()
            part = b",".join(
                b'{"ph":"X","name":%s,"pid":1,"tid":%d,"ts":%r,"dur":%r}'
                % (names[nid[k]], lane[k], ts[k], dur[k])
                for k in range(b - a)
            )
            f.write(part if a == 0 else b"," + part)
        f.write(b"]}")
    return len(t)


_LOAD_CHILD = """
import sys, time
from engine.devtools.traces.traceload import load_trace
def rss():  # VmHWM: this process's peak (ru_maxrss would start at the parent's at fork)
    for line in open("/proc/self/status"):
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) * 1024
before = rss()
t0, c0 = time.perf_counter(), time.process_time()
t = load_trace(sys.argv[1])
dt, cpu = time.perf_counter() - t0, time.process_time() - c0
kept = sum(c.nbytes for c in (t.start_ns, t.dur_ns, t.lane, t.depth, t.name_id, t.event))
print(len(t), dt, rss() - before, kept, cpu)
"""


def bench_file(n: int) -> None:
    """Load time and peak memory growth of a large Chrome JSON file, loaded in a fresh
    process (its peak RSS, VmHWM, after the imports vs after the load: what the OS saw)."""
    import subprocess
    import sys

    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "big.json"
        t0 = time.perf_counter()
        write_chrome_json_chunked(path, n)
        made = time.perf_counter() - t0
        size = path.stat().st_size
        root = Path(__file__).resolve().parents[2]
        out = subprocess.run([sys.executable, "-c", _LOAD_CHILD, str(path)], cwd=root,
                             capture_output=True, text=True, check=True).stdout  # fmt: skip
    count, dt, grew, kept, cpu = out.split()[-5:]
    count, dt, grew, kept, cpu = int(count), float(dt), int(grew), int(kept), float(cpu)
    print(
        f"file   Chrome JSON {count:,} spans ({size / 1e6:.0f} MB, written in {made:.0f} s): "
        f"load {dt:.1f} s, {count / dt / 1e6:.2f} M spans/s (CPU time {cpu:.1f} s: "
        f"{count / cpu / 1e6:.2f} M/s); peak RSS grew {grew / 1e6:.0f} MB "
        f"({grew / size:.2f}x the file); kept {kept / count:.0f} B/span"
    )


def tile_table(table: SpanTable, k: int) -> SpanTable:
    """``k`` copies of ``table`` one after another in time (still sorted by start)."""
    if k <= 1:
        return table
    step = int(table.end_ns.max()) + 1_000_000
    n = len(table)
    start = np.concatenate([table.start_ns + i * step for i in range(k)])
    return SpanTable(
        start_ns=start,
        dur_ns=np.tile(table.dur_ns, k),
        lane=np.tile(table.lane, k),
        depth=np.tile(table.depth, k),
        name_id=np.tile(table.name_id, k),
        names=table.names,
        lanes=table.lanes,
        source=f"{k} x {n:,}",
    )


def bench_load(gpu, n: int) -> tuple[SpanTable, list]:
    base = min(n, 10_000_000)
    peak, _ = _peak(synthetic_table, min(n, 1_000_000), lanes=4, seed=1)
    peak *= base / min(n, 1_000_000)
    dt, table = _timed(synthetic_table, base, lanes=4, seed=1)
    table = tile_table(table, round(n / base))
    cols = (table.start_ns, table.dur_ns, table.lane, table.depth, table.name_id)
    nbytes = sum(c.nbytes for c in cols)
    view = FlameView(table.lane_depths(), 0, int(table.end_ns.max()), (64, 64))
    chart = FlameChart(gpu.device, FMT, view)
    t1 = time.perf_counter()
    chart.store.upload(table, lod=False)
    gpu.device.queue.read_buffer(chart.store.chunks[-1], 0, 16)  # wait for the upload
    up = time.perf_counter() - t1
    chunks = len(chart.store.chunks)
    print(
        f"load   {len(table):,} spans: table {dt:.2f} s, {nbytes / len(table):.0f} B/span "
        f"({nbytes / 1e6:.0f} MB), peak {peak / 1e6:.0f} MB; GPU upload {up:.2f} s "
        f"({len(table) * 20 / 1e6:.0f} MB in {chunks} chunk(s) of "
        f"{chart.store.chunk_spans:,} spans)"
    )
    cols = (table.start_ns, table.dur_ns, table.lane, table.depth)
    lod_s, levels = _timed(build_levels, *cols)
    small = min(n, 1_000_000)  # the peak of a 1M build, scaled (tracemalloc is slow)
    lod_peak, _ = _peak(build_levels, *(c[:small] for c in cols))
    t2 = time.perf_counter()
    chart.store.set_levels(levels, table.name_id)
    if levels:
        gpu.device.queue.read_buffer(chart.store.levels[-1].chunks[-1], 0, 16)
    lod_up = time.perf_counter() - t2
    entries = sum(len(lv) for lv in levels)
    sizes = ", ".join(f"{lv.bucket_ns / 1e3:,.0f} us: {len(lv):,}" for lv in levels)
    print(
        f"lod    {len(table):,} spans: build {lod_s:.2f} s (peak {lod_peak / small:.0f} B/span), "
        f"upload {lod_up:.2f} s; {len(levels)} level(s) [bucket: entries] {sizes or '-'}; "
        f"{entries / len(table):.3f} entries/span, +{entries * LOD_BYTES / len(table):.1f} "
        f"GPU B/span"
    )
    return table, levels


class _Rig:
    """A chart drawing into an offscreen target, recorded directly with timestamp queries on
    its two passes (the readback pass is left out: its copy is 48 bytes)."""

    def __init__(self, gpu, table: SpanTable, size, frames: int, levels=None):
        self.gpu, self.device, self.size = gpu, gpu.device, size
        self.target = OffscreenTarget(self.device, size)
        self.graph = RenderGraph(self.device, output_format=FMT, size=size)
        end = int(table.end_ns.max())
        self.view = FlameView(
            table.lane_depths(), 0, end, (size[0], size[1] - 16), origin=(0, 16), row_px=16
        )
        self.chart = FlameChart(self.device, FMT, self.view)
        self.chart.store.upload(table, lod=levels is None)
        if levels is not None:  # built (and timed) by bench_load
            self.chart.store.set_levels(levels, table.name_id)
        self.end = end
        self.ts = gpu.has_timestamps
        self.frames = frames
        if self.ts:
            self.qs = self.device.create_query_set(type="timestamp", count=4 * frames)
            u = wgpu.BufferUsage
            self.resolved = self.device.create_buffer(
                size=32 * frames, usage=u.QUERY_RESOLVE | u.COPY_SRC
            )
        self.throttle = [
            self.device.create_buffer(
                size=16, usage=wgpu.BufferUsage.MAP_READ | wgpu.BufferUsage.COPY_DST
            )
            for _ in range(3)
        ]
        self.promises = [None, None, None]

    def camera(self, i: int) -> float:
        """Zoom from everything (level 0) to 1/1000 and back over the run, panning."""
        z = 0.5 - 0.5 * math.cos(2 * math.pi * i / max(self.frames, 1))
        span = self.end * 10 ** (-3 * z)
        centre = self.end * (0.5 + 0.4 * math.sin(2 * math.pi * i / max(self.frames, 1) * 3))
        self.view.show(centre - span / 2, centre + span / 2)
        return z

    def frame(self, i: int, timed: bool) -> tuple[float, float]:
        """Record and submit one frame; returns ``(wall, thread CPU)`` seconds spent
        recording (not the wait for a throttle slot, which is the GPU's time). Thread CPU
        time leaves out other threads, e.g. lavapipe's, which run the "GPU" on the CPU."""
        slot = i % 3
        if self.promises[slot] is not None:
            self.promises[slot].sync_wait()  # at most 3 frames in flight
            self.throttle[slot].unmap()
        t0, c0 = time.perf_counter(), time.thread_time()
        d = self.device
        ctx = FrameContext(d, self.graph, i, 0.0, self.size, self.target.view)
        enc = d.create_command_encoder()
        self.chart.prepare(ctx)
        tw = (
            (
                lambda k: {
                    "query_set": self.qs,
                    "beginning_of_pass_write_index": 4 * i + k,
                    "end_of_pass_write_index": 4 * i + k + 1,
                }
            )
            if timed
            else (lambda k: None)
        )
        cp = enc.begin_compute_pass(label="Flame.Select", timestamp_writes=tw(0))
        self.chart.select.record(cp)
        cp.end()
        rp = enc.begin_render_pass(
            label="Flame",
            timestamp_writes=tw(2),
            color_attachments=[
                {
                    "view": self.target.view,
                    "load_op": "clear",
                    "clear_value": (0, 0, 0, 1),
                    "store_op": "store",
                }
            ],
        )
        self.chart.draw.record(rp, self.chart.select)
        rp.end()
        enc.copy_buffer_to_buffer(self.chart.select.state, 0, self.throttle[slot], 0, 16)
        cb = enc.finish()
        cpu = (time.perf_counter() - t0, time.thread_time() - c0)
        d.queue.submit([cb])
        self.promises[slot] = self.throttle[slot].map_async(wgpu.MapMode.READ, 0, 16)
        return cpu

    def drain(self) -> None:
        for k, p in enumerate(self.promises):
            if p is not None:
                p.sync_wait()
                self.throttle[k].unmap()
                self.promises[k] = None

    def gpu_ms(self) -> np.ndarray:
        enc = self.device.create_command_encoder()
        enc.resolve_query_set(self.qs, 0, 4 * self.frames, self.resolved, 0)
        self.device.queue.submit([enc.finish()])
        t = np.frombuffer(self.device.queue.read_buffer(self.resolved), np.uint64)
        t = t.reshape(-1, 4).astype(np.float64)
        return np.stack([t[:, 1] - t[:, 0], t[:, 3] - t[:, 2]], 1) / 1e6


def bench_gpu(gpu, table: SpanTable, size, frames: int, levels=None) -> None:
    """The camera path twice on one rig: reading the levels, then every span."""
    rig = _Rig(gpu, table, size, frames, levels)
    for i in range(3):  # warm-up (pipelines, first uploads)
        rig.camera(i)
        rig.frame(i, False)
    rig.drain()
    for mode in ("lod", "spans", "every"):
        rig.chart.select.lod = mode == "lod"
        rig.chart.select.ranges = mode != "every"
        _gpu_run(rig, table, size, frames, mode)


def _gpu_run(rig, table: SpanTable, size, frames: int, mode: str) -> None:
    zoom, starts, used, read = [], [], [], []
    for i in range(frames):
        zoom.append(rig.camera(i))
        starts.append(time.perf_counter())
        rig.frame(i, rig.ts)
        used.append(rig.chart.select.level)
        read.append(rig.chart.select.dispatched)
    rig.drain()
    starts.append(time.perf_counter())
    wall = np.diff(starts) * 1e3
    drawn = int(rig.chart.select.read_state()[1])
    head = f"gpu    {mode:<5} {len(table):,} spans {size[0]}x{size[1]}, {frames} frames:"
    print(
        f"{head} frame wall p50 {_pct(wall, 50):.2f} ms p99 {_pct(wall, 99):.2f} ms "
        f"(<= 3 in flight); instances at the end {drawn:,}"
    )
    if not rig.ts:
        print("       GPU timings n/a (no timestamp-query)")
        return
    ms = rig.gpu_ms()
    z, used, read = np.asarray(zoom), np.asarray(used), np.asarray(read)
    for label, sel in (
        ("all", z >= 0),
        ("out", z < 1 / 3),
        ("mid", (z >= 1 / 3) & (z < 2 / 3)),
        ("in ", z >= 2 / 3),
    ):
        s, d = ms[sel, 0], ms[sel, 1]
        tot = s + d
        lv = sorted(set(used[sel].tolist()))
        print(
            f"       zoom {label}: Select p50 {_pct(s, 50):.3f} p99 {_pct(s, 99):.3f} | "
            f"Draw p50 {_pct(d, 50):.3f} p99 {_pct(d, 99):.3f} | "
            f"both p50 {_pct(tot, 50):.3f} p99 {_pct(tot, 99):.3f} ms | level(s) {lv}, "
            f"entries read p50 {_pct(read[sel], 50) / len(table):.4f}/span"
        )


def bench_cpu(gpu, tables: dict[int, SpanTable], size, frames: int, levels=None) -> None:
    """Both span counts interleaved frame by frame (machine load drifts between runs);
    ``levels``: span count -> prebuilt levels."""
    levels = levels or {}
    rigs = {n: _Rig(gpu, t, size, frames, levels.get(n)) for n, t in tables.items()}
    out = {n: [] for n in rigs}
    for i in range(frames):
        for n, rig in rigs.items():
            rig.camera(i)
            rig.drain()  # the GPU idle while recording: on lavapipe it shares the CPU cores
            out[n].append(rig.frame(i, False))
    for rig in rigs.values():
        rig.drain()
    (a, ca), (b, cb) = sorted((n, np.asarray(v[3:]) * 1e3) for n, v in out.items())
    for k, what in ((0, "wall"), (1, "thread CPU")):
        pa, pb = _pct(ca[:, k], 50), _pct(cb[:, k], 50)
        print(
            f"cpu    per frame (prepare + record + finish), {what}: {a:,} spans p50 "
            f"{pa:.3f} ms, {b:,} spans p50 {pb:.3f} ms ({pb / pa:.2f}x)"
        )


def run(gpu, args) -> None:
    import os

    quick = args.quick
    sizes = (100_000, 1_000_000) if quick else (1_000_000, 10_000_000)
    env = os.environ.get("LANTERN_FLAME_SPANS")
    if env:
        sizes = tuple(int(x) for x in env.split(","))
    default = "parse,flows,load,gpu,cpu" if quick else "parse,flows,load,gpu,cpu,file"
    parts = set(os.environ.get("LANTERN_FLAME_PARTS", default).split(","))
    res = (640, 360) if quick else (2560, 1440)
    frames = 24 if quick else 300
    if "parse" in parts:
        bench_parse(20_000 if quick else 500_000)
    if "flows" in parts:
        bench_flows(int(os.environ.get("LANTERN_FLAME_FLOWS", 10_000 if quick else 100_000)))
    if "file" in parts:
        bench_file(int(os.environ.get("LANTERN_FLAME_FILE_SPANS", 10_000_000)))
    if not parts & {"load", "gpu", "cpu"}:
        return
    tables, levels = {}, {}
    for n in sizes:
        tables[n], levels[n] = bench_load(gpu, n)
    if "gpu" in parts:
        for n in sizes:
            bench_gpu(gpu, tables[n], res, frames, levels[n])
    if "cpu" in parts:
        small = synthetic_table(1000, lanes=4, seed=2)
        big = tables[sizes[-1]]
        bench_cpu(gpu, {len(small): small, len(big): big}, res, max(frames // 2, 12),
                  {len(big): levels[sizes[-1]]})  # fmt: skip
