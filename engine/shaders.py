"""WGSL loading from the top-level ``shaders/`` folder, with ``#include "file.wgsl"`` lines."""

from __future__ import annotations

import functools
import re
from pathlib import Path

import wgpu

SHADER_DIR = Path(__file__).resolve().parents[1] / "shaders"
_INCLUDE = re.compile(r'^\s*//\s*#include\s+"([^"]+)"\s*$', re.M)


@functools.cache
def load_wgsl(name: str) -> str:
    """Source of ``shaders/<name>`` with its ``// #include "x.wgsl"`` lines expanded once."""
    text = (SHADER_DIR / name).read_text()
    return _INCLUDE.sub(lambda m: load_wgsl(m.group(1)), text)


def shader_module(device: wgpu.GPUDevice, name: str) -> wgpu.GPUShaderModule:
    return device.create_shader_module(label=name, code=load_wgsl(name))
