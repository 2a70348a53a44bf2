"""The portal's push protocol: Server-Sent Events built from telemetry records.

Stream of one connection (each event is ``event: NAME`` + ``data: JSON``):

* ``session``: ``Telemetry.session`` (adapter, backend, sample, settings, size, ...) plus
  ``pid`` and ``started`` (a new process means new name ids: the page starts over); sent on
  connect and again before the next frame whenever the session changes;
* ``names``: ``{"names": [...]}``, scope names in id order; on connect the whole table
  (``"full": true``), later only names never sent before (ids continue);
* ``frame``: ``engine.telemetry.encode_record``'s message (the ``--telemetry`` JSONL frame);
  a gap in ``seq`` is frames this client missed;
* ``log``: ``{"lines": [LogEntry.as_json(), ...]}``, new or re-counted log lines (by ``id``).

The session event also carries ``page`` (``page_style()``): the cull counter names, the cull
classes' colours and the pass palette the HUD uses, so the page draws with the engine's names
and colours rather than copies of its own.

The frame thread publishes: ``Broadcaster.publish(record)`` hands the record to the
broadcaster's thread (one check with no client), which encodes it once and appends the bytes
to each client's bounded queue. A client whose
queue stays full for ``STALL_S`` seconds is dropped; memory per client is bounded by
``QUEUE_FRAMES`` messages.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections import deque
from collections.abc import Callable

import orjson

from engine.culling.counters import COUNTER_NAMES
from engine.hud.palette import CULL_CLASSES, CULL_COLORS, PALETTE
from engine.telemetry import FrameRecord, NameTable, encode_record

log = logging.getLogger("lantern")

QUEUE_FRAMES = 120  # messages a client may lag behind (2 s at 60 FPS) before losing frames
STALL_S = 3.0  # a client whose queue stays full this long is dropped
MAX_CLIENTS = 16
PENDING = 240  # records handed over but not yet encoded (4 s at 60 FPS)
LOG_POLL_S = 0.25  # with no frames, log lines still go out this often


def _hex(rgb: tuple[int, int, int]) -> str:
    return "#{:02x}{:02x}{:02x}".format(*rgb)


def page_style() -> dict:
    """What the page draws with, from the engine's own tables (the ``session`` event's
    ``page``): ``counters``, the eight cull counter names in buffer order
    (``engine.culling.counters.COUNTER_NAMES``); ``cull_classes``, ``[name, "#rrggbb"]`` of the
    cull pie as the HUD's cull panel colours it; ``palette``, the HUD timeline's per-pass
    colours (``#rrggbb``, cycled by name id)."""

    return {
        "counters": list(COUNTER_NAMES),
        "cull_classes": [[n, _hex(c)] for n, c in zip(CULL_CLASSES, CULL_COLORS, strict=True)],
        "palette": [_hex(c) for c in PALETTE],
    }


def sse(event: str, data) -> bytes:
    """One Server-Sent Event: ``event: NAME\\ndata: JSON\\n\\n`` (JSON has no raw newline)."""
    return b"event: " + event.encode() + b"\ndata: " + orjson.dumps(data) + b"\n\n"


class Client:
    """One event-stream connection: a bounded queue the encoder thread appends to and the
    connection's thread drains.

    Attributes:
        lost: messages dropped because the queue was full (the page sees them as seq gaps).
        closed: set when dropped (stalled) or when the server stops; the writer then exits.
    """

    def __init__(
        self,
        first: list[bytes],
        limit: int = QUEUE_FRAMES,
        notify: Callable[[], None] | None = None,
    ):
        self.queue: deque[bytes] = deque(first, maxlen=max(limit, len(first)))
        self.wake = threading.Event()
        self.wake.set()
        # called (encoder thread) after each append and on close: wakes a writer that waits
        # on an event loop rather than on ``wake`` (the server's ``call_soon_threadsafe``)
        self.notify = notify
        self.lost = 0
        self.sent = 0
        self.closed = False
        self.full_since: float | None = None

    def put(self, msg: bytes, now: float) -> bool:
        """Append (encoder thread); return False when the client has stalled too long."""
        q = self.queue
        if len(q) == q.maxlen:
            self.lost += 1  # deque drops the oldest message
            if self.full_since is None:
                self.full_since = now
            elif now - self.full_since > STALL_S:
                return False
        else:
            self.full_since = None
        q.append(msg)
        self._wake()
        return True

    def _wake(self) -> None:
        self.wake.set()
        if self.notify is not None:
            self.notify()

    def take(self, timeout_s: float) -> bytes:
        """Everything queued, joined; b"" after ``timeout_s`` idle (a writer thread)."""
        if not self.wake.wait(timeout_s):
            return b""
        self.wake.clear()
        return self.drain()

    def drain(self) -> bytes:
        """Everything queued now, joined, without waiting (b"" if nothing)."""
        out = []
        q = self.queue
        while q:
            try:
                out.append(q.popleft())
            except IndexError:
                break
        return b"".join(out)

    def close(self) -> None:
        self.closed = True
        self._wake()


class Broadcaster:
    """Telemetry subscriber that fans records out to SSE clients.

    The frame thread only hands the record over (``publish``: one check with no client, an
    append and a wake-up with clients); the broadcaster's own thread encodes it once and
    queues the bytes for every client, so encoding (~0.1 ms at 12 passes) never runs on the
    frame thread, and a slow client never slows another.

    Args:
        telemetry: the ``Telemetry`` whose records are sent (subscribed here).
        log_tail: an ``engine.tools.log.tool.LogTail`` whose changes are sent, or None.

    Attributes:
        clients: the connected ``Client`` objects (replaced, never mutated, so the frame
            thread's one check needs no lock).
        records_lost: records the encoder thread had no time for (``PENDING`` behind).
        dropped_clients: clients dropped because they stalled.
        last_bytes: size of the last ``frame`` event in bytes.
        encode_ns, encoded: time spent encoding and fanning out, and records done.
    """

    def __init__(self, telemetry, log_tail=None):
        self.telemetry = telemetry
        self.log_tail = log_tail
        self.clients: tuple[Client, ...] = ()
        self.table = NameTable()
        self.records_lost = self.dropped_clients = self.last_bytes = 0
        self.encode_ns = self.encoded = 0
        self._pending: deque[FrameRecord] = deque(maxlen=PENDING)
        # A lock as a binary semaphore: released = "records waiting". Waking a blocked thread
        # this way costs the frame thread ~3 us here, a threading.Event ~9 us.
        self._wake = threading.Lock()
        self._wake.acquire()
        self._busy = False
        self._log_version = log_tail.version if log_tail is not None else 0
        self._lock = threading.Lock()  # connect vs encode: a client never misses a name
        self.session_extra = {"pid": os.getpid(), "started": time.time(), "page": page_style()}
        self._session = telemetry.session_version  # as last sent; a change is sent again
        self._running = True
        self._thread = threading.Thread(
            target=self._encode_loop, daemon=True, name="lantern-portal-encoder"
        )
        self._thread.start()
        self._unsubscribe = telemetry.subscribe(self.publish)

    def publish(self, record: FrameRecord) -> None:
        """Frame thread, once per record: hand it to the encoder thread; O(1), never blocks
        (a full hand-over queue drops its oldest record, counted in ``records_lost``)."""
        if not self.clients:
            return
        q = self._pending
        if len(q) == PENDING:
            self.records_lost += 1
        q.append(record)
        if self._wake.locked():  # only this thread releases, so no race with the encoder
            self._wake.release()

    def _encode_loop(self) -> None:
        while self._running:
            if not self._wake.acquire(timeout=LOG_POLL_S):
                self._send_log_only()  # log lines reach the page while no frame comes
                continue
            self._busy = True
            while self._pending:
                try:
                    self._send(self._pending.popleft())
                except Exception:  # never let one bad record stop the stream
                    log.exception("portal: a record could not be sent")
            self._busy = False

    def _send(self, record: FrameRecord) -> None:
        t0 = time.perf_counter_ns()
        with self._lock:
            new, msg = encode_record(record, self.table)
            frame = sse("frame", msg)
            self.last_bytes = len(frame)
            if new:
                frame = sse("names", {"names": new}) + frame
            tel = self.telemetry
            if tel.session_version != self._session:  # e.g. `profile gpu on` at run time
                self._session = tel.session_version
                frame = sse("session", {**tel.session.to_json(), **self.session_extra}) + frame
            frame += self._log_events()
            self._fan_out(frame)
        self.encode_ns += time.perf_counter_ns() - t0
        self.encoded += 1

    def _fan_out(self, data: bytes) -> None:
        now = time.monotonic()
        for c in [c for c in self.clients if not c.put(data, now)]:
            self._drop(c)

    def _send_log_only(self) -> None:
        if not self.clients or self.log_tail is None:
            return
        with self._lock:
            data = self._log_events()
            if data:
                self._fan_out(data)

    def _release(self) -> None:
        try:
            self._wake.release()
        except RuntimeError:  # already released: a wake-up is pending anyway
            pass

    def flush(self, timeout_s: float = 5.0) -> bool:
        """Wait until every published record is queued for the clients (tests, benchmark)."""
        deadline = time.monotonic() + timeout_s
        while (self._pending or self._busy or not self._wake.locked()) and (
            time.monotonic() < deadline
        ):
            time.sleep(0.001)
        return not self._pending

    def _log_events(self) -> bytes:
        tail = self.log_tail
        if tail is None or tail.version == self._log_version:
            return b""
        self._log_version, entries = tail.changes_since(self._log_version)
        return sse("log", {"lines": [e.as_json() for e in entries]}) if entries else b""

    def _drop(self, client: Client) -> None:
        self.clients = tuple(c for c in self.clients if c is not client)
        client.close()
        self.dropped_clients += 1
        log.warning("portal: dropped a client that stopped reading (%d frames lost)", client.lost)

    def connect(self, notify: Callable[[], None] | None = None) -> Client | None:
        """A new client with the session, the whole name table and the log tail queued, or
        None when ``MAX_CLIENTS`` are connected (server thread). ``notify``: see ``Client``."""
        with self._lock:
            if len(self.clients) >= MAX_CLIENTS:
                return None
            self._session = self.telemetry.session_version
            first = [
                sse("session", {**self.telemetry.session.to_json(), **self.session_extra}),
                sse("names", {"names": list(self.table.ids), "full": True}),
            ]
            if self.log_tail is not None:  # later ``log`` events may repeat some: ids de-dup
                lines = [e.as_json() for e in self.log_tail.snapshot()]
                first.append(sse("log", {"lines": lines, "reset": True}))
            client = Client(first, notify=notify)
            self.clients = (*self.clients, client)
            return client

    def disconnect(self, client: Client) -> None:
        with self._lock:
            self.clients = tuple(c for c in self.clients if c is not client)
        client.close()

    def close(self) -> None:
        self._unsubscribe()
        self._running = False
        self._release()
        self._thread.join(2.0)
        with self._lock:
            clients, self.clients = self.clients, ()
        for c in clients:
            c.close()
