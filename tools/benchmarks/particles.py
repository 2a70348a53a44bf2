"""s06's particles (issue 30): GPU time of the particle passes per particle count, with the
two sorts interleaved.

For each pool size, s06's frame (the city, the fountain prewarmed 3 s so the pool runs near
its steady state) at 1920x1080 (``--quick``: 320x180 and two small pools) records the
variants in turn, ``BLOCK`` frames each, for ``ROUNDS`` rounds, back to back, as
``--variant-cycle`` does; the records go through ``lantern compare``'s own path (a
``--telemetry`` file, ``variant_runs`` with its settle and warm-up rules, ``compare_runs``).
Printed per count and variant: the median GPU ms of ``Particles.Sort`` with its quartiles and
ns a sorted element (the sort runs over every slot of the pool: bitonic over the next power
of two, radix over the next multiple of 1,024), against bitonic the difference with its 95%
interval and the Mann-Whitney p; and ``Particles.Simulate`` and ``Particles`` (the draw),
which every variant shares, as control rows, and ``Particles.Simulate+Sort``, the two passes'
sum frame by frame: the profiler's timestamp at a pass boundary ends one pass and starts the
next, and where a GPU writes it late (lavapipe, before the bitonic sort's dispatches) part of
the sort is billed to ``Particles.Simulate``; the sum holds it either way. The counter
block's alive and drawn counts of the last frame say how many particles the passes had.
"""

from __future__ import annotations

import statistics
import tempfile
from pathlib import Path

from engine.gpu_sort import radix_size, sort_size
from samples.s06_particles import CAMERA, CITY, VARIANTS, add_particles

from .variants import SETTLE, gpu_row, record_variant_cycle, spread

SIZE, QUICK_SIZE = (1920, 1080), (320, 180)
COUNTS = (16_384, 65_536, 262_144, 1_048_576)
QUICK_COUNTS = (4_096, 16_384)
BLOCK, ROUNDS = 20, 8  # frames of a variant in a row; rounds of both
QUICK_BLOCK, QUICK_ROUNDS = 10, 4  # 4: lantern compare needs 20 frames a variant
PREWARM_S = 3.0
SUM, SUM_ROW = ("Particles.Simulate", "Particles.Sort"), "Particles.Simulate+Sort"
ROWS = ("Particles.Sort", SUM_ROW, "Particles.Simulate", "Particles")


def run(gpu, args) -> None:
    quick = getattr(args, "quick", False)
    size = QUICK_SIZE if quick else SIZE
    block, rounds = (QUICK_BLOCK, QUICK_ROUNDS) if quick else (BLOCK, ROUNDS)
    print(f"s06 particles at {size[0]}x{size[1]}: {rounds} rounds of {block} frames of each "
          f"sort in turn, back to back; {SETTLE} after a switch and the warm-up "
          "left out")  # fmt: skip
    for count in QUICK_COUNTS if quick else COUNTS:
        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / "particles.jsonl"
            last = _record(gpu, size, count, block, rounds, path, shadow=512 if quick else 2048)
            _report(path, count, last)


def _record(gpu, size, count: int, block: int, rounds: int, path: Path, shadow: int):
    """``--variant-cycle block`` for ``rounds`` rounds into the telemetry file ``path``;
    returns the last counts of the block ``particles`` read back (or None)."""
    from engine.frame import StandardFrame
    from engine.graph import RenderGraph
    from engine.loop import FrameLoop
    from engine.profiling import FrameProfiler
    from engine.scene.procedural import city
    from engine.settings import FrameSettings
    from engine.surfaces import OffscreenTarget

    scene, _ = city(CITY, seed=0)
    target = OffscreenTarget(gpu.device, size)
    graph = RenderGraph(gpu.device, output_format=target.format, size=size)
    frame = StandardFrame(gpu, graph, scene, FrameSettings(shadow_size=shadow))
    particles = add_particles(frame, count)
    particles.simulate.prewarm(PREWARM_S)
    graph.profiler = FrameProfiler(gpu, gpu=True, cpu=False)
    loop = FrameLoop(gpu, graph)
    header = {"sample": "s06", "size": list(size), "particles": count}

    def set_variant(name: str) -> None:
        particles.sort.variant = name

    def draw(t: float) -> None:
        loop.frame(target.view, t, lambda ctx: frame.update(ctx, CAMERA))

    record_variant_cycle(gpu, loop, frame.counters, path, header, VARIANTS, set_variant, draw,
                         block, rounds)  # fmt: skip
    return particles.system.readback.latest


def _report(path: Path, count: int, last) -> None:
    from engine.devtools.compare import compare_runs
    from engine.telemetry.compare import CompareError, load_run, variant_runs

    sorted_n = {"bitonic": sort_size(count), "radix": radix_size(count)}
    seen = f"; last frame: {last.alive:,} alive, {last.drawn:,} drawn" if last else ""
    print(f"{count:,} particles{seen}")
    print(f"  {'pass':<23} {'variant':<8} {'elements':>9} {'median ms':>10}  {'[quartiles]':<18} "
          f"{'n':>4} {'ns/elem':>8}  {'vs bitonic':>10}  {'95% CI of diff (ms)':<21} "
          f"{'p (MWU)':>8}")  # fmt: skip
    try:
        run = load_run(path)
        if all(("gpu", name) in run.series for name in SUM):  # NaN where either is missing
            run.series["gpu", SUM_ROW] = sum(run.series["gpu", name] for name in SUM)
        parts = variant_runs(run, SETTLE)
        c = compare_runs(parts[0], parts[1], warmup=0)
    except CompareError as e:
        print(f"  n/a: {e}")
        return
    for name in ROWS:
        r = gpu_row(c, name)
        if r is None:
            print(f"  {name}: no GPU readings (no timestamp-query?)")
            continue
        for variant, values in zip(VARIANTS, (r.a, r.b), strict=True):
            n = sorted_n[variant] if name == "Particles.Sort" else count
            ns = statistics.median(values) * 1e6 / n
            line = f"  {name:<23} {variant:<8} {n:9,d} {spread(values)} {ns:8.3f}"
            if variant != VARIANTS[0]:
                d = r.diff
                ci = f"[{d.lo_ms:+.3f}, {d.hi_ms:+.3f}]"
                line += f"  {d.pct:+9.1f}%  {ci:<21} {d.p_value:8.2g}"
            print(line)
