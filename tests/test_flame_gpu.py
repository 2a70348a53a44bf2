"""Flame chart on a real wgpu device (lavapipe in CI): pipelines, the selection compute pass
against its numpy reference span by span, picking, a 1M-span picture, the live mode."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest
import wgpu

from engine.devtools.traces.synthetic import synthetic_table
from engine.flamechart.draw import FlameDraw
from engine.flamechart.reference import pick_reference, select_reference
from engine.flamechart.select import (
    ENTRIES,
    NONE,
    VIEW_BYTES,
    FlameSelect,
    ViewParams,
    span_grid,
    view_uniform,
)
from engine.flamechart.spans import NAME_MATCH, SPAN_BYTES, SpanStore, pack_spans
from engine.flamechart.view import FlameView
from engine.graph import FrameContext, RenderGraph
from engine.surfaces import OffscreenTarget
from engine.telemetry import FrameTimings, Scope, Telemetry
from tests.chart_support import chart_picture

N_NAMES = 40


def random_spans(n: int, seed: int = 3):
    """Random spans: 3 lanes x 5 depths, start within +-8 s of 0 (crossing the 2^32 ns word
    boundary and negative), durations log-uniform 10 ns .. 50 ms."""
    rng = np.random.default_rng(seed)
    start = rng.integers(-8_000_000_000, 8_000_000_000, n)
    dur = np.exp(rng.uniform(np.log(10), np.log(5e7), n)).astype(np.int64)
    lane = rng.integers(0, 3, n).astype(np.uint32)
    depth = rng.integers(0, 5, n).astype(np.uint32)
    name = rng.integers(0, N_NAMES, n).astype(np.uint32)
    return start, dur, lane, depth, name


def run_select(device, store, p: ViewParams, sel: FlameSelect | None = None):
    sel = sel or FlameSelect(device)
    sel.prepare(store, p)
    enc = device.create_command_encoder()
    cp = enc.begin_compute_pass()
    sel.record(cp)
    cp.end()
    device.queue.submit([enc.finish()])
    return sel


@pytest.fixture(scope="module", params=["one_chunk", "split"])
def random_store(device, request):
    """The 30k random spans in one chunk, and split across 30 chunks of 1024 spans (an
    artificial 20 KiB binding limit: the split that lets 10M spans fit lavapipe's 128 MiB)."""
    cols = random_spans(30_000)
    limit = 1024 * SPAN_BYTES + 19 if request.param == "split" else None
    store = SpanStore(device, max_binding_bytes=limit)
    assert len(store.chunk_ranges()) == 0
    store.set_names([f"name{i}" for i in range(N_NAMES)])
    store.append(*cols)
    flags = np.zeros(N_NAMES, np.uint32)
    flags[::4] = NAME_MATCH
    store.set_name_flags(flags)
    packed = pack_spans(*cols)
    if request.param == "split":
        assert store.chunk_spans == 1024 and len(store.chunks) == 30
        assert store.chunk_ranges()[-1] == (29 * 1024, 30_000 - 29 * 1024)
    np.testing.assert_array_equal(store.read_packed(), packed)
    return store, packed, flags


VIEWS = {
    # whole range: most spans collapse into pixel columns
    "zoomed_out": dict(start_ns=-8.5e9, px_per_ns=400 / 17e9),
    # one second near the 2^32 ns word boundary, a fractional start, search on
    "search": dict(start_ns=4.1e9 + 0.37, px_per_ns=300 / 1e9, search_on=True),
    # deep zoom: 20 us, spans start far left of the view (negative x0)
    "zoomed_in": dict(start_ns=-1_234_567.25, px_per_ns=256 / 2e4),
    # scrolled by two rows, lane 1 hidden
    "scrolled": dict(
        start_ns=-2e9, px_per_ns=200 / 3e9, scroll_px=32, lane_rows=np.array([1, -1, 7])
    ),
}


@pytest.mark.parametrize("name", list(VIEWS))
def test_selection_matches_numpy_reference_span_by_span(device, random_store, name):
    store, packed, flags = random_store
    kw = dict(width=257, height=150, row_px=16, lane_rows=np.array([1, 7, 13]))
    kw.update(VIEWS[name])
    p = ViewParams(**kw)
    sel = run_select(device, store, p)
    got = sel.read_instances()
    ref = select_reference(packed, flags, p)
    collapsed = (got["flags"] & 1) != 0
    order = np.lexsort((got["span"], collapsed))
    got = got[order]
    np.testing.assert_array_equal(got["span"], ref["span"])
    np.testing.assert_array_equal(got["x0"], ref["x0"])
    np.testing.assert_array_equal(got["w"], ref["w"])
    np.testing.assert_array_equal(got["flags"], ref["flags"])
    rows_y = (ref["row"] + p.first_row).astype(np.float32) * np.float32(16) - np.float32(
        p.scroll_px
    )
    np.testing.assert_array_equal(got["y0"], rows_y)
    state = sel.read_state()
    assert state[1] == state[7] == len(ref["span"])  # no overflow
    n_col = int(ref["collapsed"].sum())
    if name == "zoomed_in":  # spans that began far left of the view
        assert (ref["x0"] < -1000).sum() > 0
    else:
        assert n_col > 0 and len(ref["span"]) - n_col > 0, "view must exercise both rules"
    if name == "zoomed_out":  # bounded by rows x columns, not by the span count
        assert n_col <= p.rows * p.cols and n_col < len(packed) // 5


def test_every_span_wider_than_a_pixel_is_drawn(device, random_store):
    """Independent of the reference: float64 geometry, spans clearly wider than a pixel and
    clearly in view must all be instances."""
    store, packed, flags = random_store
    start, dur, lane, depth, _ = random_spans(30_000)
    p = ViewParams(start_ns=-3e9, px_per_ns=300 / 2e9, width=300, height=400,
                   lane_rows=np.array([1, 7, 13]), row_px=16)  # fmt: skip
    got = set(run_select(device, store, p).read_instances()["span"].tolist())
    x0 = (start - p.start_ns) * p.px_per_ns
    w = dur * p.px_per_ns
    sure = (w > 1.001) & (x0 + w > 0.01) & (x0 < 299.99)
    assert sure.sum() > 100
    assert set(np.flatnonzero(sure).tolist()) <= got


def test_search_match_wins_its_pixel_column(device):
    store = SpanStore(device)
    store.set_names(["long", "hit"])
    # two sub-pixel spans in the same column and row: the shorter one matches the search
    store.append(np.array([100, 150]), np.array([300, 200]), np.zeros(2, np.uint32),
                 np.zeros(2, np.uint32), np.array([0, 1], np.uint32))  # fmt: skip
    p = ViewParams(start_ns=0, px_per_ns=1 / 1000, width=64, height=32, row_px=16,
                   lane_rows=np.array([0]))  # fmt: skip
    assert run_select(device, store, p).read_instances()["span"].tolist() == [0]
    store.set_name_flags(np.array([0, NAME_MATCH], np.uint32))
    p.search_on = True
    inst = run_select(device, store, p).read_instances()
    assert inst["span"].tolist() == [1] and inst["flags"].tolist() == [1 | 2]


def test_pick_reports_the_span_under_the_cursor(device, random_store):
    store, packed, flags = random_store
    p = ViewParams(start_ns=-1e9, px_per_ns=300 / 1e9, width=300, height=120, row_px=16,
                   lane_rows=np.array([1, 7, 13]))  # fmt: skip
    ref = select_reference(packed, flags, p)
    y0 = (ref["row"] + p.first_row) * 16.0
    wide = np.flatnonzero(~ref["collapsed"] & (ref["w"] > 4) & (ref["x0"] > 0))[:3]
    coll = np.flatnonzero(ref["collapsed"])[:3]
    sel = FlameSelect(device)
    for k in [*wide, *coll]:
        p.cursor = (float(ref["x0"][k]) + 0.5, float(y0[k]) + 8.0)
        expect = pick_reference(ref, p)
        assert expect == ref["span"][k] or expect < ref["span"][k]
        assert run_select(device, store, p, sel).read_state()[8] == expect
    p.cursor = (150.0, 2.0)  # lane 0's header row: nothing
    assert pick_reference(ref, p) == NONE
    assert run_select(device, store, p, sel).read_state()[8] == NONE


def test_span_grid_goes_2d_past_65535_workgroups():
    assert span_grid(1) == (1, 1)
    assert span_grid(65535 * 256) == (65535, 1)
    assert span_grid(65535 * 256 + 1) == (65535, 2)


def test_pipelines_are_built(device):
    """Every selection entry point and every draw pipeline is created (a shader that
    validates can still fail there), and each draw pipeline writes the format asked for: a
    pipeline built for another format is a validation error inside a pass of this one."""
    sel = FlameSelect(device)
    assert all(isinstance(sel.pipelines[e], wgpu.GPUComputePipeline) for e in ENTRIES)
    p = ViewParams(start_ns=0, px_per_ns=1, width=8, height=8, lane_rows=np.zeros(1))
    assert len(view_uniform(p, 0, 0)) == VIEW_BYTES and VIEW_BYTES % 16 == 0
    for fmt in ("rgba8unorm-srgb", "bgra8unorm-srgb", "rgba8unorm"):
        d = FlameDraw(device, fmt)
        tex = device.create_texture(
            size=(4, 4, 1), format=fmt, usage=wgpu.TextureUsage.RENDER_ATTACHMENT
        )
        enc = device.create_command_encoder()
        rp = enc.begin_render_pass(
            color_attachments=[{"view": tex.create_view(), "load_op": "clear", "store_op": "store"}]
        )
        for pipe in (d.spans, d.panel, d.ruler):
            rp.set_pipeline(pipe)  # a format mismatch fails at finish()
        rp.end()
        device.queue.submit([enc.finish()])


def test_split_store_grows_chunk_by_chunk_and_keeps_its_spans(device):
    store = SpanStore(device, capacity=16, max_binding_bytes=512 * SPAN_BYTES)
    cols = random_spans(1500, seed=4)
    for a, b in ((0, 300), (300, 301), (301, 1100), (1100, 1500)):  # across chunk edges
        store.append(*(c[a:b] for c in cols))
    assert store.chunk_spans == 512 and [c.size for c in store.chunks] == [512 * SPAN_BYTES] * 3
    assert store.chunk_ranges() == [(0, 512), (512, 512), (1024, 476)]
    np.testing.assert_array_equal(store.read_packed(), pack_spans(*cols))


def test_store_grows_by_powers_of_two_and_keeps_its_spans(device):
    store = SpanStore(device)
    cols = random_spans(3000, seed=9)
    store.append(*(c[:1000] for c in cols))
    assert store.capacity == 1024
    store.append(*(c[1000:] for c in cols))
    assert store.capacity == 4096 and store.count == 3000
    raw = device.queue.read_buffer(store.spans, 0, 3000 * SPAN_BYTES)
    np.testing.assert_array_equal(np.frombuffer(raw, np.uint32).reshape(-1, 5), pack_spans(*cols))


def render_chart(device, table, size, setup, frames=3):
    """Draw ``table`` into an offscreen target through the graph; return (rgb, chart)."""
    view = FlameView(table.lane_depths(), 0, int(table.end_ns.max()), size, row_px=16)
    bg = (0.015, 0.016, 0.022, 1.0)
    return chart_picture(
        device, table, view, size, clear=bg, readback=True, setup=setup, frames=frames
    )


def test_one_million_spans_picture(device, compare_reference):
    table = synthetic_table(1_000_000, lanes=2, seed=1)
    assert 990_000 < len(table) < 1_010_000

    def setup(chart, view):
        view.show(10e6, 60e6)  # three frames: depths 3-4 collapse into pixel columns

        def first(name, lane, t):  # span index of the first ``name`` after t in ``lane``
            ok = (table.name_id == table.names.index(name)) & (table.lane == lane)
            return int(np.flatnonzero(ok & (table.start_ns >= t))[0])

        view.selected = first("Record", 0, 20e6)  # yellow rim; other Records: cyan rims
        view.selected_name = int(table.name_id[view.selected])
        view.hover = first("Submit", 1, 30e6)  # lighter, white rim
        view.search = "Main"
        match = [NAME_MATCH if "Main" in n else 0 for n in table.names]
        chart.store.set_name_flags(np.array(match, np.uint32))

    rgb, chart = render_chart(device, table, (480, 240), setup)
    state = chart.select.read_state()
    assert 0 < state[1] == state[7] < 2 * 480 * 16 + 4096
    compare_reference("flame_1m_480x240", rgb)


def test_hover_comes_back_through_the_readback_ring(device):
    table = synthetic_table(2000, lanes=1, depth=3, seed=2)

    def setup(chart, view):
        view.show(0, 40e6)
        view.cursor = (100.0, 16 * 1 + 8.0)  # lane 0, depth 0: the frame span under x=100

    _, chart = render_chart(device, table, (320, 96), setup, frames=8)
    import time

    for _ in range(50):
        chart.poll()
        if chart.picked != NONE:
            break
        time.sleep(0.02)
    t = chart.view.time_at(100.0)
    frame = np.flatnonzero((table.depth == 0) & (table.start_ns <= t) & (table.end_ns > t))
    assert chart.picked == int(frame[0])


def _record_timings(frame: int, t0: int) -> FrameTimings:
    cpu = [Scope("Update", t0, t0 + 100_000), Scope("Main", t0 + 100_000, t0 + 900_000)]
    gpu = [Scope("Main", 5_000 + frame * 16_000_000, 5_000 + frame * 16_000_000 + 700_000)]
    return FrameTimings(frame, gpu=gpu, cpu=cpu)


def test_live_flame_appends_cpu_and_shifted_gpu_scopes(device):
    from engine.tools.flame.tool import ORIGIN_MARGIN_NS, FlamePanel
    from tests.tool_fakes import make_ctx

    tel = Telemetry({"gpu_clock_offset_ns": 2_000_000_000})
    graph = RenderGraph(device, output_format="rgba8unorm-srgb", size=(320, 180))
    panel = FlamePanel(SimpleNamespace(ctx=make_ctx(graph=graph, telemetry=tel)))
    live = panel.live
    assert [p.name for p in graph.passes] == ["Flame.Select", "Flame", "Flame.Text"]
    assert not any(p.enabled for p in graph.passes) and not tel.has_subscribers  # off: free
    t0 = 10_000_000_000
    for f in range(3):
        if f == 2:  # frames 0, 1 come from the history, frame 2 through the subscription
            panel.activate(True)  # the HUD switched to mode flame
            assert all(p.enabled for p in graph.passes) and tel.has_subscribers
        tel.publish(f, t_ns=t0 + f * 16_000_000, wall_ms=16.0,
                    timings=_record_timings(f, t0 + f * 16_000_000))  # fmt: skip
    c = live.columns
    assert c.n == 3 * (3 + 2)  # per frame: CPU frame + 2 scopes, GPU frame + 1 scope
    origin = t0 - ORIGIN_MARGIN_NS
    gpu_main = (c.lane[: c.n] == 1) & (c.depth[: c.n] == 1)
    expect = [5_000 + f * 16_000_000 + 2_000_000_000 - origin for f in range(3)]
    assert c.start[: c.n][gpu_main].tolist() == expect
    assert live.names[c.name[: c.n][gpu_main][0]] == "Main"
    raw = device.queue.read_buffer(live.chart.store.spans, 0, c.n * SPAN_BYTES)
    np.testing.assert_array_equal(
        np.frombuffer(raw, np.uint32).reshape(-1, 5),
        pack_spans(c.start[: c.n], c.dur[: c.n], c.lane[: c.n], c.depth[: c.n], c.name[: c.n]),
    )
    target = OffscreenTarget(device, (320, 180))
    ctx = FrameContext(device, graph, 0, 0.0, (320, 180), target.view)
    live.update(ctx)
    enc = device.create_command_encoder()
    graph.execute(enc, ctx)
    device.queue.submit([enc.finish()])
    assert live.chart.select.read_state()[1] > 0
    live.close()
    assert not tel.has_subscribers
