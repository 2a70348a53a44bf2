"""The lines tool: debug lines from any subsystem, and what the frozen culling camera culls."""

from engine.tools.lines.tool import LinesTool  # noqa: F401
