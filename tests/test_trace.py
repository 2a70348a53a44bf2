"""Chrome trace: parses, names its tracks, nests spans per track, microseconds, GPU offset;
and the end-to-end run of s02 with every profiling option."""

from __future__ import annotations

import json
from collections import defaultdict

import numpy as np
from PIL import Image

from engine.profiling import FrameProfiler
from engine.profiling.trace import _lanes
from tests.helpers import run_sample
from tests.profiling_support import compute_graph, run_frame, work_pass


def _assert_nested(events):
    """Per (pid, tid): every pair of X spans is disjoint or one contains the other."""
    tracks = defaultdict(list)
    for e in events:
        if e["ph"] == "X":
            tracks[e["pid"], e["tid"]].append((e["ts"], e["ts"] + e["dur"], e["name"]))
    for spans in tracks.values():
        spans.sort(key=lambda s: (s[0], -s[1]))
        open_ends = []
        for b, e, name in spans:
            while open_ends and open_ends[-1] <= b + 1e-6:
                open_ends.pop()
            assert not open_ends or e <= open_ends[-1] + 1e-6, f"{name} overlaps partially"
            open_ends.append(e)
    return tracks


def test_trace_parses_and_nests(gpu, tmp_path):
    dev = gpu.device
    graph = compute_graph(dev, [work_pass(dev, "Sim", 50, grid=64), work_pass(dev, "Post", 10)])
    prof = FrameProfiler(gpu, gpu=True, cpu=True, history=5)
    graph.profiler = prof
    for f in range(8):
        run_frame(gpu, graph, prof, f)
    prof.drain()
    path = tmp_path / "t.json"
    prof.write_trace(str(path))
    trace = json.loads(path.read_text())
    events = trace["traceEvents"]
    meta = {(e["pid"], e["name"]): e["args"] for e in events if e["ph"] == "M"}
    assert meta[1, "process_name"]["name"] == "Lantern CPU"
    assert "GPU" in meta[2, "process_name"]["name"]
    assert meta[1, "thread_name"]["name"] == "main thread"
    assert meta[2, "thread_name"]["name"] == "queue"
    other = trace["otherData"]
    assert other["gpu_clock_offset_estimated"] is True
    assert "estimated" in other["gpu_clock_offset_method"]
    tracks = _assert_nested(events)
    assert (1, 1) in tracks and (2, 1) in tracks
    xs = [e for e in events if e["ph"] == "X"]
    assert {e["args"]["frame"] for e in xs} == {3, 4, 5, 6, 7}  # bounded history: last 5
    # microseconds: each span's dur equals the scope's ns duration / 1000
    by_key = {(e["pid"], e["args"]["frame"], e["name"]): e for e in xs}
    for t in prof.history:
        for pid, scopes in ((1, t.cpu), (2, t.gpu)):
            for s in scopes:
                e = by_key[pid, t.frame_index, s.name]
                assert abs(e["dur"] - (s.end_ns - s.begin_ns) / 1e3) < 0.002
        # GPU work of a frame starts after that frame's Submit began (within the estimate's
        # uncertainty): the offset put both clocks on one axis.
        submit = by_key[1, t.frame_index, "Submit"]["ts"]
        gpu_begin = by_key[2, t.frame_index, "Sim"]["ts"]
        assert gpu_begin >= submit - other["gpu_clock_offset_uncertainty_ns"] / 1e3


def test_partially_overlapping_spans_get_their_own_lane():
    spans = [(0, 10, "a", {}), (2, 4, "b", {}), (8, 12, "c", {}), (12, 13, "d", {})]
    lanes = {s[2]: lane for lane, s in _lanes(spans)}
    assert lanes == {"a": 0, "b": 0, "c": 1, "d": 0}


def test_s02_end_to_end_tables_trace_and_picture(tmp_path):
    trace, png = tmp_path / "t.json", tmp_path / "x.png"
    r = run_sample(
        "s02",
        "--gpu-profile",
        "--profile",
        "--trace",
        str(trace),
        "--capture",
        str(png),
        "--frames",
        "30",
        "--size",
        "160x90",
        "--grid",
        "64",
    )
    assert r.returncode == 0, r.stderr
    out = r.stdout
    gpu_head = next(line for line in out.splitlines() if line.startswith("GPU frame "))
    assert "across 2 pass(es)" in gpu_head and "in declaration order." in gpu_head
    cpu_head = next(line for line in out.splitlines() if line.startswith("CPU frame "))
    assert "across 4 scope(s)" in cpu_head
    rows = [line.split()[1] for line in out.splitlines() if line.startswith("   ")]
    assert sorted(rows) == sorted(["Work", "Show", "Work", "Show", "Update", "Submit"])
    names = {e["name"] for e in json.loads(trace.read_text())["traceEvents"] if e["ph"] == "X"}
    assert {"Work", "Show", "Update", "Submit"} <= names
    rgb = np.asarray(Image.open(png).convert("RGB"))
    assert rgb.shape == (90, 160, 3)
    assert len(np.unique(rgb.reshape(-1, 3), axis=0)) > 8  # the computed grid, not a clear


def test_s02_uses_no_profiling_code():
    """No import, name or attribute of the sample's code mentions the profiler."""
    import ast
    from pathlib import Path

    src = (Path(__file__).resolve().parents[1] / "samples" / "s02_custom_pass.py").read_text()
    words = []
    for node in ast.walk(ast.parse(src)):
        if isinstance(node, ast.Name):
            words.append(node.id)
        elif isinstance(node, ast.Attribute):
            words.append(node.attr)
        elif isinstance(node, ast.ImportFrom):
            words.append(node.module or "")
    assert "record_work" in words  # the walk sees the sample's code
    assert not [w for w in words if "profil" in w.lower() or "timestamp" in w.lower()]


def test_s02_pipelines_are_created(device):
    from samples.s02_custom_pass import create_work_pipelines

    compute, render = create_work_pipelines(device, "rgba8unorm-srgb")
    assert compute.get_bind_group_layout(0) is not None
    assert render.get_bind_group_layout(0) is not None
