"""HUD layout: where each panel of a mode goes in the cell grid, as pure functions.

A panel offers one or more sizes in cells, best first (its full form, then compact forms).
``pack`` places a mode's panels in a rectangle of cells (the HUD's free region): the top row
is kept for the mode tag, panels anchored ``"bottom"`` stack upward from the region's bottom
edge, the others go left to right on shelves, a new shelf below when the row is full (shelf
packing, "next fit": Coffman et al., "Performance bounds for level-oriented two-dimensional
packing algorithms", SIAM J. Computing 9(4), 1980). Every combination of forms is tried,
fewest compaction steps first (``form_candidates``), with a bottom margin first and then
flush; the first combination at which every panel fits wins. When none does, the one that
places the earliest panels wins and each panel left out gets a one-line notice under the
placed ones: never clipped silently.

``plan`` tries the HUD scales from the largest down and, when a sample keeps part of the
screen for itself (``keep_clear``), the free strips around that part, and returns the first
layout that places everything (else the one that places the earliest panels).
"""

from __future__ import annotations

import functools
import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass, field

from engine.hud.grid import CELL_PX, MAX_COLS, MAX_ROWS

Size = tuple[int, int]  # (cols, rows) in cells
Rect = tuple[int, int, int, int]  # half-open (col0, row0, col1, row1) in cells

MARGIN = 1  # cells between a panel and the region's left, right and bottom edges
GAP = 1  # cells between panels


@dataclass(frozen=True)
class PanelSpec:
    """What the layout needs to know of a panel: its key, its sizes in cells ``(cols, rows)``
    best first (at least one), and where it goes (``"top"``: shelves under the mode tag;
    ``"bottom"``: rows stacked up from the region's bottom edge, e.g. a console; a width of 0
    there stretches across the region)."""

    key: str
    sizes: tuple[Size, ...]
    anchor: str = "top"


@dataclass(frozen=True)
class Placement:
    """A placed panel: top-left cell ``(col, row)``, its size and the form index it uses."""

    key: str
    col: int
    row: int
    size: Size
    form: int


@dataclass(frozen=True)
class Layout:
    """Result of ``pack`` / ``plan``.

    Attributes:
        region: the cell rectangle the HUD used.
        placements: panels placed, in the order given.
        missing: ``(key, smallest size)`` of each panel left out.
        notices: ``(col, row, text)`` one-line notices, one per panel left out.
        tag: ``(col, row)`` of the mode tag (right-aligned on the region's top row), or None
            when the region is empty.
        scale: HUD scale the layout was made for (``plan`` only; 0 from ``pack``).
        grid: ``(cols, rows)`` of the whole grid at that scale (``plan`` only).
    """

    region: Rect
    placements: tuple[Placement, ...] = ()
    missing: tuple[tuple[str, Size], ...] = ()
    notices: tuple[tuple[int, int, str], ...] = ()
    tag: tuple[int, int] | None = None
    scale: int = 0
    grid: Size = field(default=(0, 0))

    @property
    def fits(self) -> bool:
        return not self.missing


def smallest(sizes: Sequence[Size]) -> Size:
    """The form with the fewest cells (what a notice says a panel needs at least)."""
    return min(sizes, key=lambda s: (s[0] * s[1], s))


def notice_text(key: str, size: Size) -> str:
    """``"no room for cull (38x11 cells)"``: the line drawn for a panel left out."""
    return f"no room for {key} ({size[0]}x{size[1]} cells)"


def fit_line(width: int, *candidates: str) -> str:
    """The first of ``candidates`` (longest first) that fits ``width`` cells, else the last
    one cut to the width: a notice is shortened, never run off the edge of the grid."""
    for text in candidates:
        if len(text) <= width:
            return text
    return candidates[-1][: max(width, 0)]


def cut_line(text: str, width: int) -> str:
    """``text`` within ``width`` cells: whole when it fits, else cut with ``~`` as its last
    cell (as the perf table marks a cut pass name), so a cut line never reads as whole."""
    if len(text) <= width:
        return text
    return text[: width - 1] + "~" if width > 1 else text[: max(width, 0)]


def form_candidates(panels: Sequence[PanelSpec]) -> list[tuple[int, ...]]:
    """Every combination of form indices (one per panel), in the order to try them: fewest
    compaction steps first, then the steps spread over the panels (no panel squeezed to its
    last form while another is still full), then the earlier panels fuller (lexicographic),
    e.g. ``[(0, 0), (0, 1), (1, 0), (1, 1), (0, 2), (1, 2)]`` for panels of 2 and 3 forms."""
    combos = itertools.product(*(range(len(p.sizes)) for p in panels))
    return sorted(combos, key=lambda f: (sum(f), max(f, default=0), f))


def _shelves(panels: Sequence[PanelSpec], forms: Sequence[int], box: Rect):
    """Place ``panels`` (top ones on shelves, bottom ones stacked up) inside ``box``; return
    ``(placements, left-out panels, first free row under the shelves)``."""
    c0, r0, c1, r1 = box
    placed: list[Placement] = []
    out: list[PanelSpec] = []
    for p, f in zip(panels, forms, strict=True):  # bottom first: they take rows from the shelves
        if p.anchor != "bottom":
            continue
        w, h = p.sizes[f]
        w = w or c1 - c0
        if 0 < w <= c1 - c0 and r1 - h >= r0:
            r1 -= h
            placed.append(Placement(p.key, c0, r1, (w, h), f))
            r1 -= GAP
        else:
            out.append(p)
    x, y, shelf_h = c0, r0, 0
    for p, f in zip(panels, forms, strict=True):
        if p.anchor == "bottom":
            continue
        w, h = p.sizes[f]
        if not (x + w <= c1 and y + h <= r1):  # not on this shelf: try a new one below
            ny = y + shelf_h + GAP if shelf_h else y
            if not (c0 + w <= c1 and ny + h <= r1):
                out.append(p)
                continue
            x, y, shelf_h = c0, ny, 0
        placed.append(Placement(p.key, x, y, (w, h), f))
        x, shelf_h = x + w + GAP, max(shelf_h, h)
    order = {p.key: i for i, p in enumerate(panels)}
    placed.sort(key=lambda q: order[q.key])
    return placed, out, y + shelf_h


def _notice(panel: PanelSpec, width: int) -> str:
    key = panel.key
    full = notice_text(key, smallest(panel.sizes))
    return fit_line(width, full, f"no room for {key}", f"no room: {key}", key)


def pack(panels: Sequence[PanelSpec], region: Rect, tag_width: int) -> Layout:
    """Place ``panels`` inside ``region`` (cells, half-open) under a ``tag_width``-cell mode
    tag on the region's top row. Pure: same input, same layout.

    Returns a ``Layout`` whose placements never overlap each other, the tag or the notices,
    and never leave ``region``. Raises ValueError for a panel with no size.
    """
    c0, r0, c1, r1 = region
    if c1 - c0 <= 0 or r1 - r0 <= 0:
        return Layout(region, missing=tuple((p.key, smallest(p.sizes)) for p in panels))
    if any(not p.sizes for p in panels):
        raise ValueError("every HUD panel needs at least one size")
    tag = (max(c0, c1 - tag_width - MARGIN), r0)
    box = (c0 + MARGIN, r0 + 1, c1 - MARGIN)
    best = None
    candidates = form_candidates(panels)
    for bottom in (r1 - MARGIN, r1):  # a bottom margin if it costs nothing, else flush
        for forms in candidates:
            placed, out, _ = _shelves(panels, forms, (*box[:3], bottom))
            if not out:
                return Layout(region, tuple(placed), tag=tag)
            score = tuple(p not in out for p in panels)  # the earlier panels matter more
            if best is None or score > best[1]:
                best = (forms, score, len(out))
    # Some panel cannot fit: keep one row per missing panel for its notice, which can leave
    # more out, so settle on a fixed point (at most len(panels) rounds).
    forms, _, reserve = best
    for _ in range(len(panels) + 1):
        placed, out, bottom = _shelves(panels, forms, (*box[:3], r1 - reserve))
        if len(out) <= reserve:
            break
        reserve = len(out)
    missing = tuple((p.key, smallest(p.sizes)) for p in out)
    if r1 - box[1] < len(out):  # not even a row per notice: one line in place of the tag
        keys = ", ".join(p.key for p in out)
        line = fit_line(c1 - c0, f"no room for {keys}", f"no room: {keys}", keys)
        return Layout(region, tuple(placed), missing, ((c0, r0, line),), tag=None)
    first = bottom + GAP if placed and bottom > box[1] else box[1]
    first = min(first, r1 - len(out))
    x = box[0] if box[0] < box[2] else c0
    notices = tuple((x, first + i, _notice(p, c1 - x)) for i, p in enumerate(out))
    return Layout(region, tuple(placed), missing, notices, tag=tag)


def grid_cells(size: Size, scale: int) -> Size:
    """Cells covering ``size`` pixels at ``scale``, capped at the overlay's 280x90."""
    px = CELL_PX * scale
    return (
        max(1, min(MAX_COLS, int(size[0]) // px)),
        max(1, min(MAX_ROWS, int(size[1]) // px)),
    )


def free_regions(size: Size, scale: int, keep_clear: Rect | None) -> list[Rect]:
    """Cell rectangles the HUD may use at ``scale``: the whole grid, or, when a sample keeps
    the pixel box ``keep_clear = (x0, y0, x1, y1)`` for itself, the strips right of, below,
    left of and above it (cells wholly outside the box), largest first, empty ones dropped."""
    cols, rows = grid_cells(size, scale)
    if keep_clear is None:
        return [(0, 0, cols, rows)]
    px = CELL_PX * scale
    x0, y0, x1, y1 = keep_clear
    a0, b0 = x0 // px, y0 // px  # last cells wholly before the box
    a1, b1 = math.ceil(x1 / px), math.ceil(y1 / px)  # first cells wholly after it
    strips = [(a1, 0, cols, rows), (0, b1, cols, rows), (0, 0, a0, rows), (0, 0, cols, b0)]
    out = []
    for c0, r0, c1, r1 in strips:
        c1, r1 = min(c1, cols), min(r1, rows)
        if c1 > c0 and r1 > r0:
            out.append((c0, r0, c1, r1))
    out.sort(key=lambda r: -(r[2] - r[0]) * (r[3] - r[1]))  # stable: ties keep the order above
    return out


def plan(
    panels: Sequence[PanelSpec],
    size: Size,
    scales: Sequence[int],
    tag_width: int,
    keep_clear: Rect | None = None,
) -> Layout:
    """Best layout of ``panels`` on a ``size``-pixel output: for each scale in ``scales``
    (largest first) and each free region at that scale, ``pack``; the first layout that
    places every panel wins, else the one that places the earliest panels (first on ties).
    The returned layout's ``scale`` and ``grid`` say which HUD scale and grid to draw with.
    When ``keep_clear`` leaves no free cell, the grid's bottom row is used for one line.
    Cached on its arguments (the HUD asks again at every refresh, mostly the same question).
    Raises ValueError for an empty ``scales``."""
    if not scales:
        raise ValueError("plan: no HUD scale to try")
    box = None if keep_clear is None else tuple(int(v) for v in keep_clear)
    size = (int(size[0]), int(size[1]))
    return _plan(tuple(panels), size, tuple(int(s) for s in scales), int(tag_width), box)


@functools.lru_cache(maxsize=64)
def _plan(
    panels: tuple[PanelSpec, ...],
    size: Size,
    scales: tuple[int, ...],
    tag_width: int,
    keep_clear: Rect | None,
) -> Layout:
    best = None
    for scale in scales:
        grid = grid_cells(size, scale)
        # no free strip at all: the bottom row still says what is missing (never silent)
        regions = free_regions(size, scale, keep_clear) or [(0, grid[1] - 1, *grid)]
        for region in regions:
            lay = pack(panels, region, tag_width)
            lay = Layout(lay.region, lay.placements, lay.missing, lay.notices, lay.tag, scale, grid)
            if lay.fits:
                return lay
            missing = {key for key, _ in lay.missing}
            score = tuple(p.key not in missing for p in panels)
            if best is None or score > best[0]:
                best = (score, lay)
    return best[1]
