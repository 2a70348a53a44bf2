"""tools/compare.py / engine.devtools.compare: A/B statistics of two --telemetry runs.

Runs are written by the real telemetry path (``Telemetry.publish`` -> ``JsonLinesWriter``)
from synthetic per-pass times, so the files have the format a sample writes and the true
shift is known.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from engine.devtools import compare
from engine.telemetry import FrameTimings, Scope, Telemetry
from engine.tools.export.jsonl import JsonLinesWriter

ROOT = Path(__file__).resolve().parents[1]
PASSES = ("Shadow", "Main", "Post", "HiZ", "DebugOverlay")
BASE_MS = (2.0, 5.0, 1.0, 0.5, 0.3)


def synthetic_ms(rng, frames: int, scale=None) -> np.ndarray:
    """``(frames, passes)`` ms: log-normal noise (sigma 0.1) around ``BASE_MS`` x scale."""
    scale = np.ones(len(PASSES)) if scale is None else np.asarray(scale)
    return np.asarray(BASE_MS) * scale * rng.lognormal(0.0, 0.1, (frames, len(PASSES)))


def write_run(path: Path, ms: np.ndarray, *, session=None, passes=PASSES) -> Path:
    """A --telemetry file of ``ms`` (frames x passes) through Telemetry + JsonLinesWriter;
    GPU scopes back to back, integer ns."""
    session = {"adapter": "test adapter", "settings": {"instances": 500}, **(session or {})}
    writer = JsonLinesWriter(str(path), session)
    tel = Telemetry(session)
    tel.subscribe(writer)
    for i, row in enumerate(ms):
        t, scopes = 1_000_000 * i, []
        for name, v in zip(passes, row, strict=True):
            end = t + int(round(v * 1e6))
            scopes.append(Scope(name, t, end))
            t = end
        tel.publish(i, t_ns=i * 16_000_000, wall_ms=16.0, timings=FrameTimings(i, gpu=scopes))
    writer.close()
    return path


def test_medians_and_difference_match_the_records(tmp_path):
    rng = np.random.default_rng(1)
    a_ms, b_ms = synthetic_ms(rng, 80), synthetic_ms(rng, 80, (1.3, 1, 1, 1, 1))
    a = compare.load_run(write_run(tmp_path / "a.jsonl", a_ms))
    b = compare.load_run(write_run(tmp_path / "b.jsonl", b_ms))
    c = compare.compare_runs(a, b, seed=3)
    warm = compare.warmup_frames(80)
    assert warm == 8 and c.warmup_a == c.warmup_b == 8  # max(5, ceil(10% of 80))
    assert [r.name for r in c.rows] == list(PASSES)
    for k, r in enumerate(c.rows):
        # the records hold integer ns: the reference rounds the same way
        ra = np.round(a_ms[warm:, k] * 1e6) / 1e6
        rb = np.round(b_ms[warm:, k] * 1e6) / 1e6
        assert r.diff.median_a == pytest.approx(np.median(ra), abs=1e-12)
        assert r.diff.median_b == pytest.approx(np.median(rb), abs=1e-12)
        assert r.diff.diff_ms == pytest.approx(np.median(rb) - np.median(ra), abs=1e-12)
        assert r.diff.pct == pytest.approx((np.median(rb) / np.median(ra) - 1) * 100)
        assert r.diff.n_a == r.diff.n_b == 72
    assert c.rows[0].diff.significant and c.rows[0].diff.lo_ms > 0
    text = compare.format_comparison(c)
    assert "Shadow" in text and f"{c.rows[0].diff.median_a:.3f}" in text


def test_known_shift_detected_and_covered():
    """A 20% slowdown of one pass: the interval covers the true difference of medians in
    about 95% of seeds, and the gate at 5% flags that pass and only it."""
    true_diff = BASE_MS[0] * 0.2  # log-normal(0, s) has median 1: medians scale exactly
    covered, flagged, others = 0, 0, 0
    seeds = 120
    for seed in range(seeds):
        rng = np.random.default_rng(seed)
        a, b = synthetic_ms(rng, 100), synthetic_ms(rng, 100, (1.2, 1, 1, 1, 1))
        diffs = [compare.compare_samples(a[:, k], b[:, k], rng=rng, n_boot=1000) for k in
                 range(len(PASSES))]  # fmt: skip
        covered += diffs[0].lo_ms <= true_diff <= diffs[0].hi_ms
        fail = compare.gate(diffs, 5.0)
        flagged += fail[0]
        others += any(fail[1:])
    assert covered / seeds >= 0.88  # nominal 0.95; binomial sd at 120 seeds is 0.02
    assert flagged / seeds >= 0.95  # 20% vs 5% with sigma 0.1 over 100 frames: power ~1
    assert others / seeds <= 0.05


def test_no_shift_false_positive_rate():
    """Same distribution in A and B: the gate at 0% (the strictest) fails at most at its
    stated family-wise rate, 5%, over 300 seeds (binomial sd 1.3%: the bound is 0.05 +
    2.6 sd), and each row's interval excludes zero at about 5%."""
    seeds, gate_fails, row_signif = 300, 0, 0
    for seed in range(seeds):
        rng = np.random.default_rng(1000 + seed)
        a, b = synthetic_ms(rng, 100), synthetic_ms(rng, 100)
        diffs = [compare.compare_samples(a[:, k], b[:, k], rng=rng, n_boot=1000) for k in
                 range(len(PASSES))]  # fmt: skip
        gate_fails += any(compare.gate(diffs, 0.0))
        row_signif += sum(d.significant for d in diffs)
    assert gate_fails / seeds <= 0.085
    rate = row_signif / (seeds * len(PASSES))
    assert 0.02 <= rate <= 0.08, rate  # 1500 rows: sd 0.6%


def test_holm_step_down():
    assert compare.holm([0.01, 0.04, 0.03], 0.05) == [True, False, False]  # 0.01 <= 0.05/3
    assert compare.holm([0.01, 0.02, 0.04], 0.05) == [True, True, True]  # /3, /2, /1
    assert compare.holm([0.2, 0.001], 0.05) == [False, True]


def test_session_differences_name_settings_and_shaders():
    a = {"adapter": "X", "settings": {"instances": 500, "telemetry": "a.jsonl"},
         "shaders": {"mesh.wgsl": "aaa", "post.wgsl": "bbb"}}  # fmt: skip
    b = {"adapter": "Y", "settings": {"instances": 2000, "telemetry": "b.jsonl"},
         "shaders": {"mesh.wgsl": "ccc", "post.wgsl": "bbb", "hiz.wgsl": "ddd"}}  # fmt: skip
    assert compare.session_differences(a, b) == [
        "adapter: X -> Y",
        "settings.instances: 500 -> 2000",
        "shader hiz.wgsl: absent -> ddd",
        "shader mesh.wgsl: aaa -> ccc",
    ]
    prof = {"gpu": True, "cpu": True, "gpu_available": True, "gpu_unavailable_reason": None}
    a = {"profiling": prof, "features": ["timestamp-query", "float32-filterable"]}
    b = {"profiling": {**prof, "cpu": False}, "features": ["timestamp-query", "shader-f16"]}
    assert compare.session_differences(a, b) == [  # by key, not cut JSON
        "features: +shader-f16 -float32-filterable",
        "profiling.cpu: true -> false",
    ]


def test_cli_gate_exit_status_and_plots(tmp_path, capsys):
    rng = np.random.default_rng(7)
    a = write_run(tmp_path / "a.jsonl", synthetic_ms(rng, 60))
    b = write_run(tmp_path / "b.jsonl", synthetic_ms(rng, 60, (1.5, 1, 1, 1, 1)))
    png, page = tmp_path / "d.png", tmp_path / "d.html"
    assert compare.main([str(a), str(b), "--fail-above", "10", "--png", str(png),
                         "--html", str(page)]) == 1  # fmt: skip
    out = capsys.readouterr().out
    assert "gate: FAIL" in out and "gpu Shadow:" in out and "Main:" not in out.split("gate:")[1]
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert "<svg" in page.read_text() and "Shadow" in page.read_text()
    twin = tmp_path / "twin.jsonl"  # the same records in another file: an A/A of 0
    twin.write_bytes(a.read_bytes())
    assert compare.main([str(a), str(twin), "--fail-above", "0"]) == 0
    assert "gate: pass" in capsys.readouterr().out


@pytest.mark.parametrize(
    "case, message",
    [
        ("not_telemetry", "not a Lantern --telemetry file"),
        ("nothing_common", "no pass in common"),
        ("too_few", "too few frames"),
        ("missing", "cannot read"),
        ("same", "are the same file: a run against itself"),
    ],
)
def test_bad_input_one_line_exit_2(tmp_path, capsys, case, message):
    rng = np.random.default_rng(0)
    a = write_run(tmp_path / "a.jsonl", synthetic_ms(rng, 60))
    if case == "not_telemetry":
        b = tmp_path / "b.jsonl"
        b.write_text('{"traceEvents": []}\n')
    elif case == "nothing_common":
        names = tuple(f"Other{i}" for i in range(len(PASSES)))
        b = write_run(tmp_path / "b.jsonl", synthetic_ms(rng, 60), passes=names)
    elif case == "too_few":
        b = write_run(tmp_path / "b.jsonl", synthetic_ms(rng, 24))  # 24 - 5 warm-up < 20
    elif case == "same":
        b = tmp_path / "." / "a.jsonl"  # another name of the same file
    else:
        b = tmp_path / "absent.jsonl"
    assert compare.main([str(a), str(b)]) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1 and "Traceback" not in err


def test_bad_options_and_records_one_line_exit_2(tmp_path, capsys):
    """A negative seed, an output that is not .png / .html, a link or another kind of file
    (never written), a scope that ends before it begins, settings that are not an object."""
    rng = np.random.default_rng(1)
    a = write_run(tmp_path / "a.jsonl", synthetic_ms(rng, 40))
    note = tmp_path / "note.html"
    note.write_text("my notes\n")
    link = tmp_path / "link.png"
    link.symlink_to(note)
    lines = a.read_text().splitlines()
    frame = next(i for i, ln in enumerate(lines) if '"type":"frame"' in ln.replace(" ", ""))
    rec = json.loads(lines[frame])
    rec["gpu"][0][1], rec["gpu"][0][2] = 10**30, -(10**30)
    bad = tmp_path / "bad.jsonl"
    bad.write_text("\n".join([*lines[:frame], json.dumps(rec), *lines[frame + 1 :]]) + "\n")
    cases = [
        ([str(a), str(a), "--seed", "-1"], "--seed: expected an integer >= 0"),
        ([str(a), str(a), "--warmup", "-1"], "argument --warmup: expected a frame count >= 0"),
        ([str(a), str(a), "--settle", "1e2"], "argument --settle: expected a frame count >= 0"),
        ([str(a), str(a), "--png", str(tmp_path / "d.npy")], "must end in .png"),
        ([str(a), str(a), "--png", str(link)], "symbolic link"),
        ([str(a), str(a), "--html", str(note)], "exists and is not an HTML page"),
        ([str(a), str(bad)], f"{bad}:{frame + 1}: a malformed frame record"),
    ]
    for argv, message in cases:
        try:
            status = compare.main(argv)
        except SystemExit as e:  # the option parser's exit
            status = e.code
        err = capsys.readouterr().err
        assert status == 2 and message in err and err.count("\n") == 1, (argv, err)
    assert note.read_text() == "my notes\n" and not (tmp_path / "d.npy").exists()
    sess = json.loads(lines[0])
    sess["settings"] = "not an object"
    assert compare.session_differences(json.loads(lines[0]), sess)[-1].startswith("settings: ")


def test_tools_compare_script(tmp_path):
    rng = np.random.default_rng(2)
    a = write_run(tmp_path / "a.jsonl", synthetic_ms(rng, 40))
    twin = tmp_path / "twin.jsonl"
    twin.write_bytes(a.read_bytes())
    r = subprocess.run([sys.executable, str(ROOT / "tools" / "compare.py"), str(a), str(twin)],
                       capture_output=True, text=True, cwd=tmp_path)  # fmt: skip
    assert r.returncode == 0, r.stderr
    assert "DebugOverlay" in r.stdout and "+0.000" in r.stdout


def test_two_real_s02_runs(tmp_path, capsys):
    """Two s02 captures whose --work differs: the sessions' difference is named, the WGSL
    hashes recorded in both are equal, and Work's medians are those of its GPU scopes."""
    from helpers import run_sample

    runs = []
    for work in (16, 64):
        path = tmp_path / f"w{work}.jsonl"
        r = run_sample("s02", "--capture", str(tmp_path / "x.png"), "--frames", "40", "--size",
                       "64x36", "--grid", "32", "--work", str(work), "--gpu-profile",
                       "--telemetry", str(path))  # fmt: skip
        assert r.returncode == 0, r.stderr
        runs.append(compare.load_run(path))
    a, b = runs
    assert a.session["shaders"]["s02_work.wgsl"] == b.session["shaders"]["s02_work.wgsl"]
    c = compare.compare_runs(a, b)
    assert c.differences == ["settings.work: 16 -> 64"]
    work = next(r for r in c.rows if r.name == "Work")
    assert work.diff.median_a == pytest.approx(np.median(a.series["gpu", "Work"][5:]))
    assert {r.name for r in c.rows} >= {"Work", "Show", "DebugOverlay"}


def test_help_prints_every_option(capsys):
    from engine.devtools.compare import main

    with pytest.raises(SystemExit) as e:
        main(["--help"], prog="lantern compare")
    out = " ".join(capsys.readouterr().out.split())
    assert e.value.code == 0 and out.startswith("usage: lantern compare")
    assert all(o in out for o in ("--fail-above", "--warmup", "10% of its frames"))


def test_a_run_that_is_not_utf8_is_one_line_naming_line_and_byte(tmp_path, capsys):
    """A pass named in Latin-1 is refused at its byte; a byte-order mark is read; a run
    killed inside a character's bytes loses only its half-written last line (as a run
    killed anywhere else does)."""
    rng = np.random.default_rng(4)
    ms = synthetic_ms(rng, 40)
    names = ("Shadow", "Main", "Posté", "HiZ", "DebugOverlay")
    good = write_run(tmp_path / "a.jsonl", ms, passes=names).read_bytes()
    latin = good.replace("Posté".encode(), "Posté".encode("latin-1") + b" ")  # same length
    (tmp_path / "latin.jsonl").write_bytes(latin)
    at = latin.index(b"Post\xe9")
    line = latin.count(b"\n", 0, at) + 1
    assert compare.main([str(tmp_path / "a.jsonl"), str(tmp_path / "latin.jsonl")]) == 2
    err = capsys.readouterr().err
    assert err == (f"compare: error: {tmp_path / 'latin.jsonl'}:{line}: not UTF-8 at byte {at + 4} "
                   "(0xE9: Latin-1 or another 8-bit encoding?); save it as UTF-8\n")  # fmt: skip
    (tmp_path / "bom.jsonl").write_bytes(b"\xef\xbb\xbf" + good)
    bom = compare.load_run(tmp_path / "bom.jsonl")
    assert bom.frames == 40
    assert bom.series.keys() == compare.load_run(tmp_path / "a.jsonl").series.keys()
    late = '{"type":"names","names":["Résumé"]}'.encode()  # a new pass's name, half-written
    cut = good + late[: late.index("é".encode()) + 1]  # the run died inside the é
    (tmp_path / "cut.jsonl").write_bytes(cut)
    assert compare.load_run(tmp_path / "cut.jsonl").frames == 40
