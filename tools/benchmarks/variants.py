"""What the technique samples' benchmark sections share: recording a run of interleaved
variants (as ``--variant-cycle`` does) and reading it with ``lantern compare``'s rules."""

from __future__ import annotations

import statistics
from collections.abc import Callable, Sequence
from pathlib import Path

from engine.devtools.compare import SETTLE  # noqa: F401  (records left out after a switch)


def record_variant_cycle(
    gpu, loop, counters, path: Path, header: dict, variants: Sequence[str],
    set_variant: Callable[[str], None], draw: Callable[[float], None], block: int, rounds: int,
) -> None:  # fmt: skip
    """``rounds`` rounds of ``block`` frames of each variant in turn, back to back, into the
    telemetry file ``path`` (``header``: its session line). ``set_variant(name)`` switches
    the technique; ``draw(t)`` records and submits the frame at time ``t`` (seconds).
    A GPU slower than the recording (a software one) leaves frames untimed: it is waited
    for (``counters``: a buffer to read back) at the next switch, whose first frames are not
    compared, never on a GPU that keeps up (its clocks would drop while it idles)."""
    from engine.tools.export.jsonl import JsonLinesWriter

    writer = JsonLinesWriter(str(path), header)
    loop.telemetry.subscribe(writer)
    timer, skipped, waits = loop.graph.profiler.gpu, 0, 0
    for i in range(block * len(variants) * rounds):
        if i % block == 0 and timer is not None and timer.skipped_frames > skipped:
            gpu.queue.read_buffer(counters)
            skipped, waits = timer.skipped_frames, waits + 1
        loop.variant = variants[(i // block) % len(variants)]
        set_variant(loop.variant)
        draw(i / 60)
    loop.drain()
    writer.close()
    loop.telemetry.unsubscribe(writer)
    if waits:
        print(f"  (the GPU fell behind: waited for it at {waits} of "
              f"{len(variants) * rounds} switches)")  # fmt: skip


def gpu_row(comparison, name: str):
    """The comparison's row of GPU pass ``name``, or None."""
    return next((r for r in comparison.rows if (r.clock, r.name) == ("gpu", name)), None)


def spread(values) -> str:
    """``median  [q1..q3]  n`` of ms readings."""
    q = statistics.quantiles(values, n=4)
    return f"{statistics.median(values):10.3f}  {f'[{q[0]:.3f}..{q[2]:.3f}]':<18} {len(values):4d}"
