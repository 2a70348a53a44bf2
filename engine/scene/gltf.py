"""glTF 2.0 loading (``.gltf`` with embedded or external buffers, and ``.glb``) into a Scene.

The node hierarchy of the default scene is walked parent→child composing each node's matrix or
translation·rotation·scale (glTF 2.0 specification, section 5.25 "Node"); every triangle
primitive (mode 4; triangle strips and fans, modes 5 and 6, are converted to triangle lists)
of a node's mesh becomes one instance with the node's world matrix, the primitive's mesh data
and its material. Materials are the complete metallic-roughness model (section 3.9) with
``KHR_texture_transform`` and ``KHR_materials_emissive_strength``
(``engine.scene.gltf_materials``); images are decoded through Pillow. Primitives without
NORMAL get flat normals (as the specification requires); zero-length normals are recomputed
from the faces around the vertex, with one warning; without indices, indices are generated.
TEXCOORD_0, TEXCOORD_1 and TANGENT are read; a normal-mapped primitive without TANGENT gets
per-vertex tangents from its UVs (``engine.scene.meshes.generate_tangents``). Point and spot
lights of ``KHR_lights_punctual`` become the scene's lights (``engine.scene.gltf_lights``).
Skins, morph targets, cameras and directional lights are ignored.

Types: a field the loader reads with the wrong JSON type is a SceneError. A wrong type in a
core glTF field it does not read (a scene's ``name``, a camera's ``yfov``) makes the asset
invalid (the Khronos glTF-Validator reports TYPE_MISMATCH as an error), but changes nothing
Lantern draws: it is named in one warning and the file is loaded.

Every problem with the file is a :class:`SceneError` whose one-line message names the file and
the problem. Extensions listed in ``extensionsRequired`` that Lantern does not implement are
refused by name; those only in ``extensionsUsed`` are named in one warning and ignored (a
material's base layer is drawn without them).
"""

from __future__ import annotations

import argparse
import base64
import json
import logging
import math
import re
import struct
import warnings
from dataclasses import replace
from pathlib import Path
from urllib.parse import unquote

import numpy as np

from engine.lights.model import SPOT, LightSet
from engine.materials.model import DEFAULT_MATERIAL, TextureSlot
from engine.scene.camera import CameraPath, OrbitPath
from engine.scene.gltf_lights import LIGHTS_PUNCTUAL, LightReader
from engine.scene.gltf_materials import EMISSIVE_STRENGTH, TEXTURE_TRANSFORM, MaterialReader
from engine.scene.gltf_materials import SCHEMA as MATERIAL_SCHEMA
from engine.scene.meshes import MeshData, flat_normals, generate_tangents
from engine.scene.scene import Mesh, Scene
from engine.textfile import UTF8_BOM, utf8_problem, wide_text

log = logging.getLogger("lantern")

COMPONENT_DTYPES = {
    5120: np.int8,
    5121: np.uint8,
    5122: np.int16,
    5123: np.uint16,
    5125: np.uint32,
    5126: np.float32,
}
TYPE_SIZES = {"SCALAR": 1, "VEC2": 2, "VEC3": 3, "VEC4": 4, "MAT2": 4, "MAT3": 9, "MAT4": 16}
TRIANGLES, TRIANGLE_STRIP, TRIANGLE_FAN = 4, 5, 6
FLOAT32_MAX = float(np.finfo(np.float32).max)


class SceneError(ValueError):
    """A scene file cannot be used; the message names the file and the problem."""


def load_gltf(path: str) -> Scene:
    """Load the default scene of a glTF 2.0 file as instances.

    Args:
        path: a ``.gltf`` (JSON; buffers as ``data:`` URIs or files beside it) or ``.glb``.
    Returns:
        A :class:`Scene` in the file's units (glTF: metres, +Y up), one instance per triangle
        primitive per node, colours = base colour factors (linear RGBA).
    Raises:
        SceneError: missing or unreadable file, another format (OBJ, 3DS, glTF 1.0, ...),
            malformed JSON or glb, a field of the wrong JSON type, an extension in
            ``extensionsRequired`` that is not implemented, a missing buffer, an
            accessor outside its buffer, indices out of range, non-finite positions or node
            matrices, a node cycle, or no triangle primitive at all.
    """
    p = Path(path)
    if not p.exists():
        raise SceneError(f"{path}: file not found")
    doc, obj = _parse(p)
    try:
        with np.errstate(invalid="ignore", over="ignore"):  # non-finite results are checked
            return _Loader(p, doc, obj).scene()  # and named; numpy's warnings would come first
    except SceneError:
        raise
    except RecursionError:
        raise SceneError(f"{path}: node hierarchy too deep to load") from None
    except MemoryError:
        raise SceneError(f"{path}: an accessor is too large to load (count too big?)") from None
    except (TypeError, AttributeError, IndexError, KeyError, ValueError) as e:
        raise SceneError(f"{path}: malformed glTF ({type(e).__name__}: {e})") from None


def scene_file_type(path: str) -> Scene:
    """argparse ``type=`` for ``--scene``: the loaded scene; a ``SceneError`` becomes the
    option's one-line error (the file is checked before any GPU work)."""
    try:
        return load_gltf(path)
    except SceneError as e:
        raise argparse.ArgumentTypeError(str(e)) from None


def repeat_grid(scene: Scene, copies: int) -> Scene:
    """``copies`` copies of ``scene`` side by side on a square XZ grid, centred on the
    original's centre, spaced 1.25× its larger horizontal size.

    Returns a new Scene with ``scene.count * copies`` instances (copy-major order: rows
    ``k * scene.count ...`` are copy ``k``) and its lights copied likewise, sharing
    ``scene.meshes``.
    Raises ValueError for ``copies`` < 1.
    """
    if int(copies) != copies or copies < 1:
        raise ValueError(f"copies must be an integer >= 1, got {copies!r}")
    lo, hi = scene.extent
    spacing = max(float(max(hi[0] - lo[0], hi[2] - lo[2])) * 1.25, 1e-3)
    side = math.ceil(math.sqrt(copies))
    k = np.arange(copies)
    offsets = np.zeros((copies, 3), np.float32)
    offsets[:, 0] = (k % side - (side - 1) / 2) * spacing
    offsets[:, 2] = (k // side - (side - 1) / 2) * spacing
    transforms = np.tile(scene.transforms, (copies, 1, 1))
    transforms[:, :3, 3] += np.repeat(offsets, scene.count, axis=0)
    lights = LightSet()
    src = scene.lights
    if src.count:
        n = src.count
        kinds = np.where(src.kind == SPOT, "spot", "point")
        lights.add(
            np.repeat(offsets, n, axis=0) + np.tile(src.position, (copies, 1)),
            kind=np.tile(kinds, copies),
            color=np.tile(src.color, (copies, 1)),
            intensity=np.tile(src.intensity, copies),
            range=np.tile(src.range, copies),
            direction=np.tile(src.direction, (copies, 1)),
            inner_cone=np.tile(src.inner, copies),
            outer_cone=np.tile(src.outer, copies),
        )
    return Scene(
        scene.meshes,
        transforms,
        np.tile(scene.mesh_ids, copies),
        np.tile(scene.colors, (copies, 1)),
        sun_direction=scene.sun_direction,
        materials=scene.materials,
        material_ids=np.tile(scene.material_ids, copies),
        images=scene.images,
        lights=lights,
    )


def default_camera(scene: Scene, aspect: float = 1.0) -> CameraPath:
    """An orbit around the centre of ``scene.extent`` that keeps the whole extent in view at
    every point of the orbit for any output of width / height >= ``aspect`` (25° above the
    horizon, 24 s per turn, 50° vertical field of view).

    The extent's bounding sphere (radius = half its diagonal) is kept inside the view cone of
    the narrower field of view: distance = radius / sin(half of min(vertical, horizontal
    fov)); the frustum holds that cone, and the cone holds the sphere, so every corner of the
    extent projects inside NDC [-1, 1]. Raises ValueError for ``aspect`` <= 0.
    """
    if not aspect > 0:
        raise ValueError(f"aspect must be > 0, got {aspect!r}")
    lo, hi = scene.extent
    center = (lo + hi) / 2.0
    radius = max(float(np.linalg.norm(hi - lo)) / 2.0, 1e-3)
    fov = 50.0
    half_y = math.radians(fov) / 2.0
    half = min(half_y, math.atan(aspect * math.tan(half_y)))
    distance = radius / math.sin(half)
    return OrbitPath(center, distance, fov_y_deg=fov, near=max(distance * 1e-3, 1e-3))


# -- parsing --------------------------------------------------------------------------------


SUPPORTED = "Lantern loads glTF 2.0 (.gltf or .glb); convert it, e.g. in Blender (glTF 2.0 export)"
# Extensions this loader implements; one listed in ``extensionsRequired`` and not here is an
# error (glTF 2.0 section 3.12: a loader must refuse what it cannot honour).
IMPLEMENTED_EXTENSIONS: frozenset[str] = frozenset(
    {TEXTURE_TRANSFORM, EMISSIVE_STRENGTH, LIGHTS_PUNCTUAL}
)
OTHER_FORMATS = {
    ".obj": "Wavefront OBJ",
    ".mtl": "Wavefront material",
    ".3ds": "3D Studio",
    ".fbx": "FBX",
    ".stl": "STL",
    ".ply": "PLY",
    ".dae": "COLLADA",
    ".blend": "Blender",
    ".usd": "USD",
    ".usda": "USD",
    ".usdc": "USD",
    ".usdz": "USD",
    ".x3d": "X3D",
    ".wrl": "VRML",
}
GLB_MAGIC, GLB_JSON, GLB_BIN = b"glTF", 0x4E4F534A, 0x004E4942
DRACO = "KHR_draco_mesh_compression"

# The fields the loader reads, with their JSON types (glTF 2.0 JSON schema, simplified):
# a dict is an object ("*": any key), a one-item list an array of that, "id" a non-negative
# integer, ("number", n) an array of n numbers, "object" any object. Only these fields reach
# pygltflib (``_prune``): a wrong type elsewhere (``"cameras": "x"``) cannot crash its parser.
_SCHEMA = {
    "asset": {"version": "string", "minVersion": "string"},
    "scene": "id",
    "scenes": [{"nodes": ["id"]}],
    "nodes": [
        {
            "mesh": "id",
            "children": ["id"],
            "matrix": ("number", 16),
            "translation": ("number", 3),
            "rotation": ("number", 4),
            "scale": ("number", 3),
        }
    ],
    "meshes": [
        {
            "name": "string",
            "primitives": [
                {"attributes": {"*": "id"}, "indices": "id", "material": "id", "mode": "id"}
            ],
        }
    ],
    "accessors": [
        {
            "bufferView": "id",
            "byteOffset": "id",
            "componentType": "id",
            "count": "id",
            "type": "string",
            "normalized": "boolean",
            "sparse": "object",  # refused by the loader, so it must see it
        }
    ],
    "bufferViews": [{"buffer": "id", "byteOffset": "id", "byteLength": "id", "byteStride": "id"}],
    "buffers": [{"uri": "string", "byteLength": "id"}],
    **MATERIAL_SCHEMA,
    "extensionsUsed": ["string"],
    "extensionsRequired": ["string"],
}

# What pygltflib parses: materials, textures, images and samplers are read from the checked
# JSON itself (engine.scene.gltf_materials); pygltflib's dataclass decoding of them took most
# of the load time of a scene with 256 materials.
_PYGLTFLIB_SCHEMA = {k: v for k, v in _SCHEMA.items() if k not in MATERIAL_SCHEMA}

# Every core glTF 2.0 property's JSON type, for the one warning about fields the loader does
# not read (glTF 2.0 JSON schema; "extras" may hold anything and is not listed).
_TEXTURE_INFO = {"index": "id", "texCoord": "id", "extensions": "object"}
_NAMED = {"name": "string", "extensions": "object"}
_FULL_SCHEMA = {
    "asset": {"copyright": "string", "generator": "string", "version": "string",
              "minVersion": "string", "extensions": "object"},
    "scene": "id",
    "scenes": [{**_NAMED, "nodes": ["id"]}],
    "nodes": [{**_NAMED, "camera": "id", "children": ["id"], "skin": "id",
               "matrix": ("number", 16), "mesh": "id", "rotation": ("number", 4),
               "scale": ("number", 3), "translation": ("number", 3), "weights": ["number"]}],
    "meshes": [{**_NAMED, "weights": ["number"], "primitives": [
        {"attributes": {"*": "id"}, "indices": "id", "material": "id", "mode": "id",
         "targets": [{"*": "id"}], "extensions": "object"}]}],
    "accessors": [{**_NAMED, "bufferView": "id", "byteOffset": "id", "componentType": "id",
                   "normalized": "boolean", "count": "id", "type": "string",
                   "max": ["number"], "min": ["number"], "sparse": "object"}],
    "bufferViews": [{**_NAMED, "buffer": "id", "byteOffset": "id", "byteLength": "id",
                     "byteStride": "id", "target": "id"}],
    "buffers": [{**_NAMED, "uri": "string", "byteLength": "id"}],
    "materials": [{
        **_NAMED,
        "pbrMetallicRoughness": {
            "baseColorFactor": ("number", 4), "baseColorTexture": _TEXTURE_INFO,
            "metallicFactor": "number", "roughnessFactor": "number",
            "metallicRoughnessTexture": _TEXTURE_INFO, "extensions": "object"},
        "normalTexture": {**_TEXTURE_INFO, "scale": "number"},
        "occlusionTexture": {**_TEXTURE_INFO, "strength": "number"},
        "emissiveTexture": _TEXTURE_INFO, "emissiveFactor": ("number", 3),
        "alphaMode": "string", "alphaCutoff": "number", "doubleSided": "boolean"}],
    "textures": [{**_NAMED, "sampler": "id", "source": "id"}],
    "images": [{**_NAMED, "uri": "string", "mimeType": "string", "bufferView": "id"}],
    "samplers": [{**_NAMED, "magFilter": "id", "minFilter": "id", "wrapS": "id", "wrapT": "id"}],
    "cameras": [{**_NAMED, "type": "string",
                 "perspective": {"aspectRatio": "number", "yfov": "number", "zfar": "number",
                                 "znear": "number"},
                 "orthographic": {"xmag": "number", "ymag": "number", "zfar": "number",
                                  "znear": "number"}}],
    "skins": [{**_NAMED, "inverseBindMatrices": "id", "skeleton": "id", "joints": ["id"]}],
    "animations": [{**_NAMED, "channels": [{"sampler": "id", "target": {"node": "id",
                    "path": "string"}}], "samplers": [{"input": "id", "interpolation": "string",
                    "output": "id"}]}],
    "extensionsUsed": ["string"],
    "extensionsRequired": ["string"],
    "extensions": "object",
}  # fmt: skip


def _parse(p: Path):
    """The file as a ``pygltflib.GLTF2`` whose fields the loader reads have their JSON types,
    or a SceneError saying what the file is and what is supported."""
    import pygltflib

    if p.is_dir():
        raise SceneError(f"{p}: is a directory; give a .gltf or .glb file")
    try:
        data = p.read_bytes()
    except OSError as e:
        raise SceneError(f"{p}: cannot read the file ({e.strerror})") from None
    if data[:4] == GLB_MAGIC:
        text, blob = _split_glb(p, data)
    else:
        text, blob = _not_glb(p, data), None
    try:
        obj = json.loads(text)
    except RecursionError:
        raise SceneError(f"{p}: JSON nested too deep to read (thousands of levels)") from None
    except json.JSONDecodeError as e:
        if p.suffix.lower() in OTHER_FORMATS:
            raise SceneError(_other_format(p)) from None
        raise SceneError(
            f"{p}: not valid JSON (line {e.lineno} column {e.colno}: {e.msg}); is it glTF 2.0?"
        ) from None
    _check_version(p, obj)
    _check_types(p, obj, _SCHEMA, "")
    _warn_types(p, obj)
    _check_extensions(p, obj)
    with warnings.catch_warnings():  # its warnings would break the one-line error
        warnings.simplefilter("ignore")
        doc = pygltflib.GLTF2.from_json(json.dumps(_prune(obj, _PYGLTFLIB_SCHEMA)))
    if blob is not None:
        doc.set_binary_blob(blob)
    return doc, obj


def _other_format(p: Path) -> str:
    return f"{p}: {OTHER_FORMATS[p.suffix.lower()]} files are not supported; {SUPPORTED}"


def _not_glb(p: Path, data: bytes) -> str:
    """The text of a file without the binary glTF header, or why it is not glTF."""
    suffix = p.suffix.lower()
    if not data:
        raise SceneError(f"{p}: the file is empty; {SUPPORTED}")
    if suffix in OTHER_FORMATS:
        raise SceneError(_other_format(p))
    if suffix == ".glb":
        raise SceneError(f"{p}: not a binary glTF file (it does not start with 'glTF')")
    problem = utf8_problem(data)  # a UTF-8 byte-order mark is fine: stripped
    if problem is None:
        return data.decode("utf-8-sig")
    json_like = data.removeprefix(UTF8_BOM).lstrip()[:1] == b"{"
    if json_like or wide_text(data) is not None:  # JSON text in another encoding
        raise SceneError(f"{p}: {problem[1]}")
    raise SceneError(f"{p}: binary data that is neither glTF JSON nor .glb; {SUPPORTED}")


def _split_glb(p: Path, data: bytes) -> tuple[str, bytes | None]:
    """JSON text and BIN chunk of a binary glTF (glTF 2.0 section 4.4 "GLB File Format")."""
    if len(data) < 20:
        raise SceneError(f"{p}: truncated .glb ({len(data)} bytes; the header alone is 20)")
    version, length, json_len, json_type = struct.unpack_from("<4I", data, 4)
    if version != 2:
        raise SceneError(f"{p}: binary glTF version {version} is not supported; {SUPPORTED}")
    if length > len(data):
        raise SceneError(f"{p}: truncated .glb (header says {length} bytes, file has {len(data)})")
    if json_type != GLB_JSON or 20 + json_len > length:
        raise SceneError(f"{p}: malformed .glb (the first chunk must be JSON within the file)")
    chunk = data[20 : 20 + json_len]
    chunk = chunk[len(UTF8_BOM) :] if chunk.startswith(UTF8_BOM) else chunk
    problem = utf8_problem(chunk, base=20 + json_len - len(chunk))
    if problem is not None:
        raise SceneError(f"{p}: malformed .glb: its JSON chunk is {problem[1]}")
    text = chunk.decode()
    at = 20 + json_len
    blob = None
    if at + 8 <= length:
        bin_len, bin_type = struct.unpack_from("<2I", data, at)
        if bin_type == GLB_BIN:
            if at + 8 + bin_len > length:
                raise SceneError(f"{p}: truncated .glb (its BIN chunk ends past the file)")
            blob = data[at + 8 : at + 8 + bin_len]
    return text, blob


def _check_version(p: Path, obj) -> None:
    if not isinstance(obj, dict):
        raise SceneError(f"{p}: glTF JSON must be an object, not {_json_type(obj)}; {SUPPORTED}")
    asset = obj.get("asset")
    version = asset.get("version") if isinstance(asset, dict) else None
    if not isinstance(version, str):
        raise SceneError(f"{p}: no asset.version string; not a glTF 2.0 file. {SUPPORTED}")
    if not version.startswith("2."):
        raise SceneError(f"{p}: glTF {version} is not supported; {SUPPORTED}")
    least = asset.get("minVersion")  # glTF 2.0 3.2: a loader refuses a minVersion it lacks
    if isinstance(least, str) and least != "2.0":
        raise SceneError(f"{p}: asset.minVersion {least} asks for more than glTF 2.0, which "
                         "Lantern reads; export it as glTF 2.0")  # fmt: skip


def _check_extensions(p: Path, obj: dict) -> None:
    required = sorted(set(obj.get("extensionsRequired", [])) - IMPLEMENTED_EXTENSIONS)
    if required:
        draco = " (without Draco compression)" if DRACO in required else ""
        raise SceneError(
            f"{p}: requires glTF extension(s) {', '.join(required)}, which Lantern does not "
            f"implement; export the file without them{draco}"
        )
    ignored = sorted(set(obj.get("extensionsUsed", [])) - IMPLEMENTED_EXTENSIONS)
    if ignored:
        log.warning(
            "%s: ignoring glTF extension(s) %s (not implemented; the scene may look different)",
            p, ", ".join(ignored),
        )  # fmt: skip


def _json_type(v) -> str:
    if isinstance(v, bool):
        return "a boolean"
    if isinstance(v, int | float):
        return f"the number {v}"
    if isinstance(v, str):
        return f"the string {json.dumps(v[:24])}"
    if isinstance(v, list):  # the length, or what is not a number: a wrong one is named
        if not all(map(_is_number, v)):
            return "an array holding something other than numbers"
        return f"an array of {len(v)}"
    return {dict: "an object"}.get(type(v), "null")


def _prune(value, spec):
    """``value`` (already type-checked against ``spec``) with only the fields ``spec`` names."""
    if isinstance(spec, dict):
        return {k: _prune(v, spec.get(k, spec.get("*"))) for k, v in value.items()
                if k in spec or "*" in spec}  # fmt: skip
    if isinstance(spec, list):
        return [_prune(v, spec[0]) for v in value]
    return value


def _check_types(p: Path, value, spec, where: str) -> None:
    """Raise a SceneError naming the first field (``nodes[3].translation``) whose JSON type
    differs from ``spec`` (see ``_SCHEMA``); unknown fields are not checked."""
    for message in _type_errors(value, spec, where):
        raise SceneError(f"{p}: {message}")


def _warn_types(p: Path, obj: dict) -> None:
    """One warning naming the first core field of the wrong JSON type that the loader does not
    read (``_FULL_SCHEMA``; those it reads were checked strictly) and how many there are."""
    errors = list(_type_errors(obj, _FULL_SCHEMA, ""))
    if errors:
        more = f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
        log.warning(
            "%s: invalid glTF, ignored: %s%s; Lantern does not read it, so the scene is "
            "drawn as if it were valid", p, errors[0], more,
        )  # fmt: skip


def _is_number(v) -> bool:
    return isinstance(v, int | float) and not isinstance(v, bool)


def _type_errors(value, spec, where: str):
    """Yield ``"<field> must be <type>, not <what it is>"`` for every field of ``value``
    whose JSON type differs from ``spec``, in document order; unknown fields are skipped."""
    expected = None
    if isinstance(spec, dict):
        if not isinstance(value, dict):
            expected = "an object"
        else:
            for key, item in value.items():
                sub = spec.get(key, spec.get("*"))
                if sub is not None:
                    yield from _type_errors(item, sub, f"{where}.{key}" if where else key)
    elif isinstance(spec, list):
        if not isinstance(value, list):
            expected = "an array"
        else:
            for i, item in enumerate(value):
                yield from _type_errors(item, spec[0], f"{where}[{i}]")
    elif isinstance(spec, tuple):
        n = spec[1]
        if not (isinstance(value, list) and len(value) == n and all(map(_is_number, value))):
            expected = f"an array of {n} numbers"
    elif spec == "id":
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            expected = "a non-negative integer"
    elif spec == "number" and not _is_number(value):
        expected = "a number"
    elif spec == "string" and not isinstance(value, str):
        expected = "a string"
    elif spec == "object" and not isinstance(value, dict):
        expected = "an object"
    elif spec == "boolean" and not isinstance(value, bool):
        expected = "a boolean"
    if expected is not None:
        yield f"{where} must be {expected}, not {_json_type(value)}"


class _Loader:
    def __init__(self, path: Path, doc, obj: dict):
        self.path, self.doc = path, doc
        self.reader = MaterialReader(path, obj, self._view_bytes, self.fail)
        self.light_reader = LightReader(path, obj, self.fail)
        self.material_index: dict[int | None, int] = {}  # glTF material (None: none) -> ours
        self.material_ids: list[int] = []
        self.buffers: dict[int, bytes] = {}
        self.meshes: list[Mesh] = []
        self.mesh_index: dict[tuple[int, int, bool], int] = {}  # (mesh, prim, mirrored)
        self.transforms: list[np.ndarray] = []
        self.mesh_ids: list[int] = []
        self.colors: list[tuple[float, ...]] = []

    def fail(self, what: str) -> SceneError:
        return SceneError(f"{self.path}: {what}")

    def scene(self) -> Scene:
        for root in self._roots():
            self._visit(root, np.identity(4), set())
        if not self.transforms:
            raise self.fail("no triangle primitives to render")
        images = self.reader.decode_images()
        self.light_reader.warn()
        order = sorted(self.material_index, key=self.material_index.get)
        materials = [DEFAULT_MATERIAL if m is None else self.reader.material(m) for m in order]
        return Scene(
            self.meshes,
            np.array(self.transforms, np.float32),
            np.array(self.mesh_ids, np.uint32),
            np.array(self.colors, np.float32),
            materials=materials,
            material_ids=np.array(self.material_ids, np.uint32),
            images=images,
            lights=self.light_reader.lights,
        )

    def _roots(self) -> list[int]:
        doc = self.doc
        if doc.scene is not None and not doc.scenes:
            raise self.fail(f"scene {doc.scene} does not exist (the file has no scenes)")
        if doc.scenes:
            index = doc.scene if doc.scene is not None else 0
            if not 0 <= index < len(doc.scenes):
                raise self.fail(f"scene {index} does not exist ({len(doc.scenes)} scene(s))")
            return list(doc.scenes[index].nodes or [])
        children = {c for n in doc.nodes for c in (n.children or [])}
        return [i for i in range(len(doc.nodes)) if i not in children]

    def _visit(self, index: int, parent: np.ndarray, path: set[int]) -> None:
        if not 0 <= index < len(self.doc.nodes):
            raise self.fail(f"node {index} does not exist ({len(self.doc.nodes)} node(s))")
        if index in path:
            raise self.fail(f"node {index} is its own ancestor (cycle in the node hierarchy)")
        node = self.doc.nodes[index]
        world = parent @ self._local(index, node)
        if not np.isfinite(world).all():
            raise self.fail(f"node {index} has a non-finite transform")
        if np.abs(world).max() > FLOAT32_MAX:  # instances are float32: it would become inf
            raise self.fail(f"node {index} has a transform beyond float32 range (|value| > 3.4e38)")
        if node.mesh is not None:
            self._add_mesh(node.mesh, world)
        self.light_reader.visit(index, world)
        for child in node.children or []:
            self._visit(child, world, path | {index})

    def _local(self, index: int, node) -> np.ndarray:
        if node.matrix is not None:
            if len(node.matrix) != 16:
                raise self.fail(f"node {index} matrix has {len(node.matrix)} values, need 16")
            m = np.array(node.matrix, np.float64).reshape(4, 4).T  # column-major in glTF
            if not np.array_equal(m[3], (0.0, 0.0, 0.0, 1.0)):  # glTF 2.0: node matrices are affine
                raise self.fail(f"node {index} matrix is not affine (its last row is "
                                f"{m[3].tolist()}, must be [0, 0, 0, 1])")  # fmt: skip
            return m
        t = np.identity(4)
        if node.translation is not None:
            t[:3, 3] = node.translation
        r = np.identity(4)
        if node.rotation is not None:
            try:
                r[:3, :3] = _quat_to_matrix(np.array(node.rotation, np.float64))
            except ValueError as e:  # NaN, inf, zero or not 4 values: name the node
                raise self.fail(f"node {index} {e}") from None
        s = np.identity(4)
        if node.scale is not None:
            s[[0, 1, 2], [0, 1, 2]] = node.scale
        return t @ r @ s

    def _add_mesh(self, mesh_index: int, world: np.ndarray) -> None:
        if not 0 <= mesh_index < len(self.doc.meshes):
            raise self.fail(f"mesh {mesh_index} does not exist ({len(self.doc.meshes)} mesh(es))")
        mirrored = bool(np.linalg.det(world[:3, :3]) < 0)
        for prim_index, prim in enumerate(self.doc.meshes[mesh_index].primitives):
            mode = TRIANGLES if prim.mode is None else prim.mode
            if mode not in (TRIANGLES, TRIANGLE_STRIP, TRIANGLE_FAN):
                log.warning(
                    "%s: mesh %d primitive %d has mode %d, not triangles (4, 5 or 6); skipped",
                    self.path, mesh_index, prim_index, mode,
                )  # fmt: skip
                continue
            key = (mesh_index, prim_index, mirrored)
            if key not in self.mesh_index:
                self.mesh_index[key] = len(self.meshes)
                self.meshes.append(self._mesh(mesh_index, prim_index, prim, mirrored))
            self.transforms.append(world)
            self.mesh_ids.append(self.mesh_index[key])
            self.colors.append((1.0, 1.0, 1.0, 1.0))  # the material's factor is the colour
            self.material_ids.append(self._material_id(prim.material))

    def _mesh(self, mesh_index: int, prim_index: int, prim, mirrored: bool) -> Mesh:
        where = f"mesh {mesh_index} primitive {prim_index}"
        attrs = prim.attributes
        if attrs.POSITION is None:
            raise self.fail(f"{where} has no POSITION attribute")
        pos = self._accessor(attrs.POSITION, f"{where} POSITION").astype(np.float32)
        if pos.shape[1] != 3:
            raise self.fail(f"{where} POSITION is not VEC3")
        if not np.isfinite(pos).all():
            row = int(np.flatnonzero(~np.isfinite(pos).all(axis=1))[0])
            raise self.fail(f"{where} POSITION {row} is not finite (NaN or inf)")
        if prim.indices is not None:
            idx = self._accessor(prim.indices, f"{where} indices").reshape(-1)
            if idx.dtype.kind != "u":
                raise self.fail(f"{where} indices must be unsigned integers, not {idx.dtype}")
            idx = idx.astype(np.int64)
        else:
            idx = np.arange(len(pos), dtype=np.int64)
        mode = TRIANGLES if prim.mode is None else prim.mode
        if mode != TRIANGLES:
            if len(idx) < 3:
                raise self.fail(f"{where} (mode {mode}) has {len(idx)} indices, fewer than 3")
            idx = triangle_list(idx, mode)
        if len(idx) == 0 or len(idx) % 3:
            raise self.fail(f"{where} has {len(idx)} indices, not a positive multiple of 3")
        if idx.max() >= len(pos):
            raise self.fail(f"{where} index {int(idx.max())} is out of range ({len(pos)} vertices)")
        if attrs.NORMAL is not None:
            normals = self._accessor(attrs.NORMAL, f"{where} NORMAL").astype(np.float32)
            if normals.shape != pos.shape or not np.isfinite(normals).all():
                raise self.fail(f"{where} NORMAL is not finite VEC3 per vertex")
            length = np.linalg.norm(normals, axis=1, keepdims=True)
            normals = normals / np.where(length > 0, length, 1.0)
            zero = np.flatnonzero(length[:, 0] == 0)
            if len(zero):  # glTF requires unit normals; a zero one would light the vertex black
                normals[zero] = vertex_normals(pos, idx)[zero]
                log.warning(
                    "%s: %s NORMAL has %d zero-length vector(s) of %d; recomputed from the "
                    "faces around each vertex", self.path, where, len(zero), len(normals),
                )  # fmt: skip
            data = MeshData(np.hstack([pos, normals]).astype(np.float32), idx.astype(np.uint32))
        else:
            data = flat_normals(pos, idx)
        uvs = [self._vertex_attr(a, f"{where} TEXCOORD_{i}", 2, len(pos))
               for i, a in enumerate((attrs.TEXCOORD_0, attrs.TEXCOORD_1))]  # fmt: skip
        tangents = self._vertex_attr(attrs.TANGENT, f"{where} TANGENT", 4, len(pos))
        if attrs.NORMAL is None:  # unwelded by flat_normals: each corner its own vertex
            uvs = [None if u is None else u[idx] for u in uvs]
            tangents = None if tangents is None else tangents[idx]
        data.uv0, data.uv1, data.tangents = uvs[0], uvs[1], tangents
        material = None if prim.material is None else self.reader.material(prim.material)
        for slot, ref in material.textures.items() if material else ():
            if uvs[ref.texcoord] is None:
                raise self.fail(f"{where}: its material's {slot.name.lower()} texture reads "
                                f"TEXCOORD_{ref.texcoord}, which the primitive lacks")  # fmt: skip
        normal_tex = material.textures.get(TextureSlot.NORMAL) if material else None
        if normal_tex is not None and tangents is None:
            data.tangents = generate_tangents(data, uvs[normal_tex.texcoord])
        if mirrored:  # a negative-determinant transform flips winding: undo it in the mesh
            data = replace(data, indices=data.indices.reshape(-1, 3)[:, ::-1].reshape(-1))
        name = self.doc.meshes[mesh_index].name or f"mesh{mesh_index}"
        return Mesh.from_lods(f"{name}/{prim_index}{'/mirrored' if mirrored else ''}", [data])

    def _vertex_attr(self, accessor: int | None, what: str, n: int, count: int):
        """A per-vertex float attribute ``(count, n)`` float32, or None when absent."""
        if accessor is None:
            return None
        a = self._accessor(accessor, what).astype(np.float32)
        if a.shape != (count, n) or not np.isfinite(a).all():
            raise self.fail(f"{what} is not {count} finite VEC{n} (one per vertex)")
        return a

    def _material_id(self, material_index: int | None) -> int:
        if material_index not in self.material_index:
            if material_index is not None:
                self.reader.material(material_index)  # checked now: errors name it first
            self.material_index[material_index] = len(self.material_index)
        return self.material_index[material_index]

    def _view_bytes(self, index: int) -> bytes:
        """The bytes of bufferView ``index`` (an image stored in a buffer)."""
        views = self.doc.bufferViews
        if not 0 <= index < len(views):
            raise self.fail(f"bufferView {index} does not exist ({len(views)} bufferView(s))")
        view = views[index]
        data = self._buffer(view.buffer)
        start = view.byteOffset or 0
        if start + view.byteLength > len(data):
            raise self.fail(f"bufferView {index} reads past the end of buffer {view.buffer}")
        return data[start : start + view.byteLength]

    def _accessor(self, index: int, what: str) -> np.ndarray:
        """Accessor ``index`` as ``(count, components)``, honouring byteOffset, byteStride and
        ``normalized`` (integers mapped to [0, 1] or [-1, 1])."""
        doc = self.doc
        if not 0 <= index < len(doc.accessors):
            raise self.fail(f"{what}: accessor {index} does not exist")
        acc = doc.accessors[index]
        dtype = COMPONENT_DTYPES.get(acc.componentType)
        ncomp = TYPE_SIZES.get(acc.type)
        if dtype is None or ncomp is None:
            raise self.fail(f"{what}: unknown accessor type {acc.type}/{acc.componentType}")
        if acc.sparse is not None:
            raise self.fail(f"{what}: sparse accessors are not supported")
        dtype = np.dtype(dtype).newbyteorder("<")
        count = int(acc.count)
        if acc.bufferView is None:
            return np.zeros((count, ncomp), dtype)
        if not 0 <= acc.bufferView < len(doc.bufferViews):
            raise self.fail(f"{what}: bufferView {acc.bufferView} does not exist")
        view = doc.bufferViews[acc.bufferView]
        data = self._buffer(view.buffer)
        elem = dtype.itemsize * ncomp
        stride = view.byteStride or elem
        if view.byteStride is not None and not (
            elem <= stride <= 252 and stride % 4 == 0
        ):  # glTF 2.0: 4..252, a multiple of 4, holding one element
            raise self.fail(f"{what}: bufferView {acc.bufferView} byteStride {stride} is not a "
                            f"multiple of 4 in {elem}..252 (its {elem}-byte elements)")  # fmt: skip
        view_start = view.byteOffset or 0
        start = view_start + (acc.byteOffset or 0)
        end = start + stride * (count - 1) + elem if count else start
        if end > view_start + view.byteLength or view_start + view.byteLength > len(data):
            raise self.fail(
                f"{what}: accessor {index} reads bytes {start}..{end} beyond its bufferView "
                f"or buffer {view.buffer} ({len(data)} bytes)"
            )
        arr = np.ndarray((count, ncomp), dtype, data, start, (stride, dtype.itemsize)).copy()
        if acc.normalized and dtype.kind in "iu":
            info = np.iinfo(dtype)
            arr = np.maximum(arr.astype(np.float32) / info.max, -1.0)
        return arr

    def _buffer(self, index: int) -> bytes:
        if index in self.buffers:
            return self.buffers[index]
        if not 0 <= index < len(self.doc.buffers):
            raise self.fail(f"buffer {index} does not exist")
        uri = self.doc.buffers[index].uri
        if uri is None:
            data = self.doc.binary_blob()
            if data is None:
                raise self.fail(f"buffer {index} has no uri and the file has no binary chunk")
        elif uri.startswith("data:"):
            try:
                data = base64.b64decode(uri.split(",", 1)[1], validate=True)
            except (IndexError, ValueError):
                raise self.fail(f"buffer {index} data: URI is not valid base64") from None
        else:
            scheme = re.match(r"[A-Za-z][A-Za-z0-9+.-]*:", uri)
            if scheme is not None:
                raise self.fail(f"buffer {index} uri {uri[:60]!r}: {scheme.group(0)} URIs are "
                                "not read (only data: and paths beside the file)")  # fmt: skip
            if uri.startswith(("/", "\\")):
                raise self.fail(f"buffer {index} uri {uri[:60]!r} is an absolute path; glTF "
                                "buffer URIs are relative to the file")  # fmt: skip
            file = self.path.parent / unquote(uri)
            if not file.is_file():
                raise self.fail(f"buffer {index} file {uri!r} not found (looked in {file})")
            data = file.read_bytes()
        need = self.doc.buffers[index].byteLength or 0
        if len(data) < need:
            raise self.fail(f"buffer {index} has {len(data)} bytes, byteLength says {need}")
        self.buffers[index] = bytes(data)
        return self.buffers[index]


def triangle_list(indices: np.ndarray, mode: int) -> np.ndarray:
    """Triangle-list indices of a strip (mode 5) or fan (mode 6), glTF 2.0 section 3.7.2.1:
    strip triangle i = (v_i, v_{i+1+i%2}, v_{i+2-i%2}), fan triangle i = (v_{i+1}, v_{i+2},
    v_0), so every triangle keeps the winding of the first. Triangles that repeat an index
    (strip restarts by degenerate triangles) are dropped. ``indices``: ``(n,)`` int, n >= 3;
    returns ``(3 * k,)`` of the same dtype."""
    v = np.asarray(indices).reshape(-1)
    i = np.arange(len(v) - 2)
    if mode == TRIANGLE_STRIP:
        tri = np.stack([v[i], v[i + 1 + i % 2], v[i + 2 - i % 2]], axis=1)
    elif mode == TRIANGLE_FAN:
        tri = np.stack([v[i + 1], v[i + 2], np.full_like(i, v[0], dtype=v.dtype)], axis=1)
    else:
        raise ValueError(f"mode {mode} is not a triangle strip (5) or fan (6)")
    keep = (tri[:, 0] != tri[:, 1]) & (tri[:, 1] != tri[:, 2]) & (tri[:, 0] != tri[:, 2])
    return tri[keep].reshape(-1)


def vertex_normals(pos: np.ndarray, indices: np.ndarray) -> np.ndarray:
    """Unit normal per vertex: the area-weighted sum of the normals of the triangles that use
    it (counter-clockwise front faces); ``(0, 1, 0)`` where no triangle of positive area does.
    ``pos``: ``(n, 3)`` float; ``indices``: ``(3 * k,)`` int. Returns ``(n, 3)`` float32."""
    tri = np.asarray(indices, np.int64).reshape(-1, 3)
    p = np.asarray(pos, np.float64)
    face = np.cross(p[tri[:, 1]] - p[tri[:, 0]], p[tri[:, 2]] - p[tri[:, 0]])  # |.| = 2 area
    acc = np.zeros_like(p)
    for k in range(3):
        np.add.at(acc, tri[:, k], face)
    length = np.linalg.norm(acc, axis=1, keepdims=True)
    out = np.where(length > 0, acc / np.where(length > 0, length, 1.0), [0.0, 1.0, 0.0])
    return out.astype(np.float32)


def _quat_to_matrix(q: np.ndarray) -> np.ndarray:
    """Rotation matrix of a glTF unit quaternion ``(x, y, z, w)`` (normalised here)."""
    if q.shape != (4,):
        raise ValueError(f"rotation has {q.size} values, need 4 (x, y, z, w)")
    if not np.isfinite(q).all():
        raise ValueError(f"rotation {q.tolist()} is not finite")
    norm = np.linalg.norm(q)
    if norm == 0:
        raise ValueError("rotation [0, 0, 0, 0] is not a quaternion (a unit one is needed)")
    x, y, z, w = q / norm
    return np.array(
        [
            [1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)],
            [2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)],
            [2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)],
        ]
    )
