"""The flame chart's time ruler: tick steps and labels (hand-derived), and the drawn ticks
in the right pixel columns (a reference image too)."""

from __future__ import annotations

import numpy as np

from engine.graph import OUTPUT, FrameContext, RenderGraph, RenderPass
from engine.inspect.chart import FlameChart
from engine.inspect.ruler import tick_label, ticks
from engine.inspect.traceload import build_table
from engine.inspect.view import FlameView
from engine.surfaces import OffscreenTarget


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
    target = OffscreenTarget(device, size)
    graph = RenderGraph(device, output_format=target.format, size=size)

    def clear(ctx):
        return {"color_attachments": [{"view": ctx.output, "load_op": "clear",
                "clear_value": (0, 0, 0, 1), "store_op": "store"}]}  # fmt: skip

    graph.add(RenderPass("Clear", record=lambda ctx, rp: None, targets=clear, writes=(OUTPUT,)))
    view = FlameView(table.lane_depths(), 0, 1e6, (size[0], size[1] - band), origin=(0, band))
    view.ruler_px = band
    view.show(-37_000, 1_000_000)
    chart = FlameChart(device, target.format, view, readback=False)
    chart.store.upload(table)
    chart.add_passes(graph)
    enc = device.create_command_encoder()
    graph.execute(enc, FrameContext(device, graph, 0, 0.0, size, target.view))
    device.queue.submit([enc.finish()])
    rgb = target.read_rgba()[:, :, :3]
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
