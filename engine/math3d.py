"""Camera and transform math (numpy, float32, column vectors: ``clip = P @ V @ M @ p``).

Matrices are ``(4, 4)`` float32 in the usual mathematical layout; upload ``m.T`` (or use
``to_gpu``) because WGSL ``mat4x4f`` is column-major. View space is right-handed, looking
down -Z. Projections are reverse-Z with an infinite far plane: NDC depth is ``near / -z``,
1.0 at the near plane and 0.0 at infinity (depth cleared to 0, compare ``greater``).
"""

from __future__ import annotations

import math

import numpy as np


def perspective_reverse_z(fov_y_deg: float, aspect: float, near: float) -> np.ndarray:
    """Infinite reverse-Z perspective; ``fov_y_deg`` in degrees, ``aspect`` = width/height."""
    f = 1.0 / math.tan(math.radians(fov_y_deg) / 2.0)
    return np.array(
        [[f / aspect, 0, 0, 0], [0, f, 0, 0], [0, 0, 0, near], [0, 0, -1, 0]], np.float32
    )


def orthographic(half_w: float, half_h: float, near: float, far: float) -> np.ndarray:
    """Reverse-Z orthographic projection: depth 1.0 at ``near``, 0.0 at ``far`` (view -Z)."""
    return np.array(
        [
            [1 / half_w, 0, 0, 0],
            [0, 1 / half_h, 0, 0],
            [0, 0, 1 / (far - near), far / (far - near)],
            [0, 0, 0, 1],
        ],
        np.float32,
    )


def floats3(v) -> list[float]:
    """Three numbers (an array or a sequence) as Python floats (the per-frame math's input).

    Raises:
        ValueError: ``v`` does not hold exactly three numbers.
    """
    return np.asarray(v, np.float64).reshape(3).tolist()


def look_at(eye, target, up=(0.0, 1.0, 0.0)) -> np.ndarray:
    """World-to-view ``(4, 4)`` float32 for a camera at ``eye`` looking at ``target`` (each
    three numbers); float64 arithmetic on plain floats: it runs every frame, and a dozen
    numpy calls on 3-vectors cost several times the arithmetic.

    Raises:
        ValueError: ``eye`` and ``target`` coincide or are not finite; ``up`` is zero.
    """
    ex, ey, ez = floats3(eye)
    tx, ty, tz = floats3(target)
    fx, fy, fz = tx - ex, ty - ey, tz - ez
    n = math.sqrt(fx * fx + fy * fy + fz * fz)
    if not (n > 0.0 and math.isfinite(n)):
        raise ValueError(f"look_at: eye {eye} and target {target} must be distinct finite points")
    fx, fy, fz = fx / n, fy / n, fz / n
    ux, uy, uz = floats3(up)
    if abs(fx * ux + fy * uy + fz * uz) > 0.999:  # looking straight up or down: another up
        ux, uy, uz = 0.0, 0.0, 1.0
    sx, sy, sz = fy * uz - fz * uy, fz * ux - fx * uz, fx * uy - fy * ux  # side = f x up
    n = math.sqrt(sx * sx + sy * sy + sz * sz)
    if not n > 0.0:
        raise ValueError(f"look_at: up {up} is zero or along the view direction")
    sx, sy, sz = sx / n, sy / n, sz / n
    vx, vy, vz = sy * fz - sz * fy, sz * fx - sx * fz, sx * fy - sy * fx  # true up = s x f
    return np.array(
        [
            [sx, sy, sz, -(sx * ex + sy * ey + sz * ez)],
            [vx, vy, vz, -(vx * ex + vy * ey + vz * ez)],
            [-fx, -fy, -fz, fx * ex + fy * ey + fz * ez],
            [0.0, 0.0, 0.0, 1.0],
        ],
        np.float32,
    )


def inverse4(m) -> list[list[float]]:
    """Inverse of a 4x4 matrix (rows of floats, or an array) as rows of float64 floats, by
    the adjugate from the six 2x2 minors of the top and of the bottom two rows (Laplace
    expansion). Plain floats: numpy's ``inv`` costs several times this on a cold per-frame
    path, and agrees with it to a few ulps.

    Raises:
        numpy.linalg.LinAlgError: for a singular (or non-finite) matrix.
    """
    (a00, a01, a02, a03), (a10, a11, a12, a13), (a20, a21, a22, a23), (a30, a31, a32, a33) = (
        np.asarray(m, np.float64).tolist()
    )
    s0, s1, s2 = a00 * a11 - a10 * a01, a00 * a12 - a10 * a02, a00 * a13 - a10 * a03
    s3, s4, s5 = a01 * a12 - a11 * a02, a01 * a13 - a11 * a03, a02 * a13 - a12 * a03
    c5, c4, c3 = a22 * a33 - a32 * a23, a21 * a33 - a31 * a23, a21 * a32 - a31 * a22
    c2, c1, c0 = a20 * a33 - a30 * a23, a20 * a32 - a30 * a22, a20 * a31 - a30 * a21
    det = s0 * c5 - s1 * c4 + s2 * c3 + s3 * c2 - s4 * c1 + s5 * c0
    if not (det != 0.0 and math.isfinite(det)):
        raise np.linalg.LinAlgError(f"singular 4x4 matrix (determinant {det})")
    k = 1.0 / det
    return [
        [
            (a11 * c5 - a12 * c4 + a13 * c3) * k,
            (-a01 * c5 + a02 * c4 - a03 * c3) * k,
            (a31 * s5 - a32 * s4 + a33 * s3) * k,
            (-a21 * s5 + a22 * s4 - a23 * s3) * k,
        ],
        [
            (-a10 * c5 + a12 * c2 - a13 * c1) * k,
            (a00 * c5 - a02 * c2 + a03 * c1) * k,
            (-a30 * s5 + a32 * s2 - a33 * s1) * k,
            (a20 * s5 - a22 * s2 + a23 * s1) * k,
        ],
        [
            (a10 * c4 - a11 * c2 + a13 * c0) * k,
            (-a00 * c4 + a01 * c2 - a03 * c0) * k,
            (a30 * s4 - a31 * s2 + a33 * s0) * k,
            (-a20 * s4 + a21 * s2 - a23 * s0) * k,
        ],
        [
            (-a10 * c3 + a11 * c1 - a12 * c0) * k,
            (a00 * c3 - a01 * c1 + a02 * c0) * k,
            (-a30 * s3 + a31 * s1 - a32 * s0) * k,
            (a20 * s3 - a21 * s1 + a22 * s0) * k,
        ],
    ]


def translation(x: float, y: float, z: float) -> np.ndarray:
    m = np.identity(4, np.float32)
    m[:3, 3] = (x, y, z)
    return m


def column_major(m) -> list[float]:
    """A 4x4 matrix's 16 numbers in WGSL's column-major order, rounded to float32 (for
    ``struct.pack`` into a uniform)."""
    return np.asarray(m, np.float32).ravel(order="F").tolist()


def to_gpu(m: np.ndarray) -> bytes:
    """Bytes of ``m`` in WGSL's column-major layout."""
    return np.ascontiguousarray(m.T, np.float32).tobytes()


def oct_encode(n) -> np.ndarray:
    """Octahedral encoding of unit vectors (Cigolle et al. 2014, JCGT 3(2)): ``(..., 3)``
    float -> ``(..., 2)`` float64 in [-1, 1] (``shaders/frame_common.wgsl`` ``oct_encode``)."""
    n = np.asarray(n, np.float64)
    p = n[..., :2] / np.abs(n).sum(axis=-1, keepdims=True)
    sign = np.where(p >= 0.0, 1.0, -1.0)
    folded = (1.0 - np.abs(p[..., ::-1])) * sign
    return np.where(n[..., 2:3] >= 0.0, p, folded)


def oct_decode(e) -> np.ndarray:
    """Unit vectors from their octahedral encoding: ``(..., 2)`` -> ``(..., 3)`` float64."""
    e = np.asarray(e, np.float64)
    z = 1.0 - np.abs(e).sum(axis=-1, keepdims=True)
    sign = np.where(e >= 0.0, 1.0, -1.0)
    xy = np.where(z >= 0.0, e, (1.0 - np.abs(e[..., ::-1])) * sign)
    v = np.concatenate([xy, z], axis=-1)
    return v / np.linalg.norm(v, axis=-1, keepdims=True)
