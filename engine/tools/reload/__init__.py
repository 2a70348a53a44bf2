"""The reload tool: WGSL watched and pipelines rebuilt between frames (F5, ``reload``,
``--hot-reload``), each reloaded pass's cost before and after, and ``--baseline`` beside
each pass: three parts of one package (``watch``, ``cost``), wired here."""

from __future__ import annotations

from engine.options import OptionError
from engine.telemetry.compare import CompareError, load_run
from engine.tool import Key
from engine.tools.reload.cost import BaselineCompare, CostTracker
from engine.tools.reload.watch import KEY_F5, HotReload


class ReloadTool:
    """``HotReload``, its ``CostTracker`` and the ``BaselineCompare`` of ``--baseline``.

    Attributes:
        watch, cost, baseline: the three parts (``baseline`` is off without the flag).
    """

    name = "reload"
    keys = (Key("F5", KEY_F5, "reload", "reload the shaders"),)

    @classmethod
    def add_arguments(cls, parser) -> None:
        g = parser.add_argument_group("hot reload")
        g.add_argument(
            "--hot-reload",
            action="store_true",
            help="watch the WGSL files and rebuild changed pipelines between frames (on by "
            "default in a window; this turns it on in captures)",
        )
        g.add_argument(
            "--baseline",
            metavar="A.jsonl",
            help="a --telemetry file of an earlier run: the perf table shows its median beside "
            "each pass, marked when the difference is significant",
        )

    @classmethod
    def check_options(cls, args) -> None:
        """A bad ``--baseline`` file is one line before any GPU work."""
        if args.baseline:
            try:
                load_run(args.baseline)
            except CompareError as e:
                raise OptionError(f"argument --baseline: {e}") from None

    @classmethod
    def inputs(cls, args) -> list[tuple[str, str]]:
        return [("--baseline", args.baseline)] if args.baseline else []

    def __init__(self, *, watch: HotReload | None = None):
        self.watch = watch or HotReload()
        self.cost = CostTracker(self.watch)
        self.baseline = BaselineCompare()

    def install(self, ctx) -> None:
        for part in (self.watch, self.cost, self.baseline):
            part.install(ctx)

    def close(self) -> None:
        for part in (self.baseline, self.cost, self.watch):
            part.close()
