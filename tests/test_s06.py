"""s06, GPU particles: the counts of every frame (alive, emitted, killed, refused, drawn,
culled) and the particles themselves against a numpy simulation of the same seed; both sorts
in the frame equal to numpy's argsort of the keys the simulation wrote; the counter block
through the readback; the reference picture for both variants; --variant switching."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest
from frame_harness import Harness, random_scene
from PIL import Image

from engine.math3d import translation
from engine.scene.camera import Camera
from engine.scene.meshes import box, plane
from engine.scene.scene import Mesh, Scene
from engine.settings import FrameSettings
from samples.s06_particles import (
    ARGS_DRAW_OFFSET,
    COUNTER_NAMES,
    VARIANTS,
    ParticleConfig,
    add_particles,
)
from tests.helpers import ROOT, run_sample

F32 = np.float32
DT = 1.0 / 64.0  # exact in float32, as are the ages it sums to and the lifetimes below
CAPACITY = 200
EMIT_PER_FRAME = 10  # emission 1.2 x 200 / 0.375 s mean lifetime = 640/s = 10 a frame
CONFIG = ParticleConfig(emitter=(0.0, 0.3, 0.0), emitter_radius=0.4, launch=(0.3, 0.5, 0.0),
                        spread=2.0, lifetime=(0.25, 0.25), radius=(0.05, 0.05), seed=7,
                        swirl_frequency=0.8)  # fmt: skip
FORCES = (1.0, 1.5, 1.2)  # wind, swirl, emission
# the emitter near the left edge of the view: some particles are culled
CAM = Camera(np.array([2.5, 1.0, 3.0]), np.array([2.0, 0.6, 0.0]), 45.0, 0.1)


# -- the numpy twin, written from the shader's description -------------------------------------
def pcg(v: np.ndarray) -> np.ndarray:
    """PCG hash of u32 (Jarzynski & Olano 2020), with numpy's wrapping uint32 arithmetic."""
    s = v.astype(np.uint32) * np.uint32(747796405) + np.uint32(2891336453)
    w = ((s >> ((s >> np.uint32(28)) + np.uint32(4))) ^ s) * np.uint32(277803737)
    return (w >> np.uint32(22)) ^ w


def rand(key: np.ndarray, k: int) -> np.ndarray:
    return (pcg(key + np.uint32(k)) >> np.uint32(8)).astype(np.float64) / 2.0**24


class NumpyParticles:
    """The fountain in float64 (ages in float32, as they are summed on the GPU): particles by
    serial, emitted while the pool has room, killed at their lifetime."""

    def __init__(self, c: ParticleConfig, capacity: int):
        self.c, self.capacity = c, capacity
        self.seed = pcg(np.array([c.seed], np.uint32))[0]
        self.serial = np.zeros(0, np.uint32)
        self.pos, self.vel = np.zeros((0, 3)), np.zeros((0, 3))
        self.age = np.zeros(0, F32)
        self.next_serial = 0
        self.bounces = 0

    def keys(self, serial):
        return pcg(serial ^ self.seed)

    def lifetime(self, serial):
        k = self.keys(serial)
        lo, span = self.c.lifetime
        return (F32(lo) + F32(span) * ((pcg(k + np.uint32(7)) & np.uint32(255)) / F32(256))).astype(
            F32
        )

    def radius(self, serial):
        return self.c.radius[0] + self.c.radius[1] * rand(self.keys(serial), 8)

    def air(self, p, t, wind, swirl):
        f = self.c.swirl_frequency
        q = p * f + np.array([0.25 * t, 0.0, 0.0])
        x, y, z = q[:, 0], q[:, 1], q[:, 2]
        sin, cos = np.sin, np.cos
        curl = np.stack([-sin(x + 0.7) * sin(y) - cos(z + 2.1) * cos(x),
                         -sin(y + 1.3) * sin(z) - cos(x + 0.7) * cos(y),
                         -sin(z + 2.1) * sin(x) - cos(y + 1.3) * cos(z)], 1)  # fmt: skip
        return np.array([wind, 0.0, 0.0]) + 0.5 * swirl * curl

    def step(self, request: int, t: float, wind: float, swirl: float) -> dict:
        c = self.c
        emit = min(request, self.capacity - len(self.serial))
        new = np.arange(self.next_serial, self.next_serial + emit, dtype=np.uint32)
        self.next_serial += emit
        k = self.keys(new)
        a, d = 2 * np.pi * rand(k, 0), c.emitter_radius * np.sqrt(rand(k, 1))
        out = np.stack([np.cos(a), np.sin(a)], 1)
        h = c.spread * (0.8 + 0.2 * rand(k, 2))
        pos = np.array(c.emitter) + np.stack([out[:, 0] * d, 0 * d, out[:, 1] * d], 1)
        up = c.spread * 0.2 * (rand(k, 3) - 0.5)
        vel = np.array(c.launch) + np.stack([out[:, 0] * h, up, out[:, 1] * h], 1)
        self.serial = np.concatenate([self.serial, new])
        self.pos, self.vel = np.concatenate([self.pos, pos]), np.concatenate([self.vel, vel])
        self.age = np.concatenate([self.age, np.zeros(emit, F32)])
        accel = np.array([0.0, -c.gravity, 0.0]) + c.drag * (self.air(self.pos, t, wind, swirl)
                                                            - self.vel)  # fmt: skip
        self.vel = self.vel + accel * DT
        self.pos = self.pos + self.vel * DT
        floor = c.ground + self.radius(self.serial)
        low = self.pos[:, 1] < floor
        self.pos[low, 1] = floor[low]
        bounce = low & (self.vel[:, 1] < 0)
        self.vel[bounce] *= [c.friction, -c.restitution, c.friction]
        self.bounces += int(bounce.sum())
        self.age = (self.age + F32(DT)).astype(F32)
        dead = self.age >= self.lifetime(self.serial)
        keep = ~dead
        self.serial, self.pos = self.serial[keep], self.pos[keep]
        self.vel, self.age = self.vel[keep], self.age[keep]
        return {"alive": len(self.serial), "emitted": emit, "killed": int(dead.sum()),
                "refused": request - emit}  # fmt: skip


def frustum_margin(view_proj: np.ndarray, p: np.ndarray, r: np.ndarray) -> np.ndarray:
    """The least signed distance beyond the sphere's radius to the side and near planes."""
    m = view_proj.astype(np.float64)
    planes = np.stack([m[3] + m[0], m[3] - m[0], m[3] + m[1], m[3] - m[1], m[3] - m[2]])
    planes /= np.linalg.norm(planes[:, :3], axis=1, keepdims=True)
    return (p @ planes[:, :3].T + planes[:, 3] + r[:, None]).min(axis=1)


# -- the GPU side ---------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def rig(gpu):
    h = Harness(gpu, random_scene(12, 3, walls=1), size=(96, 64),
                settings=FrameSettings(taa=False, bloom=False, shadow_size=256))  # fmt: skip
    made = add_particles(h.frame, CAPACITY, CONFIG, forces=lambda: FORCES)
    return h, made


def read_particles(h, s):
    """``(serial, pos (n, 3), age)`` of the alive particles, in alive-list order."""
    pool = h.read(s.pool, np.uint8).view(np.float32).reshape(-1, 8)
    alive = int(h.read(s.state)[1])  # State.alive_next: survivors of the last step
    out = s.capacity * (1 + s.parity)  # the list the last step wrote (parity flipped since)
    slots = h.read(s.lists)[out : out + alive]
    rows = pool[slots]
    return rows[:, 7].view(np.uint32), rows[:, :3].astype(np.float64), rows[:, 3], slots


def test_counts_and_particles_match_a_numpy_simulation(rig):
    """30 steps of 1/64 s: per frame the six counters equal the twin's (the pool fills and
    refuses emissions, particles die at their lifetimes, bounce on the ground); then the alive
    particles are the same serials with the same float32 ages, at the same positions within
    0.1 mm, drawn where the twin finds them inside the frustum; and the counter block reaches
    the telemetry record through the non-blocking readback with the same counts."""
    h, made = rig
    s = made.system
    twin = NumpyParticles(CONFIG, CAPACITY)
    per_frame = []
    for f in range(30):
        h.render(CAM, dt=DT)
        got = dict(zip(COUNTER_NAMES, h.read(s.counters).tolist(), strict=True))
        want = twin.step(EMIT_PER_FRAME, h.time, FORCES[0], FORCES[1])
        assert {n: got[n] for n in want} == want, f"frame {f}"
        assert got["drawn"] + got["culled"] == got["alive"]
        per_frame.append(got)
    assert sum(c["refused"] for c in per_frame) > 20 and sum(c["killed"] for c in per_frame) > 50
    serial, pos, age, slots = read_particles(h, s)
    order = np.argsort(serial)
    assert np.array_equal(serial[order], twin.serial)
    assert np.array_equal(age[order], twin.age)
    np.testing.assert_allclose(pos[order], twin.pos, atol=1e-4)
    assert twin.bounces > 50  # the ground was reached
    # drawn: the view-frustum test of each sphere, where it is not within rounding of a plane
    vp = h.frame.res.view_proj
    margin = frustum_margin(vp, twin.pos, twin.radius(twin.serial))
    drawn = h.read(s.values)[: per_frame[-1]["drawn"]]
    gpu_drawn = np.isin(slots[order], drawn)
    sure = np.abs(margin) > 1e-4
    assert np.array_equal(gpu_drawn[sure], (margin > 0)[sure])
    assert 0 < per_frame[-1]["culled"] < per_frame[-1]["alive"]
    h.loop.drain()
    block = next(c for c in h.loop.telemetry.latest.counters if c.block == "particles")
    assert block.names == COUNTER_NAMES
    assert block.as_dict() == per_frame[block.frame_index]


@pytest.mark.parametrize("variant", VARIANTS)
def test_both_sorts_in_the_frame_are_numpys_argsort(rig, variant):
    """A frame's keys and slots as Particles.Simulate wrote them (Particles.Sort off), then
    sorted by the variant's sort: the keys are numpy's descending sort of them and each slot
    travelled with its key (radix: exactly numpy's stable argsort); the keys are the view
    depths of those particles; and Particles draws exactly the drawn ones."""
    h, made = rig
    s, d = made.system, h.device
    made.sort.enabled = False
    h.render(CAM, dt=DT)
    made.sort.enabled = True
    drawn = int(h.read(s.counters)[COUNTER_NAMES.index("drawn")])
    sorter = s.sorts[variant]
    keys, values = h.read(s.keys)[: sorter.size], h.read(s.values)[: sorter.size]
    assert drawn > 20 and (keys[:drawn] > 0).all() and (keys[drawn:] == 0).all()
    enc = d.create_command_encoder()
    cpass = enc.begin_compute_pass()
    sorter.record(cpass)
    cpass.end()
    d.queue.submit([enc.finish()])
    k, v = h.read(s.keys)[: sorter.size], h.read(s.values)[: sorter.size]
    order = np.argsort(~keys, kind="stable")
    assert np.array_equal(k, keys[order])
    if variant == "radix":
        assert np.array_equal(v[:drawn], values[order][:drawn])
    else:  # not stable: the same (key, slot) pairs, keys in order
        pairs = lambda a, b: sorted(zip(a[:drawn], b[:drawn], strict=True))  # noqa: E731
        assert pairs(k, v) == pairs(keys, values)
    pool = h.read(s.pool, np.uint8).view(np.float32).reshape(-1, 8)
    p = np.c_[pool[v[:drawn], :3].astype(np.float64), np.ones(drawn)]
    depth = -(p @ CAM.view().astype(np.float64).T)[:, 2]
    np.testing.assert_allclose(k[:drawn].view(np.float32), depth, rtol=1e-5)
    args = h.read(s.args)[ARGS_DRAW_OFFSET // 4 : ARGS_DRAW_OFFSET // 4 + 4]
    assert args.tolist() == [6, drawn, 0, 0]


def test_without_post_or_shadows_the_drops_draw_into_the_output(gpu):
    """--no-post: the draw's pipeline for the output's format, blended over the picture;
    --no-shadows: shadow.map is not read (its writer is off)."""
    h = Harness(gpu, random_scene(8, 4, walls=1), size=(96, 64),
                settings=FrameSettings(post=False, shadows=False, shadow_size=256))  # fmt: skip
    made = add_particles(h.frame, 512, ParticleConfig(emitter=(0.0, 0.5, 0.0),
                         radius=(0.3, 0.1), launch=(0.0, 4.0, 0.0)))  # fmt: skip
    assert "shadow.map" not in made.draw.reads and "output" in made.draw.writes
    h.render(CAM, frames=8, dt=DT)
    with_drops = h.target.read_rgba()
    made.draw.enabled = False
    h.render(CAM, dt=0.0)  # the same scene (a step of 0 s) without the draw
    assert set(made.draw._pipelines) == {h.graph.output_format}
    assert (with_drops != h.target.read_rgba()).any(axis=2).sum() > 20


def roof_scene(roof: bool) -> Scene:
    """A ground and, with ``roof``, a slab 12 m up between the sun and the emitter at the
    origin: its shadow covers the fountain but the slab is out of the camera's view."""
    meshes = [Mesh.from_lods("ground", [plane(1.0)]), Mesh.from_lods("box", [box()])]
    sun = np.array([0.55, 0.62, 0.36]) / np.linalg.norm([0.55, 0.62, 0.36])
    rows = [np.diag([60.0, 1.0, 60.0, 1.0])]
    if roof:
        rows.append(translation(*(sun * 12.0 / sun[1])) @ np.diag([8.0, 0.5, 8.0, 1.0]))
    colors = np.tile([0.5, 0.5, 0.5, 1.0], (len(rows), 1)).astype(np.float32)
    return Scene(meshes, np.array(rows, np.float32), np.array([0, 1][: len(rows)], np.uint32),
                 colors, sun_direction=sun)  # fmt: skip


def test_the_drops_are_shadowed_by_the_frames_shadow_map(gpu):
    """The fountain seen from the side against the sky (looking up: nothing behind the drops
    that shadows change): under the roof's shadow the drops are darker with shadows on than
    off (the sun's light is gone, the sky's stays); without the roof, shadows on or off draw
    the same drops (nothing shadows them)."""
    cam = Camera(np.array([4.2, 0.3, -6.6]), np.array([0.0, 2.2, 0.0]), 35.0, 0.1)
    config = ParticleConfig(emitter=(0.0, 0.0, 0.0), launch=(0.0, 6.0, 0.0), spread=1.0,
                            lifetime=(1.0, 0.5), radius=(0.12, 0.05))  # fmt: skip
    means = {}
    for roof in (True, False):
        h = Harness(gpu, roof_scene(roof), size=(96, 64), settings=FrameSettings(
            taa=False, bloom=False, shadow_size=1024, exposure=1.0))  # fmt: skip
        made = add_particles(h.frame, 1024, config, forces=lambda: (0.0, 0.0, 1.0))
        h.render(cam, frames=40, dt=1 / 32)
        made.draw.enabled = False
        h.render(cam, dt=0.0)
        sky = h.texture("frame.hdr")[..., :3]
        made.draw.enabled = True
        for shadows in (True, False):
            h.frame.set_settings(shadows=shadows)
            h.render(cam, dt=0.0)
            hdr = h.texture("frame.hdr")[..., :3]
            drops = np.abs(hdr - sky).max(axis=2) > 0.05
            assert drops.sum() > 100, (roof, shadows)
            means[roof, shadows] = hdr[drops].mean()
    assert means[True, True] < 0.6 * means[True, False]
    assert means[False, True] == pytest.approx(means[False, False], rel=1e-3)


@pytest.mark.parametrize("variant", VARIANTS)
def test_both_variants_draw_the_reference_picture(variant, tmp_path, compare_reference):
    """Close to the fountain (drops several pixels wide at 160x90), after 1 s of prewarm:
    both sorts give the same back-to-front order, so the same picture to the 8-bit step."""
    out = tmp_path / f"{variant}.png"
    r = run_sample("s06", "--capture", str(out), "--size", "160x90", "--frames", "4",
                   "--shadow-size", "512", "--particles", "4096", "--prewarm", "1",
                   "--camera", "29,2.5,35:27,3,27:60", "--variant", variant)  # fmt: skip
    assert r.returncode == 0, r.stderr
    rgb = np.asarray(Image.open(out).convert("RGB"))
    compare_reference("s06_particles_160x90", rgb, tolerance=1)


def test_variant_cycle_records_both_and_compare_has_the_sort_row(tmp_path):
    """``--variant-cycle 8``: the records alternate bitonic and radix in blocks of 8, and
    ``lantern compare RUN.jsonl`` has the row ``gpu Particles.Sort`` with its interval."""
    run = tmp_path / "run.jsonl"
    r = run_sample("s06", "--capture", str(tmp_path / "x.png"), "--size", "64x36", "--frames",
                   "96", "--variant-cycle", "8", "--gpu-profile", "--shadow-size", "256",
                   "--particles", "2048", "--prewarm", "0.5", "--telemetry", str(run))  # fmt: skip
    assert r.returncode == 0, r.stderr
    frames = [json.loads(x) for x in run.read_text().splitlines()]
    seen = {x["frame"]: x.get("variant") for x in frames if x["type"] == "frame"}
    assert len(seen) > 70 and all(v == VARIANTS[(i // 8) % 2] for i, v in seen.items())
    assert "Particles frame" in r.stdout  # the counter block's shutdown line
    c = subprocess.run([sys.executable, "-m", "engine.devtools", "compare", str(run),
                        "--settle", "2", "--fail-above", "1000"],
                       cwd=ROOT, capture_output=True, text=True, timeout=120)  # fmt: skip
    assert c.returncode == 0, c.stdout + c.stderr
    assert f"B: {run} [radix]" in c.stdout
    row = next(line for line in c.stdout.splitlines()
               if line.split()[:2] == ["gpu", "Particles.Sort"])  # fmt: skip
    lo, hi = (float(x) for x in row.split("[")[1].split("]")[0].split(","))
    assert lo <= hi


def test_per_draw_timing_times_the_particle_passes(tmp_path):
    """``--gpu-profile draws`` on s06 (llvmpipe once crashed on pipeline statistics around
    Particles.Simulate's dispatches): the run ends, and the per-draw report lists the step's
    four labelled dispatches and the one indirect draw."""
    r = run_sample("s06", "--capture", str(tmp_path / "d.png"), "--size", "64x36", "--frames",
                   "3", "--particles", "256", "--gpu-profile", "draws")  # fmt: skip
    assert r.returncode == 0, r.stderr[-2000:]
    lines = r.stdout.splitlines()
    at = next(i for i, line in enumerate(lines) if "Particles.Simulate (compute)" in line)
    rows = [line.split() for line in lines[at + 2 : at + 6]]
    assert [row[0] for row in rows] == ["begin", "emit", "simulate", "finish"]
    assert all(float(row[1]) > 0 for row in rows)  # each dispatch timed inside the pass
    assert any("Particles (render)" in line for line in lines)
