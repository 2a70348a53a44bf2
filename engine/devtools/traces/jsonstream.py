"""A Chrome trace's event array read as a stream of decoded chunks: bounded memory for any
file size, plain or gzip (ISA-L's ``igzip``: decompressed as it is read).

The stream is read in blocks of ``BLOCK`` bytes. Each block is cut after its last ``},{``
(optionally with a space or newline after the comma): the events before the cut are one
chunk, decoded as ``[`` + chunk + ``]`` (``_decode``: msgspec ``Event`` structs, one class per
phase, when every event is of a known phase with plainly typed fields, else orjson
objects). A cut that lands inside a nested value or a string can never decode (the brackets
or the quotes would not balance); when the last cut does not decode, the pending bytes are
read by ``Structure`` (a numpy structural index: strings, escapes, nesting depth), which
finds the last real event boundary or the array's closing ``]``; only a block with no whole
event waits for more data. Memory: the block, the chunk's decoded events and one partial
event.

The array may be the whole document or the ``traceEvents`` member of an object. The
object's other members, before or after the array, of any size and content (an ftrace
``systemTraceEvents`` dump full of ``[001]``, ``metadata``, ``stackFrames``, ``samples``), are
found by the same structural index, never by guessing from brackets: each is parsed into
``StreamInfo.other`` when under ``OTHER_MAX``, skipped unread when larger. An array the
writer never closed (a crashed writer) is read up to its last whole event, with a note.
Byte sequences that are not UTF-8 are read as U+FFFD (as a browser reads such a trace),
counted in one note with the offset of the first; UTF-16 or UTF-32 text is refused.
"""

from __future__ import annotations

import os
import zlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Union

import msgspec
import numpy as np
import orjson
from isal import igzip
from isal.igzip_lib import IsalError
from msgspec import UNSET

from engine.textfile import UTF8_BOM, replace_invalid, utf8_problem, wide_text

BLOCK = 2 << 20
PENDING_MAX = 512 << 20  # a region with no event boundary in it: not a trace
OTHER_MAX = 16 << 20  # object members outside traceEvents kept (metadata)
_CUTS = (b"},{", b"},\n{", b"}, {", b"},\r\n{")
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
PHASE_CLASS = dict(zip(OTHER_PHASES, _OTHER, strict=True))  # phase -> its Event class
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


# the bytes that shape JSON outside strings, and what each does to the nesting depth
_STRUCTURAL = np.zeros(256, bool)
_DELTA = np.zeros(256, np.int64)
for _c, _d in ((b"{", 1), (b"[", 1), (b"}", -1), (b"]", -1), (b",", 0), (b":", 0)):
    _STRUCTURAL[_c[0]], _DELTA[_c[0]] = True, _d
_NONE = (np.zeros(0, np.int64), np.zeros(0, np.uint8), np.zeros(0, np.int64))


class Structure:
    """Where a JSON text's strings are and how deep each byte is nested, read a block at a
    time with numpy (no Python per byte; 0.1-0.3 GB/s on the 2-core machine, by how dense
    the brackets and quotes are): a quote preceded by an odd run of backslashes is escaped,
    the parity of the others up to a byte says whether it is in a string, and outside each
    ``{``/``[`` and ``}``/``]`` moves the depth (the structural index of simdjson: Langdale &
    Lemire, "Parsing Gigabytes of JSON per Second", VLDB Journal 2019).

    Args:
        depth: the nesting depth where the text starts (outside a string).
    """

    def __init__(self, depth: int = 0):
        self.depth = depth
        self.in_string = False
        self.escaped = False  # the next block's first byte is escaped (a run of \\ was cut)

    def scan(self, block: bytes | memoryview) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The next ``block`` of the text: ``(at, byte, depth)`` of each ``{}[],:`` outside
        strings (``int64`` offset in the block, ``uint8`` byte, ``int64`` depth after it)."""
        b = np.frombuffer(block, np.uint8)
        if not len(b):
            return _NONE
        quote = b == 0x22
        slashes = np.flatnonzero(b == 0x5C)
        carried, self.escaped = self.escaped, False
        if len(slashes) or carried:
            escaped = np.zeros(0, np.int64)
            if len(slashes):
                brk = np.flatnonzero(np.diff(slashes) != 1)
                first, last = slashes[np.r_[0, brk + 1]], slashes[np.r_[brk, len(slashes) - 1]]
                run = last - first + 1 + ((first == 0) & carried)  # a cut run continues
                escaped = last[run % 2 == 1] + 1
                if len(escaped) and escaped[-1] == len(b):
                    escaped, self.escaped = escaped[:-1], True
            if carried and b[0] != 0x5C:
                escaped = np.r_[0, escaped]
            quote[escaped] = False
        parity = np.bitwise_xor.accumulate(quote.view(np.uint8))  # quotes so far, mod 2
        at = np.flatnonzero(_STRUCTURAL[b] & (parity == self.in_string))
        self.in_string ^= bool(parity[-1])
        byte = b[at]
        depth = self.depth + np.cumsum(_DELTA[byte])
        if len(depth):
            self.depth = int(depth[-1])
        return at, byte, depth


class _Members:
    """The members of the object around the event array, fed a block at a time: before the
    array (``head``: until ``"traceEvents": [``) or after it (from just after its ``]`` to
    the closing brace). Members are found by ``Structure`` at depth 1, whatever their size
    or the brackets in their strings (an ftrace dump's ``[001]``); each is parsed into
    ``other`` when it is under ``OTHER_MAX`` bytes, else skipped unread (a gigabyte
    ``systemTraceEvents`` is never held)."""

    def __init__(self, stream: EventStream, *, head: bool):
        self.stream, self.head = stream, head
        self.structure = Structure(0 if head else 1)
        self.part: bytearray | None = bytearray()  # the member so far (None: over OTHER_MAX)
        self.part_at = 0  # its file offset
        self.opened = not head  # the object's { seen
        self.events = not head  # the member being read is traceEvents (skipped)
        self.want_array = False  # traceEvents' colon seen: its value must be an array
        self.closed = False  # the object's } seen
        self.junk_at = -1  # file offset of the first byte that is not JSON here

    def feed(self, block: bytes, base: int) -> int:
        """The next ``block`` (at file offset ``base``): -1, or (head) the offset in it just
        after ``traceEvents``' ``[``."""
        if self.closed:
            if block.strip():
                self._junk(base + len(block) - len(block.lstrip()))
            return -1
        if self.events and not self.head and self.part_at == 0:
            self.part_at = base
        at, byte, depth = self.structure.scan(block)
        keep = np.flatnonzero((depth <= 1) | ((depth == 2) & (byte == ord("["))))
        start = 0  # the current member's bytes not yet added to part
        for k, c, d in zip(at[keep].tolist(), byte[keep].tolist(), depth[keep].tolist(),
                           strict=True):  # fmt: skip
            if self.closed or d < 0 or (d == 0 and c != ord("}")):  # after the end; unbalanced
                self._junk(base + k)
                return -1
            if not self.opened:  # the head's first structural byte: the object's {
                self.opened, start, self.part_at = True, k + 1, base + k + 1
            elif self.want_array:
                if c != ord("["):
                    raise StreamError("traceEvents is not a list of events")
                return k + 1
            elif c == ord(":") and d == 1:
                self._add(block, start, k)
                start = k
                self.want_array = self.head and self._key() == "traceEvents"
            elif (c == ord(",") and d == 1) or d == 0:  # a member's end; the object's
                self._add(block, start, k)
                self._member_done()
                start, self.part_at = k + 1, base + k + 1
                self.closed = d == 0
            # else: a bracket of a member's value
        if self.closed:
            if rest := block[start:].strip():
                self._junk(base + block.index(rest[:1], start))
        elif self.opened:
            self._add(block, start, len(block))
        return -1

    def finish(self) -> None:
        """The end of the file: an object never closed is said once (the events are whole)."""
        if not self.closed and self.junk_at < 0:
            self.stream.info.notes.append(
                "the file ends inside the members after traceEvents (truncated?): read the "
                "events, skipped the unfinished member"
            )

    def _add(self, block: bytes, a: int, b: int) -> None:
        if self.part is not None:
            if len(self.part) + b - a > OTHER_MAX:
                self.part = None
            else:
                self.part += block[a:b]

    def _key(self):
        """The current member's key (its bytes up to the colon), or None."""
        try:
            return orjson.loads(bytes(self.part)) if self.part is not None else None
        except orjson.JSONDecodeError:
            return None

    def _member_done(self) -> None:
        part, self.part = self.part, bytearray()
        if self.events:  # the rest of traceEvents after its ]: nothing but space
            self.events = False
            if part and part.strip():
                self._junk(self.part_at)
            return
        if part is None or not part.strip():  # over OTHER_MAX: skipped unread; or empty
            return
        doc = b"{" + bytes(part) + b"}"
        try:
            value = orjson.loads(doc)
        except orjson.JSONDecodeError:
            fixed = replace_invalid(doc, self.part_at - 1)
            try:
                value = orjson.loads(fixed[0]) if fixed else None
            except orjson.JSONDecodeError:
                value = None
            if value is None:
                self._junk(self.part_at + len(part) - len(part.lstrip()))
                return
            self.stream.replaced(fixed[1], doc, fixed[0])
        if isinstance(value, dict):
            if value.pop("traceEvents", None) is not None and not self.head:
                self.stream.info.notes.append(
                    "a second traceEvents member follows the first: this reads the first; "
                    "JSON readers that keep the last (Perfetto, JSON.parse) draw the other"
                )
            self.stream.info.other.update(value)

    def _junk(self, offset: int) -> None:
        if self.head:
            raise StreamError(f"not valid JSON near byte {offset}")
        if self.junk_at < 0:
            self.junk_at = offset
            self.stream.info.notes.append(
                f"the members after traceEvents are not valid JSON (near byte {offset}): "
                "read the events, ignored the rest"
            )


class EventStream:
    """Iterate ``Chunk``s of the event array of ``stream`` (a binary file object).

    Raises:
        StreamError: not an array or an object with ``traceEvents``; invalid JSON; UTF-16
            or UTF-32 text.
        MemoryError: the decoder ran out of memory.
    """

    def __init__(self, stream, block: int = BLOCK):
        self.stream = stream
        self.block = block
        self.info = StreamInfo()
        self.pos = 0  # stream offset of buf[0]
        self._object = False  # the array is the traceEvents member of an object
        self._scan: Structure | None = None  # of the pending bytes since the last cut
        self._scanned = 0  # bytes of the pending buffer scanned
        self._last_comma = -1  # the last event boundary (depth 0) found there
        self._replaced = [0, -1]  # byte sequences read as U+FFFD; file offset of the first

    def _read(self) -> bytes:
        return self.stream.read(self.block)

    def _start(self) -> bytes:
        """Skip to just after the event array's ``[``; returns the bytes after it."""
        buf = self._read()
        while 0 < len(buf) < 4 and (more := self._read()):  # room for a byte-order mark
            buf += more
        if (wide := wide_text(buf)) is not None:
            raise StreamError(wide)
        if (k := buf.find(b"\x00", 0, 4096)) >= 0:  # never in JSON: UTF-16 without a mark?
            raise StreamError(utf8_problem(buf[: k + 1], nul=False)[1])
        skip = len(UTF8_BOM) if buf.startswith(UTF8_BOM) else 0  # valid: stripped
        data = buf
        while not buf[skip:].strip():
            if not data:
                raise StreamError("empty file")
            data = self._read()
            buf += data
        s = buf[skip:].lstrip()
        at = len(buf) - len(s)
        if s[:1] == b"[":
            self.pos = at + 1
            return buf[at + 1 :]
        if s[:1] != b"{":
            raise StreamError("not valid JSON: neither an event array nor an object")
        self._object = True
        members, base, done, piece = _Members(self, head=True), 0, at, 4096
        while True:  # growing pieces: usually traceEvents is first, in the first 4 KiB
            part = buf[done : done + piece]
            k = members.feed(part, base + done)
            if k >= 0:
                self.pos = base + done + k
                return buf[done + k :]
            done, piece = done + len(part), piece * 4
            if done == len(buf):
                if members.closed or not part:
                    raise StreamError(
                        "no traceEvents list; expected a Chrome Trace Event JSON file"
                    )
                base, buf, done = base + done, self._read(), 0

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
                break
            cut, events = self._chunk_end(buf)
            if cut == 0:
                cut, events, end = self._by_structure(buf)
                if end >= 0:  # the array closed in buf
                    if events:
                        yield Chunk(events, self.pos, end)
                    self._after_array(buf, end, eof=False)
                    break
            if cut > 0:
                yield Chunk(events, self.pos, cut)
                self.pos += cut + 1  # the comma
                buf = buf[cut + 1 :]
                self._scan = None
            elif len(buf) > PENDING_MAX:
                raise StreamError(
                    f"not valid JSON: no event boundary in {len(buf) >> 20} MB after byte "
                    f"{self.pos}"
                )
        n, first = self._replaced
        if n:
            self.info.notes.append(
                f"read {n} byte sequence(s) that are not UTF-8 as U+FFFD (the first at byte "
                f"{first}; was the trace written in another encoding?)"
            )

    def replaced(self, first: int, before: bytes, after: bytes) -> None:
        """Count the U+FFFD ``replace_invalid`` put into ``after`` (``before``: the bytes)."""
        fffd = "\ufffd".encode()
        self._replaced[0] += after.count(fffd) - before.count(fffd)
        if self._replaced[1] < 0:
            self._replaced[1] = first

    def _chunk_end(self, buf: bytes) -> tuple[int, list | None]:
        """The fast path: the whole events up to the block's last candidate cut, when that
        decodes (a cut inside a string or a nested value never does); ``(0, None)``: not."""
        k = _last_cut(buf, len(buf))
        if k < 0:
            return 0, None
        events = _decode(buf[: k + 1].lstrip(b", \t\r\n"))
        return (k + 1, events) if events is not None else (0, None)

    def _by_structure(self, buf: bytes) -> tuple[int, list | None, int]:
        """Where the fast path found no cut: ``Structure`` over the pending bytes (the new
        ones only) finds the array's closing ``]`` or else the last event boundary.
        Returns ``(cut, events, end)``: ``end`` >= 0 the ``]``'s index (``events`` before
        it), else ``cut`` > 0 the last boundary's comma, else ``(0, None, -1)``: no whole
        event yet."""
        if self._scan is None:
            self._scan, self._scanned, self._last_comma = Structure(0), 0, -1
        at, byte, depth = self._scan.scan(memoryview(buf)[self._scanned :])
        at += self._scanned
        self._scanned = len(buf)
        out = np.flatnonzero(depth < 0)
        if len(out):
            end = int(at[out[0]])
            if byte[out[0]] != ord("]"):
                raise StreamError(f"not valid JSON near byte {self.pos + end}")
            return 0, self._decode_at(buf[:end]), end
        commas = np.flatnonzero((depth == 0) & (byte == ord(",")))
        if len(commas):
            self._last_comma = int(at[commas[-1]])
        if self._last_comma < 0:
            return 0, None, -1
        return self._last_comma, self._decode_at(buf[: self._last_comma]), -1

    def _decode_at(self, region: bytes) -> list:
        """``region`` (whole events from ``self.pos``) decoded; byte sequences that are not
        UTF-8 read as U+FFFD (and counted for a note).

        Raises:
            StreamError: not valid JSON, naming the byte.
        """
        region = bytes(region)
        events = _decode(region.strip(b", \t\r\n")) if region.strip() else []
        fixed = None
        if events is None:
            fixed = replace_invalid(region, self.pos)
            if fixed is not None:
                events = _decode(fixed[0].strip(b", \t\r\n"))
                if events is not None:
                    self.replaced(fixed[1], region, fixed[0])
        if events is None:
            try:
                orjson.loads(b"[" + (fixed[0] if fixed else region) + b"]")
            except orjson.JSONDecodeError as e:
                at = self.pos + max(e.pos - 1, 0)
                raise StreamError(f"not valid JSON near byte {at}") from None
        return events

    def _finish(self, buf: bytes) -> Iterator[Chunk]:
        """The rest of the array at the end of the file: up to its closing ``]`` (the
        members after it read), or the writer never closed it (a note; a partial last
        event dropped, with a note)."""
        body = buf.rstrip()
        k = -1  # the usual end, the array (and its object) closed here: tried first
        if not self._object and body.endswith(b"]"):
            k = len(body) - 1
        elif self._object and body.endswith(b"}"):
            k = body.rfind(b"]")
            k = k if k >= 0 and not body[k + 1 : -1].strip() else -1
        if k >= 0:  # right when it decodes: whole values, then the ] (and the })
            events = _decode(bytes(body[:k]).strip().rstrip(b","))
            if events is not None:
                if events:
                    yield Chunk(events, self.pos, k)
                return
        _, events, end = self._by_structure(buf)
        if end >= 0:
            if events:
                yield Chunk(events, self.pos, end)
            self._after_array(buf, end, eof=True)
            return
        scan = self._scan
        whole = scan is not None and scan.depth == 0 and not scan.in_string
        events = None
        if whole:  # the last value is complete (or a literal cut short: retried below)
            try:
                events = self._decode_at(buf)
            except StreamError:
                events = None
        if events is None:
            cut = self._last_comma
            events = self._decode_at(buf[:cut]) if cut > 0 else []
            rest = bytes(buf[cut + 1 :])
            at = self.pos + cut + 1 + len(rest) - len(rest.lstrip())  # the partial event
            self.info.notes.append(
                f"the file ends inside an event ({len(rest.strip())} bytes dropped at byte "
                f"{at}: truncated)"
            )
        self.info.notes.append(
            "the event array is not closed (a writer that stopped early): read up to its last "
            "whole event"
        )
        if events:
            yield Chunk(events, self.pos, len(body))

    def _after_array(self, buf: bytes, end: int, *, eof: bool) -> None:
        """After the array's ``]`` at ``buf[end]``: the object's other members (kept in
        ``info.other``) up to its closing brace, or for a bare array nothing but space."""
        rest, base = buf[end + 1 :], self.pos + end + 1
        if not self._object:
            extra = 0
            while True:
                if rest.strip() and not extra:
                    extra = base + len(rest) - len(rest.lstrip())
                if eof:
                    break
                base, rest = base + len(rest), self._read()
                eof = not rest
            if extra:
                self.info.notes.append(
                    f"ignored what follows the event array (from byte {extra}: not JSON)"
                )
            return
        members = _Members(self, head=False)
        while True:
            if rest:
                members.feed(rest, base)
            if eof:
                break
            base, rest = base + len(rest), self._read()
            eof = not rest
        members.finish()
