"""Consumers of the record stream that write it out: the shutdown report (``report``), the
Chrome trace (``trace``) and the JSON Lines file (``jsonl``), each a small module over the
telemetry, composed by ``ExportTool``."""

from __future__ import annotations

from engine.options import OptionError, check_output
from engine.tools.export.jsonl import TelemetryWriter
from engine.tools.export.report import ShutdownReport
from engine.tools.export.trace import TraceWriter


class ExportTool:
    """``--telemetry PATH`` (JSON Lines as the run goes), ``--trace PATH`` (a Chrome trace at
    shutdown) and the shutdown timelines printed first at close."""

    name = "export"

    @classmethod
    def add_arguments(cls, parser) -> None:
        g = parser.add_argument_group("export")
        g.add_argument(
            "--trace",
            metavar="PATH",
            help="write a Chrome trace (Perfetto) JSON file at shutdown; implies --profile",
        )
        g.add_argument(
            "--telemetry",
            metavar="PATH",
            help="write one JSON Lines record per finished frame to PATH (.jsonl): a session "
            "line, scope names once, then frames",
        )

    @classmethod
    def check_options(cls, args) -> None:
        """Both paths writable before any GPU work; a trace needs the CPU scopes.

        Raises:
            OptionError: an unwritable path, one line.
        """
        check_output("--trace", args.trace, ".json")
        check_output("--telemetry", args.telemetry, ".jsonl")
        if getattr(args, "graph", None) is not None and args.trace:  # no frame: an empty
            raise OptionError(  # trace would replace the file
                "argument --graph: it prints the frame's passes and exits; drop --trace"
            )
        if args.trace:
            args.profile = True

    @classmethod
    def files(cls, args) -> list[tuple[str, str]]:
        return [("--trace", args.trace), ("--telemetry", args.telemetry)]

    def __init__(self):
        self.parts = (TelemetryWriter(), TraceWriter(), ShutdownReport())

    def install(self, ctx) -> None:
        self.ctx = ctx
        for part in self.parts:
            part.install(ctx)

    def close(self) -> None:
        """The report first, then the trace, then the telemetry file (the reverse order),
        each whatever befell the one before (stdout closed early, ``| head``: the files are
        still written); the first failure is raised after, and the run's status is 1.
        """
        failed = None
        for part in reversed(self.parts):
            try:
                part.close()
            except Exception as e:  # (ToolContext.close_all logs it)
                failed = failed or e
        if failed is not None:
            self.ctx.status = 1
            raise failed


__all__ = ["ExportTool", "OptionError", "ShutdownReport", "TelemetryWriter", "TraceWriter"]
