"""The depth prepass (``depth_prepass``): the first Main pass draws its instances' depth,
then shades with depth ``equal``. It must change the cost, not the picture: the textured
city (OPAQUE, MASK foliage cut at its cutoff, double-sided, BLEND glass after) rendered with
and without it gives the same depth and the same colour."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from engine.passes.resources import HDR, MOTION
from engine.scene.procedural import city
from engine.settings import FrameSettings
from tests.frame_harness import Harness

SIZE = (160, 96)


def _render(gpu, settings: FrameSettings):
    scene, path = city(400, seed=3)
    h = Harness(gpu, scene, SIZE, settings)
    h.render(path.at(6.0), frames=2)
    return h


@pytest.mark.parametrize("occlusion", [True, False])
def test_the_prepass_changes_the_cost_not_the_picture(gpu, occlusion):
    """Two-phase (the prepass in Main.Early) and one-phase (in Main.Late, the pass that then
    clears): depth bit-identical, HDR colour and motion equal but for coplanar ties (where
    the prepass shades the last of equal depths, the plain pass the first)."""
    base = FrameSettings(taa=True, bloom=False, occlusion=occlusion)
    on, off = (_render(gpu, replace(base, depth_prepass=p)) for p in (True, False))
    early = next(p for p in on.frame.graph.passes if p.name == "Main.Early")
    late = next(p for p in on.frame.graph.passes if p.name == "Main.Late")
    # the pass that clears has it: Main.Early, or Main.Late alone (Main.Early not enabled)
    assert early.enabled_by(on.frame.settings) == occlusion and early.prepass()
    assert late.prepass() == (not occlusion)
    depth_on, depth_off = on.depth(), off.depth()
    assert (depth_on > 0).mean() > 0.5  # the city fills most of the view
    np.testing.assert_array_equal(depth_on, depth_off)
    for name in (HDR, MOTION):
        a, b = on.texture(name).astype(np.float64), off.texture(name).astype(np.float64)
        differ = np.abs(a - b).max(-1) > 1e-6
        assert differ.mean() < 0.002, (name, differ.sum())
