"""s07, order-independent transparency: the linked lists read back from the GPU composited
in numpy equal OIT.Resolve's picture; the weighted blended picture equals its numpy formula
and stays within the bound that formula has against the exact one; a full pool and a pixel
deeper than LAYERS are counted exactly; OIT.Error's counters are the numpy error of the
textures it compared; the reference pictures; --variant switching and the shutdown report."""

from __future__ import annotations

import json

import numpy as np
import pytest
from frame_harness import Harness
from PIL import Image

from engine.materials.model import AlphaMode, Material
from engine.math3d import translation
from engine.passes.resources import HDR
from engine.scene.camera import Camera
from engine.scene.meshes import box, plane
from engine.scene.scene import Mesh, Scene
from engine.settings import FrameSettings
from samples.s07_oit import (
    CENTRE,
    COUNTERS,
    ERROR,
    HEADS,
    LAYERS,
    NODES,
    POOL,
    REF_HEADS,
    REF_NODES,
    REFERENCE,
    VARIANTS,
    add_oit,
    glass_scene,
)
from tests.helpers import run_sample

SIZE = (96, 64)
CAM = Camera(np.array([8.0, 10.0, 34.0]), np.array(CENTRE), 55.0, 0.5)
NODE = np.dtype([("rg", "<u4"), ("ba", "<u4"), ("depth", "<f4"), ("next", "<u4")])
SETTINGS = FrameSettings(taa=False, bloom=False, shadow_size=256)  # no jitter: same raster


class Rig:
    """A standard frame with s07's passes over ``scene``, and blocking readbacks (tests)."""

    def __init__(self, gpu, scene, camera=CAM):
        self.h = Harness(gpu, scene, size=SIZE, settings=SETTINGS)
        self.h.frame.add_knobs((POOL, ERROR))
        self.oit = add_oit(self.h.frame)
        self.camera = camera

    def render(self, variant: str, *, pool: int = POOL.default, error: bool = False,
               resolve: bool = True, frames: int = 1) -> None:  # fmt: skip
        f = self.h.frame
        f.set_knob("oit-pool", pool)
        f.set_knob("oit-error", error)
        self.oit.set_variant(variant)
        self.oit.passes["OIT.Resolve"].enabled = resolve and variant != "sorted"
        self.h.render(self.camera, frames=frames)

    def hdr(self, name: str = HDR) -> np.ndarray:
        return self.h.texture(name).astype(np.float64)

    def counts(self) -> dict[str, int]:
        values = self.h.read(self.h.graph.buffer(COUNTERS)).tolist()
        return dict(zip(self.oit.readback.names, values, strict=True))

    def lists(self, heads: str = HEADS, nodes: str = NODES) -> list[np.ndarray]:
        """Each pixel's nodes (row by row), as built: newest first."""
        g = self.h.graph
        head = self.h.read(g.buffer(heads))
        pool = np.frombuffer(self.h.device.queue.read_buffer(g.buffer(nodes)), NODE)
        out = []
        for i in head[: SIZE[0] * SIZE[1]]:
            chain = []
            while i:
                chain.append(pool[i - 1])
                i = pool[i - 1]["next"]
            out.append(np.array(chain, NODE))
        return out


def layers(chain: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """A list's ``(depth, premultiplied rgb, alpha)``, float64, nearest first (reverse-Z:
    the largest depth first; ties keep the list's order, as the shader's insertion does)."""
    order = np.argsort(-chain["depth"], kind="stable")
    rg = chain["rg"][order].view(np.float16).reshape(-1, 2).astype(np.float64)
    ba = chain["ba"][order].view(np.float16).reshape(-1, 2).astype(np.float64)
    rgb = np.concatenate([rg, ba[:, :1]], 1)
    return chain["depth"][order].astype(np.float64), rgb, ba[:, 1]


def over(rgb: np.ndarray, alpha: np.ndarray, background: np.ndarray) -> tuple[np.ndarray, float]:
    """Front-to-back "over" of premultiplied layers (nearest first) onto ``background``:
    ``(C + T * background, T)``."""
    c, t = np.zeros(3), 1.0
    for k in range(len(alpha)):
        c += t * rgb[k]
        t *= 1.0 - alpha[k]
    return c + t * background, t


def wboit_weight(depth: np.ndarray, alpha: np.ndarray, near: float) -> np.ndarray:
    """McGuire and Bavoil 2013, equation (9), at view depth ``near / depth`` (reverse-Z
    infinite perspective: depth = near / z)."""
    z = near / depth
    return alpha * np.clip(0.03 / (1e-5 + (z / 200.0) ** 4), 1e-2, 3e3)


@pytest.fixture(scope="module")
def rig(gpu):
    scene, _ = glass_scene(panes=200, bubbles=50, city_instances=300, seed=3)
    return Rig(gpu, scene)


@pytest.fixture(scope="module")
def exact(rig):
    """One frame of the linked variant: its background (OIT.Resolve off), its lists, the
    picture with OIT.Resolve, its counters."""
    rig.render("linked", resolve=False)
    background = rig.hdr()
    lists = rig.lists()
    rig.render("linked")
    return background, lists, rig.hdr(), rig.counts()


def test_the_linked_lists_composited_in_numpy_are_oit_resolves_picture(rig, exact):
    background, lists, picture, counts = exact
    h, w = SIZE[1], SIZE[0]
    nodes = sum(len(c) for c in lists)
    covered = sum(len(c) > 0 for c in lists)
    assert covered > 0.2 * w * h and nodes > 3 * covered  # a deep, wide cluster in view
    assert counts["fragments"] == nodes and counts["dropped"] == counts["truncated"] == 0
    assert max(len(c) for c in lists) <= LAYERS  # none left out: the composite is exact
    want = background[..., :3].copy()
    for p, chain in enumerate(lists):
        if len(chain):
            _, rgb, alpha = layers(chain)
            want[p // w, p % w] = over(rgb, alpha, background[p // w, p % w, :3])[0]
    # float16 storage of the target: 11 significant bits; blending rounds once more
    np.testing.assert_allclose(picture[..., :3], want, rtol=2**-9, atol=1e-4)
    assert np.abs(picture[..., :3] - background[..., :3]).max() > 0.1  # the glass is seen


def test_wboit_is_its_formula_and_within_its_bound_of_the_exact_picture(rig, exact):
    """The weighted average sum(c a w) / sum(a w) (equation 9's w) covering the background
    by 1 - prod(1 - a) is the picture, to float16 accumulation; and since that average and
    the exact colour divided by its coverage are both convex combinations of the layers'
    colours, the error is at most (1 - T) (max c - min c) per channel (T = prod(1 - a))."""
    background, lists, linked, _ = exact
    rig.render("wboit")
    picture = rig.hdr()
    w = SIZE[0]
    formula, bound = background[..., :3].copy(), np.zeros_like(linked[..., :3])
    for p, chain in enumerate(lists):
        if not len(chain):
            continue
        y, x = divmod(p, w)
        depth, rgb, alpha = layers(chain)
        t = np.prod(1.0 - alpha)
        wt = wboit_weight(depth, alpha, CAM.near)
        average = (rgb * wt[:, None]).sum(0) / max((alpha * wt).sum(), 1e-4)
        formula[y, x] = average * (1.0 - t) + background[y, x, :3] * t
        colour = rgb / alpha[:, None]  # the layers' own radiance
        bound[y, x] = (1.0 - t) * (colour.max(0) - colour.min(0))
    np.testing.assert_allclose(picture[..., :3], formula, rtol=2e-3, atol=2e-3)
    error = np.abs(picture[..., :3] - linked[..., :3])
    slack = 2e-3 * np.abs(linked[..., :3]) + 2e-3  # float16 rounding of both pictures
    assert (error <= bound + slack).all(), float((error - bound - slack).max())
    assert error.max() > 0.01  # an approximation: it is not the exact picture


def test_a_full_pool_drops_exactly_the_fragments_past_its_capacity(rig, exact):
    """One node a pixel: the pool takes the first W x H fragments, the rest are counted as
    dropped, and every stored node is on some pixel's list."""
    _, lists, _, counts = exact
    offered = counts["fragments"]
    capacity = SIZE[0] * SIZE[1]
    assert offered > capacity
    rig.render("linked", pool=1)
    c = rig.counts()
    assert c["fragments"] == offered
    assert c["dropped"] == offered - capacity
    assert sum(len(chain) for chain in rig.lists()) == capacity
    assert rig.oit.buffers.capacity == capacity


def test_a_pixel_deeper_than_layers_keeps_its_nearest_and_counts_the_rest(gpu):
    """48 parallel panes in a row before the camera: each pixel they all cover has 48
    fragments; OIT.Resolve composites the LAYERS nearest and counts the others."""
    n = 48
    meshes = [Mesh.from_lods("box", [box()]), Mesh.from_lods("pane", [plane(0.5)])]
    rows = [np.diag([80.0, 1.0, 80.0, 1.0]) @ translation(0, -0.5, 0)]
    for k in range(n):  # facing +z (the camera), 0.25 m apart
        rot = np.array([[1, 0, 0, 0], [0, 0, -1, 0], [0, 1, 0, 0], [0, 0, 0, 1]], float)
        rows.append(translation(0, 3, -k * 0.25) @ rot @ np.diag([6.0, 1.0, 6.0, 1.0]))
    hue = np.linspace(0, 1, n, endpoint=False)
    colors = np.concatenate([[[0.5, 0.5, 0.5, 1.0]],
                             np.stack([0.2 + 0.8 * hue, 1 - hue, 0.5 + 0 * hue,
                                       0.15 + 0 * hue], 1)])  # fmt: skip
    glass = Material("glass", metallic=0.0, roughness=0.3, alpha_mode=AlphaMode.BLEND,
                     double_sided=True)  # fmt: skip
    scene = Scene(meshes, np.array(rows, np.float32), np.array([0] + [1] * n, np.uint32),
                  colors.astype(np.float32), materials=[Material("ground", metallic=0.0), glass],
                  material_ids=np.array([0] + [1] * n, np.uint32))  # fmt: skip
    stack = Rig(gpu, scene, Camera(np.array([0.0, 3.0, 12.0]), np.array([0.0, 3.0, 0.0]), 40))
    stack.render("linked", resolve=False, pool=64)  # room for every fragment: none dropped
    background, lists = stack.hdr(), stack.lists()
    stack.render("linked", pool=64)
    picture, c = stack.hdr(), stack.counts()
    deep = [len(chain) for chain in lists]
    assert c["dropped"] == 0 and c["fragments"] == sum(deep)
    assert max(deep) == n
    assert c["truncated"] == sum(max(0, k - LAYERS) for k in deep) > 0
    w = SIZE[0]
    for p, chain in enumerate(lists):
        if len(chain) == n:
            _, rgb, alpha = layers(chain)
            y, x = divmod(p, w)
            want = over(rgb[:LAYERS], alpha[:LAYERS], background[y, x, :3])[0]
            np.testing.assert_allclose(picture[y, x, :3], want, rtol=2**-9, atol=1e-4)


@pytest.mark.parametrize("variant", VARIANTS)
def test_oit_error_counts_the_numpy_error_of_what_it_compared(rig, exact, variant):
    """With the measurement on: the reference's lists composited in numpy are
    ``oit.reference``, and the counters are the relative error of frame.hdr against it
    (the linked variant: none, to float16 rounding)."""
    background, lists, _, _ = exact
    rig.render(variant, error=True)
    c = rig.counts()
    picture, reference = rig.hdr(), rig.hdr(REFERENCE)
    ref_lists = rig.lists(REF_HEADS, REF_NODES)
    assert c["ref_fragments"] == sum(len(x) for x in lists) == sum(len(x) for x in ref_lists)
    assert c["ref_dropped"] == c["ref_truncated"] == 0
    w = SIZE[0]
    covered = np.array([len(x) > 0 for x in ref_lists]).reshape(SIZE[1], w)
    assert (reference[..., 3] == covered).all()
    for p in np.flatnonzero(covered)[::7]:
        y, x = divmod(p, w)
        _, rgb, alpha = layers(ref_lists[p])
        want = over(rgb, alpha, background[y, x, :3])[0]
        np.testing.assert_allclose(reference[y, x, :3], want, rtol=2**-9, atol=1e-4)
    ref = reference[..., :3][covered]
    e = np.abs(picture[..., :3][covered] - ref).max(1) / np.maximum(ref.max(1), 0.01)
    e = np.minimum(e, 1.0)
    assert c["covered"] == covered.sum()
    assert abs(c["error_sum"] - np.round(e * 1000).sum()) <= 0.01 * covered.sum()
    assert abs(c["error_max"] - np.round(e.max() * 1000)) <= 1
    assert abs(c["error_over"] - (e > 0.01).sum()) <= 0.01 * covered.sum()
    if variant == "linked":
        assert c["error_max"] <= 2 and c["error_over"] == 0
    else:
        assert c["error_sum"] > covered.sum()  # more than 0.1% on average: not exact


@pytest.mark.parametrize("variant", VARIANTS)
def test_each_variant_draws_its_reference_picture(variant, tmp_path, compare_reference):
    out = tmp_path / f"{variant}.png"
    r = run_sample("s07", "--capture", str(out), "--size", "160x90", "--frames", "3",
                   "--shadow-size", "512", "--variant", variant)  # fmt: skip
    assert r.returncode == 0, r.stderr
    rgb = np.asarray(Image.open(out).convert("RGB"))
    compare_reference(f"s07_{variant}_160x90", rgb, tolerance=1)


def test_variants_switch_each_frame_and_the_report_has_each(tmp_path):
    """``--variant-cycle 2``: the records name the variant they ran, ``OIT.Resolve`` runs
    only in wboit and linked frames, and the shutdown report has a row for each variant
    with its memory; the linked row's pool is the knob's."""
    run = tmp_path / "run.jsonl"
    r = run_sample("s07", "--capture", str(tmp_path / "x.png"), "--size", "48x32", "--frames",
                   "18", "--variant-cycle", "2", "--gpu-profile", "--shadow-size", "256",
                   "--oit-pool", "3", "--telemetry", str(run))  # fmt: skip
    assert r.returncode == 0, r.stderr
    names, timed = [], 0
    for line in run.read_text().splitlines():
        x = json.loads(line)
        names += x["names"] if x["type"] == "names" else []  # scope ids: in order of naming
        if x["type"] != "frame":
            continue
        assert x["variant"] == VARIANTS[(x["frame"] // 2) % 3]
        if x["gpu"]:
            timed += 1
            passes = {names[i] for i, _, _ in x["gpu"]}
            assert "OIT.Draw" in passes and "Transparent" not in passes
            assert ("OIT.Resolve" in passes) == (x["variant"] != "sorted")
    assert timed > 12
    report = r.stdout.split("OIT at 48x32", 1)[1]
    rows = {line.split()[0]: line for line in report.splitlines()[2:5]}
    assert list(rows) == list(VARIANTS), report
    assert rows["sorted"].split()[2] != "-" and rows["sorted"].split()[3] == "-"
    linked_bytes = 48 * 32 * 4 + 3 * 48 * 32 * 16  # heads + 3 nodes a pixel
    assert f"{linked_bytes / 1024:.1f} KiB" in rows["linked"]


def test_a_short_run_says_what_a_full_pool_dropped(tmp_path):
    """Two frames, one node a pixel: the counts arrive after the last frame, and the run
    still warns that the pool was full (never a silent wrong picture)."""
    r = run_sample("s07", "--capture", str(tmp_path / "x.png"), "--size", "48x32",
                   "--frames", "2", "--variant", "linked", "--oit-pool", "1",
                   "--shadow-size", "256")  # fmt: skip
    assert r.returncode == 0, r.stderr
    said = [x for x in (r.stdout + r.stderr).splitlines() if "dropped" in x]
    assert len(said) == 1 and "(--oit-pool 1) was full: raise --oit-pool" in said[0], said
    n = int(said[0].split(": ")[2].split()[0].replace(",", ""))
    assert n > 0


def _one_pane(textures: dict) -> Scene:
    """A ground and one glass pane facing the camera, its base colour from the city's
    facade texture (``textures``) or none: the images are glass_scene's."""
    city, _ = glass_scene(panes=0, bubbles=0)
    meshes = [Mesh.from_lods("box", [box()]), Mesh.from_lods("pane", [plane(0.5)])]
    rot = np.array([[1, 0, 0, 0], [0, 0, -1, 0], [0, 1, 0, 0], [0, 0, 0, 1]], float)
    rows = [np.diag([80.0, 1.0, 80.0, 1.0]) @ translation(0, -0.5, 0),
            translation(0, 3, 0) @ rot @ np.diag([8.0, 1.0, 8.0, 1.0])]  # fmt: skip
    colors = np.array([[0.5, 0.5, 0.5, 1.0], [0.9, 0.8, 0.7, 0.6]], np.float32)
    glass = Material("glass", metallic=0.0, roughness=0.3, alpha_mode=AlphaMode.BLEND,
                     double_sided=True, textures=textures)  # fmt: skip
    return Scene(meshes, np.array(rows, np.float32), np.array([0, 1], np.uint32), colors,
                 materials=[Material("ground", metallic=0.0), glass],
                 material_ids=np.array([0, 1], np.uint32), images=city.images)  # fmt: skip


def test_a_textured_blend_material_is_textured_in_every_variant(gpu):
    """OIT.Draw's shaders take the frame's texture defines: one textured pane (nothing to
    sort) is the same picture drawn by the frame's Transparent (``sorted``) and composited
    by OIT.Resolve (``linked``), and it differs from the same pane untextured; a local light
    added at run time lights both alike (``MeshPipelines.technique_shader`` follows the
    frame's defines: OIT.Draw built at start had no ``LOCAL_LIGHTS``)."""
    from engine.materials.model import TextureRef, TextureSlot

    camera = Camera(np.array([0.0, 3.0, 10.0]), np.array([0.0, 3.0, 0.0]), 40)
    facade = {TextureSlot.BASE_COLOR: TextureRef(2)}
    rig = Rig(gpu, _one_pane(facade), camera)
    assert rig.h.frame.res.mesh.texture_defines.get("TEX0")
    rig.render("sorted")
    sorted_ = rig.hdr()[..., :3]
    rig.render("linked")
    linked, c = rig.hdr()[..., :3], rig.counts()
    assert c["dropped"] == c["truncated"] == 0 and c["fragments"] > SIZE[0] * SIZE[1] // 2
    plain = Rig(gpu, _one_pane({}), camera)
    plain.render("sorted")
    untextured = plain.hdr()[..., :3]
    np.testing.assert_allclose(linked, sorted_, rtol=2**-8, atol=1e-3)
    assert np.abs(sorted_ - untextured).max() > 0.05
    # lights added at run time: the frame's shaders get LOCAL_LIGHTS, and OIT.Draw's too
    rig.h.frame.scene.lights.add((0.0, 3.0, 2.0), intensity=400.0, range=12.0)
    rig.render("sorted")
    lit = rig.hdr()[..., :3]
    assert np.abs(lit - sorted_).max() > 0.05  # the light shows on the pane
    rig.render("linked")
    np.testing.assert_allclose(rig.hdr()[..., :3], lit, rtol=2**-8, atol=1e-3)


def test_no_post_with_an_oit_variant_is_one_line(tmp_path):
    """wboit and linked composite into the HDR colour: without the post chain they would draw
    no glass at all, so asking for them with --no-post is refused (sorted still runs)."""
    cases = {("--variant", "linked"): "--variant linked", ("--variant-cycle", "4"):
             "--variant-cycle", ("--oit-pool", "16"): "--oit-pool"}  # fmt: skip
    for extra, named in cases.items():
        r = run_sample("s07", "--size", "32x18", "--frames", "1", "--no-post", *extra,
                       "--capture", str(tmp_path / "a.png"))  # fmt: skip
        assert r.returncode == 2 and r.stderr.strip().endswith(f"drop --no-post or {named}")
        assert "Traceback" not in r.stderr and not (tmp_path / "a.png").exists()
        assert "GPU:" not in r.stdout  # refused before the GPU starts
