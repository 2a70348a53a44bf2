"""Counter blocks (engine/counters.py): a technique's own block, named by its WGSL constants,
read back without stalling and shown like the culler's by the record, the shutdown report,
the trace, the wire (portal, --telemetry) and the HUD."""

from __future__ import annotations

import numpy as np
import pytest
import wgpu
from frame_harness import Harness, random_scene

from engine.counters import CounterReadback, Counts, counter_names
from engine.graph import ComputePass, TransferPass
from engine.passes.resources import DEPTH
from engine.scene.camera import Camera
from engine.settings import FrameSettings
from engine.telemetry import NameTable, encode_record
from engine.tools.export.trace import counter_events

WGSL = """
const P_SKY: u32 = 0u;
const P_SURFACE: u32 = 1u;
const P_NEAR_HALF: u32 = 2u;
@group(0) @binding(0) var depth: texture_depth_2d;
@group(0) @binding(1) var<storage, read_write> counters: array<atomic<u32>, 3>;
var<workgroup> wg: array<atomic<u32>, 3>;
@compute @workgroup_size(8, 8)
fn cs(@builtin(global_invocation_id) id: vec3u, @builtin(local_invocation_index) lid: u32) {
    if (lid < 3u) { atomicStore(&wg[lid], 0u); }
    workgroupBarrier();
    let size = textureDimensions(depth);
    if (all(id.xy < size)) {
        let d = textureLoad(depth, vec2i(id.xy), 0);
        atomicAdd(&wg[select(P_SURFACE, P_SKY, d == 0.0)], 1u);
        if (d > 0.5) { atomicAdd(&wg[P_NEAR_HALF], 1u); }
    }
    workgroupBarrier();
    if (lid < 3u) { atomicAdd(&counters[lid], atomicLoad(&wg[lid])); }  // one per workgroup
}
"""
CAM = Camera(np.array([0.0, 8.0, 26.0]), np.array([0.0, 1.0, 0.0]), 55.0, 0.5)


def test_names_come_from_the_wgsl_constants():
    assert counter_names(WGSL, "P_") == ("sky", "surface", "near_half")
    with pytest.raises(ValueError, match="want 0..N-1"):
        counter_names("const Q_A: u32 = 0u;\nconst Q_B: u32 = 2u;", "Q_")
    with pytest.raises(ValueError):
        counter_names(WGSL, "NOPE_")
    c = Counts("pixels", ("sky", "surface"), 7, (3, 5))
    assert c.surface == 5 and c.line() == "Pixels frame 7: sky 3, surface 5"


class Reset(TransferPass):
    writes = ("pixels.counters",)

    def __init__(self, buf, readback):
        super().__init__("Pixels.Reset")
        self.buf, self.readback, self.last = buf, readback, None

    def record(self, ctx, encoder):
        if self.last is not None:  # last frame's counts, before they are cleared
            self.readback.record_copy(encoder, self.buf, self.last)
        encoder.clear_buffer(self.buf)
        self.last = ctx.frame_index


class Count(ComputePass):
    reads = (DEPTH, "pixels.counters")
    writes = ("pixels.counters",)

    def __init__(self, device, graph, buf):
        super().__init__("Pixels")
        m = device.create_shader_module(code=WGSL)
        compute = {"module": m, "entry_point": "cs"}
        self.pipe = device.create_compute_pipeline(layout="auto", compute=compute)
        self.device, self.graph, self.buf = device, graph, buf

    def record(self, ctx, cpass):
        group = self.device.create_bind_group(
            layout=self.pipe.get_bind_group_layout(0),
            entries=[{"binding": 0, "resource": self.graph.view(DEPTH)},
                     {"binding": 1, "resource": {"buffer": self.buf}}],
        )  # fmt: skip
        w, h = ctx.size
        cpass.set_pipeline(self.pipe)
        cpass.set_bind_group(0, group)
        cpass.dispatch_workgroups(-(-w // 8), -(-h // 8))


def test_a_techniques_block_reaches_every_view(gpu):
    h = Harness(gpu, random_scene(30, 2), settings=FrameSettings(taa=False))
    d = gpu.device
    buf = d.create_buffer(size=12, usage=wgpu.BufferUsage.STORAGE | wgpu.BufferUsage.COPY_SRC
                          | wgpu.BufferUsage.COPY_DST)  # fmt: skip
    readback = CounterReadback(d, "pixels", counter_names(WGSL, "P_"), batch=1)
    h.graph.add_readback(readback)
    h.frame.insert(Reset(buf, readback), before="Cull.Reset")
    h.frame.insert(Count(d, h.graph, buf), after="Main.Late")
    h.render(CAM, frames=12)
    h.loop.drain()
    rec = h.loop.telemetry.latest
    block = next(c for c in rec.counters if c.block == "pixels")
    assert [c.block for c in rec.counters] == ["cull", "cascade0", "pixels"]  # one cascade
    from engine.tools.dump.tool import read_texture

    depth = read_texture(d, h.graph.texture(DEPTH))  # the last frame's: a static view
    want = ((depth == 0).sum(), (depth != 0).sum(), (depth > 0.5).sum())
    assert block.values == tuple(int(x) for x in want) and sum(block.values[:2]) == 96 * 64
    assert block.line().startswith(f"Pixels frame {block.frame_index}: sky {want[0]},")
    events = counter_events(h.loop.telemetry.history, 0)
    mine = [e for e in events if e["name"] == "Pixels"]
    assert mine and mine[-1]["args"] == {"sky": want[0], "surface": want[1], "near_half": want[2]}
    table = NameTable()
    _, msg = encode_record(rec, table)
    wired = next(b for b in msg["counters"] if b["block"] == "pixels")
    names = {i: n for n, i in table.ids.items()}
    assert [names[i] for i in wired["names"]] == ["sky", "surface", "near_half"]
    assert wired["values"] == list(block.values)


def test_the_hud_lists_other_blocks_under_their_names():
    from engine.hud.grid import DebugOverlay
    from engine.hud.panel import HudData
    from engine.tools.cull.panel import CountersPanel

    panel = CountersPanel()
    block = Counts("lights", ("tested", "visible", "at_cap"), 41, (4096, 310, 0))
    data = HudData([], counters=(block,))
    assert panel.tick(data) and panel.has_content(data)
    ov = DebugOverlay(60, 10)
    panel.draw(ov, 0, 0, 0, data)
    rows = ["".join(ov.glyph_at(c, r) or " " for c in range(60)).rstrip() for r in range(4)]
    assert rows[0].strip() == "LIGHTS frame 41"
    assert rows[1].split() == ["tested", "4096"] and rows[3].split() == ["at_cap", "0"]
    assert not panel.has_content(HudData([], counters=()))
