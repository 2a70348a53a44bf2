"""The depth prepass (``depth_prepass``): the first Main pass draws its instances' depth,
then shades with depth ``equal``. It must change the cost, not the picture: the textured
city (OPAQUE, MASK foliage cut at its cutoff, double-sided, BLEND glass after) rendered with
and without it gives the same depth and the same colour."""

from __future__ import annotations

from dataclasses import replace
from types import SimpleNamespace

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


@pytest.mark.parametrize("post", [True, False])
def test_the_first_main_pass_clears_only_what_sky_does_not_overwrite(gpu, post):
    """With the post chain ``Sky`` writes frame.hdr and frame.motion wherever the depth
    stays 0, so the first Main pass loads them (the depth is always cleared); without it, or
    while a snapshot of them is read, it clears them; the later Main pass loads all."""
    from engine.graph import TransferPass

    h = _render(gpu, FrameSettings(post=post, bloom=False))
    early = next(p for p in h.frame.graph.passes if p.name == "Main.Early")
    late = next(p for p in h.frame.graph.passes if p.name == "Main.Late")

    def ops(p):
        t = p.targets(SimpleNamespace(output=h.target.view))
        colour = [a["load_op"] for a in t["color_attachments"]]
        return colour, t["depth_stencil_attachment"]["depth_load_op"]

    outputs = h.frame.res.frame_outputs()
    assert (MOTION in outputs) == post  # TAA's motion vectors: only with the post chain
    want = "load" if post else "clear"
    assert ops(early) == ([want] * (1 + len(outputs)), "clear")
    assert ops(late) == (["load"] * (1 + len(outputs)), "load")
    if post:  # a snapshot read before Sky: no pixel may hold last frame's
        h.frame.graph.add(TransferPass("Reader", reads=(f"{HDR}@Main.Early",)))
        h.frame.graph.validate()
        assert ops(early)[0][0] == "clear" and ops(early)[0][1:] == ["load"] * len(outputs)
