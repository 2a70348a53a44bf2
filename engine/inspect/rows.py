"""Which rows (one depth of one lane) hold a span in a time range: lanes are sized to what
is in view, not to their deepest point anywhere in the trace.

Spans of one row never overlap (``nesting_depth``), so sorted by start their ends are
sorted too: a row has a span in ``[t0, t1)`` when the first span ending after ``t0`` starts
before ``t1``: two binary searches per row, whatever the span count.
"""

from __future__ import annotations

import numpy as np

from engine.inspect.traceload import COUNTER_ROWS, SpanTable


class RowIndex:
    """Per row, the spans' starts and ends in start order.

    Args:
        table: the spans (sorted by start, as ``SpanTable`` is).
    """

    def __init__(self, table: SpanTable):
        self.lanes = len(table.lanes)
        key = table.lane.astype(np.int64) << 16 | table.depth.astype(np.int64)
        order = np.argsort(key, kind="stable")  # rows, each in start order
        k = key[order]
        self.start = table.start_ns[order]
        self.end = self.start + table.dur_ns[order]
        cut = np.flatnonzero(np.r_[True, k[1:] != k[:-1], True]) if len(k) else np.zeros(1, int)
        self.rows = [(int(k[a] >> 16), int(k[a] & 0xFFFF), a, b)
                     for a, b in zip(cut[:-1], cut[1:], strict=True)]  # fmt: skip
        self.fixed = {c.lane: COUNTER_ROWS for c in table.counters}
        self.full = table.lane_depths()

    def depths_in(self, t0: float, t1: float) -> np.ndarray:
        """``int64 (lanes,)``: rows each lane needs for spans overlapping ``[t0, t1)`` (its
        deepest such depth + 1; 0 when none; counter lanes ``COUNTER_ROWS``)."""
        out = np.zeros(self.lanes, np.int64)
        for lane, depth, a, b in self.rows:
            if depth < out[lane]:
                continue
            i = a + int(np.searchsorted(self.end[a:b], t0, side="right"))
            if i < b and self.start[i] < t1:
                out[lane] = depth + 1
        for lane, n in self.fixed.items():
            out[lane] = n
        return out
