"""The ranked text table of an ``AblationResult`` (what ``tools/ablate.py`` prints)."""

from __future__ import annotations


def format_table(r) -> str:
    """Rank, file:line, ms, % of the body total and statement text per row (loop rows are
    marked with the loop they belong to), then the total and the instrumentation overhead."""
    total = r.total_ns
    lines = [
        f"Ablation of {r.entry} ({r.stage}) in {r.path} on {r.adapter}: {r.repeats} timed "
        f"pass(es) per cut x {r.inner} {'dispatch' if r.stage == 'compute' else 'draw'}(es), "
        f"median",
        _units(r),
        f"{'rank':>4}  {'line':<24} {'ms':>10} {'% total':>8}  statement",
    ]
    for k, (row, cost) in enumerate(r.ranked(), 1):
        text = "  " * row.depth + row.text
        if row.loop_line is not None:
            text += f"   [1 iteration of L{row.loop_line}]"
        where = r.where(row)
        if cost is None:
            lines.append(f"{'-':>4}  {where:<24} {'n/a':>10} {'':>8}  {text}   (not bracketed)")
        elif cost < 0:
            lines.append(
                f"{k:>4}  {where:<24} {cost / 1e6:>10.4f} {'':>8}  {text}   (too small to measure)"
            )
        else:
            pct = f"{100 * cost / total:.1f}%" if total > 0 else "n/a"
            if r.within_noise(row):
                text += f"   (within noise: +-{r.noise_ns(row) / 1e6:.4f} ms)"
            lines.append(f"{k:>4}  {where:<24} {cost / 1e6:>10.4f} {pct:>8}  {text}")
    over = r.overhead_ns
    rel = f" ({100 * over / r.original_ns:+.1f}%)" if r.original_ns > 0 else ""
    lines += [
        f"total (body: no cut minus cut before the first statement"
        f"{'' if r.raw else ', scaled'}): {total / 1e6:.4f} ms",
        f"whole entry point: original {r.original_ns / 1e6:.4f} ms, instrumented "
        f"{r.full_ns / 1e6:.4f} ms, instrumentation overhead {over / 1e6:+.4f} ms{rel}",
    ]
    if r.keeps_alive:
        lines.append(
            "each cut stores a checksum of the live locals (so the compiler keeps the work "
            "before it); --no-keep-alive for plain returns"
        )
    if r.uniform_only:
        lines.append(
            f"guards only in uniform control flow (the entry point {r.uniform_only}); "
            "'not bracketed' rows are inside their parent's cost"
        )
    return "\n".join(lines)


def _units(r) -> str:
    """Which figures the ms column holds (scaled to the original, or raw)."""
    if r.raw or r.scale == 1.0:
        return "ms: instrumented readings (raw: guards and checksums included)"
    return (
        f"ms: instrumented readings x {r.scale:.3f} (original {r.original_ns / 1e6:.4f} ms / "
        f"instrumented {r.full_ns / 1e6:.4f} ms), so they add up to the original shader's "
        "time; --raw for the instrumented ones"
    )
