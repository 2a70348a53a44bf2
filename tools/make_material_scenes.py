"""Write generated glTF 2.0 material test scenes (and build them for the tests).

    python tools/make_material_scenes.py OUT_DIR     # writes OUT_DIR/materials.gltf (+ PNGs)

Each scene is plain glTF JSON with its buffer as a data: URI and its images as PNG files
beside it (or data: URIs), written with Pillow; nothing here is committed as a binary.
``write_scene`` takes quads and spheres with explicit materials, so a test knows every
texel, factor and pose it renders.
"""

from __future__ import annotations

import base64
import io
import json
import sys
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from engine.scene.meshes import MeshData, icosphere  # noqa: E402


def quad(size: float = 1.0) -> MeshData:
    """A square in the XY plane facing +Z, ``size`` on a side, UV (0, 0) at its top left
    (glTF's image origin), u along +X, v along -Y."""
    h = size / 2
    v = np.array(
        [[-h, h, 0, 0, 0, 1], [-h, -h, 0, 0, 0, 1], [h, -h, 0, 0, 0, 1], [h, h, 0, 0, 0, 1]],
        np.float32,
    )
    uv = np.array([[0, 0], [0, 1], [1, 1], [1, 0]], np.float32)
    return MeshData(v, np.array([0, 1, 2, 0, 2, 3], np.uint32), uv0=uv, uv1=uv.copy())


def sphere(subdivisions: int = 4, radius: float = 1.0) -> MeshData:
    """An icosphere with equirectangular UVs (unused by factor-only materials)."""
    m = icosphere(subdivisions, radius)
    n = m.vertices[:, 3:6]
    uv = np.stack([np.arctan2(n[:, 2], n[:, 0]) / (2 * np.pi) + 0.5, np.arccos(n[:, 1]) / np.pi])
    return MeshData(m.vertices, m.indices, uv0=uv.T.astype(np.float32))


def png(rgba: np.ndarray) -> bytes:
    """PNG bytes of an ``(h, w, 4)`` uint8 (or ``(h, w, 3)``) image."""
    from PIL import Image

    buf = io.BytesIO()
    Image.fromarray(np.asarray(rgba, np.uint8)).save(buf, format="PNG")
    return buf.getvalue()


@dataclass
class Item:
    """One node: ``mesh`` placed by ``translation`` / ``rotation`` (x, y, z, w) / ``scale``,
    drawn with ``material`` (a glTF material dict whose texture indices refer to the scene's
    ``textures`` list)."""

    mesh: MeshData
    material: dict = field(default_factory=dict)
    translation: tuple = (0.0, 0.0, 0.0)
    rotation: tuple | None = None
    scale: tuple | None = None


def build_gltf(
    items: list[Item],
    images: list[bytes],
    textures: list[dict] | None = None,
    samplers: list[dict] | None = None,
    extensions: tuple = (),
) -> dict:
    """The glTF JSON (dict) of ``items``; ``images`` PNG bytes as data: URIs; ``textures``
    default to one per image with sampler 0 when ``samplers`` is given."""
    blob = bytearray()
    doc: dict = {
        "asset": {"version": "2.0", "generator": "lantern make_material_scenes"},
        "scene": 0,
        "scenes": [{"nodes": list(range(len(items)))}],
        "nodes": [],
        "meshes": [],
        "materials": [],
        "accessors": [],
        "bufferViews": [],
    }

    def add(arr: np.ndarray, kind: str, component: int, target: int | None) -> int:
        while len(blob) % 4:
            blob.append(0)
        view = {"buffer": 0, "byteOffset": len(blob), "byteLength": arr.nbytes}
        if target:
            view["target"] = target
        blob.extend(arr.tobytes())
        doc["bufferViews"].append(view)
        acc = {
            "bufferView": len(doc["bufferViews"]) - 1,
            "componentType": component,
            "count": len(arr),
            "type": kind,
        }
        if kind == "VEC3" and component == 5126:
            acc["min"], acc["max"] = arr.min(0).tolist(), arr.max(0).tolist()
        doc["accessors"].append(acc)
        return len(doc["accessors"]) - 1

    for i, it in enumerate(items):
        m = it.mesh
        attrs = {
            "POSITION": add(np.ascontiguousarray(m.vertices[:, :3]), "VEC3", 5126, 34962),
            "NORMAL": add(np.ascontiguousarray(m.vertices[:, 3:6]), "VEC3", 5126, 34962),
        }
        if m.uv0 is not None:
            attrs["TEXCOORD_0"] = add(np.ascontiguousarray(m.uv0, np.float32), "VEC2", 5126, 34962)
        if m.uv1 is not None:
            attrs["TEXCOORD_1"] = add(np.ascontiguousarray(m.uv1, np.float32), "VEC2", 5126, 34962)
        if m.tangents is not None:
            attrs["TANGENT"] = add(
                np.ascontiguousarray(m.tangents, np.float32), "VEC4", 5126, 34962
            )
        idx = add(m.indices.astype(np.uint32), "SCALAR", 5125, 34963)
        doc["materials"].append(it.material)
        doc["meshes"].append({"primitives": [{"attributes": attrs, "indices": idx, "material": i}]})
        node = {"mesh": i, "translation": list(it.translation)}
        if it.rotation is not None:
            node["rotation"] = list(it.rotation)
        if it.scale is not None:
            node["scale"] = list(it.scale)
        doc["nodes"].append(node)
    doc["buffers"] = [
        {
            "byteLength": len(blob),
            "uri": "data:application/octet-stream;base64," + base64.b64encode(bytes(blob)).decode(),
        }
    ]
    if images:
        doc["images"] = [
            {"uri": "data:image/png;base64," + base64.b64encode(b).decode()} for b in images
        ]
        doc["textures"] = textures or [
            {"source": i, **({"sampler": 0} if samplers else {})} for i in range(len(images))
        ]
    if samplers:
        doc["samplers"] = samplers
    if extensions:
        doc["extensionsUsed"] = list(extensions)
    return doc


def write(doc: dict, path: Path) -> Path:
    path = Path(path)
    path.write_text(json.dumps(doc))
    return path


def checker(size: int = 64, cells: int = 4) -> np.ndarray:
    """An RGBA checkerboard: red and blue cells (sRGB 200, 40, 40 / 40, 40, 200), a green
    top-left texel row marker, alpha 255."""
    y, x = np.mgrid[0:size, 0:size] * cells // size
    odd = (x + y) % 2 == 1
    img = np.zeros((size, size, 4), np.uint8)
    img[...] = (200, 40, 40, 255)
    img[odd] = (40, 40, 200, 255)
    return img


def showcase() -> dict:
    """A row of spheres and quads: metallic x roughness ramp, a textured, a normal-mapped, an
    emissive, a MASK and a BLEND quad (the README's material picture)."""
    items = []
    for i, metallic in enumerate((0.0, 1.0)):
        for j, rough in enumerate((0.15, 0.4, 0.7, 1.0)):
            items.append(
                Item(
                    sphere(3, 0.45),
                    {
                        "pbrMetallicRoughness": {
                            "baseColorFactor": [0.9, 0.45, 0.2, 1.0],
                            "metallicFactor": metallic,
                            "roughnessFactor": rough,
                        }
                    },
                    translation=(j * 1.1 - 1.65, 1.7 - i * 1.1, 0.0),
                )
            )
    bumps = np.zeros((64, 64, 4), np.uint8)
    yy, xx = np.mgrid[0:64, 0:64] / 64.0 * 2 * np.pi * 4
    n = np.stack([-0.5 * np.cos(xx), -0.5 * np.cos(yy) * 0, np.ones_like(xx)], -1)
    n /= np.linalg.norm(n, axis=-1, keepdims=True)
    bumps[..., :3] = ((n * 0.5 + 0.5) * 255).astype(np.uint8)
    bumps[..., 3] = 255
    leaf = checker(64, 8)
    yy, xx = np.mgrid[0:64, 0:64]
    leaf[..., 3] = np.where(((xx - 32) ** 2 + (yy - 32) ** 2) < 26**2, 255, 0)
    glass = np.full((8, 8, 4), (120, 190, 255, 110), np.uint8)
    images = [png(checker()), png(bumps), png(leaf), png(glass)]
    q = quad(0.9)
    specs = [
        {"pbrMetallicRoughness": {"baseColorTexture": {"index": 0}, "metallicFactor": 0.0}},
        {
            "pbrMetallicRoughness": {
                "baseColorFactor": [0.8, 0.8, 0.8, 1],
                "metallicFactor": 0.0,
                "roughnessFactor": 0.35,
            },
            "normalTexture": {"index": 1},
        },
        {
            "pbrMetallicRoughness": {
                "baseColorFactor": [0.05, 0.05, 0.05, 1],
                "metallicFactor": 0.0,
            },
            "emissiveFactor": [1.0, 0.6, 0.2],
            "extensions": {"KHR_materials_emissive_strength": {"emissiveStrength": 2.0}},
        },
        {
            "pbrMetallicRoughness": {"baseColorTexture": {"index": 2}, "metallicFactor": 0.0},
            "alphaMode": "MASK",
            "alphaCutoff": 0.5,
            "doubleSided": True,
        },
        {
            "pbrMetallicRoughness": {
                "baseColorTexture": {"index": 3},
                "metallicFactor": 0.0,
                "roughnessFactor": 0.05,
            },
            "alphaMode": "BLEND",
        },
    ]
    for k, spec in enumerate(specs):
        items.append(Item(q, spec, translation=(k * 1.0 - 2.0, -0.6, 0.3)))
    items.append(
        Item(
            quad(6.0),
            {
                "pbrMetallicRoughness": {
                    "baseColorFactor": [0.5, 0.5, 0.5, 1],
                    "metallicFactor": 0.0,
                }
            },
            translation=(0.0, 0.0, -0.8),
        )
    )
    return build_gltf(items, images, extensions=("KHR_materials_emissive_strength",))


def main() -> None:
    out = Path(sys.argv[1] if len(sys.argv) > 1 else ".")
    out.mkdir(parents=True, exist_ok=True)
    path = write(showcase(), out / "materials.gltf")
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
