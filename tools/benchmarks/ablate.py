"""Ablation truthfulness: known-answer shaders (``ablate_truth.wgsl``) measured by
``engine.devtools.ablation.ablate``; prints the measured ratios next to the true ones (4:1 pair,
compute and fragment; 1:2:4:8 ladder in one loop body), the instrumentation overhead, and where
a heavy ``let`` used only by a later store is billed with and without the keep-alive checksum,
and a 1:3:9 ladder's absolute figures: scaled (what the table shows), raw, and the
uninstrumented shader's time."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from engine.devtools.ablation import ablate
from engine.resources import shader_path

SHADER = Path(__file__).resolve().parent / "ablate_truth.wgsl"


def units(n: int) -> list[str]:
    """``--set`` values giving one unit of work ``n`` multiply-adds (``p.n1`` .. ``p.n8``)."""
    return [f"p.n{k}={k * n}" for k in (1, 2, 4, 8)]


def _costs(r) -> list[float]:
    """Costs of the pair / ladder statements in source order (ns)."""
    rows = [row for row in r.rows if "chain(" in row.text]
    return [r.cost_ns(row) for row in rows]


def _line(name: str, r, ratios: list[float], truth: list[float]) -> None:
    got = " : ".join(f"{x:.3f}" for x in ratios)
    want = " : ".join(f"{x:g}" for x in truth)
    err = max(abs(g / t - 1.0) for g, t in zip(ratios, truth, strict=True))
    over = 100 * r.overhead_ns / r.original_ns if r.original_ns else float("nan")
    print(
        f"{name:<34} measured {got}  (true {want}; worst {100 * err:.1f}% off)  "
        f"body {r.total_ns / 1e6:.4f} ms, original {r.original_ns / 1e6:.4f} ms, "
        f"instrumentation overhead {over:+.1f}%",
        flush=True,
    )


def run(gpu, args) -> None:
    """``--quick``: sizes for a software GPU; otherwise sized for a large discrete GPU."""
    if args.quick:
        n, groups, size, repeats = 256, 8, (64, 64), 9
    else:  # ~0.1-1 ms per variant on an H200: far above the timestamp noise
        n, groups, size, repeats = 4096, 8192, (1920, 1080), 21
    elements = max(groups * 64, size[0] * size[1])
    common = dict(device=gpu.device, repeats=repeats, elements=elements, adapter=gpu.summary)
    # Two sizings: many workgroups (launching them shows in the cut-0 baseline) and about one
    # wave (512 groups of 64: 4 per SM on a 132-SM H200), long enough to dwarf launch costs.
    for label, g, unit in (
        ("many groups", groups, n),
        ("one wave", 64 if args.quick else 512, 4 * n),
    ):
        cs = ablate(SHADER, "cs_pair", groups=(g, 1, 1), sets=units(unit), **common)
        heavy, light = _costs(cs)
        _line(f"cs_pair ({label}, {g} groups)", cs, [heavy / light], [4.0])
        sets = [*units(unit // 2), "p.reps=1"]
        lad = ablate(SHADER, "cs_ladder", groups=(g, 1, 1), sets=sets, **common)
        c = _costs(lad)
        _line(f"cs_ladder ({label}, {g} groups)", lad, [x / c[0] for x in c[1:]], [2.0, 4.0, 8.0])
    # Absolute figures: a 1:3:9 ladder of one heavy statement; the table's (scaled) body next
    # to the raw instrumented one and to the original shader's own time.
    for k in (1, 3, 9):
        r = ablate(SHADER, "cs_dead", groups=(groups, 1, 1), sets=units(k * n // 8), **common)
        raw = dataclasses.replace(r, raw=True)
        print(
            f"cs_dead x{k}: body scaled {r.total_ns / 1e6:.4f} ms (x{r.scale:.3f}), raw "
            f"{raw.total_ns / 1e6:.4f} ms, uninstrumented shader {r.original_ns / 1e6:.4f} ms",
            flush=True,
        )
    for keep in (True, False):
        dead = ablate(SHADER, "cs_dead", groups=(groups, 1, 1), sets=units(n // 4),
                      keep_alive=keep, **common)  # fmt: skip
        let, store = (dead.cost_ns(row) for row in dead.rows)
        print(
            f"cs_dead    {'keep-alive' if keep else 'bare returns':<12}: heavy let "
            f"{let / 1e6:.4f} ms, cheap store {store / 1e6:.4f} ms (truth: the let costs all; "
            "a bill on the store means the compiler deleted work before the cut)",
            flush=True,
        )
    # A real shader: s02's Work pass, with and without the keep-alive checksum.
    work = shader_path("s02_work.wgsl")
    grid = 64 if args.quick else 1024
    for keep in (True, False):
        r = ablate(work, "cs_work", groups=(grid // 8, grid // 8, 1), keep_alive=keep,
                   sets=["params.iterations=256", f"params.grid={grid}", "params.time=1.0"],
                   device=gpu.device, repeats=repeats, adapter=gpu.summary,
                   elements=grid * grid)  # fmt: skip
        top = ", ".join(f"L{row.line} {c / 1e6:.4f} ms" for row, c in r.ranked()[:4])
        print(
            f"s02 cs_work {'keep-alive' if keep else 'bare returns':<12}: overhead "
            f"{100 * r.overhead_ns / r.original_ns:+.1f}% of {r.original_ns / 1e6:.4f} ms; "
            f"top rows {top}",
            flush=True,
        )
    # Last: on lavapipe, compute timestamps on a device that has rendered read short.
    fs = ablate(SHADER, "fs_pair", size=size, sets=[*units(n // 4), f"p.width={size[0]}"], **common)
    heavy, light = _costs(fs)
    _line("fs_pair", fs, [heavy / light], [4.0])
