"""Level-of-detail summaries of the flame chart (engine/flamechart/lod.py): the merge against a
plain-Python specification, the GPU selection over a level against its numpy reference span
by span (one chunk and split), and the zoomed-out picture against the exact selection of
every span within the one-pixel rule the level promises."""

from __future__ import annotations

import numpy as np
import pytest

from engine.devtools.traces.synthetic import synthetic_table
from engine.flamechart.lod import LEVEL_SHRINK, build_levels
from engine.flamechart.reference import (
    lod_select_reference,
    merge_reference,
    pick_reference,
    select_reference,
)
from engine.flamechart.select import INST_COLLAPSED, NONE, FlameSelect, ViewParams, level_for
from engine.flamechart.spans import SPAN_BYTES, SpanStore, pack_spans
from tests.test_flame_gpu import random_spans, run_select

MIN = 64  # min_entries: levels of a small table


def _entries(level) -> list[tuple]:
    return sorted(
        zip(*(getattr(level, k).tolist() for k in ("row", "start_ns", "end_ns", "dur_ns",
                                                   "span", "count")), strict=True)
    )  # fmt: skip


@pytest.mark.parametrize("kind", ["synthetic", "random"])
def test_levels_match_the_plain_python_merge(kind):
    if kind == "synthetic":  # well nested: frames of 341 spans in two lanes
        t = synthetic_table(20_000, lanes=2, seed=4)
        cols = (t.start_ns, t.dur_ns, t.lane, t.depth)
    else:  # overlapping spans in 15 rows, 10 ns .. 50 ms, starts across +-8 s
        s, d, ln, dp, _ = random_spans(20_000, seed=8)
        order = np.argsort(s, kind="stable")  # a SpanTable is sorted by start
        cols = (s[order], d[order], ln[order], dp[order])
    levels = build_levels(*cols, min_entries=MIN)
    assert len(levels) >= 2
    sizes = [len(cols[0])] + [len(lv) for lv in levels]
    for lv, prev, size in zip(levels, sizes, sizes[1:], strict=False):
        assert size * LEVEL_SHRINK <= prev  # the memory bound: 1/8 + 1/64 + ...
        assert _entries(lv) == merge_reference(*cols, lv.bucket_ns)
        assert int(lv.count.sum()) == len(cols[0])  # every span stands in exactly one entry
    assert [lv.bucket_ns for lv in levels] == sorted({lv.bucket_ns for lv in levels})


@pytest.fixture(scope="module", params=["one_chunk", "split"])
def lod_store(device, request):
    """60k synthetic spans with their levels, in one chunk per level, and split across
    chunks of 1024 spans / 768 entries (an artificial 20 KiB binding limit)."""
    t = synthetic_table(60_000, lanes=2, seed=4)
    limit = 1024 * SPAN_BYTES + 19 if request.param == "split" else None
    store = SpanStore(device, max_binding_bytes=limit)
    store.upload(t, min_entries=MIN)
    assert [lv.count for lv in store.levels] == [4951, 440]
    if request.param == "split":
        assert [len(lv.chunks) for lv in store.levels] == [7, 1]
    packed = pack_spans(t.start_ns, t.dur_ns, t.lane, t.depth, t.name_id)
    return store, packed, np.zeros(len(t.names), np.uint32), t


VIEWS = {  # the whole 1465 ms, a fractional start: 3.7 ms a pixel, level 1 (2.1 ms buckets)
    "all": dict(start_ns=-20e6 + 0.37, px_per_ns=400 / 1.5e9, width=400),
    "scrolled": dict(start_ns=300e6, px_per_ns=300 / 1e9, width=300, scroll_px=32),
    # 47 ms a pixel: level 2 (33.5 ms buckets)
    "narrow": dict(start_ns=0.0, px_per_ns=31 / 1.465e9, width=31),
}


def _params(name: str) -> ViewParams:
    return ViewParams(height=200, row_px=16, lane_rows=np.array([1, 7]), **VIEWS[name])


@pytest.mark.parametrize("name", list(VIEWS))
def test_gpu_reads_the_level_span_by_span(device, lod_store, name):
    store, _, flags, t = lod_store
    p = _params(name)
    level = level_for(store.levels, p)
    assert level == (2 if name == "narrow" else 1)
    sel = run_select(device, store, p)
    assert sel.level == level
    got = sel.read_instances()
    got = got[np.lexsort((got["span"], (got["flags"] & INST_COLLAPSED) != 0))]
    entries = store.levels[level - 1].read_packed(device)
    ref = lod_select_reference(entries, flags, p)
    assert ref["collapsed"].sum() > 50  # (at 47 ms a pixel no 15 ms frame is a pixel wide)
    assert (~ref["collapsed"]).sum() > (5 if name != "narrow" else -1)
    for k in ("span", "x0", "w", "flags"):
        np.testing.assert_array_equal(got[k], ref[k])
    y0 = (ref["row"] + p.first_row).astype(np.float32) * np.float32(16) - np.float32(p.scroll_px)
    np.testing.assert_array_equal(got["y0"], y0)
    # the instances name real spans: a drawn entry's name is its representative's
    np.testing.assert_array_equal(got["name"], t.name_id[got["span"]])


def _by_row(ref: dict, collapsed: bool) -> dict[int, set]:
    out: dict[int, set] = {}
    for r, x, c in zip(ref["row"].tolist(), ref["x0"].tolist(), ref["collapsed"], strict=True):
        if c == collapsed:
            out.setdefault(r, set()).add(int(x))
    return out


@pytest.mark.parametrize("name", list(VIEWS))
def test_zoomed_out_picture_is_the_exact_one_within_a_pixel(device, lod_store, name):
    """Against the exact selection of every span (``select_reference``): the spans a pixel
    wide or more are the same instances; per row, every collapsed column drawn is one the
    exact selection draws, and every exact one is drawn there or one pixel left (a summary's
    spans start within one bucket, under a pixel); the pixel column at the left edge is
    exempt (a summary that began left of the view is drawn only if its longest span reaches
    in)."""
    store, packed, flags, t = lod_store
    p = _params(name)
    exact = select_reference(packed, flags, p)
    got = run_select(device, store, p).read_instances()
    coll = (got["flags"] & INST_COLLAPSED) != 0
    lod = {"row": got["lane_depth"].astype(np.int64), "x0": got["x0"], "collapsed": coll}
    lod["row"] = np.array([1, 7])[lod["row"] >> 16] + (lod["row"] & 0xFFFF) - p.first_row
    wide = np.flatnonzero(~exact["collapsed"])
    order = np.argsort(got["span"][~coll])
    np.testing.assert_array_equal(got["span"][~coll][order], exact["span"][wide])
    np.testing.assert_array_equal(got["x0"][~coll][order], exact["x0"][wide])
    np.testing.assert_array_equal(got["w"][~coll][order], exact["w"][wide])
    e, g = _by_row(exact, True), _by_row(lod, True)
    assert sum(map(len, e.values())) > 50
    for row in set(e) | set(g):
        ec, gc = e.get(row, set()) - {0}, g.get(row, set()) - {0}
        assert gc <= ec, f"row {row}: columns drawn that the exact selection leaves empty"
        assert ec <= gc | {c + 1 for c in gc}, f"row {row}: exact columns missing"
    # and each collapsed column is drawn as a real span of its row starting in it or the next
    x = packed[:, 0].astype(np.float64) + packed[:, 1].view(np.int32) * 2.0**32 - p.start_ns
    span = got["span"][coll].astype(np.int64)
    col = np.floor(x[span] * p.px_per_ns)
    assert np.all((col >= got["x0"][coll]) & (col <= got["x0"][coll] + 1) | (got["x0"][coll] == 0))
    np.testing.assert_array_equal(packed[span, 3], got["lane_depth"][coll])


def test_the_exact_selection_is_read_while_searching_or_zoomed_in(device, lod_store):
    store, packed, flags, _ = lod_store
    p = _params("all")
    p.search_on = True  # a match must win its pixel column: only the spans know
    assert level_for(store.levels, p) == 0
    p.search_on = False
    p.px_per_ns = 1 / 2.2e6  # 2.2 ms a pixel: the 2.1 ms buckets fit, barely
    assert level_for(store.levels, p) == 1
    p.px_per_ns = 1 / 2.0e6  # under a bucket a pixel: the spans
    assert level_for(store.levels, p) == 0
    sel = FlameSelect(device)
    sel.lod = False
    p = _params("all")
    run_select(device, store, p, sel)
    assert sel.level == 0
    got = sel.read_instances()
    assert sorted(got["span"].tolist()) == sorted(select_reference(packed, flags, p)["span"])


def test_pick_on_a_summary_names_its_longest_real_span(device, lod_store):
    store, _, flags, t = lod_store
    host = build_levels(t.start_ns, t.dur_ns, t.lane, t.depth, min_entries=MIN)[0]
    p = _params("all")
    entries = store.levels[0].read_packed(device)
    np.testing.assert_array_equal(entries[:, 5], host.span)
    ref = lod_select_reference(entries, flags, p)
    merged = np.flatnonzero(ref["collapsed"] & (host.count[ref["entry"]] > 1))
    sel = FlameSelect(device)
    row = (t.lane.astype(np.int64) << 16) | t.depth
    checked = 0
    for k in merged[::40][:6]:
        p.cursor = (float(ref["x0"][k]) + 0.5, (int(ref["row"][k]) + p.first_row) * 16.0 + 8)
        expect = pick_reference(ref, p)
        got = int(run_select(device, store, p, sel).read_state()[8])
        assert got == expect != NONE
        e = int(ref["entry"][k])
        if got != host.span[e]:
            continue  # a lower span index also under the cursor (the pick's tie rule)
        # the spans the summary stands for, from the table: its row, its bucket, shorter
        b = host.bucket_ns
        mine = (row == host.row[e]) & (t.start_ns // b == host.start_ns[e] // b) & (t.dur_ns < b)
        assert mine.sum() == host.count[e] > 1
        assert t.dur_ns[got] == t.dur_ns[mine].max() and mine[got]
        checked += 1
    assert checked >= 2


NEAR = {  # views of part of the trace: only the blocks near them are read
    # 20 ms at 0.1 ms a pixel, 600 ms in: the spans (level 0), a fractional start
    "spans": dict(start_ns=600e6 + 0.25, px_per_ns=200 / 20e6, width=200),
    # 300 ms at 3 ms a pixel: level 1
    "level": dict(start_ns=900e6, px_per_ns=100 / 300e6, width=100),
    # the view's left edge inside a long span (a frame begun 10 ms before it)
    "inside": dict(start_ns=16_666_667 * 30 + 10e6, px_per_ns=300 / 1e6, width=300),
}


@pytest.mark.parametrize("name", list(NEAR))
def test_only_the_blocks_near_the_view_are_read_and_nothing_is_missed(device, lod_store, name):
    store, packed, flags, t = lod_store
    p = ViewParams(height=200, row_px=16, lane_rows=np.array([1, 7]), **NEAR[name])
    sel = run_select(device, store, p)
    got = sel.read_instances()
    got = got[np.lexsort((got["span"], (got["flags"] & INST_COLLAPSED) != 0))]
    if sel.level == 0:
        ref = select_reference(packed, flags, p)
        total = len(packed)
    else:
        ref = lod_select_reference(store.levels[sel.level - 1].read_packed(device), flags, p)
        total = store.levels[sel.level - 1].count
    assert sel.level == (1 if name == "level" else 0)
    assert len(ref["span"]) > 10
    for k in ("span", "x0", "w", "flags"):
        np.testing.assert_array_equal(got[k], ref[k])
    assert sel.dispatched <= total // (4 if sel.level == 0 else 2)  # (split: whole chunks)
