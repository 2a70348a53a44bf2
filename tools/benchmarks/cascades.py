"""Cascaded shadow maps benchmark (issue 29 items 4 and 6): printed figures, no pass/fail.

1. GPU ms of the shadow passes (``Shadow.Cull``, ``Shadow.C0`` .. ``Shadow.C3``) with four
   cascades against the single map (one cascade), both in one run, their frames interleaved
   round by round (a shared or throttling GPU weighs on both alike), at 1920x1080
   (``--quick``: 320x180), the city at 100k instances (``--quick``: 5k) flying through,
   frames back to back; also the Main passes (the receivers pay the cascade choice and, in
   the blend bands, a second PCF) and each cascade's casters from its counter block.
2. Shimmer (``engine.devtools.shimmer``): the fraction of a static picture's pixels that
   change per step when only the camera the cascades are fitted to moves by 0.37 of the
   finest cascade's texel, TAA off, texel-snapped against not, for 1 and 4 cascades, the
   city at 20k instances (``--quick``: 5k) at 640x360 (``--quick``: 320x180).

Goals: snapped shimmer 0; the unsnapped figure printed beside it.
"""

from __future__ import annotations

import statistics

SHADOW_PASSES = ("Shadow.Cull", "Shadow.C0", "Shadow.C1", "Shadow.C2", "Shadow.C3")


def _rig(gpu, scene, size, settings):
    from engine.frame import StandardFrame
    from engine.graph import RenderGraph
    from engine.loop import FrameLoop
    from engine.profiling import FrameProfiler
    from engine.surfaces import OffscreenTarget

    target = OffscreenTarget(gpu.device, size)
    graph = RenderGraph(gpu.device, output_format=target.format, size=size)
    frame = StandardFrame(gpu, graph, scene, settings)
    graph.profiler = FrameProfiler(gpu, gpu=True, cpu=False)
    return frame, target, FrameLoop(gpu, graph)


def _frames(rig, path, start: int, count: int) -> None:
    """``count`` frames back to back (no wait between them), the fly-through from frame
    ``start`` on (time = frame / 60)."""
    frame, target, loop = rig
    for i in range(start, start + count):
        loop.frame(target.view, i / 60, lambda ctx: frame.update(ctx, path.at(ctx.time)))


def run(gpu, args) -> None:
    quick = getattr(args, "quick", False)
    size = (320, 180) if quick else (1920, 1080)
    _passes(gpu, size, 5_000 if quick else 100_000, rounds=2 if quick else 6,
            per=4 if quick else 24)  # fmt: skip
    _shimmer(gpu, (320, 180) if quick else (640, 360), 5_000 if quick else 20_000,
             steps=4 if quick else 8)  # fmt: skip


def _passes(gpu, size, instances: int, *, rounds: int, per: int) -> None:
    from engine.scene.procedural import city
    from engine.settings import FrameSettings

    scene, path = city(instances, seed=0)
    rigs = {n: _rig(gpu, scene, size, FrameSettings(cascades=n)) for n in (1, 4)}
    for rig in rigs.values():
        _frames(rig, path, 0, 4)  # pipelines, bundles, culling history
        rig[2].drain()
        rig[2].telemetry.history.clear()
    t = 4
    for _ in range(rounds):
        for rig in rigs.values():
            _frames(rig, path, t, per)
        t += per
    med, mains, counts = {}, {}, {}
    for n, (_, _, loop) in rigs.items():
        loop.drain()
        hist = [r for r in loop.telemetry.history if r.gpu]
        if not hist:
            print("cascades: GPU timings n/a (no timestamp-query)")
            return
        per_pass: dict[str, list[float]] = {}
        for r in hist:
            for s in r.gpu:
                per_pass.setdefault(s.name, []).append(s.duration_ms)
        med[n] = {k: statistics.median(v) for k, v in per_pass.items()}
        mains[n] = statistics.median(
            sum(s.duration_ms for s in r.gpu if s.name.startswith("Main.")) for r in hist
        )
        latest = loop.telemetry.latest
        counts[n] = [latest.readbacks[f"cascade{c}"].casters for c in range(n)
                     if f"cascade{c}" in latest.readbacks]  # fmt: skip
        med[n]["frames"] = len(hist)
    w, h = size
    ss = FrameSettings().shadow_size
    print(
        f"shadow passes at {w}x{h}, city {instances:,} flying, shadow-size {ss} per cascade, "
        f"median of {med[1]['frames']} / {med[4]['frames']} frames back to back "
        f"({rounds} interleaved rounds):",
        flush=True,
    )
    print(f"  {'pass':<16} {'1 cascade':>10} {'4 cascades':>11}")
    for name in SHADOW_PASSES:
        one, four = med[1].get(name), med[4].get(name)
        fmt = lambda v: f"{v:8.3f} ms" if v is not None else f"{'-':>11}"  # noqa: E731
        print(f"  {name:<16} {fmt(one)} {fmt(four)}")
    total = {n: sum(med[n].get(p, 0.0) for p in SHADOW_PASSES) for n in (1, 4)}
    ratio = total[4] / total[1] if total[1] > 0 else float("nan")
    print(f"  {'shadow total':<16} {total[1]:8.3f} ms {total[4]:8.3f} ms   4 cascades: "
          f"{ratio:.2f}x the single map")  # fmt: skip
    print(f"  {'Main.Early+Late':<16} {mains[1]:8.3f} ms {mains[4]:8.3f} ms   (receivers: "
          "cascade choice, second PCF in the blend bands)")  # fmt: skip
    print(f"  casters drawn (counter blocks): 1 cascade {counts[1]}, 4 cascades {counts[4]}",
          flush=True)  # fmt: skip


def _shimmer(gpu, size, instances: int, *, steps: int) -> None:
    from engine.devtools.shimmer import measure_shimmer
    from engine.scene.procedural import city
    from engine.settings import FrameSettings

    scene, path = city(instances, seed=0)
    cam = path.at(3.0)
    print(
        f"shimmer: fraction of pixels changed per step of the fitted camera (0.37 of cascade "
        f"0's texel, {steps} steps; picture's camera fixed, TAA off), city {instances:,} at "
        f"{size[0]}x{size[1]}:",
        flush=True,
    )
    for n in (1, 4):
        got = {}
        for snap in (True, False):
            s = FrameSettings(cascades=n, shadow_snap=snap)
            got[snap] = measure_shimmer(gpu, scene, cam, s, size=size, steps=steps)
        a, b = got[True], got[False]
        px = size[0] * size[1]
        print(
            f"  {n} cascade{'s' if n > 1 else ' '}: snapped {a.mean:.5f} (worst step "
            f"{round(a.worst * px)} of {px:,} pixels; goal 0)  unsnapped {b.mean:.4f} (worst "
            f"{b.worst:.4f}); "
            f"step {a.step * 100:.2f} cm, texel {a.texel * 100:.2f} cm; still frames "
            f"{max(a.still, b.still):.4f}",
            flush=True,
        )
