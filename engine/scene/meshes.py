"""Procedural meshes: interleaved ``float32`` vertices ``(N, 6)`` = position xyz, normal xyz,
and ``uint32`` triangle indices ``(M,)``, counter-clockwise front faces."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass
class MeshData:
    vertices: np.ndarray  # (N, 6) float32: position, normal
    indices: np.ndarray  # (M,) uint32, M % 3 == 0

    @property
    def radius(self) -> float:
        """Bounding-sphere radius around the origin."""
        return float(np.linalg.norm(self.vertices[:, :3], axis=1).max())


def box(hx: float = 0.5, hy: float = 0.5, hz: float = 0.5) -> MeshData:
    """An axis-aligned box centred at the origin with half-extents ``hx, hy, hz``."""
    verts, idx = [], []
    for axis in range(3):
        for sign in (-1.0, 1.0):
            n = np.zeros(3)
            n[axis] = sign
            u = np.zeros(3)
            u[(axis + 1) % 3] = 1.0
            v = np.cross(n, u)
            base = len(verts)
            for a, b in ((-1, -1), (1, -1), (1, 1), (-1, 1)):
                p = (n + a * u + b * v) * (hx, hy, hz)
                verts.append((*p, *n))
            idx += [base, base + 1, base + 2, base, base + 2, base + 3]
    return MeshData(np.array(verts, np.float32), np.array(idx, np.uint32))


def plane(half: float = 1.0) -> MeshData:
    """A square in the XZ plane facing +Y, ``2 * half`` on a side."""
    h = half
    v = np.array(
        [[-h, 0, -h, 0, 1, 0], [-h, 0, h, 0, 1, 0], [h, 0, h, 0, 1, 0], [h, 0, -h, 0, 1, 0]],
        np.float32,
    )
    return MeshData(v, np.array([0, 1, 2, 0, 2, 3], np.uint32))
