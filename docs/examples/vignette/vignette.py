"""A technique inside the standard frame, from outside Lantern's repository: a vignette after
the tone map, with a knob of its own. Run it from anywhere Lantern is installed:

    python vignette.py --capture v.png --vignette 0.8
"""

from __future__ import annotations

import struct
from pathlib import Path

from engine.app import Sample, main
from engine.commands import Float
from engine.frame import StandardFrame
from engine.knobs import Knob
from engine.passes.screen import MULTIPLY, ScreenPass
from engine.scene.procedural import city

HERE = Path(__file__).parent


class Vignette(Sample):
    name = "vignette"
    description = "the standard frame with a vignette after its tone map"
    knobs = (Knob("vignette", Float(0.0, 1.0), 0.6, "how dark the corners get"),)

    def build(self, graph) -> None:
        scene, self.path = city(2000, seed=self.app.args.seed)
        self.frame = StandardFrame(self.app.gpu, graph, scene)
        self.frame.add_knobs(self.knobs, self.app.args)  # 'vignette 0.3' in the console
        self.frame.register_commands(self.app.commands)
        strength = lambda: struct.pack("<4f", self.frame.knob("vignette"), 0, 0, 0)  # noqa: E731
        vignette = ScreenPass("Vignette", self.frame.res, HERE / "vignette.wgsl",
                              params=strength, blend=MULTIPLY)  # fmt: skip
        self.frame.insert(vignette, after="Post")

    def update(self, ctx) -> None:
        self.frame.update(ctx, self.path.at(ctx.time))


if __name__ == "__main__":
    main(Vignette)
