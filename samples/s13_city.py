"""s13: a procedural city through the standard frame: GPU occlusion culling, shadows, post chain.

Keys: F1 cycles the overlay, F2 freezes the culling camera and lets you fly (W/S A/D Q/E,
arrow keys, Shift) to see what was culled from the frozen view; F2 again returns. Esc quits.
With --gpu-profile the shutdown report adds the frame's cull counters.
"""

from __future__ import annotations

import logging
from dataclasses import replace

import numpy as np

from engine.app import KEY_F2, Sample, main
from engine.frame import StandardFrame
from engine.scene.camera import FlyCamera, fly_speed
from engine.settings import add_frame_arguments, settings_from_args
from engine.tool import Key

log = logging.getLogger("lantern")

DEFAULT_INSTANCES = 100_000


class City(Sample):
    name = "s13"
    category = "frame"
    keys = (Key("F2", KEY_F2, "cull freeze", "freeze the culling camera and fly with W/A/S/D/Q/E"),)
    example_args = ("--instances", "2000")
    description = __doc__.splitlines()[0].split(": ", 1)[1]

    @classmethod
    def add_arguments(cls, parser) -> None:
        add_frame_arguments(parser, default_instances=DEFAULT_INSTANCES)
        parser.add_argument(
            "--materials",
            choices=("city", "flat"),
            default="city",
            help="the procedural city's materials: city (textured, MASK foliage, BLEND glass) "
            "or flat (the default opaque material tinted per instance: the frame before "
            "materials, comparable with older benchmark figures)",
        )

    def build(self, graph) -> None:
        args = self.app.args
        if args.scene is not None:
            from engine.scene.gltf import default_camera, repeat_grid

            scene = args.scene
            if args.instances is not None and args.instances > scene.count:
                scene = repeat_grid(scene, args.instances // scene.count)
            w, h = graph.size  # landscape: fits any landscape window; portrait: this one
            path = default_camera(scene, aspect=min(w / h, 1.0))
        else:
            from engine.scene.procedural import city

            scene, path = city(
                args.instances or DEFAULT_INSTANCES,
                seed=args.seed,
                materials=args.materials == "city",
            )
            if args.lights:
                from engine.scene.city_lights import add_city_lights

                add_city_lights(scene, args.lights, seed=args.seed)
        if args.camera is not None:
            from engine.scene.camera import FixedPath

            path = FixedPath(args.camera)
        self.scene, self.path = scene, path
        self.fly, self._last_time = None, 0.0
        self.fly_speed = fly_speed(scene.extent)  # walking to driving pace
        settings = settings_from_args(args)
        if args.scene is not None:  # fog and shadows sized to the model, not to a city street
            lo, hi = scene.extent
            diag = max(float(np.linalg.norm(hi - lo)), 1e-3)
            # shadow distance past the model's far side from the orbit: all of it is shadowed
            settings = replace(settings, fog_density=0.1 / diag, shadow_radius=3.0 * diag)
        self.frame = StandardFrame(self.app.gpu, graph, scene, settings)
        self.frame.register_commands(self.app.commands, freeze=self.freeze)
        if args.cull_camera is not None:  # a capture of what a fixed culling camera culls
            self.frame.freeze_culling(True, camera=args.cull_camera)
        if args.shadow_camera is not None:  # the cascades of another camera, seen from this one
            self.frame.fit_shadows_to(args.shadow_camera)
        log.info(
            "s13: %s instances, %d draw batches, %s lights", f"{scene.count:,}",
            self.frame.gs.batch_count, f"{scene.lights.count:,}",
        )  # fmt: skip

    def update(self, ctx) -> None:
        camera = self.path.at(ctx.time)
        if self.fly is not None:  # F2: culling frozen, the user flies the render camera
            window = self.app.window
            held = window.key_down if window is not None else (lambda key: False)
            camera = self.fly.step(max(ctx.time - self._last_time, 0.0), held)
        self._last_time = ctx.time
        self.frame.update(ctx, camera)

    def freeze(self, frozen: bool | None = None) -> str:
        """F2 and the console's ``cull freeze [on|off]``: freeze culling and fly (None
        toggles)."""
        frozen = self.frame.freeze_culling(frozen)
        self.fly = FlyCamera(self.frame.camera, self.fly_speed) if frozen else None
        if frozen:
            log.info("fly: W/S A/D Q/E move, arrow keys turn, Shift is faster; F2 returns")
        if not frozen:
            return "culling camera released"
        keys = ": fly with W/S A/D Q/E" if self.app.window is not None else ""
        return f"culling camera frozen{keys}"

    def report(self) -> str | None:
        if self.frame.stats.latest is None:
            return "Cull: no counters read back"
        return None  # the app prints the telemetry's cull line


if __name__ == "__main__":
    main(City)
