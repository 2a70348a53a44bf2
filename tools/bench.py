"""Lantern benchmarks: print figures (never pass/fail). Run on lavapipe here, on the H200
through the device tool for the real numbers.

    python tools/bench.py [profiler|cull|hud|scene|ablate|portal|flame|post|all] [--quick]
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("XDG_RUNTIME_DIR", "/tmp")

SECTIONS = (
    "profiler",
    "cull",
    "hud",
    "scene",
    "ablate",
    "portal",
    "flame",
    "post",
)  # each is tools/benchmarks/<name>.py with run(gpu, args)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("section", nargs="?", default="all", choices=(*SECTIONS, "all"))
    p.add_argument("--quick", action="store_true", help="fewer frames and instances")
    p.add_argument("--adapter", default=None, help="adapter name substring")
    args = p.parse_args()
    from engine.gpu import create_gpu

    gpu = create_gpu(args.adapter)
    print(gpu.describe(), flush=True)
    for name in SECTIONS if args.section == "all" else (args.section,):
        mod = importlib.import_module(f"benchmarks.{name}")
        print(f"== {name}", flush=True)
        mod.run(gpu, args)


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    main()
