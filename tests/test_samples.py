"""Every sample that ``python -m samples`` lists runs headless and draws a picture; a sample
with many passes of its own is timed by every view without breaking one."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest
from PIL import Image

from engine.app import Sample, run
from engine.graph import ComputePass
from samples import CATEGORIES, sample_files, sample_info
from tests.helpers import ROOT, run_sample


def _listing() -> dict[str, list[str]]:
    """``python -m samples`` as ``{heading: [short names]}`` (headings unindented)."""
    out = subprocess.run(
        [sys.executable, "-m", "samples"], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout
    groups: dict[str, list[str]] = {}
    for line in out.splitlines()[1:]:
        if line.strip() and not line.startswith(" "):
            heading = groups.setdefault(line.split(":", 1)[0], [])
        elif line.strip():
            heading.append(line.split()[0])
    return groups


def _sample_class(short: str) -> type[Sample]:
    from importlib import import_module

    return next(
        v
        for v in vars(import_module(f"samples.{short}")).values()
        if isinstance(v, type) and issubclass(v, Sample) and v is not Sample
    )


def test_the_listing_names_every_sample_file_once_under_its_category():
    groups = _listing()
    listed = [s for items in groups.values() for s in items]
    assert sorted(listed) == list(sample_files()) and len(listed) == len(set(listed))
    assert list(groups) == [c for c in CATEGORIES if groups.get(c)], "headings out of order"
    for heading, items in groups.items():
        for short in items:  # the heading is the class's own attribute, as imported
            assert _sample_class(short).category == heading, short


@pytest.mark.parametrize("short", list(sample_files()))
def test_every_sample_declares_a_known_category(short):
    info = sample_info(short, sample_files()[short])
    assert info.category in CATEGORIES, f"{short}: category {info.category!r}"
    assert info.description, f"{short}: no docstring line for the listing"


def test_a_sample_without_a_category_is_listed_under_other(tmp_path, monkeypatch):
    import samples

    (tmp_path / "s98_plain.py").write_text('"""s98: no category."""\nclass S:\n    x = 1\n')
    (tmp_path / "s99_odd.py").write_text('"""s99: odd."""\nclass S:\n    category = "misc"\n')
    monkeypatch.setattr(samples, "HERE", tmp_path)
    got = {c: [i.short for i in items] for c, items in samples.catalogue().items()}
    assert got == {"other": ["s98", "s99"]}


@pytest.mark.parametrize("short", list(sample_files()))
def test_help_lists_every_variant(short):
    """Where a sample has variants, its --help names each (and --variant-cycle)."""
    cls = _sample_class(short)
    r = run_sample(short, "--help")
    assert r.returncode == 0, r.stderr
    if not cls.variants:
        assert "--variant" not in r.stdout
        return
    assert "--variant NAME" in r.stdout and "--variant-cycle" in r.stdout
    for name in cls.variants:
        assert name in r.stdout, f"{short}: variant {name!r} missing from --help"


@pytest.mark.parametrize("short", list(sample_files()))
def test_every_listed_sample_captures_a_picture(short, tmp_path):
    cls = _sample_class(short)
    out = tmp_path / f"{short}.png"
    args = [a.replace("{tmp}", str(tmp_path)) for a in cls.example_args]
    r = run_sample(short, *args, "--capture", str(out), "--frames", "3", "--size", "160x90")
    assert r.returncode == 0, r.stderr
    assert "Traceback" not in r.stderr
    rgb = np.asarray(Image.open(out).convert("RGB"))
    assert rgb.shape == (90, 160, 3)
    assert len(np.unique(rgb.reshape(-1, 3), axis=0)) > 4, f"{short}: a flat picture"


class ManyPasses(Sample):
    """40 compute passes of its own: more than the 32 columns a HUD ring once had."""

    name = "many"
    count = 40

    def build(self, graph):
        for i in range(self.count):
            graph.add(ComputePass(f"P{i:02d}", record=lambda ctx, cpass: None))


class TooManyPasses(ManyPasses):
    count = 70  # + DebugOverlay: 71 scopes for a query pool of 64


def test_scopes_over_the_pool_capacity_are_dropped_and_reported(tmp_path, capsys):
    argv = ["--gpu-profile", "--capture", str(tmp_path / "x.png"), "--frames", "3"]
    assert run(TooManyPasses, [*argv, "--size", "64x64", "--overlay", "perf"]) == 0
    out = capsys.readouterr().out
    assert "across 64 pass(es)" in out
    assert "dropped: 7 scope(s) over capacity 64 in this frame, 21 in the run" in out


@pytest.mark.parametrize(
    "flags", [["--gpu-profile"], ["--profile"], ["--gpu-profile", "--profile"]]
)
def test_forty_passes_are_timed_by_every_view(flags, tmp_path, capsys):
    trace = tmp_path / "t.json"
    argv = [*flags, "--capture", str(tmp_path / "x.png"), "--frames", "3", "--size", "64x64"]
    status = run(ManyPasses, [*argv, "--overlay", "all", "--trace", str(trace)])
    out = capsys.readouterr().out
    assert status == 0
    head = next(line for line in out.splitlines() if line.startswith(("GPU frame", "CPU frame")))
    # 40 passes + the HUD's DebugOverlay (GPU); CPU adds Update and Submit
    assert "across 41 pass(es)" in head or "across 43 scope(s)" in head, head


def test_graph_with_capture_and_a_bad_portal_env_are_one_line_before_any_gpu_work(tmp_path):
    r = run_sample("s01", "--graph", "--capture", str(tmp_path / "x.png"))
    assert r.returncode == 2 and "--graph" in r.stderr and "Traceback" not in r.stderr
    kept = tmp_path / "keep.json"  # a trace of an earlier run: --graph renders no frame
    kept.write_text('{"traceEvents": []}')
    r = run_sample("s01", "--graph", "--trace", str(kept))
    assert r.returncode == 2 and r.stderr.strip().endswith("exits; drop --trace")
    assert kept.read_text() == '{"traceEvents": []}' and "GPU:" not in r.stdout
    r = run_sample("s01", "--capture", str(tmp_path / "x.png"), env={"LANTERN_PORTAL": "2"})
    assert r.returncode == 2 and "LANTERN_PORTAL='2'" in r.stderr
    assert "GPU:" not in r.stdout  # said before the adapter was even requested


def test_an_output_that_fails_at_the_end_is_one_line_and_status_1(tmp_path, monkeypatch, capsys):
    import errno

    from engine.surfaces import OffscreenTarget

    def full(self, path):
        raise OSError(errno.ENOSPC, "No space left on device", path)

    monkeypatch.setattr(OffscreenTarget, "save_png", full)
    out = tmp_path / "x.png"
    assert run(ManyPasses, ["--capture", str(out), "--frames", "1", "--size", "16x16"]) == 1
    assert not out.exists()


class Blurs(Sample):
    name = "blurs"
    variants = ("naive", "separable", "tiled")


def test_help_of_a_sample_with_variants_names_each():
    """The mechanism the test above relies on, exercised while no listed sample has any."""
    from engine.app import sample_parser

    text = sample_parser(Blurs, "python -m samples.blurs").format_help()
    assert "--variant NAME" in text and "--variant-cycle N" in text
    assert "naive, separable, tiled (default naive)" in " ".join(text.split())


def test_python_m_samples_runs_a_sample_named_after_it(tmp_path):
    """``python -m samples s01 ...`` is ``python -m samples.s01 ...``; an unknown name is one
    line listing the samples, exit 2."""
    out = tmp_path / "a.png"
    run = [sys.executable, "-m", "samples"]
    r = subprocess.run([*run, "s01", "--size", "32x18", "--frames", "1", "--capture", str(out)],
                       cwd=ROOT, capture_output=True, text=True, timeout=120)  # fmt: skip
    assert r.returncode == 0 and out.is_file(), r.stderr
    r = subprocess.run([*run, "s99"], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert r.returncode == 2 and r.stderr.count("\n") == 1 and "s01, s02" in r.stderr
