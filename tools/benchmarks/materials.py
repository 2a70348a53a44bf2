"""Materials benchmark (issue 28): printed figures, no pass/fail.

1. CPU ms to record the standard frame at 100k city instances (a sync after each frame) with
   1 material, with 256 materials (each textured), and the 1-material city untextured
   (``textures`` off), every instance OPAQUE in all three (the same batches and passes):
   the CPU records the same commands whatever the material count.
2. GPU ms of the Main passes (``Main.Early`` + ``Main.Late``) of the textured city against the
   same frames untextured, at 1920x1080 (``--quick``: 640x360), with the depth prepass and
   without it.
3. Load time of a generated glTF scene with 256 textures (256x256 PNG files): parse and
   decode (``load_gltf``), then texture arrays, GPU mipmaps and pipelines (the frame's
   construction and first frame).

Goals (H200): record(256 materials) and record(untextured) within 1.1x of record(1 material);
Main textured <= 1.3x untextured at 1920x1080.
"""

from __future__ import annotations

import statistics
import tempfile
import time
from dataclasses import replace
from pathlib import Path

import numpy as np


def _rig(gpu, scene, size, settings, *, profile=False):
    from engine.frame import StandardFrame
    from engine.graph import RenderGraph
    from engine.loop import FrameLoop
    from engine.surfaces import OffscreenTarget

    target = OffscreenTarget(gpu.device, size)
    graph = RenderGraph(gpu.device, output_format=target.format, size=size)
    frame = StandardFrame(gpu, graph, scene, settings)
    if profile:
        from engine.profiling import FrameProfiler

        graph.profiler = FrameProfiler(gpu, gpu=True, cpu=False)
    return frame, target, FrameLoop(gpu, graph)


def _frames(gpu, rig, path, count, *, sync=True) -> list[float]:
    frame, target, loop = rig
    out = []
    for i in range(count):
        t0 = time.perf_counter()
        loop.frame(target.view, 4.0 + i / 60, lambda ctx: frame.update(ctx, path.at(ctx.time)))
        out.append((time.perf_counter() - t0) * 1e3)
        if sync:
            gpu.queue.read_buffer(frame.counters)
    return out


def _with_materials(scene, count: int):
    """The city with all instances OPAQUE: 1 textured material, or ``count`` variants of the
    city's textured ones (factors differ), assigned round-robin."""
    from engine.materials.model import AlphaMode
    from engine.scene.scene import Scene

    textured = [m for m in scene.materials if m.textures and m.alpha_mode == AlphaMode.OPAQUE]
    mats = [
        replace(textured[i % len(textured)], name=f"m{i}", roughness=0.3 + 0.7 * i / count)
        for i in range(count)
    ]
    ids = (np.arange(scene.count) % count).astype(np.uint32)
    return Scene(
        scene.meshes,
        scene.transforms,
        scene.mesh_ids,
        scene.colors,
        sun_direction=scene.sun_direction,
        materials=mats,
        material_ids=ids,
        images=scene.images,
    )


def run(gpu, args) -> None:
    from engine.scene.procedural import city
    from engine.settings import FrameSettings

    quick = getattr(args, "quick", False)
    scene, path = city(100_000, seed=0)
    small = (320, 180)
    one = _with_materials(scene, 1)
    rigs = {  # the same OPAQUE batches in each: only the materials and the textures differ
        "1 material": _rig(gpu, one, small, FrameSettings()),
        "256 materials": _rig(gpu, _with_materials(scene, 256), small, FrameSettings()),
        "untextured": _rig(gpu, one, small, FrameSettings(textures=False)),
    }
    per, rounds = (4, 2) if quick else (20, 6)
    times = {k: [] for k in rigs}
    for _ in range(rounds):  # interleaved: a shared host's load weighs on each alike
        for k, rig in rigs.items():
            times[k] += _frames(gpu, rig, path, per + 1)[1:]
    base = statistics.median(times["1 material"])
    for k, t in times.items():
        med = statistics.median(t)
        print(
            f"record frame, 100k instances, {k:<14}: {med:7.3f} ms CPU (median of {len(t)}), "
            f"{med / base:4.2f}x of 1 material (goal <= 1.1x)",
            flush=True,
        )
    del rigs
    _gpu_main(gpu, scene, path, (640, 360) if quick else (1920, 1080), 6 if quick else 40)
    _load_256(gpu, 128 if quick else 256)


def _gpu_main(gpu, scene, path, size, frames: int) -> None:
    """Main.Early + Main.Late textured against untextured, with the depth prepass (the
    default) and without it (each pixel shaded as often as instances cover it): the
    prepass is the before/after of the shading cost."""
    from engine.settings import FrameSettings

    for prepass in (True, False):
        med = {}
        for textured in (True, False):
            settings = FrameSettings(textures=textured, depth_prepass=prepass)
            rig = _rig(gpu, scene, size, settings, profile=True)
            _frames(gpu, rig, path, frames, sync=False)
            rig[2].drain()
            hist = [t for t in rig[2].telemetry.history if t.gpu][2:]
            if not hist:
                print("GPU timings: n/a (no timestamp-query)")
                return
            main = [sum(s.duration_ms for s in t.gpu if s.name.startswith("Main.")) for t in hist]
            med[textured] = statistics.median(main)
        print(
            f"GPU Main.Early + Main.Late at {size[0]}x{size[1]}, city 100k, depth prepass "
            f"{'on ' if prepass else 'off'}: textured {med[True]:.3f} ms, untextured "
            f"{med[False]:.3f} ms, {med[True] / max(med[False], 1e-9):.2f}x "
            "(goal <= 1.3x on H200)",
            flush=True,
        )


def _load_256(gpu, texels: int) -> None:
    """A generated glTF of 256 quads, each with its own PNG file."""
    import sys

    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
    from engine.scene.camera import Camera
    from engine.scene.gltf import load_gltf
    from engine.settings import FrameSettings
    from tools.make_material_scenes import Item, build_gltf, png, quad, write

    rng = np.random.default_rng(0)
    with tempfile.TemporaryDirectory() as tmp:
        items = [
            Item(
                quad(),
                {"pbrMetallicRoughness": {"baseColorTexture": {"index": i}}},
                translation=(i % 16 * 1.2, i // 16 * 1.2, 0.0),
            )
            for i in range(256)
        ]
        doc = build_gltf(items, [])
        doc["images"] = []
        for i in range(256):
            name = f"t{i}.png"
            img = rng.integers(0, 256, (texels, texels, 4), dtype=np.uint8)
            (Path(tmp) / name).write_bytes(png(img))
            doc["images"].append({"uri": name})
        doc["textures"] = [{"source": i} for i in range(256)]
        path = write(doc, Path(tmp) / "t256.gltf")
        t0 = time.perf_counter()
        scene = load_gltf(str(path))
        t1 = time.perf_counter()
        rig = _rig(gpu, scene, (320, 180), FrameSettings())
        cam = Camera(eye=np.array([9.0, 9.0, 20.0]), target=np.array([9.0, 9.0, 0.0]))
        frame, target, loop = rig
        loop.frame(target.view, 0.0, lambda ctx: frame.update(ctx, cam))
        gpu.queue.read_buffer(frame.counters)
        t2 = time.perf_counter()
    mib = frame.materials.texture_bytes / 2**20
    print(
        f"load 256 textures of {texels}x{texels} (PNG files): load_gltf {1e3 * (t1 - t0):.0f} ms "
        f"(decode on a thread pool), arrays + GPU mips + pipelines + first frame "
        f"{1e3 * (t2 - t1):.0f} ms; {mib:.0f} MiB of texture arrays",
        flush=True,
    )
