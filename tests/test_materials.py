"""Materials: each glTF material input on a generated scene against hand-derived or numpy
pixels (HDR target, TAA and fog off), the BRDF against its numpy twin on a sphere,
KHR_texture_transform against the extension's examples, mipmaps, bad input, and the real
files of Debian's assimp-testmodels."""

from __future__ import annotations

import logging
from pathlib import Path

import numpy as np
import pytest

from engine.materials import reference
from engine.materials.ambient import irradiance, sky_base, sky_sh, sphere_grid
from engine.materials.gpu import TextureArrays, plan_arrays, size_class
from engine.materials.model import Image, Material, TextureRef, TextureSlot
from engine.materials.model import TextureTransform as TT
from engine.scene.camera import Camera
from engine.scene.gltf import SceneError, load_gltf
from engine.scene.scene import Scene
from engine.settings import FrameSettings
from tests.frame_harness import Harness
from tools.make_material_scenes import Item, build_gltf, checker, png, quad, sphere, write

ASSIMP = Path("/usr/share/assimp/models/glTF2")
SETTINGS = FrameSettings(taa=False, bloom=False, fog_density=0.0, shadows=False, exposure=1.0)
SIZE = (96, 64)


def _srgb_to_linear(c):
    c = np.asarray(c, np.float64) / 255.0
    return np.where(c <= 0.04045, c / 12.92, ((c + 0.055) / 1.055) ** 2.4)


def _sky():
    from engine.frame import GROUND, SKY_ZENITH
    from engine.passes.resources import SKY_HORIZON

    return SKY_ZENITH, SKY_HORIZON, GROUND


def _render(gpu, doc, tmp_path, camera, *, sun=(0.0, -1.0, 0.0), settings=SETTINGS, frames=2):
    """Load the generated glTF ``doc``, render it and return (harness, HDR (h, w, 4))."""
    s = load_gltf(str(write(doc, tmp_path / "scene.gltf")))
    scene = Scene(s.meshes, s.transforms, s.mesh_ids, s.colors, sun_direction=sun,
                  materials=s.materials, material_ids=s.material_ids, images=s.images)  # fmt: skip
    h = Harness(gpu, scene, SIZE, settings)
    h.render(camera, frames=frames)
    return h, h.texture("frame.hdr")


def _rays(camera: Camera, size):
    """Per pixel centre: the unit ray direction from the eye ``(h, w, 3)``."""
    w, h = size
    inv = np.linalg.inv(camera.proj(w / h).astype(np.float64) @ camera.view())
    x = (np.arange(w) + 0.5) / w * 2 - 1
    y = 1 - (np.arange(h) + 0.5) / h * 2
    X, Y = np.meshgrid(x, y)
    p = np.stack([X, Y, np.full_like(X, 0.5), np.ones_like(X)], -1) @ inv.T
    d = p[..., :3] / p[..., 3:] - camera.eye
    return d / np.linalg.norm(d, axis=-1, keepdims=True)


CAM = Camera(eye=np.array([0.0, 0.0, 2.0]), target=np.array([0.0, 0.0, 0.0]), fov_y_deg=40.0)


def _quad_uv(camera, size):
    """UV on the z = 0 plane of ``quad(1)`` (u = x + 0.5, v = 0.5 - y) per pixel, and the
    view vectors there."""
    d = _rays(camera, size)
    t = -camera.eye[2] / d[..., 2]
    p = camera.eye + d * t[..., None]
    return np.stack([p[..., 0] + 0.5, 0.5 - p[..., 1]], -1), -d


# -- CPU: the model -----------------------------------------------------------------------------


def test_texture_transform_matches_the_extension_examples():
    # "only the lower left quadrant of the source image, rotated clockwise 90 degrees"
    quadrant = TT(offset=(0, 1), rotation=np.pi / 2, scale=(0.5, 0.5))
    corners = np.array([[0, 0], [1, 0], [0, 1], [1, 1]], float)
    assert np.allclose(quadrant.apply(corners), [[0, 1], [0, 0.5], [0.5, 1], [0.5, 0.5]])
    # "inverts the T axis, effectively defining a bottom-left origin"
    flip = TT(offset=(0, 1), scale=(1, -1))
    assert np.allclose(flip.apply(corners), [[0, 1], [1, 1], [0, 0], [1, 0]])


def test_size_classes_and_array_plan():
    assert [size_class(w, h, 4096) for w, h in ((211, 211), (64, 64), (2048, 1024), (3, 2))] == [
        256, 64, 2048, 4]  # fmt: skip
    assert size_class(8192, 8192, 2048) == 2048
    sizes = {(i, i % 2 == 0): (64 << (i % 8), 64) for i in range(20)}
    plan = plan_arrays(sizes, max_layers=2, max_size=4096)
    placed = [k for a in plan for k in a.layers]
    assert sorted(placed) == sorted(sizes)  # every texture once
    assert all(len(a.layers) <= 2 for a in plan)
    for fmt in (0, 1):
        assert len([a for a in plan if a.format == fmt]) <= 6  # small classes merged up


def test_sky_sh_irradiance_matches_brute_force():
    sh = sky_sh(*_sky())
    dirs, w = sphere_grid(96)
    radiance = sky_base(dirs, *_sky())
    for n in ([0, 1, 0], [1, 0, 0], [0, -1, 0], [0.6, 0.0, 0.8]):
        n = np.array(n, float)
        cos = np.maximum(dirs @ n, 0.0)
        brute = (radiance * (cos * w)[:, None]).sum(0)
        assert np.allclose(irradiance(sh, n), brute, rtol=0.05, atol=0.02), n


# -- bad input: one line each -------------------------------------------------------------------


def _noise_png() -> bytes:
    return png(np.random.default_rng(0).integers(0, 256, (64, 64, 4), dtype=np.uint8))


def _doc_with(material, images=(), textures=None, samplers=None):
    return build_gltf([Item(quad(), material)], list(images), textures, samplers)


BAD = {
    "texture index out of range": (
        lambda: _doc_with({"pbrMetallicRoughness": {"baseColorTexture": {"index": 3}}},
                          [png(checker(8))]), "texture 3 does not exist (1 texture(s))"),
    "sampler value outside the spec": (
        lambda: _doc_with({"pbrMetallicRoughness": {"baseColorTexture": {"index": 0}}},
                          [png(checker(8))], samplers=[{"wrapS": 1234}]),
        "sampler 0 wrapS 1234 is not one of REPEAT (10497)"),
    "image Pillow cannot read": (
        lambda: _doc_with({"emissiveTexture": {"index": 0}}, [b"not an image at all"]),
        "image 0 (embedded data): not an image format Pillow can read"),
    "truncated image": (
        lambda: _doc_with({"emissiveTexture": {"index": 0}}, [_noise_png()[:2000]]),
        "image 0 (embedded data): cannot decode the image"),
    "TEXCOORD_2": (
        lambda: _doc_with({"emissiveTexture": {"index": 0, "texCoord": 2}}, [png(checker(8))]),
        "uses TEXCOORD_2; Lantern reads TEXCOORD_0 and TEXCOORD_1 only"),
    "metallic above 1": (
        lambda: _doc_with({"pbrMetallicRoughness": {"metallicFactor": 1.5}}),
        "material 0 metallicFactor 1.5 is outside 0..1"),
    "NaN emissive": (
        lambda: _doc_with({"emissiveFactor": [float("nan"), 0.0, 0.0]}),
        "material 0 emissiveFactor [nan, 0.0, 0.0] is not finite (glTF 2.0: 0..1)"),
    "unknown alpha mode": (
        lambda: _doc_with({"alphaMode": "CUTOUT"}), "alphaMode 'CUTOUT' is not OPAQUE"),
}  # fmt: skip


@pytest.mark.parametrize("case", sorted(BAD))
def test_bad_material_input_is_one_line(tmp_path, case):
    make, says = BAD[case]
    with pytest.raises(SceneError) as e:
        load_gltf(str(write(make(), tmp_path / "bad.gltf")))
    msg = str(e.value)
    assert says in msg and "\n" not in msg and msg.startswith(str(tmp_path / "bad.gltf"))


def test_missing_image_file_is_one_line(tmp_path):
    doc = _doc_with({"emissiveTexture": {"index": 0}}, [png(checker(8))])
    doc["images"][0]["uri"] = "nowhere.png"
    with pytest.raises(SceneError, match=r"image 0 \(nowhere.png\): file not found"):
        load_gltf(str(write(doc, tmp_path / "m.gltf")))


def test_required_extension_refused_by_name_optional_one_warned(tmp_path, caplog):
    doc = _doc_with({})
    doc["extensionsUsed"] = doc["extensionsRequired"] = ["KHR_texture_basisu"]
    with pytest.raises(SceneError, match="requires glTF extension.s. KHR_texture_basisu"):
        load_gltf(str(write(doc, tmp_path / "b.gltf")))


# -- GPU: mipmaps ---------------------------------------------------------------------------------


def test_gpu_mipmaps_are_linear_means_of_srgb_texels(device):
    rng = np.random.default_rng(3)
    rgba = rng.integers(0, 256, (8, 8, 4), dtype=np.uint8)
    mat = Material(textures={TextureSlot.BASE_COLOR: TextureRef(0)})
    arrays = TextureArrays(device, [Image("noise", rgba)], [mat])
    tex = arrays.textures[0][0]
    assert (tex.width, tex.depth_or_array_layers, tex.mip_level_count) == (8, 1, 4)
    data = device.queue.read_texture(
        {"texture": tex, "mip_level": 1}, {"bytes_per_row": 256, "rows_per_image": 4}, (4, 4, 1)
    )
    got = np.frombuffer(data, np.uint8).reshape(4, 256)[:, :16].reshape(4, 4, 4).astype(int)
    lin = _srgb_to_linear(rgba[..., :3]).reshape(4, 2, 4, 2, 3).mean(axis=(1, 3))
    enc = np.where(lin <= 0.0031308, lin * 12.92, 1.055 * lin ** (1 / 2.4) - 0.055) * 255
    assert np.abs(got[..., :3] - enc).max() <= 1.0
    alpha = rgba[..., 3].reshape(4, 2, 4, 2).mean(axis=(1, 3))  # alpha stays linear
    assert np.abs(got[..., 3] - alpha).max() <= 1.0
    arrays.destroy()


# -- GPU: each input against numpy pixels -------------------------------------------------------


def test_emissive_texel_at_known_uv_above_the_lit_value(gpu, tmp_path):
    """A dark dielectric quad whose emissive texture is a 4x4 checker, nearest filtering:
    at each cell's centre the pixel is that texel's linear value x the factor, on top of the
    (computed) sky light."""
    mat = {"pbrMetallicRoughness": {"baseColorFactor": [0, 0, 0, 1], "metallicFactor": 0.0,
                                    "roughnessFactor": 1.0},
           "emissiveTexture": {"index": 0}, "emissiveFactor": [1.0, 0.5, 1.0]}  # fmt: skip
    samplers = [{"magFilter": 9728, "minFilter": 9728}]
    doc = build_gltf([Item(quad(), mat)], [png(checker(64))], samplers=samplers)
    h, hdr = _render(gpu, doc, tmp_path, CAM)
    uv, v = _quad_uv(CAM, SIZE)
    cell = np.floor(uv * 4).astype(int)
    centre = np.all(np.abs(uv * 4 - cell - 0.5) < 0.3, -1) & np.all((cell >= 0) & (cell < 4), -1)
    assert centre.sum() > 50
    odd = (cell[..., 0] + cell[..., 1]) % 2 == 1
    texel = np.where(odd[..., None], _srgb_to_linear((40, 40, 200)), _srgb_to_linear((200, 40, 40)))
    n = np.broadcast_to([0.0, 0.0, 1.0], v.shape)
    sh = h.frame.materials.sh
    lit = reference.ambient(sh, np.zeros(3), 0.0, 1.0, n, v)
    expect = texel * [1.0, 0.5, 1.0] + lit
    got = hdr[..., :3]
    assert np.allclose(got[centre], expect[centre], rtol=0.01, atol=2e-3)
    assert (got[centre].sum(-1) > lit[centre].sum(-1) + 0.2).all()  # emissive above lit


def test_normal_map_tilts_the_lit_normal(gpu, tmp_path):
    """A constant normal texel tilted 40 degrees towards +u (the tangent, +X on this quad);
    the sun along +Z: the lit value is the BRDF's at the tilted normal."""
    theta = np.radians(40.0)
    tn = np.array([np.sin(theta), 0.0, np.cos(theta)])
    texel = np.round((tn * 0.5 + 0.5) * 255)
    img = np.zeros((4, 4, 4), np.uint8)
    img[...] = (*texel, 255)
    mat = {"pbrMetallicRoughness": {"baseColorFactor": [0.8, 0.8, 0.8, 1],
                                    "metallicFactor": 0.0, "roughnessFactor": 0.7},
           "normalTexture": {"index": 0}}  # fmt: skip
    doc = build_gltf([Item(quad(), mat)], [png(img)])
    sun = np.array([0.0, 0.0, 1.0])
    h, hdr = _render(gpu, doc, tmp_path, CAM, sun=sun)
    uv, v = _quad_uv(CAM, SIZE)
    inside = np.all((uv > 0.05) & (uv < 0.95), -1)
    n_tex = (texel / 255.0) * 2 - 1
    n = np.broadcast_to(n_tex / np.linalg.norm(n_tex), v.shape)  # T=+X, B=+Y, N=+Z
    from engine.frame import SUN_COLOR

    expect = reference.shade(h.frame.materials.sh, sun, SUN_COLOR, np.full(3, 0.8), 0.0, 0.7,
                             n, v)  # fmt: skip
    flat = reference.shade(h.frame.materials.sh, sun, SUN_COLOR, np.full(3, 0.8), 0.0, 0.7,
                           np.broadcast_to([0.0, 0.0, 1.0], v.shape), v)  # fmt: skip
    got = hdr[..., :3]
    assert np.allclose(got[inside], expect[inside], rtol=0.02, atol=5e-3)
    assert got[inside].mean() < flat[inside].mean() * 0.9  # tilted away from the sun


def _pixel(camera, size, p):
    """``(row, column)`` of world point ``p``."""
    w, h = size
    c = camera.proj(w / h).astype(np.float64) @ camera.view() @ np.append(p, 1.0)
    return int((1 - c[1] / c[3]) / 2 * h), int((c[0] / c[3] + 1) / 2 * w)


def test_mask_cuts_colour_shadow_and_depth_at_the_cutoff(gpu, tmp_path):
    """A MASK quad 0.6 above a ground, cutoff 0.5, alpha 0.3 on its -X half and 0.7 on its
    +X half, the sun high towards +Z: the cut half shows the ground, keeps the ground's depth
    (in the frame's depth and the Hi-Z pyramid built from it) and casts no shadow; the other
    half does all three."""
    img = np.zeros((4, 4, 4), np.uint8)
    img[...] = (255, 255, 255, 178)
    img[:, :2, 3] = 77
    q = {"pbrMetallicRoughness": {"baseColorTexture": {"index": 0}, "metallicFactor": 0.0},
         "alphaMode": "MASK", "alphaCutoff": 0.5}  # fmt: skip
    ground = {"pbrMetallicRoughness": {"baseColorFactor": [0.5, 0.5, 0.5, 1], "metallicFactor": 0}}
    s2 = float(np.sqrt(0.5))
    items = [Item(quad(), q, translation=(0.0, 0.6, 0.0), rotation=(-s2, 0.0, 0.0, s2)),
             Item(quad(4.0), ground, rotation=(-s2, 0.0, 0.0, s2))]  # fmt: skip
    doc = build_gltf(items, [png(img)], samplers=[{"magFilter": 9728, "minFilter": 9728}])
    cam = Camera(eye=np.array([0.0, 3.0, 0.3]), target=np.array([0.0, 0.0, -0.2]), fov_y_deg=50)
    sun = np.array([0.0, 1.0, 1.0]) / np.sqrt(2.0)
    settings = FrameSettings(taa=False, bloom=False, fog_density=0.0, exposure=1.0)
    h, hdr = _render(gpu, doc, tmp_path, cam, sun=sun, settings=settings, frames=3)
    depth = h.depth()
    cut, kept = _pixel(cam, SIZE, (-0.25, 0.6, 0.1)), _pixel(cam, SIZE, (0.25, 0.6, 0.1))
    near_over = (cam.eye - [0.25, 0.6, 0.1]).astype(float)
    assert depth[kept] == pytest.approx(cam.near / np.linalg.norm(near_over), rel=0.05)
    assert depth[cut] < depth[kept] * 0.85  # the ground, farther
    # Hi-Z level 0 (64 x 32 here) over the cut half holds the ground's depth, not the quad's
    pyr = h.pyramid()[0]
    ty, tx = cut[0] * pyr.shape[0] // SIZE[1], cut[1] * pyr.shape[1] // SIZE[0]
    assert pyr[ty, tx] < depth[kept] * 0.85
    # shadow: the strip the sun throws past the quad's -Z edge (seen from z < -0.7)
    open_ground = hdr[_pixel(cam, SIZE, (1.5, 0.0, 0.0))][:3]
    behind_cut = hdr[_pixel(cam, SIZE, (-0.25, 0.0, -0.9))][:3]
    behind_kept = hdr[_pixel(cam, SIZE, (0.25, 0.0, -0.9))][:3]
    assert behind_cut == pytest.approx(open_ground, rel=0.05)
    assert hdr[cut][:3] == pytest.approx(open_ground, rel=0.05)  # colour: the lit ground
    assert behind_kept.sum() < 0.7 * open_ground.sum()


def test_blend_over_a_known_background_sorted_back_to_front(gpu, tmp_path):
    """Two BLEND quads, listed near first, over an emissive backdrop: the pixel is
    near over far over backdrop (alpha compositing in that order), not the reverse."""
    black = {"baseColorFactor": [0, 0, 0, 1], "metallicFactor": 0.0, "roughnessFactor": 1.0}

    def glass(rgb, a):
        return {"pbrMetallicRoughness": {**black, "baseColorFactor": [0, 0, 0, a]},
                "emissiveFactor": rgb, "alphaMode": "BLEND"}  # fmt: skip

    back = {"pbrMetallicRoughness": black, "emissiveFactor": [0.2, 0.2, 0.2]}
    items = [Item(quad(), glass([1, 0, 0], 0.5), translation=(0, 0, 0.4)),
             Item(quad(), glass([0, 0, 1], 0.5), translation=(0, 0, 0.2)),
             Item(quad(3.0), back, translation=(0, 0, -0.2))]  # fmt: skip
    doc = build_gltf(items, [])
    h, hdr = _render(gpu, doc, tmp_path, CAM)
    w, hh = SIZE
    c = hdr[hh // 2, w // 2, :3]
    sh = h.frame.materials.sh
    v = np.array([0.0, 0.0, 1.0])
    amb = reference.ambient(sh, np.zeros(3), 0.0, 1.0, v, v)
    far, near, bg = amb + [0, 0, 1], amb + [1, 0, 0], amb + 0.2
    expect = near * 0.5 + (far * 0.5 + bg * 0.5) * 0.5
    wrong = far * 0.5 + (near * 0.5 + bg * 0.5) * 0.5
    assert np.allclose(c, expect, rtol=0.02, atol=5e-3), (c, expect, wrong)
    assert h.frame.gs.blend_rows.tolist() == [0, 1]


def test_brdf_on_a_sphere_matches_numpy(gpu, tmp_path):
    """A dielectric-metal mix sphere (metallic 0.5, roughness 0.45) lit by the sun and the
    sky: every pixel well inside it against the numpy BRDF at the analytic normal."""
    base = [0.8, 0.35, 0.2]
    mat = {"pbrMetallicRoughness": {"baseColorFactor": [*base, 1], "metallicFactor": 0.5,
                                    "roughnessFactor": 0.45}}  # fmt: skip
    doc = build_gltf([Item(sphere(5, 0.6), mat)], [])
    sun = np.array([0.5, 0.6, 0.62])
    sun = sun / np.linalg.norm(sun)
    h, hdr = _render(gpu, doc, tmp_path, CAM, sun=sun)
    d = _rays(CAM, SIZE)
    e = CAM.eye.astype(np.float64)
    b = (d * e).sum(-1)
    disc = b * b - (e @ e - 0.36)
    inside = disc > 0.36 * 0.15  # away from the silhouette
    t = -b - np.sqrt(np.maximum(disc, 0))
    n = (e + d * t[..., None]) / 0.6
    from engine.frame import SUN_COLOR

    expect = reference.shade(h.frame.materials.sh, sun, SUN_COLOR, np.array(base), 0.5, 0.45,
                             n, -d)  # fmt: skip
    got = hdr[..., :3]
    assert inside.sum() > 500
    err = np.abs(got[inside] - expect[inside]) / np.maximum(expect[inside], 0.05)
    assert np.median(err) < 0.01 and err.max() < 0.06, (np.median(err), err.max())


# -- real files -------------------------------------------------------------------------------


needs_assimp = pytest.mark.skipif(not ASSIMP.is_dir(), reason="apt install assimp-testmodels")


@needs_assimp
def test_box_textured_in_its_encodings_loads_the_same():
    """The same box and image in .gltf + .bin + .png, .glb, and data: URIs (their samplers
    differ in Debian's copies: not compared)."""
    paths = ["BoxTextured-glTF/BoxTextured.gltf", "BoxTextured-glTF-Binary/BoxTextured.glb",
             "BoxTextured-glTF-Embedded/BoxTextured.gltf"]  # fmt: skip
    scenes = [load_gltf(str(ASSIMP / p)) for p in paths]
    for s in scenes:
        (m,) = s.materials
        ref = m.textures[TextureSlot.BASE_COLOR]
        assert s.images[ref.image].size == (211, 211)
        assert np.array_equal(s.images[0].rgba, scenes[0].images[0].rgba)
        assert np.array_equal(s.meshes[0].lods[0].uv0, scenes[0].meshes[0].lods[0].uv0)


@needs_assimp
def test_texture_transform_test_reads_each_quads_transform():
    s = load_gltf(str(ASSIMP / "textureTransform/TextureTransformTest.gltf"))
    transforms = {
        m.name: m.textures[TextureSlot.BASE_COLOR].transform
        for m in s.materials
        if TextureSlot.BASE_COLOR in m.textures
    }
    rotated = [t for t in transforms.values() if t.rotation]
    assert any(t.rotation == pytest.approx(0.392699) for t in rotated)
    assert any(t.offset == (0.5, 0.5) for t in transforms.values())
    assert any(t.scale == (1.5, 1.5) for t in transforms.values())


@needs_assimp
def test_clearcoat_is_named_in_the_one_warning_and_its_base_layer_drawn(gpu, caplog):
    path = ASSIMP / "ClearCoat-glTF/ClearCoatTest.gltf"
    with caplog.at_level(logging.WARNING, logger="lantern"):
        s = load_gltf(str(path))
    (line,) = [r.getMessage() for r in caplog.records if "extension" in r.getMessage()]
    assert "KHR_materials_clearcoat" in line
    h = Harness(gpu, s, (64, 48), SETTINGS)
    lo, hi = s.extent
    c = (lo + hi) / 2
    h.render(Camera(eye=c + [0, 0, float(hi[1] - lo[1]) * 1.6], target=c), frames=1)
    hdr = h.texture("frame.hdr")
    assert np.isfinite(hdr).all() and hdr[..., :3].std() > 0.01


# -- the material views -----------------------------------------------------------------------


def test_material_views_show_each_input(gpu, tmp_path):
    """View.Geometry with the mesh shader: base colour (the texel), roughness and metallic
    (factors x texture), the shading normal after the normal map, the material id and the mip
    level the base colour texture is sampled at (from the UV footprint per pixel)."""
    from engine.passes.resources import VIEW_MATERIAL
    from engine.tools.dump.tool import read_texture
    from engine.tools.views.tool import ViewTool
    from tests.tool_fakes import make_ctx

    theta = np.radians(30.0)
    tn = np.array([0.0, np.sin(theta), np.cos(theta)])  # tilted towards image up (+Y here)
    normal = np.zeros((4, 4, 4), np.uint8)
    normal[...] = (*np.round((tn * 0.5 + 0.5) * 255), 255)
    pbr = {"baseColorTexture": {"index": 0}, "metallicFactor": 0.7, "roughnessFactor": 0.3}
    mat = {"pbrMetallicRoughness": pbr, "normalTexture": {"index": 1}}
    doc = build_gltf([Item(quad(), mat)], [png(checker(64)), png(normal)],
                     samplers=[{"magFilter": 9728, "minFilter": 9984}])  # fmt: skip
    s = load_gltf(str(write(doc, tmp_path / "v.gltf")))
    h = Harness(gpu, s, SIZE, SETTINGS)
    ctx = make_ctx(gpu, h.graph, view=None)
    ctx.install(ViewTool())
    uv, _ = _quad_uv(CAM, SIZE)
    inside = np.all((uv > 0.1) & (uv < 0.9), -1)
    cell = np.floor(uv * 4).astype(int)
    centre = inside & np.all(np.abs(uv * 4 - cell - 0.5) < 0.3, -1)
    got = {}
    for name in ("basecolor", "roughness", "metallic", "shading", "material", "mip"):
        ctx.commands.execute(f"view {name}")
        h.render(CAM, 2, hooks=ctx.updates)
        got[name] = read_texture(gpu.device, h.graph.texture(VIEW_MATERIAL))
    odd = (cell[..., 0] + cell[..., 1]) % 2 == 1
    texel = np.where(odd[..., None], _srgb_to_linear((40, 40, 200)), _srgb_to_linear((200, 40, 40)))
    assert np.allclose(got["basecolor"][centre][:, :3], texel[centre], atol=2e-3)
    assert np.allclose(got["roughness"][inside][:, 0], 0.3, atol=1e-3)
    assert np.allclose(got["metallic"][inside][:, 0], 0.7, atol=1e-3)
    n = np.round((tn * 0.5 + 0.5) * 255) / 255 * 2 - 1
    assert np.allclose(got["shading"][inside][:, :3], n / np.linalg.norm(n), atol=3e-3)
    assert np.all(got["material"][inside][:, 0] == 0)
    # footprint: texels per pixel along x (u changes along x only on this quad)
    du = np.abs(np.gradient(uv[..., 0], axis=1)) * 64
    want = np.log2(np.maximum(du, 1e-9))  # TAA off: no bias
    level = got["mip"][..., 0]
    assert np.allclose(level[inside], np.maximum(want[inside], 0), atol=0.1)


def test_memory_table_lists_textures_by_array_and_by_material(gpu):
    from engine.scene.procedural import city
    from engine.tools.memory.table import material_table, scan

    scene, _ = city(40)
    h = Harness(gpu, scene, SIZE, SETTINGS)
    mats = h.frame.materials
    arrays = mats.array_rows()
    # every layer: 4 bytes a texel over the mip chain, 128 -> 1 (4/3 of the base, nearly)
    assert (
        sum(r[4] for r in arrays)
        == mats.texture_bytes
        == sum(r[3] * 4 * sum((128 >> i) ** 2 for i in range(8)) for r in arrays)
    )
    rows = mats.material_rows()
    assert len(rows) == sum(len(m.textures) for m in scene.materials)
    assert ("brick", "normal", "city brick normal") in [r[:3] for r in rows]
    text = material_table(h.graph)
    assert "texture arrays: 2" in text and "facade" in text
    # the general table finds the arrays too, owned by the frame's materials
    names = {r.name: r for r in scan(h.graph)}
    srgb = next(r for n, r in names.items() if n.startswith("material rgba8unorm-srgb"))
    assert srgb.owner == "frame.materials" and srgb.bytes == arrays[0][4]


def test_material_scene_matches_reference(gpu, tmp_path, compare_reference):
    """tools/make_material_scenes.py's showcase: metallic x roughness spheres, textured,
    normal-mapped, emissive, MASK and BLEND quads, through the whole frame (post chain on)."""
    from tools.make_material_scenes import showcase

    s = load_gltf(str(write(showcase(), tmp_path / "m.gltf")))
    h = Harness(gpu, s, (192, 108), FrameSettings(exposure=1.0, fog_density=0.0))
    h.frame.jitter_sequence = ((0.0, 0.0),)
    cam = Camera(eye=np.array([0.0, 0.5, 6.0]), target=np.array([0.0, 0.3, 0.0]), fov_y_deg=45)
    h.render(cam, 3)
    compare_reference("materials_scene_192x108", h.target.read_rgba()[..., :3], tolerance=2)


def test_world_uv_has_no_mip_spike_along_triangle_edges(gpu):
    """A world-mapped material (instance 0's material is another one): the sampled mip level
    is smooth across the quad's diagonal. With the scale read from storage in the fragment
    shader, lavapipe's helper pixels saw material 0 and every edge sampled mip 8."""
    from engine.passes.resources import VIEW_MATERIAL
    from engine.scene.scene import Mesh
    from engine.tools.dump.tool import read_texture
    from engine.tools.views.tool import ViewTool
    from tests.tool_fakes import make_ctx

    q = quad(2.0)
    q.uv0 = q.uv1 = None  # the city's meshes have no UVs: world mapping only
    ref = TextureRef(0)
    walls = Material("walls", textures={TextureSlot.BASE_COLOR: ref}, world_uv=2.0)
    scene = Scene(
        [Mesh.from_lods("quad", [q])],
        np.eye(4, dtype=np.float32)[None],
        np.zeros(1, np.uint32),
        np.ones((1, 4), np.float32),
        materials=[Material("plain"), walls],
        material_ids=np.array([1], np.uint32),
        images=[Image("c", checker(64))],
    )
    h = Harness(gpu, scene, SIZE, SETTINGS)
    ctx = make_ctx(gpu, h.graph, view=None)
    ctx.install(ViewTool())
    ctx.commands.execute("view mip")
    h.render(CAM, 2, hooks=ctx.updates)
    level = read_texture(gpu.device, h.graph.texture(VIEW_MATERIAL))[..., 0]
    uv, _ = _quad_uv(CAM, SIZE)  # quad(1) UVs: the 2 m quad spans -0.5..1.5
    inside = np.all((uv > -0.4) & (uv < 1.4), -1)
    # 2 UV units per metre, 64 texels each: texels per pixel from the footprint along x
    want = np.log2(np.maximum(np.abs(np.gradient(uv[..., 0], axis=1)) * 2 * 64, 1e-9))
    assert np.allclose(level[inside], np.maximum(want[inside], 0.0), atol=0.1)
    # the picture: each pixel the published sRGB bytes of Turbo at its whole level
    from engine.tools.views.reference import TURBO9

    shown = h.target.read_rgba()[..., :3][inside].astype(float)
    bytes_ = TURBO9[np.clip(level[inside], 0, 8).astype(int)] * 255
    assert np.abs(shown - bytes_).max() <= 1.0, np.abs(shown - bytes_).max()


def test_the_lit_shader_samples_only_what_the_scene_uses(gpu):
    """``shader_defines``: the texture slots, arrays and samplers the scene's materials use,
    nothing else (every sample in the shader may run: unused ones made the Main passes 14x
    slower on lavapipe); none with the ``textures`` knob off; and the variant compiles."""
    from engine.materials.gpu import GpuMaterials
    from engine.materials.model import NEAREST, Sampler
    from engine.passes.mesh import MeshPipelines
    from engine.scene.scene import Mesh

    pixel_art = Sampler(mag_filter=NEAREST, min_filter=NEAREST)  # no mipmaps: sampler 0
    scene = Scene(
        [Mesh.from_lods("quad", [quad(1.0)])],
        np.eye(4, dtype=np.float32)[None].repeat(2, 0),
        np.zeros(2, np.uint32),
        np.ones((2, 4), np.float32),
        materials=[
            Material("base", textures={TextureSlot.BASE_COLOR: TextureRef(0, pixel_art)}),
            Material("bumpy", textures={TextureSlot.NORMAL: TextureRef(1)}),
        ],  # fmt: skip
        material_ids=np.array([0, 1], np.uint32),
        images=[Image("c", checker(64)), Image("n", checker(64))],
    )
    m = GpuMaterials(gpu.device, scene, ((0.2,) * 3, (0.5,) * 3, (0.3,) * 3))
    want = {"TEX0": True, "TEX2": True, "SRGB0": True, "LIN0": True, "SAMP0": True}
    assert m.shader_defines(True) == want and m.shader_defines(False) == {}
    pipes = MeshPipelines(gpu.device, m.shader_defines(True))
    assert pipes.main("rgba16float", 0) is not None
    pipes.set_textures({})
    assert pipes.main("rgba16float", 0) is not None
