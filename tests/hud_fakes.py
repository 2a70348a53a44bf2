"""A deterministic telemetry stream for the HUD tests: fixed pass timings and cull counters."""

from __future__ import annotations

from engine.culling.counters import CullCounts
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
