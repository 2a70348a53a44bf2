"""The flame chart's time ruler: tick spacing, positions and labels.

Major ticks are ``step = m * 10^k`` ns apart (``m`` in 1, 2, 5: the smallest step at least
``min_px`` pixels wide and, with labels, wider than the widest label in view plus two
characters, so labels never overlap), with ``minors`` subdivisions (5, 4, 5). Positions are
computed here in float64 (the shader only repeats the spacing from the first tick).

Labels are in the trace's ``displayTimeUnit`` (``ms`` or ``ns``, Trace Event Format) with the
decimals the step needs, or in a larger unit (``us``, ``ms``, ``s``) where the times in view
would need more than 6 integer digits in it (a 2 s trace in ns reads ``"1,200 ms"``, not
``"1,200,000,000 ns"``); the chart's header uses the same unit (``label_unit``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

MIN_TICK_PX = 90.0
UNIT_NS = {"ns": 1.0, "us": 1e3, "ms": 1e6, "s": 1e9}
MAX_INT_DIGITS = 6  # integer digits of a label before the next larger unit is used


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


def ticks(
    start_ns: float, ns_per_px: float, min_px: float = MIN_TICK_PX, *, width: float = 0.0,
    unit: str = "ms", char_px: float = 0.0,
) -> Ticks:  # fmt: skip
    """Ticks for a view starting at ``start_ns`` with ``ns_per_px`` (> 0). With ``char_px``
    (> 0: the labels' character width, px) and the chart ``width`` (px), the step is also
    at least as wide as the widest label of the ticks in view (in ``unit``, as
    ``tick_label`` writes it) plus two characters: labels drawn one character right of
    their tick on a grid of ``char_px`` cells never overlap."""
    want = max(min_px * ns_per_px, 1e-9)
    k = math.floor(math.log10(want))
    m, subs = (1, 2, 5), (5, 4, 5)
    i = next(j for j in range(4) if (m + (10,))[j] * 10.0**k >= want * (1 - 1e-12))
    k, i = (k + 1, 0) if i == 3 else (k, i)
    while True:
        step = m[i] * 10.0**k
        first = math.ceil(start_ns / step) * step
        tk = Ticks(step, first, (first - start_ns) / ns_per_px, step / ns_per_px, subs[i])
        if char_px <= 0 or tk.px >= (_widest(tk, width, unit) + 2) * char_px:
            return tk
        k, i = (k + 1, 0) if i == 2 else (k, i + 1)


def _widest(tk: Ticks, width: float, unit: str) -> int:
    """Characters of the longest label of ``tk``'s majors in ``[0, width)`` (and one tick
    either side: the widest label is at an end, where the magnitude is largest)."""
    ends = (tk.first_ns - tk.step_ns, tk.first_ns + math.ceil(width / tk.px) * tk.step_ns)
    return max(len(tick_label(t, tk.step_ns, unit)) for t in ends)


def label_unit(display_unit: str, t0_ns: float, t1_ns: float) -> str:
    """The unit of the labels for times ``t0_ns .. t1_ns`` in view: ``display_unit``
    (``"ms"``/``"ns"``), or the next larger one of ns, us, ms, s while the larger end would
    need more than ``MAX_INT_DIGITS`` integer digits in it."""
    units = list(UNIT_NS)
    i = units.index(display_unit) if display_unit in UNIT_NS else 2
    big = max(abs(t0_ns), abs(t1_ns))
    while i < len(units) - 1 and big >= 10.0**MAX_INT_DIGITS * UNIT_NS[units[i]]:
        i += 1
    return units[i]


def label_boxes(tk: Ticks, width: float, unit: str, char_px: float) -> list[tuple]:
    """``(x0, x1, text, t_ns)`` of each major's label as the viewer draws it: in the text
    cell one right of the tick's (cells ``char_px`` wide), ``[x0, x1)`` px; labels that
    would pass ``width`` are left out."""
    out = []
    for x, t in tk.majors(width):
        text = tick_label(t, tk.step_ns, unit)
        col = int(x // char_px) + 1
        if col + len(text) <= width // char_px:
            out.append((col * char_px, (col + len(text)) * char_px, text, t))
    return out


def tick_label(t_ns: float, step_ns: float, unit: str = "ms") -> str:
    """``t_ns`` in ``unit`` with as many decimals as ``step_ns`` needs: ``"12.5 ms"``."""
    scale = UNIT_NS.get(unit, 1e6)
    dec = max(0, -math.floor(math.log10(step_ns / scale) + 1e-9))
    v = t_ns / scale
    if abs(v) < 0.5 * 10.0**-dec:
        v = 0.0
    return f"{v:,.{dec}f} {unit}"
