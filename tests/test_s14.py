"""s14 (flame chart viewer) as a user runs it: bad input is one line and exit 2; a capture of
a real Lantern trace file is written."""

from __future__ import annotations

import numpy as np
import pytest
from PIL import Image

from engine.telemetry import FrameTimings, Scope, Telemetry
from engine.tools.export.trace import build_trace, write_trace_file
from tests.helpers import run_sample


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["missing.json"], "missing.json: cannot read"),
        (["BAD"], "the file ends inside an event"),
        (["--range", "5:2"], "argument --range: expected START_MS:END_MS"),
        (["--cursor", "x"], "argument --cursor: expected X,Y"),
        (["--spans", "0"], "argument --spans"),
        (["--next", "2"], "argument --next: it needs --search TEXT"),
        (["SAME", "--spans", "5"], "argument --spans: it sizes the synthetic trace drawn"),
        (["SAME", "--select", "nope"], "argument --select: no span is named 'nope'"),
        (
            ["SAME", "--range", "10:20"],
            "argument --range: 10:20 ms lies outside the trace (0..0.005 ms since its first span)",
        ),
        (["SAME", "--cursor", "1300,10"], "argument --cursor: 1300,10 is outside the 1280x720"),
        (["SAME", "--trace", "SAME"], "is also given to --trace; give each its own file"),
    ],
)
def test_bad_input_is_one_line_and_status_2(tmp_path, args, needle):
    if args == ["BAD"]:
        bad = tmp_path / "bad.json"
        bad.write_text('{"traceEvents": [{"ph": "X", "ts": 1')
        args = [str(bad)]
    same = tmp_path / "same.json"  # the trace viewed, and a trace written over it
    same.write_text('{"traceEvents": [{"ph": "X", "name": "A", "ts": 0, "dur": 5}]}')
    args = [str(same) if a == "SAME" else a for a in args]
    r = run_sample("s14", *args, "--capture", str(tmp_path / "x.png"), timeout=60)
    assert r.returncode == 2, r.stderr
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and needle in lines[0], r.stderr
    assert "Traceback" not in r.stderr
    assert same.read_text().endswith('"dur": 5}]}')  # never replaced


def test_capture_of_a_lantern_trace(tmp_path):
    tel = Telemetry()
    for f in range(20):
        t0 = 1_000_000 + f * 16_000_000
        cpu = [Scope("Update", t0, t0 + 2_000_000), Scope("Main", t0 + 2_000_000, t0 + 9_000_000)]
        gpu = [Scope("Main", f * 16_000_000, f * 16_000_000 + 5_000_000)]
        tel.publish(f, t_ns=t0, wall_ms=16.0, timings=FrameTimings(f, gpu=gpu, cpu=cpu))
    path = tmp_path / "run.json"
    write_trace_file(str(path), build_trace(tel, calibration=(2_000_000, 100)))
    png = tmp_path / "flame.png"
    r = run_sample("s14", str(path), "--capture", str(png), "--size", "640x360", "--frames",
                   "4", "--select", "Main", "--search", "main")  # fmt: skip
    assert r.returncode == 0, r.stderr
    rgb = np.asarray(Image.open(png).convert("RGB"))
    assert rgb.shape == (360, 640, 3)
    # the side panel (36 columns of 8 px on the right) is its panel colour where empty
    assert tuple(rgb[350, 630]) == (22, 24, 32)
    # --select with an unknown name is one line, status 2
    r = run_sample("s14", str(path), "--capture", str(png), "--select", "Nope", timeout=120)
    assert r.returncode == 2 and "no span is named 'Nope'" in r.stderr
