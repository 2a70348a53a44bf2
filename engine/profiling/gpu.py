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
``QUERY_RESOLVE|COPY_SRC`` resolve buffer. A frame's used queries are resolved and copied into
a region of a ``COPY_DST|MAP_READ`` slot of an ``engine.readback.ReadbackRing``, which hands
the bytes back once the GPU is done (see that module for how this is learned without
blocking). The ring maps ``batch`` frames at once: the map is the costly step through wgpu-py
(~0.1 ms on lavapipe), so its cost is shared by ``batch`` frames, each still tagged with its
own index; readings arrive up to ``batch - 1`` frames later. A pool goes back to the free list
when its frame was read back, so it is never rewritten before that.

**Where the resolve goes** (``resolve_delay``). Resolving is a transfer that waits for the
queries it reads (Vulkan: ``vkCmdCopyQueryPoolResults`` with ``WAIT``): at the end of the
frame that wrote them, it makes the queue drain the frame's last pass before anything after
it may start, so the next frame can no longer overlap this one's tail, a cost the profiler
adds to every frame. So a frame's resolve and copy are recorded at the start of the frame
``resolve_delay`` frames later (default 2), when its queries are long written and the wait is
free; the readings come back that many frames later. A loop that stops, or renders rarely,
gets its last frames resolved by ``poll`` once they are ``flush_after_s`` old (its own small
submission) and by ``drain``. ``resolve_delay=0`` resolves at the end of the frame, as before.

**Shared boundaries** (``"encoder"`` mode). Nothing is recorded between one pass's end and the
next pass's begin (snapshot copies are passes of their own), so one timestamp serves as both:
a frame of N passes writes N + 1 timestamps, not 2N, and pass i reads ``t[i] .. t[i + 1]``.

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
    shared: bool = False  # pass i reads t[i] .. t[i + 1] (encoder mode), else t[2i] .. t[2i + 1]
    submitted_ns: int = 0  # perf_counter_ns at its submission (deferred resolve)

    @property
    def queries(self) -> int:
        """Timestamps written for the passes (the resolve's count)."""
        n = len(self.names)
        return n + 1 if self.shared and n else 2 * n


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
        frames_in_flight: readback slots; a frame finding no query pool free (``batch *
            frames_in_flight + resolve_delay`` pools) is not timed (counted in
            ``skipped_frames``), never waited for.
        batch: frames per readback slot, read back with one map (module docstring).
        capacity: scopes per frame; more are counted as dropped, not recorded.
        transition_every: in ``"encoder"`` mode, every this-many-th frame also times render
            and compute passes with descriptor timestamps, to measure the transition billed
            before each (module docstring); 0: never. transition_window: sampled frames in
            the medians.
        resolve_delay: frames after which a frame's queries are resolved, at the start of a
            later frame (module docstring); 0: at the end of the frame itself.
        flush_after_s: a frame waiting for its resolve longer than this (wall clock) is
            resolved by ``poll`` in a submission of its own (a stopped or slow loop).
        shared_boundaries: ``"encoder"`` mode writes one timestamp per pass boundary (N + 1
            a frame) instead of a pair per pass (2N).

    Attributes:
        available: False when the device lacks ``timestamp-query`` (``reason`` says so);
            then every method is a cheap no-op.
        dropped, invalid, skipped_frames, untimed: running totals.

    Raises:
        ValueError: ``frames_in_flight``, ``batch`` or ``capacity`` < 1, ``resolve_delay`` < 0,
            an unknown ``mode``, or ``"encoder"`` on a device without
            ``timestamp-query-inside-encoders``.
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
        resolve_delay: int = 2,
        flush_after_s: float = 0.25,
        shared_boundaries: bool = True,
    ):
        if frames_in_flight < 1 or capacity < 1 or batch < 1:
            raise ValueError(
                f"GpuProfiler needs frames_in_flight, batch and capacity >= 1, "
                f"got {frames_in_flight}, {batch} and {capacity}"
            )
        if resolve_delay < 0:
            raise ValueError(f"GpuProfiler resolve_delay must be >= 0, got {resolve_delay}")
        self.resolve_delay = resolve_delay
        self._flush_after_ns = int(flush_after_s * 1e9)
        self.shared_boundaries = shared_boundaries
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
        self._unresolved: collections.deque[_Recording] = collections.deque()  # oldest first
        self._copied: _Recording | None = None  # resolved into an encoder not yet submitted
        self._pools: list[tuple[wgpu.GPUQuerySet, wgpu.GPUBuffer]] = []
        self._free_pools: collections.deque[int] = collections.deque()
        self._writes: list[list[dict]] = []  # per pool, per pass slot: timestamp_writes
        self._ring: ReadbackRing | None = None
        if not self.available:
            return
        dev = gpu.device
        usage = wgpu.BufferUsage.QUERY_RESOLVE | wgpu.BufferUsage.COPY_SRC
        halves = 2 if self.transition_every else 1  # second half: descriptor timestamps
        for i in range(frames_in_flight * batch + resolve_delay):
            qs = dev.create_query_set(
                label=f"timestamps {i}", type="timestamp", count=2 * capacity * halves
            )
            buf = dev.create_buffer(
                label=f"timestamps resolve {i}", size=16 * capacity * halves, usage=usage
            )
            self._pools.append((qs, buf))
            self._free_pools.append(i)
            self._writes.append([_writes(qs, j) for j in range(capacity * halves)])
        self._ring = ReadbackRing(
            dev, 16 * capacity * halves, slots=frames_in_flight, batch=batch, label="timestamps"
        )

    # -- recording (graph protocol) -----------------------------------------------------------
    def begin_frame(self, frame_index: int, encoder) -> None:
        self._abandon()  # a frame that never reached after_submit
        if not self.available:
            return
        if self.resolve_delay:  # an older frame's resolve, before this frame's first pass
            old = self._unresolved[0] if self._unresolved else None
            if old is not None and frame_index - old.frame_index >= self.resolve_delay:
                if self._resolve(old, encoder):
                    self._unresolved.popleft()
                    self._copied = old
        if not self._free_pools:
            self.skipped_frames += 1
            return
        self._rec = _Recording(frame_index, self._free_pools.popleft())
        self._rec.shared = self.shared_boundaries and self.mode == "encoder"
        every = self.transition_every
        self._rec.sampled = every > 0 and self._recorded % every == every // 2
        self._recorded += 1

    def _abandon(self) -> None:
        """Forget what the last frame recorded if it was never submitted: its pool is free
        again, and an older frame resolved into its encoder waits for the next one."""
        rec, self._rec = self._rec, None
        if rec is not None:
            self._waiting.pop(rec.frame_index, None)
            if rec.resolved:
                self._ring.discard_recorded()
            self._free_pools.append(rec.pool)
        if self._copied is not None:
            self._ring.discard_recorded()
            self._unresolved.appendleft(self._copied)
            self._copied = None

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
            qs = self._pools[rec.pool][0]
            if rec.shared:  # t[i] is the previous pass's end, written by end_pass
                if i == 0:
                    write_timestamp(encoder, qs, 0)
                rec.end_query = i + 1
            else:
                write_timestamp(encoder, qs, 2 * i)
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
            if rec is not None:
                self.dropped += rec.dropped  # everything dropped: still report it
                self._free_pools.append(rec.pool)
            self._rec = None
            return
        self._waiting[rec.frame_index] = rec
        if self.resolve_delay == 0 and self._resolve(rec, encoder):
            rec.resolved = True

    def _resolve(self, rec: _Recording, encoder) -> bool:
        """Record ``rec``'s resolve and its copy into the ring; False when every ring slot is
        in flight (nothing recorded)."""
        if not self._ring.has_free_slot():
            return False
        qs, resolve = self._pools[rec.pool]
        encoder.resolve_query_set(qs, 0, rec.queries, resolve, 0)
        size = 8 * rec.queries
        if rec.pass_slots:  # only written queries are resolved (unwritten ones can fault)
            m = 2 * len(rec.pass_slots)
            encoder.resolve_query_set(qs, 2 * self.capacity, m, resolve, 16 * self.capacity)
            size = 16 * self.capacity + 8 * m
        return self._ring.copy(encoder, resolve, 0, size)

    def after_submit(self) -> None:
        """The frame just submitted: start reading back what its encoder resolved (this
        frame's queries, or an older frame's); queue this frame's resolve. Non-blocking."""
        rec, self._rec = self._rec, None
        copied, self._copied = self._copied, None
        if copied is not None:
            self._ring.submitted(copied.frame_index)
        if rec is None or rec.frame_index not in self._waiting:
            return
        if rec.resolved:
            self._ring.submitted(rec.frame_index)
        else:
            rec.submitted_ns = time.perf_counter_ns()
            self._unresolved.append(rec)
        if self.resolve_delay == 0 and not rec.resolved:  # the ring was full: drop it
            self._unresolved.pop()
            self._drop(rec)

    def _drop(self, rec: _Recording) -> None:
        self._waiting.pop(rec.frame_index, None)
        self._free_pools.append(rec.pool)
        self.skipped_frames += 1

    def _resolve_now(self, older_than_ns: int | None) -> None:
        """Resolve waiting frames in submissions of their own (a stopped or slow loop, or
        shutdown): those submitted more than ``older_than_ns`` ago (None: all), while the
        ring has room."""
        now = time.perf_counter_ns()
        while self._unresolved and self._ring.has_free_slot():
            rec = self._unresolved[0]
            if older_than_ns is not None and now - rec.submitted_ns < older_than_ns:
                return
            encoder = self.gpu.device.create_command_encoder(label="timestamps resolve")
            if not self._resolve(rec, encoder):
                return
            self._unresolved.popleft()
            self.gpu.queue.submit([encoder.finish()])
            self._ring.submitted(rec.frame_index)

    def is_pending(self, frame_index: int) -> bool:
        """Whether GPU readings of ``frame_index`` are still to come."""
        return frame_index in self._waiting or (
            self._rec is not None and self._rec.frame_index == frame_index
        )

    # -- results -------------------------------------------------------------------------------
    def poll(self) -> list[GpuFrame]:
        """Frames whose readings are back, oldest first. Never blocks (frames waiting for
        their resolve longer than ``flush_after_s`` get one submitted here)."""
        if self._ring is None:
            return []
        if self._unresolved and self._rec is None and self._copied is None:  # between frames
            self._resolve_now(self._flush_after_ns)
        return [self._decode(f, data) for f, data in self._ring.poll()]

    def drain(self, timeout_s: float = 2.0) -> list[GpuFrame]:
        """Shutdown only: resolve what waits, then wait (bounded) for the readings."""
        if self._ring is None:
            return []
        self._abandon()
        out = []
        while True:
            self._resolve_now(None)
            got = [self._decode(f, data) for f, data in self._ring.drain(timeout_s)]
            out += got
            if not self._unresolved or not got:  # all resolved, or the ring is stuck
                return out

    def _decode(self, frame_index: int, data: bytes) -> GpuFrame:
        rec = self._waiting.pop(frame_index)
        self._free_pools.append(rec.pool)
        all_ticks = np.frombuffer(data, np.uint64)
        if rec.shared:
            t = all_ticks[: rec.queries]
            ticks = np.stack([t[:-1], t[1:]], axis=1)
        else:
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
        unresolved = {r.frame_index for r in self._unresolved}
        for stale in [f for f in self._waiting if f < frame_index and f not in unresolved]:
            self._free_pools.append(self._waiting.pop(stale).pool)
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
