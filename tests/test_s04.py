"""s04, screen-space ambient occlusion: the brute-force reference against its numpy twin on
a box on a plane; each variant against the reference there (the crease darkens, open ground
stays open); the AO darkens the ambient term only; a reference picture; --variant and the
shutdown report."""

from __future__ import annotations

import numpy as np
import pytest
from frame_harness import Harness
from PIL import Image

from engine.frame import VIEW_DTYPE
from engine.math3d import oct_decode, translation
from engine.passes.resources import AMBIENT, DEPTH, HDR, NORMALS
from engine.scene.camera import Camera
from engine.scene.meshes import box, plane
from engine.scene.scene import Mesh, Scene
from engine.settings import FrameSettings
from engine.tools.dump.tool import read_texture
from samples.s04_ssao import (
    AO,
    REFERENCE,
    REFERENCE_DIRECTIONS,
    REFERENCE_STEPS,
    VARIANTS,
    add_ssao,
    ssao_params,
)
from tests.helpers import run_sample

SIZE = (64, 48)
R, T = 1.0, 0.5
CAM = Camera(np.array([2.0, 1.6, 3.2]), np.array([0.0, 0.3, 0.0]), 50.0)
GOLDEN_ANGLE = np.pi * (3.0 - np.sqrt(5.0))


def box_on_plane() -> Scene:
    """A 1 m box standing on a 10 m x 10 m ground plane."""
    meshes = [Mesh.from_lods("ground", [plane(1.0)]), Mesh.from_lods("box", [box()])]
    rows = np.array([np.diag([10, 1, 10, 1]), translation(0, 0.5, 0)], np.float32)
    return Scene(meshes, rows, np.array([0, 1], np.uint32), np.ones((2, 4), np.float32))


@pytest.fixture(scope="module")
def rig(gpu):
    """The box on a plane at 64x48 (no TAA: no jitter), s04's passes with the reference on;
    ``views[0]``: the last frame's View uniform as ``VIEW_DTYPE``."""
    h = Harness(gpu, box_on_plane(), SIZE, FrameSettings(taa=False, bloom=False))
    knobs = {"radius": R, "thickness": T, "intensity": 1.0, "samples": 16, "denoise": 1}
    ssao = add_ssao(h.frame, lambda: ssao_params(*knobs.values()))
    ssao.reference.enabled = True
    views, pack = [None], h.frame._view_bytes

    def keep(*args):
        views[0] = np.frombuffer(pack(*args), VIEW_DTYPE)[0]
        return views[0].tobytes()

    h.frame._view_bytes = keep
    h.render(CAM, 2)
    return h, ssao, knobs, views


def read(h, name: str) -> np.ndarray:
    return read_texture(h.device, h.graph.texture(name)).astype(np.float64)


def reference_ao(depth, normals, view, pixels, radius, thickness) -> np.ndarray:
    """The numpy twin of s04_ssao_reference.wgsl (float64) at ``pixels`` ``(N, 2)`` (x, y):
    cosine-weighted visibility over the normal's hemisphere within ``radius``, marched in
    REFERENCE_STEPS steps against ``depth`` ``(H, W)`` (reverse-Z; 0 the sky) with the
    thickness ``thickness``; ``normals`` ``(H, W, 2)`` octahedral view-space normals; ``view``
    a ``VIEW_DTYPE`` record. Returns ``(N,)`` AO in 0..1."""
    h, w = depth.shape
    proj, inv_proj = view["proj"].astype(np.float64).T, view["inv_proj"].astype(np.float64).T
    zrow, wrow = inv_proj[2], inv_proj[3]
    with np.errstate(divide="ignore"):
        lin = -(zrow[2] * depth + zrow[3]) / (wrow[2] * depth + wrow[3])
    lin = np.where(depth > 0, lin, 1e30)  # the sky: infinitely far
    slope = np.zeros_like(lin)  # half the change to the nearer neighbour, each axis
    for axis in (0, 1):
        big = np.full_like(lin, 1e30)
        fwd, back = big.copy(), big.copy()
        d = np.abs(np.diff(lin, axis=axis))
        if axis == 0:
            fwd[:-1], back[1:] = d, d
        else:
            fwd[:, :-1], back[:, 1:] = d, d
        slope += 0.5 * np.minimum(fwd, back)

    x, y = pixels[:, 0], pixels[:, 1]
    d = depth[y, x]
    ndc = np.stack([(x + 0.5) * 2 / w - 1, 1 - (y + 0.5) * 2 / h, d, np.ones_like(d)], 1)
    hp = ndc @ inv_proj.T
    pos = hp[:, :3] / hp[:, 3:]
    n = oct_decode(normals[y, x])
    s = np.where(n[:, 2] >= 0, 1.0, -1.0)  # Duff et al. 2017's basis around n
    a = -1.0 / (s + n[:, 2])
    b = n[:, 0] * n[:, 1] * a
    tx = np.stack([1 + s * n[:, 0] ** 2 * a, s * b, -s * n[:, 0]], 1)
    bt = np.stack([b, s + n[:, 1] ** 2 * a, -n[:, 1]], 1)
    i = np.arange(REFERENCE_DIRECTIONS)
    u = (i + 0.5) / REFERENCE_DIRECTIONS
    local = np.stack([np.sqrt(u) * np.cos(i * GOLDEN_ANGLE), np.sqrt(u) * np.sin(i * GOLDEN_ANGLE),
                      np.sqrt(1 - u)], 1)  # fmt: skip
    dirs = (local[None, :, 0:1] * tx[:, None] + local[None, :, 1:2] * bt[:, None]
            + local[None, :, 2:3] * n[:, None])  # fmt: skip
    state = np.zeros(dirs.shape[:2])  # 0 marching, 1 blocked, -1 stopped open
    for k in range(1, REFERENCE_STEPS + 1):
        q = pos[:, None] + dirs * (radius * k / REFERENCE_STEPS)
        c = np.concatenate([q, np.ones(q.shape[:2] + (1,))], 2) @ proj.T
        sx = (0.5 + 0.5 * c[..., 0] / c[..., 3]) * w
        sy = (0.5 - 0.5 * c[..., 1] / c[..., 3]) * h
        off = (c[..., 3] <= 0) | (sx < 0) | (sy < 0) | (sx >= w) | (sy >= h)
        tx_, ty_ = np.clip(np.floor(sx), 0, w - 1).astype(int), np.clip(np.floor(sy), 0, h - 1)
        z, sl = lin[ty_.astype(int), tx_], slope[ty_.astype(int), tx_]
        behind = -q[..., 2] - z - sl - 1e-4 * -q[..., 2]
        hit = (z < 1e30) & (behind > 0) & (behind <= thickness)
        marching = state == 0
        state[marching & off] = -1
        state[marching & ~off & hit] = 1
    return (state != 1).mean(axis=1)


def test_the_reference_pass_is_its_numpy_twin(rig):
    """SSAO.Reference on the GPU against the float64 twin at every pixel with geometry:
    directions may flip where a step lands within float32 rounding of a texel edge or of
    the thickness, so the bound is a mean difference under 1/256 and 98% of pixels within
    3 directions (3/256)."""
    h, _, _, views = rig
    depth = read(h, DEPTH)[..., 0]
    pixels = np.argwhere(depth > 0)[:, ::-1]
    want = reference_ao(depth, read(h, NORMALS)[..., :2], views[0], pixels, R, T)
    got = read(h, REFERENCE)[..., 0][pixels[:, 1], pixels[:, 0]]
    diff = np.abs(got - want)
    assert len(pixels) > 1000 and want.min() < 0.6 and want.max() == 1.0  # a crease, open ground
    assert diff.mean() < 1 / 256, diff.mean()
    assert (diff <= 3 / 256 + 1e-9).mean() > 0.98, np.sort(diff)[-20:]


@pytest.mark.parametrize("variant", list(VARIANTS))
def test_each_variant_against_the_reference_on_a_box_on_a_plane(rig, variant):
    """Mean absolute error over the geometry under 0.05 (GTAO estimates the horizon-bounded
    visibility without the thickness: a slightly different quantity, compared anyway); the
    crease (reference below 0.7) darkens to under 0.85 on average; open ground (reference
    1) stays above 0.95 on average."""
    h, ssao, _, _ = rig
    ref = read(h, REFERENCE)[..., 0]
    geometry = read(h, DEPTH)[..., 0] > 0
    ssao.run(ssao.stages[variant])
    ao = read(h, AO)[..., 0]
    crease, open_ = geometry & (ref < 0.7), geometry & (ref >= 1.0)
    assert crease.sum() > 20 and open_.sum() > 200
    assert np.abs(ao - ref)[geometry].mean() < 0.05
    assert ao[crease].mean() < 0.85, ao[crease].mean()
    assert ao[open_].mean() > 0.95, ao[open_].mean()
    assert ((ao >= 0) & (ao <= 1)).all()


def test_the_ao_darkens_the_ambient_term_only(rig):
    """Intensity 0 (ao^0 = 1): ``frame.hdr`` = H0, ``frame.ambient`` the ambient term A, and
    H0 is the picture without SSAO.Apply (the Main passes add A themselves then) to float16
    rounding. Intensity 2: frame.hdr = H0 - A (1 - ao^2) to float16 rounding, so the sun's,
    the sky's and the emitted light are unchanged; where the AO is 1 the pixel is H0."""
    h, ssao, knobs, _ = rig
    try:
        knobs["intensity"] = 0.0
        h.render(CAM)
        h0, amb = read(h, HDR)[..., :3], read(h, AMBIENT)[..., :3]
        ssao.apply.enabled = False
        h.render(CAM)
        plain = read(h, HDR)[..., :3]
        ssao.apply.enabled = True
        knobs["intensity"] = 2.0
        h.render(CAM)
        h1, ao = read(h, HDR)[..., :3], read(h, AO)[..., :1]
    finally:
        knobs["intensity"], ssao.apply.enabled = 1.0, True
    half = 2**-10  # float16: 11 significant bits, a rounding or two
    np.testing.assert_allclose(plain, h0, rtol=2 * half, atol=1e-4)
    want = h0 - amb * (1 - np.clip(ao, 1e-4, 1) ** 2)
    assert (amb > 0).any() and (ao < 0.7).any() and (h1 < h0 - 0.05).any()
    np.testing.assert_allclose(h1, want, rtol=2 * half, atol=half * amb.max())
    open_ = np.broadcast_to(ao >= 1.0, h1.shape)
    np.testing.assert_allclose(h1[open_], h0[open_], rtol=half)


def test_the_s04_picture_and_the_shutdown_report(tmp_path, compare_reference):
    """s04 as a user runs it (gtao-half from --variant): the picture against its reference
    to the 8-bit step, the denoised AO dumped, and with --gpu-profile the report: a row per
    variant with its error against the reference and the variant run timed."""
    out, dump = tmp_path / "s04.png", tmp_path / "ao.png"
    r = run_sample("s04", "--capture", str(out), "--size", "160x90", "--frames", "3",
                   "--shadow-size", "512", "--variant", "gtao-half", "--gpu-profile",
                   "--dump", "ssao.ao", str(dump))  # fmt: skip
    assert r.returncode == 0, r.stderr
    compare_reference("s04_ssao_160x90", np.asarray(Image.open(out).convert("RGB")))
    ao = np.asarray(Image.open(dump).convert("L"))
    assert ao.shape == (90, 160) and ao.min() < 128 and np.median(ao) > 200
    rows = {line.split()[0]: line.split() for line in r.stdout.splitlines()[-8:] if line}
    for v in VARIANTS:
        assert 0.0 <= float(rows[v][1]) < 0.1, r.stdout
    assert "frames)" in " ".join(rows["gtao-half"]) and "n/a" in " ".join(rows["gtao"])
    bad = run_sample("s04", "--capture", str(tmp_path / "x.png"), "--variant", "nope")
    assert bad.returncode != 0 and "nope" in bad.stderr and "Traceback" not in bad.stderr


def test_the_raw_and_the_denoised_ao_are_inspectable(gpu, rig):
    """``inspect ssao.raw`` and ``inspect ssao.ao`` (the console's resource viewer): their
    GPU statistics equal numpy's of the textures read back."""
    from engine.tools.inspector.tool import InspectorTool
    from tests.test_inspect import check
    from tests.tool_fakes import make_ctx

    h, ssao, _, _ = rig
    ctx = make_ctx(gpu, h.graph)
    tool = ctx.install(InspectorTool())
    for name in ("ssao.raw", AO):
        r = ctx.commands.execute(f"inspect {name}")
        assert r.ok, r.text
        h.render(CAM, 3)
        stats = tool.readback.drain()
        check(stats, read(h, name)[..., 0].astype(np.float32))
        assert stats.lo < 0.6 and stats.hi == 1.0
    ctx.commands.execute("inspect off")


def test_a_dump_of_what_the_variant_does_not_write_is_one_line_and_no_file(tmp_path):
    """``ssao.raw`` under ``gtao-half`` (its stages write ``ssao.raw.half``): the variant is
    applied after the options are checked, so the end of the run says it, writes nothing."""
    out = tmp_path / "raw.png"
    r = run_sample("s04", "--size", "64x36", "--frames", "2", "--variant", "gtao-half", "--dump",
                   "ssao.raw", str(out), "--capture", str(tmp_path / "f.png"))  # fmt: skip
    assert r.returncode == 1 and not out.exists()
    assert "no pass writes 'ssao.raw'" in r.stderr and "--variant gtao or hemisphere" in r.stderr
    assert "Traceback" not in r.stderr
