"""Lantern samples. Each ``sNN_topic.py`` defines one ``Sample`` subclass.

``python -m samples.sNN`` runs sample NN by its short name: the finder below maps
``samples.sNN`` onto the one module ``samples/sNN_*.py``, so the short name never drifts
from the file name.
"""

from __future__ import annotations

import importlib.abc
import importlib.util
import re
import sys
from pathlib import Path

if sys.argv[:1] == ["-m"]:  # python -m samples.sNN: catch Ctrl-C before the heavy imports
    from engine.interrupt import install

    install()

HERE = Path(__file__).resolve().parent
_SHORT = re.compile(r"samples\.(s\d\d)$")


def sample_files() -> dict[str, Path]:
    """``{"s01": Path(".../s01_lit_boxes.py"), ...}`` in number order."""
    files = sorted(HERE.glob("s[0-9][0-9]_*.py"))
    return {f.name[:3]: f for f in files}


class _ShortNameFinder(importlib.abc.MetaPathFinder):
    def find_spec(self, fullname, path=None, target=None):
        m = _SHORT.match(fullname)
        if not m:
            return None
        f = sample_files().get(m.group(1))
        return importlib.util.spec_from_file_location(fullname, f) if f else None


if not any(isinstance(f, _ShortNameFinder) for f in sys.meta_path):
    sys.meta_path.append(_ShortNameFinder())
