"""The command registry, the in-game console (fed keys and characters, no window), the log
tail and the panels they draw into a DebugOverlay grid."""

from __future__ import annotations

import logging
import threading
from types import SimpleNamespace

import numpy as np
import pytest

from engine.commands import Choice, CommandError, CommandRegistry, Int, Text
from engine.frame import FrameSettings
from engine.hud.grid import DebugOverlay, pack_color
from engine.hud.palette import ERROR, TEXT, WARNING
from engine.logtail import LogTail, install_log_tail
from engine.settings import FRAME_KNOBS, register_frame_commands
from engine.tools import modes
from engine.tools.console.tool import (
    KEY_BACKSPACE,
    KEY_DOWN,
    KEY_ENTER,
    KEY_ESCAPE,
    KEY_GRAVE,
    KEY_TAB,
    KEY_UP,
    KEY_WORLD_1,
    Console,
    ConsoleTool,
)
from engine.tools.log.tool import LogPanel


class FakeFrame:
    """The two StandardFrame methods the frame commands call, with the real settings check."""

    def __init__(self):
        self.settings = FrameSettings()
        self.frozen = False

    def freeze_culling(self, frozen=None):
        self.frozen = (not self.frozen) if frozen is None else frozen
        return self.frozen

    def set_settings(self, **changes):
        from dataclasses import replace

        self.settings = replace(self.settings, **changes)
        return self.settings


@pytest.fixture
def registry(gpu):
    """The standard tools (HUD, profiling switch, capture) installed into a context built
    from parts, plus the frame commands against a fake frame."""
    from engine.app import install_tools
    from engine.graph import RenderGraph
    from engine.hud.service import Hud
    from engine.tools import HUD_TOOLS
    from engine.tools.capture.tool import CaptureTool
    from engine.tools.perf import PerfTool
    from tests.tool_fakes import make_ctx

    graph = RenderGraph(gpu.device, output_format="rgba8unorm-srgb", size=(64, 36))
    ctx = make_ctx(gpu, graph, overlay="off")
    prof, cap = PerfTool(batch=1), CaptureTool()
    tools = [prof, *HUD_TOOLS[1:], cap]  # HUD_TOOLS[0]: the perf tool, made here with batch 1
    hud = install_tools(ctx, tools, Hud.for_tools(tools, clock=None))
    frame = FakeFrame()
    register_frame_commands(ctx.commands, frame)
    return SimpleNamespace(reg=ctx.commands, frame=frame, hud=hud, prof=prof, cap=cap, ctx=ctx)


# -- registry -------------------------------------------------------------------------------
def test_every_standard_command_reaches_its_subsystem(registry, tmp_path):
    r, frame, tel = registry.reg, registry.frame, registry.ctx.telemetry
    png = str(tmp_path / "shot.png")
    assert r.execute("overlay timeline").ok and registry.hud.mode == "timeline"
    assert r.execute("overlay next").text == "overlay: log" and registry.hud.mode == "log"
    assert r.execute("profile gpu on").text == "profiling: GPU on, CPU off"
    assert tel.session.profiling.gpu and not tel.session.profiling.cpu
    assert r.execute("profile cpu on").text == "profiling: GPU on, CPU on"
    assert r.execute("profile gpu off").text == "profiling: GPU off, CPU on"
    assert not tel.session.profiling.gpu and tel.session.profiling.cpu
    assert r.execute("profile cpu off").ok and tel.session.profiling is None
    assert r.execute(f"capture {png}").text == f"capture: the next frame goes to {png}"
    assert registry.cap._path == png
    tel.stats.add((("gpu", "A"),), [1.0], 0.0)
    assert r.execute("stats reset").text == "stats: window reset" and tel.stats.count == 0
    assert r.execute("shadows off").ok and r.execute("shadow-size 1024").ok
    assert frame.settings.shadows is False and frame.settings.shadow_size == 1024
    assert r.execute("cull freeze").text == "culling camera frozen"
    assert r.execute("cull freeze").text == "culling camera released"  # no argument toggles
    assert r.execute("cull freeze on").ok and frame.frozen


@pytest.mark.parametrize(
    "line, error",
    [
        ("warp 9", "error: unknown command 'warp'; type help"),
        (
            "overlay loud",
            f"error: overlay: expected one of {', '.join((*modes(), 'next'))}, got 'loud'",
        ),
        (
            "shadow-size 1000",
            "error: shadow-size: N: expected a power of two from 256 to 8,192, got '1000'",
        ),
        (
            "shadow-size 16384",
            "error: shadow-size: N: expected a power of two from 256 to 8,192, got '16384'",
        ),
        ("shadow-size", "error: shadow-size: usage: shadow-size N [confirm]"),
        ("shadows on off", "error: shadows: usage: shadows on|off"),
        ("profile gpu", "error: profile: usage: profile gpu|cpu|draws on|off"),
        ("capture out.jpg", "error: capture: PATH: 'out.jpg' must end in .png"),
        ("overlay 'perf", "error: No closing quotation"),
    ],
)
def test_bad_command_is_one_error_line(registry, line, error):
    res = registry.reg.execute(line)
    assert not res.ok and res.text == error
    assert "\n" not in res.text
    assert registry.hud.mode == "off" and registry.ctx.telemetry.session.profiling is None


def test_capture_into_missing_folder_is_refused(registry, tmp_path):
    res = registry.reg.execute(f"capture {tmp_path}/nope/x.png")
    assert not res.ok and "does not exist" in res.text and registry.cap._path is None


def test_handler_exception_never_escapes_and_is_logged(caplog):
    reg = CommandRegistry()

    def broken():
        raise KeyError("boom")

    def refuses():
        raise CommandError("not now")

    reg.register("broken", broken, help="raises")
    reg.register("refuses", refuses)
    with caplog.at_level(logging.ERROR, logger="lantern"):
        res = reg.execute("broken")
    assert not res.ok and res.text == "error: broken failed: KeyError: 'boom'"
    assert any("command 'broken' failed" in m for m in caplog.messages)
    assert reg.execute("refuses").text == "error: refuses: not now"


def test_help_lists_every_command_with_usage(registry):
    text = registry.reg.execute("help").text.splitlines()
    names = sorted(registry.reg.commands)
    assert [line.split()[0] for line in text] == names
    assert {"help", "overlay", "profile", "capture", "stats", "cull", "shadows"} <= set(names)
    assert registry.reg.execute("help shadow-size").text == (
        "shadow-size N [confirm]  -- shadow map size in texels (over 64 MiB in all cascades: add "
        "confirm)"
    )
    assert not registry.reg.execute("help nothing").ok


def test_register_rejects_bad_declarations():
    reg = CommandRegistry()
    with pytest.raises(ValueError, match="one word"):
        reg.register("two words", lambda: None)
    with pytest.raises(ValueError, match="optional arguments must come last"):
        reg.register("x", lambda a, b: None, args=[Int(0, 1, optional=True), Choice("a")])


def test_completion(registry):
    r = registry.reg
    assert r.complete("sha") == ("shadow", ["shadow-size", "shadow-snap", "shadows"])
    assert r.complete("shadows") == ("shadows ", ["shadows"])
    assert r.complete("overlay t") == ("overlay timeline ", ["timeline"])
    assert r.complete("profile gpu o") == ("profile gpu o", ["on", "off"])
    assert r.complete("profile gpu of") == ("profile gpu off ", ["off"])
    assert r.complete("shadow-size 40") == ("shadow-size 4096 ", ["4096"])
    assert r.complete("help ove") == ("help overlay ", ["overlay"])
    assert r.complete("zzz") == ("zzz", [])


def test_queue_runs_commands_on_the_thread_that_drains_it(registry):
    r = registry.reg
    ran_on = []
    r.register("where", lambda: ran_on.append(threading.get_ident()) or "here")
    pending = []
    t = threading.Thread(target=lambda: pending.append(r.submit("where")))
    t.start()
    t.join()
    assert ran_on == [] and pending[0].wait(0) is None  # nothing runs until drained
    assert r.run_pending() == 1
    assert ran_on == [threading.get_ident()]
    assert pending[0].wait(0).text == "here"
    assert r.run_pending() == 0


def test_queue_is_bounded():
    from engine.commands import QUEUE_LIMIT

    reg = CommandRegistry()
    waiting = [reg.submit("help") for _ in range(QUEUE_LIMIT)]
    extra = reg.submit("help")
    assert extra.wait(0).text == "error: too many commands queued; try again"
    assert reg.run_pending() == QUEUE_LIMIT and all(p.wait(0).ok for p in waiting)


# -- the console ------------------------------------------------------------------------------
def type_text(console, text):
    """What a glfw window sends per typed character: the key (US code), then the character."""
    for ch in text:
        console.on_key(ord(ch.upper()))
        console.on_char(ch)


def test_console_opens_types_runs_and_keeps_history(registry):
    c = Console(registry.reg)
    assert c.on_key(65) is False  # closed: the game gets its keys
    assert c.on_char("a") is False
    assert c.on_key(KEY_GRAVE) is True and c.is_open
    c.on_char("`")  # the toggle key's own character is not typed
    type_text(c, "shadows of")
    assert c.line == "shadows of"
    c.on_key(KEY_TAB)
    assert c.line == "shadows off "
    assert c.on_key(ord("W")) is True  # swallowed while open (movement keys, F1, ...)
    c.on_key(KEY_ENTER)
    assert registry.frame.settings.shadows is False
    assert [t for t, _ in c.output] == ["> shadows off", "shadows: off"]
    type_text(c, "overlay loud")
    c.on_key(KEY_ENTER)
    text, color = c.output[-1]
    assert text.startswith("error: overlay:") and color == ERROR
    c.on_key(KEY_UP)
    assert c.line == "overlay loud"
    c.on_key(KEY_UP)
    assert c.line == "shadows off"
    c.on_key(KEY_UP)  # stays at the oldest
    assert c.line == "shadows off"
    c.on_key(KEY_DOWN)
    c.on_key(KEY_DOWN)
    assert c.line == ""
    type_text(c, "helq")
    c.on_key(KEY_BACKSPACE)
    assert c.line == "hel"
    assert c.on_key(KEY_ESCAPE) and not c.is_open  # Esc closes the console, not the game
    assert c.on_key(KEY_WORLD_1) and c.is_open  # the ISO key left of 1
    c.on_char("^")  # what that key types on a German layout: not typed
    assert c.line == "hel"
    c.on_key(KEY_WORLD_1, repeat=True)  # held: no flicker
    assert c.is_open


def test_console_tab_with_several_candidates_prints_them(registry):
    c = Console(registry.reg)
    c.on_key(KEY_GRAVE)
    type_text(c, "s")
    c.on_key(KEY_TAB)
    assert c.line == "s"
    assert c.output[-1][0] == "shadow-size  shadow-snap  shadows  stats"


def test_console_draws_output_and_prompt(registry):
    c = Console(registry.reg)
    ov = DebugOverlay(60, 20)
    c.draw(ov, 0, 0, 40, 6)
    assert ov.cells[..., 0].max() == 0  # closed: nothing drawn
    c.on_key(KEY_GRAVE)
    type_text(c, "stats reset")
    c.on_key(KEY_ENTER)
    type_text(c, "xyz")
    c.draw(ov, 2, 3, 40, 6)
    row = lambda r, n: "".join(ov.glyph_at(2 + 1 + i, r) for i in range(n))  # noqa: E731
    assert row(6, 13) == "> stats reset"  # bottom-aligned above the prompt
    assert row(7, 19) == "stats: window reset"
    assert row(8, 5) == "> xyz"
    assert ov.cells[8, 2 + 1 + 5, 2] != ov.cells[8, 2 + 1 + 6, 2]  # the block cursor


def test_console_tool_draws_through_the_hud_and_takes_the_window_keys(registry):
    window = SimpleNamespace(text_input=None)
    registry.ctx.window = window
    tool = registry.ctx.install(ConsoleTool())
    assert window.text_input is tool.console and "console" in registry.hud.panels
    assert tool.console.on_key(96) and tool.console.is_open  # backtick: the `console` command
    assert registry.reg.execute("console close").text == "console: closed"
    assert registry.reg.keys[96].line == "console" and registry.reg.keys[161].line == "console"
    assert tool.console.registry is registry.reg  # the shared registry, not a copy
    ctx = registry.ctx
    assert "DebugOverlay" in [p.name for p in ctx.graph.passes] and ctx.updates and ctx.frame_done
    ctx.close_all()  # undone in reverse order: the window gets its keys back
    registry.hud.close()  # the HUD service last, as the App closes it
    assert window.text_input is None
    assert tool in ctx.tools  # closed tools stay listed
    # ... and what the installs added to the hubs is gone again: passes, commands, keys,
    # per-frame hooks (help, the registry's own, stays; the frame commands were not a tool's)
    assert [p.name for p in ctx.graph.passes] == []
    assert sorted(registry.reg.commands) == sorted(
        ["cull", "help", *(k.command or k.name for k in FRAME_KNOBS)]
    )
    assert registry.reg.keys == {} and ctx.updates == [] and ctx.frame_done == []


def test_keys_run_their_bound_commands_and_help_lists_them(registry):
    r, hud = registry.reg, registry.hud
    assert r.press(290).text == "overlay: perf" and hud.mode == "perf"  # F1
    assert r.press(290).text == "overlay: cull"
    assert r.press(999) is None  # unbound: the sample's on_key gets it
    r.bind("F2", 291, "cull freeze")
    assert r.press(291).text == "culling camera frozen" and registry.frame.frozen
    rows = {line.split()[0]: line for line in r.execute("help").text.splitlines()}
    assert rows["overlay"].endswith("[F1: overlay next]")
    assert rows["cull"].endswith("[F2: cull freeze]")


# -- log tail ---------------------------------------------------------------------------------
def test_log_tail_collapses_repeats_bounds_lines_and_reports_changes():
    logger = logging.getLogger("lantern.test_tail")
    logger.propagate = False
    tail = install_log_tail(logger, lines=5)
    try:
        logger.setLevel(logging.INFO)
        logger.info("start")
        v0 = tail.version
        for _ in range(37):
            logger.warning("shadow map clipped")
        logger.error("device lost\nsecond line")
        entries = tail.snapshot()
        assert [(e.text, e.count, e.level) for e in entries] == [
            ("start", 1, logging.INFO),
            ("shadow map clipped", 37, logging.WARNING),
            ("device lost", 1, logging.ERROR),
        ]
        assert entries[1].shown() == "shadow map clipped x37"
        v, changed = tail.changes_since(v0)
        assert v == tail.version and [e.text for e in changed] == [
            "shadow map clipped",
            "device lost",
        ]
        logger.error("device lost")
        v2, changed = tail.changes_since(v)
        assert [(e.text, e.count) for e in changed] == [("device lost", 2)]
        assert tail.changes_since(v2) == (v2, [])
        for i in range(10):
            logger.info("line %d", i)
        assert [e.text for e in tail.snapshot()] == [f"line {i}" for i in range(5, 10)]
        logger.debug("not shown")
        assert tail.snapshot()[-1].text == "line 9"
    finally:
        logger.removeHandler(tail)


def test_log_panel_colours_levels():
    tail = LogTail(lines=10)
    rec = lambda lvl, msg: logging.LogRecord("lantern", lvl, "", 0, msg, (), None)  # noqa: E731
    tail.handle(rec(logging.INFO, "ok"))
    tail.handle(rec(logging.WARNING, "careful"))
    tail.handle(rec(logging.WARNING, "careful"))
    tail.handle(rec(logging.ERROR, "bad"))
    ov = DebugOverlay(80, 20)
    LogPanel(tail).draw(ov, 1, 1, 30, 5)
    text = lambda r, n: "".join(ov.glyph_at(2 + i, r) for i in range(n))  # noqa: E731
    assert text(2, 2) == "ok" and text(3, 10) == "careful x2" and text(4, 3) == "bad"
    assert ov.cells[2, 2, 1] == pack_color(TEXT)
    assert ov.cells[3, 2, 1] == pack_color(WARNING)
    assert ov.cells[4, 2, 1] == pack_color(ERROR)
    assert ov.glyph_at(2 + 10, 3) == ""  # nothing after the count


def test_console_and_log_render_on_the_gpu(device, registry):
    """Through the real DebugOverlay pass (lavapipe): every glyph pixel of the error line is
    the error colour and of the warning line the warning colour, cut from the font atlas
    independently of the shader; the picture is written to tests/_out/console.png."""
    from PIL import Image

    from tests.conftest import OUT_DIR
    from tests.test_hud import glyph, render

    c = Console(registry.reg)
    c.on_key(KEY_GRAVE)
    type_text(c, "shadow-size 3")
    c.on_key(KEY_ENTER)
    type_text(c, "overlay ti")
    c.on_key(KEY_TAB)
    tail = LogTail()
    rec = lambda lvl, msg: logging.LogRecord("lantern", lvl, "", 0, msg, (), None)  # noqa: E731
    for _ in range(3):
        tail.handle(rec(logging.WARNING, "shadow map clipped"))
    tail.handle(rec(logging.ERROR, "device lost"))
    ov = DebugOverlay(60, 14)
    c.draw(ov, 0, 0, 60, 6)
    LogPanel(tail).draw(ov, 0, 7, 60, 4)
    img = render(device, ov, "rgba8unorm", (60 * 8, 14 * 8))[..., :3]
    OUT_DIR.mkdir(exist_ok=True)
    Image.fromarray(img.repeat(2, 0).repeat(2, 1)).save(OUT_DIR / "console.png")

    def check(text: str, col: int, row: int, color) -> None:
        bits = np.concatenate([glyph(ch) for ch in text], axis=1).astype(bool)
        px = img[row * 8 : row * 8 + 8, col * 8 : (col + len(text)) * 8]
        assert (px[bits] == color[:3]).all()
        assert not (px[~bits] == color[:3]).all(axis=-1).any()

    error = "error: shadow-size: N: expected a power of two from 256 to 8,192, got '3'"
    assert [t for t, _ in c.output] == ["> shadow-size 3", error]
    check(error[:58], 1, 3, ERROR)  # wrapped at the panel's width
    check(error[58:], 1, 4, ERROR)
    check("> overlay timeline ", 1, 5, TEXT)  # the prompt, completed by TAB
    check("shadow map clipped x3", 1, 8, WARNING)
    check("device lost", 1, 9, ERROR)


def test_usage_collapses_a_run_of_one_optional_word():
    r = CommandRegistry()
    words = [Text("WORD", optional=True) for _ in range(8)]
    r.register("inspect", lambda *a: "", args=[Text("NAME", optional=True), *words], help="x")
    assert r.commands["inspect"].usage() == "inspect [NAME] [WORD ...]"
    assert r.execute("inspect a b c").ok  # the words are still eight optional arguments
