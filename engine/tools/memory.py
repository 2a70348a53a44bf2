"""GPU memory and the texture table: every texture and buffer the graph, the standard
frame's passes and the tools hold, with size, format, usage and bytes; totals per category
against ``--gpu-budget MB``; wgpu-py's live object counts over time (a leak is a rising
line). In the console (``memory [all]``), the HUD (mode ``memory``), the telemetry session
(fact ``gpu_memory``, the table at start-up) and the shutdown report.

wgpu reports no memory size: bytes are computed from each object's description (texels x
bytes per texel over every mip and layer; a buffer's size) and leave out the driver's
alignment, padding and compression. What is found is what the graph's tables, the passes
and the tools reference now: a texture a resize or a shadow-size change replaced is gone
from the table (its owner dropped it), even while wgpu still counts it until released.
"""

from __future__ import annotations

import dataclasses
import logging
import re
import time
import weakref
from collections import deque
from dataclasses import asdict, dataclass

import wgpu

from engine.commands import Choice
from engine.graph import RenderGraph
from engine.tools.views import frame_resources

log = logging.getLogger("lantern")

#: Bytes per texel of the packed and depth formats; plain ones (r/rg/rgba/bgra x 8/16/32)
#: are sized from their names (``texel_bytes``), others count 4 and are marked ``ESTIMATED``.
TEXEL_BYTES = {
    "rgb10a2unorm": 4,
    "rgb10a2uint": 4,
    "rg11b10ufloat": 4,
    "rgb9e5ufloat": 4,
    "stencil8": 1,
    "depth16unorm": 2,
    "depth32float": 4,
    "depth24plus": 4,
    "depth24plus-stencil8": 4,
    "depth32float-stencil8": 5,
}
_PLAIN = re.compile(r"(r|rg|rgba|bgra)(8|16|32)(unorm|snorm|uint|sint|float)(-srgb)?")
ESTIMATED = "~"  # after a format whose texel size is a guess (4 bytes): compressed, unknown


def texel_bytes(fmt: str) -> int | None:
    """Bytes per texel of an uncompressed WebGPU texture format (``"rg32uint"``: 8), or None
    for one this table does not know (block-compressed formats, new ones)."""
    if fmt in TEXEL_BYTES:
        return TEXEL_BYTES[fmt]
    m = _PLAIN.fullmatch(fmt)
    return None if m is None else len(m.group(1)) * int(m.group(2)) // 8


CATEGORIES = ("targets", "textures", "storage", "uniform", "geometry", "staging", "other")
SAMPLE_S = 1.0  # object counts sampled this often
HISTORY = 600  # samples kept (10 minutes)


@dataclass(frozen=True)
class GpuResource:
    """One row of the table.

    Attributes:
        owner: who holds it (``graph``, a pass name, a tool name). name: its graph name or
            wgpu label. kind: ``texture`` or ``buffer``. size: ``WxH[xL] mN`` or bytes.
        format: texture format (``""`` for buffers). usage: the usage flags' names.
        bytes: computed size. category: one of ``CATEGORIES``.
    """

    owner: str
    name: str
    kind: str
    size: str
    format: str
    usage: str
    bytes: int
    category: str


def texture_bytes(tex) -> int:
    """Bytes of every mip and layer of ``tex`` (texels x ``texel_bytes`` x samples; 4 bytes
    a texel where the format is unknown, marked ``ESTIMATED`` in the table)."""
    w, h, layers = tex.size
    per = texel_bytes(tex.format) or 4
    total = 0
    for m in range(tex.mip_level_count):
        total += max(1, w >> m) * max(1, h >> m) * per
    depth = layers if tex.dimension != "3d" else 1  # (3d: mips shrink depth too; rare here)
    return total * depth * tex.sample_count


def _flags(value: int, enum) -> str:
    names = [n for n in dir(enum) if n.isupper() and not n.startswith("_")]
    return "|".join(n for n in names if getattr(enum, n) and value & getattr(enum, n)) or "-"


def texture_category(usage: int) -> str:
    u = wgpu.TextureUsage
    return "targets" if usage & (u.RENDER_ATTACHMENT | u.STORAGE_BINDING) else "textures"


def buffer_category(usage: int) -> str:
    u = wgpu.BufferUsage
    if usage & (u.MAP_READ | u.MAP_WRITE):
        return "staging"
    if usage & (u.VERTEX | u.INDEX | u.INDIRECT):
        return "geometry"
    if usage & u.STORAGE:
        return "storage"
    if usage & u.UNIFORM:
        return "uniform"
    return "other"


def describe(owner: str, name: str, obj) -> GpuResource:
    """The table row of a ``wgpu.GPUTexture`` or ``wgpu.GPUBuffer``."""
    if isinstance(obj, wgpu.GPUTexture):
        w, h, layers = obj.size
        size = f"{w}x{h}" + (f"x{layers}" if layers > 1 else "")
        if obj.mip_level_count > 1:
            size += f" m{obj.mip_level_count}"
        fmt = obj.format + ("" if texel_bytes(obj.format) else ESTIMATED)
        usage = _flags(obj.usage, wgpu.TextureUsage)
        return GpuResource(
            owner,
            name,
            "texture",
            size,
            fmt,
            usage,
            texture_bytes(obj),
            texture_category(obj.usage),
        )
    usage = _flags(obj.usage, wgpu.BufferUsage)
    return GpuResource(
        owner, name, "buffer", f"{obj.size} B", "", usage, int(obj.size), buffer_category(obj.usage)
    )


def _walk(obj, found: dict, owner: str, depth: int, seen: dict) -> None:
    """Collect GPU textures and buffers reachable from ``obj``'s attributes (and lists,
    tuples, dicts of them) up to ``depth`` levels; the first owner found keeps each."""
    if depth < 0 or seen.get(id(obj), -1) >= depth:  # walked already, at least as deep
        return
    seen[id(obj)] = depth
    if isinstance(obj, wgpu.GPUTexture | wgpu.GPUBuffer):
        found.setdefault(id(obj), (owner, obj))
        return
    skip = wgpu.GPUObjectBase | RenderGraph | str | bytes | int | float | type
    if isinstance(obj, skip) or obj is None:  # the graph: its tables are walked by name
        return
    if isinstance(obj, dict):
        values = list(obj.values())
    elif isinstance(obj, list | tuple | set | frozenset | deque):
        values = list(obj)
    else:
        values = list(getattr(obj, "__dict__", {}).values())
    for v in values:
        _walk(v, found, owner, depth - 1, seen)


def scan(graph, tools=(), objects: list | None = None) -> list[GpuResource]:
    """Every texture and buffer the graph's tables, its passes (and what they hold, e.g.
    the standard frame's ``FrameResources``), its readback clients and ``tools`` reference,
    largest first. Graph resources are named by their graph names."""
    found: dict = {}
    names: dict[int, str] = {}
    owned = [(n, graph.texture(n)) for n in graph.texture_names()]
    owned += [(n, graph.buffer(n)) for n in graph.buffer_names()]
    for n, obj in owned:
        found.setdefault(id(obj), ("graph", obj))
        names[id(obj)] = n
    seen: dict = {}
    res = frame_resources(graph)  # shared by the standard frame's passes: owned by the frame
    for f in dataclasses.fields(res) if res is not None else ():
        _walk(getattr(res, f.name), found, f"frame.{f.name}", 4, seen)
    for p in graph.passes:
        _walk(p, found, p.name, 5, seen)
    for c in graph.readbacks:
        _walk(c, found, getattr(c, "channel", type(c).__name__), 5, seen)
    for t in tools:
        _walk(t, found, getattr(t, "name", type(t).__name__), 5, seen)
    rows = [
        describe(owner, names.get(key) or obj.label or "(no label)", obj)
        for key, (owner, obj) in found.items()
    ]
    if objects is not None:  # the caller's: e.g. weak references to notice replacements
        objects.extend(obj for _, obj in found.values())
    return sorted(rows, key=lambda r: (-r.bytes, r.owner, r.name))


def totals(rows: list[GpuResource]) -> dict[str, int]:
    """Bytes per category (``CATEGORIES`` order, every key present) and ``total``."""
    out = {c: 0 for c in CATEGORIES}
    for r in rows:
        out[r.category] += r.bytes
    out["total"] = sum(out[c] for c in CATEGORIES)
    return out


def object_counts() -> dict[str, int]:
    """wgpu-py's live object counts by type (``wgpu.diagnostics``), those above zero."""
    from wgpu import diagnostics

    d = diagnostics.object_counts.get_dict()
    return {k: v["count"] for k, v in d.items() if k != "total" and v.get("count")}


def _held(counts: dict[str, int]) -> tuple[int, int]:
    """The live texture and buffer counts: what the table lists (encoders and bind groups
    come and go every frame)."""
    return counts.get("Texture", 0), counts.get("Buffer", 0)


def mib(n: int) -> str:
    """Bytes as ``12.3 MiB`` (``45.6 KiB`` below one MiB)."""
    return f"{n / 2**20:.1f} MiB" if n >= 2**20 else f"{n / 2**10:.1f} KiB"


class MemoryTool:
    """The ``memory`` command, the HUD's memory panel data, the session fact.

    Attributes:
        budget: ``--gpu-budget`` in bytes, or None. history: ``(time_s, counts, bytes)``
            samples, once a second: wgpu's object counts and the table's last total (the
            table itself is scanned when the panel or the command asks).
    """

    name = "memory"

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
            args=[Choice("all", "counts", optional=True)],
            help="GPU memory: totals per category vs --gpu-budget; 'all' lists every texture "
            "and buffer; 'counts' wgpu's object counts",
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
            if self.history and (replaced or _held(counts) != _held(self.history[-1][1])):
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
        return self.summary() + "\n" + self.counts_line()

    def report(self) -> str | None:
        self.refresh(force=True)
        return self.summary()
