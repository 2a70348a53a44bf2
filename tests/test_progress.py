"""Progress: one \\r-updated line on a TTY, erased at the end; nothing when not a TTY."""

from __future__ import annotations

import io
import os
import pty
import subprocess
import sys

from engine.progress import Progress
from tests.helpers import ROOT


class FakeTty(io.StringIO):
    def isatty(self) -> bool:
        return True


class Clock:
    def __init__(self):
        self.t = 100.0

    def __call__(self) -> float:
        return self.t


def test_on_a_tty_one_line_rewritten_in_place_then_erased():
    out, clock = FakeTty(), Clock()
    with Progress(200, stream=out, clock=clock, delay=1.0, interval=0.25) as p:
        p.update(10)  # t = 0: before the delay, nothing
        assert out.getvalue() == ""
        clock.t += 2.0
        p.update(50)  # 2 s for 50 frames: 150 more take 6 s
        first = "capture: frame 50/200 (25%), 2.0 s, about 6.0 s left"
        assert out.getvalue() == "\r" + first
        clock.t += 0.1
        p.update(60)  # within the interval: no write
        assert out.getvalue() == "\r" + first
        clock.t += 2.0
        p.update(200)
        last = "capture: frame 200/200 (100%), 4.1 s"
        assert out.getvalue() == "\r" + first + "\r" + last.ljust(len(first))
    assert out.getvalue().endswith("\r" + " " * len(last) + "\r")
    assert "\n" not in out.getvalue()


def test_not_a_tty_writes_nothing():
    out, clock = io.StringIO(), Clock()
    with Progress(10, stream=out, clock=clock, delay=0.0) as p:
        for i in range(10):
            clock.t += 1.0
            p.update(i + 1)
    assert out.getvalue() == ""


SCRIPT = (
    "from engine.progress import Progress\n"
    "with Progress(3, delay=0, interval=0) as p:\n"
    "    for i in range(3): p.update(i + 1)\n"
    "print('report')\n"
)


def _run(stdout) -> None:
    subprocess.run([sys.executable, "-c", SCRIPT], cwd=ROOT, stdout=stdout, timeout=60, check=True)


def test_real_terminal_and_real_pipe():
    master, slave = pty.openpty()
    try:
        _run(slave)
        os.close(slave)
        tty = b""
        while True:
            try:
                chunk = os.read(master, 4096)
            except OSError:  # EIO: the child closed its end
                break
            if not chunk:
                break
            tty += chunk
    finally:
        os.close(master)
    assert b"\rcapture: frame 3/3 (100%)" in tty and tty.rstrip().endswith(b"\rreport")
    piped = subprocess.run(
        [sys.executable, "-c", SCRIPT], cwd=ROOT, capture_output=True, timeout=60, check=True
    )
    assert piped.stdout == b"report\n"
