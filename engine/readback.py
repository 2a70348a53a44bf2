"""Non-blocking GPU → CPU readback: a ring of ``MAP_READ`` staging buffers.

The frame path must never wait for the GPU. ``ReadbackRing`` records a copy of a GPU buffer
into this frame's region of a staging slot; once a slot holds ``batch`` frames it starts one
``map_async`` for all of them after the frame is submitted, and hands back the bytes of every
slot whose map has finished, oldest first, split per frame and tagged with the index of the
frame that produced them. A frame finding every slot in flight is dropped and counted, never
waited for. Batching exists because a map is the expensive part through wgpu-py (its
``map_async`` call, the device poll thread waking up and taking the GIL, ``read_mapped`` and
``unmap``: ~0.1 ms on a 2-core lavapipe machine against ~2 us for the copy), and a batch of
``K`` frames pays it once; the price is up to ``K - 1`` frames more latency.

How we learn, without blocking, that a map finished (wgpu-py 0.32, ``wgpu/_async.py`` and
``wgpu/backends/wgpu_native/_api.py``, ``_poller.py``): each device owns a *poll thread* that
calls ``wgpuDevicePoll(wait=True)`` while any map is outstanding. When the GPU is done, the
map callback runs on that thread and sets the promise's ``threading.Event``
(``GPUPromise._thread_event``); ``buffer.map_state`` stays ``"pending"`` only because the
promise's *handler* runs on the next ``sync_wait()`` (or an event loop, which a plain frame
loop does not have). So ``_thread_event.is_set()`` is a non-blocking "map finished" test,
and ``sync_wait()`` after it returns at once. This reads one private attribute of the pinned
wgpu (``>=0.32,<0.33``); if it ever disappears the ring falls back to waiting on the oldest
slot only when every slot is in flight (a bounded, logged stall rather than a wrong answer).

Maps use the private ``"READ_NOSYNC"`` mode: plain ``"READ"`` first submits an empty command
buffer to dodge wgpu-native #305 (zeros after writing through a *mapping*), which does not
apply to a buffer filled by a GPU copy that was submitted before the map; it would cost one
extra ``queue.submit`` per map.
"""

from __future__ import annotations

import logging
import time
from collections import deque
from dataclasses import dataclass, field

import wgpu

log = logging.getLogger("lantern")


def map_read(buffer: wgpu.GPUBuffer, size: int):
    try:
        return buffer.map_async("READ_NOSYNC", 0, size)
    except (KeyError, ValueError, TypeError):  # private mode gone in a later wgpu
        return buffer.map_async(wgpu.MapMode.READ, 0, size)


def map_finished(promise) -> bool | None:
    """True/False: whether ``promise``'s GPU operation completed, learned without blocking;
    None when this wgpu version does not expose it (see the module docstring)."""
    event = getattr(promise, "_thread_event", None)
    return event.is_set() if event is not None else None


@dataclass(eq=False)
class _Slot:
    buffer: wgpu.GPUBuffer
    index: int
    frames: list = field(default_factory=list)  # (frame_index, offset, size), submitted
    promise: object = None
    first_ns: int = 0  # perf_counter_ns when its first frame was submitted

    @property
    def mapped_size(self) -> int:
        return max(offset + size for _, offset, size in self.frames)


class ReadbackRing:
    """``slots`` MAP_READ staging buffers, each holding ``batch`` frames of up to ``size``
    bytes; never blocks on the frame path.

    Per frame: ``copy(encoder, src)`` while recording, ``submitted(frame_index)`` right after
    ``queue.submit``, ``poll()`` whenever convenient (e.g. once per frame). A slot is mapped
    once its ``batch`` frames are submitted, at ``flush``, or by ``poll`` when its first
    frame was submitted more than ``flush_after_s`` ago (so a slow or stopped frame loop
    still gets its results), so the cost of a map
    (``map_async``, the poll thread's wake-up, ``read_mapped`` and ``unmap``: ~0.1 ms per map
    through wgpu-py on lavapipe) is paid once per ``batch`` frames. Results come back
    ``batch * slots - 1`` or fewer frames late on a GPU that keeps up, each still tagged with
    its own frame index.

    Args:
        device: the ``wgpu.GPUDevice``.
        size: bytes per frame (a multiple of 4, >= 4).
        slots: staging buffers that may be in flight at once (>= 1).
        batch: frames per staging buffer, i.e. per map (>= 1).
        flush_after_s: seconds after which ``poll`` maps a partly filled slot (None: never).
        label: wgpu label prefix of the staging buffers.

    Attributes:
        dropped: copies refused because every slot was full or in flight.

    Raises:
        ValueError: ``size`` not a positive multiple of 4, ``slots`` or ``batch`` < 1.
    """

    def __init__(
        self,
        device: wgpu.GPUDevice,
        size: int,
        *,
        slots: int = 4,
        batch: int = 1,
        flush_after_s: float | None = 0.25,
        label: str = "readback",
    ):
        if not isinstance(size, int) or size < 4 or size % 4:
            raise ValueError(
                f"ReadbackRing size must be a positive multiple of 4 bytes, got {size!r}"
            )
        if not isinstance(slots, int) or slots < 1:
            raise ValueError(f"ReadbackRing slots must be an integer >= 1, got {slots!r}")
        if not isinstance(batch, int) or batch < 1:
            raise ValueError(f"ReadbackRing batch must be an integer >= 1, got {batch!r}")
        self.device = device
        self.size = size
        self.batch = batch
        self._flush_after_ns = None if flush_after_s is None else int(flush_after_s * 1e9)
        self._stride = -(-size // 8) * 8  # map offsets must be multiples of 8
        usage = wgpu.BufferUsage.COPY_DST | wgpu.BufferUsage.MAP_READ
        self._slots = [
            _Slot(
                device.create_buffer(label=f"{label} {i}", size=self._stride * batch, usage=usage),
                i,
            )
            for i in range(slots)
        ]
        self._free: deque[_Slot] = deque(self._slots)
        self._filling: _Slot | None = None  # slot taking this batch's frames
        self._recorded: tuple[int, int] | None = None  # (offset, size) copied, not submitted
        self._mapping: deque[_Slot] = deque()  # oldest first; the GPU finishes in this order
        self.dropped = 0

    @property
    def slots(self) -> int:
        return len(self._slots)

    @property
    def in_flight(self) -> int:
        """Slots filling, recorded or mapping (not yet handed back by ``poll``)."""
        return len(self._slots) - len(self._free)

    def has_free_slot(self) -> bool:
        """Whether ``copy`` would succeed now (no side effects)."""
        return bool(self._free) or self._filling is not None

    def next_region(self) -> int | None:
        """Index in ``0 .. slots * batch - 1`` of the region the next ``copy`` writes (the
        same until ``submitted``), or None when ``copy`` would be dropped. A region is not
        reused before ``poll`` has handed back the frame that used it, so a user may keep
        per-region GPU resources (e.g. query sets) alongside."""
        slot = self._filling or (self._free[0] if self._free else None)
        if slot is None:
            return None
        return slot.index * self.batch + len(slot.frames)

    def copy(
        self,
        encoder: wgpu.GPUCommandEncoder,
        source: wgpu.GPUBuffer,
        source_offset: int = 0,
        size: int | None = None,
    ) -> bool:
        """Record ``copy_buffer_to_buffer`` of ``size`` bytes (default: ``self.size``) from
        ``source`` at ``source_offset`` into this frame's region of the filling slot.

        Returns False, and counts it in ``dropped``, when every slot is full or in flight.
        A second ``copy`` before ``submitted`` reuses the same region (last copy wins).

        Raises:
            ValueError: ``size`` larger than ``self.size`` or not a positive multiple of 4.
        """
        size = self.size if size is None else size
        if size < 4 or size % 4 or size > self.size:
            raise ValueError(
                f"readback size must be a multiple of 4 in 4..{self.size} bytes, got {size}"
            )
        slot = self._filling
        if slot is None:
            if not self._free:
                self.dropped += 1
                return False
            slot = self._filling = self._free.popleft()
        offset = len(slot.frames) * self._stride
        self._recorded = (offset, size)
        encoder.copy_buffer_to_buffer(source, source_offset, slot.buffer, offset, size)
        return True

    def discard_recorded(self) -> None:
        """Forget a copy whose encoder was never submitted (its region is free again)."""
        self._recorded = None
        slot = self._filling
        if slot is not None and not slot.frames:
            self._filling = None
            self._free.appendleft(slot)

    def submitted(self, frame_index: int) -> None:
        """Call after ``queue.submit`` of the encoder ``copy`` recorded into. Maps the slot
        once it holds ``batch`` frames. Does nothing when no copy was recorded this frame."""
        if self._recorded is None:
            return
        slot = self._filling
        if not slot.frames:
            slot.first_ns = time.perf_counter_ns()
        slot.frames.append((frame_index, *self._recorded))
        self._recorded = None
        if len(slot.frames) == self.batch:
            self._map(slot)

    def flush(self) -> None:
        """Map the filling slot now, with fewer than ``batch`` frames (e.g. at shutdown, or
        when a caller wants results without waiting for a full batch). Never blocks."""
        slot = self._filling
        if slot is not None and slot.frames and self._recorded is None:
            self._map(slot)

    def _map(self, slot: _Slot) -> None:
        self._filling = None
        slot.promise = map_read(slot.buffer, slot.mapped_size)
        self._mapping.append(slot)

    def poll(self) -> list[tuple[int, bytes]]:
        """Finished ``(frame_index, data)`` pairs, oldest first. Never blocks (except the
        documented fallback when the installed wgpu hides map completion)."""
        slot, after = self._filling, self._flush_after_ns
        if slot is not None and after is not None and slot.frames:
            if time.perf_counter_ns() - slot.first_ns > after:
                self.flush()
        out = []
        while self._mapping:
            done = map_finished(self._mapping[0].promise)
            if done is None:  # fallback: wait only when the ring is otherwise full
                done = not self._free and self._filling is None
            if not done:
                break
            self._take(self._mapping.popleft(), out)
        return out

    def drain(self, timeout_s: float = 1.0) -> list[tuple[int, bytes]]:
        """Shutdown only: map a partly filled slot, then wait up to ``timeout_s`` seconds in
        total for every map in flight. Slots still unfinished after the deadline are left
        mapping (and not returned)."""
        self.discard_recorded()
        self.flush()
        deadline = time.perf_counter() + timeout_s
        out = []
        while self._mapping:
            slot = self._mapping[0]
            event = getattr(slot.promise, "_thread_event", None)
            left = deadline - time.perf_counter()
            if event is not None and not event.wait(max(0.0, left)):
                log.warning(
                    "readback: %d map(s) unfinished after %.1f s", len(self._mapping), timeout_s
                )
                break
            self._take(self._mapping.popleft(), out)
        return out

    def _take(self, slot: _Slot, out: list) -> None:
        promise, slot.promise = slot.promise, None
        try:
            promise.sync_wait()  # already finished: resolves the promise, does not wait
        except Exception as e:  # map failed (e.g. device lost): free the slot, lose the data
            frames = [f for f, _, _ in slot.frames]
            log.warning("readback of frame(s) %s failed: %s", frames, e)
        else:
            data = slot.buffer.read_mapped(0, slot.mapped_size, copy=False)
            out.extend((f, bytes(data[o : o + n])) for f, o, n in slot.frames)
            slot.buffer.unmap()
        slot.frames = []
        self._free.append(slot)
