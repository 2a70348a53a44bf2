"""Helpers for tests that run samples the way a user does."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def run_sample(short: str, *args: str, timeout: float = 300, env: dict | None = None):
    """Run ``python -m samples.<short> *args`` in a subprocess; return CompletedProcess."""
    e = dict(os.environ)
    e.setdefault("XDG_RUNTIME_DIR", "/tmp")
    if env:
        e.update(env)
    return subprocess.run(
        [sys.executable, "-m", f"samples.{short}", *args],
        cwd=ROOT,
        env=e,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
