"""The flame chart's draw (shaders/flame_draw.wgsl): ONE instanced indirect draw of rounded
rectangles over the instances the select pass wrote, with labels inside spans wide enough.

Each instance is a quad inflated by the antialiasing margin only (1 px); the fragment shader
computes the signed distance to the rounded box (corner radius 3 px) and writes its
coverage, draws the state (hover: lighter with a white rim; selected: yellow 2 px rim; same
name as the selected: cyan 1 px rim; dimmed by search: dark grey; collapsed pixel column:
darker, square) and the label glyphs of the baked 8x8 font (``engine.overlay.font8x8``).

Blending is ``max`` (factors one): the select pass appends instances with atomics, so their
order changes run to run; ``max`` makes overlapping antialiased fringes order-independent
(a deterministic picture) and, on the dark chart background, looks like "over" blending.
An optional panel quad (``over`` blending) darkens the chart area first when drawing over a
frame (live mode); an optional ruler quad (``vs_ruler``/``fs_ruler``) draws the time ruler's
ticks above the chart and its grid lines down it, from the tick spacing in the view uniform.
"""

from __future__ import annotations

import wgpu

from engine.shader_registry import shader_pipeline

MAX_BLEND = {
    "color": {"src_factor": "one", "dst_factor": "one", "operation": "max"},
    "alpha": {"src_factor": "one", "dst_factor": "one", "operation": "max"},
}
OVER_BLEND = {
    "color": {
        "src_factor": "src-alpha",
        "dst_factor": "one-minus-src-alpha",
        "operation": "add",
    },
    "alpha": {"src_factor": "one", "dst_factor": "one-minus-src-alpha", "operation": "add"},
}


class FlameDraw:
    """Pipelines of the chart's render pass.

    Args:
        device: the ``wgpu.GPUDevice``.
        fmt: the colour target's format.
    """

    def __init__(self, device: wgpu.GPUDevice, fmt: str):
        self.device = device
        f = wgpu.ShaderStage.FRAGMENT
        v = wgpu.ShaderStage.VERTEX
        ro = {"type": "read-only-storage"}
        kinds = [({"type": "uniform"}, v | f), (ro, v), (ro, v | f), (ro, f), (ro, f)]
        self.layout = device.create_bind_group_layout(
            label="Flame.Draw",
            entries=[
                {"binding": b, "visibility": vis, "buffer": k} for b, (k, vis) in enumerate(kinds)
            ],
        )
        layout = device.create_pipeline_layout(bind_group_layouts=[self.layout])
        self.shader = shader_pipeline(
            device,
            "flame_draw.wgsl",
            lambda m: (
                self._pipeline(layout, m, "vs", "fs", fmt, MAX_BLEND),
                self._pipeline(layout, m, "vs_panel", "fs_panel", fmt, OVER_BLEND),
                self._pipeline(layout, m, "vs_ruler", "fs_ruler", fmt, OVER_BLEND),
            ),
        )  # explicit layout: the bind group survives a reload
        self.bind_group = None
        self._key = None

    @property
    def spans(self):  # the current pipelines: hot reload replaces them
        return self.shader.get()[0]

    @property
    def panel(self):
        return self.shader.get()[1]

    @property
    def ruler(self):
        return self.shader.get()[2]

    def _pipeline(self, layout, m, vs: str, fs: str, fmt: str, blend: dict):
        return self.device.create_render_pipeline(
            label=f"Flame.Draw.{vs}",
            layout=layout,
            vertex={"module": m, "entry_point": vs},
            primitive={"topology": "triangle-list"},
            fragment={
                "module": m,
                "entry_point": fs,
                "targets": [{"format": fmt, "blend": blend}],
            },
        )

    def prepare(self, store, select) -> None:
        """(Re)build the bind group when a buffer was replaced."""
        key = (store.version, id(select.insts))
        if key == self._key:
            return
        bufs = [select.uniform, select.insts, store.names, store.chars, store.font]
        self.bind_group = self.device.create_bind_group(
            label="Flame.Draw",
            layout=self.layout,
            entries=[{"binding": i, "resource": {"buffer": b}} for i, b in enumerate(bufs)],
        )
        self._key = key

    def record(self, rpass, select, *, panel: bool = False, ruler: bool = False) -> None:
        """Draw the panel and the ruler (optional) and the instances: the same commands
        for any count."""
        rpass.set_bind_group(0, self.bind_group)
        if panel:
            rpass.set_pipeline(self.panel)
            rpass.draw(6)
        if ruler:
            rpass.set_pipeline(self.ruler)
            rpass.draw(6)
        rpass.set_pipeline(self.spans)
        rpass.draw_indirect(select.args, 0)
