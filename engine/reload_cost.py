"""The cost change of a reload, live; and a saved run as a live baseline (``--baseline``).

After hot reload swapped pipelines, ``CostTracker`` probes the next frame for the passes
that draw with them (``engine.shader_registry.probe``), then compares each such pass's (and
its draws') GPU times, CPU where there is no GPU reading, over the ``window`` frames before
the swap against the ``window`` frames after it, the first ``SETTLE_FRAMES`` after it left
out (a driver may finish compiling on first use). The statistics are ``engine.compare``'s:
the difference of medians, its bootstrap 95% interval and "significant" when the interval
excludes zero. One log line per changed pass::

    cost Work (gpu): 0.267 -> 0.534 ms, +0.267 ms (+100.0%), 95% CI [+0.250, +0.281] *

``BaselineCompare`` (``--baseline A.jsonl``) compares every pass of the running sample,
once a second, against the same pass in a ``--telemetry`` file with the same rule.

Both hand ``{pass: (text, significant, slower)}`` to their listeners (``subscribe``): the
App draws them as the perf table's NOTE column and keeps them in the telemetry session
(``reload_costs``, ``baseline``), which the portal's ``/session.json`` serves.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from engine.compare import CompareError, Diff, compare_samples, load_run, warmup_frames
from engine.shader_registry import probe
from engine.tool import OptionError

log = logging.getLogger("lantern")

COST_WINDOW = 30  # frames either side of a reload
SETTLE_FRAMES = 2  # frames right after the swap left out
MIN_SIDE = 10  # readings needed on a side
N_BOOT = 1000
Note = tuple[str, bool, bool]  # (text, significant, slower)


@dataclass(frozen=True)
class CostChange:
    """One pass (or ``"<pass>/<draw>"``) across one reload: ``diff`` is after vs before."""

    name: str
    clock: str
    swap_frame: int
    diff: Diff

    def line(self) -> str:
        d = self.diff
        return (
            f"cost {self.name} ({self.clock}): {d.median_a:.3f} -> {d.median_b:.3f} ms, "
            f"{d.diff_ms:+.3f} ms ({d.pct:+.1f}%), 95% CI [{d.lo_ms:+.3f}, {d.hi_ms:+.3f}]"
            + (" *" if d.significant else " (not significant)")
        )

    def note(self) -> Note:
        d = self.diff
        return f"was {d.median_a:.3f} {_pct(d.pct)}", d.significant, d.diff_ms > 0


def _pct(p: float) -> str:
    return f"{p:+.0f}%" if abs(p) < 999.5 else (">+999%" if p > 0 else "<-999%")


def readings(records, name: str, clock: str) -> list[tuple[int, float]]:
    """``(frame_index, ms)`` of ``name`` on ``clock`` (``"gpu"``, ``"cpu"`` or ``"draw"``
    with ``"<pass>/<draw>"``) in ``records``, oldest first."""
    out = []
    for rec in records:
        if clock == "draw":
            pname, _, label = name.partition("/")
            for s in rec.gpu or ():
                if s.name == pname:
                    out += [(rec.frame_index, c.detail.ns / 1e6) for c in s.children
                            if c.name == label and c.detail.ns is not None]  # fmt: skip
            continue
        for s in (rec.gpu if clock == "gpu" else rec.cpu) or ():
            if s.name == name:
                out.append((rec.frame_index, (s.end_ns - s.begin_ns) / 1e6))
                break
    return out


class CostTracker:
    """Before/after cost of the passes whose pipelines a reload replaced: a tool installed
    after ``engine.reload.HotReload`` (it listens to its swaps).

    Args:
        window: frames compared on each side.

    Attributes:
        results: ``name -> CostChange`` of the newest reload of each pass.
    """

    name = "reload-cost"

    def __init__(self, *, window: int = COST_WINDOW):
        self.window = window
        self.results: dict[str, CostChange] = {}
        self._pending: dict[tuple[str, str], int] = {}  # (name, kind) -> swap frame
        self._probing: tuple[Callable, list, int] | None = None
        self._listeners: list[Callable[[dict[str, Note]], None]] = []
        self._unsubscribe = None
        self.loop = None

    def install(self, ctx) -> None:
        from engine.reload import HotReload

        self.graph, self.telemetry, self.loop = ctx.graph, ctx.telemetry, ctx.loop
        ctx.tool(HotReload).on_swap.append(self.on_swap)
        self._unsubscribe = ctx.telemetry.subscribe(self._on_record)
        ctx.loop.between_frames.append(self._between_frames)
        self.subscribe(lambda notes: show_notes(ctx, "reload", notes))

    def subscribe(self, fn: Callable[[dict[str, Note]], None]) -> None:
        """``fn({pass: (text, significant, slower)})`` after each comparison."""
        self._listeners.append(fn)

    def close(self) -> None:
        if self._unsubscribe is not None:
            self._unsubscribe()
        if self.loop is not None and self._between_frames in self.loop.between_frames:
            self.loop.between_frames.remove(self._between_frames)
        if self._probing is not None:
            self._probing[0]()

    def on_swap(self, handles) -> None:
        """Hot reload replaced ``handles`` (between frames): probe the next frame."""
        if self._probing is not None:
            self._probing[0]()
        self._probing = (probe(self.graph), list(handles), self.loop.index)

    def _between_frames(self) -> None:
        if self._probing is None or self.loop.index <= self._probing[2]:
            return
        stop, handles, swap = self._probing
        self._probing = None
        for name in stop().passes_of(handles):
            self._pending[(name, "pass")] = swap

    def _on_record(self, record) -> None:
        if not self._pending:
            return
        for (name, kind), swap in list(self._pending.items()):
            first = swap + SETTLE_FRAMES
            if record.frame_index < first + self.window - 1:
                continue
            keys = self._keys(name, record)
            late = record.frame_index >= first + 4 * self.window  # give up waiting then
            # a frame that found every query pool in flight has no reading: wait for the
            # window's worth after the swap (the test reads the same frames from the records)
            if not late and (not keys or self._count_after(*keys[0], first) < self.window):
                continue
            del self._pending[(name, kind)]
            for key, clock in keys:
                self._compare(key, clock, swap)

    def _count_after(self, name: str, clock: str, first: int) -> int:
        return sum(f >= first for f, _ in readings(self.telemetry.history, name, clock))

    def _keys(self, name: str, record) -> list[tuple[str, str]]:
        """What to compare for pass ``name``: its GPU time, else its CPU time, else nothing
        (no profiling: no cost to show), then its draws."""
        if any(s.name == name for s in record.gpu or ()):
            keys = [(name, "gpu")]
        elif any(s.name == name for s in record.cpu or ()):
            keys = [(name, "cpu")]
        else:
            return []
        for s in record.gpu or ():
            if s.name == name and len(s.children) > 1:
                keys += [(f"{name}/{c.name}", "draw") for c in s.children]
        return keys

    def _compare(self, name: str, clock: str, swap: int) -> None:
        values = readings(self.telemetry.history, name, clock)
        before = [v for f, v in values if f < swap][-self.window :]
        after = [v for f, v in values if f >= swap + SETTLE_FRAMES][: self.window]
        if min(len(before), len(after)) < MIN_SIDE:
            log.info("cost %s: too few frames either side of the reload to compare", name)
            return
        change = CostChange(name, clock, swap, compare_samples(before, after, n_boot=N_BOOT))
        self.results[name] = change
        log.info("%s", change.line())
        notes = {n: c.note() for n, c in self.results.items() if c.clock != "draw"}
        for fn in self._listeners:
            fn(notes)


class BaselineCompare:
    """``--baseline A.jsonl``: each pass's live median against the file's, once a second.

    Args:
        path: a ``--telemetry`` file. every_s: seconds between comparisons.

    Raises:
        ValueError: the file is not usable (one line, from ``engine.compare``).
    """

    name = "baseline"

    def __init__(self, path: str | None = None, *, every_s: float = 1.0, window: int = 60):
        self.path, self.every_s, self.window = path, every_s, window
        self._unsubscribe = None
        self._listeners: list[Callable[[dict[str, Note]], None]] = []
        if path is not None:
            self._load(path)

    def _load(self, path: str) -> None:
        try:
            self.run = load_run(path)
        except CompareError as e:
            raise OptionError(f"--baseline: {e}") from None
        skip = warmup_frames(self.run.frames)
        self.base = {
            (clock, name): s[skip:][s[skip:] == s[skip:]]
            for (clock, name), s in self.run.series.items()
            if clock in ("gpu", "cpu")
        }
        self.notes: dict[str, Note] = {}
        self._next = 0.0
        self._rng = np.random.default_rng(0)

    def install(self, ctx) -> None:
        """Off unless a path was given or the run has ``--baseline PATH``."""
        if self.path is None:
            self.path = ctx.option("baseline")
            if not self.path:
                return
            self._load(self.path)
        self.telemetry = ctx.telemetry
        self._unsubscribe = ctx.telemetry.subscribe(self._on_record)
        self.subscribe(lambda notes: show_notes(ctx, "baseline", notes))

    def close(self) -> None:
        if self._unsubscribe is not None:
            self._unsubscribe()

    def subscribe(self, fn: Callable[[dict[str, Note]], None]) -> None:
        self._listeners.append(fn)

    def _on_record(self, record) -> None:
        now = time.perf_counter()
        if now < self._next:
            return
        self._next = now + self.every_s
        self.update(self.telemetry.history)

    def update(self, history) -> dict[str, Note]:
        """Compare the newest ``window`` records of ``history`` (after the run's own
        warm-up) with the baseline; returns and sends the notes."""
        records = list(history)
        live = records[warmup_frames(len(records)) :] if len(records) > 2 * self.window else []
        live = records[-self.window :] if not live else live[-self.window :]
        notes = {}
        for (clock, name), base in self.base.items():
            if name in notes or len(base) < MIN_SIDE:
                continue
            now = [v for _, v in readings(live, name, clock)]
            if len(now) < MIN_SIDE:
                continue
            d = compare_samples(base, now, rng=self._rng, n_boot=N_BOOT // 2)
            notes[name] = (f"base {d.median_a:.3f} {_pct(d.pct)}", d.significant, d.diff_ms > 0)
        self.notes = notes
        for fn in self._listeners:
            fn(notes)
        return notes


def show_notes(ctx, source: str, notes: dict[str, Note]) -> None:
    """Per-pass notes (``source`` "reload" or "baseline") into the HUD's perf table (when
    the HUD is installed) and the session (``reload_costs`` / ``baseline`` facts)."""
    from engine.debug.hud import Hud

    hud = ctx.find(Hud)
    perf = None if hud is None else hud.panels.get("perf")
    if perf is not None:
        perf.perf.set_notes(source, notes)
        perf.perf.expire()
    key = "reload_costs" if source == "reload" else source
    ctx.telemetry.set_fact(key, {k: v[0] + (" *" if v[1] else "") for k, v in notes.items()})
