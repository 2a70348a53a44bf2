"""The HUD's compute pass (``DebugOverlayCompute``) against the raster one: the same pixels,
and the outputs that let the HUD use it (lavapipe)."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest
import wgpu

from engine.gpu import create_texture_with_view_formats
from engine.graph import COMPUTE, RENDER, RenderGraph
from engine.hud.debug_overlay import DebugOverlayCompute, DebugOverlayPass
from engine.hud.grid import DRAW_CLASSES, DebugOverlay
from engine.surfaces import OUTPUT_COMPUTE_USAGE, OffscreenTarget, WindowSurface
from tests.hud_fakes import busy_overlay
from tests.tool_fakes import install_hud, make_ctx

U = wgpu.TextureUsage


def _target(device, fmt: str, size):
    """``(texture, view)``: a target viewed as ``fmt`` that a compute pass may also write
    (``rgba8unorm`` storage, an ``-srgb`` view where ``fmt`` asks for one)."""
    usage = U.RENDER_ATTACHMENT | U.COPY_SRC | U.COPY_DST | OUTPUT_COMPUTE_USAGE
    tex = create_texture_with_view_formats(
        device, label="t", size=size, format="rgba8unorm", usage=usage, view_formats=(fmt,)
    )
    return tex, tex.create_view(format=fmt, usage=U.RENDER_ATTACHMENT | U.TEXTURE_BINDING)


def _draw(device, opass, fmt: str, size, background: np.ndarray) -> np.ndarray:
    """``background`` (H, W, 4 uint8) with ``opass`` drawn over it, read back."""
    tex, view = _target(device, fmt, size)
    w, h = size
    layout = {"bytes_per_row": w * 4, "rows_per_image": h}
    device.queue.write_texture({"texture": tex}, background.tobytes(), layout, (w, h, 1))
    enc = device.create_command_encoder()
    if isinstance(opass, DebugOverlayCompute):
        cp = enc.begin_compute_pass()
        opass.record(SimpleNamespace(output=view, size=size), cp)
        cp.end()
    else:
        opass.target_size = size
        rp = enc.begin_render_pass(
            color_attachments=[{"view": view, "load_op": "load", "store_op": "store"}]
        )
        opass.record(None, rp)
        rp.end()
    device.queue.submit([enc.finish()])
    data = device.queue.read_texture({"texture": tex}, layout, (w, h, 1))
    return np.frombuffer(data, np.uint8).reshape(h, w, 4).copy()


@pytest.mark.parametrize(
    "fmt,scale,size",
    [
        ("rgba8unorm-srgb", 2, (640, 384)),  # the grid exactly
        ("rgba8unorm-srgb", 3, (950, 570)),  # 3x3 pixels a HUD pixel, the grid cut at the edges
        ("rgba8unorm", 1, (330, 200)),  # a unorm target, a target larger than the grid
    ],
)
def test_compute_pass_draws_the_raster_pass_pixels(device, fmt, scale, size):
    """Over a frame of random bytes: opaque cells byte for byte, blended cells within 1 (the
    encode is the compute shader's own, the blend unit's on the raster side), and every pixel
    the HUD leaves alone, in blended cells too, untouched."""
    rng = np.random.default_rng(7)
    background = rng.integers(0, 256, (size[1], size[0], 4), dtype=np.uint8)
    ov = busy_overlay()
    rects, counts = ov.draw_rects()
    assert all(counts), counts  # every draw class in play
    raster = _draw(device, DebugOverlayPass(device, ov, fmt, scale), fmt, size, background)
    comp = DebugOverlayCompute(device, ov, fmt, "rgba8unorm", scale)
    got = _draw(device, comp, fmt, size, background)
    assert comp.cell_count == sum(int((r[2] - r[0]) * (r[3] - r[1])) for r in rects)

    # which draw class covers each pixel (-1: none)
    kind = np.full((size[1], size[0]), -1)
    first = np.cumsum((0, *counts))
    px = 8 * scale
    for i, (c0, r0, c1, r1) in enumerate(rects.astype(int)):
        k = int(np.searchsorted(first, i, side="right") - 1)
        kind[r0 * px : r1 * px, c0 * px : c1 * px] = k
    blend = kind == DRAW_CLASSES.index("blend")
    assert (raster != background).any(axis=2)[kind >= 0].mean() > 0.5  # the HUD drew
    assert np.array_equal(got[~blend], raster[~blend])
    assert np.array_equal(got[kind < 0], background[kind < 0])
    diff = np.abs(got.astype(int) - raster.astype(int))[blend]
    assert diff.max() <= 1, diff.max()
    left = blend & (raster == background).all(axis=2)  # the raster pass discarded them
    assert left.sum() > 100 and np.array_equal(got[left], background[left])


def test_empty_grid_dispatches_nothing_and_leaves_the_frame(device):
    size = (64, 32)
    background = np.full((32, 64, 4), 77, np.uint8)
    comp = DebugOverlayCompute(device, DebugOverlay(8, 4), "rgba8unorm-srgb", "rgba8unorm")
    assert np.array_equal(_draw(device, comp, "rgba8unorm-srgb", size, background), background)
    assert comp.cell_count == 0


def test_cell_list_follows_a_class_change_of_the_same_rectangles(device):
    """Cells whose rectangles stay but whose background turns translucent must move to the
    blended dispatch (the rectangles alone did not change)."""
    ov = DebugOverlay(8, 4)
    ov.fill(0, 0, 4, 2, (10, 20, 30, 255))
    comp = DebugOverlayCompute(device, ov, "rgba8unorm-srgb", "rgba8unorm")
    comp.upload((64, 32))
    assert (comp.cell_count, comp.blend_cells) == (8, 0)
    ov.fill(0, 0, 4, 2, (10, 20, 30, 100))
    comp.upload((64, 32))
    assert (comp.cell_count, comp.blend_cells) == (8, 8)


def test_bad_storage_format_is_a_value_error(device):
    with pytest.raises(ValueError, match="storage format 'rgba16float'"):
        DebugOverlayCompute(device, DebugOverlay(8, 4), "rgba8unorm-srgb", "rgba16float")


def test_capture_target_is_writable_by_compute_and_the_hud_uses_it(gpu):
    """The capture target is rgba8unorm storage seen through an sRGB view: the HUD's pass is
    then the compute one. A graph without a storage format keeps the raster pass."""
    target = OffscreenTarget(gpu.device, (320, 180))
    assert target.storage_format == "rgba8unorm" and target.texture.format == "rgba8unorm"
    assert target.texture.usage & OUTPUT_COMPUTE_USAGE == OUTPUT_COMPUTE_USAGE
    cases = (
        (target.storage_format, DebugOverlayCompute, COMPUTE),
        (None, DebugOverlayPass, RENDER),
    )
    for storage, cls, kind in cases:
        graph = RenderGraph(
            gpu.device, output_format=target.format, size=(320, 180), output_storage_format=storage
        )
        hud = install_hud(make_ctx(gpu, graph, overlay="all", hud_scale=None))
        assert type(hud.overlay_pass) is cls and graph.pass_named("DebugOverlay").kind == kind


class _Caps:
    def __init__(self, usages):
        self.usages = usages

    def _get_capabilities(self, adapter):
        return {"usages": self.usages}


@pytest.mark.parametrize(
    "native,features,usages,want",
    [
        ("bgra8unorm", {"bgra8unorm-storage"}, 0x1F, "bgra8unorm"),
        ("bgra8unorm", set(), 0x1F, None),  # the device cannot store bgra8unorm
        ("rgba8unorm", set(), 0x1F, "rgba8unorm"),
        ("rgba8unorm", set(), 0x15, None),  # the surface has no storage usage (lavapipe's X11)
        ("bgra8unorm-srgb", {"bgra8unorm-storage"}, 0x1F, None),  # an sRGB surface format
    ],
)
def test_window_surface_storage_format(native, features, usages, want):
    """``WindowSurface._storage_format`` on surfaces it cannot open here (no such display)."""
    surface = WindowSurface.__new__(WindowSurface)
    surface._native = native
    surface.format = native if native.endswith("-srgb") else native + "-srgb"
    surface.context = _Caps(usages)
    gpu = SimpleNamespace(features=features, adapter=None)
    assert surface._storage_format(gpu) == want


def test_capture_target_without_view_formats_falls_back_to_the_raster_hud(gpu, monkeypatch):
    """Where view formats are missing (wgpu's OpenGL backend; a wgpu-py without the helpers)
    the capture target is a plain sRGB texture and the HUD draws with the raster pass."""
    import engine.surfaces as surfaces

    def refuse(*a, **k):
        raise NotImplementedError("no view formats here")

    monkeypatch.setattr(surfaces, "create_texture_with_view_formats", refuse)
    target = OffscreenTarget(gpu.device, (64, 32))
    assert target.storage_format is None and target.texture.format == "rgba8unorm-srgb"
    graph = RenderGraph(gpu.device, output_format=target.format, size=(64, 32))
    hud = install_hud(make_ctx(gpu, graph, overlay="all", hud_scale=None))
    assert type(hud.overlay_pass) is DebugOverlayPass


def test_stacked_translucent_primitives_blend_alike_on_a_unorm_target(device):
    """Many translucent primitives over a transparent cell: the source colour of the blend is
    quantized to its 8-bit code by both passes (a blend unit that quantizes its source and
    one that does not then agree); unquantized, lavapipe read 2 apart here."""
    ov = DebugOverlay(16, 8)
    rng = np.random.default_rng(3)
    for i in range(14):
        c = tuple(int(v) for v in rng.integers(0, 256, 3)) + (int(rng.integers(20, 235)),)
        ov.pie(8 + (i % 3), 4, 3.5 - 0.15 * i, (0.3, 0.3, 0.4), (c, c[::-1], (*c[:3], 90)))
        ov.line(0, i * 0.5, 16, 8 - i * 0.5, c)
    size = (128, 64)
    background = rng.integers(0, 256, (64, 128, 4), dtype=np.uint8)
    raster = _draw(
        device, DebugOverlayPass(device, ov, "rgba8unorm"), "rgba8unorm", size, background
    )
    comp = DebugOverlayCompute(device, ov, "rgba8unorm", "rgba8unorm")
    got = _draw(device, comp, "rgba8unorm", size, background)
    assert comp.blend_cells > 0 and (raster != background).any()
    assert np.abs(got.astype(int) - raster.astype(int)).max() <= 1
