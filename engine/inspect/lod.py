"""Level-of-detail summaries of a span table, built once at load (the Tracy / Perfetto way):
zoomed out, the selection reads a coarser level instead of every span, so its cost follows
the pixels x rows on screen, not the span count.

A level has a time bucket ``bucket_ns`` (a power of two). Per row (one depth of one lane),
every span shorter than the bucket is *mergeable*; the mergeable spans of a row that start
in the same bucket (``start // bucket_ns``) become one **summary entry**: the start of the
first, the end of the last (``end_ns``, their maximum end), how many (``count``), and the
duration, name and index of the longest (ties: the lowest index) -- its *representative*, a
real span, so picking and the details pane always name a real span. Spans at least a bucket
long stay in the level as themselves (``count`` 1). Level ``L + 1`` is built from level
``L`` (a summary of summaries is the summary of their spans: buckets nest, powers of two).

A level is kept only when it has at most 1/8 of the entries of the previous kept one
(candidate buckets double until it does), so the levels add at most 1/8 + 1/64 + ... of the
span count (24 bytes an entry on the GPU: at most 3.5 bytes per span); no coarser level is
built over one of fewer than ``LEVEL_SHRINK * MIN_ENTRIES`` entries (reading that one is
cheap already), nor over a table of fewer than ``2 * MIN_ENTRIES`` spans.

Why the picture stays right (tested against ``engine.inspect.reference``): the selection
reads level ``L`` only when ``bucket_ns < ns_per_px`` (``select.level_for``), so

- every span at least a pixel wide is at least a bucket long: it is in the level as itself,
  drawn exactly as in the exact selection (never dropped);
- a summary's spans start within one bucket, less than a pixel: they fall in the summary's
  pixel column or the next one; so the collapsed columns of a row are the exact selection's
  within one pixel (each exact column ``c`` shows up at ``c`` or ``c - 1``, every column
  drawn is one the exact selection draws; the view's leftmost column aside, where a summary
  begun left of the view shows only if its longest span reaches in), and each is drawn as
  the longest of its spans.

A search needs the match to win its pixel column, which a summary cannot know: the
selection uses the spans themselves (level 0) while a search is on.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

LEVEL_SHRINK = 8  # a kept level has at most 1/8 of the previous kept level's entries
MIN_ENTRIES = 4096  # no level smaller than this is worth a dispatch of its own
LOD_WORDS = 6  # GPU entry: the 5 words of a span (spans.py) + the representative's index
LOD_BYTES = LOD_WORDS * 4


@dataclass
class LodLevel:
    """One level's entries: sorted by start as ``build_levels`` returns them (in row order,
    lane and depth, then by start within a row, while it builds them).

    Attributes:
        bucket_ns: the level's time bucket, ns (a power of two).
        start_ns: ``int64 (m,)`` start of each entry's first span.
        end_ns: ``int64 (m,)`` the latest end among its spans.
        dur_ns: ``int64 (m,)`` the representative's duration (the longest span).
        span: ``int64 (m,)`` the representative's index in the table.
        count: ``int64 (m,)`` spans it stands for (1: a span kept as itself).
        row: ``uint32 (m,)`` ``lane << 16 | depth``.
    (``end_ns`` and ``count`` are None for the spans themselves, inside ``build_levels``.)
    """

    bucket_ns: int
    start_ns: np.ndarray
    end_ns: np.ndarray | None
    dur_ns: np.ndarray
    span: np.ndarray
    count: np.ndarray | None
    row: np.ndarray

    def __len__(self) -> int:
        return len(self.start_ns)

    def ends(self, idx: np.ndarray) -> np.ndarray:
        if self.end_ns is None:
            return self.start_ns[idx] + self.dur_ns[idx]
        return self.end_ns[idx]

    def counts(self, idx: np.ndarray) -> np.ndarray:
        return np.ones(len(idx), np.int64) if self.count is None else self.count[idx]

    def by_start(self) -> LodLevel:
        """The same entries sorted by start (stable: ties keep row order), the order the
        GPU reads them in: then a time range is a contiguous run (``RangeIndex``)."""
        o = np.argsort(self.start_ns, kind="stable")
        cols = (self.start_ns, self.end_ns, self.dur_ns, self.span, self.count, self.row)
        return LodLevel(self.bucket_ns, *(c[o] for c in cols))

    def pack(self, name_id: np.ndarray, sl: slice = slice(None)) -> np.ndarray:
        """``uint32 (m, 6)`` GPU rows of entries ``sl``: a packed span (``pack_spans``:
        start, representative's duration, lane and depth, representative's name) then the
        representative's index."""
        from engine.inspect.spans import pack_spans  # spans.py imports nothing from here

        span = self.span[sl]
        row = self.row[sl]
        out = np.empty((len(span), LOD_WORDS), np.uint32)
        out[:, :5] = pack_spans(
            self.start_ns[sl], self.dur_ns[sl], row >> 16, row & 0xFFFF, name_id[span]
        )
        out[:, 5] = span
        return out


def _row_order(lane: np.ndarray, depth: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(order, row)``: a stable order by row (so each row stays in table order, i.e. by
    start) and the row key ``lane << 16 | depth`` (uint32) in that order."""
    lane, depth = lane.astype(np.uint32, copy=False), depth.astype(np.uint32, copy=False)
    deep = int(depth.max()) + 1
    dense = lane * np.uint32(deep) + depth
    if int(dense.max()) < 1 << 16:  # uint16 keys: numpy's stable sort is a radix sort, O(n)
        dense = dense.astype(np.uint16)
    order = np.argsort(dense, kind="stable")
    del dense
    return order, (lane[order] << np.uint32(16)) | depth[order]


def _groups(prev: LodLevel, bucket_ns: int):
    """``(nz, heads)``: the mergeable entries of ``prev`` at ``bucket_ns`` and where each
    group (same row, same bucket) starts among them; wide entries between two of one row
    and bucket do not split them."""
    nz = np.flatnonzero(prev.dur_ns < bucket_ns)
    r, b = prev.row[nz], prev.start_ns[nz] // bucket_ns
    first = np.ones(len(nz), bool)
    first[1:] = (r[1:] != r[:-1]) | (b[1:] != b[:-1])
    return nz, np.flatnonzero(first)


def _entries_at(prev: LodLevel, bucket_ns: int) -> int:
    """How many entries ``merge_level(prev, bucket_ns)`` would have."""
    nz, heads = _groups(prev, bucket_ns)
    return len(prev) - len(nz) + len(heads)


def merge_level(prev: LodLevel, bucket_ns: int) -> LodLevel:
    """The level of bucket ``bucket_ns`` (a multiple of ``prev.bucket_ns``) from ``prev``
    (entries in row order, by start within a row): see the module docstring."""
    nz, heads = _groups(prev, bucket_ns)
    sn, dn = prev.start_ns[nz], prev.dur_ns[nz]
    if len(nz):
        count = np.add.reduceat(prev.counts(nz), heads)
        end = np.maximum.reduceat(prev.ends(nz), heads)
        longest = np.maximum.reduceat(dn, heads)
        size = np.diff(np.r_[heads, len(nz)])
        rep = _lowest_index_of_longest(prev.span[nz], dn, heads, longest, size)
    else:
        count = end = longest = rep = np.zeros(0, np.int64)
    wide = np.flatnonzero(prev.dur_ns >= bucket_ns)
    # entries: the wide ones as they are, a summary at each group's first entry; in row
    # order, by start within a row (the position in prev keeps both)
    order = np.argsort(np.concatenate([wide, nz[heads]]), kind="stable")

    def cat(a: np.ndarray, summary: np.ndarray) -> np.ndarray:
        return np.concatenate([a, summary])[order]

    return LodLevel(
        bucket_ns=int(bucket_ns),
        start_ns=cat(prev.start_ns[wide], sn[heads]),
        end_ns=cat(prev.ends(wide), end),
        dur_ns=cat(prev.dur_ns[wide], longest),
        span=cat(prev.span[wide], rep),
        count=cat(prev.counts(wide), count),
        row=cat(prev.row[wide], prev.row[nz[heads]]),
    )


def _lowest_index_of_longest(span, dur, heads, longest, size) -> np.ndarray:
    """Per group: the lowest ``span`` index among the entries of the longest ``dur``."""
    big = np.iinfo(np.int64).max
    cand = np.where(dur == np.repeat(longest, size), span, big)
    return np.minimum.reduceat(cand, heads)


def build_levels(start_ns, dur_ns, lane, depth, *, min_entries: int = MIN_ENTRIES) -> list:
    """The kept ``LodLevel`` s, finest first (level 0, the spans, not included).

    Args:
        start_ns, dur_ns: ``int64 (n,)`` ns (a ``SpanTable``'s columns, sorted by start).
        lane, depth: ``uint32 (n,)``.
        min_entries: the ``MIN_ENTRIES`` rule (tests use small values).
    """
    n = len(start_ns)
    if n < 2 * min_entries:
        return []
    order, row = _row_order(np.asarray(lane), np.asarray(depth))
    s = np.asarray(start_ns, np.int64)[order]
    d = np.asarray(dur_ns, np.int64)[order]
    # the spans as level 0 (ends and counts implied: start + dur, 1)
    prev = LodLevel(0, s, None, d, order, None, row)
    del s, d, order, row
    span_ns = max(int((prev.start_ns + prev.dur_ns).max() - prev.start_ns.min()), 1)
    sample = prev.dur_ns[:: max(1, n // 100_000)]
    positive = sample[sample > 0]
    typical = int(np.median(positive)) if len(positive) else 1
    bucket = 1 << max(0, typical.bit_length())  # the first bucket above the median span
    levels: list[LodLevel] = []
    while bucket <= 2 * span_ns and len(prev) >= LEVEL_SHRINK * min_entries:
        if _entries_at(prev, bucket) * LEVEL_SHRINK <= len(prev):
            prev = merge_level(prev, bucket)
            levels.append(prev)
        bucket *= 2
    return [lv.by_start() for lv in levels]  # built in row order, read in start order


def merge_reference(start_ns, dur_ns, lane, depth, bucket_ns: int) -> list[tuple]:
    """Plain-Python specification of one level built straight from the spans (tests):
    ``(row, start, end, longest dur, representative index, count)`` per entry, sorted."""
    out, groups = [], {}
    for i in range(len(start_ns)):
        s, d = int(start_ns[i]), int(dur_ns[i])
        row = int(lane[i]) << 16 | int(depth[i])
        if d >= bucket_ns:
            out.append((row, s, s + d, d, i, 1))
            continue
        g = groups.setdefault((row, s // bucket_ns), [])
        g.append((s, s + d, d, i))
    for (row, _), g in groups.items():
        rep = min(g, key=lambda e: (-e[2], e[3]))
        out.append((row, min(e[0] for e in g), max(e[1] for e in g), rep[2], rep[3], len(g)))
    return sorted(out)


RANGE_BLOCK = 1024  # entries per block of a RangeIndex (16 bytes a block on the host)


class RangeIndex:
    """Which entries of a start-sorted store can be in view of a time range, per block of
    ``RANGE_BLOCK``: each block's first start, and the latest end up to each block (a
    running maximum, so both are sorted). The selection dispatches only the blocks between,
    so zoomed in it reads what is near the view, not the whole store.

    Args:
        start_ns: ``int64 (n,)`` sorted. ``end_ns``: ``int64 (n,)`` (or a callable giving
            the ends of a slice, so no ``(n,)`` temporary is made).
        max_dur_ns: the longest ``end - start``, for the f32 rounding margin.
    """

    def __init__(self, start_ns: np.ndarray, end_ns, max_dur_ns: float):
        n = len(start_ns)
        self.n = n
        self.first = np.asarray(start_ns[::RANGE_BLOCK], np.int64).copy()
        ends = end_ns if callable(end_ns) else (lambda sl: end_ns[sl])
        step = RANGE_BLOCK * 256
        parts = [
            np.maximum.reduceat(
                ends(slice(a, min(n, a + step))), np.arange(0, min(step, n - a), RANGE_BLOCK)
            )
            for a in range(0, n, step)
        ]
        self.reach = np.maximum.accumulate(np.concatenate(parts)) if parts else self.first
        # the shader tests "in view" in f32 (24-bit mantissa) relative to the view start:
        # keep a margin of a few ulps of the longest span, so only what it rejects is skipped
        self.margin_ns = float(max_dur_ns) * 2.0**-20 + 2.0

    def entry_range(self, t0: float, t1: float, ns_per_px: float) -> tuple[int, int]:
        """``(lo, hi)``: every entry outside ``lo .. hi - 1`` ends before ``t0`` or starts
        after ``t1`` (ns) by more than the margin (and a pixel)."""
        m = self.margin_ns + ns_per_px
        lo = int(np.searchsorted(self.reach, t0 - m, side="right")) * RANGE_BLOCK
        hi = int(np.searchsorted(self.first, t1 + m, side="left")) * RANGE_BLOCK
        return min(lo, self.n), min(hi, self.n)
