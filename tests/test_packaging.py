"""Lantern as an installed package: the wheel carries the shaders and assets, the samples and
the ``lantern`` command run from it outside the checkout (what ``.ci/run`` also does in a fresh
virtual environment), and pyproject.toml lists every package of the tree."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tomllib
import zipfile
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

ROOT = Path(__file__).resolve().parents[1]
SUBCOMMANDS = ("ablate", "bench", "compare", "inspect", "rdc")


def _setuptools_config() -> dict:
    return tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]


def test_pyproject_lists_every_package_of_the_tree():
    """A package missing from the explicit list would be missing from the wheel."""
    tree = {
        ".".join(p.parent.relative_to(ROOT).parts)
        for top in ("engine", "samples")
        for p in (ROOT / top).rglob("__init__.py")
    }
    listed = set(_setuptools_config()["packages"])
    assert tree - listed == set(), "add these to [tool.setuptools] packages in pyproject.toml"
    mapped = _setuptools_config()["package-dir"]
    for package in listed - tree:  # the data packages: mapped folders that exist
        parent = next(k for k in sorted(mapped, key=len, reverse=True) if package.startswith(k))
        folder = ROOT / mapped[parent] / Path(*package[len(parent) :].split(".")[1:])
        assert folder.is_dir(), (package, folder)


def _tracked_copy(dest: Path) -> Path:
    """The checkout's tracked and untracked-not-ignored files (no build debris) in ``dest``."""
    out = subprocess.run(
        ["git", "ls-files", "-co", "--exclude-standard", "-z"],
        cwd=ROOT, capture_output=True, check=True,
    ).stdout.decode()  # fmt: skip
    for rel in filter(None, out.split("\0")):
        if (ROOT / rel).is_file():
            (dest / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / rel, dest / rel)
    return dest


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    """``(wheel, site, env)``: the wheel built offline from a copy of the checkout, installed
    with ``--target`` (dependencies come from this environment) and first on PYTHONPATH."""
    base = tmp_path_factory.mktemp("pkg")
    src = _tracked_copy(base / "src")
    pip = [sys.executable, "-m", "pip", "-q", "--disable-pip-version-check"]
    subprocess.run([*pip, "wheel", "--no-deps", "--no-build-isolation", "--no-index",
                    "-w", str(base / "dist"), str(src)], check=True, timeout=300)  # fmt: skip
    (wheel,) = (base / "dist").glob("lantern-*.whl")
    site = base / "site"
    subprocess.run([*pip, "install", "--no-deps", "--no-index", "--target", str(site),
                    str(wheel)], check=True, timeout=300)  # fmt: skip
    env = dict(os.environ, PYTHONPATH=str(site))
    env.setdefault("XDG_RUNTIME_DIR", "/tmp")
    return wheel, site, env


def _run(args, env, cwd, timeout=300):
    return subprocess.run(args, env=env, cwd=cwd, capture_output=True, text=True, timeout=timeout)


def test_wheel_carries_every_shader_and_asset(installed):
    wheel, _, _ = installed
    names = set(zipfile.ZipFile(wheel).namelist())
    for folder, prefix in (("shaders", "engine/_data/shaders"), ("assets", "engine/_data/assets")):
        files = [p for p in (ROOT / folder).rglob("*") if p.is_file()]
        assert files
        for p in files:
            assert f"{prefix}/{p.relative_to(ROOT / folder).as_posix()}" in names, p
    assert "engine/devtools/benchmarks/ablate_truth.wgsl" in names
    own = sorted((ROOT / "samples").glob("*.wgsl"))  # a sample's WGSL beside it
    assert own and all(f"samples/{p.name}" in names for p in own)
    assert "engine/tools/renderdoc/replay.py" in names  # run by RenderDoc's Python (lantern rdc)
    assert not any(n.startswith(("shaders/", "assets/", "tests/")) for n in names)


def test_installed_samples_render_outside_the_checkout(installed, tmp_path, compare_reference):
    """From a folder with no checkout: the installed engine (not this one) loads its shaders
    through importlib.resources; s01 renders exactly the checkout's reference image, and s08
    (its WGSL beside it in the wheel's samples package) its own."""
    _, site, env = installed
    where = _run([sys.executable, "-c", "import engine.shaders as s; print(s.__file__, "
                  "s.SHADER_DIR)"], env, tmp_path)  # fmt: skip
    assert where.returncode == 0, where.stderr
    assert where.stdout.split() == [
        str(site / "engine" / "shaders.py"),
        str(site / "engine" / "_data" / "shaders"),
    ]
    a = _run([sys.executable, "-m", "samples.s01", "--capture", "a.png", "--size", "160x120",
              "--frames", "30"], env, tmp_path)  # fmt: skip
    assert a.returncode == 0, a.stderr
    compare_reference("s01_160x120_f30", np.asarray(Image.open(tmp_path / "a.png").convert("RGB")))
    b = _run([sys.executable, "-m", "samples.s13", "--capture", "b.png", "--instances", "200",
              "--size", "320x180", "--frames", "3"], env, tmp_path)  # fmt: skip
    assert b.returncode == 0, b.stderr
    assert Image.open(tmp_path / "b.png").size == (320, 180)
    assert "wrote b.png (320x180, 3 frames)" in b.stdout
    c = _run([sys.executable, "-m", "samples.s08", "--capture", "c.png", "--size", "160x90",
              "--frames", "4", "--radius", "4", "--shadow-size", "512"], env, tmp_path)  # fmt: skip
    assert c.returncode == 0, c.stderr  # its own WGSL found beside it in the wheel
    compare_reference("s08_blur_160x90", np.asarray(Image.open(tmp_path / "c.png").convert("RGB")))


@pytest.mark.parametrize("sub", SUBCOMMANDS)
def test_installed_lantern_command_has_each_subcommand(installed, tmp_path, sub):
    _, site, env = installed
    r = _run([str(site / "bin" / "lantern"), sub, "--help"], env, tmp_path, timeout=120)
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("usage: ") and "--help" in r.stdout
