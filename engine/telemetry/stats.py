"""Rolling statistics of every scope: mean, median, max, the delta against the rolling
median with its MAD, and held hitches, over a window of frames (one numpy ring)."""

from __future__ import annotations

import numpy as np

from engine.telemetry.record import STAT_FIELDS, _opt  # noqa: F401 - STAT_FIELDS documents the columns

WINDOW = 60  # frames behind mean, median, max and the rolling median / MAD of the delta
OUTLIER_MADS = 3.0  # |delta| beyond this many MADs is highlighted
MAD_FLOOR_MS = 1e-3  # a perfectly steady pass still needs a 3 us change to be flagged
HITCH_HOLD_S = 2.0  # a hitch marker holds a frame's max this long
HITCH_RATIO = 1.25  # a hitch is an outlier at least this many times the rolling median


class StatsSnapshot:
    """The stats window as it stood after one frame. The statistics are computed on first
    use (``result``) and cached: publishing a record costs a copy of the window, and a view
    that reads every 15th record pays for 1 in 15."""

    __slots__ = ("_keys", "_window", "_newest", "_hitch", "_result")

    def __init__(self, keys: tuple, window: np.ndarray, newest: int, hitch: np.ndarray | None):
        self._keys, self._window, self._newest, self._hitch = keys, window, newest, hitch
        self._result = None

    def result(self) -> tuple[tuple, np.ndarray]:
        """``(keys, values)``: ``values`` float64 ``(rows, len(STAT_FIELDS))``."""
        if self._result is None:
            self._result = self._compute()
        return self._result

    def _compute(self):
        window, rows = self._window, np.arange(len(self._keys))
        last = window[:, self._newest]
        s = np.sort(window, axis=1)  # NaN sorts last; the order of frames does not matter
        n = np.count_nonzero(s == s, axis=1)
        median = _median(s, n, rows)
        top = s[rows, np.maximum(n - 1, 0)]
        mean = np.nansum(s, axis=1) / np.maximum(n, 1)
        mad = _median(np.sort(np.abs(window - median[:, None]), axis=1), n, rows) * 1.4826
        delta = last - median
        with np.errstate(invalid="ignore"):
            outlier = (np.abs(delta) > OUTLIER_MADS * np.fmax(mad, MAD_FLOOR_MS)) & (n >= 10)
        hitch = np.full(len(rows), np.nan) if self._hitch is None else self._hitch
        out = np.stack([last, mean, median, top, delta, mad, outlier, hitch, n], 1)
        keep = n > 0
        if keep.all():
            return self._keys, out
        return tuple(k for k, ok in zip(self._keys, keep, strict=True) if ok), out[keep]


class StatsWindow:
    """Rolling per-(clock, name) readings in one numpy ring (one row per key, one column per
    frame slot).

    Per frame ``add`` writes the readings, copies the window into a ``StatsSnapshot`` (whose
    mean / median / max / delta / MAD are computed only if a view reads them) and holds
    hitches: a reading above the baseline (median + 3 MADs, and ``HITCH_RATIO`` x the
    median) refreshed every ``BASELINE_EVERY`` frames (two sorts) rather than every frame.
    About five numpy calls per frame when nothing spikes.

    Outliers use the MAD scaled to a standard deviation (``1.4826 * MAD``, the consistent
    estimator for normal noise), so "3 MADs" flags about 0.3% of steady frames, not 5%.
    """

    BASELINE_EVERY = 15

    def __init__(self, capacity: int = WINDOW, rows: int = 32):
        self.capacity = capacity
        self.keys: list[tuple[str, str]] = []  # (clock, name) of each row of ``ring``
        self._row: dict[tuple[str, str], int] = {}
        self.ring = np.full((rows, capacity), np.nan)
        self.count = 0
        self._hitch = np.full(rows, np.nan)  # held value per key, ms
        self._hitch_until = np.full(rows, -np.inf)  # seconds
        self._held_until = -np.inf  # the latest of _hitch_until: skip the work when past
        self._upper = np.full(rows, np.inf)  # hitch threshold, ms
        self._keys_tuple: tuple = ()
        self._rows_of: dict[tuple, list[int]] = {}  # names of a frame -> rows (same each frame)

    def reset(self) -> None:
        self.ring[:] = np.nan
        self.count = 0
        self._hitch[:] = np.nan
        self._hitch_until[:] = -np.inf
        self._held_until = -np.inf
        self._upper[:] = np.inf

    def row(self, clock: str, name: str) -> int:
        key = (clock, name)
        i = self._row.get(key)
        if i is None:
            i = self._row[key] = len(self.keys)
            self.keys.append(key)
            if i >= self.ring.shape[0]:  # grow every per-key array together
                n = self.ring.shape[0]
                self.ring = np.concatenate([self.ring, np.full((n, self.capacity), np.nan)])
                self._hitch = np.concatenate([self._hitch, np.full(n, np.nan)])
                self._hitch_until = np.concatenate([self._hitch_until, np.full(n, -np.inf)])
                self._upper = np.concatenate([self._upper, np.full(n, np.inf)])
        return i

    def rows_for(self, keys: tuple[tuple[str, str], ...]) -> list[int]:
        """Rows of ``keys`` (cached: a frame usually has the same scopes as the last)."""
        rows = self._rows_of.get(keys)
        if rows is None:
            rows = self._rows_of[keys] = [self.row(c, n) for c, n in keys]
        return rows

    def add(self, keys: tuple, values: list[float], now_s: float) -> StatsSnapshot:
        """Add one frame's readings (``values[i]`` ms for ``keys[i]`` = ``(clock, name)``)
        at wall time ``now_s`` (seconds)."""
        rows = self.rows_for(keys)
        k, slot = len(self.keys), self.count % self.capacity
        ring = self.ring
        ring[:, slot] = np.nan
        ring[rows, slot] = values
        self.count += 1
        n = min(self.count, self.capacity)
        window = ring[:k, :n].copy()  # the frames' order does not matter, the newest: slot
        if self.count % self.BASELINE_EVERY == 0:
            self._baseline(window)
        held = self._hold_hitches(window[:, slot], now_s)
        if len(self._keys_tuple) != k:
            self._keys_tuple = tuple(self.keys)
        return StatsSnapshot(self._keys_tuple, window, slot, held)

    def _baseline(self, window: np.ndarray) -> None:
        k, rows = window.shape[0], np.arange(window.shape[0])
        s = np.sort(window, axis=1)
        n = np.count_nonzero(s == s, axis=1)
        median = _median(s, n, rows)
        mad = _median(np.sort(np.abs(window - median[:, None]), axis=1), n, rows) * 1.4826
        upper = np.fmax(median + OUTLIER_MADS * np.fmax(mad, MAD_FLOOR_MS), HITCH_RATIO * median)
        self._upper[:k] = np.where((n >= 10) & np.isfinite(upper), upper, np.inf)

    def _hold_hitches(self, last: np.ndarray, now_s: float) -> np.ndarray | None:
        """Update the held hitches with this frame; the held values (NaN = none), or None
        when nothing is held."""
        k = len(self.keys)
        spikes = last > self._upper[:k]  # (a NaN compares False, silently)
        if spikes.any():
            hitch, until = self._hitch[:k], self._hitch_until[:k]
            take = spikes & ((now_s > until) | ~(last <= hitch))
            hitch[take] = last[take]
            until[take] = now_s + HITCH_HOLD_S
            self._held_until = max(self._held_until, now_s + HITCH_HOLD_S)
        if now_s > self._held_until:
            return None
        return np.where(now_s <= self._hitch_until[:k], self._hitch[:k], np.nan)


def _median(s: np.ndarray, n: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """Row medians of ``s`` (each row sorted, its ``n`` readings first, NaN after); NaN for
    a row with none. Cheaper than ``np.nanmedian``, which works row by row."""
    lo, hi = np.maximum(n - 1, 0) // 2, np.minimum(n // 2, s.shape[1] - 1)
    return 0.5 * (s[rows, lo] + s[rows, hi])
