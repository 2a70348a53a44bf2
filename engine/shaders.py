"""WGSL loading from Lantern's shaders (``engine.resources``: the checkout's top-level ``shaders/``
folder, or the installed package data), with ``#include "file.wgsl"`` lines."""

from __future__ import annotations

import functools
import hashlib
import re

from engine.resources import resource_dir
from engine.textfile import read_utf8

SHADER_DIR = resource_dir("shaders")
_INCLUDE = re.compile(r'^\s*//\s*#include\s+"([^"]+)"\s*$', re.M)


@functools.cache
def load_wgsl(name: str) -> str:
    """Source of ``shaders/<name>`` with its ``// #include "x.wgsl"`` lines expanded once.

    Raises:
        OSError: a file cannot be read. NotUtf8: one is not UTF-8 text (``engine.textfile``).
    """
    text = read_utf8(SHADER_DIR / name, nul=False)
    return _INCLUDE.sub(lambda m: load_wgsl(m.group(1)), text)


# name -> short SHA-256 of the expanded source of every module created (the telemetry
# session's "shaders": tools/compare.py names the shaders that differ between two runs)
MODULE_HASHES: dict[str, str] = {}


def wgsl_hash(code: str) -> str:
    """First 12 hex digits of the SHA-256 of ``code`` (UTF-8)."""
    return hashlib.sha256(code.encode()).hexdigest()[:12]


def shader_hashes() -> dict[str, str]:
    """``{module name: wgsl_hash}`` of every shader module created so far, sorted."""
    return dict(sorted(MODULE_HASHES.items()))
