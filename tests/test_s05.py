"""s05, the lights sample: the three light paths draw one reference picture of the night
city (the 8-bit sRGB G-buffer of the deferred path within 3 steps), the night city of s13
with --lights, a tiny --sweep's table and crossover lines, and its bad input in one line."""

from __future__ import annotations

import re

import numpy as np
import pytest
from PIL import Image

from engine.settings import LIGHT_PATHS
from tests.helpers import run_sample

SMALL = ("--size", "160x90", "--frames", "3", "--instances", "1500", "--shadow-size", "512",
         "--overlay", "off")  # fmt: skip


@pytest.mark.parametrize("variant", LIGHT_PATHS)
def test_every_light_path_draws_the_reference_picture(variant, tmp_path, compare_reference):
    out = tmp_path / f"{variant}.png"
    r = run_sample("s05", "--capture", str(out), *SMALL, "--lights", "800",
                   "--variant", variant)  # fmt: skip
    assert r.returncode == 0, r.stderr
    rgb = np.asarray(Image.open(out).convert("RGB"))
    assert rgb.mean() > 4  # lit, not black
    compare_reference("s05_lights_160x90", rgb, tolerance=3)


def test_the_night_city_with_lights(tmp_path, compare_reference):
    out = tmp_path / "night.png"
    r = run_sample("s13", "--capture", str(out), *SMALL, "--lights", "400", "--night",
                   "--gpu-profile")  # fmt: skip
    assert r.returncode == 0, r.stderr
    m = re.search(r"Lights frame \d+: tested (\d+), visible (\d+), pairs (\d+)", r.stdout)
    assert m, r.stdout
    tested, visible, pairs = map(int, m.groups())
    assert tested == 400 and 0 < visible <= 400 and pairs >= visible
    compare_reference("s13_night_city_160x90", np.asarray(Image.open(out).convert("RGB")), 2)


def test_a_tiny_sweep_prints_every_path_and_the_crossovers(tmp_path):
    r = run_sample("s05", "--capture", str(tmp_path / "s.png"), "--size", "64x36",
                   "--instances", "300", "--no-shadows", "--gpu-profile", "--sweep",
                   "--sweep-counts", "1,16", "--sweep-frames", "2", "--sweep-rounds", "1",
                   "--sweep-stop-ms", "100000")  # fmt: skip
    assert r.returncode == 0, r.stderr
    rows = re.findall(r"^\s+(\d+) (\w+)\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)\s+(\d+)$",
                      r.stdout, re.M)  # fmt: skip
    seen = {(int(n), p) for n, p, *_ in rows}
    assert seen == {(n, p) for n in (1, 16) for p in LIGHT_PATHS}, r.stdout
    for n, p, cull, _shade, total, frame, frames in rows:
        assert int(frames) >= 2  # a block runs until 2 frames came back timed
        assert float(frame) >= float(total) > 0
        assert (float(cull) == 0) == (p == "forward"), (n, p, cull)  # forward assigns nothing
    assert "clustered over forward:" in r.stdout and "deferred over clustered:" in r.stdout


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (("--sweep", "--capture", "x.png"), "add --gpu-profile"),
        (("--sweep-counts", "16,4"), "increasing counts"),
        (("--sweep-counts", "1,2000000"), "1 to 1,048,576"),
        (("--quick", "--capture", "x.png"), "add --sweep or drop --quick"),
        (
            ("--light-path", "forward", "--variant", "deferred", "--capture", "x.png"),
            "--light-path forward and --variant deferred name the same choice",
        ),
        (  # the default path, named on purpose, is a choice too
            ("--light-path", "clustered", "--variant", "deferred", "--capture", "x.png"),
            "--light-path clustered and --variant deferred name the same choice",
        ),
        (("--variant", "forward", "--view", "lights", "--capture", "x.png"), "view lights"),
        (
            ("--sweep", "--light-path", "forward", "--gpu-profile", "--capture", "x.png"),
            "it runs every light path in turn",
        ),
        (("--sweep-counts", "1,5", "--capture", "x.png"), "add --sweep or drop --sweep-counts"),
        (("--scene", "assets/meshes/house.glb"), "a file's own lights draw in s13"),
        (
            ("--sweep", "--gpu-profile", "--capture", "x.png", "--sweep-stop-ms", "-5"),
            "--sweep-stop-ms > 0",
        ),
    ],
)
def test_bad_sweep_options_are_one_line(args, words, tmp_path):
    r = run_sample("s05", *args, "--size", "32x18")
    assert r.returncode == 2
    last = r.stderr.strip().splitlines()[-1]
    assert words in last and "Traceback" not in r.stderr


def test_light_path_alone_starts_that_path(tmp_path):
    """``--light-path`` is the variants' knob: given alone it is the path the run draws (the
    default variant used to switch it back to clustered), so no Lights.Cluster is timed."""
    r = run_sample("s05", "--capture", str(tmp_path / "f.png"), "--size", "64x36",
                   "--frames", "3", "--instances", "300", "--lights", "40", "--overlay", "off",
                   "--gpu-profile", "--light-path", "forward")  # fmt: skip
    assert r.returncode == 0, r.stderr
    assert "Main.Early" in r.stdout and "Lights.Cluster" not in r.stdout, r.stdout


def test_the_light_path_command_switches_the_variant(tmp_path):
    """``light-path forward`` typed in the console or the portal is the variant command's
    twin: ``variant`` then says forward, and the frames drawn after it are recorded as
    forward (before, they were still labelled clustered while drawn forward)."""
    from tests.portal_support import post_command, sample_with_portal

    tel = tmp_path / "t.jsonl"
    args = ("--capture", str(tmp_path / "end.png"), "--frames", "100000", "--size", "64x36",
            "--instances", "300", "--lights", "20", "--overlay", "off", "--gpu-profile",
            "--telemetry", str(tel))  # fmt: skip
    with sample_with_portal("s05", *args, cwd=tmp_path) as port:
        switched = post_command(port, "light-path forward")
        asked = post_command(port, "variant")
        for _ in range(20):  # bounded: a few frames drawn after the switch, then stop
            if post_command(port, "variant")[1]["ok"] and _forward_frames(tel) >= 3:
                break
    assert switched == (200, {"ok": True, "text": "light-path: forward (the variant)"})
    assert asked[1]["text"].startswith("variant: forward;"), asked
    table, frames = [], []  # the names records extend one id table, in file order
    for r in _records(tel):
        if r.get("type") == "names":
            table += r["names"]
        elif r.get("type") == "frame" and r.get("gpu"):
            frames.append((r["variant"], {table[g[0]] for g in r["gpu"]}))
    forward = [names for variant, names in frames if variant == "forward"]
    assert forward and len(forward) < len(frames)  # clustered first, then forward
    for variant, names in frames:  # each frame's passes are its label's
        assert ("Lights.Cluster" in names) == (variant == "clustered"), (variant, names)


def _records(path) -> list[dict]:
    """The telemetry file's records so far (a line cut by the kill is left out)."""
    import json

    try:
        lines = path.read_text().splitlines()
    except OSError:
        return []
    out = []
    for x in lines:
        try:
            out.append(json.loads(x))
        except ValueError:  # the line being written
            pass
    return out


def _forward_frames(path) -> int:
    return sum(r.get("variant") == "forward" for r in _records(path))
