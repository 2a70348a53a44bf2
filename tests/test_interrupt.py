"""SIGTERM (``timeout``, a process manager) ends a run like Ctrl-C: reports printed, trace
written, status 130; the flag handler covers both signals."""

from __future__ import annotations

import json
import os
import pty
import re
import select
import signal
import subprocess
import sys
import time
from pathlib import Path

from engine.interrupt import Interrupt

ROOT = Path(__file__).resolve().parents[1]


def test_sigterm_sets_the_flag_like_sigint():
    for sig in (signal.SIGINT, signal.SIGTERM):
        flag, outside = Interrupt(), []

        def before(signum, frame, outside=outside):  # runs when the flag handler is not in
            outside.append(signum)

        original = signal.signal(sig, before)
        try:
            with flag.catching_sigint():
                signal.raise_signal(sig)
            assert flag.requested and outside == []
            assert signal.getsignal(sig) is before  # restored
        finally:
            signal.signal(sig, original)


def _read_until(fd: int, pattern: re.Pattern, timeout: float) -> str:
    """Read the pty until ``pattern`` matches what came so far; return it."""
    out, deadline = b"", time.monotonic() + timeout
    while not pattern.search(out.decode(errors="replace")):
        left = deadline - time.monotonic()
        assert left > 0, f"no {pattern.pattern!r} in {out[-400:]!r}"
        if select.select([fd], [], [], left)[0]:
            out += os.read(fd, 65536)
    return out.decode(errors="replace")


def test_sigterm_during_a_capture_prints_the_reports_and_writes_the_trace(tmp_path):
    """A real capture run on a terminal (its progress line says frames are done), then
    SIGTERM: the CPU timeline is printed and the trace holds the frames rendered."""
    png, trace = tmp_path / "never.png", tmp_path / "t.json"
    master, slave = pty.openpty()
    p = subprocess.Popen(
        [sys.executable, "-m", "samples.s01", "--capture", str(png), "--frames", "100000",
         "--size", "96x64", "--trace", str(trace)],
        cwd=ROOT, env=dict(os.environ, XDG_RUNTIME_DIR=os.environ.get("XDG_RUNTIME_DIR", "/tmp")),
        stdin=subprocess.DEVNULL, stdout=slave, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    os.close(slave)
    try:
        _read_until(master, re.compile(r"capture: frame ([1-9]\d{1,}),?\d*/"), 120)  # >= 10
        p.send_signal(signal.SIGTERM)
        err = p.communicate(timeout=60)[1]
        out = b""
        while select.select([master], [], [], 0)[0]:
            try:
                chunk = os.read(master, 65536)
            except OSError:  # EIO: the child closed the terminal
                break
            if not chunk:
                break
            out += chunk
    finally:
        p.kill() if p.poll() is None else None
        os.close(master)
    text = out.decode(errors="replace")
    assert p.returncode == 130, err
    assert "Traceback" not in err
    assert re.search(r"interrupted after \d+ frame\(s\): .*never\.png not written", text), text
    assert not png.exists()
    assert re.search(r"CPU frame \d+: ", text), text  # the shutdown timeline
    assert f"wrote {trace}" in text
    events = json.loads(trace.read_text())["traceEvents"]
    assert sum(e.get("name") == "Frame" for e in events) >= 5


def test_a_run_ended_before_any_frame_finished_says_so_for_each_clock():
    from engine.telemetry import Telemetry
    from engine.tools.export.report import shutdown_report

    prof = {"gpu": True, "gpu_available": True, "cpu": True, "capacity": 64}
    lines = shutdown_report(Telemetry({"profiling": prof})).splitlines()
    assert lines == [
        "GPU timings n/a: no frame's timestamps came back before shutdown.",
        "CPU timings n/a: no frame finished before shutdown.",
    ]
