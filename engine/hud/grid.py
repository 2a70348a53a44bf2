"""DebugOverlay: the HUD's state, a grid of character cells plus a few vector primitives.

Coordinates are in cells (``col``, ``row``; one cell = 8x8 HUD pixels, one HUD pixel =
``scale x scale`` framebuffer pixels, chosen by the pass). The grid lives in numpy so that
building a HUD is a handful of vectorised slice writes; ``DebugOverlayPass`` uploads only the
rows that changed. Every cell is four ``uint32`` words:

* ``glyph``: bits 0-7 the ASCII code (0 = no glyph), 8-11 the glyph scale ``k`` (1..4),
  12-15 / 16-19 the cell's x / y offset inside a ``k x k``-cell glyph;
* ``fg``, ``bg``: RGBA8 colours, sRGB-encoded, packed little-endian (``r | g<<8 | b<<16 |
  a<<24``); background alpha lets the scene show through;
* ``prims``: the half-open range ``[first, last)`` of primitives whose box touches the cell
  (``first << 16 | last``), so the fragment shader tests only those.

Primitives (bar, pie slice, line, stacked chart) are resolved per HUD pixel in the fragment
shader. Layering inside a cell: background, then primitives in the order drawn, then the glyph.

A cell is *occupied* when it can change a pixel: background alpha > 0, a glyph code, or a
primitive range. ``occupied_rects`` covers exactly the occupied cells with a few rectangles,
which the pass draws as instanced quads instead of a fullscreen triangle; ``draw_rects``
splits them by what their pixels need (``DRAW_CLASSES``), so that most of the HUD, opaque
panel text, is shaded without the primitive loop and written without blending.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence

import numpy as np

from engine.hud import font8x8

MAX_COLS, MAX_ROWS = 280, 90
DEFAULT_COLS, DEFAULT_ROWS = 80, 30
CELL_PX = 8
MAX_GLYPH_SCALE = 4
MAX_PRIMS = 0xFFFF

# Primitive kinds (must match shaders/debug_overlay.wgsl)
PRIM_BAR, PRIM_PIE, PRIM_LINE, PRIM_CHART = 1, 2, 3, 4
PRIM_FLOATS = 12  # 48 bytes: kind, colour, colour2, data offset, rect vec4, params vec4

Color = tuple[int, int, int] | tuple[int, int, int, int] | int

WHITE = (255, 255, 255, 255)
CLEAR = (0, 0, 0, 0)


@functools.lru_cache(maxsize=512)
def _pack_tuple(c: tuple) -> int:
    if len(c) not in (3, 4) or not all(
        isinstance(v, int | np.integer) and 0 <= v <= 255 for v in c
    ):
        raise ValueError(f"colour {c!r} must be (r, g, b) or (r, g, b, a) integers 0..255 (sRGB)")
    r, g, b = c[:3]
    a = c[3] if len(c) == 4 else 255
    return int(r) | int(g) << 8 | int(b) << 16 | int(a) << 24


def pack_color(c: Color) -> int:
    """RGBA8 sRGB colour tuple ``(r, g, b[, a])`` (0..255) -> packed ``uint32``.

    An ``int`` is taken as already packed. Raises ValueError for anything else.
    """
    if isinstance(c, int | np.integer):
        return int(c) & 0xFFFFFFFF
    return _pack_tuple(tuple(c))


def font_atlas() -> np.ndarray:
    """The baked font as ``uint8`` 0/1, shape ``(64, 128)`` (16 x 6 glyphs of 8x8)."""
    bits = np.unpackbits(np.frombuffer(font8x8.ATLAS, np.uint8))
    return bits.reshape(font8x8.HEIGHT, font8x8.WIDTH)


def encode_text(s: str) -> np.ndarray:
    """ASCII codes (``uint32``) of ``s``; characters outside printable ASCII become ``'?'``."""
    codes = np.frombuffer(s.encode("ascii", errors="replace"), np.uint8).astype(np.uint32)
    if not (s.isascii() and s.isprintable()):  # the common case needs no clean-up
        codes[(codes < 32) | (codes > 126)] = ord("?")
    return codes


def occupied_rects(cells: np.ndarray) -> np.ndarray:
    """Rectangles that cover exactly the occupied cells of a grid.

    Args:
        cells: ``uint32`` array ``(rows, cols, 4)`` in the cell layout above.

    Returns:
        ``uint32`` array ``(n, 4)`` of half-open cell rectangles ``(col0, row0, col1, row1)``,
        disjoint, ordered by ``(col0, col1, row0)``; ``n = 0`` for an empty grid. Each row's
        maximal runs of occupied cells are merged with identical runs on the rows directly
        below, so a rectangular panel is one rectangle. Vectorised: ~0.05 ms at 120x67 cells.
    """
    return label_rects(_words(cells)[0].astype(np.uint8))[0]


#: The pass's draws, in order: label 1 ``text``: opaque background, no primitive (shaded by
#: ``fs_text``: background and glyph, no primitive loop; written without blending); 2
#: ``opaque``: opaque background with primitives (``fs_main``, no blending: "over" an opaque
#: background is opaque); 3 ``blend``: the rest (``fs_main``, alpha-blended over the frame).
DRAW_CLASSES = ("text", "opaque", "blend")


def draw_rects(cells: np.ndarray) -> tuple[np.ndarray, tuple[int, ...]]:
    """The occupied cells' rectangles split by ``DRAW_CLASSES``.

    Returns:
        ``(rects, counts)``: ``uint32 (n, 4)`` half-open cell rectangles, disjoint, covering
        every occupied cell once, those of ``DRAW_CLASSES[0]`` first, then ``[1]``, ``[2]``;
        ``counts`` how many of each.
    """
    occ, words1 = _words(cells)
    opaque = (words1 & 0xFF000000) == 0xFF000000
    prims = (words1 >> 32) != 0
    label = np.where(opaque, np.where(prims, 2, 1), 3) * occ
    rects, labels = label_rects(label.astype(np.uint8))
    counts = np.bincount(labels, minlength=len(DRAW_CLASSES) + 1)[1:]
    return rects, tuple(int(n) for n in counts)


def _words(cells: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(occupied (rows, cols) bool, the bg | prims<<32 words (rows, cols) uint64)``."""
    rows, cols, _ = cells.shape
    words = np.ascontiguousarray(cells).view(np.uint64).reshape(rows, cols, 2)
    # glyph code | (bg alpha, prims) -- one 64-bit word holds bg (low) and prims (high)
    occ = ((words[..., 0] & 0xFF) | (words[..., 1] >> 24)) != 0
    return occ, words[..., 1]


def label_rects(labels: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Rectangles of equal non-zero label covering a ``(rows, cols)`` label grid.

    Each row's maximal runs of one label are merged with identical runs (same columns, same
    label) on the rows directly below. Returns ``(uint32 (n, 4) rects (col0, row0, col1,
    row1), int (n,) their labels)``, ordered by ``(label, col0, col1, row0)``.
    """
    rows, cols = labels.shape
    padded = np.zeros((rows, cols + 2), np.int16)
    padded[:, 1:-1] = labels
    r, j = np.nonzero(padded[:, 1:] != padded[:, :-1])  # boundary before column j of row r
    if len(r) == 0:
        return np.zeros((0, 4), np.uint32), np.zeros(0, np.int64)
    seg = r[1:] == r[:-1]  # consecutive boundaries of one row delimit a run
    row, c0, c1 = r[:-1][seg], j[:-1][seg], j[1:][seg]
    lab = labels[row, c0].astype(np.int64)
    keep = lab != 0
    row, c0, c1, lab = row[keep], c0[keep], c1[keep], lab[keep]
    order = np.lexsort((row, c1, c0, lab))
    row, c0, c1, lab = row[order], c0[order], c1[order], lab[order]
    new = np.ones(len(row), bool)  # a run starts a rectangle unless it continues the one above
    new[1:] = (
        (c0[1:] != c0[:-1]) | (c1[1:] != c1[:-1]) | (lab[1:] != lab[:-1])
        | (row[1:] != row[:-1] + 1)
    )  # fmt: skip
    first = np.flatnonzero(new)
    last = np.append(first[1:], len(row)) - 1
    rects = np.stack([c0[first], row[first], c1[first], row[last] + 1], axis=1)
    return rects.astype(np.uint32), lab[first]


def check_grid_size(cols: int, rows: int) -> None:
    if not (1 <= cols <= MAX_COLS and 1 <= rows <= MAX_ROWS):
        raise ValueError(
            f"HUD grid {cols}x{rows} cells is outside 1x1..{MAX_COLS}x{MAX_ROWS}; "
            "use a larger --hud-scale or a smaller grid"
        )


COORD_LIMIT = 1e6  # cells: farther positions and larger sizes draw nothing (and cannot overflow)


def _placeable(*values: float) -> bool:
    """Every value a finite cell coordinate or size within ``COORD_LIMIT``."""
    return all(math.isfinite(v) and abs(v) < COORD_LIMIT for v in values)


class DebugOverlay:
    """A ``cols x rows`` grid of cells (default 80x30, at most 280x90) and a primitive list.

    Args:
        cols, rows: grid size in cells.

    Raises:
        ValueError: grid size outside 1x1..280x90, a bad colour, or a bad primitive argument.

    Writes outside the grid are clipped, never errors; a position or size that is not
    finite (a NaN timing plotted as-is), beyond ``COORD_LIMIT`` cells, or a zero or negative
    size draws nothing.
    """

    def __init__(self, cols: int = DEFAULT_COLS, rows: int = DEFAULT_ROWS):
        self.cols = self.rows = 0
        self.prims = np.zeros((64, PRIM_FLOATS), np.float32)
        self.prim_boxes: list[tuple[int, int, int, int]] = []  # cell box of each primitive
        self.data: list[np.ndarray] = []  # chart payloads (float32 / packed colours)
        self.chart_shapes: list[tuple[int, int]] = []
        self.data_len = 0
        self.version = 0  # bumped by every change; the pass uploads when it differs
        self.resize(cols, rows)

    # -- state ----------------------------------------------------------------------------
    @property
    def prim_count(self) -> int:
        return len(self.prim_boxes)

    def resize(self, cols: int, rows: int) -> None:
        """Change the grid size (cells); clears everything."""
        check_grid_size(cols, rows)
        self.cols, self.rows = cols, rows
        self.cells = np.zeros((rows, cols, 4), np.uint32)
        self.clear()

    def clear(self) -> None:
        """Remove every glyph, colour and primitive."""
        self.cells[:] = 0
        self.prim_boxes.clear()
        self.data.clear()
        self.chart_shapes.clear()
        self.data_len = 0
        self.dirty_rows = (0, self.rows)  # half-open range of rows written since the upload
        self.version += 1

    def _touch(self, r0: int, r1: int) -> None:
        a, b = self.dirty_rows
        self.dirty_rows = (min(a, r0), max(b, r1)) if a < b else (r0, r1)
        self.version += 1

    def _clip(self, col: int, row: int, w: int, h: int):
        c0, r0 = max(col, 0), max(row, 0)
        c1, r1 = min(col + w, self.cols), min(row + h, self.rows)
        return (c0, r0, c1, r1) if c0 < c1 and r0 < r1 else None

    # -- cells ----------------------------------------------------------------------------
    def fill(self, col: int, row: int, w: int, h: int, bg: Color, *, glyphs: bool = True):
        """Set the background of a ``w x h``-cell box (a panel); ``glyphs`` also erases text."""
        box = self._clip(col, row, w, h)
        if box is None:
            return
        c0, r0, c1, r1 = box
        self.cells[r0:r1, c0:c1, 2] = pack_color(bg)
        if glyphs:
            self.cells[r0:r1, c0:c1, 0] = 0
        self._touch(r0, r1)

    def text(
        self,
        col: int,
        row: int,
        s: str,
        fg: Color = WHITE,
        bg: Color | None = None,
        *,
        large: bool = False,
        scale: int = 1,
    ) -> int:
        """Write ``s`` starting at cell ``(col, row)``; return the columns it spans.

        ``large=True`` is ``scale=2``: each character then covers ``scale x scale`` cells,
        drawn from the same 8x8 glyph with every glyph pixel ``scale`` HUD pixels wide.
        ``bg=None`` keeps the cells' background. Non-printable characters draw as ``'?'``.
        """
        k = 2 if large else scale
        if not (isinstance(k, int) and 1 <= k <= MAX_GLYPH_SCALE):
            raise ValueError(f"text scale {k!r} must be an integer 1..{MAX_GLYPH_SCALE}")
        codes = encode_text(s)
        n = len(codes) * k
        if not _placeable(col, row):
            return n
        col, row = math.floor(col), math.floor(row)  # a cell; fractions round down
        if k == 1 and 0 <= row < self.rows:  # fast path: one row of 1x1 glyphs
            c0, c1 = max(col, 0), min(col + n, self.cols)
            if c0 < c1:
                cells = self.cells[row, c0:c1]
                cells[:, 0] = codes[c0 - col : c1 - col] | 0x100
                cells[:, 1] = pack_color(fg)
                if bg is not None:
                    cells[:, 2] = pack_color(bg)
                self._touch(row, row + 1)
            return n
        box = self._clip(col, row, n, k)
        if box is None:
            return n
        c0, r0, c1, r1 = box
        # word for every covered cell: code | k << 8 | dx << 12 | dy << 16
        dx = np.arange(n, dtype=np.uint32) % k
        words = np.repeat(codes, k) | (k << 8) | (dx << 12)
        dy = (np.arange(r0 - row, r1 - row, dtype=np.uint32) << 16)[:, None]
        self.cells[r0:r1, c0:c1, 0] = words[None, c0 - col : c1 - col] | dy
        self.cells[r0:r1, c0:c1, 1] = pack_color(fg)
        if bg is not None:
            self.cells[r0:r1, c0:c1, 2] = pack_color(bg)
        self._touch(r0, r1)
        return n

    # -- primitives -----------------------------------------------------------------------
    def _add_prim(self, kind, color, color2, data, rect, params, box) -> None:
        if self.prim_count >= MAX_PRIMS:
            raise ValueError(f"too many HUD primitives (limit {MAX_PRIMS}); clear() each frame")
        i = self.prim_count
        if i >= len(self.prims):
            self.prims = np.concatenate([self.prims, np.zeros_like(self.prims)])
        row = self.prims[i]
        words = row[:4].view(np.uint32)
        words[0], words[1], words[2], words[3] = kind, pack_color(color), pack_color(color2), data
        row[4:8] = rect
        row[8:12] = params
        box = (math.floor(box[0]), math.floor(box[1]), math.ceil(box[2]), math.ceil(box[3]))
        self.prim_boxes.append(box)  # whole cells covering the (float) box
        clipped = self._clip(box[0], box[1], box[2] - box[0], box[3] - box[1])
        if clipped is None:
            self.version += 1
            return
        c0, r0, c1, r1 = clipped
        sub = self.cells[r0:r1, c0:c1, 3]
        first = np.where(sub == 0, np.uint32(i), sub >> 16)
        sub[...] = (first << 16) | np.uint32(i + 1)
        self._touch(r0, r1)

    def bar(
        self,
        col: int,
        row: int,
        width: int,
        fraction: float,
        fg: Color,
        bg: Color = CLEAR,
        *,
        height: int = 1,
        inset: int = 1,
    ) -> None:
        """A horizontal bar ``width x height`` cells, filled from the left to ``fraction``
        (clamped to 0..1), with ``inset`` HUD pixels of margin at top and bottom."""
        if not (_placeable(col, row, width, height, inset) and width > 0 and height > 0):
            return
        f = min(max(float(fraction), 0.0), 1.0) if math.isfinite(fraction) else 0.0
        x0, y0 = col * CELL_PX, row * CELL_PX + inset
        x1, y1 = (col + width) * CELL_PX, (row + height) * CELL_PX - inset
        self._add_prim(
            PRIM_BAR,
            fg,
            bg,
            0,
            (x0, y0, x1, y1),
            (f, 0, 0, 0),
            (col, row, col + width, row + height),
        )

    def pie(
        self,
        col: float,
        row: float,
        radius: float,
        values: Sequence[float],
        colors: Sequence[Color],
    ) -> None:
        """A pie centred on cell coordinates ``(col, row)`` with ``radius`` in cells: one slice
        per value (proportional, clockwise from 12 o'clock); nothing if the values sum to 0.

        Raises ValueError for a negative value or mismatched lengths."""
        if len(values) != len(colors):
            raise ValueError(f"pie: {len(values)} values but {len(colors)} colours")
        vals = np.asarray(values, np.float64)
        if (vals < 0).any() or not np.isfinite(vals).all():
            raise ValueError(f"pie values must be finite and >= 0, got {list(values)}")
        if not (_placeable(col, row, radius) and radius > 0) or not vals.any():
            return
        vals = vals / vals.max()  # 1e308 + 1e308 would overflow the sum
        total = vals.sum()
        cx, cy, r = col * CELL_PX, row * CELL_PX, radius * CELL_PX
        box = (col - radius, row - radius, col + radius, row + radius)
        edges = np.concatenate([[0.0], np.cumsum(vals) / total]) * (2 * math.pi)
        for a0, a1, c in zip(edges[:-1], edges[1:], colors, strict=True):
            if a1 > a0:
                self._add_prim(PRIM_PIE, c, 0, 0, (cx, cy, r, 0), (a0, a1, 0, 0), box)

    def line(
        self, x0: float, y0: float, x1: float, y1: float, color: Color, *, width: float = 1.0
    ) -> None:
        """A segment between cell coordinates ``(x0, y0)`` and ``(x1, y1)``, ``width`` HUD px."""
        if not (_placeable(x0, y0, x1, y1, width) and width > 0):
            return
        p = [v * CELL_PX for v in (x0, y0, x1, y1)]
        pad = width / CELL_PX
        box = (min(x0, x1) - pad, min(y0, y1) - pad, max(x0, x1) + pad, max(y0, y1) + pad)
        self._add_prim(PRIM_LINE, color, 0, 0, p, (width * 0.5, 0, 0, 0), box)

    def stacked_chart(
        self,
        col: int,
        row: int,
        width: int,
        height: int,
        values: np.ndarray,
        colors: Sequence[Color],
        vmax: float,
    ) -> int:
        """A stacked column chart filling ``width x height`` cells: ``values`` is float, shape
        ``(columns, series)`` (e.g. frames x passes, in ms), drawn left (oldest) to right with
        series stacked bottom-up in ``colors``; ``vmax`` maps to the full height. NaN, inf = 0.
        Returns a handle for ``update_chart``."""
        v = np.nan_to_num(np.asarray(values, np.float32), nan=0.0, posinf=0.0, neginf=0.0)
        if v.ndim != 2 or v.shape[1] != len(colors):
            raise ValueError(f"chart values {v.shape} must be (columns, {len(colors)} series)")
        if not 0 < vmax < math.inf:
            raise ValueError(f"chart vmax must be finite and > 0, got {vmax!r}")
        cols, series = v.shape
        offset = self.data_len
        pal = np.array([pack_color(c) for c in colors], np.uint32).view(np.float32)
        payload = np.concatenate([pal, np.clip(v, 0, None).ravel()])
        self.data.append(payload)
        self.chart_shapes.append(v.shape)
        self.data_len += len(payload)
        rect = (col * CELL_PX, row * CELL_PX, (col + width) * CELL_PX, (row + height) * CELL_PX)
        box = (col, row, col + width, row + height)
        if _placeable(col, row, width, height) and width > 0 and height > 0:
            self._add_prim(PRIM_CHART, 0, 0, offset, rect, (cols, series, vmax, 0), box)
        return len(self.data) - 1  # a chart drawn nowhere still takes updates

    def update_chart(self, handle: int, values: np.ndarray) -> None:
        """Replace the values of the chart ``handle`` (returned by ``stacked_chart``) in place;
        ``values`` must have the chart's shape. Cheaper than rebuilding the HUD."""
        if not 0 <= handle < len(self.data):
            raise ValueError(
                f"no chart {handle!r} (stacked_chart's handles: 0..{len(self.data) - 1})"
            )
        payload, shape = self.data[handle], self.chart_shapes[handle]
        v = np.nan_to_num(np.asarray(values, np.float32), nan=0.0, posinf=0.0, neginf=0.0)
        if v.shape != shape:
            raise ValueError(f"chart values {v.shape} do not match the chart's shape {shape}")
        np.clip(v.ravel(), 0, None, out=payload[shape[1] :])
        self.version += 1

    def prim_bytes(self) -> bytes:
        return self.prims[: self.prim_count].tobytes()

    def data_bytes(self) -> bytes:
        return np.concatenate(self.data).tobytes() if self.data else b""

    def occupied_rects(self) -> np.ndarray:
        """``occupied_rects(self.cells)``: ``uint32 (n, 4)`` cell rectangles, see there."""
        return occupied_rects(self.cells)

    def draw_rects(self) -> tuple[np.ndarray, tuple[int, ...]]:
        """``draw_rects(self.cells)``: the rectangles by ``DRAW_CLASSES``, see there."""
        return draw_rects(self.cells)

    # -- inspection (tests, tools) --------------------------------------------------------
    def glyph_at(self, col: int, row: int) -> str:
        """The character drawn in a cell ('' if none, or outside the grid)."""
        if not (0 <= col < self.cols and 0 <= row < self.rows):
            return ""
        code = int(self.cells[row, col, 0]) & 0xFF
        return chr(code) if code else ""
