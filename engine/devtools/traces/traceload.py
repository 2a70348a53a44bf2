"""Trace files -> a columnar span table (numpy), for the flame chart.

Formats:

* **Chrome Trace Event JSON** (Google, "Trace Event Format",
  https://docs.google.com/document/d/1CvAClvFfyA5R-PhYUmn5OOQtYMH4h6I0nSsKchNAySU): a list of
  events or ``{"traceEvents": [...]}``, plain or gzip, read as a stream of decoded chunks
  (``engine.devtools.traces.jsonstream``: memory stays near the spans kept, ~40 B each, plus one
  block); an array a crashed writer left open is read up to its last whole event. Drawn:
  complete events ``ph: "X"`` (``ts``/``dur`` in microseconds; a numeric string ``ts`` is
  coerced, as Perfetto does) and ``B``/``E`` pairs matched per (pid, tid) as a stack; async
  ``b``/``e`` (and legacy ``S``/``F``) pairs on a track of their own per (pid, cat, id),
  nested as a stack there; instant events ``i``/``I``/``n``/``T`` as zero-length spans (one
  pixel markers) on their track. Metadata ``M`` events
  ``process_name``/``thread_name`` label the tracks, ``process_sort_index``/
  ``thread_sort_index`` order them. Lantern's own ``--trace`` output is such a file.
* **Lantern ``--telemetry`` JSON Lines** (``engine.telemetry.JsonLinesWriter``): a session
  line, ``names`` lines, one ``frame`` line per record with CPU and GPU scopes in ns. GPU
  scopes are shifted onto the CPU clock by the session's ``gpu_clock_offset_ns`` (an
  estimate: the lane says so); without it they are left out.

Every track (process/thread, or CPU main thread / GPU queue) is a *lane*; a span's *depth* is
the number of spans of its lane open around it (nesting). Input that cannot be drawn is
counted and reported in ``SpanTable.notes`` (one line per kind), never guessed at; a file
that yields nothing raises ``TraceError`` with one line naming the file.
"""

from __future__ import annotations

import gc
import logging
import math
import os
from collections import Counter
from collections.abc import Iterator
from itertools import chain, repeat
from operator import attrgetter, itemgetter
from pathlib import Path

import msgspec
import numpy as np
import orjson
from msgspec import UNSET, UnsetType

from engine.devtools.traces.jsonstream import (
    BLOCK,
    GZIP_ERRORS,
    PHASE_CLASS,
    BEvent,
    EEvent,
    Event,
    EventStream,
    StreamError,
    XEvent,
    gzip_size,
    open_stream,
)
from engine.flamechart.table import (  # noqa: F401 - the model, re-exported for readers
    COUNTER_ROWS,
    CPU_LANE,
    GPU_LANE,
    MAX_ROWS,
    CounterTrack,
    Flows,
    SpanTable,
    _build_table,
    build_table,
    nesting_depth,
)
from engine.textfile import UTF8_BOM, replace_invalid, wide_text

log = logging.getLogger("lantern")


class TraceError(ValueError):
    """The file cannot be read as a trace; the message is one line naming it."""


def event_at(table: SpanTable, span: int) -> dict | None:
    """The file's event behind span ``span`` of ``table`` (decoded again from its chunk: its
    ``cat`` and ``args`` are not kept in memory), or None (generated spans, JSONL)."""
    if not table.source or len(table.event) <= span or table.event[span] < 0 or not table.chunks:
        return None
    ev = int(table.event[span])
    k = max(i for i, c in enumerate(table.chunks) if c[0] <= ev)
    first, offset, length = table.chunks[k]
    stream, _ = open_stream(table.source)
    with stream:
        stream.seek(offset)
        data = stream.read(length)
    doc = b"[" + data.lstrip(b", \t\r\n").rstrip(b", \t\r\n") + b"]"
    try:
        events = orjson.loads(doc)
    except orjson.JSONDecodeError:
        fixed = replace_invalid(doc)  # read as the loader read it: U+FFFD
        try:
            events = orjson.loads(fixed[0]) if fixed else None
        except orjson.JSONDecodeError:
            events = None
        if events is None:
            return None
    e = events[ev - first] if ev - first < len(events) else None
    return e if isinstance(e, dict) else None


LOAD_BYTES_PER_BYTE = 1.0  # peak memory while loading, per byte of (decompressed) trace
LOAD_FIXED = 256 << 20  # blocks, decoded chunk, interpreter
STREAM_BLOCK = BLOCK  # bytes read at a time (tests make it tiny)


def load_trace(path: str | Path) -> SpanTable:
    """Read a Chrome Trace Event JSON (plain or gzip) or Lantern telemetry JSONL file.

    Text that is not UTF-8 is read as a browser reads it (each bad byte sequence as U+FFFD,
    counted in a note naming the byte of the first); a UTF-8 byte-order mark is skipped.

    Raises:
        TraceError: missing, unreadable, empty, not JSON, UTF-16 or UTF-32 text, too large
            for the memory available, or no span in it; the message is one line naming the
            file and what to do.
    """
    p = str(path)
    try:
        stream, compressed = open_stream(p)
        size = gzip_size(p) if compressed else os.path.getsize(p)
    except OSError as e:
        raise TraceError(f"{path}: cannot read ({e.strerror or e})") from None
    with stream:
        _check_memory(path, size, compressed)
        try:
            head = stream.read(4096)
            stream.seek(0)
        except (OSError, EOFError, *GZIP_ERRORS) as e:
            raise TraceError(f"{path}: cannot read, truncated or corrupt ({e})") from None
        if not head.removeprefix(UTF8_BOM).strip():
            raise TraceError(f"{path}: empty file; give a Chrome trace JSON or a --telemetry JSONL")
        if (wide := wide_text(head)) is not None:
            raise TraceError(f"{path}: {wide}")
        first = head.removeprefix(UTF8_BOM).lstrip()[:200]  # a UTF-8 byte-order mark: valid
        try:
            if first.startswith(b"{") and b'"type"' in first.split(b"\n", 1)[0]:
                table = _load_jsonl(path, stream)
            else:
                table = _load_chrome(path, stream)
        except MemoryError:
            raise TraceError(
                f"{path}: ran out of memory loading this {_gb(size)} trace "
                f"({_gb(_available_bytes())} available); close other programs or split it"
            ) from None
        except (OSError, EOFError, *GZIP_ERRORS) as e:
            raise TraceError(f"{path}: cannot read, truncated or corrupt ({e})") from None
    if len(table.lanes) > MAX_ROWS or (len(table) and int(table.depth.max()) >= MAX_ROWS):
        raise TraceError(
            f"{path}: more than {MAX_ROWS} tracks or nesting levels; the flame chart draws "
            "at most that many (split the trace)"
        )
    for note in table.notes:
        log.warning("%s: %s", path, note)
    table.source = str(path)
    return table


def _available_bytes() -> int:
    """Memory this process may still use: MemAvailable, capped by a cgroup limit."""
    avail = 1 << 62
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemAvailable:"):
                avail = int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    for f in ("/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"):
        try:
            lim = Path(f).read_text().strip()
            if lim.isdigit():
                used = Path(f.replace("max", "current").replace("limit_in_bytes", "usage_in_bytes"))
                avail = min(avail, int(lim) - int(used.read_text().strip()))
        except (OSError, ValueError):
            pass
    return avail


def _gb(n: float) -> str:
    return f"{n / 1e9:.1f} GB" if n >= 1e8 else f"{n / 1e6:.0f} MB"


def _check_memory(path, size: int, compressed: bool) -> None:
    """Refuse up front a trace whose load would not fit in the memory available."""
    need = size * LOAD_BYTES_PER_BYTE + LOAD_FIXED
    avail = _available_bytes()
    if need > avail:
        fits = max(0, (avail - LOAD_FIXED) / LOAD_BYTES_PER_BYTE)
        what = "decompressed " if compressed else ""
        raise TraceError(
            f"{path}: this {what}{_gb(size)} trace needs about {_gb(need)} of memory to load "
            f"and {_gb(avail)} is available (a trace up to {_gb(fits)} would fit); free memory "
            "or split the trace"
        )


# -- Chrome Trace Event JSON ------------------------------------------------------------------
def display_name(v) -> str:
    """A span name as text: strings as they are; null as ``(null)``; any other JSON value
    as compact JSON (never Python's repr)."""
    if isinstance(v, str):
        return v
    if v is None:
        return "(null)"
    try:
        return orjson.dumps(v, option=orjson.OPT_SORT_KEYS).decode()
    except TypeError:
        return str(v)


class _Names:
    def __init__(self):
        self.ids: dict[str, int] = {}

    def __call__(self, name) -> int:
        name = display_name(name)
        i = self.ids.get(name)
        if i is None:
            i = self.ids[name] = len(self.ids)
        return i


def _load_chrome(path, stream) -> SpanTable:
    reader = _ChromeReader()
    events = EventStream(stream, STREAM_BLOCK)
    was_on = gc.isenabled()
    gc.disable()  # decoded chunks are millions of acyclic objects: no collections meanwhile
    try:
        for chunk in events:
            reader.chunks.append((reader.ordinal, chunk.offset, chunk.length))
            reader.feed_chunk(chunk.events)
    except StreamError as e:
        raise TraceError(f"{path}: {e}") from None
    finally:
        if was_on:
            gc.enable()
    info = events.info
    unit = info.other.get("displayTimeUnit") if isinstance(info.other, dict) else None
    table = reader.table(path, info.notes)
    table.display_unit = unit if unit in ("ms", "ns") else "ms"
    table.chunks = reader.chunks
    return table


_PLAIN = {int, float}
_X_FIELDS = tuple(attrgetter(k) for k in ("ts", "dur", "pid", "tid", "name"))
_KEYS = {int, str}
ASYNC_BEGIN, ASYNC_END = ("b", "S"), ("e", "F")
FLOWS = ("s", "t", "f")
_FLOW_PHASE = {PHASE_CLASS[ph]: i for i, ph in enumerate(FLOWS)}  # struct class -> 0, 1, 2
_FLOW_KINDS = np.array([id(c) for c in _FLOW_PHASE], np.int64)
INSTANTS = ("i", "I", "n", "T")


class _ChromeReader:
    """Chrome events -> span columns, a chunk at a time; bad events counted by kind.

    ``X`` events whose fields are plain (numeric ts/dur, int or string pid/tid, string
    name: nearly all) are converted as numpy columns per chunk, and so are ``B``/``E``
    events decoded as structs; anything else goes through ``feed`` one event at a time,
    which validates and counts every odd value (the specification the fast paths are
    tested against). Begins and ends of every kind are paired at the end (``_pairs``);
    the spans are then put in file order (``_in_file_order``)."""

    def __init__(self):
        self.names = _Names()
        self.tracks: dict[tuple, int] = {}
        self.track_label: dict[tuple, str] = {}
        self.cols: tuple[list, list, list, list, list] = ([], [], [], [], [])  # + event
        self.parts: list[tuple[np.ndarray, ...]] = []  # vectorised chunks, same columns
        self.proc_name, self.thread_name, self.proc_sort, self.thread_sort = {}, {}, {}, {}
        # begins and ends (B/E, b/e, S/F): matched per track at the end (``match_pairs``)
        self.be_cols: tuple[list, list, list, list, list] = ([], [], [], [], [])
        self.be_parts: list[list[np.ndarray]] = []
        self.be_names = _Names()  # their names (the span's is chosen when matched)
        self.bad: Counter = Counter()
        self.unknown: Counter = Counter()
        self.ordinal = 0  # of the event being read
        self.chunks: list[tuple[int, int, int]] = []
        self.counter_cols: dict[tuple, tuple[list, list]] = {}  # (pid, name, series)
        self.flow_ids: dict[tuple, int] = {}  # (cat, name, id) -> flow key
        self.flow_cols: tuple[list, ...] = ([], [], [], [], [], [])  # key, ts, ph, track, bp, event

    def track(self, e: dict) -> int:
        return self._track((_ident(e.get("pid", 0)), _ident(e.get("tid", 0))))

    def _track(self, key: tuple, label: str | None = None) -> int:
        t = self.tracks.get(key)
        if t is None:
            t = self.tracks[key] = len(self.tracks)
            if label is not None:
                self.track_label[key] = label
        return t

    def async_track(self, e: dict) -> int:
        """Async events: one track per (pid, cat, id) (``id2.local``/``global`` too)."""
        ident = e.get("id", e.get("id2"))
        cat = e.get("cat", "")
        pid = _ident(e.get("pid", 0))
        key = (pid, ("async", display_name(cat), display_name(ident)))
        return self._track(key, f"async {display_name(cat)} {display_name(ident)}")

    def add(self, track: int, begin: int, end: int, name, event: int = -1) -> None:
        lane, start, stop, nid, ev = self.cols
        lane.append(track)
        start.append(begin)
        stop.append(end)
        nid.append(self.names(name))
        ev.append(self.ordinal if event < 0 else event)

    def feed_chunk(self, events: list) -> None:
        """One decoded chunk (orjson's objects or ``jsonstream.Event`` structs): the plain
        ``X`` events as columns, the rest one by one in file order."""
        base = self.ordinal
        if events and isinstance(events[0], Event):
            self._feed_structs(events, base)
        else:
            self._feed_dicts(events, base)
        self.ordinal = base + len(events)
        if len(self.cols[0]) >= 1 << 16:  # Python ints: ~40 B each; numpy from here on
            self.parts.append(self._cols_part())
        if len(self.be_cols[0]) >= 1 << 16:
            self.be_parts.append(self._be_part())

    def _feed_dicts(self, events: list, base: int) -> None:
        try:
            phs = list(map(dict.get, events, repeat("ph")))
        except TypeError:  # an event that is not an object: all one by one
            xs = []
        else:
            n_x = phs.count("X")
            xs = (
                range(len(events))
                if n_x == len(phs)
                else [k for k, p in enumerate(phs) if p == "X"]
            )
        done = self._plain_x(events, xs, base) if len(xs) else []
        if len(done) != len(events):
            skip = set(done)
            for k, e in enumerate(events):
                if k not in skip:
                    self.ordinal = base + k
                    self.feed(e)

    def _feed_structs(self, events: list, base: int) -> None:
        """Typed events: every ``XEvent`` is plain (msgspec checked the types), and so is
        every ``BEvent``/``EEvent``: both as columns; other phases through ``feed`` as
        dicts, in file order."""
        types = list(map(type, events))
        n_x = types.count(XEvent)
        if n_x == len(events):
            self._x_columns(events, range(len(events)), base)
            return
        kind = np.fromiter(map(id, types), np.int64, len(types))  # the class of each event
        if n_x:
            xs = np.flatnonzero(kind == id(XEvent))
            self._x_columns(_take(events, xs), xs, base)
        be = np.flatnonzero((kind == id(BEvent)) | (kind == id(EEvent)))
        if len(be):
            self._be_columns(_take(events, be), kind[be] == id(BEvent), be + base)
        done = (kind == id(XEvent)) | (kind == id(BEvent)) | (kind == id(EEvent))
        fl = np.flatnonzero(np.isin(kind, _FLOW_KINDS))
        if len(fl) and self._flow_columns(_take(events, fl), fl + base):
            done[fl] = True
        if not done.all():
            for k in np.flatnonzero(~done).tolist():
                self.ordinal = base + k
                self.feed(events[k].as_dict())

    def _flow_columns(self, x: list, ordinal: np.ndarray) -> bool:
        """Flow events (``s``/``t``/``f`` structs) as columns when every field ``feed``
        reads is plainly typed (number ``ts``, string or integer ``pid``/``tid``/``id``,
        string ``cat``/``name``/``bp``, each possibly absent); False: none taken (they go
        through ``feed``, which checks each)."""
        fields = ("ts", "pid", "tid", "cat", "name", "id", "bp")
        ts, pid, tid, cat, name, ident, bp = (list(map(attrgetter(f), x)) for f in fields)
        keys, text = {int, str, UnsetType}, {str, UnsetType}
        if not (set(map(type, ts)) <= _PLAIN and set(map(type, pid)) <= keys
                and set(map(type, tid)) <= keys and set(map(type, cat)) <= text
                and set(map(type, name)) <= text and set(map(type, ident)) <= _KEYS
                and set(map(type, bp)) <= text):  # fmt: skip
            return False
        t = np.asarray(ts, np.float64)
        far = ~(np.abs(t) < MAX_US)
        if far.any():
            self.bad["event(s) with ts or dur beyond 100 days"] += int(far.sum())
        keep = np.flatnonzero(~far).tolist()
        if len(keep) < len(x):
            pid, tid, cat, name, ident, bp = ([c[i] for i in keep] for c in
                                              (pid, tid, cat, name, ident, bp))  # fmt: skip
        pid, tid = ([0 if v is UNSET else v for v in c] for c in (pid, tid))
        cat, name = (["" if v is UNSET else v for v in c] for c in (cat, name))
        ident = [v if type(v) is str else str(v) for v in ident]  # = display_name of an int
        flow = _ids(list(zip(cat, name, ident, strict=True)), self.flow_ids,
                    lambda k: self.flow_ids.setdefault(k, len(self.flow_ids)))  # fmt: skip
        phase = np.fromiter((_FLOW_PHASE[type(e)] for e in x), np.int64, len(x))[keep]
        cols = (flow, np.round(t[keep] * 1000).astype(np.int64), phase,
                self._track_ids(pid, tid), np.asarray(bp) == "e", ordinal[keep])  # fmt: skip
        for col, v in zip(self.flow_cols, cols, strict=True):
            col.extend(np.asarray(v).tolist())
        return True

    def _be_columns(self, x: list, is_begin: np.ndarray, ordinal: np.ndarray) -> None:
        """``BEvent``s and ``EEvent``s (``is_begin`` tells which) as begin/end columns."""
        t = np.fromiter(map(_X_FIELDS[0], x), np.float64, len(x))
        far = ~(np.abs(t) < MAX_US)
        if far.any():
            self.bad["event(s) with ts or dur beyond 100 days"] += int(far.sum())
            keep = np.flatnonzero(~far)
            x, is_begin, ordinal, t = _take(x, keep), is_begin[keep], ordinal[keep], t[keep]
        pid, tid, name = (list(map(_X_FIELDS[k], x)) for k in range(2, 5))
        self.be_parts.append([
            self._track_ids(pid, tid), np.round(t * 1000).astype(np.int64),
            np.where(is_begin, 1, -1).astype(np.int8), _ids(name, self.be_names.ids,
            self.be_names), np.asarray(ordinal, np.int64),
        ])  # fmt: skip

    def _plain_x(self, events: list, xs, base: int):
        """Vectorised ``X`` events ``xs`` (indices) of a chunk of dicts: returns ``xs`` when
        they were all plain and handled, else an empty list (they go one by one)."""
        x = events if isinstance(xs, range) else [events[k] for k in xs]
        ts, dur, pid, tid, name = (
            list(map(dict.get, x, repeat(k), repeat(d)))
            for k, d in (("ts", None), ("dur", None), ("pid", 0), ("tid", 0), ("name", "?"))
        )
        if not (
            set(map(type, ts)) <= _PLAIN
            and set(map(type, dur)) <= _PLAIN
            and set(map(type, pid)) <= _KEYS
            and set(map(type, tid)) <= _KEYS
            and set(map(type, name)) <= {str}
        ):
            return []
        self._x_part(ts, dur, pid, tid, name, xs, base)
        return xs

    def _x_columns(self, x: list, xs, base: int) -> None:
        """``XEvent``s ``x`` (``xs``: their indices in the chunk) as columns."""
        ts, dur = (np.fromiter(map(_X_FIELDS[k], x), np.float64, len(x)) for k in range(2))
        self._x_part(ts, dur, *(list(map(_X_FIELDS[k], x)) for k in range(2, 5)), xs, base)

    def _x_part(self, ts, dur, pid, tid, name, xs, base: int) -> None:
        """Plain ``X`` fields (float/int ts and dur, lists of int/str pid and tid, of str
        name) -> one part of the columns; far or negative ones counted."""
        t = np.asarray(ts, np.float64)
        d = np.asarray(dur, np.float64)
        far = ~(np.abs(t) < MAX_US) | ~(d < MAX_US)
        neg = ~far & (d < 0)
        if far.any():
            self.bad["event(s) with ts or dur beyond 100 days"] += int(far.sum())
        if neg.any():
            self.bad["X event(s) with a negative dur"] += int(neg.sum())
        ok = np.flatnonzero(~far & ~neg)
        tr = self._track_ids(pid, tid)
        nid = _ids(name, self.names.ids, self.names)
        begin = np.round(t[ok] * 1000).astype(np.int64)
        end = begin + np.round(d[ok] * 1000).astype(np.int64)
        ev = base + np.asarray(xs, np.int64)[ok]
        self.parts.append([tr[ok], begin, end, nid[ok], ev])

    def _track_ids(self, pid: list, tid: list) -> np.ndarray:
        """``int32`` track of each (pid, tid), new tracks added in order of first
        appearance. Integer ids on a few tracks (the usual chunk): one vector compare per
        track instead of a tuple and a dict lookup per event."""
        p, t = np.array(pid), np.array(tid)
        if p.dtype.kind == "i" and t.dtype.kind == "i":
            out = np.full(len(p), -1, np.int32)
            for _ in range(8):
                left = np.flatnonzero(out < 0)
                if not len(left):
                    return out
                i = left[0]
                m = (p[left] == p[i]) & (t[left] == t[i])
                out[left[m]] = self._track((int(p[i]), int(t[i])))
        return _ids(list(zip(pid, tid, strict=True)), self.tracks, self._track)

    def _cols_part(self) -> list[np.ndarray]:
        dtypes = (np.int32, np.int64, np.int64, np.int32, np.int64)
        part = [np.asarray(c, d) for c, d in zip(self.cols, dtypes, strict=True)]
        self.cols = ([], [], [], [], [])
        return part

    def _be_part(self) -> list[np.ndarray]:
        dtypes = (np.int32, np.int64, np.int8, np.int32, np.int64)
        part = [np.asarray(c, d) for c, d in zip(self.be_cols, dtypes, strict=True)]
        self.be_cols = ([], [], [], [], [])
        return part

    def begin_end(self, track: int, at: int, name, kind: int) -> None:
        """A begin (``kind`` 1: ``B``/``E``, 2: async) or an end (-1, -2) at ``at`` ns, of
        the event being read; paired in ``_pairs``."""
        for col, v in zip(self.be_cols, (track, at, kind, self.be_names(name), self.ordinal),
                          strict=True):  # fmt: skip
            col.append(v)

    def feed(self, e) -> None:
        if not isinstance(e, dict):
            self.bad["malformed event(s) (not an object)"] += 1
            return
        ph = e.get("ph")
        if ph == "M":
            _metadata(e, self.proc_name, self.thread_name, self.proc_sort, self.thread_sort)
            return
        if ph not in ("X", "B", "E", "C", *FLOWS, *ASYNC_BEGIN, *ASYNC_END, *INSTANTS):
            self.unknown[str(ph)] += 1
            return
        ts = _coerce(e.get("ts"))
        if not _number(ts):
            self.bad["event(s) without a numeric ts"] += 1
        elif not abs(ts) < MAX_US:
            self.bad["event(s) with ts or dur beyond 100 days"] += 1
        elif ph == "C":
            self.counter(e, round(ts * 1000))
        elif ph in FLOWS:
            key = (display_name(e.get("cat", "")), display_name(e.get("name", "")),
                   display_name(e.get("id", e.get("id2"))))  # fmt: skip
            row = (self.flow_ids.setdefault(key, len(self.flow_ids)), round(ts * 1000),
                   FLOWS.index(ph), self.track(e), e.get("bp") == "e", self.ordinal)  # fmt: skip
            for col, v in zip(self.flow_cols, row, strict=True):
                col.append(v)
        elif ph == "X":
            self.complete(e, round(ts * 1000))
        elif ph == "B":
            self.begin_end(self.track(e), round(ts * 1000), e.get("name", "?"), 1)
        elif ph == "E":
            self.begin_end(self.track(e), round(ts * 1000), e.get("name", "?"), -1)
        elif ph in ASYNC_BEGIN:
            self.begin_end(self.async_track(e), round(ts * 1000), e.get("name", "?"), 2)
        elif ph in ASYNC_END:
            self.begin_end(self.async_track(e), round(ts * 1000), e.get("name", "?"), -2)
        else:
            self.instant(e, round(ts * 1000))

    def counter(self, e: dict, at: int) -> None:
        """``C``: each numeric ``args`` member is a sample of series ``name member``."""
        args = e.get("args")
        if not isinstance(args, dict) or not args:
            self.bad["C event(s) without args"] += 1
            return
        pid, name = _ident(e.get("pid", 0)), display_name(e.get("name", "?"))
        if e.get("id") is not None:
            name = f"{name} {display_name(e['id'])}"
        for k, v in args.items():
            v = _coerce(v)
            if not _number(v) or not math.isfinite(v):
                self.bad["counter value(s) not a finite number"] += 1
                continue
            t, vals = self.counter_cols.setdefault((pid, name, str(k)), ([], []))
            t.append(at)
            vals.append(float(v))

    def instant(self, e: dict, at: int) -> None:
        """A zero-length span: thread scope on its thread, ``n``/``T`` on their async
        track, process and global scope on a track of their own."""
        ph, scope = e.get("ph"), e.get("s", "t")
        if ph in ("n", "T"):
            track = self.async_track(e)
        elif scope == "g":
            track = self._track(("", ("instants", "global")), "global instants")
        elif scope == "p":
            track = self._track((_ident(e.get("pid", 0)), ("instants", "")), "instants")
        else:
            track = self.track(e)
        self.add(track, at, at, e.get("name", "?"))

    def complete(self, e: dict, begin: int) -> None:
        dur = e.get("dur")
        if not _number(dur):
            self.bad["X event(s) without a numeric dur"] += 1
        elif not dur < MAX_US:
            self.bad["event(s) with ts or dur beyond 100 days"] += 1
        elif dur < 0:
            self.bad["X event(s) with a negative dur"] += 1
        else:
            self.add(self.track(e), begin, begin + round(dur * 1000), e.get("name", "?"))

    def _pairs(self) -> None:
        """Every begin matched with its end as a stack per track would in time order
        (``match_pairs``): the spans (named by the begin, or by the end when the begin has
        no name) and the counts of what did not pair."""
        parts = [*self.be_parts, self._be_part()]
        self.be_parts = []
        track, at, kind, name, ordinal = (_take_column(parts, i) for i in range(5))
        b, e, lone_end, left_open = match_pairs(track, kind, ordinal, at)
        lone_async = int((kind[lone_end] == -2).sum())
        open_async = int((kind[left_open] == 2).sum())
        for what, n in (("E event(s) without a B", len(lone_end) - lone_async),
                        ("async end event(s) without a begin", lone_async),
                        ("B event(s) without an E", len(left_open) - open_async),
                        ("async begin event(s) without an end", open_async)):  # fmt: skip
            if n:
                self.bad[what] += n
        unnamed = self.be_names.ids.get("?", -1)
        chosen = np.where(name[b] == unnamed, name[e], name[b])
        used, inverse = np.unique(chosen, return_inverse=True)
        labels = list(self.be_names.ids)
        nid = np.array([self.names(labels[i]) for i in used.tolist()], np.int32)[inverse]
        self.parts.append([track[b], at[b], at[e], nid.reshape(-1), ordinal[b]])

    def notes(self) -> list[str]:
        notes = [f"skipped {n} {what}" for what, n in self.bad.items()]
        if self.unknown:
            kinds = ", ".join(f"{ph!r} x{n}" for ph, n in sorted(self.unknown.items()))
            notes.append(
                f"ignored {sum(self.unknown.values())} event(s) of phases not drawn: {kinds}"
            )
        return notes

    def table(self, path, stream_notes: list[str] | None = None) -> SpanTable:
        self._pairs()
        notes = list(stream_notes or []) + self.notes()
        parts = [*self.parts, self._cols_part()]
        self.parts = []
        cols = _in_file_order([_take_column(parts, i) for i in range(5)])
        if not len(cols[0]):
            kinds = "X, B/E, b/e or instant events"
            raise TraceError(f"{path}: no drawable span ({kinds}){_why(notes)}")
        remap, labels = self.lane_order(np.unique(cols[0]))
        cols[0] = remap.astype(np.int32)[cols[0]]
        table = _build_table(cols, list(self.names.ids), labels, notes, None)
        _drop_too_deep(table)
        self._add_counters(table)
        self._add_flows(table, remap)
        return table

    def _add_counters(self, table: SpanTable) -> None:
        """Counter series as lanes after the span lanes, ordered by (pid, name, series)."""
        for (pid, name, series), (t, v) in sorted(
            self.counter_cols.items(), key=lambda kv: (_num(kv[0][0]), kv[0][1], kv[0][2])
        ):
            t = np.asarray(t, np.int64) - table.origin_ns
            order = np.argsort(t, kind="stable")
            label = f"{name} {series}" if series not in ("value", name) else name
            proc = self.proc_name.get(pid, f"pid {display_name(pid)}")
            table.counters.append(
                CounterTrack(len(table.lanes), label, t[order], np.asarray(v, np.float64)[order])
            )
            table.lanes.append(f"{proc} / {label}")

    def _add_flows(self, table: SpanTable, remap: np.ndarray) -> None:
        """The flow arrows (``flow_chains``), each end bound to a span (``bind_flow_ends``);
        what cannot be drawn, and arrows that point back in time, counted in notes."""
        if not self.flow_cols[0]:
            return
        key, ts, ph, track, bp, event = (np.asarray(c, np.int64) for c in self.flow_cols)
        a, b, orphans = flow_chains(key, ts, ph, event)
        lane = remap[track]
        bt, bl, bd = bind_flow_ends(table, lane, ts, (ph == 2) & (bp == 0))
        ok = (bd[a] >= 0) & (bd[b] >= 0)
        back = int(np.count_nonzero(ok & (ts[b] < ts[a])))
        if orphans:
            table.notes.append(
                f"skipped {orphans} flow step(s) (t, f) with no start (s) of their id to follow"
            )
        if len(ok) - int(ok.sum()):
            table.notes.append(
                f"skipped {len(ok) - int(ok.sum())} flow step(s) with no span to bind to"
            )
        if back:
            table.notes.append(
                f"{back} flow arrow(s) end before they start (clocks of different threads?): "
                "drawn from start to end as written, pointing back in time"
            )
        a, b = a[ok], b[ok]
        if len(a):
            o = np.lexsort((bt[b], bt[a]))
            a, b = a[o], b[o]
            table.flows = Flows(bt[a] - table.origin_ns, bl[a], bd[a],
                                bt[b] - table.origin_ns, bl[b], bd[b])  # fmt: skip

    def lane_order(self, used: np.ndarray) -> tuple[np.ndarray, list[str]]:
        """Tracks with spans (``used``: their indices) ordered by (process sort index, pid,
        thread sort index, tid): the index remap and the labels ``"process / thread"``."""
        ps, ts = self.proc_sort, self.thread_sort
        keep = set(used.tolist())
        order = sorted(
            (k for k, i in self.tracks.items() if i in keep),
            key=lambda k: (ps.get(k[0], 0), _num(k[0]), ts.get(k, 0), _num(k[1])),
        )
        remap = np.full(len(self.tracks), -1, np.int64)  # -1: a track without spans
        labels = []
        for i, key in enumerate(order):
            remap[self.tracks[key]] = i
            pid, tid = key
            p = self.proc_name.get(pid, f"pid {display_name(pid)}")
            default = self.track_label.get(key, f"tid {display_name(tid)}")
            thread = self.thread_name.get(key, default)
            labels.append(thread if pid == "" else f"{p} / {thread}")
        return remap, labels


def match_pairs(track: np.ndarray, kind: np.ndarray, ordinal: np.ndarray,
                at: np.ndarray | None = None):  # fmt: skip
    """Begins (``kind > 0``) and ends (``kind < 0``) paired as a stack per track would in
    time order (``at``, ties in file order ``ordinal``; without ``at`` file order alone),
    as Perfetto and catapult sort events by timestamp before pairing: an end closes the
    newest open begin of its track; an end with none open is lone; begins never closed are
    left open. With ``at`` an end is never before its begin.

    Vectorised: per track, the stack depth is the running sum of +1/-1 reflected at zero
    (an end at depth 0 changes nothing: ``d = c - min(0, running min of c)``); an end pairs
    with the begin that pushed the depth it pops, which is the previous event of the same
    (track, level) in that order (between the two the depth stays at or above the level).

    Returns:
        ``(begin, end, lone_end, left_open)``: ``int64`` indices into the inputs; the
        pairs in (track, level, time) order.
    """
    n = len(kind)
    if not n:
        return tuple(np.zeros(0, np.int64) for _ in range(4))
    o = np.lexsort((ordinal, track) if at is None else (ordinal, at, track))
    tr = np.asarray(track)[o]
    step = np.where(np.asarray(kind)[o] > 0, np.int32(1), np.int32(-1))
    first = np.r_[True, tr[1:] != tr[:-1]]
    group = np.cumsum(first, dtype=np.int64) - 1
    c = np.cumsum(step, dtype=np.int64)
    c -= (c - step)[first][group]  # running sum within the track
    group *= 2 * n + 2  # offsets keep each track's running minimum its own
    c -= group
    low = np.minimum.accumulate(c)
    c += group
    low += group
    del group
    depth = (c - np.minimum(low, 0, out=low)).astype(np.int32)
    del c, low
    before = np.r_[np.int32(0), depth[:-1]]
    before[first] = 0
    is_end = step < 0
    closes = is_end & (before > 0)
    level = np.where(is_end, before, depth)
    del first, step, before, depth
    idx = np.flatnonzero(~is_end | closes)
    key = (tr[idx].astype(np.int64) << 32) | level[idx]  # (track, level), then that order
    del level
    idx = idx[np.argsort(key, kind="stable")]
    del key
    ends = np.flatnonzero(is_end[idx])
    begins = idx[ends - 1]
    paired = np.zeros(n, bool)
    paired[begins] = True
    left = np.flatnonzero(~is_end & ~paired)
    return o[begins], o[idx[ends]], o[np.flatnonzero(is_end & ~closes)], o[left]


def _take(items: list, idx: np.ndarray) -> list:
    """``[items[i] for i in idx]`` at C speed."""
    if len(idx) == 1:
        return [items[int(idx[0])]]
    return list(itemgetter(*idx.tolist())(items)) if len(idx) else []


def _ids(keys: list, table: dict, add) -> np.ndarray:
    """``int32 (len(keys),)`` ids of ``keys`` in ``table``; new ones added first (``add``),
    in order of first appearance (deterministic ids)."""
    try:
        return np.fromiter(map(table.get, keys), np.int32, len(keys))
    except TypeError:  # a key not there yet (None)
        for k in dict.fromkeys(keys):
            add(k)
        return np.fromiter(map(table.__getitem__, keys), np.int32, len(keys))


def _in_file_order(cols: list[np.ndarray]) -> list[np.ndarray]:
    """Columns reordered by their last one (the event ordinal, unique per span): the table
    then depends only on the file, not on how its chunks were cut or decoded (ties in
    nesting keep file order). Mostly in order already (a sort of runs)."""
    ev = cols[-1]
    if len(ev) < 2 or bool(np.all(ev[1:] > ev[:-1])):
        return cols
    order = np.argsort(ev, kind="stable")
    for i, c in enumerate(cols):
        cols[i] = c[order]
    return cols


def _take_column(parts: list[list[np.ndarray]], i: int) -> np.ndarray:
    """Column ``i`` of every part, concatenated; the parts' copies are dropped as it goes
    (the peak holds one column twice, not every column)."""
    out = np.concatenate([p[i] for p in parts])
    for p in parts:
        p[i] = None
    return out


def _drop_too_deep(table: SpanTable) -> None:
    """Spans nested ``MAX_ROWS`` or more levels deep left out (a depth is 16 bits on the
    GPU), counted in a note that states the limit. Async spans of one (process, category,
    id) nest as a stack on their lane, so many that overlap, or begins that never end, are
    what reaches it."""
    deep = table.depth >= MAX_ROWS
    n = int(np.count_nonzero(deep))
    if not n:
        return
    keep = ~deep
    for name in ("start_ns", "dur_ns", "lane", "depth", "name_id", "event"):
        column = getattr(table, name)
        if len(column) == len(keep):
            setattr(table, name, column[keep])
    table.notes.append(
        f"skipped {n} span(s) nested {MAX_ROWS:,} or more levels deep (the flame chart's "
        "limit: async spans of one id nest as a stack on their lane, so overlapping or "
        "unended ones can reach it)"
    )


def flow_chains(key: np.ndarray, ts: np.ndarray, ph: np.ndarray, event: np.ndarray):
    """Flow steps joined into arrows, as the Trace Event Format's phases say: an ``s``
    (``ph`` 0) starts a flow of its id (``key``), ``t`` (1) steps continue it, an ``f`` (2)
    ends it; in time order (ties: s, t, f, then file order ``event``), as Perfetto and
    catapult read them. A step or end that comes before its flow's start in time (clocks
    of different threads), or after its end before the id's next start, joins the id's
    next flow: it is drawn from the start as written, pointing back in time; with no next
    start it is an orphan. Each flow is then its ``s``, its ``t`` steps in time order and
    its first ``f``. Vectorised (sorts and cumulative sums, no Python per step).

    Returns:
        ``(a, b, orphans)``: ``int64`` indices of each arrow's two steps, and the count of
        steps joined to none.
    """
    o = np.lexsort((event, ph, ts, key))
    k, p = key[o], ph[o]
    first = np.r_[True, k[1:] != k[:-1]]
    group = np.cumsum(first) - 1
    is_s = p == 0
    c = np.cumsum(is_s)
    inst = c - (c - is_s)[first][group]  # the id's flows begun so far: 0 before the first
    n_s = np.bincount(group, weights=is_s).astype(np.int64)[group]
    seg = np.r_[True, (k[1:] != k[:-1]) | (inst[1:] != inst[:-1])]
    is_f = (p == 2).astype(np.int64)
    cf = np.cumsum(is_f)
    ends_before = cf - is_f - (cf - is_f)[seg][np.cumsum(seg) - 1]  # f's before, in the flow
    flow = inst + ((inst == 0) | (ends_before > 0))  # early or late: the next flow
    kept = flow <= n_s
    if not kept.any():
        return np.zeros(0, np.int64), np.zeros(0, np.int64), len(key)
    # each flow: s, t steps by time, one f (a second one an orphan)
    o, k, p, flow, t = o[kept], k[kept], p[kept], flow[kept], ts[o[kept]]
    c2 = np.lexsort((event[o], t, p, flow, k))
    o, k, p, flow = o[c2], k[c2], p[c2], flow[c2]
    same = (k[1:] == k[:-1]) & (flow[1:] == flow[:-1])
    extra_f = np.r_[False, same & (p[1:] == 2) & (p[:-1] == 2)]
    o, k, flow = o[~extra_f], k[~extra_f], flow[~extra_f]
    same = (k[1:] == k[:-1]) & (flow[1:] == flow[:-1])
    return o[:-1][same], o[1:][same], int(len(key) - len(o))


def bind_flow_ends(table: SpanTable, lane: np.ndarray, t: np.ndarray, next_ok: np.ndarray):
    """The span each flow end binds to: the deepest span of its ``lane`` enclosing ``t``
    (absolute ns), else where ``next_ok`` (an ``f`` without ``bp: "e"``) the next span to
    begin on that lane. However many spans earlier the enclosing one began: spans of a
    lane nest as a stack, so those open at ``t`` are the latest span begun at or before it
    and its ancestors, one per depth; each depth's candidate is found by a binary search
    in the spans sorted by (lane, depth, start), deepest first.

    Returns:
        ``(t, lane, depth)``: ``int64`` columns, ``t`` moved to the span's start when bound
        to the next one; depth -1 where nothing binds.
    """
    n, q = len(table), len(t)
    out_t, out_d = np.asarray(t, np.int64).copy(), np.full(q, -1, np.int64)
    lane = np.asarray(lane, np.int64)
    if not n or not q:
        return out_t, lane, out_d
    rel = out_t - table.origin_ns
    last = np.searchsorted(table.start_ns, rel, side="right") - 1  # begun at or before t
    tl = table.lane.astype(np.uint16 if len(table.lanes) <= 1 << 16 else np.int64)
    by_lane = np.argsort(tl, kind="stable")  # (lane, start)
    lane_key = table.lane[by_lane].astype(np.int64) * (n + 1) + by_lane
    at = np.searchsorted(lane_key, np.maximum(lane, 0) * (n + 1) + last, side="right") - 1
    mine = (lane >= 0) & (at >= 0) & (table.lane[by_lane[np.maximum(at, 0)]] == lane)
    latest = np.where(mine, by_lane[np.maximum(at, 0)], -1)
    # rows: (lane, depth, start)
    dep = table.depth.astype(np.int64)
    by_depth = np.argsort(table.depth.astype(np.uint16), kind="stable")
    rows = by_depth[np.argsort(tl[by_depth], kind="stable")]
    row_key = ((table.lane[rows].astype(np.int64) << 16) | dep[rows]) * (n + 1) + rows
    end = table.start_ns + table.dur_ns
    d = np.where(latest >= 0, dep[np.maximum(latest, 0)], -1)
    todo = np.flatnonzero(d >= 0)
    while len(todo):
        row = (lane[todo] << 16) | d[todo]
        g = np.searchsorted(row_key, row * (n + 1) + last[todo], side="right") - 1
        j = rows[np.maximum(g, 0)]
        hit = (g >= 0) & (row_key[np.maximum(g, 0)] // (n + 1) == row) & (end[j] > rel[todo])
        out_d[todo[hit]] = d[todo[hit]]
        d[todo] -= 1
        todo = todo[~hit & (d[todo] >= 0)]
    nxt = np.flatnonzero((out_d < 0) & next_ok & (lane >= 0))
    if len(nxt):  # the first span of the lane begun after t
        g = np.searchsorted(lane_key, lane[nxt] * (n + 1) + last[nxt], side="right")
        g = np.minimum(g, n - 1)
        j = by_lane[g]
        ok = (lane_key[g] // (n + 1) == lane[nxt]) & (j > last[nxt])
        out_d[nxt[ok]] = dep[j[ok]]
        out_t[nxt[ok]] = table.start_ns[j[ok]] + table.origin_ns
    return out_t, lane, out_d


def _coerce(ts):
    """A numeric string ``ts`` as a float (Perfetto coerces it); anything else as it is."""
    if isinstance(ts, str):
        try:
            return float(ts)
        except ValueError:
            return ts
    return ts


MAX_US = 8.64e12  # 100 days in microseconds: int64 nanoseconds stay far from overflow


def _number(v) -> bool:
    return isinstance(v, int | float) and not isinstance(v, bool)


def _ident(v):
    """A pid/tid usable as a key (JSON allows anything there)."""
    return v if isinstance(v, int | float | str) and not isinstance(v, bool) else display_name(v)


def _metadata(e, proc_name, thread_name, proc_sort, thread_sort) -> None:
    args = e.get("args") if isinstance(e.get("args"), dict) else {}
    pid, tid, what = _ident(e.get("pid", 0)), _ident(e.get("tid", 0)), e.get("name")
    if what == "process_name" and "name" in args:
        proc_name[pid] = str(args["name"])
    elif what == "thread_name" and "name" in args:
        thread_name[(pid, tid)] = str(args["name"])
    elif what == "process_sort_index" and _number(args.get("sort_index")):
        proc_sort[pid] = args["sort_index"]
    elif what == "thread_sort_index" and _number(args.get("sort_index")):
        thread_sort[(pid, tid)] = args["sort_index"]


def _num(v):
    return (0, v, "") if isinstance(v, int | float) else (1, 0, display_name(v))


def _why(notes: list[str]) -> str:
    return f" ({'; '.join(notes)})" if notes else ""


# -- Lantern telemetry JSON Lines -------------------------------------------------------------
FRAME_NAMES = ("CPU frame", "GPU frame")  # depth-0 span around each frame's scopes


class FrameLine(msgspec.Struct, tag_field="type", tag="frame", gc=False):
    """A telemetry ``frame`` line whose scopes are all ``[name, begin, end]`` integers
    (msgspec checks them while decoding); ``get`` as a dict's."""

    cpu: list[tuple[int, int, int]] = []
    gpu: list[tuple[int, int, int]] = []

    def get(self, key: str, default=None):
        return getattr(self, key, default)


_FRAME_LINES = msgspec.json.Decoder(FrameLine)


def _jsonl_blocks(stream, block: int = BLOCK) -> Iterator[tuple[int, list]]:
    """The stream as blocks of whole lines, each with its file offset: a list of
    ``FrameLine`` when every line of the block is a plain frame (one msgspec call), else
    the lines (bytes) to read one by one. A UTF-8 byte-order mark is skipped."""
    rest = stream.read(len(UTF8_BOM))
    at = 0  # file offset of rest
    if rest == UTF8_BOM:
        rest, at = b"", len(UTF8_BOM)
    while True:
        data = stream.read(block)
        buf = rest + data
        if not buf:
            return
        cut = buf.rfind(b"\n") + 1 if data else len(buf)
        if cut == 0:
            rest = buf
            continue
        chunk, rest = buf[:cut], buf[cut:]
        lines = chunk.count(b"\n") + (not chunk.endswith(b"\n"))
        try:
            frames = _FRAME_LINES.decode_lines(chunk)
        except (msgspec.DecodeError, msgspec.ValidationError):
            frames = None
        ok = frames is not None and len(frames) == lines
        yield at, frames if ok else chunk.split(b"\n")
        at += len(chunk)


def _load_jsonl(path, stream) -> SpanTable:
    """Line by line (a block of plain frame lines at once); frames go to numpy columns a
    batch at a time (memory: ~40 B per span)."""
    names: list[str] = []
    session: dict = {}
    early: list = []  # frames before the session line (its clock offset is needed)
    batch: list = []  # frames read since the session or names last changed
    bad: Counter = Counter()
    parts: list[list[np.ndarray]] = []
    gpu_frames = 0

    def flush(frames: list) -> list:
        nonlocal gpu_frames
        if frames:
            parts.append(_frames_part(frames, bad, session, len(names)))
            gpu_frames += sum(1 for m in frames if m.get("gpu"))
        return []

    not_utf8 = [0, -1]  # lines read with U+FFFD for bytes that are not UTF-8; the first's byte
    for at, block in _jsonl_blocks(stream, STREAM_BLOCK):
        typed = bool(block) and type(block[0]) is FrameLine
        if batch and (type(batch[-1]) is FrameLine) != typed:
            batch = flush(batch)  # batches all of msgspec's (no checks) or all of orjson's
        if typed:
            (batch if session else early).extend(block)
            if len(batch) >= 4096:
                batch = flush(batch)
            continue
        for line in block:
            at += len(line) + 1
            if not line.strip():
                continue
            try:
                msg = orjson.loads(line)
            except orjson.JSONDecodeError:
                msg = _not_utf8_line(line, at - len(line) - 1, not_utf8)
                if msg is None:
                    batch = flush(batch)  # notes in file order
                    bad["malformed or truncated line(s)"] += 1
                    continue
            kind = msg.get("type") if isinstance(msg, dict) else None
            if kind == "frame":
                (batch if session else early).append(msg)
                if len(batch) >= 4096:
                    batch = flush(batch)
                continue
            batch = flush(batch)
            if kind == "session":
                session = msg
                early = flush(early)
            elif kind == "names" and isinstance(msg.get("names"), list):
                names += [str(n) for n in msg["names"]]
            else:
                bad["line(s) of an unknown type"] += 1
    batch = flush(batch)
    early = flush(early)
    offset = session.get("gpu_clock_offset_ns")
    notes = [f"skipped {n} {what}" for what, n in bad.items()]
    if not_utf8[0]:
        notes.append(
            f"read {not_utf8[0]} line(s) with bytes that are not UTF-8 as U+FFFD (the first "
            f"at byte {not_utf8[1]})"
        )
    if gpu_frames and not isinstance(offset, int):
        notes.append(
            f"left out the GPU scopes of {gpu_frames} frame(s): the session has no "
            "gpu_clock_offset_ns to put them on the CPU clock"
        )
    parts.append(_jsonl_part(([], [], [], [])))
    cols = [*(_take_column(parts, i) for i in range(4)), None]
    if not len(cols[0]):
        raise TraceError(f"{path}: no frame with scopes (record with --profile){_why(notes)}")
    return _build_table(cols, names + list(FRAME_NAMES), [CPU_LANE, GPU_LANE], notes, None)


def _not_utf8_line(line: bytes, at: int, seen: list):
    """``line`` (at file offset ``at``) decoded with U+FFFD for its bytes that are not UTF-8,
    counted in ``seen`` ([lines, offset of the first]); None when that does not make it JSON
    (or it was UTF-8 already: malformed)."""
    fixed = replace_invalid(line, at)
    if fixed is None:
        return None
    try:
        msg = orjson.loads(fixed[0])
    except orjson.JSONDecodeError:
        return None
    seen[0] += 1
    seen[1] = fixed[1] if seen[1] < 0 else seen[1]
    return msg


def _frames_part(frames: list, bad: Counter, session: dict, n_names: int) -> list[np.ndarray]:
    """Frame lines -> one part of the columns: vectorised when every scope is three
    integers (the writer's output), else frame by frame (``_frame``, which checks each)."""
    part = _frames_vector(frames, bad, session, n_names)
    if part is None:
        cols: tuple[list, list, list, list] = ([], [], [], [])
        for m in frames:
            _frame(cols, bad, m, session, n_names)
        part = _jsonl_part(cols)
    return part


LIMIT = 2**62  # scope times beyond it: malformed (int64 ns stay far from overflow)


def _frames_vector(frames: list, bad: Counter, session: dict, n_names: int):
    """``_frame`` for a batch, as numpy: the same spans, in the same order, and the same
    counts (added in order of first occurrence); None when a value is not a plain integer
    (or too large to add safely): the caller goes frame by frame."""
    offset = session.get("gpu_clock_offset_ns")
    seg_lane, seg_shift, scopes = [], [], []
    for m in frames:
        for lane_i, key in ((0, "cpu"), (1, "gpu")):
            sc = m.get(key)
            if not sc or (lane_i == 1 and not isinstance(offset, int)):
                continue
            if type(sc) is not list:
                return None
            seg_lane.append(lane_i)
            seg_shift.append(offset if lane_i == 1 else 0)
            scopes.append(sc)
    counts = np.fromiter(map(len, scopes), np.int64, len(scopes))
    flat = list(chain.from_iterable(scopes))
    try:
        shift = np.array(seg_shift, np.int64)
        if all(type(m) is FrameLine for m in frames):  # integer triples: no check needed
            a = np.fromiter(chain.from_iterable(flat), np.int64, 3 * len(flat)).reshape(-1, 3)
        else:
            a = np.array(flat) if flat else np.zeros((0, 3), np.int64)
    except (ValueError, OverflowError):
        return None
    if a.dtype.kind != "i" or a.shape[1:] != (3,):  # ints only (bools too: int() agrees)
        return None
    if len(a) and (a.max() >= LIMIT or a.min() <= -LIMIT or np.abs(shift).max() >= LIMIT):
        return None
    seg = np.repeat(np.arange(len(scopes)), counts)
    nid, b, e = a[:, 0], a[:, 1] + shift[seg], a[:, 2] + shift[seg]
    ordered = e >= b
    malformed = np.bincount(seg[ordered & ((b <= -LIMIT) | (e >= LIMIT))], minlength=len(counts))
    ok = ordered & (nid >= 0) & (nid < n_names) & (malformed[seg] == 0)
    n_ok = np.bincount(seg[ok], minlength=len(counts))
    short = np.where(malformed == 0, counts - n_ok, 0)
    kinds = [
        (np.flatnonzero(malformed), "frame(s) with malformed scopes", None),
        (np.flatnonzero(short), "scope(s) ending before they begin or with an unknown name", short),
    ]
    for at, what, n in sorted(kinds, key=lambda k: k[0][0] if len(k[0]) else len(counts)):
        if len(at):
            bad[what] += len(at) if n is None else int(n.sum())
    # each segment with a scope left: its frame span, then its scopes, in order
    size = np.where(n_ok > 0, n_ok + 1, 0)
    first = np.cumsum(size) - size
    has = np.flatnonzero(n_ok)
    so, bo, eo = seg[ok], b[ok], e[ok]
    lane_out = np.repeat(np.asarray(seg_lane, np.int32), size)
    start_out = np.empty(len(lane_out), np.int64)
    end_out = np.empty(len(lane_out), np.int64)
    nid_out = np.empty(len(lane_out), np.int32)
    if len(so):
        begins = np.flatnonzero(np.r_[True, so[1:] != so[:-1]])
        start_out[first[has]] = np.minimum.reduceat(bo, begins)
        end_out[first[has]] = np.maximum.reduceat(eo, begins)
        nid_out[first[has]] = n_names + lane_out[first[has]]
        at = first[so] + 1 + np.arange(len(so)) - np.repeat(begins, n_ok[has])
        start_out[at], end_out[at], nid_out[at] = bo, eo, nid[ok]
    return [lane_out, start_out, end_out, nid_out]


def _jsonl_part(cols) -> list[np.ndarray]:
    dtypes = (np.int32, np.int64, np.int64, np.int32)  # lane, start, end, name
    return [np.asarray(c, d) for c, d in zip(cols, dtypes, strict=True)]


def _frame(cols, bad: Counter, msg: dict, session: dict, n_names: int) -> int:
    """Add one frame line's CPU and GPU scopes; returns 1 if it had GPU scopes."""
    offset = session.get("gpu_clock_offset_ns")
    had_gpu = 0
    for lane_i, key in ((0, "cpu"), (1, "gpu")):
        scopes = msg.get(key)
        if not scopes:
            continue
        if lane_i == 1:
            had_gpu = 1
            if not isinstance(offset, int):
                continue
        _add_frame(cols, bad, scopes, lane_i, offset if lane_i == 1 else 0, n_names)
    return had_gpu


def _add_frame(cols, bad: Counter, scopes, lane_i: int, shift: int, n_names: int) -> None:
    """Append one frame's scopes of one clock, and a depth-0 frame span around them."""
    lane, start, end, nid = cols
    try:
        rows = [(int(i), int(b) + shift, int(e) + shift) for i, b, e in scopes]
    except (TypeError, ValueError, OverflowError):
        bad["frame(s) with malformed scopes"] += 1
        return
    if any(not (-(2**62) < r[1] <= r[2] < 2**62) for r in rows if r[2] >= r[1]):
        bad["frame(s) with malformed scopes"] += 1
        return
    ok = [r for r in rows if r[2] >= r[1] and 0 <= r[0] < n_names]
    if len(ok) < len(rows):
        bad["scope(s) ending before they begin or with an unknown name"] += len(rows) - len(ok)
    if not ok:
        return
    lane.append(lane_i)
    start.append(min(r[1] for r in ok))
    end.append(max(r[2] for r in ok))
    nid.append(n_names + lane_i)
    for i, b, e in ok:
        lane.append(lane_i)
        start.append(b)
        end.append(e)
        nid.append(i)
