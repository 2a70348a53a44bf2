"""Lantern's --trace gains counter tracks (the eight cull counters, per-pass pipeline
statistics) and flows from each CPU span to the GPU span of the same pass and frame; the
inspector reads them back as counter lanes and flow arrows. Checked against the Trace Event
Format's rules for C, s and f events."""

from __future__ import annotations

from engine.culling.counters import COUNTER_NAMES, CullCounts
from engine.profiling.draws import Draw, PassDraws
from engine.telemetry import FrameTimings, Scope, Telemetry
from engine.tools.export.trace import FLOW_NAME, build_trace, frame_of


def _draw(label, vertex, fragment):
    return Draw(label, None, None, None, 0, False, vertex=vertex, clipper=vertex // 3,
                fragment=fragment, compute=0)  # fmt: skip


def telemetry(frames=3):
    tel = Telemetry()
    for f in range(frames):
        t0 = 1_000_000 + f * 10_000_000
        cpu = [Scope("Main", t0 + 1000, t0 + 4000), Scope("HiZ", t0 + 4000, t0 + 5000)]
        gpu = [Scope("Main", t0 + 100_000, t0 + 300_000), Scope("HiZ", t0 + 300_000, t0 + 350_000)]
        # frame 0 and 1 carry the same reading (of frame 0), as a late readback does
        cull = CullCounts(max(f - 1, 0), tuple(10 * max(f - 1, 0) + k for k in range(8)))
        tel.publish(f, t_ns=t0, wall_ms=10.0, timings=FrameTimings(f, gpu=gpu, cpu=cpu),
                    readbacks={"cull": cull})  # fmt: skip
    return tel


def test_cull_counters_are_counter_events_at_the_frame_they_describe():
    ev = build_trace(telemetry(), calibration=(0, 1))["traceEvents"]
    c = [e for e in ev if e["ph"] == "C"]
    assert len(COUNTER_NAMES) == 8 and [e["name"] for e in c] == ["Cull"] * 2  # once each
    # TEF: a C event's args are the series, numbers only; ts in us
    assert all(set(e["args"]) == set(COUNTER_NAMES) for e in c)
    assert all(isinstance(v, int) for e in c for v in e["args"].values())
    # frame 2's reading describes frame 1: at frame 1's start (t0 = the first CPU span)
    t0 = 1_000_000 + 1000
    assert c[1]["ts"] == (1_000_000 + 10_000_000 - t0) / 1e3
    assert c[1]["args"]["tested"] == 10 and c[1]["args"]["shadow_casters"] == 17


def test_each_cpu_span_flows_to_its_gpu_span():
    ev = build_trace(telemetry(), calibration=(0, 1))["traceEvents"]
    xs = [e for e in ev if e["ph"] == "X"]
    flows = [e for e in ev if e["ph"] in "sf"]
    assert len(flows) == 2 * 3 * 3  # Frame, Main, HiZ per frame, each an s and an f
    by_id = {}
    for e in flows:
        by_id.setdefault(e["id"], []).append(e)
    for pair in by_id.values():
        s, f = pair
        # TEF: s then f with the same cat, name and id; f binds to its enclosing slice
        assert (s["ph"], f["ph"], f["bp"]) == ("s", "f", "e")
        assert s["cat"] == f["cat"] == "flow" and s["name"] == f["name"] == FLOW_NAME
        src = [x for x in xs if (x["pid"], x["tid"]) == (s["pid"], s["tid"])
               and x["ts"] <= s["ts"] < x["ts"] + x["dur"]]  # fmt: skip
        dst = [x for x in xs if (x["pid"], x["tid"]) == (f["pid"], f["tid"])
               and x["ts"] <= f["ts"] < x["ts"] + x["dur"]]  # fmt: skip
        assert src and dst and src[0]["pid"] == 1 and dst[0]["pid"] == 2
        assert src[0]["name"] == dst[0]["name"] and frame_of(src[0]) == frame_of(dst[0])


def test_without_gpu_there_are_no_flows():
    ev = build_trace(telemetry(), calibration=None)["traceEvents"]
    assert not [e for e in ev if e["ph"] in "sf"] and [e for e in ev if e["ph"] == "C"]


def test_pipeline_statistics_are_a_counter_track_per_pass():
    tel = Telemetry()
    draws = (PassDraws("Main", "render", (_draw("a", 30, 1000), _draw("b", 6, 24))),)
    timings = FrameTimings(0, gpu=[Scope("Main", 0, 10)], cpu=[Scope("Main", 0, 5)], draws=draws)
    tel.publish(0, t_ns=0, wall_ms=None, timings=timings)
    c = [e for e in build_trace(tel, calibration=(0, 1))["traceEvents"] if e["ph"] == "C"]
    args = {"vertex": 36, "clipper": 12, "fragment": 1024, "compute": 0}  # sums of the draws
    assert c == [
        {"name": "Main pipeline statistics", "ph": "C", "pid": 1, "tid": 0, "ts": 0.0, "args": args}
    ]
