"""The HUD pass draws instanced quads over the occupied cell rectangles (lavapipe)."""

from __future__ import annotations

import logging

import numpy as np
import pytest
import wgpu

from engine.hud.debug_overlay import DebugOverlayPass, srgb_decode_table
from engine.hud.grid import DebugOverlay, occupied_rects
from tests.hud_fakes import busy_overlay
from tests.test_hud import render, run_hud

CLEAR = (0.0, 1.0, 0.0, 1.0)  # pure green: never a HUD colour below


def occupancy(cells: np.ndarray) -> np.ndarray:
    """Cell-by-cell reference: background alpha, glyph code or primitive range."""
    rows, cols, _ = cells.shape
    occ = np.zeros((rows, cols), bool)
    for r in range(rows):
        for c in range(cols):
            glyph, _, bg, prims = (int(v) for v in cells[r, c])
            occ[r, c] = (bg >> 24) > 0 or (glyph & 0xFF) > 0 or prims > 0
    return occ


def paint(rects: np.ndarray, shape: tuple[int, int]) -> np.ndarray:
    """How many rectangles cover each cell."""
    n = np.zeros(shape, np.int32)
    for c0, r0, c1, r1 in rects.tolist():
        assert c0 < c1 and r0 < r1
        n[r0:r1, c0:c1] += 1
    return n


def test_rects_cover_exactly_the_occupied_cells_once():
    rng = np.random.default_rng(7)
    for density in (0.0, 0.05, 0.5, 0.95, 1.0):
        cells = np.zeros((23, 37, 4), np.uint32)
        for k, bits in ((0, 0x7F), (2, 0xFF000000), (3, 0x00010002)):
            cells[..., k] = np.where(rng.random((23, 37)) < density / 3, bits, 0)
        cells[..., 2] |= 0x00FFFFFF  # opaque-less colour bytes alone do not occupy a cell
        rects = occupied_rects(cells)
        assert rects.dtype == np.uint32 and rects.shape[1] == 4
        assert np.array_equal(paint(rects, (23, 37)), occupancy(cells).astype(np.int32))


def test_panels_become_one_rect_each():
    ov = DebugOverlay(40, 20)
    assert ov.occupied_rects().shape == (0, 4)
    ov.fill(2, 1, 10, 6, (10, 10, 10, 200))
    ov.text(3, 2, "inside the panel")  # clipped at nothing: runs past the panel's right edge
    ov.fill(20, 10, 5, 3, (0, 0, 0, 0))  # fully transparent: not occupied
    ov.bar(30, 15, 6, 0.5, (255, 0, 0))  # a primitive on transparent cells occupies them
    got = sorted(map(tuple, ov.occupied_rects().tolist()))
    # rows 1 and 3..6 are the bare panel; row 2 is longer because of the text
    assert got == [(2, 1, 12, 2), (2, 2, 19, 3), (2, 3, 12, 7), (30, 15, 36, 16)]


@pytest.mark.parametrize("mode", ["perf", "cull", "timeline", "all"])
def test_hud_modes_draw_few_quads(gpu, mode):
    hud, img = run_hud(gpu, mode, frames=3)
    ov, opass = hud.overlay, hud.overlay_pass
    rects, counts = ov.draw_rects()
    assert opass.rect_count == len(rects) == sum(opass.draw_counts) and 1 <= len(rects) <= 40
    assert opass.draw_counts == counts and counts[0] > 0  # panel text: the unblended draw
    assert np.array_equal(paint(rects, (ov.rows, ov.cols)), occupancy(ov.cells).astype(np.int32))
    # each class's rectangles hold only its cells (DRAW_CLASSES)
    bg_alpha, prims = ov.cells[..., 2] >> 24, ov.cells[..., 3] != 0
    ends = np.cumsum(counts)
    for k, (a, b) in enumerate(zip((0, *ends[:-1]), ends, strict=True)):
        inside = paint(rects[a:b], (ov.rows, ov.cols)) > 0
        opaque = bg_alpha[inside] == 255
        assert {0: opaque & ~prims[inside], 1: opaque & prims[inside], 2: ~opaque}[k].all()
    # outside the quads the scene's clear colour is untouched
    covered = paint(rects, (ov.rows, ov.cols)).repeat(8, 0).repeat(8, 1) > 0
    h, w = covered.shape
    lin = np.array([0.2, 0.3, 0.45])  # run_hud's clear colour, linear, on an sRGB target
    scene = np.round((1.055 * lin ** (1 / 2.4) - 0.055) * 255)
    outside = img[:h, :w][~covered].astype(int)
    assert len(outside) > 0 and (np.abs(outside - scene) <= 1).all()


@pytest.mark.parametrize("fmt", ["rgba8unorm", "rgba8unorm-srgb"])
def test_the_three_draws_are_pixel_identical_to_one_blended_draw(device, fmt):
    """The split (``fs_text`` and ``fs_main`` unblended on opaque cells) against every occupied
    rectangle drawn by the general blended ``fs_main`` (the pass before the split): equal
    bytes, over a frame that is not black, for panels, glyphs of every scale and colour
    (translucent ones too), every primitive kind, and translucent cells."""
    ov = busy_overlay()
    rects, counts = ov.draw_rects()
    assert all(counts), counts  # every draw class in play
    size = (40 * 8 * 2, 24 * 8 * 2)
    clear = (0.3, 0.55, 0.1, 1.0)
    tex = device.create_texture(
        size=(*size, 1), format=fmt,
        usage=wgpu.TextureUsage.RENDER_ATTACHMENT | wgpu.TextureUsage.COPY_SRC,
    )  # fmt: skip

    def draw(opass) -> np.ndarray:
        enc = device.create_command_encoder()
        rp = enc.begin_render_pass(color_attachments=[{
            "view": tex.create_view(), "load_op": "clear", "clear_value": clear,
            "store_op": "store",
        }])  # fmt: skip
        opass.record(None, rp)
        rp.end()
        device.queue.submit([enc.finish()])
        data = device.queue.read_texture(
            {"texture": tex}, {"bytes_per_row": size[0] * 4, "rows_per_image": size[1]},
            (*size, 1),
        )  # fmt: skip
        return np.frombuffer(data, np.uint8).reshape(size[1], size[0], 4).copy()

    split = draw(DebugOverlayPass(device, ov, fmt, 2))
    one = DebugOverlayPass(device, ov, fmt, 2)
    one.upload()
    one.write_rects(rects)  # every rectangle by the blended pipeline, as before the split
    assert one.draw_counts == (0, 0, len(rects))
    assert np.array_equal(split, draw(one))
    assert (split[..., :3] != np.round(np.array(clear[:3]) * 255)).any()


def test_quads_land_on_the_right_pixels_of_a_larger_target(device):
    """Grid 12x6 at scale 2 (192x96 px) inside a 200x101 target: the quads must be placed
    with the target's size, else the filled area would be stretched or cut."""
    ov = DebugOverlay(12, 6)
    ov.fill(0, 0, 12, 6, (255, 0, 0))
    ov.fill(11, 5, 1, 1, (0, 0, 255))  # last cell: bottom-right corner of the grid
    opass_size = (200, 101)
    img = render(
        device, ov, "rgba8unorm", opass_size, scale=2, clear=CLEAR, target_size=opass_size
    )[..., :3]
    assert (img[:80, :176] == [255, 0, 0]).all()
    assert (img[80:96, 176:192] == [0, 0, 255]).all()
    assert (img[96:, :] == [0, 255, 0]).all() and (img[:, 192:] == [0, 255, 0]).all()


@pytest.mark.parametrize("fmt", ["rgba8unorm", "rgba8unorm-srgb"])
def test_every_8bit_colour_is_stored_exactly(device, fmt):
    """All 256 codes in every channel, as background and as glyph colour."""
    ov = DebugOverlay(16, 32)
    i = np.arange(256)
    for k in i.tolist():
        c = (k, 255 - k, (k * 7) % 256)
        ov.fill(k % 16, k // 16, 1, 1, c)
        ov.text(k % 16, 16 + k // 16, "#", c, (0, 0, 0))
    img = render(device, ov, fmt, (128, 256))[..., :3]
    bg = img[0:128:8, 0:128:8].reshape(256, 3)
    want = np.stack([i, 255 - i, (i * 7) % 256], axis=1)
    assert np.array_equal(bg, want)
    # a '#' glyph pixel (row 1, column 1 of the 8x8 glyph is set) in each cell of rows 16..31
    from tests.test_hud import glyph

    y, x = np.argwhere(glyph("#"))[0]
    fg = img[128 + y : 256 : 8, x:128:8].reshape(256, 3)
    assert np.array_equal(fg, want)


def test_srgb_table_matches_the_transfer_function():
    lut = srgb_decode_table()
    assert lut.dtype == np.float32 and lut.shape == (256,)
    assert lut[0] == 0.0 and lut[255] == 1.0
    assert lut[10] == pytest.approx(10 / 255 / 12.92)  # linear segment
    assert lut[128] == pytest.approx(0.2158605, abs=1e-6)  # published value for sRGB 128


def test_rects_follow_the_grid_down_to_zero(device, caplog):
    ov = DebugOverlay(8, 4)
    opass = DebugOverlayPass(device, ov, "rgba8unorm")
    opass.upload()
    assert opass.rect_count == 0
    ov.text(1, 2, "ab")
    ov.text(1, 3, "cd")
    opass.upload()
    assert opass.rect_count == 1
    ov.clear()
    opass.upload()
    assert opass.rect_count == 0
    tex = device.create_texture(
        size=(64, 32, 1), format="rgba8unorm", usage=wgpu.TextureUsage.RENDER_ATTACHMENT
    )
    with caplog.at_level(logging.WARNING, logger="wgpu"):
        enc = device.create_command_encoder()
        rp = enc.begin_render_pass(
            color_attachments=[{"view": tex.create_view(), "load_op": "load", "store_op": "store"}]
        )
        opass.record(None, rp)  # zero instances: nothing recorded, nothing to validate
        rp.end()
        device.queue.submit([enc.finish()])
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING]


def test_fragment_work_is_proportional_to_the_covered_area():
    """Pipeline statistics: fragment shader invocations of the pass, for a HUD covering 1/15 of
    a 400x300 target, stay near the covered pixel count (helper invocations along each quad's
    diagonal add a little), far below the 120 000 a fullscreen triangle would cost."""
    from wgpu.backends.wgpu_native import extras

    adapter = wgpu.gpu.request_adapter_sync()
    if "pipeline-statistics-query" not in adapter.features:
        pytest.skip("adapter has no pipeline-statistics-query")
    dev = adapter.request_device_sync(required_features=["pipeline-statistics-query"])
    ov = DebugOverlay(25, 18)
    ov.fill(2, 1, 5, 3, (1, 2, 3, 200))  # 15 cells
    ov.text(10, 7, "hello")  # 5 cells
    covered = 20 * 16 * 16  # cells x (8 HUD px x scale 2)^2
    opass = DebugOverlayPass(dev, ov, "rgba8unorm", 2)
    opass.target_size = (400, 300)
    tex = dev.create_texture(
        size=(400, 300, 1), format="rgba8unorm", usage=wgpu.TextureUsage.RENDER_ATTACHMENT
    )
    qs = extras.create_statistics_query_set(
        dev, count=1, statistics=["fragment-shader-invocations"]
    )
    buf = dev.create_buffer(
        size=8, usage=wgpu.BufferUsage.QUERY_RESOLVE | wgpu.BufferUsage.COPY_SRC
    )
    enc = dev.create_command_encoder()
    rp = enc.begin_render_pass(
        color_attachments=[{"view": tex.create_view(), "load_op": "clear", "store_op": "store"}]
    )
    extras.begin_pipeline_statistics_query(rp, qs, 0)
    opass.record(None, rp)
    extras.end_pipeline_statistics_query(rp)
    rp.end()
    enc.resolve_query_set(qs, 0, 1, buf, 0)
    dev.queue.submit([enc.finish()])
    invocations = int(np.frombuffer(dev.queue.read_buffer(buf), np.uint64)[0])
    assert covered <= invocations <= 1.25 * covered, invocations
