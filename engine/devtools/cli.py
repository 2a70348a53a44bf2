"""``lantern SUBCOMMAND ...``: the developer tools as one console command after any install.

    lantern ablate SHADER.wgsl --entry NAME ...   WGSL statement cost (engine/devtools/ablate.py)
    lantern bench [SECTION] [--quick]             benchmarks that print figures
    lantern compare ...                           compare two runs (engine/devtools/compare.py)
    lantern inspect [FILE] ...                    the frame inspector (python -m samples.s14)
    lantern rdc CAPTURE.rdc [--telemetry RUN.jsonl]  a RenderDoc capture, replayed by RenderDoc

Each subcommand is a row of :data:`COMMANDS`: a module with ``main(argv, prog) -> int``. A
module that is not there (a tool still to come) is one line and exit status 2.
"""

from __future__ import annotations

import importlib
import sys

from engine.options import stdout_closed

#: subcommand -> (module with ``main(argv, prog)``, one-line summary)
COMMANDS: dict[str, tuple[str, str]] = {
    "ablate": ("engine.devtools.ablate", "WGSL statement cost by ablation"),
    "bench": ("engine.devtools.bench", "benchmarks: print figures, never pass or fail"),
    "compare": ("engine.devtools.compare", "compare two runs' telemetry"),
    "inspect": ("engine.devtools.inspect", "the frame inspector: flame chart of a trace"),
    "rdc": ("engine.tools.renderdoc.rdc", "a RenderDoc capture through RenderDoc's replay"),
}


def usage() -> str:
    rows = "\n".join(f"  {name:<8} {summary}" for name, (_, summary) in COMMANDS.items())
    return (
        "usage: lantern SUBCOMMAND [--help] ...\n\nLantern's developer tools:\n"
        f"{rows}\n\n'lantern SUBCOMMAND --help' describes each."
    )


def main(argv: list[str] | None = None) -> int:
    """Dispatch ``argv`` (default ``sys.argv[1:]``) to a subcommand; return its exit status."""
    argv = sys.argv[1:] if argv is None else list(argv)
    if not argv or argv[0] in ("-h", "--help"):
        print(usage())
        return 0 if argv else 2
    name, rest = argv[0], argv[1:]
    if name not in COMMANDS:
        print(
            f"lantern: error: unknown subcommand {name!r}; choose from {', '.join(COMMANDS)}",
            file=sys.stderr,
        )
        return 2
    module = COMMANDS[name][0]
    try:
        mod = importlib.import_module(module)
    except ModuleNotFoundError as e:
        if e.name != module:
            raise
        print(f"lantern: error: '{name}' is not available in this version ({module} is missing)",
              file=sys.stderr)  # fmt: skip
        return 2
    try:
        return mod.main(rest, prog=f"lantern {name}")
    except BrokenPipeError:  # its reader went away (| head): no traceback
        return stdout_closed()


if __name__ == "__main__":
    sys.exit(main())
