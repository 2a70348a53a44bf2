"""Non-blocking readback of the eight cull counters (the counter block ``cull``) and of each
shadow cascade's block (``cascade0`` .. ``cascade3``)."""

from __future__ import annotations

import numpy as np
import wgpu

from engine.counters import CounterReadback
from engine.culling.counters import (
    CASCADE_COUNTER_NAMES,
    COUNTER_NAMES,
    NUM_COUNTERS,
    CullCounts,
    cascade_block,
    cascade_offset,
)

COUNTERS_SIZE = NUM_COUNTERS * 4


class CullStats(CounterReadback):
    """Collects ``CullCounts`` a few frames late, never waiting for the GPU.

    The counters of frame ``f`` are copied to a staging slot at the start of frame ``f + 1``
    (in ``Cull.Reset``, just before they are cleared), so no extra pass is needed.

    Args:
        device: the ``wgpu.GPUDevice``; ``history``, ``slots``, ``batch``: as
            ``engine.counters.CounterReadback``.
    """

    def __init__(
        self, device: wgpu.GPUDevice, *, history: int = 120, slots: int = 3, batch: int = 8
    ):
        super().__init__(device, "cull", COUNTER_NAMES, history=history, slots=slots, batch=batch)

    def _take(self, results) -> None:
        for frame_index, data in results:
            values = tuple(int(v) for v in np.frombuffer(data, np.uint32, NUM_COUNTERS))
            counts = CullCounts(frame_index, values)
            self.history.append(counts)
            self.latest = counts


class CascadeStats(CounterReadback):
    """Shadow cascade ``cascade``'s counter block (``cascade_block``: tested, culled,
    casters), copied from its place in the cull counters buffer a few frames late.

    ``active`` is False while the frame has no such cascade (fewer cascades, or shadows
    off): no copy is recorded and the frame loop publishes no counts for it, rather than the
    last ones it had.

    Args:
        device: the ``wgpu.GPUDevice``; ``cascade``: 0..3; ``history``, ``slots``,
            ``batch``: as ``engine.counters.CounterReadback``.
    """

    def __init__(self, device: wgpu.GPUDevice, cascade: int, *, history: int = 120,
                 slots: int = 3, batch: int = 8):  # fmt: skip
        super().__init__(device, cascade_block(cascade), CASCADE_COUNTER_NAMES,
                         history=history, slots=slots, batch=batch)  # fmt: skip
        self.cascade, self.offset = cascade, cascade_offset(cascade)
        self.active = cascade == 0

    def record_copy(self, encoder: wgpu.GPUCommandEncoder, counters, frame_index: int) -> None:
        """Record the copy of ``frame_index``'s block from the counters buffer."""
        self.after_submit()
        if self.ring.copy(encoder, counters, self.offset):
            self._pending = frame_index

    def set_active(self, active: bool) -> None:
        """Follow the frame's cascades; an inactive block forgets its counts."""
        if not active and self.active:
            self.latest = None
            self.history.clear()
        self.active = active
