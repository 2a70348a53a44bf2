"""Trace files other viewers open: gzip, an array a crashed writer left open, string ts,
async and instant events, displayTimeUnit, the details of an event read back from its chunk,
a file too large for the memory, and the streaming reader's chunk cuts."""

from __future__ import annotations

import gzip
import json

import numpy as np
import pytest

from engine.devtools.traces import traceload
from engine.devtools.traces.traceload import TraceError, load_trace
from engine.flamechart.table import _stack_depth, nesting_depth


def events(n: int) -> list[dict]:
    """n X events on 3 threads, args holding the cut pattern in nested values and strings."""
    out = []
    for i in range(n):
        args = {"k": [{"a": i}, {"b": "},{"}], "s": 'q"},{"x'} if i % 3 == 0 else {}
        out.append({"ph": "X", "name": f"n{i % 7}", "cat": "c", "pid": 1, "tid": i % 3,
                    "ts": i * 10.0, "dur": 4.0 + (i % 5), "args": args})  # fmt: skip
    return out


def columns(t) -> dict:
    return {k: getattr(t, k).tolist() for k in ("start_ns", "dur_ns", "lane", "depth", "name_id")}


def test_gzip_and_tiny_blocks_read_the_same_spans(tmp_path, monkeypatch):
    ev = events(500)
    raw = json.dumps({"traceEvents": ev, "displayTimeUnit": "ns"}).encode()
    (tmp_path / "a.json").write_bytes(raw)
    (tmp_path / "a.json.gz").write_bytes(gzip.compress(raw))
    whole = load_trace(tmp_path / "a.json")
    assert len(whole) == 500 and whole.notes == [] and whole.display_unit == "ns"
    # independent: ts in us -> ns since the first, in start order
    assert whole.start_ns.tolist() == [i * 10_000 for i in range(500)]
    assert whole.dur_ns.tolist() == [(4 + i % 5) * 1000 for i in range(500)]
    monkeypatch.setattr(traceload, "STREAM_BLOCK", 97)  # cuts in strings and nested values
    small = load_trace(tmp_path / "a.json")
    assert len(small.chunks) > 50
    gz = load_trace(tmp_path / "a.json.gz")
    assert columns(small) == columns(whole) == columns(gz)
    assert small.names == whole.names == gz.names and gz.display_unit == "ns"
    e = traceload.event_at(gz, 3)  # span 3 is event 3: its args come back from its chunk
    assert e["args"] == ev[3]["args"] and e["cat"] == "c"


def test_unterminated_array_opens_with_a_note(tmp_path):
    raw = json.dumps(events(20))[:-1] + ",\n"  # what a writer killed mid-run leaves
    p = tmp_path / "open.json"
    p.write_text(raw)
    t = load_trace(p)
    assert len(t) == 20
    assert t.notes == [
        "the event array is not closed (a writer that stopped early): read up to its last "
        "whole event"
    ]
    p.write_text(raw + '{"ph": "X", "na')  # and a partial event after it
    t = load_trace(p)
    assert len(t) == 20 and t.notes[0].startswith("the file ends inside an event (15 bytes")


def test_async_instant_and_string_ts(tmp_path):
    ev = [
        {"ph": "M", "name": "process_name", "pid": 1, "args": {"name": "node"}},
        {"ph": "X", "name": "main", "pid": 1, "tid": 1, "ts": "100", "dur": 50},  # string ts
        {"ph": "b", "name": "fetch", "cat": "net", "id": "0x1", "pid": 1, "ts": 110},
        {"ph": "b", "name": "dns", "cat": "net", "id": "0x1", "pid": 1, "ts": 112},
        {"ph": "n", "name": "mark", "cat": "net", "id": "0x1", "pid": 1, "ts": 113},
        {"ph": "e", "name": "dns", "cat": "net", "id": "0x1", "pid": 1, "ts": 115},
        {"ph": "e", "name": "fetch", "cat": "net", "id": "0x1", "pid": 1, "ts": 140},
        {"ph": "b", "name": "fetch", "cat": "net", "id": "0x2", "pid": 1, "ts": 120},
        {"ph": "e", "name": "fetch", "cat": "net", "id": "0x2", "pid": 1, "ts": 130},
        {"ph": "S", "name": "old", "cat": "x", "id": 5, "pid": 1, "ts": 101},
        {"ph": "F", "name": "old", "cat": "x", "id": 5, "pid": 1, "ts": 105},
        {"ph": "i", "name": "tick", "pid": 1, "tid": 1, "ts": 120, "s": "t"},
        {"ph": "i", "name": "vsync", "ts": 125, "s": "g"},
        {"ph": "e", "name": "lost", "cat": "net", "id": "0x9", "pid": 1, "ts": 150},
        {"ph": "b", "name": "open", "cat": "net", "id": "0x8", "pid": 1, "ts": 160},
        {"ph": "S", "name": "open", "cat": "x", "id": 7, "pid": 1, "ts": 161},
    ]
    t = load_trace(_write(tmp_path, ev))
    assert t.lanes == [
        "node / tid 1",
        "node / async net 0x1",
        "node / async net 0x2",
        "node / async x 5",
        "global instants",
    ]
    got = sorted(
        (t.lanes[ln], t.names[n], int(s), int(d), int(dp))
        for ln, n, s, d, dp in zip(t.lane, t.name_id, t.start_ns, t.dur_ns, t.depth, strict=True)
    )
    assert got == sorted([
        ("node / tid 1", "main", 0, 50_000, 0),
        ("node / tid 1", "tick", 20_000, 0, 1),  # inside main: a marker one row down
        ("node / async net 0x1", "fetch", 10_000, 30_000, 0),
        ("node / async net 0x1", "dns", 12_000, 3_000, 1),
        ("node / async net 0x1", "mark", 13_000, 0, 2),
        ("node / async net 0x2", "fetch", 20_000, 10_000, 0),
        ("node / async x 5", "old", 1_000, 4_000, 0),
        ("global instants", "vsync", 25_000, 0, 0),
    ])  # fmt: skip
    assert t.notes == ["skipped 1 async end event(s) without a begin",
                       "skipped 2 async begin event(s) without an end"]  # fmt: skip


def _write(tmp_path, ev) -> str:
    p = tmp_path / "a.json"
    p.write_text(json.dumps(ev))
    return str(p)


def test_null_and_object_names_show_as_json(tmp_path):
    ev = [{"ph": "X", "name": None, "ts": 0, "dur": 1}, {"ph": "X", "name": {"b": 1, "a": "é"},
          "ts": 2, "dur": 1}]  # fmt: skip
    assert load_trace(_write(tmp_path, ev)).names == ["(null)", '{"a":"é","b":1}']


def test_a_trace_too_large_for_memory_is_refused_up_front(tmp_path, monkeypatch):
    p = _write(tmp_path, events(2000))
    size = (tmp_path / "a.json").stat().st_size
    monkeypatch.setattr(traceload, "_available_bytes", lambda: traceload.LOAD_FIXED + size // 2)
    with pytest.raises(TraceError) as e:
        load_trace(p)
    msg = str(e.value)
    assert p in msg and f"this {size / 1e6:.0f} MB trace needs about" in msg
    assert "would fit" in msg and "\n" not in msg


def test_vectorised_nesting_equals_the_stack():
    rng = np.random.default_rng(5)
    n = 4000
    lane = rng.integers(0, 4, n)
    start = rng.integers(0, 10_000, n)
    end = start + rng.integers(0, 300, n)
    ok = lane < 2  # lanes 0, 1: improper overlaps; lanes 2, 3: made well nested below
    for ln in (2, 3):
        k = np.flatnonzero(lane == ln)
        start[k] = np.arange(len(k)) // 4 * 1000 + (np.arange(len(k)) % 4) * 10
        end[k] = start[k] + 1000 - (np.arange(len(k)) % 4) * 20
    got = nesting_depth(lane, start, end)
    order = np.lexsort((start - end, start, lane))
    for ln in range(4):
        o = order[lane[order] == ln]
        assert got[o].tolist() == _stack_depth(start[o].tolist(), end[o].tolist())
    assert got[~ok].max() == 3 and ok.any()


def test_counters_become_step_series_on_lanes_of_their_own(tmp_path):
    ev = [
        {"ph": "X", "name": "work", "pid": 1, "tid": 1, "ts": 0, "dur": 100},
        {"ph": "C", "name": "heap", "pid": 1, "ts": 10, "args": {"used": 5, "free": "7"}},
        {"ph": "C", "name": "heap", "pid": 1, "ts": 0, "args": {"used": 1}},
        {"ph": "C", "name": "fps", "pid": 1, "ts": 20, "args": {"value": 60.5}},
        {"ph": "C", "name": "bad", "pid": 1, "ts": 20, "args": {"x": "NaN?"}},
    ]
    t = load_trace(_write(tmp_path, ev))
    assert t.lanes == ["pid 1 / tid 1", "pid 1 / fps", "pid 1 / heap free", "pid 1 / heap used"]
    got = {c.name: (c.lane, c.t_ns.tolist(), c.value.tolist()) for c in t.counters}
    assert got == {
        "fps": (1, [20_000], [60.5]),
        "heap free": (2, [10_000], [7.0]),  # a numeric string coerced
        "heap used": (3, [0, 10_000], [1.0, 5.0]),  # sorted by time
    }
    assert t.lane_depths().tolist() == [1, 3, 3, 3]
    assert t.notes == ["skipped 1 counter value(s) not a finite number"]


def test_flows_bind_to_the_enclosing_or_next_span(tmp_path):
    ev = [
        {"ph": "X", "name": "A", "pid": 1, "tid": 1, "ts": 0, "dur": 100},
        {"ph": "X", "name": "A1", "pid": 1, "tid": 1, "ts": 10, "dur": 20},
        {"ph": "X", "name": "B", "pid": 1, "tid": 2, "ts": 50, "dur": 10},
        {"ph": "s", "name": "f", "cat": "c", "id": 1, "pid": 1, "tid": 1, "ts": 15},
        {"ph": "t", "name": "f", "cat": "c", "id": 1, "pid": 1, "tid": 1, "ts": 60},
        {"ph": "f", "name": "f", "cat": "c", "id": 1, "pid": 1, "tid": 2, "ts": 45},  # next: B
        {"ph": "s", "name": "g", "cat": "c", "id": 2, "pid": 1, "tid": 2, "ts": 55},
        {"ph": "f", "bp": "e", "name": "g", "cat": "c", "id": 2, "pid": 9, "tid": 9, "ts": 58},
    ]
    t = load_trace(_write(tmp_path, ev))
    f = t.flows
    rows = list(zip(f.t0.tolist(), f.lane0.tolist(), f.depth0.tolist(), f.t1.tolist(),
                    f.lane1.tolist(), f.depth1.tolist(), strict=True))  # fmt: skip
    # s at 15 us in A1 (depth 1) -> f at 45 us binds to B (begins at 50 us, lane 1); the t
    # step at 60 us comes after the flow's end in time and no later s of id 1 starts a
    # flow it could belong to (as Perfetto and catapult read it: in time order)
    assert rows == [(15_000, 0, 1, 50_000, 1, 0)]
    assert t.notes == [
        "skipped 1 flow step(s) (t, f) with no start (s) of their id to follow",
        "skipped 1 flow step(s) with no span to bind to",  # pid 9 has none
    ]


def test_running_out_of_memory_is_said_so_not_invalid_json(tmp_path, monkeypatch):
    from engine.devtools.traces import jsonstream

    def no_memory(region):
        raise MemoryError("Not enough memory to allocate")

    monkeypatch.setattr(jsonstream, "_decode", no_memory)
    p = _write(tmp_path, events(50))
    with pytest.raises(TraceError) as e:
        load_trace(p)
    msg = str(e.value)
    assert "ran out of memory loading this" in msg and "available" in msg
    assert "not valid JSON" not in msg and p in msg and "\n" not in msg
