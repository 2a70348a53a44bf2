"""GPU pass timing with timestamp queries, read back a few frames late without stalling.

Two ways to place the timestamps (``mode``):

* ``"encoder"``: every pass is bracketed by two encoder timestamps written just before it
  begins and just after it ends (``wgpuCommandEncoderWriteTimestamp``; needs wgpu-native's
  ``timestamp-query-inside-encoders``).
* ``"pass"``: render and compute passes get ``timestamp_writes`` on their pass descriptor
  (needs only ``timestamp-query``). Transfer passes have no descriptor, so they are bracketed
  with encoder timestamps only where ``timestamp-query-inside-encoders`` was enabled, else
  not GPU-timed (counted in ``untimed``).

``"auto"`` is ``"encoder"`` where the feature exists, else ``"pass"``. Both read the same on
the H200 (standard frame, GPU time vs no profiler: -3.5 us encoder, +3.2 us pass, within
noise), but the CPU cost differs 5x: wgpu-py validates and builds a descriptor struct per
pass (6-8 us on a 2-core lavapipe machine and on the H200's host), while an encoder timestamp
is one native call (~1 us, called directly through wgpu-native's FFI, pinned wgpu <0.33,
falling back to ``extras.write_timestamp``). At 9 passes per frame that is ~45 us a frame.

Known driver caveat (measured here, Mesa 22.3.6 lavapipe): once any render pass has executed
on a device, llvmpipe takes later compute-pass timestamps, in both modes, without waiting for
the dispatches recorded before them (a 36 ms pass reads ~0.01 ms); before that, readings
are right. Lavapipe timing tests therefore use a device of their own.

One pool per frame in flight: a query set of ``2 * capacity`` timestamps and a
``QUERY_RESOLVE|COPY_SRC`` resolve buffer; ``end_frame`` resolves the used queries and copies
them into this frame's region of a ``COPY_DST|MAP_READ`` slot of an
``engine.readback.ReadbackRing``, which hands the bytes back once the GPU is done (see that
module for how this is learned without blocking). The ring maps ``batch`` frames at once:
the map is the costly step through wgpu-py (~0.1 ms on lavapipe), so its cost is shared by
``batch`` frames, each still tagged with its own index; readings arrive up to ``batch - 1``
frames later. There is one pool per ring region (``frames_in_flight * batch``), so a pool is
reused only after its frame was read back.

Per-pass cost is kept to the native calls: in ``"pass"`` mode the ``timestamp_writes`` dicts
are built once per (pool, pass slot) and reused, and nothing is allocated per pass but the
pass's name entry.
Values are nanoseconds because ``engine.gpu`` enables wgpu-native's
``AutomaticTimestampNormalization`` instance flag.

Transitions (``"encoder"`` mode): encoder timestamps bracket a pass *and* the barriers
(layout transitions, cache flushes) wgpu records before it, so each pass is also billed for
the transition it needed (HiZ read 0.066 ms in the frame against 0.036 ms alone). Billing it
to the pass that needed it keeps the passes adding up to the frame; to show it, every
``transition_every``-th recorded frame also gives each render and compute pass
descriptor timestamps (``timestamp_writes``: the pass's own begin and end, inside the
barriers), and a pass's transition is the median of its encoder spans minus the median of
its descriptor spans over the last ``transition_window`` such frames (difference of
medians: robust to a stray frame). ``GpuFrame.transitions`` carries the current estimate
per pass on every frame (nanoseconds; noise can make a cheap one slightly negative: never
clamped); the pass's own figure stays the encoder span, so "HiZ 0.066 ms = 0.036 ms + 0.030
ms transition" and the frame still adds up.
"""

from __future__ import annotations

import collections
import logging
import statistics
import time
from dataclasses import dataclass, field

import numpy as np
import wgpu
from wgpu.backends.wgpu_native import extras

from engine.readback import ReadbackRing
from engine.telemetry import Scope

log = logging.getLogger("lantern")

TRANSFER = "transfer"  # engine.graph.TRANSFER (the graph imports this package, not the reverse)


def write_timestamp(encoder: wgpu.GPUCommandEncoder, query_set, index: int) -> None:
    """Write timestamp ``index`` of ``query_set`` on the command encoder (between passes)."""
    _native_write(encoder._internal, query_set._internal, index)


try:  # one native call; wgpu-py's extras.write_timestamp adds ~1.5 us of Python per call
    from wgpu.backends.wgpu_native._ffi import lib as _lib

    _native_write = _lib.wgpuCommandEncoderWriteTimestamp
except (ImportError, AttributeError):  # a later wgpu: the public, slower way

    def write_timestamp(encoder, query_set, index: int) -> None:  # noqa: F811
        extras.write_timestamp(encoder, query_set, index)


@dataclass
class GpuFrame:
    """One frame's GPU readings: ``scopes`` in declaration order (valid readings only)."""

    frame_index: int
    scopes: list[Scope]
    dropped: int = 0
    invalid: int = 0
    transitions: dict[str, float] | None = None  # pass -> ns billed before it (encoder mode)


@dataclass
class _Recording:
    frame_index: int
    pool: int
    names: list[str] = field(default_factory=list)
    dropped: int = 0
    end_query: int | None = None  # transfer pass: encoder timestamp still to write
    resolved: bool = False
    sampled: bool = False  # also descriptor timestamps this frame (transitions)
    pass_slots: list[int] = field(default_factory=list)  # per descriptor pair: index in names


def _writes(query_set: wgpu.GPUQuerySet, i: int) -> dict:
    """``timestamp_writes`` of the ``i``-th pass slot (built once, reused every frame)."""
    return {
        "query_set": query_set,
        "beginning_of_pass_write_index": 2 * i,
        "end_of_pass_write_index": 2 * i + 1,
    }


def _choose_mode(gpu, mode: str) -> str:
    if mode not in ("auto", "pass", "encoder"):
        raise ValueError(f"timestamp mode must be 'auto', 'pass' or 'encoder', got {mode!r}")
    if mode == "encoder" and gpu.has_timestamps and not gpu.has_encoder_timestamps:
        raise ValueError(
            "timestamp mode 'encoder' needs the 'timestamp-query-inside-encoders' feature, "
            f"which {gpu.summary} lacks; use 'pass'"
        )
    if mode == "auto":
        return "encoder" if gpu.has_encoder_timestamps else "pass"
    return mode


def plausible_transition(transition_ns: float, pass_ns: float | None) -> bool:
    """Whether a transition estimate can be part of a pass that took ``pass_ns``: not
    negative and not more than the pass (lavapipe, whose compute timestamps stop waiting for
    dispatches once a device has rendered, reads both); views print ``n/a (implausible)``
    otherwise, never the number."""
    return transition_ns >= 0 and (pass_ns is None or transition_ns <= pass_ns)


class GpuProfiler:
    """Timestamp-query pools for the passes of each frame.

    Args:
        gpu: an ``engine.gpu.Gpu``.
        mode: ``"auto"``, ``"pass"`` or ``"encoder"`` (module docstring).
        frames_in_flight: readback slots; a frame finding none free is not timed (counted in
            ``skipped_frames``), never waited for.
        batch: frames per readback slot, read back with one map (module docstring).
        capacity: scopes per frame; more are counted as dropped, not recorded.
        transition_every: in ``"encoder"`` mode, every this-many-th frame also times render
            and compute passes with descriptor timestamps, to measure the transition billed
            before each (module docstring); 0: never. transition_window: sampled frames in
            the medians.

    Attributes:
        available: False when the device lacks ``timestamp-query`` (``reason`` says so);
            then every method is a cheap no-op.
        dropped, invalid, skipped_frames, untimed: running totals.

    Raises:
        ValueError: ``frames_in_flight``, ``batch`` or ``capacity`` < 1, an unknown ``mode``, or
            ``"encoder"`` on a device without ``timestamp-query-inside-encoders``.
    """

    def __init__(
        self,
        gpu,
        *,
        mode: str = "auto",
        frames_in_flight: int = 3,
        batch: int = 8,
        capacity: int = 64,
        transition_every: int = 16,
        transition_window: int = 9,
    ):
        if frames_in_flight < 1 or capacity < 1 or batch < 1:
            raise ValueError(
                f"GpuProfiler needs frames_in_flight, batch and capacity >= 1, "
                f"got {frames_in_flight}, {batch} and {capacity}"
            )
        self.mode = _choose_mode(gpu, mode)
        self.gpu = gpu
        self.capacity = capacity
        self.available = gpu.has_timestamps
        self.reason = (
            None
            if self.available
            else f"the device has no 'timestamp-query' feature ({gpu.summary})"
        )
        self.encoder_timestamps = gpu.has_encoder_timestamps
        self.transition_every = transition_every if self.mode == "encoder" else 0
        self.transition_window = transition_window
        self._recorded = 0  # frames recorded: every transition_every-th is sampled
        self._spans: dict[str, tuple[collections.deque, collections.deque]] = {}  # enc, pass
        self.dropped = self.invalid = self.skipped_frames = self.untimed = 0
        self._rec: _Recording | None = None
        self._waiting: dict[int, _Recording] = {}  # frame index -> recording being read back
        self._pools: list[tuple[wgpu.GPUQuerySet, wgpu.GPUBuffer]] = []
        self._writes: list[list[dict]] = []  # per pool, per pass slot: timestamp_writes
        self._ring: ReadbackRing | None = None
        if not self.available:
            return
        dev = gpu.device
        usage = wgpu.BufferUsage.QUERY_RESOLVE | wgpu.BufferUsage.COPY_SRC
        halves = 2 if self.transition_every else 1  # second half: descriptor timestamps
        for i in range(frames_in_flight * batch):
            qs = dev.create_query_set(
                label=f"timestamps {i}", type="timestamp", count=2 * capacity * halves
            )
            buf = dev.create_buffer(
                label=f"timestamps resolve {i}", size=16 * capacity * halves, usage=usage
            )
            self._pools.append((qs, buf))
            self._writes.append([_writes(qs, j) for j in range(capacity * halves)])
        self._ring = ReadbackRing(
            dev, 16 * capacity * halves, slots=frames_in_flight, batch=batch, label="timestamps"
        )

    # -- recording (graph protocol) -----------------------------------------------------------
    def begin_frame(self, frame_index: int, encoder) -> None:
        if self._rec is not None and self._rec.resolved:  # resolved but never submitted
            self._waiting.pop(self._rec.frame_index, None)
            self._ring.discard_recorded()
        self._rec = None  # (a frame that never reached end_frame is simply forgotten)
        if not self.available:
            return
        pool = self._ring.next_region()
        if pool is None:
            self.skipped_frames += 1
            return
        self._rec = _Recording(frame_index, pool)
        every = self.transition_every
        self._rec.sampled = every > 0 and self._recorded % every == every // 2
        self._recorded += 1

    def begin_pass(self, name: str, kind: str, encoder) -> dict | None:
        rec = self._rec
        if rec is None:
            return None
        by_encoder = kind == TRANSFER or self.mode == "encoder"
        if by_encoder and not self.encoder_timestamps:
            self.untimed += 1
            return None
        i = len(rec.names)
        if i >= self.capacity:
            rec.dropped += 1
            return None
        rec.names.append(name)
        if by_encoder:
            write_timestamp(encoder, self._pools[rec.pool][0], 2 * i)
            rec.end_query = 2 * i + 1
            if rec.sampled and kind != TRANSFER:  # the pass's own span, inside the barriers
                rec.pass_slots.append(i)
                return self._writes[rec.pool][self.capacity + len(rec.pass_slots) - 1]
            return None
        return self._writes[rec.pool][i]

    def end_pass(self, name: str, kind: str, encoder) -> None:
        rec = self._rec
        if rec is not None and rec.end_query is not None:
            write_timestamp(encoder, self._pools[rec.pool][0], rec.end_query)
            rec.end_query = None

    def end_frame(self, encoder) -> None:
        rec = self._rec
        if rec is None or not rec.names:
            if rec is not None and rec.dropped:  # everything dropped: still report it
                self.dropped += rec.dropped
            self._rec = None
            return
        qs, resolve = self._pools[rec.pool]
        n = 2 * len(rec.names)
        encoder.resolve_query_set(qs, 0, n, resolve, 0)
        size = 8 * n
        if rec.pass_slots:  # only written queries are resolved (unwritten ones can fault)
            m = 2 * len(rec.pass_slots)
            encoder.resolve_query_set(qs, 2 * self.capacity, m, resolve, 16 * self.capacity)
            size = 16 * self.capacity + 8 * m
        self._ring.copy(encoder, resolve, 0, size)
        rec.resolved = True
        self._waiting[rec.frame_index] = rec

    def after_submit(self) -> None:
        """Start reading back the frame just submitted (non-blocking)."""
        rec, self._rec = self._rec, None
        if rec is not None and rec.resolved:
            self._ring.submitted(rec.frame_index)

    def is_pending(self, frame_index: int) -> bool:
        """Whether GPU readings of ``frame_index`` are still to come."""
        return frame_index in self._waiting or (
            self._rec is not None and self._rec.frame_index == frame_index
        )

    # -- results -------------------------------------------------------------------------------
    def poll(self) -> list[GpuFrame]:
        """Frames whose readings are back, oldest first. Never blocks."""
        return [self._decode(f, data) for f, data in self._ring.poll()] if self._ring else []

    def drain(self, timeout_s: float = 2.0) -> list[GpuFrame]:
        """Shutdown only: wait (bounded) for the readings still in flight."""
        if self._ring is None:
            return []
        if self._rec is not None and self._rec.resolved:
            self._waiting.pop(self._rec.frame_index, None)
        self._rec = None
        return [self._decode(f, data) for f, data in self._ring.drain(timeout_s)]

    def _decode(self, frame_index: int, data: bytes) -> GpuFrame:
        rec = self._waiting.pop(frame_index)
        all_ticks = np.frombuffer(data, np.uint64)
        ticks = all_ticks[: 2 * len(rec.names)].reshape(-1, 2)
        scopes, invalid = [], 0
        for name, (b, e) in zip(rec.names, ticks.tolist(), strict=True):
            if b == 0 or e == 0 or e < b:  # never clamped: counted and left out
                invalid += 1
            else:
                scopes.append(Scope(name, b, e))
        self.dropped += rec.dropped
        self.invalid += invalid
        # Frames whose readback never came back (map failure) must not pile up.
        for stale in [f for f in self._waiting if f < frame_index]:
            del self._waiting[stale]
        if rec.pass_slots:
            pairs = all_ticks[2 * self.capacity :].reshape(-1, 2)[: len(rec.pass_slots)]
            self._take_transitions(rec, ticks, pairs)
        return GpuFrame(frame_index, scopes, rec.dropped, invalid, self.transitions())

    def _take_transitions(self, rec: _Recording, encoder_ticks, pass_ticks) -> None:
        """Add a sampled frame's (encoder span, descriptor span) per pass to its windows;
        pairs with a zero or backwards reading are left out."""
        for i, (pb, pe) in zip(rec.pass_slots, pass_ticks.tolist(), strict=True):
            eb, ee = encoder_ticks[i].tolist()
            if 0 in (pb, pe, eb, ee) or pe < pb or ee < eb:
                continue
            name = rec.names[i]
            if name not in self._spans:
                w = self.transition_window
                self._spans[name] = (collections.deque(maxlen=w), collections.deque(maxlen=w))
            enc, own = self._spans[name]
            enc.append(ee - eb)
            own.append(pe - pb)

    def transitions(self) -> dict[str, float] | None:
        """Per pass: median encoder span - median descriptor span over the sampled frames
        (ns), the transition billed before the pass; None outside ``"encoder"`` mode or
        before the first sampled frame came back."""
        if not self._spans:
            return None
        return {
            name: float(statistics.median(enc) - statistics.median(own))
            for name, (enc, own) in self._spans.items()
        }

    # -- clock calibration (shutdown only) -------------------------------------------------------
    def calibrate(self, attempts: int = 5) -> tuple[int, int] | None:
        """Estimate ``cpu_ns - gpu_ns`` (GPU timestamps onto ``time.perf_counter_ns``).

        Blocks (shutdown/trace only). Method: on an idle queue, submit an empty compute pass
        with a beginning-of-pass timestamp; the GPU cannot start it before ``submit`` was
        called (t0) and has finished it when a readback returns (t2). We place the GPU begin
        at the moment ``submit`` returned (t1); best of ``attempts`` = the narrowest
        [t0, t2] window. Returns ``(offset_ns, uncertainty_ns)`` or None without timestamps.
        """
        if not self.available:
            return None
        dev = self.gpu.device
        qs = dev.create_query_set(label="calibration", type="timestamp", count=2)
        usage = wgpu.BufferUsage.QUERY_RESOLVE | wgpu.BufferUsage.COPY_SRC
        buf = dev.create_buffer(label="calibration", size=16, usage=usage)
        best = None
        for _ in range(attempts):
            dev.queue.read_buffer(buf)  # waits until the queue is idle
            enc = dev.create_command_encoder(label="clock calibration")
            cpass = enc.begin_compute_pass(
                label="clock calibration",
                timestamp_writes={"query_set": qs, "beginning_of_pass_write_index": 0},
            )
            cpass.end()
            enc.resolve_query_set(qs, 0, 1, buf, 0)
            cmd = enc.finish()
            t0 = time.perf_counter_ns()
            dev.queue.submit([cmd])
            t1 = time.perf_counter_ns()
            gpu_begin = int(np.frombuffer(dev.queue.read_buffer(buf, 0, 8), np.uint64)[0])
            t2 = time.perf_counter_ns()
            if gpu_begin and (best is None or t2 - t0 < best[1]):
                best = (t1 - gpu_begin, t2 - t0)
        qs.destroy()
        buf.destroy()
        return best
