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
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field

import numpy as np
import wgpu
from wgpu.backends.wgpu_native import extras

from ..readback import ReadbackRing
from ..telemetry import Scope

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


@dataclass
class _Recording:
    frame_index: int
    pool: int
    names: list[str] = field(default_factory=list)
    dropped: int = 0
    end_query: int | None = None  # transfer pass: encoder timestamp still to write
    resolved: bool = False


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


class GpuProfiler:
    """Timestamp-query pools for the passes of each frame.

    Args:
        gpu: an ``engine.gpu.Gpu``.
        mode: ``"auto"``, ``"pass"`` or ``"encoder"`` (module docstring).
        frames_in_flight: readback slots; a frame finding none free is not timed (counted in
            ``skipped_frames``), never waited for.
        batch: frames per readback slot, read back with one map (module docstring).
        capacity: scopes per frame; more are counted as dropped, not recorded.

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
        for i in range(frames_in_flight * batch):
            qs = dev.create_query_set(label=f"timestamps {i}", type="timestamp", count=2 * capacity)
            buf = dev.create_buffer(
                label=f"timestamps resolve {i}", size=16 * capacity, usage=usage
            )
            self._pools.append((qs, buf))
            self._writes.append([_writes(qs, j) for j in range(capacity)])
        self._ring = ReadbackRing(
            dev, 16 * capacity, slots=frames_in_flight, batch=batch, label="timestamps"
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
        self._ring.copy(encoder, resolve, 0, 8 * n)
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
        ticks = np.frombuffer(data, np.uint64).reshape(-1, 2)
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
        return GpuFrame(frame_index, scopes, rec.dropped, invalid)

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
