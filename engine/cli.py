"""The command line every sample shares (argparse), with one-line errors for bad values."""

from __future__ import annotations

import argparse
import re
import sys

from .commands import Int
from .safe_write import output_problem

GPU_PROFILE_MODES = ("passes", "draws")  # --gpu-profile [passes|draws]; plain: "passes"
#: The window's keys, listed by --help: (key, what it does).
WINDOW_KEYS = (
    ("F1", "next HUD mode ({modes})"),
    ("F2", "freeze the culling camera and fly with W/A/S/D/Q/E (s13)"),
    ("F3", "next debug view"),
    ("F5", "reload the shaders"),
    ("`", "open / close the console (the key left of 1)"),
    ("F12", "capture the next frame in RenderDoc (with --renderdoc, or under RenderDoc)"),
    ("Esc", "quit (the shutdown reports are printed)"),
)  # F12: issue 27 wiring (RenderDocTool.keys; issue 25 lists the tools' keys)


def keys_epilog() -> str:
    """The ``--help`` epilog: one line per window key."""
    from .debug.hud import modes

    rows = (f"  {k:<4} {what.format(modes=', '.join(modes()))}" for k, what in WINDOW_KEYS)
    return "keys (window; 'help' in the console lists the commands they run):\n" + "\n".join(rows)


def split_optional_value(args: list[str], option: str, choices: tuple[str, ...]) -> list[str]:
    """``option`` takes an optional value only when the next word is one of ``choices``:
    ``--gpu-profile t.json`` is ``--gpu-profile`` and the positional ``t.json`` (argparse would
    take ``t.json`` as the value); ``--gpu-profile draws`` and ``--gpu-profile=draws`` keep it."""
    out = list(args)
    for i, a in enumerate(out[:-1]):
        nxt = out[i + 1]
        if a == option and nxt not in choices and not nxt.startswith("-"):
            out[i] = f"{option}={choices[0]}"
    return out


class ArgumentParser(argparse.ArgumentParser):
    """argparse with a single-line error (no usage block) and exit status 2; an unknown
    ``WGPU_BACKEND_TYPE`` is a bad value too, reported like a bad option."""

    def error(self, message: str):  # noqa: D401 - argparse API
        self.exit(2, f"{self.prog}: error: {message}\n")

    def parse_known_args(self, args=None, namespace=None):
        args = sys.argv[1:] if args is None else list(args)
        if any(not a.option_strings for a in self._actions):  # else a typo reads "invalid choice"
            args = split_optional_value(args, "--gpu-profile", GPU_PROFILE_MODES)
        result = super().parse_known_args(args, namespace)
        from .gpu import GpuError, check_backend_env  # imports wgpu: only once parsed

        try:
            check_backend_env()
        except GpuError as e:
            self.error(str(e))
        return result


def size_type(text: str) -> tuple[int, int]:
    """``WxH`` in pixels, each 1..16384."""
    m = re.fullmatch(r"\s*([0-9]+)\s*[xX]\s*([0-9]+)\s*", text)
    if not m:
        raise argparse.ArgumentTypeError(f"expected WxH in pixels (e.g. 1280x720), got {text!r}")
    w, h = int(m.group(1)), int(m.group(2))
    if not (1 <= w <= 16384 and 1 <= h <= 16384):
        raise argparse.ArgumentTypeError(f"width and height must be 1..16384 pixels, got {text!r}")
    return w, h


def int_type(minimum: int, maximum: int | None = None, what: str = "an integer"):
    """An argparse ``type=``: an integer in ``minimum..maximum`` (inclusive; ``1_000`` is
    accepted), else a one-line error such as ``expected an integer from 1 to 16, got 'x'``
    (``engine.commands.Int``, the console's integer type, checks it)."""
    return Int(minimum, maximum, what=what).argparse_type()


positive_int = int_type(1, what="a positive integer")
budget_type = int_type(1, 1 << 20, "a budget in MiB")
non_negative_int = int_type(0)
hud_scale_type = int_type(1, 16, "an integer HUD scale")
port_type = int_type(0, 65535, "a TCP port (0 = any free port)")


def build_parser(prog: str, description: str) -> ArgumentParser:
    from .debug.hud import modes  # the registered HUD panels' modes: no second list

    overlay_modes = modes()
    p = ArgumentParser(
        prog=prog,
        description=description,
        epilog=keys_epilog(),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    g = p.add_argument_group("Lantern options (every sample)")
    g.add_argument(
        "--capture",
        metavar="PATH",
        help="render headless (no window) and write the last frame to this PNG file",
    )
    g.add_argument(
        "--dump",
        nargs=2,
        metavar=("NAME[@PASS]", "PATH"),
        help="render headless and write graph texture NAME as the last frame left it (or "
        "right after pass PASS) to PATH: .npy raw values, .png range-mapped, .exr values; "
        "a buffer (cull.args, cull.counters, ...) as a typed table, .npy or .csv",
    )
    g.add_argument(
        "--frames",
        type=positive_int,
        metavar="N",
        help="frames to render (default: 60 with --capture, unlimited in a window)",
    )
    g.add_argument(
        "--size",
        type=size_type,
        default=(1280, 720),
        metavar="WxH",
        help="output size in pixels (default 1280x720)",
    )
    g.add_argument(
        "--gpu-profile",
        nargs="?",
        const="passes",
        default=None,
        choices=GPU_PROFILE_MODES,
        metavar="passes|draws",
        help="time every pass on the GPU with timestamp queries ('passes', the default); "
        "'--gpu-profile draws' also times every draw and dispatch (inside the pass where the "
        "adapter can, and each render draw replayed alone) with pipeline statistics per draw",
    )
    g.add_argument(
        "--profile",
        action="store_true",
        help="time every pass's recording, update, submit and present on the CPU",
    )
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
    g.add_argument(
        "--graph",
        nargs="?",
        const="-",
        metavar="PATH",
        help="print the frame's passes and their resource edges and exit; with PATH (.dot) "
        "also write a Graphviz file",
    )
    g.add_argument(
        "--overlay",
        choices=overlay_modes,
        metavar="MODE",
        default=None,
        help="HUD mode: "
        + ", ".join(overlay_modes)
        + " (default: perf when profiling, else off; F1 cycles)",
    )
    g.add_argument(
        "--hud-scale",
        type=hud_scale_type,
        metavar="N",
        default=None,
        help="integer HUD scale (default: chosen from the output size)",
    )
    g.add_argument(
        "--adapter",
        metavar="NAME",
        default=None,
        help="pick the GPU adapter whose name contains NAME "
        "(default: $WGPUPY_WGPU_ADAPTER_NAME, else high-performance)",
    )
    g.add_argument(
        "--gpu-budget",
        type=budget_type,
        metavar="MB",
        default=None,
        help="GPU memory budget in MiB for the texture table ('memory', HUD mode memory): "
        "totals are shown against it and a warning logged once when exceeded",
    )
    g.add_argument("--no-vsync", action="store_true", help="present without waiting for vsync")
    g.add_argument(
        "--portal",
        type=port_type,
        nargs="?",
        const=3030,
        default=None,
        metavar="PORT",
        help="serve a live web page of this run on http://127.0.0.1:PORT/ "
        "(default 3030; 0 = a free port; also LANTERN_PORTAL=1)",
    )
    g.add_argument(
        "--portal-host",
        metavar="HOST",
        default=None,
        help="address the portal listens on (default 127.0.0.1; anything else is reachable "
        "from other machines)",
    )
    g.add_argument(
        "--seed",
        type=non_negative_int,
        default=0,
        metavar="N",
        help="random seed for procedural content (default 0)",
    )
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
    return p


def check_output_path(parser: ArgumentParser, option: str, path: str, suffix: str) -> None:
    """Fail with a one-line error unless ``path`` can be written, before any rendering
    (``engine.safe_write.output_problem``: a name ending in ``suffix``, an existing folder,
    not a link, and an existing file only of the kind written)."""
    problem = output_problem(path, suffix)
    if problem is not None:
        parser.error(f"argument {option}: {problem}")


def fail(prog: str, message: str, status: int = 2) -> int:
    """Print the one-line error for a problem found after parsing; return the exit status."""
    print(f"{prog}: error: {message}", file=sys.stderr)
    return status
