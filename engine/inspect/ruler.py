"""The flame chart's time ruler: tick spacing, positions and labels.

Major ticks are ``step = m * 10^k`` ns apart (``m`` in 1, 2, 5: the smallest step at least
``min_px`` pixels wide), with ``minors`` subdivisions (5, 4, 5). Positions are computed here
in float64 (the shader only repeats the spacing from the first tick), labels in the trace's
``displayTimeUnit`` (``ms`` or ``ns``, Trace Event Format) with the decimals the step needs.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

MIN_TICK_PX = 90.0
UNIT_NS = {"ns": 1.0, "us": 1e3, "ms": 1e6, "s": 1e9}


@dataclass(frozen=True)
class Ticks:
    """``step_ns`` between majors; ``first_ns`` the first major at or right of the left
    edge; ``x0`` its chart x (px); ``px`` the spacing in px; ``minors`` per major."""

    step_ns: float
    first_ns: float
    x0: float
    px: float
    minors: int

    def majors(self, width: float) -> list[tuple[float, float]]:
        """``(x px, t ns)`` of each major tick in ``[0, width)``."""
        n = max(0, math.ceil((width - self.x0) / self.px))
        return [(self.x0 + i * self.px, self.first_ns + i * self.step_ns) for i in range(n)]


def ticks(start_ns: float, ns_per_px: float, min_px: float = MIN_TICK_PX) -> Ticks:
    """Ticks for a view starting at ``start_ns`` with ``ns_per_px`` (> 0)."""
    want = max(min_px * ns_per_px, 1e-9)
    k = math.floor(math.log10(want))
    step, minors = next(
        (m * 10.0**k, sub)
        for m, sub in ((1, 5), (2, 4), (5, 5), (10, 5))
        if m * 10.0**k >= want * (1 - 1e-12)
    )
    first = math.ceil(start_ns / step) * step
    return Ticks(step, first, (first - start_ns) / ns_per_px, step / ns_per_px, minors)


def tick_label(t_ns: float, step_ns: float, unit: str = "ms") -> str:
    """``t_ns`` in ``unit`` with as many decimals as ``step_ns`` needs: ``"12.5 ms"``."""
    scale = UNIT_NS.get(unit, 1e6)
    dec = max(0, -math.floor(math.log10(step_ns / scale) + 1e-9))
    v = t_ns / scale
    if abs(v) < 0.5 * 10.0**-dec:
        v = 0.0
    return f"{v:,.{dec}f} {unit}"
