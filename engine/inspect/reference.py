"""Numpy reference of the flame chart's selection (shaders/flame_select.wgsl): the
specification the GPU is tested against, span by span.

For span ``i`` (packed as in ``engine.inspect.spans``) and a ``ViewParams`` ``p``, with all
arithmetic in float32 in the shader's order:

1. its lane is shown (``lane_rows[lane] >= 0``) and its screen row ``lane_rows[lane] + depth
   - first_row`` is in ``0 .. rows-1``;
2. ``rel = (f32(dhi) * 2^32 + f32(dlo)) - frac`` (start minus the view start, exact in two
   words, then rounded), in view when ``rel + dur > 0`` and ``x0 = rel * px_per_ns <
   width``; ``w = dur * px_per_ns``;
3. ``w >= 1``: drawn as itself (never dropped);
4. ``w < 1``: competes in cell (row, ``clamp(floor(x0), 0, cols-1)``) with key ``(match <<
   31) | bits(dur)``; the largest key wins, ties to the lowest index; the winner is drawn
   as a one-pixel column at the cell (*collapsed*).

Flags: ``INST_MATCH`` / ``INST_DIM`` when a search is on, ``INST_COLLAPSED`` for 4.
"""

from __future__ import annotations

import numpy as np

from engine.inspect.select import INST_COLLAPSED, INST_DIM, INST_MATCH, ViewParams
from engine.inspect.spans import NAME_MATCH

F = np.float32


def select_reference(packed: np.ndarray, name_flags: np.ndarray, p: ViewParams) -> dict:
    """Instances the GPU selection must produce.

    Args:
        packed: ``uint32 (n, 5)`` spans (``pack_spans``).
        name_flags: ``uint32 (names,)`` (``NAME_MATCH`` bit).
        p: the view.

    Returns:
        ``{"span": uint32, "x0": f32, "w": f32, "row": int64, "flags": uint32}``, one entry
        per instance, sorted by (collapsed, span index).
    """
    lo, hi, frac = p.split_start()
    lane = packed[:, 3] >> 16
    depth = packed[:, 3] & 0xFFFF
    lane_rows = np.asarray(p.lane_rows, np.int64)
    known = lane < len(lane_rows)
    first = np.where(known, lane_rows[np.minimum(lane, max(len(lane_rows) - 1, 0))], -1)
    row = first + depth.astype(np.int64) - p.first_row
    dur = packed[:, 2].view(np.float32)
    slo, shi = packed[:, 0], packed[:, 1].view(np.int32).astype(np.int64)
    dlo = (slo - np.uint32(lo)).astype(np.uint32)
    borrow = (slo < np.uint32(lo)).astype(np.int64)
    dhi = shi - np.int64(np.uint32(hi).view(np.int32)) - borrow
    rel = (dhi.astype(F) * F(4294967296.0) + dlo.astype(F)) - F(frac)
    ppn = F(p.px_per_ns)
    x0 = rel * ppn
    w = dur * ppn
    ok = known & (first >= 0) & (row >= 0) & (row < p.rows) & (rel + dur > 0) & (x0 < p.width)
    flags = np.zeros(len(packed), np.uint32)
    match = np.zeros(len(packed), np.uint32)
    if p.search_on:
        m = (name_flags[packed[:, 4]] & NAME_MATCH) != 0
        flags[:] = np.where(m, INST_MATCH, INST_DIM)
        match[m] = 1
    wide = np.flatnonzero(ok & (w >= 1))
    narrow = np.flatnonzero(ok & (w < 1))
    col = np.clip(np.floor(x0[narrow]).astype(np.int64), 0, p.cols - 1)
    cell = row[narrow] * p.cols + col
    key = (match[narrow].astype(np.uint64) << 31) | dur[narrow].view(np.uint32)
    # per cell: largest key, then lowest index
    order = np.lexsort((narrow, -key.astype(np.int64), cell))
    cs = cell[order]
    firsts = order[np.r_[True, cs[1:] != cs[:-1]]] if len(cs) else order
    win = narrow[firsts]
    wcol = col[firsts]
    out = {
        "span": np.concatenate([wide, win]).astype(np.uint32),
        "x0": np.concatenate([x0[wide], wcol.astype(F)]),
        "w": np.concatenate([w[wide], np.ones(len(win), F)]),
        "row": np.concatenate([row[wide], row[win]]),
        "flags": np.concatenate([flags[wide], flags[win] | INST_COLLAPSED]).astype(np.uint32),
        "collapsed": np.r_[np.zeros(len(wide), bool), np.ones(len(win), bool)],
    }
    order = np.lexsort((out["span"], out["collapsed"]))
    return {k: v[order] for k, v in out.items()}


def pick_reference(ref: dict, p: ViewParams) -> int:
    """The span the pick dispatch reports for ``p.cursor`` over ``ref``'s instances: the
    lowest span index whose rectangle ``[x0, x0 + max(w, 1)) x [y0, y0 + row_px)`` holds it
    (``NONE`` = 0xFFFFFFFF when none)."""
    cx, cy = (F(v) for v in p.cursor)
    y0 = ((ref["row"] + p.first_row).astype(F) * F(p.row_px)) - F(p.scroll_px)
    hit = (
        (cx >= ref["x0"])
        & (cx < ref["x0"] + np.maximum(ref["w"], F(1)))
        & (cy >= y0)
        & (cy < y0 + F(p.row_px))
    )
    return int(ref["span"][hit].min()) if hit.any() else 0xFFFFFFFF


def lod_select_reference(entries: np.ndarray, name_flags: np.ndarray, p: ViewParams) -> dict:
    """The instances the GPU selection must produce while it reads a level-of-detail level:
    ``select_reference`` over the level's entries (``uint32 (m, 6)``, ``LodLevel.pack``),
    with ``span`` the real span each drawn entry stands for (word 5) and ``entry`` its index
    in the level; sorted by (collapsed, span)."""
    ref = select_reference(np.ascontiguousarray(entries[:, :5]), name_flags, p)
    ref["entry"] = ref["span"]
    ref["span"] = entries[ref["entry"].astype(np.int64), 5].astype(np.uint32)
    order = np.lexsort((ref["span"], ref["collapsed"]))
    return {k: v[order] for k, v in ref.items()}
