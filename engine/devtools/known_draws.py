"""A render pass of draws with known relative GPU costs: the per-draw timing's known answer.

Three fullscreen triangles in one pass, whose fragment loop runs ``iterations * k`` times
for ``k`` in ``COSTS`` (the draw's instance index is its factor, so no draw can exit early),
each labelled ``x{k}`` for ``engine.profiling.draws``. ``tests/test_draws.py`` checks the
timings' structure on it and ``lantern bench profiler`` prints the measured ratios (2 and 4
to the ``x1`` draw).
"""

from __future__ import annotations

import numpy as np
import wgpu

from engine.graph import RenderPass
from engine.profiling.draws import draw_label

#: Relative fragment cost of the three draws, in recording order.
COSTS = (2, 4, 1)
SHADER = """
struct VOut { @builtin(position) pos: vec4f, @location(0) @interpolate(flat) k: u32 };
@group(0) @binding(0) var<uniform> base: vec4u;
@vertex fn vs(@builtin(vertex_index) i: u32, @builtin(instance_index) k: u32) -> VOut {
    let q = vec2f(f32((i << 1u) & 2u), f32(i & 2u));
    return VOut(vec4f(q * 2.0 - 1.0, 0.0, 1.0), k);
}
@fragment fn fs(v: VOut) -> @location(0) vec4f {
    var a = v.pos.x * 0.001;
    for (var j = 0u; j < base.x * v.k; j++) { a = fract(a * 1.37 + 0.11); }
    return vec4f(a, 0.0, 0.0, 1.0);
}
"""


def known_draws_pass(
    device: wgpu.GPUDevice, size: tuple[int, int], iterations: int, fmt: str = "rgba8unorm"
) -> RenderPass:
    """The ``Draws`` pass over its own ``size`` ``(w, h)`` pixel ``fmt`` target; the x1
    draw's fragment loop runs ``iterations`` times a pixel."""
    m = device.create_shader_module(code=SHADER)
    pipe = device.create_render_pipeline(
        layout="auto",
        vertex={"module": m, "entry_point": "vs"},
        fragment={"module": m, "entry_point": "fs", "targets": [{"format": fmt}]},
    )
    u = device.create_buffer_with_data(
        data=np.array([iterations, 0, 0, 0], np.uint32).tobytes(), usage=wgpu.BufferUsage.UNIFORM
    )
    bg = device.create_bind_group(
        layout=pipe.get_bind_group_layout(0), entries=[{"binding": 0, "resource": {"buffer": u}}]
    )
    view = device.create_texture(
        size=(*size, 1), format=fmt, usage=wgpu.TextureUsage.RENDER_ATTACHMENT
    ).create_view()

    def targets(ctx):
        color = {"view": view, "load_op": "clear", "store_op": "store", "clear_value": (0,) * 4}
        return {"color_attachments": [color]}

    def record(ctx, rpass):
        rpass.set_pipeline(pipe)
        rpass.set_bind_group(0, bg)
        for c in COSTS:
            draw_label(rpass, f"x{c}")
            rpass.draw(3, 1, 0, c)

    return RenderPass("Draws", record=record, targets=targets)
