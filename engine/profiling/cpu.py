"""CPU scopes: ``time.perf_counter_ns`` around pass recording, Update, Submit and Present.

The hot path (``begin``/``end``, once per pass) only appends plain tuples; ``Scope`` objects
(a frozen dataclass, ~1 us each to build) are made once per frame when the frame closes."""

from __future__ import annotations

import time
from collections import deque

from engine.telemetry import Scope


class CpuProfiler:
    """Nested named scopes grouped into frames.

    A frame's scopes are those begun from just after the previous frame closed. The frame
    index comes from ``begin_frame``. A frame closes when, after its ``submitted()``, a scope
    begins whose name it already has (the next frame's ``Update``), when the next
    ``begin_frame`` comes, or at ``flush()``; so ``Present`` (after submit) stays with its
    frame.

    Attributes:
        frames: closed ``(frame_index, scopes)`` pairs, scopes in start order; consumers pop.
    """

    def __init__(self):
        self.frames: deque[tuple[int, list[Scope]]] = deque(maxlen=1024)
        self._stack: list[tuple[str, int]] = []
        self._scopes: list[tuple[str, int, int]] = []  # (name, begin_ns, end_ns)
        self._names: set[str] = set()
        self._frame: int | None = None
        self._submitted = False

    def begin(self, name: str) -> None:
        if self._submitted and name in self._names:
            self._close()
        self._names.add(name)
        self._stack.append((name, time.perf_counter_ns()))

    def end(self) -> None:
        """Close the innermost open scope (a stray ``end`` is ignored)."""
        if self._stack:
            name, begin = self._stack.pop()
            self._scopes.append((name, begin, time.perf_counter_ns()))

    def begin_frame(self, frame_index: int) -> None:
        if self._submitted:
            self._close()
        self._frame = frame_index

    def submitted(self) -> None:
        self._submitted = True

    def flush(self) -> None:
        """Close the frame in progress if it was submitted (shutdown)."""
        if self._submitted:
            self._close()

    def _close(self) -> None:
        if self._frame is not None and self._scopes:
            scopes = sorted(self._scopes, key=lambda s: s[1])
            self.frames.append((self._frame, [Scope(*s) for s in scopes]))
        self._scopes, self._names, self._submitted = [], set(), False
        self._frame = None
