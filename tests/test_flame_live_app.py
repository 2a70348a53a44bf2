"""The live flame chart inside a real sample run: the frame loop's telemetry records (CPU and
GPU scopes) reach the chart, GPU scopes shifted by the measured clock offset."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import numpy as np
from PIL import Image

from tests.helpers import ROOT

DRIVER = textwrap.dedent(
    """
    import json, sys
    from engine import app as engine_app
    from engine.inspect.live import install
    from samples.s01_lit_boxes import LitBoxes

    out = {}

    class Driven(LitBoxes):
        def update(self, ctx):
            super().update(ctx)
            app = self.app
            if ctx.frame_index == 0:  # what the lead's start-up will do (see the report)
                cal = app.profiler.gpu.calibrate()
                app.telemetry.session["gpu_clock_offset_ns"] = cal[0]
                self.live = install(app)
                self.live.set_mode("flame")
                out["offset"] = cal[0]
            self.live.update(ctx)

        def close(self):
            c = self.live.columns
            lanes = c.lane[: c.n].tolist()
            out.update(frames=self.live.frames, cpu=lanes.count(0), gpu=lanes.count(1),
                       names=sorted(self.live.names), has_gpu=self.live.has_gpu)
            super().close()

    status = engine_app.run(Driven, sys.argv[1:])
    print("LOG " + json.dumps(out))
    sys.exit(status)
    """
)


def test_live_flame_in_a_running_sample(tmp_path):
    png = tmp_path / "live.png"
    args = ["--capture", str(png), "--frames", "12", "--size", "320x180", "--gpu-profile",
            "--profile"]  # fmt: skip
    env = dict(os.environ)
    env.setdefault("XDG_RUNTIME_DIR", "/tmp")
    r = subprocess.run([sys.executable, "-c", DRIVER, *args], cwd=ROOT, env=env,
                       capture_output=True, text=True, timeout=300)  # fmt: skip
    assert r.returncode == 0, r.stderr
    assert "Traceback" not in r.stderr
    log = json.loads(r.stdout.split("LOG ", 1)[1])
    assert log["has_gpu"] and log["frames"] >= 5
    assert log["cpu"] > log["frames"] and log["gpu"] > log["frames"]  # frame span + scopes
    assert {"CPU frame", "GPU frame", "Update", "Main"} <= set(log["names"])
    rgb = np.asarray(Image.open(png).convert("RGB"))
    panel = rgb[130:180, :, :]  # the chart over the lower 40%: dark panel with spans on it
    assert (panel.max(axis=2) > 150).any() and np.median(panel) < 80
