"""Counter tracks (step charts, per-column min/max when denser than pixels) and flow arrows:
segments computed independently of the code under test, and reference images."""

from __future__ import annotations

import json

import numpy as np

from engine.devtools.traces.traceload import COUNTER_ROWS, load_trace
from engine.flamechart.extras import counter_segments, flow_segments
from engine.flamechart.view import FlameView
from tests.chart_support import chart_picture

ROW = 16


def trace(tmp_path):
    ev = [
        {"ph": "X", "name": "A", "pid": 1, "tid": 1, "ts": 0, "dur": 1000},
        {"ph": "X", "name": "B", "pid": 1, "tid": 2, "ts": 400, "dur": 500},
        {"ph": "s", "name": "go", "cat": "c", "id": 1, "pid": 1, "tid": 1, "ts": 100},
        {"ph": "f", "bp": "e", "name": "go", "cat": "c", "id": 1, "pid": 1, "tid": 2, "ts": 600},
    ]
    ev += [{"ph": "C", "name": "q", "pid": 1, "ts": 250 * k, "args": {"n": [0, 4, 2, 4][k]}}
           for k in range(4)]  # fmt: skip
    p = tmp_path / "t.json"
    p.write_text(json.dumps(ev))
    return load_trace(p)


def view_of(table, size):
    v = FlameView(table.lane_depths(), 0, 1e6, size, row_px=ROW)
    v.start_ns, v.ns_per_px = 0.0, 1e6 / size[0]  # exactly 0..1 ms across the width
    return v


def test_step_chart_segments_by_hand(tmp_path):
    t = trace(tmp_path)
    v = view_of(t, (400, 200))
    p = v.params((400, 200))
    segs = counter_segments(t, p)
    # lane 2 (after the two threads): header row 8 (rows 1+1+1+1+1 before... from the view)
    top = float(v.lane_rows()[2] * ROW)
    h = COUNTER_ROWS * ROW - 3
    y = [top + 1 + h - n / 4 * h for n in (0, 4, 2, 4)]  # max 4, baseline 0
    flat = segs[:4, :4].tolist()
    assert flat == [[0, y[0], 100, y[0]], [100, y[1], 200, y[1]], [200, y[2], 300, y[2]],
                    [300, y[3], 401, y[3]]]  # fmt: skip
    assert segs[4:, :4].tolist() == [[100, y[0], 100, y[1]], [200, y[1], 200, y[2]],
                                     [300, y[2], 300, y[3]]]  # fmt: skip


def test_dense_counters_become_one_segment_per_column(tmp_path):
    t = trace(tmp_path)
    v = view_of(t, (4, 200))  # 4 px for 4 samples a column wide each: 1 per column
    c = t.counters[0]
    c.t_ns = np.arange(0, 1_000_000, 1000)  # 1000 samples, 250 per column
    c.value = np.tile([1.0, 3.0], 500)
    segs = counter_segments(t, v.params((4, 200)))
    assert len(segs) == 4 and segs[:, 0].tolist() == [0.5, 1.5, 2.5, 3.5]
    top = float(v.lane_rows()[2] * ROW)
    h = COUNTER_ROWS * ROW - 3
    assert np.allclose(segs[:, 1], top + 1 + h - h - 0.5)  # max 3 at the top
    assert np.allclose(segs[:, 3], top + 1 + h - h / 3 + 0.5)  # min 1


def test_flow_arrow_joins_the_rows_it_binds_to(tmp_path):
    t = trace(tmp_path)
    v = view_of(t, (400, 200))
    segs = flow_segments(t, v.params((400, 200)))
    rows = v.lane_rows()
    shaft = segs[0, :4].tolist()
    assert shaft == [40.0, (rows[0] + 0.5) * ROW, 240.0, (rows[1] + 0.5) * ROW]
    assert len(segs) == 3 and np.allclose(segs[1:, 2:4], [[240, (rows[1] + 0.5) * ROW]] * 2)


def test_counter_and_flow_picture(device, compare_reference, tmp_path):
    t = trace(tmp_path)
    size = (320, 160)
    view = view_of(t, size)
    rgb, _ = chart_picture(device, t, view, size, extras=True)
    rows = view.lane_rows()
    y0, y1 = (rows[0] + 0.5) * ROW, (rows[1] + 0.5) * ROW
    mx, my = (32 + 192) // 2, int((y0 + y1) / 2)  # the shaft's middle (x 32 -> 192)
    assert rgb[my, mx].min() > 150  # light grey over the dark background
    top = int(view.lane_rows()[2] * ROW)
    h = COUNTER_ROWS * ROW - 3
    col = rgb[top : top + h + 3, 40]  # x 40: sample 0 (n 0): the line at the baseline
    assert np.argmax(col.sum(axis=1)) in (h, h + 1)
    compare_reference("flame_counters_flows_320x160", rgb)


def two_flows(tmp_path):
    """Flows physics (tid 1, 1..4 ms) at 2 ms -> gpu (tid 2, 6..9 ms) at 7 ms and io (tid 3,
    2..4 ms) at 3 ms -> render (tid 1, 5..9 ms) at 6 ms; frame (tid 1, 0..10 ms) holds both."""
    x = [("frame", 1, 0, 10), ("physics", 1, 1, 3), ("render", 1, 5, 4), ("gpu", 2, 6, 3),
         ("io", 3, 2, 2)]  # fmt: skip
    ev = [{"ph": "X", "name": n, "pid": 1, "tid": tid, "ts": ts * 1000, "dur": d * 1000}
          for n, tid, ts, d in x]  # fmt: skip
    for fid, (t0, tid0, t1, tid1) in enumerate(((2, 1, 7, 2), (3, 3, 6, 1))):
        ev.append({"ph": "s", "name": "f", "cat": "c", "id": fid, "pid": 1, "tid": tid0,
                   "ts": t0 * 1000})  # fmt: skip
        ev.append({"ph": "f", "bp": "e", "name": "f", "cat": "c", "id": fid, "pid": 1,
                   "tid": tid1, "ts": t1 * 1000})  # fmt: skip
    p = tmp_path / "flows.json"
    p.write_text(json.dumps({"traceEvents": ev}))
    t = load_trace(p)
    v = FlameView(t.lane_depths(), 0, 10e6, (400, 200), row_px=ROW)
    v.start_ns, v.ns_per_px = 0.0, 10e6 / 400  # 0..10 ms across 400 px: 40 px per ms
    return t, v


def span_named(t, name: str) -> int:
    return int(np.flatnonzero(np.array(t.names)[t.name_id] == name)[0])


def test_a_selection_keeps_every_flow_and_highlights_its_own(tmp_path):
    t, v = two_flows(tmp_path)
    # rows: lane 0 (tid 1) header 0, frame row 1, physics/render row 2; lane 1 (tid 2) header
    # 3, gpu row 4; lane 2 (tid 3) header 5, io row 6; y is the middle of the row
    phys_gpu = [80.0, 2.5 * ROW, 280.0, 4.5 * ROW]  # 2 ms -> 7 ms
    render_io = [120.0, 6.5 * ROW, 240.0, 2.5 * ROW]  # io 3 ms -> render 6 ms
    grey, yellow = np.uint32(0xE6F0F0F0), np.uint32(0xFF1AFFFF)

    def shafts_and_colours():
        segs = flow_segments(t, v.params((400, 200)))
        assert len(segs) == 6  # two shafts, then two strokes per head
        return segs[:2, :4].tolist(), segs[:, 5].view(np.uint32).tolist()

    assert shafts_and_colours() == ([phys_gpu, render_io], [grey] * 6)  # no selection
    for name, mine, other in (
        ("physics", phys_gpu, render_io),
        ("gpu", phys_gpu, render_io),
        ("render", render_io, phys_gpu),
        ("io", render_io, phys_gpu),
    ):
        v.selected = span_named(t, name)  # either end's span: its flow on top, in yellow
        assert shafts_and_colours() == ([other, mine], [grey, yellow] * 3), name
    v.selected = span_named(t, "frame")  # the flows bind to physics/render, not to frame
    assert shafts_and_colours() == ([phys_gpu, render_io], [grey] * 6)


def test_a_thicket_of_flows_shows_the_selected_spans_only(tmp_path):
    t, v = two_flows(tmp_path)
    v.size, v.ns_per_px = (20, 200), 10e6 / 20  # 2 flows in 20 px: over one per 12 px
    assert len(flow_segments(t, v.params((20, 200)))) == 0
    v.selected = span_named(t, "physics")
    segs = flow_segments(t, v.params((20, 200)))
    assert len(segs) == 3 and segs[0, :3].tolist() == [4.0, 2.5 * ROW, 14.0]


def test_selected_flow_picture(device, tmp_path):
    """Drawn with a selection: both arrows lit, the selected span's in yellow."""
    t, view = two_flows(tmp_path)
    size = (400, 200)
    view.selected = view.selected_name = span_named(t, "physics")
    view.selected_name = int(t.name_id[view.selected])
    rgb = chart_picture(device, t, view, size, extras=True)[0].astype(int)
    # each shaft at a point between the rows (over the dark background or a span)
    x, y = 180, round((2.5 + (4.5 - 2.5) * 100 / 200) * ROW)  # physics -> gpu, half way
    r, g, b = rgb[y - 1 : y + 2, x].max(axis=0)
    assert r > 200 and g > 200 and b < 120  # yellow
    x, y = 180, round((6.5 - 4 * 60 / 120) * ROW)  # io -> render, half way (x 120 -> 240)
    assert rgb[y - 1 : y + 2, x].min(axis=1).max() > 150  # light grey
