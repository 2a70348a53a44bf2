"""Procedural meshes: interleaved ``float32`` vertices ``(N, 6)`` = position xyz, normal xyz,
and ``uint32`` triangle indices ``(M,)``, counter-clockwise front faces."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

#: wgpu vertex buffer layout of ``MeshData.vertices``: position at location 0, normal at 1.
VERTEX_LAYOUT = {
    "array_stride": 24,
    "attributes": [
        {"format": "float32x3", "offset": 0, "shader_location": 0},
        {"format": "float32x3", "offset": 12, "shader_location": 1},
    ],
}


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


# -- closed primitives in the unit cube [-0.5, 0.5]^3, so ``scale(w, h, d)`` sizes them -----


def cylinder(segments: int = 24, radius: float = 0.5, height: float = 1.0) -> MeshData:
    """A capped cylinder along +Y centred at the origin; smooth sides, flat caps.

    Raises ValueError for fewer than 3 segments.
    """
    a = _angles(segments)
    ring = np.stack([np.cos(a), np.zeros_like(a), -np.sin(a)], axis=1)  # CCW seen from +Y
    y = np.array([0.0, height / 2, 0.0])
    side = _side(ring * radius - y, ring * radius + y, ring, ring)
    top = _cap(ring * radius + y, up=True)
    bottom = _cap(ring * radius - y, up=False)
    return _merge([side, top, bottom])


def cone(segments: int = 24, radius: float = 0.5, height: float = 1.0) -> MeshData:
    """A cone along +Y (apex at ``+height/2``, base at ``-height/2``); smooth sides.

    Raises ValueError for fewer than 3 segments.
    """
    a = _angles(segments)
    ring = np.stack([np.cos(a), np.zeros_like(a), -np.sin(a)], axis=1)
    y = np.array([0.0, height / 2, 0.0])
    slant = np.hypot(radius, height)
    n = ring * (height / slant) + np.array([0.0, radius / slant, 0.0])
    # Apex normals: the side normal half-way between a segment's two base vertices.
    mid = _angles(segments) + np.pi / segments
    n_mid = np.stack([np.cos(mid) * height, np.full_like(mid, radius), -np.sin(mid) * height], 1)
    n_mid /= slant
    base = ring * radius - y
    verts = np.concatenate([np.hstack([base, n]), np.hstack([np.tile(y, (segments, 1)), n_mid])])
    i = np.arange(segments)
    tris = np.stack([i, (i + 1) % segments, segments + i], axis=1)
    side = MeshData(verts.astype(np.float32), tris.reshape(-1).astype(np.uint32))
    return _merge([side, _cap(base, up=False)])


def pyramid(height: float = 1.0) -> MeshData:
    """A square pyramid: base ``[-0.5, 0.5]^2`` at ``y = -height/2``, apex at ``+height/2``;
    flat-shaded (a hip roof on a unit box)."""
    y0, y1 = -height / 2, height / 2
    corners = np.array([[-0.5, y0, 0.5], [0.5, y0, 0.5], [0.5, y0, -0.5], [-0.5, y0, -0.5]])
    apex = np.array([0.0, y1, 0.0])
    tris = [(corners[k], corners[(k + 1) % 4], apex) for k in range(4)]
    tris += [(corners[0], corners[3], corners[2]), (corners[0], corners[2], corners[1])]
    pos = np.array(tris, np.float64).reshape(-1, 3)
    return MeshData(*_flat(pos))


def icosphere(subdivisions: int = 2, radius: float = 0.5) -> MeshData:
    """A geodesic sphere: an icosahedron whose triangles are split in four ``subdivisions``
    times, vertices pushed to the sphere (20 · 4^s triangles). Normals are exact radial.

    Raises ValueError for subdivisions outside 0..6.
    """
    if not 0 <= subdivisions <= 6:
        raise ValueError(f"subdivisions must be 0..6, got {subdivisions}")
    t = (1.0 + 5**0.5) / 2.0
    pos = np.array(
        [[-1, t, 0], [1, t, 0], [-1, -t, 0], [1, -t, 0], [0, -1, t], [0, 1, t],
         [0, -1, -t], [0, 1, -t], [t, 0, -1], [t, 0, 1], [-t, 0, -1], [-t, 0, 1]],
        np.float64,
    )  # fmt: skip
    tris = np.array(
        [[0, 11, 5], [0, 5, 1], [0, 1, 7], [0, 7, 10], [0, 10, 11], [1, 5, 9], [5, 11, 4],
         [11, 10, 2], [10, 7, 6], [7, 1, 8], [3, 9, 4], [3, 4, 2], [3, 2, 6], [3, 6, 8],
         [3, 8, 9], [4, 9, 5], [2, 4, 11], [6, 2, 10], [8, 6, 7], [9, 8, 1]],
        np.int64,
    )  # fmt: skip
    pos /= np.linalg.norm(pos, axis=1, keepdims=True)
    for _ in range(subdivisions):
        pos, tris = _subdivide(pos, tris)
    n = pos / np.linalg.norm(pos, axis=1, keepdims=True)
    verts = np.hstack([n * radius, n]).astype(np.float32)
    return MeshData(verts, tris.reshape(-1).astype(np.uint32))


# -- levels of detail -------------------------------------------------------------------------

CYLINDER_LOD_SEGMENTS = (24, 12, 6)
CONE_LOD_SEGMENTS = (24, 12, 6)
SPHERE_LOD_SUBDIVISIONS = (3, 2, 1, 0)


def cylinder_lods() -> list[MeshData]:
    """Cylinders with 24, 12 and 6 segments (finest first)."""
    return [cylinder(s) for s in CYLINDER_LOD_SEGMENTS]


def cone_lods() -> list[MeshData]:
    """Cones with 24, 12 and 6 segments (finest first)."""
    return [cone(s) for s in CONE_LOD_SEGMENTS]


def sphere_lods() -> list[MeshData]:
    """Icospheres with 3, 2, 1 and 0 subdivisions: 1280, 320, 80, 20 triangles."""
    return [icosphere(s) for s in SPHERE_LOD_SUBDIVISIONS]


# -- normals, used by the glTF loader too -----------------------------------------------------


def flat_normals(positions: np.ndarray, indices: np.ndarray) -> MeshData:
    """Unweld an indexed triangle list and give every corner its face normal (what the glTF
    2.0 specification requires when a primitive has no NORMAL).

    Args:
        positions: ``(N, 3)`` float.
        indices: ``(M,)`` integer, ``M % 3 == 0``, each ``< N``.
    Returns: MeshData with ``M`` vertices and indices ``0..M-1``. Degenerate triangles get
    the normal ``(0, 1, 0)``.
    """
    pos = np.asarray(positions, np.float64)[np.asarray(indices, np.int64)]
    return MeshData(*_flat(pos))


# -- internals --------------------------------------------------------------------------------


def _angles(segments: int) -> np.ndarray:
    if segments < 3:
        raise ValueError(f"segments must be >= 3, got {segments}")
    return np.arange(segments) * (2.0 * np.pi / segments)


def _side(bottom: np.ndarray, top: np.ndarray, n_bottom: np.ndarray, n_top: np.ndarray):
    """Quads between two rings of K points (CCW seen from +Y) with per-vertex normals."""
    k = len(bottom)
    verts = np.concatenate([np.hstack([bottom, n_bottom]), np.hstack([top, n_top])])
    i = np.arange(k)
    j = (i + 1) % k
    tris = np.stack([i, j, k + j, i, k + j, k + i], axis=1).reshape(-1)
    return MeshData(verts.astype(np.float32), tris.astype(np.uint32))


def _cap(ring: np.ndarray, *, up: bool) -> MeshData:
    """A flat fan over a ring (CCW seen from +Y); faces +Y if ``up`` else -Y."""
    k = len(ring)
    n = np.array([0.0, 1.0 if up else -1.0, 0.0])
    center = ring.mean(axis=0)
    verts = np.hstack([np.vstack([center, ring]), np.tile(n, (k + 1, 1))])
    i = np.arange(k)
    tris = np.stack([np.zeros(k, np.int64), 1 + i, 1 + (i + 1) % k], axis=1)
    if not up:
        tris = tris[:, ::-1]
    return MeshData(verts.astype(np.float32), tris.reshape(-1).astype(np.uint32))


def _flat(pos: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per-corner positions ``(3T, 3)`` → (vertices with face normals, indices)."""
    tri = pos.reshape(-1, 3, 3)
    n = np.cross(tri[:, 1] - tri[:, 0], tri[:, 2] - tri[:, 0])
    length = np.linalg.norm(n, axis=1, keepdims=True)
    n = np.where(length > 0, n / np.where(length > 0, length, 1.0), (0.0, 1.0, 0.0))
    verts = np.hstack([pos, np.repeat(n, 3, axis=0)]).astype(np.float32)
    return verts, np.arange(len(pos), dtype=np.uint32)


def _merge(parts: list[MeshData]) -> MeshData:
    verts, idx, base = [], [], 0
    for p in parts:
        verts.append(p.vertices)
        idx.append(p.indices.astype(np.int64) + base)
        base += len(p.vertices)
    return MeshData(np.concatenate(verts), np.concatenate(idx).astype(np.uint32))


def _subdivide(pos: np.ndarray, tris: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Split each triangle into four through its edge midpoints (shared, on the sphere)."""
    edges = np.concatenate([tris[:, [0, 1]], tris[:, [1, 2]], tris[:, [2, 0]]])
    key = np.sort(edges, axis=1)
    unique, inverse = np.unique(key, axis=0, return_inverse=True)
    mid = pos[unique[:, 0]] + pos[unique[:, 1]]
    mid /= np.linalg.norm(mid, axis=1, keepdims=True)
    m = inverse.reshape(3, -1) + len(pos)  # midpoint index of edges 01, 12, 20
    a, b, c = tris.T
    new = np.stack(
        [np.stack([a, m[0], m[2]], 1), np.stack([b, m[1], m[0]], 1),
         np.stack([c, m[2], m[1]], 1), np.stack([m[0], m[1], m[2]], 1)],
        axis=1,
    ).reshape(-1, 3)  # fmt: skip
    return np.vstack([pos, mid]), new
