"""The sun's orthographic shadow projection, fitted to the view, and frustum planes.

The light's box covers a sphere of radius ``radius`` around a point ahead of the camera
(snapped to whole shadow texels so edges do not shimmer as the camera moves). Its near side
is pushed back to the scene's extent toward the sun, so every caster between the sun and the
receivers is inside; the cull therefore tests casters against the sides and the far plane only
(extended toward the light), never against the camera frustum.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from engine.math3d import look_at, orthographic


@dataclass
class SunFit:
    """Attributes: ``view_proj`` (4, 4) float32 world→shadow clip (reverse-Z ortho),
    ``planes`` (5, 4) float32 world culling planes (4 sides + far), ``texel_world`` texel
    size in world units."""

    view_proj: np.ndarray
    planes: np.ndarray
    texel_world: float


def frustum_planes(view_proj: np.ndarray, *, near: bool = True, far: bool = False) -> np.ndarray:
    """World-space planes ``(K, 4)`` float32 of a reverse-Z clip volume (Gribb & Hartmann
    2001), normalised so ``dot(p[:3], x) + p[3]`` is the signed distance (>= 0 inside).
    Order: left, right, bottom, top, then near (depth <= w) and far (depth >= 0) if asked."""
    m = np.asarray(view_proj, np.float64)
    rows = [m[3] + m[0], m[3] - m[0], m[3] + m[1], m[3] - m[1]]
    if near:
        rows.append(m[3] - m[2])
    if far:
        rows.append(m[2])
    p = np.array(rows)
    p /= np.linalg.norm(p[:, :3], axis=1, keepdims=True)
    return p.astype(np.float32)


def fit_sun(
    sun_dir: np.ndarray,
    focus: np.ndarray,
    radius: float,
    extent: tuple[np.ndarray, np.ndarray],
    map_size: int,
) -> SunFit:
    """Fit the shadow projection.

    Args:
        sun_dir: ``(3,)`` unit vector toward the sun.
        focus: ``(3,)`` world centre of the shadowed region; ``radius`` its radius (world units).
        extent: scene world AABB ``(min xyz, max xyz)``; casters are all inside it.
        map_size: shadow map size in texels.
    """
    sun = np.asarray(sun_dir, np.float64)
    rot = look_at(np.zeros(3), -sun).astype(np.float64)  # rotation only: eye at origin
    texel = 2.0 * radius / map_size
    f = rot[:3, :3] @ np.asarray(focus, np.float64)
    fx, fy = np.floor(f[0] / texel) * texel, np.floor(f[1] / texel) * texel
    lo, hi = (np.asarray(v, np.float64) for v in extent)
    corners = np.array(
        [[x, y, z] for x in (lo[0], hi[0]) for y in (lo[1], hi[1]) for z in (lo[2], hi[2])]
    )
    depth = -(corners @ rot[:3, :3].T)[:, 2]  # distance along the light's view direction
    near = float(depth.min()) - 1.0
    far = max(float(-f[2]) + radius, near + 1.0)
    shift = np.identity(4)
    shift[:3, 3] = (-fx, -fy, 0.0)
    vp = orthographic(radius, radius, near, far).astype(np.float64) @ shift @ rot
    vp = vp.astype(np.float32)
    return SunFit(vp, frustum_planes(vp, near=False, far=True), texel)
