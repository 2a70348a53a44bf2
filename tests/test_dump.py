"""--dump (engine/tools/dump/): textures and snapshots as .npy / .png / .exr, buffers as typed
tables decoded from their WGSL struct, bad input in one line."""

from __future__ import annotations

import csv

import numpy as np
import pytest

from engine.tools.dump.buffers import DRAW_INDEXED_INDIRECT_WGSL, wgsl_struct_dtype
from engine.tools.dump.tool import range_map, write_dump
from tests.helpers import run_sample

RUN = ("--instances", "300", "--size", "96x64", "--frames", "3")


def test_wgsl_struct_layouts_follow_wgsl_alignment():
    from engine.frame import VIEW_DTYPE
    from engine.shaders import load_wgsl

    view = wgsl_struct_dtype(load_wgsl("frame_common.wgsl"), "View")
    assert view.itemsize == VIEW_DTYPE.itemsize == 11 * 64 + 12 * 16
    assert view.names == VIEW_DTYPE.names
    assert [view.fields[n][1] for n in view.names] == [VIEW_DTYPE.fields[n][1] for n in view.names]
    src = "struct S { a: vec3f, b: f32, c: vec2<u32>, d: array<f32, 3>, e: vec4i, };"
    s = wgsl_struct_dtype(src, "S")
    assert [s.fields[n][1] for n in "abcde"] == [0, 12, 16, 24, 48] and s.itemsize == 64
    args = wgsl_struct_dtype(DRAW_INDEXED_INDIRECT_WGSL, "DrawIndexedIndirect")
    assert args.itemsize == 20 and args.fields["base_vertex"][0] == np.dtype("<i4")
    with pytest.raises(ValueError, match="no WGSL struct"):
        wgsl_struct_dtype(src, "T")


def test_range_map_and_exr(tmp_path):
    v = np.array([[[0.0], [1.0]], [[np.nan], [0.5]]], np.float32)
    rgb, lo, hi = range_map(v)
    assert (lo, hi) == (0.0, 1.0) and rgb[0, 1].tolist() == [255] * 3
    assert rgb[1, 0].tolist() == [255, 0, 255] and rgb[1, 1].tolist() == [128] * 3
    import OpenEXR

    hdr = np.random.default_rng(1).random((4, 5, 4)).astype(np.float16)
    write_dump(hdr, str(tmp_path / "x.exr"))
    with OpenEXR.File(str(tmp_path / "x.exr")) as f:
        back = f.channels()["RGBA"].pixels
    assert back.dtype == np.float16 and np.array_equal(back, hdr)


def test_dump_counters_table_and_depth_npy(tmp_path):
    """Three dumps in one run (--dump is repeatable): a buffer table and two snapshots (each
    keeps its own reader pass)."""
    out, npy, depth = tmp_path / "c.csv", tmp_path / "d.npy", tmp_path / "z.npy"
    r = run_sample("s13", *RUN, "--dump", "cull.counters", str(out),
                   "--dump", "frame.hdr@Main.Early", str(npy),
                   "--dump", "frame.depth@Main.Late", str(depth))  # fmt: skip
    assert r.returncode == 0, r.stderr
    rows = {row["counter"]: int(row["value"]) for row in csv.DictReader(out.open())}
    assert rows["tested"] == 300
    parts = ("frustum_culled", "small_culled", "occluded", "visible")
    assert sum(rows[k] for k in parts) == rows["tested"]
    assert r.returncode == 0, r.stderr
    assert "frame.hdr@Main.Early" in r.stdout
    hdr = np.load(npy)
    assert hdr.shape == (64, 96, 4) and hdr.dtype == np.float16 and np.isfinite(hdr).all()
    z = np.load(depth)
    assert z.shape[:2] == (64, 96) and 0 < (z > 0).mean() < 1  # reverse-Z: sky stays 0


def test_every_layer_of_a_layered_texture_is_dumped(tmp_path):
    """``shadow.map`` with 3 cascades is 3 layers: ``.npy`` holds ``(3, H, W, 1)``, a
    ``.png`` the layers side by side (layer 0 left), each as the frame left it, said so."""
    npy, png = tmp_path / "sm.npy", tmp_path / "sm.png"
    r = run_sample("s13", *RUN, "--cascades", "3", "--shadow-size", "256",
                   "--dump", "shadow.map", str(npy), "--dump", "shadow.map", str(png))  # fmt: skip
    assert r.returncode == 0, r.stderr
    assert "3 layers (axis 0)" in r.stdout and "3 layers side by side" in r.stdout
    layers = np.load(npy)
    assert layers.shape == (3, 256, 256, 1) and layers.dtype == np.float32
    for a in layers:  # each cascade has casters (reverse-Z: nearer the sun is larger)
        assert 0 < (a > 0).mean() < 1
    assert not np.array_equal(layers[0], layers[2])
    from PIL import Image

    rgb = np.asarray(Image.open(png).convert("L")).astype(float)
    assert rgb.shape == (256, 768)
    lo, hi = float(layers.min()), float(layers.max())  # the range map over every layer
    want = np.concatenate(list(layers[..., 0]), axis=1)
    assert np.abs(rgb - (want - lo) / (hi - lo) * 255).max() <= 1.0


def test_dump_bad_input_is_one_line(tmp_path):
    cases = {
        ("nope", "x.npy"): "textures: frame.albedo, frame.ambient, frame.depth",
        ("frame.hdr@Post", "x.npy"): "passes that do: Main.Early",
        ("cull.args", "x.png"): "write it as .npy or .csv",
        ("frame.depth", "x.txt"): "must end in .npy, .png, .exr or .csv",
        ("bogus", "x.csv"): "unknown resource 'bogus'",  # the name first, then the suffix
        ("frame.depth", "x.csv"): "frame.depth is a texture: write it as .npy, .png or .exr",
    }
    knobs = {  # a resource no enabled pass writes: refused, not dumped as zeros
        ("frame.hdr", "x.npy", "--no-post"): "no pass writes 'frame.hdr'",
        ("shadow.map", "x.npy", "--no-shadows"): "no pass writes 'shadow.map'",
        ("hiz.pyramid", "x.npy", "--no-occlusion"): "no pass writes 'hiz.pyramid'",
        ("post.exposure", "x.csv", "--exposure=1.5"): "no pass writes 'post.exposure'",
        ("post.histogram", "x.npy", "--no-post"): "no pass writes 'post.histogram'",
    }
    cases.update({(name, file): (msg, knob) for (name, file, knob), msg in knobs.items()})
    cases[("frame.depth", "x.npy")] = ("is also given to --dump; give each its own file",
                                       "--dump", "frame.hdr", str(tmp_path / "x.npy"))  # fmt: skip
    for (name, file), msg in cases.items():
        msg, *knob = (msg,) if isinstance(msg, str) else msg
        r = run_sample("s13", *RUN, *knob, "--dump", name, str(tmp_path / file))
        assert r.returncode == 2 and msg in r.stderr, (name, r.stderr)
        assert len([x for x in r.stderr.splitlines() if "error" in x]) == 1, r.stderr
        assert "Traceback" not in r.stderr
        assert not (tmp_path / file).exists()


def test_output_paths_that_are_symlinks_are_refused_untouched(tmp_path):
    """--dump (and every output option) through a symbolic link, dangling or not: one line,
    exit 2, the link and its target left as they were (a dangling one got its target
    created and the link replaced by a plain file)."""
    kept = tmp_path / "kept.npy"
    kept.write_bytes(b"mine")
    for name, target in (("dangling.npy", tmp_path / "nowhere.npy"), ("live.npy", kept)):
        link = tmp_path / name
        link.symlink_to(target)
        for opt in (("--dump", "frame.depth"), ("--telemetry",)):
            path = str(link) if opt[0] == "--dump" else str(link.with_suffix(".jsonl"))
            if opt[0] == "--telemetry":
                link.with_suffix(".jsonl").symlink_to(target)
            r = run_sample("s13", *RUN, *opt, path)
            assert r.returncode == 2 and "is a symbolic link" in r.stderr, r.stderr
            assert len(r.stderr.strip().splitlines()) == 1 and "Traceback" not in r.stderr
    assert not (tmp_path / "nowhere.npy").exists() and kept.read_bytes() == b"mine"
    assert all(p.is_symlink() for p in tmp_path.iterdir() if p.name != "kept.npy")


def test_a_users_own_csv_is_never_overwritten(tmp_path):
    """A CSV has no signature: an existing one is replaced only when it is an earlier dump
    of the same table (its header); a user's table stays as it was, one error line, exit 1."""
    mine = tmp_path / "mine.csv"
    mine.write_text("a,b\n1,2\n")
    r = run_sample("s13", *RUN, "--dump", "cull.counters", str(mine))
    assert r.returncode == 1 and "is not an earlier dump of this table" in r.stderr
    assert mine.read_text() == "a,b\n1,2\n" and "Traceback" not in r.stderr
