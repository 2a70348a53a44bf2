"""``--telemetry PATH``: the record stream as JSON Lines (``engine.telemetry.wire``'s
encoding), written as records arrive."""

from __future__ import annotations

import contextlib
import logging

import orjson

from engine.telemetry import FrameRecord, NameTable, Session, encode_record

log = logging.getLogger("lantern")


class JsonLinesWriter:
    """``--telemetry PATH``: one JSON object per line. The first line is
    ``{"type": "session", ...}``; ``{"type": "names", "names": [...]}`` lines introduce scope
    names (indices continue across lines); then one ``{"type": "frame", ...}`` per record
    (``encode_record``'s message). Written as records arrive; flushed at ``close``.

    A write that fails later (disk full, drive removed) stops the writer: one warning, the
    error kept in ``error``, the run goes on.

    Raises:
        OSError: the file cannot be opened.
    """

    def __init__(self, path: str, session: Session | dict):
        self.path = path
        self._f = open(path, "wb")  # noqa: SIM115 - closed in close()
        self._table = NameTable()
        self.records = 0
        self.error: OSError | None = None
        facts = session.to_json() if isinstance(session, Session) else dict(session)
        self._line({"type": "session", **facts})

    def __call__(self, record: FrameRecord) -> None:
        if self._f is None:
            return
        self.records += 1
        new, msg = encode_record(record, self._table)
        if new:
            self._line({"type": "names", "names": new})
        self._line({"type": "frame", **msg})

    def _line(self, obj: dict) -> None:
        try:
            self._f.write(orjson.dumps(obj, option=orjson.OPT_APPEND_NEWLINE))
        except OSError as e:
            self._stop(e)

    def _stop(self, error: OSError) -> None:
        self.error, f, self._f = error, self._f, None
        with contextlib.suppress(OSError):
            f.close()  # flushing again fails the same way; the descriptor is released
        log.warning(
            "telemetry: cannot write %s (%s) after %d record(s); the file is incomplete",
            self.path, error.strerror or error, self.records,
        )  # fmt: skip

    def close(self) -> None:
        if self._f is None:
            return
        try:
            self._f.close()
        except OSError as e:
            self._stop(e)


class TelemetryWriter:
    """The ``--telemetry PATH`` tool: subscribes a ``JsonLinesWriter`` from install to close
    and says how many records it wrote. Nothing is written in a ``--graph`` run."""

    name = "telemetry-writer"

    def __init__(self):
        self.writer: JsonLinesWriter | None = None

    def install(self, ctx) -> None:
        path = ctx.option("telemetry")
        if not path or ctx.option("graph") is not None:
            return
        self.writer = JsonLinesWriter(path, ctx.telemetry.session)
        self._unsubscribe = ctx.telemetry.subscribe(self.writer)

    def close(self) -> None:
        w, self.writer = self.writer, None
        if w is None:
            return
        self._unsubscribe()
        w.close()
        if w.error is None:  # else its warning said where it stopped
            print(f"wrote {w.path} ({w.records} records)")
