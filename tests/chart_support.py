"""Drawing a flame chart into an offscreen target through a render graph (the flame chart
picture tests)."""

from __future__ import annotations

import numpy as np

from engine.flamechart.chart import FlameChart
from engine.graph import OUTPUT, FrameContext, RenderGraph, RenderPass
from engine.surfaces import OffscreenTarget

BLACK = (0.0, 0.0, 0.0, 1.0)


def chart_picture(
    device, table, view, size, *, clear=BLACK, extras=False, readback=False, setup=None, frames=1
) -> tuple[np.ndarray, FlameChart]:
    """Draw ``table`` through ``view`` at ``size`` (W, H) pixels over a target cleared to
    ``clear``, ``frames`` times; ``extras``: with the chart's counters and flow arrows;
    ``setup(chart, view)`` runs before the first frame. Returns the (H, W, 3) uint8 picture
    and the chart."""
    from engine.flamechart.extras import ChartExtras

    target = OffscreenTarget(device, size)
    graph = RenderGraph(device, output_format=target.format, size=size)

    def cleared(ctx):
        att = {"view": ctx.output, "load_op": "clear", "clear_value": clear, "store_op": "store"}
        return {"color_attachments": [att]}

    graph.add(RenderPass("Clear", record=lambda ctx, rp: None, targets=cleared, writes=(OUTPUT,)))
    chart = FlameChart(device, target.format, view, readback=readback)
    chart.store.upload(table)
    if extras:
        chart.extras = ChartExtras(device, target.format, table)
    chart.add_passes(graph)
    if setup is not None:
        setup(chart, view)
    for i in range(frames):
        enc = device.create_command_encoder()
        graph.execute(enc, FrameContext(device, graph, i, 0.0, size, target.view))
        device.queue.submit([enc.finish()])
    return target.read_rgba()[:, :, :3], chart
