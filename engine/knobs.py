"""Knobs, declared once: a knob's settings field, its command-line flag and its console (and
portal) command all come from one ``Knob``.

    BLOOM = Knob("bloom", Switch(), True, "energy-conserving bloom (Post.Bloom)")
    # -> FrameSettings.bloom, --no-bloom, "bloom on|off" in the console and the portal

A switch that defaults to on gets ``--no-NAME``, one that defaults to off ``--NAME``; any other
knob ``--NAME VALUE``, parsed by the same ``engine.commands.Arg`` as its command, so both say
the same for a bad value. The standard frame declares its knobs in ``engine.settings``
(``FRAME_KNOBS``); a sample adds its own with ``StandardFrame.add_knob`` and declares them for
the command line with ``Sample.knobs``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from engine.commands import Arg, Choice, CommandError, CommandRegistry, Switch


@dataclass(frozen=True)
class Knob:
    """One knob.

    Attributes:
        name: the command (``"shadow-size"``) and the flag's stem.
        arg: parses a value from text, for the command and the flag alike.
        default: the value when the flag is not given.
        help: one line for ``--help`` and the console's ``help`` (a switch's: a noun phrase,
            its ``--no-NAME`` flag reads "no " before it).
        field: the settings attribute it sets (default: ``name`` with ``-`` as ``_``).
        command: the console command when it differs from ``name`` (``cull`` is taken by
            ``cull freeze``: its knob's command is ``culling``).
        describe: the command's output for a value (default: ``on``/``off`` or the value).
        confirm: for a value with a cost worth a second thought, ``confirm(value, knob)``
            (``knob(attr)``: another knob's current value, for a cost that depends on it) gives
            the one-line reason to refuse it unless the command is given ``confirm`` too (None
            from it, or no ``confirm``: no question).
        confirm_help: what the command's help adds about ``confirm``.
    """

    name: str
    arg: Arg
    default: Any
    help: str
    field: str = ""
    command: str = ""
    describe: Callable[[Any], str] | None = None
    confirm: Callable[[Any, Callable[[str], Any]], str | None] | None = None
    confirm_help: str = ""

    @property
    def attr(self) -> str:
        """The settings field (and the parsed command line's ``dest``)."""
        return self.field or self.name.replace("-", "_")

    @property
    def switch(self) -> bool:
        return isinstance(self.arg, Switch)

    @property
    def flag(self) -> str:
        """``--no-NAME`` (a switch that defaults to on), ``--NAME`` otherwise."""
        return f"--no-{self.name}" if self.switch and self.default else f"--{self.name}"

    def text(self, value) -> str:
        """``NAME: VALUE`` as the command says it."""
        if self.describe is not None:
            return self.describe(value)
        shown = ("on" if value else "off") if self.switch else f"{value}"
        return f"{self.name}: {shown}"

    def add_argument(self, group) -> None:
        """Add the knob's flag to an ``argparse`` parser or group (``dest`` = ``attr``)."""
        if self.switch:
            action = "store_false" if self.default else "store_true"
            group.add_argument(self.flag, dest=self.attr, action=action, default=self.default,
                               help=("no " if self.default else "") + self.help)  # fmt: skip
            return
        bounds = getattr(self.arg, "bounds", None)  # an Int's range, said on the flag too
        detail = f", {self.arg.what} {bounds()}" if bounds is not None else ""
        group.add_argument(
            self.flag,
            dest=self.attr,
            type=self.arg.argparse_type(),
            default=self.default,
            metavar=self.arg.metavar,
            help=f"{self.help}{detail} (default {self.default})",
        )

    def register(self, commands: CommandRegistry, get: Callable[[], Any],
                 apply: Callable[[Any], None],
                 knob: Callable[[str], Any] | None = None) -> None:  # fmt: skip
        """Register ``NAME VALUE`` (``NAME VALUE [confirm]`` for a knob that asks): apply the
        value and say it. ``get()`` reads the current value (the knobs' listing); ``knob(attr)``
        another knob's, for ``confirm`` (default: None for every knob)."""
        args = [self.arg] + ([Choice("confirm", optional=True)] if self.confirm else [])
        others = knob or (lambda attr: None)

        def run(value, confirmed=None) -> str:
            why = None if self.confirm is None or confirmed else self.confirm(value, others)
            if why is not None:
                raise CommandError(why)
            try:
                apply(value)
            except ValueError as e:  # the settings refuse a combination: one line
                raise CommandError(str(e)) from None
            return self.text(value)

        about = f"{self.help} ({self.confirm_help})" if self.confirm_help else self.help
        commands.register(self.command or self.name, run, args=args, help=about)


def add_knob_arguments(parser, knobs: Sequence[Knob], title: str) -> None:
    """Each knob's flag, in one ``--help`` group."""
    group = parser.add_argument_group(title)
    for k in knobs:
        k.add_argument(group)


def values_from_args(args, knobs: Sequence[Knob]) -> dict[str, Any]:
    """``{attr: value}`` of each knob from the parsed command line (its default where the
    parser had no such flag: a test's namespace, another front end)."""
    return {k.attr: getattr(args, k.attr, k.default) for k in knobs}
