"""FrameProfiler: the render graph's profiler sink, merging GPU and CPU timings per frame."""

from __future__ import annotations

import collections
import logging

from engine.profiling.cpu import CpuProfiler
from engine.profiling.gpu import GpuFrame, GpuProfiler
from engine.telemetry.record import FrameTimings, ProfilingInfo

log = logging.getLogger("lantern")

HISTORY_FRAMES = 300
DRAWS_CPU_SCOPE = "Draw replay"  # CPU scope of the per-draw replays' recording (draws on)


class FrameProfiler:
    """Optional GPU (timestamp queries) and CPU (``perf_counter_ns``) timing of every pass.

    Attach with ``graph.profiler = FrameProfiler(gpu)``; the graph calls ``begin_frame``,
    ``begin_pass``/``end_pass`` per pass and ``end_frame``; the app calls ``cpu_begin``/
    ``cpu_end`` around Update, Submit and Present and ``after_submit`` after
    ``queue.submit``. Nothing here waits for the GPU except ``drain`` and ``write_trace``
    (shutdown).

    Args:
        gpu_ctx: an ``engine.gpu.Gpu``.
        gpu: time passes on the GPU (needs ``timestamp-query``; else ``n/a``).
        cpu: time pass recording, Update, Submit and Present on the CPU.
        frames_in_flight: GPU readback slots.
        batch: frames read back per map (``engine.profiling.gpu``): GPU readings arrive up
            to ``frames_in_flight * batch`` frames late, plus the resolve's delay (2 frames);
            a batch is read back early once its first frame is 0.25 s old (slow frame loops).
        capacity: GPU scopes per frame; more are counted as dropped.
        history: finished frames held for ``collect`` (the oldest go if nobody collects).
        timestamps: where GPU timestamps go: ``"auto"``, ``"pass"`` (pass descriptors) or
            ``"encoder"`` (between passes); see ``engine.profiling.gpu``.
        draws: also time every draw and dispatch and count its pipeline statistics
            (``engine.profiling.draws``; ``--gpu-profile draws``). Off: no extra query set,
            no extra timestamp, and passes record into their real pass encoders.
        draw_options: keyword arguments of ``engine.profiling.draws.DrawProfiler``.
        gpu_options: more keyword arguments of ``engine.profiling.gpu.GpuProfiler``
            (``resolve_delay``, ``shared_boundaries``, ``transition_every``: the benchmark's
            arms).

    ``collect`` hands out ``FrameTimings``, GPU and CPU merged by frame index, oldest first
    (the frame loop publishes them; ``engine.telemetry`` keeps the history). ``gpu`` is None
    when GPU timing is unavailable, or for a frame that found every query pool in flight
    (``FrameTimings.gpu_skipped``); scope names equal the graph's pass names (plus Update, Submit,
    Present on the CPU).

    Attributes:
        gpu_available: False -> GPU columns show ``n/a`` (``gpu_unavailable_reason`` says why).
    """

    def __init__(
        self,
        gpu_ctx,
        *,
        gpu: bool = True,
        cpu: bool = True,
        frames_in_flight: int = 3,
        batch: int = 8,
        capacity: int = 64,
        history: int = HISTORY_FRAMES,
        timestamps: str = "auto",
        draws: bool = False,
        draw_options: dict | None = None,
        gpu_options: dict | None = None,
    ):
        self.gpu_ctx = gpu_ctx
        self.gpu = (
            GpuProfiler(
                gpu_ctx,
                mode=timestamps,
                frames_in_flight=frames_in_flight,
                batch=batch,
                capacity=capacity,
                **(gpu_options or {}),
            )
            if gpu
            else None
        )
        self.cpu = CpuProfiler() if cpu else None
        self.draws = None
        if draws and self.gpu is not None and self.gpu.available:
            from engine.profiling.draws import DrawProfiler

            opts = {"slots": frames_in_flight, "batch": batch, "timestamps": self.gpu.mode}
            opts.update(draw_options or {})
            self.draws = DrawProfiler(gpu_ctx, **opts)
        self.active = True  # engine.profiling.sink.ProfilerSink: the graph calls this sink
        self.gpu_available = self.gpu is not None and self.gpu.available
        if self.gpu is None:
            self.gpu_unavailable_reason = "GPU profiling is off (run with --gpu-profile)"
        else:
            self.gpu_unavailable_reason = self.gpu.reason
        self._ready: collections.deque[FrameTimings] = collections.deque(maxlen=history)
        self._pending: dict[int, FrameTimings] = {}
        self._done_gpu: set[int] = set()  # pending frames whose GPU readings came back
        self._done_draws: set[int] = set()  # ... and whose per-draw readings did

    def session_info(self, graph) -> ProfilingInfo:
        """What the telemetry session says about profiling (``Session.profiling``): which
        clocks are on, whether GPU timing is possible and why not, the query pool's capacity
        and the transfer passes that cannot be GPU-timed on this device."""
        gpu_on = self.gpu is not None
        untimed = gpu_on and self.gpu_available and not self.gpu.encoder_timestamps
        return ProfilingInfo(
            gpu=gpu_on,
            cpu=self.cpu is not None,
            gpu_available=self.gpu_available,
            gpu_unavailable_reason=self.gpu_unavailable_reason,
            capacity=self.gpu.capacity if gpu_on else 0,
            untimed=[p.name for p in graph.passes if p.kind == "transfer"] if untimed else [],
            draws=self._draws_info(),
            transitions=self._transitions_info(),
        )

    def _transitions_info(self) -> dict | None:
        """How transitions are measured (``engine.profiling.gpu``), None when they are not."""
        g = self.gpu
        if g is None or not g.available or not g.transition_every:
            return None
        return {"every": g.transition_every, "window": g.transition_window}

    def _draws_info(self) -> dict | None:
        d = self.draws
        if d is None:
            return None
        return {
            "inside": d.inside,
            "split": d.split,
            "stats": d.stats,
            "capacity": d.capacity,
            "target_ns": d.target_ns,
            "max_repeats": d.max_repeats,
            "overhead_every": d.overhead_every,
            "overhead_window": d.overhead_window,
        }

    # -- graph protocol ---------------------------------------------------------------------------
    def begin_frame(self, frame_index: int, encoder) -> None:
        if self.cpu is not None:
            self.cpu.begin_frame(frame_index)
        if self.gpu_available:
            self.gpu.begin_frame(frame_index, encoder)
        if self.draws is not None:
            self.draws.begin_frame(frame_index)

    def begin_pass(self, name: str, kind: str, encoder) -> dict | None:
        if self.cpu is not None:
            self.cpu.begin(name)
        return self.gpu.begin_pass(name, kind, encoder) if self.gpu_available else None

    def pass_encoder(self, name: str, kind: str, pass_encoder, targets: dict | None):
        if self.draws is None:
            return pass_encoder
        return self.draws.wrap(name, kind, pass_encoder, targets)

    def end_pass(self, name: str, kind: str, encoder) -> None:
        if self.gpu_available:
            self.gpu.end_pass(name, kind, encoder)
        if self.cpu is not None:
            self.cpu.end()

    def end_frame(self, encoder) -> None:
        if self.draws is not None:  # replays and resolves: a CPU scope of its own
            self.cpu_begin(DRAWS_CPU_SCOPE)
            self.draws.end_frame(encoder)
            self.cpu_end()
        if self.gpu_available:
            self.gpu.end_frame(encoder)

    # -- app protocol -----------------------------------------------------------------------------
    def cpu_begin(self, name: str) -> None:
        if self.cpu is not None:
            self.cpu.begin(name)

    def cpu_end(self) -> None:
        if self.cpu is not None:
            self.cpu.end()

    def after_submit(self) -> None:
        """Start this frame's GPU readback; queue finished frames for ``collect``."""
        if self.gpu_available:
            self.gpu.after_submit()
        if self.draws is not None:
            self.draws.after_submit()
        if self.cpu is not None:
            self.cpu.submitted()
        self._pump(self.gpu.poll() if self.gpu_available else [])

    def collect(self) -> FrameTimings | None:
        """The oldest finished frame not collected yet, or None. Never blocks."""
        self._pump(self.gpu.poll() if self.gpu_available else [])
        return self._ready.popleft() if self._ready else None

    def drain(self) -> None:
        """Shutdown: gather what is still in flight (bounded wait) for ``collect``."""
        if self.cpu is not None:
            self.cpu.flush()
        gpu = self.gpu.drain() if self.gpu_available else []
        self._pump(gpu, final=True, draws=self.draws.drain() if self.draws else None)

    # -- merging ----------------------------------------------------------------------------------
    def _pump(self, gpu_frames: list[GpuFrame], final: bool = False, draws=None) -> None:
        for g in gpu_frames:
            t = self._entry(g.frame_index)
            t.gpu, t.dropped, t.invalid = g.scopes, g.dropped, g.invalid
            t.transitions = g.transitions
            self._done_gpu.add(g.frame_index)
        dp = self.draws
        if dp is not None:
            for f, passes in dp.poll() if draws is None else draws:
                t = self._entry(f)
                t.draws = passes
                self._done_draws.add(f)
        if self.cpu is not None:
            while self.cpu.frames:
                f, scopes = self.cpu.frames.popleft()
                self._entry(f).cpu = scopes
        for f in sorted(self._pending):
            t = self._pending[f]
            gpu_waiting = self.gpu_available and f not in self._done_gpu
            gpu_waiting = gpu_waiting and self.gpu.is_pending(f) and not final
            cpu_waiting = self.cpu is not None and t.cpu is None and not final
            draws_waiting = (
                dp is not None and f not in self._done_draws and dp.is_pending(f) and not final
            )
            if gpu_waiting or cpu_waiting or draws_waiting:
                if len(self._pending) < 64:
                    break  # keep frames in order; older frames finish first
                log.debug("profiler: frame %d given up incomplete", f)
            self._done_gpu.discard(f)
            self._done_draws.discard(f)
            del self._pending[f]
            if t.gpu is None and t.cpu is None:
                continue
            if self.gpu_available and t.gpu is None:
                t.gpu_skipped = True  # every query pool was in flight
            self._ready.append(t)

    def _entry(self, frame_index: int) -> FrameTimings:
        t = self._pending.get(frame_index)
        if t is None:
            t = self._pending[frame_index] = FrameTimings(frame_index)
        return t
