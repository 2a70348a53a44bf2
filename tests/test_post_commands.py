"""The post chain's knobs: console commands and CLI switches, with one-line errors."""

from __future__ import annotations

from dataclasses import replace

import pytest

from engine.commands import CommandRegistry
from engine.settings import FrameSettings, register_frame_commands


class FakeFrame:
    def __init__(self):
        self.settings = FrameSettings()

    def set_settings(self, **changes):
        self.settings = replace(self.settings, **changes)
        return self.settings


@pytest.fixture
def console():
    reg, frame = CommandRegistry(), FakeFrame()
    register_frame_commands(reg, frame)
    return reg, frame


def test_commands_set_the_knobs(console):
    reg, frame = console
    assert reg.execute("exposure auto").text == "exposure: auto (GPU histogram, adapted over time)"
    assert frame.settings.auto_exposure
    assert reg.execute("exposure 2.5").text == "exposure: 2.5"
    assert frame.settings.exposure == 2.5 and not frame.settings.auto_exposure
    assert reg.execute("bloom off").text == "bloom: off" and frame.settings.bloom is False
    assert reg.execute("taa off").text == "taa: off" and frame.settings.taa is False
    assert reg.execute("taa on").ok and frame.settings.taa is True


BAD_EXPOSURE = "error: exposure: auto|VALUE: expected 'auto' or a number from 0.01 to 100, got"


@pytest.mark.parametrize(
    "line, error",
    [
        ("exposure 0", f"{BAD_EXPOSURE} '0'"),
        ("exposure 101", f"{BAD_EXPOSURE} '101'"),
        ("exposure bright", f"{BAD_EXPOSURE} 'bright'"),
        ("bloom maybe", "error: bloom: expected one of on, off, got 'maybe'"),
        ("taa", "error: taa: usage: taa on|off"),
    ],
)  # fmt: skip
def test_bad_values_are_one_error_line(console, line, error):
    reg, frame = console
    before = frame.settings
    r = reg.execute(line)
    assert not r.ok and r.text == error
    assert frame.settings == before


def test_settings_reject_a_bad_exposure():
    with pytest.raises(ValueError, match="expected 'auto' or a number from 0.01 to 100"):
        FrameSettings(exposure=100.5)


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--exposure", "0"], "argument --exposure: expected 'auto' or a number from 0.01"),
        (["--exposure", "nan"], "argument --exposure: expected 'auto' or a number from 0.01"),
        (["--exposure", "loud"], "argument --exposure: expected 'auto' or a number"),
    ],
)
def test_cli_errors_are_one_line_exit_2(argv, message, capsys):
    from engine.app import run
    from samples.s13_city import City

    with pytest.raises(SystemExit) as e:
        run(City, argv + ["--capture", "/tmp/x.png"])
    assert e.value.code == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and message in err, err


def test_cli_switches_reach_the_settings():
    import argparse

    from engine.settings import add_frame_arguments, settings_from_args

    p = argparse.ArgumentParser()
    add_frame_arguments(p, default_instances=10)
    s = settings_from_args(p.parse_args([]))
    assert (s.exposure, s.bloom, s.taa) == (0.9, True, True)
    s = settings_from_args(p.parse_args(["--exposure", "auto", "--no-bloom", "--no-taa"]))
    assert (s.auto_exposure, s.bloom, s.taa) == (True, False, False)
    assert settings_from_args(p.parse_args(["--exposure", "1.5"])).exposure == 1.5
