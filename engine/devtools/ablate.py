"""WGSL statement cost by ablation: which line of a shader costs what on this GPU.

    lantern ablate shaders/s02_work.wgsl --entry cs_work \\
        --set params.iterations=256 --set params.grid=256 --groups 32,32 --flame work.svg

The entry point is rewritten with a uniform-guarded early return before each statement (and
inside loop bodies), compiled once, and timed with every cut (timestamp queries, median of
--repeats). A statement costs t(cut after it) - t(cut before it); rows inside a loop cost one
iteration, the loop's row all of them. Negative differences are printed as they are, marked
"too small to measure". Buffers are zero except for --set values; writable ones are restored
before every timed pass. Compute entry points are dispatched --groups workgroups; fragment
entry points drawn as a fullscreen triangle over --size; vertex entry points draw --vertices
with a trivial fragment stage.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import sys
from pathlib import Path

from engine.cli import fail
from engine.devtools.ablation import AblationError, ablate, format_table
from engine.devtools.ablation.flame import result_tree, write_flame
from engine.gpu import GpuError, create_gpu
from engine.options import ArgumentParser, OptionError, check_output, int_type, size_type

PROG = "lantern ablate"  # tools/ablate.py passes "ablate.py"


def groups_type(text: str) -> tuple[int, int, int]:
    """``X[,Y[,Z]]`` workgroup counts, each 1..65535."""
    try:
        parts = [int(p) for p in text.split(",")]
    except ValueError:
        parts = []
    if not 1 <= len(parts) <= 3 or not all(1 <= p <= 65535 for p in parts):
        raise argparse.ArgumentTypeError(
            f"expected X[,Y[,Z]] workgroup counts 1..65535 (e.g. 32,32), got {text!r}"
        )
    return (*parts, 1, 1)[:3]


def build_parser(prog: str = PROG) -> ArgumentParser:
    p = ArgumentParser(
        prog=prog, description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("shader", help="a .wgsl file (// #include lines are expanded)")
    p.add_argument("--entry", required=True, help="entry point name")
    p.add_argument("--size", type=size_type, default=(256, 256), help="render target WxH")
    p.add_argument("--groups", type=groups_type, default=(64, 1, 1), help="compute X[,Y[,Z]]")
    p.add_argument("--vertices", type=int_type(1, 1 << 24), default=3072, help="vertex: count")
    p.add_argument("--instances", type=int_type(1, 1 << 24), default=1, help="vertex: instances")
    p.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="VAR.FIELD=V[,V..]",
        help="a value in a uniform/storage buffer (repeatable); everything else is zero",
    )
    p.add_argument(
        "--override",
        action="append",
        default=[],
        metavar="NAME=V",
        help="the value of a WGSL 'override' constant (repeatable); needed for an override "
        "without a default",
    )
    p.add_argument(
        "--define",
        action="append",
        default=[],
        type=define_type,
        metavar="NAME[=N]",
        help="a shader define of the variant to measure (repeatable): '// #if NAME' blocks "
        "kept, an integer also a constant (mesh.wgsl's OUT_NORMALS=1)",
    )
    p.add_argument(
        "--raw",
        action="store_true",
        help="print the instrumented readings; default: scaled to the original shader's "
        "measured time (the table says which)",
    )
    p.add_argument(
        "--elements", type=int_type(1, 1 << 26), default=65536, help="runtime array length"
    )
    p.add_argument("--texture-size", type=size_type, default=(256, 256), help="bound textures")
    p.add_argument("--repeats", type=int_type(1, 10000), default=15, help="timed passes per cut")
    p.add_argument(
        "--inner",
        type=int_type(1, 10000),
        default=1,
        help="dispatches/draws per timed pass, for work near the timestamp resolution (they "
        "run without a restore in between and may overlap; lavapipe misreports them)",
    )
    p.add_argument(
        "--no-keep-alive",
        action="store_true",
        help="plain early returns: less overhead, but work before a cut whose result is only "
        "used after it may be deleted by the compiler and billed to a later statement",
    )
    p.add_argument("--flame", default=None, metavar="PATH", help="write a flame graph .svg/.html")
    p.add_argument("--adapter", default=None, help="adapter name substring")
    return p


def define_type(text: str) -> tuple[str, bool | int]:
    """``NAME`` -> ``(NAME, True)``, ``NAME=3`` -> ``(NAME, 3)`` (argparse type)."""
    name, eq, value = text.partition("=")
    if not name.isidentifier() or (eq and not value.lstrip("-").isdigit()):
        raise argparse.ArgumentTypeError(f"expected NAME or NAME=INTEGER, got {text!r}")
    return name, int(value) if eq else True


def main(argv: list[str] | None = None, prog: str = PROG) -> int:
    """Run the ablation command line ``argv``; return the exit status (2: bad input)."""
    os.environ.setdefault("XDG_RUNTIME_DIR", "/tmp")
    parser = build_parser(prog)
    args = parser.parse_args(argv)
    if args.flame:
        suffix = ".html" if args.flame.lower().endswith((".html", ".htm")) else ".svg"
        try:
            check_output("--flame", args.flame, suffix)
        except OptionError as e:
            parser.error(str(e))
    if not Path(args.shader).is_file():
        return fail(prog, f"{args.shader}: no such file; give a .wgsl file")

    try:
        gpu = create_gpu(args.adapter)
        result = ablate(
            args.shader,
            args.entry,
            device=gpu.device,
            size=args.size,
            groups=args.groups,
            vertices=args.vertices,
            instances=args.instances,
            sets=args.set,
            overrides=args.override,
            elements=args.elements,
            texture_size=args.texture_size,
            repeats=args.repeats,
            inner=args.inner,
            keep_alive=not args.no_keep_alive,
            adapter=gpu.summary,
            defines=dict(args.define),
        )
    except (AblationError, GpuError) as e:
        return fail(prog, str(e))
    if args.raw:
        result = dataclasses.replace(result, raw=True)
    print(format_table(result))
    if args.flame:
        write_flame(args.flame, result_tree(result), title=f"{result.entry}: {result.path}")
        print(f"flame graph: {args.flame}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
