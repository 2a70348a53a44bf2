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
from collections import deque
from dataclasses import dataclass

import wgpu

from engine.graph import RenderGraph
from engine.passes.resources import frame_resources

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


def held(counts: dict[str, int]) -> tuple[int, int]:
    """The live texture and buffer counts: what the table lists (encoders and bind groups
    come and go every frame)."""
    return counts.get("Texture", 0), counts.get("Buffer", 0)


def mib(n: int) -> str:
    """Bytes as ``12.3 MiB`` (``45.6 KiB`` below one MiB)."""
    return f"{n / 2**20:.1f} MiB" if n >= 2**20 else f"{n / 2**10:.1f} KiB"


def material_table(graph) -> str:
    """The standard frame's material textures: per texture array (format, size, layers,
    bytes) and per material (each texture's slot, image, array layer and bytes)."""
    res = frame_resources(graph)
    mats = getattr(res, "materials", None)
    if mats is None:
        return "material textures: no standard frame"
    arrays = mats.array_rows()
    lines = [
        f"texture arrays: {len(arrays)}, {mib(sum(r[4] for r in arrays))}",
        f"{'array':<40} {'format':<16} {'size':>6} {'layers':>6} {'bytes':>12}",
    ]
    lines += [f"{a[:40]:<40} {f:<16} {n:>6} {k:>6} {b:>12,}" for a, f, n, k, b in arrays]
    rows = mats.material_rows()
    lines.append(f"by material: {len(rows)} texture(s)")
    lines.append(f"{'material':<20} {'slot':<18} {'image':<24} {'array[layer]':<40} {'bytes':>10}")
    lines += [f"{m[:20]:<20} {s:<18} {i[:24]:<24} {a[:40]:<40} {b:>10,}" for m, s, i, a, b in rows]
    return "\n".join(lines)
