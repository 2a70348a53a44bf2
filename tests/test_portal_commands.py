"""Commands a page can send that write files or cost frames: ``capture`` (never through a
link, never over a file that is not a PNG, temporary file then rename, the reply is the real
outcome) and ``shadow-size`` (says what it costs before it does it). Loopback only."""

from __future__ import annotations

import errno
import os
import subprocess
import sys
import tempfile
from dataclasses import replace
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
from PIL import Image

import engine.tools.capture.tool as capture_module
from engine.commands import CommandRegistry
from engine.safe_write import PNG_SIGNATURE, UnsafeWrite, png_target, save_png
from engine.settings import FrameSettings, register_frame_commands
from engine.telemetry import Telemetry
from engine.tools.capture.tool import CaptureTool
from engine.tools.portal import Portal, server
from tests.helpers import ROOT
from tests.portal_support import FramePump, post_command, sample_with_portal
from tests.tool_fakes import make_ctx

RGB = np.arange(4 * 3 * 3, dtype=np.uint8).reshape(3, 4, 3) * 7  # 4x3, every pixel distinct
ROOT_USER = hasattr(os, "geteuid") and os.geteuid() == 0


def image() -> Image.Image:
    return Image.fromarray(RGB, "RGB")


# -- engine.safe_write ----------------------------------------------------------------------
def test_a_new_png_is_written_and_reads_back(tmp_path):
    out = save_png(tmp_path / "a.png", image())
    assert out == tmp_path / "a.png"
    assert np.array_equal(np.asarray(Image.open(out)), RGB)
    assert os.listdir(tmp_path) == ["a.png"]  # no temporary file left


def test_an_existing_png_is_replaced(tmp_path):
    Image.new("RGB", (9, 9)).save(tmp_path / "a.png")
    save_png(tmp_path / "a.png", image())
    assert Image.open(tmp_path / "a.png").size == (4, 3)


@pytest.mark.parametrize("target_kind", ["text", "png", "missing"])
def test_a_symlink_is_refused_and_its_target_untouched(tmp_path, target_kind):
    target = tmp_path / "notes.txt"
    if target_kind == "text":
        target.write_text("my notes\n")
    elif target_kind == "png":
        target = tmp_path / "ref.png"
        Image.new("RGB", (2, 2)).save(target)
    before = target.read_bytes() if target.exists() else None
    link = tmp_path / "l.png"
    link.symlink_to(target)
    with pytest.raises(UnsafeWrite, match=r"l\.png is a symbolic link \(to .*\); a capture does"):
        save_png(link, image())
    assert (target.read_bytes() if target.exists() else None) == before
    left = ["l.png", *([target.name] if before is not None else [])]
    assert link.is_symlink() and sorted(os.listdir(tmp_path)) == sorted(left)


@pytest.mark.parametrize(
    "content", [b"not a png\n", b"", b"\x89PNG", PNG_SIGNATURE[:-1] + b"x" + b"rest"]
)
def test_an_existing_file_that_is_not_a_png_is_refused(tmp_path, content):
    p = tmp_path / "ref.png"
    p.write_bytes(content)
    with pytest.raises(UnsafeWrite, match=r"ref\.png exists and is not a PNG; a capture replaces"):
        save_png(p, image())
    assert p.read_bytes() == content


def test_a_folder_or_a_missing_folder_is_refused(tmp_path):
    (tmp_path / "d.png").mkdir()
    with pytest.raises(UnsafeWrite, match="is not a regular file"):
        png_target(tmp_path / "d.png")
    with pytest.raises(UnsafeWrite, match="does not exist; create it first"):
        png_target(tmp_path / "nope" / "a.png")
    with pytest.raises(UnsafeWrite, match="must end in .png"):
        png_target(tmp_path / "a.txt")


def test_relative_paths_resolve_against_the_working_directory(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert png_target("x.png") == tmp_path / "x.png"
    assert png_target("./sub/../y.png") == tmp_path / "y.png"


def test_a_failed_write_leaves_the_old_file_and_no_temporary(tmp_path, monkeypatch):
    Image.new("RGB", (9, 9)).save(tmp_path / "a.png")
    before = (tmp_path / "a.png").read_bytes()

    class Broken:
        def save(self, f, format):  # noqa: A002 - PIL's signature
            f.write(b"\x89PNG half")
            raise OSError(28, "No space left on device")

    with pytest.raises(OSError, match="No space left"):
        save_png(tmp_path / "a.png", Broken())
    assert (tmp_path / "a.png").read_bytes() == before
    assert os.listdir(tmp_path) == ["a.png"]


@pytest.fixture
def refusing_folder(tmp_path, monkeypatch):
    """A folder that refuses new files: mode 0o500, or for root (who may write anyway) a
    ``mkstemp`` that fails there as the kernel would."""
    ro = tmp_path / "ro"
    ro.mkdir()
    ro.chmod(0o500)
    if ROOT_USER:
        real = tempfile.mkstemp

        def mkstemp(*a, dir=None, **kw):  # noqa: A002 - tempfile's signature
            if Path(dir) == ro:
                raise PermissionError(errno.EACCES, "Permission denied", str(ro / ".x.tmp"))
            return real(*a, dir=dir, **kw)

        monkeypatch.setattr(tempfile, "mkstemp", mkstemp)
    yield ro
    ro.chmod(0o700)


def test_a_folder_that_refuses_writes_is_an_oserror_naming_the_target(refusing_folder):
    ro = refusing_folder
    with pytest.raises(OSError) as e:
        save_png(ro / "a.png", image())
    assert e.value.strerror == "Permission denied" and e.value.filename == str(ro / "a.png")
    assert os.listdir(ro) == []


# -- the capture command, through the portal ---------------------------------------------------
def capture_tool(tel: Telemetry | None = None):
    """The real ``CaptureTool`` installed into a context without a GPU; ``(tool, registry)``.
    Its ``_write(texture)`` is what the frame loop calls after each frame."""
    ctx = make_ctx(gpu=SimpleNamespace(device=None), telemetry=tel)
    return ctx.install(CaptureTool()), ctx.commands


@pytest.fixture
def capture_portal(monkeypatch):
    def fake_save(device, texture, path):  # the texture read back is RGB
        save_png(path, image())

    monkeypatch.setattr(capture_module, "save_texture_png", fake_save)
    tel = Telemetry({"adapter": "synthetic"})
    cap, reg = capture_tool(tel)
    texture = SimpleNamespace(size=(4, 3, 1))
    portal = Portal(tel, reg, port=0)
    pump = FramePump(tel, reg, fps=100, max_s=30, after_frame=lambda i: cap._write(texture))
    try:
        with pump:
            yield SimpleNamespace(port=portal.port, reg=reg, cap=cap)
    finally:
        portal.close()


def test_capture_answers_with_the_written_file(capture_portal, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    status, body = post_command(capture_portal.port, "capture shot.png")
    assert (status, body) == (
        200,
        {"ok": True, "text": f"capture: wrote {tmp_path}/shot.png (4x3)"},
    )
    assert np.array_equal(np.asarray(Image.open(tmp_path / "shot.png")), RGB)


def test_capture_says_where_a_relative_path_goes(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    _, reg = capture_tool()
    result = reg.execute("capture shots.png")
    assert (
        result.text
        == f"capture: the next frame goes to {tmp_path}/shots.png (relative to {tmp_path})"
    )
    assert reg.execute(f"capture {tmp_path}/b.png").text == (
        f"capture: the next frame goes to {tmp_path}/b.png"
    )
    assert result.later.result.text == f"capture: {tmp_path}/shots.png replaced by {tmp_path}/b.png"


@pytest.mark.parametrize("kind", ["link", "text"])
def test_capture_refuses_a_link_or_a_text_file_in_one_line(capture_portal, tmp_path, kind):
    notes = tmp_path / "notes.txt"
    notes.write_text("keep me\n")
    path = tmp_path / "l.png"
    if kind == "link":
        path.symlink_to(notes)
    else:
        path.write_text("keep me too\n")
    status, body = post_command(capture_portal.port, f"capture {path}")
    assert status == 200 and body["ok"] is False and "\n" not in body["text"]
    assert body["text"].startswith(f"error: capture: {path} ")
    assert notes.read_text() == "keep me\n"
    assert capture_portal.cap._path is None  # nothing was queued


def test_capture_into_a_folder_that_refuses_writes_answers_the_failure(
    capture_portal, refusing_folder
):
    ro = refusing_folder
    status, body = post_command(capture_portal.port, f"capture {ro}/a.png")
    assert (status, body) == (
        200,
        {"ok": False, "text": f"capture: cannot write {ro}/a.png: Permission denied"},
    )


def test_a_capture_not_written_in_time_says_so(monkeypatch, tmp_path):
    monkeypatch.setattr(server, "COMMAND_WAIT_S", 0.3)
    tel = Telemetry()
    _, reg = capture_tool(tel)
    portal = Portal(tel, reg, port=0)
    try:  # commands run, but no frame is written after them
        with FramePump(tel, reg, fps=100, max_s=10):
            status, body = post_command(portal.port, f"capture {tmp_path}/a.png")
    finally:
        portal.close()
    assert status == 504 and body == {
        "ok": False,
        "text": f"capture: the next frame goes to {tmp_path}/a.png; not done within 0.3 s: "
        "the outcome goes to the log",
    }


def test_the_capture_option_refuses_a_text_file_before_any_gpu_work(tmp_path):
    ref = tmp_path / "ref.png"
    ref.write_text("reference\n")
    cmd = [sys.executable, "-m", "samples.s01", "--capture", str(ref), "--size", "32x18"]
    p = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert p.returncode == 2 and ref.read_text() == "reference\n"
    assert p.stderr.splitlines()[-1] == (
        f"python -m samples.s01: error: argument --capture: '{ref}' exists and is not a PNG; "
        "Lantern replaces only its own kind of file: choose another name or remove it first"
    )


# -- shadow-size: the cost before the deed ---------------------------------------------------
class Frame:
    def __init__(self, cascades=1):
        self.sizes = []
        self.settings = FrameSettings(cascades=cascades)

    def set_settings(self, shadow_size=None, **changes):
        self.sizes.append(shadow_size)
        self.settings = replace(self.settings, **changes)


@pytest.mark.parametrize(
    "line, ok, text, applied",
    [
        ("shadow-size 2048", True, "shadow map: 2048x2048 (16 MiB)", [2048]),
        ("shadow-size 4096", True, "shadow map: 4096x4096 (64 MiB)", [4096]),
        ("shadow-size 256", True, "shadow map: 256x256 (0.25 MiB)", [256]),
        (
            "shadow-size 8192",
            False,
            "error: shadow-size: 8192x8192 is a 256 MiB shadow map (depth32float), 16x the "
            "texels of the default 2048 to render every frame; type 'shadow-size 8192 confirm' "
            "to do it",
            [],
        ),
        ("shadow-size 8192 confirm", True, "shadow map: 8192x8192 (256 MiB)", [8192]),
        (
            "shadow-size 8192 yes",
            False,
            "error: shadow-size: expected one of confirm, got 'yes'",
            [],
        ),
    ],
)
def test_shadow_size_states_its_cost_and_a_large_one_needs_confirm(line, ok, text, applied):
    _run_shadow_command(Frame(), line, ok, text, applied)


@pytest.mark.parametrize(
    "cascades, line, ok, text",
    [  # the cost is the map's in all its layers: 4 x 4096^2 x 4 bytes = 256 MiB
        (4, "shadow-size 2048", True, "shadow map: 2048x2048 (16 MiB)"),
        (
            4,
            "shadow-size 4096",
            False,
            "error: shadow-size: 4 cascades of 4096x4096 are a 256 MiB shadow map "
            "(depth32float), 16x the texels of the default 2048 to render every frame; type "
            "'shadow-size 4096 confirm' to do it",
        ),
        (1, "cascades 4", True, "cascades: 4 (practical split scheme)"),  # 4 x 16 = 64 MiB
    ],
)
def test_the_shadow_cost_counts_every_cascade(cascades, line, ok, text):
    applied = ([2048] if line.startswith("shadow-size") else [None]) if ok else []
    _run_shadow_command(Frame(cascades), line, ok, text, applied)


def test_more_cascades_of_a_large_map_need_confirm():
    frame = Frame()
    frame.settings = replace(frame.settings, shadow_size=4096)  # 64 MiB: no question
    want = (
        "error: cascades: 2 cascades of 4096x4096 are a 128 MiB shadow map (depth32float), 8x "
        "the texels of the default 2048 to render every frame; type 'cascades 2 confirm' to do it"
    )
    _run_shadow_command(frame, "cascades 2", False, want, [])
    _run_shadow_command(frame, "cascades 2 confirm", True, "cascades: 2 (practical split scheme)",
                        [None])  # fmt: skip
    assert frame.settings.cascades == 2
    assert 2 * 4096 * 4096 * 4 / 2**20 == 128


def test_a_cheaper_shadow_map_never_asks():
    """From 4 cascades of 4096 (256 MiB, confirmed at start): 3 cascades (192 MiB), the same
    4 again and a smaller size apply at once; only more than now asks."""
    frame = Frame(4)
    frame.settings = replace(frame.settings, shadow_size=4096)
    _run_shadow_command(frame, "cascades 3", True, "cascades: 3 (practical split scheme)",
                        [None])  # fmt: skip
    frame.settings = replace(frame.settings, cascades=4)
    _run_shadow_command(frame, "cascades 4", True, "cascades: 4 (practical split scheme)",
                        [None, None])  # fmt: skip
    _run_shadow_command(frame, "shadow-size 2048", True, "shadow map: 2048x2048 (16 MiB)",
                        [None, None, 2048])  # fmt: skip
    frame = Frame(4)
    frame.settings = replace(frame.settings, shadow_size=4096)
    want = "error: shadow-size: 4 cascades of 8192x8192 are a 1024 MiB shadow map"
    reg = CommandRegistry()
    register_frame_commands(reg, frame)
    assert reg.execute("shadow-size 8192").text.startswith(want)


def _run_shadow_command(frame, line, ok, text, applied):
    reg = CommandRegistry()
    register_frame_commands(reg, frame)
    tel = Telemetry()
    portal = Portal(tel, reg, port=0)
    try:  # the page gets what the command did
        with FramePump(tel, reg, fps=100, max_s=10):
            assert post_command(portal.port, line) == (200, {"ok": ok, "text": text})
    finally:
        portal.close()
    assert frame.sizes == applied
    assert 4096 * 4096 * 4 / 2**20 == 64  # the MiB figure: depth32float, 4 bytes a texel


def test_a_real_run_answers_capture_with_the_written_file(tmp_path):
    """s01 headless with the portal: ``capture`` from the page resolves against the sample's
    working directory, writes the next frame and answers with it; a link is refused."""
    out = tmp_path / "run"
    out.mkdir()
    (out / "l.png").symlink_to(tmp_path / "notes.txt")
    args = ("--capture", str(tmp_path / "end.png"), "--frames", "100000", "--size", "64x36")
    with sample_with_portal("s01", *args, cwd=out) as port:
        status, body = post_command(port, "capture shot.png")
        linked = post_command(port, "capture l.png")
    assert (status, body) == (200, {"ok": True, "text": f"capture: wrote {out}/shot.png (64x36)"})
    with Image.open(out / "shot.png") as im:
        assert im.size == (64, 36) and im.mode == "RGB"
    assert linked[0] == 200 and linked[1]["ok"] is False
    assert linked[1]["text"].startswith(f"error: capture: {out}/l.png is a symbolic link")
    assert not (tmp_path / "notes.txt").exists()  # nothing written through the link
