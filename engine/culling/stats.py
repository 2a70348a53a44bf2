"""Non-blocking readback of the eight cull counters (``engine.readback.ReadbackRing``)."""

from __future__ import annotations

import collections

import numpy as np
import wgpu

from engine.culling.counters import NUM_COUNTERS, CullCounts
from engine.readback import ReadbackRing

COUNTERS_SIZE = NUM_COUNTERS * 4


class CullStats:
    """Collects ``CullCounts`` a few frames late, never waiting for the GPU.

    The counters of frame ``f`` are copied to a staging slot at the start of frame ``f + 1``
    (in ``Cull.Reset``, just before they are cleared), so no extra pass is needed.

    Args:
        device: the ``wgpu.GPUDevice``.
        history: how many collected frames ``history`` keeps.
        slots: readback slots in flight; ``batch``: frames per slot, read back with one map
            (``engine.readback``), so counters arrive up to ``slots * batch`` frames late.

    Attributes:
        latest: the newest ``CullCounts`` or None; ``history``: deque of recent ones, oldest
        first.
    """

    channel = "cull"  # engine.loop.ReadbackClient: fills FrameRecord.cull

    def __init__(
        self, device: wgpu.GPUDevice, *, history: int = 120, slots: int = 3, batch: int = 8
    ):
        self.device = device
        self.ring = ReadbackRing(
            device, COUNTERS_SIZE, slots=slots, batch=batch, label="cull counters"
        )
        self.latest: CullCounts | None = None
        self.history: collections.deque[CullCounts] = collections.deque(maxlen=history)
        self._pending: int | None = None  # frame whose copy was recorded but not yet submitted

    def record_copy(self, encoder: wgpu.GPUCommandEncoder, counters, frame_index: int) -> None:
        """Record the copy of ``frame_index``'s counters (call before they are cleared)."""
        self.after_submit()
        if self.ring.copy(encoder, counters):
            self._pending = frame_index

    def after_submit(self) -> None:
        """The encoder holding the last recorded copy was submitted: start its map."""
        if self._pending is not None:
            self.ring.submitted(self._pending)
            self._pending = None

    def collect(self) -> CullCounts | None:
        """Take every finished readback (never blocks); return the newest or None."""
        self.after_submit()
        self._take(self.ring.poll())
        return self.latest

    def drain(self, timeout_s: float = 1.0) -> CullCounts | None:
        """Shutdown only: wait for readbacks in flight and return the newest."""
        self.after_submit()
        self._take(self.ring.drain(timeout_s))
        return self.latest

    def _take(self, results) -> None:
        for frame_index, data in results:
            values = tuple(int(v) for v in np.frombuffer(data, np.uint32, NUM_COUNTERS))
            counts = CullCounts(frame_index, values)
            self.history.append(counts)
            self.latest = counts
