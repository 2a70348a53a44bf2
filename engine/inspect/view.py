"""The flame chart's camera and interaction state, and the statistics its panels show.

Horizontal: ``start_ns`` (time at the chart's left edge, ns since the span table's origin,
float64) and ``ns_per_px``. Zooming by ``k`` around the chart x ``x`` keeps the time under
``x`` fixed: ``t = start + x * s`` before and after, so ``start' = t - x * s / k``. Vertical:
rows of ``row_px``; each lane has a header row (its label) and one row per depth;
``scroll_px`` moves in whole rows.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from engine.inspect.ruler import Ticks, label_unit, ticks
from engine.inspect.select import NONE, ViewParams

MIN_NS_PER_PX = 1e-3  # 1000 px per ns: the deepest zoom
MARGIN = 0.02  # fraction of the width left free around a fitted range


class FlameView:
    """Camera of one chart.

    Args:
        lane_depths: ``int (lanes,)`` rows each lane needs (``SpanTable.lane_depths()``).
        t_min, t_max: time range of the data, ns.
        size: chart area ``(width, height)`` in px. ``origin``: its top-left in the output.
        row_px: row height, px (integer).

    Attributes:
        hover, selected: span indices (``NONE`` = none); ``selected_name`` the selected
        span's name id; ``search``: the search text ('' = none); ``range_ns``: a frame-range
        selection ``(t0, t1)`` or None.
    """

    def __init__(
        self,
        lane_depths: np.ndarray,
        t_min: float,
        t_max: float,
        size: tuple[int, int],
        *,
        origin: tuple[int, int] = (0, 0),
        row_px: int = 18,
    ):
        self.lane_depths = np.asarray(lane_depths, np.int64)
        self.t_min, self.t_max = float(t_min), float(t_max)
        self.size = (int(size[0]), int(size[1]))
        self.origin = origin
        self.row_px = int(row_px)
        self.scroll_px = 0
        self.hover = self.selected = self.selected_name = NONE
        self.search = ""
        self.range_ns: tuple[float, float] | None = None
        self.cursor: tuple[float, float] = (-1e9, -1e9)  # output px
        self.ruler_px = 0  # height of the time ruler's band above the chart (0: none)
        self.display_unit = "ms"  # the trace's displayTimeUnit (``ruler``)
        self.label_px = 0.0  # character width of the ruler's labels, px (0: no labels)
        self.collapsed: set[int] = set()  # lanes showing their header row only
        self.order = list(range(len(self.lane_depths)))  # display order of the lanes
        self.reset()

    # -- layout ---------------------------------------------------------------------------
    def _heights(self) -> np.ndarray:
        """Rows of each lane: its header, then its depths (at least one) unless collapsed."""
        h = 1 + np.maximum(self.lane_depths, 1)
        if self.collapsed:
            h[list(self.collapsed)] = 1
        return h

    def lane_rows(self) -> np.ndarray:
        """``int32 (lanes,)``: row of each lane's depth 0 (after its header row), lanes
        stacked in ``order``; -1 for a collapsed lane (its spans are not drawn)."""
        h = self._heights()[self.order]
        first = np.cumsum(h) - h + 1
        out = np.empty(len(h), np.int32)
        out[self.order] = first
        if self.collapsed:
            out[list(self.collapsed)] = -1
        return out

    def header_rows(self) -> np.ndarray:
        """``int64 (lanes,)``: row of each lane's header (label) row."""
        h = self._heights()[self.order]
        out = np.empty(len(h), np.int64)
        out[self.order] = np.cumsum(h) - h
        return out

    @property
    def total_rows(self) -> int:
        return int(np.sum(self._heights()))

    def set_lane_depths(self, lane_depths: np.ndarray) -> None:
        self.lane_depths = np.asarray(lane_depths, np.int64)
        if len(self.order) != len(self.lane_depths):
            self.order = list(range(len(self.lane_depths)))

    def lane_at(self, y: float) -> int | None:
        """The lane whose header row is at chart y (px), or None."""
        row = int((y + self.scroll_px) // self.row_px)
        hit = np.flatnonzero(self.header_rows() == row)
        return int(hit[0]) if len(hit) else None

    def toggle_lane(self, lane: int) -> None:
        """Collapse a lane to its header row, or expand it again."""
        self.collapsed ^= {lane}
        self.scroll(0)

    def move_lane(self, lane: int, step: int) -> None:
        """Move a lane ``step`` places down (negative: up) in the display order."""
        i = self.order.index(lane)
        j = min(max(i + step, 0), len(self.order) - 1)
        self.order.insert(j, self.order.pop(i))

    def set_data_range(self, t_min: float, t_max: float) -> None:
        self.t_min, self.t_max = float(t_min), float(t_max)

    def resize(self, size: tuple[int, int], origin: tuple[int, int] | None = None) -> None:
        self.size = (int(size[0]), int(size[1]))
        if origin is not None:
            self.origin = origin
        self.scroll(0)

    # -- horizontal -----------------------------------------------------------------------
    @property
    def width(self) -> int:
        return self.size[0]

    @property
    def max_ns_per_px(self) -> float:
        return max(4.0 * (self.t_max - self.t_min), 1.0) / max(self.width, 1)

    def time_at(self, x: float) -> float:
        """Time (ns) at chart x (px)."""
        return self.start_ns + x * self.ns_per_px

    def x_of(self, t: float) -> float:
        """Chart x (px) of time ``t`` (ns)."""
        return (t - self.start_ns) / self.ns_per_px

    def show(self, t0: float, t1: float) -> None:
        """Show ``[t0, t1]`` (ns) across the width, with a small margin."""
        span = max(float(t1) - float(t0), MIN_NS_PER_PX * self.width)
        self.ns_per_px = span * (1 + 2 * MARGIN) / max(self.width, 1)
        self.ns_per_px = min(max(self.ns_per_px, MIN_NS_PER_PX), self.max_ns_per_px)
        self.start_ns = 0.5 * (t0 + t1) - 0.5 * self.width * self.ns_per_px

    def reset(self) -> None:
        """Home: the whole data range, scrolled to the top."""
        self.scroll_px = 0
        self.show(self.t_min, self.t_max)

    def zoom(self, factor: float, x: float) -> None:
        """Zoom in by ``factor`` (> 1 in, < 1 out) keeping the time at chart x fixed."""
        t = self.time_at(x)
        s = min(max(self.ns_per_px / factor, MIN_NS_PER_PX), self.max_ns_per_px)
        self.ns_per_px = s
        self.start_ns = t - x * s

    def pan(self, dx_px: float) -> None:
        """Move the content right by ``dx_px`` pixels (a drag to the right)."""
        self.start_ns -= dx_px * self.ns_per_px

    def zoom_to_span(self, start_ns: float, dur_ns: float) -> None:
        """Double-click: the span fills the width (with a margin)."""
        self.show(start_ns, start_ns + dur_ns)

    # -- vertical -------------------------------------------------------------------------
    def scroll(self, dy_px: float) -> None:
        """Scroll down by ``dy_px`` (negative: up) in whole rows (so lane labels stay on the
        text grid), clamped to the content."""
        limit = max(0, self.total_rows * self.row_px - self.size[1] + self.row_px)
        rows = round((self.scroll_px + dy_px) / self.row_px)
        self.scroll_px = int(min(max(rows * self.row_px, 0), limit // self.row_px * self.row_px))

    def ruler(self) -> tuple[Ticks, str]:
        """The ruler's ticks and their labels' unit (``engine.inspect.ruler``): the unit from
        ``display_unit`` and the times in view, the step wide enough for the labels when
        ``label_px`` is set. The shader's ticks and the viewer's labels both come from it."""
        unit = label_unit(self.display_unit, self.time_at(0), self.time_at(self.width))
        tk = ticks(self.start_ns, self.ns_per_px, width=self.width, unit=unit,
                   char_px=self.label_px)  # fmt: skip
        return tk, unit

    # -- to the GPU -----------------------------------------------------------------------
    def params(self, out_size: tuple[int, int], *, glyph_px: int = 1) -> ViewParams:
        cx, cy = self.cursor
        ox, oy = self.origin
        tk = self.ruler()[0]
        return ViewParams(
            tick_x0=tk.x0,
            tick_px=tk.px,
            minors=tk.minors,
            ruler_px=self.ruler_px,
            start_ns=self.start_ns,
            px_per_ns=1.0 / self.ns_per_px,
            width=self.size[0],
            height=self.size[1],
            lane_rows=self.lane_rows(),
            row_px=self.row_px,
            scroll_px=self.scroll_px,
            origin=self.origin,
            out_size=out_size,
            cursor=(cx - ox, cy - oy),
            hover=self.hover,
            selected=self.selected,
            selected_name=self.selected_name,
            search_on=bool(self.search),
            glyph_px=glyph_px,
        )


# -- statistics ---------------------------------------------------------------------------------
@dataclass(frozen=True)
class NameStats:
    """Durations of every span of one name (in one lane when asked), ns: count, mean,
    median, p95, max, total; ``self_mean``, ``self_total``: the same of self time (NaN/0
    when not given)."""

    name: str
    count: int
    mean: float
    median: float
    p95: float
    max: float
    total: float
    self_mean: float = math.nan
    self_total: float = 0.0


def name_stats(
    dur_ns: np.ndarray, name_id: np.ndarray, nid: int, name: str, *,
    lane: np.ndarray | None = None, lane_id: int | None = None,
    self_ns: np.ndarray | None = None,
) -> NameStats:  # fmt: skip
    """Statistics of the spans named ``nid`` (p95: linear interpolation, numpy's default);
    with ``lane``/``lane_id`` only those of that lane (a CPU recording and its GPU span
    share a name and never a lane); with ``self_ns`` (``self_times``) their self time too."""
    sel = name_id == nid
    if lane is not None and lane_id is not None:
        sel &= lane == lane_id
    d = dur_ns[sel].astype(np.float64)
    if len(d) == 0:
        return NameStats(name, 0, math.nan, math.nan, math.nan, math.nan, 0.0)
    med, p95 = np.percentile(d, [50, 95])
    sm, st = math.nan, 0.0
    if self_ns is not None:
        sd = self_ns[sel].astype(np.float64)
        sm, st = float(sd.mean()), float(sd.sum())
    return NameStats(name, len(d), float(d.mean()), float(med), float(p95), float(d.max()),
                     float(d.sum()), sm, st)  # fmt: skip


def search_matches(names: list[str], name_id: np.ndarray, text: str) -> np.ndarray:
    """``int64`` indices of the spans whose name contains ``text`` (case-insensitive; none
    for ``''``), in time order: by start, then lane, then depth (a ``SpanTable``'s order,
    so ascending indices are that order)."""
    if not text:
        return np.zeros(0, np.int64)
    low = text.lower()
    hit = np.array([low in n.lower() for n in names], bool)
    return np.flatnonzero(hit[name_id]).astype(np.int64)


def next_match(matches: np.ndarray, start_ns: np.ndarray, selected: int,
               view_ns: tuple[float, float], step: int) -> int:  # fmt: skip
    """The search match to select on N (``step`` 1) or P (-1), in the time order of
    ``matches`` (``search_matches``, non-empty): the one after (before) the selected span;
    with none selected the first starting at or after the view's left edge ``view_ns[0]``
    (P: the last starting before its right edge ``view_ns[1]``), so from the whole trace N
    picks the earliest; wraps around."""
    if selected != NONE:
        k = int(np.searchsorted(matches, selected, side="right" if step > 0 else "left"))
    else:
        k = int(np.searchsorted(start_ns[matches], view_ns[0] if step > 0 else view_ns[1]))
    return int(matches[(k if step > 0 else k - 1) % len(matches)])


def self_times(start_ns, dur_ns, lane, depth) -> np.ndarray:
    """``int64 (n,)`` self time of each span, ns: its duration minus its children's (the
    spans one deeper in its lane that it encloses; the nesting of ``nesting_depth``).

    Vectorised by depth: a span's parent is the last span one shallower in its lane that
    starts at or before it, in (lane, start, depth) order."""
    n = len(start_ns)
    out = np.asarray(dur_ns, np.int64).copy()
    if n == 0:
        return out
    order = np.lexsort((depth, start_ns, lane))
    d, ln, du = depth[order].astype(np.int64), lane[order], np.asarray(dur_ns)[order]
    child = np.zeros(n, np.int64)
    by_depth = [np.flatnonzero(d == k) for k in range(int(d.max()) + 1)]
    for k in range(1, len(by_depth)):
        kids, parents = by_depth[k], by_depth[k - 1]
        if not len(kids) or not len(parents):
            continue
        at = np.searchsorted(parents, kids) - 1
        ok = (at >= 0) & (ln[parents[np.maximum(at, 0)]] == ln[kids])
        np.add.at(child, parents[at[ok]], du[kids[ok]])
    out[order] -= child
    return out


@dataclass(frozen=True)
class RangeStats:
    """A frame-range selection: its length, the spans wholly inside, the outermost of them
    (depth 0, in every lane: a Lantern trace's frames and its top-level scopes) with their
    mean duration, and the names with the most time inside (``(name_id, count, total_ns)``,
    largest total first)."""

    t0: float
    t1: float
    spans: int
    top: tuple[tuple[int, int, float], ...]
    roots: int = 0
    root_mean: float = math.nan


def range_stats(
    start_ns: np.ndarray, dur_ns: np.ndarray, name_id: np.ndarray, t0: float, t1: float,
    *, depth: np.ndarray | None = None, top: int = 5,
) -> RangeStats:  # fmt: skip
    """Spans with ``t0 <= start`` and ``start + dur <= t1``; per-name counts and totals;
    with ``depth``, the count and mean duration (ns) of the depth-0 ones."""
    t0, t1 = min(t0, t1), max(t0, t1)
    inside = (start_ns >= t0) & (start_ns + dur_ns <= t1)
    ids = name_id[inside].astype(np.int64)
    if len(ids) == 0:
        return RangeStats(t0, t1, 0, ())
    counts = np.bincount(ids)
    totals = np.bincount(ids, weights=dur_ns[inside].astype(np.float64))
    order = np.argsort(-totals, kind="stable")[:top]
    rows = tuple((int(i), int(counts[i]), float(totals[i])) for i in order if counts[i])
    roots, mean = 0, math.nan
    if depth is not None:
        d = dur_ns[inside & (depth == 0)]
        roots, mean = len(d), float(d.mean()) if len(d) else math.nan
    return RangeStats(t0, t1, int(inside.sum()), rows, roots, mean)


def fmt_ns(ns: float) -> str:
    """A duration for people: ``"1.234 s"``, ``"12.35 ms"``, ``"345.6 us"``, ``"120 ns"``."""
    a = abs(ns)
    if a >= 1e9:
        return f"{ns / 1e9:.3f} s"
    if a >= 1e6:
        return f"{ns / 1e6:.2f} ms"
    if a >= 1e3:
        return f"{ns / 1e3:.1f} us"
    return f"{ns:.0f} ns"
