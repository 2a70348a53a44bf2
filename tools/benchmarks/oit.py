"""s07's transparency variants (issue 30): GPU time, memory, dropped fragments and error.

s07's frame (the glass cluster over the plaza, the camera orbiting it) at 1920x1080
(``--quick``: 320x180):

1. time: the variants in turn, ``BLOCK`` frames each, ``ROUNDS`` rounds, back to back (as
   ``--variant-cycle`` does), the error measurement off; through ``lantern compare``'s own
   path (a ``--telemetry`` file, ``variant_runs`` with its settle and warm-up rules). Per
   variant the median GPU ms of ``OIT.Draw`` and ``OIT.Resolve`` with quartiles and of
   their sum per frame, and against ``sorted`` the difference of that sum with its 95%
   circular-block bootstrap interval and the Mann-Whitney p; ``Transparent.Sort``, which
   every variant runs, is the control row.
2. error: with ``--oit-error``, ``CAMERAS`` views around the orbit for each variant (the
   same views for all), each frame's counter block read back (blocking, outside the timed
   run): fragments, dropped, truncated, the mean and largest relative error against the
   exact reference and the share of pixels off by more than 1%; then the linked variant at
   pools of 1 to 8 nodes a pixel: what a small pool drops and what that costs in error.
3. memory: the bytes each variant holds (its targets, lists and pool), as the memory table
   counts them, what every variant shares and what the measurement's reference holds.
"""

from __future__ import annotations

import statistics
import tempfile
from pathlib import Path

from .variants import SETTLE, record_variant_cycle

SIZE, QUICK_SIZE = (1920, 1080), (320, 180)
BLOCK, ROUNDS = 20, 6  # frames of a variant in a row; rounds of all variants
QUICK_BLOCK, QUICK_ROUNDS = 10, 3
CAMERAS, QUICK_CAMERAS = 8, 3  # views around the orbit for the error
POOLS = (1, 2, 4, 8)


def run(gpu, args) -> None:
    quick = getattr(args, "quick", False)
    size = QUICK_SIZE if quick else SIZE
    block, rounds = (QUICK_BLOCK, QUICK_ROUNDS) if quick else (BLOCK, ROUNDS)
    rig = _Rig(gpu, size, shadow=512 if quick else 2048)
    print(f"s07 OIT at {size[0]}x{size[1]}: {rig.oit.frame.res.transparent.count} BLEND "
          f"instances; {rounds} rounds of {block} frames of each variant in turn, back to "
          f"back, the error measurement off; {SETTLE} after a switch and the warm-up "
          "left out")  # fmt: skip
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "oit.jsonl"
        rig.record(block, rounds, path)
        _report_times(path)
    _report_error(rig, QUICK_CAMERAS if quick else CAMERAS)
    _report_memory(rig)


class _Rig:
    """s07's frame offscreen, with a frame loop (its telemetry) and blocking readbacks."""

    def __init__(self, gpu, size, shadow: int):
        from engine.frame import StandardFrame
        from engine.graph import RenderGraph
        from engine.loop import FrameLoop
        from engine.profiling import FrameProfiler
        from engine.settings import FrameSettings
        from engine.surfaces import OffscreenTarget
        from samples.s07_oit import ERROR, POOL, add_oit, glass_scene

        scene, self.path = glass_scene()
        self.gpu, self.size = gpu, size
        self.target = OffscreenTarget(gpu.device, size)
        self.graph = RenderGraph(gpu.device, output_format=self.target.format, size=size)
        self.frame = StandardFrame(gpu, self.graph, scene, FrameSettings(shadow_size=shadow))
        self.frame.add_knobs((POOL, ERROR))
        self.oit = add_oit(self.frame)
        self.graph.profiler = FrameProfiler(gpu, gpu=True, cpu=False)
        self.loop = FrameLoop(gpu, self.graph)
        self.index = 0

    def frame_at(self, t: float) -> None:
        self.loop.frame(self.target.view, t, lambda ctx: self.frame.update(ctx, self.path.at(t)))

    def record(self, block: int, rounds: int, path: Path) -> None:
        """The variants in turn into the telemetry file ``path`` (as ``--variant-cycle``)."""
        from samples.s07_oit import VARIANTS

        header = {"sample": "s07", "size": list(self.size)}
        record_variant_cycle(self.gpu, self.loop, self.frame.counters, path, header, VARIANTS,
                             self.oit.set_variant, self.frame_at, block, rounds)  # fmt: skip

    def counts(self) -> dict[str, int]:
        """This frame's counter block, waiting for the GPU (never on a timed frame)."""
        import numpy as np

        from samples.s07_oit import COUNTERS

        data = self.gpu.queue.read_buffer(self.graph.buffer(COUNTERS))
        values = np.frombuffer(data, np.uint32).tolist()
        return dict(zip(self.oit.readback.names, values, strict=True))


def _report_times(path: Path) -> None:
    import numpy as np

    from engine.telemetry.compare import CompareError, compare_samples, load_run, variant_runs
    from samples.s07_oit import VARIANTS

    try:
        parts = dict(zip(VARIANTS, variant_runs(load_run(path), SETTLE), strict=True))
    except (CompareError, ValueError) as e:
        print(f"  n/a: {e}")
        return
    if ("gpu", "OIT.Draw") not in parts["sorted"].series:
        print("  no GPU readings (no timestamp-query?)")
        return

    def series(v: str, name: str):
        s = parts[v].series.get(("gpu", name))
        return None if s is None else s[np.isfinite(s)]

    def total(v: str):
        draw = parts[v].series[("gpu", "OIT.Draw")]
        res = parts[v].series.get(("gpu", "OIT.Resolve"), np.zeros_like(draw))
        t = draw + np.nan_to_num(res)
        return t[np.isfinite(t)]

    print(f"  {'variant':<8} {'OIT.Draw ms':>11} {'[quartiles]':<18} {'OIT.Resolve':>11} "
          f"{'total ms':>9} {'n':>4}  {'vs sorted':>9}  {'95% CI of diff (ms)':<21} "
          f"{'p':>8}")  # fmt: skip
    base = total("sorted")
    for v in VARIANTS:
        t, res = total(v), series(v, "OIT.Resolve")
        draw = series(v, "OIT.Draw")
        line = f"  {v:<8} {_spread(draw)} {_median(res):>11} {_median(t):>9} {len(t):>4}"
        if v != "sorted":
            d = compare_samples(base, t)
            line += f"  {d.pct:+8.1f}%  {f'[{d.lo_ms:+.3f}, {d.hi_ms:+.3f}]':<21} {d.p_value:8.2g}"
        print(line)
    sort = [series(v, "Transparent.Sort") for v in VARIANTS]
    if all(s is not None and len(s) for s in sort):
        pairs = zip(VARIANTS, sort, strict=True)
        print(
            "  control: Transparent.Sort (every variant) "
            + ", ".join(f"{v} {statistics.median(s):.3f}" for v, s in pairs)
            + " ms"
        )


def _report_memory(rig) -> None:
    from samples.s07_oit import NODE_BYTES

    m = rig.oit.memory()
    b = rig.oit.buffers
    w, h = rig.size
    print(f"memory at {w}x{h} (what each variant holds once it ran):")
    print(f"  sorted {_mb(m['sorted'])}; wboit {_mb(m['wboit'])} (oit.accum rgba16float + "
          f"oit.reveal r16float: 10 B a pixel); linked {_mb(m['linked'])} (heads 4 B a pixel "
          f"+ {b.capacity:,} nodes x {NODE_BYTES} B, "
          f"--oit-pool {rig.frame.knob('oit-pool')})")  # fmt: skip
    print(f"  every variant: {_mb(m['shared'])} (Transparent.Sort's buffers, the counter "
          f"block); the error reference: {_mb(m['reference'])}")  # fmt: skip


def _report_error(rig, cameras: int) -> None:
    from samples.s07_oit import POOL, VARIANTS

    times = [k * rig.path.period_s / cameras for k in range(cameras)]
    rig.frame.set_knob("oit-error", True)
    print(f"error against the exact reference (--oit-error), {cameras} views around the orbit, "
          "per frame, then averaged:")  # fmt: skip
    print(f"  {'variant':<8} {'pool':>4} {'fragments':>10} {'dropped':>8} {'truncated':>9} "
          f"{'covered px':>10} {'mean err':>8} {'max':>6} {'>1% px':>7}  reference")  # fmt: skip
    for v in VARIANTS:
        _error_row(rig, v, POOL.default, times)
    print("  the linked variant by pool size (nodes a pixel):")
    for pool in POOLS:
        _error_row(rig, "linked", pool, times)
    rig.frame.set_knob("oit-pool", POOL.default)
    rig.oit.sync()  # the default pool again, the reference kept (for the memory figures)


def _error_row(rig, variant: str, pool: int, times) -> None:
    rig.frame.set_knob("oit-pool", pool)
    rig.oit.set_variant(variant)
    rows = []
    for t in times:
        rig.frame_at(t)
        rows.append(rig.counts())
    c = [r for r in rows if r["covered"]]
    if not c:
        print(f"  {variant:<8} {pool:>4}  nothing transparent in view")
        return

    def mean(key: str) -> float:
        return statistics.fmean(r[key] for r in c)

    err = statistics.fmean(r["error_sum"] / r["covered"] for r in c) / 10.0
    worst = max(r["error_max"] for r in c) / 10.0
    over = statistics.fmean(r["error_over"] / r["covered"] for r in c) * 100.0
    ref = "complete" if not any(r["ref_dropped"] or r["ref_truncated"] for r in c) else (
        f"INCOMPLETE: {max(r['ref_dropped'] for r in c):,} dropped, "
        f"{max(r['ref_truncated'] for r in c):,} truncated")  # fmt: skip
    shown = f"{mean('fragments'):>10,.0f}" if variant == "linked" else f"{'-':>10}"
    print(f"  {variant:<8} {pool:>4} {shown} {mean('dropped'):>8,.0f} {mean('truncated'):>9,.0f} "
          f"{mean('covered'):>10,.0f} {err:7.2f}% {worst:5.1f}% {over:6.1f}%  {ref}")  # fmt: skip


def _spread(values) -> str:
    """``median [q1..q3]`` of ms readings."""
    if values is None or len(values) < 2:
        return f"{_median(values):>11} {'':<18}"
    q = statistics.quantiles(values, n=4)
    return f"{statistics.median(values):11.3f} {f'[{q[0]:.3f}..{q[2]:.3f}]':<18}"


def _median(values) -> str:
    return "-" if values is None or not len(values) else f"{statistics.median(values):.3f}"


def _mb(n: int) -> str:
    return f"{n / 1e6:.2f} MB"
