"""The documentation: generated reference pages equal to what the registries say now, the
README's links and pictures, the pictures' budget, and the built site's link checker.

The site itself is built by CI (``.ci/run``: Sphinx with warnings as errors, then
``tools/check_site_links.py``); these tests need no Sphinx.
"""

from __future__ import annotations

import re

import pytest

from samples import sample_files
from tests.helpers import ROOT
from tools import check_site_links, docs_images, docs_plots, docs_reference

README = ROOT / "README.md"
IMAGE_BUDGET_KB = 1000  # the textured city with the HUD alone is ~270 KB


@pytest.fixture(scope="module")
def pages():
    return docs_reference.generate()


def test_generated_pages_equal_what_the_registries_say_now(pages):
    """cli, commands (a real headless run of each sample), keys, knobs, the catalogue and
    the README's gallery: regenerate with ``python tools/docs_reference.py``."""
    assert set(pages) >= {docs_reference.REFERENCE / f"{n}.md"
                          for n in ("cli", "commands", "keys", "knobs", "samples")}  # fmt: skip
    stale = [str(p.relative_to(ROOT)) for p in docs_reference.stale(pages)]
    assert not stale, f"stale: {stale}; run python tools/docs_reference.py"


def test_the_generated_pages_name_what_the_registries_hold(pages):
    """Spot checks against the registries themselves, so a generator that wrote nothing
    useful cannot pass the comparison above."""
    from engine.settings import FRAME_KNOBS
    from engine.tools import modes

    knobs = pages[docs_reference.REFERENCE / "knobs.md"]
    for k in FRAME_KNOBS:
        assert f"`{k.flag}" in knobs and f"`{k.command or k.name} " in knobs, k.name
    keys = pages[docs_reference.REFERENCE / "keys.md"]
    assert "`F1` | `overlay next`" in keys and "`F2` | `cull freeze`" in keys
    assert ", ".join(f"`{m}`" for m in modes()) in keys
    commands = pages[docs_reference.REFERENCE / "commands.md"]
    every = commands.split("\n## s", 1)[0]  # the commands of every sample, then each sample's
    s13 = commands.split("## s13 adds")[1].split("\n## ", 1)[0]
    assert "`shadow-size N [confirm]`" in s13 and "shadow-size" not in every
    assert "`view [NAME\\|off\\|next] [N]`" in every  # a tool's command, in every sample
    cli = pages[docs_reference.REFERENCE / "cli.md"]
    for option in ("`--capture PATH`", "`--gpu-profile [passes\\|draws]`", "`--work N`",
                   "`--shadow-size N`", "`--spans N`", "### lantern compare"):  # fmt: skip
        assert option in cli, option
    catalogue = pages[docs_reference.REFERENCE / "samples.md"]
    assert all(f"**{short}**" in catalogue for short in sample_files())


def test_the_readme_is_short_and_keeps_the_quick_start():
    text = README.read_text(encoding="utf-8")
    assert len(text.splitlines()) <= 220
    quick = text.split("## Quick start", 1)[1].split("\n## ", 1)[0]
    assert 'pip install -e ".[test]" && pytest' in quick  # the test command CI runs
    assert "python -m samples.s13 --gpu-profile" in quick


def test_readme_links_and_pictures_exist():
    text = README.read_text(encoding="utf-8")
    targets = re.findall(r"\]\(([^)\s]+)\)", text)
    local = [t.split("#", 1)[0] for t in targets if not re.match(r"[a-z]+:", t)]
    assert "docs/images/hero.png" in local and "docs/getting-started.md" in local
    missing = [t for t in local if t and not (ROOT / t).exists()]
    assert not missing, missing


def test_every_sample_has_its_picture_and_the_pictures_fit_the_budget():
    images = ROOT / "docs" / "images"
    missing = [s for s in sample_files() if not (images / f"{s}.png").exists()]
    assert not missing, f"run python tools/docs_images.py {' '.join(missing)}"
    kb = sum(p.stat().st_size for p in images.glob("*.png")) / 1024
    assert kb <= IMAGE_BUDGET_KB, f"docs/images/ holds {kb:.0f} KB"


def test_the_picture_tool_makes_one_per_sample(tmp_path):
    jobs = docs_images.jobs(tmp_path)
    assert set(sample_files()) <= set(jobs) and "hero" in jobs
    for name, (short, args) in jobs.items():
        assert short in sample_files(), name
        assert "--size" in args and "--capture" not in args


def _site(tmp_path, pages: dict[str, str]):
    for name, body in pages.items():
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f"<html><body>{body}</body></html>", encoding="utf-8")
    return tmp_path


def test_the_link_checker_finds_missing_files_and_anchors(tmp_path):
    site = _site(
        tmp_path,
        {
            "index.html": '<a href="a/page.html#here">ok</a> <a href="a/page.html#gone">x</a>'
            '<img src="img/none.png"> <a href="https://example.org/">out</a>'
            '<a href="#top">self</a><h1 id="top">t</h1>',
            "a/page.html": '<h2 id="here">h</h2><a href="../index.html">back</a>'
            '<a href="../missing.html">x</a>',
        },
    )
    broken, checked, external = check_site_links.check(site)
    assert checked == 6 and external == 1
    assert sorted(broken) == [
        "a/page.html: ../missing.html: no file missing.html",
        "index.html: a/page.html#gone: no id 'gone' in that page",
        "index.html: img/none.png: no file img/none.png",
    ]


@pytest.mark.parametrize("argv", [[], ["/nonexistent/site"]])
def test_the_link_checker_says_how_to_call_it(argv, capsys):
    assert check_site_links.main(argv) == 2
    assert "usage:" in capsys.readouterr().err


def test_every_plot_renders_from_its_committed_data(tmp_path):
    """``tools/docs_plots.py``: each plot whose JSON is committed draws a PNG (the site's
    pictures are made from ``docs/data``, by hand, on the GPU the figures are for)."""
    assert docs_plots.main(["--out", str(tmp_path)]) == 0
    for name, (file, _) in docs_plots.PLOTS.items():
        if (ROOT / "docs" / "data" / file).is_file():
            assert (tmp_path / f"plot_{name}.png").stat().st_size > 1000, name
