"""The debug HUD: font atlas, cell grid, overlay pass, perf table, modes (lavapipe)."""

from __future__ import annotations

import importlib.util
import logging
import math
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
import wgpu

from engine.hud.debug_overlay import DebugOverlayPass, auto_hud_scale, grid_for
from engine.hud.grid import DebugOverlay, font_atlas
from tests.helpers import run_sample
from tests.hud_fakes import FAKE_COUNTS, FAKE_PASSES, FakeStream, fake_frame
from tests.tool_fakes import install_hud, make_ctx

ROOT = Path(__file__).resolve().parents[1]
FG, BG = (255, 200, 40), (20, 40, 90)


def unpack_color(v: int) -> tuple[int, int, int, int]:
    return (v & 255, (v >> 8) & 255, (v >> 16) & 255, (v >> 24) & 255)


# -- helpers ----------------------------------------------------------------------------------
def render(device, overlay, fmt, size, *, scale=1, clear=(0.0, 0.0, 0.0, 1.0), target_size=None):
    """Draw ``overlay`` over a cleared target of ``size`` pixels; return ``(H, W, 4) uint8``.
    ``target_size``: pass it to the overlay pass (a target larger than the grid)."""
    w, h = size
    tex = device.create_texture(
        size=(w, h, 1),
        format=fmt,
        usage=wgpu.TextureUsage.RENDER_ATTACHMENT | wgpu.TextureUsage.COPY_SRC,
    )
    opass = DebugOverlayPass(device, overlay, fmt, scale)
    if target_size is not None:
        opass.target_size = target_size
    enc = device.create_command_encoder()
    rp = enc.begin_render_pass(
        color_attachments=[
            {
                "view": tex.create_view(),
                "load_op": "clear",
                "clear_value": clear,
                "store_op": "store",
            }
        ]
    )
    opass.record(None, rp)
    rp.end()
    device.queue.submit([enc.finish()])
    data = device.queue.read_texture(
        {"texture": tex}, {"bytes_per_row": w * 4, "rows_per_image": h}, (w, h, 1)
    )
    return np.frombuffer(data, np.uint8).reshape(h, w, 4)


def glyph(ch: str) -> np.ndarray:
    """The 8x8 bits of ``ch``, cut from the atlas independently of the shader."""
    i = ord(ch) - 32
    return font_atlas()[(i // 16) * 8 : (i // 16) * 8 + 8, (i % 16) * 8 : (i % 16) * 8 + 8]


def expected_text(s: str, k: int) -> np.ndarray:
    """``(8k, 8k*len(s), 3)`` image of ``s`` in FG on BG, each glyph pixel k x k."""
    bits = np.concatenate([glyph(c) for c in s], axis=1)
    bits = bits.repeat(k, axis=0).repeat(k, axis=1)
    return np.where(bits[..., None] == 1, np.array(FG, np.uint8), np.array(BG, np.uint8))


def load_bake_font():
    spec = importlib.util.spec_from_file_location("bake_font", ROOT / "tools" / "bake_font.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


# -- font --------------------------------------------------------------------------------------
def test_bake_font_check_passes_on_committed_atlas():
    r = subprocess.run(
        [sys.executable, "tools/bake_font.py", "--check"], cwd=ROOT, capture_output=True, text=True
    )
    assert r.returncode == 0, r.stdout + r.stderr
    assert "up to date" in r.stdout


def test_bake_font_check_fails_on_stale_atlas(tmp_path, capsys):
    mod = load_bake_font()
    stale = tmp_path / "font8x8.py"
    stale.write_text(mod.OUT.read_text().replace('"', "'", 1))
    mod.OUT = stale
    assert mod.main(["--check"]) == 1
    out = capsys.readouterr().out.strip().splitlines()
    assert len(out) == 1 and "differs from a fresh bake" in out[0]


def test_atlas_has_95_glyphs_inside_their_cells():
    a = font_atlas()
    assert a.shape == (64, 128) and set(np.unique(a)) <= {0, 1}
    assert glyph(" ").sum() == 0
    assert all(glyph(chr(c)).sum() > 0 for c in range(33, 127))
    # cells 95 (last of row 5) is unused and empty; the baker refuses glyphs leaving the cell
    assert a[40:48, 120:128].sum() == 0
    # 'A' of Press Start 2P: symmetric top row "..###.." and an empty bottom row
    assert glyph("A")[7].sum() == 0 and glyph("A")[0].tolist() == [0, 0, 1, 1, 1, 0, 0, 0]


# -- grid ---------------------------------------------------------------------------------------
def test_grid_limit_280x90():
    DebugOverlay(280, 90)
    with pytest.raises(ValueError, match=r"281x10.*280x90"):
        DebugOverlay(281, 10)
    with pytest.raises(ValueError, match=r"10x91"):
        DebugOverlay(10, 91)


def test_text_clipping_and_question_mark():
    ov = DebugOverlay(10, 4)
    assert ov.text(-2, 0, "abcdef") == 6  # first two clipped on the left
    assert [ov.glyph_at(c, 0) for c in range(5)] == ["c", "d", "e", "f", ""]
    ov.text(7, 1, "xyz12")  # clipped on the right
    assert [ov.glyph_at(c, 1) for c in range(7, 10)] == ["x", "y", "z"]
    ov.text(0, 2, "\u00e9\n\x7f~")  # non-ASCII, control and DEL -> '?'
    assert [ov.glyph_at(c, 2) for c in range(4)] == ["?", "?", "?", "~"]
    ov.text(0, 3, "Q", large=True)  # 2x2 glyph: bottom half outside the grid
    assert ov.glyph_at(0, 3) == "Q" and ov.glyph_at(1, 3) == "Q"
    ov.text(0, 99, "off grid")
    ov.text(99, 0, "off grid")
    ov.bar(-50, -50, 3, 0.5, (1, 2, 3))  # clipped primitive: no cell references it
    assert int(ov.cells[..., 3].max()) == 0


def test_non_finite_or_empty_geometry_draws_nothing_and_never_raises():
    """A panel plotting a NaN or infinite timing as-is, a negative size, a fractional cell:
    no exception, no numpy warning, nothing drawn (fractional cells round down)."""
    import warnings

    ov = DebugOverlay(20, 10)
    nan, inf, c = math.nan, math.inf, (255, 0, 0, 255)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        ov.line(nan, 0, 5, 5, c)
        ov.line(0, 0, inf, 5, c)
        ov.line(0, 0, 5, 5, c, width=nan)
        ov.line(0, 0, 5, 5, c, width=-1)
        ov.pie(nan, 5, 3, [1, 2], [c, c])
        ov.pie(5, 5, inf, [1, 2], [c, c])
        ov.pie(5, 5, -2, [1, 2], [c, c])
        ov.bar(nan, 0, 5, 0.5, c)
        ov.bar(0, 0, -5, 0.5, c)
        ov.bar(1e40, 0, 5, 0.5, c)
        h = ov.stacked_chart(0, 0, -4, 3, np.ones((4, 1)), [c], 1.0)
        assert ov.prim_count == 0
        ov.update_chart(h, np.full((4, 1), inf))  # a chart drawn nowhere still takes updates
        ov.pie(5, 5, 3, [1e308, 1e308], [c, (0, 255, 0, 255)])  # the sum would overflow
        assert ov.prim_count == 2  # two equal slices
        assert ov.text(1.7, 2.2, "hi") == 2 and ov.glyph_at(1, 2) == "h"
        assert ov.text(nan, 0, "hi") == 2
    with pytest.raises(ValueError, match="vmax must be finite"):
        ov.stacked_chart(0, 0, 4, 3, np.ones((4, 1)), [c], inf)
    with pytest.raises(ValueError, match="no chart -1"):
        ov.update_chart(-1, np.ones((4, 1)))
    assert ov.glyph_at(-1, -1) == "" and ov.glyph_at(99, 0) == ""


def test_bad_colour_and_scale_are_value_errors():
    ov = DebugOverlay(10, 2)
    with pytest.raises(ValueError, match="colour"):
        ov.text(0, 0, "x", (300, 0, 0))
    with pytest.raises(ValueError, match="scale"):
        ov.text(0, 0, "x", scale=9)
    with pytest.raises(ValueError, match="pie"):
        ov.pie(2, 1, 1, [1, 2], [(1, 2, 3)])


def test_rendered_text_matches_atlas_pixels(device):
    ov = DebugOverlay(30, 4)
    small, big = "Hi, HUD! {0.25 ms}", "Aq~"
    ov.text(1, 0, small, FG, BG)
    ov.text(2, 1, big, FG, BG, large=True)
    img = render(device, ov, "rgba8unorm", (30 * 8 * 2, 4 * 8 * 2), scale=2)[..., :3]
    got_small = img[0:16, 16 : 16 + 16 * len(small)]
    assert np.array_equal(got_small, expected_text(small, 2))
    got_big = img[16:48, 32 : 32 + 32 * len(big)]
    assert np.array_equal(got_big, expected_text(big, 4))
    # every pixel is exactly FG, BG or the clear colour: no filtering, no blending
    colours = {tuple(c) for c in img.reshape(-1, 3)}
    assert colours == {FG, BG, (0, 0, 0)}


@pytest.mark.parametrize("fmt", ["rgba8unorm", "rgba8unorm-srgb"])
def test_colours_are_the_requested_bytes_on_unorm_and_srgb(device, fmt):
    colours = [(255, 0, 0), (0, 128, 255), (12, 34, 56), (200, 199, 198), (1, 254, 127)]
    ov = DebugOverlay(len(colours), 2)
    for i, c in enumerate(colours):
        ov.fill(i, 0, 1, 1, c)
        ov.text(i, 1, "#", c, (255 - c[0], 255 - c[1], 255 - c[2]))
    img = render(device, ov, fmt, (len(colours) * 8, 16))
    for i, c in enumerate(colours):
        assert (img[0:8, i * 8 : i * 8 + 8, :3] == c).all(), (fmt, c)
        cell = img[8:16, i * 8 : i * 8 + 8, :3]
        bits = glyph("#").astype(bool)
        assert (cell[bits] == c).all() and (cell[~bits] == [255 - v for v in c]).all()


def test_translucent_background_blends_over_scene(device):
    ov = DebugOverlay(2, 1)
    ov.fill(0, 0, 1, 1, (255, 255, 255, 128))
    img = render(device, ov, "rgba8unorm", (16, 8), clear=(0.0, 0.0, 0.0, 1.0))
    assert abs(int(img[0, 0, 0]) - 128) <= 1  # 50 % white over black
    assert img[0, 8, :3].tolist() == [0, 0, 0]  # empty cell: scene untouched


def test_empty_grid_draws_without_validation_error(device, caplog):
    ov = DebugOverlay(80, 30)
    with caplog.at_level(logging.WARNING, logger="wgpu"):
        img = render(device, ov, "rgba8unorm-srgb", (64, 32), clear=(0.0, 1.0, 0.0, 1.0))
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING]
    assert (img[..., :3] == [0, 255, 0]).all()


def test_primitives_bar_pie_line(device):
    ov = DebugOverlay(8, 8)
    ov.bar(0, 0, 4, 0.25, (255, 0, 0), (0, 0, 255), inset=0)  # 32 HUD px, 8 filled
    ov.pie(4, 4, 2, [1, 1], [(0, 255, 0), (255, 0, 255)])  # right half green, left magenta
    ov.line(0, 7.5, 8, 7.5, (255, 255, 0))
    img = render(device, ov, "rgba8unorm", (64, 64))[..., :3]
    assert (img[0:8, 0:8] == [255, 0, 0]).all() and (img[0:8, 8:32] == [0, 0, 255]).all()
    assert img[32, 36].tolist() == [0, 255, 0] and img[32, 27].tolist() == [255, 0, 255]
    assert img[32, 52].tolist() == [0, 0, 0]  # outside the radius (16 HUD px)
    assert (img[60, :] == [255, 255, 0]).all() and (img[58, :] == [0, 0, 0]).all()


def test_only_changed_rows_are_uploaded(device):
    ov = DebugOverlay(40, 10)
    opass = DebugOverlayPass(device, ov, "rgba8unorm")
    opass.upload()
    ov.text(0, 3, "hello")
    # one row of 40 cells x 16 bytes, and the one 16-byte rectangle now occupied
    assert opass.upload() == 40 * 16 + 16
    ov.clear()
    ov.text(0, 3, "hello")  # everything rewritten, nothing different
    assert opass.upload() == 0
    assert opass.upload() == 0


def test_hud_scale_and_grid_from_size():
    assert [auto_hud_scale((w, h)) for w, h in ((640, 360), (1280, 720), (1920, 1080))] == [
        1,
        1,
        2,
    ]
    assert grid_for((1920, 1080), 2) == (120, 67)
    assert grid_for((4000, 4000), 1) == (280, 90)


# -- perf table ----------------------------------------------------------------------------------
def test_perf_table_means_and_na():
    from engine.tools.perf.panel import PerfOverlay

    stream = FakeStream()
    stream.advance(100)
    perf = PerfOverlay()
    names = [p[0] for p in FAKE_PASSES]
    perf.tick(stream.telemetry, names, 0.0)
    frames = [fake_frame(i) for i in range(40, 100)]  # the stats window: the last 60 frames
    for r, (name, _, cpu) in zip(perf.rows, FAKE_PASSES, strict=False):
        gpu = np.mean([next(s for s in f.gpu if s.name == name).duration_ms for f in frames])
        assert r.gpu_ms == pytest.approx(gpu) and r.cpu_ms == pytest.approx(cpu)
    ov = DebugOverlay(60, 20)
    perf.draw(ov, 0, 0)
    post = "".join(ov.glyph_at(c, 6) or " " for c in range(60))
    gpu_post = np.mean([f.gpu[5].duration_ms for f in frames])
    # delta: the newest frame (99) against the median of the window
    last_post = fake_frame(99).gpu[5].duration_ms
    delta = last_post - np.median([f.gpu[5].duration_ms for f in frames])
    assert post.split() == ["Post", "0.045", f"{gpu_post:.3f}", f"{delta:+.3f}"]
    # right-aligned fixed width: the decimal points line up in every row
    dots = {"".join(ov.glyph_at(c, r) or " " for c in range(60)).rfind(".") for r in range(1, 7)}
    assert len(dots) == 1
    # each number coloured on its own: Post's GPU 6.25 ms (> 5) red while its CPU 0.045 ms
    # (< 0.1) is dimmed and its name stays plain; Shadow's 0.112 / 0.834 plain
    from engine.tools.perf.panel import DIM, HOT, NAME_W, NUM_W, TEXT

    cpu_col, gpu_col = 1 + NAME_W + NUM_W - 1, 1 + NAME_W + 2 * NUM_W  # last digit of each

    def color(col, row):
        return unpack_color(int(ov.cells[row, col, 1]))

    assert (color(1, 6), color(cpu_col, 6), color(gpu_col, 6)) == (TEXT, DIM, HOT)
    assert (color(cpu_col, 2), color(gpu_col, 2)) == (TEXT, TEXT)
    # GPU unavailable: n/a, never 0.000
    stream2 = FakeStream(gpu_available=False)
    stream2.advance(5)
    perf2 = PerfOverlay()
    perf2.tick(stream2.telemetry, names, 0.0)
    ov2 = DebugOverlay(60, 20)
    perf2.draw(ov2, 0, 0)
    row = "".join(ov2.glyph_at(c, 2) or " " for c in range(60))
    assert row.split()[:3] == ["Shadow", "0.112", "n/a"]
    text2 = "".join(ov2.glyph_at(c, r) or " " for r in range(20) for c in range(60))
    assert " 0.000" not in text2  # (a signed "+0.000" delta is a real reading: steady CPU)


def test_perf_refreshes_at_readable_rate():
    from engine.tools.perf.panel import PerfOverlay

    stream, perf = FakeStream(), PerfOverlay(refresh_hz=4.0)
    refreshes = []
    for i in range(120):  # two seconds at 60 FPS
        stream.advance()
        refreshes.append(perf.tick(stream.telemetry, ["Shadow"], i / 60))
    assert sum(refreshes[60:]) == 4  # steady state: 4 Hz
    assert perf.frame_ms == pytest.approx(1000 / 60)


# -- the HUD in a render graph -------------------------------------------------------------------
HUD_SIZE = (640, 360)


SCENE_CLEAR = (0.2, 0.3, 0.45, 1.0)


def _scene_graph(device, fmt, size, clear_value=SCENE_CLEAR):
    from engine.graph import RenderGraph, RenderPass

    graph = RenderGraph(device, output_format=fmt, size=size)

    def clear(ctx):
        return {
            "color_attachments": [
                {
                    "view": ctx.output,
                    "load_op": "clear",
                    "clear_value": clear_value,
                    "store_op": "store",
                }
            ]
        }

    def load(ctx):
        return {"color_attachments": [{"view": ctx.output, "load_op": "load", "store_op": "store"}]}

    graph.add(RenderPass("Scene", record=lambda ctx, rp: None, targets=clear))
    for name, _, _ in FAKE_PASSES[1:]:  # empty passes: the names the fake profiler times
        graph.add(RenderPass(name, record=lambda ctx, rp: None, targets=load))
    return graph


def make_hud(gpu, mode, *, size=HUD_SIZE, hud_scale=None, cull=FAKE_COUNTS, **kw):
    """A HUD on a graph of empty passes fed by a ``FakeStream``; ``kw``: ``clear_value``
    (the scene colour), ``window`` (a window run), ``gpu_available``, ``clock``."""

    fmt = "rgba8unorm-srgb"
    graph = _scene_graph(gpu.device, fmt, size, kw.get("clear_value", SCENE_CLEAR))
    stream = FakeStream(
        passes=(("Scene", 0.12, 0.02), *FAKE_PASSES[1:], ("DebugOverlay", 0.031, 0.015)),
        cull=cull,
        gpu_available=kw.get("gpu_available", True),
    )
    ctx = make_ctx(gpu, graph, telemetry=stream.telemetry, window=kw.get("window"),
                   overlay=mode, hud_scale=hud_scale)  # fmt: skip
    hud = install_hud(ctx, clock=kw.get("clock"))  # clock None: simulated time
    assert graph.passes[-1].name == "DebugOverlay"
    return hud, stream


def run_hud(gpu, mode, *, frames=130, size=HUD_SIZE, hud_scale=None, cull=FAKE_COUNTS, **kw):
    """Run ``frames`` frames of ``make_hud`` at 60 FPS simulated time; return the HUD and
    the last frame ``(H, W, 3) uint8``."""
    hud, stream = make_hud(gpu, mode, size=size, hud_scale=hud_scale, cull=cull, **kw)
    return hud, _run_frames(gpu, hud, stream, frames, size)


def _run_frames(gpu, hud, stream, frames, size=HUD_SIZE) -> np.ndarray:
    """``frames`` frames of ``hud``'s graph fed by ``stream``; the last ``(H, W, 3) uint8``."""
    from engine.graph import FrameContext

    graph = hud.graph
    tex = gpu.device.create_texture(
        size=(*size, 1),
        format=graph.output_format,
        usage=wgpu.TextureUsage.RENDER_ATTACHMENT | wgpu.TextureUsage.COPY_SRC,
    )
    view = tex.create_view()
    for i in range(frames):
        stream.advance()
        ctx = FrameContext(gpu.device, graph, i, i / 60, size, view)
        hud.update(ctx)
        enc = gpu.device.create_command_encoder()
        graph.execute(enc, ctx)
        gpu.queue.submit([enc.finish()])
    w, h = size
    data = gpu.queue.read_texture(
        {"texture": tex}, {"bytes_per_row": w * 4, "rows_per_image": h}, (w, h, 1)
    )
    return np.frombuffer(data, np.uint8).reshape(h, w, 4)[..., :3].copy()


@pytest.mark.parametrize("mode", ["off", "perf", "cull", "timeline", "all"])
def test_hud_mode_reference(gpu, compare_reference, mode):
    hud, img = run_hud(gpu, mode)
    assert hud.render_pass.enabled == (mode != "off")
    if mode == "off":
        assert (img == img[0, 0]).all()  # only the scene
    else:
        label = f"HUD {mode} [F1]"
        row0 = "".join(hud.overlay.glyph_at(c, 0) or " " for c in range(hud.overlay.cols))
        assert row0.rstrip().endswith(label)
    compare_reference(f"hud_{mode}", img)


def test_timeline_follows_a_pass_turned_off_between_refreshes(gpu):
    """A knob that turns a pass off (or on) changes the timed passes at once: the next
    frame's layout has one series per enabled pass, not the last build's count (the chart's
    per-frame update would not fit)."""
    from engine.graph import FrameContext

    hud, stream = make_hud(gpu, "timeline")
    graph = hud.graph
    tex = gpu.device.create_texture(size=(*HUD_SIZE, 1), format=graph.output_format,
                                    usage=wgpu.TextureUsage.RENDER_ATTACHMENT)  # fmt: skip
    view = tex.create_view()

    def frame(i):
        stream.advance()
        ctx = FrameContext(gpu.device, graph, i, 1.0 + i / 600, HUD_SIZE, view)  # 10x 60 FPS
        hud.update(ctx)
        enc = gpu.device.create_command_encoder()
        graph.execute(enc, ctx)
        gpu.queue.submit([enc.finish()])

    for i in range(3):
        frame(i)
    series = hud.overlay.chart_shapes[-1][1]
    assert series == len(graph.pass_names())
    graph.passes[1].enabled = False  # within the HUD's refresh period of the last build
    frame(3)
    assert hud.overlay.chart_shapes[-1][1] == series - 1 == len(graph.pass_names())
    graph.passes[1].enabled = True
    frame(4)
    assert hud.overlay.chart_shapes[-1][1] == series


def overlay_text(hud) -> list[str]:
    ov = hud.overlay
    return ["".join(ov.glyph_at(c, r) or " " for c in range(ov.cols)) for r in range(ov.rows)]


def test_panels_with_nothing_to_show_are_left_out(gpu):
    hud, _ = run_hud(gpu, "all", frames=2, cull=None)  # a sample that does not cull
    assert [p.key for p in hud.layout.placements] == ["perf", "timeline"]
    assert not any("CULL" in t for t in overlay_text(hud))
    hud, _ = run_hud(gpu, "cull", frames=2, cull=None)  # the mode's only panel: one line says so
    assert hud.layout.placements == ()
    assert overlay_text(hud)[1].split() == ["CULL:", "no", "cull", "counters", "in", "this", "run"]
    hud, stream = make_hud(gpu, "cull", cull=None)  # a culler whose first counts are not back
    hud.graph.add_readback(SimpleNamespace(channel="cull"))
    _run_frames(gpu, hud, stream, 2)
    want = "CULL: counters on their way (read back a few frames late)"
    assert hud.layout.placements == () and overlay_text(hud)[1].strip() == want
    hud, _ = run_hud(gpu, "cull", frames=2, cull=None, size=(240, 180))  # 30 columns
    assert overlay_text(hud)[1].rstrip() == " CULL: no cull counters in th~"  # cut, marked
    hud, _ = run_hud(gpu, "all", frames=2, gpu_available=False)  # no GPU scopes at all
    assert [p.key for p in hud.layout.placements] == ["perf", "cull"]
    hud, _ = run_hud(gpu, "timeline", frames=2, gpu_available=False)
    want = "TIMELINE: no GPU timings (--gpu-profile, or: profile gpu on)"
    assert overlay_text(hud)[1].strip() == want


def test_small_output_uses_compact_forms_and_says_what_does_not_fit(gpu):
    hud, img = run_hud(gpu, "all", frames=2, size=(320, 180))
    assert [(p.key, p.form) for p in hud.layout.placements] == [("perf", 2)]
    text = overlay_text(hud)
    # perf: 7 passes + Update/Submit/Present + 5 = 15 rows from row 1; a gap, then the
    # notices (the timeline's smallest form: 2 + a 4-row chart + 4 legend rows of 2 names)
    assert text[17].strip() == "no room for cull (38x11 cells)"
    assert text[18].strip() == "no room for timeline (32x10 cells)"
    assert "DELTA" not in text[1] and text[0].rstrip().endswith("HUD all [F1]")
    # the perf table stays inside its 35 columns: nothing drawn in columns 36..39 below row 0
    assert all(t[36:].strip() == "" for t in text[1:16])


def wcag_luminance(rgb: np.ndarray) -> np.ndarray:
    """Relative luminance of sRGB bytes (WCAG 2.x definition)."""
    c = rgb.astype(np.float64) / 255.0
    lin = np.where(c <= 0.04045, c / 12.92, ((c + 0.055) / 1.055) ** 2.4)
    return lin @ np.array([0.2126, 0.7152, 0.0722])


def test_text_reads_over_a_white_wall(gpu):
    """Every glyph of every panel, over a white scene: the WCAG contrast ratio between its
    pixels and the pixels around it inside the cell is at least 4.5 (AA for body text)."""
    hud, img = run_hud(gpu, "all", frames=3, clear_value=(1.0, 1.0, 1.0, 1.0))
    assert (img[-1, -1] == 255).all()  # the wall is white where the HUD is not
    ov, worst = hud.overlay, []
    for r, c in np.argwhere((ov.cells[..., 0] & 0xFF) > 32):
        ch = ov.glyph_at(c, r)
        bits = glyph(ch).astype(bool)
        cell = img[r * 8 : r * 8 + 8, c * 8 : c * 8 + 8]
        fg, bg = wcag_luminance(cell[bits]).mean(), wcag_luminance(cell[~bits]).mean()
        hi, lo = max(fg, bg), min(fg, bg)
        worst.append(((hi + 0.05) / (lo + 0.05), ch, int(r), int(c)))
    assert len(worst) > 500  # all three panels are there
    assert min(worst)[0] >= 4.5, min(worst)


def test_off_mode_hint_for_three_seconds(gpu):
    from engine.hud.service import HINT

    def at(hud, t):
        hud.update(SimpleNamespace(size=HUD_SIZE, time=t))
        return hud.render_pass.enabled, overlay_text(hud)[0].strip()

    hud, _ = make_hud(gpu, "off", window=object())  # a window run: hint at the start
    assert at(hud, 10.0) == (True, HINT) and at(hud, 12.99) == (True, HINT)
    assert at(hud, 13.0) == (False, "")  # gone, and the pass costs nothing again
    hud.set_mode("perf")
    assert at(hud, 14.0)[0] and at(hud, 14.0)[1].endswith("HUD perf [F1]")
    hud.set_mode("off")  # F1 back to off: the hint again, for 3 s from the next frame
    assert at(hud, 20.0) == (True, HINT) and at(hud, 23.0) == (False, "")
    hud, _ = make_hud(gpu, "off")  # a capture (no window): nothing, from the first frame
    assert at(hud, 0.0) == (False, "")


def test_off_mode_hint_is_drawn_top_right(gpu):
    hud, img = run_hud(gpu, "off", frames=2, window=object())
    _, ref = run_hud(gpu, "off", frames=2)
    changed = np.argwhere((img != ref).any(axis=2))
    cols = hud.overlay.cols
    # "F1: HUD" (7 cells) right-aligned with one cell of margin on row 0
    assert changed[:, 0].min() >= 0 and changed[:, 0].max() < 8
    assert changed[:, 1].min() >= (cols - 8) * 8 and changed[:, 1].max() < (cols - 1) * 8


def test_panel_forms_stay_inside_their_boxes():
    """Each form of each panel draws exactly inside the size it reports (never past it)."""
    from engine.hud.panel import HudData
    from engine.tools.cull.panel import CullPanel
    from engine.tools.perf.panel import PerfPanel
    from engine.tools.timeline.panel import TimelinePanel

    stream = FakeStream()
    stream.advance(70)
    names = [p[0] for p in FAKE_PASSES] + ["DebugOverlay"]
    ctx = make_ctx(telemetry=stream.telemetry)
    data = HudData(names, FAKE_COUNTS, True, True, True)
    tool = SimpleNamespace(ctx=ctx)  # a panel is built with its tool: it reads tool.ctx
    perf, timeline = PerfPanel(tool), TimelinePanel(tool)
    perf.tick(data)
    timeline.tick(data)
    for panel in (perf, CullPanel(), timeline):
        sizes = panel.sizes(data)
        assert len(sizes) >= 2 and sizes[0][0] == max(w for w, _ in sizes)  # full form first
        for form, (w, h) in enumerate(sizes):
            ov = DebugOverlay(120, 40)
            panel.draw(ov, 3, 2, form, data)
            occ = ((ov.cells[..., 0] & 0xFF) > 0) | ((ov.cells[..., 2] >> 24) > 0)
            occ |= ov.cells[..., 3] > 0
            rows, cols = np.nonzero(occ)
            assert (cols.min(), rows.min(), cols.max() + 1, rows.max() + 1) == (
                3,
                2,
                3 + w,
                2 + h,
            ), (panel.key, form)


def test_modes_follow_the_registered_panels():
    """The F1 cycle, ``--overlay``'s choices and each mode's panels all come from the tools'
    declared panels: a panel declared with a new mode adds it (before ``all``)."""
    from engine.cli import build_parser
    from engine.hud.panel import Panel
    from engine.hud.panel import mode_names as names_of
    from engine.hud.panel import mode_panels as panels_of
    from engine.tools import DEFAULT_TOOLS

    PANELS = tuple(c for t in DEFAULT_TOOLS for c in getattr(t, "panels", ()))
    PANELS = tuple(c for c in PANELS if c.modes)  # the console's panel has no mode of its own

    def mode_names(panels=PANELS):
        return names_of(panels)

    def mode_panels(panels=PANELS):
        return panels_of(panels)

    assert mode_names() == (
        "off",
        "perf",
        "cull",
        "timeline",
        "log",
        "flame",
        "view",
        "inspect",
        "memory",
        "all",
    )
    assert mode_panels()["off"] == () and mode_panels()["flame"] == ("flame",)
    assert mode_panels()["all"] == (
        "perf",
        "cull",
        "counters",
        "timeline",
        "log",
        "view",
        "inspect",
    )
    overlay = next(a for a in build_parser("p", "")._actions if a.dest == "overlay")
    assert tuple(overlay.choices) == mode_names()

    class Gauge(Panel):
        key, modes = "gauge", ("gauge", "perf")

    extra = (*PANELS, Gauge)
    assert mode_names(extra)[-2:] == ("gauge", "all")
    assert mode_panels(extra)["perf"] == ("perf", "gauge") and "gauge" in mode_panels(extra)["all"]


def test_cull_panel_percentages(gpu):
    hud, _ = run_hud(gpu, "cull", frames=2)
    rows = ["".join(hud.overlay.glyph_at(c, r) or " " for c in range(80)) for r in range(12)]
    occluded = next(r for r in rows if "occluded" in r)
    assert occluded.split()[1:3] == ["30125", f"{100 * 30125 / 100000:.1f}%"]
    assert hud.overlay.prim_count == 4  # one pie slice per classification


def test_hud_resize_and_scale_override(gpu):
    hud, _ = run_hud(gpu, "perf", frames=1, size=(320, 200), hud_scale=2)
    assert (hud.overlay.cols, hud.overlay.rows, hud.overlay_pass.scale) == (20, 12, 2)
    hud.graph.resize((480, 240))
    assert (hud.overlay.cols, hud.overlay.rows) == (30, 15)


def test_set_mode_rejects_unknown(gpu):
    hud, _ = run_hud(gpu, "perf", frames=1, size=(64, 64))
    with pytest.raises(ValueError, match="overlay mode 'fancy'"):
        hud.set_mode("fancy")
    hud.set_mode("off")
    assert not hud.render_pass.enabled


def test_s03_hud_keeps_clear_of_the_gallery(tmp_path):
    """s03 with the engine HUD in ``all`` mode: inside the box around everything the gallery
    draws (found from the HUD-off capture) the pixels are the gallery's; the HUD is there,
    below it."""
    from PIL import Image

    imgs = {}
    for mode in ("off", "all"):
        out = tmp_path / f"gallery_{mode}.png"
        r = run_sample(
            "s03", "--gpu-profile", "--capture", str(out), "--frames", "2",
            "--size", "800x480", "--overlay", mode,
        )  # fmt: skip
        assert r.returncode == 0, r.stderr
        imgs[mode] = np.asarray(Image.open(out)).astype(int)
    off, on = imgs["off"], imgs["all"]
    assert off.shape == (480, 800, 3) and len(np.unique(off.reshape(-1, 3), axis=0)) > 10
    ys, xs = np.nonzero((off != off[-1, -1]).any(axis=2))  # the gallery's pixels
    y1, x1 = ys.max() + 1, xs.max() + 1
    assert 200 < y1 < 400 and 600 < x1 < 800  # 89x33 cells at scale 1, give or take a pie
    assert np.array_equal(on[:y1, :x1], off[:y1, :x1])
    hud = (on != off).any(axis=2)
    assert hud[y1:].sum() > 20_000  # the HUD (its perf table at least), below the gallery


def test_console_opens_over_any_mode_and_log_mode_shows_the_tail(gpu):
    import logging

    from engine.logtail import install_log_tail
    from engine.tools.console.tool import ConsoleTool
    from engine.tools.log.tool import LogHudPanel

    hud, _ = make_hud(gpu, "off", size=(640, 360))
    tail = hud.ctx.log_tail = install_log_tail()
    hud.panels["log"] = LogHudPanel(SimpleNamespace(ctx=hud.ctx))  # reads the tail set now
    app = SimpleNamespace(console=hud.ctx.install(ConsoleTool()).console)
    try:
        hud.update(SimpleNamespace(size=(640, 360), time=0.0))
        assert not hud.render_pass.enabled  # off, console closed: the pass costs nothing
        app.console.on_key(96, repeat=False)  # backtick opens it (glfw then sends its char)
        for ch in "`help":
            app.console.on_char(ch)
        hud.update(SimpleNamespace(size=(640, 360), time=0.1))
        text = overlay_text(hud)
        assert hud.render_pass.enabled
        bottom = [i for i, t in enumerate(text) if "> help" in t]
        assert bottom and bottom[0] > len(text) // 2  # the prompt is on the lower half
        app.console.on_key(96, repeat=False)  # closes
        hud.update(SimpleNamespace(size=(640, 360), time=0.2))
        assert not hud.render_pass.enabled and not any(t.strip() for t in overlay_text(hud))
        # log mode: the newest lines of the lantern logger, repeats collapsed
        for _ in range(3):
            logging.getLogger("lantern").warning("shadow map too small")
        hud.set_mode("log")
        hud.update(SimpleNamespace(size=(640, 360), time=1.0))
        text = overlay_text(hud)
        assert any("shadow map too small" in t and "3" in t for t in text), text
    finally:
        logging.getLogger("lantern").removeHandler(tail)


@pytest.mark.parametrize("profiling", [None, {"gpu": False, "cpu": True, "gpu_available": False}])
def test_perf_note_fits_the_narrowest_table_and_names_the_switch(profiling):
    # profiling switched off from the console left "no timings: run with --gpu-profil", cut
    # at the 35-cell table's edge and pointing at a flag the running process cannot take
    from engine.telemetry import Telemetry
    from engine.tools.perf.panel import FORM_WIDTHS, PerfOverlay

    tel = Telemetry({} if profiling is None else {"profiling": profiling})
    perf = PerfOverlay()
    perf.tick(tel, ["Main"], 0.0)
    ov = DebugOverlay(FORM_WIDTHS[-1], 12)
    w, h = perf.draw(ov, 0, 0, form=len(FORM_WIDTHS) - 1)
    note = "".join(ov.glyph_at(c, h - 2) or " " for c in range(w)).strip()  # above a margin
    assert note.endswith("profile gpu on"), note
    if profiling is None:  # nothing timed: no rows of n/a, the frame time and the hint
        assert h == 5 and "Main" not in "".join(ov.glyph_at(c, 1) or " " for c in range(w))


def test_a_pass_name_longer_than_the_column_is_marked_cut():
    from engine.tools.perf.panel import NAME_W, fit_name

    assert fit_name("Transparent.Sort") == "Transparent.S~" and len("Transparent.S~") == NAME_W
    assert fit_name("Post.Luminance") == "Post.Luminance"  # exactly NAME_W: whole
    assert fit_name("Sky") == "Sky"
