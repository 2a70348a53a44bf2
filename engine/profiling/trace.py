"""Chrome Trace Event JSON (opens in Perfetto and chrome://tracing).

Format: https://docs.google.com/document/d/1CvAClvFfyA5R-PhYUmn5OOQtYMH4h6I0nSsKchNAySU
("Trace Event Format"): complete events ``ph: "X"`` with ``ts``/``dur`` in microseconds,
metadata events ``ph: "M"`` naming processes and threads. The CPU is process 1, the GPU
process 2. Spans on one track (thread) must nest; overlapping spans that would not are put
on an extra track of the same process ("... (overlap)") instead of being moved or clipped.
"""

from __future__ import annotations

import json
from collections.abc import Iterable

from .timings import FrameTimings, Scope

CPU_PID, GPU_PID = 1, 2


def _lanes(spans: list[tuple[int, int, str, dict]]) -> list[tuple[int, tuple]]:
    """Assign each (begin, end, name, args) span to the first lane where it nests."""
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


def _frame_spans(frames: Iterable[tuple[int, list[Scope]]], label: str, shift: int):
    spans = []
    for f, scopes in frames:
        if not scopes:
            continue
        b = min(s.begin_ns for s in scopes) + shift
        e = max(s.end_ns for s in scopes) + shift
        spans.append((b, e, f"{label} frame {f}", {"frame": f}))
        spans += [(s.begin_ns + shift, s.end_ns + shift, s.name, {"frame": f}) for s in scopes]
    return spans


def build_trace(
    history: Iterable[FrameTimings], *, gpu_offset_ns: int | None, metadata: dict
) -> dict:
    """The trace as a JSON-ready dict. GPU scopes are shifted by ``gpu_offset_ns`` onto the
    CPU clock; with ``None`` they are left out (no calibration possible)."""
    history = list(history)
    cpu = [(t.frame_index, t.cpu) for t in history if t.cpu]
    gpu = [(t.frame_index, t.gpu) for t in history if t.gpu] if gpu_offset_ns is not None else []
    tracks = [(CPU_PID, "main thread", _frame_spans(cpu, "CPU", 0))]
    if gpu:
        tracks.append((GPU_PID, "queue", _frame_spans(gpu, "GPU", gpu_offset_ns)))
    starts = [s[0] for _, _, spans in tracks for s in spans]
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
    for pid, thread, spans in tracks:
        used = set()
        for lane, (b, e, name, args) in _lanes(spans):
            used.add(lane)
            events.append(
                {
                    "name": name,
                    "cat": "gpu" if pid == GPU_PID else "cpu",
                    "ph": "X",
                    "pid": pid,
                    "tid": lane + 1,
                    "ts": round((b - t0) / 1e3, 3),
                    "dur": round((e - b) / 1e3, 3),
                    "args": args,
                }
            )
        for lane in sorted(used):
            name = thread if lane == 0 else f"{thread} (overlap {lane})"
            events.append(_meta("thread_name", pid, lane + 1, name))
    return {
        "traceEvents": events,
        "displayTimeUnit": "ms",
        "otherData": {**metadata, "time_origin_perf_counter_ns": t0},
    }


def _meta(what: str, pid: int, tid: int, value, key: str = "name") -> dict:
    return {"name": what, "ph": "M", "pid": pid, "tid": tid, "args": {key: value}}


def write_trace_file(path: str, trace: dict) -> None:
    """Write ``trace`` as JSON to ``path``. Raises OSError when it cannot be written."""
    with open(path, "w", encoding="utf-8") as f:
        json.dump(trace, f, separators=(",", ":"))
