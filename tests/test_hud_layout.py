"""HUD layout as pure functions: grid sizes in, placements out (no GPU)."""

from __future__ import annotations

import itertools

import pytest

from engine.hud.layout import (
    PanelSpec,
    form_candidates,
    free_regions,
    grid_cells,
    notice_text,
    pack,
    plan,
    smallest,
)

# the engine's panels with s13's ten passes: perf (13 rows + 5), cull, timeline (10 names)
PERF = PanelSpec("perf", ((57, 18), (44, 18), (35, 18)))
CULL = PanelSpec("cull", ((48, 11), (38, 11)))
TIMELINE = PanelSpec("timeline", ((64, 14), (32, 15), (26, 20), (32, 11)))
ALL = [PERF, CULL, TIMELINE]
TAG = len("HUD all [F1]")


def rects(lay):
    """Every cell rectangle the layout uses: panels, tag, notices (half-open)."""
    out = [(p.col, p.row, p.col + p.size[0], p.row + p.size[1]) for p in lay.placements]
    if lay.tag is not None:
        out.append((lay.tag[0], lay.tag[1], lay.tag[0] + TAG, lay.tag[1] + 1))
    out += [(c, r, c + len(t), r + 1) for c, r, t in lay.notices]
    return out


def overlaps(a, b) -> bool:
    return a[0] < b[2] and b[0] < a[2] and a[1] < b[3] and b[1] < a[3]


def test_form_candidates_fewest_steps_spread_then_earlier_fuller():
    got = form_candidates([CULL, PanelSpec("t", ((64, 14), (32, 15), (26, 20)))])
    assert got == [(0, 0), (0, 1), (1, 0), (1, 1), (0, 2), (1, 2)]
    got = form_candidates(ALL)
    assert len(got) == 3 * 2 * 4 and len(set(got)) == 24
    assert got[:5] == [(0, 0, 0), (0, 0, 1), (0, 1, 0), (1, 0, 0), (0, 1, 1)]
    assert got[-1] == (2, 1, 3)
    assert form_candidates([]) == [()]


# (output size, scale) -> the placements (key, col, row, form) a reader can check by hand:
# tag on row 0, panels from row 1, col 1, one cell between panels and at the edges.
@pytest.mark.parametrize(
    "size, scale, want",
    [
        # 40x22: perf only in its narrowest form (1+35 <= 39, 1+18 <= 22-2 notice rows)
        ((320, 180), 1, [("perf", 1, 1, 2)]),
        # 80x45: perf full (1+57), cull and timeline compact side by side below it
        # (1+38+1+32 = 72 <= 79; all full would need 1+18+1+11+1+14+1 = 47 > 45 rows)
        ((640, 360), 1, [("perf", 1, 1, 0), ("cull", 1, 20, 1), ("timeline", 40, 20, 1)]),
        # 160x90: perf and cull side by side (1+57+1+48 = 107), the timeline below
        ((1280, 720), 1, [("perf", 1, 1, 0), ("cull", 59, 1, 0), ("timeline", 1, 20, 0)]),
        ((1920, 1080), 2, [("perf", 1, 1, 0), ("cull", 59, 1, 0), ("timeline", 1, 20, 0)]),
        ((2560, 1440), 2, [("perf", 1, 1, 0), ("cull", 59, 1, 0), ("timeline", 1, 20, 0)]),
    ],
)
def test_all_mode_placements_by_output_size(size, scale, want):
    lay = plan(ALL, size, (scale,), TAG)
    got = [(p.key, p.col, p.row, p.form) for p in lay.placements]
    assert got == want
    cols, rows = grid_cells(size, scale)
    assert lay.grid == (cols, rows) and lay.tag == (cols - TAG - 1, 0)
    placed = {p.key for p in lay.placements}
    assert [n for _, _, n in lay.notices] == [
        notice_text(p.key, smallest(p.sizes)) for p in ALL if p.key not in placed
    ]
    if size == (320, 180):  # the two left out say so on the rows under perf
        assert [(c, r) for c, r, _ in lay.notices] == [(1, 20), (1, 21)]


def test_nothing_overlaps_or_leaves_the_region_at_any_grid_size():
    for cols, rows in itertools.product(range(1, 170, 7), range(1, 95, 4)):
        region = (0, 0, cols, rows)
        for panels in (ALL, [PERF], [CULL], [TIMELINE], []):
            lay = pack(panels, region, TAG)
            used = rects(lay)
            for a, b in itertools.combinations(used[: len(lay.placements)], 2):
                assert not overlaps(a, b), (cols, rows, a, b)
            for p in lay.placements:  # panels: inside the region, clear of tag and notices
                r = (p.col, p.row, p.col + p.size[0], p.row + p.size[1])
                assert 0 <= r[0] and r[2] <= cols and 0 <= r[1] and r[3] <= rows, (cols, rows)
                assert not any(overlaps(r, o) for o in used[len(lay.placements) :])
            # every panel is either placed or named in a notice: never dropped silently (in a
            # region too narrow for the name, the notice is cut to fill its row)
            named = " ".join(t for _, _, t in lay.notices)
            for p in panels:
                placed = p.key in {q.key for q in lay.placements}
                joined = ", ".join(k for k, _ in lay.missing)  # the one-row form names them all
                cut = any(
                    c + len(t) == cols and (p.key.startswith(t) or joined.startswith(t))
                    for c, _, t in lay.notices
                )
                assert placed or p.key in named or cut, (cols, rows)
            assert all(0 <= r < rows for _, r, _ in lay.notices)


def test_notices_fit_the_region_and_name_the_panel_where_it_fits():
    # --hud-scale 3 at 640x360 is a 26x15-cell grid: "no room for log (36x6 cells)" ran off
    # the right edge, cut mid-word, the very clipping the notice is there to avoid
    log = PanelSpec("log", ((36, 6),))
    lay = pack([log], (0, 0, 26, 15), TAG)
    assert lay.notices == ((1, 1, "no room for log"),)
    for cols, rows in itertools.product(range(1, 60), (1, 2, 9)):
        for panels in (ALL, [PERF], [TIMELINE], [log]):
            lay = pack(panels, (0, 0, cols, rows), TAG)
            for c, _, text in lay.notices:
                assert c + len(text) <= cols, (cols, rows, text)
                keys = [p.key for p in panels if p.key not in {q.key for q in lay.placements}]
                if cols - c >= len(", ".join(keys)) + len("no room: "):
                    assert any(k in text for k in keys), (cols, rows, text)


def test_one_row_region_says_what_is_missing_in_place_of_the_tag():
    lay = pack(ALL, (0, 0, 120, 1), TAG)
    assert lay.tag is None and lay.placements == ()
    assert lay.notices == ((0, 0, "no room for perf, cull, timeline"),)


def test_smaller_scale_before_a_notice_unless_the_scale_is_fixed():
    big = PanelSpec("big", ((100, 40),))  # 1920x1080 at scale 2 is 120x67 cells: fits there
    assert plan([big], (1920, 1080), (2, 1), TAG).scale == 2
    huge = PanelSpec("huge", ((150, 40),))  # needs scale 1 (240x90 cells)
    lay = plan([huge], (1920, 1080), (2, 1), TAG)
    assert (lay.scale, lay.grid, lay.fits) == (1, (240, 90), True)
    fixed = plan([huge], (1920, 1080), (2,), TAG)  # --hud-scale 2: keep it, say why
    assert fixed.scale == 2 and fixed.placements == ()
    assert fixed.notices == ((1, 1, "no room for huge (150x40 cells)"),)


def test_compact_form_before_a_smaller_scale():
    lay = plan([PERF], (800, 1080), (2, 1), TAG)  # 50x67 cells at scale 2: 44 wide fits
    assert (lay.scale, lay.placements[0].form) == (2, 1)


def test_bottom_anchored_panel_stretches_along_the_bottom():
    console = PanelSpec("console", ((0, 6),), anchor="bottom")
    lay = pack([PERF, console], (0, 0, 100, 40), TAG)
    got = {p.key: (p.col, p.row, p.size) for p in lay.placements}
    assert got == {"perf": (1, 1, (57, 18)), "console": (1, 33, (98, 6))}
    # too little height for both: the shelves give way to the console, perf gets a notice
    lay = pack([PERF, console], (0, 0, 100, 20), TAG)
    assert [p.key for p in lay.placements] == ["console"]
    assert lay.notices[0][2] == notice_text("perf", (35, 18))


def test_free_regions_around_a_kept_box():
    # 1280x720 at scale 1 (160x90 cells), s03's gallery 712x272 px = 89x34 cells
    assert free_regions((1280, 720), 1, None) == [(0, 0, 160, 90)]
    got = free_regions((1280, 720), 1, (0, 0, 712, 272))
    assert got == [(0, 34, 160, 90), (89, 0, 160, 90)]  # below (160x56), right (71x90)
    # a box edge inside a cell: that cell is not free (scale 2: 16 px cells); below 20x7
    # cells before right 13x10
    assert free_regions((320, 160), 2, (0, 0, 100, 40)) == [(0, 3, 20, 10), (7, 0, 20, 10)]
    # a box covering everything leaves nothing
    assert free_regions((320, 160), 1, (0, 0, 320, 160)) == []


def test_plan_keeps_the_box_clear_in_pixels():
    box = (0, 0, 1424, 544)  # s03's gallery at 1920x1080 (scale 2)
    lay = plan(ALL, (1920, 1080), (2, 1), TAG, keep_clear=box)
    assert lay.fits and lay.scale == 2 and lay.region == (0, 34, 120, 67)
    px = 8 * lay.scale
    for r in rects(lay):
        assert not overlaps((r[0] * px, r[1] * px, r[2] * px, r[3] * px), box), r


def test_a_box_over_everything_leaves_one_line_at_the_bottom():
    lay = plan(ALL, (320, 180), (1,), TAG, keep_clear=(0, 0, 320, 180))
    assert lay.region == (0, 21, 40, 22) and lay.placements == () and lay.tag is None
    assert lay.notices == ((0, 21, "no room for perf, cull, timeline"),)
