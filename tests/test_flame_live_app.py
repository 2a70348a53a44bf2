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
    from samples.s01_lit_boxes import LitBoxes

    out = {}

    class Observed(LitBoxes):  # the app's own wiring; the chart's state read at the end
        def close(self):
            app = self.app
            live = app.hud.panels["flame"].live  # the HUD's flame-mode panel
            c = live.columns
            lanes = c.lane[: c.n].tolist()
            out.update(frames=live.frames, cpu=lanes.count(0), gpu=lanes.count(1),
                       names=sorted(live.names), has_gpu=live.has_gpu,
                       offset=app.telemetry.session.gpu_clock_offset_ns)
            super().close()

    status = engine_app.run(Observed, sys.argv[1:])
    print("LOG " + json.dumps(out))
    sys.exit(status)
    """
)


def test_live_flame_in_a_running_sample(tmp_path):
    png = tmp_path / "live.png"
    args = ["--capture", str(png), "--frames", "12", "--size", "320x180", "--gpu-profile",
            "--profile", "--overlay", "flame"]  # fmt: skip
    env = dict(os.environ)
    env.setdefault("XDG_RUNTIME_DIR", "/tmp")
    r = subprocess.run([sys.executable, "-c", DRIVER, *args], cwd=ROOT, env=env,
                       capture_output=True, text=True, timeout=300)  # fmt: skip
    assert r.returncode == 0, r.stderr
    assert "Traceback" not in r.stderr
    log = json.loads(r.stdout.split("LOG ", 1)[1])
    assert log["has_gpu"] and log["frames"] >= 5 and isinstance(log["offset"], int)
    assert log["cpu"] > log["frames"] and log["gpu"] > log["frames"]  # frame span + scopes
    assert {"CPU frame", "GPU frame", "Update", "Main"} <= set(log["names"])
    rgb = np.asarray(Image.open(png).convert("RGB"))
    panel = rgb[130:180, :, :]  # the chart over the lower 40%: dark panel with spans on it
    assert (panel.max(axis=2) > 150).any() and np.median(panel) < 80
