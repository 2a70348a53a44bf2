"""One command registry for both consoles (the in-game HUD console and the portal page).

Subsystems register commands with typed arguments and one line of help; a command line is
parsed against them and run on the frame thread between frames. A bad command or argument
is one line of error text, never an exception in the frame loop.

    registry = CommandRegistry()
    registry.register("shadows", handler, args=[Choice("on", "off")], help="sun shadows")
    registry.execute("shadows off")        # -> Result(ok=True, text="shadows: off")

The portal's server thread calls ``submit(line)`` and waits on the returned
``PendingCommand``; the frame loop calls ``run_pending()`` between frames (one deque check
when nothing is queued). ``Console`` is the in-game console's state machine and drawing.
"""

from __future__ import annotations

import logging
import os
import shlex
import threading
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from .logtail import ERROR
from .overlay import DebugOverlay
from .perf import DIM, HEADER, PANEL_BG, TEXT

log = logging.getLogger("lantern")

QUEUE_LIMIT = 64  # commands waiting for the frame thread; more is an error, never growth
KEY_GRAVE, KEY_WORLD_1 = 96, 161  # glfw: backtick, and the key left of 1 on ISO layouts
KEY_ESCAPE, KEY_ENTER, KEY_TAB, KEY_BACKSPACE = 256, 257, 258, 259
KEY_RIGHT, KEY_LEFT, KEY_DOWN, KEY_UP, KEY_KP_ENTER = 262, 263, 264, 265, 335
TOGGLE_KEYS = (KEY_GRAVE, KEY_WORLD_1)


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
    """An integer in ``minimum..maximum``; ``power_of_two`` also requires a power of two."""

    def __init__(
        self,
        minimum: int,
        maximum: int,
        *,
        metavar: str = "N",
        power_of_two: bool = False,
        optional: bool = False,
    ):
        super().__init__(optional=optional)
        self.minimum, self.maximum, self.metavar = minimum, maximum, metavar
        self.power_of_two = power_of_two

    def parse(self, text: str) -> int:
        try:
            v = int(text)
        except ValueError:
            v = None
        pow2 = v is not None and v > 0 and not v & (v - 1)
        if v is None or not self.minimum <= v <= self.maximum or (self.power_of_two and not pow2):
            kind = "a power of two" if self.power_of_two else "an integer"
            raise CommandError(
                f"expected {kind} from {self.minimum} to {self.maximum}, got {text!r}"
            )
        return v

    def choices(self) -> Sequence[str]:
        if self.power_of_two:
            return tuple(
                str(1 << i)
                for i in range(self.maximum.bit_length())
                if self.minimum <= 1 << i <= self.maximum
            )
        return ()


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
        return " ".join([self.name, *(a.usage() for a in self.args)])


@dataclass(frozen=True)
class Result:
    """A command's outcome: ``text`` is its output (one or more lines), or one error line."""

    ok: bool
    text: str


@dataclass
class PendingCommand:
    """A line queued for the frame thread; ``wait`` returns its ``Result`` or None."""

    line: str
    result: Result | None = None
    done: threading.Event = field(default_factory=threading.Event)

    def wait(self, timeout_s: float) -> Result | None:
        return self.result if self.done.wait(timeout_s) else None


class CommandRegistry:
    """Commands by name, the queue from other threads, and completion.

    ``help`` is registered by the registry itself.
    """

    def __init__(self):
        self.commands: dict[str, Command] = {}
        self._queue: deque[PendingCommand] = deque()
        self._lock = threading.Lock()
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
        return pending

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
        width = max(len(c.usage()) for c in self.commands.values())
        return "\n".join(
            f"{c.usage():<{width}}  {c.help}" for _, c in sorted(self.commands.items())
        )


# -- the standard commands --------------------------------------------------------------------
def register_app_commands(registry: CommandRegistry, app) -> None:
    """``overlay``, ``profile``, ``capture`` and ``stats``, against the app's small interface:
    ``app.hud.set_mode(mode)``, ``app.set_profiling(gpu=, cpu=)``, ``app.request_capture(path)``
    and ``app.telemetry.reset_stats()``. A missing piece is an error line when used."""
    from ..cli import OVERLAY_MODES

    def overlay(mode: str) -> str:
        hud = getattr(app, "hud", None)
        if hud is None:
            raise CommandError("no HUD in this run")
        hud.set_mode(mode)
        app.overlay_mode = mode  # F1 cycles on from here
        return f"overlay: {mode}"

    def profile(which: str, on: bool) -> str:
        if not hasattr(app, "set_profiling"):
            raise CommandError("profiling cannot be switched at run time in this build")
        out = app.set_profiling(**{which: on})
        return out if isinstance(out, str) else f"profile {which}: {'on' if on else 'off'}"

    def capture(path: str) -> str:
        if not hasattr(app, "request_capture"):
            raise CommandError("capture is not available in this build")
        app.request_capture(path)
        return f"capture: the next frame goes to {path}"

    def stats(_: str) -> str:
        app.telemetry.reset_stats()
        return "stats: window reset"

    registry.register(
        "overlay", overlay, args=[Choice(*OVERLAY_MODES)], help="HUD mode (F1 cycles)"
    )
    registry.register(
        "profile",
        profile,
        args=[Choice("gpu", "cpu", "draws"), Choice("on", "off", boolean=True)],
        help="switch GPU timestamp / CPU scope / per-draw GPU timing",
    )
    registry.register("capture", capture, args=[PngPath()], help="write the next frame as PNG")
    registry.register("stats", stats, args=[Choice("reset")], help="forget mean/median/max")


def register_frame_commands(registry: CommandRegistry, frame, *, freeze=None) -> None:
    """``cull freeze``, ``shadows``, ``shadow-size`` against an ``engine.frame.StandardFrame``
    (``freeze_culling(frozen)``, ``set_settings(shadows=, shadow_size=)``). ``freeze(on)``:
    the sample's own freeze (s13 also starts its fly camera, as F2 does); it returns the
    output line."""

    def cull(_: str, on: bool | None) -> str:
        if freeze is not None:
            return freeze(on)
        frozen = frame.freeze_culling(on)
        return f"culling camera {'frozen' if frozen else 'released'}"

    def shadows(on: bool) -> str:
        frame.set_settings(shadows=on)
        return f"shadows: {'on' if on else 'off'}"

    def shadow_size(n: int) -> str:
        frame.set_settings(shadow_size=n)
        return f"shadow map: {n}x{n}"

    registry.register(
        "cull",
        cull,
        args=[Choice("freeze"), Choice("on", "off", boolean=True, optional=True)],
        help="freeze the culling camera (no argument toggles)",
    )
    registry.register(
        "shadows", shadows, args=[Choice("on", "off", boolean=True)], help="sun shadow map"
    )
    registry.register(
        "shadow-size",
        shadow_size,
        args=[Int(256, 8192, power_of_two=True)],
        help="shadow map size in texels",
    )


# -- the in-game console ------------------------------------------------------------------------
class Console:
    """The HUD console's state machine: open/close with the backtick key (or the key left of 1
    on ISO layouts), typed characters from glfw's char callback, history, TAB completion.

    Feed it ``on_key(key)`` for every key press/repeat (glfw key codes) and ``on_char(ch)``
    for every character; both run on the frame thread (glfw callbacks during ``poll``), so
    a command runs between frames. ``draw(ov, col, row, w, h)`` draws it into a HUD box.

    Attributes:
        is_open: whether the console takes the keyboard.
        line: the text being typed. ``output``: ``(text, colour)`` lines, newest last.
    """

    PROMPT = "> "

    def __init__(self, registry: CommandRegistry, *, history: int = 100, lines: int = 200):
        self.registry = registry
        self.is_open = False
        self.line = ""
        self.history: deque[str] = deque(maxlen=history)
        self.output: deque[tuple[str, tuple]] = deque(maxlen=lines)
        self.version = 0  # bumped on every visible change (the HUD redraws when it differs)
        self._browse: int | None = None  # index into history while browsing with up/down
        self._skip_char = False  # the toggle key's own character must not be typed

    def _changed(self) -> None:
        self.version += 1

    def print(self, text: str, color=TEXT) -> None:
        for part in text.splitlines() or [""]:
            self.output.append((part, color))
        self._changed()

    def on_key(self, key: int, *, repeat: bool = False) -> bool:
        """A key went down (``repeat``: is held and repeats); return True if consumed."""
        self._skip_char = False
        if key in TOGGLE_KEYS:
            if not repeat:  # holding the key does not flicker the console
                self.is_open = not self.is_open
                self._changed()
            self._skip_char = True
            return True
        if not self.is_open:
            return False
        if key == KEY_ESCAPE:
            self.is_open = False
        elif key in (KEY_ENTER, KEY_KP_ENTER):
            self.submit()
        elif key == KEY_BACKSPACE:
            self.line = self.line[:-1]
        elif key == KEY_TAB:
            self.line, hits = self.registry.complete(self.line)
            if len(hits) > 1:
                self.print("  ".join(hits), DIM)
        elif key in (KEY_UP, KEY_DOWN):
            self._walk_history(-1 if key == KEY_UP else 1)
        self._changed()
        return True  # every key while open: the game does not see typing

    def on_char(self, ch: str) -> bool:
        """A typed character (any keyboard layout); return True if consumed."""
        if self._skip_char:
            self._skip_char = False
            return True
        if not self.is_open:
            return False
        if ch.isprintable():
            self.line += ch
            self._browse = None
            self._changed()
        return True

    def _walk_history(self, step: int) -> None:
        if not self.history:
            return
        i = len(self.history) if self._browse is None else self._browse
        i = min(max(i + step, 0), len(self.history))
        self._browse = i
        self.line = self.history[i] if i < len(self.history) else ""

    def submit(self) -> None:
        """Run the typed line (Enter), print it and its result."""
        line, self.line, self._browse = self.line.strip(), "", None
        if not line:
            return
        if not self.history or self.history[-1] != line:
            self.history.append(line)
        self.print(self.PROMPT + line, HEADER)
        result = self.registry.execute(line)
        if result.text:
            self.print(result.text, TEXT if result.ok else ERROR)

    def draw(self, ov: DebugOverlay, col: int, row: int, w: int, h: int) -> None:
        """Draw the console into the ``w x h``-cell box at ``(col, row)``: a title row, the
        newest output lines (wrapped, bottom-aligned), the prompt on the last row with a block
        cursor. Nothing when closed."""
        if not self.is_open or w < 4 or h < 2:
            return
        ov.fill(col, row, w, h, PANEL_BG)
        ov.text(col + 1, row, "Console  (` closes, TAB completes)"[: w - 2], DIM)
        n, width = h - 2, w - 2
        lines = []  # the newest n rows, long lines wrapped at the panel's width
        for text, color in reversed(self.output):
            if len(lines) >= n:
                break
            parts = [text[i : i + width] for i in range(0, len(text), width)] or [""]
            lines[:0] = [(p, color) for p in parts]
        lines = lines[-n:] if n > 0 else []
        top = row + h - 1 - len(lines)  # newest right above the prompt, as in a terminal
        for i, (text, color) in enumerate(lines):
            ov.text(col + 1, top + i, text, color)
        prompt = self.PROMPT + self.line
        visible = prompt[-(w - 3) :]  # keep the end of a long line in view
        n = ov.text(col + 1, row + h - 1, visible, TEXT)
        ov.text(col + 1 + n, row + h - 1, " ", TEXT, HEADER)  # block cursor


def install(app) -> Console:
    """Create ``app.commands`` (a ``CommandRegistry`` with the app's commands; an existing one
    is kept), ``app.log_tail`` (see ``engine.debug.logtail``) and ``app.console``; drain the
    command queue between frames (``app.loop.between_frames``); route the window's keys and
    characters to the console when there is a window. Returns the console."""
    from .logtail import install_log_tail

    registry = getattr(app, "commands", None) or CommandRegistry()
    register_app_commands(registry, app)
    app.commands = registry
    if getattr(app, "log_tail", None) is None:
        app.log_tail = install_log_tail()
    app.console = Console(registry)
    loop = getattr(app, "loop", None)  # engine.loop.FrameLoop: commands run between frames
    if loop is not None and registry.run_pending not in loop.between_frames:
        loop.between_frames.append(registry.run_pending)
    window = getattr(app, "window", None)
    if window is not None and hasattr(window, "text_input"):
        window.text_input = app.console
    return app.console
