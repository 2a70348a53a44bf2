"""The flame chart's time ruler: tick steps and labels (hand-derived), and the drawn ticks
in the right pixel columns (a reference image too)."""

from __future__ import annotations

import numpy as np
import pytest

from engine.devtools.traces.traceload import build_table
from engine.flamechart.ruler import UNIT_NS, label_boxes, label_unit, tick_label, ticks
from engine.flamechart.view import FlameView
from tests.chart_support import chart_picture


def test_tick_steps_are_1_2_5_and_at_least_90_px():
    assert ticks(0, 10.0).step_ns == 1000  # 900 ns wanted -> 1 us
    assert ticks(0, 12.0).step_ns == 2000  # 1080 -> 2 us
    assert ticks(0, 30.0).step_ns == 5000  # 2700 -> 5 us
    assert ticks(0, 60.0).step_ns == 10_000  # 5400 -> 10 us
    t = ticks(-1234.0, 10.0)
    assert (t.first_ns, t.px, t.minors) == (-1000.0, 100.0, 5)
    assert t.x0 == (-1000 + 1234) / 10
    assert [round(x, 6) for x, _ in t.majors(350)] == [23.4, 123.4, 223.4, 323.4]


def test_tick_labels_follow_the_display_unit_and_the_step():
    assert tick_label(12_500_000, 500_000) == "12.5 ms"
    assert tick_label(5_000_000_000, 100_000_000) == "5,000 ms"
    assert tick_label(2_000, 1000, "ns") == "2,000 ns"
    assert tick_label(-0.0001, 1000) == "0.000 ms"  # never "-0.000"


def test_ruler_ticks_land_in_their_pixel_columns(device, compare_reference):
    size, band = (320, 96), 16
    table = build_table([0, 0], [0, 200_000], [1_000_000, 600_000], [0, 1], ["a", "b"], ["L"])
    view = FlameView(table.lane_depths(), 0, 1e6, (size[0], size[1] - band), origin=(0, band))
    view.ruler_px = band
    view.show(-37_000, 1_000_000)
    rgb, _ = chart_picture(device, table, view, size)
    tk = ticks(view.start_ns, view.ns_per_px)
    assert tk.step_ns == 500_000  # 90 px x ~3300 ns/px -> 0.5 ms
    want = [round(x) for x, _ in tk.majors(size[0])]
    top = rgb[2, :, 0]  # a row near the band's top: only the majors are lit there
    assert np.flatnonzero(top > 100).tolist() == want
    grid = rgb[size[1] - 2, :, 0]  # below the spans: the faint grid line of each major
    assert np.flatnonzero(grid > 20).tolist() == want
    minor_row = rgb[band - 3, :, 0]  # minors at the band's bottom, 5 per major
    assert len(np.flatnonzero((minor_row > 100) & (minor_row < 180))) >= 4 * (len(want) - 1)
    compare_reference("flame_ruler_320x96", rgb)


def test_label_unit_grows_past_six_digits():
    assert label_unit("ns", 0, 999_999) == "ns"  # "999,999 ns"
    assert label_unit("ns", 0, 2e9) == "ms"  # a 2 s trace: 2e6 us is 7 digits too
    assert label_unit("ns", -5e6, 1e6) == "us"
    assert label_unit("ms", 0, 2e9) == "ms"
    assert label_unit("ms", 0, 3.6e15) == "s"  # 1000 hours: 3.6e9 ms


@pytest.mark.parametrize("unit", ["ms", "ns"])
@pytest.mark.parametrize("char_px", [8, 16])
def test_ruler_labels_never_overlap_and_read_back_their_ticks(unit, char_px):
    """A 2 s trace at zooms from all of it to 1/20 ns per px, near 0 and near 2 s: the label
    boxes the viewer draws are disjoint, in order, and each label parses back to its tick's
    time in the unit the ruler chose (the header's)."""
    view = FlameView(np.array([1]), 0, 2e9, (1000, 200))
    view.display_unit, view.label_px = unit, char_px
    for ns_per_px in (2.1e6, 3.3e5, 1.7e4, 900.0, 7.0, 0.05):
        for start in (-4e7, 1e9 + 123.4, 1.9999e9):
            view.start_ns, view.ns_per_px = start, ns_per_px
            tk, u = view.ruler()
            assert u == label_unit(unit, start, start + 1000 * ns_per_px)
            assert view.params((1000, 200)).tick_px == tk.px  # the shader's ticks are these
            boxes = label_boxes(tk, 1000, u, char_px)
            assert len(boxes) >= 2 or tk.px > 500, (ns_per_px, start)
            for (_, x1, _, _), (x0, _, _, _) in zip(boxes[:-1], boxes[1:], strict=False):
                assert x1 < x0, (ns_per_px, start, boxes)
            for x0, x1, text, t in boxes:
                value, got_unit = text.split(" ")
                assert got_unit == u and x1 - x0 == len(text) * char_px
                assert abs(float(value.replace(",", "")) * UNIT_NS[u] - t) <= 1e-6 * tk.step_ns


@pytest.mark.parametrize("unit", ["ms", "ns"])
def test_viewer_header_and_ruler_agree_on_the_unit(unit):
    """s14's text rows for a 2 s trace at a coarse and a fine zoom: the ruler row holds the
    labels of ``label_boxes`` at their columns, the header's range is in the same unit and
    reads back the view's edges."""
    from engine.flamechart.select import NONE
    from engine.hud.grid import DebugOverlay
    from samples.s14_flame import FlameViewer

    table = build_table([0, 0], [0, 10**9], [10**9, 2 * 10**9], [0, 0], ["a", "b"], ["L"])
    table.display_unit = unit
    s = FlameViewer.__new__(FlameViewer)  # its text, without a device
    s.table, s.title, s.scale, s.typing, s.matches = table, "t.json", 1, False, []
    s.stats = s.range_stats = None
    s.overlay = DebugOverlay(100, 30)
    view = s.view = FlameView(table.lane_depths(), 0, 2e9, (640, 200), origin=(0, 32))
    view.display_unit, view.label_px, view.hover = unit, 8, NONE
    for t0, t1 in ((0, 2e9), (1.2e9 + 100, 1.2e9 + 900)):
        view.show(t0, t1)
        s._text()
        rows = ["".join(s.overlay.glyph_at(c, r) or " " for c in range(80)) for r in (0, 2)]
        tk, u = view.ruler()
        want = [" "] * 80
        for x0, _, text, _ in label_boxes(tk, view.width, u, 8):
            want[int(x0 // 8) : int(x0 // 8) + len(text)] = text
        assert rows[1] == "".join(want)
        a, b, got_u = rows[0].split("spans")[1].split("(")[0].replace("..", "").split()
        assert got_u == u == rows[1].split()[1]
        for text, edge in ((a, view.time_at(0)), (b, view.time_at(view.width))):
            assert abs(float(text.replace(",", "")) * UNIT_NS[u] - edge) <= view.ns_per_px
    assert u == "ms"  # at 1.2 s either way: 10 integer digits in ns, 7 in us
