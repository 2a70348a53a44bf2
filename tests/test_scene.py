"""Scene SoA, mesh helpers, the procedural city, cameras and camera paths."""

from __future__ import annotations

import argparse
import math
import time

import numpy as np
import pytest

from engine.math3d import look_at, perspective_reverse_z, translation
from engine.scene.camera import (
    CAMERA_FORMAT,
    Camera,
    FixedPath,
    OrbitPath,
    WaypointPath,
    parse_camera,
)
from engine.scene.meshes import (
    MeshData,
    box,
    cone,
    cone_lods,
    cylinder,
    cylinder_lods,
    flat_normals,
    icosphere,
    pyramid,
    sphere_lods,
)
from engine.scene.procedural import (
    BLOCK,
    CURB_HEIGHT,
    MAX_HEIGHT,
    PITCH,
    SLOTS_PER_BLOCK,
    block_cells,
    city,
)
from engine.scene.scene import Mesh, Scene
from tests.helpers import face_normals, signed_volume

# -- meshes ---------------------------------------------------------------------------------


def rotation_y(angle: float) -> np.ndarray:
    c, s = math.cos(angle), math.sin(angle)
    return np.array([[c, 0, s, 0], [0, 1, 0, 0], [-s, 0, c, 0], [0, 0, 0, 1]], np.float32)


def _ngon_area(n: int, r: float = 0.5) -> float:
    return 0.5 * n * r * r * math.sin(2 * math.pi / n)


CLOSED = [
    ("box", box(), 1.0),
    ("box 1x2x3", box(0.5, 1.0, 1.5), 6.0),
    ("cylinder 3", cylinder(3), _ngon_area(3)),
    ("cylinder 6", cylinder(6), _ngon_area(6)),
    ("cylinder 24", cylinder(24), _ngon_area(24)),
    ("cone 6", cone(6), _ngon_area(6) / 3),
    ("cone 24", cone(24), _ngon_area(24) / 3),
    ("pyramid", pyramid(), 1.0 / 3),
    # icosahedron inscribed in r = 0.5: (5/12)(3 + sqrt 5) a^3 with a = r / sin(2 pi / 5)
    ("icosphere 0", icosphere(0), 5 / 12 * (3 + 5**0.5) * (0.5 / math.sin(2 * math.pi / 5)) ** 3),
]


@pytest.mark.parametrize("name,mesh,volume", CLOSED, ids=[c[0] for c in CLOSED])
def test_closed_mesh_is_outward_ccw_with_agreeing_normals(name, mesh, volume):
    assert mesh.vertices.dtype == np.float32 and mesh.vertices.shape[1] == 6
    assert mesh.indices.dtype == np.uint32 and len(mesh.indices) % 3 == 0
    assert signed_volume(mesh) == pytest.approx(volume, rel=1e-5)
    fn = face_normals(mesh)
    vn = mesh.vertices[:, 3:][mesh.indices.reshape(-1, 3)]  # (T, 3 corners, 3)
    assert np.allclose(np.linalg.norm(vn, axis=2), 1.0, atol=1e-5)
    # Smooth normals of coarse cylinders/cones lean up to 180/n degrees from the face.
    assert np.einsum("tj,tkj->tk", fn, vn).min() > 0.49


def test_icosphere_levels_converge_to_sphere():
    volumes = [signed_volume(icosphere(s)) for s in range(4)]
    sphere = 4 / 3 * math.pi * 0.5**3
    assert all(a < b < sphere for a, b in zip(volumes, volumes[1:], strict=False))
    assert volumes[3] == pytest.approx(sphere, rel=0.01)
    ico = icosphere(3)
    assert len(ico.indices) // 3 == 20 * 4**3
    assert len(ico.vertices) == 10 * 4**3 + 2  # Euler: shared midpoints, no duplicates
    assert np.allclose(np.linalg.norm(ico.vertices[:, :3], axis=1), 0.5, atol=1e-6)


@pytest.mark.parametrize("lods", [cylinder_lods(), cone_lods(), sphere_lods()])
def test_lods_get_coarser_in_the_same_local_space(lods):
    tris = [len(lod.indices) // 3 for lod in lods]
    assert tris == sorted(tris, reverse=True) and len(set(tris)) == len(tris)
    for lod in lods:
        lo, hi = lod.vertices[:, :3].min(0), lod.vertices[:, :3].max(0)
        assert np.all(lo >= -0.5 - 1e-6) and np.all(hi <= 0.5 + 1e-6)
        assert np.linalg.norm(lod.vertices[:, :3], axis=1).max() > 0.42  # similar size
    mesh = Mesh.from_lods("m", lods)
    for lod in lods:
        d = np.linalg.norm(lod.vertices[:, :3] - mesh.center, axis=1)
        assert d.max() <= mesh.radius + 1e-6


def test_flat_normals_unweld_and_face_the_winding():
    pos = np.array([[0, 0, 0], [1, 0, 0], [0, 0, -1], [0, 1, 0]], np.float32)
    idx = np.array([0, 1, 2, 0, 3, 1], np.uint32)
    m = flat_normals(pos, idx)
    assert len(m.vertices) == 6 and list(m.indices) == list(range(6))
    assert np.allclose(m.vertices[:3, 3:], [0, 1, 0])  # CCW seen from +Y
    assert np.allclose(m.vertices[3:, 3:], [0, 0, -1])  # (0,0,0),(0,1,0),(1,0,0): faces -Z


def test_mesh_from_lods_rejects_bad_input():
    with pytest.raises(ValueError, match="1..4 LODs"):
        Mesh.from_lods("x", [])
    with pytest.raises(ValueError, match="LOD 0"):
        Mesh.from_lods("x", [MeshData(box().vertices, np.zeros(0, np.uint32))])


# -- Scene ----------------------------------------------------------------------------------


def _random_trs(rng, n: int) -> np.ndarray:
    """Translation · rotation (random axis) · non-uniform scale, as float32."""
    out = np.empty((n, 4, 4), np.float32)
    for i in range(n):
        axis = rng.normal(size=3)
        axis /= np.linalg.norm(axis)
        a = rng.uniform(0, 2 * np.pi)
        k = np.array([[0, -axis[2], axis[1]], [axis[2], 0, -axis[0]], [-axis[1], axis[0], 0]])
        r = np.identity(3) + np.sin(a) * k + (1 - np.cos(a)) * k @ k  # Rodrigues
        m = np.identity(4)
        m[:3, :3] = r @ np.diag(rng.uniform(0.2, 5.0, 3))
        m[:3, 3] = rng.uniform(-100, 100, 3)
        out[i] = m
    return out


def _small_scene(n: int = 40, seed: int = 1) -> Scene:
    rng = np.random.default_rng(seed)
    meshes = [Mesh.from_lods("box", [box()]), Mesh.from_lods("cone", cone_lods())]
    return Scene(meshes, _random_trs(rng, n), rng.integers(0, 2, n), rng.random((n, 4)))


def test_bounds_match_an_independent_computation():
    scene = _small_scene()
    b = scene.bounds()
    assert b.shape == (scene.count, 4) and b.dtype == np.float32
    for i in range(scene.count):
        m = scene.transforms[i].astype(np.float64)
        mesh = scene.meshes[scene.mesh_ids[i]]
        centre = m @ np.append(mesh.center, 1.0)
        radius = mesh.radius * np.linalg.svd(m[:3, :3], compute_uv=False).max()
        assert np.allclose(b[i, :3], centre[:3], atol=1e-3)
        assert b[i, 3] == pytest.approx(radius, rel=1e-5)
        # Conservative: every vertex of every LOD lies inside the sphere.
        for lod in mesh.lods:
            world = lod.vertices[:, :3] @ m[:3, :3].T + m[:3, 3]
            assert np.linalg.norm(world - b[i, :3], axis=1).max() <= b[i, 3] * (1 + 1e-5)


def test_bounds_stay_conservative_under_shear():
    # A rotated child under a non-uniformly scaled parent: columns are no longer orthogonal.
    shear = np.diag([4.0, 1.0, 1.0, 1.0]) @ _rot_z(math.radians(45))
    scene = Scene([Mesh.from_lods("box", [box()])], shear[None], [0], np.ones((1, 4)))
    world = box().vertices[:, :3] @ shear[:3, :3].T
    far = np.linalg.norm(world - scene.bounds()[0, :3], axis=1).max()
    assert far <= scene.bounds()[0, 3] * (1 + 1e-6)
    column_norm = np.linalg.norm(shear[:3, :3], axis=0).max() * math.sqrt(0.75)
    assert far > column_norm  # the max-column-norm radius would have been too small


def _rot_z(a: float) -> np.ndarray:
    m = np.identity(4)
    m[:2, :2] = [[math.cos(a), -math.sin(a)], [math.sin(a), math.cos(a)]]
    return m


def test_extent_contains_every_vertex_and_is_tight_for_boxes():
    scene = _small_scene()
    lo, hi = scene.extent
    pts = []
    for i in range(scene.count):
        m = scene.transforms[i].astype(np.float64)
        v = scene.meshes[scene.mesh_ids[i]].lods[0].vertices[:, :3]
        pts.append(v @ m[:3, :3].T + m[:3, 3])
    pts = np.concatenate(pts)
    assert np.all(pts >= lo - 1e-3) and np.all(pts <= hi + 1e-3)
    # Boxes rotated by multiples of 90 degrees: the extent is exactly the vertex extent.
    t = np.stack([translation(3, 0, 0) @ rotation_y(math.pi / 2), translation(-2, 1, 5)])
    boxes = Scene([Mesh.from_lods("b", [box(1, 2, 3)])], t, [0, 0], np.ones((2, 4)))
    assert np.allclose(boxes.extent[0], [-3, -2, -1], atol=1e-5)  # x: B, y: A, z: A
    assert np.allclose(boxes.extent[1], [6, 3, 8], atol=1e-5)


def test_take_dirty_returns_merged_ranges_once():
    scene = _small_scene(20)
    assert scene.take_dirty() == [(0, 20)]  # first call: everything
    assert scene.take_dirty() == []
    eye = np.identity(4, np.float32)
    scene.set_transforms([7, 5, 6], np.stack([eye] * 3))
    scene.set_transforms([2], eye[None])
    scene.set_transforms(np.array([8, 7]), eye)  # one matrix broadcast to both rows
    scene.set_transforms(slice(15, 18), eye)
    assert scene.take_dirty() == [(2, 3), (5, 9), (15, 18)]
    assert scene.take_dirty() == []
    scene.set_transforms([0, 3, 10], eye)
    assert scene.take_dirty(max_gap=2) == [(0, 4), (10, 11)]


def test_set_transforms_updates_bounds_and_extent():
    scene = _small_scene(5)
    moved = translation(1000.0, 0.0, 0.0)
    scene.set_transforms([3], moved[None])
    r = scene.meshes[scene.mesh_ids[3]].radius
    assert np.allclose(scene.bounds()[3], [1000, 0, 0, r], atol=1e-4)
    assert scene.extent[1][0] == pytest.approx(1000.0 + 0.5, abs=1e-3)  # grown by row 3 only
    scene.set_transforms([3], np.identity(4)[None])
    assert scene.extent[1][0] > 1000.0  # never shrinks by itself (O(rows) per update) ...
    exact = _small_scene(5)
    exact.set_transforms([3], np.identity(4)[None])
    assert np.allclose(scene.recompute_extent()[1], exact.extent[1])  # ... until recomputed


def test_nan_transform_is_rejected_naming_the_row():
    scene = _small_scene(10)
    t = scene.transforms.copy()
    t[6, 1, 2] = np.nan
    with pytest.raises(ValueError, match=r"transforms: row 6 is not finite"):
        Scene(scene.meshes, t, scene.mesh_ids, scene.colors)
    bad = np.stack([np.identity(4)] * 2)
    bad[1, 0, 3] = np.inf
    with pytest.raises(ValueError, match=r"row 4 is not finite"):
        scene.set_transforms([9, 4], bad)
    assert np.isfinite(scene.transforms).all()  # nothing was written
    assert scene.take_dirty() == [(0, 10)]


def test_huge_scale_is_an_unusable_sphere_without_warnings_and_leaves_the_extent():
    import warnings

    from engine.scene.scene import MAX_WORLD, usable_spheres

    scene = _small_scene(10)
    big = np.identity(4, np.float32)
    big[:3, :3] *= np.float32(3e38)  # finite; the squared column norms overflow
    sheared = big.copy()
    sheared[0, 1] = 1e38
    scene.extent  # noqa: B018 - read once: set_transforms then grows it
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        scene.set_transforms([7, 3], np.stack([big, sheared]))
        extent = scene.recompute_extent()
    assert list(usable_spheres(scene.bounds())) == [i not in (3, 7) for i in range(10)]
    # the extent is that of the eight usable instances
    keep = [0, 1, 2, 4, 5, 6, 8, 9]
    ref = Scene(scene.meshes, scene.transforms[keep], scene.mesh_ids[keep], scene.colors[keep])
    assert np.array_equal(extent[0], ref.extent[0]) and np.array_equal(extent[1], ref.extent[1])
    # the rule, on values: NaN, inf and beyond MAX_WORLD are unusable; MAX_WORLD itself is not
    rows = np.array([[0, 0, 0, MAX_WORLD], [-MAX_WORLD, 0, 0, 1], [0, np.nan, 0, 1],
                     [0, 0, -np.inf, 1], [0, 0, 0, 2e18], [3e38, 0, 0, 1]], np.float32)  # fmt: skip
    assert list(usable_spheres(rows)) == [True, True, False, False, False, False]


def test_cull_shader_uses_the_same_limit():
    import re

    from engine.scene.scene import MAX_WORLD
    from engine.shaders import SHADER_DIR

    text = (SHADER_DIR / "cull.wgsl").read_text()
    bits = int(re.search(r"const MAX_WORLD_BITS: u32 = (0x[0-9a-f]+)u;", text).group(1), 16)
    assert np.uint32(bits).view(np.float32) == np.float32(MAX_WORLD)


def test_scene_validates_shapes_and_mesh_ids():
    scene = _small_scene(4)
    with pytest.raises(ValueError, match=r"mesh_ids: row 2 is 7, outside 0..1"):
        Scene(scene.meshes, scene.transforms, [0, 1, 7, 0], scene.colors)
    with pytest.raises(ValueError, match=r"colors: expected shape \(4, 4\)"):
        Scene(scene.meshes, scene.transforms, scene.mesh_ids, np.ones((4, 3)))
    with pytest.raises(ValueError, match=r"transforms: expected shape \(N, 4, 4\)"):
        Scene(scene.meshes, np.ones((4, 3, 4)), scene.mesh_ids, scene.colors)
    with pytest.raises(ValueError, match="rows: row 4 is outside 0..3"):
        scene.set_transforms([4], np.identity(4)[None])


# -- the city -------------------------------------------------------------------------------


@pytest.mark.parametrize("n", [1, 2, 10, 34, 35, 1000])
def test_city_has_exactly_n_instances(n):
    scene, _ = city(n)
    assert scene.count == n
    assert scene.transforms.shape == (n, 4, 4) and scene.colors.shape == (n, 4)
    assert np.all(scene.colors[:, :3] >= 0) and np.all(scene.colors[:, :3] <= 1)


def test_city_one_million_instances():
    t0 = time.perf_counter()
    scene, path = city(1_000_000)
    elapsed = time.perf_counter() - t0
    print(f"\ncity(1_000_000): {elapsed:.2f} s")  # a figure, not asserted (see tools/bench)
    assert scene.count == 1_000_000
    blocks = -(-(1_000_000 - 1) // SLOTS_PER_BLOCK)
    side = 2 * math.ceil((math.sqrt(blocks) - 1) / 2) + 1
    half = side // 2 * PITCH + BLOCK / 2
    lo, hi = scene.extent
    assert lo[0] >= -half - PITCH - 1 and hi[0] <= half + PITCH + 1  # grows by area
    assert hi[1] <= MAX_HEIGHT + CURB_HEIGHT + 4.0  # + penthouse: N grows the area only


def test_city_is_deterministic_by_seed_and_prefix_stable():
    a, pa = city(3000, seed=7)
    b, pb = city(3000, seed=7)
    c, _ = city(3000, seed=8)
    assert np.array_equal(a.transforms, b.transforms) and np.array_equal(a.colors, b.colors)
    assert np.array_equal(a.mesh_ids, b.mesh_ids)
    assert not np.array_equal(a.transforms, c.transforms)
    big, _ = city(9000, seed=7)  # a bigger city keeps the small one (all but the ground)
    assert np.array_equal(big.transforms[1:3000], a.transforms[1:])
    for t in (0.0, 1.0, 17.3):
        assert np.array_equal(pa.at(t).eye, pb.at(t).eye)
        assert np.array_equal(pa.at(t).target, pb.at(t).target)


def test_flat_city_is_the_same_city_with_one_opaque_material():
    from dataclasses import replace

    from engine.materials.model import DEFAULT_MATERIAL, AlphaMode

    textured, _ = city(3000, seed=3)
    flat, _ = city(3000, seed=3, materials=False)
    assert np.array_equal(flat.transforms, textured.transforms)
    assert np.array_equal(flat.mesh_ids, textured.mesh_ids)
    assert np.array_equal(flat.colors, textured.colors)
    # the default material; the ground slab's copy casts no shadow, as the asphalt does
    ground = replace(DEFAULT_MATERIAL, name="ground", casts_shadows=False)
    assert flat.materials[0] == DEFAULT_MATERIAL and flat.materials[1:] == [ground]
    assert not flat.images
    assert flat.material_ids.tolist() == [1] + [0] * 2999
    assert not textured.materials[textured.material_ids[0]].casts_shadows
    assert all(m.casts_shadows for m in textured.materials[1:])
    modes = {m.alpha_mode for m in textured.materials}
    assert {AlphaMode.MASK, AlphaMode.BLEND} <= modes  # what flat leaves out


def test_city_blocks_grow_in_rings_around_the_origin():
    cells = block_cells(25)
    assert len(np.unique(cells, axis=0)) == 25
    assert np.abs(cells).max() == 2  # 5x5 blocks, centred
    assert tuple(cells[0]) == (0, 0)
    assert np.array_equal(block_cells(9), cells[:9])


def test_city_buildings_stay_inside_their_blocks():
    scene, _ = city(2000)
    # Slots 1..12 of every block are buildings and their roofs (unit-cube meshes, no rotation).
    rows = np.arange(1, scene.count).reshape(-1)
    slot = (rows - 1) % SLOTS_PER_BLOCK
    rows = rows[(slot >= 1) & (slot <= 12)]
    m = scene.transforms[rows]
    centre, half = m[:, [0, 2], 3], np.abs(m[:, [0, 2], [0, 2]]) / 2
    block = np.round(centre / PITCH) * PITCH
    assert np.all(np.abs(centre - block) + half <= BLOCK / 2 + 1e-3)


def test_camera_path_stays_in_the_streets():
    scene, path = city(20_000)
    # AABB of every instance but the ground; the eye (plus the near plane) is outside all.
    lo, hi = _instance_aabbs(scene)
    for t in np.arange(0.0, 60.0, 0.25):
        cam = path.at(float(t))
        inside = np.all((cam.eye > lo[1:] - 0.2) & (cam.eye < hi[1:] + 0.2), axis=1)
        assert not inside.any(), f"t={t}: eye {cam.eye} inside instance {np.flatnonzero(inside)}"
        assert 1.0 < cam.eye[1] < 12.0  # street level
        assert np.linalg.norm(cam.target - cam.eye) > 10.0


def test_camera_path_moves_smoothly():
    _, path = city(20_000)
    eyes = np.array([path.at(i / 60).eye for i in range(600)])
    steps = np.linalg.norm(np.diff(eyes, axis=0), axis=1)
    assert steps.max() <= 14.0 / 60 * 1.01  # never faster than the driving speed
    assert steps.min() > 0.5 * 14.0 / 60  # never stops (corners are rounded, not halted)


def _instance_aabbs(scene: Scene) -> tuple[np.ndarray, np.ndarray]:
    los, his = [], []
    for m, mid in zip(scene.transforms, scene.mesh_ids, strict=True):
        v = scene.meshes[mid].lods[0].vertices[:, :3] @ m[:3, :3].T + m[:3, 3]
        los.append(v.min(0))
        his.append(v.max(0))
    return np.array(los), np.array(his)


# -- cameras --------------------------------------------------------------------------------


def test_parse_camera_good():
    cam = parse_camera("0,2,10:0,1,0:45")
    assert np.array_equal(cam.eye, [0, 2, 10]) and np.array_equal(cam.target, [0, 1, 0])
    assert cam.fov_y_deg == 45.0
    cam = parse_camera(" -1.5, 2e1 ,3:4,5,6 ")
    assert np.allclose(cam.eye, [-1.5, 20, 3]) and cam.fov_y_deg == 60.0


@pytest.mark.parametrize(
    "text,why",
    [
        ("1,2,3", "found 1 ':'-separated part"),
        ("1,2:3,4,5", "eye has 2 number"),
        ("1,2,3:4,5,6,7", "target has 4 number"),
        ("a,b,c:1,2,3", "eye 'a,b,c' is not three numbers"),
        ("1,2,3:nan,0,0", "is not finite"),
        ("1,2,3:1,2,3", "eye and target are the same point"),
        ("1,2,3:4,5,6:200", "between 0 and 180"),
        ("1,2,3:4,5,6:wide", "'wide' is not a number"),
        ("1,2,3:4,5,6:7:8", "found 4"),
    ],
)
def test_parse_camera_bad_names_the_format(text, why):
    with pytest.raises(argparse.ArgumentTypeError) as e:
        parse_camera(text)
    msg = str(e.value)
    assert CAMERA_FORMAT in msg and why in msg and "\n" not in msg


def test_parse_camera_as_argparse_type_gives_one_line(capsys):
    from engine.cli import ArgumentParser

    p = ArgumentParser(prog="s13")
    p.add_argument("--camera", type=parse_camera)
    with pytest.raises(SystemExit) as e:
        p.parse_args(["--camera", "1,2,3"])
    assert e.value.code == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "--camera" in err and CAMERA_FORMAT in err


def test_a_camera_starting_with_a_minus_is_a_value_not_an_option():
    """``--camera -128,5,189:...`` (argparse alone reads the value as an unknown option)."""
    from engine.cli import ArgumentParser

    p = ArgumentParser(prog="s13")
    p.add_argument("--camera", type=parse_camera)
    p.add_argument("--quiet", action="store_true")
    cam = p.parse_args(["--camera", "-128.5,5,189:-88,3.5,189", "--quiet"]).camera
    assert np.allclose(cam.eye, (-128.5, 5, 189)) and np.allclose(cam.target, (-88, 3.5, 189))
    assert p.parse_args(["--camera=-.5,1,2:0,0,0"]).camera.eye[0] == -0.5


def test_camera_matrices():
    cam = Camera((1.0, 2.0, 3.0), (4.0, 2.0, -1.0), fov_y_deg=70.0, near=0.5)
    v = cam.view()
    assert np.allclose(v @ [1, 2, 3, 1], [0, 0, 0, 1], atol=1e-5)
    assert np.allclose(v @ [4, 2, -1, 1], [0, 0, -5, 1], atol=1e-5)  # |target-eye| = 5 down -Z
    assert np.array_equal(cam.proj(1.5), perspective_reverse_z(70.0, 1.5, 0.5))
    assert np.array_equal(v, look_at((1, 2, 3), (4, 2, -1)))


def test_fixed_and_orbit_paths():
    cam = parse_camera("0,1,5:0,0,0")
    assert np.array_equal(FixedPath(cam).at(123.0).eye, cam.eye)
    orbit = OrbitPath((1, 2, 3), 10.0, elevation_deg=30.0, period_s=8.0)
    for t in (0.0, 1.0, 5.5):
        c = orbit.at(t)
        assert np.linalg.norm(c.eye - [1, 2, 3]) == pytest.approx(10.0, rel=1e-5)
        assert c.eye[1] - 2 == pytest.approx(5.0, rel=1e-5)  # sin 30 * 10
    assert np.allclose(orbit.at(2.0).eye, orbit.at(10.0).eye, atol=1e-4)  # one period


def test_waypoint_path_arc_length():
    path = WaypointPath([[0, 0, 0], [10, 0, 0], [10, 0, 10]], speed=2.0, look_ahead=1.0)
    assert path.length == pytest.approx(20 + math.sqrt(200))
    assert np.allclose(path.point(5.0), [5, 0, 0])
    assert np.allclose(path.point(15.0), [10, 0, 5])
    assert np.allclose(path.point(path.length + 5.0), [5, 0, 0])  # loops
    with pytest.raises(ValueError, match="points"):
        WaypointPath([[0, 0, 0]], speed=1.0, look_ahead=1.0)


# -- the preview renderer (creates its pipeline on the real device) --------------------------


def test_scene_preview_renders_a_lit_box(device):
    from tools.scene_preview import SKY, render

    red = np.array([[0.8, 0.05, 0.05, 1.0]], np.float32)
    scene = Scene([Mesh.from_lods("box", [box(2, 2, 2)])], np.identity(4)[None], [0], red)
    cam = Camera((0, 0, 8), (0, 0, 0), fov_y_deg=45.0)
    rgb = render(device, scene, cam, (64, 48)).astype(int)
    assert rgb.shape == (48, 64, 3)
    # Centre pixel: the front face (normal +Z) 7 units away, by the shader's formula.
    ambient = (np.array([0.10, 0.09, 0.08]) + np.array([0.22, 0.28, 0.38])) / 2
    sun = max(scene.sun_direction[2], 0.0) * 2.6
    lit = red[0, :3] * (ambient + sun)
    fog = 1 - math.exp(-7.0 * 1.5 / 200.0)
    linear = np.clip(lit * (1 - fog) + np.power(SKY, 2.2) * fog, 0, 1)
    expected = np.round(255 * _srgb(linear)).astype(int)
    assert np.abs(rgb[24, 32] - expected).max() <= 2
    sky = np.round(255 * np.array(SKY)).astype(int)
    assert np.abs(rgb[1, 1] - sky).max() <= 2  # nothing drawn in the corner


def _srgb(c: np.ndarray) -> np.ndarray:
    return np.where(c <= 0.0031308, 12.92 * c, 1.055 * np.power(c, 1 / 2.4) - 0.055)
