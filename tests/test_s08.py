"""s08, the A/B sample: each blur variant is a numpy Gaussian convolution of its input (read
back from the GPU), in the frame and on noise; one reference picture for all three; one run
of interleaved variants compared row by row; a variant's WGSL hot-reloaded."""

from __future__ import annotations

import json
import subprocess
import sys
from types import SimpleNamespace

import numpy as np
import pytest
import wgpu
from frame_harness import Harness, random_scene
from PIL import Image

from engine.graph import FrameContext, RenderGraph, TextureDesc
from engine.passes.resources import HDR
from engine.scene.camera import Camera
from engine.settings import FrameSettings
from engine.tools.dump.tool import read_texture
from samples.s08_blur import OUT, VARIANTS, GaussianBlur, add_blur, gaussian_weights
from tests.helpers import ROOT, run_sample

CAM = Camera(np.array([0.0, 6.0, 24.0]), np.array([0.0, 1.0, 0.0]), 55.0, 0.2)


def reference_blur(image: np.ndarray, radius: int) -> np.ndarray:
    """``(H, W, C)`` float64: ``image`` convolved with the 2D Gaussian of sigma radius / 3
    truncated at ``radius`` and normalised, edges clamped; summed tap by tap in 2D."""
    x = image.astype(np.float64)
    if radius == 0:
        return x
    t = np.arange(-radius, radius + 1)
    g = np.exp(-(t**2) / (2 * (radius / 3) ** 2))
    kernel = np.outer(g, g) / np.outer(g, g).sum()
    padded = np.pad(x, ((radius, radius), (radius, radius), (0, 0)), mode="edge")
    windows = np.lib.stride_tricks.sliding_window_view(padded, (2 * radius + 1,) * 2, (0, 1))
    return np.einsum("hwcij,ij->hwc", windows, kernel)


def rounding(variant: str, radius: int) -> float:
    """The relative error float32 arithmetic allows a variant's output (inputs and weights
    positive): recursive summation of n terms is within ``n u`` of the exact sum, u = 2^-24
    (Higham, "Accuracy and Stability of Numerical Algorithms", 2002, sec. 4.2); n: the taps
    summed one after another (naive: (2r + 1)^2 in one sum; the others 2r + 1, twice), plus 3
    for the weights' own rounding and their product."""
    taps = (2 * radius + 1) ** 2 if variant == "naive" else 2 * (2 * radius + 1)
    return (taps + 3) * 2.0**-24


def test_the_weights_are_the_normalised_gaussian():
    for r in (1, 6, 32):
        t = np.arange(r + 1)
        g = np.exp(-(t**2) * 4.5 / r**2)  # sigma = r / 3
        np.testing.assert_allclose(gaussian_weights(r), g / (g[0] + 2 * g[1:].sum()), rtol=1e-6)
    assert gaussian_weights(0).tolist() == [1.0]


@pytest.fixture(scope="module")
def noise_rig(gpu):
    """The ``Blur`` pass alone in a graph over a noise texture: 150x37 (two row tiles, the
    second partial; one column tile), values log-uniform over 0.007..100 (HDR light)."""
    d = gpu.device
    size = (150, 37)
    graph = RenderGraph(d, output_format="rgba8unorm", size=size)
    usage = wgpu.TextureUsage.COPY_DST
    noise = graph.create_texture("test.noise", TextureDesc("rgba32float", usage))
    graph.import_resource("test.noise")
    rng = np.random.default_rng(8)
    image = np.exp(rng.uniform(-5.0, 4.6, (size[1], size[0], 4))).astype(np.float32)
    d.queue.write_texture({"texture": noise}, image.tobytes(),
                          {"bytes_per_row": size[0] * 16, "rows_per_image": size[1]},
                          (*size, 1))  # fmt: skip
    view_uniform = d.create_buffer(size=512, usage=wgpu.BufferUsage.UNIFORM)
    res = SimpleNamespace(device=d, graph=graph, view_uniform=view_uniform)
    radius = [0]
    blur = graph.add(GaussianBlur(res, lambda: radius[0], source="test.noise"))

    def run(variant: str, r: int) -> np.ndarray:
        blur.variant, radius[0] = variant, r
        enc = d.create_command_encoder()
        graph.execute(enc, FrameContext(d, graph, 0, 0.0, size, None))
        d.queue.submit([enc.finish()])
        return read_texture(d, graph.texture(OUT)).astype(np.float64)

    return image, run


@pytest.mark.parametrize("variant", list(VARIANTS))
def test_each_variant_is_the_numpy_convolution_of_noise(noise_rig, variant):
    """Radius 0 is the identity to the bit; 1, 5 and 32 (past the image's height: the
    clamped edge dominates) equal the float64 2D sum within float32 rounding."""
    image, run = noise_rig
    assert (run(variant, 0) == image).all()
    for r in (1, 5, 32):
        got, want = run(variant, r), reference_blur(image, r)
        np.testing.assert_allclose(got, want, rtol=rounding(variant, r), err_msg=f"radius {r}")


def test_in_the_frame_the_blur_reads_the_hdr_colour_and_writes_it_back(gpu):
    """In the standard frame: ``blur.out`` is the numpy blur of ``frame.hdr`` as Sky left
    it (Blur.Copy off), the same for every variant; with Blur.Copy on, ``frame.hdr`` is
    ``blur.out`` rounded to float16."""
    h = Harness(gpu, random_scene(60, 5), size=(96, 64),
                settings=FrameSettings(bloom=False, taa=False, shadow_size=256))  # fmt: skip
    blur = add_blur(h.frame, lambda: 4)
    copy = h.graph.pass_named("Blur.Copy")
    names = h.graph.pass_names()
    assert names.index("Blur") == names.index("Sky") + 1 == names.index("Blur.Copy") - 1
    copy.enabled = False
    h.render(CAM, frames=2)
    hdr = read_texture(h.device, h.graph.texture(HDR)).astype(np.float32)
    want = reference_blur(hdr, 4)
    assert np.ptp(hdr[..., :3]) > 0.5  # a picture, not a flat colour
    for variant in VARIANTS:
        blur.variant = variant
        h.render(CAM)
        assert (read_texture(h.device, h.graph.texture(HDR)) == hdr).all()  # the same input
        got = read_texture(h.device, h.graph.texture(OUT)).astype(np.float64)
        np.testing.assert_allclose(got, want, rtol=rounding(variant, 4), err_msg=variant)
    copy.enabled = True
    h.render(CAM)
    out = read_texture(h.device, h.graph.texture(OUT))
    back = read_texture(h.device, h.graph.texture(HDR)).astype(np.float32)
    np.testing.assert_allclose(back, out, rtol=2**-10)  # float16: 11 significant bits


@pytest.mark.parametrize("variant", list(VARIANTS))
def test_every_variant_draws_the_reference_picture(variant, tmp_path, compare_reference):
    """The three variants' captures against one reference, to the 8-bit step."""
    out = tmp_path / f"{variant}.png"
    r = run_sample("s08", "--capture", str(out), "--size", "160x90", "--frames", "4",
                   "--radius", "4", "--shadow-size", "512", "--variant", variant)  # fmt: skip
    assert r.returncode == 0, r.stderr
    rgb = np.asarray(Image.open(out).convert("RGB"))
    compare_reference("s08_blur_160x90", rgb, tolerance=1)


def test_one_run_of_interleaved_variants_compares_the_blur_row_by_row(tmp_path):
    """``--variant-cycle`` records the variants in turn; ``lantern compare RUN.jsonl`` has
    the row ``gpu Blur`` for separable and for tiled against naive, with its interval."""
    run = tmp_path / "run.jsonl"
    r = run_sample("s08", "--capture", str(tmp_path / "x.png"), "--size", "64x36", "--frames",
                   "144", "--variant-cycle", "8", "--gpu-profile", "--shadow-size", "256",
                   "--telemetry", str(run))  # fmt: skip
    assert r.returncode == 0, r.stderr
    frames = [json.loads(x) for x in run.read_text().splitlines()]
    seen = {x["frame"]: x.get("variant") for x in frames if x["type"] == "frame"}
    assert len(seen) > 100 and all(v == list(VARIANTS)[(i // 8) % 3] for i, v in seen.items())
    page, png = tmp_path / "c.html", tmp_path / "c.png"
    c = subprocess.run([sys.executable, "-m", "engine.devtools", "compare", str(run),
                        "--settle", "2", "--fail-above", "1000", "--html", str(page),
                        "--png", str(png)],
                       cwd=ROOT, capture_output=True, text=True, timeout=120)  # fmt: skip
    assert c.returncode == 0, c.stdout + c.stderr
    html = page.read_text()  # every comparison, not only the last
    assert html.count("<svg") == 2 and "[separable]" in html and "[tiled]" in html
    from PIL import Image

    assert Image.open(png).height >= 2 * 300  # two figures stacked
    tables = c.stdout.split("\nA: ")
    assert len(tables) == 2 and "[naive]" in tables[0] and "[naive]" in tables[1]
    for table, variant in zip(tables, ("separable", "tiled"), strict=True):
        assert f"B: {run} [{variant}]" in table
        # 144 records: the run's warm-up is max(5, 10%) = 15, once, then 2 after each switch
        assert "frames, the run's first 15 and 2 after each switch left out" in table
        row = next(line for line in table.splitlines() if line.split()[:2] == ["gpu", "Blur"])
        lo, hi = (float(x) for x in row.split("[")[1].split("]")[0].split(","))
        assert lo <= hi  # the 95% interval of the difference, in ms
    assert c.stdout.count("gate: pass") == 2


def test_a_variants_wgsl_hot_reloads_and_its_cost_change_is_the_blurs_note(gpu, tmp_path):
    """The tiled variant's WGSL edited on disk (its sum halved): ``reload`` rebuilds its two
    pipelines and no other variant's, ``blur.out`` is exactly half of what it was, and the
    before/after cost of ``Blur`` reaches the HUD's notes (the perf table's NOTE column)."""
    import shutil

    from engine.profiling import FrameProfiler
    from engine.shader_registry import ShaderRegistry, set_shader_registry
    from engine.tools.reload import ReloadTool
    from engine.tools.reload.watch import HotReload
    from tests.tool_fakes import install_hud, make_ctx

    for f in (ROOT / "samples").glob("s08_blur*.wgsl"):  # edited here, not in the checkout
        shutil.copy(f, tmp_path / f.name)
    previous = set_shader_registry(gpu.device, ShaderRegistry(gpu.device, root=tmp_path))
    try:
        h = Harness(gpu, random_scene(40, 3), size=(96, 64),
                    settings=FrameSettings(bloom=False, taa=False, shadow_size=256))  # fmt: skip
        blur = add_blur(h.frame, lambda: 3)
        blur.variant = "tiled"
        h.graph.profiler = FrameProfiler(h.gpu, gpu=True, cpu=False, batch=1)
        ctx = make_ctx(h.gpu, h.graph, telemetry=h.loop.telemetry, overlay="off")
        ctx.loop = h.loop
        h.loop.between_frames.append(ctx.commands.run_pending)
        tool = ReloadTool(watch=HotReload(enabled=False))
        tool.cost.window = 10  # (at least MIN_SIDE readings a side)
        hud = install_hud(ctx, tools=[tool])
        h.render(CAM, frames=14, hooks=ctx.updates)
        before = read_texture(h.device, h.graph.texture(OUT))
        wgsl = tmp_path / "s08_blur_tiled.wgsl"
        wgsl.write_text(wgsl.read_text().replace("    return sum;", "    return 0.5 * sum;"))
        said = ctx.commands.execute("reload").text
        assert "s08_blur_tiled.wgsl: 2 pipelines" in said, said
        versions = {v: [s.shader.version for _, s in blur.stages[v]] for v in VARIANTS}
        assert versions == {"naive": [0], "separable": [0, 0], "tiled": [1, 1]}
        h.render(CAM, hooks=ctx.updates)
        after = read_texture(h.device, h.graph.texture(OUT))
        assert (after == 0.25 * before).all()  # rows, then columns: each halved, exactly
        for _ in range(60):
            if "Blur" in tool.cost.results:
                break
            h.render(CAM, frames=1, hooks=ctx.updates)
        assert "Blur" in tool.cost.results  # measured before and after the swap
        assert "Blur" in hud.notes.get("reload", {})
        ctx.close_all()
    finally:
        set_shader_registry(gpu.device, previous)


def test_no_post_with_what_only_blurs_is_one_line(tmp_path):
    """The blur works on the HDR colour, which only the post chain has: --no-post beside a
    variant, --variant-cycle or --radius is refused before the GPU; --no-post alone runs
    (Blur off, with a warning)."""
    from tests.helpers import run_sample

    png = tmp_path / "a.png"
    cases = {("--variant", "tiled"): "--variant tiled", ("--variant-cycle", "4"):
             "--variant-cycle", ("--radius", "20"): "--radius"}  # fmt: skip
    for extra, named in cases.items():
        r = run_sample("s08", "--size", "32x18", "--frames", "1", "--no-post", *extra,
                       "--capture", str(png))  # fmt: skip
        assert r.returncode == 2 and r.stderr.strip().endswith(f"drop --no-post or {named}")
        assert "Traceback" not in r.stderr and "GPU:" not in r.stdout and not png.exists()
    r = run_sample("s08", "--size", "32x18", "--frames", "1", "--no-post", "--capture", str(png))
    assert r.returncode == 0 and "Blur is off" in r.stderr and png.exists()
