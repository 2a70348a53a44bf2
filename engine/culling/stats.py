"""Non-blocking readback of the eight cull counters: the counter block ``cull``."""

from __future__ import annotations

import numpy as np
import wgpu

from engine.counters import CounterReadback
from engine.culling.counters import COUNTER_NAMES, NUM_COUNTERS, CullCounts

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
