"""Optional option values never swallow a positional (``--gpu-profile t.json``), and
``--help`` lists the window's keys."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from engine.cli import build_parser
from samples.s13_city import City

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def trace(tmp_path) -> Path:
    """A Chrome trace of three complete spans."""
    events = [{"ph": "X", "name": n, "ts": ts, "dur": 5.0, "pid": 1, "tid": 1}
              for n, ts in (("A", 0.0), ("B", 10.0), ("C", 20.0))]  # fmt: skip
    p = tmp_path / "t.json"
    p.write_text(json.dumps({"traceEvents": events}))
    return p


def _s14_parser():
    from samples.s14_flame import FlameViewer

    p = build_parser("s14", "test")
    FlameViewer.add_arguments(p)
    return p


@pytest.mark.parametrize(
    "words, mode",
    [
        (["--gpu-profile", "{t}"], "passes"),
        (["{t}", "--gpu-profile"], "passes"),
        (["--gpu-profile", "draws", "{t}"], "draws"),
        (["--gpu-profile", "passes", "{t}"], "passes"),
        (["--gpu-profile=draws", "{t}"], "draws"),
        (["--gpu-profile", "{t}", "--spans", "9"], "passes"),
    ],
)
def test_gpu_profile_leaves_the_positional_file_alone(trace, words, mode):
    args = _s14_parser().parse_args([w.format(t=trace) for w in words])
    assert args.gpu_profile == mode
    assert args.file is not None and len(args.file.names) >= 3  # the file was loaded


def test_a_bad_mode_without_positionals_is_still_an_invalid_choice(capsys):
    with pytest.raises(SystemExit) as e:
        build_parser("s01", "test").parse_args(["--gpu-profile", "drwas"])
    assert e.value.code == 2
    err = capsys.readouterr().err.strip()
    assert err == (
        "s01: error: argument --gpu-profile: invalid choice: 'drwas' (choose from 'passes', "
        "'draws')"
    )


def test_help_lists_the_keys_and_the_passes_mode():
    text = build_parser("s13", "test", sample_keys=City.keys).format_help()
    epilog = text[text.index("keys (window") :].splitlines()[1:]
    assert [line.split()[0] for line in epilog] == ["F1", "F2", "F3", "F5", "F12", "`", "Esc"]
    assert "'passes', the default" in " ".join(text.split())


def test_s14_runs_with_gpu_profile_before_its_file(trace, tmp_path):
    """The issue's command line, headless."""
    out = tmp_path / "f.png"
    r = subprocess.run(
        [sys.executable, "-m", "samples.s14", "--gpu-profile", str(trace), "--capture", str(out),
         "--size", "160x90", "--frames", "2"],
        cwd=ROOT, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert r.returncode == 0, r.stderr
    assert "GPU frame" in r.stdout and out.exists()


def test_readme_and_help_agree_on_s13s_default_exposure():
    """Issue 31 item 6: what runs by default is said the same way in the README's gallery,
    the standard frame's page (its opening and its flag table) and ``--help``: a fixed
    exposure (the ``FrameSettings`` default), auto only when asked for."""
    import re

    from engine.settings import FrameSettings
    from tests.helpers import ROOT, run_sample

    default = FrameSettings().exposure
    assert default != "auto"
    readme = (ROOT / "README.md").read_text(encoding="utf-8").splitlines()
    sample = next(x for x in readme if "`python -m samples.s13`" in x)
    assert "exposure" not in sample  # the gallery says nothing of it, so nothing wrong
    lines = (ROOT / "docs" / "frame.md").read_text(encoding="utf-8").splitlines()
    text = " ".join(lines)
    assert f"is **fixed** at {default:g} unless you ask for `--exposure auto`" in text
    flag = next(x for x in lines if x.startswith("| `--exposure"))
    assert f"(default {default:g}, fixed)" in flag
    r = run_sample("s13", "--help", timeout=120)
    assert r.returncode == 0, r.stderr
    help_text = " ".join(r.stdout.split())
    said = re.search(r"--exposure auto\|VALUE (.*?) --no-bloom", help_text).group(1)
    assert "a fixed multiplier" in said and said.endswith(f"(default {default:g})")


@pytest.mark.parametrize(
    "words, error",
    [
        (
            ["--cascades", "4", "--no-shadows"],
            "argument --cascades 4: it has no effect with --no-shadows; drop one of the two",
        ),
        (
            ["--no-shadows", "--shadow-size", "4096"],
            "argument --shadow-size 4096: it has no effect with --no-shadows; drop one of the two",
        ),
        (
            ["--cascade-lambda", "0.2"],
            "argument --cascade-lambda 0.2: it has no effect with "
            "--cascades 1, the default; drop it or give --cascades another value",
        ),
        (
            ["--no-post", "--exposure", "2"],
            "argument --exposure 2: it has no effect with --no-post; drop one of the two",
        ),
        (
            ["--no-cull", "--cull-camera", "0,40,120:0,0,0"],
            "argument --cull-camera: it has no effect with --no-cull; drop one of the two",
        ),
        (
            ["--shadow-camera", "0,40,120:0,0,0", "--no-shadows"],
            "argument --shadow-camera: it has no effect with --no-shadows; drop one of the two",
        ),
        (["--cull-camera", "0,40,120:0,0,0", "--no-occlusion"], None),  # it still culls
        (
            ["--light-path", "deferred"],
            "argument --light-path deferred: it has no effect without local lights (--lights N "
            "in s13 and s05, or a --scene file's); drop it or add lights",
        ),
        (["--light-path", "deferred", "--lights", "10"], None),
        (["--no-post", "--no-taa", "--no-bloom", "--no-shadows", "--no-shadow-snap"], None),
        (["--cascades", "4", "--cascade-lambda", "0.2", "--shadow-size", "1024"], None),
        # a value equal to the default, given on purpose, is told from no flag at all
        (
            ["--no-post", "--exposure", "0.9"],
            "argument --exposure 0.9: it has no effect with --no-post; drop one of the two",
        ),
        (
            ["--cascades=1", "--no-shadows"],
            "argument --cascades 1: it has no effect with --no-shadows; drop one of the two",
        ),
        (
            ["--cascades", "1", "--cascade-lambda", "0.2"],
            "argument --cascade-lambda 0.2: it "
            "has no effect with --cascades 1; drop one of the two",
        ),
        (
            ["--no-post", "--expo", "0.9"],
            "argument --exposure 0.9: it has no effect with --no-post; drop one of the two",
        ),  # argparse's unique prefix counts as given
    ],
)
def test_flags_that_cancel_each_other_are_refused(words, error):
    """A flag whose feature another flag turns off is a contradiction, refused in one line
    naming both (``engine.settings.MOOT_WITH``); turning two things off is not."""
    from engine.options import OptionError
    from engine.settings import check_knob_conflicts

    p = build_parser("s13", "test")
    City.add_arguments(p)
    args = p.parse_args(words)
    if error is None:
        check_knob_conflicts(args)
        return
    with pytest.raises(OptionError) as e:
        City.check_options(args)
    assert str(e.value) == error


def test_a_contradiction_stops_before_the_gpu():
    from tests.helpers import run_sample

    r = run_sample("s13", "--cascades", "4", "--no-shadows", "--capture", "never.png")
    assert r.returncode == 2 and "GPU:" not in r.stdout and "Traceback" not in r.stderr
    assert (
        r.stderr.strip()
        .splitlines()[-1]
        .endswith(
            "error: argument --cascades 4: it has no effect with --no-shadows; drop one of the two"
        )
    )
    assert not (ROOT / "never.png").exists()


def test_stdout_closed_early_still_writes_the_trace(tmp_path):
    """``... | head -1``: the reader goes after the first line; the run's later output
    fails (exit 1, no traceback) but the trace and the telemetry file are still written
    whole (the report's broken pipe ended the export before the trace)."""
    import os

    trace, tel = tmp_path / "t.json", tmp_path / "t.jsonl"
    cmd = [sys.executable, "-m", "samples.s13", "--size", "96x64", "--frames", "6",
           "--instances", "300", "--gpu-profile", "--trace", str(trace), "--telemetry",
           str(tel), "--capture", str(tmp_path / "x.png")]  # fmt: skip
    env = dict(os.environ, XDG_RUNTIME_DIR="/tmp", PYTHONPATH=str(ROOT))
    proc = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)  # fmt: skip
    first = proc.stdout.readline()  # the GPU line, printed before any frame
    proc.stdout.close()  # as head -1 does
    err = proc.stderr.read()
    assert proc.wait(300) == 1 and first.startswith("GPU: ")
    assert "Traceback" not in err, err
    events = json.loads(trace.read_text())["traceEvents"]
    assert any(e.get("name") == "Main.Early" for e in events)
    frames = [x for x in tel.read_text().splitlines() if '"type":"frame"' in x]
    assert len(frames) == 6
