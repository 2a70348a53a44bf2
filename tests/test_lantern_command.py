"""The ``lantern`` command's dispatch table (engine/devtools/cli.py) and the checkout shims."""

from __future__ import annotations

import subprocess
import sys
import types
from pathlib import Path

import pytest

from engine.devtools import cli

ROOT = Path(__file__).resolve().parents[1]


def test_a_row_runs_its_module_with_the_rest_of_the_line(monkeypatch):
    seen = []
    fake = types.ModuleType("fake_tool")
    fake.main = lambda argv, prog: seen.append((argv, prog)) or 7
    monkeypatch.setitem(sys.modules, "fake_tool", fake)
    monkeypatch.setitem(cli.COMMANDS, "fake", ("fake_tool", "a fake"))
    assert cli.main(["fake", "--x", "1"]) == 7
    assert seen == [(["--x", "1"], "lantern fake")]


def test_a_missing_module_is_one_line_not_available(monkeypatch, capsys):
    monkeypatch.setitem(cli.COMMANDS, "later", ("engine.devtools.not_yet", "to come"))
    assert cli.main(["later", "--help"]) == 2
    assert capsys.readouterr().err.splitlines() == [
        "lantern: error: 'later' is not available in this version "
        "(engine.devtools.not_yet is missing)"
    ]


@pytest.mark.parametrize(("argv", "status"), [([], 2), (["--help"], 0)])
def test_usage_lists_every_subcommand(argv, status, capsys):
    assert cli.main(argv) == status
    out = capsys.readouterr().out
    assert [line.split()[0] for line in out.splitlines() if line.startswith("  ")] == list(
        cli.COMMANDS
    )


def test_an_unknown_subcommand_is_one_line(capsys):
    assert cli.main(["ablat"]) == 2
    assert capsys.readouterr().err.splitlines() == [
        "lantern: error: unknown subcommand 'ablat'; choose from ablate, bench, compare, inspect, "
        "rdc"
    ]


@pytest.mark.parametrize("tool", ["ablate", "bench"])
def test_checkout_shims_still_run_from_any_folder(tool, tmp_path):
    r = subprocess.run([sys.executable, str(ROOT / "tools" / f"{tool}.py"), "--help"],
                       cwd=tmp_path, capture_output=True, text=True, timeout=120)  # fmt: skip
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith(f"usage: {tool}.py ")


def test_each_subcommand_names_itself_in_its_usage(capsys, monkeypatch):
    import engine.interrupt

    monkeypatch.setattr(engine.interrupt, "install", lambda: None)  # the process's handlers
    for name in cli.COMMANDS:
        with pytest.raises(SystemExit) as e:
            cli.main([name, "--help"])
        assert e.value.code == 0
        assert capsys.readouterr().out.startswith(f"usage: lantern {name} "), name
