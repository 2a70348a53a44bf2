"""Automatic pass timing: GPU timestamp queries, CPU scopes, shutdown timeline, Chrome trace."""

from .cpu import CpuProfiler
from .frame import FrameProfiler
from .gpu import GpuFrame, GpuProfiler
from .timings import FrameTimings, Scope

__all__ = ["CpuProfiler", "FrameProfiler", "FrameTimings", "GpuFrame", "GpuProfiler", "Scope"]
