"""s03: HUD gallery: every glyph in both sizes, colours, bars, pies, lines and a chart."""

from __future__ import annotations

import math

import numpy as np

from engine.app import Sample, main
from engine.graph import OUTPUT, RenderPass
from engine.hud.debug_overlay import DebugOverlayPass, auto_hud_scale, grid_for
from engine.hud.grid import DebugOverlay
from engine.hud.palette import PALETTE

BG = (0.10, 0.12, 0.16, 1.0)
PANEL = (30, 34, 46, 255)
LABEL = (120, 200, 255)
WHITE = (235, 235, 235)
GALLERY_COLS = 89  # the gallery's width in cells (the stacked chart ends at column 88)


class HudGallery(Sample):
    """Its own DebugOverlay + pass ("Gallery"); the engine HUD (F1) keeps clear of the
    gallery's content (``Hud.keep_clear``) and uses the free strip below or beside it."""

    name = "s03"
    category = "tools"
    description = "HUD gallery: every glyph in both sizes, colours, bars, pies, lines, a chart."

    def build(self, graph):
        self.overlay = DebugOverlay()
        self.opass = DebugOverlayPass(
            graph.device, self.overlay, graph.output_format, name="Gallery"
        )
        graph.add(
            RenderPass("Clear", record=lambda ctx, rp: None, targets=self.clear, writes=(OUTPUT,))
        )
        graph.add(self.opass)
        self.size = None
        self.chart = None

    def clear(self, ctx):
        return {
            "color_attachments": [
                {"view": ctx.output, "load_op": "clear", "clear_value": BG, "store_op": "store"}
            ]
        }

    def update(self, ctx):
        if self.size != ctx.size:  # first frame or resize: grid and scale from the size
            self.size = ctx.size
            scale = self.app.args.hud_scale or auto_hud_scale(ctx.size)
            self.opass.set_scale(scale)
            self.overlay.resize(*grid_for(ctx.size, scale))
            self.chart = draw_gallery(self.overlay, ctx.time)
            self.app.hud.keep_clear(content_box(self.overlay, scale, ctx.size))
        else:
            self.overlay.update_chart(self.chart, chart_values(ctx.time))


def content_box(ov: DebugOverlay, scale: int, size) -> tuple[int, int, int, int]:
    """Pixel box ``(0, 0, x1, y1)`` around everything the gallery drew, within ``size``."""
    rects = ov.occupied_rects()
    px = 8 * scale
    x1, y1 = int(rects[:, 2].max()) * px, int(rects[:, 3].max()) * px
    return 0, 0, min(x1, int(size[0])), min(y1, int(size[1]))


def chart_values(t: float) -> np.ndarray:
    x = np.arange(60)[:, None] * 0.2 + t * 4 + np.arange(4)[None, :]
    return (1.0 + np.sin(x)) * np.array([0.8, 0.5, 0.6, 0.3], np.float32)


def draw_gallery(ov: DebugOverlay, t: float) -> int:
    """Draw everything the overlay can; return the chart handle for per-frame updates."""
    ov.clear()
    ov.fill(0, 0, GALLERY_COLS, 1, PANEL)
    ov.text(1, 0, "LANTERN HUD GALLERY  (s03)", LABEL)
    # all 95 glyphs, small: 3 rows of 32
    chars = "".join(chr(c) for c in range(32, 127))
    ov.text(1, 2, "font 8x8, 95 glyphs:", LABEL)
    for i in range(3):
        ov.text(1, 3 + i, chars[i * 32 : (i + 1) * 32], WHITE)
    # large: 2x2 cells per glyph
    ov.text(1, 7, "large (2x2 cells):", LABEL)
    for i in range(3):
        ov.text(1, 8 + 2 * i, chars[i * 32 : (i + 1) * 32], (255, 220, 120), large=True)
    y = 15
    ov.text(1, y, "colours:", LABEL)
    for i, c in enumerate(PALETTE):  # one character each: 0-9, then a-j
        ov.text(11 + 3 * i, y, "0123456789abcdefghij"[i % 20], (0, 0, 0), c + (255,))
        ov.fill(12 + 3 * i, y, 1, 1, c + (128,))
    y += 2
    ov.text(1, y, "bars:", LABEL)
    for i, f in enumerate((0.0, 0.1, 0.25, 0.5, 0.75, 1.0)):
        ov.text(7, y + i, f"{f:4.2f}", WHITE)
        ov.bar(12, y + i, 20, f, PALETTE[i], (50, 54, 66))
    ov.text(1, y + 7, "pies:", LABEL)
    ov.pie(11, y + 12, 4, [1, 2, 3, 4], PALETTE[:4])
    ov.pie(22, y + 12, 4, [1], PALETTE[4:5])
    ov.pie(33, y + 12, 4, [5, 1], [(90, 200, 110), (230, 90, 80)])
    x0 = 40
    ov.text(x0, 17, "lines:", LABEL)
    for i in range(12):
        a = i * math.pi / 12
        ov.line(x0 + 8, 26, x0 + 8 + 7 * math.cos(a), 26 - 7 * math.sin(a), PALETTE[i % 10])
    ov.line(x0, 28, x0 + 16, 28, WHITE, width=3.0)
    ov.text(x0 + 18, 17, "stacked chart:", LABEL)
    w = max(8, min(30, ov.cols - (x0 + 18) - 1))  # narrower on a grid under 89 cells
    ov.fill(x0 + 18, 18, w, 8, (20, 22, 30, 200))
    handle = ov.stacked_chart(x0 + 18, 18, w, 8, chart_values(t), PALETTE[:4], 4.0)
    ov.text(x0 + 18, 27, "translucent panel:", LABEL)
    ov.fill(x0 + 18, 28, 20, 2, (255, 255, 255, 60))
    ov.text(x0 + 19, 28, "alpha 60/255", WHITE)
    return handle


if __name__ == "__main__":
    main(HudGallery)
