"""``python -m samples``: list the samples with their one-line descriptions."""

import ast

from samples import sample_files


def _description(path) -> str:
    """The module docstring's first line, read without importing (no GPU needed)."""
    doc = ast.get_docstring(ast.parse(path.read_bytes())) or ""
    first = doc.strip().splitlines()[0] if doc.strip() else ""
    return first.split(":", 1)[1].strip() if ":" in first else first


print("Lantern samples (run: python -m samples.sNN [--help]):")
for short, path in sample_files().items():
    print(f"  {short}  {path.stem:<22} {_description(path)}")
