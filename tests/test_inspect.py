"""The resource viewer (engine/tools/inspector/tool.py): the GPU reduction against numpy on the
read-back texture, snapshots after a pass, NaN/Inf counts, bad input, nothing when off."""

from __future__ import annotations

import numpy as np
import pytest
import wgpu

from engine.passes.resources import DEPTH, HDR, PYRAMID
from engine.settings import FrameSettings
from engine.tools.dump.tool import read_texture
from engine.tools.inspector.passes import BINS, TextureReduction, TextureStats
from engine.tools.inspector.reference import reference_stats
from engine.tools.inspector.tool import InspectorTool
from tests.frame_harness import Harness
from tests.test_views import CAMERA, SIZE, Inject, ground_scene
from tests.tool_fakes import make_ctx


class Inspected:
    def __init__(self, gpu, settings=None):
        self.h = Harness(gpu, ground_scene(), SIZE, settings or FrameSettings(taa=False))
        self.ctx = make_ctx(gpu, self.h.graph)
        self.tool = self.ctx.install(InspectorTool())
        self.device = gpu.device

    def run(self, line: str, frames: int = 3):
        r = self.ctx.commands.execute(line)
        assert r.ok, r.text
        self.h.render(CAMERA, frames)
        return self.tool.readback.drain()

    def frames(self, n: int):
        """``n`` frames with the tool context's per-frame hooks (the probe), then the
        figures read back."""
        self.h.render(CAMERA, n, hooks=self.ctx.updates)
        return self.tool.readback.drain()


def check(stats, values, value_range=None):
    want = reference_stats(values, value_range)
    assert (stats.finite, stats.nan, stats.inf) == (want["finite"], want["nan"], want["inf"])
    assert stats.lo == pytest.approx(want["lo"], abs=0) and stats.hi == want["hi"]
    assert stats.mean == pytest.approx(want["mean"], rel=1e-4)
    assert stats.bins.sum() == want["bins"].sum()
    assert np.abs(stats.bins - want["bins"]).sum() <= 2  # a value on a bin edge may move


@pytest.fixture(scope="module")
def insp(gpu):
    return Inspected(gpu)


def test_hdr_channels_against_numpy(gpu, insp):
    for ch, i in (("r", 0), ("g", 1)):
        s = insp.run(f"inspect {HDR} channel {ch}")
        hdr = read_texture(gpu.device, insp.h.graph.texture(HDR)).astype(np.float32)
        check(s, hdr[:, :, i])
        assert s.lo < s.hi and len(s.bins) == BINS


def test_depth_with_a_fixed_range_and_a_pyramid_mip(gpu, insp):
    s = insp.run(f"inspect {DEPTH} range 0.001 0.01")
    depth = read_texture(gpu.device, insp.h.graph.texture(DEPTH))[:, :, 0]
    check(s, depth, (0.001, 0.01))
    assert (s.hist_lo, s.hist_hi) == pytest.approx((0.001, 0.01))
    s = insp.run(f"inspect {PYRAMID} mip 2")
    lv = read_texture(gpu.device, insp.h.frame.pyramid.texture, mip=2)[:, :, 0]
    check(s, lv)
    assert s.finite == lv.size


def test_snapshot_after_a_pass_and_nan_inf_counts(gpu):
    v = Inspected(gpu)
    g = v.h.graph
    g.passes.insert(g.passes.index(g.pass_named("Sky")) + 1, Inject(gpu.device, g))
    s = v.run(f"inspect {HDR}@Inject")
    snap = read_texture(gpu.device, g.texture(f"{HDR}@Inject"))[:, :, 0].astype(np.float32)
    assert (s.nan, s.inf) == (1, 2)  # Inject's NaN, +Inf and -Inf in channel r
    check(s, snap)
    s = v.run(f"inspect {HDR}@Main.Late")  # before Inject and Sky: no NaN, no sky
    assert (s.nan, s.inf) == (0, 0)
    check(s, read_texture(gpu.device, g.texture(f"{HDR}@Main.Late"))[:, :, 0].astype(np.float32))


def test_bad_input_is_one_line_and_changes_nothing(insp):
    insp.run(f"inspect {HDR}", frames=1)
    before = insp.tool.selection
    cases = {
        "inspect nope": "textures: frame.albedo, frame.ambient, frame.depth, frame.hdr",
        f"inspect {PYRAMID} mip 40": "mips 0..",
        f"inspect {HDR} layer 1": "layers 0..0",
        f"inspect {DEPTH} channel g": "has r",
        f"inspect {HDR}@Post": "passes that do: Main.Early",
        f"inspect {HDR} range 2 1": "LO < HI",
        f"inspect {HDR} range 0 inf": "range: 0 inf: give two finite numbers LO < HI",
        f"inspect {HDR} range nan 1": "range: nan 1: give two finite numbers",
        f"inspect {HDR} zoom 2": "options: mip N",
        "inspect post.taa": "no pass writes 'post.taa' now",  # TAA off in this frame
    }
    for line, msg in cases.items():
        r = insp.ctx.commands.execute(line)
        assert not r.ok and msg in r.text and "\n" not in r.text, (line, r.text)
    assert insp.tool.selection == before


def test_off_adds_no_pass(gpu):
    v = Inspected(gpu)
    v.h.render(CAMERA, 1)
    bare = v.h.graph.pass_names()
    assert v.tool.readback is None  # nothing made before the first inspect
    v.run(f"inspect {HDR}", frames=1)
    assert v.h.graph.pass_names() == [*bare, "Inspect", "Inspect.Read"]
    v.run("inspect off", frames=1)
    assert v.h.graph.pass_names() == bare


def test_a_knob_that_starves_the_inspected_texture_turns_the_viewer_off(gpu, caplog):
    """``shadows off`` under ``inspect shadow.map`` (no pass writes the map any more): the
    next frame turns the viewer off with one warning instead of failing the graph; the
    frames go on."""
    v = Inspected(gpu)
    v.run("inspect shadow.map", frames=1)
    v.h.frame.set_settings(shadows=False)
    v.frames(2)
    assert v.tool.selection is None and not v.tool.pass_.enabled
    assert "inspect shadow.map off: no pass writes it now" in caplog.text
    v.h.frame.set_settings(shadows=True)
    r = v.ctx.commands.execute(f"inspect {HDR}@Main.Early")
    assert r.ok, r.text
    v.frames(1)
    v.h.frame.set_settings(occlusion=False)  # Main.Early, the pass it is inspected after, off
    v.frames(2)
    assert v.tool.selection is None


def check_panel(tool, s, texel):
    """The HUD's inspect panel: the probed texel's position, then each of its channels
    (to the digits the row holds, at least 3), all inside the panel's width."""
    from engine.hud.grid import DebugOverlay
    from engine.tools.inspector.panel import InspectPanel, W

    ov = DebugOverlay(120, 30)
    assert tool.latest() is s  # the panel draws the newest figures
    InspectPanel(tool).draw(ov, 0, 0, 0, None)
    rows = ["".join(ov.glyph_at(c, r) or " " for c in range(ov.cols)) for r in range(ov.rows)]
    assert all(not row[W:].strip() for row in rows)
    x, y, _ = s.probe
    at = next(
        i for i, r in enumerate(rows) if r.strip() == f"at ({x}, {y}) of frame {s.frame_index}"
    )
    values = [float(w) for w in rows[at + 1].split()]
    assert values == pytest.approx(texel.tolist(), rel=5e-3)


def test_the_value_under_the_cursor(gpu):
    """``probe_at`` (a window's cursor, each frame) reads the texel of the inspected mip
    under the pixel with the figures: the values equal the read-back texture's."""
    v = Inspected(gpu)
    v.ctx.commands.execute(f"inspect {HDR}")
    v.tool.probe_at(40.7, 12.2)
    v.h.render(CAMERA, 1)  # the probe is set before recording from the next frame on

    s = v.frames(3)
    hdr = read_texture(gpu.device, v.h.graph.texture(HDR)).astype(np.float64)
    assert s.probe is not None and s.probe[:2] == (40, 12)
    assert s.probe[2] == tuple(hdr[12, 40].tolist())
    check_panel(v.tool, s, hdr[12, 40])
    v.ctx.commands.execute(f"inspect {PYRAMID} mip 2")
    s = v.frames(3)
    p = v.h.frame.pyramid
    tw, th = max(1, p.base[0] >> 2), max(1, p.base[1] >> 2)
    x, y = int(40.7 * tw / SIZE[0]), int(12.2 * th / SIZE[1])
    lv = read_texture(gpu.device, p.texture, mip=2)
    assert s.probe[:2] == (x, y) and s.probe[2] == (float(lv[y, x, 0]),)
    assert f"at ({x}, {y})" in v.ctx.commands.execute("inspect").text


def test_many_workgroups_and_ragged_edges_against_numpy(gpu):
    """A 203x141 rgba32float texture (4x3 workgroups of 64x64 texels, the last row and column
    partial) of known values with NaN, +-Inf and a spike: every texel counted once."""
    rng = np.random.default_rng(7)
    w, h = 203, 141
    data = rng.normal(0.0, 3.0, (h, w, 4)).astype(np.float32)
    data[5, 200, 1], data[140, 0, 1], data[70, 130, 1] = np.nan, np.inf, -np.inf
    data[139, 202, 1] = 1e6  # the max sits in the last, partial workgroup
    d = gpu.device
    u = wgpu.TextureUsage
    tex = d.create_texture(
        size=(w, h, 1), format="rgba32float", usage=u.TEXTURE_BINDING | u.COPY_DST
    )
    d.queue.write_texture({"texture": tex}, data.tobytes(), {"bytes_per_row": w * 16}, (w, h, 1))
    red = TextureReduction(d)
    for value_range in (None, (-2.0, 2.0)):
        enc = d.create_command_encoder()
        cpass = enc.begin_compute_pass()
        red.record(cpass, tex.create_view(), (w, h), channel=1, value_range=value_range)
        cpass.end()
        d.queue.submit([enc.finish()])
        s = TextureStats.from_bytes(0, d.queue.read_buffer(red.result))
        check(s, data[:, :, 1], value_range)
        assert s.finite == w * h - 3 and s.hi == np.float32(1e6)


def test_the_value_under_the_cursor_of_depth_and_of_a_snapshot(gpu):
    """The texel under the cursor of a depth texture (wgpu copies no part of a depth texture
    to a buffer: the reduction reads it) and of a snapshot ``NAME@PASS``, whose texture the
    graph makes with the first frame that reads it (the probe waits for it, no KeyError)."""
    v = Inspected(gpu)
    g = v.h.graph
    v.tool.probe_at(30.2, 25.9)
    for ref in (DEPTH, f"{HDR}@Main.Early"):
        assert v.ctx.commands.execute(f"inspect {ref}").ok
        s = v.frames(3)
        tex = g.texture(ref) if "@" in ref else g.texture(DEPTH)
        want = read_texture(gpu.device, tex).astype(np.float64)[25, 30]
        assert s.probe is not None and s.probe[:2] == (30, 25), ref
        assert s.probe[2] == tuple(want.tolist()), ref
