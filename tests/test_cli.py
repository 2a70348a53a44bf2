"""Bad command-line input: exit status 2 and one line naming the option, no traceback."""

from __future__ import annotations

import os

import pytest

from tests.helpers import run_sample

BAD = [
    (["--size", "0x0"], "--size"),
    (["--size", "abc"], "--size"),
    (["--size", "640x"], "--size"),
    (["--frames", "-1"], "--frames"),
    (["--frames", "ten"], "--frames"),
    (["--overlay", "fancy"], "--overlay"),
    (["--seed", "-3"], "--seed"),
    (["--adapter", "no-such-gpu-xyz"], "--adapter"),
    (["--capture", "/nonexistent-dir/frame.png"], "--capture"),
    (["--capture", "frame.jpg"], "--capture"),
    (["--trace", "/proc/trace.json", "--capture", "x.png"], "--trace"),
]


@pytest.mark.parametrize(("args", "option"), BAD, ids=[" ".join(a) for a, _ in BAD])
def test_bad_option_value_is_one_line_exit_2(args, option, tmp_path):
    r = (
        run_sample("s01", *args, "--frames", "1", timeout=120)
        if "--frames" not in args
        else (run_sample("s01", *args, timeout=120))
    )
    assert r.returncode == 2, (r.stdout, r.stderr)
    lines = [ln for ln in r.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1, r.stderr
    assert option in lines[0]
    assert "Traceback" not in r.stderr


def test_unwritable_capture_path_renders_nothing(tmp_path):
    locked = tmp_path / "locked"
    locked.mkdir()
    locked.chmod(0o500)
    try:
        if os.access(locked, os.W_OK):  # root ignores permissions: use a path under /proc
            target = "/proc/lantern-frame.png"
        else:
            target = str(locked / "frame.png")
        r = run_sample("s01", "--capture", target, timeout=120)
    finally:
        locked.chmod(0o700)
    assert r.returncode == 2
    assert "--capture" in r.stderr and "cannot write" in r.stderr
    assert "GPU:" not in r.stdout  # checked before any GPU work


def test_samples_list():
    import subprocess
    import sys

    from tests.helpers import ROOT

    r = subprocess.run(
        [sys.executable, "-m", "samples"], cwd=ROOT, capture_output=True, text=True, timeout=60
    )
    assert r.returncode == 0
    assert "s01" in r.stdout and "lit boxes" in r.stdout.lower()


# an unknown name is a bad value (2, like a bad option); a real backend without a driver, 1
@pytest.mark.parametrize(("backend", "status"), [("Nonsense", 2), ("foo", 2), ("Metal", 1)])
def test_unusable_backend_env_is_one_line(backend, status, tmp_path):
    r = run_sample("s01", "--capture", str(tmp_path / "x.png"), env={"WGPU_BACKEND_TYPE": backend})
    assert r.returncode == status, r.stderr
    lines = [ln for ln in r.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and "WGPU_BACKEND_TYPE" in lines[0], r.stderr
    assert not (tmp_path / "x.png").exists()


def test_odd_output_paths_are_one_line_errors(tmp_path):
    fifo = tmp_path / "pipe.png"
    os.mkfifo(fifo)  # opening it to test writability would block forever
    for args, needle in (
        (["--capture", str(fifo)], "not a regular file"),
        (["--capture", str(tmp_path)], "must end in .png"),
        (["--capture", ""], "empty path"),
        (["--trace", "", "--capture", str(tmp_path / "x.png")], "empty path"),
    ):
        r = run_sample("s01", *args, timeout=60)
        assert r.returncode == 2 and needle in r.stderr, (args, r.stderr)
        assert len(r.stderr.strip().splitlines()) == 1


def test_adapter_from_environment_is_named_in_the_error():
    r = run_sample("s01", "--capture", "x.png", env={"WGPUPY_WGPU_ADAPTER_NAME": "no-such-gpu"})
    assert r.returncode == 1
    assert "WGPUPY_WGPU_ADAPTER_NAME 'no-such-gpu' matches no adapter" in r.stderr


def test_standard_frame_on_opengl_is_one_line(tmp_path):
    r = run_sample(
        "s13",
        "--capture",
        str(tmp_path / "x.png"),
        "--instances",
        "10",
        "--size",
        "32x32",
        env={"WGPU_BACKEND_TYPE": "OpenGL"},
    )
    assert r.returncode == 1, r.stderr
    # wgpu itself may log around it ("Forcing backend: OpenGL (7)"; a driver's own error):
    # ours is one line, and there is no traceback
    ours = [ln for ln in r.stderr.splitlines() if ln.startswith("python -m samples.s13: error:")]
    assert len(ours) == 1 and "OpenGL" in ours[0] and "Traceback" not in r.stderr


def test_ctrl_c_while_the_sample_builds_says_the_capture_was_not_written(tmp_path, capsys):
    # Ctrl-C landing in build() (s13 compiles pipelines and builds its city for seconds there)
    # used to skip the frames without the "not written" line the other interrupt points print
    from engine.app import run
    from samples.s01_lit_boxes import LitBoxes

    class InterruptedWhileBuilding(LitBoxes):
        def build(self, graph):
            super().build(graph)
            self.app.interrupt.requested = True  # what the SIGINT handler sets

    png = tmp_path / "never.png"
    assert run(InterruptedWhileBuilding, ["--capture", str(png), "--frames", "2"]) == 130
    out = capsys.readouterr().out
    assert f"interrupted before the first frame: {png} not written" in out
    assert not png.exists()


def test_an_output_never_replaces_a_file_of_another_kind(tmp_path):
    """--trace, --telemetry, --dump and --graph over an existing file that is not what they
    write (a note, a script): one line, exit 2, the file untouched; over their own kind, or
    an empty file, they may write (checked before the GPU starts)."""
    for option, name in (("--trace", "t.json"), ("--telemetry", "t.jsonl"),
                         ("--graph", "g.dot")):  # fmt: skip
        f = tmp_path / name
        f.write_text("my notes, not Lantern's\n")
        r = run_sample("s01", option, str(f), "--capture", str(tmp_path / "x.png"), timeout=120)
        assert r.returncode == 2 and "exists and is not" in r.stderr, (option, r.stderr)
        assert len(r.stderr.strip().splitlines()) == 1 and f.read_text().startswith("my notes")
    for name in ("d.npy", "d.png", "d.exr"):
        f = tmp_path / name
        f.write_text("my notes\n")
        r = run_sample("s13", "--dump", "frame.hdr", str(f), "--instances", "10", timeout=120)
        assert r.returncode == 2 and "exists and is not" in r.stderr, (name, r.stderr)
        assert f.read_text() == "my notes\n"
    dot = tmp_path / "empty.dot"
    dot.write_bytes(b"")  # an empty file holds nothing to lose
    r = run_sample("s13", "--graph", str(dot), "--instances", "10", timeout=120)
    assert r.returncode == 0 and dot.read_text().startswith("digraph"), r.stderr
    r = run_sample("s13", "--graph", str(dot), "--instances", "10", timeout=120)  # its own kind
    assert r.returncode == 0, r.stderr


def test_one_file_for_two_outputs_is_refused(tmp_path):
    png, log = str(tmp_path / "a.png"), str(tmp_path / "a.jsonl")
    cases = {
        ("--capture", png, "--dump", "frame.hdr", png): "argument --dump: ",
        ("--capture", png, "--telemetry", log, "--baseline", log): "argument --baseline: ",
    }
    for args, msg in cases.items():
        r = run_sample("s13", *args, "--instances", "10", timeout=120)
        assert r.returncode == 2 and msg in r.stderr and "is also given to" in r.stderr, r.stderr
        assert len(r.stderr.strip().splitlines()) == 1
    assert not os.path.exists(png)


def test_a_capture_gets_the_mode_any_new_file_gets(tmp_path):
    png = tmp_path / "m.png"
    r = run_sample("s01", "--capture", str(png), "--frames", "1", "--size", "32x32", timeout=120)
    assert r.returncode == 0, r.stderr
    umask = os.umask(0)
    os.umask(umask)
    assert png.stat().st_mode & 0o777 == 0o666 & ~umask  # not mkstemp's 0600
