"""The procedural city's materials and their textures, generated at start-up with numpy
(about 20 ms; nothing is stored in the repository).

Facades, bricks, asphalt, paving and foliage are textured in world units (``Material.world_uv``:
the city's boxes are scaled per instance, so their own UVs would stretch); a building's
colour tints its facade texture. Foliage crowns are MASK cut-outs (double-sided: the holes
show the inside), penthouses glass (BLEND), lamp heads emissive, posts metal.
"""

from __future__ import annotations

import numpy as np

from engine.materials.model import (
    AlphaMode,
    Image,
    Material,
    Sampler,
    TextureRef,
    TextureSlot,
)

# Material ids, in ``city_materials()`` order.
(ASPHALT, PAVING, FACADE, BRICK, ROOF, BARK, FOLIAGE, LAMP, GLASS, METAL) = range(10)
SIZE = 128  # texels per side of every generated texture


def _rng(seed: int) -> np.random.Generator:
    return np.random.default_rng(seed)


def _rgba(rgb: np.ndarray, alpha: np.ndarray | None = None) -> np.ndarray:
    out = np.empty((*rgb.shape[:2], 4), np.uint8)
    out[..., :3] = np.clip(rgb * 255.0, 0, 255)
    out[..., 3] = 255 if alpha is None else np.clip(alpha * 255.0, 0, 255)
    return out


def _smooth_noise(rng, size: int, cells: int) -> np.ndarray:
    """Tileable value noise in 0..1 (bilinear over a ``cells`` grid that wraps)."""
    g = rng.random((cells, cells))
    t = np.arange(size) * cells / size
    i = t.astype(int)
    f = t - i
    f = f * f * (3 - 2 * f)
    j = (i + 1) % cells
    rows = g[i][:, i] * (1 - f)[None, :] + g[i][:, j] * f[None, :]
    rows2 = g[j][:, i] * (1 - f)[None, :] + g[j][:, j] * f[None, :]
    return rows * (1 - f)[:, None] + rows2 * f[:, None]


def _normals_from_height(h: np.ndarray, strength: float) -> np.ndarray:
    """A tangent-space normal map (RGBA8; +Y is image up) of a tileable height field."""
    dx = (np.roll(h, -1, 1) - np.roll(h, 1, 1)) * strength
    dy = (np.roll(h, 1, 0) - np.roll(h, -1, 0)) * strength  # image up = decreasing row
    n = np.stack([-dx, -dy, np.ones_like(h)], -1)
    n /= np.linalg.norm(n, axis=-1, keepdims=True)
    return _rgba(n * 0.5 + 0.5)


def _facade() -> tuple[np.ndarray, np.ndarray]:
    """One bay of one floor (3.5 m): white wall around a dark window; metallic-roughness
    (glass smooth, wall rough)."""
    y, x = (np.mgrid[0:SIZE, 0:SIZE] + 0.5) / SIZE
    window = (np.abs(x - 0.5) < 0.3) & (y > 0.22) & (y < 0.78)
    frame = (np.abs(x - 0.5) < 0.34) & (y > 0.18) & (y < 0.82) & ~window
    noise = _smooth_noise(_rng(1), SIZE, 16)
    rgb = np.ones((SIZE, SIZE, 3)) * (0.85 + 0.15 * noise)[..., None]
    rgb[frame] = 0.35
    sky = 0.10 + 0.12 * (1 - y)[..., None] * np.array([0.6, 0.8, 1.0])
    rgb[window] = sky[window]
    mr = np.zeros((SIZE, SIZE, 3))
    mr[..., 1] = np.where(window, 0.08, 0.85)  # roughness (G)
    mr[..., 2] = np.where(frame, 0.6, 0.0)  # metallic (B): aluminium frames
    return _rgba(rgb), _rgba(mr)


def _bricks() -> tuple[np.ndarray, np.ndarray]:
    """Running-bond bricks (8 courses per tile) with recessed mortar: colour and normals."""
    y, x = (np.mgrid[0:SIZE, 0:SIZE] + 0.5) / SIZE
    course = np.floor(y * 8)
    bx = (x * 4 + 0.5 * (course % 2)) % 1.0
    by = (y * 8) % 1.0
    mortar = (bx < 0.06) | (by < 0.12)
    rng = _rng(2)
    shade = rng.uniform(0.8, 1.15, (8, 8))[course.astype(int), np.floor(x * 4).astype(int) % 8]
    noise = _smooth_noise(rng, SIZE, 32)
    rgb = np.where(mortar[..., None], [0.75, 0.73, 0.7], np.ones(3) * shade[..., None])
    rgb = rgb * (0.9 + 0.2 * noise)[..., None]
    height = np.where(mortar, 0.0, 1.0) + 0.1 * noise
    return _rgba(rgb), _normals_from_height(height, 1.5)


def _asphalt(light: bool) -> np.ndarray:
    rng = _rng(3 + light)
    n = 0.6 * _smooth_noise(rng, SIZE, 64) + 0.4 * rng.random((SIZE, SIZE))
    rgb = (0.85 + 0.3 * n)[..., None] * np.ones(3)
    if light:  # 1 m paving slabs
        y, x = (np.mgrid[0:SIZE, 0:SIZE] + 0.5) / SIZE
        joint = ((x * 2) % 1.0 < 0.04) | ((y * 2) % 1.0 < 0.04)
        rgb[joint] *= 0.6
    return _rgba(rgb)


def _leaves() -> np.ndarray:
    """Leaf clusters: alpha 1 inside random discs, 0 between (MASK cut-outs)."""
    rng = _rng(5)
    y, x = np.mgrid[0:SIZE, 0:SIZE] + 0.5
    alpha = np.zeros((SIZE, SIZE))
    shade = np.ones((SIZE, SIZE))
    for cx, cy, r, s in zip(*rng.random((4, 60)), strict=True):
        dx = (x - cx * SIZE + SIZE / 2) % SIZE - SIZE / 2
        dy = (y - cy * SIZE + SIZE / 2) % SIZE - SIZE / 2
        disc = dx * dx + dy * dy < (6 + 10 * r) ** 2
        alpha[disc] = 1.0
        shade[disc] = 0.7 + 0.5 * s
    return _rgba(shade[..., None] * np.ones(3), alpha)


def city_materials() -> tuple[list[Material], list[Image]]:
    """The city's materials (ids ``ASPHALT`` .. ``METAL``) and the images they sample."""
    facade, facade_mr = _facade()
    brick, brick_n = _bricks()
    images = [Image("city asphalt", _asphalt(False)), Image("city paving", _asphalt(True)),
              Image("city facade", facade), Image("city facade mr", facade_mr),
              Image("city brick", brick), Image("city brick normal", brick_n),
              Image("city leaves", _leaves())]  # fmt: skip
    trilinear = Sampler()

    def tex(i: int) -> TextureRef:
        return TextureRef(i, trilinear)

    base, mr, normal = TextureSlot.BASE_COLOR, TextureSlot.METALLIC_ROUGHNESS, TextureSlot.NORMAL
    materials = [
        Material("asphalt", metallic=0.0, roughness=0.9, textures={base: tex(0)}, world_uv=0.25,
                 casts_shadows=False),  # the ground slab: under everything, shadows nothing
        Material("paving", metallic=0.0, roughness=0.8, textures={base: tex(1)}, world_uv=0.5),
        Material("facade", metallic=1.0, roughness=1.0, textures={base: tex(2), mr: tex(3)},
                 world_uv=1 / 3.5),
        Material("brick", metallic=0.0, roughness=0.85, textures={base: tex(4), normal: tex(5)},
                 world_uv=1 / 2.4),
        Material("roof", metallic=0.0, roughness=0.75),
        Material("bark", metallic=0.0, roughness=0.9),
        Material("foliage", metallic=0.0, roughness=0.7, alpha_mode=AlphaMode.MASK,
                 alpha_cutoff=0.5, double_sided=True, textures={base: tex(6)}, world_uv=1 / 1.6),
        Material("lamp", metallic=0.0, roughness=0.5, emissive=(1.0, 0.85, 0.45),
                 emissive_strength=3.0),
        Material("glass", base_color=(0.55, 0.7, 0.8, 0.35), metallic=0.0, roughness=0.05,
                 alpha_mode=AlphaMode.BLEND),
        Material("metal", metallic=1.0, roughness=0.4),
    ]  # fmt: skip
    return materials, images
