"""s01 captured headless on the real adapter: reference image, PNG size, channel order."""

from __future__ import annotations

import numpy as np
from PIL import Image

from tests.helpers import run_sample


def srgb_encode(linear: float) -> int:
    """IEC 61966-2-1 sRGB transfer function, to 8 bits."""
    c = 12.92 * linear if linear <= 0.0031308 else 1.055 * linear ** (1 / 2.4) - 0.055
    return round(c * 255)


def test_s01_capture_matches_reference(tmp_path, compare_reference):
    out = tmp_path / "s01.png"
    r = run_sample("s01", "--capture", str(out), "--size", "160x120", "--frames", "30")
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("GPU: ")
    assert f"wrote {out}" in r.stdout
    img = Image.open(out)
    assert img.size == (160, 120) and img.mode == "RGB"
    rgb = np.asarray(img)
    # The top-left pixel is the cleared sky: linear (0.32, 0.45, 0.62) stored sRGB-encoded,
    # in R, G, B order (a swapped or linear write would show here).
    expected = [srgb_encode(c) for c in (0.32, 0.45, 0.62)]
    assert list(rgb[0, 0]) == expected
    compare_reference("s01_160x120_f30", rgb)


def test_s01_capture_is_deterministic(tmp_path):
    a, b = tmp_path / "a.png", tmp_path / "b.png"
    for p in (a, b):
        assert (
            run_sample("s01", "--capture", str(p), "--size", "96x64", "--frames", "7").returncode
            == 0
        )
    assert np.array_equal(np.asarray(Image.open(a)), np.asarray(Image.open(b)))
