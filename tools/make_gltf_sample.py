"""Write the glTF 2.0 assets under assets/meshes/ (and build glTF documents for the tests).

    python tools/make_gltf_sample.py          # rewrites assets/meshes/*.gltf|.glb

- ``two_nodes.gltf``: a parent node (translated, rotated 90° about +Y) with a red unit box and
  a child node (translated, scaled 2) with a blue box: world positions are easy to derive by
  hand. Interleaved POSITION/NORMAL (byteStride 24) and uint16 indices, embedded data: URI.
- ``house.glb``: a low-poly house with a hip roof, chimney, door, and two trees (conifer and
  broadleaf) on a lawn; binary glTF, uint8/uint16 indices, a primitive without normals.
"""

from __future__ import annotations

import base64
import sys
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from engine.scene.meshes import MeshData, box, cone, icosphere, pyramid  # noqa: E402

COMPONENT = {np.dtype(np.uint8): 5121, np.dtype(np.uint16): 5123, np.dtype(np.uint32): 5125}


@dataclass
class Prim:
    """One triangle primitive to write: ``mesh`` positions (and normals unless
    ``normals=False``), indices stored as ``index_dtype`` (None: no indices, unwelded)."""

    mesh: MeshData
    color: tuple[float, float, float, float] = (1.0, 1.0, 1.0, 1.0)
    index_dtype: type | None = np.uint16
    normals: bool = True


@dataclass
class Node:
    """A glTF node: ``mesh`` indexes the list of meshes (each a list of Prim)."""

    mesh: int | None = None
    children: list[int] = field(default_factory=list)
    translation: tuple[float, float, float] | None = None
    rotation: tuple[float, float, float, float] | None = None  # x, y, z, w
    scale: tuple[float, float, float] | None = None
    matrix: list[float] | None = None  # 16 values, column-major


def build(meshes: list[list[Prim]], nodes: list[Node], roots: list[int]):
    """A ``pygltflib.GLTF2`` document and its one binary buffer (bytes, not yet attached).

    POSITION and NORMAL are interleaved in one bufferView (byteStride 24, NORMAL at accessor
    byteOffset 12), so readers must honour both.
    """
    import pygltflib as g

    doc = g.GLTF2(asset=g.Asset(version="2.0", generator="lantern make_gltf_sample"))
    blob = bytearray()

    def view(data: bytes, stride: int | None = None, target: int | None = None) -> int:
        blob.extend(b"\0" * (-len(blob) % 4))
        doc.bufferViews.append(
            g.BufferView(
                buffer=0,
                byteOffset=len(blob),
                byteLength=len(data),
                byteStride=stride,
                target=target,
            )
        )
        blob.extend(data)
        return len(doc.bufferViews) - 1

    for prims in meshes:
        out = []
        for p in prims:
            v = p.mesh.vertices
            idx = p.mesh.indices
            if p.index_dtype is None:  # unwelded triangle soup, no index accessor
                v, idx = v[idx], None
            pos = v[:, :3]
            if p.normals:
                bv = view(np.ascontiguousarray(v, np.float32).tobytes(), 24, 34962)
            else:
                bv = view(np.ascontiguousarray(pos, np.float32).tobytes(), None, 34962)
            doc.accessors.append(
                g.Accessor(
                    bufferView=bv,
                    componentType=5126,
                    count=len(v),
                    type="VEC3",
                    min=pos.min(0).tolist(),
                    max=pos.max(0).tolist(),
                )
            )
            attrs = g.Attributes(POSITION=len(doc.accessors) - 1)
            if p.normals:
                doc.accessors.append(
                    g.Accessor(
                        bufferView=bv, byteOffset=12, componentType=5126, count=len(v), type="VEC3"
                    )
                )
                attrs.NORMAL = len(doc.accessors) - 1
            indices = None
            if idx is not None:
                data = idx.astype(p.index_dtype)
                ibv = view(data.tobytes(), None, 34963)
                doc.accessors.append(
                    g.Accessor(
                        bufferView=ibv,
                        componentType=COMPONENT[data.dtype],
                        count=len(data),
                        type="SCALAR",
                    )
                )
                indices = len(doc.accessors) - 1
            doc.materials.append(
                g.Material(pbrMetallicRoughness=g.PbrMetallicRoughness(baseColorFactor=p.color))
            )
            out.append(
                g.Primitive(attributes=attrs, indices=indices, material=len(doc.materials) - 1)
            )
        doc.meshes.append(g.Mesh(primitives=out))
    for n in nodes:
        doc.nodes.append(
            g.Node(
                mesh=n.mesh,
                children=list(n.children),
                translation=list(n.translation) if n.translation else None,
                rotation=list(n.rotation) if n.rotation else None,
                scale=list(n.scale) if n.scale else None,
                matrix=list(n.matrix) if n.matrix else None,
            )
        )
    doc.scenes.append(g.Scene(nodes=roots))
    doc.scene = 0
    doc.buffers.append(g.Buffer(byteLength=len(blob)))
    return doc, bytes(blob)


def save(doc, blob: bytes, path: Path, *, external_bin: bool = False) -> None:
    """Write ``doc`` to ``path``: ``.glb`` with a binary chunk; ``.gltf`` with the buffer as a
    base64 data: URI, or as ``<stem>.bin`` beside it if ``external_bin``."""
    path = Path(path)
    if path.suffix == ".glb":
        doc.buffers[0].uri = None
        doc.set_binary_blob(blob)
        doc.save_binary(str(path))
    elif external_bin:
        doc.buffers[0].uri = path.stem + ".bin"
        path.with_suffix(".bin").write_bytes(blob)
        doc.save_json(str(path))
    else:
        doc.buffers[0].uri = "data:application/octet-stream;base64," + base64.b64encode(
            blob
        ).decode("ascii")
        doc.save_json(str(path))


def two_nodes():
    """Parent (translation (1, 2, 3), 90° about +Y, red unit box) → child (translation
    (1, 0, 0), uniform scale 2, blue unit box)."""
    s = float(np.sqrt(0.5))
    meshes = [[Prim(box(), _lin(1.0, 0.0, 0.0))], [Prim(box(), _lin(0.0, 0.0, 1.0))]]
    nodes = [
        Node(mesh=0, children=[1], translation=(1.0, 2.0, 3.0), rotation=(0.0, s, 0.0, s)),
        Node(mesh=1, translation=(1.0, 0.0, 0.0), scale=(2.0, 2.0, 2.0)),
    ]
    return build(meshes, nodes, [0])


def house():
    """A house (body, hip roof, chimney, door, windows) and two trees on a lawn."""
    lawn = Prim(box(), _lin(0.25, 0.5, 0.18), np.uint8)
    wall = Prim(box(), _lin(0.9, 0.82, 0.66), np.uint8)
    roof = Prim(pyramid(), _lin(0.55, 0.16, 0.12), np.uint8, normals=False)
    dark = Prim(box(), _lin(0.25, 0.16, 0.1), np.uint8)
    glass = Prim(box(), _lin(0.45, 0.65, 0.85), np.uint8)
    trunk = Prim(box(), _lin(0.35, 0.22, 0.12), np.uint8)
    conifer = Prim(cone(16), _lin(0.12, 0.4, 0.16), np.uint16)
    crown = Prim(icosphere(2), _lin(0.25, 0.55, 0.2), np.uint16)
    meshes = [[lawn], [wall], [roof], [dark], [glass], [trunk], [conifer], [crown]]
    nodes = [
        Node(children=[1, 7, 10]),  # 0: root
        Node(mesh=0, translation=(0, -0.05, 0), scale=(14, 0.1, 12)),  # 1: lawn
        # 2: house, turned a little; its parts are children in house-local units
        Node(mesh=1, translation=(0, 1.5, 0), scale=(6, 3, 4.5)),  # 2: walls
        Node(mesh=2, translation=(0, 3.9, 0), scale=(6.6, 1.8, 5.1)),  # 3: roof
        Node(mesh=3, translation=(1.6, 4.3, 0.8), scale=(0.6, 1.6, 0.6)),  # 4: chimney
        Node(mesh=3, translation=(0, 1.05, 2.26), scale=(1.0, 2.1, 0.05)),  # 5: door
        Node(mesh=4, translation=(-1.8, 1.8, 2.26), scale=(1.2, 1.0, 0.05)),  # 6: window
        Node(children=[2, 3, 4, 5, 6, 8, 9], translation=(-1.5, 0, 0), rotation=_yaw(0.3)),
        Node(mesh=4, translation=(1.8, 1.8, 2.26), scale=(1.2, 1.0, 0.05)),  # 8: window
        Node(mesh=4, translation=(3.01, 1.8, 0.0), scale=(0.05, 1.0, 1.4)),  # 9: side window
        Node(children=[11, 12, 13, 14], translation=(4.5, 0, 0)),  # 10: trees
        Node(mesh=5, translation=(0, 0.75, -3), scale=(0.3, 1.5, 0.3)),  # 11: trunk
        Node(mesh=6, translation=(0, 3.0, -3), scale=(2.2, 3.6, 2.2)),  # 12: conifer
        Node(mesh=5, translation=(0.5, 0.9, 2.5), scale=(0.35, 1.8, 0.35)),  # 13: trunk
        Node(mesh=7, translation=(0.5, 2.9, 2.5), scale=(2.8, 2.6, 2.8)),  # 14: crown
    ]
    return build(meshes, nodes, [0])


def _lin(r: float, g: float, b: float) -> tuple[float, float, float, float]:
    """sRGB colour picks → the linear RGBA that glTF's baseColorFactor stores."""
    return (r**2.2, g**2.2, b**2.2, 1.0)


def _yaw(angle: float) -> tuple[float, float, float, float]:
    return (0.0, float(np.sin(angle / 2)), 0.0, float(np.cos(angle / 2)))


def main() -> None:
    out = ROOT / "assets" / "meshes"
    out.mkdir(parents=True, exist_ok=True)
    save(*two_nodes(), out / "two_nodes.gltf")
    save(*house(), out / "house.glb")
    print(f"wrote {out / 'two_nodes.gltf'} and {out / 'house.glb'}")


if __name__ == "__main__":
    main()
