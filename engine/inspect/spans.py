"""The span store: every span in one GPU storage buffer, uploaded once (a file) or appended
per frame (live), plus the per-name table the shaders read (colour, search match, label).

GPU layout of one span (``SPAN_WORDS`` = 5 ``u32``, 20 bytes, ``struct Span`` in
shaders/flame_select.wgsl): ``start_lo, start_hi`` (int64 ns since the store's origin, two's
complement split in two words: WGSL has no 64-bit integers without an optional feature),
``dur`` (f32 ns: 24-bit mantissa, invisible at any zoom), ``lane << 16 | depth``, ``name``.

Capacity grows by reallocation in powers of two (a copy on the GPU, no re-upload), so live
appends cost one ``write_buffer`` of the new spans per frame.
"""

from __future__ import annotations

import zlib

import numpy as np
import wgpu

from ..overlay import font8x8
from .traceload import SpanTable

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


def label_bytes(names: list[str]) -> tuple[np.ndarray, np.ndarray]:
    """Names as printable ASCII (others '?'), at most ``LABEL_MAX`` characters each:
    ``(chars uint32 words, 4 per word little-endian; offsets_and_lengths uint32 (n, 2))``."""
    offs = np.zeros((len(names), 2), np.uint32)
    parts, pos = [], 0
    for i, n in enumerate(names):
        b = n[:LABEL_MAX].encode("ascii", "replace")
        b = bytes(c if 32 <= c < 127 else 63 for c in b)
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


class SpanStore:
    """Spans and names on the GPU.

    Attributes:
        count: spans stored. ``capacity``: spans the buffer holds (a power of two).
        spans: ``STORAGE | COPY_DST | COPY_SRC`` buffer of ``capacity * 20`` bytes.
        names: ``uint32 (names, 4)`` buffer: colour, flags, label offset, label length.
        chars: label characters. ``font``: the atlas. ``version`` bumps when a buffer is
        replaced (bind groups must be rebuilt).
    """

    def __init__(self, device: wgpu.GPUDevice, capacity: int = 1024):
        self.device = device
        self.count = 0
        self.capacity = 0
        self.version = 0
        self.spans = None
        self.name_list: list[str] = []
        self.name_flags = np.zeros(0, np.uint32)
        self._names_info = np.zeros((0, 4), np.uint32)
        self.names = self.chars = None
        self.font = self._buffer("flame font", font_words().tobytes())
        self._grow(capacity)
        self.set_names([])

    def _buffer(self, label: str, data: bytes, extra_usage: int = 0) -> wgpu.GPUBuffer:
        usage = wgpu.BufferUsage.STORAGE | wgpu.BufferUsage.COPY_DST | extra_usage
        buf = self.device.create_buffer(label=label, size=max(16, len(data)), usage=usage)
        if data:
            self.device.queue.write_buffer(buf, 0, data)
        return buf

    def _grow(self, need: int) -> None:
        cap = _pow2(need)
        if cap <= self.capacity:
            return
        usage = wgpu.BufferUsage.STORAGE | wgpu.BufferUsage.COPY_DST | wgpu.BufferUsage.COPY_SRC
        buf = self.device.create_buffer(label="flame spans", size=cap * SPAN_BYTES, usage=usage)
        if self.spans is not None and self.count:
            enc = self.device.create_command_encoder(label="flame spans grow")
            enc.copy_buffer_to_buffer(self.spans, 0, buf, 0, self.count * SPAN_BYTES)
            self.device.queue.submit([enc.finish()])
        self.spans, self.capacity = buf, cap
        self.version += 1

    def upload(self, table: SpanTable) -> None:
        """Replace everything with ``table`` (spans and names)."""
        self.count = 0
        self.set_names(table.names)
        self.append(table.start_ns, table.dur_ns, table.lane, table.depth, table.name_id)

    def append(self, start_ns, dur_ns, lane, depth, name_id) -> None:
        """Append spans (columns as in ``SpanTable``; ``start_ns`` relative to the origin)."""
        rows = pack_spans(start_ns, dur_ns, lane, depth, name_id)
        self._grow(self.count + len(rows))
        if len(rows):
            self.device.queue.write_buffer(self.spans, self.count * SPAN_BYTES, rows.tobytes())
        self.count += len(rows)

    def clear(self) -> None:
        self.count = 0

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
