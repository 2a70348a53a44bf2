"""Buffers of the standard frame as typed tables: ``--dump cull.args out.csv`` and friends.

Each dumpable buffer has a row type decoded from a WGSL struct (``wgsl_struct_dtype``, WGSL's
alignment and size rules): ``post.exposure`` from ``struct Exposure`` in
``shaders/post_exposure.wgsl``; the indirect arguments from the ``DrawIndexedIndirect`` layout
WebGPU fixes (written here as a WGSL struct, since the cull shader addresses them as a flat
``array<atomic<u32>>``); the counters, remap slots and histogram bins as ``u32`` with their
names, region and batch as extra columns. ``.npy`` writes the structured array, ``.csv`` a
header line and one line per row.
"""

from __future__ import annotations

import re

import numpy as np

from engine.culling.counters import (
    CASCADE_COUNTER_NAMES,
    COUNTER_NAMES,
    COUNTER_WORDS,
    MAX_CASCADES,
    cascade_block,
)
from engine.passes.resources import ARGS, COUNTERS, EXPOSURE, HISTOGRAM, REMAP
from engine.shaders import load_wgsl

#: WebGPU's indexed indirect draw arguments (GPUDrawIndexedIndirect), 20 bytes.
DRAW_INDEXED_INDIRECT_WGSL = """
struct DrawIndexedIndirect {
    index_count: u32,
    instance_count: u32,
    first_index: u32,
    base_vertex: i32,
    first_instance: u32,
};
"""
_SCALARS = {"f32": "<f4", "u32": "<u4", "i32": "<i4"}
_SUFFIX = {"f": "f32", "u": "u32", "i": "i32"}


def _type_layout(t: str) -> tuple[str | tuple, int, int]:
    """``(numpy type, align, size)`` of a WGSL type (scalars, vecN, mat4x4, array<T, N>)."""
    t = t.strip()
    if t in _SCALARS:
        return _SCALARS[t], 4, 4
    m = re.fullmatch(r"vec([234])(?:<(\w+)>|([fui]))", t)
    if m:
        n = int(m.group(1))
        scalar = m.group(2) or _SUFFIX[m.group(3)]
        align = {2: 8, 3: 16, 4: 16}[n]
        return (_SCALARS[scalar], (n,)), align, 4 * n
    m = re.fullmatch(r"mat4x4(?:<f32>|f)", t)
    if m:
        return ("<f4", (4, 4)), 16, 64
    m = re.fullmatch(r"array<(.+),\s*(\d+)>", t)
    if m:
        inner, align, size = _type_layout(m.group(1))
        if -(-size // align) * align != size:  # padded elements (array<vec3f, N>)
            raise ValueError(f"WGSL type {t!r}: padded array elements are not decoded")
        base, shape = (inner, ()) if isinstance(inner, str) else inner
        return (base, (int(m.group(2)), *shape)), align, size * int(m.group(2))
    raise ValueError(f"WGSL type {t!r} is not decoded (scalars, vecN, mat4x4f, array<T, N>)")


def wgsl_struct_dtype(source: str, name: str) -> np.dtype:
    """The numpy dtype of WGSL ``struct name`` in ``source``: fields at WGSL offsets
    (each rounded up to its alignment), itemsize rounded up to the largest alignment.

    Raises:
        ValueError: no such struct, or a field type it does not decode.
    """
    m = re.search(r"struct\s+" + re.escape(name) + r"\s*\{(.*?)\}", source, re.S)
    if m is None:
        raise ValueError(f"no WGSL struct {name!r}")
    names, formats, offsets = [], [], []
    offset = max_align = 0
    body = "\n".join(line.split("//")[0] for line in m.group(1).split("\n"))
    for line in _top_level_split(body):
        if not line.strip():
            continue
        field, _, t = line.partition(":")
        np_type, align, size = _type_layout(t)
        offset = -(-offset // align) * align
        names.append(field.strip())
        formats.append(np_type)
        offsets.append(offset)
        offset += size
        max_align = max(max_align, align)
    itemsize = -(-offset // max_align) * max_align
    return np.dtype({"names": names, "formats": formats, "offsets": offsets, "itemsize": itemsize})


def _top_level_split(body: str) -> list[str]:
    """``body`` split at the commas outside ``<...>`` (struct members)."""
    out, depth, cur = [], 0, ""
    for ch in body:
        depth += (ch == "<") - (ch == ">")
        if ch == "," and depth == 0:
            out.append(cur)
            cur = ""
        else:
            cur += ch
    return [*out, cur]


def buffer_tables(res, graph) -> dict:
    """Name -> ``(GPUBuffer, decode(bytes) -> structured array)`` of the buffers that dump
    as tables (the standard frame's; ``res`` its ``FrameResources``)."""

    gs = res.gs
    labels = gs.batch_labels

    counter_rows = [*COUNTER_NAMES] + [f"{cascade_block(c)}.{n}" for c in range(MAX_CASCADES)
                                for n in CASCADE_COUNTER_NAMES]  # fmt: skip

    def counters(data: bytes) -> np.ndarray:
        v = np.frombuffer(data, np.uint32, COUNTER_WORDS)
        out = np.zeros(len(v), [("counter", "U24"), ("value", "<u4")])
        out["counter"], out["value"] = counter_rows, v
        return out

    def args(data: bytes) -> np.ndarray:
        dt = wgsl_struct_dtype(DRAW_INDEXED_INDIRECT_WGSL, "DrawIndexedIndirect")
        nb, regions = gs.batch_count, gs.regions
        rows = np.frombuffer(data, dt, len(regions) * nb)
        out = np.zeros(len(rows), [("region", "U10"), ("batch", "U32")] + _fields(dt))
        out["region"] = np.repeat(regions, nb)
        out["batch"] = np.tile(labels, len(regions))
        for f in dt.names:
            out[f] = rows[f]
        return out

    def remap(data: bytes) -> np.ndarray:
        v = np.frombuffer(data, np.uint32)
        t, regions = gs.region_slots, gs.regions
        out = np.zeros(len(v), [("region", "U10"), ("slot", "<u4"), ("row", "<u4")])
        out["region"] = np.asarray(regions)[np.minimum(np.arange(len(v)) // t, len(regions) - 1)]
        out["slot"], out["row"] = np.arange(len(v)) % t, v
        return out

    def exposure(data: bytes) -> np.ndarray:
        dt = wgsl_struct_dtype(load_wgsl("post_exposure.wgsl"), "Exposure")
        return np.frombuffer(data, dt, 1).copy()

    def histogram(data: bytes) -> np.ndarray:
        v = np.frombuffer(data, np.uint32)
        out = np.zeros(len(v), [("bin", "<u4"), ("count", "<u4")])
        out["bin"], out["count"] = np.arange(len(v)), v
        return out

    tables = {
        COUNTERS: (res.cull.counters, counters),
        ARGS: (gs.args, args),
        REMAP: (gs.remap, remap),
    }
    names = graph.buffer_names()
    if EXPOSURE in names:
        tables[EXPOSURE] = (graph.buffer(EXPOSURE), exposure)
    if HISTOGRAM in names:
        tables[HISTOGRAM] = (graph.buffer(HISTOGRAM), histogram)
    return tables


def _fields(dt: np.dtype) -> list:
    return [(n, dt.fields[n][0]) for n in dt.names]


def read_table(device, buffer, decode) -> np.ndarray:
    """Wait for the GPU, read ``buffer`` (needs ``COPY_SRC``) and decode it."""
    return decode(bytes(device.queue.read_buffer(buffer)))


def write_table(table: np.ndarray, path: str) -> str:
    """``.npy``: the structured array; ``.csv``: header + rows. Returns a one-line summary.
    An existing ``.csv`` is replaced only when it is a table of the same columns (an earlier
    dump of this table): a CSV has no signature, and a user's own table is never overwritten.

    Raises:
        OSError: the file cannot be written. ValueError: another suffix, or an existing CSV
        with another header.
    """
    low = path.lower()
    if low.endswith(".npy"):
        np.save(path, table)
    elif low.endswith(".csv"):
        header = ",".join(table.dtype.names)
        _check_replaceable_csv(path, header)
        with open(path, "w", encoding="utf-8") as f:
            f.write(header + "\n")
            for row in table.tolist():
                f.write(",".join(_cell(v) for v in row) + "\n")
    else:
        raise ValueError(f"{path!r}: a buffer dumps as .npy or .csv")
    return f"{len(table)} row{'s' * (len(table) != 1)} of {', '.join(table.dtype.names)}"


def _check_replaceable_csv(path: str, header: str) -> None:
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            first = f.readline().rstrip("\r\n")
    except FileNotFoundError:
        return
    if first and first != header:
        raise ValueError(
            f"{path!r} exists and is not an earlier dump of this table (its first line is not "
            f"{header!r}); choose another name or remove it"
        )


def _cell(v) -> str:
    if isinstance(v, tuple | list):
        return " ".join(_cell(x) for x in v)
    if hasattr(v, "tolist"):
        return _cell(v.tolist())
    return f"{v:.9g}" if isinstance(v, float) else str(v)
