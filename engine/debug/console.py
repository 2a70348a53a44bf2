"""The in-game console: ``Console`` (state machine and drawing), its HUD panel and the
``ConsoleTool`` that installs it; the commands it runs are ``engine.commands``'s registry,
shared with the portal page and the window's keys.
"""

from __future__ import annotations

import logging
from collections import deque

from engine.commands import Choice, CommandError, CommandRegistry, Int
from engine.debug.logtail import ERROR
from engine.debug.perf import DIM, HEADER, PANEL_BG, TEXT
from engine.overlay.grid import DebugOverlay
from engine.overlay.panel import HudData, Panel
from engine.settings import SHADOW_SIZES

log = logging.getLogger("lantern")

KEY_GRAVE, KEY_WORLD_1 = 96, 161  # glfw: backtick, and the key left of 1 on ISO layouts
KEY_ESCAPE, KEY_ENTER, KEY_TAB, KEY_BACKSPACE = 256, 257, 258, 259
KEY_RIGHT, KEY_LEFT, KEY_DOWN, KEY_UP, KEY_KP_ENTER = 262, 263, 264, 265, 335
TOGGLE_KEYS = (KEY_GRAVE, KEY_WORLD_1)


# -- the standard frame's commands --------------------------------------------------------
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

    def shadow_size(n: int, confirm: str | None) -> str:
        mib = shadow_map_mib(n)
        if mib > SHADOW_CONFIRM_MIB and confirm is None:  # the cost first, then the deed
            raise CommandError(
                f"{n}x{n} is a {mib:g} MiB shadow map (depth32float), {(n / 2048) ** 2:g}x "
                f"the texels of the default 2048 to render every frame; type "
                f"'shadow-size {n} confirm' to do it"
            )
        frame.set_settings(shadow_size=n)
        return f"shadow map: {n}x{n} ({mib:g} MiB)"

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
        args=[Int(*SHADOW_SIZES, power_of_two=True), Choice("confirm", optional=True)],
        help=f"shadow map size in texels (over {SHADOW_CONFIRM_MIB} MiB: add confirm)",
    )


SHADOW_CONFIRM_MIB = 64  # a shadow map larger than this (8192: 256 MiB) needs "confirm"


def shadow_map_mib(n: int) -> float:
    """MiB of an ``n x n`` depth32float shadow map (4 bytes a texel)."""
    return n * n * 4 / 2**20


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

    def set_open(self, on: bool | None) -> str:
        """Open (True), close (False) or toggle (None) the console; returns the state."""
        self.is_open = (not self.is_open) if on is None else on
        self._changed()
        return f"console: {'open' if self.is_open else 'closed'}"

    def on_key(self, key: int, *, repeat: bool = False) -> bool:
        """A key went down (``repeat``: is held and repeats); return True if consumed."""
        self._skip_char = False
        if key in TOGGLE_KEYS:
            if not repeat:  # holding the key does not flicker the console
                binding = self.registry.keys.get(key)  # the bound command: `console`
                if binding is not None:
                    self.registry.execute(binding.line)
                else:
                    self.set_open(None)
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


class ConsolePanel(Panel):
    """The in-game console across the bottom of the HUD while it is open, in every mode
    (``off`` too)."""

    key, anchor, always, in_all = "console", "bottom", True, False
    H = 8

    def __init__(self, console: Console):
        self.console = console
        self._version = -1

    def has_content(self, data: HudData) -> bool:
        return self.console.is_open

    def tick(self, data: HudData) -> bool:
        """True when the console changed (opened, closed, typed into): the HUD redraws."""
        changed, self._version = self.console.version != self._version, self.console.version
        return changed

    def sizes(self, data: HudData) -> tuple[tuple[int, int], ...]:
        return (0, self.H), (0, 4)  # width 0: the whole width

    def draw(self, ov: DebugOverlay, col: int, row: int, form: int, data: HudData) -> None:
        h = self.sizes(data)[form][1]
        self.console.draw(ov, col, row, self.width, h)


class ConsoleTool:
    """The in-game console as a tool: it draws through the HUD (a ``ConsolePanel`` shown in
    every mode while open) and, in a window, takes the keyboard's keys and characters
    (``window.text_input``) while open; the backtick (or the key left of 1) opens it. The
    commands it runs are the shared ``ctx.commands``, run between frames like the portal's."""

    name = "console"

    def __init__(self):
        self.console: Console | None = None
        self._window = None

    def install(self, ctx) -> None:
        from engine.debug.hud import Hud

        self.console = Console(ctx.commands)
        ctx.tool(Hud).add_panel(ConsolePanel(self.console))
        ctx.commands.register(
            "console",
            lambda what: self.console.set_open(None if what is None else what == "open"),
            args=[Choice("open", "close", optional=True)],
            help="the in-game console (no argument toggles)",
        )
        for name, key in (("`", KEY_GRAVE), ("key left of 1", KEY_WORLD_1)):
            ctx.commands.bind(name, key, "console")
        window = ctx.window
        if window is not None and hasattr(window, "text_input"):
            window.text_input = self.console
            self._window = window

    def close(self) -> None:
        if self._window is not None and self._window.text_input is self.console:
            self._window.text_input = None
