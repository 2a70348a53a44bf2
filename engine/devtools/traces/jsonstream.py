"""A Chrome trace's event array read as a stream of decoded chunks: bounded memory for any
file size, plain or gzip (ISA-L's ``igzip``: decompressed as it is read).

The stream is read in blocks of ``BLOCK`` bytes. Each block is cut after its last ``},{``
(optionally with a space or newline after the comma): the events before the cut are one
chunk, decoded as ``[`` + chunk + ``]`` (``_decode``: msgspec ``Event`` structs, one class per
phase, when every event is of a known phase with plainly typed fields, else orjson
objects). A cut that lands inside a nested value
or a string can never decode (the brackets or the quotes would not balance), so a chunk that
fails is retried at the previous candidate cut; only a block with no valid cut waits for
more data. Memory: the block, the chunk's decoded events and one partial event.

The array may be the whole document or the ``traceEvents`` member of an object; the other
members (``displayTimeUnit``, ``metadata``, ...) are returned when they are small. An array
the writer never closed (a crashed writer) is read up to its last whole event, with a note.
"""

from __future__ import annotations

import os
import re
import zlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Union

import msgspec
import orjson
from isal import igzip
from isal.igzip_lib import IsalError
from msgspec import UNSET

BLOCK = 2 << 20
PENDING_MAX = 512 << 20  # a region with no event boundary in it: not a trace
OTHER_MAX = 16 << 20  # object members outside traceEvents kept (metadata)
_CUTS = (b"},{", b"},\n{", b"}, {", b"},\r\n{")
_EVENTS_KEY = re.compile(rb'"traceEvents"\s*:\s*\[')
GZIP_MAGIC = b"\x1f\x8b"
GZIP_ERRORS = (zlib.error, IsalError)  # corrupt compressed data (truncated: EOFError)


class StreamError(ValueError):
    """Not a readable event array; the message is one clause (the caller names the file)."""


@dataclass
class Chunk:
    """One decoded run of events: ``events`` (``Event`` structs or orjson's objects: see
    ``_decode``), ``offset`` (bytes into the decompressed stream of its first event) and
    ``length`` (bytes)."""

    events: list
    offset: int
    length: int


@dataclass
class StreamInfo:
    """What the stream said besides its events: ``other`` (the object's other members, or
    {}), ``notes`` (one line each: an unterminated array, a partial last event)."""

    other: dict = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    compressed: bool = False


def open_stream(path: str):
    """The file as a binary stream, gunzipped when it starts with the gzip magic (ISA-L's
    ``igzip``: a ``gzip.GzipFile`` that inflates ~3x faster than zlib; corrupt data raises
    one of ``GZIP_ERRORS``)."""
    f = open(path, "rb")  # noqa: SIM115 (returned)
    if f.read(2) == GZIP_MAGIC:
        f.close()
        return igzip.open(path, "rb"), True
    f.seek(0)
    return f, False


def gzip_size(path: str) -> int:
    """Uncompressed size from the gzip trailer (ISIZE: modulo 4 GiB; at least the file's)."""
    with open(path, "rb") as f:
        f.seek(-4, os.SEEK_END)
        isize = int.from_bytes(f.read(4), "little")
    size = os.path.getsize(path)
    while isize < size:  # wrapped: a multiple of 4 GiB is missing
        isize += 1 << 32
    return isize


class Event(msgspec.Struct, gc=False, tag_field="ph", kw_only=True):
    """An event decoded by msgspec (no dict per event; fields it does not name are skipped
    unread); ``ph`` selects the class. Not tracked by the garbage collector (no cycles):
    millions of them must not trigger collections. ``as_dict`` gives what orjson would."""

    def as_dict(self) -> dict:
        values = msgspec.structs.astuple(self)
        d = {k: v for k, v in zip(self.__struct_fields__, values, strict=True) if v is not UNSET}
        d["ph"] = self.__struct_config__.tag
        return d


class _Span(Event, kw_only=True):
    """``X``/``B``/``E`` typed strictly (an odd value fails validation: the chunk is read
    by orjson and checked event by event); defaults as ``dict.get`` would give them."""

    pid: int | str = 0
    tid: int | str = 0
    name: str = "?"
    ts: float


class XEvent(_Span, tag="X"):
    dur: float


class BEvent(_Span, tag="B"):
    pass


class EEvent(_Span, tag="E"):
    pass


_JSON = int | float | str | bool | None | list | dict | msgspec.UnsetType
_FIELDS = ("ts", "dur", "pid", "tid", "name", "cat", "id", "id2", "s", "bp", "args")
# every other phase the loader reads or counts (Trace Event Format); any other: orjson
OTHER_PHASES = "bneSTpFstfCMiIRPONDc()Vv"
_OTHER = tuple(
    msgspec.defstruct(
        f"Event{ord(ph)}", [(f, _JSON, UNSET) for f in _FIELDS], bases=(Event,), tag=ph
    )
    for ph in OTHER_PHASES
)
_DECODER = msgspec.json.Decoder(list[Union[XEvent, BEvent, EEvent, *_OTHER]])  # noqa: UP007
USE_MSGSPEC = True  # False: every chunk through orjson (the reference the tests compare)


def _decode(region: bytes):
    """``[region]`` decoded, or None when it is not valid JSON: a list of ``Event``s when
    every event is an object of a known phase with plainly typed fields (msgspec: twice
    orjson's rate), else a list of orjson's objects."""
    doc = b"[" + region + b"]"
    try:
        return _decode_doc(doc)
    except RecursionError:  # msgspec and orjson stop at depth ~1000 (a JSON bomb, not a trace)
        raise StreamError("an event nested too deep to read (over 1,000 levels)") from None


def _decode_doc(doc: bytes):
    if USE_MSGSPEC:
        try:
            return _DECODER.decode(doc)
        except msgspec.ValidationError:
            pass  # valid JSON of another shape: orjson below
        except msgspec.DecodeError as e:
            if "memory" in str(e).lower():
                raise MemoryError(str(e)) from None
            return None
    try:
        return orjson.loads(doc)
    except orjson.JSONDecodeError as e:
        if "memory" in str(e).lower():
            raise MemoryError(str(e)) from None
        return None


def _last_cut(buf: bytes | memoryview, end: int, start: int = 0) -> int:
    """Index of the ``}`` of the last candidate cut before ``end`` (-1: none); the last
    64 KiB first (a pattern absent from the file would scan the whole block each time)."""
    near = max(start, end - (1 << 16))
    k = max(buf.rfind(c, near, end) for c in _CUTS)
    return k if k >= 0 or near == start else max(buf.rfind(c, start, near + 8) for c in _CUTS)


class EventStream:
    """Iterate ``Chunk``s of the event array of ``stream`` (a binary file object).

    Raises:
        StreamError: not an array or an object with ``traceEvents``; invalid JSON.
        MemoryError: the decoder ran out of memory.
    """

    def __init__(self, stream, block: int = BLOCK):
        self.stream = stream
        self.block = block
        self.info = StreamInfo()
        self.pos = 0  # stream offset of buf[0]
        self._head = b""
        self._tail = b""

    def _read(self) -> bytes:
        return self.stream.read(self.block)

    def _start(self) -> bytes:
        """Skip to just after the event array's ``[``; returns the bytes after it."""
        buf = b""
        while True:
            data = self._read()
            buf += data
            s = buf.lstrip()
            if not s:
                if not data:
                    raise StreamError("empty file")
                continue
            if s[:1] == b"[":
                skip = len(buf) - len(s) + 1
                self.pos = skip
                return buf[skip:]
            if s[:1] != b"{":
                raise StreamError("not valid JSON: neither an event array nor an object")
            m = _EVENTS_KEY.search(buf)
            if m:
                self._head = buf[: m.start()]
                self.pos = m.end()
                return buf[m.end() :]
            if not data or len(buf) > OTHER_MAX:
                raise StreamError("no traceEvents list; expected a Chrome Trace Event JSON file")

    def __iter__(self) -> Iterator[Chunk]:
        buf = self._start()
        eof = False
        while True:
            if not eof:
                data = self._read()
                eof = not data
                buf += data
            if eof:
                yield from self._finish(buf)
                return
            cut, events = self._chunk_end(buf)
            if cut > 0:
                yield Chunk(events, self.pos, cut)
                self.pos += cut + 1  # the comma
                buf = buf[cut + 1 :]
            elif len(buf) > PENDING_MAX:
                raise StreamError(
                    f"not valid JSON: no event boundary in {len(buf) >> 20} MB after byte "
                    f"{self.pos}"
                )

    def _chunk_end(self, buf: bytes) -> tuple[int, list | None]:
        """End (exclusive) of the longest prefix of whole events that decodes, and its
        events; ``(0, None)``: none yet (wait for more data)."""
        end = len(buf)
        for _ in range(8):
            k = _last_cut(buf, end)
            if k < 0:
                return 0, None
            events = _decode(buf[: k + 1].lstrip(b", \t\r\n"))
            if events is not None:
                return k + 1, events
            end = k
        return 0, None

    def _finish(self, buf: bytes) -> Iterator[Chunk]:
        """The rest of the array: up to its closing ``]`` (the members after it kept), or
        the writer never closed it (a note; a partial last event dropped, with a note)."""
        body = buf.rstrip()
        end = len(body)
        for _ in range(64):  # the closing bracket: the last ']' after which the rest parses
            k = body.rfind(b"]", 0, end)
            if k < 0:
                break
            events = _decode(bytes(body[:k]).strip().rstrip(b","))
            if events is not None and self._rest_ok(body[k + 1 :]):
                if events:
                    yield Chunk(events, self.pos, k)
                return
            end = k
        rest = bytes(body).strip().rstrip(b",")
        try:
            events = orjson.loads(b"[" + rest + b"]")
        except orjson.JSONDecodeError as e:
            if e.pos < len(rest):  # failed before the data ran out: corrupt, not truncated
                raise StreamError(f"not valid JSON near byte {self.pos + e.pos}") from None
            events = None
        if events is None:
            cut = _last_cut(body, len(body))
            events = _decode(bytes(body[: cut + 1]).strip()) if cut >= 0 else None
            if events is None and cut >= 0:
                raise StreamError(f"not valid JSON near byte {self.pos + cut}")
            dropped = len(body[cut + 1 :].lstrip(b", \t\r\n"))
            events = events or []
            self.info.notes.append(
                f"the file ends inside an event ({dropped} bytes dropped at byte "
                f"{self.pos + cut + 1}: truncated)"
            )
        self.info.notes.append(
            "the event array is not closed (a writer that stopped early): read up to its last "
            "whole event"
        )
        if events:
            yield Chunk(events, self.pos, len(body))

    def _rest_ok(self, rest: bytes) -> bool:
        """After the array's ``]``: nothing (a bare array) or the object's other members."""
        r = bytes(rest).strip()
        if not self._head:
            return r == b""
        doc = self._head.strip() + b'"traceEvents": []' + r
        try:
            other = orjson.loads(doc) if len(doc) < OTHER_MAX else {}
        except orjson.JSONDecodeError:
            return False
        if isinstance(other, dict):
            other.pop("traceEvents", None)
            self.info.other = other
        return True
