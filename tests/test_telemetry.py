"""The telemetry record: statistics against numpy, outliers and hitches, the JSON Lines
format, subscribers; and end to end, the shutdown table, the JSONL and the trace agreeing to
the nanosecond."""

from __future__ import annotations

import errno
import json
import logging

import numpy as np
import pytest

from engine.telemetry import WINDOW, FrameTimings, Scope, Session, Telemetry
from engine.telemetry.stats import HITCH_HOLD_S
from engine.tools.export.jsonl import JsonLinesWriter
from engine.tools.export.trace import frame_of as _frame
from tests.helpers import run_sample


def _feed(tel: Telemetry, gpu_ms: np.ndarray, fps: float = 60.0):
    """Publish one record per row of ``gpu_ms`` (frames x passes A, B, ...), NaN = no scope."""
    names = [chr(65 + j) for j in range(gpu_ms.shape[1])]
    for f, row in enumerate(gpu_ms):
        t, scopes = 0, []
        for name, ms in zip(names, row, strict=True):
            if np.isfinite(ms):
                d = round(ms * 1e6)
                scopes.append(Scope(name, t, t + d))
                t += d
        tel.publish(
            f,
            t_ns=round(f * 1e9 / fps),
            wall_ms=1000 / fps if f else None,
            timings=FrameTimings(f, gpu=scopes, cpu=None),
        )
    return names


def test_stats_match_numpy_over_the_window():
    rng = np.random.default_rng(7)
    ms = rng.gamma(4.0, 0.25, size=(150, 3))
    ms[rng.random(ms.shape) < 0.1] = np.nan  # passes that did not run some frames
    tel = Telemetry(history=200)
    names = _feed(tel, ms)
    for rec in list(tel.history)[::7]:
        f = rec.frame_index
        win = ms[max(0, f + 1 - WINDOW) : f + 1]
        for j, name in enumerate(names):
            col = np.round(win[:, j] * 1e6) / 1e6  # what the scopes carried, in whole ns
            ok = col[np.isfinite(col)]
            st = rec.stat(name)
            assert st.samples == len(ok)
            assert st.mean_ms == pytest.approx(ok.mean())
            assert st.median_ms == pytest.approx(np.median(ok))
            assert st.max_ms == pytest.approx(ok.max())
            mad = 1.4826 * np.median(np.abs(ok - np.median(ok)))
            assert st.mad_ms == pytest.approx(mad)
            last = col[-1]
            if np.isfinite(last):
                assert st.last_ms == pytest.approx(last)
                assert st.delta_ms == pytest.approx(last - np.median(ok))
                assert st.outlier == (
                    abs(last - np.median(ok)) > 3 * max(mad, 1e-3) and len(ok) >= 10
                )
            else:
                assert st.last_ms is None and st.delta_ms is None and not st.outlier


def test_a_spike_is_flagged_once_and_its_hitch_held_two_seconds():
    ms = np.full((400, 2), 1.0) + np.random.default_rng(1).normal(0, 0.01, (400, 2))
    ms[200, 1] = 9.0  # one slow frame of pass B
    tel = Telemetry(history=400)
    _feed(tel, ms)
    recs = list(tel.history)
    flags = [r.frame_index for r in recs if r.stat("B").outlier]
    assert 200 in flags and len([f for f in flags if f != 200]) <= 3  # steady noise: rare
    held = [r.frame_index for r in recs if r.stat("B").hitch_ms == pytest.approx(9.0)]
    hold_frames = round(HITCH_HOLD_S * 60)
    assert held == list(range(200, 200 + hold_frames + 1))
    assert recs[100].stat("A").hitch_ms is None


def test_jsonl_sends_names_once_and_exact_nanoseconds(tmp_path):
    path = tmp_path / "t.jsonl"
    tel = Telemetry({"adapter": "test"})
    writer = JsonLinesWriter(str(path), tel.session)
    tel.subscribe(writer)
    ms = np.array([[1.5, 0.25], [1.25, np.nan], [1.0, 0.5]])
    _feed(tel, ms)
    writer.close()
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    assert lines[0] == {"type": "session", **Session(adapter="test").to_json()}
    assert Session.from_json(lines[0]) == Session(adapter="test", facts={"type": "session"})
    assert [line["type"] for line in lines].count("names") == 2  # A, B; later Frame's wall row
    names = [n for line in lines if line["type"] == "names" for n in line["names"]]
    assert len(names) == len(set(names))
    frames = [line for line in lines if line["type"] == "frame"]
    assert [f["seq"] for f in frames] == [0, 1, 2]
    for fr, rec in zip(frames, tel.history, strict=True):
        got = [(names[i], e - b) for i, b, e in fr["gpu"]]
        assert got == [(s.name, s.end_ns - s.begin_ns) for s in rec.gpu]
    assert len(json.dumps(frames[-1])) < 4096


def test_jsonl_on_a_full_disk_is_one_warning_not_a_traceback(caplog):
    # /dev/full: every write that reaches the device fails with ENOSPC, like a full disk
    # (or a removed drive) during a run; it used to raise from publish and again from close
    tel = Telemetry({"adapter": "test"})
    writer = JsonLinesWriter("/dev/full", tel.session)
    tel.subscribe(writer)
    with caplog.at_level(logging.WARNING, logger="lantern"):
        _feed(tel, np.full((200, 8), 1.5))  # ~200 KB: past any write buffer
        writer.close()
    assert writer.error is not None and writer.error.errno == errno.ENOSPC
    assert tel.subscriber_errors == 0 and not any(r.exc_info for r in caplog.records)
    assert len(caplog.messages) == 1
    assert caplog.messages[0].startswith("telemetry: cannot write /dev/full (No space left")
    assert caplog.messages[0].endswith("the file is incomplete")


def test_a_subscriber_that_raises_is_removed_and_the_rest_still_run(caplog):
    tel, seen = Telemetry(), []

    def broken(record):
        raise RuntimeError("view bug")

    tel.subscribe(broken)
    unsubscribe = tel.subscribe(seen.append)
    _feed(tel, np.ones((3, 1)))
    assert [r.seq for r in seen] == [0, 1, 2] and tel.subscriber_errors == 1
    unsubscribe()
    _feed(tel, np.ones((1, 1)))
    assert len(seen) == 3 and not tel.has_subscribers


def test_report_jsonl_and_trace_agree_to_the_nanosecond(tmp_path):
    trace, jsonl, png = tmp_path / "t.json", tmp_path / "t.jsonl", tmp_path / "x.png"
    r = run_sample(
        "s13", "--gpu-profile", "--profile", "--capture", str(png), "--frames", "12",
        "--size", "96x54", "--instances", "800", "--trace", str(trace), "--telemetry",
        str(jsonl),
    )  # fmt: skip
    assert r.returncode == 0, r.stderr
    head = next(line for line in r.stdout.splitlines() if line.startswith("GPU frame "))
    frame = int(head.split()[2].rstrip(":"))
    table = {}
    for line in r.stdout.splitlines()[r.stdout.splitlines().index(head) + 1 :]:
        if not line.startswith("  "):
            break
        name, ms = line.split()[1], float(line.split()[2])
        table[name] = ms
    lines = [json.loads(line) for line in jsonl.read_text().splitlines()]
    names = [n for line in lines if line["type"] == "names" for n in line["names"]]
    frames = [line for line in lines if line["type"] == "frame"]
    timed = [f for f in frames if f["gpu"]]
    last = timed[-1]  # (a frame that found every query pool in flight has no GPU scopes)
    assert last["frame"] == frame  # the report's frame is the JSONL's last timed record
    assert all(f["gpu"] is None for f in frames[frames.index(last) + 1 :])
    ns = {names[i]: e - b for i, b, e in last["gpu"]}
    assert table == {n: round(d / 1e6, 3) for n, d in ns.items()}
    events = json.loads(trace.read_text())["traceEvents"]
    spans = {
        e["name"]: round(e["dur"] * 1e3)
        for e in events
        if e["ph"] == "X" and e["pid"] == 2 and _frame(e) == frame and e["name"] != "Frame"
    }
    assert spans == ns


def test_a_pass_scope_nests_its_draws():
    """One result type: a GPU pass's draws are its scope's children (in recording order,
    times as measured inside the pass, None when only replayed), each draw's measurements
    its child's ``detail``; their stats rows and the wire format read them from there."""
    from engine.profiling.draws import Draw, PassDraws
    from engine.telemetry import NameTable, encode_record

    a = Draw("a", 110, 150, None, 0, False)
    b = Draw("b", None, None, 20.0, 4, False)
    main = PassDraws("Main", "render", (a, b), baseline_ns=5.0, overhead_ns=7.0)
    gpu = [Scope("Cull", 0, 100), Scope("Main", 100, 200)]
    rec = Telemetry().publish(0, t_ns=0, wall_ms=None, timings=FrameTimings(0, gpu, draws=(main,)))
    cull, m = rec.gpu
    assert cull.children == () and cull.detail is None
    assert [(c.name, c.begin_ns, c.end_ns) for c in m.children] == [
        ("a", 110, 150),
        ("b", None, None),
    ]
    assert m.children[0].detail is a and m.children[1].detail is b and m.detail is main
    assert rec.draw_passes() == (main,)
    assert rec.stat(("Main", "a"), "draw").last_ms == pytest.approx(40 / 1e6)
    assert rec.stat(("Main", "b"), "draw").last_ms == pytest.approx(20 / 1e6)  # the replayed cost
    table = NameTable()
    _, msg = encode_record(rec, table)
    ((pid, kind, baseline, draws, overhead, unreliable),) = msg["draws"]
    assert (kind, baseline, overhead, unreliable) == ("render", 5.0, 7.0, None)
    assert [(d[0], d[1], d[2], d[3]) for d in draws] == [
        (table.ids["a"], 110, 150, None),
        (table.ids["b"], None, None, 20.0),
    ]
    none = Telemetry().publish(0, t_ns=0, wall_ms=None, timings=FrameTimings(0, gpu))
    assert none.draw_passes() == () and encode_record(none, NameTable())[1]["draws"] is None
