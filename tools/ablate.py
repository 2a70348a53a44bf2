"""``python tools/ablate.py ...`` from a checkout: the same as ``lantern ablate ...``
(engine/devtools/ablate.py)."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from engine.devtools import ablate  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    return ablate.main(argv, prog="ablate.py")


if __name__ == "__main__":
    sys.exit(main())
