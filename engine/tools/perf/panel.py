"""PerfOverlay: the per-pass CPU / GPU timing table of the HUD.

It reads the telemetry (``engine.telemetry``) and nothing else: the newest record's per-pass
statistics (mean over the stats window, delta against the rolling median, outliers, held
hitches) and the session's profiling state. The figures are refreshed at ``refresh_hz`` so
the digits can be read.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from engine.hud.grid import DebugOverlay
from engine.hud.layout import cut_line
from engine.hud.palette import BAR, BAR_BG, DIM, FASTER, HEADER, HOT, PANEL_BG, SLOWER, TEXT
from engine.hud.panel import HudData, Panel
from engine.profiling.gpu import plausible_transition
from engine.telemetry import CPU, DRAW, FRAME_SCOPE, GPU, WALL, WINDOW

CPU_ONLY_SCOPES = ("Update", "Submit", "Present")
NS_FRAG = "  ns/frag"  # the row under a render pass: GPU ns per fragment (not ms)

# Opaque: the overlay blends in linear light on sRGB targets, so even 8 % of a white wall
# (alpha 235) lifts a dark panel to sRGB ~80 and dim text drops below a 2:1 contrast.
# Every text colour below reads at WCAG contrast >= 5 on this background (tests/test_hud.py).
NAME_W, NUM_W, DELTA_W, BAR_W = 14, 8, 8, 12
NUMBERS_W = NAME_W + 1 + NUM_W + 1 + NUM_W  # name, CPU and GPU columns


def fit_name(name: str) -> str:
    """``name`` in the ``NAME_W`` column: a longer one cut to ``NAME_W - 1`` characters and
    ``~`` (``Transparent.Sort`` -> ``Transparent.S~``), so a cut never reads as a name."""
    return cut_line(name, NAME_W)


# the table's forms, widest first: with SHARE bars, without them, without the DELTA column
# (each keeps a cell for the hitch marker and one of margin on either side)
FORM_WIDTHS = (
    1 + NUMBERS_W + 1 + DELTA_W + 1 + 1 + BAR_W + 1,  # 57 cells
    1 + NUMBERS_W + 1 + DELTA_W + 1 + 1,  # 44
    1 + NUMBERS_W + 1 + 1,  # 35
)
NOTE_W = 17  # the NOTE column (set_notes): "was 0.412 +101%" / "base 1.234 -5%"


def fmt_ms(v: float | None, width: int = NUM_W) -> str:
    """Right-aligned milliseconds in exactly ``width`` characters: 3 decimals while they fit,
    else whole ms, else scientific; ``n/a`` when there is no reading (never ``0.000``)."""
    if v is None or not math.isfinite(v):
        return "n/a".rjust(width)
    for spec in (".3f", ".0f"):  # decided on the rounded text: 9999.9996 -> "10000.000"
        text = f"{v:{width}{spec}}"
        if len(text) <= width:
            return text
    return f"{v:{width}.{max(width - 8, 0)}e}"


def fmt_delta(v: float | None, width: int = DELTA_W) -> str:
    """Signed milliseconds (``+0.012``) in exactly ``width`` characters, blank when None."""
    if v is None or not math.isfinite(v):
        return " " * width
    for decimals in (3, 2, 1, 0):
        text = f"{v:+{width}.{decimals}f}"
        if len(text) <= width:
            return text
    return ("+" if v > 0 else "-") + "9" * (width - 1)


TRANSITION = "  transition"  # child row: the part of the pass's GPU time before it began


@dataclass
class PerfRow:
    """One table row: window means in ms (None = no reading), the delta of the newest frame
    against the rolling median (GPU when timed, else CPU), whether it is an outlier, and the
    held hitch (ms) when one is held."""

    name: str
    cpu_ms: float | None
    gpu_ms: float | None
    delta_ms: float | None = None
    outlier: bool = False
    hitch_ms: float | None = None
    child: bool = False  # a draw under its pass (--gpu-profile draws): indented, no CPU column


class PerfOverlay:
    """The timing table: per-pass CPU and GPU ms in execution order (means over the
    telemetry's stats window), a signed delta column, bars of each pass's share, totals, FPS
    and frame time; each number coloured on its own (red over budget, dim under ``dim_ms``).

    With per-draw timing (``--gpu-profile draws``) a pass expands into its costliest draws
    (window means, at most ``max_draws``, the rest summed in a ``+N more`` row) and, for a
    render pass with pipeline statistics, a ``ns/frag`` row: the pass's mean GPU time per
    fragment shader invocation of the newest frame. Forms 3-5 are forms 0-2 without these
    rows, for when the expanded table does not fit.

    Args:
        refresh_hz: how often the figures change (default 4).
        budget_ms: numbers above this are red (default 5 ms).
        dim_ms: numbers below this are dimmed (default 0.1 ms).
        max_draws: draws shown under a pass (default 3).
    """

    def __init__(
        self,
        *,
        refresh_hz: float = 4.0,
        budget_ms: float = 5.0,
        dim_ms: float = 0.1,
        max_draws: int = 3,
    ):
        self.max_draws = max_draws
        self.window = WINDOW
        self.refresh_s = 1.0 / refresh_hz
        self.budget_ms, self.dim_ms = budget_ms, dim_ms
        self.rows: list[PerfRow] = []
        self.totals = PerfRow("Total", None, None)
        self.frame_ms: float | None = None
        self.gpu_available = False
        self.gpu_on = False  # GPU timing asked for (it can still be unavailable)
        self.has_profiler = False
        self._last_refresh = -math.inf
        self.draws_info: dict | None = None
        self.draws_unreliable: str | None = None  # PassDraws.unreliable of the last record
        self.notes: dict[str, dict[str, tuple[str, bool, bool]]] = {}  # source -> pass -> note

    def set_notes(self, source: str, notes: dict[str, tuple[str, bool, bool]]) -> None:
        """Per-pass notes from ``source`` (e.g. ``"reload"``, ``"baseline"``): ``{pass:
        (text, significant, slower)}``, drawn in a NOTE column (yellow slower / green
        faster when significant, dim otherwise); a source set first wins a pass."""
        self.notes[source] = dict(notes)

    def _note_of(self, name: str):
        return next((n[name] for n in self.notes.values() if name in n), None)

    def tick(self, telemetry, pass_names: list[str], now: float) -> bool:
        """Refresh from ``telemetry`` if ``refresh_hz`` allows at ``now`` (seconds). Returns
        True when the figures were recomputed."""
        fresh = self.rows and self.frame_ms is not None
        if fresh and 0 <= now - self._last_refresh < self.refresh_s:
            return False
        self._last_refresh = now
        self.refresh(telemetry, pass_names)
        return True

    def expire(self) -> None:
        """Make the next ``tick`` refresh whatever the rate limit says (a capture's last
        frame shows the newest figures, not those of up to 0.25 s before)."""
        self._last_refresh = -math.inf

    def refresh(self, telemetry, pass_names: list[str]) -> None:
        """Recompute the figures from ``telemetry.latest`` now."""
        prof = telemetry.session.profiling
        self.has_profiler = prof is not None
        self.draws_info = None if prof is None else prof.draws
        self.gpu_on = prof is not None and prof.gpu
        self.gpu_available = self.gpu_on and prof.gpu_available
        rec = telemetry.latest
        if rec is None:
            self.rows = [PerfRow(n, None, None) for n in pass_names]
            self.totals, self.frame_ms = PerfRow("Total", None, None), None
            return
        names = list(pass_names) + [n for n in CPU_ONLY_SCOPES if rec.stat(n, CPU)]
        draws = {p.name: p for p in rec.draw_passes()}
        self.draws_unreliable = next((p.unreliable for p in draws.values() if p.unreliable), None)
        self.rows = []
        for n in names:
            self.rows.append(pass_row := self._row(rec, n))
            if n in draws and self.gpu_available:
                self.rows += self._draw_rows(rec, draws[n], self.rows[-1].gpu_ms)
            t = (rec.transitions or {}).get(n)
            if t is not None and self.gpu_available:  # billed to the pass: a child row
                ms = pass_row.gpu_ms
                ok = plausible_transition(t, None if ms is None else ms * 1e6)
                self.rows.append(PerfRow(TRANSITION, None, t / 1e6 if ok else None, child=True))
        passes = [r for r in self.rows if not r.child]
        self.totals = PerfRow(
            "Total",
            _sum(r.cpu_ms for r in passes),
            _sum(r.gpu_ms for r in passes),
        )
        wall = rec.stat(FRAME_SCOPE, WALL)
        self.frame_ms = wall.mean_ms if wall is not None else None

    def _row(self, rec, name: str) -> PerfRow:
        cpu, gpu = rec.stat(name, CPU), rec.stat(name, GPU)
        lead = gpu or cpu
        return PerfRow(
            name,
            cpu.mean_ms if cpu else None,
            gpu.mean_ms if gpu and self.gpu_available else None,
            lead.delta_ms if lead else None,
            bool(lead and lead.outlier),
            lead.hitch_ms if lead else None,
        )

    def _draw_rows(self, rec, p, pass_gpu_ms: float | None) -> list[PerfRow]:
        """Rows under pass ``p`` (``engine.profiling.draws.PassDraws``): its costliest draws
        by window mean, ``+N more`` for the rest, ``ns/frag`` for a render pass."""
        rows = []
        for d in p.draws:
            st = rec.stat((p.name, d.label), DRAW)
            if st is not None:
                rows.append(
                    PerfRow("  " + d.label, None, st.mean_ms, st.delta_ms, st.outlier, None, True)
                )
        if len(rows) == 1 and p.draws[0].label == f"{p.name}#0":
            rows = []  # one unlabelled draw: the pass row says it all
        rows.sort(key=lambda r: -r.gpu_ms)
        if len(rows) > self.max_draws:
            rest = rows[self.max_draws :]
            rows = rows[: self.max_draws]
            rows.append(
                PerfRow(f"  +{len(rest)} more", None, _sum(r.gpu_ms for r in rest), child=True)
            )
        frags = p.total("fragment")  # None without pipeline statistics: the row says n/a
        if p.kind == "render":
            ns = pass_gpu_ms * 1e6 / frags if frags and pass_gpu_ms is not None else None
            rows.append(PerfRow(NS_FRAG, None, ns, child=True))
        return rows

    def size(self, form: int = 0) -> tuple[int, int]:
        """Panel size in cells ``(cols, rows)`` of ``form`` (0 full, 1 without the SHARE
        bars, 2 also without the DELTA column; 3-5 the same without draw rows)."""
        rows = self._rows(form)
        extra = NOTE_W if any(self.notes.values()) else 0
        return FORM_WIDTHS[form % len(FORM_WIDTHS)] + extra, len(rows) + 5

    def _rows(self, form: int) -> list[PerfRow]:
        """The rows ``form`` shows: none while nothing is timed and no note stands beside
        them (a column of n/a above the 'profile gpu on' hint says nothing)."""
        if not (self.has_profiler or any(self.notes.values())):
            return []
        return self.rows if form < len(FORM_WIDTHS) else [r for r in self.rows if not r.child]

    def sizes(self) -> tuple[tuple[int, int], ...]:
        """Every form's size, widest first (``size(i)`` for each form); six forms when
        draws are shown (the last three collapse them)."""
        n = len(FORM_WIDTHS) * (2 if any(r.child for r in self.rows) else 1)
        return tuple(self.size(i) for i in range(n))

    def draw(self, ov: DebugOverlay, col: int, row: int, form: int = 0) -> tuple[int, int]:
        """Write the table in ``form`` with its top-left cell at ``(col, row)``; return its
        size. Every line fits inside the panel (the note is cut to the panel's width)."""
        w, h = self.size(form)
        rows = self._rows(form)
        form %= len(FORM_WIDTHS)
        delta = form < 2
        ov.fill(col, row, w, h, PANEL_BG)
        x = col + 1
        head = f"{'PASS':<{NAME_W}} {'CPU ms':>{NUM_W}} {'GPU ms':>{NUM_W}}"
        if delta:
            head += f" {'DELTA':>{DELTA_W}}" + ("  SHARE" if form == 0 else "")
        ov.text(x, row, head, HEADER)
        if any(self.notes.values()):
            ov.text(col + w - NOTE_W, row, "NOTE", HEADER)
        basis = self.totals.gpu_ms or self.totals.cpu_ms or 0.0
        for i, r in enumerate(rows):
            y = row + 1 + i
            self._draw_row(ov, x, y, r, DIM if r.child else TEXT, delta=delta)
            own = r.gpu_ms if self.totals.gpu_ms else r.cpu_ms
            bar = r.name not in CPU_ONLY_SCOPES and r.name != NS_FRAG
            if form == 0 and own is not None and basis > 0 and bar:
                ov.bar(x + NUMBERS_W + DELTA_W + 3, y, BAR_W, own / basis, BAR, BAR_BG)
            note = None if r.child else self._note_of(r.name)
            if note is not None:
                text, significant, slower = note
                color = (SLOWER if slower else FASTER) if significant else DIM
                ov.text(col + w - NOTE_W, y, text[: NOTE_W - 1], color)
        y = row + 1 + len(rows)
        self._draw_row(ov, x, y, self.totals, HEADER, delta=delta)
        fps = f"{1000.0 / self.frame_ms:6.1f}" if self.frame_ms else "   n/a"
        ov.text(x, y + 1, f"Frame {fmt_ms(self.frame_ms)} ms {fps} FPS", TEXT)
        ov.text(x, y + 2, self._note()[: w - 2], DIM)
        return w, h

    def _draw_row(
        self, ov: DebugOverlay, x: int, y: int, r: PerfRow, name_color, *, delta: bool = True
    ) -> None:
        """A row; each number coloured by its own value (the Total row keeps ``name_color``:
        the per-pass budget does not apply to a frame's sum). ``delta``: with that column."""
        total = name_color is HEADER
        ov.text(x, y, f"{fit_name(r.name):<{NAME_W}}", name_color)
        x += NAME_W + 1
        if not r.child:
            ov.text(x, y, fmt_ms(r.cpu_ms), name_color if total else self._color(r.cpu_ms))
        x += NUM_W + 1
        plain = total or r.name == NS_FRAG  # ns, not ms: no budget colours
        ov.text(x, y, fmt_ms(r.gpu_ms), name_color if plain else self._color(r.gpu_ms))
        x += NUM_W
        if delta:
            color = DIM if not r.outlier else (SLOWER if (r.delta_ms or 0) > 0 else FASTER)
            ov.text(x + 1, y, fmt_delta(r.delta_ms), color)
            x += 1 + DELTA_W
        if r.hitch_ms is not None:  # held for HITCH_HOLD_S after a slow outlier
            ov.text(x, y, "!", HOT)

    def _note(self) -> str:
        if not self.has_profiler:  # the console command works in a running sample
            return "no timings: profile gpu on"
        if not self.gpu_on:
            return "no GPU timings: profile gpu on"
        if not self.gpu_available:
            return "GPU timing unavailable (n/a)"
        hitch = max(
            (r for r in self.rows if r.hitch_ms is not None),
            key=lambda r: r.hitch_ms,
            default=None,
        )
        if hitch is not None:
            return f"! {fit_name(hitch.name)} hitch {hitch.hitch_ms:.3f} ms"
        if self.draws_info and any(r.child for r in self.rows):  # where draw times come from
            if self.draws_unreliable:
                return f"draw times unreliable: {self.draws_unreliable.split(':')[0]}"
            if self.draws_info.get("inside"):
                return f"draws timed inside passes, mean of {self.window}"
            return "draws replayed alone (split): no overlap"
        return f"mean of {self.window} frames, >{self.budget_ms:g} ms red"

    def _color(self, v: float | None) -> tuple:
        if v is None:
            return DIM
        if v > self.budget_ms:
            return HOT
        return DIM if v < self.dim_ms else TEXT


def _sum(values) -> float | None:
    vals = [v for v in values if v is not None]
    return float(sum(vals)) if vals else None


class PerfPanel(Panel):
    """The timing table (``PerfOverlay``) as a HUD panel: always shown (without timings it
    says how to get them); forms: full, without SHARE bars, without the DELTA column."""

    key, modes = "perf", ("perf",)

    def __init__(self, tool):
        self.telemetry = tool.ctx.telemetry
        self.perf = PerfOverlay()
        self._notes_version = -1

    def activate(self, on: bool) -> None:
        self.perf.expire()  # figures from now, not from before an off spell

    def tick(self, data: HudData) -> bool:
        if data.notes_version != self._notes_version:  # the HUD's per-pass notes changed
            self._notes_version = data.notes_version
            self.perf.notes = data.notes
            self.perf.expire()
        if data.final:
            self.perf.expire()
        return self.perf.tick(self.telemetry, data.names, data.now)

    def sizes(self, data: HudData) -> tuple[tuple[int, int], ...]:
        return self.perf.sizes()

    def draw(self, ov: DebugOverlay, col: int, row: int, form: int, data: HudData) -> None:
        self.perf.draw(ov, col, row, form)
