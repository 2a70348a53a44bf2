"""The tool protocol as a new tool's author meets it: a tool class with its own flag, key and
HUD panel joins a run by one line in the tool list; the views are one record each; a sample
run imports none of the offline programs."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from engine.cli import build_parser
from engine.hud.panel import Panel
from engine.tool import Key, OptionError, ToolSpec
from engine.tools import DEFAULT_TOOLS, modes
from tests.helpers import ROOT


class GaugePanel(Panel):
    key, modes = "gauge", ("gauge",)

    def __init__(self, tool):
        self.tool, self.shown = tool, None

    def tick(self, data) -> bool:  # a new level: the HUD draws again
        changed, self.shown = self.tool.level != self.shown, self.tool.level
        return changed

    def sizes(self, data):
        return ((12, 2),)

    def draw(self, ov, col, row, form, data):
        ov.text(col, row, f"gauge {self.tool.level}")


class GaugeTool:
    """A tool as a new author writes it: one class, its flag, key and panel declared."""

    name = "gauge"
    keys = (Key("F9", 298, "gauge up", "raise the gauge"),)
    panels = (GaugePanel,)

    @classmethod
    def add_arguments(cls, parser) -> None:
        parser.add_argument_group("gauge").add_argument("--gauge", type=int, default=0)

    @classmethod
    def check_options(cls, args) -> None:
        if args.gauge < 0:
            raise OptionError("argument --gauge: expected 0 or more")

    def install(self, ctx) -> None:
        self.level = ctx.option("gauge")

        def up(_):
            self.level += 1
            return f"gauge: {self.level}"

        from engine.commands import Choice

        ctx.commands.register("gauge", up, args=[Choice("up")], help="raise the gauge")

    def close(self) -> None:
        pass


TOOLS = (*DEFAULT_TOOLS, GaugeTool)


def test_a_new_tool_brings_its_flag_key_and_mode():
    p = build_parser("p", "", TOOLS)
    assert p.parse_args(["--gauge", "3"]).gauge == 3
    overlay = next(a for a in p._actions if a.dest == "overlay")
    assert overlay.choices == modes(TOOLS) and modes(TOOLS)[-2:] == ("gauge", "all")
    assert "F9   raise the gauge" in p.format_help()
    assert "gauge" not in modes()  # the default tool list is left alone
    spec = ToolSpec.of(GaugeTool)
    with pytest.raises(OptionError, match="--gauge"):
        spec.check_options(p.parse_args(["--gauge", "-1"]))


def test_a_new_tool_runs_in_a_sample_with_its_key_and_panel(tmp_path):
    """s01 with the tool added: its key runs its command and its panel is drawn in its mode
    (the HUD's text holds what the panel wrote)."""
    from engine import app as app_module
    from samples.s01_lit_boxes import LitBoxes

    seen = {}

    class Observed(LitBoxes):
        def update(self, ctx):
            super().update(ctx)
            if ctx.frame_index == 1:
                self.app.commands.press(298)  # F9: "gauge up"
            if ctx.frame_index == 3:
                ov = self.app.hud.overlay
                seen["text"] = [
                    "".join(ov.glyph_at(c, r) or " " for c in range(ov.cols))
                    for r in range(ov.rows)
                ]
                seen["tool"] = self.app.tool(GaugeTool)

    argv = ["--capture", str(tmp_path / "a.png"), "--frames", "4", "--size", "320x180",
            "--overlay", "gauge", "--gauge", "5"]  # fmt: skip
    assert app_module.run(Observed, argv, tools=TOOLS) == 0
    assert seen["tool"].level == 6
    assert any("gauge 6" in row for row in seen["text"])


def test_every_view_record_has_its_entry_point_and_no_entry_is_orphaned():
    """A view is a record in ``views.py`` plus ``fs_<name>`` in ``view.wgsl``; those drawn
    over the picture by passes of their own have none."""
    from engine.tools.views.views import VIEWS

    wgsl = (ROOT / "engine" / "tools" / "views" / "view.wgsl").read_text()
    entries = set(re.findall(r"@fragment\s+fn (fs_\w+)", wgsl))
    assert entries == {v.entry for v in VIEWS if not v.over}


def test_a_sample_run_imports_no_offline_program(tmp_path):
    """The offline programs (ablation, compare, the trace-file loader) stay out of a run."""
    code = (
        "import sys, runpy\n"
        "sys.argv = ['s13', '--capture', sys.argv[1], '--frames', '2', '--size', '64x36',\n"
        "            '--instances', '50', '--gpu-profile', '--trace', sys.argv[2]]\n"
        "try:\n"
        "    runpy.run_module('samples.s13', run_name='__main__')\n"
        "except SystemExit:\n"
        "    pass\n"
        "print('MODULES', sorted(m for m in sys.modules if m.startswith('engine')))\n"
    )
    r = subprocess.run(
        [sys.executable, "-c", code, str(tmp_path / "a.png"), str(tmp_path / "t.json")],
        cwd=ROOT, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    line = next(x for x in r.stdout.splitlines() if x.startswith("MODULES"))
    loaded = eval(line[len("MODULES ") :])  # a printed list of module names
    assert Path(tmp_path / "t.json").exists() and "engine.tools.portal" in loaded
    offline = [m for m in loaded if m.startswith("engine.devtools")]
    assert offline == []
