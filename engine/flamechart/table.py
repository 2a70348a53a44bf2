"""The flame chart's data: spans as numpy columns (``SpanTable``), with their nesting depth,
counter tracks and flows. Trace files are read into it by ``engine.devtools.traces``; the
live flame chart (``engine.tools.flame``) builds it from the telemetry."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

CPU_LANE, GPU_LANE = "CPU main thread", "GPU queue (clock offset estimated)"
MAX_ROWS = 0xFFFF  # lanes and depths are 16-bit fields on the GPU (engine/flamechart/spans.py)


@dataclass
class SpanTable:
    """Spans as columns, sorted by ``start_ns`` (ties: lane, depth).

    Attributes:
        start_ns: ``int64 (n,)`` ns since ``origin_ns``.
        dur_ns: ``int64 (n,)`` ns, >= 0.
        lane: ``uint32 (n,)`` index into ``lanes``.
        depth: ``uint32 (n,)`` nesting depth inside the lane (0 = outermost).
        name_id: ``uint32 (n,)`` index into ``names``.
        names: distinct span names. ``lanes``: lane labels, in display order.
        origin_ns: the source clock value of ``start_ns == 0`` (ns).
        notes: one line per kind of input that was skipped (with counts).
        source: the file it came from ('' when generated).
        event: ``int64 (n,)`` ordinal of the event each span came from in the file (the
            ``B``/``b`` of a pair; -1: none), for ``traceload.event_at``; empty when
            generated.
        display_unit: ``"ms"`` or ``"ns"`` (the trace's ``displayTimeUnit``).
        chunks: ``(first event ordinal, stream offset, bytes)`` of each decoded chunk.
        counters: ``CounterTrack`` per counter series (``C`` events), each on a lane of its
            own after the span lanes (``COUNTER_ROWS`` rows tall).
        flows: the flow arrows (``s``/``t``/``f`` events), or None.
    """

    start_ns: np.ndarray
    dur_ns: np.ndarray
    lane: np.ndarray
    depth: np.ndarray
    name_id: np.ndarray
    names: list[str]
    lanes: list[str]
    origin_ns: int = 0
    notes: list[str] = field(default_factory=list)
    source: str = ""
    event: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    display_unit: str = "ms"
    chunks: list[tuple[int, int, int]] = field(default_factory=list)
    counters: list[CounterTrack] = field(default_factory=list)
    flows: Flows | None = None

    def __len__(self) -> int:
        return len(self.start_ns)

    @property
    def end_ns(self) -> np.ndarray:
        return self.start_ns + self.dur_ns

    def lane_depths(self) -> np.ndarray:
        """``int64 (len(lanes),)``: rows each lane needs (max depth + 1; 0 when empty;
        ``COUNTER_ROWS`` for a counter lane)."""
        out = np.zeros(len(self.lanes), np.int64)
        if len(self):
            np.maximum.at(out, self.lane.astype(np.int64), self.depth.astype(np.int64) + 1)
        for c in self.counters:
            out[c.lane] = COUNTER_ROWS
        return out


COUNTER_ROWS = 3  # rows of a counter lane


@dataclass
class CounterTrack:
    """One counter series: ``lane`` (index into ``SpanTable.lanes``), ``name`` (``"<event
    name> <series>"``), ``t_ns`` (``int64 (k,)`` ns since the table's origin, ascending) and
    ``value`` (``float64 (k,)``; it holds until the next sample: a step chart)."""

    lane: int
    name: str
    t_ns: np.ndarray
    value: np.ndarray


@dataclass
class Flows:
    """Flow arrows, one row per step (``s`` -> ``t`` -> ... -> ``f`` of one flow: see
    ``flow_chains``), in order of ``t0``: ``int64 (k,)`` columns ``t0, lane0, depth0, t1,
    lane1, depth1`` (ns since the origin; lane and depth of the span each end binds to: the
    enclosing one, or for an ``f`` without ``bp: "e"`` the next one to begin on its
    thread). ``t1 < t0`` where a flow's end was stamped before its start: the arrow points
    back in time."""

    t0: np.ndarray
    lane0: np.ndarray
    depth0: np.ndarray
    t1: np.ndarray
    lane1: np.ndarray
    depth1: np.ndarray

    def __len__(self) -> int:
        return len(self.t0)


def nesting_depth(lane: np.ndarray, start: np.ndarray, end: np.ndarray) -> np.ndarray:
    """Depth of each span in its lane: how many spans of the lane enclose it.

    Spans are visited by (lane, start, longest first) with a stack of open end times; a span
    that overlaps its predecessor without nesting is put one deeper (as Perfetto does), never
    moved or clipped. Vectorised: the depth is the number of spans of the lane begun before
    and not yet ended (the stack size when they nest); a lane where that puts two
    overlapping spans in one row (improper nesting) is redone with the stack.
    Returns ``uint32 (n,)``.
    """
    return _nest(np.asarray(lane, np.int64), np.asarray(start, np.int64),
                 np.asarray(end, np.int64))[0]  # fmt: skip


def _nest_order(lane, start, end) -> tuple[np.ndarray, ...]:
    """``(nest_order, lane, start, end in that order)``."""
    if len(lane) and int(lane.max()) < 1 << 16 and int(lane.min()) >= 0:
        o = np.argsort(lane.astype(np.uint16), kind="stable")
        ln, st, en = lane[o], start[o], end[o]
        same = ln[1:] == ln[:-1]
        back = st[1:] < st[:-1]
        tie = (st[1:] == st[:-1]) & (en[1:] > en[:-1])  # same start: longer first
        if not np.any(same & (back | tie)):
            return o, ln, st, en
    o = np.lexsort((start - end, start, lane))
    return o, lane[o], start[o], end[o]


def _nest(lane: np.ndarray, start: np.ndarray, end: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(depth uint32 (n,), nest_order)``."""
    depth, order, _, _, _ = _nest_cols(lane, start, end)
    out = np.zeros(len(order), np.uint32)
    out[order] = depth
    return out, order


def _nest_cols(lane, start, end) -> tuple[np.ndarray, ...]:
    """``(depth, nest_order, lane, start, end)``, all but the order in nest order."""
    order, ln, st, en = _nest_order(lane, start, end)
    depth = np.zeros(len(order), np.int64)
    bounds = np.flatnonzero(np.r_[True, ln[1:] != ln[:-1], True]) if len(ln) else [0]
    for a, b in zip(bounds[:-1], bounds[1:], strict=True):
        s, e = st[a:b], en[a:b]
        # ends in start order are runs (siblings rise, nested ones fall): timsort merges them
        d = np.arange(b - a) - np.searchsorted(np.sort(e, kind="stable"), s, side="right")
        if not _rows_disjoint(d, s, e):
            d = _stack_depth(s.tolist(), e.tolist())
        depth[a:b] = d
    return depth, order, ln, st, en


def _rows_disjoint(d: np.ndarray, s: np.ndarray, e: np.ndarray) -> bool:
    """No two spans of one depth overlap, and each depth > 0 has a parent open around it."""
    if len(d) == 0:
        return True
    if d.min() < 0:
        return False
    # (depth, start) order: ``s`` ascends already, so a stable (radix) sort by depth gives it
    o = np.argsort(d.astype(np.uint16) if d.max() < 1 << 16 else d, kind="stable")
    same = d[o][1:] == d[o][:-1]
    return bool(np.all(~same | (e[o][:-1] <= s[o][1:])))


def _stack_depth(st: list, en: list) -> list:
    stack: list[int] = []
    out = [0] * len(st)
    for k, s in enumerate(st):
        while stack and stack[-1] <= s:
            stack.pop()
        out[k] = len(stack)
        stack.append(en[k])
    return out


def build_table(
    lane: list[int] | np.ndarray,
    start: list[int] | np.ndarray,
    end: list[int] | np.ndarray,
    name_id: list[int] | np.ndarray,
    names: list[str],
    lanes: list[str],
    notes: list[str] | None = None,
    depth: np.ndarray | None = None,
    event: np.ndarray | None = None,
) -> SpanTable:
    """Columns (absolute ns) -> a sorted ``SpanTable`` with depths (computed unless given)."""
    return _build_table([lane, start, end, name_id, event], names, lanes, notes, depth)


def _build_table(cols: list, names, lanes, notes, depth) -> SpanTable:
    """``build_table`` of ``cols`` (lane, start, end, name_id, event or None), which it owns:
    each column is dropped from the list, and freed, once it is no longer needed (the peak
    memory of a large load is here)."""
    lane, start, end = (
        np.asarray(cols[0]),
        np.asarray(cols[1], np.int64),
        np.asarray(cols[2], np.int64),
    )
    cols[:3] = None, None, None
    lane = lane if lane.dtype.kind == "i" else lane.astype(np.int64)
    if depth is None:
        # the nesting order (lane, start, longest first) is a few sorted runs by start (one
        # per lane): a stable sort by start merges them, ties left in (lane, depth) order;
        # the columns already gathered in nesting order are reused
        depth, nest, ln, st, en = _nest_cols(lane, start, end)
        del lane, start, end
        by_start = np.argsort(st, kind="stable")
        order = nest[by_start]
        del nest
        en -= st
        dur = en[by_start]
        del en
        start, lane, depth = st[by_start], ln[by_start].astype(np.uint32), depth[by_start]
        del st, ln, by_start
    else:
        order = np.lexsort((depth, lane, start))
        start, dur, lane, depth = start[order], (end - start)[order], lane[order], depth[order]
        del end
    origin = int(start[0]) if len(start) else 0
    start -= origin
    name_id = np.asarray(cols[3], np.uint32)[order]
    event = np.asarray(cols[4], np.int64)[order] if cols[4] is not None else np.zeros(0, np.int64)
    cols[3:] = None, None
    return SpanTable(
        start_ns=start,
        dur_ns=dur,
        lane=lane.astype(np.uint32),
        depth=np.asarray(depth, np.uint32),
        name_id=name_id,
        names=list(names),
        lanes=list(lanes),
        origin_ns=origin,
        notes=list(notes or []),
        event=event,
    )
