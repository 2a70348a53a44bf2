"""Measure statement cost by ablation on the GPU (the wgpu-inspector method, from Python).

``ablate(path, entry)`` compiles the instrumented shader once (``instrument.py``), then times
the entry point with every cut value and with ``CUT_NONE`` (the whole body), plus the original
shader for the instrumentation overhead. Each timing is a pass with ``timestamp_writes`` holding
``inner`` dispatches / draws; the ``repeats`` rounds visit the variants round-robin (clock
drift and thermal state hit every cut alike) and each cut keeps the median. Writable buffers and
storage textures are restored from a pristine copy before every timed pass.

Compute: ``groups`` workgroups. Fragment: a generated fullscreen triangle over ``size`` that
feeds every input location the fragment reads. Vertex: ``vertices`` x ``instances`` drawn as a
triangle list with zeroed vertex buffers and a trivial fragment stage, targets matched to
``size``.
"""

from __future__ import annotations

import logging
import re
import statistics
from dataclasses import dataclass
from pathlib import Path

import wgpu

from engine.devtools.ablation.bindings import BindingError, BindingFiller
from engine.devtools.ablation.instrument import (
    CUT_NONE,
    Instrumented,
    InstrumentError,
    Row,
    instrument,
    local_types,
)
from engine.devtools.ablation.wgsl import (
    Function,
    Module,
    Param,
    WgslSyntaxError,
    const_int,
    entry_bindings,
    load_source,
    parse,
    scalar_of,
)

log = logging.getLogger("lantern")


class AblationError(ValueError):
    """A user's mistake or an input the tool cannot measure; the message is one line."""


@dataclass
class AblationResult:
    """Timings of one entry point. Times are nanoseconds of GPU time per timed pass
    (``inner`` dispatches or draws), medians over ``repeats``.

    ``cut_ns``, ``original_ns`` and ``full_ns`` are raw readings. The statement figures
    (``cost_ns``, ``noise_ns``, ``total_ns``) are *scaled* unless ``raw``: multiplied by
    ``scale`` = original / instrumented (no cut taken), so they add up to the time the
    unmodified shader takes rather than to the instrumented one (the guards and checksums
    cost 30-200% more on a real GPU). Scaling assumes the instrumentation slows every
    statement alike; ``dataclasses.replace(result, raw=True)`` gives the instrumented
    figures themselves (``--raw``).
    """

    path: str
    entry: str
    stage: str
    rows: list[Row]
    origin: list[tuple[str, int]]  # source line -> (file, line)
    cut_ns: dict[int, float]  # cut index (and CUT_NONE) -> median ns
    cut_se: dict[int, float]  # cut index -> standard error of that median (ns; nan: unknown)
    original_ns: float  # the unmodified shader
    repeats: int
    inner: int
    uniform_only: str | None
    adapter: str
    keeps_alive: bool = False
    raw: bool = False

    @property
    def scale(self) -> float:
        """original_ns / full_ns (1.0 when either reading is not positive)."""
        if self.original_ns > 0 and self.full_ns > 0:
            return self.original_ns / self.full_ns
        return 1.0

    @property
    def _k(self) -> float:
        return 1.0 if self.raw else self.scale

    @property
    def full_ns(self) -> float:
        """The instrumented shader with no cut taken."""
        return self.cut_ns[CUT_NONE]

    @property
    def overhead_ns(self) -> float:
        """Instrumented (no cut taken) minus original; may be negative (noise)."""
        return self.full_ns - self.original_ns

    @property
    def total_ns(self) -> float:
        """Cost of the body: full run minus the run cut before the first statement (scaled
        unless ``raw``)."""
        first = min(self.cut_ns)
        return (self.full_ns - self.cut_ns[first]) * self._k

    def cost_ns(self, row: Row) -> float | None:
        """t(cut after) - t(cut before) (scaled unless ``raw``); None when a cut is missing.
        Never clamped."""
        if not row.measurable:
            return None
        return (self.cut_ns[row.after] - self.cut_ns[row.before]) * self._k

    def noise_ns(self, row: Row) -> float | None:
        """Two standard errors of the row's cost (difference of two medians); None when
        unmeasured, nan when too few repeats to say."""
        if not row.measurable:
            return None
        a, b = self.cut_se[row.after], self.cut_se[row.before]
        return 2.0 * (a * a + b * b) ** 0.5 * self._k

    def within_noise(self, row: Row) -> bool:
        """A non-negative cost below its noise (negative ones are "too small to measure")."""
        cost, noise = self.cost_ns(row), self.noise_ns(row)
        return cost is not None and noise is not None and 0 <= cost < noise

    def where(self, row: Row) -> str:
        """``file:line`` of a row in the original files (includes resolved)."""
        name, line = self.origin[row.line - 1] if row.line - 1 < len(self.origin) else ("?", 0)
        return f"{name}:{line}"

    def ranked(self) -> list[tuple[Row, float | None]]:
        """Rows by descending cost; unmeasured rows last, in source order."""
        measured = [(r, self.cost_ns(r)) for r in self.rows if r.measurable]
        measured.sort(key=lambda rc: -rc[1])
        return measured + [(r, None) for r in self.rows if not r.measurable]


# --------------------------------------------------------------------------------------------
# Generated companion stages

_INT_SCALARS = ("u32", "i32")


def _io(m: Module, params: list[Param]) -> list[Param]:
    """Flatten parameters / struct members that carry ``@location`` or ``@builtin``."""
    out = []
    for p in params:
        if p.type in m.structs:
            out.extend(_io(m, m.structs[p.type]))
        else:
            out.append(p)
    return out


def _attr(p: Param, name: str) -> str | None:
    return next((a.args for a in p.attrs if a.name == name), None)


def fragment_feeder(m: Module, f: Function) -> str:
    """A vertex shader ``_ablate_vs`` drawing a fullscreen triangle (3 vertices) whose outputs
    are every location ``f`` reads: floats vary across the screen, integers are zero."""
    lines = ["struct _AblateVary {", "    @builtin(position) ablate_pos: vec4<f32>,"]
    sets = []
    for p in _io(m, f.params):
        loc = _attr(p, "location")
        if loc is None:
            continue
        interp = _attr(p, "interpolate")
        extra = f" @interpolate({interp})" if interp else ""
        lines.append(f"    @location({loc}){extra} ablate_v{loc}: {p.type},")
        scalar, _ = scalar_of(p.type, m)
        value = f"{p.type}()" if scalar in _INT_SCALARS else f"{p.type}(q.x)"
        sets.append(f"    o.ablate_v{loc} = {value};")
    lines += [
        "};",
        "@vertex",
        "fn _ablate_vs(@builtin(vertex_index) i: u32) -> _AblateVary {",
        "    let q = vec2<f32>(f32((i << 1u) & 2u), f32(i & 2u));",
        "    var o: _AblateVary;",
        "    o.ablate_pos = vec4<f32>(q * 2.0 - 1.0, 0.0, 1.0);",
        *sets,
        "    return o;",
        "}",
    ]
    return "\n".join(lines) + "\n"


SINK_FS = "@fragment\nfn _ablate_fs() -> @location(0) vec4<f32> { return vec4<f32>(0.0); }\n"

_VERTEX_FORMATS = {"f32": "float32", "u32": "uint32", "i32": "sint32", "f16": "float16"}


def _vertex_buffers(m: Module, f: Function) -> list[dict]:
    out = []
    for p in _io(m, f.params):
        loc = _attr(p, "location")
        if loc is None:
            continue
        scalar, n = scalar_of(p.type, m)
        if scalar not in _VERTEX_FORMATS:
            raise AblationError(f"vertex input {p.name}: no vertex format for {p.type}")
        fmt = _VERTEX_FORMATS[scalar] + (f"x{n}" if n > 1 else "")
        if scalar == "f16" and n in (1, 3):
            raise AblationError(f"vertex input {p.name}: no vertex format for {p.type}")
        attr = {"format": fmt, "offset": 0, "shader_location": const_int(loc, m)}
        out.append({"array_stride": 16, "step_mode": "vertex", "attributes": [attr]})
    return out


def _color_targets(m: Module, f: Function) -> tuple[list[dict], bool]:
    """(color targets for ``f``'s outputs, whether it writes ``frag_depth``)."""
    outs = _io(m, [Param(f.ret_attrs, "out", f.ret_type)]) if f.ret_type else []
    targets: dict[int, dict] = {}
    depth = False
    for p in outs:
        loc = _attr(p, "location")
        if _attr(p, "builtin") == "frag_depth":
            depth = True
        if loc is None:
            continue
        scalar, n = scalar_of(p.type, m)
        kind = {"u32": "uint", "i32": "sint"}.get(scalar, "float")
        fmt = {1: "r32", 2: "rg32", 3: "rgba32", 4: "rgba32"}[n] + kind
        targets[const_int(loc, m)] = {"format": fmt}  # a literal or a const (a define's)
    return [targets.get(k) for k in range(max(targets, default=-1) + 1)], depth


# --------------------------------------------------------------------------------------------
# Timing


@dataclass
class _Variant:
    pipeline: object
    groups: list


def parse_override(text: str) -> tuple[str, str]:
    """``"K=8"`` -> ``("K", "8")``.

    Raises:
        AblationError: no ``=`` or no name.
    """
    name, eq, value = text.partition("=")
    if not eq or not name.strip() or not value.strip():
        raise AblationError(f"--override {text!r}: expected NAME=VALUE (e.g. ITERATIONS=256)")
    return name.strip(), value.strip()


_TRUE, _FALSE = ("true", "1"), ("false", "0")


def override_constants(m: Module, overrides) -> dict[str, float]:
    """The pipeline ``constants`` map for ``overrides`` (``{"K": 8}`` or ``["K=8"]``): keys
    are the overrides' ``@id`` or names, values numbers checked against the override's type
    (``bool``: true/false/1/0; integers: whole numbers).

    Raises:
        AblationError: an unknown name, a value of the wrong type, or an override with no
            default that was given no value; the message names it and what to do.
    """
    pairs = overrides.items() if isinstance(overrides, dict) else map(parse_override, overrides)
    known = ", ".join(m.overrides) or "none"
    out: dict[str, float] = {}
    for name, raw in pairs:
        o = m.overrides.get(name)
        if o is None:
            raise AblationError(f"--override {name}: no such override (overrides: {known})")
        out[o.key] = _override_value(o, str(raw).strip().lower())
    missing = [o.name for o in m.overrides.values() if not o.default and o.key not in out]
    if missing:
        names = ", ".join(missing)
        raise AblationError(
            f"override {names} has no default: give a value with --override "
            f"{missing[0]}=VALUE (API: overrides={{{missing[0]!r}: value}})"
        )
    return out


def _override_value(o, text: str) -> float:
    ty = o.type or ("bool" if o.default in ("true", "false") else "")
    what = f"--override {o.name}={text}"
    if ty == "bool":
        if text not in _TRUE + _FALSE:
            raise AblationError(f"{what}: {o.name} is a bool; give true or false")
        return 1.0 if text in _TRUE else 0.0
    try:
        value = float(text)
    except ValueError:
        raise AblationError(f"{what}: not a number") from None
    integer = ty in ("u32", "i32") or (not ty and not re.search(r"[.eEf]", o.default))
    if integer and value != int(value):
        raise AblationError(f"{what}: {o.name} is an integer ({ty or 'abstract-int'})")
    if ty == "u32" and value < 0:
        raise AblationError(f"{what}: {o.name} is a u32; give a value >= 0")
    return value


class _Workload:
    """Pipelines and the encoding of one timed pass for an entry point."""

    def __init__(self, device, m, f, *, size, groups, vertices, instances, constants=None):
        self.device, self.m, self.f = device, m, f
        self.constants = constants or {}
        self.stage = f.stage
        self.size, self.groups = size, groups
        self.vertices, self.instances = vertices, instances
        self.target = None
        self.depth = None
        if self.stage != "compute":
            if self.stage == "fragment":
                self.colors, has_depth = _color_targets(m, f)
                has_depth = has_depth or not any(self.colors)  # depth only: a shadow caster's
            else:
                self.colors, has_depth = [{"format": "rgba8unorm"}], False
            w, h = size
            TU = wgpu.TextureUsage.RENDER_ATTACHMENT
            self.views = [
                None
                if c is None
                else device.create_texture(
                    size=(w, h, 1), format=c["format"], usage=TU
                ).create_view()
                for c in self.colors
            ]
            if has_depth:
                self.depth = device.create_texture(
                    size=(w, h, 1), format="depth32float", usage=TU
                ).create_view()

    def pipeline(self, source: str):
        d = self.device
        module = d.create_shader_module(code=source)
        c = {"constants": self.constants} if self.constants else {}
        if self.stage == "compute":
            return d.create_compute_pipeline(
                layout="auto", compute={"module": module, "entry_point": self.f.name, **c}
            )
        if self.stage == "fragment":
            vertex = {"module": module, "entry_point": "_ablate_vs", "buffers": [], **c}
            fragment = {"module": module, "entry_point": self.f.name, "targets": self.colors, **c}
        else:
            buffers = _vertex_buffers(self.m, self.f)
            vertex = {"module": module, "entry_point": self.f.name, "buffers": buffers, **c}
            fragment = {"module": module, "entry_point": "_ablate_fs", "targets": self.colors, **c}
        depth = None
        if self.depth is not None:
            depth = {"format": "depth32float", "depth_write_enabled": True,
                     "depth_compare": "always"}  # fmt: skip
        return d.create_render_pipeline(
            layout="auto",
            vertex=vertex,
            fragment=fragment,
            primitive={"topology": "triangle-list"},
            depth_stencil=depth,
        )

    def vertex_buffers(self) -> list:
        if self.stage != "vertex":
            return []
        size = 16 * max(self.vertices, 1)
        return [
            self.device.create_buffer(size=size, usage=wgpu.BufferUsage.VERTEX)
            for _ in _vertex_buffers(self.m, self.f)
        ]

    def encode(self, encoder, v: _Variant, vbufs, qs, q: int, inner: int) -> None:
        tw = {"query_set": qs, "beginning_of_pass_write_index": q,
              "end_of_pass_write_index": q + 1}  # fmt: skip
        if self.stage == "compute":
            p = encoder.begin_compute_pass(timestamp_writes=tw)
            p.set_pipeline(v.pipeline)
            for k, g in enumerate(v.groups):
                p.set_bind_group(k, g)
            for _ in range(inner):
                p.dispatch_workgroups(*self.groups)
            p.end()
            return
        colors = [
            None
            if view is None
            else {"view": view, "load_op": "clear", "store_op": "store", "clear_value": (0,) * 4}
            for view in self.views
        ]
        ds = None
        if self.depth is not None:
            ds = {"view": self.depth, "depth_load_op": "clear", "depth_store_op": "store",
                  "depth_clear_value": 0.0}  # fmt: skip
        p = encoder.begin_render_pass(
            color_attachments=colors, depth_stencil_attachment=ds, timestamp_writes=tw
        )
        p.set_pipeline(v.pipeline)
        for k, g in enumerate(v.groups):
            p.set_bind_group(k, g)
        for k, b in enumerate(vbufs):
            p.set_vertex_buffer(k, b)
        count = 3 if self.stage == "fragment" else self.vertices
        instances = 1 if self.stage == "fragment" else self.instances
        for _ in range(inner):
            p.draw(count, instances)
        p.end()


MAX_QUERIES = 4096  # WebGPU's limit on a query set's count


def _time_variants(device, work: _Workload, variants, restore, repeats: int, inner: int):
    """Median ns per variant over ``repeats`` rounds. Round ``r`` visits the variants in an
    order rotated by ``r`` (no variant always runs first after an idle gap); as many rounds as
    one query set holds go into one submit, so the GPU stays busy between them. One untimed
    round first (shader compilation, caches, clocks)."""
    n = len(variants)
    per_submit = max(1, MAX_QUERIES // (2 * n))
    qs = device.create_query_set(type="timestamp", count=2 * n * min(per_submit, repeats))
    U = wgpu.BufferUsage
    resolve = device.create_buffer(size=qs.count * 8, usage=U.QUERY_RESOLVE | U.COPY_SRC)
    vbufs = work.vertex_buffers()
    samples: list[list[float]] = [[] for _ in range(n)]
    warm = device.create_command_encoder()
    for v in variants:
        restore(warm)
        work.encode(warm, v, vbufs, qs, 0, inner)
    device.queue.submit([warm.finish()])
    done = 0
    while done < repeats:
        rounds = min(per_submit, repeats - done)
        encoder = device.create_command_encoder()
        slots = []  # (variant index, query index)
        for r in range(rounds):
            for j in range(n):
                k = (j + done + r) % n
                q = 2 * len(slots)
                restore(encoder)
                work.encode(encoder, variants[k], vbufs, qs, q, inner)
                slots.append((k, q))
        encoder.resolve_query_set(qs, 0, 2 * len(slots), resolve, 0)
        device.queue.submit([encoder.finish()])
        raw = device.queue.read_buffer(resolve, 0, 16 * len(slots)).cast("Q")
        for k, q in slots:
            samples[k].append(float(raw[q + 1] - raw[q]))
        done += rounds
    return [statistics.median(s) for s in samples], [_median_se(s) for s in samples]


def _median_se(xs: list[float]) -> float:
    """Standard error of the median from the median absolute deviation (normal model:
    sigma = 1.4826 MAD, se(median) = 1.2533 sigma / sqrt(n)); nan below 3 samples."""
    if len(xs) < 3:
        return float("nan")
    med = statistics.median(xs)
    mad = statistics.median(abs(x - med) for x in xs)
    return 1.2533 * 1.4826 * mad / len(xs) ** 0.5


# --------------------------------------------------------------------------------------------
# Errors as one line

_LOC = re.compile(r"wgsl:(\d+):(\d+)")


def compile_message(err: Exception, origin: list[tuple[str, int]]) -> str:
    """One line from a wgpu/naga error: its headline plus the original file:line."""
    text = str(err)
    lines = [x.strip() for x in text.splitlines() if x.strip()]
    head = next(
        (x for x in lines if "error" in x.lower() and not x.startswith(("Validation", "In "))),
        lines[-1] if lines else type(err).__name__,
    )
    head = re.sub(r"^Shader '[^']*' ", "", head)
    m = _LOC.search(text)
    if m and 0 < int(m.group(1)) <= len(origin):
        name, line = origin[int(m.group(1)) - 1]
        return f"{name}:{line}: {head}"
    return head


def ablate(
    path: str | Path,
    entry: str,
    *,
    device: wgpu.GPUDevice,
    size: tuple[int, int] = (256, 256),
    groups: tuple[int, int, int] = (64, 1, 1),
    vertices: int = 3072,
    instances: int = 1,
    sets: list[str] = (),
    overrides: dict[str, float] | list[str] = (),
    elements: int = 65536,
    texture_size: tuple[int, int] = (256, 256),
    repeats: int = 15,
    inner: int = 1,
    keep_alive: bool = True,
    adapter: str = "",
    defines: dict | None = None,
) -> AblationResult:
    """Cost of each statement of ``entry`` in the WGSL file ``path`` (``// #include`` lines
    are expanded; ``defines`` picks the variant: ``{"OUT_NORMALS": 1}``). ``device`` needs
    the ``timestamp-query`` feature. See the module docstring for what is drawn or
    dispatched. ``overrides``: values of the shader's ``override``
    constants by name (``{"K": 8}``, or ``["K=8"]`` as ``--override`` gives them); an
    override without a default must be given one. ``keep_alive``: guards store a checksum
    of the live locals (``instrument`` module docstring) so the compiler cannot delete work
    before a cut; it costs more instrumentation overhead (large on lavapipe, which
    predicates branches). Statement figures are scaled to the original's time
    (``AblationResult``).

    Raises:
        AblationError: a file that cannot be read or is not UTF-8 text, WGSL that does not
            parse or compile, an unknown entry point, an entry point with no statements, a
            binding that cannot be filled, an override without a value, an adapter without
            timestamp queries; the message is one line.
    """
    path = Path(path)
    try:
        source, origin = load_source(path, defines)
    except OSError as e:
        raise AblationError(f"{path}: cannot read ({e.strerror or e})") from None
    except WgslSyntaxError as e:
        raise AblationError(f"{path}: {e}") from None
    if "timestamp-query" not in device.features:
        raise AblationError("the device has no timestamp-query feature: ablation needs GPU timers")
    try:
        device.create_shader_module(code=source)
    except wgpu.GPUError as e:
        raise AblationError(f"{path}: does not compile: {compile_message(e, origin)}") from None
    try:
        m = parse(source)
        if keep_alive and entry in m.functions:
            types = local_types(m, entry, lambda code: device.create_shader_module(code=code))
        else:
            types = {}
        ins = instrument(m, entry, types)
    except (WgslSyntaxError, InstrumentError) as e:
        raise AblationError(f"{path}: {e}") from None
    constants = override_constants(m, overrides)
    return _measure(
        device, m, ins, origin, str(path), size=size, groups=groups, vertices=vertices,
        instances=instances, sets=sets, constants=constants, elements=elements,
        texture_size=texture_size, repeats=repeats, inner=inner, adapter=adapter,
    )  # fmt: skip


def build(device, m: Module, ins: Instrumented, origin, *, sets=(), elements=65536,
          texture_size=(256, 256), size=(256, 256), groups=(64, 1, 1), vertices=3072,
          instances=1, constants=None):  # fmt: skip
    """Create the workload, the original and instrumented pipelines and their bindings.
    Returns (workload, original variant, instrumented variants by cut value, restore)."""

    f = ins.entry
    work = _Workload(device, m, f, size=size, groups=groups, vertices=vertices,
                     instances=instances, constants=constants)  # fmt: skip
    extra = {"fragment": fragment_feeder(m, f) if f.stage == "fragment" else "",
             "vertex": SINK_FS}.get(f.stage, "")  # fmt: skip
    try:
        filler = BindingFiller(device, m, entry_bindings(m, f.name), sets=sets,
                               elements=elements, texture_size=texture_size)  # fmt: skip
    except (BindingError, WgslSyntaxError) as e:
        raise AblationError(f"{f.name}: {e}") from None
    try:
        original = work.pipeline(m.source + extra)
        instrumented = work.pipeline(ins.source + extra)
    except wgpu.GPUError as e:
        raise AblationError(f"{f.name}: pipeline: {compile_message(e, origin)}") from None
    try:
        base = filler.bind_groups(original, ins.group)
        inst = filler.bind_groups(instrumented, ins.group)
    except (wgpu.GPUError, BindingError) as e:
        raise AblationError(f"{f.name}: bindings: {compile_message(e, origin)}") from None
    values = [*range(ins.cuts), CUT_NONE]
    cut_buf = device.create_buffer(
        size=256 * len(values), usage=wgpu.BufferUsage.UNIFORM | wgpu.BufferUsage.COPY_DST
    )
    data = bytearray(256 * len(values))
    for k, v in enumerate(values):
        data[256 * k : 256 * k + 4] = v.to_bytes(4, "little")
    device.queue.write_buffer(cut_buf, 0, data)
    layout = instrumented.get_bind_group_layout(ins.group)
    sink = device.create_buffer(size=16, usage=wgpu.BufferUsage.STORAGE)
    variants = {}
    for k, v in enumerate(values):
        entries = [{"binding": 0, "resource": {"buffer": cut_buf, "offset": 256 * k, "size": 16}}]
        if ins.keeps_alive:
            entries.append({"binding": 1, "resource": {"buffer": sink, "offset": 0, "size": 16}})
        bg = device.create_bind_group(layout=layout, entries=entries)
        variants[v] = _Variant(instrumented, [*inst.groups, bg])
    return work, _Variant(original, base.groups), variants, base.restore, (filler, cut_buf, sink)


def _measure(device, m, ins, origin, path, *, repeats, inner, adapter, **kw) -> AblationResult:
    work, original, variants, restore, _keep = build(device, m, ins, origin, **kw)
    order = [original, *variants.values()]
    try:
        ns, se = _time_variants(device, work, order, restore, max(1, repeats), max(1, inner))
    except wgpu.GPUError as e:
        raise AblationError(f"{ins.entry.name}: {compile_message(e, origin)}") from None
    cut_ns = dict(zip(variants, ns[1:], strict=True))
    cut_se = dict(zip(variants, se[1:], strict=True))
    return AblationResult(
        path=path, entry=ins.entry.name, stage=ins.entry.stage, rows=ins.rows, origin=origin,
        cut_ns=cut_ns, cut_se=cut_se, original_ns=ns[0], repeats=repeats, inner=inner,
        uniform_only=ins.uniform_only, adapter=adapter, keeps_alive=ins.keeps_alive,
    )  # fmt: skip
