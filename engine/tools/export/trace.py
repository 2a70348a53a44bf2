"""Chrome Trace Event JSON of the telemetry records (opens in Perfetto, chrome://tracing and
speedscope).

Format: "Trace Event Format" (Google, docs.google.com/document/d/1CvAClvFfyA5R-PhYUmn5OOQ
tYMH4h6I0nSsKchNAySU): complete events ``ph: "X"`` with ``ts``/``dur`` in microseconds,
metadata events ``ph: "M"`` naming processes and threads. The CPU is process 1, the GPU
process 2.

Third-party viewers rebuild each track's stack from ``ts`` and ``ts + dur`` in IEEE double
arithmetic, so:

* every span's times come from integer nanoseconds (3 decimals of a microsecond: the
  pass durations are exact to the nanosecond, as in the shutdown table and the JSONL, once
  rounded to 3 decimals), and a ``dur`` whose double sum ``ts + dur`` would land past the
  true end, or on the begin of a sibling that starts where it ends, is lowered by one ulp;
* a span's end as the viewer computes it is monotonic in its nanosecond end, so a parent
  never ends before its last child after rounding;
* each frame is a ``Frame`` span on a "frames" track of its process (frames of a busy GPU
  touch or overlap each other; scopes stay on their own track); the frame index of every span
  is in its category list (``"cpu,frame=12"``, shown by Perfetto) and neither in the name nor
  in ``args``: speedscope keys a frame by name plus ``args``, so either would split its
  aggregation by name;
* per-draw spans (``--gpu-profile draws``, timed inside the pass) sit on the GPU track
  under their pass span;
* spans on one track nest; overlapping spans that would not are put on an extra track of
  the same process ("... (overlap)") instead of being moved or clipped.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Iterable

import orjson

from engine.telemetry import Scope
from engine.telemetry.record import walk

log = logging.getLogger("lantern")

CPU_PID, GPU_PID = 1, 2
FRAME_SPAN = "Frame"


def _lanes(spans: list[tuple[int, int, str, dict]]) -> list[tuple[int, tuple]]:
    """Assign each (begin, end, name, frame) span to the first lane where it nests."""
    stacks: list[list[int]] = []  # per lane: end times of the open spans
    out = []
    for span in sorted(spans, key=lambda s: (s[0], -s[1])):
        b, e = span[0], span[1]
        for lane, stack in enumerate(stacks):
            while stack and stack[-1] <= b:
                stack.pop()
            if not stack or e <= stack[-1]:
                stack.append(e)
                out.append((lane, span))
                break
        else:
            stacks.append([e])
            out.append((len(stacks) - 1, span))
    return out


def _spans(frames: Iterable[tuple[int, tuple[Scope, ...]]], shift: int):
    """``(frame spans, scope spans)`` as (begin, end, name, args), shifted by ``shift`` ns."""
    frame_spans, spans = [], []
    for f, scopes in frames:
        if not scopes:
            continue
        b = min(s.begin_ns for s in scopes) + shift
        e = max(s.end_ns for s in scopes) + shift
        frame_spans.append((b, e, FRAME_SPAN, f))
        spans += [(s.begin_ns + shift, s.end_ns + shift, s.name, f) for s in scopes]
    return frame_spans, spans


def draw_scopes(record) -> tuple[Scope, ...]:
    """The GPU passes' nested scopes timed in place (their draws, ``--gpu-profile draws``),
    found by walking the record's scopes, as GPU spans under their own names: inside their
    pass's span on the GPU track, they nest under it as Perfetto draws any span inside
    another on one track (split replays have no place on the frame's timeline and are left
    out)."""
    return tuple(
        Scope(s.name, s.begin_ns, s.end_ns)
        for path, s in walk(record.gpu)
        if len(path) > 1 and s.begin_ns is not None
    )


def ts_dur(begin_ns: int, end_ns: int) -> tuple[float, float]:
    """``(ts, dur)`` in microseconds (3 decimals) for a span of integer nanoseconds relative
    to the trace origin, such that ``ts + dur`` in double arithmetic equals the end as the
    reader parses it when a double allows, and never exceeds it."""
    ts, end = round(begin_ns / 1e3, 3), round(end_ns / 1e3, 3)
    dur = round((end_ns - begin_ns) / 1e3, 3)
    for _ in range(4):
        total = ts + dur
        if total == end:
            break
        dur = math.nextafter(dur, math.inf if total < end else 0.0)
    while ts + dur > end:
        dur = math.nextafter(dur, 0.0)
    return ts, dur


def build_trace(telemetry, *, calibration: tuple[int, int] | None) -> dict:
    """The trace of ``telemetry.history`` as a JSON-ready dict. GPU scopes are shifted by the
    estimated clock offset ``calibration[0]`` (ns, from ``GpuProfiler.calibrate``) onto the
    CPU clock; with ``None`` they are left out (no calibration possible)."""
    history = list(telemetry.history)
    cpu = [(r.frame_index, r.cpu) for r in history if r.cpu]
    gpu = [(r.frame_index, r.gpu + draw_scopes(r)) for r in history if r.gpu] if calibration else []
    tracks = []  # (pid, first tid, thread name, spans)
    for pid, thread, frames, shift in (
        (CPU_PID, "main thread", cpu, 0),
        (GPU_PID, "queue", gpu, calibration[0] if calibration else 0),
    ):
        if frames:
            frame_spans, spans = _spans(frames, shift)
            tracks += [(pid, 1, "frames", frame_spans), (pid, 2, thread, spans)]
    starts = [s[0] for *_, spans in tracks for s in spans]
    t0 = min(starts) if starts else 0
    events = [
        _meta("process_name", CPU_PID, 0, "Lantern CPU"),
        _meta("process_sort_index", CPU_PID, 0, 1, key="sort_index"),
    ]
    if gpu:
        events += [
            _meta("process_name", GPU_PID, 0, "Lantern GPU (clock offset estimated)"),
            _meta("process_sort_index", GPU_PID, 0, 2, key="sort_index"),
        ]
    for pid, tid0, thread, spans in tracks:
        used = set()
        open_spans: dict[int, list[tuple[int, dict]]] = {}  # lane -> stack of (end_ns, event)
        kind = "gpu" if pid == GPU_PID else "cpu"
        for lane, (b, e, name, frame) in _lanes(spans):
            used.add(lane)
            ts, dur = ts_dur(b - t0, e - t0)
            stack = open_spans.setdefault(lane, [])
            while stack and stack[-1][0] <= b:
                end, prev = stack.pop()
                while end == b and prev["ts"] + prev["dur"] >= ts:  # touching siblings
                    prev["dur"] = math.nextafter(prev["dur"], 0.0)
            event = {
                "name": name,
                "cat": f"{kind},frame={frame}",
                "ph": "X",
                "pid": pid,
                "tid": tid0 + lane,
                "ts": ts,
                "dur": dur,
            }
            events.append(event)
            stack.append((e, event))
        for lane in sorted(used):
            name = thread if lane == 0 else f"{thread} (overlap {lane})"
            events.append(_meta("thread_name", pid, tid0 + lane, name))
    events += counter_events(history, t0) + flow_events(events)
    return {
        "traceEvents": events,
        "displayTimeUnit": "ms",
        "otherData": {**_metadata(telemetry, calibration), "time_origin_perf_counter_ns": t0},
    }


STAT_FIELDS = ("vertex", "clipper", "fragment", "compute")  # PassDraws.total names
FLOW_NAME = "CPU to GPU"


def counter_events(history, t0: int) -> list[dict]:
    """Counter events (``ph: "C"``, one track per name, one series per ``args`` key) on the
    CPU process: one track per counter block (``Cull``: the culler's eight, ``Lights``, ...,
    named by their WGSL; once per reading, at the start of the frame it describes) and
    ``<pass> pipeline statistics`` (the pass's sums of ``STAT_FIELDS`` over its draws,
    ``--gpu-profile draws`` with the feature)."""

    start = {r.frame_index: r.t_ns for r in history}
    out, seen = [], set()
    for r in history:
        for c in r.counters:  # a reading rides on every record until the next one comes back
            if (c.block, c.frame_index) in seen:
                continue
            seen.add((c.block, c.frame_index))
            at = start.get(c.frame_index, r.t_ns)
            out.append(_counter(c.block.capitalize(), at - t0, c.as_dict()))
        for p in r.draw_passes():
            stats = {f: p.total(f) for f in STAT_FIELDS}
            stats = {k: int(v) for k, v in stats.items() if v is not None}
            if stats:
                out.append(_counter(f"{p.name} pipeline statistics", r.t_ns - t0, stats))
    return out


def _counter(name: str, at_ns: int, args: dict) -> dict:
    return {"name": name, "ph": "C", "pid": CPU_PID, "tid": 0, "ts": round(at_ns / 1e3, 3),
            "args": args}  # fmt: skip


def flow_events(events: list[dict]) -> list[dict]:
    """Flow events (``s`` -> ``f`` with ``bp: "e"``: each end binds to the slice enclosing
    it) from each CPU span to the GPU span of the same name and frame: a pass's recording to
    its GPU execution, and CPU ``Frame`` N to GPU ``Frame`` N. Both ends sit at their span's
    ``ts`` (enclosed by it, since children start at or after it)."""
    firsts: dict[tuple, dict] = {}
    for e in events:
        if e.get("ph") == "X":
            firsts.setdefault((e["pid"], frame_of(e), e["name"]), e)
    out = []
    for (pid, frame, name), g in firsts.items():
        c = firsts.get((CPU_PID, frame, name)) if pid == GPU_PID else None
        if c is None:
            continue
        fid = len(out) // 2 + 1
        for ph, e in (("s", c), ("f", g)):
            flow = {"name": FLOW_NAME, "cat": "flow", "ph": ph, "id": fid, "pid": e["pid"],
                    "tid": e["tid"], "ts": e["ts"]}  # fmt: skip
            if ph == "f":
                flow["bp"] = "e"
            out.append(flow)
    return out


def _metadata(telemetry, calibration) -> dict:
    s = telemetry.session
    prof = s.profiling
    meta = {
        "producer": "Lantern engine.profiling",
        "adapter": s.adapter,
        "frames": len(telemetry.history),
    }
    if calibration is not None:
        meta.update(
            gpu_clock_offset_ns=calibration[0],
            gpu_clock_offset_uncertainty_ns=calibration[1],
            gpu_clock_offset_estimated=True,
            gpu_clock_offset_method=(
                "estimated: best of 5 calibrations on an idle queue; an empty compute "
                "pass's beginning timestamp is placed at the moment queue.submit "
                "returned (true time lies between the submit call and the readback, "
                "uncertainty = that window)"
            ),
        )
    elif prof is not None and prof.gpu:
        meta["gpu"] = f"n/a: {prof.gpu_unavailable_reason or 'no calibration'}"
    else:
        meta["gpu"] = "n/a: GPU profiling is off (run with --gpu-profile)"
    return meta


def frame_of(event: dict) -> int:
    """The frame index of a span event of ours (from its ``"kind,frame=N"`` category)."""
    return int(event["cat"].rsplit("frame=", 1)[1])


def _meta(what: str, pid: int, tid: int, value, key: str = "name") -> dict:
    return {"name": what, "ph": "M", "pid": pid, "tid": tid, "args": {key: value}}


def write_trace_file(path: str, trace: dict) -> None:
    """Write ``trace`` as JSON to ``path``. Raises OSError when it cannot be written."""
    with open(path, "wb") as f:
        f.write(orjson.dumps(trace))


class TraceWriter:
    """The ``--trace PATH`` tool: at close (shutdown, after the frame loop drained) writes
    the telemetry history as a Chrome trace, GPU scopes placed by the session's clock offset
    (measured once when GPU timing started). A write that fails is one error line and exit
    status 1 (``ctx.status``)."""

    name = "trace-writer"

    def install(self, ctx) -> None:
        self.ctx = ctx

    def close(self) -> None:
        ctx = self.ctx
        path = ctx.option("trace")
        if not path or ctx.telemetry.session.profiling is None:
            return
        s = ctx.telemetry.session
        cal = None
        if s.gpu_clock_offset_ns is not None:
            cal = (s.gpu_clock_offset_ns, s.gpu_clock_uncertainty_ns or 0)
        try:
            write_trace_file(path, build_trace(ctx.telemetry, calibration=cal))
        except OSError as e:
            log.error("cannot write %s: %s", path, e.strerror or e)
            ctx.status = 1
            return
        print(f"wrote {path}")
