"""Reference pictures of the samples whose own tests check other things (s02, s03, s14): each
captured headless as a user runs it, compared with ``tests/reference/sNN_*.png`` (max
difference per channel: ``compare_reference``'s tolerance; ``--update-references`` rewrites
them after a deliberate change)."""

from __future__ import annotations

import numpy as np
import pytest
from PIL import Image

from tests.helpers import run_sample

CASES = {  # sample -> (reference name, arguments before --capture)
    "s02": ("s02_custom_pass_160x90", ("--size", "160x90", "--frames", "8")),
    "s03": ("s03_hud_gallery_320x180", ("--size", "320x180", "--frames", "4")),
    "s14": ("s14_flame_320x180", ("--spans", "20000", "--size", "320x180", "--frames", "4")),
}


@pytest.mark.parametrize("sample", sorted(CASES))
def test_sample_picture_matches_its_reference(sample, tmp_path, compare_reference):
    name, args = CASES[sample]
    out = tmp_path / f"{sample}.png"
    r = run_sample(sample, *args, "--capture", str(out))
    assert r.returncode == 0, r.stderr
    img = Image.open(out)
    w, h = (int(v) for v in args[args.index("--size") + 1].split("x"))
    assert img.size == (w, h) and img.mode == "RGB"
    rgb = np.asarray(img)
    assert rgb.std() > 5.0  # a picture, not a cleared or black target
    compare_reference(name, rgb)
