"""Ctrl-C as a flag that start-up and the frame loop check.

Not KeyboardInterrupt: the exception can land inside a glfw or wgpu callback, where it is
swallowed (the loop would run on), inside wgpu's request_device (a traceback from its
internals), or inside the imports before any sample code runs. So ``python -m samples.sNN``
installs the flag handler the moment the ``samples`` package is imported (``install``),
before numpy or wgpu load; a second Ctrl-C raises KeyboardInterrupt as usual. This module
imports nothing heavy on purpose.
"""

from __future__ import annotations

import contextlib
import signal


class Interrupt:
    """``requested`` turns True on the first SIGINT while the handler is installed."""

    def __init__(self):
        self.requested = False

    def _handler(self, signum, frame):
        if self.requested:
            raise KeyboardInterrupt
        self.requested = True

    @contextlib.contextmanager
    def catching_sigint(self):
        """Install the flag handler for the duration of the ``with`` block."""
        previous = signal.signal(signal.SIGINT, self._handler)
        try:
            yield self
        finally:
            signal.signal(signal.SIGINT, previous)


#: The process-wide flag of a sample run as a program (``install``).
PROCESS = Interrupt()
_installed = False


def install() -> None:
    """Catch Ctrl-C as ``PROCESS.requested`` from now on (``python -m samples.sNN``)."""
    global _installed
    signal.signal(signal.SIGINT, PROCESS._handler)
    _installed = True


def for_run() -> Interrupt:
    """The flag a run should use: the process-wide one when it was installed early (so an
    interrupt during the imports counts), else a fresh one."""
    return PROCESS if _installed else Interrupt()
