"""A/B comparison of two runs' ``--telemetry`` files, with statistics.

Each frame record is one sample of each pass's time. Per pass (GPU and CPU clocks) and per
draw (``--gpu-profile draws``) present in both runs: the two medians, the difference of
medians in ms and %, a bootstrap 95% confidence interval of that difference, and the
two-sided Mann-Whitney U p-value. ``gate`` is the CI performance gate: a pass fails when the
lower bound of its slowdown interval exceeds a threshold, Holm-corrected across the passes.

Warm-up rule: the first ``max(WARMUP_MIN, ceil(WARMUP_FRACTION * frames))`` frame records of
each run are dropped (pipeline compilation, first-use allocations and the GPU clock ramping up
land there), ``warmup=N`` overrides it. A row needs ``MIN_FRAMES`` readings in both runs after
that.

The bootstrap resamples circular blocks of ``ceil(n ** (1/3))`` consecutive frames, not single
frames: neighbouring frames are correlated (clock and cache state drift), and an i.i.d.
resample would make the interval too narrow on a drifting run. Two runs of one build in
separate processes can still differ by more than their frames' noise (a different machine
load): the interval describes these two runs, not every run of the build.

``main(argv) -> int`` is the command line (``tools/compare.py``); ``CompareError`` is a bad
input, one line, exit status 2.
"""

from __future__ import annotations

import argparse
import math
import os
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import orjson

from engine.options import int_type
from engine.safe_write import output_problem
from engine.telemetry.compare import (  # noqa: F401 - the statistics, re-exported for the CLI
    ALPHA,
    GATE_CLOCKS,
    LEVEL,
    MIN_FRAMES,
    N_BOOT,
    WARMUP_FRACTION,
    WARMUP_MIN,
    CompareError,
    Diff,
    Run,
    compare_samples,
    gate,
    holm,
    load_run,
    slower_p,
    variant_runs,
    warmup_frames,
)
from engine.telemetry.record import path_text

frames_type = int_type(0, what="a frame count")  # --warmup, --settle: one wording for both

SETTLE = 3  # frame records after each switch left out of an interleaved run's variants
IGNORED_SETTINGS = ("capture", "telemetry", "trace", "graph", "portal", "portal_host", "baseline")


# -- two runs --------------------------------------------------------------------------------
@dataclass
class Row:
    clock: str
    name: str | tuple[str, ...]  # a pass, or a draw's path (pass, draw)
    diff: Diff
    a: np.ndarray  # the readings compared (warm-up and NaN dropped), ms
    b: np.ndarray


@dataclass
class Comparison:
    a: Run
    b: Run
    warmup_a: int
    warmup_b: int
    rows: list[Row]
    differences: list[str]
    failed: list[str] = field(default_factory=list)  # gate failures, one line each


def compare_runs(
    a: Run, b: Run, *, warmup: int | None = None, seed: int = 0, n_boot: int = N_BOOT
) -> Comparison:
    """Every row in both runs (GPU passes, then draws, then CPU scopes, in A's order).

    Raises:
        CompareError: no pass in common, or too few frames after the warm-up.
    """
    wa = warmup_frames(a.frames) if warmup is None else warmup
    wb = warmup_frames(b.frames) if warmup is None else warmup
    common = [k for k in a.series if k in b.series]
    if not common:
        raise CompareError(
            f"{a.path} and {b.path} have no pass in common (A: {_names(a)}; B: {_names(b)})"
        )
    rng = np.random.default_rng(seed)
    rows, short = [], []
    rank = {"gpu": 0, "draw": 1, "cpu": 2}
    for clock, name in sorted(common, key=lambda k: rank.get(k[0], 3)):
        xa, xb = a.series[clock, name][wa:], b.series[clock, name][wb:]
        xa, xb = xa[xa == xa], xb[xb == xb]
        if min(len(xa), len(xb)) < MIN_FRAMES:
            short.append((clock, name, len(xa), len(xb)))
            continue
        rows.append(Row(clock, name, compare_samples(xa, xb, rng=rng, n_boot=n_boot), xa, xb))
    if not rows:
        clock, name, na, nb = short[0]
        raise CompareError(
            f"too few frames: {path_text(name)} has {na} reading(s) in {a.path} and {nb} in "
            f"{b.path} after dropping the warm-up ({wa} and {wb} frames); {MIN_FRAMES} are needed "
            "(record more --frames)"
        )
    return Comparison(a, b, wa, wb, rows, session_differences(a.session, b.session))


def _names(run: Run) -> str:
    names = sorted({n for c, n in run.series if c != "draw"})
    return ", ".join(names) or "no timed pass"


def session_differences(a: dict, b: dict) -> list[str]:
    """What differs between two sessions, one ``"key: A -> B"`` string each: adapter,
    backend, features, sample, size, profiling, settings (output paths ignored) and the WGSL
    hashes (``session["shaders"]``: module name -> hash)."""
    out = []
    for key in ("adapter", "backend", "sample", "size", "features", "profiling"):
        out += _differences(key, a.get(key), b.get(key))
    sa, sb = (x.get("settings") for x in (a, b))
    if not (isinstance(sa or {}, dict) and isinstance(sb or {}, dict)):
        return [*out, f"settings: {_short(sa)} -> {_short(sb)}"]
    sa, sb = sa or {}, sb or {}
    for key in sorted(set(sa) | set(sb)):
        if key not in IGNORED_SETTINGS and sa.get(key) != sb.get(key):
            out.append(f"settings.{key}: {_short(sa.get(key))} -> {_short(sb.get(key))}")
    ha, hb = a.get("shaders"), b.get("shaders")
    if ha is None or hb is None:
        if ha != hb:
            out.append("shaders: hashes recorded in only one run")
        return out
    for name in sorted(set(ha) | set(hb)):
        if ha.get(name) != hb.get(name):
            out.append(f"shader {name}: {ha.get(name) or 'absent'} -> {hb.get(name) or 'absent'}")
    return out


def _differences(key: str, va, vb) -> list[str]:
    """``"key: A -> B"``; for two dicts one line per key that differs (``profiling.cpu:
    true -> false``), for two lists what one has and the other lacks (``features: +x -y``)."""
    if va == vb:
        return []
    if isinstance(va, dict) and isinstance(vb, dict):
        keys = sorted(set(va) | set(vb))
        return [f"{key}.{k}: {_short(va.get(k))} -> {_short(vb.get(k))}"
                for k in keys if va.get(k) != vb.get(k)]  # fmt: skip
    if isinstance(va, list) and isinstance(vb, list):
        gained = [f"+{_short(x)}" for x in vb if x not in va]
        lost = [f"-{_short(x)}" for x in va if x not in vb]
        if gained or lost:
            return [f"{key}: {' '.join(gained + lost)}"]
    return [f"{key}: {_short(va)} -> {_short(vb)}"]


def _short(v) -> str:
    s = v if isinstance(v, str) else orjson.dumps(v).decode()
    return s if len(s) <= 60 else s[:57] + "..."


# -- output ----------------------------------------------------------------------------------
def format_comparison(c: Comparison) -> str:
    """The text table: one row per pass / draw / CPU scope."""

    def head(run, warmup: int) -> str:
        dropped = run.left_out or f"first {warmup} dropped (warm-up)"
        return f"{run.path}  {run.frames} frames, {dropped}  {run.session.get('adapter', '?')}"

    lines = [
        f"A: {head(c.a, c.warmup_a)}",
        f"B: {head(c.b, c.warmup_b)}",
        "differs: " + ("; ".join(c.differences) if c.differences else "nothing recorded"),
        "",
        f"{'clock':<5} {'pass':<26} {'A median':>10} {'B median':>10} {'diff ms':>10} "
        f"{'diff %':>8}  {'95% CI of diff (ms)':<23} {'p (MWU)':>8}",
    ]
    for r in c.rows:
        d = r.diff
        ci = f"[{d.lo_ms:+.3f}, {d.hi_ms:+.3f}]"
        name = path_text(r.name)
        name = name if len(name) <= 26 else name[:23] + "..."
        lines.append(
            f"{r.clock:<5} {name:<26} {d.median_a:>10.3f} {d.median_b:>10.3f} "
            f"{d.diff_ms:>+10.3f} {d.pct:>+7.1f}%  {ci:<23} {d.p_value:>8.2g}"
            + ("  *" if d.significant else "")
        )
    lines.append(
        f"medians in ms; * = the {LEVEL:.0%} interval excludes 0 (each row on its own); "
        "CI: circular block bootstrap, p: two-sided Mann-Whitney U"
    )
    return "\n".join(lines)


def figure(c: Comparison):
    """A matplotlib figure: per row (draws left out), A's and B's time distributions
    overlaid as step histograms on shared bins, medians dashed."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = [r for r in c.rows if r.clock != "draw"]
    cols = min(3, len(rows))
    nrows = -(-len(rows) // cols)
    fig, axes = plt.subplots(nrows, cols, figsize=(4.2 * cols, 2.8 * nrows), squeeze=False)
    for ax in axes.flat[len(rows) :]:
        ax.set_visible(False)
    for ax, r in zip(axes.flat, rows, strict=False):
        both = np.concatenate([r.a, r.b])
        lo, hi = np.percentile(both, [0.5, 99.5])
        bins = np.linspace(lo, hi if hi > lo else lo + 1e-3, 40)
        for x, label, colour in ((r.a, "A", "#1f77b4"), (r.b, "B", "#d62728")):
            ax.hist(np.clip(x, bins[0], bins[-1]), bins, histtype="step", lw=1.5,
                    color=colour, label=label)  # fmt: skip
            ax.axvline(np.median(x), color=colour, ls="--", lw=1)
        d = r.diff
        mark = " *" if d.significant else ""
        ax.set_title(f"{r.clock} {path_text(r.name)}: {d.pct:+.1f}%{mark}", fontsize=9)
        ax.set_xlabel("ms", fontsize=8)
        ax.tick_params(labelsize=7)
        ax.legend(fontsize=7)
    fig.suptitle(f"A = {Path(c.a.path).name}, B = {Path(c.b.path).name}", fontsize=10)
    fig.tight_layout()
    return fig


def write_png(comparisons: Sequence[Comparison], path: str) -> None:
    """Every comparison's distributions (one per variant against the first), top to bottom
    in one PNG."""
    import io

    import matplotlib.pyplot as plt
    from PIL import Image

    images = []
    for c in comparisons:
        fig, buf = figure(c), io.BytesIO()
        fig.savefig(buf, format="png", dpi=100)
        plt.close(fig)
        images.append(Image.open(io.BytesIO(buf.getvalue())).convert("RGB"))
    page = Image.new("RGB", (max(i.width for i in images), sum(i.height for i in images)), "white")
    y = 0
    for img in images:
        page.paste(img, (0, y))
        y += img.height
    page.save(path)


def write_html(comparisons: Sequence[Comparison], path: str) -> None:
    """A self-contained page: each comparison's text table and its distributions as inline
    SVG."""
    import html
    import io

    import matplotlib.pyplot as plt

    parts = []
    for c in comparisons:
        fig, svg = figure(c), io.StringIO()
        fig.savefig(svg, format="svg")
        plt.close(fig)
        body = svg.getvalue()
        parts.append(f"<pre>{html.escape(format_comparison(c))}</pre>{body[body.index('<svg') :]}")
    page = "<!doctype html><meta charset='utf-8'><title>Lantern compare</title>" + "".join(parts)
    Path(path).write_text(page + "\n", encoding="utf-8")


# -- command line ----------------------------------------------------------------------------
class _Parser(argparse.ArgumentParser):
    def error(self, message: str):  # one line, exit status 2
        self.exit(2, f"{self.prog}: error: {message}\n")


def _pct(text: str) -> float:
    try:
        v = float(text)
    except ValueError:
        v = math.nan
    if not math.isfinite(v) or v < 0:
        raise argparse.ArgumentTypeError(f"expected a percentage >= 0, got {text!r}")
    return v


def _seed(text: str) -> int:
    try:
        v = int(text)
    except ValueError:
        v = -1
    if v < 0:
        raise argparse.ArgumentTypeError(f"expected an integer >= 0, got {text!r}")
    return v


def build_parser(prog: str = "compare") -> argparse.ArgumentParser:
    p = _Parser(
        prog=prog,
        description="Compare two --telemetry runs: A (before), B (after); or, given one run "
        "recorded with --variant-cycle, each of its variants against the first.",
    )
    p.add_argument("a", metavar="A.jsonl")
    p.add_argument("b", metavar="B.jsonl", nargs="?")
    p.add_argument(
        "--settle",
        type=frames_type,
        default=SETTLE,
        metavar="N",
        help=f"one run of interleaved variants: frame records dropped after each switch "
        f"(default {SETTLE})",
    )
    p.add_argument(
        "--fail-above",
        type=_pct,
        metavar="PCT",
        help="exit 1 when a pass is slower by more than PCT%% (the lower bound of its "
        f"slowdown interval, Holm-corrected across passes at {ALPHA:g})",
    )
    p.add_argument("--html", metavar="PATH", help="write the table and distributions (.html)")
    p.add_argument("--png", metavar="PATH", help="write the distributions per pass (.png)")
    p.add_argument(
        "--warmup",
        type=frames_type,
        metavar="N",
        help=f"frames dropped from each run's start (default: max({WARMUP_MIN}, "
        f"{100 * WARMUP_FRACTION:.0f}%% of its frames))",
    )
    p.add_argument("--seed", type=_seed, default=0, help="bootstrap seed (default 0)")
    return p


def main(argv: Sequence[str] | None = None, prog: str = "compare") -> int:
    """Run the comparison; returns 0, 1 (``--fail-above`` gate failed) or 2 (bad input)."""
    parser = build_parser(prog)
    args = parser.parse_args(argv)

    for option, path, suffix in (("--png", args.png, ".png"), ("--html", args.html, ".html")):
        problem = None if path is None else output_problem(path, suffix)
        if problem is not None:  # a suffix, no link, never over another kind of file
            parser.error(f"argument {option}: {problem}")
    try:
        pairs, warmup = _pairs(args)
        comparisons = [compare_runs(a, b, warmup=warmup, seed=args.seed) for a, b in pairs]
    except CompareError as e:
        return _fail(prog, str(e))
    print("\n\n".join(format_comparison(c) for c in comparisons))
    for path, write in ((args.png, write_png), (args.html, write_html)):
        if path:
            try:
                write(comparisons, path)
            except OSError as e:
                return _fail(prog, f"cannot write {path}: {e.strerror or e}")
            print(f"wrote {path}")
    if args.fail_above is None:
        return 0
    return max(_gate(c, args.fail_above) for c in comparisons)


def _pairs(args) -> tuple[list[tuple[Run, Run]], int | None]:
    """Two files: ``[(A, B)]``. One file of interleaved variants: each variant against the
    first (N-way: the first is the baseline), the run's warm-up already left out of them.
    Also the warm-up ``compare_runs`` then drops.

    Raises:
        CompareError: one file with fewer than two variants; two names of one file.
    """
    if args.b is not None and _same_file(args.a, args.b):
        raise CompareError(
            f"{args.a} and {args.b} are the same file: a run against itself differs by 0 "
            "everywhere; give a second run (an A/A check is two runs of the same build)"
        )
    a = load_run(args.a)
    if args.b is not None:
        return [(a, load_run(args.b))], args.warmup
    parts = variant_runs(a, args.settle, args.warmup)
    if not parts:
        raise CompareError(
            f"{args.a} holds one variant (or none): give a second run to compare with, or "
            "record variants in blocks (--variant-cycle N)"
        )
    return [(parts[0], p) for p in parts[1:]], 0


def _same_file(a: str, b: str) -> bool:
    """Whether ``a`` and ``b`` name one file (False when either cannot be read: the loader
    then says why)."""
    try:
        return os.path.samefile(a, b)
    except OSError:
        return False


def _gate(c: Comparison, pct: float) -> int:
    rows = [r for r in c.rows if r.clock in GATE_CLOCKS]
    failed = gate([r.diff for r in rows], pct)
    m = len(rows)
    for r, bad in zip(rows, failed, strict=True):
        if bad:
            c.failed.append(f"{r.clock} {path_text(r.name)}: {r.diff.pct:+.1f}% slower")
    if c.failed:
        print(f"gate: FAIL, slower than {pct:g}% (Holm over {m} passes, alpha {ALPHA:g}): "
              + "; ".join(c.failed))  # fmt: skip
        return 1
    print(f"gate: pass, no pass slower than {pct:g}% (Holm over {m} passes, alpha {ALPHA:g})")
    return 0


def _fail(prog: str, message: str) -> int:
    print(f"{prog}: error: {message}", file=sys.stderr)
    return 2
