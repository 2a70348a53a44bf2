"""s04's SSAO variants (issue 26): quality against the brute-force reference and GPU time.

s04's frame (the city down its street, ``SSAO`` and ``SSAO.Apply`` before ``Ambient``) at
1920x1080 (``--quick``: 320x180) records the variants in turn, ``BLOCK`` frames each, for
``ROUNDS`` rounds, back to back, as ``--variant-cycle`` does; the records go through
``lantern compare``'s own path (a ``--telemetry`` file, ``variant_runs``, ``compare_runs``).
Printed per variant: the median GPU ms of ``SSAO`` (all its dispatches: AO, denoise,
upsample) with its quartiles, and against gtao the difference of medians with its 95%
bootstrap interval and the Mann-Whitney p; ``SSAO.Apply``, the same in every variant, is the
control row. Then each variant's mean absolute error (AO in 0..1) against ``SSAO.Reference``
(cosine-weighted visibility within R, thickness T, 256 directions x 32 steps) on the last
frame's depth and normals, over the pixels with geometry and over those the reference finds
below 0.9 (where the AO shows). R = 1 m, T = 0.5 m, 16 samples, denoise on. The figures
also go to ``ssao.json`` in ``$LANTERN_BENCH_OUT`` (default ``bench-out/``): the docs' cost
against error plot (``tools/docs_plots.py ssao``) reads it from ``docs/data/``.
"""

from __future__ import annotations

import datetime
import json
import os
import statistics
import tempfile
from pathlib import Path

from samples.s04_ssao import CITY, HEADER, OCCLUDED, VARIANTS, add_ssao, ssao_params

from .variants import SETTLE, gpu_row, record_variant_cycle, spread

SIZE, QUICK_SIZE = (1920, 1080), (320, 180)
BLOCK, ROUNDS = 20, 8  # frames of a variant in a row; rounds of all variants
QUICK_BLOCK, QUICK_ROUNDS = 10, 5
KNOBS = (1.0, 0.5, 1.0, 16, True)  # radius, thickness, intensity, samples, denoise


def run(gpu, args) -> None:
    quick = getattr(args, "quick", False)
    size = QUICK_SIZE if quick else SIZE
    block, rounds = (QUICK_BLOCK, QUICK_ROUNDS) if quick else (BLOCK, ROUNDS)
    print(f"s04 SSAO at {size[0]}x{size[1]}, R {KNOBS[0]} m, T {KNOBS[1]} m, {KNOBS[3]} "
          f"samples: {rounds} rounds of {block} frames of each variant in turn, back to back; "
          f"{SETTLE} after a switch and the warm-up left out")  # fmt: skip
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "ssao.jsonl"
        errors = _record(gpu, size, block, rounds, path, shadow=512 if quick else 2048)
        times = _report(path)
    print(f"error against the reference on the last frame (MAE occl.: where it is < {OCCLUDED})")
    print(HEADER.rsplit("  ", 1)[0])
    for v, (mae, occl, n, n_occl) in errors.items():
        print(f"  {v:<12} {mae:7.4f} {occl:9.4f} {f'{n}/{n_occl}':>15}")
    _write_json(gpu, size, times, errors)


def _write_json(gpu, size, times: dict, errors: dict) -> None:
    """``ssao.json``: per variant the SSAO pass's GPU ms (median, quartiles) and the errors."""
    out = Path(os.environ.get("LANTERN_BENCH_OUT", "bench-out"))
    out.mkdir(parents=True, exist_ok=True)
    rows = [{"variant": v, "gpu_ms": times.get(v), "mae": mae, "mae_occluded": occl}
            for v, (mae, occl, _, _) in errors.items()]  # fmt: skip
    date = datetime.date.today().isoformat()
    doc = {"adapter": gpu.summary, "date": date, "size": list(size), "rows": rows}
    (out / "ssao.json").write_text(json.dumps(doc, indent=1), encoding="utf-8")
    print(f"wrote {out / 'ssao.json'}")


def _record(gpu, size, block: int, rounds: int, path: Path, shadow: int) -> dict:
    """``--variant-cycle block`` for ``rounds`` rounds into the telemetry file ``path``;
    returns ``Ssao.errors()`` on the last frame."""
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
    ssao = add_ssao(frame, lambda: ssao_params(*KNOBS))
    graph.profiler = FrameProfiler(gpu, gpu=True, cpu=False)
    loop = FrameLoop(gpu, graph)

    def draw(t: float) -> None:
        loop.frame(target.view, t, lambda ctx: frame.update(ctx, camera_path.at(ctx.time)))

    record_variant_cycle(gpu, loop, frame.counters, path, {"sample": "s04", "size": list(size)},
                         list(VARIANTS), ssao.set_variant, draw, block, rounds)  # fmt: skip
    return ssao.errors()


def _report(path: Path) -> dict[str, dict]:
    """Print the comparison table; returns the SSAO pass's ms per variant (median, q1, q3)."""
    from engine.devtools.compare import compare_runs
    from engine.telemetry.compare import CompareError, load_run, variant_runs

    print(f"  {'pass':<11} {'variant':<11} {'median ms':>10}  {'[quartiles]':<18} {'n':>4}  "
          f"{'vs gtao':>8}  {'95% CI of diff (ms)':<21} {'p (MWU)':>8}")  # fmt: skip
    try:
        parts = variant_runs(load_run(path), SETTLE)
        comparisons = [compare_runs(parts[0], p, warmup=0) for p in parts[1:]]
    except CompareError as e:
        print(f"  n/a: {e}")
        return {}
    times = {}
    for name in ("SSAO", "SSAO.Apply"):  # SSAO.Apply: the same work in every variant (control)
        if gpu_row(comparisons[0], name) is None:
            print(f"  {name}: no GPU readings (no timestamp-query?)")
            continue
        print(f"  {name:<11} {'gtao':<11} {spread(gpu_row(comparisons[0], name).a)}")
        if name == "SSAO":
            times["gtao"] = _stats(gpu_row(comparisons[0], name).a)
        for c, variant in zip(comparisons, list(VARIANTS)[1:], strict=True):
            r = gpu_row(c, name)
            if name == "SSAO":
                times[variant] = _stats(r.b)
            d, ci = r.diff, f"[{r.diff.lo_ms:+.3f}, {r.diff.hi_ms:+.3f}]"
            print(f"  {name:<11} {variant:<11} {spread(r.b)}  {d.pct:+7.1f}%  {ci:<21} "
                  f"{d.p_value:8.2g}")  # fmt: skip
    return times


def _stats(values) -> dict:
    q = statistics.quantiles(values, n=4)
    return {"median": statistics.median(values), "q1": q[0], "q3": q[2], "n": len(values)}
