"""An idle s14 window draws nothing until an event, in a real glfw window under Xvfb: the
frames drawn over idle waits are counted (the loop's own waits, no sleeps), a real X wheel
event (xdotool) wakes it and zooms, a command queued from another thread (the portal's way)
wakes it and runs, so does a frame requested from another thread (the shader watcher's way),
and a sample without ``idle`` keeps drawing every frame."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap

import pytest

from tests.helpers import ROOT
from tests.test_window import _env, display  # noqa: F401 - the Xvfb fixture

IDLE_DRIVER = textwrap.dedent(
    """
    import json, subprocess, sys, threading, time
    import glfw
    from engine import app as engine_app
    from samples.s14_flame import FlameViewer

    log = {"frames": 0, "waits": []}

    class Watched(FlameViewer):
        def update(self, ctx):
            log["frames"] += 1
            if log["frames"] == 600:  # it never went idle: end, and fail below
                self.app.window.request_close()
            super().update(ctx)

        def idle(self):
            idle = super().idle()
            if idle:  # the loop waits for events now: note what was drawn so far
                w = log["waits"]
                w.append([log["frames"], time.monotonic(), time.process_time(),
                          self.view.ns_per_px])
                if len(w) == 6:  # a real wheel step (X button 4) over the chart
                    wid = str(glfw.get_x11_window(self.app.window.window))
                    subprocess.Popen(["xdotool", "mousemove", "--window", wid, "300", "150",
                                      "click", "4"])
                if len(w) == 8:  # a console / portal line, queued from another thread
                    submit = lambda: log.update(line=self.app.commands.submit("help"))
                    threading.Thread(target=submit).start()
                if len(w) == 10:  # a frame asked for from another thread (a saved shader)
                    threading.Thread(target=self.app.loop.request_frame).start()
                if len(w) == 12 or len(w) == 30:  # (30: an event never came)
                    log["answered"] = log.pop("line").done.is_set() if "line" in log else None
                    self.app.window.request_close()
            return idle

    status = engine_app.run(Watched, ["--size", "640x360", "--spans", "20000"])
    print("LOG " + json.dumps(log))
    sys.exit(status)
    """
)

BUSY_DRIVER = textwrap.dedent(
    """
    import sys
    from engine import app as engine_app
    from samples.s01_lit_boxes import LitBoxes

    class Counted(LitBoxes):
        frames = 0

        def update(self, ctx):
            Counted.frames += 1
            if Counted.frames == 30:  # no input at all: it drew every frame up to here
                self.app.window.request_close()
            super().update(ctx)

    status = engine_app.run(Counted, ["--size", "160x120"])
    print("FRAMES", Counted.frames)
    sys.exit(status)
    """
)


def _run(driver: str, display: str) -> subprocess.CompletedProcess:  # noqa: F811
    r = subprocess.run([sys.executable, "-c", driver], cwd=ROOT, env=_env(display),
                       capture_output=True, text=True, timeout=180)  # fmt: skip
    assert r.returncode == 0, r.stderr[-3000:]
    assert "Traceback" not in r.stderr
    return r


def test_idle_window_draws_nothing_until_an_event(display):  # noqa: F811
    if shutil.which("xdotool") is None:
        if os.environ.get("CI") or os.environ.get("LANTERN_EXPECT_ADAPTER"):
            pytest.fail("xdotool is required in CI (apt-get install xdotool)")
        pytest.skip("needs xdotool (apt install xdotool)")
    log = json.loads(_run(IDLE_DRIVER, display).stdout.split("LOG ", 1)[1])
    waits = log["waits"]
    assert len(waits) == 12, "an event never woke the window"
    frames, wall, cpu, scale = zip(*waits, strict=True)
    # six waits in a row (about 2.5 s) without a frame drawn, and without spinning
    assert len(set(frames[:6])) == 1 and frames[0] > 0
    assert cpu[5] - cpu[0] < 0.2 * (wall[5] - wall[0])
    # the wheel step: drawn (frames after it) and zoomed in by one step (1.25) around x=300
    assert frames[6] > frames[5]
    assert scale[6] == pytest.approx(scale[5] / 1.25)
    assert frames[6] == frames[7]  # idle again
    # the queued line woke it at once: a frame ran it (commands run between frames)
    assert frames[8] > frames[7] and log["answered"] is True
    assert frames[9] == frames[8]  # idle again
    assert frames[10] > frames[9]  # the requested frame (FrameLoop.request_frame)
    assert len(set(frames[10:])) == 1 and log["frames"] == frames[-1]  # and idle again


def test_a_sample_without_idle_draws_every_frame(display):  # noqa: F811
    out = _run(BUSY_DRIVER, display).stdout
    assert "FRAMES 30" in out
