"""The shutdown timeline: one frame's scopes ranked by cost, as fixed-format text, read from
the telemetry records (the same numbers as the HUD, the trace and ``--telemetry``)."""

from __future__ import annotations

from collections.abc import Sequence

from .timings import Scope

NOT_IN_ORDER = (
    "NOT in declaration order (readings out of sequence: pool read while the GPU wrote it?)"
)


def ascends(scopes: Sequence[Scope]) -> bool:
    """True when begins and ends both never decrease in declaration order. Passes that
    overlap on the GPU (B begins before A ends) still ascend; a reading from another frame
    or a half-written pool does not."""
    return all(
        a.begin_ns <= b.begin_ns and a.end_ns <= b.end_ns
        for a, b in zip(scopes, scopes[1:], strict=False)
    )


def timeline(clock: str, frame_index: int, scopes: Sequence[Scope], unit: str = "pass(es)") -> str:
    """``clock`` ("GPU"/"CPU") table of ``scopes`` (declaration/start order), e.g.::

        GPU frame 297: 3.402 ms across 9 pass(es), 3.352 ms attributed, in declaration order.
           1. Main.Early                      1.777 ms   52.2%

    "across" = last end - first begin; "attributed" = sum of durations; rows ranked by
    duration, percent = share of attributed; all in milliseconds with 3 decimals.
    """
    if scopes:
        across = (max(s.end_ns for s in scopes) - min(s.begin_ns for s in scopes)) / 1e6
    else:
        across = 0.0
    attributed = sum(s.duration_ms for s in scopes)
    order = "in declaration order" if ascends(scopes) else NOT_IN_ORDER
    lines = [
        f"{clock} frame {frame_index}: {across:.3f} ms across {len(scopes)} {unit}, "
        f"{attributed:.3f} ms attributed, {order}."
    ]
    ranked = sorted(scopes, key=lambda s: s.end_ns - s.begin_ns, reverse=True)
    for rank, s in enumerate(ranked, 1):
        pct = 100.0 * s.duration_ms / attributed if attributed > 0 else 0.0
        lines.append(f"{rank:4d}. {s.name:<28} {s.duration_ms:8.3f} ms {pct:6.1f}%")
    return "\n".join(lines)


def shutdown_report(telemetry) -> str:
    """The GPU table of the last record with GPU scopes (then run totals of dropped and
    invalid readings), then the CPU table of the last record with CPU scopes.

    ``telemetry.session["profiling"]`` says what was on (``engine.app.App.set_profiling``);
    an empty string when nothing was."""
    prof = telemetry.session.get("profiling")
    if not prof:
        return ""
    history, totals = telemetry.history, telemetry.totals
    lines = []
    last_gpu = next((r for r in reversed(history) if r.gpu is not None), None)
    if not prof["gpu"]:
        lines.append("GPU timings n/a: GPU profiling is off (run with --gpu-profile).")
    elif not prof["gpu_available"]:
        lines.append(f"GPU timings n/a: {prof['gpu_unavailable_reason']}.")
    elif last_gpu is None:
        lines.append("GPU timings n/a: no frame's timestamps came back before shutdown.")
    else:
        lines.append(timeline("GPU", last_gpu.frame_index, last_gpu.gpu))
        if last_gpu.dropped or totals["dropped"]:
            lines.append(
                f"   dropped: {last_gpu.dropped} scope(s) over capacity {prof['capacity']} in "
                f"this frame, {totals['dropped']} in the run"
            )
        if last_gpu.invalid or totals["invalid"]:
            lines.append(
                f"   invalid: {last_gpu.invalid} reading(s) zero or ending before they "
                f"begin in this frame, {totals['invalid']} in the run (left out, not clamped)"
            )
        if prof.get("untimed"):
            lines.append(
                "   transfer passes not GPU-timed: no 'timestamp-query-inside-encoders' ("
                + ", ".join(prof["untimed"])
                + ")"
            )
        if totals["gpu_missing"]:
            lines.append(
                f"   {totals['gpu_missing']} frame(s) not GPU-timed: every query pool was "
                "still in flight"
            )
    if prof["cpu"]:
        last_cpu = next((r for r in reversed(history) if r.cpu), None)
        if last_cpu is not None:
            lines.append(timeline("CPU", last_cpu.frame_index, last_cpu.cpu, "scope(s)"))
    return "\n".join(lines)
