"""One flame chart as render-graph passes: ``Flame.Select`` (compute: selection and
picking), ``Flame.Readback`` (transfer: the pick result and counts into a ``ReadbackRing``,
never waited for) and ``Flame`` (render: the instanced draw into the output).

``FlameChart.add_passes(graph)`` adds the three in that order; each pass is a small object
with ``record(ctx, pass_encoder)`` (and ``targets(ctx)`` for the render pass). The CPU work
per frame is one uniform write and the same dozen commands for any span count.
"""

from __future__ import annotations

import numpy as np
import wgpu

from ..graph import ComputePass, FrameContext, RenderPass, TransferPass
from ..readback import ReadbackRing
from .draw import FlameDraw
from .select import NONE, FlameSelect, ViewParams
from .spans import SpanStore
from .view import FlameView

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
        self.result_frame = -1
        self._pending: int | None = None
        self.params: ViewParams | None = None
        self.passes = []

    def add_passes(self, graph) -> list:
        """Add ``<name>.Select``, ``<name>.Readback`` (if ``readback``) and ``<name>``."""
        n = self.name
        self.passes = [graph.add(ComputePass(f"{n}.Select", record=SelectPass(self).record))]
        if self.readback:
            rb = ReadbackPass(self)
            self.passes.append(graph.add(TransferPass(f"{n}.Readback", record=rb.record)))
        draw = DrawPass(self)
        self.passes.append(graph.add(RenderPass(n, record=draw.record, targets=draw.targets)))
        return self.passes

    def set_enabled(self, on: bool) -> None:
        self.enabled = on
        for p in self.passes:
            p.enabled = on

    def poll(self) -> None:
        """Take finished readbacks (newest wins); never blocks."""
        if self._pending is not None:  # the frame that copied was submitted since
            self.ring.submitted(self._pending)
            self._pending = None
        for frame, data in self.ring.poll():
            w = np.frombuffer(data, np.uint32)
            self.drawn, self.wanted, self.picked = int(w[1]), int(w[7]), int(w[8])
            self.result_frame = frame

    def prepare(self, ctx: FrameContext) -> None:
        self.poll()
        self.params = self.view.params(ctx.size, glyph_px=self.glyph_px)
        self.select.prepare(self.store, self.params)
        self.draw.prepare(self.store, self.select)


class SelectPass:
    """Compute: the selection and picking dispatches (``FlameSelect``)."""

    def __init__(self, chart: FlameChart):
        self.chart = chart

    def record(self, ctx: FrameContext, cpass) -> None:
        self.chart.prepare(ctx)
        self.chart.select.record(cpass)


class ReadbackPass:
    """Transfer: copy the pick result and counts into the readback ring."""

    def __init__(self, chart: FlameChart):
        self.chart = chart

    def record(self, ctx: FrameContext, encoder: wgpu.GPUCommandEncoder) -> None:
        c = self.chart
        if c.ring.copy(encoder, c.select.state, 0, READBACK_BYTES):
            c._pending = ctx.frame_index


class DrawPass:
    """Render: the chart's instanced draw over the output (loaded, not cleared)."""

    def __init__(self, chart: FlameChart):
        self.chart = chart

    @staticmethod
    def targets(ctx: FrameContext) -> dict:
        return {"color_attachments": [{"view": ctx.output, "load_op": "load", "store_op": "store"}]}

    def record(self, ctx: FrameContext, rpass) -> None:
        c = self.chart
        c.draw.record(rpass, c.select, panel=c.panel)
