"""The sky's ambient light as 9 spherical-harmonic coefficients (bands 0-2).

The sky model (``sky_base`` in shaders/frame_common.wgsl, without the sun's disc and glow,
which the frame lights directly) is projected on the real SH basis by quadrature over the
sphere; the shader evaluates irradiance ``E(n) = sum A_l L_lm Y_lm(n)`` with the cosine
lobe's band factors ``A = (pi, 2 pi / 3, pi / 4)`` (Ramamoorthi & Hanrahan 2001, "An
Efficient Representation for Irradiance Environment Maps") and a prefiltered specular
radiance with GGX's lobe taken as a Phong lobe of exponent ``s = 2 / alpha^2 - 2`` whose band
factors are ``exp(-l^2 / (2 s))`` (Ramamoorthi & Hanrahan 2002, "Frequency Space Environment
Map Rendering", section 5).
"""

from __future__ import annotations

import numpy as np

#: Cosine-lobe convolution factors per band (irradiance = A_l x radiance coefficients).
COSINE_BANDS = (np.pi, 2.0 * np.pi / 3.0, np.pi / 4.0)


def sh9(dirs: np.ndarray) -> np.ndarray:
    """Real SH basis ``(..., 9)`` at unit directions ``(..., 3)``: Y00, Y1-1, Y10, Y11, Y2-2,
    Y2-1, Y20, Y21, Y22 (the order and constants of Ramamoorthi & Hanrahan 2001)."""
    x, y, z = dirs[..., 0], dirs[..., 1], dirs[..., 2]
    return np.stack(
        [
            np.full_like(x, 0.282095),
            0.488603 * y,
            0.488603 * z,
            0.488603 * x,
            1.092548 * x * y,
            1.092548 * y * z,
            0.315392 * (3.0 * z * z - 1.0),
            1.092548 * x * z,
            0.546274 * (x * x - y * y),
        ],
        axis=-1,
    )


def sky_base(dirs: np.ndarray, zenith, horizon, ground) -> np.ndarray:
    """The numpy twin of ``sky_base`` (shaders/frame_common.wgsl): linear radiance
    ``(..., 3)`` of the sky (no sun) at unit directions ``(..., 3)`` (+Y up)."""
    up = np.clip(dirs[..., 1:2], -1.0, 1.0)
    c = horizon + (np.asarray(zenith) - horizon) * np.power(np.maximum(up, 0.0), 0.45)
    below = np.asarray(ground) * 0.6 + np.asarray(horizon) * 0.4
    t = np.clip(up / -0.25, 0.0, 1.0)
    s = t * t * (3.0 - 2.0 * t)  # smoothstep(0, -0.25, up)
    return c + (below - c) * s


def sphere_grid(n: int = 128) -> tuple[np.ndarray, np.ndarray]:
    """Directions ``(2n * n, 3)`` on a latitude-longitude grid and their solid angles (sum
    4 pi): midpoint quadrature in cos(theta) and phi."""
    mu = (np.arange(n) + 0.5) / n * 2.0 - 1.0  # cos(theta) of the polar angle from +Y
    phi = (np.arange(2 * n) + 0.5) / (2 * n) * 2.0 * np.pi
    mu, phi = np.meshgrid(mu, phi, indexing="ij")
    r = np.sqrt(1.0 - mu * mu)
    dirs = np.stack([r * np.cos(phi), mu, r * np.sin(phi)], -1).reshape(-1, 3)
    weight = np.full(len(dirs), 4.0 * np.pi / len(dirs))
    return dirs, weight


def project(radiance, n: int = 128) -> np.ndarray:
    """SH coefficients ``(9, 3)`` of ``radiance(dirs) -> (M, 3)``."""
    dirs, w = sphere_grid(n)
    return np.einsum("mk,mc,m->kc", sh9(dirs), radiance(dirs), w)


def sky_sh(zenith, horizon, ground) -> np.ndarray:
    """The sky's radiance SH coefficients ``(9, 3)`` float64 (no sun)."""
    return project(lambda d: sky_base(d, zenith, horizon, ground))


def irradiance(coeffs: np.ndarray, normals: np.ndarray) -> np.ndarray:
    """Irradiance ``(..., 3)`` at unit ``normals`` ``(..., 3)`` from radiance SH ``(9, 3)``."""
    band = np.repeat(COSINE_BANDS, (1, 3, 5))
    return sh9(normals) @ (coeffs * band[:, None])
