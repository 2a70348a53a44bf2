"""``python tools/bench.py ...`` from a checkout: the same as ``lantern bench ...``
(engine/devtools/bench.py; the sections are tools/benchmarks/*.py)."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from engine.devtools import bench  # noqa: E402

if __name__ == "__main__":
    sys.exit(bench.main(prog="bench.py"))
