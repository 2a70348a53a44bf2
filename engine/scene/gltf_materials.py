"""glTF 2.0 materials, textures, samplers and images (spec sections 3.8 and 3.9, 5.19-5.29),
``KHR_texture_transform`` and ``KHR_materials_emissive_strength``, read from the glTF JSON
(already type-checked by the loader) into ``engine.materials.model`` objects.

Every value outside the spec (a factor outside 0..1, an unknown ``alphaMode``, a sampler enum
the spec does not list, an index out of range, a ``texCoord`` other than 0 or 1) is a
``SceneError`` naming the field; images are decoded in parallel through Pillow
(``engine.materials.images``), and a missing, truncated or unreadable one is a SceneError too.
"""

from __future__ import annotations

import base64
import logging
import math
import re
from collections.abc import Callable
from pathlib import Path
from urllib.parse import unquote

from engine.materials.images import ImageError, decode_all
from engine.materials.model import (
    MAG_FILTERS,
    MIN_FILTERS,
    WRAPS,
    AlphaMode,
    Image,
    Material,
    Sampler,
    TextureRef,
    TextureSlot,
    TextureTransform,
)

log = logging.getLogger("lantern")

TEXTURE_TRANSFORM = "KHR_texture_transform"
EMISSIVE_STRENGTH = "KHR_materials_emissive_strength"
ENUM_NAMES = {
    9728: "NEAREST",
    9729: "LINEAR",
    9984: "NEAREST_MIPMAP_NEAREST",
    9985: "LINEAR_MIPMAP_NEAREST",
    9986: "NEAREST_MIPMAP_LINEAR",
    9987: "LINEAR_MIPMAP_LINEAR",
    10497: "REPEAT",
    33071: "CLAMP_TO_EDGE",
    33648: "MIRRORED_REPEAT",
}

_TRANSFORM = {
    "offset": ("number", 2),
    "rotation": "number",
    "scale": ("number", 2),
    "texCoord": "id",
}
_TEXTURE_INFO = {"index": "id", "texCoord": "id", "extensions": {TEXTURE_TRANSFORM: _TRANSFORM}}
#: The material fields the loader reads, with their JSON types (the loader's schema format).
SCHEMA = {
    "materials": [
        {
            "name": "string",
            "pbrMetallicRoughness": {
                "baseColorFactor": ("number", 4),
                "baseColorTexture": _TEXTURE_INFO,
                "metallicFactor": "number",
                "roughnessFactor": "number",
                "metallicRoughnessTexture": _TEXTURE_INFO,
            },
            "normalTexture": {**_TEXTURE_INFO, "scale": "number"},
            "occlusionTexture": {**_TEXTURE_INFO, "strength": "number"},
            "emissiveTexture": _TEXTURE_INFO,
            "emissiveFactor": ("number", 3),
            "alphaMode": "string",
            "alphaCutoff": "number",
            "doubleSided": "boolean",
            "extensions": {EMISSIVE_STRENGTH: {"emissiveStrength": "number"}},
        }
    ],
    "textures": [{"sampler": "id", "source": "id"}],
    "images": [{"uri": "string", "mimeType": "string", "bufferView": "id", "name": "string"}],
    "samplers": [{"magFilter": "id", "minFilter": "id", "wrapS": "id", "wrapT": "id"}],
}

_SLOTS = (
    (TextureSlot.BASE_COLOR, ("pbrMetallicRoughness", "baseColorTexture")),
    (TextureSlot.METALLIC_ROUGHNESS, ("pbrMetallicRoughness", "metallicRoughnessTexture")),
    (TextureSlot.NORMAL, ("normalTexture",)),
    (TextureSlot.OCCLUSION, ("occlusionTexture",)),
    (TextureSlot.EMISSIVE, ("emissiveTexture",)),
)


class MaterialReader:
    """Reads a glTF document's materials (JSON ``obj``) for the loader.

    Args:
        path: the glTF file (messages, and where relative image URIs are).
        obj: the whole glTF JSON object, type-checked against ``SCHEMA``.
        view_bytes: ``bufferView index -> bytes`` (images stored in the binary buffer).
        fail: ``message -> Exception`` (the loader's SceneError naming the file).

    Attributes:
        images: decoded images, in the order ``Material.textures`` index them (only the
            images some material uses, each once).
    """

    def __init__(self, path: Path, obj: dict, view_bytes: Callable[[int], bytes], fail):
        self.path, self.obj, self.view_bytes, self.fail = path, obj, view_bytes, fail
        self._samplers = [self._sampler(i, s) for i, s in enumerate(obj.get("samplers", []))]
        self._materials: dict[int, Material] = {}
        self._image_index: dict[int, int] = {}  # glTF image -> our image
        self._missing_source: list[int] = []
        self.images: list[Image] = []

    def material(self, index: int) -> Material:
        """glTF material ``index`` (parsed once)."""
        mats = self.obj.get("materials", [])
        if not 0 <= index < len(mats):
            raise self.fail(f"material {index} does not exist ({len(mats)} material(s))")
        if index not in self._materials:
            self._materials[index] = self._material(index, mats[index])
        return self._materials[index]

    def decode_images(self) -> list[Image]:
        """Decode every image the parsed materials use (in parallel); one line per failure."""
        if self._missing_source:
            log.warning(
                "%s: texture(s) %s have no source image Lantern can read; drawn without them",
                self.path,
                ", ".join(map(str, sorted(set(self._missing_source)))),
            )
        order = sorted(self._image_index, key=self._image_index.get)
        sources = [(self._image_name(i), lambda i=i: self._image_bytes(i)) for i in order]
        try:
            self.images = decode_all(sources)
        except ImageError as e:
            raise self.fail(str(e)) from None
        return self.images

    # -- parsing ---------------------------------------------------------------------------
    def _material(self, index: int, m: dict) -> Material:
        where = f"material {index}"
        pbr = m.get("pbrMetallicRoughness", {})
        base = tuple(float(c) for c in pbr.get("baseColorFactor", (1.0, 1.0, 1.0, 1.0)))
        metallic = float(pbr.get("metallicFactor", 1.0))
        roughness = float(pbr.get("roughnessFactor", 1.0))
        emissive = tuple(float(c) for c in m.get("emissiveFactor", (0.0, 0.0, 0.0)))
        for name, values in (
            ("baseColorFactor", base),
            ("metallicFactor", (metallic,)),
            ("roughnessFactor", (roughness,)),
            ("emissiveFactor", emissive),
        ):
            if not all(0.0 <= v <= 1.0 for v in values):  # NaN fails too
                shown = list(values) if len(values) > 1 else values[0]
                what = "is not finite" if not all(map(math.isfinite, values)) else "is outside 0..1"
                raise self.fail(f"{where} {name} {shown} {what} (glTF 2.0: 0..1)")
        mode_name = m.get("alphaMode", "OPAQUE")
        if mode_name not in AlphaMode.__members__:
            raise self.fail(f"{where} alphaMode {mode_name!r} is not OPAQUE, MASK or BLEND")
        cutoff = float(m.get("alphaCutoff", 0.5))
        if not cutoff >= 0.0 or math.isinf(cutoff):
            raise self.fail(f"{where} alphaCutoff {cutoff} must be a finite number >= 0")
        strength = float(
            m.get("extensions", {}).get(EMISSIVE_STRENGTH, {}).get("emissiveStrength", 1.0)
        )
        if not strength >= 0.0 or math.isinf(strength):
            raise self.fail(
                f"{where} {EMISSIVE_STRENGTH} emissiveStrength {strength} must be "
                "a finite number >= 0"
            )
        normal = m.get("normalTexture", {})
        occlusion = m.get("occlusionTexture", {})
        normal_scale = float(normal.get("scale", 1.0))
        occlusion_strength = float(occlusion.get("strength", 1.0))
        if not 0.0 <= occlusion_strength <= 1.0:
            raise self.fail(
                f"{where} occlusionTexture strength {occlusion_strength} is outside 0..1"
            )
        if not math.isfinite(normal_scale):
            raise self.fail(f"{where} normalTexture scale {normal_scale} is not finite")
        textures = {}
        for slot, keys in _SLOTS:
            info = m
            for k in keys:
                info = info.get(k, {})
            if info:
                ref = self._texture_ref(f"{where} {keys[-1]}", info)
                if ref is not None:
                    textures[slot] = ref
        return Material(
            name=m.get("name") or f"material {index}",
            base_color=base,
            metallic=metallic,
            roughness=roughness,
            emissive=emissive,
            emissive_strength=strength,
            normal_scale=normal_scale,
            occlusion_strength=occlusion_strength,
            alpha_mode=AlphaMode[mode_name],
            alpha_cutoff=cutoff,
            double_sided=bool(m.get("doubleSided", False)),
            textures=textures,
        )

    def _texture_ref(self, where: str, info: dict) -> TextureRef | None:
        textures = self.obj.get("textures", [])
        if "index" not in info:
            raise self.fail(f"{where} has no texture index")
        t = info["index"]
        if not 0 <= t < len(textures):
            raise self.fail(f"{where} texture {t} does not exist ({len(textures)} texture(s))")
        tex = textures[t]
        texcoord = info.get("texCoord", 0)
        ext = info.get("extensions", {}).get(TEXTURE_TRANSFORM)
        transform = TextureTransform()
        if ext is not None:
            transform = TextureTransform(
                offset=tuple(float(v) for v in ext.get("offset", (0.0, 0.0))),
                rotation=float(ext.get("rotation", 0.0)),
                scale=tuple(float(v) for v in ext.get("scale", (1.0, 1.0))),
            )
            texcoord = ext.get("texCoord", texcoord)
            if not all(
                map(math.isfinite, (*transform.offset, transform.rotation, *transform.scale))
            ):
                raise self.fail(f"{where} {TEXTURE_TRANSFORM} has a non-finite value")
        if texcoord not in (0, 1):
            raise self.fail(
                f"{where} uses TEXCOORD_{texcoord}; Lantern reads TEXCOORD_0 and TEXCOORD_1 only"
            )
        sampler = Sampler()
        if "sampler" in tex:
            s = tex["sampler"]
            if not 0 <= s < len(self._samplers):
                raise self.fail(
                    f"texture {t} sampler {s} does not exist ({len(self._samplers)} sampler(s))"
                )
            sampler = self._samplers[s]
        if "source" not in tex:
            self._missing_source.append(t)
            return None
        image = self._image(tex["source"], f"texture {t}")
        return TextureRef(image, sampler, int(texcoord), transform)

    def _sampler(self, index: int, s: dict) -> Sampler:
        fields = (
            ("magFilter", MAG_FILTERS, "mag_filter"),
            ("minFilter", MIN_FILTERS, "min_filter"),
            ("wrapS", WRAPS, "wrap_s"),
            ("wrapT", WRAPS, "wrap_t"),
        )
        values = {}
        for key, allowed, attr in fields:
            if key in s:
                if s[key] not in allowed:
                    names = ", ".join(f"{ENUM_NAMES[a]} ({a})" for a in allowed)
                    raise self.fail(f"sampler {index} {key} {s[key]} is not one of {names}")
                values[attr] = s[key]
        return Sampler(**values)

    def _image(self, index: int, where: str) -> int:
        images = self.obj.get("images", [])
        if not 0 <= index < len(images):
            raise self.fail(f"{where} source image {index} does not exist ({len(images)} image(s))")
        if index not in self._image_index:
            self._image_index[index] = len(self._image_index)
        return self._image_index[index]

    def _image_name(self, index: int) -> str:
        img = self.obj["images"][index]
        uri = img.get("uri", "")
        shown = "embedded data" if uri.startswith("data:") else uri
        return f"image {index}" + (f" ({shown})" if shown else "")

    def _image_bytes(self, index: int) -> bytes:
        img = self.obj["images"][index]
        name = self._image_name(index)
        if "bufferView" in img:
            try:
                return self.view_bytes(img["bufferView"])
            except Exception as e:  # the loader's SceneError: said as this image's problem
                raise ImageError(f"{name}: {e}") from None
        uri = img.get("uri")
        if uri is None:
            raise ImageError(f"{name}: has neither a uri nor a bufferView")
        if uri.startswith("data:"):
            try:
                return base64.b64decode(uri.split(",", 1)[1], validate=True)
            except (IndexError, ValueError):
                raise ImageError(f"{name}: data: URI is not valid base64") from None
        if re.match(r"[A-Za-z][A-Za-z0-9+.-]*:", uri) or uri.startswith(("/", "\\")):
            raise ImageError(f"{name}: only data: URIs and paths relative to the file are read")
        file = self.path.parent / unquote(uri)
        if not file.is_file():
            raise ImageError(f"{name}: file not found (looked in {file})")
        try:
            return file.read_bytes()
        except OSError as e:
            raise ImageError(f"{name}: cannot read the file ({e.strerror})") from None
