"""s04: screen-space ambient occlusion three ways, measured against a brute-force reference.

``SSAO`` (before ``Ambient``) reads the frame's depth and normals and writes ``ssao.ao``;
``SSAO.Apply`` multiplies ``frame.ambient`` by ``ao^intensity`` (the ambient hook). Variants
``gtao`` (Jimenez et al. 2016), ``gtao-half`` and ``hemisphere``; ``--reference`` adds
``SSAO.Reference``; with --gpu-profile the report gives each variant's error and GPU time.
See docs/ssao.md.

    python -m samples.s04 --gpu-profile --variant-cycle 30 --telemetry run.jsonl
    lantern compare run.jsonl
"""

from __future__ import annotations

import statistics
import struct
from pathlib import Path

import numpy as np
import wgpu

from engine.app import Sample, main
from engine.commands import Float, Int, Switch
from engine.frame import StandardFrame
from engine.graph import ComputePass, TextureDesc
from engine.knobs import Knob, add_knob_arguments
from engine.passes.resources import DEPTH, NORMALS
from engine.passes.screen import MULTIPLY, ScreenCompute, ScreenPass
from engine.profiling.draws import draw_label
from engine.scene.camera import CAMERA_FORMAT, FixedPath, parse_camera
from engine.scene.procedural import city
from engine.settings import FRAME_KNOBS, settings_from_args
from engine.tools.dump.tool import read_texture

HERE = Path(__file__).parent
RAW, RAW_HALF, AO_HALF, AO = "ssao.raw", "ssao.raw.half", "ssao.ao.half", "ssao.ao"
REFERENCE = "ssao.reference"
TARGETS = {RAW: 1.0, RAW_HALF: 0.5, AO_HALF: 0.5, AO: 1.0, REFERENCE: 1.0}  # r32float, scale
REFERENCE_DIRECTIONS, REFERENCE_STEPS = 256, 32  # s04_ssao_reference.wgsl's
OCCLUDED = 0.9  # the report's second error: over the pixels the reference finds below this
#: variant -> stages ``(draw name, WGSL file, entry, target)``; each stage reads the frame's
#: depth and normals and the target of the stage before it.
VARIANTS = {
    "gtao": (("ao", "gtao", "cs_full", RAW), ("denoise", "denoise", "cs_full", AO)),
    "gtao-half": (
        ("ao", "gtao", "cs_half", RAW_HALF),
        ("denoise", "denoise", "cs_half", AO_HALF),
        ("upsample", "denoise", "cs_upsample", AO),
    ),
    "hemisphere": (("ao", "hemisphere", "cs_main", RAW), ("denoise", "denoise", "cs_full", AO)),
}
HEADER = f"  {'variant':<12} {'MAE':>7} {'MAE occl.':>9} {'pixels':>15}  GPU ms"
CITY = 3000  # instances of the procedural city
KNOBS = (
    Knob("radius", Float(0.05, 20.0), 1.0, "R: the AO radius, world units (m)"),
    Knob("thickness", Float(0.01, 20.0), 0.5, "T: how thick a surface is taken to be (m)"),
    Knob("intensity", Float(0.0, 4.0), 1.0, "the ambient light times AO^intensity"),
    Knob("samples", Int(4, 64), 16, "depth samples a pixel"),
    Knob("denoise", Switch(), True, "depth-aware denoise"),
    Knob("reference", Switch(), False, "the brute-force reference each frame (slow)"),
)


class Ssao(ComputePass):
    """``SSAO``: the variant's stages (a dispatch each, named for ``--gpu-profile draws``)
    from ``frame.depth`` and ``frame.normals`` to ``AO`` (r32float); ``reference`` (off) and
    ``apply`` beside it. ``params()``: the WGSL ``Ssao`` uniform's 32 bytes each frame.
    Raises wgpu.GPUValidationError when a WGSL file does not compile."""

    def __init__(self, res, params):
        for name, scale in TARGETS.items():
            res.graph.create_texture(
                name, TextureDesc("r32float", wgpu.TextureUsage.STORAGE_BINDING, scale)
            )
        super().__init__("SSAO", reads=(DEPTH, NORMALS))
        self.res = res
        self.stages = {v: _stages(res, v, params) for v in VARIANTS}
        self.reference = _compute(res, "SSAO.Reference", "reference", "cs_main", REFERENCE, params)
        self.reference.enabled = False
        self.reference.turned_on_by = {REFERENCE: "--reference (or 'reference on')"}
        self.apply = ScreenPass("SSAO.Apply", res, HERE / "s04_ssao_apply.wgsl", params=params,
                                inputs=(DEPTH, NORMALS, AO), target="frame.ambient",
                                blend=MULTIPLY)  # fmt: skip
        by = {n: [v for v, st in VARIANTS.items() if any(n == t for *_, t in st)] for n in TARGETS}
        self.turned_on_by = {n: "--variant " + " or ".join(v) for n, v in by.items() if v}
        self.set_variant(next(iter(VARIANTS)))

    def set_variant(self, name: str) -> None:
        self.variant = name
        self.writes = tuple(stage.target for _, stage in self.stages[name])
        self.res.graph.invalidate()  # its targets changed

    def record(self, ctx, cpass) -> None:
        for draw, stage in self.stages[self.variant]:
            draw_label(cpass, draw)
            stage.record(ctx, cpass)

    def run(self, stages) -> None:
        """Record ``stages`` now, outside the frame, on the last frame's depth and normals."""
        encoder = self.res.device.create_command_encoder()
        cpass = encoder.begin_compute_pass()
        for _, stage in stages:
            stage.record(None, cpass)
        cpass.end()
        self.res.device.queue.submit([encoder.finish()])

    def errors(self) -> dict[str, tuple[float, float, int, int]]:
        """``{variant: (mean absolute error against the reference over the pixels with
        geometry, the same where the reference is below OCCLUDED, the two pixel counts)}``
        on the last frame (waits for the GPU: shutdown, benchmarks, tests)."""
        d, g, current = self.res.device, self.res.graph, self.variant
        self.run([("", self.reference)])
        ref = read_texture(d, g.texture(REFERENCE))[..., 0].astype(np.float64)
        geometry = read_texture(d, g.texture(DEPTH))[..., 0] > 0
        masks = (geometry, geometry & (ref < OCCLUDED))
        out = {}
        for v in VARIANTS:
            self.run(self.stages[v])
            err = np.abs(read_texture(d, g.texture(AO))[..., 0] - ref)
            means = [float(err[m].mean()) if m.any() else float("nan") for m in masks]
            out[v] = (*means, *(int(m.sum()) for m in masks))
        self.run(self.stages[current])
        return out


def _compute(res, name: str, wgsl: str, entry: str, target: str, params, prev=()):
    return ScreenCompute(name, res, HERE / f"s04_ssao_{wgsl}.wgsl", inputs=(DEPTH, NORMALS, *prev),
                         target=target, entry=entry, params=params,
                         sampler=wgsl == "gtao")  # fmt: skip


def _stages(res, variant: str, params) -> list[tuple[str, ScreenCompute]]:
    out, prev = [], ()
    for draw, wgsl, entry, target in VARIANTS[variant]:
        out.append((draw, _compute(res, f"SSAO.{variant}.{draw}", wgsl, entry, target, params,
                                   prev)))  # fmt: skip
        prev = (target,)
    return out


def ssao_params(radius, thickness, intensity, samples, denoise) -> bytes:
    """The WGSL ``Ssao`` uniform (s04_ssao_common.wgsl), 32 bytes."""
    return struct.pack("<8f", radius, thickness, intensity, samples, float(denoise), 0, 0, 0)


def add_ssao(frame: StandardFrame, params) -> Ssao:
    """``SSAO``, ``SSAO.Reference`` (off) and ``SSAO.Apply`` in that order before ``Ambient``."""
    ssao = Ssao(frame.res, params)
    for p in (ssao, ssao.reference, ssao.apply):
        frame.insert(p, before="Ambient")
    return ssao


class SsaoSample(Sample):
    name = "s04"
    category = "techniques"
    description = __doc__.splitlines()[0].split(": ", 1)[1]
    variants = tuple(VARIANTS)
    knobs = KNOBS

    @classmethod
    def add_arguments(cls, parser) -> None:
        add_knob_arguments(parser, FRAME_KNOBS, "standard frame")
        parser.add_argument("--camera", type=parse_camera, default=None, metavar=CAMERA_FORMAT,
                            help="fixed camera instead of the drive down the street")  # fmt: skip

    def build(self, graph) -> None:
        args = self.app.args
        scene, self.path = city(CITY, seed=args.seed)
        if args.camera is not None:
            self.path = FixedPath(args.camera)
        self.frame = StandardFrame(self.app.gpu, graph, scene, settings_from_args(args))
        self.frame.add_knobs(self.knobs, args)  # 'radius 2' in the console
        self.frame.register_commands(self.app.commands)
        knob = self.frame.knob
        self.ssao = add_ssao(self.frame, lambda: ssao_params(*(knob(k.name) for k in KNOBS[:5])))
        self.ssao.reference.enabled = knob("reference")  # before the first frame: --dump
        self.times: dict[str, list[float]] = {}  # variant -> GPU ms of SSAO, frame by frame
        self.app.telemetry.subscribe(self._timed)

    def set_variant(self, name: str) -> None:
        self.ssao.set_variant(name)

    def update(self, ctx) -> None:
        self.ssao.reference.enabled = self.frame.knob("reference")
        self.frame.update(ctx, self.path.at(ctx.time))

    def _timed(self, record) -> None:
        for scope in record.gpu or ():
            if scope.name == "SSAO" and record.variant:
                self.times.setdefault(record.variant, []).append(scope.duration_ms)

    def report(self) -> str:
        """Each variant's error against the reference on the last frame, and its GPU time."""
        k, w, h = self.frame.knob, *self.frame.res.size
        lines = [f"s04 SSAO at {w}x{h}, R {k('radius'):g} m, T {k('thickness'):g} m, against the "
                 f"reference ({REFERENCE_DIRECTIONS} directions x {REFERENCE_STEPS} steps): mean "
                 f"absolute error where there is geometry and where the reference is below "
                 f"{OCCLUDED}; median GPU ms of SSAO in the variant's frames", HEADER]  # fmt: skip
        for v, (mae, occl, n, n_occl) in self.ssao.errors().items():
            t = self.times.get(v)
            gpu = f"{statistics.median(t):8.3f} ({len(t)} frames)" if t else "     n/a (not run)"
            lines.append(f"  {v:<12} {mae:7.4f} {occl:9.4f} {f'{n}/{n_occl}':>15} {gpu}")
        return "\n".join(lines)


if __name__ == "__main__":
    main(SsaoSample)
