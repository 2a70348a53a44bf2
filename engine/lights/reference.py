"""Numpy twins of the light assignment (shaders/light_cluster.wgsl) and of one light's shading
(shaders/lights_shade.wgsl ``light_radiance``); the tests check the GPU against them.

The assignment is computed in float32 with the shader's operations in its order, so the GPU
result equals it cluster by cluster except where a compared quantity lies within rounding of
its threshold (a GPU may fuse a multiply and an add, or round a division differently): those
decisions are reported as ``unsure`` (``BOUNDARY_TOLERANCE``) and a test accepts either
answer for them only.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from engine.lights.gpu import (
    CLUSTER_CAP,
    CLUSTER_X,
    CLUSTER_Y,
    CLUSTER_Z,
    COUNTER_NAMES,
    ClusterView,
)
from engine.materials.reference import brdf

#: A plane or slice test is "unsure" when its margin is within this fraction of the light's
#: view-space distance plus range (float32 rounds at 6e-8 of a value; a fused multiply-add
#: and a reordered sum move a dot product of a few terms by a few of those).
BOUNDARY_TOLERANCE = 2e-6
#: Shading's closest distance (shaders/lights_common.wgsl LIGHT_MIN_DISTANCE).
MIN_DISTANCE = 0.01


@dataclass(frozen=True)
class Assignment:
    """The reference assignment of N lights.

    Attributes:
        member: ``(N, CLUSTER_Z, CLUSTER_Y, CLUSTER_X)`` bool: light i is in cluster (z, y, x).
        unsure: same shape: that decision is within ``BOUNDARY_TOLERANCE`` of flipping.
        counters: the ``lights`` block as the GPU counts it (``COUNTER_NAMES``), for the
            decided pairs (and with no cap overflow, exactly).
    """

    member: np.ndarray
    unsure: np.ndarray
    counters: dict[str, int]

    def cluster(self, c: int) -> tuple[np.ndarray, np.ndarray]:
        """``(lights in it, lights unsure for it)`` of flat cluster ``c`` (the WGSL index
        ``(z * CLUSTER_Y + y) * CLUSTER_X + x``), sorted indices."""
        m = self.member.reshape(len(self.member), -1)[:, c]
        u = self.unsure.reshape(len(self.unsure), -1)[:, c]
        return np.flatnonzero(m), np.flatnonzero(u)

    def demand(self) -> np.ndarray:
        """``(CLUSTERS,)`` lights per cluster (before the cap)."""
        return self.member.reshape(len(self.member), -1).sum(0)


def _slice(depth: np.ndarray, slices: np.ndarray) -> np.ndarray:
    """Slice index of each view depth: boundaries z_1..z_{Z-1} at or below it."""
    return (depth[:, None] >= slices[None, 1:CLUSTER_Z]).sum(1)


def assign_clusters(records: np.ndarray, cv: ClusterView) -> Assignment:
    """Assign ``records`` (``engine.lights.model.LIGHT_DTYPE``, N) to the clusters of ``cv``
    as shaders/light_cluster.wgsl does (float32 throughout)."""
    f = np.float32
    n = len(records)
    pos = records["position"].astype(f)
    r = records["range"].astype(f)
    m = cv.view.astype(f)
    # view * vec4(p, 1): the columns scaled and summed in order
    p = m[:3, 0] * pos[:, :1] + m[:3, 1] * pos[:, 1:2] + m[:3, 2] * pos[:, 2:3] + m[:3, 3]
    d = -p[:, 2]
    scale = np.sqrt((p.astype(np.float64) ** 2).sum(1)) + r
    tol = (BOUNDARY_TOLERANCE * scale).astype(np.float64)

    xs = cv.x_planes[:, 0] * p[:, :1] + cv.x_planes[:, 1] * p[:, 2:3]  # (N, X + 1)
    ys = cv.y_planes[:, 0] * p[:, 1:2] + cv.y_planes[:, 1] * p[:, 2:3]  # (N, Y + 1)
    rr = r[:, None]
    left, right = xs[:, :-1], xs[:, 1:]
    cols = (left > -rr) & (right < rr)
    cols_u = (np.abs(left.astype(np.float64) + rr) <= tol[:, None]) | (
        np.abs(right.astype(np.float64) - rr) <= tol[:, None]
    )
    upper, lower = ys[:, :-1], ys[:, 1:]
    rows = (upper < rr) & (lower > -rr)
    rows_u = (np.abs(upper.astype(np.float64) - rr) <= tol[:, None]) | (
        np.abs(lower.astype(np.float64) + rr) <= tol[:, None]
    )
    near = cv.slices[0]
    front = (d + r) > near
    front_u = np.abs((d + r).astype(np.float64) - near) <= tol
    lo, hi = (d - r).astype(f), (d + r).astype(f)
    z0, z1 = _slice(lo, cv.slices), _slice(hi, cv.slices)
    zs = np.arange(CLUSTER_Z)
    zin = (zs[None] >= z0[:, None]) & (zs[None] <= z1[:, None])
    bounds = cv.slices[1:CLUSTER_Z].astype(np.float64)
    near_bound = (np.abs(lo[:, None].astype(np.float64) - bounds) <= tol[:, None]).any(1) | (
        np.abs(hi[:, None].astype(np.float64) - bounds) <= tol[:, None]
    ).any(1)

    visible = front & cols.any(1) & rows.any(1)
    member = visible[:, None, None, None] & zin[:, :, None, None] & rows[:, None, :, None]
    member = member & cols[:, None, None, :]
    # a decision is unsure where any test it rests on is (a whole light when its near-plane
    # or slice tests are: the slice range or its visibility may move)
    whole = front_u | near_bound
    unsure = (
        whole[:, None, None, None]
        | rows_u[:, None, :, None]
        | cols_u[:, None, None, :]
        | np.zeros((n, CLUSTER_Z, 1, 1), bool)
    )
    demand = member.reshape(n, -1).sum(0)
    stored = np.minimum(demand, CLUSTER_CAP)
    counters = {
        "tested": n,
        "visible": int(visible.sum()),
        "pairs": int(stored.sum()),
        "dropped": int((demand - stored).sum()),
        "at_cap": int((demand >= CLUSTER_CAP).sum()),
        "largest": int(demand.max(initial=0)),
        "eye_inside": int((visible & ((p * p).sum(1) < r * r)).sum()),
    }
    assert tuple(counters) == COUNTER_NAMES
    return Assignment(member, unsure, counters)


def light_radiance(record, world, n, v, base, metallic, roughness) -> np.ndarray:
    """``(3,)`` float64 radiance one light (a ``LIGHT_DTYPE`` record) reflects towards unit
    ``v`` from a surface at ``world`` with unit normal ``n`` (shaders/lights_shade.wgsl):
    ``intensity / max(d^2, MIN_DISTANCE^2)`` windowed by ``saturate(1 - (d / range)^4)^2``,
    the spot cone's smooth attenuation squared, ``n . l``, through the glTF BRDF."""
    to_light = np.asarray(record["position"], np.float64) - np.asarray(world, np.float64)
    d2 = float(to_light @ to_light)
    r2 = float(record["range"]) ** 2
    if not d2 < r2 or d2 <= 0:
        return np.zeros(3)
    light = to_light / np.sqrt(d2)
    ndl = float(np.asarray(n) @ light)
    if ndl <= 0:
        return np.zeros(3)
    q = d2 / r2
    window = min(max(1.0 - q * q, 0.0), 1.0)
    falloff = window * window / max(d2, MIN_DISTANCE**2)
    cd = float(np.asarray(record["direction"], np.float64) @ -light)
    cone = min(max(cd * float(record["spot_scale"]) + float(record["spot_offset"]), 0.0), 1.0)
    e = np.asarray(record["intensity"], np.float64) * (falloff * cone * cone * ndl)
    return brdf(base, metallic, roughness, n, v, light) * e


def cluster_of(frag_xy, depth: float, cv: ClusterView) -> int:
    """The flat cluster index of a pixel (framebuffer position) at view depth ``depth``."""
    w, h = cv.size
    tx = min(int(frag_xy[0] * CLUSTER_X / w), CLUSTER_X - 1)
    ty = min(int(frag_xy[1] * CLUSTER_Y / h), CLUSTER_Y - 1)
    z = int(_slice(np.array([depth], np.float32), cv.slices)[0])
    return (z * CLUSTER_Y + ty) * CLUSTER_X + tx
