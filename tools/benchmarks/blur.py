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

import statistics
import tempfile
from pathlib import Path

from samples.s08_blur import CITY, TILE, VARIANTS, add_blur

SIZE, QUICK_SIZE = (1920, 1080), (320, 180)
RADII, QUICK_RADII = (3, 6, 12, 24), (6,)
BLOCK, ROUNDS = 20, 8  # frames of a variant in a row; rounds of all variants
QUICK_BLOCK, QUICK_ROUNDS = 10, 4
SETTLE = 3  # records after each switch left out (lantern compare's default)


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
    from engine.tools.export.jsonl import JsonLinesWriter

    scene, camera_path = city(CITY, seed=0)
    target = OffscreenTarget(gpu.device, size)
    graph = RenderGraph(gpu.device, output_format=target.format, size=size)
    frame = StandardFrame(gpu, graph, scene, FrameSettings(shadow_size=shadow))
    blur = add_blur(frame, lambda: radius)
    graph.profiler = FrameProfiler(gpu, gpu=True, cpu=False)
    loop = FrameLoop(gpu, graph)
    writer = JsonLinesWriter(str(path), {"sample": "s08", "size": list(size)})
    loop.telemetry.subscribe(writer)
    timer, skipped, waits = graph.profiler.gpu, 0, 0
    names = list(VARIANTS)
    for i in range(block * len(names) * rounds):
        if i % block == 0 and timer is not None and timer.skipped_frames > skipped:
            # a GPU slower than the recording (a software one) left frames untimed: wait for
            # it at the switch, whose first frames are not compared (never on a fast GPU,
            # whose clocks drop when it idles)
            gpu.queue.read_buffer(frame.counters)
            skipped, waits = timer.skipped_frames, waits + 1
        blur.variant = loop.variant = names[(i // block) % len(names)]
        loop.frame(target.view, i / 60, lambda ctx: frame.update(ctx, camera_path.at(ctx.time)))
    loop.drain()
    writer.close()
    if waits:
        print(
            f"  (the GPU fell behind: waited for it at {waits} of {len(names) * rounds} switches)"
        )


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
        if _row(comparisons[0], name) is None:
            print(f"  {name}: no GPU readings (no timestamp-query?)")
            continue
        load = loads if name == "Blur" else dict.fromkeys(VARIANTS, 1)
        first = _row(comparisons[0], name).a
        print(f"  {name:<10} {'naive':<10} {load['naive']:8.1f} {_spread(first)}")
        for c, variant in zip(comparisons, list(VARIANTS)[1:], strict=True):
            r = _row(c, name)
            d, ci = r.diff, f"[{r.diff.lo_ms:+.3f}, {r.diff.hi_ms:+.3f}]"
            print(f"  {name:<10} {variant:<10} {load[variant]:8.1f} {_spread(r.b)}  "
                  f"{d.pct:+7.1f}%  {ci:<21} {d.p_value:8.2g}")  # fmt: skip


def _row(comparison, name: str):
    return next((r for r in comparison.rows if (r.clock, r.name) == ("gpu", name)), None)


def _spread(values) -> str:
    """``median  [q1..q3]  n`` of ms readings."""
    q = statistics.quantiles(values, n=4)
    return f"{statistics.median(values):10.3f}  {f'[{q[0]:.3f}..{q[2]:.3f}]':<18} {len(values):4d}"
