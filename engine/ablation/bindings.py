"""Fill an entry point's bindings generically, from the shader's own declarations.

Buffers are zero except for values given as ``NAME.FIELD=V`` (see ``parse_set``); runtime-sized
arrays get ``elements`` elements; textures are ``texture_size`` texels of a format the binding
accepts; samplers are nearest-filtering (a comparison sampler compares ``less``). Writable
storage buffers and storage textures keep a pristine copy that ``restore`` copies back, so
every measured dispatch starts from the same data.
"""

from __future__ import annotations

import re
import struct
from dataclasses import dataclass, field

import wgpu

from engine.ablation.wgsl import (
    GlobalVar,
    Module,
    array_stride,
    const_int,
    layout,
    matrix_shape,
    member_offsets,
    resolve_alias,
    scalar_of,
    split_template,
)


class BindingError(ValueError):
    """A binding this filler cannot create; the message names it."""


_SCALAR_FMT = {"f32": "<f", "u32": "<I", "i32": "<i", "bool": "<I", "f16": "<e"}
_SAMPLED_FORMAT = {"f32": "rgba8unorm", "u32": "rgba32uint", "i32": "rgba32sint"}
_STEP = re.compile(r"\s*(?:\.?\s*([A-Za-z_][A-Za-z0-9_]*)|\[\s*([0-9]+)\s*\])")


def parse_set(text: str) -> tuple[list[str | int], list[float]]:
    """``"params.iterations=500"`` -> (["params", "iterations"], [500.0]);
    ``"v=1,2,3"`` -> (["v"], [1.0, 2.0, 3.0]); ``"p.lights[2].color=1,0,0"`` ->
    (["p", "lights", 2, "color"], [1.0, 0.0, 0.0]): a name is a struct member, ``[k]``
    an element of an array, a column of a matrix or a component of a vector.

    Raises:
        BindingError: no ``=``, a path that is not NAME(.FIELD|[INDEX])*, a value that is
            not a number.
    """
    if "=" not in text:
        raise BindingError(f"--set {text!r}: expected NAME.FIELD=VALUE[,VALUE...]")
    path, values = text.split("=", 1)
    try:
        nums = [float(v) for v in values.split(",")]
    except ValueError:
        raise BindingError(f"--set {text!r}: values must be numbers") from None
    steps: list[str | int] = []
    pos, path = 0, path.strip()
    while pos < len(path):
        m = _STEP.match(path, pos)
        if m is None or m.end() == pos or (not steps and m.group(1) is None):
            raise BindingError(f"--set {text!r}: expected NAME(.FIELD|[INDEX])*=VALUE[,VALUE...]")
        steps.append(m.group(1) if m.group(1) is not None else int(m.group(2)))
        pos = m.end()
    if not steps:
        raise BindingError(f"--set {text!r}: expected NAME.FIELD=VALUE[,VALUE...]")
    return steps, nums


def _field(m: Module, var: GlobalVar, path: list, elements: int) -> tuple[int, str]:
    """(byte offset, type) of ``var.a[3].b`` inside its buffer (``wgsl.layout`` rules)."""
    offset, ty = 0, resolve_alias(var.type, m)
    for step in path:
        if isinstance(step, int):
            off, ty = _element(m, var, ty, step, elements)
            offset += off
            continue
        if ty not in m.structs:
            raise BindingError(f"--set {var.name}: {ty} has no field {step!r}")
        fields = member_offsets(ty, m)
        if step not in fields:
            known = ", ".join(fields)
            raise BindingError(f"--set {var.name}: no field {step!r} (fields: {known})")
        off, ty = fields[step]
        offset, ty = offset + off, resolve_alias(ty, m)
    return offset, ty


def _element(m: Module, var: GlobalVar, ty: str, k: int, elements: int) -> tuple[int, str]:
    """(offset, type) of element ``k`` of an array, column of a matrix, component of a
    vector."""
    name, args = split_template(ty)
    if name == "array":
        count = const_int(args[1], m) if len(args) > 1 else elements
        if k >= count:
            raise BindingError(f"--set {var.name}: index {k} past the end of {ty} ({count})")
        return k * array_stride(ty, m), resolve_alias(args[0], m)
    if mat := matrix_shape(ty, m):
        cols, _, column = mat
        if k >= cols:
            raise BindingError(f"--set {var.name}: {ty} has {cols} columns, not {k + 1}")
        size, align = layout(column, m)
        return k * (-(-size // align) * align), column
    scalar, n = scalar_of(ty, m)
    if n > 1 and scalar in _SCALAR_FMT:
        if k >= n:
            raise BindingError(f"--set {var.name}: {ty} has {n} components, not {k + 1}")
        return k * layout(scalar, m)[0], scalar
    raise BindingError(f"--set {var.name}: cannot index a value of type {ty}")


def _slots(m: Module, ty: str, elements: int) -> list[tuple[int, str]] | None:
    """(offset, scalar type) of every component a flat value list fills: a scalar, a
    vector, a matrix (column-major, at its column stride) or an array of them (at its
    stride); None for structs and other types."""
    ty = resolve_alias(ty, m)
    scalar, n = scalar_of(ty, m)
    if scalar in _SCALAR_FMT:
        return [(k * layout(scalar, m)[0], scalar) for k in range(n)]
    name, args = split_template(ty)
    mat = matrix_shape(ty, m)
    if mat or name == "array":
        if mat:
            count, elem = mat[0], mat[2]
            step = layout(ty, m)[0] // count
        else:
            count = const_int(args[1], m) if len(args) > 1 else elements
            step, elem = array_stride(ty, m), args[0]
        inner = _slots(m, elem, elements)
        if inner is None:
            return None
        return [(k * step + o, s) for k in range(count) for o, s in inner]
    return None


def _write_value(m: Module, data: bytearray, offset: int, ty: str, vals: list[float], what: str,
                 elements: int = 1):  # fmt: skip
    if ty in m.structs:
        fields = ", ".join(f.name for f in m.structs[ty])
        raise BindingError(f"--set {what}: that is a struct {ty}; name a field ({fields})")
    slots = _slots(m, ty, elements)
    if slots is None:
        raise BindingError(
            f"--set {what}: cannot set a value of type {ty} (scalars, vectors, matrices and "
            "arrays of them)"
        )
    exact = not split_template(ty)[0] == "array"
    if len(vals) > len(slots) or (exact and len(vals) != len(slots)):
        raise BindingError(
            f"--set {what}: {ty} takes {len(slots)} number(s)"
            + ("" if exact else " at most (from element 0)")
        )
    for (off, scalar), v in zip(slots, vals, strict=False):
        fmt = _SCALAR_FMT[scalar]
        struct.pack_into(fmt, data, offset + off, v if fmt in ("<f", "<e") else int(v))


@dataclass
class FilledBindings:
    """Bind groups for groups 0..N-1 of a pipeline, and how to restore what it writes."""

    groups: list[wgpu.GPUBindGroup]
    restores: list[tuple[object, object, tuple]] = field(default_factory=list)  # (src, dst, size)
    resources: list[object] = field(default_factory=list)  # keeps them alive

    def restore(self, encoder: wgpu.GPUCommandEncoder) -> None:
        """Record copies that put every writable resource back to its initial contents."""
        for src, dst, size in self.restores:
            if isinstance(src, wgpu.GPUBuffer):
                encoder.copy_buffer_to_buffer(src, 0, dst, 0, size[0])
            else:
                encoder.copy_texture_to_texture({"texture": src}, {"texture": dst}, size)


class BindingFiller:
    """Creates the resources of ``vars`` once; ``bind_groups(pipeline)`` may then be called
    for several pipelines of the same shader (instrumented and original)."""

    def __init__(
        self,
        device: wgpu.GPUDevice,
        m: Module,
        vars: list[GlobalVar],
        *,
        sets: list[str] = (),
        elements: int = 65536,
        texture_size: tuple[int, int] = (256, 256),
    ):
        self.device, self.m = device, m
        self.vars = vars
        self.elements, self.texture_size = elements, texture_size
        self.restores: list[tuple] = []
        self.keep: list[object] = []
        values = self._values(sets)
        self.resources = {(v.group, v.binding): self._create(v, values.get(v.name)) for v in vars}

    def _values(self, sets) -> dict[str, bytearray]:
        out: dict[str, bytearray] = {}
        by_name = {v.name: v for v in self.vars}
        for text in sets:
            path, vals = parse_set(text)
            var = by_name.get(path[0])
            if var is None or var.space not in ("uniform", "storage"):
                names = ", ".join(v.name for v in self.vars if v.space in ("uniform", "storage"))
                raise BindingError(
                    f"--set {text!r}: {path[0]!r} is not a buffer this entry point uses "
                    f"(buffers: {names or 'none'})"
                )
            data = out.setdefault(var.name, bytearray(self._buffer_size(var)))
            offset, ty = _field(self.m, var, path[1:], self.elements)
            _write_value(self.m, data, offset, ty, vals, text, self.elements)
        return out

    def _buffer_size(self, v: GlobalVar) -> int:
        size, _ = layout(v.type, self.m, runtime_count=self.elements)
        return max(16, -(-size // 16) * 16)

    def _create(self, v: GlobalVar, data: bytearray | None):
        where = f"@group({v.group}) @binding({v.binding}) {v.name}: {v.type}"
        try:
            if v.space in ("uniform", "storage"):
                return self._buffer(v, data)
            if v.space == "":
                return self._handle(v)
        except BindingError as e:
            raise BindingError(f"{where}: {e}") from None
        except wgpu.GPUError as e:
            first = next((x.strip() for x in str(e).splitlines() if x.strip()), "")
            raise BindingError(f"{where}: cannot fill ({first})") from None
        raise BindingError(f"{where}: cannot fill a var<{v.space}> binding")

    def _buffer(self, v: GlobalVar, data: bytearray | None) -> dict:
        size = self._buffer_size(v)
        key = f"max-{v.space}-buffer-binding-size"
        limit = self.device.limits.get(key)
        if limit is not None and size > limit:
            raise BindingError(
                f"cannot fill: needs {size:,} bytes, more than the device's {key} "
                f"({limit:,}); lower --elements"
            )
        U = wgpu.BufferUsage
        usage = U.COPY_DST | U.COPY_SRC | (U.UNIFORM if v.space == "uniform" else U.STORAGE)
        buf = self.device.create_buffer(size=size, usage=usage, label=v.name)
        if data is not None:
            self.device.queue.write_buffer(buf, 0, data)
        if v.access == "read_write":
            pristine = self.device.create_buffer(size=size, usage=U.COPY_SRC | U.COPY_DST)
            if data is not None:
                self.device.queue.write_buffer(pristine, 0, data)
            self.restores.append((pristine, buf, (size,)))
        self.keep.append(buf)
        return {"buffer": buf, "offset": 0, "size": size}

    def _handle(self, v: GlobalVar):
        ty = resolve_alias(v.type, self.m)
        name, args = split_template(ty)
        if name == "sampler":
            return self.device.create_sampler()
        if name == "sampler_comparison":
            return self.device.create_sampler(compare="less")
        if not name.startswith("texture_") or name == "texture_external":
            raise BindingError(f"cannot fill a binding of type {ty}")
        T = wgpu.TextureUsage
        usage = T.TEXTURE_BINDING | T.COPY_DST | T.COPY_SRC
        w, h = self.texture_size
        layers, dim, view_dim, samples = 1, "2d", "2d", 1
        storage = name.startswith("texture_storage_")
        if storage:
            fmt, usage = args[0], T.STORAGE_BINDING | T.COPY_DST | T.COPY_SRC
        elif "depth" in name:
            fmt = "depth32float"
        else:
            sample = args[0] if args else "f32"
            if sample not in _SAMPLED_FORMAT:
                raise BindingError(f"cannot fill a texture of {sample}")
            fmt = _SAMPLED_FORMAT[sample]
        base = name.replace("texture_storage_", "").replace("texture_depth_", "")
        base = base.replace("texture_", "")
        if base.startswith("multisampled"):
            samples, usage = 4, T.TEXTURE_BINDING | T.RENDER_ATTACHMENT
        elif base == "1d":
            dim = view_dim = "1d"
            h = 1
        elif base == "3d":
            dim = view_dim = "3d"
            layers = 4
        elif base in ("2d_array", "cube", "cube_array"):
            layers = 6 if "cube" in base else 2
            view_dim = base.replace("_", "-")
            h = w if "cube" in base else h
        elif base != "2d":
            raise BindingError(f"cannot fill a binding of type {ty}")
        tex = self.device.create_texture(
            size=(w, h, layers),
            dimension=dim,
            format=fmt,
            usage=usage,
            sample_count=samples,
            label=v.name,
        )
        if storage and v.type.replace(" ", "").endswith(("write>", "read_write>")):
            pristine = self.device.create_texture(
                size=(w, h, layers), dimension=dim, format=fmt, usage=T.COPY_SRC | T.COPY_DST
            )
            self.restores.append((pristine, tex, (w, h, layers)))
            self.keep.append(pristine)
        self.keep.append(tex)
        return tex.create_view(dimension=view_dim)

    def bind_groups(self, pipeline, count: int) -> FilledBindings:
        """Bind groups 0..count-1 for ``pipeline`` (auto layout); empty groups where the entry
        point uses none."""
        groups = []
        for g in range(count):
            entries = [
                {"binding": v.binding, "resource": self.resources[(v.group, v.binding)]}
                for v in self.vars
                if v.group == g
            ]
            bgl = pipeline.get_bind_group_layout(g)
            groups.append(self.device.create_bind_group(layout=bgl, entries=entries))
        return FilledBindings(groups, self.restores, self.keep)
