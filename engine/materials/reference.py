"""Numpy twins of shaders/brdf.wgsl (tests check rendered pixels against them).

Arrays broadcast: colours ``(..., 3)``, unit vectors ``(..., 3)``, scalars ``(...)``.
"""

from __future__ import annotations

import numpy as np

from engine.materials.ambient import sh9


def _dot(a, b):
    return (np.asarray(a) * np.asarray(b)).sum(-1)


def brdf(base, metallic, roughness, n, v, light):
    """glTF 2.0 Appendix B: GGX D, height-correlated Smith V, Schlick Fresnel mix
    (shaders/brdf.wgsl ``brdf``); per steradian, ``(..., 3)``."""
    base = np.asarray(base, np.float64)
    metallic = np.asarray(metallic, np.float64)[..., None]
    h = np.asarray(light) + np.asarray(v)
    h = h / np.linalg.norm(h, axis=-1, keepdims=True)
    ndl = np.clip(_dot(n, light), 0.0, 1.0)
    ndv = np.clip(_dot(n, v), 1e-4, 1.0)
    ndh = np.clip(_dot(n, h), 0.0, 1.0)
    vdh = np.clip(_dot(v, h), 0.0, 1.0)
    a = np.asarray(roughness, np.float64) ** 2
    a2 = np.maximum(a * a, 1e-8)
    d = ndh * ndh * (a2 - 1.0) + 1.0
    dist = a2 / (np.pi * d * d)
    s = ndl * np.sqrt(ndv * ndv * (1 - a2) + a2) + ndv * np.sqrt(ndl * ndl * (1 - a2) + a2)
    vis = np.where(s > 0, 0.5 / np.where(s > 0, s, 1.0), 0.0)
    spec = (vis * dist)[..., None]
    fw = ((1.0 - vdh) ** 5)[..., None]
    metal = spec * (base + (1.0 - base) * fw)
    dielectric = base / np.pi + (spec - base / np.pi) * (0.04 + 0.96 * fw)
    return dielectric + (metal - dielectric) * metallic


def sh_eval(sh, d, w):
    """``sum_l w_l sum_m L_lm Y_lm(d)``: ``sh`` ``(9, 3)``, ``w`` band weights ``(..., 3)``."""
    band = np.repeat(np.asarray(w, np.float64), (1, 3, 5), axis=-1)
    return (sh9(np.asarray(d, np.float64)) * band) @ np.asarray(sh, np.float64)


def env_brdf(f0, roughness, ndv):
    """Karis 2014's fitted split-sum environment BRDF (shaders/brdf.wgsl ``env_brdf``)."""
    r = np.asarray(roughness, np.float64)[..., None] * np.array([-1.0, -0.0275, -0.572, 0.022])
    r = r + np.array([1.0, 0.0425, 1.04, -0.04])
    a004 = np.minimum(r[..., 0] ** 2, np.exp2(-9.28 * np.asarray(ndv))) * r[..., 0] + r[..., 1]
    scale = -1.04 * a004 + r[..., 2]
    bias = 1.04 * a004 + r[..., 3]
    return np.asarray(f0) * scale[..., None] + bias[..., None]


def ambient(sh, base, metallic, roughness, n, v):
    """The sky's light (shaders/brdf.wgsl ``ambient``), ``(..., 3)``."""
    base = np.asarray(base, np.float64)
    metallic = np.asarray(metallic, np.float64)
    ndv = np.clip(_dot(n, v), 1e-4, 1.0)
    a = np.asarray(roughness, np.float64) ** 2
    s = np.maximum(2.0 / np.maximum(a * a, 1e-8) - 2.0, 1e-4)
    r = 2.0 * _dot(n, v)[..., None] * n - v
    w = np.stack(np.broadcast_arrays(1.0, np.exp(-0.5 / s), np.exp(-2.0 / s)), -1)
    spec = sh_eval(sh, r, w)
    diffuse = sh_eval(sh, n, (1.0, 2.0 / 3.0, 0.25))
    f0 = 0.04 + (base - 0.04) * metallic[..., None]
    return base * (1.0 - metallic[..., None]) * diffuse + env_brdf(f0, roughness, ndv) * spec


def shade(sh, sun_dir, sun_color, base, metallic, roughness, n, v, *, occlusion=1.0,
          emissive=0.0, visibility=1.0):  # fmt: skip
    """Outgoing radiance without fog (shaders/mesh.wgsl ``shade``): sun irradiance
    ``pi * sun_color`` through the BRDF, plus ambient x occlusion, plus emissive."""
    light = np.broadcast_to(np.asarray(sun_dir, np.float64), np.shape(n))
    ndl = np.maximum(_dot(n, light), 0.0)[..., None]
    direct = brdf(base, metallic, roughness, n, v, light) * np.pi * np.asarray(sun_color) * ndl
    amb = ambient(sh, base, metallic, roughness, n, v)
    return direct * visibility + amb * occlusion + emissive
