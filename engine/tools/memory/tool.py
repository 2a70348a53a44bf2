"""The memory tool: ``memory`` in the console and the portal, the HUD's ``memory`` mode, and
``--gpu-budget MB`` (the GPU memory table of ``engine.tools.memory.table``)."""

from __future__ import annotations

import logging
import time
import weakref
from collections import deque
from dataclasses import asdict

from engine.commands import Choice
from engine.options import int_type
from engine.tools.memory.panel import MemoryPanel
from engine.tools.memory.table import (
    CATEGORIES,
    ESTIMATED,
    HISTORY,
    SAMPLE_S,
    GpuResource,
    held,
    material_table,
    mib,
    object_counts,
    scan,
    totals,
)

log = logging.getLogger("lantern")

budget_type = int_type(1, 1 << 20, "a budget in MiB")


class MemoryTool:
    """The ``memory`` command, the HUD's memory panel data, the session fact.

    Attributes:
        budget: ``--gpu-budget`` in bytes, or None. history: ``(time_s, counts, bytes)``
            samples, once a second: wgpu's object counts and the table's last total (the
            table itself is scanned when the panel or the command asks).
    """

    name = "memory"
    panels = (MemoryPanel,)

    @classmethod
    def add_arguments(cls, parser) -> None:
        parser.add_argument_group("GPU memory").add_argument(
            "--gpu-budget",
            type=budget_type,
            metavar="MB",
            default=None,
            help="GPU memory budget in MiB for the texture table ('memory', HUD mode memory): "
            "totals are shown against it and a warning logged once when exceeded",
        )

    def __init__(self):
        self.history: deque = deque(maxlen=HISTORY)
        self._scanned: list = []  # weak references to what the last scan found
        self.rows: list[GpuResource] = []
        self._last = -1e9
        self._warned = False

    def install(self, ctx) -> None:
        self.ctx = ctx
        mb = ctx.option("gpu_budget")
        self.budget = None if mb is None else int(mb * 2**20)
        ctx.commands.register(
            "memory",
            self.command,
            args=[Choice("all", "counts", "textures", optional=True)],
            help="GPU memory: totals per category vs --gpu-budget; 'all' lists every texture "
            "and buffer; 'counts' wgpu's object counts; 'textures' the material textures by "
            "texture array and by material",
        )
        self.refresh(force=True)
        ctx.telemetry.session.facts["gpu_memory"] = self.fact()
        ctx.reports.append(self.report)
        self._undo = ctx.on_update(self._sample)

    def _sample(self, frame_ctx) -> None:
        """Once a second: wgpu's object counts (cheap). When the texture or buffer counts
        changed (a leak, a first use) or an object of the last scan is gone (a resize or a
        shadow-size change replaced it), the table is scanned again and the session fact
        resent, so the portal's memory panel shows the old targets gone."""
        now = time.perf_counter()
        if now - self._last >= SAMPLE_S:
            counts = object_counts()
            replaced = any(ref() is None for ref in self._scanned)  # a resize, shadow-size
            if self.history and (replaced or held(counts) != held(self.history[-1][1])):
                self.refresh(force=True)
                self.ctx.telemetry.set_fact("gpu_memory", self.fact())
                return
            self._last = now
            total = self.history[-1][2] if self.history else 0
            self.history.append((now, counts, total))

    def close(self) -> None:
        if getattr(self, "_undo", None) is not None:
            self._undo()
            self._undo = None

    def refresh(self, *, force: bool = False) -> list[GpuResource]:
        """Scan again (at most once per ``SAMPLE_S`` unless ``force``); keeps a sample."""
        now = time.perf_counter()
        if force or now - self._last >= SAMPLE_S:
            self._last = now
            objects: list = []
            self.rows = scan(self.ctx.graph, self.ctx.tools, objects)
            self._scanned = [weakref.ref(o) for o in objects]
            total = totals(self.rows)["total"]
            self.history.append((now, object_counts(), total))
            if self.budget is not None and total > self.budget and not self._warned:
                self._warned = True
                log.warning(
                    "GPU memory: %s of textures and buffers is over --gpu-budget %s",
                    mib(total),
                    mib(self.budget),
                )
        return self.rows

    def fact(self) -> dict:
        """The table as JSON-ready data: rows, totals, budget bytes, object counts."""
        return {
            "budget": self.budget,
            "totals": totals(self.rows),
            "rows": [asdict(r) for r in self.rows],
            "objects": self.history[-1][1] if self.history else {},
            # (seconds since the first sample, bytes, live objects), the last 120 samples
            "history": [
                (round(t - self.history[0][0], 2), b, sum(c.values()))
                for t, c, b in list(self.history)[-120:]
            ],
        }

    def summary(self) -> str:
        t = totals(self.rows)
        parts = ", ".join(f"{c} {mib(t[c])}" for c in CATEGORIES if t[c])
        budget = "" if self.budget is None else f" of --gpu-budget {mib(self.budget)}"
        over = " (OVER)" if self.budget is not None and t["total"] > self.budget else ""
        n = len(self.rows)
        return f"GPU memory: {mib(t['total'])}{budget}{over} in {n} objects: {parts}"

    def table(self) -> str:
        head = f"{'owner':<14} {'name':<24} {'size':<16} {'format':<18} {'bytes':>12}  usage"
        lines = [head]
        for r in self.rows:
            lines.append(
                f"{r.owner[:14]:<14} {r.name[:24]:<24} {r.size[:16]:<16} {r.format[:18]:<18} "
                f"{r.bytes:>12,}  {r.usage}"
            )
        if any(r.format.endswith(ESTIMATED) for r in self.rows):
            lines.append(
                f"{ESTIMATED} after a format: its texel size is not known, 4 bytes assumed"
            )
        return "\n".join(lines)

    def counts_line(self) -> str:
        """wgpu's live texture, view, buffer and bind-group counts, each with its change
        since the first sample (``tex 14+0``: a steady rise is a leak)."""
        if not self.history:
            return "wgpu objects: none sampled"
        span, parts = self.count_changes()
        return f"wgpu objects, change over {span:.0f} s: " + " ".join(parts)

    def count_changes(self) -> tuple[float, list[str]]:
        """Seconds between the first and the last sample, and ``"<kind> <count><change>"``
        for textures, views, buffers and bind groups (the HUD fits them to its width)."""
        t0, first, _ = self.history[0]
        t1, last, _ = self.history[-1]
        keys = (("Texture", "tex"), ("TextureView", "view"), ("Buffer", "buf"), ("BindGroup", "bg"))
        parts = [
            f"{short} {last.get(k, 0)}{last.get(k, 0) - first.get(k, 0):+d}" for k, short in keys
        ]
        return t1 - t0, parts

    def command(self, which: str | None) -> str:
        self.refresh(force=True)
        if which == "all":
            return self.summary() + "\n" + self.table()
        if which == "counts":
            return self.counts_line()
        if which == "textures":
            return material_table(self.ctx.graph)
        return self.summary() + "\n" + self.counts_line()

    def report(self) -> str | None:
        self.refresh(force=True)
        return self.summary()
