"""Lantern benchmarks: print figures (never pass/fail). Software Vulkan (lavapipe) runs them
all; the goals in the README are set on a real GPU (an NVIDIA H200), so read them there.

    lantern bench [SECTION|all] [--quick] [--adapter NAME]

Each section is a module ``<name>.py`` with ``run(gpu, args)`` in the repository's
``tools/benchmarks/`` folder, which a wheel carries as ``engine.devtools.benchmarks``.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from pathlib import Path

from engine.gpu import create_gpu

SECTIONS = (
    "profiler",
    "cull",
    "hud",
    "scene",
    "ablate",
    "portal",
    "flame",
    "reload",
    "post",
    "views",
    "renderdoc",
    "materials",
    "blur",
    "particles",
    "oit",
    "lights",
    "ssao",
    "cascades",
    "samples",
)  # each is tools/benchmarks/<name>.py with run(gpu, args)
PROG = "lantern bench"  # tools/bench.py passes "bench.py"
_CHECKOUT_TOOLS = Path(__file__).resolve().parents[2] / "tools"


def section_module(name: str):
    """The benchmark module of section ``name``: the installed package's, else the checkout's.

    Raises:
        ModuleNotFoundError: the section needs something only a checkout has (e.g. ``tests``).
    """
    try:
        return importlib.import_module(f"engine.devtools.benchmarks.{name}")
    except ModuleNotFoundError as e:
        if e.name not in ("engine.devtools.benchmarks", f"engine.devtools.benchmarks.{name}"):
            raise
    if str(_CHECKOUT_TOOLS) not in sys.path:
        sys.path.insert(0, str(_CHECKOUT_TOOLS))
    return importlib.import_module(f"benchmarks.{name}")


def build_parser(prog: str = PROG) -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog=prog, description=__doc__, formatter_class=argparse.RawTextHelpFormatter
    )
    p.add_argument("section", nargs="?", default="all", choices=(*SECTIONS, "all"),
                   help="one benchmark (default: all of them)")  # fmt: skip
    p.add_argument("--quick", action="store_true", help="fewer frames and instances")
    p.add_argument("--adapter", default=None, help="adapter name substring")
    return p


def main(argv: list[str] | None = None, prog: str = PROG) -> int:
    """Run the benchmark sections of ``argv``; return the exit status."""
    os.environ.setdefault("XDG_RUNTIME_DIR", "/tmp")
    args = build_parser(prog).parse_args(argv)

    gpu = create_gpu(args.adapter)
    print(gpu.describe(), flush=True)
    for name in SECTIONS if args.section == "all" else (args.section,):
        try:
            mod = section_module(name)
        except ModuleNotFoundError as e:
            print(f"== {name}: skipped: it needs {e.name!r}, which only a checkout has", flush=True)
            continue
        print(f"== {name}", flush=True)
        mod.run(gpu, args)
    return 0
