"""The record of one finished frame and the timed scopes inside it: the types every
producer fills and every view reads.

Units: ``*_ns`` integers are nanoseconds (GPU scopes on the GPU clock, CPU scopes and
``t_ns`` on ``time.perf_counter_ns``); ``*_ms`` floats are milliseconds.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, NamedTuple

import numpy as np

if TYPE_CHECKING:  # typing only: producers sit above this layer
    from engine.counters import Counts
    from engine.culling.counters import CullCounts
    from engine.telemetry.stats import StatsSnapshot

GPU, CPU, WALL = "gpu", "cpu", "wall"
DRAW = "draw"  # per-draw GPU readings in the stats (name: the path (pass, draw)), draws profiling
FRAME_SCOPE = "Frame"  # the wall-clock frame time's name in the stats (clock WALL)


class Scope(NamedTuple):
    """One timed span and the spans timed inside it: the one result type of every timing
    (as wgpu-profiler's ``GpuTimerQueryResult {label, time, nested_queries}``).

    Attributes:
        name: the pass, CPU scope or draw name (a draw: its batch label, ``"box LOD0"``).
        begin_ns, end_ns: nanoseconds on the scope's own clock (GPU timestamps for GPU
            scopes, ``time.perf_counter_ns`` for CPU scopes). Top-level scopes always have
            both; a nested scope not timed in place (a draw measured only by its replay)
            has None.
        children: the scopes nested inside it, in recording order (a GPU pass's draws and
            dispatches with ``--gpu-profile draws``), else ``()``.
        detail: what the producer measured beside the time, else None: a draw's
            ``engine.profiling.draws.Draw`` (replayed cost, pipeline statistics), a pass's
            ``PassDraws`` (baseline, fixed overhead, reliability).

    A named tuple: a few are made per pass per frame, and a frozen dataclass costs 3x more.
    """

    name: str
    begin_ns: int | None
    end_ns: int | None
    children: tuple[Scope, ...] = ()
    detail: Any = None

    @property
    def duration_ms(self) -> float:
        return (self.end_ns - self.begin_ns) / 1e6


Path = tuple[str, ...]  # a nested scope's names from the top: ("Main.Early", "box LOD0")


def walk(scopes, parent: Path = ()) -> Iterator[tuple[Path, Scope]]:
    """Every scope of ``scopes`` and the scopes nested in it, depth first in recording order,
    each with its path of names from the top: ``(("Main.Early",), pass)``, then
    ``(("Main.Early", "box LOD0"), draw)``. Names are never joined into one string, so a
    pass or draw with ``/`` in its name stays itself."""
    for s in scopes or ():
        path = (*parent, s.name)
        yield path, s
        if s.children:
            yield from walk(s.children, path)


def path_text(path: str | Path) -> str:
    """A name or a path as people read it: ``"Main.Early > box LOD0"``."""
    return path if isinstance(path, str) else " > ".join(path)


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
            pass) with ``--gpu-profile draws``, else None; the record nests them under their
            pass's GPU scope (``nest_draws``).
        transitions: per pass name, the transition billed before it with encoder
            timestamps (ns; part of the pass's GPU scope: ``engine.profiling.gpu``), else None.
        gpu_skipped: GPU timing was on but this frame found every query pool in flight, so
            it has no GPU scopes (counted in ``Telemetry.totals["gpu_missing"]``).
    """

    frame_index: int
    gpu: list[Scope] | None = None
    cpu: list[Scope] | None = None
    dropped: int = 0
    invalid: int = 0
    draws: tuple | None = None
    transitions: dict[str, float] | None = None
    gpu_skipped: bool = False


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
        gpu: GPU scopes (pass durations, GPU clock) in declaration order, each pass's
            draws nested in it (``Scope.children``) with ``--gpu-profile draws``; None when
            GPU timing is off or unavailable, or the frame found every query pool in flight.
        cpu: CPU scopes (pass recording, Update, Submit, Present) in start order; None
            when CPU profiling is off.
        dropped: GPU scopes over the query pool's capacity in this frame.
        invalid: GPU readings left out (zero, or end before begin).
        readbacks: the newest result of each GPU readback at publication, by the client's
            ``channel`` (``"cull"``: ``engine.culling.counters.CullCounts``, with its own
            ``frame_index``); a channel that has produced nothing yet is absent.
        transitions: per pass name, the transition billed before it (ns, part of its GPU
            scope) where encoder timestamps are used (``engine.profiling.gpu``), else None.
        variant: the sample's variant the frame was recorded with (``Sample.variants``), or
            None for a sample without variants.
        snapshot: the stats window after this frame (``StatsSnapshot``; per-draw readings
            are rows of clock ``"draw"`` named by their path ``(pass, draw)``), from which
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
    readbacks: dict[str, Any] = field(default_factory=dict)
    snapshot: StatsSnapshot | None = None
    transitions: dict[str, float] | None = None
    variant: str | None = None

    def draw_passes(self) -> tuple:
        """The ``detail`` (``engine.profiling.draws.PassDraws``) of each GPU pass scope that
        has draws nested in it, in pass order; ``()`` without per-draw timing."""
        return tuple(s.detail for s in self.gpu or () if s.children)

    @property
    def cull(self) -> CullCounts | None:
        """The cull counters (``readbacks["cull"]``), or None."""
        return self.readbacks.get("cull")

    @property
    def counters(self) -> tuple[Counts, ...]:
        """Every counter block's newest counts (``engine.counters.Counts``): the culler's
        first, then the others by name."""
        blocks = [v for v in self.readbacks.values() if hasattr(v, "names") and hasattr(v, "block")]
        return tuple(sorted(blocks, key=lambda c: (c.block != "cull", c.block)))

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


def _opt(v: float) -> float | None:
    return v if v == v else None  # NaN -> None


@dataclass
class ProfilingInfo:
    """What profiling is on in a run (``Session.profiling``).

    Attributes:
        gpu, cpu: GPU timestamp queries / CPU scopes switched on.
        gpu_available: GPU timing works on this adapter (else the GPU column reads ``n/a``).
        gpu_unavailable_reason: why not, one line (None when available).
        capacity: GPU scopes per frame in the query pool (0 with GPU timing off).
        untimed: transfer passes that cannot be GPU-timed on this device.
        draws: the per-draw profiler's settings with ``--gpu-profile draws``
            (``engine.profiling.draws.DrawProfiler.info``), else None.
        transitions: how the transitions billed to passes are measured (encoder
            timestamps: ``engine.profiling.gpu``), else None.
    """

    gpu: bool = False
    cpu: bool = False
    gpu_available: bool = False
    gpu_unavailable_reason: str | None = None
    capacity: int = 0
    untimed: list[str] = field(default_factory=list)
    draws: dict | None = None
    transitions: dict | None = None


@dataclass
class Session:
    """Facts of a run that do not change per frame; every view may read it at any time.

    Attributes:
        adapter, backend: the adapter's summary and backend (e.g. ``"Vulkan"``).
        features: the device's features, sorted.
        size: output size ``[w, h]`` in pixels at start-up.
        sample: the sample's short name (``"s13"``).
        settings: the command line as JSON-ready values.
        profiling: ``ProfilingInfo`` while profiling is on, else None.
        gpu_clock_offset_ns: ``cpu_ns - gpu_ns``, measured once when GPU timing starts
            (``engine.profiling.gpu.GpuProfiler.calibrate``; an estimate), or None.
        gpu_clock_uncertainty_ns: the half-width of that measurement's window, or None.
        facts: further JSON-ready facts tools add (e.g. shader hashes), by name.
    """

    adapter: str = ""
    backend: str = ""
    features: list[str] = field(default_factory=list)
    size: list[int] = field(default_factory=list)
    sample: str = ""
    settings: dict = field(default_factory=dict)
    profiling: ProfilingInfo | None = None
    gpu_clock_offset_ns: int | None = None
    gpu_clock_uncertainty_ns: int | None = None
    facts: dict = field(default_factory=dict)

    def to_json(self) -> dict:
        """The session as one JSON-ready dict (the wire format's session line): the fields
        by name, ``profiling`` as a dict or null, ``facts`` merged in at the top level."""
        out = {k: v for k, v in self.__dict__.items() if k not in ("profiling", "facts")}
        out["profiling"] = None if self.profiling is None else dict(self.profiling.__dict__)
        return {**self.facts, **out}

    @classmethod
    def from_json(cls, obj: dict) -> Session:
        """The inverse of ``to_json``: known keys fill the fields, the rest go to ``facts``.
        ``profiling`` may be a dict with any subset of ``ProfilingInfo``'s fields."""
        names = set(cls.__dataclass_fields__) - {"facts", "profiling"}
        kw = {k: v for k, v in obj.items() if k in names}
        prof = obj.get("profiling")
        if isinstance(prof, dict):
            known = ProfilingInfo.__dataclass_fields__
            kw["profiling"] = ProfilingInfo(**{k: v for k, v in prof.items() if k in known})
        facts = {k: v for k, v in obj.items() if k not in names and k != "profiling"}
        return cls(**kw, facts=facts)


def nest_draws(scopes, draws) -> tuple[Scope, ...]:
    """``scopes`` (GPU passes) with each pass's draws nested: a child ``Scope`` per draw
    (its inside-pass times, ``detail`` the ``Draw``) and the pass's ``PassDraws`` as the
    pass's ``detail``. Draws of a pass with no GPU scope (not timed this frame) are left out.
    """
    by_pass = {p.name: p for p in draws or ()}
    if not by_pass:
        return tuple(scopes)
    out = []
    for s in scopes:
        p = by_pass.get(s.name)
        if p is not None:
            kids = tuple(Scope(d.label, d.begin_ns, d.end_ns, (), d) for d in p.draws)
            s = s._replace(children=kids, detail=p)
        out.append(s)
    return tuple(out)
