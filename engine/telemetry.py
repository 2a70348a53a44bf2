"""One telemetry record per finished frame: what every view reads (HUD, shutdown report,
trace, ``--telemetry`` JSON Lines, the portal, the flame inspector).

The frame loop (``engine.loop.FrameLoop``) publishes a ``FrameRecord`` once per finished
frame: as soon as the frame's GPU timings came back when GPU profiling is on (a few frames
late), else right after submit. Records are immutable; the stats inside them are computed
once, at publication, over a window of earlier records (``StatsWindow``). Views subscribe
with ``Telemetry.subscribe`` or read ``Telemetry.history``; none of them reaches into the
profiler or the culler, so they agree to the nanosecond.

Units: ``*_ns`` integers are nanoseconds (GPU scopes on the GPU clock, CPU scopes and
``t_ns`` on ``time.perf_counter_ns``); ``*_ms`` floats are milliseconds.
"""

from __future__ import annotations

import contextlib
import logging
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

import numpy as np
import orjson

from .culling.counters import CullCounts
from .profiling.timings import FrameTimings, Scope

log = logging.getLogger("lantern")

GPU, CPU, WALL = "gpu", "cpu", "wall"
DRAW = "draw"  # per-draw GPU readings in the stats (name "<pass>/<draw>"), --gpu-profile draws
FRAME_SCOPE = "Frame"  # the wall-clock frame time's name in the stats (clock WALL)
WINDOW = 60  # frames behind mean, median, max and the rolling median / MAD of the delta
OUTLIER_MADS = 3.0  # |delta| beyond this many MADs is highlighted
MAD_FLOOR_MS = 1e-3  # a perfectly steady pass still needs a 3 us change to be flagged
HITCH_HOLD_S = 2.0  # a hitch marker holds a frame's max this long
HITCH_RATIO = 1.25  # a hitch is an outlier at least this many times the rolling median


@dataclass(frozen=True, slots=True)
class PassStats:
    """Statistics of one scope name on one clock, over the frames before and including the
    record that carries it.

    Attributes:
        name: pass or scope name (``"Frame"`` for the wall-clock frame time).
        clock: ``"gpu"``, ``"cpu"`` or ``"wall"``.
        last_ms: this frame's reading, or None when this frame has none.
        mean_ms, median_ms, max_ms: over the last ``WINDOW`` frames with a reading.
        delta_ms: ``last_ms`` minus that rolling median (None without a reading).
        mad_ms: median absolute deviation over the window, scaled by 1.4826 to estimate a
            standard deviation.
        outlier: ``|delta_ms| > OUTLIER_MADS * max(mad_ms, MAD_FLOOR_MS)`` with at least 10
            readings — shown highlighted; steady noise inside 3 MADs never flickers.
        hitch_ms: the largest hitch of the last ``HITCH_HOLD_S`` seconds, held (None when
            there was none). A hitch is a reading above both 3 MADs and ``HITCH_RATIO`` times
            the rolling median (refreshed every ``StatsWindow.BASELINE_EVERY`` frames).
        samples: frames with a reading in the window.
    """

    name: str
    clock: str
    last_ms: float | None
    mean_ms: float
    median_ms: float
    max_ms: float
    delta_ms: float | None
    mad_ms: float
    outlier: bool
    hitch_ms: float | None
    samples: int


STAT_FIELDS = (
    "last_ms",
    "mean_ms",
    "median_ms",
    "max_ms",
    "delta_ms",
    "mad_ms",
    "outlier",
    "hitch_ms",
    "samples",
)  # columns of ``FrameRecord.stats_values``


@dataclass(frozen=True, slots=True)
class FrameRecord:
    """Everything known about one finished frame.

    Attributes:
        seq: publication sequence number, 0, 1, 2, ... (a view that sees a gap missed frames).
        frame_index: the frame the readings belong to.
        t_ns: ``perf_counter_ns`` when the frame began (its Update).
        wall_ms: wall-clock time from the previous frame's start to this one's, ms (None for
            the first frame).
        gpu: GPU scopes (pass durations, GPU clock) in declaration order; None when GPU
            timing is off or unavailable, or the frame found every query pool in flight.
        cpu: CPU scopes (pass recording, Update, Submit, Present) in start order; None
            when CPU profiling is off.
        dropped: GPU scopes over the query pool's capacity in this frame.
        invalid: GPU readings left out (zero, or end before begin).
        cull: the newest cull counters at publication (their own ``frame_index``), or None.
        draws: per pass, its draws' GPU times and pipeline statistics
            (``engine.profiling.draws.PassDraws``) with ``--gpu-profile draws``, else None.
        transitions: per pass name, the transition billed before it (ns, part of its GPU
            scope) where encoder timestamps are used (``engine.profiling.gpu``), else None.
        snapshot: the stats window after this frame (``StatsSnapshot``; per-draw readings
            are rows of clock ``"draw"`` named ``"<pass>/<draw>"``), from which
            ``stats_keys`` (``(clock, name)`` per row) and ``stats_values`` (``float64
            (rows, len(STAT_FIELDS))``, NaN = none; keys without a reading in the window left
            out) are computed on first use; ``stats`` / ``stat()`` give ``PassStats``.
    """

    seq: int
    frame_index: int
    t_ns: int
    wall_ms: float | None
    gpu: tuple[Scope, ...] | None
    cpu: tuple[Scope, ...] | None
    dropped: int = 0
    invalid: int = 0
    cull: CullCounts | None = None
    snapshot: StatsSnapshot | None = None
    draws: tuple | None = None
    transitions: dict[str, float] | None = None

    @property
    def stats_keys(self) -> tuple[tuple[str, str], ...]:
        return () if self.snapshot is None else self.snapshot.result()[0]

    @property
    def stats_values(self) -> np.ndarray:
        if self.snapshot is None:
            return np.zeros((0, len(STAT_FIELDS)))
        return self.snapshot.result()[1]

    @property
    def stats(self) -> tuple[PassStats, ...]:
        """Every row as ``PassStats``, GPU rows first, then CPU, then the wall clock."""
        return tuple(self._stat(i) for i in range(len(self.stats_keys)))

    def stat(self, name: str, clock: str = GPU) -> PassStats | None:
        """The ``PassStats`` of ``name`` on ``clock``, or None (computes the record's stats
        on first use)."""
        try:
            return self._stat(self.stats_keys.index((clock, name)))
        except ValueError:
            return None

    def _stat(self, i: int) -> PassStats:
        keys, values = self.snapshot.result()
        clock, name = keys[i]
        last, mean, med, mx, delta, mad, outlier, hitch, n = values[i].tolist()
        return PassStats(
            name,
            clock,
            _opt(last),
            mean,
            med,
            mx,
            _opt(delta),
            mad,
            bool(outlier),
            _opt(hitch),
            int(n),
        )


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


def _opt(v: float) -> float | None:
    return v if v == v else None  # NaN -> None


Subscriber = Callable[[FrameRecord], None]


class Telemetry:
    """The per-frame record stream.

    Args:
        session: facts that do not change per frame (adapter, backend, features, sample,
            settings, size, GPU clock offset); JSON-serialisable values only.
        history: records kept in ``history`` (the trace and the HUD read them).

    Attributes:
        session: see Args; views may read it at any time.
        history: ``deque[FrameRecord]``, oldest first. ``latest``: the newest or None.
        subscriber_errors: subscribers removed because they raised.
        totals: run totals over every published record: ``frames``, ``dropped`` and
            ``invalid`` GPU scopes, ``gpu_missing`` (frames GPU profiling could not time:
            every query pool was in flight; ``FrameTimings.extra["gpu_skipped"]``).
    """

    def __init__(self, session: dict | None = None, *, history: int = 300):
        self.session: dict = dict(session or {})
        self.history: deque[FrameRecord] = deque(maxlen=history)
        self.latest: FrameRecord | None = None
        self.stats = StatsWindow()
        self.subscriber_errors = 0
        self.totals = {"frames": 0, "dropped": 0, "invalid": 0, "gpu_missing": 0}
        self._subscribers: list[Subscriber] = []
        self._seq = 0

    def subscribe(self, fn: Subscriber) -> Callable[[], None]:
        """Call ``fn(record)`` on the frame thread for every record published from now on;
        returns a function that unsubscribes. A subscriber that raises is logged and
        removed: a view never breaks the frame loop."""
        self._subscribers.append(fn)
        return lambda: self._subscribers.remove(fn) if fn in self._subscribers else None

    @property
    def has_subscribers(self) -> bool:
        return bool(self._subscribers)

    def reset_stats(self) -> None:
        """Forget the statistics window (``stats reset``)."""
        self.stats.reset()

    def publish(
        self,
        frame_index: int,
        *,
        t_ns: int,
        wall_ms: float | None,
        timings: FrameTimings | None = None,
        cull: CullCounts | None = None,
    ) -> FrameRecord:
        """Build, keep and send the record of one finished frame."""
        gpu = tuple(timings.gpu) if timings is not None and timings.gpu is not None else None
        cpu = tuple(timings.cpu) if timings is not None and timings.cpu is not None else None
        keys = tuple((GPU, s[0]) for s in gpu or ()) + tuple((CPU, s[0]) for s in cpu or ())
        values = [(s[2] - s[1]) / 1e6 for s in gpu or ()] + [(s[2] - s[1]) / 1e6 for s in cpu or ()]
        if wall_ms is not None:
            keys += ((WALL, FRAME_SCOPE),)
            values.append(wall_ms)
        draws = timings.draws if timings is not None else None
        if draws:
            keys, values = _add_draws(keys, values, draws)
        snapshot = self.stats.add(keys, values, t_ns / 1e9)
        record = FrameRecord(
            seq=self._seq,
            frame_index=frame_index,
            t_ns=t_ns,
            wall_ms=wall_ms,
            gpu=gpu,
            cpu=cpu,
            dropped=timings.dropped if timings is not None else 0,
            invalid=timings.invalid if timings is not None else 0,
            cull=cull,
            snapshot=snapshot,
            draws=draws,
            transitions=timings.transitions if timings is not None else None,
        )
        self._seq += 1
        t = self.totals
        t["frames"] += 1
        t["dropped"] += record.dropped
        t["invalid"] += record.invalid
        t["gpu_missing"] += timings is not None and bool(timings.extra.get("gpu_skipped"))
        self.history.append(record)
        self.latest = record
        for fn in list(self._subscribers):
            try:
                fn(record)
            except Exception:
                log.exception("telemetry: subscriber %r failed and was removed", fn)
                self.subscriber_errors += 1
                self._subscribers.remove(fn)
        return record


def _add_draws(keys: tuple, values: list, draws) -> tuple[tuple, list]:
    """Append each draw's reading (inside, else split; ms) as a ``(DRAW, "<pass>/<draw>")``
    row of the stats window, so views get its mean and delta like a pass's."""
    extra = [(f"{p.name}/{d.label}", d.ns) for p in draws for d in p.draws]
    keys += tuple((DRAW, name) for name, ns in extra if ns is not None)
    values += [ns / 1e6 for _, ns in extra if ns is not None]
    return keys, values


# -- wire format: shared by --telemetry (JSON Lines) and the portal --------------------------
@dataclass
class NameTable:
    """Scope names sent once: ``ids`` maps a name to its index in the order first sent."""

    ids: dict[str, int] = field(default_factory=dict)

    def encode(self, names: Iterable[str]) -> list[str]:
        """Register ``names``; return those not sent before (send them first)."""
        new = []
        for n in names:
            if n not in self.ids:
                self.ids[n] = len(self.ids)
                new.append(n)
        return new


def _scopes(table: NameTable, scopes) -> list | None:
    if scopes is None:
        return None
    return [[table.ids[s.name], s.begin_ns, s.end_ns] for s in scopes]


def encode_record(record: FrameRecord, table: NameTable) -> tuple[list[str], dict]:
    """``(new_names, message)``: the record as a compact JSON-ready dict whose scopes and
    stats refer to names by index in ``table`` (send ``new_names`` before it). Scope times
    are exact integer nanoseconds; stats are ms rounded to 1 ns.

    Message keys: ``seq``, ``frame``, ``t_ns``, ``wall_ms``, ``gpu``/``cpu`` (lists of
    ``[name_id, begin_ns, end_ns]`` or null), ``dropped``, ``invalid``, ``cull`` (``{"frame",
    "values"}`` or null) and ``stats``: lists of ``[clock, name_id, *STAT_FIELDS]`` (null = none;
    ``outlier`` is 0/1), and ``draws`` (null without ``--gpu-profile draws``): per pass
    ``[pass_name_id, kind, baseline_ns, [draw, ...], overhead_ns, unreliable]`` with each draw
    ``[label_id, begin_ns, end_ns, split_ns, repeats, below_resolution (0/1), vertex, clipper,
    fragment, compute, implausible]`` (null = n/a; ``split_ns`` and ``overhead_ns``, the
    pass's fixed cost outside its draws, rounded to 0.001 ns; ``implausible``: why the raw
    ``split_ns`` cannot be a cost, ``unreliable``: why the adapter's per-draw figures cannot
    be trusted, else null), and ``transitions`` (null unless encoder timestamps measure them):
    ``[[pass_name_id, ns], ...]``, the transition billed before each pass (part of its GPU
    scope), rounded to 0.001 ns.
    """
    names = [s.name for s in record.gpu or ()] + [s.name for s in record.cpu or ()]
    names += [name for _, name in record.stats_keys]
    names += list(record.transitions or ())
    for p in record.draws or ():
        names.append(p.name)
        names += [d.label for d in p.draws]
    new = table.encode(names)
    cull = record.cull
    msg = {
        "seq": record.seq,
        "frame": record.frame_index,
        "t_ns": record.t_ns,
        "wall_ms": _r(record.wall_ms),
        "gpu": _scopes(table, record.gpu),
        "cpu": _scopes(table, record.cpu),
        "dropped": record.dropped,
        "invalid": record.invalid,
        "cull": None if cull is None else {"frame": cull.frame_index, "values": list(cull.values)},
        "stats": [
            [clock, table.ids[name], *(None if v != v else round(v, 6) for v in row)]
            for (clock, name), row in zip(record.stats_keys, _rows(record), strict=True)
        ],
        "draws": _draws(table, record.draws),
        "transitions": _transitions(table, record.transitions),
    }
    return new, msg


def _transitions(table: NameTable, transitions: dict | None) -> list | None:
    if transitions is None:
        return None
    return [[table.ids[name], _r3(ns)] for name, ns in transitions.items()]


def _draws(table: NameTable, passes) -> list | None:
    if passes is None:
        return None
    ids = table.ids
    return [
        [
            ids[p.name],
            p.kind,
            p.baseline_ns,
            [
                [
                    ids[d.label],
                    d.begin_ns,
                    d.end_ns,
                    _r3(d.split_ns),
                    d.repeats,
                    int(d.below_resolution),
                    d.vertex,
                    d.clipper,
                    d.fragment,
                    d.compute,
                    d.implausible,
                ]
                for d in p.draws
            ],
            _r3(p.overhead_ns),
            p.unreliable,
        ]  # fmt: skip
        for p in passes
    ]


def _r3(v: float | None) -> float | None:
    return None if v is None else round(v, 3)


def _rows(record: FrameRecord) -> list:
    return [] if record.stats_values is None else record.stats_values.tolist()


def _r(v: float | None) -> float | None:
    return None if v is None else round(v, 6)


class JsonLinesWriter:
    """``--telemetry PATH``: one JSON object per line. The first line is
    ``{"type": "session", ...}``; ``{"type": "names", "names": [...]}`` lines introduce scope
    names (indices continue across lines); then one ``{"type": "frame", ...}`` per record
    (``encode_record``'s message). Written as records arrive; flushed at ``close``.

    A write that fails later (disk full, drive removed) stops the writer: one warning, the
    error kept in ``error``, the run goes on.

    Raises:
        OSError: the file cannot be opened.
    """

    def __init__(self, path: str, session: dict):
        self.path = path
        self._f = open(path, "wb")  # noqa: SIM115 - closed in close()
        self._table = NameTable()
        self.records = 0
        self.error: OSError | None = None
        self._line({"type": "session", **session})

    def __call__(self, record: FrameRecord) -> None:
        if self._f is None:
            return
        self.records += 1
        new, msg = encode_record(record, self._table)
        if new:
            self._line({"type": "names", "names": new})
        self._line({"type": "frame", **msg})

    def _line(self, obj: dict) -> None:
        try:
            self._f.write(orjson.dumps(obj, option=orjson.OPT_APPEND_NEWLINE))
        except OSError as e:
            self._stop(e)

    def _stop(self, error: OSError) -> None:
        self.error, f, self._f = error, self._f, None
        with contextlib.suppress(OSError):
            f.close()  # flushing again fails the same way; the descriptor is released
        log.warning(
            "telemetry: cannot write %s (%s) after %d record(s); the file is incomplete",
            self.path, error.strerror or error, self.records,
        )  # fmt: skip

    def close(self) -> None:
        if self._f is None:
            return
        try:
            self._f.close()
        except OSError as e:
            self._stop(e)
