"""The span store: spans in GPU storage buffers (*chunks*), uploaded once (a file) or appended
per frame (live), plus the per-name table the shaders read (colour, search match, label).

GPU layout of one span (``SPAN_WORDS`` = 5 ``u32``, 20 bytes, ``struct Span`` in
shaders/flame_select.wgsl): ``start_lo, start_hi`` (int64 ns since the store's origin, two's
complement split in two words: WGSL has no 64-bit integers without an optional feature),
``dur`` (f32 ns: 24-bit mantissa, invisible at any zoom), ``lane << 16 | depth``, ``name``.

No binding may exceed the adapter's ``max_storage_buffer_binding_size`` (128 MiB on lavapipe
and WebGPU's default: 6.7M spans), so the spans are split into chunks of ``chunk_spans`` each
(the largest multiple of 256 that fits both that limit and ``max_buffer_size``); the select
pass runs its span dispatches once per chunk. Only host memory bounds the span count.
The last chunk grows by reallocation in powers of two (a copy on the GPU, no re-upload), so
live appends cost one ``write_buffer`` of the new spans per frame.

``upload`` (a whole file) also builds the level-of-detail levels (``engine.inspect.lod``)
and keeps them on the GPU only, chunked the same way (24 bytes an entry); ``append`` (live)
drops them.
"""

from __future__ import annotations

import zlib

import numpy as np
import wgpu

from engine.inspect.lod import LOD_BYTES, LOD_WORDS, LodLevel, RangeIndex, build_levels
from engine.inspect.traceload import SpanTable
from engine.overlay import font8x8

SPAN_WORDS = 5
SPAN_BYTES = SPAN_WORDS * 4
MAX_LANES = 0xFFFF
MAX_DEPTH = 0xFFFF
NAME_MATCH = 1  # name_info flags bit: matches the search
LABEL_MAX = 255  # characters of a name kept for labels


def pack_spans(
    start_ns: np.ndarray, dur_ns: np.ndarray, lane: np.ndarray, depth: np.ndarray, name_id
) -> np.ndarray:
    """Columns -> ``uint32 (n, 5)`` rows in the GPU layout above.

    Raises:
        ValueError: a lane or depth above 65535.
    """
    n = len(start_ns)
    if n and (int(lane.max()) > MAX_LANES or int(depth.max()) > MAX_DEPTH):
        raise ValueError(f"flame chart: lanes and depths must be <= {MAX_LANES}")
    out = np.empty((n, SPAN_WORDS), np.uint32)
    s = np.asarray(start_ns, np.int64)
    out[:, 0] = (s & 0xFFFFFFFF).astype(np.uint32)
    out[:, 1] = (s >> 32).astype(np.int64).astype(np.uint32)  # sign kept in two's complement
    out[:, 2] = np.asarray(dur_ns, np.float64).astype(np.float32).view(np.uint32)
    out[:, 3] = (np.asarray(lane, np.uint32) << 16) | np.asarray(depth, np.uint32)
    out[:, 4] = name_id
    return out


def name_colors(names: list[str]) -> np.ndarray:
    """``uint32 (len(names),)`` RGBA8 sRGB colours, a warm flame palette keyed by a CRC-32
    of each name, so a name keeps its colour in every file and view."""
    h = np.array([zlib.crc32(n.encode("utf-8", "replace")) for n in names], np.uint32)
    r = 205 + (h & 0x31)  # 205..254
    g = 70 + ((h >> 8) % 150)  # 70..219
    b = 30 + ((h >> 16) % 60)  # 30..89
    return (r | g << 8 | b << 16 | np.uint32(255) << 24).astype(np.uint32)


def printable(text: str) -> str:
    """The 8x8 font has printable ASCII only: any other character becomes a visible
    ``<U+XXXX>`` (never dropped, never Python's repr)."""
    if text.isascii() and text.isprintable():
        return text
    return "".join(c if c.isascii() and c.isprintable() else f"<U+{ord(c):04X}>" for c in text)


def label_bytes(names: list[str]) -> tuple[np.ndarray, np.ndarray]:
    """Names as printable ASCII (``printable``), at most ``LABEL_MAX`` characters each:
    ``(chars uint32 words, 4 per word little-endian; offsets_and_lengths uint32 (n, 2))``."""
    offs = np.zeros((len(names), 2), np.uint32)
    parts, pos = [], 0
    for i, n in enumerate(names):
        b = printable(n)[:LABEL_MAX].encode("ascii")
        offs[i] = (pos, len(b))
        parts.append(b)
        pos += len(b)
    blob = b"".join(parts)
    blob += b"\0" * (-len(blob) % 4 or (4 if not blob else 0))
    return np.frombuffer(blob, np.uint32).copy(), offs


def font_words() -> np.ndarray:
    """The baked 8x8 atlas (128x64 bits, MSB first) as ``uint32`` words, little-endian."""
    return np.frombuffer(font8x8.ATLAS, np.uint32).copy()


def _pow2(n: int) -> int:
    return 1 << max(10, (max(n, 1) - 1).bit_length())


def chunk_spans_for(
    device: wgpu.GPUDevice, max_binding_bytes: int | None = None, entry_bytes: int = SPAN_BYTES
) -> int:
    """Spans (entries of ``entry_bytes``) per chunk: the binding limit (or
    ``max_binding_bytes``, for tests) and the buffer size limit, in whole 256-span
    workgroups; at least 256."""
    lim = device.limits
    size = min(
        lim.get("max-storage-buffer-binding-size", 1 << 27), lim.get("max-buffer-size", 1 << 28)
    )
    if max_binding_bytes is not None:
        size = min(size, max_binding_bytes)
    return max(256, size // entry_bytes // 256 * 256)


class SpanStore:
    """Spans and names on the GPU.

    Args:
        device: the ``wgpu.GPUDevice``. ``capacity``: spans to allocate at first.
        max_binding_bytes: a lower binding limit than the device's (tests of the split).

    Attributes:
        count: spans stored. ``capacity``: spans the chunks hold.
        chunk_spans: spans per chunk (chunk ``k`` holds spans ``k * chunk_spans ..``).
        chunks: ``STORAGE | COPY_DST | COPY_SRC`` buffers, 20 bytes per span; all but the
            last hold ``chunk_spans``, the last a power of two up to that.
        names: ``uint32 (names, 4)`` buffer: colour, flags, label offset, label length.
        chars: label characters. ``font``: the atlas. ``version`` bumps when a buffer is
        replaced (bind groups must be rebuilt).
        levels: the ``GpuLevel`` s (level-of-detail summaries, finest first; empty for live
        appends or a small table).
    """

    def __init__(
        self, device: wgpu.GPUDevice, capacity: int = 1024, max_binding_bytes: int | None = None
    ):
        self.device = device
        self.count = 0
        self.version = 0
        self.max_binding_bytes = max_binding_bytes
        self.levels: list[GpuLevel] = []
        self.index: RangeIndex | None = None  # the spans by start (``upload``), else None
        self.chunk_spans = chunk_spans_for(device, max_binding_bytes)
        self.chunks: list[wgpu.GPUBuffer] = []
        self._caps: list[int] = []
        self.name_list: list[str] = []
        self.name_flags = np.zeros(0, np.uint32)
        self._names_info = np.zeros((0, 4), np.uint32)
        self.names = self.chars = None
        self.font = self._buffer("flame font", font_words().tobytes())
        self._grow(capacity)
        self.set_names([])

    @property
    def capacity(self) -> int:
        return sum(self._caps)

    @property
    def spans(self) -> wgpu.GPUBuffer:
        """The first chunk (all spans while there is one chunk)."""
        return self.chunks[0]

    def chunk_ranges(self) -> list[tuple[int, int]]:
        """``(first span, spans)`` of each chunk holding spans now."""
        c = self.chunk_spans
        return [(b, min(c, self.count - b)) for b in range(0, self.count, c)]

    def _buffer(self, label: str, data: bytes, extra_usage: int = 0) -> wgpu.GPUBuffer:
        usage = wgpu.BufferUsage.STORAGE | wgpu.BufferUsage.COPY_DST | extra_usage
        buf = self.device.create_buffer(label=label, size=max(16, len(data)), usage=usage)
        if data:
            self.device.queue.write_buffer(buf, 0, data)
        return buf

    def _grow(self, need: int) -> None:
        """Chunks for ``need`` spans: full ones, then a power of two (copies what was kept)."""
        c = self.chunk_spans
        usage = wgpu.BufferUsage.STORAGE | wgpu.BufferUsage.COPY_DST | wgpu.BufferUsage.COPY_SRC
        for k in range(max(1, -(-need // c))):
            cap = min(c, _pow2(need - k * c))
            if k < len(self._caps) and self._caps[k] >= cap:
                continue
            buf = self.device.create_buffer(
                label=f"flame spans {k}", size=cap * SPAN_BYTES, usage=usage
            )
            if k < len(self.chunks):
                kept = min(max(self.count - k * c, 0), self._caps[k])
                if kept:
                    enc = self.device.create_command_encoder(label="flame spans grow")
                    enc.copy_buffer_to_buffer(self.chunks[k], 0, buf, 0, kept * SPAN_BYTES)
                    self.device.queue.submit([enc.finish()])
                self.chunks[k], self._caps[k] = buf, cap
            else:
                self.chunks.append(buf)
                self._caps.append(cap)
            self.version += 1

    def upload(self, table: SpanTable, *, lod: bool = True, min_entries: int | None = None) -> None:
        """Replace everything with ``table`` (spans and names); with ``lod``, build and
        upload its level-of-detail levels (``min_entries``: ``lod.build_levels``'s)."""
        self.count = 0
        self.set_names(table.names)
        self.append(table.start_ns, table.dur_ns, table.lane, table.depth, table.name_id)
        s, d = table.start_ns, table.dur_ns  # a SpanTable is sorted by start
        md = float(d.max()) if len(d) else 0.0
        self.index = RangeIndex(s, lambda sl: s[sl] + d[sl], md)
        if lod:
            kw = {} if min_entries is None else {"min_entries": min_entries}
            levels = build_levels(table.start_ns, table.dur_ns, table.lane, table.depth, **kw)
            self.set_levels(levels, table.name_id)

    def set_levels(self, levels: list[LodLevel], name_id: np.ndarray) -> None:
        """Upload ``levels`` (``lod.build_levels``) as ``GpuLevel`` s; nothing kept on the
        host but their sizes."""
        per = chunk_spans_for(self.device, self.max_binding_bytes, LOD_BYTES)
        self.levels = [GpuLevel(self.device, lv, name_id, per) for lv in levels]
        self.version += 1

    def source(self, level: int) -> tuple[list, list[tuple[int, int]], int, RangeIndex | None]:
        """``(chunks, chunk_ranges, words per entry, RangeIndex or None)`` of level
        ``level`` (0: the spans; their index only when uploaded from a sorted table)."""
        if level == 0:
            return self.chunks, self.chunk_ranges(), SPAN_WORDS, self.index
        lv = self.levels[level - 1]
        return lv.chunks, lv.chunk_ranges(), LOD_WORDS, lv.index

    def append(self, start_ns, dur_ns, lane, depth, name_id) -> None:
        """Append spans (columns as in ``SpanTable``; ``start_ns`` relative to the origin);
        packed and written a chunk's worth at a time (host memory: one chunk of rows)."""
        start_ns, dur_ns, lane, depth = (np.asarray(a) for a in (start_ns, dur_ns, lane, depth))
        n = len(start_ns)
        name_id = np.broadcast_to(np.asarray(name_id, np.uint32), (n,))
        self.index = None  # appended spans need not be in start order
        if self.levels:  # they summarise the spans before these
            self.levels = []
            self.version += 1
        self._grow(self.count + n)
        c, done = self.chunk_spans, 0
        while done < n:
            k, at = divmod(self.count, c)
            take = min(n - done, c - at, 1 << 20)
            sl = slice(done, done + take)
            rows = pack_spans(start_ns[sl], dur_ns[sl], lane[sl], depth[sl], name_id[sl])
            self.device.queue.write_buffer(self.chunks[k], at * SPAN_BYTES, rows.tobytes())
            self.count += take
            done += take

    def read_packed(self) -> np.ndarray:
        """``uint32 (count, 5)``: every stored span as packed (blocking; tests and tools)."""
        parts = [
            np.frombuffer(self.device.queue.read_buffer(self.chunks[k], 0, n * SPAN_BYTES), "<u4")
            for k, (_, n) in enumerate(self.chunk_ranges())
        ]
        return np.concatenate(parts or [np.zeros(0, np.uint32)]).reshape(-1, SPAN_WORDS)

    def clear(self) -> None:
        self.count = 0
        self.levels = []
        self.index = None

    def set_names(self, names: list[str]) -> None:
        """The name table (colours and labels); search flags reset to 0."""
        self.name_list = list(names)
        chars, offs = label_bytes(self.name_list)
        info = np.zeros((max(1, len(names)), 4), np.uint32)
        info[: len(names), 0] = name_colors(self.name_list)
        info[: len(names), 2:4] = offs
        self._names_info = info
        self.name_flags = info[:, 1]
        self.names = self._buffer("flame names", info.tobytes())
        self.chars = self._buffer("flame chars", chars.tobytes())
        self.version += 1

    def set_name_flags(self, flags: np.ndarray) -> None:
        """Per-name flags (``NAME_MATCH``); one small upload, O(names)."""
        self._names_info[: len(flags), 1] = flags
        self.device.queue.write_buffer(self.names, 0, self._names_info.tobytes())


class GpuLevel:
    """One level-of-detail level on the GPU (``engine.inspect.lod``).

    Attributes:
        bucket_ns: its time bucket, ns. ``count``: entries. ``chunk_entries``: entries per
        chunk. ``chunks``: ``STORAGE | COPY_DST | COPY_SRC`` buffers of ``LOD_BYTES``
        entries (``LodLevel.pack``).
    """

    def __init__(self, device, level: LodLevel, name_id: np.ndarray, chunk_entries: int):
        self.bucket_ns = level.bucket_ns
        self.count = len(level)
        self.chunk_entries = chunk_entries
        usage = wgpu.BufferUsage.STORAGE | wgpu.BufferUsage.COPY_DST | wgpu.BufferUsage.COPY_SRC
        self.chunks = []
        for base, n in self.chunk_ranges():
            buf = device.create_buffer(
                label=f"flame lod {level.bucket_ns} ns", size=max(16, n * LOD_BYTES), usage=usage
            )
            for a in range(0, n, 1 << 20):
                rows = level.pack(name_id, slice(base + a, base + min(n, a + (1 << 20))))
                device.queue.write_buffer(buf, a * LOD_BYTES, rows.tobytes())
            self.chunks.append(buf)
        md = float((level.end_ns - level.start_ns).max()) if self.count else 0.0
        self.index = RangeIndex(level.start_ns, level.end_ns, md)

    def chunk_ranges(self) -> list[tuple[int, int]]:
        c = self.chunk_entries
        return [(b, min(c, self.count - b)) for b in range(0, self.count, c)]

    def read_packed(self, device) -> np.ndarray:
        """``uint32 (count, 6)`` (blocking; tests and tools)."""
        parts = [
            np.frombuffer(device.queue.read_buffer(buf, 0, n * LOD_BYTES), "<u4")
            for buf, (_, n) in zip(self.chunks, self.chunk_ranges(), strict=True)
        ]
        return np.concatenate(parts or [np.zeros(0, np.uint32)]).reshape(-1, LOD_WORDS)
