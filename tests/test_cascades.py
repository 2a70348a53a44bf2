"""Cascaded sun shadows (issue 29 item 4): the practical splits and each cascade's matrix
against numpy, texel snapping, the shimmer measure, each cascade's counter block against a
numpy reference, a reference picture with four cascades, and the cascades debug view."""

from __future__ import annotations

import math

import numpy as np
import pytest
from frame_harness import Harness, points_in_view, random_scene

from engine.culling.counters import CASCADE_COUNTER_NAMES, cascade_block
from engine.passes.shadow import (
    BLEND_BAND,
    SHADOW_DISTANCE,
    ShadowMap,
    cascade_slices,
    cascade_splits,
    caster_reach,
    shadow_region,
)
from engine.scene.camera import Camera
from engine.scene.procedural import city
from engine.scene.scene import usable_spheres
from engine.settings import FrameSettings

ASPECT = 16 / 9
CAM = Camera(np.array([0.0, 6.0, 26.0]), np.array([0.0, 0.0, 0.0]), 60.0, 0.1)


@pytest.fixture(scope="module")
def town():
    return city(3000, seed=0)


# -- splits and matrices -------------------------------------------------------------------
def test_practical_splits_against_numpy():
    n, f = 0.5, 90.0
    for count in (1, 2, 3, 4):
        i = np.arange(count + 1) / count
        log, uni = n * (f / n) ** i, n + (f - n) * i  # the two schemes, Zhang et al. 2006
        for lam in (0.0, 0.5, 0.8, 1.0):
            got = cascade_splits(n, f, count, lam)
            np.testing.assert_allclose(got, lam * log + (1 - lam) * uni, rtol=1e-12)
            assert got[0] == n and got[-1] == f and np.all(np.diff(got) > 0)
    assert cascade_splits(0.5, 90.0, 4, 0.0) == pytest.approx(np.linspace(0.5, 90.0, 5))
    assert cascade_splits(0.5, 90.0, 4, 1.0) == pytest.approx(np.geomspace(0.5, 90.0, 5))
    for bad in ((0.5, 90.0, 0, 0.5), (0.5, 90.0, 5, 0.5), (0.5, 90.0, 2, 1.5), (2.0, 1.0, 2, 0.5)):
        with pytest.raises(ValueError):
            cascade_splits(*bad)


def _light_rotation(sun) -> np.ndarray:
    """The light's view rotation by numpy: looking along -sun, +Y up (right-handed, the
    view looks down -Z), rounded to float32 as the shader gets it."""
    f = -np.asarray(sun, np.float64) / np.linalg.norm(sun)
    s = np.cross(f, [0.0, 1.0, 0.0])
    s /= np.linalg.norm(s)
    v = np.cross(s, f)
    return np.array([s, v, -f], np.float32).astype(np.float64)


def _numpy_fit(sun, center, radius, extent, size, snap=True) -> np.ndarray:
    """One cascade's world -> shadow clip matrix by numpy: rotation, the focus floored to
    the texel grid, a reverse-Z orthographic box from the caster reach to the sphere's back."""
    rot = _light_rotation(sun)
    f = rot @ np.asarray(center, np.float64)
    texel = 2 * radius / size
    x, y = (np.floor(f[:2] / texel) * texel) if snap else f[:2]
    near = -f[2] - radius - caster_reach(sun, center, radius, extent) - 1.0
    far = max(-f[2] + radius, near + 1.0)
    ortho = np.diag([1 / radius, 1 / radius, 1 / (far - near), 1.0])
    ortho[2, 3] = far / (far - near)
    shift = np.eye(4)
    shift[:2, 3] = -x, -y
    r4 = np.eye(4)
    r4[:3, :3] = rot
    return ortho @ shift @ r4


def _clip(m: np.ndarray, points: np.ndarray) -> np.ndarray:
    h = np.c_[points, np.ones(len(points))] @ np.asarray(m, np.float64).T
    return h[:, :3] / h[:, 3:]


def test_cascade_matrices_against_numpy_and_each_covers_its_slice(gpu, town):
    scene, path = town
    from engine.passes.mesh import MeshPipelines

    sm = ShadowMap(gpu.device, MeshPipelines(gpu.device), 2048, 4)
    lo, hi = scene.extent
    for t in (0.0, 9.0):
        cam = path.at(t)
        vp = cam.proj(ASPECT) @ cam.view()
        fit = sm.fit(vp, scene, None, cascades=4, lam=0.5)
        splits = cascade_splits(cam.near, SHADOW_DISTANCE, 4, 0.5)
        assert fit.splits == pytest.approx(splits)
        texels = [c.texel_world for c in fit.cascades]
        assert texels == sorted(texels) and texels[0] < texels[-1] / 4  # finer near the eye
        for c, ((d0, d1), cf) in enumerate(zip(cascade_slices(splits), fit.cascades, strict=True)):
            if c > 0:  # pulled toward the eye by the previous cascade's blend band
                prev = splits[c - 1] if c > 1 else 0.0
                assert d0 == pytest.approx(splits[c] - BLEND_BAND * (splits[c] - prev))
            center, radius = shadow_region(vp, d1, scene.extent, start=d0)
            want = _numpy_fit(scene.sun_direction, center, radius, scene.extent, 2048)
            np.testing.assert_allclose(cf.view_proj, want, rtol=2e-5, atol=2e-6)
            assert cf.texel_world == pytest.approx(2 * radius / 2048)
            # every receiver of the slice inside the scene is inside the cascade's box
            pts = points_in_view(cam, d0, d1, 3000, seed=c)
            pts = pts[((pts >= lo) & (pts <= hi)).all(axis=1)]
            assert len(pts) > 200
            clip = _clip(cf.view_proj, pts)
            assert (np.abs(clip[:, :2]) <= 1).all() and (clip[:, 2] >= 0).all()
            assert (clip[:, 2] <= 1).all()


def test_snapping_keeps_the_texel_grid_under_a_sub_texel_move(gpu, town):
    """Moving the camera by a fraction of a texel moves each snapped cascade's box by whole
    texels (its texel grid stays put in the world); unsnapped, by the fraction."""
    scene, path = town
    from engine.devtools.shimmer import lateral, moved
    from engine.passes.mesh import MeshPipelines

    sm = ShadowMap(gpu.device, MeshPipelines(gpu.device), 1024, 4)
    cam = path.at(5.0)
    base = {s: sm.fit(cam.proj(ASPECT) @ cam.view(), scene, None, cascades=4, snap=s)
            for s in (True, False)}  # fmt: skip
    step = 0.3 * base[True].cascades[0].texel_world
    fractions = {True: [], False: []}
    for k in range(1, 9):
        c2 = moved(cam, lateral(cam) * (k * step))
        for snap in (True, False):
            fit = sm.fit(c2.proj(ASPECT) @ c2.view(), scene, None, cascades=4, snap=snap)
            for a, b in zip(base[snap].cascades, fit.cascades, strict=True):
                if a.texel_world != b.texel_world:
                    continue  # the region's radius stepped (clipped to the city): a new grid
                ma, mb = a.view_proj.astype(np.float64), b.view_proj.astype(np.float64)
                np.testing.assert_array_equal(ma[:2, :3], mb[:2, :3])  # same rotation, scale
                shift = (mb[:2, 3] - ma[:2, 3]) * 1024 / 2  # texels the grid moved
                fractions[snap] += list(np.abs(shift - np.round(shift)))
    assert len(fractions[True]) >= 16
    assert max(fractions[True]) < 2e-3  # whole texels (float32 rounding aside)
    assert max(fractions[False]) > 0.1  # the unsnapped grid slides by fractions


def test_shimmer_is_zero_snapped_and_measured_unsnapped(gpu):
    """Only the camera the cascades are fitted to moves, by 0.37 texel a step; the picture of
    a static scene does not change with snapping, and does without it."""
    from engine.devtools.shimmer import measure_shimmer

    scene = random_scene(120, seed=5)
    base = FrameSettings(cascades=4, shadow_size=512, bloom=False)
    snapped = measure_shimmer(gpu, scene, CAM, base, size=(96, 64), steps=6)
    loose = measure_shimmer(gpu, scene, CAM, FrameSettings(**{**vars(base), "shadow_snap": False}),
                            size=(96, 64), steps=6)  # fmt: skip
    assert snapped.still == 0.0 and loose.still == 0.0  # the measure's floor
    assert snapped.texel == loose.texel and 0 < snapped.step < snapped.texel
    assert snapped.changed == (0.0,) * 6
    assert loose.mean > 0.01 and min(loose.changed) > 0.0, loose.changed


# -- the GPU: counters, picture, view ------------------------------------------------------
def _kept_by_numpy(bounds: np.ndarray, planes: np.ndarray) -> tuple[np.ndarray, float]:
    """Casters of a cascade (usable and inside each of its planes, grown by the radius),
    in float32 as the shader computes, and the smallest margin to a plane (how close the
    nearest decision came)."""
    b = np.asarray(bounds, np.float32)
    p = np.asarray(planes, np.float32)
    ok = usable_spheres(bounds)
    dist = b[:, :3] @ p[:, :3].T + p[:, 3] + b[:, 3:4]  # >= 0: not outside that plane
    dist = np.where(ok[:, None], dist, 1.0)
    return ok & (dist >= 0).all(axis=1), float(np.abs(dist).min())


def test_instances_of_a_non_casting_material_are_in_no_cascade(gpu):
    """``Material.casts_shadows = False``: every third instance's material; each cascade's
    casters are numpy's minus those, counted as culled, never drawn into the map; the same
    instances are still drawn by the Main passes."""
    from dataclasses import replace as dc_replace

    from engine.materials.model import DEFAULT_MATERIAL
    from engine.scene.scene import Scene

    base = random_scene(300, seed=7, spread=60.0)
    quiet = np.arange(base.count) % 3 == 1
    scene = Scene(base.meshes, base.transforms, base.mesh_ids, base.colors,
                  materials=[DEFAULT_MATERIAL, dc_replace(DEFAULT_MATERIAL, casts_shadows=False)],
                  material_ids=quiet.astype(np.uint32))  # fmt: skip
    h = Harness(gpu, scene, settings=FrameSettings(cascades=2, taa=False, shadow_radius=70.0))
    cam = Camera(np.array([0.0, 5.0, 55.0]), np.array([0.0, 0.0, 0.0]), 60.0, 0.1)
    h.render(cam, 2)
    fit = h.frame.res.cascade_fit
    for c in range(2):
        want, margin = _kept_by_numpy(scene.bounds(), fit.cascades[c].planes)
        assert margin > 1e-3
        assert (want & quiet).any()  # some non-casters were inside: the test can fail
        kept = want & ~quiet
        counts = h.cascade_counters(c)
        assert counts == {"tested": scene.count, "culled": scene.count - int(kept.sum()),
                          "casters": int(kept.sum())}  # fmt: skip
        assert set(h.drawn(f"shadow.c{c}").tolist()) == set(np.flatnonzero(kept).tolist())
    drawn = set(h.drawn("early").tolist()) | set(h.drawn("late").tolist())
    assert drawn & set(np.flatnonzero(quiet).tolist())  # visible as ever


def test_each_cascades_counters_and_casters_equal_numpy(gpu):
    scene = random_scene(300, seed=7, spread=60.0)
    h = Harness(gpu, scene, settings=FrameSettings(cascades=4, taa=False, shadow_radius=70.0))
    cam = Camera(np.array([0.0, 5.0, 55.0]), np.array([0.0, 0.0, 0.0]), 60.0, 0.1)
    h.render(cam, 2)
    fit = h.frame.res.cascade_fit
    bounds = scene.bounds()
    total, kept_sets = 0, []
    for c in range(4):
        want, margin = _kept_by_numpy(bounds, fit.cascades[c].planes)
        assert margin > 1e-3, "a sphere touches a plane: the comparison would be float noise"
        counts = h.cascade_counters(c)
        assert counts == {"tested": scene.count, "culled": scene.count - int(want.sum()),
                          "casters": int(want.sum())}  # fmt: skip
        drawn = h.drawn(f"shadow.c{c}")
        assert set(drawn.tolist()) == set(np.flatnonzero(want).tolist())
        total += int(want.sum())
        kept_sets.append(int(want.sum()))
    assert h.counters()["shadow_casters"] == total
    assert kept_sets[0] < scene.count and len(set(kept_sets)) > 1  # the cascades differ
    # the blocks reach the record under their WGSL names; fewer cascades, fewer blocks
    h.render(cam, 10)
    h.loop.drain()
    blocks = {b.block: b for b in h.loop.telemetry.latest.counters}
    assert [f"cascade{c}" in blocks for c in range(4)] == [True] * 4
    assert blocks[cascade_block(3)].names == CASCADE_COUNTER_NAMES
    assert blocks[cascade_block(0)].as_dict() == h.cascade_counters(0)
    h.frame.set_settings(cascades=2)
    h.render(cam, 10)
    h.loop.drain()
    assert {b.block for b in h.loop.telemetry.latest.counters} == {"cull", "cascade0", "cascade1"}
    line = h.loop.telemetry.latest.readbacks["cascade1"].line()
    assert line.startswith("Cascade1 frame ") and "casters" in line


def test_bad_cascade_knobs_are_one_line():
    from engine.commands import CommandRegistry
    from engine.settings import FRAME_KNOBS

    with pytest.raises(ValueError, match="cascades: expected 1 to 4"):
        FrameSettings(cascades=5)
    with pytest.raises(ValueError, match="cascade_lambda"):
        FrameSettings(cascade_lambda=1.5)
    reg, applied = CommandRegistry(), []
    for k in FRAME_KNOBS:
        k.register(reg, lambda: None, applied.append)
    cases = (("cascades 0", "from 1 to 4"), ("cascades x", "from 1 to 4"),
             ("cascade-lambda 2", "from 0 to 1"), ("cascade-lambda nan", "0 to 1"))  # fmt: skip
    for line, why in cases:
        r = reg.execute(line)
        assert not r.ok and why in r.text and "\n" not in r.text, r.text
    assert not applied
    assert reg.execute("cascades 3").ok and applied == [3]


def test_four_cascades_picture_matches_reference(gpu, compare_reference, town):
    scene, path = town
    h = Harness(gpu, scene, (192, 108), FrameSettings(cascades=4, bloom=False))
    h.frame.jitter_sequence = ((0.0, 0.0),)
    h.render(path.at(3.0), 3)
    rgb = h.target.read_rgba()[..., :3]
    compare_reference("cascades4_city_192x108", rgb, tolerance=2)
    h.frame.set_settings(cascades=1)  # the same view with the single map: a different picture
    h.render(path.at(3.0), 3)
    assert (h.target.read_rgba()[..., :3] != rgb).any(axis=2).sum() > 50


def test_cascades_view_against_numpy(gpu):
    """Each pixel's colour is the cascade numpy picks from its depth (outside the blend
    bands); the texel view's colour is numpy's texels per pixel on the ground."""
    from engine.tools.dump.tool import read_texture
    from engine.tools.views.reference import CASCADE_COLOURS, cascade_pick, ramp
    from engine.tools.views.tool import ViewTool
    from tests.tool_fakes import make_ctx

    size = (128, 72)
    scene = random_scene(60, seed=2, spread=60.0)
    h = Harness(gpu, scene, size, FrameSettings(cascades=4, taa=False, shadow_radius=70.0))
    ctx = make_ctx(gpu, h.graph, view=None)
    ctx.install(ViewTool())
    cam = Camera(np.array([0.0, 3.0, 50.0]), np.array([0.0, 0.0, 0.0]), 60.0, 0.1)
    assert ctx.commands.execute("view cascades").ok
    h.render(cam, 2, hooks=ctx.updates)
    rgb = h.target.read_rgba()[..., :3].astype(np.float64) / 255
    depth = read_texture(gpu.device, h.graph.texture("frame.depth"))[..., 0]
    fit = h.frame.res.cascade_fit

    def linear(v):
        return np.where(v <= 0.04045, v / 12.92, ((v + 0.055) / 1.055) ** 2.4)

    def unit(v):
        return v / np.maximum(np.linalg.norm(v, axis=-1, keepdims=True), 1e-9)

    got = np.argmax(unit(linear(rgb)) @ unit(linear(CASCADE_COLOURS)).T, axis=-1)  # the hue
    d = np.where(depth > 0, cam.near / np.maximum(depth, 1e-30), np.inf)
    c, w = cascade_pick(d, fit.splits, BLEND_BAND)
    edge = np.min(np.abs(d[..., None] - np.asarray(fit.splits)[None, None, 1:]), axis=-1)
    sure = (depth > 0) & (w == 0) & (edge > 1e-3 * d) & (d < fit.splits[-1])
    assert all((sure & (c == k)).sum() > 30 for k in range(4)), "every cascade on screen"
    assert (got[sure] == c[sure]).all()
    assert ((depth > 0) & (w > 0.2) & (w < 0.8)).sum() > 10  # blend bands on screen
    # texels per pixel on the ground (y = 0): numpy from the depth of the pixel and its
    # neighbours, each axis's step toward the nearer one as the shader takes it
    assert ctx.commands.execute("view cascades:texels").ok
    h.render(cam, 1, hooks=ctx.updates)
    rgb = h.target.read_rgba()[..., :3].astype(np.float64)
    inv = np.linalg.inv(h.frame.res.view_proj)
    w_, h_ = size
    ys, xs = np.mgrid[0:h_, 0:w_]
    ndc = np.stack([(xs + 0.5) / w_ * 2 - 1, 1 - (ys + 0.5) / h_ * 2, depth, np.ones_like(depth)],
                   -1)  # fmt: skip
    world = ndc @ inv.T
    with np.errstate(divide="ignore", invalid="ignore"):  # the sky (depth 0): at infinity
        world = world[..., :3] / world[..., 3:]
    half = h.frame.settings.shadow_size / 2  # NDC -> texels
    checked = 0
    for y in range(h_ // 2, h_ - 14):  # the ground below the horizon, above the legend strip
        for x in range(1, w_ - 1):
            near4 = world[[y, y, y, y - 1, y + 1], [x, x + 1, x - 1, x, x]]
            if (depth[y - 1 : y + 2, x - 1 : x + 2] <= 0).any() or np.abs(near4[:, 1]).max() > 1e-3:
                continue  # not the ground, or a neighbour on another surface
            p, r, lf, u, dn = near4
            dx = min(r - p, p - lf, key=lambda v: float(v @ v))
            dy = min(dn - p, p - u, key=lambda v: float(v @ v))
            m = fit.cascades[int(c[y, x])].view_proj.astype(np.float64)[:2, :3] * half
            a, b = m @ dx, m @ dy  # texels per pixel step, both axes
            texels = math.sqrt(abs(a[0] * b[1] - a[1] * b[0]))
            want = ramp((math.log2(texels) + 4) / 8) * 255
            assert np.abs(rgb[y, x] - want).max() <= 6, (x, y, rgb[y, x], want)
            checked += 1
    assert checked > 200


def test_cascades_of_another_camera_seen_from_outside(gpu):
    """Fitted to another camera (``fit_shadows_to``, ``--shadow-camera``): the uniform's
    ``cascade_depth`` is that camera's view depth, and each pixel of the view from above
    shows the cascade numpy picks by that depth (not by the depth from the picture's camera)."""
    from engine.tools.dump.tool import read_texture
    from engine.tools.views.reference import CASCADE_COLOURS, cascade_pick
    from engine.tools.views.tool import ViewTool
    from tests.tool_fakes import make_ctx

    size = (128, 72)
    scene = random_scene(60, seed=2, spread=60.0)
    h = Harness(gpu, scene, size, FrameSettings(cascades=4, taa=False, shadow_radius=70.0))
    ctx = make_ctx(gpu, h.graph, view=None)
    ctx.install(ViewTool())
    street = Camera(np.array([0.0, 3.0, 50.0]), np.array([0.0, 0.0, 0.0]), 60.0, 0.1)
    above = Camera(np.array([30.0, 90.0, 80.0]), np.array([0.0, 0.0, 20.0]), 60.0, 0.1)
    h.frame.fit_shadows_to(street)
    assert ctx.commands.execute("view cascades").ok
    h.render(above, 2, hooks=ctx.updates)
    row = -street.view().astype(np.float64)[2]  # world -> the street camera's view depth
    np.testing.assert_allclose(h.frame._cascade_depth(above.view()), row, rtol=1e-6)
    rgb = h.target.read_rgba()[..., :3].astype(np.float64) / 255
    depth = read_texture(gpu.device, h.graph.texture("frame.depth"))[..., 0]
    fit = h.frame.res.cascade_fit
    inv = np.linalg.inv(h.frame.res.view_proj.astype(np.float64))
    ys, xs = np.mgrid[0 : size[1], 0 : size[0]]
    ndc = np.stack([(xs + 0.5) / size[0] * 2 - 1, 1 - (ys + 0.5) / size[1] * 2, depth,
                    np.ones_like(depth)], -1)  # fmt: skip
    with np.errstate(divide="ignore", invalid="ignore"):
        world = ndc @ inv.T
        world = world[..., :3] / world[..., 3:]
        d = world @ row[:3] + row[3]  # the street camera's depth of each surface (sky: nan)
    c, w = cascade_pick(d, fit.splits, BLEND_BAND)
    edge = np.min(np.abs(d[..., None] - np.asarray(fit.splits)[None, None, 1:]), axis=-1)
    lin = np.where(rgb <= 0.04045, rgb / 12.92, ((rgb + 0.055) / 1.055) ** 2.4)
    grey = np.ptp(rgb, axis=-1) < 0.02  # outside every box, or the sky
    unit = lin / np.maximum(np.linalg.norm(lin, axis=-1, keepdims=True), 1e-9)
    cols = np.asarray(CASCADE_COLOURS, np.float64)
    cols = cols / np.linalg.norm(cols, axis=-1, keepdims=True)
    got = np.argmax(unit @ cols.T, axis=-1)
    sure = (depth > 0) & ~grey & (w == 0) & (edge > 1e-3 * np.abs(d)) & (d > 0)
    sure &= d < fit.splits[-1]
    assert len({int(k) for k in c[sure]}) >= 3, "several of the street camera's cascades"
    assert sure.sum() > 300
    assert (got[sure] == c[sure]).all()
    # by the picture's own depth many of them would be another cascade: the view really
    # follows the fitted camera
    own = cascade_pick(np.where(depth > 0, 0.1 / np.maximum(depth, 1e-30), np.inf), fit.splits,
                       BLEND_BAND)[0]  # fmt: skip
    assert (own[sure] != c[sure]).sum() > 200
