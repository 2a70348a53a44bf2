"""The perf tool: profiling on and off, and the HUD's perf table."""

from engine.tools.perf.tool import GPU_PROFILE_MODES, PerfTool  # noqa: F401
