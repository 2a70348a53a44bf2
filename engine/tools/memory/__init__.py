"""The memory tool: the GPU memory table against ``--gpu-budget``."""

from engine.tools.memory.tool import MemoryTool  # noqa: F401
