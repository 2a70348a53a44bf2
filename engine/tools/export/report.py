"""The shutdown timeline: one frame's scopes ranked by cost, as fixed-format text, read from
the telemetry records (the same numbers as the HUD, the trace and ``--telemetry``)."""

from __future__ import annotations

from collections.abc import Sequence

from engine.profiling.gpu import plausible_transition
from engine.telemetry import Scope

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


def timeline(
    clock: str,
    frame_index: int,
    scopes: Sequence[Scope],
    unit: str = "pass(es)",
    transitions: dict[str, float] | None = None,
) -> str:
    """``clock`` ("GPU"/"CPU") table of ``scopes`` (declaration/start order), e.g.::

        GPU frame 297: 3.402 ms across 9 pass(es), 3.352 ms attributed, in declaration order.
           1. Main.Early                      1.777 ms   52.2%

    "across" = last end - first begin; "attributed" = sum of durations; rows ranked by
    duration, percent = share of attributed; all in milliseconds with 3 decimals.
    ``transitions`` (pass -> ns billed before it, ``engine.profiling.gpu``) splits a row:
    ``HiZ   0.066 ms  2.1%  = 0.036 ms + 0.030 ms transition``.
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
        row = f"{rank:4d}. {s.name:<28} {s.duration_ms:8.3f} ms {pct:6.1f}%"
        t = (transitions or {}).get(s.name)
        if t is not None and plausible_transition(t, s.end_ns - s.begin_ns):
            row += f"  = {s.duration_ms - t / 1e6:.3f} ms + {t / 1e6:.3f} ms transition"
        elif t is not None:
            row += "  (transition n/a (implausible))"
        lines.append(row)
    return "\n".join(lines)


def shutdown_report(telemetry) -> str:
    """The GPU table of the last record with GPU scopes (then run totals of dropped and
    invalid readings), then the CPU table of the last record with CPU scopes.

    ``telemetry.session.profiling`` says what was on; an empty string when nothing was."""
    prof = telemetry.session.profiling
    if prof is None:
        return ""
    history, totals = telemetry.history, telemetry.totals
    lines = []
    last_gpu = next((r for r in reversed(history) if r.gpu is not None), None)
    if not prof.gpu:
        lines.append("GPU timings n/a: GPU profiling is off (run with --gpu-profile).")
    elif not prof.gpu_available:
        lines.append(f"GPU timings n/a: {prof.gpu_unavailable_reason}.")
    elif last_gpu is None:
        lines.append("GPU timings n/a: no frame's timestamps came back before shutdown.")
    else:
        lines.append(
            timeline("GPU", last_gpu.frame_index, last_gpu.gpu, transitions=last_gpu.transitions)
        )
        if last_gpu.transitions and prof.transitions:
            t = prof.transitions
            lines.append(
                "GPU transitions: the barriers wgpu records before a pass, inside its encoder "
                "timestamps; median encoder span - median pass-descriptor span of the pass, "
                f"over the last {t['window']} frames of one in {t['every']} timed both ways"
            )
        if last_gpu.dropped or totals["dropped"]:
            lines.append(
                f"   dropped: {last_gpu.dropped} scope(s) over capacity {prof.capacity} in "
                f"this frame, {totals['dropped']} in the run"
            )
        if last_gpu.invalid or totals["invalid"]:
            lines.append(
                f"   invalid: {last_gpu.invalid} reading(s) zero or ending before they "
                f"begin in this frame, {totals['invalid']} in the run (left out, not clamped)"
            )
        if prof.untimed:
            lines.append(
                "   transfer passes not GPU-timed: no 'timestamp-query-inside-encoders' ("
                + ", ".join(prof.untimed)
                + ")"
            )
        if totals["gpu_missing"]:
            lines.append(
                f"   {totals['gpu_missing']} frame(s) not GPU-timed: every query pool was "
                "still in flight"
            )
        if prof.draws:
            lines.append(draws_report(history, prof.draws))
    if prof.cpu:
        last_cpu = next((r for r in reversed(history) if r.cpu), None)
        if last_cpu is not None:
            lines.append(timeline("CPU", last_cpu.frame_index, last_cpu.cpu, "scope(s)"))
        else:  # a window closed (or a signal came) before the first frame finished
            lines.append("CPU timings n/a: no frame finished before shutdown.")
    return "\n".join(lines)


DRAWS_CAVEAT = (
    "inside = timestamps written between draws in the real pass (bottom of pipe: overlap with "
    "the previous draw counts toward the later one); split = each render draw replayed alone "
    "in passes of its own on scratch targets, colour and depth cleared (depth is not loaded "
    "even where the pass loads it), overlapping nothing, the same number of empty passes "
    "subtracted, divided by the repetitions xN; split/inside > 1: the draws overlapped in the "
    "pass (or its timestamps did not wait for them: lavapipe rasterises after binning); "
    "compute dispatches are never replayed; '<res' = shorter than two timestamp ticks; "
    "pass overhead = the pass's fixed cost outside its draws (attachment load/clear/store, "
    "pass begin/end, timestamps): an empty pass on scratch targets with the same load/store "
    "ops (or an empty compute pass), timed like the pass, less the spans of the timestamp "
    "pairs written inside it, median of the last {window} readings (one every {every} "
    "frames); Δ = (draws + overhead - pass) / pass: what the draws' readings leave "
    "unexplained (overlap between draws reads negative)"
)


IMPLAUSIBLE = "n/a (implausible)"  # a reading that cannot be true is never shown as a number


def _ms(ns: float | None) -> str:
    return "n/a" if ns is None else f"{ns / 1e6:.4f}"


def _count(v: int | None) -> str:
    return "n/a" if v is None else f"{v:,}"


def _per_frag(ns: float | None, frags: int | None) -> str:
    if ns is not None and ns < 0:
        return IMPLAUSIBLE  # a negative time per fragment cannot be true
    return "n/a" if ns is None or not frags else f"{ns / frags:.3f}"


def _draw_time(d, inside: bool) -> str:
    if inside:
        v = d.inside_ns
        if v is None:
            return "n/a"
        return "<res" if d.below_resolution else f"{v / 1e6:.4f}"
    if d.split_ns is None:
        return "n/a"
    if d.implausible:
        return IMPLAUSIBLE
    if d.below_noise:
        return "<noise"
    below = d.below_resolution and d.inside_ns is None
    return "<res" if below else f"{d.split_ns / 1e6:.4f} x{d.repeats}"


def accounted_text(p, pass_ns: int | None) -> str | None:
    """``"draws inside X ms + pass overhead Y ms = Z ms vs pass W ms (Δ +p%)"`` for pass ``p``
    (``PassDraws``; split sum where it has no inside sum), ``Δ`` = (Z - W) / W; the overhead
    ``n/a`` until measured; None when the pass has no draws' sum or no time of its own."""
    s = p.draws_sum_ns()
    if s is None or not pass_ns:
        return None
    way, draws = s
    if p.overhead_ns is None:
        return f"draws {way} {_ms(draws)} ms + pass overhead n/a"
    z = draws + p.overhead_ns
    return (
        f"draws {way} {_ms(draws)} ms + pass overhead {_ms(p.overhead_ns)} ms = {_ms(z)} ms "
        f"vs pass {_ms(pass_ns)} ms (Δ {100 * (z - pass_ns) / pass_ns:+.1f}%)"
    )


def pass_summary(p, scope) -> str:
    """One line for pass ``p`` (``PassDraws``) against its GPU ``scope`` (or None): its
    time, the draws' inside sum as a share of it, the split sum (and split/inside), the
    draws' sum plus the pass's overhead against the pass (``accounted_text``), and for a
    render pass its fragments and ns per fragment."""
    pass_ns = None if scope is None else scope.end_ns - scope.begin_ns
    parts = [f"{p.name} ({p.kind}) {_ms(pass_ns)} ms"]
    inside, split = p.inside_sum_ns(), p.split_sum_ns()
    if inside is not None:
        text = f"draws inside {_ms(inside)} ms"
        if pass_ns:
            pct = 100 * inside / pass_ns
            text += f" = {pct:.1f}% of the pass ({pct - 100:+.1f}%)"
        parts.append(text)
    if split is None and any(d.implausible for d in p.draws):
        parts.append(f"split {IMPLAUSIBLE}")
    if split is not None:
        text = f"split {_ms(split)} ms"
        ratio = p.split_inside_ratio()
        if ratio is not None:
            text += (
                f" (split/inside {ratio[0]:.2f})" if ratio[1] else f" (split/inside {IMPLAUSIBLE})"
            )
        elif pass_ns:
            pct = 100 * split / pass_ns
            text += f" = {pct:.1f}% of the pass ({pct - 100:+.1f}%)"
        parts.append(text)
    accounted = accounted_text(p, pass_ns)
    if accounted:
        parts.append(accounted)
    frags = p.total("fragment")
    if p.kind == "render":
        parts.append(f"{_count(frags)} fragments, {_per_frag(pass_ns, frags)} ns/fragment")
    if p.unreliable:
        parts.append(f"figures unreliable: {p.unreliable}")
    return "; ".join(parts)


def draws_report(history, info: dict) -> str:
    """Per-draw table of the newest record with draws (``--gpu-profile draws``): each pass
    with its draws' sum against the pass's own time (and the split/inside ratio), then one
    row per draw in recording order: inside ms, split ms x repetitions, vertex and fragment
    invocations, clipper primitives, ns per fragment (n/a without the feature)."""
    rec = next((r for r in reversed(history) if r.draw_passes()), None)
    if rec is None:
        return "GPU draws n/a: no frame's draw timings came back before shutdown."
    ways = [w for w, on in (("inside", info.get("inside")), ("split", info.get("split"))) if on]
    lines = [
        f"GPU draws, frame {rec.frame_index} ({' and '.join(ways) or 'no timing'}; "
        f"pipeline statistics {'on' if info.get('stats') else 'n/a'}):",
        "   "
        + DRAWS_CAVEAT.format(
            window=info.get("overhead_window", "?"), every=info.get("overhead_every", "?")
        )
        + ".",
    ]
    scopes = {s.name: s for s in rec.gpu or ()}
    for p in rec.draw_passes():
        lines.append("  " + pass_summary(p, scopes.get(p.name)))
        w = max([24, *(len(d.label) for d in p.draws)])  # the label column fits the longest
        lines.append(
            f"     {'draw':<{w}} {'inside ms':>10} {'split ms':>17} {'vertices':>10} "
            f"{'clipped':>9} {'fragments':>11} {'ns/frag':>8}"
        )
        for d in p.draws:
            lines.append(
                f"     {d.label:<{w}} {_draw_time(d, True):>10} {_draw_time(d, False):>17} "
                f"{_count(d.vertex):>10} {_count(d.clipper):>9} {_count(d.fragment):>11} "
                f"{_per_frag(d.ns, d.fragment):>8}"
            )
    return "\n".join(lines)


class ShutdownReport:
    """Prints the GPU and CPU timelines, each counter block's newest line, then each of
    ``ctx.reports`` (the cull counters,
    the sample's own lines), at close (shutdown, after the frame loop drained) when
    profiling is on."""

    name = "shutdown-report"

    def install(self, ctx) -> None:
        self.ctx = ctx

    def close(self) -> None:
        tel = self.ctx.telemetry
        if tel.session.profiling is None:
            return
        blocks = tel.latest.counters if tel.latest is not None else ()
        texts = [shutdown_report(tel), *(c.line() for c in blocks)]  # each counter block
        for report in (*texts, *(fn() for fn in self.ctx.reports)):
            if report:
                print(report)
