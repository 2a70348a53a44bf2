"""glTF 2.0 loading (``.gltf`` with embedded or external buffers, and ``.glb``) into a Scene.

The node hierarchy of the default scene is walked parent→child composing each node's matrix or
translation·rotation·scale (glTF 2.0 specification, section 5.25 "Node"); every triangle
primitive (mode 4) of a node's mesh becomes one instance with the node's world matrix, the
primitive's mesh data and its material's ``pbrMetallicRoughness.baseColorFactor``. Primitives
without NORMAL get flat normals (as the specification requires); without indices, indices are
generated. Textures, skins, morph targets, cameras and lights are ignored.

Every problem with the file is a :class:`SceneError` whose one-line message names the file and
the problem.
"""

from __future__ import annotations

import argparse
import base64
import logging
import math
import warnings
from pathlib import Path
from urllib.parse import unquote

import numpy as np

from .camera import CameraPath, OrbitPath
from .meshes import MeshData, flat_normals
from .scene import Mesh, Scene

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
TRIANGLES = 4


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
        SceneError: missing or unreadable file, malformed JSON or glb, a missing buffer, an
            accessor outside its buffer, indices out of range, non-finite positions or node
            matrices, a node cycle, or no triangle primitive at all.
    """
    p = Path(path)
    if not p.is_file():
        raise SceneError(f"{path}: file not found")
    doc = _parse(p)
    try:
        return _Loader(p, doc).scene()
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
    ``k * scene.count ...`` are copy ``k``), sharing ``scene.meshes``.
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
    return Scene(
        scene.meshes,
        transforms,
        np.tile(scene.mesh_ids, copies),
        np.tile(scene.colors, (copies, 1)),
        sun_direction=scene.sun_direction,
    )


def default_camera(scene: Scene) -> CameraPath:
    """An orbit around the centre of ``scene.extent`` that keeps the whole extent in view
    (distance = 0.9 × bounding radius / sin(fov/2), 25° above the horizon, 24 s per turn)."""
    lo, hi = scene.extent
    center = (lo + hi) / 2.0
    radius = max(float(np.linalg.norm(hi - lo)) / 2.0, 1e-3)
    fov = 50.0
    distance = radius / math.sin(math.radians(fov) / 2.0) * 0.9  # sphere is loose
    return OrbitPath(center, distance, fov_y_deg=fov, near=max(distance * 1e-3, 1e-3))


# -- parsing --------------------------------------------------------------------------------


def _parse(p: Path):
    import pygltflib

    try:
        with warnings.catch_warnings():  # its warnings would break the one-line error
            warnings.simplefilter("ignore")
            if p.suffix.lower() == ".glb":
                doc = pygltflib.GLTF2.load_binary(str(p))
            else:
                doc = pygltflib.GLTF2.load_json(str(p))
    except UnicodeDecodeError:
        raise SceneError(
            f"{p}: not a glTF JSON file (binary data; use .glb for binary glTF)"
        ) from None
    except Exception as e:  # pygltflib raises json, IO, struct and dataclass errors alike
        raise SceneError(f"{p}: cannot parse glTF ({type(e).__name__}: {e})") from None
    if doc is None:
        raise SceneError(f"{p}: no JSON chunk in the .glb file")
    version = str(getattr(doc.asset, "version", "") or "")
    if not version.startswith("2."):
        raise SceneError(f"{p}: glTF version {version or 'missing'!r} is not 2.x")
    return doc


class _Loader:
    def __init__(self, path: Path, doc):
        self.path, self.doc = path, doc
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
        return Scene(
            self.meshes,
            np.array(self.transforms, np.float32),
            np.array(self.mesh_ids, np.uint32),
            np.array(self.colors, np.float32),
        )

    def _roots(self) -> list[int]:
        doc = self.doc
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
        if node.mesh is not None:
            self._add_mesh(node.mesh, world)
        for child in node.children or []:
            self._visit(child, world, path | {index})

    def _local(self, index: int, node) -> np.ndarray:
        if node.matrix is not None:
            if len(node.matrix) != 16:
                raise self.fail(f"node {index} matrix has {len(node.matrix)} values, need 16")
            return np.array(node.matrix, np.float64).reshape(4, 4).T  # column-major in glTF
        t = np.identity(4)
        if node.translation is not None:
            t[:3, 3] = node.translation
        r = np.identity(4)
        if node.rotation is not None:
            r[:3, :3] = _quat_to_matrix(np.array(node.rotation, np.float64))
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
            if mode != TRIANGLES:
                log.warning(
                    "%s: mesh %d primitive %d has mode %d, not triangles (4); skipped",
                    self.path, mesh_index, prim_index, mode,
                )  # fmt: skip
                continue
            key = (mesh_index, prim_index, mirrored)
            if key not in self.mesh_index:
                self.mesh_index[key] = len(self.meshes)
                self.meshes.append(self._mesh(mesh_index, prim_index, prim, mirrored))
            self.transforms.append(world)
            self.mesh_ids.append(self.mesh_index[key])
            self.colors.append(self._color(prim.material))

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
            data = MeshData(np.hstack([pos, normals]).astype(np.float32), idx.astype(np.uint32))
        else:
            data = flat_normals(pos, idx)
        if mirrored:  # a negative-determinant transform flips winding: undo it in the mesh
            data = MeshData(data.vertices, data.indices.reshape(-1, 3)[:, ::-1].reshape(-1))
        name = self.doc.meshes[mesh_index].name or f"mesh{mesh_index}"
        return Mesh.from_lods(f"{name}/{prim_index}{'/mirrored' if mirrored else ''}", [data])

    def _color(self, material_index: int | None) -> tuple[float, ...]:
        if material_index is None:
            return (1.0, 1.0, 1.0, 1.0)
        if not 0 <= material_index < len(self.doc.materials):
            raise self.fail(f"material {material_index} does not exist")
        pbr = self.doc.materials[material_index].pbrMetallicRoughness
        factor = getattr(pbr, "baseColorFactor", None) if pbr is not None else None
        color = tuple(float(c) for c in (factor or (1.0, 1.0, 1.0, 1.0)))
        if len(color) != 4 or not all(math.isfinite(c) for c in color):
            raise self.fail(f"material {material_index} baseColorFactor is not 4 finite numbers")
        return color

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
            file = self.path.parent / unquote(uri)
            if not file.is_file():
                raise self.fail(f"buffer {index} file {uri!r} not found (looked in {file})")
            data = file.read_bytes()
        need = self.doc.buffers[index].byteLength or 0
        if len(data) < need:
            raise self.fail(f"buffer {index} has {len(data)} bytes, byteLength says {need}")
        self.buffers[index] = bytes(data)
        return self.buffers[index]


def _quat_to_matrix(q: np.ndarray) -> np.ndarray:
    """Rotation matrix of a glTF unit quaternion ``(x, y, z, w)`` (normalised here)."""
    norm = np.linalg.norm(q)
    if q.shape != (4,) or not np.isfinite(q).all() or norm == 0:
        raise ValueError(f"rotation {q.tolist()} is not a non-zero quaternion")
    x, y, z, w = q / norm
    return np.array(
        [
            [1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)],
            [2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)],
            [2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)],
        ]
    )
