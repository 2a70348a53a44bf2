"""One flame chart as render-graph passes: ``<name>.Select`` (compute: selection and
picking), ``<name>.Read`` (transfer: the pick result and counts into a ``ReadbackRing``,
never waited for; the frame loop drives it as a readback client) and ``<name>`` (render: the
instanced draw over the output).

``FlameChart.add_passes(graph)`` adds them in that order. Each is a pass object with
``record(ctx, pass_encoder)`` (and ``targets(ctx)``), declaring the logical resources
``<name>.instances`` (select -> draw) and ``<name>.state`` (select -> readback). The CPU work
per frame is one uniform write and the same dozen commands for any span count.
"""

from __future__ import annotations

import numpy as np
import wgpu

from engine.graph import OUTPUT, ComputePass, FrameContext, RenderPass, TransferPass
from engine.inspect.draw import FlameDraw
from engine.inspect.select import NONE, FlameSelect, ViewParams
from engine.inspect.spans import SpanStore
from engine.inspect.view import FlameView
from engine.readback import ReadbackRing

READBACK_BYTES = 48  # state words 0..11: drawn (1), wanted (7), picked (8)


class FlameChart:
    """Store, selection, draw and readback of one chart, driven by a ``FlameView``.

    Args:
        device: the ``wgpu.GPUDevice``. ``fmt``: the output format.
        view: the camera and interaction state.
        name: prefix of the pass names (``"Flame"``).
        panel: darken the chart area first (drawing over a frame).
        glyph_px: label glyph scale.
        readback: add the ``Readback`` pass (hover needs it; a chart without a cursor not).

    Attributes:
        store: the ``SpanStore``. ``picked``: the newest pick result (span index or NONE).
        drawn, wanted: instances drawn / asked for in the newest result (``wanted > drawn``
            means the instance list overflowed).
    """

    def __init__(
        self,
        device: wgpu.GPUDevice,
        fmt: str,
        view: FlameView,
        *,
        name: str = "Flame",
        panel: bool = False,
        glyph_px: int = 1,
        readback: bool = True,
    ):
        self.device = device
        self.view = view
        self.name = name
        self.panel = panel
        self.glyph_px = glyph_px
        self.enabled = True
        self.store = SpanStore(device)
        self.select = FlameSelect(device)
        self.draw = FlameDraw(device, fmt)
        self.readback = readback
        self.ring = ReadbackRing(device, READBACK_BYTES, slots=4, batch=1, label="flame pick")
        self.picked = NONE
        self.drawn = self.wanted = 0
        self._pending: int | None = None
        self.params: ViewParams | None = None
        self.passes = []
        self.extras = None  # an ``engine.inspect.extras.ChartExtras`` (counters, flows)

    def add_passes(self, graph) -> list:
        """Add ``<name>.Select``, ``<name>.Read`` (if ``readback``) and ``<name>``; the
        readback is registered with ``graph.add_readback`` for the frame loop."""
        self.passes = [graph.add(SelectPass(self))]
        if self.readback:
            self.passes.append(graph.add(ReadbackPass(self)))
            graph.add_readback(PickReadback(self))
        self.passes.append(graph.add(DrawPass(self)))
        return self.passes

    def set_enabled(self, on: bool) -> None:
        self.enabled = on
        for p in self.passes:
            p.enabled = on

    def submitted(self) -> None:
        """The frame holding this frame's readback copy was submitted."""
        if self._pending is not None:
            self.ring.submitted(self._pending)
            self._pending = None

    def poll(self) -> None:
        """Take finished readbacks (newest wins); never blocks. Also works without a frame
        loop (tests, tools): a copy still pending here was submitted since it was recorded."""
        self.submitted()
        for _frame, data in self.ring.poll():
            w = np.frombuffer(data, np.uint32)
            self.drawn, self.wanted, self.picked = int(w[1]), int(w[7]), int(w[8])

    def prepare(self, ctx: FrameContext) -> None:
        self.poll()
        self.params = self.view.params(ctx.size, glyph_px=self.glyph_px)
        self.select.prepare(self.store, self.params)
        self.draw.prepare(self.store, self.select)
        if self.extras is not None:
            self.extras.prepare(self.params, self.select.uniform)


class SelectPass(ComputePass):
    """Compute: the selection and picking dispatches (``FlameSelect``)."""

    def __init__(self, chart: FlameChart):
        n = chart.name
        super().__init__(f"{n}.Select", writes=(f"{n}.instances", f"{n}.state"))
        self.chart = chart

    def record(self, ctx: FrameContext, cpass) -> None:
        self.chart.prepare(ctx)
        self.chart.select.record(cpass)


class ReadbackPass(TransferPass):
    """Transfer: copy the pick result and counts into the readback ring."""

    def __init__(self, chart: FlameChart):
        super().__init__(f"{chart.name}.Read", reads=(f"{chart.name}.state",))
        self.chart = chart

    def record(self, ctx: FrameContext, encoder: wgpu.GPUCommandEncoder) -> None:
        c = self.chart
        if c.ring.copy(encoder, c.select.state, 0, READBACK_BYTES):
            c._pending = ctx.frame_index


class PickReadback:
    """The chart's ring as an ``engine.loop.ReadbackClient`` (channel ``"flame"``: the
    result stays in the chart, no telemetry field)."""

    channel = "flame"

    def __init__(self, chart: FlameChart):
        self.chart = chart

    def after_submit(self) -> None:
        self.chart.submitted()

    def collect(self):
        self.chart.poll()
        return None

    def drain(self, timeout_s: float = 1.0):
        self.chart.ring.drain(timeout_s)
        return None


class DrawPass(RenderPass):
    """Render: the chart's instanced draw over the output (loaded, not cleared)."""

    def __init__(self, chart: FlameChart):
        n = chart.name
        super().__init__(n, reads=(OUTPUT, f"{n}.instances"), writes=(OUTPUT,))
        self.chart = chart

    def targets(self, ctx: FrameContext) -> dict:
        return {"color_attachments": [{"view": ctx.output, "load_op": "load", "store_op": "store"}]}

    def record(self, ctx: FrameContext, rpass) -> None:
        c = self.chart
        c.draw.record(rpass, c.select, panel=c.panel, ruler=c.view.ruler_px > 0)
        if c.extras is not None:
            c.extras.record(rpass)
