"""One-line progress for long headless runs: ``\\r``-updated on a terminal, silent otherwise."""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from typing import TextIO


class Progress:
    """Prints ``capture: frame 37/120 (31%), 2.4 s, about 5.3 s left`` on one terminal line,
    rewritten in place (carriage return) at most every ``interval`` seconds once ``delay``
    seconds have passed, and erased by :meth:`close`, so reports printed afterwards start on a
    clean line. Writes nothing at all when ``stream`` is not a TTY (a pipe, a file, CI logs).

    Use as a context manager (``with Progress(n) as p: ... p.update(i + 1)``) or call
    :meth:`close` before printing anything else.

    Args:
        total: number of steps (frames), >= 1.
        label: what is progressing, the line's first word.
        stream: where to write (default ``sys.stdout``).
        delay, interval: seconds before the first line and between updates.
        clock: monotonic seconds (tests pass a fake one).
    """

    def __init__(
        self,
        total: int,
        *,
        label: str = "capture",
        stream: TextIO | None = None,
        delay: float = 1.0,
        interval: float = 0.2,
        clock: Callable[[], float] = time.monotonic,
    ):
        self.total, self.label = max(int(total), 1), label
        self.stream = sys.stdout if stream is None else stream
        self.delay, self.interval, self.clock = delay, interval, clock
        isatty = getattr(self.stream, "isatty", None)
        self.enabled = bool(isatty and isatty())
        self.start = clock()
        self._next = self.start + delay
        self._shown = 0  # characters of the line now on screen

    def update(self, done: int) -> None:
        """``done`` steps of ``total`` are finished."""
        if not self.enabled:
            return
        now = self.clock()
        if now < self._next:
            return
        self._next = now + self.interval
        elapsed = now - self.start
        text = f"{self.label}: frame {done:,}/{self.total:,} ({100 * done // self.total}%), "
        text += f"{elapsed:.1f} s"
        if 0 < done < self.total:
            text += f", about {elapsed * (self.total - done) / done:.1f} s left"
        self.stream.write("\r" + text.ljust(self._shown))  # pad over a longer previous line
        self.stream.flush()
        self._shown = len(text)

    def close(self) -> None:
        """Erase the line (if one was shown); idempotent."""
        if self._shown:
            self.stream.write("\r" + " " * self._shown + "\r")
            self.stream.flush()
            self._shown = 0

    def __enter__(self) -> Progress:
        return self

    def __exit__(self, *exc) -> None:
        self.close()
