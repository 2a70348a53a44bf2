"""The standard frame's on-demand targets (``frame.normals``, ``frame.motion``,
``frame.ambient``): written only while a pass reads them, and checked against numpy: analytic
normals of a box and a sphere at known poses, reprojection of a moving camera and of a moving
instance, and the ambient light the ``Ambient`` pass adds back."""

from __future__ import annotations

import numpy as np
import pytest

from engine.graph import ComputePass
from engine.materials.model import Material
from engine.math3d import oct_decode, translation
from engine.passes.resources import AMBIENT, DEPTH, HDR, MOTION, NORMALS
from engine.passes.screen import MULTIPLY, ScreenPass
from engine.scene.camera import Camera
from engine.scene.meshes import box, icosphere
from engine.scene.scene import Mesh, Scene
from engine.settings import FrameSettings
from engine.tools.dump.tool import read_texture
from tests.frame_harness import Harness

SIZE = (128, 96)
PLAIN = FrameSettings(taa=False, bloom=False, shadows=False, exposure=1.0)
CAM = Camera(eye=np.array([0.3, 1.2, 4.0]), target=np.array([0.0, 0.2, 0.0]), fov_y_deg=50.0)
SPHERE_C, SPHERE_R = np.array([0.9, 0.3, 0.0]), 0.6


def _rot_y(deg: float) -> np.ndarray:
    a = np.radians(deg)
    m = np.eye(4)
    m[0, 0], m[0, 2], m[2, 0], m[2, 2] = np.cos(a), np.sin(a), -np.sin(a), np.cos(a)
    return m


BOX_T = translation(-0.8, 0.2, 0.0) @ _rot_y(35.0) @ np.diag([0.8, 1.0, 0.6, 1.0])


@pytest.fixture(scope="module")
def scene():
    """A box (rotated, scaled) and a sphere (roughness 0.3, metallic 0.7) in the sky."""
    meshes = [Mesh.from_lods("box", [box()]), Mesh.from_lods("sphere", [icosphere(4, 1.0)])]
    sphere = translation(*SPHERE_C) @ np.diag([SPHERE_R, SPHERE_R, SPHERE_R, 1.0])
    return Scene(
        meshes,
        np.array([BOX_T, sphere], np.float32),
        np.array([0, 1], np.uint32),
        np.ones((2, 4), np.float32),
        materials=[
            Material("box", roughness=0.8, metallic=0.0),
            Material("sphere", roughness=0.3, metallic=0.7),
        ],  # fmt: skip
        material_ids=np.array([0, 1], np.uint32),
    )


class Reader(ComputePass):
    """Reads resources and records nothing: what makes the frame write them."""

    def __init__(self, name: str, *reads: str):
        super().__init__(name, lambda ctx, cpass: None, reads=reads)


def _count_attachments(h: Harness, name: str) -> list[int]:
    """Colour attachments of each begun ``name`` pass, appended as the graph begins it."""
    p, counts = h.graph.pass_named(name), []
    inner = p.targets

    def targets(ctx):
        t = inner(ctx)
        counts.append(len(t["color_attachments"]))
        return t

    p.targets = targets
    return counts


def _read(h: Harness, name: str) -> np.ndarray:
    return read_texture(h.device, h.graph.texture(name)).astype(np.float64)


def _pixels(size) -> tuple[np.ndarray, np.ndarray]:
    """Pixel centres ``(H, W, 2)`` (x right, y down) and their NDC ``(H, W, 2)``."""
    w, h = size
    px = np.stack(np.meshgrid(np.arange(w) + 0.5, np.arange(h) + 0.5), -1)
    ndc = np.stack([px[..., 0] / w * 2 - 1, 1 - px[..., 1] / h * 2], -1)
    return px, ndc


def _unproject(inv_view_proj, depth) -> np.ndarray:
    """Homogeneous world points ``(H, W, 4)`` of each pixel centre at its depth."""
    _, ndc = _pixels(depth.shape[::-1])
    clip = np.concatenate([ndc, depth[..., None], np.ones_like(depth)[..., None]], -1)
    return clip @ np.asarray(inv_view_proj, np.float64).T


def _to_pixels(clip, size) -> np.ndarray:
    ndc = clip[..., :2] / clip[..., 3:4]
    return np.stack([(ndc[..., 0] * 0.5 + 0.5) * size[0], (0.5 - 0.5 * ndc[..., 1]) * size[1]], -1)


def test_targets_exist_only_while_a_pass_reads_them(gpu, scene):
    """No reader: Main draws one attachment, the targets have no memory and Ambient is off;
    each reader adds exactly its target (TAA reads the motion); taking readers out undoes it."""
    h = Harness(gpu, scene, SIZE, PLAIN)
    late, sky = _count_attachments(h, "Main.Late"), _count_attachments(h, "Sky")
    h.render(CAM)
    assert (late, sky) == ([1], [1])
    made = h.graph.texture_names()
    assert not {NORMALS, MOTION, AMBIENT} & set(made)
    assert "Ambient" not in h.graph.pass_names()

    h.frame.insert(Reader("Normals reader", NORMALS), after="Main.Late")
    h.render(CAM)
    assert late[-1] == 2 and sky[-1] == 1 and NORMALS in h.graph.texture_names()
    h.frame.insert(Reader("Ambient reader", AMBIENT), before="Ambient")
    h.render(CAM)
    assert late[-1] == 3 and "Ambient" in h.graph.pass_names()
    h.frame.set_settings(taa=True)  # TAA follows the motion vectors: Main and Sky write them
    h.render(CAM)
    assert late[-1] == 4 and sky[-1] == 2
    assert h.graph.pass_named("Main.Late").writes == (DEPTH, HDR, NORMALS, MOTION, AMBIENT)

    h.frame.remove("Normals reader")
    h.frame.remove("Ambient reader")
    h.frame.set_settings(taa=False)
    h.render(CAM)
    assert (late[-1], sky[-1]) == (1, 1) and "Ambient" not in h.graph.pass_names()


def test_normals_match_the_analytic_normals(gpu, scene):
    """``frame.normals``: the octahedral view-space normal of the box's faces and the sphere,
    the material's roughness and metallic; the sky's defined value elsewhere."""
    h = Harness(gpu, scene, SIZE, PLAIN)
    h.frame.insert(Reader("Normals reader", NORMALS), after="Main.Late")
    h.render(CAM, 2)
    normals, depth = _read(h, NORMALS), _read(h, DEPTH)[..., 0]
    world = _unproject(h.frame.res.inv_view_proj, depth)
    with np.errstate(divide="ignore", invalid="ignore"):  # the sky is at w = 0
        world = world[..., :3] / world[..., 3:4]
    got = oct_decode(normals[..., :2])
    view = np.asarray(CAM.view(), np.float64)[:3, :3]

    on_sphere = np.abs(np.linalg.norm(world - SPHERE_C, axis=-1) - SPHERE_R) < 0.02
    world[depth == 0] = 1e6
    local = (np.c_[world.reshape(-1, 3), np.ones(depth.size)] @ np.linalg.inv(BOX_T).T)[:, :3]
    on_box = (np.abs(local).max(-1) < 0.51).reshape(depth.shape) & (depth > 0) & ~on_sphere
    sky = depth == 0
    assert on_sphere.sum() > 300 and on_box.sum() > 300 and sky.sum() > 1000

    want_sphere = (world - SPHERE_C) / SPHERE_R
    axis = np.abs(local).argmax(-1)  # the face: the largest local coordinate
    face = np.zeros_like(local)
    face[np.arange(len(local)), axis] = np.sign(local[np.arange(len(local)), axis])
    want_box = face @ np.linalg.inv(BOX_T[:3, :3])  # normals: inverse transpose
    want_box = want_box.reshape(*depth.shape, 3)
    for mask, want, tol in ((on_box, want_box, 0.5), (on_sphere, want_sphere, 2.0)):
        want_view = want[mask] @ view.T
        want_view /= np.linalg.norm(want_view, axis=-1, keepdims=True)
        cos = np.clip((got[mask] * want_view).sum(-1), -1, 1)
        assert np.degrees(np.arccos(cos)).max() < tol
    assert np.allclose(normals[on_sphere][:, 2:], (0.3, 0.7), atol=1e-3)
    assert np.allclose(normals[on_box][:, 2:], (0.8, 0.0), atol=1e-3)
    assert np.array_equal(normals[sky], np.tile([0.0, 0.0, 1.0, 0.0], (sky.sum(), 1)))


def test_motion_vectors_follow_a_moving_camera(gpu, scene):
    """``frame.motion`` against numpy: each pixel's surface (the sky's direction too)
    reprojected into the last frame's camera, with TAA's jitter taken out."""
    h = Harness(gpu, scene, SIZE, FrameSettings(taa=True, bloom=False, shadows=False))
    moved = Camera(eye=np.array([0.6, 1.1, 3.7]), target=np.array([0.1, 0.25, 0.0]), fov_y_deg=50.0)
    h.render(CAM)
    prev_view_proj = h.frame.res.view_proj  # unjittered
    h.render(moved)
    res = h.frame.res
    assert res.jitter != (0.0, 0.0)
    motion, depth = _read(h, MOTION)[..., :2], _read(h, DEPTH)[..., 0]
    point = _unproject(res.inv_view_proj, depth)  # homogeneous: the sky at w = 0 too
    px, _ = _pixels(SIZE)
    want = _to_pixels(point @ prev_view_proj.T, SIZE) - (px - np.array(res.jitter))
    assert np.abs(want).max() > 5.0  # the camera moved by pixels, not by rounding
    err = np.abs(motion - want).max(-1)
    assert err.max() < 0.05 + 2e-3 * np.abs(want).max()


def test_motion_vectors_follow_a_moving_instance(gpu, scene):
    """An instance moved between two frames (static camera): its pixels move by its
    projected displacement, the rest by nothing; a frame later, unmoved, all is still."""
    s = Scene(scene.meshes, scene.transforms.copy(), scene.mesh_ids.copy(), scene.colors.copy(),
              materials=scene.materials, material_ids=scene.material_ids)  # fmt: skip
    h = Harness(gpu, s, SIZE, PLAIN)
    h.frame.insert(Reader("Motion reader", MOTION), after="Main.Late")
    h.render(CAM, 2)
    before = s.transforms[1].astype(np.float64)
    after = translation(0.15, 0.1, 0.0) @ before
    s.set_transforms([1], after[None].astype(np.float32))
    h.render(CAM)
    motion, depth = _read(h, MOTION)[..., :2], _read(h, DEPTH)[..., 0]
    point = _unproject(h.frame.res.inv_view_proj, depth)
    with np.errstate(divide="ignore", invalid="ignore"):  # the sky is at w = 0
        world = point[..., :3] / point[..., 3:4]
    sphere = np.abs(np.linalg.norm(world - after[:3, 3], axis=-1) - SPHERE_R) < 0.02
    then = point @ (before @ np.linalg.inv(after)).T  # where the sphere's point was
    px, _ = _pixels(SIZE)
    want = _to_pixels(then @ h.frame.res.view_proj.T, SIZE) - px
    assert sphere.sum() > 200 and np.abs(want[sphere]).max() > 2.0
    assert np.abs(motion[sphere] - want[sphere]).max() < 0.05
    assert np.abs(motion[~sphere & (depth > 0)]).max() < 0.05  # the box stood still
    h.render(CAM)  # moved last frame, not in this one: its previous transform is its own
    assert np.abs(_read(h, MOTION)).max() < 0.05


def test_ambient_is_added_back_after_passes_that_modulate_it(gpu, scene, tmp_path):
    """A reader of ``frame.ambient`` leaves the picture as it was (the Ambient pass adds it
    back); a pass multiplying it by 0.25 darkens the HDR colour by 0.75 x the ambient exactly."""
    (tmp_path / "quarter.wgsl").write_text(
        '// #include "screen_common.wgsl"\n'
        "@fragment fn fs_main() -> @location(0) vec4f { return vec4f(0.25); }\n"
    )

    def hdr_and_ambient(technique):
        h = Harness(gpu, scene, SIZE, PLAIN)
        if technique == "reader":
            h.frame.insert(Reader("Ambient reader", AMBIENT), before="Ambient")
        elif technique == "quarter":
            quarter = ScreenPass("Quarter", h.frame.res, tmp_path / "quarter.wgsl",
                                 target=AMBIENT, blend=MULTIPLY)  # fmt: skip
            h.frame.insert(quarter, before="Ambient")
        h.render(CAM, 2)
        amb = _read(h, AMBIENT)[..., :3] if technique else None
        return _read(h, HDR)[..., :3], amb, _read(h, DEPTH)[..., 0]

    plain, _, depth = hdr_and_ambient(None)
    same, ambient, _ = hdr_and_ambient("reader")
    darker, quartered, _ = hdr_and_ambient("quarter")
    lit = depth > 0
    assert ambient[lit].min() > 0.01 and np.abs(ambient[~lit]).max() == 0  # the sky has none
    assert np.all(np.abs(same - plain) <= 1e-3 + 2.0**-10 * np.abs(plain))
    assert np.allclose(quartered, 0.25 * ambient, rtol=2e-3, atol=1e-3)
    # float16 colours: plain and darker each rounded (twice, blended): 2 ulps of the pixel
    err = np.abs((plain - darker) - 0.75 * ambient)
    assert np.all(err <= 1e-3 + 2 * 2.0**-10 * np.abs(plain))
