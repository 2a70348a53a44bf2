"""The command line of a sample: the shared flags, the HUD's, each tool's own and the
sample's, with one-line errors for bad values (``engine.options``)."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from engine.hud.service import Hud
from engine.options import ArgumentParser, non_negative_int, positive_int, size_type
from engine.tool import Key, ToolSpec
from engine.tools import DEFAULT_TOOLS

#: Keys of every window run that no tool declares: (key, what it does).
BASE_KEYS = (
    Key("F1", 290, "overlay next", "next HUD mode ({modes})"),
    Key("Esc", 256, "", "quit (the shutdown reports are printed)"),
)


def _key_order(k: Key) -> tuple:
    """Function keys by number, then the others, Esc last."""
    f = k.name[1:].isdigit() and k.name.startswith("F")
    return (not f, k.name == "Esc", int(k.name[1:]) if f else 0)


def keys_epilog(keys: Sequence[Key], modes: Sequence[str]) -> str:
    """The ``--help`` epilog: one line per listed window key."""
    listed = sorted((k for k in keys if k.help), key=_key_order)
    rows = (f"  {k.name:<4} {k.help.format(modes=', '.join(modes))}" for k in listed)
    return "keys (window; 'help' in the console lists the commands they run):\n" + "\n".join(rows)


def build_parser(
    prog: str,
    description: str,
    tools: Sequence[type] = DEFAULT_TOOLS,
    sample_keys: Sequence[Key] = (),
) -> ArgumentParser:
    """The shared flags, the HUD's (``--overlay``'s choices: the tools' panels' modes), then
    each tool's ``add_arguments`` in order; ``--help`` lists the window keys of the HUD, the
    tools and the sample."""
    specs = [ToolSpec.of(t) for t in tools]
    modes = Hud.for_tools(tools).modes
    keys = (BASE_KEYS[0], *(k for s in specs for k in s.keys), *sample_keys, BASE_KEYS[1])
    p = ArgumentParser(
        prog=prog,
        description=description,
        epilog=keys_epilog(keys, modes),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    g = p.add_argument_group("Lantern options (every sample)")
    g.add_argument(
        "--capture",
        metavar="PATH",
        help="render headless (no window) and write the last frame to this PNG file",
    )
    g.add_argument(
        "--frames",
        type=positive_int,
        metavar="N",
        help="frames to render (default: 60 with --capture, unlimited in a window)",
    )
    g.add_argument("--size", type=size_type, default=(1280, 720), metavar="WxH",
                   help="output size in pixels (default 1280x720)")  # fmt: skip
    g.add_argument(
        "--graph",
        nargs="?",
        const="-",
        metavar="PATH",
        help="print the frame's passes and their resource edges and exit; with PATH (.dot) "
        "also write a Graphviz file",
    )
    g.add_argument(
        "--adapter",
        metavar="NAME",
        help="pick the GPU adapter whose name contains NAME "
        "(default: $WGPUPY_WGPU_ADAPTER_NAME, else high-performance)",
    )
    g.add_argument("--no-vsync", action="store_true", help="present without waiting for vsync")
    g.add_argument("--seed", type=non_negative_int, default=0, metavar="N",
                   help="random seed for procedural content (default 0)")  # fmt: skip
    Hud.add_arguments(p, modes)
    for s in specs:
        s.add_arguments(p)
    return p


def fail(prog: str, message: str, status: int = 2) -> int:
    """Print the one-line error for a problem found after parsing; return the exit status."""
    print(f"{prog}: error: {message}", file=sys.stderr)
    return status
