"""Non-blocking GPU → CPU readback: a ring of ``MAP_READ`` staging buffers.

The frame path must never wait for the GPU. ``ReadbackRing`` records a copy of a GPU buffer
into a free staging slot, starts ``map_async`` after the frame is submitted, and hands back
the bytes of every slot whose map has finished, oldest first, tagged with the index of the
frame that produced them. A frame whose slots are all still in flight is dropped and counted,
never waited for.

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
extra ``queue.submit`` per ring per frame.
"""

from __future__ import annotations

import logging
import time
from collections import deque
from dataclasses import dataclass

import wgpu

log = logging.getLogger("lantern")

_FREE, _RECORDED, _MAPPING = "free", "recorded", "mapping"


def _map_read(buffer: wgpu.GPUBuffer, size: int):
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
    state: str = _FREE
    frame_index: int = -1
    size: int = 0
    promise: object = None


class ReadbackRing:
    """``slots`` MAP_READ staging buffers of ``size`` bytes; never blocks on the frame path.

    Per frame: ``copy(encoder, src)`` while recording, ``submitted(frame_index)`` right after
    ``queue.submit``, ``poll()`` whenever convenient (e.g. once per frame). Results come back
    ``slots - 1`` or fewer frames late on a GPU that keeps up.

    Args:
        device: the ``wgpu.GPUDevice``.
        size: bytes per slot (a multiple of 4, >= 4).
        slots: staging buffers, i.e. frames that may be in flight at once (>= 1).
        label: wgpu label prefix of the staging buffers.

    Attributes:
        dropped: copies refused because every slot was in flight.

    Raises:
        ValueError: ``size`` not a positive multiple of 4, or ``slots`` < 1.
    """

    def __init__(
        self, device: wgpu.GPUDevice, size: int, *, slots: int = 4, label: str = "readback"
    ):
        if not isinstance(size, int) or size < 4 or size % 4:
            raise ValueError(
                f"ReadbackRing size must be a positive multiple of 4 bytes, got {size!r}"
            )
        if not isinstance(slots, int) or slots < 1:
            raise ValueError(f"ReadbackRing slots must be an integer >= 1, got {slots!r}")
        self.device = device
        self.size = size
        usage = wgpu.BufferUsage.COPY_DST | wgpu.BufferUsage.MAP_READ
        self._slots = [
            _Slot(device.create_buffer(label=f"{label} {i}", size=size, usage=usage))
            for i in range(slots)
        ]
        self._free: deque[_Slot] = deque(self._slots)
        self._recorded: _Slot | None = None
        self._mapping: deque[_Slot] = deque()  # oldest first; the GPU finishes in this order
        self.dropped = 0

    @property
    def slots(self) -> int:
        return len(self._slots)

    @property
    def in_flight(self) -> int:
        """Slots recorded or mapping (not yet handed back by ``poll``)."""
        return len(self._slots) - len(self._free)

    def has_free_slot(self) -> bool:
        """Whether ``copy`` would succeed now (no side effects)."""
        return bool(self._free) or self._recorded is not None

    def copy(
        self,
        encoder: wgpu.GPUCommandEncoder,
        source: wgpu.GPUBuffer,
        source_offset: int = 0,
        size: int | None = None,
    ) -> bool:
        """Record ``copy_buffer_to_buffer`` of ``size`` bytes (default: the slot size) from
        ``source`` at ``source_offset`` into the next free slot for the frame being recorded.

        Returns False, and counts it in ``dropped``, when every slot is still in flight.
        A second ``copy`` before ``submitted`` reuses the same slot (last copy wins).

        Raises:
            ValueError: ``size`` larger than the slot or not a positive multiple of 4.
        """
        size = self.size if size is None else size
        if size < 4 or size % 4 or size > self.size:
            raise ValueError(
                f"readback size must be a multiple of 4 in 4..{self.size} bytes, got {size}"
            )
        slot = self._recorded
        if slot is None:
            if not self._free:
                self.dropped += 1
                return False
            slot = self._free.popleft()
            slot.state = _RECORDED
            self._recorded = slot
        slot.size = size
        encoder.copy_buffer_to_buffer(source, source_offset, slot.buffer, 0, size)
        return True

    def discard_recorded(self) -> None:
        """Forget a copy whose encoder was never submitted (its slot becomes free again)."""
        if self._recorded is not None:
            self._recorded.state = _FREE
            self._free.append(self._recorded)
            self._recorded = None

    def submitted(self, frame_index: int) -> None:
        """Call after ``queue.submit`` of the encoder ``copy`` recorded into: starts the map.
        Does nothing when no copy was recorded this frame."""
        slot = self._recorded
        if slot is None:
            return
        self._recorded = None
        slot.frame_index = frame_index
        slot.promise = _map_read(slot.buffer, slot.size)
        slot.state = _MAPPING
        self._mapping.append(slot)

    def poll(self) -> list[tuple[int, bytes]]:
        """Finished ``(frame_index, data)`` pairs, oldest first. Never blocks (except the
        documented fallback when the installed wgpu hides map completion)."""
        out = []
        while self._mapping:
            done = map_finished(self._mapping[0].promise)
            if done is None:  # fallback: wait only when the ring is otherwise full
                done = not self._free and self._recorded is None
            if not done:
                break
            self._take(self._mapping.popleft(), out)
        return out

    def drain(self, timeout_s: float = 1.0) -> list[tuple[int, bytes]]:
        """Shutdown only: wait up to ``timeout_s`` seconds in total for every map in flight.
        Slots still unfinished after the deadline are left mapping (and not returned)."""
        self.discard_recorded()
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
            log.warning("readback of frame %d failed: %s", slot.frame_index, e)
        else:
            out.append((slot.frame_index, bytes(slot.buffer.read_mapped(0, slot.size))))
            slot.buffer.unmap()
        slot.state = _FREE
        self._free.append(slot)
