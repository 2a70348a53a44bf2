"""Scene figures: city generation, per-frame transform updates, glTF loading (CPU only)."""

from __future__ import annotations

import time

import numpy as np

from engine.resources import asset_path
from engine.scene.gltf import load_gltf, repeat_grid
from engine.scene.procedural import city

ASSET = asset_path("meshes/house.glb")


def _ms(fn, repeat: int = 1) -> tuple[float, object]:
    best, out = float("inf"), None
    for _ in range(repeat):
        t0 = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - t0)
    return best * 1e3, out


def run(gpu, args) -> None:
    """Print best-of timings in ms; ``--quick`` stops at 100k instances."""
    sizes = (10_000, 100_000) if args.quick else (10_000, 100_000, 1_000_000)
    scene = None
    for n in sizes:
        ms, (scene, _) = _ms(lambda n=n: city(n), repeat=1 if n >= 1_000_000 else 3)
        print(f"city({n:>9,}): {ms:9.1f} ms  ({ms * 1e6 / n:6.0f} ns/instance)")
    rng = np.random.default_rng(0)
    for k in (100, 10_000):
        rows = rng.choice(scene.count, k, replace=False)
        mats = scene.transforms[rows].copy()
        mats[:, 1, 3] += 1.0
        scene.take_dirty()

        def update(rows=rows, mats=mats):
            scene.set_transforms(rows, mats)
            return scene.take_dirty(max_gap=16)

        ms, ranges = _ms(update, repeat=5)
        print(
            f"set_transforms+take_dirty: {k:>6,} of {scene.count:,} rows: {ms:7.2f} ms "
            f"-> {len(ranges)} ranges"
        )
    ms, house = _ms(lambda: load_gltf(str(ASSET)), repeat=5)
    print(f"load_gltf(house.glb, {house.count} instances): {ms:.2f} ms")
    copies = 1_000_000 // house.count
    ms, grid = _ms(lambda: repeat_grid(house, copies))
    print(f"repeat_grid(house, {copies:,}) -> {grid.count:,} instances: {ms:.1f} ms")
