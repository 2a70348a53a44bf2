"""Hot reload (engine/tools/reload/watch.py, engine/shader_registry.py) against a real file watcher.

s02 runs in-process on a temporary copy of its shader; edits are real file writes that the
``watchfiles`` watcher reports; frames are stepped until the tool has handled each one (the
event), never for a fixed time.
"""

from __future__ import annotations

import argparse
import hashlib
import logging
import os
import shutil
import threading
import time
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
import wgpu

import engine
from engine.commands import CommandRegistry
from engine.graph import RenderGraph
from engine.loop import FrameLoop
from engine.shader_registry import ShaderRegistry, expand, parse_error, set_shader_registry
from engine.shaders import SHADER_DIR
from engine.surfaces import OffscreenTarget
from engine.tool import ToolContext
from engine.tools.reload import ReloadTool
from engine.tools.reload.watch import HotReload
from samples.s02_custom_pass import CustomPass, _work_pipelines, work_bind_groups

SIZE = (16, 8)
RED_RETURN = "return vec4<f32>(1.0, 0.0, 0.0 * count, 1.0);"  # keeps `shown` in the layout
SHOW_RETURN = "return vec4<f32>(select(outside, vec3<f32>(0.02, 0.02, 0.04), never_escaped), 1.0);"


class UncaughtErrors:
    """wgpu's uncaught-error path: ``ErrorHandler.log_error``, which logs an error raised by
    no call (e.g. at submit). Native log lines (naga's own ``log::error!``) are not errors."""

    def __init__(self, monkeypatch):
        from wgpu.backends.wgpu_native import _api

        self.records: list[str] = []
        original = _api.error_handler.log_error

        def log_error(message):
            self.records.append(message)
            original(message)

        monkeypatch.setattr(_api.error_handler, "log_error", log_error)


class S02Run:
    """s02 on an offscreen target, its WGSL in ``folder``, with the reload tool installed."""

    def __init__(self, gpu, folder: Path, *, grid: int = 8, work: int = 4):
        self.gpu, self.folder = gpu, folder
        self.file = folder / "s02_work.wgsl"
        self.registry = ShaderRegistry(gpu.device, root=folder)
        self._previous = set_shader_registry(gpu.device, self.registry)
        self.target = OffscreenTarget(gpu.device, SIZE)
        self.graph = RenderGraph(gpu.device, output_format=self.target.format, size=SIZE)
        args = argparse.Namespace(grid=grid, work=work)
        self.sample = CustomPass(SimpleNamespace(args=args, gpu=gpu))
        self.sample.build(self.graph)
        self.loop = FrameLoop(gpu, self.graph)
        self.ctx = ToolContext(gpu, self.graph, self.loop.telemetry, CommandRegistry(), self.loop)
        watch = HotReload(self.registry, enabled=True)
        self.tool = self.ctx.install(ReloadTool(watch=watch)).watch  # F5 with it
        assert self.tool.wait_ready()
        self.frames = 0

    def frame(self, during=None) -> None:
        def update(ctx):
            self.sample.update(ctx)
            if during is not None:
                during()

        self.loop.frame(self.target.view, 0.0, update)  # a still image: pixels comparable
        self.frames += 1

    def until(self, done, timeout_s: float = 10.0) -> int:
        """Step frames until ``done()``; returns the frames it took."""
        start, n = time.monotonic(), 0
        while not done():
            assert time.monotonic() - start < timeout_s, "no reload event arrived"
            self.frame()
            n += 1
        return n

    def pixel(self) -> tuple[int, ...]:
        return tuple(self.target.read_rgba()[SIZE[1] // 2, SIZE[0] // 2, :3].tolist())

    def close(self) -> None:
        self.ctx.close_all()
        set_shader_registry(self.gpu.device, self._previous)


@pytest.fixture
def s02(gpu, tmp_path, monkeypatch):
    for name in ("s02_work.wgsl", "s01_lit.wgsl"):
        shutil.copy(SHADER_DIR / name, tmp_path / name)
    run = S02Run(gpu, tmp_path)
    run.wgpu_errors = UncaughtErrors(monkeypatch)
    yield run
    run.close()


def test_expand_maps_lines_through_includes(tmp_path):
    (tmp_path / "common.wgsl").write_text("// common\nconst K: f32 = 2.0;\nfn f() -> f32 {\n")
    (tmp_path / "main.wgsl").write_text(
        'const A: u32 = 1u;\n// #include "common.wgsl"\n  return K; }\nfn g() {}\n'
    )
    src = expand(tmp_path / "main.wgsl", tmp_path)
    assert [p.name for p in src.files] == ["main.wgsl", "common.wgsl"]
    lines = src.code.split("\n")
    assert lines[1] == "// common" and lines[5] == "  return K; }"
    assert src.locate(3) == (tmp_path / "common.wgsl", 2)  # "const K" is common.wgsl:2
    assert src.locate(6) == (tmp_path / "main.wgsl", 3)
    text = "Shader 'x' parsing error: expected `;`\n   ┌─ wgsl:3:7\n   │\n"
    err = parse_error(text, src, tmp_path / "main.wgsl")
    assert (err.file.name, err.line, err.column, err.message) == (
        "common.wgsl",
        2,
        7,
        "expected `;`",
    )


def test_edit_reloads_only_that_module_and_draws_it(s02):
    s02.frame()
    before = s02.pixel()
    other = s02.registry.pipeline("s01_lit.wgsl", lambda m: m)  # another module: untouched
    s02.file.write_text(s02.file.read_text().replace(SHOW_RETURN, RED_RETURN))
    s02.until(lambda: s02.tool.events)
    ev = s02.tool.events[0]
    assert ev.kind == "reloaded" and ev.files == (str(s02.file),)
    assert ev.pipelines == 2  # s02's compute and render pipelines
    assert (s02.sample.passes.shader.version, other.version) == (1, 0)
    s02.frame()
    assert s02.pixel() == (255, 0, 0) != before  # the new pipeline draws, bind groups rebuilt
    assert s02.wgpu_errors.records == []


def test_bad_edit_keeps_old_pipeline_reports_position_and_clears(s02):
    seen = []
    s02.tool.subscribe(seen.append)
    s02.frame()
    good = s02.pixel()
    text = s02.file.read_text()
    lines = text.split("\n")
    k = next(i for i, s in enumerate(lines) if "let n = params.grid;" in s)
    lines.insert(k + 1, "    garbage here;")
    s02.file.write_text("\n".join(lines))
    s02.until(lambda: s02.tool.notice is not None)
    assert s02.tool.events[-1].kind == "error"
    col = lines[k + 1].index("here") + 1  # naga stops at the second word
    expected = f"{s02.file}:{k + 2}:{col}: expected assignment"
    assert s02.tool.notice.startswith(expected), s02.tool.notice
    assert seen == [s02.tool.notice]
    for _ in range(3):
        s02.frame()
    assert s02.pixel() == good  # the old pipeline still draws
    s02.file.write_text(text.replace(SHOW_RETURN, RED_RETURN))  # the fix
    s02.until(lambda: s02.tool.notice is None)
    s02.frame()
    assert s02.pixel() == (255, 0, 0)
    assert seen == [seen[0], None]
    assert [e.kind for e in s02.tool.events] == ["error", "reloaded"]
    assert s02.wgpu_errors.records == []


def _bad_saves(text: str) -> list[tuple[str, bytes, int, str]]:
    """Saves that are not UTF-8 text: (kind, bytes, offset of the problem (found here
    independently of the loader), words the message must hold)."""
    cafe = ("// café\n" + text).encode("latin-1")
    nul = ("// x\n" + text).encode().replace(b"// x", b"// \x00", 1)
    utf8 = ("// café\n" + text).encode()
    cut = utf8[: utf8.index("é".encode()) + 1]  # the file ends inside the é
    return [
        ("latin-1", cafe, cafe.index(b"\xe9"), "0xE9: Latin-1"),
        ("utf-16", text.encode("utf-16"), 0, "UTF-16 text"),
        ("nul", nul, nul.index(b"\x00"), "a NUL byte"),
        ("truncated", cut, len(cut) - 1, "a truncated file"),
    ]


def test_saves_in_other_encodings_keep_the_run_and_the_next_good_save_applies(s02):
    """A Latin-1 é, UTF-16 with its byte-order mark, a NUL byte, a file cut inside a
    character: each is one line naming the file and the byte, the old pipeline draws on;
    then a UTF-8 save with a byte-order mark (valid: stripped) reloads."""
    s02.frame()
    good = s02.pixel()
    text = s02.file.read_text()
    for kind, data, offset, words in _bad_saves(text):
        n = len(s02.tool.events)
        s02.file.write_bytes(data)
        s02.until(lambda n=n: len(s02.tool.events) > n)
        ev = s02.tool.events[-1]
        head = f"{s02.file}: " + ("UTF-16 text (a byte-order mark at byte 0)" if offset == 0
                                   else f"{'a NUL byte' if kind == 'nul' else 'not UTF-8'} "
                                   f"at byte {offset} (")  # fmt: skip
        assert ev.kind == "error" and ev.text.startswith(head), (kind, ev.text)
        assert words in ev.text and "\n" not in ev.text, ev.text
        assert s02.tool.notice == ev.text
        s02.frame()
        assert s02.pixel() == good and s02.sample.passes.shader.version == 0
    s02.file.write_bytes(b"\xef\xbb\xbf" + text.replace(SHOW_RETURN, RED_RETURN).encode())
    s02.until(lambda: s02.tool.notice is None)
    assert s02.tool.events[-1].kind == "reloaded"
    assert not s02.sample.passes.shader.source.code.startswith("\ufeff")
    s02.frame()
    assert s02.pixel() == (255, 0, 0)
    assert s02.wgpu_errors.records == []


def test_expand_strips_a_byte_order_mark_and_names_a_bad_include(tmp_path):
    from engine.textfile import NotUtf8

    (tmp_path / "inc.wgsl").write_bytes(b"\xef\xbb\xbfconst K: f32 = 1.0;\n")
    (tmp_path / "main.wgsl").write_bytes(b'\xef\xbb\xbf// #include "inc.wgsl"\nfn f() {}\n')
    assert expand(tmp_path / "main.wgsl", tmp_path).code == "const K: f32 = 1.0;\n\nfn f() {}\n"
    (tmp_path / "inc.wgsl").write_bytes(b"// \xb5s\nconst K: f32 = 1.0;\n")  # Latin-1 micro
    with pytest.raises(NotUtf8) as e:
        expand(tmp_path / "main.wgsl", tmp_path)
    assert e.value.name.endswith("inc.wgsl") and e.value.offset == 3
    assert str(e.value).endswith("inc.wgsl: not UTF-8 at byte 3 (0xB5: Latin-1 or another "
                                 "8-bit encoding?); save it as UTF-8")  # fmt: skip


def test_binding_type_change_rolls_back(s02):
    s02.frame()
    good = s02.pixel()
    s02.file.write_text(
        s02.file.read_text().replace(
            "var<uniform> params: Params", "var<storage, read> params: Params"
        )
    )  # compiles, but the params buffer has no STORAGE usage: the bind group fails
    s02.until(lambda: s02.tool.notice is not None)
    assert "STORAGE" in s02.tool.notice
    assert s02.sample.passes.shader.version == 0
    s02.frame()
    s02.frame()
    assert s02.pixel() == good  # the old pipeline with its old bind groups
    assert s02.wgpu_errors.records == []


def test_delete_says_once_and_restore(s02, caplog):
    caplog.set_level(logging.INFO, logger="lantern")
    text = s02.file.read_text()
    s02.file.unlink()
    s02.until(lambda: any(e.kind == "deleted" for e in s02.tool.events))
    for _ in range(3):
        s02.frame()
    s02.file.write_text(text)
    s02.until(lambda: any(e.kind == "restored" for e in s02.tool.events))
    assert [e.kind for e in s02.tool.events] == ["deleted", "restored"]
    assert s02.tool.notice is None and s02.sample.passes.shader.version == 0
    said = [r.getMessage() for r in caplog.records if "s02_work.wgsl" in r.getMessage()]
    assert said[-1].endswith("s02_work.wgsl restored"), said  # the log's last word is not "deleted"


def test_reload_command_and_off(s02):
    r = s02.ctx.commands.execute("reload off")
    assert r.ok and not s02.tool.watching
    s02.file.write_text(s02.file.read_text().replace(SHOW_RETURN, RED_RETURN))
    s02.frame()
    assert s02.sample.passes.shader.version == 0  # not watched
    assert s02.ctx.commands.keys[294].line == "reload"  # F5
    facts = s02.ctx.telemetry.session.facts
    before = facts["shaders"]["s02_work.wgsl"]
    r = s02.ctx.commands.execute("reload")
    assert r.ok and r.text.startswith("reloaded") and "2 pipelines" in r.text
    after = facts["shaders"]["s02_work.wgsl"]  # the session names the WGSL now running
    assert before != after == hashlib.sha256(s02.file.read_bytes()).hexdigest()[:12]
    s02.frame()
    assert s02.pixel() == (255, 0, 0)
    assert s02.ctx.commands.execute("reload").text.startswith("reload: no WGSL changed")
    good = s02.file.read_text()
    s02.file.write_text(good.replace("let n = params.grid;", "let n = params.grid; junk;"))
    r = s02.ctx.commands.execute("reload")  # a failure is an error to the console and page
    assert not r.ok and "(keeping the old pipeline)" in r.text, r.text
    r = s02.ctx.commands.execute("reload")  # still broken: said again, not "no change"
    assert not r.ok and r.text.startswith("error: reload: no WGSL changed; still "), r.text
    s02.file.write_text(good)
    assert s02.ctx.commands.execute("reload").ok
    assert s02.ctx.commands.execute("reload on").ok and s02.tool.watching


def _builds(gpu, s02: S02Run, code: str) -> bool:
    """Independently of the tool: do the module, both pipelines and both bind groups
    build from ``code``? (Every error here is raised synchronously: caught, not logged.)"""
    try:
        m = gpu.device.create_shader_module(code=code)
        compute, render = _work_pipelines(gpu.device, m, s02.graph.output_format)
        work_bind_groups(
            gpu.device, compute, render, s02.sample.passes.params, s02.graph.buffer("s02 cells")
        )
    except wgpu.GPUValidationError:
        return False
    return True


def test_hundred_random_edits_keep_it_running(gpu, s02):
    """Deleted lines, inserted garbage, a binding's type changed, the file removed and
    restored, atomic saves by rename, saves from another thread in the middle of a frame:
    the sample keeps running, each edit that does not build gives exactly one message
    (a repeat of the same broken code none), and nothing reaches wgpu's uncaught path."""
    rng = np.random.default_rng(18)
    original = s02.file.read_text()
    good, last_bad = original, None
    expected_errors = 0  # noqa: F841 - counted below
    kinds = ("delete", "garbage", "binding", "remove", "rename", "midframe", "good")
    for i in range(100):
        kind = kinds[i % len(kinds)] if i < len(kinds) else rng.choice(kinds)
        lines = good.split("\n")
        if kind == "delete":
            del lines[int(rng.integers(len(lines)))]
            code = "\n".join(lines)
        elif kind == "garbage":
            lines.insert(int(rng.integers(len(lines))), rng.choice(["@@", "fn (", "let = ;", "}"]))
            code = "\n".join(lines)
        elif kind == "binding":
            code = good.replace("var<storage, read> shown", "var<uniform> shown", 1)
        elif kind == "good":
            code = original.replace("0.08, 0.05, 0.25", f"0.08, 0.05, {rng.uniform():.3f}")
        else:
            code = good.replace("0.02, 0.02, 0.04", f"0.02, {rng.uniform():.3f}, 0.04")
        batches, events = s02.tool.batches, len(s02.tool.events)
        if kind == "remove":
            s02.file.unlink()
            s02.until(lambda b=batches: s02.tool.batches > b)
            batches = s02.tool.batches
            s02.file.write_text(code)
        elif kind == "rename":
            tmp = s02.folder / f".s02_work.wgsl.{i}.tmp"
            tmp.write_text(code)
            os.replace(tmp, s02.file)
        elif kind == "midframe":
            writer = threading.Thread(target=s02.file.write_text, args=(code,))
            s02.frame(during=writer.start)  # the save lands while this frame is recorded
            writer.join()
        else:
            s02.file.write_text(code)
        s02.until(lambda b=batches: s02.tool.batches > b)
        ok = _builds(gpu, s02, code)
        want = 1 if (not ok and code != good and code != last_bad) else 0
        if code == good:
            last_bad = None  # back to the working code: the next break is a new one
        else:
            good, last_bad = (code, None) if ok else (good, code)
        errors = [e for e in s02.tool.events[events:] if e.kind == "error"]
        assert len(errors) == want, f"edit {i} ({kind}): {errors}"
        expected_errors += want
        assert s02.sample.passes.shader.source.code == good, f"edit {i} ({kind})"
        assert s02.wgpu_errors.records == [], f"edit {i} ({kind}) {code}"
        s02.frame()
    assert sum(e.kind == "error" for e in s02.tool.events) == expected_errors
    assert expected_errors >= 30  # the edits did break the shader often
    assert sum(e.kind == "deleted" for e in s02.tool.events) >= 1
    assert s02.wgpu_errors.records == []


def test_every_pipeline_of_s13_the_hud_and_the_flame_chart_reloads(tmp_path, monkeypatch, capsys):
    """s13 through the App (standard frame, HUD, live flame chart) on a copy of shaders/:
    ``reload`` after every file changed rebuilds every handle, the frames after it render
    with the new pipelines, and nothing reaches wgpu's uncaught path."""
    from engine import app as app_module
    from engine.shader_registry import shader_registry
    from samples.s13_city import City

    shutil.copytree(SHADER_DIR, tmp_path / "shaders")
    for f in Path(engine.__file__).parent.rglob("*.wgsl"):  # the tool packages' own WGSL
        shutil.copy(f, tmp_path / "shaders" / f.name)
    monkeypatch.setenv("LANTERN_SHADER_DIR", str(tmp_path / "shaders"))
    uncaught = UncaughtErrors(monkeypatch)
    seen = {}

    class Touched(City):
        def update(self, ctx):
            super().update(ctx)
            if ctx.frame_index == 2:
                reg = shader_registry(ctx.device)
                seen["names"] = {h.name for h in reg.handles}
                assert all(tmp_path in f.parents for f in reg.files())  # never the real ones
                for f in reg.files():
                    f.write_text(f.read_text() + "\n// touched\n")
                seen["result"] = self.app.commands.execute("reload")
                seen["versions"] = [h.version for h in reg.handles]
                seen["pipelines"] = sum(h.count for h in reg.handles)

    png = tmp_path / "s13.png"
    argv = ["--capture", str(png), "--frames", "5", "--size", "64x36", "--instances", "40",
            "--overlay", "flame", "--gpu-profile"]  # fmt: skip
    assert app_module.run(Touched, argv) == 0
    assert {"cull.wgsl", "hiz_depth.wgsl", "hiz_level.wgsl", "mesh.wgsl", "post.wgsl",
            "post_luminance.wgsl", "post_bloom.wgsl", "post_taa.wgsl", "sky.wgsl",
            "debug_overlay.wgsl",
            "flame_draw.wgsl", "flame_select.wgsl"} <= seen["names"]  # fmt: skip
    assert seen["result"].ok, seen["result"].text
    assert f"{seen['pipelines']} pipelines in" in seen["result"].text
    assert set(seen["versions"]) == {1}
    assert png.exists() and uncaught.records == []


def test_bad_edit_shows_in_hud_console_log_within_a_frame_and_clears(tmp_path, monkeypatch):
    """s02 through the App with --hot-reload in a capture: the frame after the tool took
    the bad edit, the HUD's bottom row, the console and the log tail (which the portal
    streams) hold ``file:line:col: message``; the fix clears the HUD row."""
    from engine import app as app_module
    from engine.tools.console.tool import ConsoleTool
    from engine.tools.reload import ReloadTool
    from samples.s02_custom_pass import CustomPass

    shutil.copy(SHADER_DIR / "s02_work.wgsl", tmp_path / "s02_work.wgsl")
    monkeypatch.setenv("LANTERN_SHADER_DIR", str(tmp_path))
    file = tmp_path / "s02_work.wgsl"
    good = file.read_text()
    seen: dict = {"frames": []}

    def bottom_row(hud) -> str:
        ov = hud.overlay
        return "".join(ov.glyph_at(c, ov.rows - 1) for c in range(ov.cols)).strip()

    class Edited(CustomPass):
        def update(self, ctx):
            super().update(ctx)
            app, tool = self.app, self.app.tool(ReloadTool).watch
            hud = app.hud
            if ctx.frame_index == 1:
                assert tool.wait_ready()
                file.write_text(good.replace("let n = params.grid;", "let n = params.grid"))
            elif "error" not in seen and tool.notice is not None:
                seen["error"], seen["at"] = tool.notice, ctx.frame_index
            elif "error" in seen and "hud" not in seen:  # one frame later: drawn
                seen["hud"] = bottom_row(hud)
                seen["console"] = [t for t, _ in app.tool(ConsoleTool).console.output]
                seen["log"] = [e.text for e in app.ctx.log_tail.snapshot()]
                file.write_text(good)
            elif "hud" in seen and tool.notice is None and "cleared" not in seen:
                seen["cleared"] = ctx.frame_index
            elif "cleared" in seen and ctx.frame_index > seen["cleared"]:
                seen["after"] = bottom_row(hud)
                app.interrupt.requested = True  # done: end the run early

    png = tmp_path / "s02.png"
    argv = ["--capture", str(png), "--frames", "3000", "--size", "320x180", "--grid", "8",
            "--work", "4", "--hot-reload", "--overlay", "off"]  # fmt: skip
    app_module.run(Edited, argv)
    line = good.split("\n").index("    let n = params.grid;") + 1
    assert seen["error"].startswith(f"{file}:{line + 1}:5: expected `;`"), seen["error"]
    assert seen["hud"] and seen["error"].startswith(seen["hud"][:30])  # the row is cut
    assert any(seen["error"] in t for t in seen["console"])
    assert any(seen["error"] in m for m in seen["log"])
    assert seen["after"] == ""


@pytest.mark.parametrize(
    ("window", "flag", "watching"),
    [(None, False, False), (None, True, True), (object(), False, True)],
    ids=["capture", "capture-hot-reload", "window"],
)
def test_watcher_on_in_a_window_off_in_captures_unless_asked(gpu, tmp_path, window, flag, watching):
    shutil.copy(SHADER_DIR / "s01_lit.wgsl", tmp_path / "s01_lit.wgsl")
    registry = ShaderRegistry(gpu.device, root=tmp_path)
    registry.pipeline("s01_lit.wgsl", lambda m: m)
    graph = RenderGraph(gpu.device, output_format="rgba8unorm", size=SIZE)
    loop = FrameLoop(gpu, graph)
    ctx = ToolContext(gpu, graph, loop.telemetry, CommandRegistry(), loop,
                      options=argparse.Namespace(hot_reload=flag), window=window)  # fmt: skip
    tool = ctx.install(HotReload(registry))
    try:
        assert tool.watching == watching
        assert tool.between_frames in loop.between_frames
    finally:
        ctx.close_all()
    assert not tool.watching and tool.between_frames not in loop.between_frames


def test_an_include_edit_rebuilds_its_users_and_errors_name_the_include(gpu, tmp_path):
    """A module that includes another: saving the include rebuilds the module's handle,
    and a compile error inside the include is reported at the include's own line."""
    (tmp_path / "common.wgsl").write_text("const K: f32 = 1.0;\n")
    (tmp_path / "main.wgsl").write_text(
        '// #include "common.wgsl"\n@compute @workgroup_size(1)\nfn main() { let k = K; }\n'
    )
    (tmp_path / "alone.wgsl").write_text("@compute @workgroup_size(1)\nfn main() {}\n")
    registry = ShaderRegistry(gpu.device, root=tmp_path)

    def factory(m):
        return gpu.device.create_compute_pipeline(
            layout="auto", compute={"module": m, "entry_point": "main"}
        )

    user, alone = registry.pipeline("main.wgsl", factory), registry.pipeline("alone.wgsl", factory)
    graph = RenderGraph(gpu.device, output_format="rgba8unorm", size=SIZE)
    loop = FrameLoop(gpu, graph)
    ctx = ToolContext(gpu, graph, loop.telemetry, CommandRegistry(), loop)
    tool = ctx.install(HotReload(registry, enabled=True))
    try:
        assert tool.wait_ready()

        def wait(n):
            while len(tool.events) < n:
                assert tool.wait_changes(10), "no change event arrived"
                tool.between_frames()  # as the frame loop would

        (tmp_path / "common.wgsl").write_text("const K: f32 = 2.0;\n")
        wait(1)
        assert tool.events[0].files == (str(tmp_path / "common.wgsl"),)
        assert (user.version, alone.version) == (1, 0)
        (tmp_path / "common.wgsl").write_text("// two\nconst K: f32 = 2.0 +;\n")
        wait(2)
        assert tool.events[1].text.startswith(f"{tmp_path / 'common.wgsl'}:2:")
    finally:
        ctx.close_all()


def test_a_copied_file_in_the_override_folder_finds_its_own_includes(gpu, tmp_path):
    """``LANTERN_SHADER_DIR`` holding one sample WGSL file (the docs: a file is taken from
    the folder when it has one of the same name): its include, which stays beside the file
    it stands in for, is found there (it was looked for in ``shaders/``); the copy is the
    one built."""
    home, override = tmp_path / "sample", tmp_path / "work"
    home.mkdir()
    override.mkdir()
    (home / "own_common.wgsl").write_text("const K: f32 = 1.0;\n")
    text = '// #include "own_common.wgsl"\n@compute @workgroup_size(1)\nfn main() { let k = K; }\n'
    (home / "own.wgsl").write_text(text)
    (override / "own.wgsl").write_text(text.replace("let k = K;", "let k = K * 2.0;"))
    registry = ShaderRegistry(gpu.device, root=override)
    handle = registry.pipeline(home / "own.wgsl", lambda m: gpu.device.create_compute_pipeline(
        layout="auto", compute={"module": m, "entry_point": "main"}))  # fmt: skip
    assert handle.path == (override / "own.wgsl").resolve()
    assert [f.name for f in handle.files] == ["own.wgsl", "own_common.wgsl"]
    assert handle.files[1].parent == home and "K * 2.0" in handle.source.code


def test_a_shader_that_does_not_compile_at_start_is_one_line(tmp_path):
    """No old pipeline to keep at start-up: the run stops with the file, line, column and
    what is wrong, as hot reload says it (it was a traceback of wgpu's validation error)."""
    from tests.helpers import ROOT, run_sample

    code = (ROOT / "shaders" / "s02_work.wgsl").read_text()
    assert "params.iterations" in code
    (tmp_path / "s02_work.wgsl").write_text(code.replace("params.iterations", "params.iterz", 1))
    line = 1 + code[: code.index("params.iterations")].count("\n")
    r = run_sample("s02", "--size", "64x64", "--frames", "2", "--capture",
                   str(tmp_path / "x.png"), env={"LANTERN_SHADER_DIR": str(tmp_path)})  # fmt: skip
    assert r.returncode == 1 and "Traceback" not in r.stderr
    last = r.stderr.strip().splitlines()
    assert len(last) == 1 and last[0].startswith(
        f"python -m samples.s02: error: {tmp_path / 's02_work.wgsl'}:{line}:"
    ), r.stderr
    assert "iterz" in last[0] and not (tmp_path / "x.png").exists()


def test_a_pipeline_built_after_the_watcher_started_is_watched(gpu, tmp_path):
    """The HUD and tools build their pipelines after the watcher started (the HUD's WGSL sits
    in engine/hud/, a folder no sample shader shares): an edit there must reload by itself,
    with no other file saved first and no F5."""
    first, later = tmp_path / "a", tmp_path / "b"
    first.mkdir(), later.mkdir()
    shutil.copy(SHADER_DIR / "s01_lit.wgsl", first / "s01_lit.wgsl")
    shutil.copy(SHADER_DIR / "s02_work.wgsl", later / "s02_work.wgsl")
    registry = ShaderRegistry(gpu.device)
    registry.pipeline(first / "s01_lit.wgsl", lambda m: m)
    tool = HotReload(registry, enabled=True)
    tool.start()
    try:
        assert tool.wait_ready()
        built = []
        registry.pipeline(later / "s02_work.wgsl", lambda m: built.append(m) or m)
        tool.between_frames()  # the next frame: the new folder is watched
        assert tool.wait_ready()
        f = later / "s02_work.wgsl"
        f.write_text(f.read_text() + "\n// edited\n")
        assert tool.wait_changes(10.0), "the edit in the later folder was not seen"
        tool.between_frames()
        assert len(built) == 2 and tool.events[-1].kind == "reloaded", tool.events
    finally:
        tool.stop()
