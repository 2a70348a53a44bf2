"""s13: a procedural city through the standard frame: GPU occlusion culling, shadows, tone map.

Keys: F1 cycles the overlay, F2 freezes the culling camera (fly on to see what was culled),
Esc quits. With --gpu-profile the shutdown report adds the frame's cull counters.
"""

from __future__ import annotations

import argparse
import logging

from engine.app import KEY_F2, Sample, main
from engine.frame import StandardFrame, add_frame_arguments, settings_from_args

log = logging.getLogger("lantern")

DEFAULT_INSTANCES = 100_000


def scene_type(path: str):
    """argparse type: load a glTF file; SceneError becomes a one-line argparse error."""
    from engine.scene.gltf import SceneError, load_gltf

    try:
        return load_gltf(path)
    except SceneError as e:
        raise argparse.ArgumentTypeError(str(e)) from None


class City(Sample):
    name = "s13"
    description = __doc__.splitlines()[0].split(": ", 1)[1]

    @classmethod
    def add_arguments(cls, parser) -> None:
        add_frame_arguments(parser, default_instances=DEFAULT_INSTANCES)
        for action in parser._actions:  # --scene loads (and validates) the file at parse time
            if action.dest == "scene":
                action.type = scene_type

    def build(self, graph) -> None:
        args = self.app.args
        if args.scene is not None:
            from engine.scene.gltf import default_camera

            scene, path = args.scene, default_camera(args.scene)
        else:
            from engine.scene.procedural import city

            scene, path = city(args.instances, seed=args.seed)
        if args.camera is not None:
            from engine.scene.camera import FixedPath

            path = FixedPath(args.camera)
        self.scene, self.path = scene, path
        self.frame = StandardFrame(self.app.gpu, graph, scene, settings_from_args(args))
        self.app.cull_stats = self.frame.stats
        log.info(
            "s13: %s instances, %d draw batches", f"{scene.count:,}", self.frame.gs.batch_count
        )

    def update(self, ctx) -> None:
        self.frame.update(ctx, self.path.at(ctx.time))

    def on_key(self, key: int) -> None:
        if key == KEY_F2:
            self.frame.freeze_culling()

    def report(self) -> str | None:
        latest = self.frame.stats.drain()
        return latest.report() if latest is not None else "Cull: no counters read back"


if __name__ == "__main__":
    main(City)
