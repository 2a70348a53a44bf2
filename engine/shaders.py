"""WGSL loading from Lantern's shaders (``engine.resources``: the checkout's top-level ``shaders/``
folder, or the installed package data), with ``#include "file.wgsl"`` lines."""

from __future__ import annotations

import functools
import re

import wgpu

from .resources import resource_dir

SHADER_DIR = resource_dir("shaders")
_INCLUDE = re.compile(r'^\s*//\s*#include\s+"([^"]+)"\s*$', re.M)


@functools.cache
def load_wgsl(name: str) -> str:
    """Source of ``shaders/<name>`` with its ``// #include "x.wgsl"`` lines expanded once."""
    text = (SHADER_DIR / name).read_text()
    return _INCLUDE.sub(lambda m: load_wgsl(m.group(1)), text)


def shader_module(device: wgpu.GPUDevice, name: str) -> wgpu.GPUShaderModule:
    return device.create_shader_module(label=name, code=load_wgsl(name))
