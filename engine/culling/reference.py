"""Numpy reference of the GPU cull: the specification that shaders/cull.wgsl and
shaders/hiz.wgsl implement, decision for decision (tests compare the two).

Classification of one instance (world bounding sphere centre ``c``, radius ``r``), in order:

0. **unusable** — any of ``c``, ``r`` NaN, infinite or beyond ``±MAX_WORLD`` (a transform
   with NaN/inf, or a scale so large its radius overflows): counted as **frustum**, never
   drawn, never a shadow caster, even with culling off (``usable_spheres``, on bit patterns).
1. **frustum** — outside any camera frustum plane by more than ``r`` (left, right, bottom,
   top, near; the far plane is at infinity). Planes from the view-projection matrix
   (Gribb & Hartmann 2001), normalised.
2. **near** — if the sphere reaches the near plane (``z - r <= near``, ``z`` the view-space
   distance along the view direction) it is **visible**: it has no finite projected bounds and
   is never occlusion-tested.
3. **projected bounds** — exact screen-space AABB of the sphere from the tangent planes
   through the eye (Mara & McGuire 2013, "2D Polyhedral Bounds of a Clipped,
   Perspective-Projected 3D Sphere"): per axis ``t = (x z -+ r sqrt(x^2 + z^2 - r^2)) /
   (z^2 - r^2)``, NDC = ``t * P00`` (x) or ``t * P11`` (y), UV = NDC * (0.5, -0.5) + 0.5. Bounds
   entirely off screen count as **frustum**.
4. **small** — the bounds contain no output pixel centre ``(i + 0.5, j + 0.5)``.
5. **occluded** — with occlusion on: clamp the UV bounds to [0, 1]; ``ext`` = larger side in
   level-0 pyramid texels; level = ``ceil(log2(ext))`` (then raised while the bounds span more
   than 2 texels, a guard against rounding); read the 2x2 texels at ``floor(uv_lo * size)``
   with clamped coordinates; occluded when the sphere's nearest depth ``near / (z - r)`` is
   below (farther than, reverse-Z) their minimum.
6. otherwise **visible**.

LOD: ``size = r * P11 * H / max(|c - eye|, near)`` (projected diameter in pixels); LOD ``k``
(``k < lod_count``) when ``size < base / 2^(k-1)``.

Depth pyramid (Hi-Z; zeux/niagara; Darnell 2010 "Hierarchical-Z map based occlusion
culling"): level 0 is ``pyramid_base(W) x pyramid_base(H)`` (power of two strictly below),
each texel the minimum over every depth pixel its footprint touches; each next level the
clamped 2x2 minimum.

Two phases (niagara): ``Cull.Early`` draws instances classified visible last frame that pass
the frustum test; ``Cull.Late`` classifies all and draws the visible ones not drawn early.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from engine.culling.pyramid import pyramid_base, pyramid_levels
from engine.scene.scene import MAX_WORLD, usable_spheres  # noqa: F401 (part of this spec)

FRUSTUM, SMALL, OCCLUDED, VISIBLE = 0, 1, 2, 3


@dataclass
class CullView:
    """The culling camera. ``view`` (4, 4) world→view; ``planes`` (K, 4) normalised world
    planes; ``eye`` (3,); ``p00``, ``p11`` projection scales; ``near`` in world units;
    ``screen`` (W, H) pixels; ``lod_base_px`` LOD 1 threshold in pixels; ``jitter`` the
    projection's sub-pixel offset in pixels (x right, y down), which shifts the bounds."""

    view: np.ndarray
    planes: np.ndarray
    eye: np.ndarray
    p00: float
    p11: float
    near: float
    screen: tuple[int, int]
    lod_base_px: float
    jitter: tuple[float, float] = (0.0, 0.0)


def build_pyramid(depth: np.ndarray) -> list[np.ndarray]:
    """Depth pyramid of a reverse-Z ``(H, W)`` float32 depth image; list of ``(h, w)`` levels."""
    h, w = depth.shape
    pw, ph = pyramid_base(w), pyramid_base(h)
    x0 = (np.arange(pw) * w) // pw
    x1 = np.minimum(((np.arange(pw) + 1) * w + pw - 1) // pw, w)
    y0 = (np.arange(ph) * h) // ph
    y1 = np.minimum(((np.arange(ph) + 1) * h + ph - 1) // ph, h)
    lvl = np.empty((ph, pw), np.float32)
    for j in range(ph):
        rows = depth[y0[j] : y1[j]].min(axis=0)
        lvl[j] = [rows[x0[i] : x1[i]].min() for i in range(pw)]
    levels = [lvl]
    for _ in range(1, pyramid_levels(pw, ph)):
        p = levels[-1]
        hh, ww = max(1, p.shape[0] // 2), max(1, p.shape[1] // 2)
        ys = np.minimum(np.arange(hh) * 2, p.shape[0] - 1)
        ys1 = np.minimum(ys + 1, p.shape[0] - 1)
        xs = np.minimum(np.arange(ww) * 2, p.shape[1] - 1)
        xs1 = np.minimum(xs + 1, p.shape[1] - 1)
        q = np.minimum(
            np.minimum(p[np.ix_(ys, xs)], p[np.ix_(ys, xs1)]),
            np.minimum(p[np.ix_(ys1, xs)], p[np.ix_(ys1, xs1)]),
        )
        levels.append(q)
    return levels


def select_lod(bounds: np.ndarray, lod_counts: np.ndarray, cv: CullView) -> np.ndarray:
    """LOD per instance ``(N,)`` uint32 from ``bounds`` ``(N, 4)`` and ``lod_counts`` ``(N,)``
    (unusable rows: whatever the arithmetic gives; they are never drawn)."""
    with np.errstate(over="ignore", invalid="ignore"):
        d = np.maximum(np.linalg.norm(bounds[:, :3] - cv.eye, axis=1), cv.near)
        size = bounds[:, 3] * cv.p11 * cv.screen[1] / d
    lod = np.zeros(len(bounds), np.uint32)
    t = cv.lod_base_px
    for k in range(1, int(lod_counts.max(initial=1))):
        lod[(size < t) & (k < lod_counts)] = k
        t *= 0.5
    return lod


def _slopes(x, z, r):
    s = r * np.sqrt(x * x + z * z - r * r)
    d = z * z - r * r
    return (x * z - s) / d, (x * z + s) / d


def classify(
    bounds: np.ndarray, cv: CullView, pyramid: list[np.ndarray] | None = None
) -> np.ndarray:
    """Class per instance ``(N,)`` uint32 (FRUSTUM, SMALL, OCCLUDED, VISIBLE) for world
    spheres ``bounds`` ``(N, 4)``; ``pyramid`` None means no occlusion test."""
    usable = usable_spheres(bounds)
    b = np.where(usable[:, None], np.asarray(bounds, np.float64), 0.0)  # no NaN arithmetic
    c, r = b[:, :3], b[:, 3]
    out = np.full(len(b), VISIBLE, np.uint32)
    pl = np.asarray(cv.planes, np.float64)
    outside = ((c @ pl[:, :3].T + pl[:, 3]) < -r[:, None]).any(axis=1) | ~usable
    v = c @ np.asarray(cv.view, np.float64)[:3, :3].T + np.asarray(cv.view, np.float64)[:3, 3]
    z = -v[:, 2]
    proj = ~outside & (z - r > cv.near)
    out[outside] = FRUSTUM
    i = np.flatnonzero(proj)
    vx, vy, zz, rr = v[i, 0], v[i, 1], z[i], r[i]
    tx0, tx1 = _slopes(vx, zz, rr)
    ty0, ty1 = _slopes(vy, zz, rr)
    scr = np.array(cv.screen, np.float64)
    shift = np.asarray(cv.jitter, np.float64) / scr
    lo = np.stack([0.5 + 0.5 * tx0 * cv.p00, 0.5 - 0.5 * ty1 * cv.p11], axis=1) + shift
    hi = np.stack([0.5 + 0.5 * tx1 * cv.p00, 0.5 - 0.5 * ty0 * cv.p11], axis=1) + shift
    off = (hi < 0).any(axis=1) | (lo > 1).any(axis=1)
    px_lo = np.maximum(np.ceil(lo * scr - 0.5), 0)
    px_hi = np.minimum(np.floor(hi * scr - 0.5), scr - 1)
    small = ~off & (px_lo > px_hi).any(axis=1)
    cls = np.full(len(i), VISIBLE, np.uint32)
    cls[off] = FRUSTUM
    cls[small] = SMALL
    if pyramid is not None:
        test = np.flatnonzero(~off & ~small)
        for k in test:
            if _occluded(lo[k], hi[k], zz[k] - rr[k], cv.near, pyramid):
                cls[k] = OCCLUDED
    out[i] = cls
    return out


def _occluded(lo, hi, z_near_pt, near, pyramid) -> bool:
    lo, hi = np.clip(lo, 0, 1), np.clip(hi, 0, 1)
    base = np.array(pyramid[0].shape[::-1], np.float64)  # (pw, ph)
    ext = max((hi[0] - lo[0]) * base[0], (hi[1] - lo[1]) * base[1])
    mips = len(pyramid)
    level = 0
    while level + 1 < mips and (1 << level) < ext:
        level += 1
    while True:
        size = np.maximum(base.astype(np.int64) >> level, 1)
        p0 = np.floor(lo * size).astype(np.int64)
        p1 = np.floor(hi * size).astype(np.int64)
        if (p1 - p0 <= 1).all() or level + 1 >= mips:
            break
        level += 1
    img = pyramid[level]
    xs = np.clip([p0[0], p0[0] + 1], 0, size[0] - 1)
    ys = np.clip([p0[1], p0[1] + 1], 0, size[1] - 1)
    farthest = img[np.ix_(ys, xs)].min()
    return near / z_near_pt < farthest
