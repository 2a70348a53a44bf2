"""Synthetic, well-nested span tables of any size (tests, benchmarks, the viewer's demo).

Each lane is a run of 16.6 ms frames; every span at depth ``d < depth - 1`` is split into
``fanout`` children at ``d + 1`` with random widths (each keeps 85% of its slot, so siblings
never touch). Generated level by level in numpy: 10M spans take a few seconds.
"""

from __future__ import annotations

import numpy as np

from engine.inspect.traceload import SpanTable, build_table

FRAME_NS = 16_666_667
NAMES = (
    ("Frame",),
    ("Update", "Record", "Submit", "Present"),
    ("Cull.Early", "Main.Early", "HiZ", "Cull.Late", "Main.Late", "Shadow", "Post", "Overlay"),
    ("draw", "dispatch", "copy", "barrier", "bind", "upload"),
    ("mesh", "instance", "material", "texture"),
    ("a", "b", "c", "d"),
)


def synthetic_table(
    n: int, *, lanes: int = 2, fanout: int = 4, depth: int = 5, seed: int = 0
) -> SpanTable:
    """About ``n`` spans (at least one frame per lane) in ``lanes`` lanes.

    Returns a ``SpanTable`` (sorted by start) with names ``NAMES`` per depth level.
    """
    per_frame = sum(fanout**d for d in range(depth))
    frames = max(1, round(n / (per_frame * lanes)))
    rng = np.random.default_rng(seed)
    names, offsets = [], []
    for level in range(depth):
        group = NAMES[min(level, len(NAMES) - 1)]
        offsets.append(len(names))
        names += [f"{g}" if level < len(NAMES) else f"{g}{level}" for g in group]
    lane = np.repeat(np.arange(lanes), frames)
    start = np.tile(np.arange(frames, dtype=np.int64) * FRAME_NS, lanes)
    dur = np.full(len(start), int(FRAME_NS * 0.9), np.int64)
    cols = [(lane, start, dur, np.zeros(len(start), np.int64))]
    for level in range(1, depth):
        _, ps, pd, _ = cols[-1]
        pl = cols[-1][0]
        w = rng.random((len(ps), fanout)) + 0.3
        w /= w.sum(axis=1, keepdims=True)
        edges = np.cumsum(w, axis=1) - w
        cs = ps[:, None] + (edges * pd[:, None]).astype(np.int64)
        cd = (w * pd[:, None] * 0.85).astype(np.int64)
        k = len(NAMES[min(level, len(NAMES) - 1)])
        nid = offsets[level] + rng.integers(0, k, cs.shape)
        cols.append((np.repeat(pl, fanout), cs.ravel(), cd.ravel(), nid.ravel()))
    lane_c = np.concatenate([c[0] for c in cols])
    start_c = np.concatenate([c[1] for c in cols])
    dur_c = np.concatenate([c[2] for c in cols])
    name_c = np.concatenate([c[3] for c in cols])
    depth_c = np.concatenate([np.full(len(c[0]), d, np.uint32) for d, c in enumerate(cols)])
    labels = [f"synthetic lane {i}" for i in range(lanes)]
    return build_table(lane_c, start_c, start_c + dur_c, name_c, names, labels, depth=depth_c)
