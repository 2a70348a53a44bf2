"""Trace files -> a columnar span table (numpy), for the flame chart.

Formats:

* **Chrome Trace Event JSON** (Google, "Trace Event Format",
  https://docs.google.com/document/d/1CvAClvFfyA5R-PhYUmn5OOQtYMH4h6I0nSsKchNAySU): a list of
  events or ``{"traceEvents": [...]}``. Drawn: complete events ``ph: "X"`` (``ts``/``dur`` in
  microseconds) and ``B``/``E`` pairs matched per (pid, tid) as a stack. Metadata ``M`` events
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

import logging
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import orjson

log = logging.getLogger("lantern")

CPU_LANE, GPU_LANE = "CPU main thread", "GPU queue (clock offset estimated)"
MAX_ROWS = 0xFFFF  # lanes and depths are 16-bit fields on the GPU (engine/inspect/spans.py)


class TraceError(ValueError):
    """The file cannot be read as a trace; the message is one line naming it."""


@dataclass
class SpanTable:
    """Spans as columns, sorted by ``start_ns`` (ties: lane, depth).

    Attributes:
        start_ns: ``int64 (n,)`` ns since ``origin_ns``.
        dur_ns: ``int64 (n,)`` ns, >= 0.
        lane: ``uint32 (n,)`` index into ``lanes``.
        depth: ``uint32 (n,)`` nesting depth inside the lane (0 = outermost).
        name_id: ``uint32 (n,)`` index into ``names``.
        names: distinct span names. ``lanes``: lane labels, in display order.
        origin_ns: the source clock value of ``start_ns == 0`` (ns).
        notes: one line per kind of input that was skipped (with counts).
        source: the file it came from ('' when generated).
    """

    start_ns: np.ndarray
    dur_ns: np.ndarray
    lane: np.ndarray
    depth: np.ndarray
    name_id: np.ndarray
    names: list[str]
    lanes: list[str]
    origin_ns: int = 0
    notes: list[str] = field(default_factory=list)
    source: str = ""

    def __len__(self) -> int:
        return len(self.start_ns)

    @property
    def end_ns(self) -> np.ndarray:
        return self.start_ns + self.dur_ns

    def lane_depths(self) -> np.ndarray:
        """``int64 (len(lanes),)``: rows each lane needs (max depth + 1; 0 when empty)."""
        out = np.zeros(len(self.lanes), np.int64)
        if len(self):
            np.maximum.at(out, self.lane.astype(np.int64), self.depth.astype(np.int64) + 1)
        return out


def nesting_depth(lane: np.ndarray, start: np.ndarray, end: np.ndarray) -> np.ndarray:
    """Depth of each span in its lane: how many spans of the lane enclose it.

    Spans are visited by (lane, start, longest first) with a stack of open end times; a span
    that overlaps its predecessor without nesting is put one deeper (as Perfetto does), never
    moved or clipped. Returns ``uint32 (n,)``.
    """
    order = np.lexsort((-(end - start), start, lane))
    depth = np.zeros(len(lane), np.uint32)
    stack: list[int] = []
    cur = -1
    ln, st, en = lane[order].tolist(), start[order].tolist(), end[order].tolist()
    out = [0] * len(order)
    for k in range(len(order)):
        if ln[k] != cur:
            cur, stack = ln[k], []
        s = st[k]
        while stack and stack[-1] <= s:
            stack.pop()
        out[k] = len(stack)
        stack.append(en[k])
    depth[order] = out
    return depth


def build_table(
    lane: list[int] | np.ndarray,
    start: list[int] | np.ndarray,
    end: list[int] | np.ndarray,
    name_id: list[int] | np.ndarray,
    names: list[str],
    lanes: list[str],
    notes: list[str] | None = None,
    depth: np.ndarray | None = None,
) -> SpanTable:
    """Columns (absolute ns) -> a sorted ``SpanTable`` with depths (computed unless given)."""
    lane = np.asarray(lane, np.int64)
    start = np.asarray(start, np.int64)
    end = np.asarray(end, np.int64)
    if depth is None:
        depth = nesting_depth(lane, start, end)
    origin = int(start.min()) if len(start) else 0
    order = np.lexsort((depth, lane, start))
    return SpanTable(
        start_ns=start[order] - origin,
        dur_ns=(end - start)[order],
        lane=lane[order].astype(np.uint32),
        depth=np.asarray(depth, np.uint32)[order],
        name_id=np.asarray(name_id, np.uint32)[order],
        names=list(names),
        lanes=list(lanes),
        origin_ns=origin,
        notes=list(notes or []),
    )


def load_trace(path: str | Path) -> SpanTable:
    """Read a Chrome Trace Event JSON or Lantern telemetry JSONL file.

    Raises:
        TraceError: missing, unreadable, empty, not JSON, truncated beyond use, or no span
            in it; the message is one line naming the file and what to do.
    """
    p = Path(path)
    try:
        data = p.read_bytes()
    except OSError as e:
        raise TraceError(f"{path}: cannot read ({e.strerror})") from None
    if not data.strip():
        raise TraceError(f"{path}: empty file; give a Chrome trace JSON or a --telemetry JSONL")
    first = data.lstrip()[:200]
    if first.startswith(b"{") and b'"type"' in first.split(b"\n", 1)[0]:
        table = _load_jsonl(path, data)
    else:
        table = _load_chrome(path, data)
    if len(table.lanes) > MAX_ROWS or (len(table) and int(table.depth.max()) >= MAX_ROWS):
        raise TraceError(
            f"{path}: more than {MAX_ROWS} tracks or nesting levels; the flame chart draws "
            "at most that many (split the trace)"
        )
    for note in table.notes:
        log.warning("%s: %s", path, note)
    table.source = str(path)
    return table


# -- Chrome Trace Event JSON ------------------------------------------------------------------
class _Names:
    def __init__(self):
        self.ids: dict[str, int] = {}

    def __call__(self, name) -> int:
        name = str(name)
        i = self.ids.get(name)
        if i is None:
            i = self.ids[name] = len(self.ids)
        return i


def _load_chrome(path, data: bytes) -> SpanTable:
    try:
        doc = orjson.loads(data)
    except orjson.JSONDecodeError as e:
        raise TraceError(f"{path}: not valid JSON, truncated or corrupt ({e})") from None
    events = doc.get("traceEvents") if isinstance(doc, dict) else doc
    if not isinstance(events, list):
        raise TraceError(f"{path}: no traceEvents list; expected a Chrome Trace Event JSON file")
    reader = _ChromeReader()
    for e in events:
        reader.feed(e)
    return reader.table(path)


class _ChromeReader:
    """Chrome events -> span columns, one event at a time; bad events counted by kind."""

    def __init__(self):
        self.names = _Names()
        self.tracks: dict[tuple, int] = {}
        self.cols: tuple[list, list, list, list] = ([], [], [], [])  # lane, start, end, name
        self.proc_name, self.thread_name, self.proc_sort, self.thread_sort = {}, {}, {}, {}
        self.open_b: dict[int, list] = defaultdict(list)
        self.bad: Counter = Counter()
        self.unknown: Counter = Counter()

    def track(self, e: dict) -> int:
        key = (_ident(e.get("pid", 0)), _ident(e.get("tid", 0)))
        t = self.tracks.get(key)
        if t is None:
            t = self.tracks[key] = len(self.tracks)
        return t

    def add(self, track: int, begin: int, end: int, name) -> None:
        lane, start, stop, nid = self.cols
        lane.append(track)
        start.append(begin)
        stop.append(end)
        nid.append(self.names(name))

    def feed(self, e) -> None:
        if not isinstance(e, dict):
            self.bad["malformed event(s) (not an object)"] += 1
            return
        ph = e.get("ph")
        if ph == "M":
            _metadata(e, self.proc_name, self.thread_name, self.proc_sort, self.thread_sort)
            return
        if ph not in ("X", "B", "E"):
            self.unknown[str(ph)] += 1
            return
        ts = e.get("ts")
        if not _number(ts):
            self.bad["event(s) without a numeric ts"] += 1
        elif not abs(ts) < MAX_US:
            self.bad["event(s) with ts or dur beyond 100 days"] += 1
        elif ph == "X":
            self.complete(e, round(ts * 1000))
        elif ph == "B":
            self.open_b[self.track(e)].append((round(ts * 1000), e.get("name", "?")))
        else:
            self.end(e, round(ts * 1000))

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

    def end(self, e: dict, end: int) -> None:
        """``E``: closes the newest open ``B`` of its track (the name comes from the B)."""
        stack = self.open_b.get(self.track(e))
        if not stack:
            self.bad["E event(s) without a B"] += 1
            return
        begin, name = stack.pop()
        if end < begin:
            self.bad["B/E pair(s) ending before they begin"] += 1
        else:
            self.add(self.track(e), begin, end, e.get("name", name) if name == "?" else name)

    def notes(self) -> list[str]:
        left_open = sum(len(s) for s in self.open_b.values())
        if left_open:
            self.bad["B event(s) without an E"] += left_open
        notes = [f"skipped {n} {what}" for what, n in self.bad.items()]
        if self.unknown:
            kinds = ", ".join(f"{ph!r} x{n}" for ph, n in sorted(self.unknown.items()))
            notes.append(
                f"ignored {sum(self.unknown.values())} event(s) of phases not drawn: {kinds}"
            )
        return notes

    def table(self, path) -> SpanTable:
        notes = self.notes()
        lane, start, end, nid = self.cols
        if not lane:
            raise TraceError(f"{path}: no drawable span (X or B/E events){_why(notes)}")
        remap, labels = self.lane_order()
        names = list(self.names.ids)
        return build_table(remap[np.asarray(lane)], start, end, nid, names, labels, notes)

    def lane_order(self) -> tuple[np.ndarray, list[str]]:
        """Tracks ordered by (process sort index, pid, thread sort index, tid): the index
        remap and the labels ``"process / thread"``."""
        ps, ts = self.proc_sort, self.thread_sort
        order = sorted(
            self.tracks, key=lambda k: (ps.get(k[0], 0), _num(k[0]), ts.get(k, 0), _num(k[1]))
        )
        remap = np.zeros(len(self.tracks), np.int64)
        labels = []
        for i, key in enumerate(order):
            remap[self.tracks[key]] = i
            pid, tid = key
            p = self.proc_name.get(pid, f"pid {pid}")
            labels.append(f"{p} / {self.thread_name.get(key, f'tid {tid}')}")
        return remap, labels


MAX_US = 8.64e12  # 100 days in microseconds: int64 nanoseconds stay far from overflow


def _number(v) -> bool:
    return isinstance(v, int | float) and not isinstance(v, bool)


def _ident(v):
    """A pid/tid usable as a key (JSON allows anything there)."""
    return v if isinstance(v, int | float | str) and not isinstance(v, bool) else str(v)


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
    return (0, v, "") if isinstance(v, int | float) else (1, 0, str(v))


def _why(notes: list[str]) -> str:
    return f" ({'; '.join(notes)})" if notes else ""


# -- Lantern telemetry JSON Lines -------------------------------------------------------------
FRAME_NAMES = ("CPU frame", "GPU frame")  # depth-0 span around each frame's scopes


def _load_jsonl(path, data: bytes) -> SpanTable:
    names: list[str] = []
    session: dict = {}
    frames = []
    bad: Counter = Counter()
    for line in data.splitlines():
        if not line.strip():
            continue
        try:
            msg = orjson.loads(line)
        except orjson.JSONDecodeError:
            bad["malformed or truncated line(s)"] += 1
            continue
        kind = msg.get("type") if isinstance(msg, dict) else None
        if kind == "session":
            session = msg
        elif kind == "names" and isinstance(msg.get("names"), list):
            names += [str(n) for n in msg["names"]]
        elif kind == "frame":
            frames.append(msg)
        else:
            bad["line(s) of an unknown type"] += 1
    offset = session.get("gpu_clock_offset_ns")
    cols: tuple[list, list, list, list] = ([], [], [], [])
    gpu_frames = 0
    for msg in frames:
        for lane_i, key in ((0, "cpu"), (1, "gpu")):
            scopes = msg.get(key)
            if not scopes:
                continue
            if lane_i == 1:
                gpu_frames += 1
                if not isinstance(offset, int):
                    continue
            shift = offset if lane_i == 1 else 0
            _add_frame(cols, bad, scopes, lane_i, shift, len(names))
    notes = [f"skipped {n} {what}" for what, n in bad.items()]
    if gpu_frames and not isinstance(offset, int):
        notes.append(
            f"left out the GPU scopes of {gpu_frames} frame(s): the session has no "
            "gpu_clock_offset_ns to put them on the CPU clock"
        )
    lane, start, end, nid = cols
    if not lane:
        raise TraceError(f"{path}: no frame with scopes (record with --profile){_why(notes)}")
    lanes = [CPU_LANE, GPU_LANE]
    return build_table(lane, start, end, nid, names + list(FRAME_NAMES), lanes, notes)


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
