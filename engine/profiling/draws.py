"""Per-draw GPU timing and per-draw pipeline statistics (``--gpu-profile draws``).

The render graph hands every render and compute pass's ``record`` a thin proxy of the pass
encoder (``DrawProfiler.wrap``): every draw and dispatch of every pass is caught without the
pass asking. Two ways to time one draw:

* **inside** (needs ``timestamp-query-inside-passes``): a timestamp right before and right
  after each draw or dispatch, in the real pass (``extras.write_timestamp`` on the pass
  encoder). Draw k reads ``end_k - begin_k``. Vulkan writes these at the bottom of the
  pipe, so a reading is from the moment the GPU finished what came before to the moment it
  finished the draw: overlap between neighbours is attributed to the later one.
* **split** (render passes, needs only ``timestamp-query``): after the frame's passes, each
  draw is replayed alone in render passes of its own (the state commands that preceded it,
  then the draw) on scratch targets of the same formats and size, colour and depth
  *cleared* (a draw that loaded depth now draws onto an empty depth buffer), timed with
  pass timestamps. An empty pass on the same targets is the baseline subtracted from each
  repetition. Isolated draws overlap nothing, so on an adapter with both ways the ratio
  split-sum / inside-sum says how much the draws of a pass overlapped. Compute dispatches
  are never replayed (their writes would run twice): without ``-inside-passes`` they read
  ``n/a``.

Spread over frames: each frame replays only the next ``replays_per_frame`` render draws,
round-robin over the frame's draws (within ``max_replay_passes`` passes), so the replays
cost a few draws' worth per frame rather than the whole frame again; every draw keeps its
readings between turns (``Draw.split_frame`` says which frame's replay it shows). Robust
readings: the empty-pass baseline subtracted is the median of the pass's last
``baseline_window`` baselines of that repetition count, and a draw's ``split_ns`` the median
of its last ``split_window`` readings, outliers (over ``OUTLIER_MADS`` scaled MADs) left
out: one stray reading 20x the usual moves neither. A split within the baseline's own noise
(``NOISE_MADS`` scaled MADs, either sign) is ``Draw.below_noise`` and reads ``<noise``; one
more negative than that cannot be a cost: ``Draw.implausible`` says so and the views print
``n/a (implausible)``, as they do a split/inside ratio outside ``PLAUSIBLE_RATIO``. On
wgpu's OpenGL backend (llvmpipe there advertises ``timestamp-query-inside-passes``) the
readings are not of the draws at all: ``PassDraws.unreliable`` says so beside every figure.

Cheap draws: a replay repeats the draw ``repeats`` times, each in a pass of its own (so
depth is cleared before each repetition: a second draw in the same pass would fail the
depth test), chosen from the previous reading so that the repetitions span at least
``target_ns``; the same number of empty passes in a row is subtracted and the difference
divided by ``repeats``. The timestamp *resolution* is learned
as the greatest common divisor of the readings seen (1 ns on lavapipe, the tick of the GPU's
timer elsewhere); a measured span shorter than two resolutions is flagged
``below_resolution`` and shown as such, never as a number.

Pass overhead (what the draws of a pass cannot add up to): a pass's own time also holds its
fixed cost, the attachments' load/clear and store, the pass's begin and end and the
timestamps themselves (a 1080p clear is ~0.15 ms on an H200). Every ``overhead_every``-th
frame this profiler records, after the frame's passes, each timed pass is measured as an
*empty* pass: a render pass on scratch targets of the same formats, sizes and sample counts
with the real pass's load/store ops and clear values copied (scratch, because a clear would
wipe the frame's own targets), or an empty compute pass; bracketed the same way as the real
pass (descriptor timestamps, or encoder timestamps around it in ``timestamps="encoder"``
mode), with as many timestamp pairs written inside it as the real pass wrote around its
draws. One reading = its begin-to-end span less its inside pairs' spans (the real pass's
pairs sit inside its draws' readings): the pass time that lies outside every draw. It is
smoothed as the median of the pass's last ``overhead_window`` readings (robust to a stray
slow frame). The first two frames are measured too, and the first reading of each pass, or
the first after its attachments or ops changed (a resize), starts a new window and is
dropped (its scratch targets are new: wgpu zero-fills them on first use, inside encoder
timestamps). Reported per pass as ``PassDraws.overhead_ns``: draws + overhead close to
the pass means the draws' readings account for the pass; what remains is overlap between
draws (inside readings) or work the draws do differently in the pass.

Per-draw pipeline statistics (``pipeline-statistics-query``): one query around each draw
(scopes follow each other inside a pass; see ``engine.profiling.pipeline_stats``); a pass's
counts are the sum of its draws'. On a CPU adapter a compute pass's dispatches from its first
indirect dispatch on get none (llvmpipe crashes in ``queue.submit`` on those queries). A
render draw whose last counts showed no vertex shader invocation (an indirect draw of 0
instances) is not replayed until it draws again: its split reading is ``None`` and it adds
nothing to the pass's split sum.

A replay sets only the state in effect at its draw (the last pipeline, the last bind group
per slot, ...), so its CPU cost does not grow with the draws before it.

Multi-draw indirect calls are timed as one draw each (the proxy cannot see inside them);
``engine.culling.gpu_scene.GpuScene.draw`` issues one labelled indirect draw per (mesh, LOD)
batch instead when it records into a proxy (``timing_draws``).

Results come back a few frames late through an ``engine.readback.ReadbackRing``, tagged
with their frame index; ``engine.profiling.frame.FrameProfiler`` merges them into the
frame's timings (``FrameTimings.draws``).
"""

from __future__ import annotations

import collections
import logging
import math
import statistics
import struct
from dataclasses import dataclass, field
from typing import NamedTuple

import numpy as np
import wgpu
from wgpu.backends.wgpu_native import extras  # extras.write_timestamp: looked up per call

from engine.gpu import view_format
from engine.profiling.gpu import write_timestamp as encoder_timestamp
from engine.profiling.pipeline_stats import FEATURE as STATS_FEATURE
from engine.profiling.pipeline_stats import STATISTICS
from engine.profiling.sink import DRAW_METHODS  # each is one timed draw
from engine.readback import ReadbackRing

log = logging.getLogger("lantern")

INSIDE_FEATURE = "timestamp-query-inside-passes"
#: Features ``--gpu-profile draws`` asks the device for, where the adapter has them.
RENDER, COMPUTE = "render", "compute"
#: split sum / inside sum outside this range cannot describe the same draws.
PLAUSIBLE_RATIO = (0.25, 4.0)
#: A reading further than this many scaled MADs from its window's median is an outlier.
OUTLIER_MADS = 5.0
#: A split within this many scaled MADs of its baseline's spread (either sign) is noise.
NOISE_MADS = 3.0
INSIDE, SPLIT = "inside", "split"

#: Pass-encoder calls that set state a replayed draw needs (debug groups are left out: a
#: replay must not open a group it never closes).
STATE_METHODS = (
    "set_pipeline",
    "set_bind_group",
    "set_vertex_buffer",
    "set_index_buffer",
    "set_viewport",
    "set_scissor_rect",
    "set_blend_constant",
    "set_stencil_reference",
    "set_immediates",
)


class Draw(NamedTuple):
    """One draw or dispatch of one frame. Times are GPU nanoseconds; counts None = n/a.

    Attributes:
        label: the batch or the pass's label (``"box LOD0"``), else ``"<pass>#<k>"``.
        begin_ns, end_ns: inside-pass timestamps (GPU clock), None when not timed inside.
        split_ns: replayed alone, per repetition, empty-pass baseline subtracted (may be
            negative: never clamped); None when not replayed.
        repeats: repetitions of the replay (0: not replayed).
        below_resolution: the measured span (inside reading, or the replay's whole span
            less its baselines) was shorter than two timestamp resolutions.
        vertex, clipper, fragment, compute: pipeline statistics of the draw in the real
            pass (vertex / fragment / compute shader invocations, clipper primitives out).
        implausible: why ``split_ns`` cannot be true (a negative cost), else None; such a
            reading is shown as ``n/a (implausible)``, never as a number.
        split_frame: the frame whose replay ``split_ns`` comes from (replays are spread
            over frames, a few draws each: the module docstring); None when not replayed.
        below_noise: ``split_ns`` is within the noise of the baseline subtracted from it
            (``NOISE_MADS`` scaled MADs, either sign): shown as ``<noise``, not a number; a
            split more negative than that is ``implausible``.
    """

    label: str
    begin_ns: int | None
    end_ns: int | None
    split_ns: float | None
    repeats: int
    below_resolution: bool
    vertex: int | None = None
    clipper: int | None = None
    fragment: int | None = None
    compute: int | None = None
    implausible: str | None = None
    split_frame: int | None = None
    below_noise: bool = False

    @property
    def inside_ns(self) -> int | None:
        return None if self.begin_ns is None else self.end_ns - self.begin_ns

    @property
    def plausible_split_ns(self) -> float | None:
        """``split_ns`` unless it is implausible (then None)."""
        return None if self.implausible else self.split_ns

    @property
    def ns(self) -> float | None:
        """The inside reading when there is one, else the plausible split reading, else
        None."""
        inside = self.inside_ns
        return inside if inside is not None else self.plausible_split_ns

    @property
    def method(self) -> str:
        """``"inside"``, ``"split"`` or ``"n/a"``: where ``ns`` comes from."""
        if self.begin_ns is not None:
            return INSIDE
        return SPLIT if self.split_ns is not None else "n/a"


class PassDraws(NamedTuple):
    """The draws of one pass in one frame, in recording order.

    Attributes:
        name, kind: the pass (``"render"`` / ``"compute"``).
        draws: ``Draw`` per draw or dispatch.
        baseline_ns: one empty replay pass on the same targets (what a split reading of
            one repetition had subtracted); None when the pass was not replayed.
        overhead_ns: the pass's fixed cost outside its draws (an empty pass with the same
            load/store ops, timed the same way; median of the last readings, see the
            module docstring); None until a first reading came back.
        unreliable: why this adapter's per-draw figures cannot be trusted at all (wgpu's
            OpenGL backend), else None; views print it beside the figures.
    """

    name: str
    kind: str
    draws: tuple[Draw, ...]
    baseline_ns: float | None = None
    overhead_ns: float | None = None
    unreliable: str | None = None

    def total(self, field_name: str) -> int | None:
        """Sum of a statistic (``"vertex"``, ``"clipper"``, ``"fragment"``, ``"compute"``)
        over the draws: the pass's count; None when any draw's is unknown."""
        values = [getattr(d, field_name) for d in self.draws]
        return None if not values or None in values else sum(values)

    def inside_sum_ns(self) -> int | None:
        v = [d.inside_ns for d in self.draws]
        return None if not v or None in v else sum(v)

    def draws_sum_ns(self) -> tuple[str, float] | None:
        """``(way, ns)``: the inside sum where every draw has one, else the split sum, else
        None; what ``overhead_ns`` is added to."""
        inside = self.inside_sum_ns()
        if inside is not None:
            return INSIDE, inside
        split = self.split_sum_ns()
        return None if split is None else (SPLIT, split)

    def accounted_ns(self) -> float | None:
        """Draws' sum (``draws_sum_ns``) + ``overhead_ns``; None when either is unknown."""
        s = self.draws_sum_ns()
        return None if s is None or self.overhead_ns is None else s[1] + self.overhead_ns

    def split_sum_ns(self) -> float | None:
        """Sum of the split readings; draws not replayed because they drew nothing (0
        vertex invocations) add 0; None when any other draw has none or an implausible
        one."""
        v = [
            d.plausible_split_ns if d.split_ns is not None or d.vertex != 0 else 0.0
            for d in self.draws
        ]
        return None if not v or None in v or all(d.split_ns is None for d in self.draws) else sum(v)

    def split_inside_ratio(self) -> tuple[float, bool] | None:
        """``(split sum / inside sum, plausible)``; None without both sums. Isolated replays
        overlap nothing, so the ratio is near 1 or above (the draws overlapped in the
        pass); outside ``PLAUSIBLE_RATIO`` (or negative) one of the two is not a reading
        of the draws (seen on wgpu's OpenGL backend: -18.5)."""
        inside, split = self.inside_sum_ns(), self.split_sum_ns()
        if inside is None or split is None or inside <= 0:
            return None
        r = split / inside
        return r, PLAUSIBLE_RATIO[0] <= r <= PLAUSIBLE_RATIO[1]

    def ns_per_fragment(self, gpu_ns: float | None) -> float | None:
        """GPU ns per fragment invocation of a pass that took ``gpu_ns`` (None: unknown)."""
        frags = self.total("fragment")
        return None if gpu_ns is None or not frags else gpu_ns / frags


# -- recording --------------------------------------------------------------------------------
@dataclass
class _DrawRec:
    label: str
    command: int  # index of the draw in its pass's command list
    ts: int | None  # begin query (end = ts + 1), inside timing
    stats: int | None  # pipeline-statistics query
    replay_ts: int | None = None  # begin of the replay (end = +1)
    repeats: int = 0
    alone: bool = True  # False: not replayed (draw_label(alone=False))


@dataclass
class _PassRec:
    name: str
    kind: str
    targets: dict | None
    commands: list = field(default_factory=list)  # (method, args, kwargs)
    draws: list[_DrawRec] = field(default_factory=list)
    baselines: dict[int, int | None] = field(default_factory=dict)  # repeats -> query
    overhead_ts: int | None = None  # empty pass: begin query (end +1), then its inside pairs
    overhead_pairs: int = 0
    overhead_sig: tuple = ()  # the empty pass's targets and ops (a change restarts the window)
    indirect: bool = False  # a dispatch_workgroups_indirect was recorded (CPU adapters: stats)


@dataclass
class _FrameRec:
    frame_index: int
    pool: int
    passes: list[_PassRec] = field(default_factory=list)
    ts_used: int = 0
    stats_used: int = 0
    replay_passes: int = 0
    measure_overhead: bool = False


class TimedPass:
    """A pass encoder proxy that times each draw (``DrawProfiler.wrap``). Everything not
    intercepted is forwarded. ``draw_label(text)`` names the next draw."""

    timing_draws = True  # passes may split multi-draws into labelled draws when they see it

    def __init__(self, real, prof: DrawProfiler, rec: _PassRec):
        self._p, self._prof, self._rec = real, prof, rec
        self._label: str | None = None
        self._alone = True

    def __getattr__(self, name):
        return getattr(self._p, name)

    def draw_label(self, text: str, *, alone: bool = True) -> None:
        """Name the next draw or dispatch (shown under the pass). ``alone=False``: it means
        nothing replayed alone (its depth test is ``equal`` against a depth the pass's
        earlier draws made: the Main pass's shading after its depth prepass), so it gets no
        split reading (``n/a``)."""
        self._label, self._alone = text, alone


def _state(name: str):
    def method(self, *args, **kwargs):
        self._rec.commands.append((name, args, kwargs))
        return getattr(self._p, name)(*args, **kwargs)

    method.__name__ = name
    return method


def _work(name: str):
    def method(self, *args, **kwargs):
        label, alone, self._label, self._alone = self._label, self._alone, None, True
        return self._prof._draw(self, name, args, kwargs, label, alone)

    method.__name__ = name
    return method


for _n in STATE_METHODS:
    setattr(TimedPass, _n, _state(_n))
for _n in DRAW_METHODS:
    setattr(TimedPass, _n, _work(_n))


def _signature(targets: dict) -> tuple:
    """What an empty pass's cost depends on: per attachment its texture's size, format and
    samples and every op and clear value (views themselves change every frame)."""

    def one(a):
        if a is None:
            return None
        tex = a["view"].texture
        ops = sorted((k, repr(v)) for k, v in a.items() if k not in ("view", "resolve_target"))
        resolve = a.get("resolve_target") is not None
        return tex.size, tex.format, tex.sample_count, resolve, tuple(ops)

    colors = tuple(one(a) for a in targets["color_attachments"])
    return colors, one(targets.get("depth_stencil_attachment"))


def _state_key(command: tuple, n: int) -> tuple:
    """Which earlier call a state call replaces: per bind group / vertex buffer slot, else
    per method; immediates accumulate (a range each)."""
    name, args, kwargs = command
    if name in ("set_bind_group", "set_vertex_buffer"):
        slot = args[0] if args else kwargs.get("index", kwargs.get("slot"))
        return (name, slot)
    if name == "set_immediates":
        return (name, n)
    return (name,)


def robust_median(values) -> float:
    """Median of ``values`` after leaving out those more than ``OUTLIER_MADS`` scaled
    median absolute deviations (1.4826 MAD) from the median: one stray reading 20x the
    usual moves nothing."""
    xs = sorted(values)
    med = statistics.median(xs)
    mad = 1.4826 * statistics.median(abs(x - med) for x in xs)
    if mad == 0:
        return float(med)
    kept = [x for x in xs if abs(x - med) <= OUTLIER_MADS * mad]
    return float(statistics.median(kept))


def unreliable_reason(gpu) -> str | None:
    """Why per-draw timestamps on ``gpu`` are not to be trusted, else None: on wgpu's
    OpenGL backend (llvmpipe advertises ``timestamp-query-inside-passes`` there) the
    readings are not of the draws (split/inside read -18.5)."""
    summary = getattr(gpu, "summary", "") or ""
    if "opengl" in summary.lower():
        return "wgpu's OpenGL backend: per-draw timestamps there are not readings of the draws"
    return None


def draw_label(pass_encoder, text: str, *, alone: bool = True) -> None:
    """Name the next draw of ``pass_encoder`` when draws are being timed; else nothing
    (``alone``: ``TimedPass.draw_label``)."""
    fn = getattr(pass_encoder, "draw_label", None)
    if fn is not None:
        fn(text, alone=alone)


# -- the profiler -----------------------------------------------------------------------------
class DrawProfiler:
    """Per-draw timestamps (inside passes and/or split replays) and statistics.

    Args:
        gpu: an ``engine.gpu.Gpu`` (features decide what is possible: see ``inside``,
            ``split``, ``stats``).
        capacity: draws per frame; further draws are not timed (counted in ``dropped``).
        replay: replay render draws alone (``split``); default: always (both ways side by
            side where the adapter can time inside passes too).
        target_ns: a replay's repetitions span at least this long (cheap draws repeat).
        max_repeats: at most this many repetitions.
        budget_ns: nor more repetitions than this much empty-pass overhead (clears of big
            targets on a slow GPU) allows.
        replays_per_frame: render draws replayed per frame at most, taken round-robin
            over the frame's draws (the others keep their last readings): what keeps
            ``draws`` mode's frame cost near plain pass timing.
        max_replay_passes: replay passes per frame at most (CPU cost: each is a pass begun
            and its state set; GPU cost: each clears its targets); draws beyond it wait
            for a later frame (or are replayed once instead of repeated).
        split_window, baseline_window: readings in the median of a draw's split time and
            of a pass's empty-pass baseline (per repetition count); outliers (more than
            ``OUTLIER_MADS`` scaled MADs from the median) are left out.
        slots: readback slots in flight; batch: frames per slot, read back with one map
            (as ``engine.profiling.gpu.GpuProfiler``); one query pool per frame region.
        overhead_every: measure each pass's overhead (an empty pass like it) on every
            this-many-th frame recorded (0: never); overhead_window: readings in its median.
        timestamps: how the graph's profiler brackets the real passes, ``"pass"``
            (descriptor timestamps) or ``"encoder"`` (encoder timestamps around the pass;
            needs ``timestamp-query-inside-encoders``): the empty passes are bracketed alike.

    Attributes:
        available: False without ``timestamp-query`` (``reason`` says why).
        inside, split, stats: which measurements are on.
        resolution_ns: timestamp resolution learned so far (gcd of the readings).
        dropped: draws over capacity, in the run.
        overhead_every, overhead_window, encoder_timestamps: how pass overhead is measured
            (see the module docstring).
    """

    def __init__(
        self,
        gpu,
        *,
        capacity: int = 256,
        replay: bool = True,
        target_ns: int = 20_000,
        max_repeats: int = 16,
        budget_ns: int = 500_000,
        replays_per_frame: int = 2,
        max_replay_passes: int = 16,
        split_window: int = 5,
        baseline_window: int = 9,
        slots: int = 3,
        batch: int = 1,
        overhead_every: int = 4,
        overhead_window: int = 8,
        timestamps: str = "pass",
    ):
        if timestamps not in ("pass", "encoder"):
            raise ValueError(f"timestamps must be 'pass' or 'encoder', got {timestamps!r}")
        if overhead_every < 0 or overhead_window < 1:
            raise ValueError(
                "overhead_every must be >= 0 and overhead_window >= 1, got "
                f"{overhead_every} and {overhead_window}"
            )
        feats = gpu.features
        self.device = dev = gpu.device
        self.available = "timestamp-query" in feats
        self.reason = None if self.available else f"no 'timestamp-query' ({gpu.summary})"
        self.inside = self.available and INSIDE_FEATURE in feats
        self.split = self.available and replay
        self.stats = self.available and STATS_FEATURE in feats
        # llvmpipe (Mesa 22) segfaults in queue.submit on statistics queries around a compute
        # pass's dispatches from its first indirect dispatch on (s06's Particles.Simulate):
        # on a CPU adapter those dispatches get none (their counts n/a)
        info = getattr(getattr(gpu, "adapter", None), "info", None) or {}
        self.cpu_adapter = str(info.get("adapter_type", "")).lower() == "cpu"
        self.capacity = capacity
        self.target_ns, self.max_repeats, self.budget_ns = target_ns, max_repeats, budget_ns
        self.resolution_ns = 0  # 0: nothing seen yet (gcd identity)
        self.dropped = 0
        self._repeats: dict[tuple[str, str], int] = {}
        self._empty: set[tuple[str, str]] = set()  # draws that ran no vertex last counted
        self.max_replay_passes = max_replay_passes
        self.replays_per_frame = max(1, replays_per_frame)
        self.split_window, self.baseline_window = split_window, baseline_window
        self._cursor = 0  # round-robin position over the frame's replayable draws
        self._splits: dict[tuple[str, str], collections.deque] = {}  # per-repeat readings
        self._split_meta: dict[tuple[str, str], tuple[int, bool, int]] = {}  # n, below, frame
        self._baselines: dict[tuple[str, int], collections.deque] = {}  # (pass, n) -> ns
        self.unreliable = unreliable_reason(gpu)
        self._scratch: dict[tuple, tuple] = {}  # (pass, slot) -> (key, view, texture)
        self._rec: _FrameRec | None = None
        self._waiting: dict[int, _FrameRec] = {}
        self.overhead_every, self.overhead_window = overhead_every, overhead_window
        self.encoder_timestamps = timestamps == "encoder"
        self._overheads: dict[str, tuple[tuple, collections.deque]] = {}  # pass -> (sig, ns)
        self._frames = 0  # frames recorded: overhead measured on the first 2, then every N
        if not self.available:
            return
        # Timestamps: per draw 2 inside + 2 for its replay + 2 for its pass's empty pass, and
        # per pass 2 for a replay baseline and 2 for its empty pass.
        self._ts_cap = -(-(6 * capacity + 128) // 32) * 32  # resolve offsets: 256 B aligned
        self._st_stride = 8 * len(STATISTICS)
        ts_bytes = 8 * self._ts_cap
        size = ts_bytes + (self._st_stride * capacity if self.stats else 0)
        self._ring = ReadbackRing(dev, size, slots=slots, batch=batch, label="draw timestamps")
        usage = wgpu.BufferUsage.QUERY_RESOLVE | wgpu.BufferUsage.COPY_SRC
        self._pools = []
        for i in range(slots * batch):
            qs = dev.create_query_set(label=f"draws {i}", type="timestamp", count=self._ts_cap)
            st = None
            if self.stats:
                st = extras.create_statistics_query_set(
                    dev, label=f"draw stats {i}", count=capacity, statistics=list(STATISTICS)
                )
            buf = dev.create_buffer(label=f"draws resolve {i}", size=size, usage=usage)
            self._pools.append((qs, st, buf))

    # -- per frame ----------------------------------------------------------------------------
    def begin_frame(self, frame_index: int) -> None:
        if self._rec is not None and self._rec.frame_index in self._waiting:
            self._waiting.pop(self._rec.frame_index)  # resolved but never submitted
            self._ring.discard_recorded()
        self._rec = None
        if not self.available:
            return
        pool = self._ring.next_region()
        if pool is not None:
            self._rec = _FrameRec(frame_index, pool)
            every, n = self.overhead_every, self._frames
            self._rec.measure_overhead = every > 0 and (n < 2 or n % every == 0)
            self._frames += 1

    def wrap(self, name: str, kind: str, pass_encoder, targets: dict | None):
        """The encoder a pass's ``record`` gets: a ``TimedPass`` while a frame is being
        recorded with a free pool, else ``pass_encoder`` itself."""
        if self._rec is None or kind not in (RENDER, COMPUTE):
            return pass_encoder
        rec = _PassRec(name, kind, targets if kind == RENDER else None)
        self._rec.passes.append(rec)
        return TimedPass(pass_encoder, self, rec)

    def _draw(self, proxy: TimedPass, method: str, args, kwargs, label: str | None,
              alone: bool = True):  # fmt: skip
        rec, frame, real = proxy._rec, self._rec, proxy._p
        k = len(rec.draws)
        cmd = len(rec.commands)
        rec.commands.append((method, args, kwargs))
        fn = getattr(real, method)
        if frame is None or frame.ts_used + 4 > self._ts_cap or k >= self.capacity:
            self.dropped += 1
            return fn(*args, **kwargs)
        qs, st, _ = self._pools[frame.pool]
        ts = si = None
        if self.inside:
            ts = frame.ts_used
            frame.ts_used += 2
            extras.write_timestamp(real, qs, ts)
        rec.indirect |= method == "dispatch_workgroups_indirect"
        stats = self.stats and not (self.cpu_adapter and rec.indirect)
        if stats and frame.stats_used < self.capacity:
            si = frame.stats_used
            frame.stats_used += 1
            real._begin_pipeline_statistics_query(st, si)
        result = fn(*args, **kwargs)
        if si is not None:
            real._end_pipeline_statistics_query()
        if ts is not None:
            extras.write_timestamp(real, qs, ts + 1)
        rec.draws.append(_DrawRec(label or f"{rec.name}#{k}", cmd, ts, si, alone=alone))
        return result

    def end_frame(self, encoder: wgpu.GPUCommandEncoder) -> None:
        """After the frame's passes: replay render draws alone (split), resolve, copy."""
        frame = self._rec
        if frame is None:
            return
        if frame.measure_overhead:  # before the replays: first call on the timestamps
            for p in frame.passes:
                self._overhead_pass(encoder, frame, p)
        if self.split:
            chosen = self._choose_replays(frame)
            for p in frame.passes:
                if p.kind == RENDER and p.draws:
                    self._replay(encoder, frame, p, chosen)
        if not frame.ts_used and not frame.stats_used:
            self._rec = None
            return
        qs, st, buf = self._pools[frame.pool]
        if frame.ts_used:
            encoder.resolve_query_set(qs, 0, frame.ts_used, buf, 0)
        if frame.stats_used:
            encoder.resolve_query_set(st, 0, frame.stats_used, buf, 8 * self._ts_cap)
        self._ring.copy(encoder, buf)
        self._waiting[frame.frame_index] = frame

    def _choose_replays(self, frame: _FrameRec) -> set[int]:
        """``id`` of the draws replayed this frame: the next ``replays_per_frame`` render
        draws round-robin (draws that drew nothing last time are skipped)."""
        cands = [
            d
            for p in frame.passes
            if p.kind == RENDER
            for d in p.draws
            if d.alone and (p.name, d.label) not in self._empty
        ]
        if not cands:
            return set()
        start = self._cursor % len(cands)
        take = min(self.replays_per_frame, len(cands))
        self._cursor = start + take
        return {id(cands[(start + k) % len(cands)]) for k in range(take)}

    def _replay(self, encoder, frame: _FrameRec, p: _PassRec, chosen: set[int]) -> None:
        targets = self._scratch_targets(p)
        qs = self._pools[frame.pool][0]
        base = p.baselines = {}  # repeats -> query of that many empty passes in a row
        state: dict[tuple, tuple] = {}  # the state in effect: last call per (method, slot)
        done = 0
        for d in p.draws:
            for c in p.commands[done : d.command]:
                if c[0] in STATE_METHODS:
                    state[_state_key(c, len(state))] = c
            done = d.command + 1
            key = (p.name, d.label)
            if id(d) not in chosen:  # drew nothing last time, or another frame's turn
                continue
            room = self.max_replay_passes - frame.replay_passes
            n = self._repeats.get(key, 1)
            if n + (0 if n in base else n) > room:  # over the budget: once, or not at all
                n = 1
                if 1 + (0 if 1 in base else 1) > room:
                    continue
            d.repeats = n
            if d.repeats not in base:
                base[d.repeats] = self._replay_pass(
                    encoder, qs, frame, targets, f"{p.name} baseline", [], d.repeats
                )
            cmds = [*state.values(), p.commands[d.command]]
            d.replay_ts = self._replay_pass(
                encoder, qs, frame, targets, f"{p.name} replay {d.label}", cmds, d.repeats
            )

    def _replay_pass(self, encoder, qs, frame, targets, label, cmds, repeats) -> int | None:
        if frame.ts_used + 2 > self._ts_cap:
            return None
        i = frame.ts_used
        frame.ts_used += 2
        frame.replay_passes += repeats
        for r in range(repeats):
            tw = {"query_set": qs} if r in (0, repeats - 1) else None
            if r == 0:
                tw["beginning_of_pass_write_index"] = i
            if r == repeats - 1:
                tw["end_of_pass_write_index"] = i + 1
            rp = encoder.begin_render_pass(label=label, timestamp_writes=tw, **targets)
            for method, args, kwargs in cmds:
                getattr(rp, method)(*args, **kwargs)
            rp.end()
        return i

    def _overhead_pass(self, encoder, frame: _FrameRec, p: _PassRec) -> None:
        """An empty pass like ``p`` (same load/store ops on scratch targets, or compute),
        bracketed like the real pass, with the real pass's number of inside pairs."""
        pairs = sum(d.ts is not None for d in p.draws)
        i = frame.ts_used
        if i + 2 + 2 * pairs > self._ts_cap or (p.kind == RENDER and not p.targets):
            return
        frame.ts_used += 2 + 2 * pairs
        qs = self._pools[frame.pool][0]
        tw = None
        if self.encoder_timestamps:
            encoder_timestamp(encoder, qs, i)
        else:
            tw = {"query_set": qs, "beginning_of_pass_write_index": i}
            tw["end_of_pass_write_index"] = i + 1
        label = f"{p.name} overhead"
        if p.kind == RENDER:
            targets = self._overhead_targets(p)
            p.overhead_sig = _signature(targets)
            ep = encoder.begin_render_pass(label=label, timestamp_writes=tw, **targets)
        else:
            ep = encoder.begin_compute_pass(label=label, timestamp_writes=tw)
        for q in range(i + 2, i + 2 + 2 * pairs):
            extras.write_timestamp(ep, qs, q)
        ep.end()
        if self.encoder_timestamps:
            encoder_timestamp(encoder, qs, i + 1)
        p.overhead_ts, p.overhead_pairs = i, pairs

    def _overhead_targets(self, p: _PassRec) -> dict:
        """The pass's attachments with their views swapped for scratch ones (colour,
        resolve and depth/stencil), every load/store op and clear value kept."""
        t = p.targets
        colors = []
        for slot, a in enumerate(t.get("color_attachments") or []):
            if a is None:
                colors.append(None)
                continue
            a = {**a, "view": self._scratch_view(p.name, slot, a["view"])}
            if a.get("resolve_target") is not None:
                a["resolve_target"] = self._scratch_view(
                    p.name, f"{slot} resolve", a["resolve_target"]
                )
            colors.append(a)
        out = {"color_attachments": colors}
        d = t.get("depth_stencil_attachment")
        if d is not None:
            out["depth_stencil_attachment"] = {
                **d,
                "view": self._scratch_view(p.name, "depth", d["view"]),
            }
        return out

    def _scratch_targets(self, p: _PassRec) -> dict | None:
        """The pass's attachments on scratch textures of the same formats and sizes, every
        one cleared (colour to the pass's clear value, depth to its clear value or 0)."""
        t = p.targets or {}
        out = {"color_attachments": []}
        for slot, a in enumerate(t.get("color_attachments") or []):
            if a is None:
                out["color_attachments"].append(None)
                continue
            view = self._scratch_view(p.name, slot, a["view"])
            out["color_attachments"].append(
                {
                    "view": view,
                    "clear_value": a.get("clear_value", (0, 0, 0, 0)),
                    "load_op": "clear",
                    "store_op": "store",
                }
            )
        d = t.get("depth_stencil_attachment")
        if d is not None:
            view = self._scratch_view(p.name, "depth", d["view"])
            att = {"view": view}
            fmt = view_format(d["view"])
            if not d.get("depth_read_only"):
                att.update(
                    depth_clear_value=d.get("depth_clear_value", 0.0),
                    depth_load_op="clear",
                    depth_store_op="store",
                )
            else:
                att["depth_read_only"] = True
            if "stencil" in fmt:
                att.update(stencil_load_op="clear", stencil_store_op="store")
            out["depth_stencil_attachment"] = att
        return out

    def _scratch_view(self, pass_name: str, slot, view) -> wgpu.GPUTextureView:
        """A scratch texture like ``view``'s (size, format, samples) for one attachment of
        one pass; replaced (the old one destroyed) when the attachment changes (resize)."""
        tex, fmt = view.texture, view_format(view)  # an sRGB view of a unorm texture: sRGB
        w, h = view.size[:2]
        key = (w, h, fmt, tex.sample_count)
        held = self._scratch.get((pass_name, slot))
        if held is not None and held[0] == key:
            return held[1]
        if held is not None:
            held[2].destroy()
        scratch = self.device.create_texture(
            label=f"draw replay {pass_name} {slot}",
            size=(w, h, 1),
            format=fmt,
            sample_count=tex.sample_count,
            usage=wgpu.TextureUsage.RENDER_ATTACHMENT,
        )
        v = scratch.create_view()
        self._scratch[(pass_name, slot)] = (key, v, scratch)
        return v

    def after_submit(self) -> None:
        frame, self._rec = self._rec, None
        if frame is not None and frame.frame_index in self._waiting:
            self._ring.submitted(frame.frame_index)

    def is_pending(self, frame_index: int) -> bool:
        return frame_index in self._waiting or (
            self._rec is not None and self._rec.frame_index == frame_index
        )

    # -- results ------------------------------------------------------------------------------
    def poll(self) -> list[tuple[int, tuple[PassDraws, ...]]]:
        """Finished frames ``(frame_index, PassDraws per pass)``, oldest first; never blocks."""
        if not self.available:
            return []
        return [self._decode(f, data) for f, data in self._ring.poll()]

    def drain(self, timeout_s: float = 2.0) -> list[tuple[int, tuple[PassDraws, ...]]]:
        """Shutdown: wait (bounded) for what is in flight."""
        if not self.available:
            return []
        self._rec = None
        return [self._decode(f, data) for f, data in self._ring.drain(timeout_s)]

    def _decode(self, frame_index: int, data: bytes) -> tuple[int, tuple[PassDraws, ...]]:
        frame = self._waiting.pop(frame_index)
        for stale in [f for f in self._waiting if f < frame_index]:
            del self._waiting[stale]
        ts = np.frombuffer(data, np.uint64, count=self._ts_cap).astype(np.int64)
        spans = [int(ts[i + 1] - ts[i]) for i in range(0, frame.ts_used, 2)]
        self._learn_resolution(s for s in spans if s > 0)
        two_res = 2 * max(self.resolution_ns, 1)
        out = []
        for p in frame.passes:
            base = {
                n: self._baseline(p.name, n, None if q is None else spans[q // 2])
                for n, q in p.baselines.items()
            }
            draws = []
            for d in p.draws:
                draws.append(self._decode_draw(p, d, ts, spans, base, data, two_res, frame_index))
            overhead = self._overhead(p, ts, spans)
            one = base.get(1, self._baseline(p.name, 1, None))
            out.append(PassDraws(p.name, p.kind, tuple(draws), one, overhead, self.unreliable))
        return frame_index, tuple(out)

    def _baseline(self, pass_name: str, repeats: int, reading: int | None) -> float | None:
        """Take this frame's empty-pass reading (``repeats`` passes in a row) into its
        window; the window's robust median (``robust_median``), None while empty."""
        window = self._baselines.get((pass_name, repeats))
        if reading is not None and reading > 0:
            if window is None:
                window = collections.deque(maxlen=self.baseline_window)
                self._baselines[(pass_name, repeats)] = window
            window.append(reading)
        return robust_median(window) if window else None

    def _overhead(self, p: _PassRec, ts, spans) -> float | None:
        """Take this frame's empty-pass reading of ``p`` (if any, and every timestamp of it
        was written) into the pass's window; the window's median, None while empty."""
        sig, window = self._overheads.get(p.name, ((), None))
        i = p.overhead_ts
        if i is not None:
            used = ts[i : i + 2 + 2 * p.overhead_pairs]
            pairs = spans[i // 2 + 1 : i // 2 + 1 + p.overhead_pairs]
            if window is None or sig != p.overhead_sig:  # first reading, or targets changed:
                window = collections.deque(maxlen=self.overhead_window)  # (new scratch)
                self._overheads[p.name] = (p.overhead_sig, window)
            elif used.all() and spans[i // 2] >= 0 and min(pairs, default=0) >= 0:
                window.append(spans[i // 2] - sum(pairs))
        return None if not window else float(statistics.median(window))

    def _decode_draw(self, p, d: _DrawRec, ts, spans, base, data, two_res, frame_index) -> Draw:
        begin = end = split = None
        below = False
        if d.ts is not None:
            begin, end = int(ts[d.ts]), int(ts[d.ts + 1])
            if begin == 0 or end == 0 or end < begin:  # not written / invalid: left out
                begin = end = None
            else:
                below = end - begin < two_res
        empty = base.get(d.repeats)
        key = (p.name, d.label)
        if d.replay_ts is not None and empty is not None:
            measured = spans[d.replay_ts // 2] - empty
            one = measured / d.repeats
            window = self._splits.setdefault(key, collections.deque(maxlen=self.split_window))
            window.append(one)
            self._split_meta[key] = (d.repeats, begin is None and measured < two_res, frame_index)
            estimate = one if begin is None else end - begin
            if estimate > 0:  # a reading at or below zero says nothing about the size
                self._repeats[key] = self._next_repeats(estimate, empty / d.repeats)
        counts = (None, None, None, None)
        if d.stats is not None:
            off = 8 * self._ts_cap + d.stats * self._st_stride
            counts = struct.unpack_from("<4Q", data, off)
            if p.kind == RENDER and counts[0] == 0:  # drew nothing: no split until it draws
                self._empty.add(key)
                self._splits.pop(key, None)
            else:
                self._empty.discard(key)
        repeats, split_frame, implausible, below_noise = d.repeats, None, None, False
        if key in self._splits:  # replayed this frame or earlier: the draw's kept readings
            split = robust_median(self._splits[key])
            repeats, below_split, split_frame = self._split_meta[key]
            below = below or (begin is None and below_split)
            noise = self._baseline_noise(p.name, repeats, two_res)
            if split < -noise:
                implausible = f"negative split {split / 1e6:+.4f} ms: cannot be a cost"
            below_noise = abs(split) <= noise
        return Draw(
            d.label, begin, end, split, repeats, below, *counts, implausible, split_frame,
            below_noise,
        )  # fmt: skip

    def _baseline_noise(self, pass_name: str, repeats: int, two_res: int) -> float:
        """Per repetition, what the subtracted baseline may be off by: ``NOISE_MADS`` scaled
        MADs of its window (at least two timestamp ticks)."""
        window = self._baselines.get((pass_name, repeats)) or ()
        if len(window) < 3:
            return two_res / repeats
        med = statistics.median(window)
        mad = 1.4826 * statistics.median(abs(x - med) for x in window)
        return max(NOISE_MADS * mad, two_res) / repeats

    def _next_repeats(self, per_repeat_ns: float, empty_pass_ns: float) -> int:
        """Repetitions for the next replay: enough to span ``target_ns``, at most
        ``max_repeats``, and no more than ``budget_ns`` of empty-pass overhead."""
        one = max(per_repeat_ns, self.resolution_ns, 1)
        n = min(self.max_repeats, math.ceil(self.target_ns / one))
        n = min(n, int(self.budget_ns // max(empty_pass_ns, 1)))
        return max(1, n)

    def _learn_resolution(self, spans) -> None:
        g = self.resolution_ns
        for s in spans:
            g = math.gcd(g, s)
            if g == 1:
                break
        self.resolution_ns = g
