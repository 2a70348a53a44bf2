"""s08's blur variants (issue 30): GPU time of the pass ``Blur`` per variant, interleaved.

For each kernel radius, s08's frame (the city, ``Blur`` after ``Sky``, ``Blur.Copy``) at
1920x1080 (``--quick``: 320x180, one radius) records the variants in turn, ``BLOCK``
frames each, for ``ROUNDS`` rounds, back to back, as ``--variant-cycle`` does; the records
go through ``lantern compare``'s own path (a ``--telemetry`` file, ``variant_runs`` with
its settle and warm-up rules, ``compare_runs``). Printed per variant: the median GPU ms of
``Blur`` with its quartiles, and against naive the difference of medians with its 95%
circular-block bootstrap interval and the Mann-Whitney p; ``Blur.Copy``, which every
variant shares, is the control row (its interval should hold 0). Loads a pixel makes
each figure comparable across radii: naive (2r + 1)^2, separable 2 (2r + 1), tiled about
2 (1 + 2r / 128) texture loads plus 2 (2r + 1) workgroup-memory reads.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

from samples.s08_blur import CITY, TILE, VARIANTS, add_blur

from .variants import SETTLE, gpu_row, record_variant_cycle, spread

SIZE, QUICK_SIZE = (1920, 1080), (320, 180)
RADII, QUICK_RADII = (3, 6, 12, 24), (6,)
BLOCK, ROUNDS = 20, 8  # frames of a variant in a row; rounds of all variants
QUICK_BLOCK, QUICK_ROUNDS = 10, 4


def run(gpu, args) -> None:
    quick = getattr(args, "quick", False)
    size = QUICK_SIZE if quick else SIZE
    block, rounds = (QUICK_BLOCK, QUICK_ROUNDS) if quick else (BLOCK, ROUNDS)
    print(f"s08 Blur at {size[0]}x{size[1]}: {rounds} rounds of {block} frames of each variant "
          f"in turn, back to back; {SETTLE} after a switch and the warm-up left out")  # fmt: skip
    for radius in QUICK_RADII if quick else RADII:
        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / "blur.jsonl"
            _record(gpu, size, radius, block, rounds, path, shadow=512 if quick else 2048)
            _report(path, radius)


def _record(gpu, size, radius: int, block: int, rounds: int, path: Path, shadow: int) -> None:
    """``--variant-cycle block`` for ``rounds`` rounds into the telemetry file ``path``."""
    from engine.frame import StandardFrame
    from engine.graph import RenderGraph
    from engine.loop import FrameLoop
    from engine.profiling import FrameProfiler
    from engine.scene.procedural import city
    from engine.settings import FrameSettings
    from engine.surfaces import OffscreenTarget

    scene, camera_path = city(CITY, seed=0)
    target = OffscreenTarget(gpu.device, size)
    graph = RenderGraph(gpu.device, output_format=target.format, size=size)
    frame = StandardFrame(gpu, graph, scene, FrameSettings(shadow_size=shadow))
    blur = add_blur(frame, lambda: radius)
    graph.profiler = FrameProfiler(gpu, gpu=True, cpu=False)
    loop = FrameLoop(gpu, graph)

    def set_variant(name: str) -> None:
        blur.variant = name

    def draw(t: float) -> None:
        loop.frame(target.view, t, lambda ctx: frame.update(ctx, camera_path.at(ctx.time)))

    record_variant_cycle(gpu, loop, frame.counters, path, {"sample": "s08", "size": list(size)},
                         list(VARIANTS), set_variant, draw, block, rounds)  # fmt: skip


def _report(path: Path, radius: int) -> None:
    from engine.devtools.compare import compare_runs
    from engine.telemetry.compare import CompareError, load_run, variant_runs

    taps = 2 * radius + 1
    loads = {"naive": taps**2, "separable": 2 * taps, "tiled": 2 * (1 + 2 * radius / TILE)}
    print(f"radius {radius} ({taps} taps a side)")
    print(f"  {'pass':<10} {'variant':<10} {'loads/px':>8} {'median ms':>10}  {'[quartiles]':<18} "
          f"{'n':>4}  {'vs naive':>8}  {'95% CI of diff (ms)':<21} {'p (MWU)':>8}")  # fmt: skip
    try:
        parts = variant_runs(load_run(path), SETTLE)
        comparisons = [compare_runs(parts[0], p, warmup=0) for p in parts[1:]]
    except CompareError as e:
        print(f"  n/a: {e}")
        return
    for name in ("Blur", "Blur.Copy"):  # Blur.Copy: the same work in every variant (control)
        if gpu_row(comparisons[0], name) is None:
            print(f"  {name}: no GPU readings (no timestamp-query?)")
            continue
        load = loads if name == "Blur" else dict.fromkeys(VARIANTS, 1)
        first = gpu_row(comparisons[0], name).a
        print(f"  {name:<10} {'naive':<10} {load['naive']:8.1f} {spread(first)}")
        for c, variant in zip(comparisons, list(VARIANTS)[1:], strict=True):
            r = gpu_row(c, name)
            d, ci = r.diff, f"[{r.diff.lo_ms:+.3f}, {r.diff.hi_ms:+.3f}]"
            print(f"  {name:<10} {variant:<10} {load[variant]:8.1f} {spread(r.b)}  "
                  f"{d.pct:+7.1f}%  {ci:<21} {d.p_value:8.2g}")  # fmt: skip
