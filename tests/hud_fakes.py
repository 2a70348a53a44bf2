"""A deterministic telemetry stream for the HUD tests: fixed pass timings and cull counters;
and a grid that uses every draw class (``busy_overlay``)."""

from __future__ import annotations

import numpy as np

from engine.culling.counters import CullCounts
from engine.hud.grid import DebugOverlay
from engine.telemetry import FrameTimings, Scope, Telemetry

# (pass name, GPU ms, CPU ms): fixed figures, so a rendered HUD is fixed too
FAKE_PASSES = (
    ("Cull.Reset", 0.004, 0.021),
    ("Shadow", 0.834, 0.112),
    ("Main.Early", 1.777, 0.203),
    ("HiZ", 0.061, 0.034),
    ("Main.Late", 0.250, 0.150),
    ("Post", 6.250, 0.045),
)
FAKE_COUNTS = CullCounts(117, (100000, 41250, 8500, 30125, 20125, 19000, 1125, 36000))
FAKE_CPU_EXTRA = (("Update", 0.5), ("Submit", 0.3), ("Present", 1.2))


def fake_frame(index: int, passes=FAKE_PASSES, *, gpu: bool = True, wobble: bool = True):
    """One FrameTimings: the pass durations, +-10% by frame index when ``wobble``."""
    f = 1.0 + (0.1 * ((index * 7) % 5 - 2) / 2 if wobble else 0.0)
    t, gpu_scopes, cpu_scopes = 1_000_000, [], []
    for name, g, c in passes:
        gpu_scopes.append(Scope(name, t, t + round(g * f * 1e6)))
        cpu_scopes.append(Scope(name, t, t + round(c * 1e6)))
        t += round(g * f * 1e6) + 1000
    for name, c in FAKE_CPU_EXTRA:
        cpu_scopes.append(Scope(name, t, t + round(c * 1e6)))
    return FrameTimings(index, gpu=gpu_scopes if gpu else None, cpu=cpu_scopes)


class FakeStream:
    """A real ``Telemetry`` fed with ``fake_frame`` records at 60 FPS of simulated wall time
    (``advance``), its session saying GPU timing is (or is not) available."""

    def __init__(self, *, gpu_available: bool = True, passes=FAKE_PASSES, cull=FAKE_COUNTS):
        self.telemetry = Telemetry(
            {
                "profiling": {
                    "gpu": True,
                    "cpu": True,
                    "gpu_available": gpu_available,
                    "gpu_unavailable_reason": None if gpu_available else "no timestamp-query",
                    "capacity": 64,
                    "untimed": [],
                }
            }
        )
        self.gpu_available = gpu_available
        self.passes, self.cull = passes, cull
        self.next = 0

    def advance(self, n: int = 1) -> None:
        for _ in range(n):
            f = self.next
            self.telemetry.publish(
                f,
                t_ns=round(f * 1e9 / 60),
                wall_ms=1000 / 60 if f else None,
                timings=fake_frame(f, self.passes, gpu=self.gpu_available),
                readbacks={"cull": self.cull},
            )
            self.next += 1


def busy_overlay() -> DebugOverlay:
    """Every draw class: opaque panel text, glyphs of two scales, every primitive kind, and
    translucent cells (a panel, a glyph, a pie slice, a line)."""
    ov = DebugOverlay(40, 24)
    ov.fill(0, 0, 30, 20, (12, 14, 22, 255))
    for i, ch in enumerate("Lantern HUD 0123456789 .:-#"):
        ov.text(1 + i, 1, ch, (200, 30 + 8 * i, 255 - 7 * i, 255 - 9 * i))
    ov.text(1, 3, "Ab", (255, 255, 255), scale=2)
    ov.bar(1, 6, 20, 0.37, (90, 190, 120), (50, 54, 66))
    ov.pie(8, 12, 3.0, (0.2, 0.5, 0.3), ((230, 90, 80), (240, 190, 60, 128), (90, 200, 110)))
    ov.line(14, 9, 28, 16, (255, 255, 0, 200))
    chart = np.arange(24, dtype=np.float32).reshape(12, 2) % 5
    ov.stacked_chart(16, 10, 12, 5, chart, ((86, 180, 233), (230, 159, 0)), 8.0)
    ov.fill(31, 2, 8, 6, (40, 40, 90, 120))  # translucent panel
    ov.text(31, 3, "thru", (255, 255, 255, 160))
    ov.pie(35, 16, 3.0, (0.4, 0.6), ((255, 0, 0, 90), (0, 0, 255, 255)))  # over the frame
    return ov
