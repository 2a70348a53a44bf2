"""Ctrl-C (SIGINT) and SIGTERM as a flag that start-up and the frame loop check.

SIGTERM (``timeout``, ``kill``, a process manager) is treated exactly like Ctrl-C: the run
ends after the current frame, the shutdown reports are printed, ``--trace`` is written, and
the exit status is 130.

Not KeyboardInterrupt: the exception can land inside a glfw or wgpu callback, where it is
swallowed (the loop would run on), inside wgpu's request_device (a traceback from its
internals), or inside the imports before any sample code runs. So ``python -m samples.sNN``
installs the flag handler the moment the ``samples`` package is imported (``install``),
before numpy or wgpu load; a second signal raises KeyboardInterrupt as Ctrl-C does. This module
imports nothing heavy on purpose.
"""

from __future__ import annotations

import contextlib
import signal

SIGNALS = (signal.SIGINT, signal.SIGTERM)


class Interrupt:
    """``requested`` turns True on the first SIGINT or SIGTERM while the handler is installed."""

    def __init__(self):
        self.requested = False

    def _handler(self, signum, frame):
        if self.requested:
            raise KeyboardInterrupt
        self.requested = True

    @contextlib.contextmanager
    def catching_sigint(self):
        """Install the flag handler (SIGINT and SIGTERM) for the duration of the ``with``
        block."""
        previous = [(s, signal.signal(s, self._handler)) for s in SIGNALS]
        try:
            yield self
        finally:
            for s, handler in previous:
                signal.signal(s, handler)


#: The process-wide flag of a sample run as a program (``install``).
PROCESS = Interrupt()
_installed = False


def install() -> None:
    """Catch Ctrl-C and SIGTERM as ``PROCESS.requested`` from now on (``python -m
    samples.sNN``)."""
    global _installed
    for s in SIGNALS:
        signal.signal(s, PROCESS._handler)
    _installed = True


def for_run() -> Interrupt:
    """The flag a run should use: the process-wide one when it was installed early (so an
    interrupt during the imports counts), else a fresh one."""
    return PROCESS if _installed else Interrupt()
