"""``python -m engine.devtools ...``: the ``lantern`` command from a checkout."""

import sys

from .cli import main

sys.exit(main())
