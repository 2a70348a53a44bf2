"""Shared fixtures: one real wgpu device (lavapipe when there is no GPU), reference images."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[1]
REFERENCE_DIR = ROOT / "tests" / "reference"
OUT_DIR = ROOT / "tests" / "_out"

os.environ.setdefault("XDG_RUNTIME_DIR", "/tmp")


def pytest_addoption(parser):
    parser.addoption(
        "--update-references",
        action="store_true",
        help="rewrite tests/reference/*.png from this run instead of comparing",
    )


@pytest.fixture(scope="session")
def gpu():
    """The session's ``engine.gpu.Gpu``. Fails if LANTERN_EXPECT_ADAPTER is set and the
    adapter's name does not contain it (CI sets it to ``llvmpipe``)."""
    from engine.gpu import create_gpu

    g = create_gpu()
    expect = os.environ.get("LANTERN_EXPECT_ADAPTER")
    if expect and expect.lower() not in g.summary.lower():
        pytest.fail(f"tests must run on {expect!r} but the adapter is {g.summary!r}")
    return g


@pytest.fixture(scope="session")
def device(gpu):
    return gpu.device


@pytest.fixture
def compare_reference(request):
    """``compare_reference(name, rgb)``: compare a ``(H, W, 3) uint8`` image with
    ``tests/reference/<name>.png`` (max abs difference <= 1 per channel). On failure the
    actual image and an amplified diff are written to ``tests/_out/``."""
    from PIL import Image

    update = request.config.getoption("--update-references")

    def compare(name: str, rgb: np.ndarray, tolerance: int = 1) -> None:
        ref_path = REFERENCE_DIR / f"{name}.png"
        if update or not ref_path.exists():
            if not update:
                pytest.fail(f"missing reference {ref_path}; run pytest --update-references")
            REFERENCE_DIR.mkdir(parents=True, exist_ok=True)
            Image.fromarray(rgb).save(ref_path)
            return
        ref = np.asarray(Image.open(ref_path).convert("RGB"))
        assert ref.shape == rgb.shape, f"{name}: size {rgb.shape} != reference {ref.shape}"
        diff = np.abs(ref.astype(np.int16) - rgb.astype(np.int16))
        if diff.max() > tolerance:
            OUT_DIR.mkdir(parents=True, exist_ok=True)
            Image.fromarray(rgb).save(OUT_DIR / f"{name}.actual.png")
            amp = np.clip(diff * 32, 0, 255).astype(np.uint8)
            Image.fromarray(amp).save(OUT_DIR / f"{name}.diff.png")
            bad = int((diff.max(axis=2) > tolerance).sum())
            pytest.fail(
                f"{name}: {bad} pixel(s) differ by up to {diff.max()} (tolerance {tolerance}); "
                f"see {OUT_DIR}"
            )

    return compare
