"""Compare two runs' --telemetry files: per pass medians, difference with a bootstrap CI,
Mann-Whitney p-value, what differs between the sessions, and a CI gate (--fail-above PCT).

    python tools/compare.py A.jsonl B.jsonl [--fail-above PCT] [--html X.html] [--png X.png]

The statistics live in engine/devtools/compare.py (``main(argv) -> int``).
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from engine.devtools.compare import main  # noqa: E402
from engine.options import stdout_closed  # noqa: E402

if __name__ == "__main__":
    try:
        sys.exit(main(sys.argv[1:], prog="tools/compare.py"))
    except BrokenPipeError:  # its reader went away (| head): no traceback
        sys.exit(stdout_closed())
