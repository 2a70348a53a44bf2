"""Trace loading for the flame chart (no GPU): Chrome JSON, Lantern's --trace and --telemetry
files, every bad-input case, and the view's math and statistics."""

from __future__ import annotations

import json

import numpy as np
import orjson
import pytest

from engine.devtools.traces.traceload import (
    CPU_LANE,
    GPU_LANE,
    TraceError,
    load_trace,
    nesting_depth,
)
from engine.flamechart.view import FlameView, fmt_ns, name_stats, range_stats
from engine.telemetry import FrameTimings, Scope, Telemetry
from engine.tools.export.jsonl import JsonLinesWriter
from engine.tools.export.trace import build_trace, write_trace_file


def write(tmp_path, obj, name="t.json") -> str:
    p = tmp_path / name
    p.write_bytes(obj if isinstance(obj, bytes) else json.dumps(obj).encode())
    return str(p)


def chrome(events):
    return {"traceEvents": events}


META = [
    {"ph": "M", "name": "process_name", "pid": 7, "tid": 0, "args": {"name": "Game"}},
    {"ph": "M", "name": "thread_name", "pid": 7, "tid": 2, "args": {"name": "render"}},
]


def test_complete_and_begin_end_events_nest_into_lanes(tmp_path):
    ev = META + [
        {"ph": "X", "name": "frame", "pid": 7, "tid": 1, "ts": 100.0, "dur": 50.0},
        {"ph": "X", "name": "update", "pid": 7, "tid": 1, "ts": 110.0, "dur": 10.0},
        {"ph": "X", "name": "inner", "pid": 7, "tid": 1, "ts": 112.0, "dur": 2.5},
        {"ph": "B", "name": "draw", "pid": 7, "tid": 2, "ts": 105.0},
        {"ph": "B", "name": "sub", "pid": 7, "tid": 2, "ts": 106.0},
        {"ph": "E", "pid": 7, "tid": 2, "ts": 107.0},
        {"ph": "E", "pid": 7, "tid": 2, "ts": 120.0},
    ]
    t = load_trace(write(tmp_path, chrome(ev)))
    assert t.lanes == ["Game / tid 1", "Game / render"]
    got = {
        t.names[n]: (int(s), int(d), int(ln), int(dp))
        for s, d, ln, dp, n in zip(t.start_ns, t.dur_ns, t.lane, t.depth, t.name_id, strict=True)
    }
    assert got == {  # ns since the first start (100 us)
        "frame": (0, 50_000, 0, 0),
        "update": (10_000, 10_000, 0, 1),
        "inner": (12_000, 2_500, 0, 2),
        "draw": (5_000, 15_000, 1, 0),
        "sub": (6_000, 1_000, 1, 1),
    }
    assert t.origin_ns == 100_000
    assert t.notes == []
    assert list(t.start_ns) == sorted(t.start_ns)


def test_bare_event_list_is_accepted(tmp_path):
    t = load_trace(write(tmp_path, [{"ph": "X", "name": "a", "ts": 1, "dur": 2}]))
    assert len(t) == 1 and t.dur_ns[0] == 2000


def test_begin_end_pairs_in_time_order_not_file_order(tmp_path):
    """Written ends first and shuffled (as a merged or buffered writer does), B/E pair as
    in time order (Perfetto and catapult sort by ts): outer 0..10 us holding inner 2..5 us
    on one thread, a 1..4 us span on another; an E at 20 us is still without a B."""
    ev = [
        {"ph": "E", "pid": 1, "tid": 1, "ts": 10},
        {"ph": "E", "pid": 1, "tid": 1, "ts": 5},
        {"ph": "E", "pid": 1, "tid": 2, "ts": 4},
        {"ph": "B", "name": "inner", "pid": 1, "tid": 1, "ts": 2},
        {"ph": "E", "pid": 1, "tid": 2, "ts": 20},
        {"ph": "B", "name": "outer", "pid": 1, "tid": 1, "ts": 0},
        {"ph": "B", "name": "other", "pid": 1, "tid": 2, "ts": 1},
    ]
    t = load_trace(write(tmp_path, chrome(ev)))
    got = sorted((t.names[n], t.lanes[ln], s + t.origin_ns, d, dp) for n, ln, s, d, dp in zip(
        t.name_id, t.lane, t.start_ns, t.dur_ns, t.depth, strict=True))  # fmt: skip
    assert got == [("inner", "pid 1 / tid 1", 2000, 3000, 1),
                   ("other", "pid 1 / tid 2", 1000, 3000, 0),
                   ("outer", "pid 1 / tid 1", 0, 10_000, 0)]  # fmt: skip
    assert t.notes == ["skipped 1 E event(s) without a B"]


def test_nesting_depth_puts_improper_overlap_one_deeper():
    lane = np.array([0, 0, 0, 1])
    start = np.array([0, 5, 20, 0])
    end = np.array([10, 15, 30, 100])
    assert nesting_depth(lane, start, end).tolist() == [0, 1, 0, 0]


@pytest.mark.parametrize(
    ("events", "note"),
    [
        (
            [{"ph": "X", "name": "n", "ts": 5, "dur": -1}],
            "skipped 1 X event(s) with a negative dur",
        ),
        ([{"ph": "B", "name": "b", "ts": 5}], "skipped 1 B event(s) without an E"),
        ([{"ph": "E", "ts": 5}], "skipped 1 E event(s) without a B"),
        ([{"ph": "X", "name": "n", "dur": 3}], "skipped 1 event(s) without a numeric ts"),
        ([{"ph": "X", "name": "n", "ts": 3}], "skipped 1 X event(s) without a numeric dur"),
        ([17], "skipped 1 malformed event(s) (not an object)"),
        (
            [{"ph": "P", "ts": 1}, {"ph": "O", "ts": 2}, {"ph": "P", "ts": 3}],
            "ignored 3 event(s) of phases not drawn: 'O' x1, 'P' x2",
        ),
    ],
)
def test_bad_events_are_counted_once_and_skipped(tmp_path, events, note):
    good = {"ph": "X", "name": "ok", "ts": 0, "dur": 1}
    t = load_trace(write(tmp_path, chrome([good, *events])))
    assert t.notes == [note]
    assert [t.names[i] for i in t.name_id] == ["ok"]  # nothing drawn from the bad events


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (b"", "empty file"),
        (b"   \n", "empty file"),
        (b'{"traceEvents": [{"ph": "X", "ts": 1, "du', "the file ends inside an event"),
        (b"[1, 2", "the event array is not closed"),
        (b'[{"ph": "X", "ts": 1, "dur": 2}, {"ph": "X", ts: 3}, 5', "not valid JSON near byte"),
        (b"<html>", "not valid JSON: neither an event array nor an object"),
        (b'{"foo": 1}', "no traceEvents list"),
        (b'{"traceEvents": [{"ph": "C", "ts": 1}]}', "no drawable span"),
        (
            b'[{"ph": "X", "ts": 1, "dur": 2, "args": ' + b"[" * 100_000 + b"]" * 100_000 + b"}]",
            "nested too deep",
        ),
    ],
)
def test_unusable_files_raise_one_line(tmp_path, data, message):
    path = write(tmp_path, data)
    with pytest.raises(TraceError) as e:
        load_trace(path)
    text = str(e.value)
    assert message in text and path in text and "\n" not in text


WEIRD = [
    {"ph": "X", "name": {"a": 1}, "pid": [1], "tid": {"x": 2}, "ts": 1, "dur": 1},
    {"ph": "X", "ts": 1e30, "dur": 1},
    {"ph": "X", "ts": 1, "dur": 1e300},
    {"ph": "X", "ts": True, "dur": 1},
    {"ph": "B", "ts": "5"},
    {"ph": "M", "name": "process_name", "pid": None, "args": None},
    {"ph": "M", "name": "thread_sort_index", "pid": 1, "tid": 1, "args": {"sort_index": "x"}},
    {"ph": None},
    {},
]


def test_odd_values_are_skipped_never_a_traceback(tmp_path):
    t = load_trace(write(tmp_path, chrome(WEIRD)))
    assert len(t) == 1 and t.names == ['{"a":1}'] and t.lanes == ['pid [1] / tid {"x":2}']
    assert t.notes == [
        "skipped 2 event(s) with ts or dur beyond 100 days",
        "skipped 1 event(s) without a numeric ts",
        "skipped 1 B event(s) without an E",  # its ts "5" coerced, as Perfetto does
        "ignored 2 event(s) of phases not drawn: 'None' x2",
    ]
    lines = [{"type": "names", "names": ["A"]},
             {"type": "frame", "cpu": [[0, 1, 10**30]]}, {"type": "frame", "cpu": 7}]  # fmt: skip
    path = write(tmp_path, "".join(json.dumps(x) + "\n" for x in lines).encode(), "w.jsonl")
    with pytest.raises(TraceError, match="no frame with scopes"):
        load_trace(path)


def test_nesting_beyond_the_limit_is_left_out_with_a_note_that_states_it(tmp_path):
    """70,000 async begins of one id that never end nest as a stack: the 65,535 the chart
    can draw are kept (depth is 16 bits on the GPU), the rest counted in one note."""
    ev = [{"ph": "X", "name": "top", "pid": 1, "tid": 1, "ts": 0, "dur": 10}]
    ev += [{"ph": "b", "name": f"a{i}", "cat": "net", "id": 7, "ts": i} for i in range(70_000)]
    ev += [{"ph": "e", "cat": "net", "id": 7, "ts": 200_000 - i} for i in range(70_000)]
    t = load_trace(write(tmp_path, chrome(ev)))
    assert len(t) == 1 + 65_535 and int(t.depth.max()) == 65_534
    assert t.lane_depths().tolist() == [65_535, 1]  # the async lane (pid 0) first
    assert t.notes == [
        "skipped 4465 span(s) nested 65,535 or more levels deep (the flame chart's limit: "
        "async spans of one id nest as a stack on their lane, so overlapping or unended ones "
        "can reach it)"
    ]


def test_missing_file_raises_one_line(tmp_path):
    with pytest.raises(TraceError, match="cannot read"):
        load_trace(str(tmp_path / "nope.json"))


def _timings(frame: int, t0: int) -> FrameTimings:
    cpu = [Scope("Update", t0, t0 + 1000), Scope("Main", t0 + 1000, t0 + 4000)]
    gpu = [Scope("Main", 50 + frame * 10_000, 50 + frame * 10_000 + 2500)]
    return FrameTimings(frame, gpu=gpu, cpu=cpu)


def test_lantern_trace_file_loads(tmp_path):
    tel = Telemetry()
    for f in range(3):
        tel.publish(f, t_ns=1_000_000 + f * 10_000, wall_ms=0.01,
                    timings=_timings(f, 1_000_000 + f * 10_000))  # fmt: skip
    path = str(tmp_path / "lantern.json")
    write_trace_file(path, build_trace(tel, calibration=(1_000_000, 100)))
    t = load_trace(path)
    gpu = "Lantern GPU (clock offset estimated)"
    assert t.lanes == ["Lantern CPU / frames", "Lantern CPU / main thread",
                       f"{gpu} / frames", f"{gpu} / queue"]  # fmt: skip
    names = [t.names[i] for i in t.name_id]
    assert names.count("Main") == 6 and names.count("Update") == 3 and names.count("Frame") == 6
    main = t.name_id == t.names.index("Main")
    assert sorted(t.dur_ns[main & (t.lane == 3)]) == [2500] * 3
    # GPU Main on the CPU clock: begin 50 ns + offset 1 ms, minus the trace origin (the CPU's
    # first span at 1 ms)
    assert sorted(t.start_ns[main & (t.lane == 3)]) == [50, 10_050, 20_050]


def _telemetry_file(tmp_path, offset) -> str:
    tel = Telemetry({"sample": "t", "gpu_clock_offset_ns": offset})
    path = str(tmp_path / "tel.jsonl")
    w = JsonLinesWriter(path, tel.session)
    tel.subscribe(w)
    for f in range(4):
        tel.publish(
            f,
            t_ns=1_000_000 + f * 10_000,
            wall_ms=0.01,
            timings=_timings(f, 1_000_000 + f * 10_000),
        )
    w.close()
    return path


def test_telemetry_jsonl_loads_with_gpu_on_the_cpu_clock(tmp_path):
    t = load_trace(_telemetry_file(tmp_path, 999_000))
    assert t.lanes == [CPU_LANE, GPU_LANE]
    gpu = t.lane == 1
    main = t.names.index("Main")
    starts = sorted(int(s) + t.origin_ns for s in t.start_ns[gpu & (t.name_id == main)])
    assert starts == [50 + f * 10_000 + 999_000 for f in range(4)]
    frames = t.name_id == t.names.index("CPU frame")
    assert frames.sum() == 4 and set(t.depth[frames]) == {0}
    assert sorted(t.dur_ns[frames]) == [4000] * 4


def test_telemetry_without_offset_leaves_gpu_out_and_says_so(tmp_path):
    t = load_trace(_telemetry_file(tmp_path, None))
    assert set(t.lane.tolist()) == {0}
    assert t.notes == [
        "left out the GPU scopes of 4 frame(s): the session has no gpu_clock_offset_ns "
        "to put them on the CPU clock"
    ]


def test_truncated_telemetry_line_is_counted(tmp_path):
    path = _telemetry_file(tmp_path, 0)
    data = open(path, "rb").read()
    open(path, "wb").write(data[:-25])  # the last frame line cut short
    t = load_trace(path)
    assert t.notes == ["skipped 1 malformed or truncated line(s)"]
    assert (t.name_id == t.names.index("CPU frame")).sum() == 3


def test_telemetry_scope_ending_before_it_begins_is_counted(tmp_path):
    lines = [
        {"type": "session", "gpu_clock_offset_ns": None},
        {"type": "names", "names": ["A", "B"]},
        {"type": "frame", "frame": 0, "cpu": [[0, 10, 20], [1, 30, 25]], "gpu": None},
    ]
    path = write(tmp_path, b"".join(orjson.dumps(x) + b"\n" for x in lines), "x.jsonl")
    t = load_trace(path)
    assert t.notes == ["skipped 1 scope(s) ending before they begin or with an unknown name"]
    assert [t.names[i] for i in t.name_id] == ["CPU frame", "A"]


# -- view math and statistics ------------------------------------------------------------------
def test_zoom_keeps_the_time_under_the_cursor():
    v = FlameView(np.array([3]), 0, 1_000_000, (1000, 400))
    for x, k in ((123.0, 2.0), (900.5, 0.25), (0.0, 10.0), (640.0, 1.7)):
        before = v.time_at(x)
        v.zoom(k, x)
        assert v.time_at(x) == pytest.approx(before, abs=1e-6)
    s = v.ns_per_px
    v.pan(100)
    assert v.time_at(100) == pytest.approx(v.time_at(0) + 100 * s)


def test_show_fits_a_span_with_margin_and_lane_rows():
    v = FlameView(np.array([3, 0, 2]), 0, 10_000, (1000, 100), row_px=20)
    v.zoom_to_span(2000, 500)
    assert v.x_of(2000) == pytest.approx(1000 * 0.02 / 1.04)
    assert v.x_of(2500) == pytest.approx(1000 - 1000 * 0.02 / 1.04)
    assert v.lane_rows().tolist() == [1, 5, 7]  # header row, then the lane's depths
    v.scroll(10_000)  # 9 rows of 20 px in 100 px: the last row may reach the top
    assert v.scroll_px == 9 * 20 - 100 + 20
    v.scroll(-10_000)
    assert v.scroll_px == 0


def test_name_and_range_statistics():
    dur = np.array([10, 20, 30, 40, 1000], np.int64)
    start = np.array([0, 100, 200, 300, 400], np.int64)
    nid = np.array([1, 1, 1, 1, 2], np.uint32)
    s = name_stats(dur, nid, 1, "a")
    assert (s.count, s.mean, s.median, s.max) == (4, 25.0, 25.0, 40.0)
    assert s.p95 == pytest.approx(30 + 0.85 * 10)  # numpy's linear interpolation
    r = range_stats(start, dur, nid, 250, 100, depth=np.array([0, 0, 1, 0, 0]))
    assert (r.t0, r.t1, r.spans, r.top) == (100, 250, 2, ((1, 2, 50.0),))
    assert (r.roots, r.root_mean) == (1, 20.0)  # spans 1 (depth 0) and 2 (depth 1) inside
    assert fmt_ns(12_345_678) == "12.35 ms" and fmt_ns(900) == "900 ns"


def test_self_times_and_per_lane_statistics():
    from engine.flamechart.view import self_times

    # lane 0: A [0,100) holds B [10,40) (holding C [20,25)) and D [50,60); lane 1: A [0,70)
    start = np.array([0, 10, 20, 50, 0])
    dur = np.array([100, 30, 5, 10, 70])
    lane = np.array([0, 0, 0, 0, 1])
    depth = np.array([0, 1, 2, 1, 0])
    st = self_times(start, dur, lane, depth)
    assert st.tolist() == [100 - 30 - 10, 30 - 5, 5, 10, 70]
    name = np.array([0, 1, 2, 3, 0])
    s = name_stats(dur, name, 0, "A", lane=lane, lane_id=1, self_ns=st)
    assert (s.count, s.mean, s.self_mean) == (1, 70.0, 70.0)  # lane 0's A left out
    both = name_stats(dur, name, 0, "A", self_ns=st)
    assert (both.count, both.median, both.self_total) == (2, 85.0, 130.0)


def test_non_ascii_names_get_a_visible_fallback():
    from engine.flamechart.spans import label_bytes, printable

    assert printable("Render résumé") == "Render r<U+00E9>sum<U+00E9>"
    chars, offs = label_bytes(["a\tb", "ok"])
    text = chars.view(np.uint8).tobytes()
    assert text[offs[0, 0] : offs[0, 0] + offs[0, 1]] == b"a<U+0009>b"
    assert text[offs[1, 0] : offs[1, 0] + offs[1, 1]] == b"ok"


def test_lanes_collapse_reorder_and_size_to_what_is_in_view():
    from engine.devtools.traces.traceload import build_table
    from engine.flamechart.rows import RowIndex

    # lane 0: a deep stack at 0..100 only; lane 1: one span everywhere
    t = build_table(
        [0, 0, 0, 1], [0, 10, 20, 0], [100, 90, 80, 10_000], [0, 0, 0, 1], ["a", "b"], ["L0", "L1"]
    )
    idx = RowIndex(t)
    assert idx.depths_in(0, 50).tolist() == [3, 1]
    assert idx.depths_in(85, 200).tolist() == [2, 1]  # depth 2 ended at 80
    assert idx.depths_in(500, 600).tolist() == [0, 1]
    v = FlameView(idx.depths_in(500, 600), 0, 10_000, (100, 100), row_px=10)
    assert v.lane_rows().tolist() == [1, 3]  # an empty lane keeps one row
    v.set_lane_depths(idx.depths_in(0, 50))
    assert v.lane_rows().tolist() == [1, 5] and v.total_rows == 6
    v.toggle_lane(0)
    assert v.lane_rows().tolist() == [-1, 2] and v.total_rows == 3
    assert v.lane_at(15) == 1 and v.lane_at(5) == 0 and v.lane_at(25) is None
    v.toggle_lane(0)
    v.move_lane(1, -1)  # lane 1 first
    assert v.lane_rows().tolist() == [3, 1] and v.header_rows().tolist() == [2, 0]


def test_next_and_previous_search_match():
    from engine.flamechart.view import NONE, next_match

    start = np.array([0, 10, 20, 30, 40, 50])
    m = np.array([1, 3, 4])  # matching spans, in start order
    assert next_match(m, start, NONE, (-5.0, 60.0), 1) == 1  # the whole trace: the earliest
    assert next_match(m, start, NONE, (-5.0, 60.0), -1) == 4  # and the latest
    assert next_match(m, start, NONE, (25.0, 45.0), 1) == 3  # the first in view
    assert next_match(m, start, NONE, (5.0, 35.0), -1) == 3  # the last in view
    assert next_match(m, start, 3, (0, 0), 1) == 4 and next_match(m, start, 3, (0, 0), -1) == 1
    assert next_match(m, start, 4, (0, 0), 1) == 1 and next_match(m, start, 1, (0, 0), -1) == 4
    assert next_match(m, start, 2, (0.0, 0.0), 1) == 3  # a selected span that is no match


def test_search_matches_are_in_time_then_lane_order(tmp_path):
    """dns spans at 2, 12, 22 (on two threads), 32, 42 ms, written out of time order among
    other spans: matches (and N from the whole trace, and --next K) go 2, 12, 22 (tid 1),
    22 (tid 2), 32, 42."""
    from engine.flamechart.view import NONE, next_match, search_matches

    dns = [(32, 1), (2, 2), (42, 1), (22, 2), (12, 1), (22, 1)]  # (ms, tid), file order
    ev = [{"ph": "X", "name": "DNS lookup", "pid": 1, "tid": tid, "ts": ms * 1000, "dur": 500}
          for ms, tid in dns]  # fmt: skip
    ev += [{"ph": "X", "name": "io", "pid": 1, "tid": 1 + k % 2, "ts": k * 3000, "dur": 900}
           for k in range(15)]  # fmt: skip
    p = tmp_path / "dns.json"
    p.write_text(json.dumps({"traceEvents": ev}))
    t = load_trace(p)
    m = search_matches(t.names, t.name_id, "dns")
    lanes = {t.lanes.index(f"pid 1 / tid {k}"): k for k in (1, 2)}
    got = [(int(t.start_ns[i] + t.origin_ns) // 1000, lanes[int(t.lane[i])]) for i in m]
    assert got == [(2000, 2), (12000, 1), (22000, 1), (22000, 2), (32000, 1), (42000, 1)]
    assert search_matches(t.names, t.name_id, "").tolist() == []
    whole = (-1e6, 50e6)
    walk, sel = [], NONE
    for _ in range(7):  # N from nothing selected: the earliest, then in order, wrapping
        sel = next_match(m, t.start_ns, sel, whole, 1)
        walk.append(sel)
    assert walk == [*m.tolist(), int(m[0])]
    back = [next_match(m, t.start_ns, int(m[k]), whole, -1) for k in range(6)]
    assert back == [int(m[k - 1]) for k in range(6)]  # P: the one before, wrapping
