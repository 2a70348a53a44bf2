"""Automatic pass timing: GPU timestamp queries, CPU scopes, shutdown timeline, Chrome trace.

The GPU-facing classes are imported on first use (``engine.graph`` needs only the sink
protocol, and importing wgpu's native extras before the app's Ctrl-C handler is installed
would let an early interrupt land inside that import)."""

from __future__ import annotations

from importlib import import_module

_LAZY = {
    "CpuProfiler": ".cpu",
    "FrameProfiler": ".frame",
    "GpuFrame": ".gpu",
    "GpuProfiler": ".gpu",
}

__all__ = ["CpuProfiler", "FrameProfiler", "GpuFrame", "GpuProfiler"]


def __getattr__(name: str):
    if name in _LAZY:
        return getattr(import_module(_LAZY[name], __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
