"""StandardFrame + GPU culling on lavapipe: invariants, reference equality, no false culling."""

from __future__ import annotations

import numpy as np
import pytest

from engine.culling import reference as ref
from engine.frame import PASS_NAMES
from engine.scene.camera import Camera
from engine.settings import FrameSettings
from tests.frame_harness import Harness, random_scene

CAM = Camera(np.array([0.0, 4.0, 28.0]), np.array([0.0, 1.0, 0.0]), 60.0, 0.1)


def check_invariants(h: Harness) -> dict:
    c = h.counters()
    n = h.scene.count
    assert c["tested"] == n
    assert c["frustum_culled"] + c["small_culled"] + c["occluded"] + c["visible"] == n
    assert c["drawn_late"] <= c["visible"] <= c["drawn_early"] + c["drawn_late"]
    early, late = h.drawn("early"), h.drawn("late")
    assert len(early) == c["drawn_early"] and len(late) == c["drawn_late"]
    assert len(np.unique(np.concatenate([early, late]))) == len(early) + len(late)  # disjoint
    cls, _ = h.state()
    assert (cls == ref.VISIBLE).sum() == c["visible"]
    assert set(np.flatnonzero(cls == ref.VISIBLE)) <= set(early) | set(late)
    return c


def check_no_false_culling(h: Harness, camera: Camera) -> None:
    drawn = set(h.drawn("early")) | set(h.drawn("late"))
    seen = h.visible_ids_unculled(camera)
    assert seen, "the unculled ID render shows nothing: the test would prove nothing"
    missing = seen - drawn
    assert not missing, f"instances covering pixels were culled: {sorted(missing)[:10]}"


@pytest.fixture(scope="module")
def scene():
    return random_scene(300, seed=1)


def test_passes_are_objects_with_their_own_enable_rules(gpu, scene):
    from engine.passes.ambient import AmbientPass
    from engine.passes.bloom import BloomPass
    from engine.passes.cull import CullPass, CullResetPass
    from engine.passes.exposure import ExposurePass, LuminancePass
    from engine.passes.hiz import HiZPass
    from engine.passes.lights import DeferredLightsPass, LightClusterPass, LightsResetPass
    from engine.passes.mesh import MainPass
    from engine.passes.post import PostPass
    from engine.passes.shadow import ShadowPass
    from engine.passes.sky import SkyPass
    from engine.passes.taa import TaaPass
    from engine.passes.transparent import TransparentPass, TransparentSortPass

    h = Harness(gpu, scene, settings=FrameSettings(exposure="auto"))
    # no BLEND material in this scene: the Transparent passes are off; nothing reads
    # frame.ambient: the Ambient compose is off; one shadow cascade; no local lights
    extra = ("Ambient", "Shadow.C1", "Shadow.C2", "Shadow.C3", "Lights.Reset", "Lights.Cluster",
             "Lights.Deferred")  # fmt: skip
    names = tuple(n for n in PASS_NAMES if not n.startswith("Transparent") and n not in extra)
    assert h.graph.pass_names() == list(names)
    kinds = [type(p) for p in h.frame.passes]
    assert kinds == [CullResetPass, CullPass, *[ShadowPass] * 4, CullPass, LightsResetPass,
                     LightClusterPass, MainPass, HiZPass, CullPass, MainPass, DeferredLightsPass,
                     SkyPass, AmbientPass, TransparentSortPass, TransparentPass, LuminancePass,
                     ExposurePass, BloomPass, TaaPass, PostPass]  # fmt: skip
    assert [p.entry for p in h.frame.passes if isinstance(p, CullPass)] == [
        "cull_shadow",
        "cull_early",
        "cull_late",
    ]
    post_chain = ("Sky", "Post.Luminance", "Post.Exposure", "Post.Bloom", "Post.TAA", "Post")
    # each knob switches exactly the passes whose rule names it
    expect = {
        (): names,
        ("occlusion",): ("Cull.Reset", "Shadow.Cull", "Shadow.C0", "Cull.Late", "Main.Late")
        + post_chain,
        ("shadows",): tuple(n for n in names if not n.startswith("Shadow")),
        ("post",): names[: -len(post_chain)],
        ("bloom",): tuple(n for n in names if n != "Post.Bloom"),
        ("taa",): tuple(n for n in names if n != "Post.TAA"),
        ("exposure",): tuple(n for n in names if n not in ("Post.Luminance", "Post.Exposure")),
        ("occlusion", "shadows", "post"): ("Cull.Reset", "Cull.Late", "Main.Late"),
    }
    on = dict(occlusion=True, shadows=True, post=True, bloom=True, taa=True, exposure="auto")
    for off, names in expect.items():
        changes = {k: 1.0 if k == "exposure" else False for k in off}
        h.frame.set_settings(**changes)
        assert h.graph.pass_names() == list(names), off
        h.graph.validate()  # every enabled combination reads only what was written before
        h.frame.set_settings(**on)
    # a cascade a pass each, after the one cull of them all
    h.frame.set_settings(cascades=3)
    shadow = [n for n in h.graph.pass_names() if n.startswith("Shadow")]
    assert shadow == ["Shadow.Cull", "Shadow.C0", "Shadow.C1", "Shadow.C2"]
    h.graph.validate()
    h.frame.set_settings(cascades=1)
    # Main.Late loads colour and depth only in two-phase mode
    late = h.graph.pass_named("Main.Late")
    assert "frame.depth" in late.reads
    h.frame.set_settings(occlusion=False)
    assert "frame.depth" not in late.reads
    # Post reads what the chain made: the TAA result, the bloom, the adapted exposure
    post = h.graph.pass_named("Post")
    assert post.reads == ("post.taa", "post.bloom", "post.exposure")
    h.frame.set_settings(taa=False, bloom=False, exposure=0.9)
    assert post.reads == ("frame.hdr",)


def test_graph_rejects_a_read_before_the_write(gpu, scene):
    h = Harness(gpu, scene)
    hiz, main_early = h.graph.pass_named("HiZ"), h.graph.pass_named("Main.Early")
    h.graph.passes.remove(hiz)
    h.graph.passes.insert(h.graph.passes.index(main_early), hiz)  # HiZ before its depth
    with pytest.raises(ValueError) as e:
        h.graph.validate()
    msg = str(e.value)
    assert "'HiZ' reads 'frame.depth'" in msg and "later pass 'Main.Early'" in msg


def test_invariants_and_convergence(gpu, scene):
    # no TAA: a moving jitter keeps showing sub-pixel instances for the first time
    h = Harness(gpu, scene, settings=FrameSettings(taa=False))
    h.render(CAM)
    c = check_invariants(h)
    assert c["drawn_early"] == 0 and c["drawn_late"] == c["visible"]  # first frame: no history
    lates = []
    for _ in range(4):
        h.render(CAM)
        lates.append(check_invariants(h)["drawn_late"])
    c = h.counters()
    assert c["occluded"] > 20, "the walls must occlude something for this test to mean anything"
    assert c["frustum_culled"] > 0 and lates[-1] == 0 and lates[-2] == 0
    assert c["shadow_casters"] > 0
    check_no_false_culling(h, CAM)


@pytest.mark.parametrize("seed", [2, 3])
def test_gpu_classification_equals_reference(gpu, seed):
    scene = random_scene(400, seed=seed, spread=30.0)
    cam = Camera(np.array([3.0, 3.0, 35.0]), np.array([-2.0, 1.0, 0.0]), 55.0, 0.1)
    h = Harness(gpu, scene, size=(80, 48))  # small output: plenty of sub-pixel instances
    h.render(cam, 3)
    pyr = h.pyramid()
    cv = h.cull_view(cam)
    bounds = scene.bounds()
    want = ref.classify(bounds, cv, pyr)
    lods = ref.select_lod(bounds, np.array([len(scene.meshes[m].lods) for m in scene.mesh_ids]), cv)
    got, got_lod = h.state()
    # Instances within float rounding of a decision boundary may differ: none expected here.
    assert (got != want).sum() == 0, np.flatnonzero(got != want)
    assert (got_lod != lods).sum() == 0
    for k in (ref.FRUSTUM, ref.SMALL, ref.OCCLUDED, ref.VISIBLE):
        assert (want == k).sum() > 0, f"class {k} absent: the scene does not test it"
    assert len(np.unique(lods)) == 2


@pytest.mark.parametrize("size", [(1, 1), (3, 7), (37, 19), (64, 64)])
def test_pyramid_npot_conservative(gpu, scene, size):
    h = Harness(gpu, scene, size=size)
    h.render(CAM, 2)
    # Rebuild from the final depth so GPU and reference read the same image.
    enc = gpu.device.create_command_encoder()
    cp = enc.begin_compute_pass()
    h.frame.pyramid.record(cp, h.graph.view("frame.depth"))
    cp.end()
    gpu.queue.submit([enc.finish()])
    depth, pyr = h.depth(), h.pyramid()
    want = ref.build_pyramid(depth)
    assert len(pyr) == len(want)
    for a, b in zip(pyr, want, strict=True):
        np.testing.assert_array_equal(a, b)
    # Independent check: every texel of every level <= the depth at each pixel centre inside it.
    w, hh = size
    pw, ph = pyr[0].shape[1], pyr[0].shape[0]
    assert pw < w or w == 1 and ph < hh or hh == 1
    for lvl, img in enumerate(pyr):
        ys = np.minimum(((np.arange(hh) + 0.5) / hh * img.shape[0]).astype(int), img.shape[0] - 1)
        xs = np.minimum(((np.arange(w) + 0.5) / w * img.shape[1]).astype(int), img.shape[1] - 1)
        assert (img[np.ix_(ys, xs)] <= depth).all(), f"level {lvl} not conservative"


def test_pyramid_full_hd_npot(gpu):
    scene = random_scene(60, seed=4)
    h = Harness(gpu, scene, size=(1919, 1079))
    h.render(CAM, 2)
    pyr = h.pyramid()
    assert pyr[0].shape == (1024, 1024) and len(pyr) == 11  # 1919 -> 1024, 1079 -> 1024
    check_invariants(h)


def test_near_plane_and_camera_inside(gpu, scene):
    h = Harness(gpu, scene)
    # Eye inside box row 1 (a wall) and right next to row 2's sphere: both reach the near plane.
    wall = scene.bounds()[1]
    cam = Camera(wall[:3] + np.array([0, 0, 0.1]), wall[:3] + np.array([0.0, 0.0, -5.0]))
    h.render(cam, 3)
    cls, _ = h.state()
    assert cls[1] == ref.VISIBLE
    check_invariants(h)
    check_no_false_culling(h, cam)


def test_camera_cut_180_draws_everything_visible_same_frame(gpu, scene):
    h = Harness(gpu, scene)
    fwd = Camera(np.array([0.0, 14.0, 0.0]), np.array([0.0, 0.0, -20.0]))
    h.render(fwd, 4)
    back = Camera(fwd.eye, np.array([0.0, 0.0, 20.0]))  # looking the other way
    h.render(back)
    c = check_invariants(h)
    assert c["drawn_late"] > 20  # the newly visible set arrives in the same frame
    check_no_false_culling(h, back)
    h.render(fwd)  # and back again
    check_no_false_culling(h, fwd)


def test_resize_midrun_uses_no_stale_pyramid(gpu, scene):
    h = Harness(gpu, scene, size=(96, 64))
    h.render(CAM, 3)
    h.resize((41, 77))
    h.render(CAM)
    assert h.frame.pyramid.base == (32, 64)
    c = check_invariants(h)
    assert c["drawn_early"] == 0  # visibility from another size is not trusted
    check_no_false_culling(h, CAM)


def test_shadow_caster_behind_camera(gpu):
    scene = random_scene(0, seed=5, walls=0)
    # A tall pillar behind the camera; the sun (from +x+z, high) throws its shadow forward.
    from engine.math3d import translation
    from engine.scene.scene import Scene

    pillar = translation(0.0, 12.0, 60.0) @ np.diag([1.0, 24.0, 1.0, 1.0]).astype(np.float32)
    t = np.concatenate([scene.transforms, pillar[None]])
    ids = np.array([0, 1], np.uint32)
    colors = np.ones((2, 4), np.float32)
    sc = Scene(scene.meshes, t, ids, colors, sun_direction=(0.0, 0.5, 0.866))
    cam = Camera(np.array([0.0, 3.0, 30.0]), np.array([0.0, 0.0, 0.0]))
    h = Harness(gpu, sc, size=(64, 48), settings=FrameSettings(shadow_radius=25.0))
    h.render(cam, 2)
    cls, _ = h.state()
    assert cls[1] == ref.FRUSTUM  # behind the camera
    assert 1 in set(h.drawn("shadow.c0")) and h.counters()["shadow_casters"] == 2
    with_shadow = h.target.read_rgba()[:, :, :3].astype(int).sum(axis=2)
    h.frame.set_settings(shadows=False)
    h.render(cam, 2)
    without = h.target.read_rgba()[:, :, :3].astype(int).sum(axis=2)
    darker = without - with_shadow > 60  # the pillar's shadow on the ground in view
    assert darker.sum() >= 20, darker.sum()


def test_no_occlusion_and_no_cull_modes(gpu, scene):
    h = Harness(gpu, scene, settings=FrameSettings(occlusion=False))
    h.render(CAM, 2)
    c = check_invariants(h)
    assert c["occluded"] == 0 and c["drawn_early"] == 0 and c["drawn_late"] == c["visible"]
    h.frame.set_settings(cull=False)
    h.render(CAM)
    c = check_invariants(h)
    assert c["visible"] == scene.count == c["drawn_late"] == c["shadow_casters"]


def test_first_instance_fallback_same_picture(gpu, scene):
    from engine.gpu import create_gpu

    plain = create_gpu(disable=("indirect-first-instance",))
    assert "indirect-first-instance" not in plain.features
    images = []
    for g in (gpu, plain):
        h = Harness(g, scene, size=(64, 48))
        assert h.frame.gs.first_instance == (g is gpu)
        h.render(CAM, 3)
        check_invariants(h)
        images.append(h.target.read_rgba())
    assert images[0].std() > 5  # not blank
    np.testing.assert_array_equal(images[0], images[1])


def test_dirty_rows_only(gpu, scene):
    h = Harness(gpu, scene)
    h.render(CAM)
    moved = scene.transforms[5].copy()
    moved[:3, 3] += (0.0, 50.0, 0.0)  # far above the view
    scene.set_transforms(np.array([5]), moved[None])
    assert h.frame.gs.upload_dirty() == 1
    scene.set_transforms(np.array([5]), moved[None])
    h.render(CAM)
    b = h.read(h.frame.gs.bounds, np.float32).reshape(-1, 4)
    np.testing.assert_allclose(b[5], scene.bounds()[5])
    assert h.state()[0][5] == ref.FRUSTUM


def test_cull_stats_ring_matches_counters(gpu, scene):
    h = Harness(gpu, scene)
    for _ in range(3):
        h.render(CAM)
        direct = tuple(h.counters().values())
    h.render(CAM)  # Cull.Reset of this frame copies the previous frame's counters
    h.loop.drain()  # the frame loop collects them from the graph's readback clients
    latest = h.loop.telemetry.latest.cull
    assert latest is not None and latest.frame_index == h.loop.index - 2
    assert latest.values == direct
    assert latest.report().startswith(f"Cull frame {latest.frame_index}: tested {scene.count},")


def test_frozen_culling_camera_keeps_culling_from_frozen_view(gpu, scene):
    """Frozen at the last frame's camera (F2): while the render camera is elsewhere the
    culler keeps the frozen camera's decisions, Hi-Z included, against a copy of the
    pyramid that camera's last frame built: its classes are the reference culler's for
    that camera and that copy, occluded ones among them."""
    h = Harness(gpu, scene, settings=FrameSettings(taa=False))
    h.render(CAM, 3)
    before = h.pyramid()
    h.frame.freeze_culling(True)
    h.render(CAM)
    frozen_set = set(h.drawn("early")) | set(h.drawn("late"))
    elsewhere = Camera(np.array([0.0, 14.0, 0.0]), np.array([0.0, 0.0, 20.0]))
    h.render(elsewhere, 2)  # render from elsewhere; culling still judges from CAM
    copy = h.frame.frozen
    pyr = h.pyramid(copy)
    assert all((a == b).all() for a, b in zip(pyr, before, strict=True))
    want = ref.classify(scene.bounds(), h.cull_view(CAM), pyr)
    got, _ = h.state()
    assert (got == want).all(), np.flatnonzero(got != want)
    c = check_invariants(h)
    assert c["occluded"] == (want == ref.OCCLUDED).sum() > 20
    assert set(h.drawn("early")) | set(h.drawn("late")) == frozen_set
    h.render(elsewhere)  # the classes' readback is asynchronous: a frame or two later
    h.loop.drain()
    h.render(elsewhere)
    assert (copy.classes == want).all()
    assert not h.frame.freeze_culling(False)
    assert copy.view is None and copy.classes is None
    h.render(elsewhere, 2)
    assert set(h.drawn("early")) | set(h.drawn("late")) != frozen_set


def test_a_cull_camera_given_before_the_first_frame_gets_its_own_pyramid(gpu, scene):
    """``--cull-camera``: frozen before any frame at a camera never rendered from, so the
    first frames render from it (``WARMUP_FRAMES``); the copy equals the pyramid an ordinary
    run at that camera builds, and the classes are the reference culler's against it."""
    from engine.culling.frozen import WARMUP_FRAMES

    plain = Harness(gpu, scene, settings=FrameSettings(taa=False))
    plain.render(CAM, 3)
    want_pyr = plain.pyramid()
    h = Harness(gpu, scene, settings=FrameSettings(taa=False))
    elsewhere = Camera(np.array([0.0, 14.0, 0.0]), np.array([0.0, 0.0, 20.0]))
    h.frame.freeze_culling(True, camera=CAM)
    h.render(elsewhere, WARMUP_FRAMES)
    assert h.frame.res.camera is CAM and not h.frame.frozen.active  # warming up at CAM
    h.render(elsewhere, 2)
    assert h.frame.res.camera is elsewhere and h.frame.frozen.active
    pyr = h.pyramid(h.frame.frozen)
    assert all((a == b).all() for a, b in zip(pyr, want_pyr, strict=True))
    want = ref.classify(scene.bounds(), h.cull_view(CAM), pyr)
    got, _ = h.state()
    assert (got == want).all() and (want == ref.OCCLUDED).sum() > 20


def test_non_finite_and_huge_instances_are_frustum_culled_on_the_gpu(gpu):
    """NaN / inf written straight into the GPU buffers (the shader checks for itself) and a
    finite scale of 3e38 (its radius overflows) are frustum-culled, never drawn or casting,
    also with culling off; every other instance classifies as the reference says."""
    import warnings

    scene = random_scene(300, seed=1)
    n = scene.count
    h = Harness(gpu, scene)
    h.render(CAM, 2)
    visible = np.flatnonzero(h.state()[0] == ref.VISIBLE)
    nan_row, inf_row, big_row = (int(i) for i in visible[:3])  # drawn early next frame if trusted
    big = scene.transforms[big_row].copy()
    big[:3, :3] = np.eye(3, dtype=np.float32) * np.float32(3e38)  # finite, radius overflows
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no numpy overflow warning on stderr
        scene.set_transforms(np.array([big_row]), big[None])
    gs = h.frame.gs
    for row, value in ((nan_row, np.nan), (inf_row, np.inf)):  # past every CPU check
        m = scene.transforms[row].T.copy()  # column-major, as GpuScene writes it
        m[3, 0] = value
        gpu.queue.write_buffer(gs.transforms, row * 64, np.ascontiguousarray(m, np.float32))
        sphere = scene.bounds()[row].copy()
        sphere[0] = value
        gpu.queue.write_buffer(gs.bounds, row * 16, sphere)
    bad = [nan_row, inf_row, big_row]
    for settings in ({}, {"cull": False}):
        h.frame.set_settings(**settings) if settings else None
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            h.render(CAM, 2)
        c = check_invariants(h)
        cls, lod = h.state()
        assert (cls[bad] == ref.FRUSTUM).all()
        for region in ("early", "late", "shadow.c0"):
            assert not set(bad) & set(h.drawn(region)), region
        bounds = h.read(gs.bounds, np.float32).reshape(-1, 4)
        assert (
            not ref.usable_spheres(bounds)[bad].any() and ref.usable_spheres(bounds).sum() == n - 3
        )
        if settings:  # culling off: everything else drawn and casting
            assert c["frustum_culled"] == 3 and c["visible"] == c["shadow_casters"] == n - 3
            continue
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            want = ref.classify(bounds, h.cull_view(CAM), h.pyramid())
        assert (cls != want).sum() == 0, np.flatnonzero(cls != want)
        assert c["frustum_culled"] == (want == ref.FRUSTUM).sum()
        assert c["shadow_casters"] <= n - 3


def test_no_false_culling_under_taa_jitter(gpu):
    """The sub-pixel and Hi-Z tests judge the jittered image: for offsets near half a pixel
    every instance the unculled jittered ID render shows was drawn by the culled frame."""
    scene = random_scene(400, seed=5, spread=30.0)
    cam = Camera(np.array([3.0, 3.0, 35.0]), np.array([-2.0, 1.0, 0.0]), 55.0, 0.1)
    h = Harness(gpu, scene, size=(80, 48))  # small output: many sub-pixel instances
    assert h.frame.settings.taa
    seen = []
    for jitter in [(0.0, 0.0), (0.49, -0.49), (-0.49, 0.49), (0.3, 0.45)]:
        h.frame.jitter_sequence = (jitter,)
        h.render(cam, 3)
        assert h.frame.res.jitter == jitter
        check_invariants(h)
        check_no_false_culling(h, cam)
        seen.append(h.visible_ids_unculled(cam))
    # the jitter changes what covers a pixel centre: otherwise this test proves nothing
    assert any(s != seen[0] for s in seen[1:])
