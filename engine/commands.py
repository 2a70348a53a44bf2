"""The command registry: every control of a running sample is a command.

Tools register commands with typed arguments and one line of help; the in-game console, the
portal page and the window's keys (``bind``) all run the same command lines, parsed here and
run on the frame thread between frames. A bad command or argument is one line of error text,
never an exception in the frame loop.

    registry = CommandRegistry()
    registry.register("shadows", handler, args=[Choice("on", "off")], help="sun shadows")
    registry.bind("F1", 290, "overlay next")   # the window runs "overlay next" on F1
    registry.execute("shadows off")            # -> Result(ok=True, text="shadows: off")

The portal's server thread calls ``submit(line)`` and waits on the returned
``PendingCommand``; the frame loop calls ``run_pending()`` between frames (one deque check
when nothing is queued).
"""

from __future__ import annotations

import logging
import math
import os
import shlex
import threading
import time
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

log = logging.getLogger("lantern")

QUEUE_LIMIT = 64  # commands waiting for the frame thread; more is an error, never growth


class CommandError(Exception):
    """A handler's one-line error for the user (no traceback is shown)."""


# -- argument types -------------------------------------------------------------------------
class Arg:
    """A typed argument: ``parse(text)`` returns the value or raises ``CommandError``;
    ``choices()`` lists completions. ``optional`` arguments may be left out (None)."""

    metavar = "ARG"

    def __init__(self, *, optional: bool = False):
        self.optional = optional

    def parse(self, text: str):
        return text

    def choices(self) -> Sequence[str]:
        return ()

    def usage(self) -> str:
        return f"[{self.metavar}]" if self.optional else self.metavar

    def argparse_type(self) -> Callable[[str], object]:
        """This type as an ``argparse`` ``type=``: the same check and message, raised as
        ``argparse.ArgumentTypeError``, so the console and the command line say the same."""
        import argparse

        def parse(text: str):
            try:
                return self.parse(text)
            except CommandError as e:
                raise argparse.ArgumentTypeError(str(e)) from None

        parse.__name__ = type(self).__name__.lower()  # argparse names the type in some messages
        return parse


class Text(Arg):
    """Any one word (quote it to include spaces)."""

    def __init__(self, metavar: str = "TEXT", *, optional: bool = False):
        super().__init__(optional=optional)
        self.metavar = metavar


class Choice(Arg):
    """One of fixed words, e.g. ``Choice("on", "off")``; ``on``/``off`` parse to bools when
    ``boolean=True``."""

    def __init__(self, *words: str, optional: bool = False, boolean: bool = False):
        super().__init__(optional=optional)
        self.words = words
        self.boolean = boolean
        self.metavar = "|".join(words)

    def parse(self, text: str):
        if text not in self.words:
            raise CommandError(f"expected one of {', '.join(self.words)}, got {text!r}")
        return text == "on" if self.boolean else text

    def choices(self) -> Sequence[str]:
        return self.words


class Int(Arg):
    """An integer in ``minimum..maximum`` (``maximum`` None: no upper bound; ``1_000`` is
    accepted); ``power_of_two`` also requires a power of two. The one integer type of both
    the console and the command line (``argparse_type``), so both say the same::

        expected an integer from 1 to 16, got 'x'
    """

    def __init__(
        self,
        minimum: int,
        maximum: int | None = None,
        *,
        what: str | None = None,
        metavar: str = "N",
        power_of_two: bool = False,
        optional: bool = False,
    ):
        super().__init__(optional=optional)
        self.minimum, self.maximum, self.metavar = minimum, maximum, metavar
        self.power_of_two = power_of_two
        self.what = what or ("a power of two" if power_of_two else "an integer")

    def parse(self, text: str) -> int:
        try:
            v = int(text)
        except ValueError:
            v = None
        pow2 = v is not None and v > 0 and not v & (v - 1)
        if (
            v is None
            or v < self.minimum
            or (self.maximum is not None and v > self.maximum)
            or (self.power_of_two and not pow2)
        ):
            raise CommandError(f"expected {self.what} {self.bounds()}, got {text!r}")
        return v

    def bounds(self) -> str:
        if self.maximum is None:
            return f">= {self.minimum:,}"
        return f"from {self.minimum:,} to {self.maximum:,}"

    def choices(self) -> Sequence[str]:
        if self.power_of_two and self.maximum is not None:
            return tuple(
                str(1 << i)
                for i in range(self.maximum.bit_length())
                if self.minimum <= 1 << i <= self.maximum
            )
        return ()


class Float(Arg):
    """A finite number in ``minimum..maximum`` (inclusive), e.g. a radius in world units."""

    def __init__(self, minimum: float, maximum: float, *, what: str = "a number",
                 metavar: str = "X", optional: bool = False):  # fmt: skip
        super().__init__(optional=optional)
        self.minimum, self.maximum, self.what, self.metavar = minimum, maximum, what, metavar

    def parse(self, text: str) -> float:
        try:
            v = float(text)
        except ValueError:
            v = math.nan
        if not self.minimum <= v <= self.maximum:  # NaN fails too
            raise CommandError(
                f"expected {self.what} from {self.minimum:g} to {self.maximum:g}, got {text!r}"
            )
        return v


class Switch(Choice):
    """``on`` or ``off``, parsed to a bool: a knob that turns something on."""

    def __init__(self, *, optional: bool = False):
        super().__init__("on", "off", optional=optional, boolean=True)


class PngPath(Arg):
    """A path to a ``.png`` file in an existing folder (not created until written)."""

    metavar = "PATH"

    def parse(self, text: str) -> str:
        if not text.lower().endswith(".png"):
            raise CommandError(f"{text!r} must end in .png")
        folder = os.path.dirname(os.path.abspath(text))
        if not os.path.isdir(folder):
            raise CommandError(f"folder {folder!r} does not exist; create it first")
        if os.path.exists(text) and not os.path.isfile(text):
            raise CommandError(f"{text!r} is not a regular file; choose a file path")
        return text


# -- registry ---------------------------------------------------------------------------------
@dataclass(frozen=True)
class Command:
    name: str
    handler: Callable[..., str | None]
    args: tuple[Arg, ...] = ()
    help: str = ""

    def usage(self) -> str:
        """``name ARG [OPT]``; a run of one repeated optional argument reads ``[WORD ...]``."""
        parts: list[str] = []
        for a in self.args:
            u = a.usage()
            if parts and a.optional and parts[-1] in (u, u[:-1] + " ...]"):
                parts[-1] = u[:-1] + " ...]"
            else:
                parts.append(u)
        return " ".join([self.name, *parts])


@dataclass(frozen=True)
class KeyBinding:
    """A window key and the command line it runs (``help`` lists them beside the commands)."""

    name: str
    key: int
    line: str


@dataclass(frozen=True)
class Result:
    """A command's outcome: ``text`` is its output (one or more lines), or one error line.
    ``later``: the ``Later`` outcome of a command that finishes after a frame (else None)."""

    ok: bool
    text: str
    later: Later | None = field(default=None, compare=False, repr=False)


class Later:
    """A handler's answer known only after a later frame (``capture`` writes the next one):
    return ``Later(text)`` from the handler (``text``: what the console prints at once) and
    call ``finish(ok, text)`` when the outcome is known. ``PendingCommand.wait`` (the
    portal) waits for that outcome."""

    def __init__(self, text: str):
        self.text = text
        self.result: Result | None = None
        self.done = threading.Event()

    def finish(self, ok: bool, text: str) -> None:
        self.result = Result(ok, text)
        self.done.set()


@dataclass
class PendingCommand:
    """A line queued for the frame thread; ``wait`` returns its ``Result`` or None."""

    line: str
    result: Result | None = None
    done: threading.Event = field(default_factory=threading.Event)

    def wait(self, timeout_s: float) -> Result | None:
        """The outcome within ``timeout_s`` (a ``Later`` one included), or None."""
        deadline = time.monotonic() + timeout_s
        if not self.done.wait(timeout_s):
            return None
        later = self.result.later
        if later is None:
            return self.result
        return later.result if later.done.wait(max(0.0, deadline - time.monotonic())) else None


class CommandRegistry:
    """Commands by name, the queue from other threads, and completion.

    ``help`` is registered by the registry itself.
    """

    def __init__(self):
        self.commands: dict[str, Command] = {}
        self.keys: dict[int, KeyBinding] = {}  # window key code -> the command line it runs
        self._queue: deque[PendingCommand] = deque()
        self._lock = threading.Lock()
        # called (from the submitting thread) after a line is queued: wakes a window loop
        # that waits for events while idle (``WindowSurface.wake``)
        self.wake: Callable[[], None] | None = None
        self.register(
            "help", self._help, args=[Text("COMMAND", optional=True)], help="list commands"
        )

    def register(
        self,
        name: str,
        handler: Callable[..., str | None],
        *,
        args: Sequence[Arg] = (),
        help: str = "",
    ) -> Command:
        """Add a command. ``handler(*values)`` gets the parsed arguments (None for an optional
        one left out) and returns output text or None; it may raise ``CommandError``.
        Registering a name again replaces it (a subsystem rebuilt). Raises ValueError for a
        name with whitespace or an optional argument before a required one."""
        if not name or any(c.isspace() for c in name):
            raise ValueError(f"command name {name!r} must be one word")
        opt = [a.optional for a in args]
        if opt != sorted(opt):
            raise ValueError(f"command {name!r}: optional arguments must come last")
        cmd = self.commands[name] = Command(name, handler, tuple(args), help)
        return cmd

    def unregister(self, name: str) -> None:
        """Remove command ``name`` and the keys bound to it (a tool closed); ``help`` is the
        registry's own and stays."""
        if name != "help":
            self.commands.pop(name, None)
            for key in [k for k, b in self.keys.items() if b.line.split()[0] == name]:
                del self.keys[key]

    def bind(self, key_name: str, key: int, line: str) -> None:
        """Make the window's key ``key`` (a glfw key code; ``key_name`` as ``help`` shows it,
        e.g. ``"F1"``) run the command ``line``. Binding a key again replaces it."""
        self.keys[key] = KeyBinding(key_name, key, line)

    def press(self, key: int) -> Result | None:
        """Run the command bound to ``key`` now (frame thread); None when nothing is bound.
        The outcome is logged, so a key's effect shows in the log tail like a typed line's."""
        binding = self.keys.get(key)
        if binding is None:
            return None
        result = self.execute(binding.line)
        if result.text:
            (log.info if result.ok else log.warning)("%s", result.text)
        return result

    def execute(self, line: str) -> Result:
        """Parse and run ``line`` now, on the calling thread (the frame thread). Never raises."""
        try:
            words = shlex.split(line)
        except ValueError as e:
            return Result(False, f"error: {e}")
        if not words:
            return Result(True, "")
        cmd = self.commands.get(words[0])
        if cmd is None:
            return Result(False, f"error: unknown command {words[0]!r}; type help")
        try:
            values = self._parse_args(cmd, words[1:])
            out = cmd.handler(*values)
            if isinstance(out, Later):
                return Result(True, out.text, later=out)
        except CommandError as e:
            return Result(False, f"error: {cmd.name}: {e}")
        except Exception as e:  # a handler's bug: one line here, the traceback in the log
            log.error("command %r failed: %s: %s", line, type(e).__name__, e)
            log.debug("command %r", line, exc_info=True)
            return Result(False, f"error: {cmd.name} failed: {type(e).__name__}: {e}")
        return Result(True, "" if out is None else str(out))

    def _parse_args(self, cmd: Command, words: list[str]) -> list:
        required = sum(not a.optional for a in cmd.args)
        if not required <= len(words) <= len(cmd.args):
            raise CommandError(f"usage: {cmd.usage()}")
        values = []
        for arg, text in zip(cmd.args, words, strict=False):
            try:
                values.append(arg.parse(text))
            except CommandError as e:  # a choice's message already lists its words
                raise CommandError(
                    str(e) if isinstance(arg, Choice) else f"{arg.metavar}: {e}"
                ) from None
        return values + [None] * (len(cmd.args) - len(words))

    # -- queue: other threads -> frame thread ------------------------------------------------
    def submit(self, line: str) -> PendingCommand:
        """Queue ``line`` for ``run_pending`` (thread-safe). A full queue answers at once."""
        pending = PendingCommand(line)
        with self._lock:
            if len(self._queue) >= QUEUE_LIMIT:
                pending.result = Result(False, "error: too many commands queued; try again")
                pending.done.set()
                return pending
            self._queue.append(pending)
        if self.wake is not None:
            self.wake()
        return pending

    @property
    def pending(self) -> bool:
        """Whether lines wait for ``run_pending`` (an idle window loop draws a frame)."""
        return bool(self._queue)

    def run_pending(self) -> int:
        """Run every queued command on the calling (frame) thread; return how many ran."""
        if not self._queue:
            return 0
        n = 0
        while self._queue:
            with self._lock:
                pending = self._queue.popleft()
            pending.result = self.execute(pending.line)
            pending.done.set()
            n += 1
        return n

    # -- completion ----------------------------------------------------------------------------
    def complete(self, line: str) -> tuple[str, list[str]]:
        """TAB: ``(new_line, candidates)``. One candidate completes the word (and a space);
        several extend it to their common prefix and are returned for display."""
        words = line.split(" ")
        head, word = words[:-1], words[-1]
        if not head:
            pool: Sequence[str] = sorted(self.commands)
        else:
            cmd = self.commands.get(head[0])
            pos = len([w for w in head[1:] if w])
            if cmd is None:
                pool = ()
            elif cmd.name == "help":
                pool = sorted(self.commands) if pos == 0 else ()
            else:
                pool = cmd.args[pos].choices() if pos < len(cmd.args) else ()
        hits = [c for c in pool if c.startswith(word)]
        if len(hits) == 1:
            return " ".join([*head, hits[0]]) + " ", hits
        if hits:
            return " ".join([*head, os.path.commonprefix(hits)]), hits
        return line, []

    def _help(self, name: str | None) -> str:
        if name is not None:
            cmd = self.commands.get(name)
            if cmd is None:
                raise CommandError(f"unknown command {name!r}")
            return f"{cmd.usage()}  -- {cmd.help}"
        by_line: dict[str, list[str]] = {}
        for b in self.keys.values():
            by_line.setdefault(b.line.split()[0], []).append(f"{b.name}: {b.line}")
        width = max(len(c.usage()) for c in self.commands.values())
        rows = []
        for name, c in sorted(self.commands.items()):
            keys = by_line.get(name)
            rows.append(
                f"{c.usage():<{width}}  {c.help}" + (f"  [{'; '.join(keys)}]" if keys else "")
            )
        return "\n".join(rows)
