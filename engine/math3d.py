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


def _cross(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``np.cross`` of two (3,) vectors, same arithmetic, without its axis handling (which
    made it most of a frame's camera set-up)."""
    a0, a1, a2 = a.tolist()
    b0, b1, b2 = b.tolist()
    return np.array([a1 * b2 - a2 * b1, a2 * b0 - a0 * b2, a0 * b1 - a1 * b0])


def look_at(eye, target, up=(0.0, 1.0, 0.0)) -> np.ndarray:
    """World-to-view matrix for a camera at ``eye`` looking at ``target``."""
    eye, target, up = (np.asarray(v, np.float64) for v in (eye, target, up))
    f = target - eye
    f /= np.linalg.norm(f)
    if abs(np.dot(f, up)) > 0.999:  # looking straight up or down: pick another up
        up = np.array([0.0, 0.0, 1.0])
    s = _cross(f, up)
    s /= np.linalg.norm(s)
    u = _cross(s, f)
    m = np.identity(4)
    m[0, :3], m[1, :3], m[2, :3] = s, u, -f
    m[:3, 3] = -m[:3, :3] @ eye
    return m.astype(np.float32)


def rotation_y(angle: float) -> np.ndarray:
    c, s = math.cos(angle), math.sin(angle)
    return np.array([[c, 0, s, 0], [0, 1, 0, 0], [-s, 0, c, 0], [0, 0, 0, 1]], np.float32)


def translation(x: float, y: float, z: float) -> np.ndarray:
    m = np.identity(4, np.float32)
    m[:3, 3] = (x, y, z)
    return m


def to_gpu(m: np.ndarray) -> bytes:
    """Bytes of ``m`` in WGSL's column-major layout."""
    return np.ascontiguousarray(m.T, np.float32).tobytes()
