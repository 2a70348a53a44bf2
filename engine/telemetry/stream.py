"""The per-frame record stream: the frame loop publishes one ``FrameRecord`` per finished
frame and every view (HUD, shutdown report, trace, JSON Lines, the portal, the flame
inspector) reads it, by subscribing or from ``history``; none reaches into the profiler or
the culler, so they agree to the nanosecond.
"""

from __future__ import annotations

import logging
from collections import deque
from collections.abc import Callable

from engine.telemetry.record import (
    CPU,
    DRAW,
    FRAME_SCOPE,
    GPU,
    WALL,
    FrameRecord,
    FrameTimings,
    Session,
    nest_draws,
    walk,
)
from engine.telemetry.stats import StatsWindow

log = logging.getLogger("lantern")

Subscriber = Callable[[FrameRecord], None]


class Telemetry:
    """The per-frame record stream.

    Args:
        session: facts that do not change per frame (a ``Session``, or its JSON dict).
        history: records kept in ``history`` (the trace and the HUD read them).

    Attributes:
        session: see Args; views may read it at any time.
        history: ``deque[FrameRecord]``, oldest first. ``latest``: the newest or None.
        subscriber_errors: subscribers removed because they raised.
        totals: run totals over every published record: ``frames``, ``dropped`` and
            ``invalid`` GPU scopes, ``gpu_missing`` (frames GPU profiling could not time:
            every query pool was in flight; ``FrameTimings.gpu_skipped``).
    """

    def __init__(self, session: Session | dict | None = None, *, history: int = 300):
        if not isinstance(session, Session):
            session = Session.from_json(session or {})
        self.session = session
        self.session_version = 0  # bumped by update_session (the portal resends on change)
        self.history: deque[FrameRecord] = deque(maxlen=history)
        self.latest: FrameRecord | None = None
        self.stats = StatsWindow()
        self.subscriber_errors = 0
        self.totals = {"frames": 0, "dropped": 0, "invalid": 0, "gpu_missing": 0}
        self._subscribers: list[Subscriber] = []
        self._seq = 0

    def update_session(self, **fields) -> None:
        """Set ``Session`` fields (e.g. ``profiling=`` when profiling is switched at run
        time) and bump ``session_version`` so views resend it. Raises AttributeError for a
        name that is not a field (put free-form facts in ``session.facts``)."""
        for k, v in fields.items():
            if k not in Session.__dataclass_fields__:
                raise AttributeError(f"Session has no field {k!r}")
            setattr(self.session, k, v)
        self.session_version += 1

    def set_fact(self, name: str, value) -> None:
        """Set a free-form session fact (JSON-ready ``value``; e.g. shader hashes) and bump
        ``session_version``."""
        self.session.facts[name] = value
        self.session_version += 1

    def subscribe(self, fn: Subscriber) -> Callable[[], None]:
        """Call ``fn(record)`` on the frame thread for every record published from now on;
        returns a function that unsubscribes. A subscriber that raises is logged and
        removed: a view never breaks the frame loop."""
        self._subscribers.append(fn)
        return lambda: self._subscribers.remove(fn) if fn in self._subscribers else None

    @property
    def subscribers(self) -> tuple[Subscriber, ...]:
        """The subscribers, in subscription order."""
        return tuple(self._subscribers)

    def unsubscribe(self, fn: Subscriber) -> None:
        """Stop calling ``fn`` (nothing when it is not subscribed)."""
        if fn in self._subscribers:
            self._subscribers.remove(fn)

    @property
    def has_subscribers(self) -> bool:
        return bool(self._subscribers)

    def reset_stats(self) -> None:
        """Forget the statistics window (``stats reset``)."""
        self.stats.reset()

    def publish(
        self,
        frame_index: int,
        *,
        t_ns: int,
        wall_ms: float | None,
        timings: FrameTimings | None = None,
        readbacks: dict | None = None,
        variant: str | None = None,
    ) -> FrameRecord:
        """Build, keep and send the record of one finished frame. ``readbacks``: the newest
        result of each readback client by channel (``FrameRecord.readbacks``); ``variant``:
        the sample's variant the frame was recorded with."""
        gpu = None
        if timings is not None and timings.gpu is not None:
            gpu = nest_draws(timings.gpu, timings.draws)
        cpu = tuple(timings.cpu) if timings is not None and timings.cpu is not None else None
        keys = tuple((GPU, s[0]) for s in gpu or ()) + tuple((CPU, s[0]) for s in cpu or ())
        values = [(s[2] - s[1]) / 1e6 for s in gpu or ()] + [(s[2] - s[1]) / 1e6 for s in cpu or ()]
        if wall_ms is not None:
            keys += ((WALL, FRAME_SCOPE),)
            values.append(wall_ms)
        keys, values = _add_draws(keys, values, gpu)
        snapshot = self.stats.add(keys, values, t_ns / 1e9)
        record = FrameRecord(
            seq=self._seq,
            frame_index=frame_index,
            t_ns=t_ns,
            wall_ms=wall_ms,
            gpu=gpu,
            cpu=cpu,
            dropped=timings.dropped if timings is not None else 0,
            invalid=timings.invalid if timings is not None else 0,
            readbacks=dict(readbacks or {}),
            snapshot=snapshot,
            transitions=timings.transitions if timings is not None else None,
            variant=variant,
        )
        self._seq += 1
        t = self.totals
        t["frames"] += 1
        t["dropped"] += record.dropped
        t["invalid"] += record.invalid
        t["gpu_missing"] += timings is not None and timings.gpu_skipped
        self.history.append(record)
        self.latest = record
        for fn in list(self._subscribers):
            try:
                fn(record)
            except Exception:
                log.exception("telemetry: subscriber %r failed and was removed", fn)
                self.subscriber_errors += 1
                self._subscribers.remove(fn)
        return record


def _add_draws(keys: tuple, values: list, gpu) -> tuple[tuple, list]:
    """Append each nested draw's reading (inside, else split; ms) as a ``(DRAW, (pass,
    draw))`` row of the stats window, so views get its mean and delta like a pass's."""
    extra = [(path, s.detail.ns) for path, s in walk(gpu) if len(path) > 1]
    if not extra:
        return keys, values
    keys += tuple((DRAW, name) for name, ns in extra if ns is not None)
    values += [ns / 1e6 for _, ns in extra if ns is not None]
    return keys, values
