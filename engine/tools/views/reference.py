"""Numpy twins of ``view.wgsl``: the specification the tests hold the views to (the same
colour ramps, depth mapping, hash colours and Hi-Z texel lookup), kept beside the shader so the
two change together."""

from __future__ import annotations

import numpy as np

#: sRGB colours of LOD 0..5 (5: and beyond) in the lod view (shaders/view.wgsl).
LOD_COLOURS = np.array(
    [
        (0.20, 0.80, 0.20),
        (0.95, 0.85, 0.20),
        (0.95, 0.50, 0.10),
        (0.90, 0.15, 0.15),
        (0.80, 0.20, 0.80),
        (0.20, 0.40, 0.95),
    ]
)


#: Turbo (Mikhailov, Google 2019) at 9 evenly spaced points, sRGB-encoded: the false-colour
#: ramp of the luminance view, linearly interpolated (``shaders/view.wgsl`` has the same).
TURBO9 = np.array(
    [
        (0.190, 0.072, 0.232),
        (0.276, 0.421, 0.891),
        (0.158, 0.736, 0.923),
        (0.197, 0.949, 0.595),
        (0.644, 0.990, 0.234),
        (0.933, 0.812, 0.227),
        (0.984, 0.493, 0.128),
        (0.816, 0.185, 0.018),
        (0.480, 0.016, 0.011),
    ]
)


#: sRGB colours of shadow cascades 0..3 in the cascades view (shaders/view.wgsl), and names.
CASCADE_COLOURS = np.array(
    [
        (0.20, 0.80, 0.20),
        (0.25, 0.45, 0.95),
        (0.95, 0.85, 0.20),
        (0.90, 0.15, 0.15),
    ]
)
CASCADE_COLOUR_NAMES = ("green", "blue", "yellow", "red")


def cascade_pick(depth: np.ndarray, splits, band: float) -> tuple[np.ndarray, np.ndarray]:
    """The cascade of each view depth and the next cascade's weight in its blend band, as the
    shading (``shaders/shadow_cascades.wgsl`` ``cascade_pick``) and the cascades view choose:
    the first cascade whose end (``splits[1:]``, a ``CascadeFit``'s) is not below the depth
    (the last one beyond every split); the weight rises linearly from 0 at ``band`` of the
    cascade's depth range (from 0 for the first) before its end to 1 at it.

    Returns:
        ``(c, next)``: int64 and float64 arrays shaped like ``depth``.
    """
    d = np.asarray(depth, np.float64)
    ends = np.asarray(splits[1:], np.float64)
    n = len(ends)
    c = np.minimum(np.searchsorted(ends[:-1], d, side="left"), n - 1)
    end = ends[c]
    start = np.where(c > 0, ends[np.maximum(c - 1, 0)], 0.0)
    width = band * (end - start)
    w = np.clip((d - (end - width)) / np.maximum(width, 1e-6), 0.0, 1.0)
    return c, np.where(c + 1 >= n, 0.0, w)


def ramp(t: np.ndarray) -> np.ndarray:
    """The luminance view's colour of ``t`` in [0, 1] (clamped): ``(..., 3)`` sRGB-encoded."""
    x = np.clip(np.asarray(t, np.float64), 0.0, 1.0) * 8.0
    i = np.minimum(x.astype(int), 7)
    f = (x - i)[..., None]
    return TURBO9[i] * (1 - f) + TURBO9[i + 1] * f


def depth_grey(depth: np.ndarray, near: float, far: float) -> np.ndarray:
    """The depth view's sRGB-encoded grey in [0, 1] of reverse-Z depth (NaN where d is 0)."""
    z = linear_depth(depth, near)
    g = np.clip(np.log(z / near) / np.log(far / near), 0.0, 1.0)
    return np.where(np.isfinite(z), g, np.nan)


def linear_depth(depth: np.ndarray, near: float) -> np.ndarray:
    """View distance (world units, float64, same shape) of reverse-Z infinite-perspective
    depth ``d`` (``engine.math3d.perspective_reverse_z``: ``d = near / z``); inf where d is 0."""
    d = np.asarray(depth, np.float64)
    with np.errstate(divide="ignore"):
        return np.where(d > 0, near / np.where(d > 0, d, 1.0), np.inf)


def pcg(x: np.ndarray) -> np.ndarray:
    """The ids view's hash of uint32 ``x`` (PCG RXS-M-XS, as ``shaders/view.wgsl``)."""
    x = np.asarray(x, np.uint32)
    with np.errstate(over="ignore"):
        state = x * np.uint32(747796405) + np.uint32(2891336453)
        word = ((state >> ((state >> np.uint32(28)) + np.uint32(4))) ^ state) * np.uint32(277803737)
    return (word >> np.uint32(22)) ^ word


def id_colour(ids: np.ndarray) -> np.ndarray:
    """``(..., 3)`` sRGB-encoded colour in [0, 1] of scene rows ``ids`` in the ids view."""
    h = pcg(ids)
    return np.stack([h & 255, (h >> 8) & 255, (h >> 16) & 255], -1) / 255.0


def hiz_texel(px: np.ndarray, size: tuple[int, int], base: tuple[int, int], level: int):
    """The level-``level`` texel ``(x, y)`` the hiz view shows at output pixel columns/rows
    ``px`` (int arrays): ``px * base // size >> level`` clamped to the level's size."""
    dims = [max(1, b >> level) for b in base]
    return [
        np.minimum((p * b // s) >> level, n - 1)
        for p, b, s, n in zip(px, base, size, dims, strict=True)
    ]
