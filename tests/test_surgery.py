"""A technique inside the standard frame (issue 26): passes inserted, replaced and removed
from a sample, each change checked at once; a sample's own knobs and variants; every tool on
an inserted pass; the example sample outside the repository."""

from __future__ import annotations

import json
import shutil
import struct
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
from frame_harness import Harness, random_scene
from PIL import Image

from engine.graph import OUTPUT, GraphError, TextureDesc
from engine.passes.resources import DEPTH, HDR, TAA
from engine.passes.screen import ScreenCompute, ScreenPass
from engine.scene.camera import Camera
from engine.settings import FrameSettings
from tests.helpers import ROOT

EXAMPLE = ROOT / "docs" / "examples" / "vignette"
CAM = Camera(np.array([0.0, 6.0, 24.0]), np.array([0.0, 1.0, 0.0]), 55.0, 0.2)
WGSL = """
// #include "screen_common.wgsl"
@group(0) @binding(1) var<uniform> params: vec4f;
@group(0) @binding(2) var grad_in: texture_2d<f32>;
@fragment fn fs_show(@builtin(position) frag: vec4f) -> @location(0) vec4f {
    let g = textureLoad(grad_in, vec2i(frag.xy), 0).r;
    return vec4f(g, 0.0, 0.0, 1.0);
}
@fragment fn fs_tone(@builtin(position) frag: vec4f) -> @location(0) vec4f {
    let c = textureLoad(grad_in, vec2i(frag.xy), 0).rgb * params.x;
    return vec4f(c / (1.0 + c), 1.0);  // Reinhard: x / (1 + x)
}
"""
GRAD = """
// #include "screen_common.wgsl"
@group(0) @binding(1) var<uniform> params: vec4f;
@group(0) @binding(2) var out_tex: texture_storage_2d<r32float, write>;
@compute @workgroup_size(8, 8)
fn cs_main(@builtin(global_invocation_id) id: vec3u) {
    let size = textureDimensions(out_tex);
    if (id.x >= size.x || id.y >= size.y) { return; }
    textureStore(out_tex, id.xy, vec4f((f32(id.x) + 0.5) / f32(size.x), 0.0, 0.0, 1.0));
}
"""


@pytest.fixture
def h(gpu):
    return Harness(gpu, random_scene(40, 3), settings=FrameSettings(bloom=False, taa=False))


def test_each_bad_change_is_one_graph_error_and_changes_nothing(h, tmp_path):
    (tmp_path / "s.wgsl").write_text(WGSL)
    f, before = h.frame, [p.name for p in h.graph.passes]

    def show(name="Show", reads=("mine.nothing",)):
        p = ScreenPass(name, f.res, tmp_path / "s.wgsl", inputs=(HDR,), entry="fs_show")
        p.reads = tuple(reads)
        return p

    cases = [
        (lambda: f.insert(show(reads=()), after="Nope"), "cannot insert 'Show' next to 'Nope'"),
        (lambda: f.insert(show(reads=()), after="Post", before="Sky"), "(one)"),
        (lambda: f.insert(show(), after="Post"), "pass 'Show' reads 'mine.nothing'"),
        (lambda: f.insert(show("Sky", ()), after="Post"), "already has a pass named 'Sky'"),
        (lambda: f.insert(show(reads=(HDR,)), before="Main.Early"), "only the later pass"),
        (lambda: f.insert(show(reads=(TAA,)), after="Post"), "'post.taa' but no pass writes"),
        (lambda: f.remove("Main.Early"), "take 'Main.Early' out: 'HiZ' reads 'frame.depth'"),
        (lambda: f.remove("Nope"), "cannot remove 'Nope'"),
        (lambda: f.replace("Post", show("ToneMap", reads=("mine.x",))), "reads 'mine.x'"),
    ]
    for change, words in cases:
        with pytest.raises(GraphError) as e:
            change()
        assert words in str(e.value) and "\n" not in str(e.value)
        assert [p.name for p in h.graph.passes] == before  # nothing changed
    # an anchor a knob turned off still places the pass: after Post.TAA with TAA off
    assert not h.graph.pass_named("Post.TAA").enabled
    f.insert(show("AfterTaa", reads=(HDR,)), after="Post.TAA")
    names = [p.name for p in h.graph.passes]
    assert names.index("AfterTaa") == names.index("Post.TAA") + 1


def test_an_inserted_compute_pass_feeds_an_inserted_render_pass(h, tmp_path):
    """A compute pass writes a gradient into a graph texture; a render pass after Post shows
    it: each output pixel is the hand-derived ``(x + 0.5) / width`` (sRGB-encoded red)."""
    (tmp_path / "g.wgsl").write_text(GRAD)
    (tmp_path / "s.wgsl").write_text(WGSL)
    import wgpu

    usage = wgpu.TextureUsage.STORAGE_BINDING | wgpu.TextureUsage.TEXTURE_BINDING
    h.graph.create_texture("mine.grad", TextureDesc("r32float", usage))
    f = h.frame
    f.insert(ScreenCompute("Grad", f.res, tmp_path / "g.wgsl", target="mine.grad"), after="Sky")
    show = ScreenPass("Show", f.res, tmp_path / "s.wgsl", inputs=("mine.grad",), entry="fs_show")
    f.insert(show, after="Post")
    h.render(CAM, frames=1)
    got = h.target.read_rgba()  # (H, W, 4) uint8, sRGB-encoded
    w = got.shape[1]
    lin = (np.arange(w) + 0.5) / w
    want = np.where(lin <= 0.0031308, 12.92 * lin, 1.055 * lin ** (1 / 2.4) - 0.055) * 255
    assert np.abs(got[:, :, 0].astype(float) - want[None, :]).max() <= 1.0
    assert (got[:, :, 1:3] == 0).all()


COUNT = """
// #include "screen_common.wgsl"
@group(0) @binding(1) var<uniform> params: vec4f;
@group(0) @binding(2) var<storage, read_write> count: array<atomic<u32>, 2>;
@group(0) @binding(3) var out_tex: texture_storage_2d<r32float, write>;
@compute @workgroup_size(8, 8)
fn cs_main(@builtin(global_invocation_id) id: vec3u) {
    let size = textureDimensions(out_tex);
    if (id.x >= size.x || id.y >= size.y) { return; }
    atomicAdd(&count[0], u32(STEP));
// #if ODD
    if ((id.x & 1u) == 1u) { atomicAdd(&count[1], 1u); }
// #endif
    textureStore(out_tex, id.xy, vec4f(1.0));
}
"""


def test_a_screen_pass_adds_to_a_storage_buffer_and_takes_defines(h, tmp_path):
    """``storage=`` binds a graph buffer read-write after the inputs (the pass reads and
    writes it); ``defines=`` picks the file's variant: each texel adds STEP (3) to
    counter 0 and, with ODD, odd columns 1 to counter 1."""
    import wgpu

    (tmp_path / "c.wgsl").write_text(COUNT)
    usage = wgpu.TextureUsage.STORAGE_BINDING
    h.graph.create_texture("mine.grad", TextureDesc("r32float", usage))
    buf = h.graph.create_buffer("mine.count", size=8, usage=wgpu.BufferUsage.STORAGE
                                | wgpu.BufferUsage.COPY_SRC)  # fmt: skip
    h.graph.import_resource("mine.count")  # zero: made by the graph, written by no pass
    f = h.frame
    with pytest.raises(GraphError, match="'mine.none' is not a graph buffer"):
        ScreenCompute("Count", f.res, tmp_path / "c.wgsl", target="mine.grad",
                      storage=("mine.none",), defines={"STEP": 3})  # fmt: skip
    count = ScreenCompute("Count", f.res, tmp_path / "c.wgsl", target="mine.grad",
                          storage=("mine.count",), defines={"STEP": 3, "ODD": True})  # fmt: skip
    assert "mine.count" in count.reads and "mine.count" in count.writes
    f.insert(count, after="Sky")
    h.render(CAM, frames=1)
    w, hh = h.graph.size
    assert h.read(buf).tolist() == [3 * w * hh, (w // 2) * hh]


def test_a_replaced_post_is_the_users_tone_map_of_the_hdr_target(h, tmp_path):
    """Post replaced by a Reinhard tone map: the output is ``x / (1 + x)`` of the HDR dump
    times the exposure, in numpy, to the 8-bit step; the HUD's pass would still come after."""
    (tmp_path / "s.wgsl").write_text(WGSL)
    f = h.frame
    exposure = 0.9
    tone = ScreenPass("ToneMap", f.res, tmp_path / "s.wgsl", inputs=(HDR,), entry="fs_tone",
                      params=lambda: struct.pack("<4f", exposure, 0, 0, 0), load=False)  # fmt: skip
    f.replace("Post", tone)
    assert "Post" not in h.graph.pass_names() and f.res.output_pass is tone
    h.render(CAM, frames=1)
    from engine.tools.dump.tool import read_texture

    hdr = read_texture(h.device, h.graph.texture(HDR))[..., :3].astype(np.float64)
    c = hdr * exposure
    lin = c / (1 + c)
    want = np.where(lin <= 0.0031308, 12.92 * lin, 1.055 * lin ** (1 / 2.4) - 0.055) * 255
    got = h.target.read_rgba()[..., :3].astype(np.float64)
    assert np.abs(got - want).max() <= 1.0


def test_removing_a_pass_nothing_else_needs(h):
    f = h.frame
    p = f.remove("Post.Bloom")
    assert p.name == "Post.Bloom" and "Post.Bloom" not in [q.name for q in h.graph.passes]
    h.render(CAM, frames=1)  # the frame still runs without it


def _run(args, cwd, timeout=300):
    return subprocess.run([sys.executable, *args], cwd=cwd, capture_output=True, text=True,
                          timeout=timeout)  # fmt: skip


def _srgb_decode(u8):
    c = u8 / 255.0
    return np.where(c <= 0.04045, c / 12.92, ((c + 0.055) / 1.055) ** 2.4)


def _srgb_encode(lin):
    return np.where(lin <= 0.0031308, 12.92 * lin, 1.055 * lin ** (1 / 2.4) - 0.055) * 255


@pytest.fixture(scope="module")
def outside(tmp_path_factory):
    """The README's example sample, copied out of the repository with its WGSL beside it."""
    d = tmp_path_factory.mktemp("outside")
    for f in EXAMPLE.iterdir():
        shutil.copy(f, d / f.name)
    return d


def test_the_example_sample_outside_the_repository_darkens_exactly_its_corners(outside):
    """``vignette 0`` leaves the frame as it is (a multiply by 1); ``--vignette 0.7`` scales
    each pixel's linear colour by ``1 - 0.7 r^2`` (r: 1 in the corners), to the 8-bit step."""
    common = ["vignette.py", "--size", "160x90", "--frames", "2"]
    r0 = _run([*common, "--capture", "a.png", "--vignette", "0"], outside)
    r1 = _run([*common, "--capture", "b.png", "--vignette", "0.7"], outside)
    assert r0.returncode == 0 and r1.returncode == 0, r0.stderr + r1.stderr
    a = np.asarray(Image.open(outside / "a.png").convert("RGB"), np.float64)
    b = np.asarray(Image.open(outside / "b.png").convert("RGB"), np.float64)
    h, w = a.shape[:2]
    y, x = np.mgrid[0:h, 0:w] + 0.5
    r2 = ((x / w * 2 - 1) ** 2 + (y / h * 2 - 1) ** 2) * 0.5
    want = _srgb_encode(_srgb_decode(a) * (1 - 0.7 * r2)[..., None])
    assert np.abs(b - want).max() <= 1.5
    assert (b[0, 0] < a[0, 0]).all() or a[0, 0].max() == 0  # the corner darker


def test_the_examples_knob_is_a_flag_and_a_command(outside):
    r = _run(["vignette.py", "--help"], outside)
    assert "--vignette X" in r.stdout and "how dark the corners get" in r.stdout
    r = _run(["vignette.py", "--vignette", "2", "--capture", "x.png"], outside)
    assert r.returncode == 2 and "argument --vignette: expected a number from 0 to 1" in r.stderr


EVERY_TOOL = '''
"""A sample outside the repository: a compute pass and a render pass of its own."""
from pathlib import Path
import wgpu
from engine.app import Sample, main
from engine.frame import StandardFrame
from engine.graph import TextureDesc
from engine.passes.resources import HDR
from engine.passes.screen import ScreenCompute, ScreenPass
from engine.scene.procedural import city
HERE = Path(__file__).parent

class Mine(Sample):
    name = "mine"
    description = "passes of its own in the standard frame"
    variants = ("plain", "bright")

    def build(self, graph):
        scene, self.path = city(300, seed=0)
        self.frame = f = StandardFrame(self.app.gpu, graph, scene)
        f.register_commands(self.app.commands)
        usage = wgpu.TextureUsage.STORAGE_BINDING | wgpu.TextureUsage.TEXTURE_BINDING
        graph.create_texture("mine.grad", TextureDesc("r32float", usage))
        f.insert(ScreenCompute("Grad", f.res, HERE / "g.wgsl", target="mine.grad"), after="Sky")
        f.insert(ScreenPass("Show", f.res, HERE / "s.wgsl", inputs=("mine.grad",),
                            entry="fs_show"), after="Post")
        self.shown = []

    def set_variant(self, name):
        self.shown.append(name)

    def update(self, ctx):
        self.frame.update(ctx, self.path.at(ctx.time))

if __name__ == "__main__":
    main(Mine)
'''


@pytest.fixture(scope="module")
def mine(tmp_path_factory):
    d = tmp_path_factory.mktemp("mine")
    (d / "mine.py").write_text(textwrap.dedent(EVERY_TOOL))
    (d / "g.wgsl").write_text(GRAD)
    (d / "s.wgsl").write_text(WGSL)
    return d


def test_every_tool_sees_an_inserted_pass(mine):
    """Timed on the GPU and the CPU in the shutdown table, the trace, the telemetry and its
    per-draw records; listed by --graph with its edges; its texture dumped; compared."""
    args = ["mine.py", "--size", "96x64", "--frames", "30", "--gpu-profile", "draws",
            "--profile"]  # fmt: skip
    r = _run([*args, "--capture", "a.png", "--trace", "t.json", "--telemetry", "a.jsonl",
              "--dump", "mine.grad", "g.npy"], mine)  # fmt: skip
    assert r.returncode == 0, r.stderr
    gpu_table = r.stdout[r.stdout.index("GPU frame") :]
    assert "Grad" in gpu_table and "Show" in gpu_table
    assert r.stdout.count(" Grad ") >= 2  # the GPU table and the CPU table
    g = np.load(mine / "g.npy")  # the compute pass's target: (x + 0.5) / width
    assert np.allclose(g[..., 0] if g.ndim == 3 else g, ((np.arange(96) + 0.5) / 96)[None, :])
    events = json.loads((mine / "t.json").read_text())["traceEvents"]
    names = {e.get("name") for e in events if e.get("ph") == "X"}
    assert {"Grad", "Show"} <= names
    lines = [json.loads(x) for x in (mine / "a.jsonl").read_text().splitlines()]
    table = [n for x in lines if x["type"] == "names" for n in x["names"]]
    assert {"Grad", "Show"} <= set(table)
    drawn = {table[p[0]] for x in lines if x["type"] == "frame" for p in x.get("draws") or ()}
    assert {"Show"} <= drawn  # its draw timed by the per-draw profiler
    r = _run(["mine.py", "--graph"], mine)
    text = r.stdout
    assert "Grad" in text and "writes mine.grad" in text and "reads  mine.grad" in text
    r = _run([*args[:-2], "--capture", "b.png", "--telemetry", "b.jsonl"], mine)
    assert r.returncode == 0, r.stderr
    r = _run(["-m", "engine.devtools", "compare", "a.jsonl", "b.jsonl"], mine)
    assert r.returncode == 0, r.stderr
    assert any(line.split()[:2] == ["gpu", "Grad"] for line in r.stdout.splitlines())


def test_variants_switch_and_one_run_compares_them(mine):
    """``--variant-cycle`` interleaves the variants in blocks; each record carries its
    variant; ``lantern compare RUN.jsonl`` compares them N-way."""
    r = _run(["mine.py", "--size", "64x36", "--frames", "100", "--gpu-profile", "--variant-cycle",
              "10", "--capture", "c.png", "--telemetry", "v.jsonl"], mine)  # fmt: skip
    assert r.returncode == 0, r.stderr
    frames = [json.loads(x) for x in (mine / "v.jsonl").read_text().splitlines()]
    by_index = {x["frame"]: x.get("variant") for x in frames if x["type"] == "frame"}
    for i, v in by_index.items():
        assert v == ("plain", "bright")[(i // 10) % 2], (i, v)
    r = _run(["-m", "engine.devtools", "compare", "v.jsonl", "--settle", "2"], mine)
    assert r.returncode == 0, r.stderr
    assert "[plain]" in r.stdout and "[bright]" in r.stdout
    r = _run(["mine.py", "--variant", "nope", "--capture", "d.png"], mine)
    assert r.returncode == 2 and "argument --variant: invalid choice" in r.stderr


def test_a_variant_is_a_command(gpu):
    from engine import app as app_module

    seen = {}
    sample_src = textwrap.dedent(EVERY_TOOL)
    ns: dict = {"__name__": "mine_inproc", "__file__": str(ROOT / "nowhere" / "mine.py")}
    exec(compile(sample_src.replace("if __name__", "if False and __name__"), "mine", "exec"), ns)
    Mine = ns["Mine"]

    class Observed(Mine):
        def build(self, graph):  # no passes of its own: the variants alone
            from engine.frame import StandardFrame
            from engine.scene.procedural import city

            scene, self.path = city(50, seed=0)
            self.frame = StandardFrame(self.app.gpu, graph, scene)
            self.shown = []

        def update(self, ctx):
            super().update(ctx)
            if ctx.frame_index == 1:
                seen["next"] = self.app.commands.execute("variant next").text
                seen["bad"] = self.app.commands.execute("variant loud").text
            seen["shown"] = list(self.shown)

    argv = ["--capture", str(ROOT / "nowhere.png"), "--frames", "3", "--size", "32x18"]
    try:
        assert app_module.run(Observed, argv) == 0
    finally:
        Path(ROOT / "nowhere.png").unlink(missing_ok=True)
    assert seen["next"] == "variant: bright" and seen["shown"] == ["plain", "bright"]
    assert seen["bad"].startswith("error: variant: expected one of plain, bright, next")
    assert DEPTH and OUTPUT  # names the module documents


def test_statement_ablation_reaches_the_samples_own_shader(mine):
    """``lantern ablate`` resolves the sample's includes as the shaders do (beside the
    file, then Lantern's shaders) and times each statement of its compute entry."""
    r = _run(["-m", "engine.devtools", "ablate", "g.wgsl", "--entry", "cs_main"], mine)
    assert r.returncode == 0, r.stderr
    assert "g.wgsl:9" in r.stdout and "textureStore(out_tex" in r.stdout


def test_an_inserted_pass_hot_reloads_and_its_cost_change_is_a_note(h, tmp_path):
    """The inserted pass's WGSL edited on disk: the reload tool rebuilds it between frames,
    and its before/after cost reaches the HUD's per-pass notes (the perf table's NOTE)."""
    import wgpu

    from engine.profiling import FrameProfiler
    from engine.tools.reload import ReloadTool
    from engine.tools.reload.watch import HotReload
    from tests.tool_fakes import install_hud, make_ctx

    (tmp_path / "g.wgsl").write_text(GRAD)
    usage = wgpu.TextureUsage.STORAGE_BINDING
    h.graph.create_texture("mine.grad", TextureDesc("r32float", usage))
    f = h.frame
    grad = f.insert(ScreenCompute("Grad", f.res, tmp_path / "g.wgsl", target="mine.grad"),
                    after="Sky")  # fmt: skip
    h.graph.profiler = FrameProfiler(h.gpu, gpu=True, cpu=False, batch=1)
    ctx = make_ctx(h.gpu, h.graph, telemetry=h.loop.telemetry, overlay="off")
    ctx.loop = h.loop
    h.loop.between_frames.append(ctx.commands.run_pending)
    tool = ReloadTool(watch=HotReload(enabled=False))
    tool.cost.window = 10  # (at least MIN_SIDE readings a side)
    hud = install_hud(ctx, tools=[tool])
    h.render(CAM, frames=14, hooks=ctx.updates)
    (tmp_path / "g.wgsl").write_text(GRAD.replace("0.5) / f32", "0.25) / f32"))
    assert "rebuilt" in ctx.commands.execute("reload").text or grad.shader.version == 1
    assert grad.shader.version == 1
    for _ in range(60):
        if "Grad" in tool.cost.results:
            break
        h.render(CAM, frames=1, hooks=ctx.updates)
    assert "Grad" in tool.cost.results  # measured before and after the swap
    assert "Grad" in hud.notes.get("reload", {})
