"""Traces as real tools write them (engine/devtools/traces/jsonstream.py): the object form's other
members before or after ``traceEvents``, of any size and full of brackets (an ftrace
``systemTraceEvents`` dump, ``metadata``, ``stackFrames``, ``samples``), found by the structural
index, not by guessing from brackets; and bytes that are not UTF-8."""

from __future__ import annotations

import gzip
import json
import random

import numpy as np
import pytest

from engine.devtools.traces import jsonstream, traceload
from engine.devtools.traces.jsonstream import Structure
from engine.devtools.traces.traceload import TraceError, load_trace
from tests.test_trace_fastpath import assert_same, reference, varied_events


def python_scan(text: bytes) -> list[tuple[int, int, int]]:
    """The reference: a byte-by-byte walk of strings, escapes and brackets."""
    out, depth, in_string, escaped = [], 0, False, False
    for i, c in enumerate(text):
        if in_string:
            if escaped:
                escaped = False
            elif c == 0x5C:
                escaped = True
            elif c == 0x22:
                in_string = False
        elif c == 0x22:
            in_string = True
        elif c in b"{}[],:":
            depth += {0x7B: 1, 0x5B: 1, 0x7D: -1, 0x5D: -1}.get(c, 0)
            out.append((i, c, depth))
    return out


def random_json(rng: random.Random, depth: int = 0):
    """Nested values whose strings are thick with quotes, backslash runs and brackets."""
    alphabet = ['"', "\\", "\\\\", "[", "]", "{", "}", ",", ":", "a", " ", "é", "\\\\\\", '\\"']
    kind = rng.random()
    if depth > 4 or kind < 0.3:
        return "".join(rng.choice(alphabet) for _ in range(rng.randrange(0, 12)))
    if kind < 0.45:
        return rng.choice([1, -2.5, True, None])
    if kind < 0.7:
        return [random_json(rng, depth + 1) for _ in range(rng.randrange(0, 5))]
    return {random_json(rng, 5): random_json(rng, depth + 1) for _ in range(rng.randrange(0, 5))}


@pytest.mark.parametrize("seed", range(6))
def test_structure_equals_a_byte_by_byte_walk_whatever_the_blocks(seed):
    rng = random.Random(seed)
    text = json.dumps([random_json(rng) for _ in range(300)], ensure_ascii=seed % 2 == 0)
    data = text.encode()
    assert data.count(b"\\\\") > 50 and data.count(b'\\"') > 50  # escapes are there
    want = python_scan(data)
    s, got, at = Structure(), [], 0
    while at < len(data):  # cut anywhere: inside strings, escapes and backslash runs
        n = rng.choice((1, 2, 3, 7, 64, 1000))
        pos, byte, depth = s.scan(data[at : at + n])
        got += list(zip((pos + at).tolist(), byte.tolist(), depth.tolist(), strict=True))
        at += n
    assert got == want and s.depth == 0 and not s.in_string


def ftrace(lines: int, seed: int) -> str:
    """A text dump as Perfetto's and catapult's ``systemTraceEvents`` hold it: brackets
    everywhere, quotes and backslashes too (escaped when it is written as JSON)."""
    rng = random.Random(seed)
    out = ["# tracer: nop\n#           TASK-PID     CPU#  ||||   TIMESTAMP  FUNCTION\n"]
    for i in range(lines):
        cpu = rng.randrange(8)
        out.append(
            f'  <idle>-0     [{cpu:03d}] d..2 {i * 0.001:.6f}: sched_switch: prev_comm=a"b '
            f"prev_pid=0 ==> next_comm=C:\\dir\\ [120] }},{{ ]]] [[{{\n"
        )
    return "".join(out)


def members(size: int, seed: int) -> dict:
    """Members other than traceEvents, each about ``size`` bytes and bracket-heavy."""
    rng = random.Random(seed)
    n = max(1, size // 60)
    return {
        "systemTraceEvents": ftrace(max(1, size // 110), seed),
        "metadata": {"trace-config": {"included_categories": ["a[0]", "},{"]},
                     "nested": [[[i, {"x": "]"}]] for i in range(n)]},
        "stackFrames": {str(i): {"category": "c", "name": f"f[{i}] }},{{", "parent": str(i - 1)}
                        for i in range(n)},
        "samples": [{"cpu": 0, "tid": 1, "ts": i * 1.5, "sf": str(rng.randrange(n)),
                     "weight": 1} for i in range(n)],
    }  # fmt: skip


def object_text(events: list, before: dict, after: dict) -> str:
    """``{before..., "traceEvents": events, after...}`` as one JSON object."""
    head = json.dumps(before, ensure_ascii=False)[1:-1]
    tail = json.dumps(after, ensure_ascii=False)[1:-1]
    events = json.dumps(events, ensure_ascii=False)
    return "{" + (head + ", " if head else "") + '"traceEvents": ' + events + (
        ", " + tail if tail else "") + "}"  # fmt: skip


@pytest.mark.parametrize("side", ["before", "after", "both"])
@pytest.mark.parametrize("size", ["small", "large"])
def test_members_on_either_side_leave_the_events_as_they_are(tmp_path, monkeypatch, side, size):
    """Large members (over OTHER_MAX, made small here, and over many blocks) are skipped
    unread, small ones kept; the spans, counters, flows, notes and the event offsets are
    those of the events alone; displayTimeUnit is read from whichever side it is on."""
    monkeypatch.setattr(jsonstream, "OTHER_MAX", 64 << 10)
    monkeypatch.setattr(traceload, "STREAM_BLOCK", 4096)
    events = varied_events(1500, seed=11)
    big = members(8 << 10 if size == "small" else 300 << 10, seed=3)
    assert all(len(json.dumps(v)) > (64 << 10) for v in big.values()) == (size == "large")
    before = big if side in ("before", "both") else {}
    after = big if side in ("after", "both") else {}
    (before if side == "after" else after)["displayTimeUnit"] = "ns"
    if side == "both":
        after = {**members(300 << 10, seed=4), "displayTimeUnit": "ns"}
    text = object_text(events, before, after)
    assert text.count("[001]") > 5 and text.count("},{") > 5
    plain, gz = tmp_path / "t.json", tmp_path / "t.json.gz"
    plain.write_text(text)
    gz.write_bytes(gzip.compress(text.encode()))
    want = reference(events, str(plain))
    for path in (plain, gz):
        got = load_trace(path)
        assert_same(got, want)
        assert got.display_unit == "ns"
        for span in range(0, len(got), 97):  # offsets into the file still find each event
            assert traceload.event_at(got, span) == events[int(got.event[span])]


def test_members_are_kept_when_small_and_skipped_unread_when_large(tmp_path, monkeypatch):
    monkeypatch.setattr(jsonstream, "OTHER_MAX", 64 << 10)
    small = {"metadata": {"a": [1, "]"]}, "stackFrames": {"1": {"name": "[x]"}}}
    large = {"systemTraceEvents": ftrace(2000, 1)}
    text = object_text([{"ph": "X", "name": "a", "ts": 0, "dur": 1}], small, large)
    stream = jsonstream.EventStream(open_bytes(tmp_path, text.encode()), 4096)
    assert sum(len(c.events) for c in stream) == 1
    assert stream.info.other == small and stream.info.notes == []


def test_every_block_boundary_reads_the_same(tmp_path):
    """Blocks of 1 to 80 bytes: every byte of a small file (a byte-order mark, members on
    both sides, escapes, brackets in strings) lands on a block boundary; the events and
    members agree."""
    ev = [{"ph": "X", "name": f'n{i} "}},{{" \\', "ts": i, "dur": 1} for i in range(4)]
    before = {"systemTraceEvents": 'a [001] "x" \\ ]}', "n": [1, {"k": "]"}]}
    after = {"metadata": {"a": "},{", "b": [[]]}, "displayTimeUnit": "ns"}
    data = b"\xef\xbb\xbf" + object_text(ev, before, after).encode()  # with a byte-order mark
    for block in range(1, 81):
        with open_bytes(tmp_path, data) as f:
            stream = jsonstream.EventStream(f, block)
            got = [e.as_dict() if isinstance(e, jsonstream.Event) else e
                   for c in stream for e in c.events]  # fmt: skip
        got = [(e["name"], float(e["ts"]), float(e["dur"])) for e in got]
        assert got == [(e["name"], e["ts"], e["dur"]) for e in ev], block
        assert stream.info.notes == [], block
        assert stream.info.other == {**before, **after}, block


def open_bytes(tmp_path, data: bytes):
    (tmp_path / "x.json").write_bytes(data)
    return open(tmp_path / "x.json", "rb")  # noqa: SIM115 (the stream's)


@pytest.mark.parametrize(
    ("before", "what"),
    [
        ('"note": "\\"traceEvents\\": [{\\"ph\\": \\"X\\"}]", ', "in a string"),
        ('"metadata": {"traceEvents": [{"ph": "X", "name": "no", "ts": 0, "dur": 1}]}, ',
         "in a nested object"),
        ('"systemTraceEvents": "x\\\\\\\\\\" \\"traceEvents\\": [", ', "after escapes"),
    ],
)  # fmt: skip
def test_a_traceEvents_key_elsewhere_is_not_the_array(tmp_path, before, what):
    ev = {"ph": "X", "name": "yes", "ts": 0, "dur": 1}
    p = tmp_path / "t.json"
    p.write_text("{" + before + '"traceEvents": [' + json.dumps(ev) + "]}")
    json.loads(p.read_text())  # valid JSON
    t = load_trace(p)
    assert t.names == ["yes"] and t.notes == [], what


@pytest.mark.parametrize(
    ("tail", "note"),
    [
        (', "metadata": {"x": [1', "the file ends inside the members after traceEvents"),
        (', "metadata": nope}', "the members after traceEvents are not valid JSON (near byte"),
        ("} trailing", "the members after traceEvents are not valid JSON (near byte"),
        (
            ', "traceEvents": [{"ph": "X", "name": "other", "ts": 0, "dur": 1}]}',
            "a second traceEvents member follows the first: this reads the first",
        ),
    ],
)
def test_what_follows_the_array_is_a_note_never_lost_events(tmp_path, tail, note):
    ev = [{"ph": "X", "name": f"s{i}", "ts": i, "dur": 1} for i in range(50)]
    p = tmp_path / "t.json"
    p.write_text('{"traceEvents": ' + json.dumps(ev) + tail)
    t = load_trace(p)
    assert len(t) == 50 and len(t.notes) == 1 and t.notes[0].startswith(note), t.notes
    if "near byte" in note:
        at = int(t.notes[0].split("near byte ")[1].split(")")[0])
        assert p.read_bytes()[at:].startswith((b"nope", b"trailing", b'"metadata": nope'))


# -- bytes that are not UTF-8 --------------------------------------------------------------
def test_bytes_not_utf8_read_as_replacement_characters_with_one_note(tmp_path, monkeypatch):
    """Latin-1 names in events (chunks cut around them) and in a member: drawn with U+FFFD,
    one note with the count and the byte of the first (found here independently)."""
    monkeypatch.setattr(traceload, "STREAM_BLOCK", 333)
    ev = [{"ph": "X", "name": "café" if i % 40 == 7 else f"s{i}", "pid": 1, "tid": 1,
           "ts": i, "dur": 1} for i in range(400)]  # fmt: skip
    data = object_text(ev, {"metadata": {"owner": "José"}}, {"displayTimeUnit": "ns"})
    raw = data.encode("latin-1")
    p = tmp_path / "t.json"
    p.write_bytes(raw)
    t = load_trace(p)
    assert len(t) == 400 and t.display_unit == "ns"
    names = [t.names[i] for i in t.name_id]
    assert names.count("caf\ufffd") == 10 and "café" not in names
    n = raw.count(b"\xe9")  # every é: 10 names and the owner
    first = raw.index(b"\xe9")
    assert t.notes == [f"read {n} byte sequence(s) that are not UTF-8 as U+FFFD (the first at "
                       f"byte {first}; was the trace written in another encoding?)"]  # fmt: skip
    span = names.index("caf\ufffd")
    assert traceload.event_at(t, span)["name"] == "caf\ufffd"


def test_a_byte_order_mark_is_read_and_utf16_refused(tmp_path):
    ev = [{"ph": "X", "name": "a", "ts": 0, "dur": 1}]
    text = json.dumps({"traceEvents": ev})
    p = tmp_path / "t.json"
    p.write_bytes(b"\xef\xbb\xbf" + text.encode())
    t = load_trace(p)
    assert t.names == ["a"] and t.notes == [] and traceload.event_at(t, 0) == ev[0]
    p.write_bytes(b"\xef\xbb\xbf" + json.dumps(ev).encode())  # a bare array
    assert load_trace(p).names == ["a"]
    cases = [
        (text.encode("utf-16"), "UTF-16 text (a byte-order mark at byte 0); save it as UTF-8"),
        (text.encode("utf-32"), "UTF-32 text (a byte-order mark at byte 0); save it as UTF-8"),
        (text.encode("utf-16-le"), "a NUL byte at byte 1 (UTF-16 without a byte-order mark"),
    ]
    for data, message in cases:
        p.write_bytes(data)
        with pytest.raises(TraceError) as e:
            load_trace(p)
        assert str(e.value).startswith(f"{p}: {message}")


def test_a_file_cut_inside_a_character_keeps_its_whole_events(tmp_path):
    ev = [{"ph": "X", "name": f"é{i}", "ts": i, "dur": 1} for i in range(30)]
    raw = json.dumps(ev, ensure_ascii=False).encode()
    cut = raw[: raw.rindex("é".encode()) + 1]  # the last event's name ends inside the é
    p = tmp_path / "t.json"
    p.write_bytes(cut)
    t = load_trace(p)
    assert len(t) == 29
    k = cut.rindex(b"}, ") + 3  # where the partial event begins
    assert t.notes == [
        f"the file ends inside an event ({len(cut) - k} bytes dropped at byte {k}: truncated)",
        "the event array is not closed (a writer that stopped early): read up to its last "
        "whole event",
    ]


def test_telemetry_lines_not_utf8_and_a_byte_order_mark(tmp_path):
    lines = [{"type": "session", "gpu_clock_offset_ns": 0},
             {"type": "names", "names": ["Posté", "Main"]},
             {"type": "frame", "cpu": [[0, 10, 20], [1, 20, 30]]}]  # fmt: skip
    text = "\n".join(json.dumps(x, ensure_ascii=False) for x in lines) + "\n"
    p = tmp_path / "t.jsonl"
    p.write_bytes(b"\xef\xbb\xbf" + text.encode())
    assert load_trace(p).names[:2] == ["Posté", "Main"]
    raw = b"\xef\xbb\xbf" + text.encode("latin-1")
    p.write_bytes(raw)
    t = load_trace(p)
    assert t.names[:2] == ["Post\ufffd", "Main"] and len(t) == 3  # the frame span and two
    first = raw.index(b"\xe9")
    assert t.notes == [f"read 1 line(s) with bytes that are not UTF-8 as U+FFFD (the first at "
                       f"byte {first})"]  # fmt: skip


def test_nul_in_a_trace_is_refused_at_its_byte(tmp_path):
    raw = b'[{"ph": "X", "name": "a\x00", "ts": 0, "dur": 1}]'
    p = tmp_path / "t.json"
    p.write_bytes(raw)
    with pytest.raises(TraceError) as e:
        load_trace(p)
    nul = raw.index(b"\x00")
    assert str(e.value).startswith(f"{p}: a NUL byte at byte {nul} (")


def test_structure_of_one_large_block_of_escapes():
    data = ("[" + ",".join([json.dumps(["a\\" * 3 + '"]', {"k": "[}"}])] * 4000) + "]").encode()
    at, byte, depth = Structure().scan(data)
    got = list(zip(at.tolist(), byte.tolist(), depth.tolist(), strict=True))
    assert got == python_scan(data)
    assert np.count_nonzero((depth == 1) & (byte == ord(","))) == 3999
