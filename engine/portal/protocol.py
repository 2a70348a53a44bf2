"""The portal's push protocol: Server-Sent Events built from telemetry records.

Stream of one connection (each event is ``event: NAME`` + ``data: JSON``):

* ``session``: ``Telemetry.session`` (adapter, backend, sample, settings, size, ...) plus
  ``pid`` and ``started`` (a new process means new name ids: the page starts over);
* ``names``: ``{"names": [...]}``, scope names in id order; on connect the whole table, later
  only names never sent before (ids continue);
* ``frame``: ``engine.telemetry.encode_record``'s message (the ``--telemetry`` JSONL frame);
  a gap in ``seq`` is frames this client missed;
* ``log``: ``{"lines": [LogEntry.as_json(), ...]}``, new or re-counted log lines (by ``id``).

The frame thread publishes: ``Broadcaster.publish(record)`` encodes a record once and appends
the bytes to each client's bounded queue. With no client it is one check. A client whose
queue stays full for ``STALL_S`` seconds is dropped; memory per client is bounded by
``QUEUE_FRAMES`` messages.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections import deque

import orjson

from ..telemetry import FrameRecord, NameTable, encode_record

log = logging.getLogger("lantern")

QUEUE_FRAMES = 120  # messages a client may lag behind (2 s at 60 FPS) before losing frames
STALL_S = 3.0  # a client whose queue stays full this long is dropped
MAX_CLIENTS = 16


def sse(event: str, data) -> bytes:
    """One Server-Sent Event: ``event: NAME\\ndata: JSON\\n\\n`` (JSON has no raw newline)."""
    return b"event: " + event.encode() + b"\ndata: " + orjson.dumps(data) + b"\n\n"


class Client:
    """One event-stream connection: a bounded queue the frame thread appends to and the
    connection's thread drains.

    Attributes:
        lost: messages dropped because the queue was full (the page sees them as seq gaps).
        closed: set when dropped (stalled) or when the server stops; the writer then exits.
    """

    def __init__(self, first: list[bytes], limit: int = QUEUE_FRAMES):
        self.queue: deque[bytes] = deque(first, maxlen=max(limit, len(first)))
        self.wake = threading.Event()
        self.wake.set()
        self.lost = 0
        self.sent = 0
        self.closed = False
        self.full_since: float | None = None

    def put(self, msg: bytes, now: float) -> bool:
        """Append (frame thread); return False when the client has stalled too long."""
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
        self.wake.set()
        return True

    def take(self, timeout_s: float) -> bytes:
        """Everything queued, joined (connection thread); b"" after ``timeout_s`` idle."""
        if not self.wake.wait(timeout_s):
            return b""
        self.wake.clear()
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
        self.wake.set()


class Broadcaster:
    """Telemetry subscriber that fans records out to SSE clients.

    Args:
        telemetry: the ``Telemetry`` whose records are sent (subscribed here).
        log_tail: an ``engine.debug.logtail.LogTail`` whose changes are sent, or None.

    Attributes:
        clients: the connected ``Client`` objects (replaced, never mutated, so the frame
            thread's one check needs no lock).
        dropped_clients: clients dropped because they stalled.
        last_bytes: size of the last ``frame`` event in bytes.
    """

    def __init__(self, telemetry, log_tail=None):
        self.telemetry = telemetry
        self.log_tail = log_tail
        self.clients: tuple[Client, ...] = ()
        self.table = NameTable()
        self.dropped_clients = 0
        self.last_bytes = 0
        self._log_version = log_tail.version if log_tail is not None else 0
        self._lock = threading.Lock()  # connect vs publish: a client never misses a name
        self.session_extra = {"pid": os.getpid(), "started": time.time()}
        self._unsubscribe = telemetry.subscribe(self.publish)

    def publish(self, record: FrameRecord) -> None:
        """Frame thread, once per record: encode once, queue for every client."""
        if not self.clients:
            return
        with self._lock:
            new, msg = encode_record(record, self.table)
            frame = sse("frame", msg)
            self.last_bytes = len(frame)
            if new:
                frame = sse("names", {"names": new}) + frame
            frame += self._log_events()
            now = time.monotonic()
            stalled = [c for c in self.clients if not c.put(frame, now)]
            for c in stalled:
                self._drop(c)

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

    def connect(self) -> Client | None:
        """A new client with the session, the whole name table and the log tail queued, or
        None when ``MAX_CLIENTS`` are connected (server thread)."""
        with self._lock:
            if len(self.clients) >= MAX_CLIENTS:
                return None
            first = [
                sse("session", {**self.telemetry.session, **self.session_extra}),
                sse("names", {"names": list(self.table.ids)}),
            ]
            if self.log_tail is not None:  # later ``log`` events may repeat some: ids de-dup
                lines = [e.as_json() for e in self.log_tail.snapshot()]
                first.append(sse("log", {"lines": lines, "reset": True}))
            client = Client(first)
            self.clients = (*self.clients, client)
            return client

    def disconnect(self, client: Client) -> None:
        with self._lock:
            self.clients = tuple(c for c in self.clients if c is not client)
        client.close()

    def close(self) -> None:
        self._unsubscribe()
        with self._lock:
            clients, self.clients = self.clients, ()
        for c in clients:
            c.close()
