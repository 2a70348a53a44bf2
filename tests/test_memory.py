"""The texture table (engine/tools/memory/tool.py) against the resources the graph reports and
bytes computed by hand; a resize and a shadow-size change leave no old target behind."""

from __future__ import annotations

import numpy as np
import wgpu

from engine.passes.resources import DEPTH, HDR
from engine.settings import FrameSettings
from engine.tools.memory.table import scan, totals
from engine.tools.memory.tool import MemoryTool
from tests.frame_harness import Harness
from tests.test_views import CAMERA, SIZE, ground_scene
from tests.tool_fakes import make_ctx


def rows_by_name(rows):
    return {r.name: r for r in rows}


def test_table_has_every_graph_resource_with_its_bytes(gpu):
    h = Harness(gpu, ground_scene(), SIZE, FrameSettings(taa=True))
    h.render(CAMERA, 1)
    rows = scan(h.graph)
    by = rows_by_name(rows)
    for n in h.graph.texture_names() + h.graph.buffer_names():
        assert by[n].owner == "graph", n
    w, hh = SIZE
    assert by[HDR].bytes == w * hh * 8 and by[HDR].format == "rgba16float"
    assert by[DEPTH].bytes == w * hh * 4 and "RENDER_ATTACHMENT" in by[DEPTH].usage
    p = h.frame.pyramid
    pyr = next(r for r in rows if r.name == "HiZ pyramid")
    want = sum(max(1, p.base[0] >> m) * max(1, p.base[1] >> m) * 4 for m in range(p.levels))
    assert pyr.bytes == want and pyr.category == "targets" and pyr.owner == "frame.pyramid"
    shadow = next(r for r in rows if r.name == "shadow map")
    assert shadow.bytes == 2048 * 2048 * 4 and shadow.size == "2048x2048"
    assert shadow.owner == "frame.shadow"  # the frame's, not the first pass that reaches it
    gs = h.frame.gs
    for buf in (gs.transforms, gs.vertices, gs.indices):
        assert any(r.bytes == buf.size and r.name == buf.label and r.owner == "frame.gs"
                   for r in rows), buf.label  # fmt: skip
    assert any(r.bytes == h.frame.counters.size and r.owner == "frame.cull" for r in rows)
    assert scan(h.graph) == rows  # the same owners every time
    assert len({(r.owner, r.name, r.bytes) for r in rows}) == len(rows)  # each object once
    t = totals(rows)
    assert t["total"] == sum(r.bytes for r in rows) and t["staging"] > 0


def test_resize_and_shadow_size_change_leave_no_old_target(gpu):
    h = Harness(gpu, ground_scene(), SIZE, FrameSettings(taa=False))
    h.render(CAMERA, 1)
    before = scan(h.graph)
    old_ids = {id(h.graph.texture(HDR)), id(h.frame.res.shadow.texture)}
    h.resize((32, 20))
    h.frame.set_settings(shadow_size=512)
    h.render(CAMERA, 1)
    after = rows_by_name(scan(h.graph))
    assert after[HDR].size == "32x20" and after[HDR].bytes == 32 * 20 * 8
    assert after["shadow map"].bytes == 512 * 512 * 4
    assert [r for r in after.values() if r.name == HDR] == [after[HDR]]  # one, the new one
    assert sum(r.name == "shadow map" for r in scan(h.graph)) == 1
    assert old_ids.isdisjoint({id(h.graph.texture(HDR)), id(h.frame.res.shadow.texture)})
    drop = totals(before)["total"] - sum(r.bytes for r in after.values())
    want = (SIZE[0] * SIZE[1] - 32 * 20) * (8 + 4) + (2048**2 - 512**2) * 4
    assert drop >= want  # HDR, depth and the shadow map shrank (and the pyramid)


def test_memory_command_budget_and_session(gpu, caplog):
    h = Harness(gpu, ground_scene(), SIZE)
    ctx = make_ctx(gpu, h.graph, gpu_budget=1)
    tool = ctx.install(MemoryTool())
    fact = ctx.telemetry.session.facts["gpu_memory"]
    assert fact["budget"] == 2**20 and fact["totals"]["total"] == totals(tool.rows)["total"]
    assert {r["name"] for r in fact["rows"]} >= {HDR, DEPTH, "shadow map"}
    out = ctx.commands.execute("memory").text
    assert "of --gpu-budget 1.0 MiB (OVER)" in out and "wgpu objects" in out
    assert "over --gpu-budget" in caplog.text  # logged once
    table = ctx.commands.execute("memory all").text.splitlines()
    assert len(table) == 2 + len(tool.rows)
    assert not ctx.commands.execute("memory bogus").ok
    counts = np.array([s[1].get("Texture", 0) for s in tool.history])
    assert (counts > 0).all()


def test_the_session_fact_follows_a_resize(gpu):
    """Once a second the tool compares wgpu's live texture and buffer counts; after a resize
    and a shadow-size change they differ, so the table is scanned again and the session
    fact (the portal's memory panel) resent: the new sizes, the old targets gone."""
    h = Harness(gpu, ground_scene(), SIZE, FrameSettings(taa=False))
    h.render(CAMERA, 1)
    ctx = make_ctx(gpu, h.graph)
    tool = ctx.install(MemoryTool())
    version = ctx.telemetry.session_version
    h.resize((32, 20))
    h.frame.set_settings(shadow_size=512)
    h.render(CAMERA, 1)
    tool._last = float("-inf")  # a second has passed
    tool._sample(None)
    fact = ctx.telemetry.session.facts["gpu_memory"]
    assert ctx.telemetry.session_version > version
    rows = {r["name"]: r for r in fact["rows"]}
    assert rows[HDR]["size"] == "32x20" and rows["shadow map"]["bytes"] == 512 * 512 * 4
    assert sum(r["name"] == "shadow map" for r in fact["rows"]) == 1
    assert fact["history"][-1][1] == totals(tool.rows)["total"]
    version = ctx.telemetry.session_version
    tool._last = float("-inf")
    tool._sample(None)  # nothing changed: no rescan, no resend
    assert ctx.telemetry.session_version == version


def test_hud_panel_shows_every_count_within_its_width(gpu):
    """The memory panel's object counts (thousands of views and bind groups: longer than
    one panel row) are drawn on two rows inside the panel, each count whole."""
    from engine.hud.grid import DebugOverlay
    from engine.tools.memory.panel import MemoryPanel, W

    h = Harness(gpu, ground_scene(), SIZE)
    ctx = make_ctx(gpu, h.graph)
    tool = ctx.install(MemoryTool())
    t = tool.history[-1][0]
    big = {"Texture": 12345, "TextureView": 23456, "Buffer": 3456, "BindGroup": 45678}
    tool.history.append((t + 3.0, big, tool.history[-1][2]))
    panel = MemoryPanel(tool)
    ov = DebugOverlay(120, 40)
    panel.draw(ov, 0, 0, 0, None)
    rows = ["".join(ov.glyph_at(c, r) or " " for c in range(ov.cols)) for r in range(ov.rows)]
    assert all(not row[W:].strip() for row in rows), rows  # nothing drawn right of the panel
    first = tool.history[0][1]
    kinds = (("tex", "Texture"), ("view", "TextureView"), ("buf", "Buffer"), ("bg", "BindGroup"))
    want = [f"{k} {big[n]}{big[n] - first.get(n, 0):+d}" for k, n in kinds]
    text = "\n".join(rows)
    assert "objects, change over 3 s:" in text
    assert all(w in text for w in want), (want, rows)


def test_texel_sizes_of_plain_packed_and_unknown_formats(gpu):
    from engine.tools.memory.table import describe, texel_bytes

    want = {"rg32uint": 8, "r16sint": 2, "bgra8unorm-srgb": 4, "rgba32float": 16,
            "rg11b10ufloat": 4, "depth32float-stencil8": 5, "bc1-rgba-unorm": None}  # fmt: skip
    assert {f: texel_bytes(f) for f in want} == want
    tex = gpu.device.create_texture(
        size=(6, 5, 1), format="rg32uint", mip_level_count=2,
        usage=wgpu.TextureUsage.TEXTURE_BINDING,
    )  # fmt: skip
    row = describe("test", "ids", tex)
    assert row.format == "rg32uint" and row.bytes == (6 * 5 + 3 * 2) * 8
