"""s14 in a real glfw window under Xvfb, input injected at the window's input queue: wheel
zoom around the cursor, drag pan, click select (the GPU pick), shift-drag range, typed search."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import pytest

from engine.devtools.traces.synthetic import NAMES
from tests.helpers import ROOT
from tests.test_window import _env, display  # noqa: F401 - the Xvfb fixture

DRIVER = textwrap.dedent(
    """
    import json, sys
    import glfw
    from engine import app as engine_app
    from engine.surfaces import WindowSurface
    from samples.s14_flame import FlameViewer

    cur = {"pos": (300.0, 60.0)}
    WindowSurface.cursor_pos = lambda self: cur["pos"]
    log = {}

    class Driven(FlameViewer):
        def idle(self):  # scripted frame by frame (tests/test_s14_idle.py: the idle window)
            return False

        def update(self, ctx):
            n, v, win = ctx.frame_index, self.view, self.app.window
            inp = win.input
            if n == 2:
                log["zoom"] = [v.time_at(300.0), v.ns_per_px]
                inp.scroll += 2.0                       # two wheel steps in, at x = 300
            elif n == 3:
                log["zoom"] += [v.time_at(300.0), v.ns_per_px]
                log["pan"] = [v.start_ns]
                inp.buttons.append((0, True, 0, 300.0, 60.0))   # press ...
            elif n == 4:
                cur["pos"] = (400.0, 60.0)                      # ... drag 100 px right
            elif n == 5:
                inp.buttons.append((0, False, 0, 400.0, 60.0))
                log["pan"] += [v.start_ns, v.ns_per_px]
            elif n == 6:  # hover the middle of a frame span (lane 0, depth 0, under the ruler)
                t = self.table
                mid = v.x_of(t.start_ns + t.dur_ns / 2)
                k = int(next(i for i in range(len(t)) if t.lane[i] == 0 and t.depth[i] == 0
                             and 50 < mid[i] < 600))
                log["expect"] = k
                y = v.origin[1] + int(v.lane_rows()[0]) * v.row_px + v.row_px / 2
                cur["pos"] = (float(mid[k]), float(y))
            elif n == 12:                                       # click: select what is picked
                log["picked"] = self.chart.picked
                x, y = cur["pos"]
                inp.buttons += [(0, True, 0, x, y), (0, False, 0, x + 1.0, y)]
            elif n == 13:
                log["selected"] = [v.selected, v.selected_name, self.stats.count]
                inp.buttons += [(0, True, 1, 100.0, 60.0), (0, False, 1, 200.0, 60.0)]
            elif n == 14:
                log["range"] = [*v.range_ns, v.time_at(100.0), v.time_at(200.0),
                                self.range_stats.spans]
                self.on_key(glfw.KEY_SLASH)
                inp.chars += ["/", "U", "p"]
            elif n == 15:
                self.on_key(glfw.KEY_ENTER)
                inp.chars += ["x"]                              # not typing any more
            elif n == 16:
                log["search"] = [v.search, self.typing, int(self.chart.store.name_flags.sum())]
                win._on_key(win.window, glfw.KEY_ESCAPE, 0, glfw.PRESS, 0)
            super().update(ctx)

    status = engine_app.run(Driven, ["--size", "640x360", "--spans", "20000"])
    print("LOG " + json.dumps(log))
    sys.exit(status)
    """
)


def test_window_interaction(display):  # noqa: F811
    r = subprocess.run([sys.executable, "-c", DRIVER], cwd=ROOT, env=_env(display),
                       capture_output=True, text=True, timeout=180)  # fmt: skip
    assert r.returncode == 0, r.stderr
    assert "Traceback" not in r.stderr
    log = json.loads(r.stdout.split("LOG ", 1)[1])
    t0, s0, t1, s1 = log["zoom"]
    assert t1 == pytest.approx(t0, abs=1e-3) and s1 == pytest.approx(s0 / 1.25**2)
    before, after, s = log["pan"]
    assert after == pytest.approx(before - 100 * s)
    picked = log["picked"]
    assert picked == log["expect"]  # the GPU pick came back through the readback ring
    assert log["selected"][0] == picked and log["selected"][2] > 0
    a, b, ta, tb, spans = log["range"]
    assert (a, b) == pytest.approx((ta, tb)) and spans >= 0
    text, typing, matched = log["search"]
    assert (text, typing) == ("Up", False)
    assert matched == sum("up" in n.lower() for level in NAMES for n in level)  # Update, upload
