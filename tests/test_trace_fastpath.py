"""The trace loader's fast path (msgspec structs per chunk, vectorised X columns) against the
reference: the same file decoded whole by Python's ``json`` module and fed event by event
through ``_ChromeReader.feed`` (the one place that validates and counts every odd value).
Every event kind, odd values sprinkled between long clean runs (so both the struct and the
orjson chunks occur), blocks small enough that most events straddle a cut, plain, gzip and
unterminated files; compared span by span, with counters, flows, lanes and notes."""

from __future__ import annotations

import gzip
import json
import random

import numpy as np
import orjson
import pytest

from engine.devtools.traces import jsonstream, traceload
from engine.devtools.traces.traceload import load_trace


def varied_events(n: int, seed: int) -> list:
    """About ``n`` events of every kind the loader reads, in time order, odd ones sparse."""
    rng = random.Random(seed)
    names = ["Frame", "Update", "渲染", "émoji 🔥", 'q"},{"x', "a\\b", ""]
    ev: list = [
        {"ph": "M", "name": "process_name", "pid": 1, "args": {"name": "game"}},
        {"ph": "M", "name": "thread_name", "pid": 1, "tid": 2, "args": {"name": "render"}},
        {"ph": "M", "name": "thread_sort_index", "pid": 1, "tid": 2, "args": {"sort_index": -1}},
        {"ph": "M", "name": "process_sort_index", "pid": "p", "args": {"sort_index": 3}},
        {"ph": "M", "name": "thread_name", "pid": "p", "tid": "t", "args": {"name": "io"}},
    ]
    open_b: dict = {}
    t = 0.0
    for i in range(n):
        t += rng.choice((0, 0.5, 1, 2.25, 7))
        pid, tid = rng.choice(((1, 1), (1, 2), (1, 3), ("p", "t"), (2, 1)))
        name = rng.choice(names)
        args = {"k": [{"a": i}, {"b": "},{"}], "s": 'q"},{"x'} if i % 4 == 0 else {}
        r = rng.random()
        if r < 0.45:  # X, ts/dur as int or float
            ts = round(t) if i % 3 == 0 else t
            e = {"ph": "X", "name": name, "pid": pid, "tid": tid, "ts": ts, "dur": i % 9 * 0.5}
            e["args"] = args
        elif r < 0.60:  # B/E nested per thread, ends named or not
            stack = open_b.setdefault((pid, tid), [])
            if stack and rng.random() < 0.5:
                stack.pop()
                e = {"ph": "E", "pid": pid, "tid": tid, "ts": t}
                if i % 5 == 0:
                    e["name"] = "late name"
            else:
                stack.append(i)
                e = {"ph": "B", "name": name, "pid": pid, "tid": tid, "ts": t, "args": args}
                if i % 7 == 0:
                    del e["name"]
        elif r < 0.70:  # async begin/end/instant, id or id2, legacy S/T/F
            ph = rng.choice("bbeenSTF")
            e = {"ph": ph, "name": name, "cat": rng.choice(("net", "gc")), "pid": pid, "ts": t}
            if i % 6 == 0:
                e["id2"] = {"local": "0x1"}
            else:
                e["id"] = rng.choice(("0x1", "0x2", 5))
        elif r < 0.78:  # counters: numbers, numeric strings, a bad value, an id
            e = {"ph": "C", "name": rng.choice(("heap", "fps")), "pid": pid, "ts": t}
            e["args"] = {"used": i % 13, "free": str(i % 5), "bad": "x"} if i % 2 else {"v": 1.5}
            if i % 5 == 0:
                e["id"] = 3
        elif r < 0.86:  # instants of every scope
            e = {"ph": rng.choice("iI"), "name": name, "pid": pid, "tid": tid, "ts": t}
            e["s"] = rng.choice("tpg")
        elif r < 0.94:  # flows, some bound to the enclosing slice
            e = {"ph": rng.choice("stf"), "name": "flow", "cat": "c", "id": i % 4, "pid": pid,
                 "tid": tid, "ts": t}  # fmt: skip
            if i % 3 == 0:
                e["bp"] = "e"
        else:
            e = {"ph": rng.choice("PO"), "name": name, "pid": pid, "tid": tid, "ts": t}
        ev.append(e)
        if i % 50 == 0:  # a tie: an instant, then a zero-length X at its time on its track
            ev.append({"ph": "i", "name": "tie i", "pid": 1, "tid": 3, "ts": t})
            ev.append({"ph": "X", "name": "tie X", "pid": 1, "tid": 3, "ts": t, "dur": 0})
        if i % 61 == 0:  # a B/E pair written end first (paired in time order)
            ev.append({"ph": "E", "pid": 3, "tid": 3, "ts": t + 1})
            ev.append({"ph": "B", "name": "late", "pid": 3, "tid": 3, "ts": t})
        if i % 97 == 0:  # odd values: each makes its chunk an orjson one
            ev.append(rng.choice(ODD))
    return ev


ODD = [
    {"ph": "X", "name": None, "pid": 1, "tid": 1, "ts": 5, "dur": 1},
    {"ph": "X", "name": {"b": 1, "a": "é"}, "pid": 1, "tid": 1, "ts": 5, "dur": 1},
    {"ph": "X", "name": "str ts", "pid": 1, "tid": 1, "ts": "12.5", "dur": 1},
    {"ph": "X", "name": "no dur", "pid": 1, "tid": 1, "ts": 3},
    {"ph": "X", "name": "neg", "pid": 1, "tid": 1, "ts": 3, "dur": -2},
    {"ph": "X", "name": "far", "pid": 1, "tid": 1, "ts": 1e13, "dur": 1},
    {"ph": "X", "name": "float pid", "pid": 1.5, "tid": 1, "ts": 3, "dur": 1},
    {"ph": "X", "name": "bool ts", "pid": 1, "tid": 1, "ts": True, "dur": 1},
    {"ph": "B", "name": "str ts B", "pid": 1, "tid": 9, "ts": "4"},
    {"ph": "E", "pid": 7, "tid": 7, "ts": 4},  # E without B
    {"ph": "Z", "name": "unknown phase", "ts": 1},
    {"name": "no phase", "ts": 1},
    5,
    "an event that is a string",
    {"ph": "C", "name": "no args", "pid": 1, "ts": 1},
]


def spans(t) -> list[tuple]:
    """Each span as (lane label, absolute start ns, dur ns, depth, name, event ordinal)."""
    cols = (t.lane, t.start_ns + t.origin_ns, t.dur_ns, t.depth, t.name_id, t.event)
    return [
        (t.lanes[ln], s, d, dp, t.names[n], e)
        for ln, s, d, dp, n, e in zip(*(c.tolist() for c in cols), strict=True)
    ]


def reference(events: list, path: str):
    """The spec: every event through ``feed`` one by one, in file order."""
    r = traceload._ChromeReader()
    for k, e in enumerate(events):
        r.ordinal = k
        r.feed(e)
    r.ordinal = len(events)
    return r.table(path)


def assert_same(got, want) -> None:
    assert spans(got) == spans(want)
    assert got.lanes == want.lanes
    assert sorted(got.notes) == sorted(want.notes)
    assert [(c.lane, c.name) for c in got.counters] == [(c.lane, c.name) for c in want.counters]
    for a, b in zip(got.counters, want.counters, strict=True):
        assert a.t_ns.tolist() == b.t_ns.tolist() and a.value.tolist() == b.value.tolist()
    fg, fw = got.flows, want.flows
    assert (fg is None) == (fw is None)
    if fg is not None:
        keys = ("t0", "lane0", "depth0", "t1", "lane1", "depth1")
        assert [getattr(fg, k).tolist() for k in keys] == [getattr(fw, k).tolist() for k in keys]


@pytest.fixture
def decoded(monkeypatch):
    """Counts of chunks the loader got as msgspec structs and as orjson objects."""
    seen = {"structs": 0, "orjson": 0}
    real = jsonstream._decode

    def spy(region):
        out = real(region)
        if out:
            seen["structs" if isinstance(out[0], jsonstream.Event) else "orjson"] += 1
        return out

    monkeypatch.setattr(jsonstream, "_decode", spy)
    return seen


@pytest.mark.parametrize("block", [61, 700, 1 << 20])
def test_fast_path_equals_the_event_by_event_reference(tmp_path, monkeypatch, decoded, block):
    events = varied_events(3000, seed=block)
    raw = json.dumps({"traceEvents": events, "displayTimeUnit": "ns"}, ensure_ascii=False)
    plain, gz = tmp_path / "a.json", tmp_path / "a.json.gz"
    plain.write_text(raw, encoding="utf-8")
    gz.write_bytes(gzip.compress(raw.encode()))
    want = reference(json.loads(raw)["traceEvents"], str(plain))
    assert len(want) > 1500 and want.counters and want.flows is not None  # every kind is there
    assert len(want.notes) >= 8  # and the odd values were counted
    monkeypatch.setattr(traceload, "STREAM_BLOCK", block)
    for path in (plain, gz):
        got = load_trace(path)
        assert_same(got, want)
        assert got.display_unit == "ns"
    if block < 1000:  # both kinds of chunk occurred (one block: all of it through orjson)
        assert decoded["structs"] > decoded["orjson"] > 0
    assert sum(decoded.values()) >= len(raw) // block  # a chunk per block or so (two files)


def test_orjson_only_equals_the_fast_path(tmp_path, monkeypatch):
    """The loader with msgspec switched off (every chunk through orjson dicts) is the same."""
    events = varied_events(2000, seed=9)
    p = tmp_path / "a.json"
    p.write_text(json.dumps(events))
    monkeypatch.setattr(traceload, "STREAM_BLOCK", 300)
    fast = load_trace(p)
    monkeypatch.setattr(jsonstream, "USE_MSGSPEC", False)
    assert_same(load_trace(p), fast)
    assert_same(fast, reference(events, str(p)))


def test_unterminated_array_gives_the_same_spans_with_a_notice(tmp_path, monkeypatch):
    events = varied_events(1500, seed=3)
    p = tmp_path / "open.json"
    p.write_text(json.dumps(events)[:-1] + ",\n")  # a writer killed mid-run
    want = reference(events, str(p))
    monkeypatch.setattr(traceload, "STREAM_BLOCK", 127)
    got = load_trace(p)
    assert got.notes[0] == (
        "the event array is not closed (a writer that stopped early): read up to its last "
        "whole event"
    )
    got.notes = got.notes[1:]
    assert_same(got, want)


def telemetry_lines(frames: int, seed: int) -> bytes:
    """A --telemetry JSONL with frames before the session, a names line midway, bad lines
    and scopes of every odd kind (a non-integer one sends its batch frame by frame)."""
    rng = random.Random(seed)
    out = [{"type": "names", "names": [f"P{i}" for i in range(6)]}]
    odd = [[0, 5, 2], [99, 1, 2], [-1, 1, 2], [True, 1, 2], [0, -(2**62), 5]]  # numpy's
    odder = [[0, 1.5, 3], [0, "7", 9], [0, 2**63, 2**63], [0, 1], "abc"]  # frame by frame
    for f in range(frames):
        t0 = f * 1_000_000
        cpu = [[rng.randrange(6), t0 + k * 1000, t0 + k * 1000 + rng.choice((0, 500, 999))]
               for k in range(rng.randrange(0, 9))]  # fmt: skip
        gpu = [[k % 6, t0 + k * 3000, t0 + k * 3000 + 1500] for k in range(rng.randrange(0, 5))]
        if f % 37 == 5:
            cpu.append(rng.choice(odd))
        if f % 409 == 5:
            cpu.append(rng.choice(odder))
        out.append({"type": "frame", "frame": f, "cpu": cpu, "gpu": gpu})
        if f == 3:
            out.append({"type": "session", "gpu_clock_offset_ns": 250})
        if f == frames // 2:
            out.append({"type": "names", "names": ["late0", "late1"]})
        if f % 101 == 7:
            out.append({"type": "mystery"})
    lines = [orjson.dumps(x) for x in out]
    lines.insert(len(lines) // 3, b'{"type": "frame", "cpu": [[0, 1')  # a truncated line
    return b"\n".join(lines) + b"\n"


def test_jsonl_batches_equal_frame_by_frame(tmp_path, monkeypatch):
    p = tmp_path / "tel.jsonl"
    p.write_bytes(telemetry_lines(3000, seed=4))
    real, ran = traceload._frames_vector, []

    def spy(frames, *a):
        ran.append((real(frames, *a), all(type(m) is traceload.FrameLine for m in frames)))
        return ran[-1][0]

    monkeypatch.setattr(traceload, "_frames_vector", spy)
    monkeypatch.setattr(traceload, "STREAM_BLOCK", 3000)  # many blocks of frame lines only
    fast = load_trace(p)
    gz = tmp_path / "tel.jsonl.gz"
    gz.write_bytes(gzip.compress(p.read_bytes()))
    fast_gz = load_trace(gz)
    vector = sum(r is not None for r, _ in ran)
    assert len(ran) - vector > 3 and vector > 10  # both ways ran
    assert 10 < sum(msgspec for _, msgspec in ran) < len(ran)  # lines decoded by msgspec too
    # the reference: every line by orjson, every frame by _frame
    monkeypatch.setattr(traceload, "_frames_vector", lambda *a: None)
    monkeypatch.setattr(traceload, "_FRAME_LINES", traceload.msgspec.json.Decoder(bool))
    slow = load_trace(p)
    assert len(fast) > 15_000 and fast.lanes == slow.lanes and fast.names == slow.names
    assert spans_jsonl(fast) == spans_jsonl(slow)
    assert fast.notes == slow.notes and len(fast.notes) == 4  # bad scopes, lines, frames
    assert spans_jsonl(fast_gz) == spans_jsonl(slow) and fast_gz.notes == slow.notes


def spans_jsonl(t) -> list[tuple]:
    cols = (t.lane, t.start_ns + t.origin_ns, t.dur_ns, t.depth, t.name_id)
    return list(zip(*(c.tolist() for c in cols), strict=True))


def stack_pairs(track: list, kind: list) -> tuple[list, list, list]:
    """The specification of ``match_pairs``: a stack per track, events in the order given
    (time order, ties in file order)."""
    stacks: dict = {}
    pairs, lone = [], []
    for i, (t, k) in enumerate(zip(track, kind, strict=True)):
        s = stacks.setdefault(t, [])
        if k > 0:
            s.append(i)
        elif s:
            pairs.append((s.pop(), i))
        else:
            lone.append(i)
    return sorted(pairs), lone, sorted(i for s in stacks.values() for i in s)


@pytest.mark.parametrize("seed", range(6))
def test_vectorised_begin_end_matching_equals_a_stack(seed):
    rng = np.random.default_rng(seed)
    n = 3000
    track = rng.integers(0, 1 + seed * 3, n).astype(np.int32)
    p_begin = (0.3, 0.5, 0.7)[seed % 3]  # more ends than begins, even, more begins
    kind = np.where(rng.random(n) < p_begin, 1, -1).astype(np.int8)
    kind[rng.random(n) < 0.2] *= 2  # async kinds pair the same way on their tracks
    ordinal = rng.permutation(n * 2)[:n]  # file order: by ordinal, not by index
    at = rng.integers(0, n // 3, n)  # ties: file order decides
    o = sorted(range(n), key=lambda i: (at[i], ordinal[i]))  # time order, as Perfetto sorts
    b, e, lone, left = traceload.match_pairs(track, kind, ordinal, at)
    want_pairs, want_lone, want_left = stack_pairs(track[o].tolist(), kind[o].tolist())
    rank = np.empty(n, np.int64)
    rank[o] = np.arange(n)  # index -> position in time order
    assert (at[e] >= at[b]).all()
    assert sorted(zip(rank[b].tolist(), rank[e].tolist(), strict=True)) == want_pairs
    assert sorted(rank[lone].tolist()) == want_lone and sorted(rank[left].tolist()) == want_left
    assert len(want_pairs) > 100 and (want_lone or want_left)
    o = np.argsort(ordinal)  # without ``at``: file order alone
    b, e, lone, left = traceload.match_pairs(track, kind, ordinal)
    want_pairs, want_lone, want_left = stack_pairs(track[o].tolist(), kind[o].tolist())
    rank[o] = np.arange(n)
    assert sorted(zip(rank[b].tolist(), rank[e].tolist(), strict=True)) == want_pairs
    assert sorted(rank[lone].tolist()) == want_lone and sorted(rank[left].tolist()) == want_left


@pytest.mark.parametrize("at", [200, 0.6, None])  # corrupt early or midway, truncated
def test_damaged_gzip_is_one_line(tmp_path, at):
    raw = gzip.compress(json.dumps(varied_events(3000, seed=1)).encode())
    k = int(at * len(raw)) if isinstance(at, float) else at
    bad = raw[:-9] if at is None else raw[:k] + bytes(range(256)) * 4 + raw[k + 1024 :]
    p = tmp_path / "bad.json.gz"
    p.write_bytes(bad)
    with pytest.raises(traceload.TraceError) as e:
        load_trace(p)
    msg = str(e.value)
    assert msg.startswith(f"{p}: cannot read, truncated or corrupt (") and "\n" not in msg
