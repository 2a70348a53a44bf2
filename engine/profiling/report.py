"""The shutdown timeline: one frame's scopes ranked by cost, as fixed-format text."""

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
        lines.append(f"{rank:4d}. {s.name:<29} {s.duration_ms:8.3f} ms {pct:6.1f}%")
    return "\n".join(lines)
