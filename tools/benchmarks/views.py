"""Debug views, resource viewer and texture table benchmark (issue 16): printed figures.

1. GPU ms at 1920x1080 of the ``View`` pass for each view, drawn in ``Post``'s place, beside
   ``Post`` in the normal frame and a bare fullscreen alpha-blended triangle in the same
   frames (the raster baseline: 0.26 ms on the H200); for ``ids`` / ``lod`` also the
   ``View.Geometry`` re-draw beside the Main passes it re-draws.
2. GPU ms of the viewer's reduction (``Inspect``: three dispatches) of the 1080p HDR target.
3. CPU ms of one texture-table scan (``memory``) of the standard frame at 100k instances.

Goals (H200): a view <= Post + 0.1 ms; Inspect <= 0.05 ms; the scan is on demand (once a
second while the HUD's memory mode shows), so a few ms is acceptable.
"""

from __future__ import annotations

import statistics
import time

from benchmarks.post import SIZE, _frames, _setup

VIEWS = ("depth", "hiz", "shadow", "luminance", "normals", "nan", "ids", "lod", "overdraw")
# (cost is exempt from the goals: it needs --gpu-profile draws; culled needs a frozen camera)


def run(gpu, args) -> None:
    quick = getattr(args, "quick", False)
    frames = 8 if quick else 40
    _gpu_costs(gpu, frames)
    _scan(gpu, 10_000 if quick else 100_000)


def _medians(loop, skip: int = 3) -> dict[str, float]:
    loop.drain()
    hist = [t for t in loop.telemetry.history if t.gpu][skip:]
    per: dict[str, list[float]] = {}
    for t in hist:
        for s in t.gpu:
            per.setdefault(s.name, []).append(s.duration_ms)
    loop.telemetry.history.clear()
    return {k: statistics.median(v) for k, v in per.items()}


def _gpu_costs(gpu, frames: int) -> None:
    from engine.passes.resources import HDR
    from engine.tools.inspector.passes import InspectPass, StatsReadback, TextureReduction
    from engine.tools.views.passes import ViewGeometryPass, ViewPass
    from engine.tools.views.views import BY_NAME

    frame, graph, target, path, loop = _setup(gpu, 10_000, profile=True, blend=True)
    geom = graph.add(ViewGeometryPass(frame.res))
    view = graph.add(ViewPass(frame.res))
    post = graph.pass_named("Post")
    run = lambda: _frames(gpu, frame, graph, target, path, loop, frames, sync=False)  # noqa: E731
    run()
    normal = _medians(loop)
    if not normal:
        print("GPU timings: n/a (no timestamp-query)")
        return
    blend = normal.get("Blend", 0.0)
    print(f"GPU at {SIZE[0]}x{SIZE[1]}, median of back-to-back frames:")
    print(f"  Blend (baseline)   {blend:8.3f} ms  bare fullscreen alpha-blended triangle")
    print(f"  Post (normal)      {normal['Post']:8.3f} ms")
    post.enabled, view.enabled = False, True
    for name in VIEWS:
        view.name_shown = name
        geom.enabled = BY_NAME[name].geometry is not None
        if geom.enabled:
            geom.ensure_targets()
            geom.mode = name if name == "overdraw" else "ids"
        graph.invalidate()
        run()
        med = _medians(loop)
        extra = med.get("View", 0.0) - normal["Post"]
        line = f"  View {name:<13} {med.get('View', 0.0):8.3f} ms  {extra:+.3f} ms vs Post"
        if geom.enabled:
            main = normal.get("Main.Early", 0.0) + normal.get("Main.Late", 0.0)
            line += (f"; View.Geometry {med.get('View.Geometry', 0.0):.3f} ms vs Main.Early + "
                     f"Main.Late {main:.3f} ms (goal <= 1x)")  # fmt: skip
        else:
            line += " (goal <= +0.1 on H200)"
        print(line)
    post.enabled, view.enabled, geom.enabled = True, False, False
    from engine.tools.views.passes import ViewWirePass, WireArgsPass

    wargs = graph.add(WireArgsPass(frame.res))
    wire = graph.add(ViewWirePass(frame.res, wargs.args))
    wargs.enabled = wire.enabled = True
    graph.invalidate()
    run()
    med = _medians(loop)
    main = normal.get("Main.Early", 0.0) + normal.get("Main.Late", 0.0)
    both = med.get("View.WireArgs", 0.0) + med.get("View.Wire", 0.0)
    print(f"  wireframe          {both:8.3f} ms  View.WireArgs + View.Wire (over Post) vs "
          f"Main.Early + Main.Late {main:.3f} ms (goal <= 1x)")  # fmt: skip
    wargs.enabled = wire.enabled = False
    red = TextureReduction(gpu.device)
    tex = graph.texture(HDR)
    v = tex.create_view()
    graph.add(InspectPass(red, lambda: (v, (tex.width, tex.height), 0, None), (HDR,)))
    graph.add(StatsReadback(red))
    graph.invalidate()
    run()
    med = _medians(loop)
    print(f"  Inspect frame.hdr  {med.get('Inspect', 0.0):8.3f} ms  min/max/mean/NaN/Inf + "
          f"histogram, 3 dispatches (goal <= 0.05 on H200)")  # fmt: skip


def _scan(gpu, n: int) -> None:
    from engine.tools.memory.tool import scan, totals

    frame, graph, target, path, loop = _setup(gpu, n, profile=False)
    _frames(gpu, frame, graph, target, path, loop, 2, sync=True)
    ts = []
    for _ in range(20):
        t0 = time.perf_counter()
        rows = scan(graph)
        ts.append((time.perf_counter() - t0) * 1e3)
    t = totals(rows)["total"]
    print(f"texture table scan, N={n:,}: {statistics.median(ts):.3f} ms CPU (median of 20), "
          f"{len(rows)} objects, {t / 2**20:.1f} MiB")  # fmt: skip
