"""glTF 2.0 loading: hierarchy, materials, buffer layouts, errors; repeat_grid; default camera."""

from __future__ import annotations

import json
import logging
import math
import warnings
from pathlib import Path

import numpy as np
import pytest

from engine.scene.gltf import SceneError, default_camera, load_gltf, repeat_grid
from engine.scene.meshes import MeshData, box
from tests.helpers import face_normals, signed_volume
from tools.make_gltf_sample import Node, Prim, build, save, two_nodes

ASSETS = Path(__file__).resolve().parents[1] / "assets" / "meshes"


def _world(scene, row: int, local) -> np.ndarray:
    return (scene.transforms[row].astype(np.float64) @ np.append(local, 1.0))[:3]


def test_two_node_hierarchy_matches_hand_derived_positions():
    scene = load_gltf(str(ASSETS / "two_nodes.gltf"))
    assert scene.count == 2
    # Parent: T(1,2,3) R_y(90°): (x, y, z) -> (z, y, -x) + (1, 2, 3).
    assert np.allclose(_world(scene, 0, [0.5, -0.5, 0.5]), [1.5, 1.5, 2.5], atol=1e-6)
    # Child: parent · T(1,0,0) · S(2): (0.5,0.5,0.5) -> (2,1,1) -> (1,1,-2) -> (2,3,1).
    assert np.allclose(_world(scene, 1, [0.5, 0.5, 0.5]), [2.0, 3.0, 1.0], atol=1e-6)
    assert np.allclose(scene.base_colors(), [[1, 0, 0, 1], [0, 0, 1, 1]])
    # The child box (scale 2, unit box) has a world sphere of radius 2 * sqrt(0.75).
    assert scene.bounds()[1, 3] == pytest.approx(2 * math.sqrt(0.75), rel=1e-5)
    # Its centre: origin -> (1,0,0) -> R: (0,0,-1) -> + (1,2,3) = (1,2,2).
    assert np.allclose(scene.bounds()[1, :3], [1.0, 2.0, 2.0], atol=1e-6)


def test_interleaved_attributes_are_read_with_their_stride():
    scene = load_gltf(str(ASSETS / "two_nodes.gltf"))
    lod = scene.meshes[0].lods[0]
    ref = box()
    assert np.array_equal(lod.vertices, ref.vertices) and np.array_equal(lod.indices, ref.indices)


@pytest.mark.parametrize("layout", ["embedded", "external", "glb"])
def test_gltf_and_glb_load_the_same_scene(tmp_path, layout):
    doc, blob = two_nodes()
    path = tmp_path / ("x.glb" if layout == "glb" else "x.gltf")
    save(doc, blob, path, external_bin=layout == "external")
    if layout == "external":
        assert (tmp_path / "x.bin").is_file()
    ref = load_gltf(str(ASSETS / "two_nodes.gltf"))
    scene = load_gltf(str(path))
    assert np.array_equal(scene.transforms, ref.transforms)
    assert np.array_equal(scene.base_colors(), ref.base_colors())
    for a, b in zip(scene.meshes, ref.meshes, strict=True):
        assert np.array_equal(a.lods[0].vertices, b.lods[0].vertices)


@pytest.mark.parametrize("dtype", [np.uint8, np.uint16, np.uint32])
def test_index_component_types(tmp_path, dtype):
    doc, blob = build([[Prim(box(), index_dtype=dtype)]], [Node(mesh=0)], [0])
    save(doc, blob, tmp_path / "i.gltf")
    assert doc.accessors[-1].componentType == {np.uint8: 5121, np.uint16: 5123}.get(dtype, 5125)
    lod = load_gltf(str(tmp_path / "i.gltf")).meshes[0].lods[0]
    assert np.array_equal(lod.indices, box().indices)


def test_missing_normals_and_indices_give_flat_generated_ones(tmp_path):
    doc, blob = build([[Prim(box(), index_dtype=None, normals=False)]], [Node(mesh=0)], [0])
    save(doc, blob, tmp_path / "soup.glb")
    lod = load_gltf(str(tmp_path / "soup.glb")).meshes[0].lods[0]
    assert list(lod.indices) == list(range(36))
    assert signed_volume(lod) == pytest.approx(1.0)
    fn = np.repeat(face_normals(lod), 3, axis=0)
    assert np.allclose(lod.vertices[:, 3:], fn, atol=1e-6)  # flat: corner normal = face normal


def test_matrix_nodes_and_mirroring_keep_triangles_outward(tmp_path):
    mirror = np.diag([-1.0, 2.0, 1.0, 1.0])
    mirror[:3, 3] = (5.0, 0.0, 0.0)
    nodes = [Node(mesh=0, matrix=mirror.T.reshape(-1).tolist())]  # glTF is column-major
    doc, blob = build([[Prim(box())]], nodes, [0])
    save(doc, blob, tmp_path / "m.gltf")
    scene = load_gltf(str(tmp_path / "m.gltf"))
    assert np.allclose(scene.transforms[0], mirror)
    lod = scene.meshes[0].lods[0]
    world = lod.vertices[:, :3] @ mirror[:3, :3].T + mirror[:3, 3]
    assert signed_volume(MeshData(world.astype(np.float32), lod.indices)) == pytest.approx(2.0)


def test_non_triangle_primitives_are_skipped_with_a_warning(tmp_path, caplog):
    doc, blob = build([[Prim(box())], [Prim(box())]], [Node(mesh=0), Node(mesh=1)], [0, 1])
    doc.meshes[1].primitives[0].mode = 1  # LINES
    save(doc, blob, tmp_path / "lines.gltf")
    with caplog.at_level(logging.WARNING, logger="lantern"):
        scene = load_gltf(str(tmp_path / "lines.gltf"))
    assert scene.count == 1
    assert "mesh 1 primitive 0 has mode 1" in caplog.text


def test_shared_mesh_is_loaded_once():
    scene = load_gltf(str(ASSETS / "house.glb"))
    assert scene.count == 12  # lawn, walls, roof, chimney, door, 3 windows, 2 trunks, 2 crowns
    assert len(scene.meshes) == 8  # trunk box and window box reused by several nodes
    lo, hi = scene.extent
    assert np.allclose(lo, [-7, -0.1, -6], atol=1e-5) and hi[0] == pytest.approx(7)


def test_repeat_grid():
    scene = load_gltf(str(ASSETS / "house.glb"))
    grid = repeat_grid(scene, 7)
    assert grid.count == 7 * scene.count
    assert grid.meshes is not scene.meshes and grid.meshes == scene.meshes
    assert np.array_equal(grid.mesh_ids, np.tile(scene.mesh_ids, 7))
    offsets = grid.transforms[:: scene.count, :3, 3] - scene.transforms[0, :3, 3]
    assert np.allclose(offsets[:, 1], 0)
    spacing = 1.25 * 14.0  # the lawn is 14 x 12 m
    pairwise = np.linalg.norm(offsets[:, None] - offsets[None], axis=2)
    assert pairwise[~np.eye(7, dtype=bool)].min() == pytest.approx(spacing, rel=1e-5)
    # Every copy is a rigid translation of the original.
    per_copy = grid.transforms.reshape(7, scene.count, 4, 4)
    assert np.allclose(per_copy[..., :3, :3], scene.transforms[None, :, :3, :3])
    with pytest.raises(ValueError, match="copies must be an integer >= 1"):
        repeat_grid(scene, 0)


def _corner_ndc(path, extent, aspect: float, times) -> np.ndarray:
    """Largest |NDC x or y| of the extent's 8 corners over ``times``; all must be in front."""
    lo, hi = extent
    corners = np.array([[x, y, z, 1] for x in (lo[0], hi[0]) for y in (lo[1], hi[1])
                        for z in (lo[2], hi[2])])  # fmt: skip
    worst = 0.0
    for t in times:
        cam = path.at(t)
        clip = corners @ (cam.proj(aspect) @ cam.view()).T.astype(np.float64)
        assert np.all(clip[:, 3] > cam.near)
        worst = max(worst, float(np.abs(clip[:, :2] / clip[:, 3:]).max()))
    return worst


@pytest.mark.parametrize("shape", [(1, 40, 1), (10, 10, 10), (40, 1, 40), (60, 2, 1)])
def test_default_camera_keeps_the_whole_extent_in_view_at_any_aspect(shape):
    from engine.scene.scene import Mesh, Scene

    t = np.diag([*shape, 1]).astype(np.float32)[None]
    scene = Scene([Mesh.from_lods("box", [box()])], t, np.zeros(1, np.uint32), np.ones((1, 4)))
    times = np.linspace(0.0, 24.0, 97)  # a whole turn
    landscape = default_camera(scene)  # aspect 1: every landscape output
    for aspect in (1.0, 4 / 3, 16 / 9, 21 / 9):
        assert _corner_ndc(landscape, scene.extent, aspect, times) <= 1.0
    for aspect in (9 / 16, 1 / 3):  # portrait: told the aspect
        assert _corner_ndc(default_camera(scene, aspect), scene.extent, aspect, times) <= 1.0
    with pytest.raises(ValueError, match="aspect"):
        default_camera(scene, 0.0)


def test_default_camera_sees_the_house_grid():
    scene = repeat_grid(load_gltf(str(ASSETS / "house.glb")), 5)
    worst = _corner_ndc(default_camera(scene), scene.extent, 16 / 9, (0.0, 1.0, 7.5))
    assert 0.5 < worst <= 1.0  # in view, and not a speck


# -- errors: one line naming the file and the problem -----------------------------------------


def _raises(path: Path, *fragments: str) -> None:
    with pytest.raises(SceneError) as e:
        load_gltf(str(path))
    msg = str(e.value)
    assert "\n" not in msg and str(path) in msg
    for f in fragments:
        assert f in msg, msg


def test_missing_file(tmp_path):
    _raises(tmp_path / "nope.gltf", "file not found")


def test_malformed_json(tmp_path):
    (tmp_path / "bad.gltf").write_text('{"asset": {"version": "2.0"}, "nodes": [')
    _raises(tmp_path / "bad.gltf", "not valid JSON (line 1 column 41")


@pytest.mark.parametrize(
    ("uri", "says"),
    [("http://127.0.0.1:9/x.bin", "http: URIs are not read"),
     ("file:///etc/hostname", "file: URIs are not read"),
     ("/etc/hostname", "is an absolute path")],
)  # fmt: skip
def test_buffer_uris_that_leave_the_file_are_refused(tmp_path, uri, says):
    doc, blob = build([[Prim(box())]], [Node(mesh=0)], [0])
    save(doc, blob, tmp_path / "a.gltf")
    obj = json.loads((tmp_path / "a.gltf").read_text())
    obj["buffers"][0]["uri"] = uri
    (tmp_path / "a.gltf").write_text(json.dumps(obj))
    _raises(tmp_path / "a.gltf", "buffer 0 uri", says)


@pytest.mark.parametrize(
    ("edit", "says"),
    [(lambda o: o["nodes"][0].update(matrix=[1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 1, 0, 0, 0, 0]),
      "node 0 matrix is not affine"),
     (lambda o: o.setdefault("materials", [{}])[0].update(
         pbrMetallicRoughness={"baseColorFactor": [1e30, -5, 0, 1]}),
      "baseColorFactor [1e+30, -5.0, 0.0, 1.0] is outside 0..1"),
     (lambda o: o["bufferViews"][0].update(byteStride=1), "byteStride 1 is not a multiple of 4")],
    ids=["perspective-matrix", "color-out-of-range", "stride-1"],
)  # fmt: skip
def test_values_the_spec_forbids_are_refused_not_drawn_wrong(tmp_path, edit, says):
    doc, blob = build([[Prim(box())]], [Node(mesh=0)], [0])
    save(doc, blob, tmp_path / "a.gltf")
    obj = json.loads((tmp_path / "a.gltf").read_text())
    edit(obj)
    if "materials" in obj:
        for m in obj["meshes"][0]["primitives"]:
            m["material"] = 0
    (tmp_path / "a.gltf").write_text(json.dumps(obj))
    _raises(tmp_path / "a.gltf", says)


def test_json_nested_too_deep(tmp_path):
    deep = "[" * 100_000 + "]" * 100_000
    (tmp_path / "deep.gltf").write_text('{"asset": {"version": "2.0"}, "extras": ' + deep + "}")
    _raises(tmp_path / "deep.gltf", "JSON nested too deep to read")


def test_malformed_glb(tmp_path):
    (tmp_path / "bad.glb").write_bytes(b"not a glb file at all")
    _raises(tmp_path / "bad.glb", "not a binary glTF file")


def test_wrong_version(tmp_path):
    (tmp_path / "v1.gltf").write_text(json.dumps({"asset": {"version": "1.0"}}))
    _raises(tmp_path / "v1.gltf", "glTF 1.0 is not supported", "glTF 2.0 (.gltf or .glb)")


def test_missing_bin(tmp_path):
    doc, blob = two_nodes()
    save(doc, blob, tmp_path / "ext.gltf", external_bin=True)
    (tmp_path / "ext.bin").unlink()
    _raises(tmp_path / "ext.gltf", "buffer 0 file 'ext.bin' not found")


def test_index_out_of_range(tmp_path):
    bad = MeshData(box().vertices, np.append(box().indices[:-3], [0, 1, 99]).astype(np.uint32))
    doc, blob = build([[Prim(bad)]], [Node(mesh=0)], [0])
    save(doc, blob, tmp_path / "idx.gltf")
    _raises(tmp_path / "idx.gltf", "mesh 0 primitive 0 index 99 is out of range (24 vertices)")


def test_nan_position(tmp_path):
    v = box().vertices.copy()
    v[5, 1] = np.nan
    doc, blob = build([[Prim(MeshData(v, box().indices))]], [Node(mesh=0)], [0])
    doc.accessors[0].min = doc.accessors[0].max = None  # NaN is not valid JSON
    save(doc, blob, tmp_path / "nan.glb")
    _raises(tmp_path / "nan.glb", "mesh 0 primitive 0 POSITION 5 is not finite")


def test_infinite_node_scale_is_one_line_without_a_numpy_warning(tmp_path):
    doc, blob = build([[Prim(box())]], [Node(mesh=0, scale=(1.0, 1.0, 1.0))], [0])
    save(doc, blob, tmp_path / "inf.gltf")
    text = (tmp_path / "inf.gltf").read_text()
    obj = json.loads(text)
    obj["nodes"][0]["scale"] = [math.inf, 1.0, 1.0]  # 1e999 in the file: inf to Python's json
    (tmp_path / "inf.gltf").write_text(json.dumps(obj).replace("Infinity", "1e999"))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        _raises(tmp_path / "inf.gltf", "node 0 has a non-finite transform")


@pytest.mark.parametrize(
    "rotation, message",
    [
        ([math.nan, 0.0, 0.0, 1.0], "node 0 rotation [nan, 0.0, 0.0, 1.0] is not finite"),
        ([0.0, 0.0, 0.0, 0.0], "node 0 rotation [0, 0, 0, 0] is not a quaternion"),
    ],
)
def test_a_bad_rotation_names_its_node(tmp_path, rotation, message):
    doc, blob = build([[Prim(box())]], [Node(mesh=0)], [0])
    save(doc, blob, tmp_path / "rot.gltf")
    obj = json.loads((tmp_path / "rot.gltf").read_text())
    obj["nodes"][0]["rotation"] = rotation  # NaN: the token Python's json writes and reads
    (tmp_path / "rot.gltf").write_text(json.dumps(obj))
    _raises(tmp_path / "rot.gltf", message)


@pytest.mark.parametrize("scale", [1e300, 3.5e38])
def test_node_transform_beyond_float32_is_one_line_without_a_numpy_warning(tmp_path, scale):
    # finite in float64 (JSON), inf once stored as float32: named by node, no RuntimeWarning
    doc, blob = build([[Prim(box())]], [Node(mesh=0, scale=(scale, 1.0, 1.0))], [0])
    save(doc, blob, tmp_path / "huge.gltf")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        _raises(tmp_path / "huge.gltf", "node 0", "beyond float32 range")
    with pytest.raises(SceneError) as e:
        load_gltf(str(tmp_path / "huge.gltf"))
    assert "Error" not in str(e.value)


def test_accessor_beyond_its_buffer(tmp_path):
    doc, blob = two_nodes()
    doc.accessors[0].count = 1000
    save(doc, blob, tmp_path / "long.gltf")
    _raises(tmp_path / "long.gltf", "accessor 0 reads bytes", "beyond its bufferView")


def test_node_cycle(tmp_path):
    doc, blob = two_nodes()
    doc.nodes[1].children = [0]
    save(doc, blob, tmp_path / "cycle.gltf")
    _raises(tmp_path / "cycle.gltf", "node 0 is its own ancestor")


def test_no_triangles(tmp_path):
    (tmp_path / "empty.gltf").write_text(json.dumps({"asset": {"version": "2.0"}}))
    _raises(tmp_path / "empty.gltf", "no triangle primitives")


# -- extensions, other formats, wrong JSON types (issue 9 items 2 and 3) ----------------------

DRACO = "KHR_draco_mesh_compression"


def _draco_gltf(path: Path) -> Path:
    """A Draco-compressed triangle as exporters write it: the accessors have no bufferView
    (the data is in the extension's compressed bufferView), which plain glTF reads as zeros."""
    doc = {
        "asset": {"version": "2.0"},
        "extensionsUsed": [DRACO],
        "extensionsRequired": [DRACO],
        "scene": 0,
        "scenes": [{"nodes": [0]}],
        "nodes": [{"mesh": 0}],
        "meshes": [
            {
                "primitives": [
                    {
                        "attributes": {"POSITION": 0},
                        "indices": 1,
                        "extensions": {DRACO: {"bufferView": 0, "attributes": {"POSITION": 0}}},
                    }
                ]
            }
        ],
        "accessors": [
            {"componentType": 5126, "count": 3, "type": "VEC3", "min": [0, 0, 0], "max": [1, 1, 0]},
            {"componentType": 5123, "count": 3, "type": "SCALAR"},
        ],
        "bufferViews": [{"buffer": 0, "byteLength": 4}],
        "buffers": [{"byteLength": 4, "uri": "data:application/octet-stream;base64,AAAAAA=="}],
    }
    path.write_text(json.dumps(doc))
    return path


def test_required_extension_is_refused_by_name(tmp_path):
    _raises(_draco_gltf(tmp_path / "draco.gltf"), f"requires glTF extension(s) {DRACO}")


def test_used_extensions_are_named_once_in_one_warning(tmp_path, caplog):
    doc, blob = two_nodes()
    doc.extensionsUsed = ["KHR_texture_transform", "KHR_materials_unlit", "KHR_materials_sheen"]
    save(doc, blob, tmp_path / "ext.gltf")
    with caplog.at_level(logging.WARNING, logger="lantern"):
        scene = load_gltf(str(tmp_path / "ext.gltf"))
    assert scene.count == 2
    lines = [r.getMessage() for r in caplog.records if "extension" in r.getMessage()]
    assert lines == [
        f"{tmp_path / 'ext.gltf'}: ignoring glTF extension(s) KHR_materials_sheen, "
        "KHR_materials_unlit (not implemented; the scene may look different)"
    ]


def _glb(version: int = 2, json_text: str = '{"asset":{"version":"2.0"}}', cut: int = 0) -> bytes:
    body = json_text.encode().ljust((len(json_text) + 3) // 4 * 4, b" ")
    chunk = len(body).to_bytes(4, "little") + b"JSON" + body
    total = 12 + len(chunk)
    data = b"glTF" + version.to_bytes(4, "little") + total.to_bytes(4, "little") + chunk
    return data[: len(data) - cut]


V2 = '{"asset": {"version": "2.0"}, '
# name, content (bytes, str, or None for a directory), what the message must say
OTHER_INPUTS = [
    ("cube.obj", "v 0 0 0\nv 1 0 0\nv 0 1 0\nf 1 2 3\n", "Wavefront OBJ files are not supported"),
    ("cube.3ds", b"MM\x10\x00\x00\x00\x02\x00\x0a\x00", "3D Studio files are not supported"),
    ("v1.gltf", '{"asset": {"version": "1.0"}, "meshes": {"m": {"primitives": []}}}',
     "glTF 1.0 is not supported"),
    ("empty.glb", b"", "the file is empty"),
    ("one.glb", b"g", "not a binary glTF file"),
    ("v1.glb", _glb(version=1), "binary glTF version 1 is not supported"),
    ("short.glb", _glb()[:16], "truncated .glb (16 bytes"),
    ("cut.glb", _glb(cut=4), "truncated .glb (header says"),
    ("random.gltf", bytes(range(128, 256)), "binary data that is neither glTF JSON nor .glb"),
    ("folder.gltf", None, "is a directory"),
    ("array.gltf", "[1, 2]", "glTF JSON must be an object, not an array"),
    ("noversion.gltf", '{"asset": {"version": 2.0}}', "no asset.version string"),
    ("minversion.gltf", '{"asset": {"version": "2.0", "minVersion": "2.1"}}',
     "asset.minVersion 2.1 asks for more than glTF 2.0"),
    ("nodes.gltf", V2 + '"nodes": "x"}',
     'nodes must be an array, not the string "x"'),
    ("mesh.gltf", V2 + '"nodes": [{"mesh": "a"}]}',
     'nodes[0].mesh must be a non-negative integer, not the string "a"'),
    ("trs.gltf", V2 + '"nodes": [{"translation": [1, 2]}]}',
     "nodes[0].translation must be an array of 3 numbers, not an array of 2"),
    ("attr.gltf",
     V2 + '"meshes": [{"primitives": [{"attributes": {"POSITION": true}}]}]}',
     "meshes[0].primitives[0].attributes.POSITION must be a non-negative integer, not a boolean"),
    ("count.gltf", V2 + '"accessors": [{"count": -1}]}',
     "accessors[0].count must be a non-negative integer, not the number -1"),
    ("color.gltf",
     V2 + '"materials": [{"pbrMetallicRoughness": {"baseColorFactor": 1}}]}',
     "materials[0].pbrMetallicRoughness.baseColorFactor must be an array of 4 numbers"),
]  # fmt: skip


def _make(tmp_path: Path, name: str, content) -> Path:
    path = tmp_path / name
    if content is None:
        path.mkdir()
    elif isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content)
    return path


@pytest.mark.parametrize(
    ("name", "content", "says"), OTHER_INPUTS, ids=[c[0] for c in OTHER_INPUTS]
)
def test_other_formats_and_wrong_types_are_one_line_about_the_file(tmp_path, name, content, says):
    path = _make(tmp_path, name, content)
    _raises(path, says)
    with pytest.raises(SceneError) as e:
        load_gltf(str(path))
    # a message about the file, not a Python exception's text
    for leak in ("Error:", "object has no attribute", "unpack", "Expecting value", "line 1 col"):
        assert leak not in str(e.value)


@pytest.mark.parametrize(
    ("name", "says"),
    [("draco.gltf", DRACO), ("cube.obj", "Wavefront OBJ"), ("folder.gltf", "is a directory")],
)
def test_bad_scene_file_on_the_command_line_is_one_line_exit_2(tmp_path, name, says):
    from tests.helpers import run_sample

    if name == "draco.gltf":
        path = _draco_gltf(tmp_path / name)
    else:
        path = _make(tmp_path, name, dict((n, c) for n, c, _ in OTHER_INPUTS)[name])
    r = run_sample("s13", "--scene", str(path), "--capture", str(tmp_path / "x.png"), timeout=120)
    assert r.returncode == 2, r.stderr
    lines = [ln for ln in r.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and "--scene" in lines[0] and says in lines[0], r.stderr
    assert str(path) in lines[0] and "Traceback" not in r.stderr
    assert not (tmp_path / "x.png").exists()


def test_fields_the_loader_does_not_read_cannot_break_it(tmp_path):
    """pygltflib raised AttributeError/TypeError on a wrong type in any field (cameras,
    animations, a node's camera); only the fields the loader reads are checked and parsed."""
    doc, blob = two_nodes()
    save(doc, blob, tmp_path / "ok.gltf")
    obj = json.loads((tmp_path / "ok.gltf").read_text())
    obj["cameras"], obj["animations"], obj["skins"] = "x", [1], 5
    obj["nodes"][0]["camera"] = "c"
    (tmp_path / "odd.gltf").write_text(json.dumps(obj))
    scene = load_gltf(str(tmp_path / "odd.gltf"))
    ref = load_gltf(str(tmp_path / "ok.gltf"))
    assert np.array_equal(scene.transforms, ref.transforms) and scene.count == 2


def test_sparse_accessor_is_still_refused(tmp_path):
    doc, blob = two_nodes()
    save(doc, blob, tmp_path / "ok.gltf")
    obj = json.loads((tmp_path / "ok.gltf").read_text())
    obj["accessors"][0]["sparse"] = {"count": 1, "indices": {}, "values": {}}
    (tmp_path / "sparse.gltf").write_text(json.dumps(obj))
    _raises(tmp_path / "sparse.gltf", "sparse accessors are not supported")


# -- issue 20: wrong types in fields Lantern does not read, zero normals, strips and fans ------


def _two_nodes_json(tmp_path: Path) -> dict:
    doc, blob = two_nodes()
    save(doc, blob, tmp_path / "ok.gltf")
    return json.loads((tmp_path / "ok.gltf").read_text())


# Like glTF-Sample-Assets' / assimp's wrongTypes files: each breaks one core field's JSON type.
WRONG_TYPES = {
    "badString.gltf": (lambda o: o["scenes"][0].update(name=1),
                       "scenes[0].name must be a string, not the number 1"),
    "badUint.gltf": (lambda o: o["nodes"][1].update(skin=-1),
                     "nodes[1].skin must be a non-negative integer, not the number -1"),
    "badNumber.gltf": (lambda o: o.update(cameras=[{"type": "perspective", "perspective": {
                           "yfov": "1.0", "znear": 0.1}}]),
                       'cameras[0].perspective.yfov must be a number, not the string "1.0"'),
}  # fmt: skip


@pytest.mark.parametrize("name", sorted(WRONG_TYPES))
def test_a_wrong_type_in_a_field_not_read_is_one_warning_and_the_scene_loads(
    tmp_path, caplog, name
):
    obj = _two_nodes_json(tmp_path)
    spoil, says = WRONG_TYPES[name]
    spoil(obj)
    (tmp_path / name).write_text(json.dumps(obj))
    with caplog.at_level(logging.WARNING, logger="lantern"):
        scene = load_gltf(str(tmp_path / name))
    assert [r.getMessage() for r in caplog.records] == [
        f"{tmp_path / name}: invalid glTF, ignored: {says}; Lantern does not read it, so the "
        "scene is drawn as if it were valid"
    ]
    ref = load_gltf(str(tmp_path / "ok.gltf"))
    assert np.array_equal(scene.transforms, ref.transforms)
    assert np.array_equal(scene.base_colors(), ref.base_colors())


def test_several_wrong_types_are_still_one_warning_with_a_count(tmp_path, caplog):
    obj = _two_nodes_json(tmp_path)
    for spoil, _ in WRONG_TYPES.values():
        spoil(obj)
    obj["cameras"] = "x"
    (tmp_path / "bad.gltf").write_text(json.dumps(obj))
    with caplog.at_level(logging.WARNING, logger="lantern"):
        load_gltf(str(tmp_path / "bad.gltf"))
    (line,) = [r.getMessage() for r in caplog.records]
    # the first in document order ("nodes" comes before "scenes" and "cameras" in the file),
    # and a count of the others (badNumber's cameras are replaced by "x": three remain)
    assert "ignored: nodes[1].skin must be a non-negative integer" in line
    assert "(and 2 more); Lantern does not read it" in line


def test_zero_normals_are_recomputed_from_the_faces_with_one_warning(tmp_path, caplog):
    """box() has one vertex set per face, so a vertex's face-derived normal is exactly the
    face's normal: the box's own normals are the reference."""
    ref = box()
    spoilt = ref.vertices.copy()
    zeroed = [0, 5, 9, 23]
    spoilt[zeroed, 3:] = 0.0
    doc, blob = build([[Prim(MeshData(spoilt, ref.indices))]], [Node(mesh=0)], [0])
    save(doc, blob, tmp_path / "zero.gltf")
    with caplog.at_level(logging.WARNING, logger="lantern"):
        lod = load_gltf(str(tmp_path / "zero.gltf")).meshes[0].lods[0]
    assert np.allclose(lod.vertices[:, 3:], ref.vertices[:, 3:], atol=1e-6)
    assert [r.getMessage() for r in caplog.records] == [
        f"{tmp_path / 'zero.gltf'}: mesh 0 primitive 0 NORMAL has 4 zero-length vector(s) of "
        "24; recomputed from the faces around each vertex"
    ]


def _quad_strip(tmp_path: Path, mode: int, order: list[int]) -> MeshData:
    """A unit quad in z = 0 facing +z (vertex k at ``QUAD[k]``), drawn with ``mode``."""
    quad = np.array([[0, 0, 0], [1, 0, 0], [0, 1, 0], [1, 1, 0]], np.float32)
    verts = np.hstack([quad, np.tile([0.0, 0.0, 1.0], (4, 1))]).astype(np.float32)
    doc, blob = build([[Prim(MeshData(verts, np.array(order, np.uint32)))]], [Node(mesh=0)], [0])
    doc.meshes[0].primitives[0].mode = mode
    save(doc, blob, tmp_path / f"m{mode}.gltf")
    return load_gltf(str(tmp_path / f"m{mode}.gltf")).meshes[0].lods[0]


@pytest.mark.parametrize(
    ("mode", "order", "triangles"),
    [
        (5, [0, 1, 2, 3], [[0, 1, 2], [1, 3, 2]]),  # strip: (v0 v1 v2), (v1 v3 v2)
        # the quad twice, stitched by degenerate triangles (dropped)
        (5, [0, 1, 2, 3, 3, 0, 0, 1, 2, 3], [[0, 1, 2], [1, 3, 2], [0, 1, 2], [1, 3, 2]]),
        (6, [0, 1, 3, 2], [[1, 3, 0], [3, 2, 0]]),  # fan: (v1 v2 v0), (v2 v3 v0)
    ],
    ids=["strip", "strip-degenerate", "fan"],
)
def test_strips_and_fans_become_triangle_lists_with_their_winding(tmp_path, mode, order, triangles):
    lod = _quad_strip(tmp_path, mode, order)
    assert lod.indices.reshape(-1, 3).tolist() == triangles
    p = lod.vertices[:, :3].astype(np.float64)
    tri = lod.indices.reshape(-1, 3)
    normal_z = np.cross(p[tri[:, 1]] - p[tri[:, 0]], p[tri[:, 2]] - p[tri[:, 0]])[:, 2]
    assert np.all(normal_z > 0)  # counter-clockwise seen from +z, like the authored normal


def test_scene_index_without_scenes_says_so(tmp_path):
    obj = _two_nodes_json(tmp_path)
    del obj["scenes"]
    obj["scene"] = 0
    (tmp_path / "noscene.gltf").write_text(json.dumps(obj))
    _raises(tmp_path / "noscene.gltf", "scene 0 does not exist (the file has no scenes)")


def test_an_unknown_required_extension_gets_no_draco_hint(tmp_path):
    obj = _two_nodes_json(tmp_path)
    obj["extensionsUsed"] = obj["extensionsRequired"] = ["EXT_made_up"]
    (tmp_path / "ext.gltf").write_text(json.dumps(obj))
    with pytest.raises(SceneError) as e:
        load_gltf(str(tmp_path / "ext.gltf"))
    assert str(e.value) == (
        f"{tmp_path / 'ext.gltf'}: requires glTF extension(s) EXT_made_up, which Lantern does "
        "not implement; export the file without them"
    )
    with pytest.raises(SceneError, match=r"without them \(without Draco compression\)$"):
        load_gltf(str(_draco_gltf(tmp_path / "draco.gltf")))


# -- issue 31: a file that is not UTF-8 -------------------------------------------------------
def _asset_json() -> str:
    return (ASSETS / "two_nodes.gltf").read_text(encoding="utf-8")


def _named(text: str, name: str) -> str:
    """``text`` with the asset's generator named ``name`` (a string the loader does not read)."""
    obj = json.loads(text)
    obj["asset"]["generator"] = name
    return json.dumps(obj, ensure_ascii=False)


@pytest.mark.parametrize("kind", ["latin-1", "utf-16", "cut", "glb-latin-1"])
def test_a_file_not_utf8_is_one_line_naming_the_byte(tmp_path, kind):
    text = _named(_asset_json(), "café")
    if kind == "latin-1":
        data = text.encode("latin-1")
        says = f"not UTF-8 at byte {data.index(b'caf') + 3} (0xE9: Latin-1"
    elif kind == "utf-16":
        data, says = text.encode("utf-16"), "UTF-16 text (a byte-order mark at byte 0)"
    elif kind == "cut":
        data = text.encode()[: text.encode().index("é".encode()) + 1]
        says = f"not UTF-8 at byte {len(data) - 1} (0xC3 begins a character"
    else:
        data = _glb(json_text=text.replace("café", "cafX"))
        data = data.replace(b"cafX", b"caf\xe9")  # the same length: the header stays right
        says = f"malformed .glb: its JSON chunk is not UTF-8 at byte {data.index(b'caf') + 3}"
    path = tmp_path / ("x.glb" if kind.startswith("glb") else "x.gltf")
    path.write_bytes(data)
    _raises(path, says)


def test_a_utf8_byte_order_mark_is_accepted(tmp_path):
    path = tmp_path / "bom.gltf"
    path.write_bytes(b"\xef\xbb\xbf" + _named(_asset_json(), "café").encode())
    ref = load_gltf(str(ASSETS / "two_nodes.gltf"))
    assert np.array_equal(load_gltf(str(path)).transforms, ref.transforms)


def _with_lights(tmp_path, lights: list[dict]) -> Path:
    """two_nodes with ``KHR_lights_punctual``: light 0 on the parent, light 1 (if any) on the
    child."""
    doc, blob = two_nodes()
    doc.extensionsUsed = ["KHR_lights_punctual"]
    doc.extensions = {"KHR_lights_punctual": {"lights": lights}}
    for i in range(min(len(lights), 2)):
        doc.nodes[i].extensions = {"KHR_lights_punctual": {"light": i}}
    save(doc, blob, tmp_path / "lit.gltf")
    return tmp_path / "lit.gltf"


def test_punctual_lights_are_placed_by_their_nodes(tmp_path):
    spot = {"type": "spot", "color": [1.0, 0.5, 0.25], "intensity": 40.0, "range": 9.0,
            "spot": {"innerConeAngle": 0.2, "outerConeAngle": 0.6}}  # fmt: skip
    scene = load_gltf(str(_with_lights(tmp_path, [spot, {"type": "point"}])))
    ls = scene.lights
    assert ls.count == 2
    # parent: (1, 2, 3), 90 degrees about +Y, so its -Z points along -X
    np.testing.assert_allclose(ls.position[0], [1, 2, 3], atol=1e-6)
    np.testing.assert_allclose(ls.direction[0], [-1, 0, 0], atol=1e-6)
    np.testing.assert_allclose(ls.color[0], [1.0, 0.5, 0.25])
    assert ls.intensity[0] == 40.0 and ls.range[0] == 9.0
    np.testing.assert_allclose([ls.inner[0], ls.outer[0]], [0.2, 0.6], rtol=1e-6)
    # child: (1, 0, 0) in the parent, scale 2: at (1, 2, 2); the extension's defaults
    np.testing.assert_allclose(ls.position[1], [1, 2, 2], atol=1e-6)
    assert ls.intensity[1] == 1.0 and ls.kind[1] == 0
    assert ls.range[1] > 0  # no range: cut off where it falls to CUTOFF_LUX


@pytest.mark.parametrize(
    ("light", "words"),
    [
        ({"type": "point", "range": -1.0}, "range -1.0"),
        ({"type": "spot", "spot": {"innerConeAngle": 0.9, "outerConeAngle": 0.5}}, "cone"),
        ({"type": "area"}, "type 'area'"),
    ],
)
def test_bad_punctual_lights_are_refused_in_one_line(tmp_path, light, words):
    with pytest.raises(SceneError) as e:
        load_gltf(str(_with_lights(tmp_path, [light])))
    assert words in str(e.value) and "\n" not in str(e.value)
