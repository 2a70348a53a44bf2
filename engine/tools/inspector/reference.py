"""Numpy twin of the inspector's GPU reduction (``inspect.wgsl``): what the tests compare it
with."""

from __future__ import annotations

import numpy as np

from engine.tools.inspector.passes import BINS


def reference_stats(values: np.ndarray, value_range=None) -> dict:
    """numpy's answer for one channel ``values`` (any shape, float): the fields of
    ``TextureStats`` (``bins`` with the shader's float32 bin arithmetic)."""
    v = np.asarray(values, np.float32).ravel()
    fin = v[np.isfinite(v)]
    lo, hi = (float(fin.min()), float(fin.max())) if fin.size else (3e38, -3e38)
    hlo, hhi = (lo, hi) if value_range is None else value_range
    hlo, hhi = np.float32(hlo), np.float32(hhi)
    inside = fin[(fin >= hlo) & (fin <= hhi)]
    t = (inside - hlo) / (hhi - hlo) if hhi > hlo else np.zeros_like(inside)
    b = np.minimum((t.astype(np.float32) * np.float32(BINS)).astype(np.int64), BINS - 1)
    return {
        "lo": lo,
        "hi": hi,
        "mean": float(fin.astype(np.float64).mean()) if fin.size else 0.0,
        "finite": int(fin.size),
        "nan": int(np.isnan(v).sum()),
        "inf": int(np.isinf(v).sum()),
        "bins": np.bincount(b, minlength=BINS),
    }
