"""Plain data of one frame's timings, shared by the profiler, the reports and the HUD."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import NamedTuple


class Scope(NamedTuple):
    """One named span. ``begin_ns``/``end_ns`` are nanoseconds on the scope's own clock
    (GPU timestamps for GPU scopes, ``time.perf_counter_ns`` for CPU scopes). A named tuple:
    a few are made per pass per frame, and a frozen dataclass costs 3x more to build."""

    name: str
    begin_ns: int
    end_ns: int

    @property
    def duration_ms(self) -> float:
        return (self.end_ns - self.begin_ns) / 1e6


@dataclass
class FrameTimings:
    """Everything measured for one frame.

    Attributes:
        frame_index: the index of the frame that produced these readings.
        gpu: GPU scopes in declaration order; ``None`` when GPU timing is unavailable
            (no ``timestamp-query``, or GPU profiling off) — shown as ``n/a``, never 0.
        cpu: CPU scopes (pass recording, Update, Submit, Present) in start order; ``None``
            when CPU profiling is off.
        dropped: scopes not recorded because the query pool was full.
        invalid: GPU readings that were zero or ended before they began (left out of ``gpu``).
        draws: per-draw timings and statistics (``engine.profiling.draws.PassDraws`` per
            pass) with ``--gpu-profile draws``, else None.
        transitions: per pass name, the transition billed before it with encoder
            timestamps (ns; part of the pass's GPU scope: ``engine.profiling.gpu``), else None.
    """

    frame_index: int
    gpu: list[Scope] | None = None
    cpu: list[Scope] | None = None
    dropped: int = 0
    invalid: int = 0
    draws: tuple | None = None
    extra: dict = field(default_factory=dict)
    transitions: dict[str, float] | None = None
