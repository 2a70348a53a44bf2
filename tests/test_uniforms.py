"""Uniform structs packed by field name from numpy structured dtypes that mirror the WGSL:
the names, order, offsets and sizes are read from the shader source and compared."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

from engine.culling.cull import CULL_DTYPE, cull_uniform
from engine.frame import VIEW_DTYPE
from engine.lights.gpu import PARAMS_DTYPE as LIGHT_PARAMS_DTYPE
from engine.lights.model import LIGHT_DTYPE

SHADERS = Path(__file__).resolve().parents[1] / "shaders"
# WGSL (size, alignment) of the member types these structs use (WGSL spec, "Memory Layout")
SIZES = {"mat4x4f": (64, 16), "vec4f": (16, 16), "vec4u": (16, 16), "vec3f": (12, 16),
         "f32": (4, 4), "u32": (4, 4)}  # fmt: skip


def wgsl_layout(file: str, struct: str) -> list[tuple[str, int, int]]:
    """``(name, offset, size)`` of each member of ``struct`` in ``shaders/file``."""
    src = (SHADERS / file).read_text()
    body = re.search(rf"struct {struct}\s*{{(.*?)}};", src, re.S).group(1)
    out, offset = [], 0
    for name, ty in re.findall(r"(\w+)\s*:\s*([\w<>, ]+?)\s*,\s*(?://[^\n]*)?\n", body + "\n"):
        m = re.fullmatch(r"array<(\w+),\s*(\d+)>", ty)
        size, align = SIZES[m.group(1)] if m else SIZES[ty]
        if m:
            size *= int(m.group(2))  # vec4 elements: stride 16, no padding
        offset = -(-offset // align) * align
        out.append((name, offset, size))
        offset += size
    return out


@pytest.mark.parametrize(
    "file,struct,dtype",
    [
        ("cull.wgsl", "Cull", CULL_DTYPE),
        ("frame_common.wgsl", "View", VIEW_DTYPE),
        ("lights_common.wgsl", "LightParams", LIGHT_PARAMS_DTYPE),
        ("lights_common.wgsl", "Light", LIGHT_DTYPE),  # a storage array's element: 16-aligned
    ],
)
def test_dtype_mirrors_the_wgsl_struct(file, struct, dtype):
    layout = wgsl_layout(file, struct)
    assert [n for n, _, _ in layout] == list(dtype.names)
    for name, offset, size in layout:
        field, at = dtype.fields[name][:2]
        assert (at, field.itemsize) == (offset, size), name
    end = layout[-1][1] + layout[-1][2]
    assert dtype.itemsize == -(-end // 16) * 16 and dtype.itemsize % 16 == 0


def test_cull_uniform_puts_each_value_in_its_field():
    view = np.arange(16, dtype=np.float32).reshape(4, 4)
    data = cull_uniform(
        view=view,
        planes=np.ones((6, 4)),
        light_planes=np.full((5, 4), 2.0),
        eye=(1.0, 2.0, 3.0),
        p00=0.5,
        p11=0.75,
        near=0.1,
        screen=(640, 360),
        pyramid=(512, 256),
        levels=10,
        count=1234,
        flags=5,
        batches=12,
        region_slots=99,
        lod_base_px=160.0,
    )
    u = np.frombuffer(data, CULL_DTYPE)[0]
    raw = np.frombuffer(data, np.float32)
    assert raw[1] == view[1, 0]  # column-major: the second float is row 1 of column 0
    assert (u["light_planes"][:5] == 2.0).all() and (u["light_planes"][5:] == 0.0).all()
    assert tuple(u["counts"]) == (1234, 5, 12, 99) and tuple(u["misc"]) == (10, 6, 5, 1)
    assert tuple(u["proj"]) == pytest.approx((0.5, 0.75, 0.1, 360.0))
    # three cascades' planes: cascade c at rows 6 c .. 6 c + 4, the rest zero
    cascades = [np.full((5, 4), 10.0 + c) for c in range(3)]
    data = cull_uniform(view=view, planes=np.ones((6, 4)), light_planes=cascades,
                        eye=(1.0, 2.0, 3.0), p00=0.5, p11=0.75, near=0.1, screen=(640, 360),
                        pyramid=(512, 256), levels=10, count=1234, flags=5, batches=12,
                        region_slots=99, lod_base_px=160.0)  # fmt: skip
    u = np.frombuffer(data, CULL_DTYPE)[0]
    want = np.zeros((24, 4), np.float32)
    for c in range(3):
        want[6 * c : 6 * c + 5] = 10.0 + c
    assert (u["light_planes"] == want).all() and tuple(u["misc"]) == (10, 6, 5, 3)


def _view_reference(frame, camera, view_proj, fit, view, proj) -> bytes:
    """The ``View`` uniform packed field by field into a ``VIEW_DTYPE`` record."""
    from engine.frame import GROUND, SKY_ZENITH, SUN_COLOR
    from engine.passes.resources import SKY_HORIZON
    from engine.passes.shadow import BLEND_BAND

    s = frame.settings
    u = np.zeros((), VIEW_DTYPE)
    u["view_proj"] = view_proj.T
    u["inv_view_proj"] = frame.res.inv_view_proj.T
    u["light_view_proj"] = fit.view_proj.T
    u["eye"] = (*camera.eye, s.fog_density)
    u["sun_dir"] = (*frame.scene.sun_direction, 1.0 if s.shadows else 0.0)
    u["sun_color"] = (*SUN_COLOR, fit.texel_world)
    u["sky_zenith"] = (*SKY_ZENITH, s.shadow_size)
    u["sky_horizon"] = (*SKY_HORIZON, 1.0 if s.auto_exposure else s.exposure)
    u["ground"] = (*GROUND, 0.0)
    r = frame.res
    u["view"], u["proj"], u["inv_proj"] = view.T, proj.T, np.linalg.inv(proj).T
    u["prev_view_proj"] = (r.view_proj if r.prev_view_proj is None else r.prev_view_proj).T
    u["jitter"] = (*r.jitter, *r.prev_jitter)
    u["size"] = (*r.size, 1 / r.size[0], 1 / r.size[1])
    n = len(fit.cascades)
    for c, f in enumerate(fit.cascades):
        u["cascade_view_proj"][c] = f.view_proj.T
        u["cascade_texel"][c] = f.texel_world
    u["cascade_split"][:n] = fit.splits[1:]
    u["cascade_params"] = (n, BLEND_BAND, 1 / s.shadow_size, 1.0 if s.shadow_snap else 0.0)
    u["cascade_depth"] = -view[2]  # the rendering camera's (no other fitted)
    return u.tobytes()


@pytest.mark.parametrize("exposure,cascades", [("auto", 1), (2.5, 3)])
def test_view_uniform_packing_matches_the_structured_dtype(gpu, exposure, cascades):
    """The per-frame packer (one struct.pack in field order) writes what a ``VIEW_DTYPE``
    record filled field by field holds, byte for byte, for a jittered camera."""
    from frame_harness import Harness, random_scene

    from engine.scene.camera import Camera
    from engine.settings import FrameSettings

    settings = FrameSettings(exposure=exposure, cascades=cascades, shadow_snap=cascades == 1)
    h = Harness(gpu, random_scene(5, 0), settings=settings)
    cam = Camera(np.array([3.0, 4.0, 9.0]), np.array([0.5, 1.0, 0.0]), 50.0, 0.2)
    h.render(cam, frames=2)
    f = h.frame
    vp = cam.proj(96 / 64) @ cam.view() + np.float32(0.01)  # any matrix: it is copied
    fit = f.res.shadow.fit(vp, f.scene, None, cascades=cascades)
    view, proj = cam.view(), cam.proj(96 / 64) + 0.001  # any matrices: they are copied
    got = f._view_bytes(cam, vp, fit, view, proj)
    want = np.frombuffer(_view_reference(f, cam, vp, fit, view, proj), np.float32)
    n = VIEW_DTYPE.fields["view"][1] // 4  # the fields before the inverse: exact
    assert got[: 4 * n] == want[:n].tobytes()
    inv = VIEW_DTYPE.fields["inv_proj"][1] // 4  # inverse4 is within a few ulps of numpy
    np.testing.assert_allclose(np.frombuffer(got, np.float32)[inv : inv + 16], want[inv : inv + 16],
                               rtol=1e-5, atol=1e-6)  # fmt: skip
    rest = VIEW_DTYPE.fields["prev_view_proj"][1]
    assert got[rest:] == want.tobytes()[rest:]
    assert f.res.size == (96, 64) and f.res.prev_jitter == f.jitter_sequence[0]
    raw = np.frombuffer(got, np.float32)
    assert raw[1] == vp[1, 0]  # column-major
