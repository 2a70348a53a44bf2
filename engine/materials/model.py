"""The glTF 2.0 metallic-roughness material model on the CPU: materials, texture references,
samplers and images, independent of any file format or GPU object.

Units and conventions follow the glTF 2.0 specification (section 3.9 "Materials"): colour
factors are linear, base colour and emissive textures are sRGB-encoded, metallic-roughness,
normal and occlusion textures are linear; roughness is perceptual (GGX alpha = roughness²).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from enum import IntEnum

import numpy as np

# glTF 2.0 sampler enums (section 5.26 "Sampler"; the values are OpenGL's).
NEAREST, LINEAR = 9728, 9729
NEAREST_MIPMAP_NEAREST, LINEAR_MIPMAP_NEAREST = 9984, 9985
NEAREST_MIPMAP_LINEAR, LINEAR_MIPMAP_LINEAR = 9986, 9987
REPEAT, CLAMP_TO_EDGE, MIRRORED_REPEAT = 10497, 33071, 33648
MAG_FILTERS = (NEAREST, LINEAR)
MIN_FILTERS = (
    NEAREST,
    LINEAR,
    NEAREST_MIPMAP_NEAREST,
    LINEAR_MIPMAP_NEAREST,
    NEAREST_MIPMAP_LINEAR,
    LINEAR_MIPMAP_LINEAR,
)
WRAPS = (REPEAT, CLAMP_TO_EDGE, MIRRORED_REPEAT)


class AlphaMode(IntEnum):
    """glTF ``alphaMode``: opaque, alpha-tested at ``alpha_cutoff``, or alpha-blended."""

    OPAQUE = 0
    MASK = 1
    BLEND = 2


class TextureSlot(IntEnum):
    """The five textures of a material, in the order the GPU table stores them."""

    BASE_COLOR = 0
    METALLIC_ROUGHNESS = 1
    NORMAL = 2
    OCCLUSION = 3
    EMISSIVE = 4


#: Slots whose texels are sRGB-encoded colour (sampled through an ``-srgb`` format).
SRGB_SLOTS = frozenset({TextureSlot.BASE_COLOR, TextureSlot.EMISSIVE})


@dataclass(frozen=True)
class Sampler:
    """A glTF sampler (defaults: the spec's, linear and repeat; ``min_filter`` None means
    "implementation-defined", which Lantern takes as trilinear).

    Raises ValueError for a value the spec does not list (naming the field).
    """

    mag_filter: int = LINEAR
    min_filter: int = LINEAR_MIPMAP_LINEAR
    wrap_s: int = REPEAT
    wrap_t: int = REPEAT

    def __post_init__(self):
        for name, allowed in (
            ("mag_filter", MAG_FILTERS),
            ("min_filter", MIN_FILTERS),
            ("wrap_s", WRAPS),
            ("wrap_t", WRAPS),
        ):
            if getattr(self, name) not in allowed:
                raise ValueError(f"{name} {getattr(self, name)!r} is not one of {list(allowed)}")

    @property
    def mipmaps(self) -> int:
        """0: no mipmaps (base level only), 1: nearest mip, 2: linear between mips."""
        if self.min_filter in (NEAREST, LINEAR):
            return 0
        return 2 if self.min_filter in (NEAREST_MIPMAP_LINEAR, LINEAR_MIPMAP_LINEAR) else 1

    @property
    def min_linear(self) -> bool:
        return self.min_filter in (LINEAR, LINEAR_MIPMAP_NEAREST, LINEAR_MIPMAP_LINEAR)

    @property
    def mag_linear(self) -> bool:
        return self.mag_filter == LINEAR


@dataclass(frozen=True)
class TextureTransform:
    """``KHR_texture_transform``: ``uv' = T(offset) R(rotation) S(scale) uv`` where rotation
    is counter-clockwise in UV space, in radians (the extension's README, "Overview")."""

    offset: tuple[float, float] = (0.0, 0.0)
    rotation: float = 0.0
    scale: tuple[float, float] = (1.0, 1.0)

    def matrix(self) -> np.ndarray:
        """``(2, 3)`` float64 ``[[a, b, tx], [c, d, ty]]``: ``uv' = M @ (u, v, 1)``, the
        extension's own matrix product ``translation @ rotation @ scale``."""
        c, s = math.cos(self.rotation), math.sin(self.rotation)
        sx, sy = self.scale
        return np.array(
            [[c * sx, s * sy, self.offset[0]], [-s * sx, c * sy, self.offset[1]]], np.float64
        )

    def apply(self, uv: np.ndarray) -> np.ndarray:
        """``uv`` ``(..., 2)`` transformed (float64)."""
        m = self.matrix()
        uv = np.asarray(uv, np.float64)
        return uv @ m[:, :2].T + m[:, 2]


IDENTITY_TRANSFORM = TextureTransform()


@dataclass(frozen=True)
class TextureRef:
    """A material's use of a texture (glTF ``textureInfo``).

    Attributes:
        image: index into the scene's ``images``.
        sampler: its sampler (wrap and filter modes).
        texcoord: which UV set, 0 or 1.
        transform: ``KHR_texture_transform`` (identity without it); its ``texCoord``
            override is already folded into ``texcoord``.
    """

    image: int
    sampler: Sampler = Sampler()
    texcoord: int = 0
    transform: TextureTransform = IDENTITY_TRANSFORM


@dataclass(frozen=True)
class Material:
    """One glTF 2.0 metallic-roughness material (defaults: the spec's).

    Attributes:
        name: for logs, views and the memory table.
        base_color: linear RGBA factor; ``metallic``, ``roughness``: factors in 0..1.
        emissive: linear RGB factor; ``emissive_strength``: ``KHR_materials_emissive_strength``.
        normal_scale: the normal texture's ``scale``; ``occlusion_strength``: its strength.
        alpha_mode, alpha_cutoff: ``alphaMode`` and ``alphaCutoff`` (MASK only).
        double_sided: back faces drawn, their normal flipped.
        textures: ``{TextureSlot: TextureRef}`` of the textures it uses.
        world_uv: Lantern's own (not glTF): when > 0, texture coordinates are world position
            in metres times this, projected along the normal's dominant axis (the procedural
            city's facades, whose boxes are scaled per instance).
        casts_shadows: Lantern's own (not glTF; Unity's "Cast Shadows", Bevy's
            ``NotShadowCaster``): False keeps its instances out of every shadow cascade (the
            cull counts them as culled there), for surfaces nothing lies below, such as a
            ground slab: the map then loses the fill of a surface that shadows nothing.
    """

    name: str = "default"
    base_color: tuple[float, float, float, float] = (1.0, 1.0, 1.0, 1.0)
    metallic: float = 1.0
    roughness: float = 1.0
    emissive: tuple[float, float, float] = (0.0, 0.0, 0.0)
    emissive_strength: float = 1.0
    normal_scale: float = 1.0
    occlusion_strength: float = 1.0
    alpha_mode: AlphaMode = AlphaMode.OPAQUE
    alpha_cutoff: float = 0.5
    double_sided: bool = False
    textures: dict[TextureSlot, TextureRef] = field(default_factory=dict)
    world_uv: float = 0.0
    casts_shadows: bool = True

    def __hash__(self) -> int:
        return id(self)

    @property
    def pipeline_class(self) -> int:
        """Which pipeline draws it: ``alpha_mode * 2 + double_sided`` (0..5)."""
        return int(self.alpha_mode) * 2 + int(self.double_sided)


#: What an instance without a material is drawn with: the glTF spec's default material
#: (section 3.9.6) with the dielectric metallic 0 that an untextured scene expects.
DEFAULT_MATERIAL = Material(name="default", metallic=0.0, roughness=0.6)

PIPELINE_CLASSES = 6  # (alpha mode, double-sided) pairs
CLASS_NAMES = tuple(f"{m.name}{' 2-sided' if d else ''}" for m in AlphaMode for d in (0, 1))


@dataclass
class Image:
    """Decoded texels of one glTF image.

    Attributes:
        name: the URI or ``image N`` (for messages and the memory table).
        rgba: ``(height, width, 4)`` uint8, as stored in the file (sRGB or linear is decided by
            the texture slot that samples it).
    """

    name: str
    rgba: np.ndarray

    @property
    def size(self) -> tuple[int, int]:
        """``(width, height)`` in texels."""
        return int(self.rgba.shape[1]), int(self.rgba.shape[0])
