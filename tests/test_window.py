"""A real glfw window under Xvfb, in a subprocess: render, resize, minimise, Esc, Ctrl-C."""

from __future__ import annotations

import os
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import textwrap
import time

import pytest

from tests.helpers import ROOT


@pytest.fixture(scope="module")
def display():
    """Start Xvfb on a free display number; yield the DISPLAY value."""
    xvfb = shutil.which("Xvfb")
    if xvfb is None:
        if os.environ.get("CI") or os.environ.get("LANTERN_EXPECT_ADAPTER"):
            pytest.fail("Xvfb is required in CI (apt-get install xvfb)")
        pytest.skip("Xvfb not installed")
    # Xvfb picks a free display itself and writes its number once it accepts connections
    # (-displayfd): no race with another Xvfb (xvfb-run, a parallel run) for the same number.
    read, write = os.pipe()
    log = tempfile.TemporaryFile()
    proc = subprocess.Popen(
        [
            xvfb,
            "-displayfd",
            str(write),
            "-screen",
            "0",
            "1024x768x24",
            "-nolisten",
            "tcp",
            "-noreset",
        ],  # -noreset: no server reset (a moment with no socket) when a test's last client leaves
        pass_fds=(write,),
        stdout=subprocess.DEVNULL,
        stderr=log,
    )
    os.close(write)
    n, deadline = b"", time.monotonic() + 60  # a loaded machine starts it slowly
    while (
        not n.endswith(b"\n")
        and select.select([read], [], [], max(0, deadline - time.monotonic()))[0]
    ):
        chunk = os.read(read, 64)  # "0" and "\n" may come in two writes: read the line,
        if not chunk:  # and keep the pipe open (a closed reader kills Xvfb's second write)
            break
        n += chunk
    n = n.decode().strip()
    deadline = time.monotonic() + 60
    while n.isdigit() and not _can_connect(f":{n}") and time.monotonic() < deadline:
        time.sleep(0.05)  # the number can come a moment before the socket accepts
    if not n.isdigit() or not _can_connect(f":{n}"):
        proc.kill()
        log.seek(0)
        said = log.read().decode(errors="replace").strip().splitlines()[-3:]
        pytest.fail(f"Xvfb did not start (display {n!r}, exit {proc.wait()}): {said}")
    yield f":{n}"
    proc.terminate()
    proc.wait(10)
    os.close(read)


def _can_connect(display: str) -> bool:
    """Whether an X client can open ``display`` now (opened and closed again)."""
    import ctypes
    import ctypes.util

    x = ctypes.CDLL(ctypes.util.find_library("X11"))
    x.XOpenDisplay.restype = ctypes.c_void_p
    x.XOpenDisplay.argtypes = [ctypes.c_char_p]
    x.XCloseDisplay.argtypes = [ctypes.c_void_p]
    d = x.XOpenDisplay(display.encode())
    if d:
        x.XCloseDisplay(d)
    return bool(d)


def _env(display):
    env = dict(os.environ, DISPLAY=display, PYTHONUNBUFFERED="1")
    env.setdefault("XDG_RUNTIME_DIR", "/tmp")
    return env


# Drives s01 through the real run loop. Minimising is simulated where X11 cannot show it: a
# window manager-less Xvfb never reports a 0x0 framebuffer, so the script makes the surface
# report 0x0 (what Windows and Wayland report for a minimised window) after iconifying it.
DRIVER = textwrap.dedent(
    """
    import json, sys
    import glfw
    from engine import app as engine_app
    from engine.surfaces import WindowSurface
    from samples.s01_lit_boxes import LitBoxes

    log = {"updates": [], "polls_while_minimised": 0}
    minimised = {"on": False}
    real_size = WindowSurface.framebuffer_size

    def framebuffer_size(self):
        if minimised["on"]:
            log["polls_while_minimised"] += 1
            if log["polls_while_minimised"] == 5:   # restore after 5 idle iterations
                glfw.restore_window(self.window)
                minimised["on"] = False
            return (0, 0)
        return real_size(self)

    WindowSurface.framebuffer_size = framebuffer_size

    class Driven(LitBoxes):
        def update(self, ctx):
            super().update(ctx)
            n = len(log["updates"])
            log["updates"].append([ctx.frame_index, *ctx.size])
            win = self.app.window
            if n == 3:
                glfw.set_window_size(win.window, 200, 150)
            elif n == 8:
                glfw.iconify_window(win.window)
                minimised["on"] = True
            elif n == 12:  # the Esc key, through the real key callback
                win._on_key(win.window, glfw.KEY_ESCAPE, 0, glfw.PRESS, 0)

    status = engine_app.run(Driven, ["--size", "320x240"] + sys.argv[1:])
    print("LOG " + json.dumps(log))
    sys.exit(status)
    """
)


def test_window_renders_resizes_minimises_and_closes(display):
    r = subprocess.run(
        [sys.executable, "-c", DRIVER],
        cwd=ROOT,
        env=_env(display),
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert r.returncode == 0, r.stderr
    assert "Traceback" not in r.stderr
    import json

    log = json.loads(r.stdout.split("LOG ", 1)[1])
    updates = log["updates"]
    assert len(updates) == 13  # Esc at the 13th frame closes the window
    assert [u[0] for u in updates] == list(range(13))  # frame indices have no gaps
    assert updates[0][1:] == [320, 240]
    assert updates[-1][1:] == [200, 150]  # the graph followed the resize
    assert log["polls_while_minimised"] == 5  # minimised: no frame drawn, then resumed


def _wait_for_frames(p, records, what: str, timeout_s: float = 120) -> None:
    """Until ``records`` (a ``--telemetry`` file) holds a frame: frames have finished and
    their CPU table will be the report (the writer's first buffer reaches the disk)."""
    deadline = time.monotonic() + timeout_s
    while b'"type":"frame"' not in (records.read_bytes() if records.exists() else b""):
        assert p.poll() is None and time.monotonic() < deadline, (what, p.communicate())
        time.sleep(0.05)


@pytest.mark.parametrize("when", ["during-start-up", "while-rendering"])
def test_ctrl_c_shuts_down_cleanly(display, when, tmp_path):
    records = tmp_path / "t.jsonl"
    p = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "samples.s01",
            "--size",
            "160x120",
            "--profile",
            "--telemetry",
            str(records),
        ],  # fmt: skip
        cwd=ROOT,
        env=_env(display),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    if when == "while-rendering":
        _wait_for_frames(p, records, when)
    else:  # the adapter is up, the window and the sample are still being built
        assert p.stdout.readline().startswith("GPU:")
    p.send_signal(signal.SIGINT)
    out, err = p.communicate(timeout=60)
    assert p.returncode == 130, err
    assert "Traceback" not in err
    if when == "while-rendering":
        assert "CPU frame" in out  # the shutdown timeline still printed


def test_ctrl_c_during_capture_writes_nothing(tmp_path):
    png = tmp_path / "never.png"
    p = subprocess.Popen(
        [sys.executable, "-m", "samples.s01", "--capture", str(png), "--frames", "100000"],
        cwd=ROOT,
        env=dict(os.environ, XDG_RUNTIME_DIR="/tmp"),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    first = p.stdout.readline()  # the adapter line: the capture starts (100k frames to go)
    assert first.startswith("GPU:"), first
    p.send_signal(signal.SIGINT)
    out, err = p.communicate(timeout=60)
    assert p.returncode == 130, err
    assert "Traceback" not in err
    assert "not written" in out and not png.exists()


def _destroy_windows(display: str, title_part: str, kill: bool = False, dry_run=False) -> int:
    """What ``xdotool windowclose`` does, from a second X connection: XDestroyWindow on every
    top-level window whose name contains ``title_part`` (``kill``: XKillClient, what ``xkill``
    and ``xdotool windowkill`` do: the owner's connection is closed); returns how many."""
    import ctypes
    import ctypes.util

    x = ctypes.CDLL(ctypes.util.find_library("X11"))
    x.XOpenDisplay.restype = ctypes.c_void_p
    x.XOpenDisplay.argtypes = [ctypes.c_char_p]
    x.XDefaultRootWindow.restype = ctypes.c_ulong
    x.XDefaultRootWindow.argtypes = [ctypes.c_void_p]
    ulong_p = ctypes.POINTER(ctypes.c_ulong)
    x.XQueryTree.argtypes = [ctypes.c_void_p, ctypes.c_ulong, ulong_p, ulong_p,
                             ctypes.POINTER(ulong_p), ctypes.POINTER(ctypes.c_uint)]  # fmt: skip
    x.XFetchName.argtypes = [ctypes.c_void_p, ctypes.c_ulong, ctypes.POINTER(ctypes.c_char_p)]
    x.XDestroyWindow.argtypes = [ctypes.c_void_p, ctypes.c_ulong]
    x.XKillClient.argtypes = [ctypes.c_void_p, ctypes.c_ulong]
    x.XSync.argtypes = [ctypes.c_void_p, ctypes.c_int]
    x.XCloseDisplay.argtypes = [ctypes.c_void_p]
    d = x.XOpenDisplay(display.encode())
    assert d, f"cannot open display {display}"
    root, parent, kids, n = ctypes.c_ulong(), ctypes.c_ulong(), ulong_p(), ctypes.c_uint()
    x.XQueryTree(d, x.XDefaultRootWindow(d), root, parent, kids, n)
    destroyed = 0
    for i in range(n.value):
        name = ctypes.c_char_p()
        if x.XFetchName(d, kids[i], ctypes.byref(name)) and title_part.encode() in name.value:
            if not dry_run:
                (x.XKillClient if kill else x.XDestroyWindow)(d, kids[i])
            destroyed += 1
    x.XSync(d, 0)
    x.XCloseDisplay(d)
    return destroyed


@pytest.mark.parametrize(
    ("sample", "kill"), [("s01", False), ("s13", False), ("s01", True)],
    ids=["s01-windowclose", "s13-windowclose", "s01-xkill"],
)  # fmt: skip
def test_window_destroyed_by_another_client_ends_like_a_close(display, sample, kill, tmp_path):
    args = ["--instances", "500"] if sample == "s13" else []
    records = tmp_path / "t.jsonl"  # frames finished: the writer's first buffer reaches disk
    p = subprocess.Popen(
        [
            sys.executable,
            "-m",
            f"samples.{sample}",
            "--size",
            "160x120",
            "--profile",
            "--telemetry",
            str(records),
            *args,
        ],  # fmt: skip
        cwd=ROOT,
        env=_env(display),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + 120  # a loaded machine starts slowly
        while _destroy_windows(display, "Lantern", kill, dry_run=True) == 0:  # the window
            assert p.poll() is None and time.monotonic() < deadline, p.communicate()
            time.sleep(0.2)
        _wait_for_frames(p, records, "window up")
        assert _destroy_windows(display, "Lantern", kill) == 1
        out, err = p.communicate(timeout=60)
    finally:
        if p.poll() is None:
            p.kill()
    assert p.returncode == 0, err
    assert "CPU frame" in out  # the shutdown report
    assert "X Error" not in err and "BadWindow" not in err and "Traceback" not in err
    assert "Xlib" not in err and "XIO" not in err
    said = "connection to the X server was lost" if kill else "destroyed by another X client"
    assert said in err
