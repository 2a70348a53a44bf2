"""Texture contents as numpy arrays, and ``--dump NAME[@PASS] PATH`` of a capture run.

``read_texture`` is the blocking readback (for dumps at the end of a run and for tests,
never the per-frame path). ``DumpTool`` writes a resource the graph owns after the last
frame: ``NAME`` as the frame left it, or ``NAME@PASS`` as it was right after ``PASS``
(the graph's snapshot: a pass that reads ``NAME@PASS`` makes the graph copy it there).
The suffix chooses the form: ``.npy`` raw values, ``.png`` range-mapped for looking, ``.exr``
the values as half / float / uint channels through the OpenEXR library (``openexr`` on PyPI).
Buffers of the standard frame (``cull.counters``, ``cull.args``, ``cull.remap``,
``post.exposure``, ``post.histogram``) dump as typed tables (``engine.tools.dump.buffers``):
``.npy`` structured arrays or ``.csv``.
"""

from __future__ import annotations

import logging
import os

import numpy as np
import wgpu

from engine.graph import TransferPass, split_ref
from engine.options import OptionError, check_output
from engine.passes.resources import frame_resources
from engine.tools.dump.buffers import buffer_tables, read_table, write_table

log = logging.getLogger("lantern")
DUMP_SUFFIXES = (".npy", ".png", ".exr", ".csv")

#: Texture format -> (numpy dtype of one channel, channels, bytes per texel).
FORMATS = {
    "rgba16float": (np.float16, 4),
    "rgba32float": (np.float32, 4),
    "r32float": (np.float32, 1),
    "rg32float": (np.float32, 2),
    "rg16float": (np.float16, 2),
    "r16float": (np.float16, 1),
    "depth32float": (np.float32, 1),
    "r32uint": (np.uint32, 1),
    "rg32uint": (np.uint32, 2),
    "rgba8unorm": (np.uint8, 4),
    "rgba8unorm-srgb": (np.uint8, 4),
    "bgra8unorm": (np.uint8, 4),
    "bgra8unorm-srgb": (np.uint8, 4),
}
SUFFIXES = (".npy", ".png", ".exr")
#: EXR channel names by channel count.
EXR_CHANNELS = {1: ("Y",), 2: ("R", "G"), 3: ("R", "G", "B"), 4: ("R", "G", "B", "A")}


def read_texture(device, texture, mip: int = 0, layer: int = 0) -> np.ndarray:
    """Wait for the GPU and return mip ``mip`` of array layer ``layer`` of ``texture`` as
    ``(H, W, C)`` values of its format's type (``FORMATS``: e.g. ``rgba16float`` ->
    float16 with C = 4, ``depth32float`` -> float32 with C = 1). Needs ``COPY_SRC``.

    Raises:
        ValueError: a format not in ``FORMATS``, or ``mip`` / ``layer`` out of range.
    """
    fmt = texture.format
    if fmt not in FORMATS:
        raise ValueError(f"cannot read {fmt} textures; readable: {', '.join(FORMATS)}")
    if not 0 <= mip < texture.mip_level_count:
        raise ValueError(f"mip {mip} out of range 0..{texture.mip_level_count - 1}")
    layers = texture.size[2]
    if not 0 <= layer < layers:
        raise ValueError(f"layer {layer} out of range 0..{layers - 1}")
    dtype, channels = FORMATS[fmt]
    w, h = max(1, texture.size[0] >> mip), max(1, texture.size[1] >> mip)
    texel = np.dtype(dtype).itemsize * channels
    bpr = (w * texel + 255) // 256 * 256
    data = device.queue.read_texture(
        {"texture": texture, "mip_level": mip, "origin": (0, 0, layer)},
        {"bytes_per_row": bpr, "rows_per_image": h},
        (w, h, 1),
    )
    rows = np.frombuffer(data, np.uint8).reshape(h, bpr)[:, : w * texel]
    out = rows.copy().view(dtype).reshape(h, w, channels)
    if fmt.startswith("bgra"):
        out = out[:, :, [2, 1, 0, 3]]
    return out


def range_map(values: np.ndarray) -> tuple[np.ndarray, float, float]:
    """``(uint8 (H, W, 3), lo, hi)``: finite values mapped linearly from ``[lo, hi]`` (their
    min and max) to 0..255 per pixel, grey for one channel, RGB of the first three else;
    NaN and Inf pixels magenta."""
    v = np.asarray(values, np.float64)[:, :, :3]  # colour: alpha is not looked at
    finite = np.isfinite(v)
    lo = float(v[finite].min()) if finite.any() else 0.0
    hi = float(v[finite].max()) if finite.any() else 1.0
    scale = 255.0 / (hi - lo) if hi > lo else 0.0
    m = np.clip((np.where(finite, v, lo) - lo) * scale, 0, 255).round().astype(np.uint8)
    rgb = np.repeat(m, 3, axis=2) if m.shape[2] == 1 else m[:, :, :3]
    if rgb.shape[2] < 3:
        rgb = np.concatenate([rgb, np.zeros((*rgb.shape[:2], 3 - rgb.shape[2]), np.uint8)], 2)
    bad = ~finite.all(axis=2)
    rgb = rgb.copy()
    rgb[bad] = (255, 0, 255)
    return rgb, lo, hi


def read_layers(device, texture, path: str) -> tuple[np.ndarray, str]:
    """Every array layer of ``texture`` (mip 0) for ``write_dump`` to ``path``: one layer
    ``(H, W, C)``; several ``(L, H, W, C)`` for ``.npy``, else side by side ``(H, L * W, C)``
    (layer 0 on the left). Also the note the written line adds (``""`` for one layer)."""
    count = texture.size[2]
    if count == 1:
        return read_texture(device, texture), ""
    layers = np.stack([read_texture(device, texture, layer=i) for i in range(count)])
    if path.lower().endswith(".npy"):
        return layers, f"; {count} layers (axis 0)"
    return np.concatenate(list(layers), axis=1), f"; {count} layers side by side, 0 on the left"


def write_dump(values: np.ndarray, path: str) -> str:
    """Write ``values`` (``(H, W, C)``; ``.npy`` also ``(L, H, W, C)``) to ``path`` by its
    suffix; returns what was written
    (one line). Raises ``OSError`` when the file cannot be written, ``ValueError`` for
    another suffix."""
    suffix = os.path.splitext(path)[1].lower()
    if suffix == ".npy":
        np.save(path, values)
        return f"{values.shape} {values.dtype} raw"
    if suffix == ".png":
        from PIL import Image

        rgb, lo, hi = range_map(values)
        Image.fromarray(rgb, "RGB").save(path)
        return f"range {lo:.6g}..{hi:.6g} mapped to 0..255"
    if suffix == ".exr":
        write_exr(values, path)
        names = "".join(EXR_CHANNELS[values.shape[2]])
        return f"{values.shape} {values.dtype} as EXR channels {names}"
    raise ValueError(f"{path!r}: the suffix must be one of {', '.join(SUFFIXES)}")


def write_exr(values: np.ndarray, path: str) -> None:
    """``(H, W, C)`` float16 / float32 / uint32 values as an EXR file, one channel each
    (``EXR_CHANNELS``; ZIP compression); 8-bit values are written as half floats in 0..1."""
    import OpenEXR

    v = values
    if v.dtype == np.uint8:
        v = (v.astype(np.float32) / 255.0).astype(np.float16)
    names = EXR_CHANNELS[v.shape[2]]
    channels = {n: np.ascontiguousarray(v[:, :, i]) for i, n in enumerate(names)}
    header = {"compression": OpenEXR.ZIP_COMPRESSION, "type": OpenEXR.scanlineimage}
    with OpenEXR.File(header, channels) as f:
        f.write(path)


class _SnapshotReader(TransferPass):
    """Reads ``NAME@PASS`` so the graph keeps the snapshot (or an on-demand ``NAME`` so its
    writers write it); records nothing itself."""

    def __init__(self, ref: str, name: str = "Dump"):
        super().__init__(name, reads=(ref,))

    def record(self, ctx, encoder) -> None:
        pass


class DumpTool:
    """``--dump NAME[@PASS] PATH`` (repeatable): after the last frame of a capture run, write
    graph texture ``NAME`` (or its snapshot after ``PASS``) to ``PATH``. A bad name, pass or
    path is a one-line ``ValueError`` at install (the names the graph has are listed); a
    texture no pass wrote in the last frame (a variant or knob switched its writer off since)
    is one error line at the end, and no file."""

    name = "dump"

    @classmethod
    def add_arguments(cls, parser) -> None:
        parser.add_argument_group("resource dump").add_argument(
            "--dump",
            nargs=2,
            action="append",
            metavar=("NAME[@PASS]", "PATH"),
            help="render headless and write graph texture NAME as the last frame left it (or "
            "right after pass PASS) to PATH: .npy raw values, .png range-mapped, .exr values; "
            "a buffer (cull.args, cull.counters, ...) as a typed table, .npy or .csv; give it "
            "again for more",
        )

    @classmethod
    def check_options(cls, args) -> None:
        if not args.dump:
            return
        paths = [path for _, path in args.dump]
        for path in paths:
            suffix = next((x for x in DUMP_SUFFIXES if path.lower().endswith(x)), None)
            if suffix is None:
                raise OptionError(f"argument --dump: {path!r} must end in .npy, .png, .exr or .csv")
            check_output("--dump", path, suffix)
        if getattr(args, "graph", None) is not None:
            raise OptionError(
                "argument --graph: it prints the frame's passes and exits; drop --dump"
            )

    @classmethod
    def files(cls, args) -> list[tuple[str, str]]:
        return [("--dump", path) for _, path in args.dump or ()]

    def __init__(self):
        self.requests: list[tuple[str, str]] = []

    def install(self, ctx) -> None:
        self.ctx = ctx
        for ref, path in ctx.option("dump") or ():
            self._check(ref, path)
            self.requests.append((ref, path))
        if self.requests:
            ctx.frame_done.append(self._frame_done)

    def _check(self, ref: str, path: str) -> None:
        base, after = split_ref(ref)
        graph = self.ctx.graph
        names = graph.readable_textures()
        tables = _tables(graph)
        if base in tables:
            if not graph.writers(base) and base not in graph.imports:
                raise OptionError(_unwritten(base, graph))
            if after is not None:
                raise OptionError(f"--dump: {base} is a buffer; buffers dump as the frame left "
                                 f"them (drop @{after})")  # fmt: skip
            if not path.lower().endswith((".npy", ".csv")):
                raise OptionError(f"--dump: {base} is a buffer: write it as .npy or .csv")
            return
        if base not in names and graph.how_to_write(base) is not None:
            raise OptionError(_unwritten(base, graph))
        if base not in names:
            raise OptionError(
                f"--dump: unknown resource {base!r}; textures: {', '.join(names)}; "
                f"buffers: {', '.join(tables) or 'none'}"
            )
        if path.lower().endswith(".csv"):
            raise OptionError(f"--dump: {base} is a texture: write it as .npy, .png or .exr")
        writers = graph.writers(base)
        if not writers and base not in graph.imports:
            raise OptionError(_unwritten(base, graph))
        if after is not None:
            if after not in writers:
                who = ", ".join(writers) or "none"
                raise OptionError(
                    f"--dump: pass {after!r} does not write {base!r} in this frame "
                    f"(passes that do: {who})"
                )
            if graph.texture_desc(base) is None:
                raise OptionError(f"--dump: {base!r} is not a graph texture; drop @{after}")
        if after is not None or graph.on_demand(base):  # the read keeps it (or has it) written
            self._readers = getattr(self, "_readers", 0) + 1  # Dump, Dump.2, ...: one a --dump
            n = self._readers
            graph.add(_SnapshotReader(ref, "Dump" if n == 1 else f"Dump.{n}"))

    def _frame_done(self, texture) -> None:
        frames = self.ctx.final_frame
        if not self.requests or frames is None or self.ctx.loop.index <= frames:
            return
        requests, self.requests = self.requests, []
        for ref, path in requests:
            self._write(ref, path)

    def _write(self, ref: str, path: str) -> None:
        graph = self.ctx.graph
        base = split_ref(ref)[0]
        if not graph.writers(base) and base not in graph.imports:  # switched off since
            log.error("%s; %s not written", _unwritten(base, graph), path)
            self.ctx.status = 1
            return
        tables = _tables(graph)
        try:
            if ref in tables:
                what = write_table(read_table(self.ctx.gpu.device, *tables[ref]), path)
            else:
                values, layers = read_layers(self.ctx.gpu.device, graph.texture(ref), path)
                what = write_dump(values, path) + _at_ceiling(values, graph, ref) + layers
        except (OSError, ValueError, wgpu.GPUError) as e:
            log.error("--dump: cannot write %s: %s", path, getattr(e, "strerror", None) or e)
            self.ctx.status = 1
            return
        print(f"wrote {path} ({ref}: {what})")

    def close(self) -> None:
        pass


def _tables(graph) -> dict:
    """The buffers that dump as typed tables (``engine.tools.dump.buffers``), by name."""
    res = frame_resources(graph)
    return {} if res is None else buffer_tables(res, graph)


def _unwritten(base: str, graph) -> str:
    """Why nothing is dumped: what turns on the pass that writes ``base`` (a debug view),
    else the knobs that turn passes off."""
    how = graph.how_to_write(base)
    if how is not None:
        return f"--dump: no pass writes {base!r} in this run: it is written while {how}"
    return (
        f"--dump: no pass writes {base!r} in this run (a knob turned its pass off, "
        f"e.g. --no-post, --no-shadows, --no-occlusion, --no-taa, --exposure VALUE): "
        f"nothing to dump"
    )


def _at_ceiling(values: np.ndarray, graph, ref: str) -> str:
    """``; N texels at the ceiling C (>= C)`` for a texture declared with a ceiling
    (``TextureDesc.ceiling``: e.g. overdraw counts stop at 2048), else ``""``."""
    desc = graph.texture_desc(split_ref(ref)[0])
    if desc is None or desc.ceiling is None:
        return ""
    n = int((np.asarray(values, np.float64) >= desc.ceiling).any(axis=2).sum())
    c = f"{desc.ceiling:g}"
    if n == 0:
        return f"; no texel at the ceiling {c}"
    return f"; {n:,} texels at the ceiling {c}: their true values are >= {c}"
