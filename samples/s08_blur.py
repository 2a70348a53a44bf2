"""s08: one technique three ways, compared: a Gaussian blur naive, separable and tiled in compute.

The pass ``Blur`` (after ``Sky``) blurs the frame's linear HDR colour ``frame.hdr`` into
``blur.out`` (rgba32float); ``Blur.Copy``, the same for every variant, draws it back into
``frame.hdr``, so exposure, bloom, TAA and the tone map work on the blurred light. Linear HDR,
not the tone-mapped picture after Post: a blur is a convolution of light, and the 8-bit
sRGB output is neither linear nor a storage format. The variants compute one convolution
(kernel radius ``--radius`` r, sigma r / 3, clamped at the edges), equal within float32
rounding, each from its own WGSL file beside this one:

    naive      the 2D kernel, (2r + 1)^2 loads a pixel                  s08_blur_naive.wgsl
    separable  rows into blur.temp, then columns: 2 (2r + 1) loads      s08_blur_separable.wgsl
    tiled      rows then columns, a line of 128 pixels a workgroup
               loaded once into workgroup memory: about 2 (1 + 2r / 128) s08_blur_tiled.wgsl

The prototyping loop:

1. Record the variants interleaved, 30 frames of each in turn (a change of clock or machine
   load then falls on all of them alike), in a window (Esc ends) or headless::

       python -m samples.s08 --gpu-profile --variant-cycle 30 --telemetry run.jsonl
       python -m samples.s08 --gpu-profile --variant-cycle 30 --telemetry run.jsonl \\
           --capture last.png --frames 900

2. Compare each variant with the first (naive), pass by pass: the medians, their difference
   with its 95% bootstrap confidence interval and the Mann-Whitney p; with a gate that exits
   1 when a pass is slower by more than 5% (the interval's bound, Holm over the passes)::

       lantern compare run.jsonl --fail-above 5

3. Edit a variant's WGSL while the window runs: start with the variant you will edit
   (``--gpu-profile --variant tiled``), change ``s08_blur_tiled.wgsl`` and save. Hot reload
   rebuilds it between frames (a mistake is a HUD notice naming file:line:column; the old
   pipeline keeps drawing), and after 30 frames either side the perf table's NOTE column
   beside ``Blur`` says what it cost before and by how much it changed (``was 56.840
   +110%``: yellow slower, green faster, dim when the interval holds zero). ``variant next``
   and ``radius 12`` in the console (backtick) switch live. docs/prototyping.md has
   the whole loop with figures; ``tools/bench.py blur`` measures the variants.
"""

from __future__ import annotations

import logging
import struct
from collections.abc import Callable
from functools import lru_cache
from pathlib import Path

import numpy as np
import wgpu

from engine.app import Sample, main
from engine.commands import Int
from engine.frame import StandardFrame
from engine.graph import ComputePass, TextureDesc
from engine.knobs import Knob, add_knob_arguments
from engine.passes.resources import HDR
from engine.passes.screen import ScreenCompute, ScreenPass
from engine.profiling.draws import draw_label
from engine.scene.procedural import city
from engine.settings import FRAME_KNOBS, check_post_options, settings_from_args

log = logging.getLogger("lantern")
MAX_RADIUS = 32  # s08_blur_common.wgsl's; the tiled variant's workgroup memory is sized by it
TILE = 128  # s08_blur_tiled.wgsl: pixels a workgroup blurs along its line
TEMP, OUT = "blur.temp", "blur.out"  # the rows' result; the blurred colour (rgba32float)
#: variant -> its WGSL file beside this one and its stages ``(draw name, entry, workgroup)``;
#: the first stage reads the source, a second one ``TEMP``; the last writes ``OUT``.
VARIANTS = {
    "naive": ("s08_blur_naive.wgsl", (("2d", "cs_main", (8, 8)),)),
    "separable": (
        "s08_blur_separable.wgsl",
        (("rows", "cs_rows", (8, 8)), ("columns", "cs_columns", (8, 8))),
    ),
    "tiled": (
        "s08_blur_tiled.wgsl",
        (("rows", "cs_rows", (TILE, 1)), ("columns", "cs_columns", (1, TILE))),
    ),
}
RADIUS = Knob("radius", Int(0, MAX_RADIUS, what="a radius in pixels", metavar="PX"), 6,
              "the blur's kernel radius (sigma = radius / 3)")  # fmt: skip
CITY = 3000  # instances of the procedural city it blurs


def gaussian_weights(radius: int) -> np.ndarray:
    """The 1D kernel's taps 0..radius, ``(radius + 1,)`` float32: ``exp(-i^2 / (2 sigma^2))``
    with sigma = radius / 3 (the kernel ends at 3 sigma), normalised so that the taps
    -radius..radius sum to 1; ``[1]`` for radius 0 (the identity)."""
    if radius == 0:
        return np.ones(1, np.float32)
    i = np.arange(radius + 1, dtype=np.float64)
    w = np.exp(-(i**2) / (2.0 * (radius / 3.0) ** 2))
    return (w / (w[0] + 2.0 * w[1:].sum())).astype(np.float32)


@lru_cache(maxsize=MAX_RADIUS + 1)
def blur_params(radius: int) -> bytes:
    """The WGSL ``Blur`` uniform (160 bytes): the radius, then the weights, four a vec4f.

    Raises:
        ValueError: a radius outside 0..MAX_RADIUS.
    """
    if not 0 <= radius <= MAX_RADIUS:
        raise ValueError(f"blur radius {radius}: expected 0..{MAX_RADIUS}")
    weights = np.zeros(36, np.float32)
    weights[: radius + 1] = gaussian_weights(radius)
    return struct.pack("<4i", radius, 0, 0, 0) + weights.tobytes()


class GaussianBlur(ComputePass):
    """The pass ``Blur``: graph texture ``source`` (float, e.g. ``frame.hdr``) blurred into
    ``OUT`` (rgba32float, the source's size) by the variant in ``variant``, each stage a
    dispatch named for ``--gpu-profile draws`` (``2d``, or ``rows`` and ``columns``).

    Args:
        res: the standard frame's ``FrameResources``.
        radius: returns the kernel radius in pixels (0..``MAX_RADIUS``) each frame.
        source: the graph texture to blur.

    Raises:
        wgpu.GPUValidationError: a variant's WGSL does not compile.
    """

    def __init__(self, res, radius: Callable[[], int], *, source: str = HDR):
        usage = wgpu.TextureUsage.STORAGE_BINDING
        for name in (TEMP, OUT):
            res.graph.create_texture(name, TextureDesc("rgba32float", usage))
        super().__init__("Blur", reads=(source,), writes=(TEMP, OUT))
        params = lambda: blur_params(radius())  # noqa: E731
        self.stages = {v: _stages(res, v, source, params) for v in VARIANTS}
        self.variant = next(iter(VARIANTS))

    def record(self, ctx, cpass) -> None:
        for draw, stage in self.stages[self.variant]:  # one compute pass: a dispatch each
            draw_label(cpass, draw)
            stage.record(ctx, cpass)


def _stages(res, variant: str, source: str, params) -> list[tuple[str, ScreenCompute]]:
    """``(draw name, ScreenCompute)`` of each stage of ``variant``: the first reads
    ``source``, the next ``TEMP``; the last writes ``OUT``."""
    wgsl, stages = VARIANTS[variant]
    chain = [source, *[TEMP] * (len(stages) - 1), OUT]  # stage i: chain[i] -> chain[i + 1]
    path = Path(__file__).with_name(wgsl)
    return [(draw, ScreenCompute(f"Blur.{variant}.{draw}", res, path, inputs=(chain[i],),
                                 target=chain[i + 1], entry=entry, workgroup=group,
                                 params=params))  # fmt: skip
            for i, (draw, entry, group) in enumerate(stages)]  # fmt: skip


def add_blur(frame: StandardFrame, radius: Callable[[], int]) -> GaussianBlur:
    """Insert ``Blur`` after ``Sky`` and ``Blur.Copy`` (``OUT`` back into ``frame.hdr``)
    after it; both run while the frame has post (without it there is no HDR colour)."""
    blur = GaussianBlur(frame.res, radius)
    copy = ScreenPass("Blur.Copy", frame.res, Path(__file__).with_name("s08_blur_copy.wgsl"),
                      inputs=(OUT,), target=HDR, load=False)  # fmt: skip
    for p in (blur, copy):  # set before the graph checks what they read
        p.enabled_by = lambda s: s.post
        p.enabled = p.enabled_by(frame.settings)
    frame.insert(blur, after="Sky")
    frame.insert(copy, after="Blur")
    return blur


class BlurSample(Sample):
    name = "s08"
    category = "techniques"
    description = __doc__.splitlines()[0].split(": ", 1)[1]
    variants = tuple(VARIANTS)
    knobs = (RADIUS,)

    @classmethod
    def add_arguments(cls, parser) -> None:
        add_knob_arguments(parser, FRAME_KNOBS, "standard frame")  # --no-taa, --shadow-size...

    @classmethod
    def check_options(cls, args) -> None:
        super().check_options(args)
        check_post_options(args, "s08", "the blur works on the HDR colour",
                           variants=cls.variants, knobs=cls.knobs)  # fmt: skip

    def build(self, graph) -> None:
        scene, self.path = city(CITY, seed=self.app.args.seed)
        self.frame = StandardFrame(self.app.gpu, graph, scene, settings_from_args(self.app.args))
        self.frame.add_knobs(self.knobs, self.app.args)  # 'radius 12' in the console
        self.frame.register_commands(self.app.commands)
        self.blur = add_blur(self.frame, lambda: self.frame.knob("radius"))
        if not self.frame.settings.post:
            log.warning("s08: --no-post: the frame has no HDR colour to blur; Blur is off")

    def set_variant(self, name: str) -> None:
        self.blur.variant = name

    def update(self, ctx) -> None:
        self.frame.update(ctx, self.path.at(ctx.time))


if __name__ == "__main__":
    main(BlurSample)
