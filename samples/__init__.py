"""Lantern samples. Each ``sNN_topic.py`` defines one ``Sample`` subclass.

``python -m samples.sNN`` runs sample NN by its short name: the finder below maps
``samples.sNN`` onto the one module ``samples/sNN_*.py``, so the short name never drifts
from the file name.
"""

from __future__ import annotations

import ast
import importlib.abc
import importlib.util
import re
import sys
from dataclasses import dataclass
from pathlib import Path

if sys.argv[:1] == ["-m"]:  # python -m samples.sNN: catch Ctrl-C before the heavy imports
    from engine.interrupt import install

    install()

HERE = Path(__file__).resolve().parent
_SHORT = re.compile(r"samples\.(s\d\d)$")


#: ``python -m samples`` lists the samples under these headings, in this order. A sample
#: declares its heading as ``category = "..."`` in its ``Sample`` subclass.
CATEGORIES: dict[str, str] = {
    "basics": "the framework's pieces: a pass, a custom pass, the render graph",
    "frame": "the standard frame: GPU culling, shadows, the post chain",
    "techniques": "one rendering technique each, on the public frame API, with variants",
    "tools": "the developer tools as samples: the HUD, the frame inspector",
}


@dataclass(frozen=True)
class SampleInfo:
    """What the listing says of one sample file, read without importing it (no GPU code).

    Attributes:
        short: ``"s01"``. path: the file. category: its ``category`` class attribute (``""``
            when it declares none). description: the first line of the module docstring,
            after its ``sNN:`` prefix.
    """

    short: str
    path: Path
    category: str
    description: str


def sample_info(short: str, path: Path) -> SampleInfo:
    """Read ``path`` as bytes and parse it (``ast``): the docstring's first line and the
    ``category = "..."`` assignment in a class body."""
    tree = ast.parse(path.read_bytes())
    doc = (ast.get_docstring(tree) or "").strip()
    first = doc.splitlines()[0] if doc else ""
    description = first.split(":", 1)[1].strip() if ":" in first else first
    category = ""
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef):
            for stmt in node.body:
                if (
                    isinstance(stmt, ast.Assign)
                    and any(isinstance(t, ast.Name) and t.id == "category" for t in stmt.targets)
                    and isinstance(stmt.value, ast.Constant)
                    and isinstance(stmt.value.value, str)
                ):
                    category = stmt.value.value
    return SampleInfo(short, path, category, description)


def catalogue() -> dict[str, list[SampleInfo]]:
    """The samples by category in ``CATEGORIES`` order (number order inside each); a sample
    whose category is missing or unknown is listed under ``"other"`` rather than hidden."""
    groups: dict[str, list[SampleInfo]] = {c: [] for c in CATEGORIES}
    for short, path in sample_files().items():
        info = sample_info(short, path)
        groups.setdefault(info.category if info.category in CATEGORIES else "other", []).append(
            info
        )
    return {c: items for c, items in groups.items() if items}


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
