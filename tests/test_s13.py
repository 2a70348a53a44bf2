"""s13 end to end: capture vs reference, shutdown reports, one-line errors for bad options."""

from __future__ import annotations

import re

import numpy as np
import pytest
from PIL import Image

from tests.helpers import ROOT, run_sample

ERRORS = [
    (["--shadow-size", "1000"], "argument --shadow-size: expected a power of two"),
    (["--shadow-size", "128"], "argument --shadow-size: expected a power of two"),
    (["--instances", "0"], "argument --instances: expected an instance count from 1"),
    (["--instances", "5000001"], "argument --instances: expected an instance count from 1"),
    (["--camera", "1,2:3,4,5"], "argument --camera: invalid camera"),
    (
        ["--scene", "/nonexistent/city.glb"],
        "argument --scene: /nonexistent/city.glb: file not found",
    ),
]


@pytest.mark.parametrize("argv,message", ERRORS)
def test_bad_options_one_line_exit_2(argv, message, capsys):
    from engine.app import run
    from samples.s13_city import City

    with pytest.raises(SystemExit) as e:
        run(City, argv + ["--capture", "/tmp/x.png"])
    assert e.value.code == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and message in err, err


def test_s13_capture_matches_reference(tmp_path, compare_reference):

    out = tmp_path / "s13.png"
    r = run_sample(
        "s13", "--capture", str(out), "--size", "320x180", "--frames", "8", "--instances",
        "20000", "--overlay", "off", "--gpu-profile", "--shadow-size", "1024",
    )  # fmt: skip
    assert r.returncode == 0, r.stderr
    m = re.search(
        r"Cull frame (\d+): tested (\d+), frustum (\d+), small (\d+), occluded (\d+), "
        r"visible (\d+) \(early (\d+), late (\d+)\), shadow casters (\d+)",
        r.stdout,
    )
    assert m, r.stdout
    f, tested, fr, sm, occ, vis, early, late, shadow = map(int, m.groups())
    assert tested == 20000 == fr + sm + occ + vis and late <= vis <= early + late
    assert occ > 0 and shadow > 0 and f >= 5
    assert "Cull.Late" in r.stdout and "HiZ" in r.stdout  # the GPU timeline names our passes
    rgb = np.asarray(Image.open(out).convert("RGB"))
    compare_reference("s13_city_320x180", rgb, tolerance=2)


def test_s13_no_post_no_cull_runs(tmp_path):
    out = tmp_path / "plain.png"
    r = run_sample(
        "s13", "--capture", str(out), "--size", "64x36", "--frames", "2", "--instances", "500",
        "--no-post", "--no-cull", "--no-shadows", "--overlay", "off",
    )  # fmt: skip
    assert r.returncode == 0, r.stderr
    rgb = np.asarray(Image.open(out).convert("RGB")).astype(int)
    # no Post: Main clears straight to the output, so the sky is the flat clear colour,
    # stored sRGB-encoded; below the horizon the unculled city and ground draw over it
    from engine.frame import SKY_HORIZON

    lin = np.array(SKY_HORIZON)
    sky = np.round(np.where(lin <= 0.0031308, 12.92 * lin, 1.055 * lin ** (1 / 2.4) - 0.055) * 255)
    assert (np.abs(rgb[0, 32] - sky) <= 1).all(), rgb[0, 32]  # looking down the street
    assert len(np.unique(rgb.reshape(-1, 3), axis=0)) > 20


def test_scene_file_repeated_to_instances(tmp_path):
    """--scene with --instances N repeats the file on a grid: floor(N / per-file) copies."""
    from engine.scene.gltf import load_gltf

    per_file = load_gltf(str(ROOT / "assets/meshes/house.glb")).count
    n = per_file * 4 + per_file // 2  # not a multiple: rounds down to 4 whole copies
    out = tmp_path / "houses.png"
    r = run_sample(
        "s13",
        "--scene",
        "assets/meshes/house.glb",
        "--instances",
        str(n),
        "--capture",
        str(out),
        "--size",
        "96x64",
        "--frames",
        "3",
        "--gpu-profile",
        "--overlay",
        "off",
    )
    assert r.returncode == 0, r.stderr
    assert f"s13: {4 * per_file} instances" in r.stderr
    tested = re.search(r"Cull frame \d+: tested (\d+),", r.stdout)
    assert tested and int(tested.group(1)) == 4 * per_file


def test_camera_beyond_float32_is_rejected():
    from engine.app import run
    from samples.s13_city import City

    with pytest.raises(SystemExit) as e:
        run(City, ["--camera", "1e300,0,0:0,0,0", "--capture", "/tmp/x.png"])
    assert e.value.code == 2


def test_f2_freezes_culling_and_flies_the_camera():
    """F2 hands the render camera to held keys while culling keeps the frozen view: holding
    W for one second moves the eye fly_speed units along the view direction."""
    from types import SimpleNamespace

    from engine.app import KEY_F2
    from engine.commands import CommandRegistry
    from engine.scene.camera import KEY_W, Camera
    from engine.settings import register_frame_commands
    from samples.s13_city import City

    class Frame:  # the StandardFrame calls that on_key/update make
        camera, frozen, rendered = None, False, []

        def set_settings(self, **changes):
            raise AssertionError("not called here")

        def freeze_culling(self, frozen=None):
            self.frozen = (not self.frozen) if frozen is None else frozen
            return self.frozen

        def update(self, ctx, camera):
            self.camera = camera
            self.rendered.append(camera)

    held = {KEY_W}
    window = SimpleNamespace(key_down=lambda k: k in held)
    sample = City.__new__(City)
    sample.app = SimpleNamespace(window=window)
    sample.frame = Frame()
    start = Camera(np.array([0.0, 5.0, 0.0], np.float32), np.array([0.0, 5.0, -10.0], np.float32))
    sample.path = SimpleNamespace(at=lambda t: start)
    sample.fly, sample._last_time, sample.fly_speed = None, 0.0, 12.0
    ctx = SimpleNamespace(time=0.0)
    sample.update(ctx)
    commands = CommandRegistry()
    # what build and the App do: the frame's commands, F2 (City.keys) bound to "cull freeze"
    register_frame_commands(commands, sample.frame, freeze=sample.freeze)
    for key in City.keys:
        commands.bind(key.name, key.code, key.command)
    commands.press(KEY_F2)
    assert sample.frame.frozen and sample.fly is not None
    ctx.time = 1.0
    sample.update(ctx)
    np.testing.assert_allclose(sample.frame.camera.eye, [0.0, 5.0, -12.0], atol=1e-4)
    commands.press(KEY_F2)  # released: back on the path
    ctx.time = 2.0
    sample.update(ctx)
    assert not sample.frame.frozen and sample.fly is None
    np.testing.assert_allclose(sample.frame.camera.eye, [0.0, 5.0, 0.0])


@pytest.mark.parametrize("instances", [3000, 100_000])
def test_fly_speed_keeps_the_city_in_view(instances):
    """Two seconds of W (the issue: about 200 m/s left nothing in view) stay inside the city
    at driving pace; Shift is 4x; a house is walked through; an outlier changes nothing."""
    from engine.scene.camera import KEY_LEFT_SHIFT, KEY_W, FlyCamera, fly_speed
    from engine.scene.procedural import city

    scene, path = city(instances, seed=0)
    speed = fly_speed(scene.extent)
    assert speed == 15.0  # metres per second
    start = path.at(0.0)
    for keys, metres in (({KEY_W}, 30.0), ({KEY_W, KEY_LEFT_SHIFT}, 120.0)):
        fly = FlyCamera(start, speed)
        for _ in range(120):  # 2 s at 60 frames per second
            cam = fly.step(1 / 60, lambda k, keys=keys: k in keys)
        assert np.linalg.norm(cam.eye - start.eye) == pytest.approx(metres, rel=1e-4)
        lo, hi = scene.extent
        assert (cam.eye[[0, 2]] > lo[[0, 2]]).all() and (cam.eye[[0, 2]] < hi[[0, 2]]).all()
    house = (np.array([-7.0, -0.1, -6.0]), np.array([7.0, 6.0, 6.0]))
    assert fly_speed(house) == pytest.approx(np.linalg.norm([14.0, 6.1, 12.0]) / 10)  # ~2 m/s
    assert fly_speed((house[0], np.array([1e5, 6.0, 6.0]))) == 15.0
