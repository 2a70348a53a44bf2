"""``python -m engine.devtools ...``: the ``lantern`` command from a checkout."""

import sys

from engine.devtools.cli import main

sys.exit(main())
