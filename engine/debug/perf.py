"""PerfOverlay: the per-pass CPU / GPU timing table of the HUD.

Data contract (the profiler is any object with these attributes):

* ``profiler.history``: a sequence (deque) of ``engine.profiling.timings.FrameTimings`` in
  frame order; ``.gpu`` / ``.cpu`` are lists of ``Scope`` (nanoseconds) or ``None``;
* ``profiler.gpu_available``: whether GPU timestamps can ever arrive.

``TimingHistory`` copies new frames into numpy rings (milliseconds, NaN = no reading), so
per-frame work is proportional to the new frames only. The table shows the mean over the last
``window`` frames and is refreshed at ``refresh_hz`` so the digits can be read.
"""

from __future__ import annotations

import math
from collections import deque
from dataclasses import dataclass

import numpy as np

from .overlay import DebugOverlay

CPU_ONLY_SCOPES = ("Update", "Submit", "Present")

PANEL_BG = (12, 14, 22, 210)
HEADER = (120, 200, 255, 255)
TEXT = (235, 235, 235, 255)
DIM = (120, 120, 130, 255)
HOT = (255, 80, 70, 255)
BAR_BG = (50, 54, 66, 255)
BAR = (90, 190, 120, 255)
NAME_W, NUM_W, BAR_W = 16, 8, 14
PANEL_W = 1 + NAME_W + 1 + NUM_W + 1 + NUM_W + 2 + BAR_W + 1  # 52 cells


def fmt_ms(v: float | None, width: int = NUM_W) -> str:
    """Right-aligned milliseconds in exactly ``width`` characters: 3 decimals while they fit,
    else whole ms, else scientific; ``n/a`` when there is no reading (never ``0.000``)."""
    if v is None or not math.isfinite(v):
        return "n/a".rjust(width)
    for spec in (".3f", ".0f"):  # decided on the rounded text: 9999.9996 -> "10000.000"
        text = f"{v:{width}{spec}}"
        if len(text) <= width:
            return text
    return f"{v:{width}.{max(width - 8, 0)}e}"


class TimingHistory:
    """Rings of per-frame milliseconds per scope name, fed from ``profiler.history``.

    Attributes:
        names: scope names in first-seen order (column ``i`` of the rings).
        gpu, cpu: ``float64`` arrays ``(capacity, columns)`` in ms; NaN where no reading.
    """

    def __init__(self, capacity: int = 240, columns: int = 32):
        self.capacity = capacity
        self.names: list[str] = []
        self._col: dict[str, int] = {}
        self.gpu = np.full((capacity, columns), np.nan)
        self.cpu = np.full((capacity, columns), np.nan)
        self.count = 0  # frames ingested so far
        self.last_frame = -1

    def column(self, name: str) -> int:
        i = self._col.get(name)
        if i is None:
            i = self._col[name] = len(self.names)
            self.names.append(name)
            if i >= self.gpu.shape[1]:
                pad = np.full((self.capacity, self.gpu.shape[1]), np.nan)
                self.gpu = np.concatenate([self.gpu, pad], axis=1)
                self.cpu = np.concatenate([self.cpu, pad.copy()], axis=1)
        return i

    def ingest(self, history) -> int:
        """Copy frames newer than the last one seen; return how many were added."""
        new = []
        for ft in reversed(history):
            if ft.frame_index <= self.last_frame:
                break
            new.append(ft)
        for ft in reversed(new):
            self._add(ft)
        return len(new)

    def _add(self, ft) -> None:
        r = self.count % self.capacity
        self.gpu[r] = np.nan
        self.cpu[r] = np.nan
        for ring, scopes in ((self.gpu, ft.gpu), (self.cpu, ft.cpu)):
            for s in scopes or ():
                ring[r, self.column(s.name)] = (s.end_ns - s.begin_ns) / 1e6
        self.count += 1
        self.last_frame = ft.frame_index

    def recent(self, n: int, ring: str = "gpu") -> np.ndarray:
        """The last ``min(n, count)`` frames of ``ring`` ('gpu' or 'cpu'), oldest first,
        shape ``(frames, len(names))``."""
        arr = self.gpu if ring == "gpu" else self.cpu
        n = min(n, self.count, self.capacity)
        idx = (np.arange(self.count - n, self.count) % self.capacity).astype(np.intp)
        return arr[idx, : len(self.names)]

    def means(self, n: int, ring: str = "gpu") -> dict[str, float]:
        """``{name: mean ms}`` over the last ``n`` frames, for names with any reading."""
        arr = self.recent(n, ring)
        ok = np.isfinite(arr)
        count = ok.sum(axis=0)
        total = np.where(ok, arr, 0.0).sum(axis=0)
        return {name: float(total[i] / count[i]) for i, name in enumerate(self.names) if count[i]}

    def mean(self, name: str, n: int, ring: str = "gpu") -> float | None:
        """Mean ms of ``name`` over the last ``n`` frames that have a reading, or None."""
        i = self._col.get(name)
        if i is None or self.count == 0:
            return None
        col = self.recent(n, ring)[:, i]
        col = col[np.isfinite(col)]
        return float(col.mean()) if len(col) else None


@dataclass
class PerfRow:
    name: str
    cpu_ms: float | None
    gpu_ms: float | None


class PerfOverlay:
    """The timing table: per-pass CPU and GPU ms in execution order, smoothed and refreshed
    at a readable rate, with bars of each pass's share, totals, FPS and frame time.

    Args:
        window: frames averaged per figure (default 30, ~0.5 s at 60 FPS).
        refresh_hz: how often the figures change (default 4).
        budget_ms: rows above this are red (default 5 ms).
        dim_ms: rows below this are dimmed (default 0.1 ms).
    """

    def __init__(
        self,
        *,
        window: int = 30,
        refresh_hz: float = 4.0,
        budget_ms: float = 5.0,
        dim_ms: float = 0.1,
    ):
        self.window, self.refresh_s = window, 1.0 / refresh_hz
        self.budget_ms, self.dim_ms = budget_ms, dim_ms
        self.history = TimingHistory()
        self.times: deque[float] = deque(maxlen=window + 1)  # frame start times, seconds
        self.rows: list[PerfRow] = []
        self.totals = PerfRow("Total", None, None)
        self.frame_ms: float | None = None
        self.gpu_available = False
        self.has_profiler = False
        self._last_refresh = -math.inf

    def tick(self, profiler, pass_names: list[str], now: float) -> bool:
        """Ingest new timings and record the frame time at ``now`` (seconds). Returns True
        when the figures were recomputed (at most ``refresh_hz`` times a second)."""
        self.times.append(now)
        self.has_profiler = profiler is not None
        if profiler is not None:
            self.history.ingest(profiler.history)
            self.gpu_available = bool(profiler.gpu_available)
        fresh = self.rows and self.frame_ms is not None
        if fresh and 0 <= now - self._last_refresh < self.refresh_s:
            return False
        self._last_refresh = now
        self.refresh(pass_names)
        return True

    def expire(self) -> None:
        """Make the next ``tick`` refresh whatever the rate limit says (a capture's last
        frame shows the newest figures, not those of up to 0.25 s before)."""
        self._last_refresh = -math.inf

    def refresh(self, pass_names: list[str]) -> None:
        """Recompute the smoothed figures now."""
        h, n = self.history, self.window
        cpu = h.means(n, "cpu")
        gpu = h.means(n, "gpu") if self.gpu_available else {}
        self.rows = [PerfRow(name, cpu.get(name), gpu.get(name)) for name in pass_names]
        self.rows += [PerfRow(name, cpu[name], None) for name in CPU_ONLY_SCOPES if name in cpu]
        self.totals = PerfRow("Total", _sum(r.cpu_ms for r in self.rows), None)
        self.totals.gpu_ms = _sum(r.gpu_ms for r in self.rows)
        t = self.times
        self.frame_ms = (t[-1] - t[0]) * 1000.0 / (len(t) - 1) if len(t) > 1 else None

    def size(self) -> tuple[int, int]:
        """Panel size in cells ``(cols, rows)``."""
        return PANEL_W, len(self.rows) + 5

    def draw(self, ov: DebugOverlay, col: int, row: int) -> tuple[int, int]:
        """Write the table with its top-left cell at ``(col, row)``; return its size."""
        w, h = self.size()
        ov.fill(col, row, w, h, PANEL_BG)
        x = col + 1
        ov.text(x, row, _row_text("PASS", "CPU ms", "GPU ms") + "  SHARE", HEADER)
        basis = self.totals.gpu_ms or self.totals.cpu_ms or 0.0
        for i, r in enumerate(self.rows):
            y = row + 1 + i
            ov.text(x, y, _row_text(r.name, fmt_ms(r.cpu_ms), fmt_ms(r.gpu_ms)), self._color(r))
            own = r.gpu_ms if self.totals.gpu_ms else r.cpu_ms
            if own is not None and basis > 0 and r.name not in CPU_ONLY_SCOPES:
                ov.bar(x + NAME_W + 2 * NUM_W + 4, y, BAR_W, own / basis, BAR, BAR_BG)
        y = row + 1 + len(self.rows)
        t = self.totals
        ov.text(x, y, _row_text("Total", fmt_ms(t.cpu_ms), fmt_ms(t.gpu_ms)), HEADER)
        fps = f"{1000.0 / self.frame_ms:6.1f}" if self.frame_ms else "   n/a"
        ov.text(x, y + 1, f"Frame {fmt_ms(self.frame_ms)} ms {fps} FPS", TEXT)
        ov.text(x, y + 2, self._note(), DIM)
        return w, h

    def _note(self) -> str:
        if not self.has_profiler:
            return "no timings: run with --gpu-profile"
        if not self.gpu_available:
            return "GPU timing unavailable (n/a)"
        return f"mean of {self.window} frames, >{self.budget_ms:g} ms red"

    def _color(self, r: PerfRow) -> tuple:
        vals = [v for v in (r.cpu_ms, r.gpu_ms) if v is not None]
        if any(v > self.budget_ms for v in vals):
            return HOT
        if not vals or max(vals) < self.dim_ms:
            return DIM
        return TEXT


def _row_text(name: str, cpu: str, gpu: str) -> str:
    return f"{name[:NAME_W]:<{NAME_W}} {cpu:>{NUM_W}} {gpu:>{NUM_W}}"


def _sum(values) -> float | None:
    vals = [v for v in values if v is not None]
    return float(sum(vals)) if vals else None
