"""Telemetry runs and the statistics that compare them: ``load_run`` reads a ``--telemetry``
file into per-pass series; ``compare_samples`` compares two samples of one pass's times with a
circular-block bootstrap interval of the difference of medians and a Mann-Whitney U test;
``gate`` is the Holm-corrected performance gate. A running sample uses them for the live
cost of a hot reload and ``--baseline``; ``lantern compare`` (``engine.devtools.compare``)
for two whole runs.

Warm-up rule: the first ``max(WARMUP_MIN, ceil(WARMUP_FRACTION * frames))`` frame records of
each run are dropped (pipeline compilation, first-use allocations and the GPU clock ramping up
land there). A row needs ``MIN_FRAMES`` readings in both runs after that.

The bootstrap resamples circular blocks of ``ceil(n ** (1/3))`` consecutive frames, not single
frames: neighbouring frames are correlated (clock and cache state drift), and an i.i.d.
resample would make the interval too narrow on a drifting run.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import orjson

from engine.textfile import UTF8_BOM, utf8_problem

WARMUP_FRACTION = 0.10  # of each run's frame records, dropped from the start
WARMUP_MIN = 5
MIN_FRAMES = 20  # readings per row and run after the warm-up
N_BOOT = 4000  # bootstrap resamples; the gate's smallest p-value is 1 / (N_BOOT + 1)
LEVEL = 0.95  # the printed interval's confidence level
ALPHA = 0.05  # the gate's family-wise error rate (Holm across the passes)
GATE_CLOCKS = ("gpu", "cpu")  # rows the gate tests; draws are shown, their pass is gated


class CompareError(ValueError):
    """A bad input (not telemetry, nothing in common, too few frames): one line."""


@dataclass
class Run:
    """One ``--telemetry`` file.

    Attributes:
        path: the file. session: its ``{"type": "session"}`` object (without ``type``).
        frames: frame records in the file.
        series: ``(clock, name) -> float64 (frames,)`` ms per frame record in file order, NaN
            where that record has no reading; clock ``"gpu"``, ``"cpu"`` or ``"draw"`` (name
            its path ``(pass, draw)``).
        variants: the sample's variant of each frame record (``(frames,)`` of str or None).
        left_out: what was already left out of a variant's part of a run (the run's warm-up,
            the records after each switch), for the header; "" for a whole file.
    """

    path: str
    session: dict
    frames: int
    series: dict[tuple[str, str], np.ndarray]
    variants: list = field(default_factory=list)
    left_out: str = ""

    def part(self, keep: np.ndarray, label: str, left_out: str = "") -> Run:
        """The frame records where ``keep`` (bool ``(frames,)``) holds, as a run of its own
        named ``label`` (one variant of an interleaved run); ``left_out`` says what of the
        file it no longer holds."""
        series = {k: v[keep] for k, v in self.series.items()}
        variants = [v for v, k in zip(self.variants, keep, strict=True) if k]
        return Run(label, self.session, int(keep.sum()), series, variants, left_out)


def load_run(path: str | Path) -> Run:
    """Read a ``--telemetry`` JSON Lines file (``engine.telemetry.JsonLinesWriter``).

    Raises:
        CompareError: unreadable, not telemetry (no session line first), or no frames.
    """
    path = str(path)
    try:
        data = Path(path).read_bytes()
    except OSError as e:
        raise CompareError(f"{path}: cannot read ({e.strerror or e})") from None
    lines = _utf8_text(path, data).splitlines()
    try:
        head = orjson.loads(lines[0]) if lines else None
    except orjson.JSONDecodeError:
        head = None
    if not isinstance(head, dict) or head.get("type") != "session":
        raise CompareError(
            f"{path}: not a Lantern --telemetry file (its first line is not a session record)"
        )
    names: list[str] = []
    columns: dict[tuple[str, str], list[tuple[int, float]]] = {}
    variants: list[str | None] = []
    frames = 0
    for n, line in enumerate(lines[1:], 2):
        try:
            obj = orjson.loads(line)
        except orjson.JSONDecodeError:
            if n == len(lines):  # a run killed mid-write leaves half a last line
                break
            raise CompareError(f"{path}:{n}: not JSON") from None
        kind = obj.get("type") if isinstance(obj, dict) else None
        if kind == "names":
            names += obj["names"]
        elif kind == "frame":
            try:
                _add_frame(obj, names, frames, columns)
            except (IndexError, KeyError, TypeError, ValueError):
                raise CompareError(f"{path}:{n}: a malformed frame record") from None
            variants.append(obj.get("variant"))
            frames += 1
    if frames == 0:
        raise CompareError(f"{path}: no frame records (was the run stopped before its first?)")
    series = {}
    for key, values in columns.items():
        s = np.full(frames, np.nan)
        idx, v = zip(*values, strict=True)
        s[list(idx)] = v
        series[key] = s
    head.pop("type")
    return Run(path, head, frames, series, variants)


def variant_runs(run: Run, settle: int = 0, warmup: int | None = None) -> list[Run]:
    """One ``Run`` per variant of an interleaved run (``--variant-cycle``), in the order
    they first appear, each leaving out the run's first ``warmup`` records (default
    ``warmup_frames``: the run's own warm-up, taken once, not per variant) and the ``settle``
    records after every switch (the first frames of a block pay for the switch: pipelines,
    caches, clocks). A run of one variant (or none) gives ``[]``."""
    names = list(dict.fromkeys(v for v in run.variants if v is not None))
    if len(names) < 2:
        return []
    v = np.array([x if x is not None else "" for x in run.variants], object)
    switched = np.r_[True, v[1:] != v[:-1]]
    since = np.zeros(len(v), np.int64)  # records since the block began
    for i in range(1, len(v)):
        since[i] = 0 if switched[i] else since[i - 1] + 1
    settled = since >= settle
    first = warmup_frames(len(v)) if warmup is None else warmup
    settled[:first] = False
    note = f"the run's first {first} and {settle} after each switch left out"
    return [run.part((v == name) & settled, f"{run.path} [{name}]", note) for name in names]


def _utf8_text(path: str, data: bytes) -> bytes:
    """``data`` without a UTF-8 byte-order mark; a half-written last line that is not UTF-8
    (a run killed mid-character) is left to the caller, which drops it.

    Raises:
        CompareError: not UTF-8 text: ``path:line: not UTF-8 at byte N (...)``.
    """
    problem = utf8_problem(data)
    if problem is not None and not (problem[0] > data.rfind(b"\n") and data[-1:] != b"\n"):
        at, what = problem
        line = data.count(b"\n", 0, at) + 1
        raise CompareError(f"{path}:{line}: {what}")
    return data.removeprefix(UTF8_BOM)


def _add_frame(obj: dict, names: list[str], i: int, columns: dict) -> None:
    for clock in ("gpu", "cpu"):
        for name_id, begin, end in obj.get(clock) or ():
            columns.setdefault((clock, names[name_id]), []).append((i, _ms(end - begin)))
    for p in obj.get("draws") or ():
        for d in p[3]:
            begin, end, split = d[1], d[2], d[3]
            ns = end - begin if begin is not None else split
            if ns is not None:
                key = ("draw", (names[p[0]], names[d[0]]))
                columns.setdefault(key, []).append((i, _ms(ns)))


def _ms(ns) -> float:
    """A scope's length in ms; a negative or non-finite one is a malformed record."""
    ms = float(ns) / 1e6
    if not 0.0 <= ms < math.inf:
        raise ValueError(f"a scope of {ns} ns")
    return ms


def warmup_frames(frames: int) -> int:
    """Frame records dropped from the start of a run of ``frames`` records."""
    return max(WARMUP_MIN, math.ceil(WARMUP_FRACTION * frames))


# -- statistics ------------------------------------------------------------------------------
@dataclass(frozen=True)
class Diff:
    """B against A for one row. Times in ms; ``pct`` and the ``pct_*`` bounds in % of A's
    median; ``lo_ms``/``hi_ms`` the two-sided ``LEVEL`` bootstrap interval of the difference
    of medians; ``p_value`` the two-sided Mann-Whitney U test's; ``replicates_pct`` the
    bootstrap replicates of the % change (the gate's one-sided p-values come from them)."""

    median_a: float
    median_b: float
    n_a: int
    n_b: int
    diff_ms: float
    pct: float
    lo_ms: float
    hi_ms: float
    pct_lo: float
    pct_hi: float
    p_value: float
    replicates_pct: np.ndarray = field(repr=False)

    @property
    def significant(self) -> bool:
        """The interval excludes zero (uncorrected, one row on its own)."""
        return self.lo_ms > 0 or self.hi_ms < 0


def block_length(n: int) -> int:
    """Circular block bootstrap block length for ``n`` frames: ``ceil(n ** (1/3))``."""
    return max(1, math.ceil(n ** (1 / 3)))


def bootstrap_medians(x: np.ndarray, rng: np.random.Generator, n_boot: int) -> np.ndarray:
    """``float64 (n_boot,)`` medians of circular block resamples of ``x`` (frame order)."""
    n = len(x)
    length = block_length(n)
    blocks = -(-n // length)
    starts = rng.integers(0, n, size=(n_boot, blocks, 1))
    idx = ((starts + np.arange(length)) % n).reshape(n_boot, -1)[:, :n]
    return np.median(x[idx], axis=1)


def compare_samples(
    a: Sequence[float],
    b: Sequence[float],
    *,
    rng: np.random.Generator | None = None,
    n_boot: int = N_BOOT,
    level: float = LEVEL,
) -> Diff:
    """Compare two samples of one row's times (ms, frame order, NaN dropped).

    Raises:
        CompareError: fewer than 2 readings on a side.
    """
    from scipy.stats import mannwhitneyu

    a = np.asarray(a, float)
    b = np.asarray(b, float)
    a, b = a[a == a], b[b == b]
    if len(a) < 2 or len(b) < 2:
        raise CompareError(f"too few readings to compare ({len(a)} and {len(b)})")
    rng = rng if rng is not None else np.random.default_rng(0)
    ma, mb = float(np.median(a)), float(np.median(b))
    ra, rb = bootstrap_medians(a, rng, n_boot), bootstrap_medians(b, rng, n_boot)
    d = rb - ra
    with np.errstate(divide="ignore", invalid="ignore"):
        pct = (rb / ra - 1.0) * 100.0
    q = [(1 - level) / 2 * 100, (1 + level) / 2 * 100]
    lo, hi = np.percentile(d, q)
    plo, phi = np.percentile(pct, q)
    p = float(mannwhitneyu(a, b, alternative="two-sided").pvalue)
    return Diff(
        ma, mb, len(a), len(b), mb - ma, (mb / ma - 1) * 100 if ma else math.nan,
        float(lo), float(hi), float(plo), float(phi), p, pct,
    )  # fmt: skip


def holm(p_values: Sequence[float], alpha: float = ALPHA) -> list[bool]:
    """Holm's step-down procedure: which hypotheses are rejected at family-wise ``alpha``."""
    order = sorted(range(len(p_values)), key=lambda i: p_values[i])
    reject = [False] * len(p_values)
    m = len(p_values)
    for k, i in enumerate(order):
        if p_values[i] > alpha / (m - k):
            break
        reject[i] = True
    return reject


def slower_p(diff: Diff, pct: float) -> float:
    """One-sided bootstrap p-value of "B is at most ``pct``% slower than A"."""
    r = diff.replicates_pct
    return float((1 + np.count_nonzero(~(r > pct))) / (1 + len(r)))


def gate(diffs: Sequence[Diff], pct: float, alpha: float = ALPHA) -> list[bool]:
    """Which rows are slower by more than ``pct``% with family-wise error ``alpha`` (Holm):
    a row fails when the lower bound of its one-sided slowdown interval, at its Holm level,
    exceeds ``pct``."""
    return holm([slower_p(d, pct) for d in diffs], alpha)
